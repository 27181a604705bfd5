"""asv benchmarks of the CuPy backend against ``cupy.where`` (skipped without a GPU).

Each timed call is followed by a synchronization of the current stream, so the
figures are host wall-clock times of launch + kernel. ``gpu_bench.py`` measures
device time with CUDA events and the bandwidth targets.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

try:  # asv >= 0.6
    from asv_runner.benchmarks.mark import SkipNotImplemented
except ImportError:  # older asv: NotImplementedError in setup skips the benchmark
    SkipNotImplemented = NotImplementedError


def _cupy() -> Any:
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("device count is 0")
    except Exception as exc:
        raise SkipNotImplemented(f"no CUDA GPU: {exc}") from exc
    return cupy


PATTERNS = ["same shape", "cond row", "outer", "transposed", "step-2", "scalar else", "uint8 cond"]


def _inputs(cp: Any, pattern: str, n: int, dtype: Any) -> tuple[Any, Any, Any]:
    rng = cp.random.default_rng(0)
    cond = rng.integers(0, 2, size=(n, n), dtype=cp.uint8)
    # Random bits of the dtype (no dtype-specific CuPy routine needed, bfloat16 included).
    then = rng.integers(0, 2**15, size=(n, n), dtype=cp.int32).astype(cp.uint32)
    then = then.view(cp.uint8)[:, : n * dtype.itemsize].copy().view(dtype)
    else_ = then[::-1].copy()
    if pattern == "same shape":
        return cond.view(cp.bool_), then, else_
    if pattern == "cond row":
        return cond[:, :1].copy().view(cp.bool_), then, else_
    if pattern == "outer":
        return cond.view(cp.bool_), then[:, :1].copy(), else_[:1, :].copy()
    if pattern == "transposed":
        return cond.view(cp.bool_).T, then.T, else_.T
    if pattern == "step-2":
        return cond.view(cp.bool_)[::2, ::2], then[::2, ::2], else_[1::2, 1::2]
    if pattern == "scalar else":
        return cond.view(cp.bool_), then, 0.0
    if pattern == "uint8 cond":
        return cond, then, else_
    raise ValueError(pattern)


class CupySelect:
    """``arrayselect.select`` vs ``cupy.where`` on the asv patterns."""

    params = (PATTERNS, [1024, 8192], ["float32", "bfloat16"], ["arrayselect", "cupy.where"])
    param_names: ClassVar[list[str]] = ["pattern", "n", "dtype", "impl"]
    timeout = 300

    def setup(self, pattern: str, n: int, dtype: str, impl: str) -> None:
        cp = _cupy()
        import arrayselect as asel

        if dtype == "bfloat16":
            try:
                import ml_dtypes

                np_dtype: Any = np.dtype(ml_dtypes.bfloat16)
                cp.zeros(1, np_dtype)
            except Exception as exc:
                raise SkipNotImplemented(f"no bfloat16 in this CuPy: {exc}") from exc
        else:
            np_dtype = np.dtype(dtype)
        self.cp = cp
        self.args = _inputs(cp, pattern, n, np_dtype)
        self.fn = asel.select if impl == "arrayselect" else cp.where
        try:
            self.fn(*self.args)
        except Exception as exc:
            raise SkipNotImplemented(f"{impl} cannot do this: {exc}") from exc
        cp.cuda.get_current_stream().synchronize()

    def time_select(self, pattern: str, n: int, dtype: str, impl: str) -> None:
        self.fn(*self.args)
        self.cp.cuda.get_current_stream().synchronize()


class CupySelectLarge:
    """2**28 float32, same shape, contiguous: the bandwidth case."""

    params = (["arrayselect", "cupy.where"],)
    param_names: ClassVar[list[str]] = ["impl"]
    timeout = 300

    def setup(self, impl: str) -> None:
        cp = _cupy()
        import arrayselect as asel

        n = 1 << 28
        rng = cp.random.default_rng(0)
        self.cp = cp
        self.args = (
            rng.integers(0, 2, size=n, dtype=cp.uint8).view(cp.bool_),
            rng.random(n, dtype=cp.float32),
            rng.random(n, dtype=cp.float32),
        )
        self.fn = asel.select if impl == "arrayselect" else cp.where
        self.fn(*self.args)
        cp.cuda.get_current_stream().synchronize()

    def time_select(self, impl: str) -> None:
        self.fn(*self.args)
        self.cp.cuda.get_current_stream().synchronize()
