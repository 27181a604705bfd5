"""The interface every backend implements.

The core validates everything (options, shapes, dtypes, scalars, devices,
``out``) through the small queries below, then calls :meth:`Backend.select`
with a :class:`~arrayselect._rules.shapes.SelectPlan`. A backend answers questions
about its arrays and runs a validated Select; it never decides whether a call
is valid. Plugin authors import these names from :mod:`arrayselect.plugin`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Hashable, Sequence
from types import ModuleType
from typing import Any, ClassVar, Final, Literal, NamedTuple

import array_api_compat as compat

from arrayselect._base.errors import SelectValueError
from arrayselect._rules.shapes import SelectPlan, Shape

__all__ = [
    "DTYPE_KINDS",
    "PYTHON_SCALARS",
    "Backend",
    "DtypeKind",
    "OutLayout",
    "devices_fixed_by_signature",
]

#: The Python scalar types that may stand for an array operand (exact types only), in
#: the order in which they promote (bool < int < float < complex).
PYTHON_SCALARS: Final = (bool, int, float, complex)

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

    Examples
    --------
    What a backend's :meth:`Backend.out_layout` answers for a read-only array, and for
    a writable float32 row of 3 whose elements are 4 bytes apart:

    >>> from arrayselect.plugin import OutLayout
    >>> OutLayout(False, "out.flags.writeable is False").writeable
    False
    >>> OutLayout(True, "", (4,), 4)
    OutLayout(writeable=True, why_not='', strides=(4,), itemsize=4)
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
    PYTHON_SCALARS
        The Python scalar types that may stand for an operand (exact types, in
        promotion order): a backend's hook meets them where the core passes a
        scalar through, such as ``apply_where``'s ``fill_value``.

    Examples
    --------
    >>> from arrayselect.plugin import Backend
    >>> type(0.5) in Backend.PYTHON_SCALARS, type(True) in Backend.PYTHON_SCALARS
    (True, True)
    """

    PYTHON_SCALARS: ClassVar[tuple[type, ...]] = PYTHON_SCALARS
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
        attributes itself, in C, which is cheaper than calling a method. One that
        holds the device sets :attr:`signature_holds_device`.
        """
        return (tuple(x.shape), x.dtype, bool(getattr(x, "weak_type", False)))

    #: The same signature written by C (the NumPy kernel's), or ``None``: a
    #: ``PyCapsule`` named ``"arrayselect.raw_signature"`` holding ``Py_ssize_t
    #: f(PyObject *x, char *buf, Py_ssize_t size)``, which writes the bytes
    #: :meth:`signature` returns for ``x`` into ``buf`` when they fit and returns
    #: their length (call again with that much room when it exceeds ``size``), or
    #: returns 0 where :meth:`signature` returns something other than bytes. It
    #: never raises, and its bytes are self-delimiting. The compiled hit path then
    #: writes a call's signatures into its key, with no Python call per operand.
    raw_signature: Any = None

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

    #: :meth:`signature` holds the device (PyTorch's, CuPy's): a cached decision
    #: stands for devices the core accepted, and a hit compares none.
    signature_holds_device: bool = False

    #: :meth:`signature` of ``out`` fixes what :meth:`shape` and :meth:`out_layout`
    #: report about it (the NumPy kernel's holds the strides and the writeable flag):
    #: the core's verdict on a cached signature's ``out`` stands, and a hit checks
    #: none.
    signature_holds_out_layout: bool = False

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
        arrays = [x for x in (x1, x2) if type(x) not in PYTHON_SCALARS]
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
    # What the core's generic algorithms (arrayselect._operations.generic) ask, so that a plugin
    # serves the family without writing anything; a backend sets the hooks below
    # where it fuses.

    def namespace(self, *arrays: Any) -> ModuleType:
        """The Array API namespace of ``arrays``, for the generic algorithms."""
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
        arrays = [x for x in values if type(x) not in PYTHON_SCALARS]
        return self.namespace(*arrays).result_type(*values)

    def broadcast_to(self, x: Any, shape: Shape) -> Any:
        """``x`` broadcast to ``shape`` (a view where the library has them)."""
        return self.namespace(x).broadcast_to(x, shape)

    #: The backend's own ``select_n(which, cases, shape, out)`` on validated inputs, or
    #: ``None`` for the core's generic one (:func:`arrayselect.plugin.generic.select_n`:
    #: chained ``xp.where`` after an index check). ``which`` is boolean (then exactly
    #: two cases) or integer; the cases are arrays of one dtype; all broadcast to
    #: ``shape``. An index outside ``[0, len(cases))`` raises
    #: :func:`~arrayselect.plugin.errors.index_error` before anything is written.
    select_n: Callable[[Any, tuple[Any, ...], Shape, Any], Any] | None = None

    #: The backend's own ``select_cases(conds, choices, default, shape)`` on validated
    #: inputs, or ``None`` for :func:`arrayselect.plugin.generic.select_cases`.
    #: ``conds`` are boolean or integer (nonzero is true); the choices and the default
    #: are arrays of the output dtype; all broadcast to ``shape``.
    select_cases: Callable[[tuple[Any, ...], tuple[Any, ...], Any, Shape], Any] | None = None

    #: The backend's own ``apply_where(cond, args, f1, f2, fill_value)`` on validated
    #: inputs broadcast to one shape, or ``None`` for the core's generic algorithm
    #: (boolean indexing through :meth:`positions`, :meth:`take_at` and
    #: :meth:`put_at`, or the double where where :meth:`mask_indexing` says no).
    apply_where: (
        Callable[[Any, tuple[Any, ...], Callable[..., Any], Callable[..., Any] | None, Any], Any]
        | None
    ) = None

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


def devices_fixed_by_signature(backend: Backend) -> bool:
    """Whether equal signatures mean the same devices: the backend's signature holds
    them (:attr:`Backend.signature_holds_device`), or it keeps every array on one
    device (the default :meth:`Backend.device_of`). The caches of decisions compare
    devices on a hit only where this is ``False``.
    """
    return backend.signature_holds_device or type(backend).device_of is Backend.device_of
