"""arrayselect: the tensor Select operation for every Array API library.

``select(cond, then, else_)`` is ``cond ? then : else`` with the broadcasting
modes of the OpenVINO, oneDNN and DirectML specifications (``"none"``,
``"numpy"``, ``"pdpd"``), for NumPy, JAX, CuPy and any other library that
speaks the Python Array API standard.
"""

from __future__ import annotations

import importlib

from arrayselect._errors import (
    ScalarOverflowError,
    SelectError,
    SelectShapeError,
    SelectTypeError,
    SelectValueError,
)
from arrayselect._registry import force_portable, register_backend
from arrayselect._select import backend_for, select
from arrayselect._shapes import COND_BROADCASTS, MODES, select_shape
from arrayselect._threads import get_num_threads, set_num_threads

__version__ = "0.1.0"

__all__ = [
    "COND_BROADCASTS",
    "MODES",
    "ScalarOverflowError",
    "SelectError",
    "SelectShapeError",
    "SelectTypeError",
    "SelectValueError",
    "__version__",
    "backend_for",
    "force_portable",
    "get_num_threads",
    "register_backend",
    "select",
    "select_shape",
    "set_num_threads",
]

# NumPy is a hard dependency: its backend (compiled kernel and the lean call
# path for np.ndarray) loads with the package. Other array libraries' backends
# load when their arrays first arrive.
importlib.import_module("arrayselect.backends.numpy_backend")
