"""arrayselect: the tensor Select operation for every Array API library.

``select(cond, then, else_)`` is ``cond ? then : else`` with the broadcasting
modes of the OpenVINO, oneDNN and DirectML specifications (``"none"``,
``"numpy"``, ``"pdpd"``), for NumPy, JAX, CuPy and any other library that
speaks the Python Array API standard. ``where(condition, x1, x2)`` is the
standard's ``where`` (promotion, three-way broadcasting) on the same backends;
``select_n``, ``select_cases`` and ``apply_where`` are the select family
(``lax.select_n``, ``np.select``, array-api-extra's ``apply_where``).
"""

from __future__ import annotations

import importlib

from arrayselect._base import import_hook as _import_hook
from arrayselect._base.errors import (
    ScalarOverflowError,
    SelectCallbackError,
    SelectError,
    SelectShapeError,
    SelectTypeError,
    SelectValueError,
)
from arrayselect._base.settings import (
    get_num_threads,
    get_pool_limit,
    release_memory,
    set_num_threads,
    set_pool_limit,
)
from arrayselect._base.version import __version__
from arrayselect._dispatch import registry as _registry
from arrayselect._dispatch.registry import force_portable, register_backend
from arrayselect._operations.family import apply_where, select_cases, select_n
from arrayselect._operations.select import backend_for, select
from arrayselect._operations.where import where
from arrayselect._rules.shapes import COND_BROADCASTS, MODES, select_shape
from arrayselect._tools.runtime import runtime_info, show_runtime

__all__ = [
    "COND_BROADCASTS",
    "MODES",
    "ScalarOverflowError",
    "SelectCallbackError",
    "SelectError",
    "SelectShapeError",
    "SelectTypeError",
    "SelectValueError",
    "__version__",
    "apply_where",
    "backend_for",
    "force_portable",
    "get_num_threads",
    "get_pool_limit",
    "register_backend",
    "release_memory",
    "runtime_info",
    "select",
    "select_cases",
    "select_n",
    "select_shape",
    "set_num_threads",
    "set_pool_limit",
    "show_runtime",
    "where",
]

# NumPy is a hard dependency: its backend loads with the package (on the compiled
# kernel, or through numpy.where in a build without it; show_runtime() says). Other array
# libraries' backends load when their arrays first arrive, but PyTorch's as soon
# as torch is imported: torch.compile cannot create it (see _import_hook).
importlib.import_module("arrayselect.backends.numpy_backend")
_import_hook.on_import("torch", lambda: _registry.create_backend("torch"))
