"""``arrayselect.select`` against each library's own ``where``, on every backend and device.

The full cross product of backend x size x dtype x broadcast pattern x mode is
too large to run, so it is split:

* :class:`SameShape` -- backend x size x dtype, three same-shape 1-D operands;
* :class:`BroadcastPattern` -- backend x broadcast pattern, float32, 10**6 outputs;
* :class:`Mode` -- backend x ``auto_broadcast``/``cond_broadcast`` mode, float32, 10**6;
* :class:`Throughput` -- backend x size: achieved GB/s and the fraction of the
  device's copy bandwidth (``track_``);
* :class:`NumpyPeakMemory` -- ``peakmem_`` of the NumPy paths;
* :class:`ImportTime` -- ``timeraw_`` import of ``arrayselect`` in a fresh interpreter.

Each ``time_select`` has a ``time_peer`` twin with the same parameters timing
the library's own ``where`` on the same device arrays, so asv shows them side
by side. See ``common.py`` for the backends and what is synchronised.
"""

from __future__ import annotations

from .common import (
    BACKENDS,
    DTYPES,
    MODES,
    PATTERNS,
    SIZES,
    Prepared,
    copy_bandwidth,
    median_time,
    mode_case,
    pattern_case,
    require,
    same_shape_case,
)


class SameShape:
    """Same-shape operands: how time scales with size, per dtype."""

    params = [BACKENDS, SIZES, DTYPES]
    param_names = ["backend", "size", "dtype"]
    timeout = 300

    def setup(self, backend: str, size: int, dtype: str) -> None:
        require(backend, size)
        self.run = Prepared(backend, same_shape_case(size, dtype))

    def time_select(self, backend: str, size: int, dtype: str) -> None:
        self.run.call_ours()

    def time_peer(self, backend: str, size: int, dtype: str) -> None:
        self.run.call_peer()


class BroadcastPattern:
    """float32, 1000 x 1000 output; operands broadcast in the named pattern.

    same-shape: all (1000, 1000); cond-row: cond (1000,); cond-column: cond
    (1000, 1); outer: then (1000, 1), else (1, 1000); pdpd: else and cond
    (1000,) fitted at axis 0; transposed: then is a transposed view;
    scalar-else: else is the Python scalar 0.0.
    """

    params = [BACKENDS, PATTERNS]
    param_names = ["backend", "pattern"]
    timeout = 120

    def setup(self, backend: str, pattern: str) -> None:
        require(backend)
        self.run = Prepared(backend, pattern_case(pattern))

    def time_select(self, backend: str, pattern: str) -> None:
        self.run.call_ours()

    def time_peer(self, backend: str, pattern: str) -> None:
        self.run.call_peer()


class Mode:
    """float32, 1000 x 1000 output, one call per broadcasting mode.

    none: identical shapes; numpy: cond (1000,), else (1, 1000);
    numpy-multidirectional: cond (1000, 1) enlarges then (1000,) and else
    (1, 1000); pdpd: cond (1000,) and else (1000, 1) fitted one way onto then
    with axis -1; pdpd-axis0: else and cond (1000,) at axis 0.
    """

    params = [BACKENDS, MODES]
    param_names = ["backend", "mode"]
    timeout = 120

    def setup(self, backend: str, mode: str) -> None:
        require(backend)
        self.run = Prepared(backend, mode_case(mode))

    def time_select(self, backend: str, mode: str) -> None:
        self.run.call_ours()

    def time_peer(self, backend: str, mode: str) -> None:
        self.run.call_peer()


class Throughput:
    """Achieved memory throughput of ``select`` (float32, same shape).

    Bytes are what Select must move at least: each input read once and the
    output written once. The copy bandwidth is that of a large same-device
    copy by the backend's library (NumPy's for Dask), measured once per process.
    """

    params = [BACKENDS, SIZES]
    param_names = ["backend", "size"]
    timeout = 300

    def setup(self, backend: str, size: int) -> None:
        require(backend, size)
        case = same_shape_case(size, "float32")
        self.run = Prepared(backend, case)
        self.nbytes = case.nbytes()
        self.backend = backend

    def _gbps(self) -> float:
        return self.nbytes / median_time(self.run.ours) / 1e9

    def track_gbps(self, backend: str, size: int) -> float:
        return self._gbps()

    track_gbps.unit = "GB/s"  # type: ignore[attr-defined]

    def track_fraction_of_copy_bandwidth(self, backend: str, size: int) -> float:
        return self._gbps() * 1e9 / copy_bandwidth(self.backend)

    track_fraction_of_copy_bandwidth.unit = "fraction"  # type: ignore[attr-defined]


class NumpyPeakMemory:
    """Peak resident memory of a NumPy-path call (inputs included), float64 same shape."""

    params = [["numpy", "np.where", "portable"], SIZES]
    param_names = ["backend", "size"]
    timeout = 120

    def setup(self, backend: str, size: int) -> None:
        require(backend, size)
        self.run = Prepared(backend, same_shape_case(size, "float64"))

    def peakmem_select(self, backend: str, size: int) -> None:
        self.run.call_ours()


class ImportTime:
    """``import arrayselect`` (and a first NumPy call) in a fresh interpreter."""

    timeout = 120

    def timeraw_import_arrayselect(self) -> str:
        return "import arrayselect"

    def timeraw_import_and_first_numpy_select(self) -> str:
        return (
            "import numpy as np, arrayselect as asel\n"
            "asel.select(np.array([True, False]), np.array([1.0, 2.0]), 0.0)"
        )
