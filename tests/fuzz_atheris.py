#!/usr/bin/env python
"""Coverage-guided fuzzing of ``select_shape`` and ``select`` with atheris (libFuzzer).

Not collected by pytest (no ``test_`` prefix) and not a dependency: install
atheris into the virtual environment first, then run for as long as you like::

    .venv/bin/pip install atheris
    .venv/bin/python tests/fuzz_atheris.py -max_total_time=600 fuzz-corpus/

libFuzzer options (``-runs=N``, ``-max_total_time=S``, ``-jobs=N``, a corpus
directory) pass straight through; see docs/hardening.md. Each input is decoded
into arbitrary shapes, options (junk included), dtypes, Python scalars,
non-array objects and ``out=`` arrays, and checked by the same contract and
oracle as the hypothesis harness (``tests/test_fuzz.py``): anything outside
the contract is an AssertionError, which atheris reports as a crash with the
input that caused it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atheris

with atheris.instrument_imports(include=["arrayselect"]):
    import arrayselect as asel

import numpy as np
import test_fuzz as harness
from xp_helpers import ALL_DTYPES, numpy_dtype

MODES = ["numpy", "none", "pdpd", "NUMPY", "", None, 0, b"numpy", np.str_("pdpd")]
CBS = ["unidirectional", "multidirectional", "uni", None]
AXES: list[Any] = [-1, 0, 1, 2, 3, -2, 2**70, 1.0, "1", True, None, np.int64(1), np.array([1])]
WEIRD_DIMS: list[Any] = [None, -1, True, 1.0, "2", np.int64(2), 2**70, [1]]
NON_ARRAYS: list[Any] = [None, [True], "abc", {1: 2}, b"\0", object()]
OUT_ROLES = ["none", "right", "then", "shape", "dtype", "junk"]
COND_DTYPES = ["bool", "bool", "int8", "uint8", "int64", "float32", "complex64"]


def _pick(fdp: Any, seq: list[Any]) -> Any:
    return seq[fdp.ConsumeIntInRange(0, len(seq) - 1)]


def _options(fdp: Any) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if fdp.ConsumeBool():
        opts["auto_broadcast"] = _pick(fdp, MODES)
    if fdp.ConsumeBool():
        opts["axis"] = _pick(fdp, AXES)
    if fdp.ConsumeBool():
        opts["cond_broadcast"] = _pick(fdp, CBS)
    return opts


def _shape(fdp: Any) -> tuple[int, ...]:
    return tuple(fdp.ConsumeIntInRange(0, 3) for _ in range(fdp.ConsumeIntInRange(0, 5)))


def _shape_arg(fdp: Any, shape: tuple[int, ...]) -> Any:
    dims: list[Any] = list(shape)
    for k in range(len(dims)):
        if fdp.ConsumeIntInRange(0, 7) == 0:
            dims[k] = _pick(fdp, WEIRD_DIMS)
    how = fdp.ConsumeIntInRange(0, 9)
    if how == 0:
        return _pick(fdp, ["(2, 3)", 3, None, np.array(shape), range(len(shape))])
    return list(dims) if how == 1 else tuple(dims)


def _scalar(fdp: Any) -> Any:
    kind = fdp.ConsumeIntInRange(0, 3)
    if kind == 0:
        return fdp.ConsumeBool()
    if kind == 1:
        return fdp.ConsumeInt(fdp.ConsumeIntInRange(1, 10))
    if kind == 2:
        return fdp.ConsumeRegularFloat() if fdp.ConsumeBool() else fdp.ConsumeFloat()
    return complex(fdp.ConsumeFloat(), fdp.ConsumeFloat())


def _operand(
    fdp: Any, rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, dtypes: list[str]
) -> Any:
    how = fdp.ConsumeIntInRange(0, 9)
    if how == 0:
        return _scalar(fdp)
    if how == 1:
        return _pick(fdp, NON_ARRAYS)
    if how == 2:
        dtype = numpy_dtype(_pick(fdp, dtypes))
    return harness._random_values(rng, shape, dtype)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    what = fdp.ConsumeIntInRange(0, 2)
    opts = _options(fdp)
    shapes = [_shape(fdp) for _ in range(3)]
    if what == 0:
        harness.check_select_shape(
            [_shape_arg(fdp, s) for s in shapes], opts, note=harness._no_note
        )
        return
    rng = np.random.default_rng(fdp.ConsumeIntInRange(0, 2**32 - 1))
    # The portable backend knows the standard's dtypes only (no ml_dtypes bfloat16).
    dtypes = [d for d in ALL_DTYPES if what == 1 or d != "bfloat16"]
    dtype = numpy_dtype(_pick(fdp, dtypes))
    if fdp.ConsumeIntInRange(0, 19) == 0:
        cond: Any = _pick(fdp, [*NON_ARRAYS, True])
    else:
        cond = harness._random_cond(rng, shapes[0], numpy_dtype(_pick(fdp, COND_DTYPES)))
    then = _operand(fdp, rng, shapes[1], dtype, dtypes)
    else_ = _operand(fdp, rng, shapes[2], dtype, dtypes)
    case = (cond, then, else_, _pick(fdp, OUT_ROLES), rng, opts)
    # what == 2: the same call through the portable Array API backend.
    portable = asel.force_portable() if what == 2 else contextlib.nullcontext()
    with portable:
        harness._run_select_case(np, case, note=harness._no_note)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
