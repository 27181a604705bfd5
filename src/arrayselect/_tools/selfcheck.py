"""Self-check: the source specifications' examples on every installed backend.

Each example's expected result is typed from the source specifications and the
shape rules stated in ``docs/semantics.md`` (the rows labelled "Semantics, ..."
come from that page), not computed by this library.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from arrayselect._base.errors import SelectShapeError
from arrayselect._dispatch.registry import force_portable
from arrayselect._operations.select import backend_for, select
from arrayselect._tools.runtime import show_runtime

__all__ = ["LIBRARIES", "run_selfcheck"]

#: (label, module to import, whether to force the portable backend)
LIBRARIES: tuple[tuple[str, str, bool], ...] = (
    ("numpy", "numpy", False),
    ("numpy (portable)", "numpy", True),
    ("array_api_strict", "array_api_strict", False),
    ("torch", "torch", False),
    ("dask.array", "dask.array", False),
    ("jax.numpy", "jax.numpy", False),
    ("cupy", "cupy", False),
)


@dataclass(frozen=True)
class Example:
    """One documented example: inputs, options, and the expected result."""

    source: str
    cond: Any
    then: Any
    else_: Any
    options: dict[str, Any]
    expected: Any  # a nested list of values, a shape tuple, or SelectShapeError


def _shape_example(
    source: str, cond: tuple[int, ...], out: tuple[int, ...], **opts: Any
) -> Example:
    then_shape = opts.pop("then", out)
    else_shape = opts.pop("else_", out)
    return Example(source, ("mask", cond), ("ones", then_shape), ("zeros", else_shape), opts, out)


def _error_example(
    source: str, cond: tuple[int, ...], then: tuple[int, ...], **opts: Any
) -> Example:
    else_shape = opts.pop("else_", then)
    return Example(
        source, ("mask", cond), ("ones", then), ("zeros", else_shape), opts, SelectShapeError
    )


EXAMPLES: tuple[Example, ...] = (
    Example(
        "OpenVINO Select-1 value example",
        [[False, False], [True, False], [True, True]],
        [[-1, 0], [1, 2], [3, 4]],
        [[11, 10], [9, 8], [7, 6]],
        {},
        [[11, 10], [1, 8], [3, 4]],
    ),
    Example(
        "DirectML ELEMENT_WISE_IF (uint8 cond)",
        ("uint8", [[1, 0], [1, 1]]),
        [[1, 2], [3, 4]],
        [[9, 8], [7, 6]],
        {},
        [[1, 8], [3, 4]],
    ),
    _shape_example("oneDNN: cond {4,5} onto {2,3,4,5}", (4, 5), (2, 3, 4, 5)),
    _shape_example("oneDNN: cond {3,1,5} onto {2,3,4,5}", (3, 1, 5), (2, 3, 4, 5)),
    _error_example("oneDNN: cond {3,5} onto {2,3,4,5} is invalid", (3, 5), (2, 3, 4, 5)),
    _error_example(
        "Semantics, numpy mode: cond (2,1,1,1,1) rank too high", (2, 1, 1, 1, 1), (2, 3, 4, 5)
    ),
    _error_example(
        "Semantics, numpy mode: then (1,3,1), else (3,1,1), cond (1,1,3)",
        (1, 1, 3),
        (1, 3, 1),
        else_=(3, 1, 1),
    ),
    _shape_example(
        "Semantics, cond_broadcast=multidirectional: same -> (3,3,3)",
        (1, 1, 3),
        (3, 3, 3),
        then=(1, 3, 1),
        else_=(3, 1, 1),
        cond_broadcast="multidirectional",
    ),
    # With an explicit axis, else is fitted at that axis too: give it the same shape.
    _shape_example(
        "pdpd: src (3,4) axis 1", (3, 4), (2, 3, 4, 5), else_=(3, 4), auto_broadcast="pdpd", axis=1
    ),
    _shape_example(
        "pdpd: src (3,1) axis 1", (3, 1), (2, 3, 4, 5), else_=(3, 1), auto_broadcast="pdpd", axis=1
    ),
    _shape_example("pdpd: src (4,5) axis -1", (4, 5), (2, 3, 4, 5), auto_broadcast="pdpd"),
    _shape_example(
        "pdpd: src (1,3) axis 0", (1, 3), (2, 3, 4, 5), else_=(1, 3), auto_broadcast="pdpd", axis=0
    ),
    _shape_example("pdpd: src () ", (), (2, 3, 4, 5), auto_broadcast="pdpd"),
    _shape_example("pdpd: src (5,)", (5,), (2, 3, 4, 5), auto_broadcast="pdpd"),
    _error_example("pdpd: src (3,) axis -1 is invalid", (3,), (2, 3, 4, 5), auto_broadcast="pdpd"),
    _shape_example(
        "pdpd: then (2,3), src (3,1) axis 1",
        (3, 1),
        (2, 3),
        else_=(3, 1),
        auto_broadcast="pdpd",
        axis=1,
    ),
    _error_example(
        "none: shapes must be identical", (3, 2), (3, 2), else_=(3, 1), auto_broadcast="none"
    ),
)


def _make(xp: ModuleType, spec: Any) -> Any:
    if isinstance(spec, tuple) and spec[0] == "mask":
        return xp.zeros(spec[1], dtype=xp.bool)
    if isinstance(spec, tuple) and spec[0] in ("zeros", "ones"):
        return (xp.zeros if spec[0] == "zeros" else xp.ones)(spec[1], dtype=xp.float32)
    if isinstance(spec, tuple) and spec[0] == "uint8":
        return xp.asarray(spec[1], dtype=xp.uint8)
    if isinstance(spec, list) and isinstance(spec[0][0], bool):
        return xp.asarray(spec, dtype=xp.bool)
    return xp.asarray(spec, dtype=xp.int32)


def _to_list(x: Any) -> Any:
    if hasattr(x, "compute"):
        x = x.compute()
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        x = x.get()
    if type(x).__module__.startswith("torch"):
        x = x.cpu().numpy()
    return np.asarray(x).tolist()


def _check(xp: ModuleType, example: Example) -> bool:
    cond = _make(xp, example.cond)
    then = _make(xp, example.then)
    else_ = _make(xp, example.else_)
    if example.expected is SelectShapeError:
        try:
            select(cond, then, else_, **example.options)
        except SelectShapeError:
            return True
        return False
    result = select(cond, then, else_, **example.options)
    if isinstance(example.expected, tuple):
        return tuple(result.shape) == example.expected
    return bool(_to_list(result) == example.expected)


def _namespace(module: str) -> ModuleType | None:
    try:
        mod = importlib.import_module(module)
        if module == "jax.numpy":
            importlib.import_module("jax").config.update("jax_enable_x64", True)
        if module == "cupy":
            mod.cuda.runtime.getDeviceCount()
        if module in ("torch", "dask.array"):
            import array_api_compat

            return array_api_compat.array_namespace(mod.asarray([0]))
        return mod
    except Exception:
        return None


@contextlib.contextmanager
def _maybe_portable(enabled: bool) -> Iterator[None]:
    if enabled:
        with force_portable():
            yield
    else:
        yield


def run_selfcheck(echo: Callable[[str], None] = print) -> bool:
    """Run every example on every installed library; print a table; return success."""
    columns: list[tuple[str, ModuleType, bool]] = []
    missing: list[str] = []
    for label, module, portable in LIBRARIES:
        xp = _namespace(module)
        if xp is None:
            missing.append(label)
        else:
            columns.append((label, xp, portable))
    width = max(len(e.source) for e in EXAMPLES)
    echo("example".ljust(width) + " | " + " | ".join(label for label, _, _ in columns))
    echo("-" * width + "-+-" + "-+-".join("-" * len(label) for label, _, _ in columns))
    ok = True
    for example in EXAMPLES:
        cells = []
        for label, xp, portable in columns:
            with _maybe_portable(portable):
                try:
                    passed = _check(xp, example)
                except Exception as exc:  # report, don't stop the table
                    passed = False
                    echo(f"  {label}: {example.source}: {type(exc).__name__}: {exc}")
            ok &= passed
            cells.append(("ok" if passed else "FAIL").center(len(label)))
        echo(example.source.ljust(width) + " | " + " | ".join(cells))
    echo("")
    for label, xp, portable in columns:
        with _maybe_portable(portable):
            probe = xp.asarray([True])
            echo(f"{label}: backend {backend_for(probe, probe, probe).name}")
    if missing:
        echo("not installed or no device: " + ", ".join(missing))
    show_runtime(echo)
    echo("self-check " + ("passed" if ok else "FAILED"))
    return ok
