"""The public API for backend authors: everything a backend needs, and nothing else.

A backend serves the arrays of one library. The core validates every call
(options, shapes, dtypes, Python scalars, devices, ``out``) by asking the
backend small questions, and then hands it a :class:`SelectPlan`; the backend
never decides whether a call is valid. The built-in backends import only from
this module, and so can a plugin (``docs/plugins.md`` has a complete one). Its
twenty names, by what a backend does with them:

* **answer the core's questions and run the plan**: :class:`Backend` (its
  ``PYTHON_SCALARS`` and its questions: dtype kinds and ranges, devices, tracing,
  data-free arrays, mask indexing, ``out``'s memory), :class:`OutLayout` (the
  answer about ``out``), :data:`DtypeKind`, :class:`NumpyDtypes` (the dtype
  questions answered for libraries with NumPy dtypes), :class:`SelectPlan` with
  :data:`Shape` and :func:`same_dim` (symbolic sizes);
* **be found**: :func:`register_backend` (or the entry-point group
  ``arrayselect.backends``), :func:`on_import` (what must follow a library's import
  without importing it);
* **skip validation on repeated signatures**: :class:`SignatureCache`, which keeps
  the core's :class:`Decision` per call signature and serves it as a
  :class:`FastPath` with a :class:`Run`; :func:`validate` and
  :func:`select_positional` (the general path, in the fast path's argument order)
  and :func:`check_out_layout` for fast paths written by hand;
  :class:`BoundedCache`, the one cache type, for any memo a backend keeps;
* **the select family, the errors, the settings**, as three namespaces:
  :mod:`generic <arrayselect._operations.generic>` (the core's algorithms:
  ``generic.select_n``, ``generic.select_cases``, ``generic.double_where``,
  ``generic.fill_scalar``), :mod:`errors <arrayselect._base.errors>` (the public
  exceptions and ``errors.index_error``) and :mod:`settings <arrayselect._base.settings>`
  (threads, pool, ``settings.portable_forced()``).

For example, a plan, as the core makes it for a backend's :meth:`Backend.select`:

>>> import numpy as np
>>> from arrayselect import plugin
>>> c, x, y = np.ones((3, 1), bool), np.ones((2, 3, 4)), np.ones(4)
>>> plan = plugin.validate(c, x, y, "numpy", -1, "unidirectional", None).decision.plan
>>> plan.out_shape, plan.dims
((2, 3, 4), ((1, 2), (0, 1, 2), (2,)))
>>> len(plugin.__all__)
20

What a fast path's :class:`SignatureCache` calls on a hit, a :class:`Run`:

>>> from arrayselect.plugin import Decision, Run
>>> def run(cond, then, else_, decision: Decision, out) -> object:
...     return np.where(cond, then, else_)
>>> checked: Run = run
"""

from __future__ import annotations

from arrayselect._base import errors, settings
from arrayselect._base.caches import BoundedCache
from arrayselect._base.import_hook import on_import
from arrayselect._dispatch.registry import FastPath, register_backend
from arrayselect._operations import generic
from arrayselect._operations.fastpath import Run, SignatureCache
from arrayselect._operations.select import select_positional, validate
from arrayselect._rules.backend import Backend, DtypeKind, OutLayout
from arrayselect._rules.dtypes import NumpyDtypes
from arrayselect._rules.shapes import SelectPlan, Shape, same_dim
from arrayselect._validation.checks import check_out_layout
from arrayselect._validation.decision import Decision

__all__ = [
    "Backend",
    "BoundedCache",
    "Decision",
    "DtypeKind",
    "FastPath",
    "NumpyDtypes",
    "OutLayout",
    "Run",
    "SelectPlan",
    "Shape",
    "SignatureCache",
    "check_out_layout",
    "errors",
    "generic",
    "on_import",
    "register_backend",
    "same_dim",
    "select_positional",
    "settings",
    "validate",
]
