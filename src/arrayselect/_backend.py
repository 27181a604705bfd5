"""The interface every backend implements.

The core validates everything (options, shapes, dtypes, scalars, devices,
``out``) through the small queries below, then calls :meth:`Backend.select`
with a :class:`~arrayselect._shapes.SelectPlan`. A backend answers questions
about its arrays and runs a validated Select; it never decides whether a call
is valid. Plugin authors import these names from :mod:`arrayselect.plugin`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Hashable, Sequence
from types import ModuleType
from typing import Any, Literal, NamedTuple

import array_api_compat as compat

from arrayselect._errors import SelectValueError, index_error
from arrayselect._shapes import SelectPlan, Shape

__all__ = ["DTYPE_KINDS", "Backend", "DtypeKind", "OutLayout"]

DtypeKind = Literal["bool", "int", "uint", "float", "complex"]

#: Every :data:`DtypeKind`, in the order of the specification's dtype table.
DTYPE_KINDS: tuple[DtypeKind, ...] = ("bool", "int", "uint", "float", "complex")


class OutLayout(NamedTuple):
    """What the core needs to know about ``out``'s memory to accept it.

    Attributes
    ----------
    writeable
        Whether the array can be written in place.
    why_not
        When it cannot: the reason, for the error message (e.g.
        ``"out.flags.writeable is False"``).
    strides
        Byte strides per dimension, or ``None`` when the library does not
        expose memory (then the core assumes elements do not overlap).
    itemsize
        Bytes per element (used with ``strides`` to find overlapping elements).
    """

    writeable: bool = True
    why_not: str = ""
    strides: tuple[int, ...] | None = None
    itemsize: int = 1


class Backend(abc.ABC):
    """One array library's implementation of Select.

    Attributes
    ----------
    name
        Short name shown in messages and benchmark tables.
    supports_out
        Whether ``out=`` can receive the result.
    out_refusal
        Why ``out=`` is refused, when it is.
    device_hint
        How to move arrays between devices, for the "inputs on different
        devices" error.
    """

    name: str = "backend"
    supports_out: bool = False
    out_refusal: str = "this array library's arrays cannot be written in place"
    device_hint: str = "move them explicitly"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    def tracing(self) -> bool:
        """Whether a tracing compiler is following this call (``torch.compile``).

        The core then neither reads nor writes its memos (plans, ``where``'s
        promotions), so that the trace depends on the operands alone, as the
        library's own ops would: a memo the trace read would be guarded on, and
        the compiled function traced again once the memo changed.
        """
        return False

    # -- dtypes -------------------------------------------------------------------

    @abc.abstractmethod
    def dtype_kind(self, dtype: Any) -> DtypeKind | None:
        """Kind of ``dtype``, or ``None`` when Select does not support it."""

    def dtype_refusal(self, dtype: Any) -> str:
        """Why a value dtype is refused (:meth:`dtype_kind` gave ``None``), for the
        message that follows "x has dtype D, ".
        """
        return (
            "which Select does not support; expected a boolean, integer, floating or complex dtype"
        )

    @abc.abstractmethod
    def int_range(self, dtype: Any) -> tuple[int, int]:
        """Smallest and largest value of an integer ``dtype``."""

    @abc.abstractmethod
    def float_max(self, dtype: Any) -> float:
        """Largest finite value of a real or complex floating ``dtype`` (per component)."""

    def held_dtype(self, dtype: Any) -> Any:
        """The dtype an array of ``dtype`` has once this library takes it, here and now.

        ``dtype`` itself when the library holds such values as they are (the
        default); a narrower dtype when it converts them (JAX without 64-bit mode
        turns int64 into int32); ``None`` when it cannot take them at all. The core
        refuses an operand whose dtype this would change: Select never changes a
        value's dtype or bits. Only operands of another library (NumPy arrays beside
        JAX arrays) or a changed library mode make the answer differ from ``dtype``.
        """
        return dtype

    def dtype_mode(self) -> Hashable:
        """The library state :meth:`held_dtype`'s answers depend on, or ``None``.

        A validation decision records it (:attr:`~arrayselect.plugin.Decision.dtype_mode`);
        a fast path must not reuse a decision made in another mode. JAX answers
        whether its 64-bit mode is on. The default, ``None``, means the answers never
        change.
        """
        return None

    #: How to make the library hold the dtypes :meth:`held_dtype` narrows, for the
    #: error message (empty when there is no such setting).
    wider_dtypes_hint: str = ""

    @abc.abstractmethod
    def default_dtype(self, scalar_type: type, like: Any) -> Any:
        """The library's default dtype for a Python scalar type (``bool``, ``int``,
        ``float`` or ``complex``): what two Python scalars become.

        ``like`` is the ``cond`` array, for libraries whose defaults depend on
        the array (or its device).
        """

    # -- arrays -------------------------------------------------------------------

    @abc.abstractmethod
    def shape(self, x: Any) -> Shape:
        """Shape of ``x`` as a tuple; unknown sizes (e.g. Dask NaN) are ``None``."""

    def signature(self, x: Any) -> Hashable:
        """What a validation decision depends on about array ``x``: its shape,
        dtype and weak type (JAX's arrays and tracers promote like Python
        scalars when weakly typed; ``False`` for other libraries); a library may
        add more. Fast paths and the select family's memo key their caches with it.

        A backend may instead set ``signature`` to a tuple of attribute names
        (``("shape", "dtype", "device")``): the fast path then reads those
        attributes itself, in C, which is cheaper than calling a method.
        """
        return (tuple(x.shape), x.dtype, bool(getattr(x, "weak_type", False)))

    def unsupported_layout(self, x: Any) -> tuple[str, str] | None:
        """What makes array ``x`` unfit for Select although it is an array of the
        library (sparse, quantized or nested storage), or ``None``.

        Returns what ``x`` is and how to convert it, e.g. ``("a tensor of layout
        torch.sparse_coo", "convert it with x.to_dense()")``.
        """
        return None

    def device_of(self, x: Any) -> Hashable | None:
        """The device ``x`` lives on (equal values: one device), or ``None`` when the
        library places it wherever the other inputs are (tracers, uncommitted
        arrays). The core compares devices; the default is one device for all.
        """
        return None

    def device_text(self, device: Hashable) -> str:
        """How a device returned by :meth:`device_of` reads in an error message."""
        return str(device)

    def out_layout(self, out: Any) -> OutLayout:
        """Whether ``out`` is writable, and its strides, for the core's ``out`` rules."""
        return OutLayout()

    # -- running ------------------------------------------------------------------

    @abc.abstractmethod
    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        """A 0-d array of ``dtype`` holding ``value``, on ``like``'s device.

        The core has checked that ``value`` fits ``dtype`` and converted it as
        the dtype's kind asks (an int taking a floating dtype arrives as a float).
        """

    def default_scalar_array(
        self, value: bool | int | float | complex, dtype: Any, like: Any
    ) -> Any:
        """A 0-d array for a Python scalar when *both* ``then`` and ``else`` are
        Python scalars, so that ``dtype`` is :meth:`default_dtype`'s.

        Libraries that type Python scalars weakly (JAX) mark such arrays as they
        mark scalars; the default is :meth:`scalar_array`.
        """
        return self.scalar_array(value, dtype, like)

    @abc.abstractmethod
    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        """Run Select on validated inputs.

        ``then`` and ``else_`` are arrays of the output dtype; ``cond`` is boolean
        or integer (nonzero is true). ``plan.dims`` (or, equivalently,
        ``plan.aligned``) says where each input's dimensions go in
        ``plan.out_shape``. When ``out`` is not ``None`` the result is written
        into it and ``out`` is returned.
        """

    # -- what arrayselect.where needs besides Select ----------------------------------

    def result_type(self, x1: Any, x2: Any) -> Any:
        """The dtype the standard's ``where`` gives ``x1`` and ``x2`` (arrays or
        Python scalars) in the library: the promotion of its Array API namespace.
        Raises when it does not promote them.
        """
        arrays = [x for x in (x1, x2) if type(x) not in (bool, int, float, complex)]
        return compat.array_namespace(*arrays).result_type(x1, x2)

    def astype(self, x: Any, dtype: Any) -> Any:
        """``x`` cast to ``dtype`` by the library (one pass over the data)."""
        return compat.array_namespace(x).astype(x, dtype)

    def library_scalar(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        """A 0-d array of ``dtype`` holding ``value`` as the library's own ``where``
        converts a Python scalar, whatever its range (NumPy wraps integers around
        and makes a float too large ``inf``; PyTorch raises), on ``like``'s device.
        """
        xp = compat.array_namespace(like)
        device = compat.device(like)
        zero = xp.zeros((), dtype=dtype, device=device)
        return xp.where(xp.asarray(True, device=device), value, zero)

    def fast_path(self) -> Any:
        """A fast path for this backend's arrays, or ``None``.

        Returns
        -------
        FastPath or None
            Usually a :class:`arrayselect.plugin.SignatureCache`; the registry
            routes calls whose ``cond`` is exactly one of its ``array_types``
            to it while this backend serves its library.
        """
        return None

    # -- the select family (select_n, select_cases, apply_where) ----------------------
    # Portable defaults built from the standard's functions, so that a plugin serves
    # the family without writing anything; backends override them to fuse.

    def namespace(self, *arrays: Any) -> ModuleType:
        """The Array API namespace of ``arrays``, for the defaults below."""
        return compat.array_namespace(*arrays)

    def traced(self, x: Any) -> bool:
        """Whether ``x`` is being traced into a graph, where values cannot raise
        (``select_n`` then clamps its indices, as ``lax.select_n`` does).
        """
        return False

    def mask_indexing(self, x: Any) -> bool:
        """Whether arrays like ``x`` take boolean-mask indexing, reading (``x[mask]``, a
        shape that depends on the data) and writing (``x[mask] = v``).

        As array-api-extra asks it: the namespace's inspection
        ``capabilities()`` (``"boolean indexing"`` and ``"data-dependent
        shapes"``; array-api-strict turns them off by flag, as JAX-like libraries
        lack them), and never for arrays with no values (:meth:`data_free`). Asked
        on every call: a library may change its capabilities at run time.
        """
        if self.data_free(x) or self.traced(x):
            return False  # no values to index by (a meta array, a trace)
        try:
            capabilities = self.namespace(x).__array_namespace_info__().capabilities()
        except Exception:  # a namespace older than the inspection API: the standard's
            return True
        return bool(capabilities.get("boolean indexing", True)) and bool(
            capabilities.get("data-dependent shapes", True)
        )

    def data_free(self, x: Any) -> bool:
        """Whether ``x`` has a shape and dtype but no values to read (PyTorch's
        ``meta`` device): nothing may depend on its values, as while tracing.
        """
        return getattr(getattr(x, "device", None), "type", None) == "meta"

    def promote(self, values: Sequence[Any]) -> Any:
        """The dtype the library's own ``select`` (``np.select``) gives the choices and
        the default (arrays, or Python scalars standing for their type): the standard's
        ``result_type`` unless the library has a ``select`` of its own.
        """
        arrays = [x for x in values if type(x) not in (bool, int, float, complex)]
        return self.namespace(*arrays).result_type(*values)

    def broadcast_to(self, x: Any, shape: Shape) -> Any:
        """``x`` broadcast to ``shape`` (a view where the library has them)."""
        return self.namespace(x).broadcast_to(x, shape)

    def select_n(self, which: Any, cases: tuple[Any, ...], shape: Shape, out: Any) -> Any:
        """Run ``select_n`` on validated inputs: ``cases[which]`` element by element.

        ``which`` is boolean (then exactly two cases) or integer; the cases are
        arrays of one dtype; all broadcast to ``shape``. An index outside
        ``[0, len(cases))`` raises :func:`index_error` before anything is written
        (eager libraries). The default checks the indices, then chains ``xp.where``.
        """
        xp = self.namespace(which, *cases)
        n = len(cases)
        if self.dtype_kind(which.dtype) == "bool":
            result = xp.where(which, cases[1], cases[0])
        else:
            low, high = self.int_range(which.dtype)
            # No values to check (a trace, a meta tensor): indices are clamped.
            traced = self.traced(which) or self.data_free(which)
            if traced:  # clamped by where: torch 2.8's Dynamo cannot trace compat's clip
                which = xp.where(which < 0, xp.zeros_like(which), which)
                which = xp.where(which > n - 1, xp.full_like(which, n - 1), which)
            # Only ==: some libraries cannot order every integer dtype (PyTorch uint64).
            # Indices beyond the dtype's range cannot occur: those cases are unreachable.
            masks = [which == k for k in range(min(n, high + 1))]
            if not traced and (low < 0 or n <= high) and 0 not in which.shape:
                hit = None
                try:  # one reduction over the indices; the masks name the bad value
                    bad = (low < 0 and bool(xp.min(which) < 0)) or (
                        n <= high and bool(xp.max(which) >= n)
                    )
                except (RuntimeError, TypeError, NotImplementedError):
                    # no reductions for this dtype (PyTorch uint64): ask the masks
                    hit = self._any(xp, masks)
                    bad = not bool(xp.all(hit))
                if bad and not self.mask_indexing(which):
                    # No boolean indexing: name the extreme index instead of the first.
                    low_bad = low < 0 and bool(xp.min(which) < 0)
                    raise index_error(int(xp.min(which) if low_bad else xp.max(which)), n)
                if bad:
                    miss = xp.logical_not(self._any(xp, masks) if hit is None else hit)
                    try:
                        found = which[miss]
                    except (RuntimeError, TypeError, NotImplementedError):
                        # no boolean indexing for this dtype (uint64 on PyTorch 2.6 and
                        # 2.8, at least): the first miss by its flattened position
                        flat = xp.reshape(miss, (-1,))
                        first = int(xp.argmax(xp.astype(flat, xp.int8)))
                        found = xp.reshape(which, (-1,))[first : first + 1]
                    if found.shape[0]:
                        raise index_error(int(found[0]), n)
            result = cases[len(masks) - 1]
            for k in reversed(range(len(masks) - 1)):
                result = xp.where(masks[k], cases[k], result)
            if len(masks) == 1:
                result = xp.where(masks[0], result, result)  # broadcast with which
        return self.write_out(result, out)

    @staticmethod
    def _any(xp: ModuleType, masks: list[Any]) -> Any:
        """Where any of ``masks`` is true."""
        hit = masks[0]
        for mask in masks[1:]:
            hit = xp.logical_or(hit, mask)
        return hit

    def select_cases(
        self, conds: tuple[Any, ...], choices: tuple[Any, ...], default: Any, shape: Shape
    ) -> Any:
        """Run ``select_cases`` on validated inputs: the choice of the first true
        condition, ``default`` where none is.

        ``conds`` are boolean or integer (nonzero is true); the choices and the
        default are arrays of the output dtype; all broadcast to ``shape``. The
        default chains ``xp.where`` from the last condition to the first.
        """
        xp = self.namespace(*conds, *choices, default)
        result = default
        for cond, choice in zip(reversed(conds), reversed(choices), strict=True):
            if self.dtype_kind(cond.dtype) != "bool":
                cond = cond != 0
            result = xp.where(cond, choice, result)
        return result

    def apply_where(
        self,
        cond: Any,
        args: tuple[Any, ...],
        f1: Callable[..., Any],
        f2: Callable[..., Any] | None,
        fill_value: Any,
    ) -> Any:
        """Run ``apply_where`` on validated inputs, broadcast to one shape.

        ``f1`` gets the elements of ``args`` where ``cond`` is true, ``f2`` (or
        ``fill_value``) fills the rest. The default is array-api-extra's eager
        algorithm: boolean indexing, so each function sees only its own elements,
        and the result dtype is the library's promotion of the two sides. Where
        arrays take no boolean indexing (:meth:`mask_indexing`: traced, meta, or a
        library without it): the double where, as JAX's backend does, both sides
        computed on every element (ones where not taken) and joined by
        :func:`arrayselect.where`.
        """
        if not self.mask_indexing(cond):
            from arrayselect._where import where  # _where imports this module

            # The double where: each function sees ones where it is not taken, so its
            # values there (inf, NaN) never reach the result, and the inner where gives
            # the untaken elements an exact zero gradient.
            xp = self.namespace(cond, *args)
            ones = [xp.ones_like(a) for a in args]
            values = f1(*(xp.where(cond, a, one) for a, one in zip(args, ones, strict=True)))
            if f2 is not None:
                other = f2(*(xp.where(cond, one, a) for a, one in zip(args, ones, strict=True)))
            elif type(fill_value) in (bool, int, float, complex):
                other = self._fill_scalar(values, fill_value)[0]
            else:
                other = fill_value
            return where(cond, values, other)
        xp = self.namespace(cond, *args)
        where = self.positions(cond)
        taken = f1(*(self.take_at(a, where) for a in args))
        if f2 is None:
            if type(fill_value) in (bool, int, float, complex):
                value, dtype = self._fill_scalar(taken, fill_value)
                result = xp.full_like(cond, value, dtype=dtype)
            else:
                dtype = self.result_type(taken, fill_value)
                result = xp.astype(fill_value, dtype, copy=True)
        else:
            elsewhere = self.positions(xp.logical_not(cond))
            other = f2(*(self.take_at(a, elsewhere) for a in args))
            result = xp.empty_like(cond, dtype=self.result_type(taken, other))
            self.put_at(result, elsewhere, _cast(xp, other, result.dtype))
        # cast first: PyTorch's index_put refuses values of another dtype
        self.put_at(result, where, _cast(xp, taken, result.dtype))
        return result

    def _fill_scalar(self, taken: Any, value: Any) -> tuple[Any, Any]:
        """A Python-scalar ``fill_value`` checked by the core's rule for the result
        dtype (:func:`arrayselect._validate.fill_scalar`), and that dtype.
        """
        from arrayselect._validate import fill_scalar  # _validate imports this module

        # A Python scalar promotes by its type (the standard's rule), so a zero of it
        # gives the dtype: array-api-strict's result_type raises its own OverflowError
        # for a value out of range, where fill_scalar says why.
        dtype = self.result_type(taken, type(value)(0))
        return fill_scalar(self, value, dtype), dtype

    # How apply_where reads and writes the elements of a boolean mask, in C order.
    # The standard's way is boolean indexing; a backend with faster primitives
    # overrides these three together (NumPy: flat positions, np.take and np.put).

    def positions(self, mask: Any) -> Any:
        """What :meth:`take_at` and :meth:`put_at` take to address ``mask``'s true
        elements (by default the mask itself)."""
        return mask

    def take_at(self, x: Any, where: Any) -> Any:
        """The elements of ``x`` at ``where`` (of :meth:`positions`), 1-D, in C order."""
        return x[where]

    def put_at(self, result: Any, where: Any, values: Any) -> None:
        """Write ``values`` (1-D, in C order) into ``result`` at ``where``."""
        result[where] = values

    def write_out(self, result: Any, out: Any) -> Any:
        """``result`` written into ``out`` and ``out`` returned; ``result`` when ``out``
        is ``None``.
        """
        if out is None:
            return result
        try:
            out[...] = result
        except (RuntimeError, TypeError, ValueError) as exc:
            # e.g. PyTorch refusing a leaf tensor that requires grad
            raise SelectValueError(
                f"out cannot be written in place: {type(exc).__name__}: {exc}"
            ) from exc
        return out


def _cast(xp: ModuleType, x: Any, dtype: Any) -> Any:
    """``x`` with ``dtype`` (a promotion's result: a safe cast), itself if it has it."""
    return x if x.dtype == dtype else xp.astype(x, dtype)
