"""How Dynamo (``torch.compile``, strict ``torch.export``) sees a select on three tensors.

Dynamo traces Python: every function it follows becomes guards, checked before each
run of the compiled code. Traced, the core's validation cost about 100 leaf guards on
module globals (``torch.where``: about 25), which made a compiled call at 10^3 elements
1.25 times slower than compiled ``torch.where``. So, once ``torch._dynamo`` is imported,
:func:`select_in_graph` is registered with ``torch._dynamo.allow_in_graph``: Dynamo
puts one call of it in its graph and does not trace inside. It runs it on fake tensors
to learn the output (the core's validation runs then, with symbolic sizes under
``dynamic=True``), and AOTAutograd traces it into the graph the backend compiles: the
validated call on the torch-ops route, ``aten.reshape`` and ``aten.where``, nothing of
arrayselect's (``torch.export`` records the same).

An error found while Dynamo runs the call on fake tensors must reach the user as the
core raises it. Dynamo turns any exception there into its own ``TorchRuntimeError``,
except ``NotImplementedError``, which it takes as "this call cannot be traced": it
breaks the graph before the call and runs it eagerly, and the eager call raises the
core's error itself. With ``fullgraph=True`` a graph break is an error: Dynamo raises
``Unsupported``, whose ``__cause__`` is the ``NotImplementedError`` and whose cause in
turn is the core's exception.

The backend's fast path steps aside while Dynamo traces: where it is a Python
function it asks ``torch.compiler.is_dynamo_compiling()`` (which Dynamo reads as
``True``), and where it is C (the recent-call check's ``fast_path``, which Dynamo
cannot follow) :func:`trace_as` registers a Python stand-in for it with
``torch._dynamo.substitute_in_graph``: :func:`traced_fast_path`'s function, which is
what Dynamo follows instead.

Calls with a Python scalar or ``out=`` are traced as before (Dynamo passes a Python
float to a call it does not trace as a symbolic float, which validation cannot check
against a dtype's range).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from arrayselect.plugin import errors, select_positional

__all__ = [
    "ALLOWED",
    "TraceInstead",
    "allow_in_graph",
    "select_in_graph",
    "trace_as",
    "traced_fast_path",
]

FastPathCall = Callable[[Any, Any, Any, Any, Any, Any, Any], Any]

#: Whether :func:`select_in_graph` is registered with Dynamo (set by :func:`allow_in_graph`).
ALLOWED = [False]


class TraceInstead(NotImplementedError):
    """A select Dynamo cannot put in its graph: the core raised ``__cause__``."""


def select_in_graph(cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any) -> Any:
    """``select(cond, then, else_, auto_broadcast=ab, axis=axis, cond_broadcast=cb)``
    on three tensors, as one call in Dynamo's graph.

    Raises
    ------
    TraceInstead
        While Dynamo or AOTAutograd traces it, for any error of the core (chained).
    errors.SelectError
        Run eagerly, what ``select`` raises.
    """
    try:
        return select_positional(cond, then, else_, ab, axis, cb, None)
    except errors.SelectError as exc:
        if torch._guards.TracingContext.try_get() is None:  # eager: the error itself
            raise
        raise TraceInstead(f"{type(exc).__name__}: {exc}") from exc


def allow_in_graph() -> None:
    """Register :func:`select_in_graph` with Dynamo (once ``torch._dynamo`` is imported)."""
    import torch._dynamo

    torch._dynamo.allow_in_graph(select_in_graph)  # type: ignore[no-untyped-call]
    ALLOWED[0] = True


def traced_fast_path(array_types: tuple[type, ...]) -> FastPathCall:
    """What Dynamo follows in place of a fast path for ``array_types``: three tensors
    without ``out``, one call in its graph; anything else, the general path (traced)."""

    def traced(cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any, out: Any) -> Any:
        if out is None and type(then) in array_types and type(else_) in array_types:
            return select_in_graph(cond, then, else_, ab, axis, cb)
        return NotImplemented

    return traced


def trace_as(call: Any, traced: FastPathCall) -> None:
    """Have Dynamo follow ``traced`` wherever it meets the C function ``call``
    (once ``torch._dynamo`` is imported)."""
    import torch._dynamo

    torch._dynamo.substitute_in_graph(call, skip_signature_check=True)(traced)
