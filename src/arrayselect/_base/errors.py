"""Exception classes raised by :mod:`arrayselect`.

Every error the library raises on bad input is one of these, so callers can
catch ``arrayselect.SelectError`` or the builtin base they expect
(``ValueError`` for shapes and option values, ``TypeError`` for types).
A backend reaches them as ``arrayselect.plugin.errors``.

For example:

>>> from arrayselect.plugin import errors
>>> print(errors.index_error(5, 3))
which holds 5, but select_n has 3 cases: every index must lie in [0, 3)
>>> issubclass(errors.SelectShapeError, ValueError)
True
"""

from __future__ import annotations

__all__ = [
    "ScalarOverflowError",
    "SelectCallbackError",
    "SelectError",
    "SelectShapeError",
    "SelectTypeError",
    "SelectValueError",
    "index_error",
]


class SelectError(Exception):
    """Base class of every error raised by :mod:`arrayselect` on bad input."""


class SelectShapeError(SelectError, ValueError):
    """The input shapes cannot be broadcast under the requested mode."""


class SelectValueError(SelectError, ValueError):
    """An option has an unknown value, or inputs live on different devices."""


class SelectTypeError(SelectError, TypeError):
    """An input has the wrong type or dtype, or ``out=`` is not possible."""


class ScalarOverflowError(SelectTypeError, ValueError, OverflowError):
    """A Python scalar does not fit the dtype it must take.

    It is a :class:`SelectTypeError` (the scalar does not fit the dtype), and
    also a ``ValueError`` and an ``OverflowError``, which is what NumPy and
    JAX raise for the same conversion.
    """


class SelectCallbackError(SelectError, ValueError, TypeError):
    """A function ``apply_where`` called (``f1`` or ``f2``) raised, or returned
    something other than an array of its arguments' library, shape and a numeric
    or boolean dtype.

    The message names the function and what was expected; the function's own
    exception, if any, is chained (``__cause__``). It is a ``ValueError`` and a
    ``TypeError`` too, what the libraries raise for a wrong shape or dtype.
    """


# Shown as arrayselect.SelectShapeError (not arrayselect._base.errors.SelectShapeError) in
# tracebacks, reprs and the docs: the public name, where they are imported from. It
# is also where pickle finds them, and arrayselect exports every one of them.
for _cls in (
    SelectError,
    SelectShapeError,
    SelectValueError,
    SelectTypeError,
    ScalarOverflowError,
    SelectCallbackError,
):
    _cls.__module__ = "arrayselect"
del _cls


def index_error(value: int, n: int) -> SelectValueError:
    """The error for a ``select_n`` index ``value`` outside ``[0, n)``.

    Written once here; every eager backend raises it when its pass over the data
    meets such an index (traced backends clamp instead, as ``lax.select_n`` does).
    """
    return SelectValueError(
        f"which holds {value}, but select_n has {n} case{'s' if n != 1 else ''}: every "
        f"index must lie in [0, {n})"
    )
