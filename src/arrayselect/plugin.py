"""The public API for backend authors: everything a backend needs, and nothing else.

A backend serves the arrays of one library. The core validates every call
(options, shapes, dtypes, Python scalars, devices, ``out``) by asking the
backend small questions, and then hands it a :class:`SelectPlan`; the backend
never decides whether a call is valid. The built-in backends import only from
this module, and so can a plugin (see ``docs/plugins.md``):

* :class:`Backend` -- the interface (queries, :meth:`Backend.select`, and an
  optional :meth:`Backend.fast_path`), with :class:`OutLayout` and the dtype
  kinds (:data:`DtypeKind`, :data:`DTYPE_KINDS`);
* :class:`SelectPlan` -- the output shape and where each input's dimensions go;
* the fast-path protocol -- :class:`SignatureCache` (cache what validation
  decided per call signature, re-check only what depends on values), the
  :class:`Decision` it caches with its :class:`ScalarRange`, :class:`FastPath`,
  and :func:`validate` / :func:`select_general` (:func:`select_positional`, its
  fast-path argument order) / :func:`check_out_layout` /
  :func:`check_devices` for fast paths written by hand;
* helpers for libraries with NumPy dtypes (:class:`NumpyDtypes`, the dtype queries
  of a backend whose arrays carry NumPy dtypes, built on :func:`numpy_dtype_kind`, ...) and
  symbolic shapes (:func:`same_dim`);
* the select family: :func:`index_error`, the error a backend's ``select_n``
  raises for an index out of range; the core's generic algorithms
  (:func:`generic_select_n`, :func:`generic_select_cases`), which serve a
  backend that leaves :attr:`Backend.select_n` or :attr:`Backend.select_cases`
  ``None`` and which one that fuses some calls runs for the rest; and
  :func:`double_where`, ``apply_where``'s two sides on every element, for a
  backend that joins them with its own ``where``;
* :func:`register_backend` and :func:`active_backend`; :func:`on_import`, for what must
  follow a library's import without importing it (the torch backend's registration
  with ``torch._dynamo``, a second of import that only ``torch.compile`` needs).

A plan, for example:

>>> import numpy as np
>>> from arrayselect import plugin
>>> plan = plugin.make_plan((3, 1), (2, 3, 4), (4,), "numpy", -1, "unidirectional")
>>> plan.out_shape, plan.dims
((2, 3, 4), ((1, 2), (0, 1, 2), (2,)))
"""

from __future__ import annotations

from arrayselect._backend import DTYPE_KINDS, Backend, DtypeKind, OutLayout
from arrayselect._caches import register_cache
from arrayselect._dtypes import (
    NUMPY_DEFAULT_DTYPES,
    NumpyDtypes,
    numpy_dtype_kind,
    numpy_float_max,
    numpy_int_range,
)
from arrayselect._errors import (
    ScalarOverflowError,
    SelectError,
    SelectShapeError,
    SelectTypeError,
    SelectValueError,
    index_error,
)
from arrayselect._fastpath import Run, SignatureCache
from arrayselect._generic import double_where
from arrayselect._generic import select_cases as generic_select_cases
from arrayselect._generic import select_n as generic_select_n
from arrayselect._import_hook import on_import
from arrayselect._registry import (
    ENTRY_POINT_GROUP,
    FastPath,
    active_backend,
    portable_forced,
    register_backend,
)
from arrayselect._select import Validated, select_general, select_positional, validate
from arrayselect._settings import MAX_THREADS, get_num_threads, num_threads_chosen, set_num_threads
from arrayselect._settings import on_change as on_settings_change
from arrayselect._shapes import SelectPlan, Shape, make_plan, same_dim
from arrayselect._validate import (
    PYTHON_SCALARS,
    Decision,
    ScalarRange,
    check_devices,
    check_out_layout,
    fill_scalar,
)

__all__ = [
    "DTYPE_KINDS",
    "ENTRY_POINT_GROUP",
    "MAX_THREADS",
    "NUMPY_DEFAULT_DTYPES",
    "PYTHON_SCALARS",
    "Backend",
    "Decision",
    "DtypeKind",
    "FastPath",
    "NumpyDtypes",
    "OutLayout",
    "Run",
    "ScalarOverflowError",
    "ScalarRange",
    "SelectError",
    "SelectPlan",
    "SelectShapeError",
    "SelectTypeError",
    "SelectValueError",
    "Shape",
    "SignatureCache",
    "Validated",
    "active_backend",
    "check_devices",
    "check_out_layout",
    "double_where",
    "fill_scalar",
    "generic_select_cases",
    "generic_select_n",
    "get_num_threads",
    "index_error",
    "make_plan",
    "num_threads_chosen",
    "numpy_dtype_kind",
    "numpy_float_max",
    "numpy_int_range",
    "on_import",
    "on_settings_change",
    "portable_forced",
    "register_backend",
    "register_cache",
    "same_dim",
    "select_general",
    "select_positional",
    "set_num_threads",
    "validate",
]
