"""GPU benchmarks of arrayselect's CuPy backend (and JAX on a GPU), timed with CUDA events.

Run on a machine with an NVIDIA GPU (``bash scripts/gpu_check.sh`` runs it):

    python asv_benchmarks/gpu_bench.py [--repeat 30] [--log2-size 28] [--json FILE]

What it measures (medians over ``--repeat`` samples, each a batch of ``--batch``
back-to-back calls between two CUDA events on the current stream, after warm-up):

* the device-to-device copy bandwidth: ``cupy.copyto`` of 2**28 float32,
  counting read + write (8 bytes per element); ``cudaMemcpyAsync`` is shown too;
* Select at 2**28 float32, same shape, contiguous: arrayselect (default path,
  and forced to the element-wise kernel) and ``cupy.where``, as bandwidth
  counting 13 bytes per element (1 cond + 4 then + 4 else + 4 out) and as a
  fraction of the copy bandwidth. Target: >= 0.90;
* bfloat16 at the same size (7 bytes per element);
* the asv patterns at 2**26 elements: cond row (N, 1), outer product (then (N, 1),
  else (1, M)), transposed, step-2 slices, scalar else, uint8 cond; ratio
  arrayselect / ``cupy.where`` (target: <= 1, i.e. never slower; "slower" is
  flagged beyond a 3% noise allowance);
* small sizes (2**10, 2**16, 2**20 float32): host wall clock per call with a
  synchronization after each, arrayselect (default and element-wise kernel) vs
  ``cupy.where``: the launch overhead, and where the 16-byte kernel starts to pay;
* the size sweep 2**10 .. 2**28 float32 (every even power), same shape: the
  allocating ``arrayselect.select`` vs ``cupy.where``, CUDA events around
  batches of back-to-back calls (so host overhead counts where it exceeds the
  kernel). Target: never slower;
* ``select_cases`` with 4 boolean conditions, float32 choices and a scalar
  default vs ``cupy.select`` (2**16 .. 2**26). Target: >= 3x;
* if JAX sees a GPU: jitted ``arrayselect.select`` vs jitted ``jnp.where``
  (2**20, 2**24, 2**28 float32; wall clock around batches of calls ending in
  ``block_until_ready``, the two interleaved sample by sample; whether the two
  lower to the same HLO). Target: within 5%;
* the environment: device, compute capability, driver, CUDA runtime, library
  versions, date (``results["env"]``).

Without a GPU it prints that nothing was measured and exits with status 2.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from arrayselect._tools.bench_stats import load_average, machine

NOISE = 1.03  # ratios up to this count as "not slower"
COPY_TARGET = 0.90


def _gpu() -> tuple[Any, str]:
    try:
        import cupy
    except Exception as exc:
        return None, f"cupy not importable: {exc}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return None, str(exc)
    if count < 1:
        return None, "device count is 0"
    return cupy, ""


def time_events(cp: Any, fn: Callable[[], Any], repeat: int, batch: int, warmup: int = 3) -> float:
    """Median seconds per call of ``fn``, from CUDA events around batches of calls."""
    for _ in range(warmup):
        fn()
    stream = cp.cuda.get_current_stream()
    stream.synchronize()
    return float(statistics.median(_batch(cp, stream, fn, batch) for _ in range(repeat)))


def _batch(cp: Any, stream: Any, fn: Callable[[], Any], batch: int) -> float:
    """Seconds per call of ``batch`` back-to-back calls, between two CUDA events."""
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    for _ in range(batch):
        fn()
    end.record(stream)
    end.synchronize()
    return float(cp.cuda.get_elapsed_time(start, end)) / 1e3 / batch


def time_wall(cp: Any, fn: Callable[[], Any], repeat: int, inner: int = 20) -> float:
    """Median host seconds per call of ``fn`` followed by a stream synchronization."""
    stream = cp.cuda.get_current_stream()
    for _ in range(5):
        fn()
    stream.synchronize()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
            stream.synchronize()
        samples.append((time.perf_counter() - start) / inner)
    return float(statistics.median(samples))


def _bits(cp: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    raw = cp.random.randint(0, 256, size=n, dtype=cp.uint8)
    return raw.view(dtype).reshape(shape)


def _same_bits(cp: Any, a: Any, b: Any) -> bool:
    a, b = cp.ascontiguousarray(a), cp.ascontiguousarray(b)
    if a.shape != b.shape or a.dtype.itemsize != b.dtype.itemsize:
        return False
    return bool((a.reshape(-1).view(cp.uint8) == b.reshape(-1).view(cp.uint8)).all())


def run(args: argparse.Namespace, results: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every benchmark; return the results, filled into ``results`` as they come
    (so a caller keeps the rows measured before an exception)."""
    import arrayselect as asel

    cp, reason = _gpu()
    results = {} if results is None else results
    results.update(measured=cp is not None, rows=[], env=environment(cp))
    if cp is None:
        results["reason"] = f"no CUDA GPU ({reason})"
        return results
    from arrayselect.backends.cupy_backend import backend as cupy_backend

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    results["device"] = f"{name} (device {dev.id}, {props['multiProcessorCount']} SMs)"
    results["cupy"] = cp.__version__
    rows: list[dict[str, Any]] = results["rows"]
    n = 1 << args.log2_size
    rep, batch = args.repeat, args.batch

    # --- copy bandwidth
    src = _bits(cp, (n,), np.float32)
    dst = cp.empty_like(src)
    t_copy = time_events(cp, lambda: cp.copyto(dst, src), rep, batch)
    copy_bw = 8 * n / t_copy
    t_memcpy = time_events(
        cp, lambda: dst.data.copy_from_device_async(src.data, src.nbytes), rep, batch
    )
    rows.append(
        dict(
            name=f"copy bandwidth: cupy.copyto 2^{args.log2_size} float32",
            seconds=t_copy,
            gbps=copy_bw / 1e9,
            note="reference (read + write)",
        )
    )
    rows.append(
        dict(
            name=f"copy bandwidth: cudaMemcpyAsync D2D 2^{args.log2_size} float32",
            seconds=t_memcpy,
            gbps=8 * n / t_memcpy / 1e9,
            note="for information",
        )
    )
    dst = None  # free it

    backend = asel.backend_for(cp.zeros(1, bool), cp.zeros(1), 0.0)
    assert isinstance(backend, cupy_backend.CupyBackend), backend

    def plain() -> Any:
        saved = backend.vector_min_size
        backend.vector_min_size = 1 << 62
        return saved

    # --- 2^28 float32 and bfloat16, same shape, contiguous
    c = cp.random.randint(0, 2, size=n, dtype=cp.uint8).view(cp.bool_)
    for dtype_name, per_elem in (("float32", 13), ("bfloat16", 7)):
        if dtype_name == "bfloat16":
            try:
                import ml_dtypes

                dtype: Any = np.dtype(ml_dtypes.bfloat16)
                t, e = _bits(cp, (n,), dtype), _bits(cp, (n,), dtype)
            except Exception as exc:
                rows.append(dict(name="bfloat16", note=f"not measured: {exc}"))
                continue
        else:
            dtype = np.dtype(np.float32)
            t, e = src, _bits(cp, (n,), dtype)
        out = cp.empty_like(t)
        ours = asel.select(c, t, e)
        raw = np.dtype(f"u{dtype.itemsize}")
        ok = _same_bits(cp, ours, cp.where(c, t.view(raw), e.view(raw)))
        ours = None

        def ours_call(t: Any = t, e: Any = e, out: Any = out) -> Any:
            return asel.select(c, t, e, out=out)

        def where_call(t: Any = t, e: Any = e) -> Any:
            return cp.where(c, t, e)

        t_ours = time_events(cp, ours_call, rep, batch)
        saved = plain()
        try:
            t_plain = time_events(cp, ours_call, rep, batch)
        finally:
            backend.vector_min_size = saved
        try:
            t_where = time_events(cp, where_call, rep, batch)
        except Exception as exc:
            t_where = None
            where_note = f"cupy.where failed: {type(exc).__name__}: {exc}"[:80]
        else:
            where_note = ""
        label = f"select 2^{args.log2_size} {dtype_name} same shape"
        for impl, secs in (
            ("arrayselect", t_ours),
            ("arrayselect element-wise kernel", t_plain),
            ("cupy.where", t_where),
        ):
            if secs is None:
                rows.append(dict(name=f"{label}: {impl}", note=where_note))
                continue
            frac = per_elem * n / secs / copy_bw
            row = dict(
                name=f"{label}: {impl}",
                seconds=secs,
                gbps=per_elem * n / secs / 1e9,
                fraction_of_copy=frac,
            )
            if impl == "arrayselect":
                notes = ["bits equal cupy.where" if ok else "BITS DIFFER from cupy.where"]
                if dtype_name == "float32":
                    verdict = "meets" if frac >= COPY_TARGET else "MISSES"
                    notes.append(f"{verdict} the {COPY_TARGET:.0%} target")
                row["note"] = "; ".join(notes)
            if impl.startswith("arrayselect") and t_where is not None:
                row["ratio_to_where"] = secs / t_where
            rows.append(row)
        t = e = out = None
    src = None

    # --- asv patterns (cupy_backend.py's, at its two sizes n x n: 1024 and 8192 by default)
    f32 = np.float32
    for side in (1 << 10, 1 << (args.log2_patterns // 2)):
        _guarded(rows, f"patterns {side}x{side}", _pattern_rows, cp, asel, side, rep, batch)

    # --- the size sweep, allocating calls, events around batches
    _guarded(rows, "size sweep", _sweep_rows, cp, asel, args)

    # --- select_cases x4 vs cupy.select
    _guarded(rows, "select_cases", _family_rows, cp, asel, args)
    # --- small sizes: host wall clock per call (launch overhead), synchronizing each call
    for log2 in (10, 16, 20):
        m = 1 << log2
        sc = cp.random.randint(0, 2, size=m, dtype=cp.uint8).view(cp.bool_)
        st, se = _bits(cp, (m,), f32), _bits(cp, (m,), f32)
        timings = {}
        for impl, fn in (
            ("arrayselect", functools.partial(asel.select, sc, st, se)),
            ("cupy.where", functools.partial(cp.where, sc, st, se)),
        ):
            timings[impl] = time_wall(cp, fn, rep)
        saved = plain()
        try:
            timings["arrayselect element-wise kernel"] = time_wall(
                cp, functools.partial(asel.select, sc, st, se), rep
            )
        finally:
            backend.vector_min_size = saved
        for impl, secs in timings.items():
            row = dict(name=f"small 2^{log2} float32 same shape, wall clock: {impl}", seconds=secs)
            if impl != "cupy.where":
                row["ratio_to_where"] = secs / timings["cupy.where"]
                row["note"] = "host overhead + kernel, synchronized per call"
            rows.append(row)

    # --- launch configurations and kernel variants of the 16-byte-word kernel (tuning)
    if args.tuning:
        _guarded(rows, "tuning", _tuning_rows, cp, args, copy_bw)
    # --- host time per call, by part (what a small call costs)
    _guarded(rows, "host overhead", _overhead_rows, cp, asel)

    # --- JAX on the GPU (CuPy's pool given back first: JAX allocates its own)
    cp.get_default_memory_pool().free_all_blocks()
    _guarded(rows, "jax", _jax_rows, args)
    return results


def _guarded(
    rows: list[dict[str, Any]], label: str, section: Callable[..., Any], *args: Any
) -> None:
    """``rows.extend(section(*args))``; an exception becomes an error row, so one
    failing section costs its own rows, not the whole run's."""
    try:
        rows.extend(section(*args))
    except Exception as exc:
        import traceback

        traceback.print_exc()
        rows.append(dict(name=f"{label}: ERROR", note=f"{type(exc).__name__}: {exc}"[:200]))


def time_pair(
    cp: Any, first: Callable[[], Any], second: Callable[[], Any], repeat: int, batch: int
) -> tuple[float, float]:
    """Median seconds per call of two functions, their samples interleaved.

    Each sample is a batch of back-to-back calls between two CUDA events (so host
    overhead counts where it exceeds the kernel); alternating the two functions
    sample by sample puts clock or thermal drift on both alike.
    """
    stream = cp.cuda.get_current_stream()
    for _ in range(3):
        first()
        second()
    stream.synchronize()
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for fn, out in ((first, samples[0]), (second, samples[1])):
            out.append(_batch(cp, stream, fn, batch))
    return float(statistics.median(samples[0])), float(statistics.median(samples[1]))


def _version(module: str) -> str:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return "not installed"


def environment(cp: Any) -> dict[str, Any]:
    """Where the figures come from: device, driver, CUDA, library versions, date (UTC)."""
    import datetime
    import platform
    import subprocess

    load = load_average()
    env: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        # the host's 1-minute load average and CPU: every figure says its load and machine
        "load": None if load is None else round(load, 2),
        "host_cpu": machine().cpu,
    }
    for dist in (
        "arrayselect",
        "numpy",
        "cupy-cuda13x",
        "cupy-cuda12x",
        "jax",
        "jaxlib",
        "jax-cuda13-plugin",
        "jax-cuda12-plugin",
        "ml_dtypes",
        "array-api-compat",
    ):
        v = _version(dist)
        if v != "not installed":
            env[dist] = v
    try:
        query = "name,driver_version,memory.total,clocks.max.sm,clocks.max.mem"
        line = (
            subprocess.run(
                ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
                check=True,
            )
            .stdout.strip()
            .splitlines()[0]
        )
        env["nvidia_smi"] = dict(
            zip(query.split(","), (x.strip() for x in line.split(",")), strict=False)
        )
        env["driver"] = env["nvidia_smi"]["driver_version"]
    except Exception as exc:
        env["nvidia_smi"] = f"not available ({type(exc).__name__})"
    if cp is not None:
        rt = cp.cuda.runtime
        dev = cp.cuda.Device()
        props = rt.getDeviceProperties(dev.id)
        name = props["name"]
        env["device"] = name.decode() if isinstance(name, bytes) else str(name)
        env["compute_capability"] = f"{props['major']}.{props['minor']}"
        env["sm_count"] = int(props["multiProcessorCount"])
        env["memory_gib"] = round(int(props["totalGlobalMem"]) / 2**30, 1)
        env["l2_mib"] = round(int(props["l2CacheSize"]) / 2**20, 1)

        def cuda(v: int) -> str:
            return f"{v // 1000}.{v % 1000 // 10}"

        env["cuda_runtime"] = cuda(rt.runtimeGetVersion())
        env["cuda_driver_api"] = cuda(rt.driverGetVersion())
    return env


def _sweep_rows(cp: Any, asel: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Allocating ``select`` vs ``cupy.where``, float32 same shape, 2^10 .. 2^log2_size."""
    rows: list[dict[str, Any]] = []
    backend = asel.backend_for(cp.zeros(1, bool), cp.zeros(1), 0.0)
    for log2 in range(10, args.log2_size + 1, 2):
        m = 1 << log2
        c = cp.random.randint(0, 2, size=m, dtype=cp.uint8).view(cp.bool_)
        t, e = _bits(cp, (m,), np.float32), _bits(cp, (m,), np.float32)
        ok = _same_bits(cp, asel.select(c, t, e), cp.where(c, t, e))
        # batches of at least ~2^24 elements' work (or 200 calls), so a sample is well
        # past the events' resolution
        b = max(args.batch, min(200, (1 << 24) // m))
        t_ours, t_where = time_pair(
            cp,
            functools.partial(asel.select, c, t, e),
            functools.partial(cp.where, c, t, e),
            args.repeat,
            b,
        )
        ratio = t_ours / t_where
        saved, backend.vector_min_size = backend.vector_min_size, 1 << 62
        try:  # the element-wise kernel, for comparison (not a target)
            t_plain = time_events(cp, functools.partial(asel.select, c, t, e), args.repeat, b)
        finally:
            backend.vector_min_size = saved
        rows.append(
            dict(
                name=f"sweep 2^{log2} float32 same shape: arrayselect vs cupy.where",
                seconds=t_ours,
                where_seconds=t_where,
                elementwise_seconds=t_plain,
                gbps=13 * m / t_ours / 1e9,
                ratio_to_where=ratio,
                note=("bits equal; " if ok else "BITS DIFFER; ")
                + ("not slower" if ratio <= NOISE else "SLOWER than cupy.where"),
            )
        )
        c = t = e = None
    return rows


def _family_rows(cp: Any, asel: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """``select_cases`` with 4 conditions vs ``cupy.select`` (float32, scalar default)."""
    rows: list[dict[str, Any]] = []
    for log2 in range(16, min(args.log2_size, 26) + 1, 2):
        m = 1 << log2
        # conditions true with probability 1/4 each, so every branch of the chain is taken
        conds = [cp.random.randint(0, 4, size=m, dtype=cp.uint8) == 0 for _ in range(4)]
        choices = [_bits(cp, (m,), np.float32) for _ in range(4)]
        ours = asel.select_cases(conds, choices, 0.0)
        ref = cp.select(conds, choices, 0.0)
        ok = _same_bits(cp, ours, ref)
        ours = ref = None
        b = max(args.batch, min(100, (1 << 22) // m))
        t_ours, t_ref = time_pair(
            cp,
            functools.partial(asel.select_cases, conds, choices, 0.0),
            functools.partial(cp.select, conds, choices, 0.0),
            args.repeat,
            b,
        )
        speedup = t_ref / t_ours
        rows.append(
            dict(
                name=f"select_cases x4 2^{log2} float32: arrayselect vs cupy.select",
                seconds=t_ours,
                select_seconds=t_ref,
                speedup=speedup,
                gbps=24 * m / t_ours / 1e9,
                note=("bits equal; " if ok else "BITS DIFFER; ")
                + f"{speedup:.2f}x cupy.select ({'meets' if speedup >= 3 else 'MISSES'} 3x)",
            )
        )
        conds = choices = []
    return rows


_VARIANT = """\
extern "C" __global__ void {name}(
    const unsigned int* {restrict} c, const uint4* {restrict} x, const uint4* {restrict} y,
    uint4* z, long long n_words)
{{
    union w4 {{ uint4 w; unsigned int e[4]; }};
    union c4 {{ unsigned int w; unsigned char b[4]; }};
    const long long step = (long long)gridDim.x * blockDim.x * {unroll};
    for (long long base = (long long)blockIdx.x * blockDim.x * {unroll} + threadIdx.x;
         base < n_words; base += step) {{
        c4 cb[{unroll}]; w4 a[{unroll}], b[{unroll}];
#pragma unroll
        for (int u = 0; u < {unroll}; ++u) {{
            const long long j = base + (long long)u * blockDim.x;
            if (j < n_words) {{
                cb[u].w = {ldc}(c + j); a[u].w = {ld}(x + j); b[u].w = {ld}(y + j);
            }}
        }}
#pragma unroll
        for (int u = 0; u < {unroll}; ++u) {{
            const long long j = base + (long long)u * blockDim.x;
            if (j < n_words) {{
                w4 r;
#pragma unroll
                for (int k = 0; k < 4; ++k) r.e[k] = cb[u].b[k] != 0 ? a[u].e[k] : b[u].e[k];
                {store}
            }}
        }}
    }}
}}
"""


def _tuning_rows(cp: Any, args: argparse.Namespace, copy_bw: float) -> list[dict[str, Any]]:
    """The package's word kernel under other launch shapes, and unrolled / streaming
    variants of it (float32, 2^log2_size, same inputs), as fractions of the copy.
    Not targets: what the next change to the kernel is chosen from.
    """
    from arrayselect.backends.cupy_backend import backend as cb
    from arrayselect.backends.cupy_backend import kernels as ck

    n = 1 << args.log2_size
    words = n // 4
    c = cp.random.randint(0, 2, size=n, dtype=cp.uint8).view(cp.bool_)
    t, e = _bits(cp, (n,), np.float32), _bits(cp, (n,), np.float32)
    z = cp.empty_like(t)
    ref = cp.where(c, t.view(cp.uint32), e.view(cp.uint32))
    spec = ck.vector_spec(1, 4)
    assert spec is not None
    base = cb.vector_kernel(spec)
    rt = cp.cuda.runtime
    dev = cp.cuda.Device().id
    sms = rt.deviceGetAttribute(rt.cudaDevAttrMultiProcessorCount, dev)
    per_sm = rt.deviceGetAttribute(rt.cudaDevAttrMaxThreadsPerMultiProcessor, dev)
    rows: list[dict[str, Any]] = []

    def row(label: str, kernel: Any, grid: int, block: int, *tail: Any) -> None:
        z.fill(0)
        try:
            kernel((grid,), (block,), (c, t, e, z, *tail))
            cp.cuda.get_current_stream().synchronize()
            ok = bool((z.view(cp.uint32) == ref).all())
            secs = time_events(
                cp, lambda: kernel((grid,), (block,), (c, t, e, z, *tail)), args.repeat, args.batch
            )
        except Exception as exc:
            rows.append(dict(name=f"tuning {label}", note=f"failed: {exc}"[:90]))
            return
        rows.append(
            dict(
                name=f"tuning {label}",
                seconds=secs,
                gbps=13 * n / secs / 1e9,
                fraction_of_copy=13 * n / secs / copy_bw,
                note=f"grid {grid} x block {block}" + ("" if ok else "; WRONG RESULT"),
            )
        )

    size = np.int64(n)
    for block in (128, 256, 512, 1024):
        resident = sms * (per_sm // block)
        for waves in (1, 2, 4):
            row(
                f"package kernel, block {block}, {waves} wave(s)",
                base,
                resident * waves,
                block,
                size,
            )
    row("package kernel, one word per thread", base, -(-words // 256), 256, size)
    variants = [
        ("unroll 2", 2, "", "__ldg", "__ldg", "__stcg"),
        ("unroll 4", 4, "", "", "", ""),
        ("unroll 4 restrict", 4, "__restrict__", "__ldg", "__ldg", ""),
        ("unroll 4 streaming", 4, "__restrict__", "__ldcs", "__ldcs", "__stcs"),
        ("unroll 8 streaming", 8, "__restrict__", "__ldcs", "__ldcs", "__stcs"),
        ("unroll 2 streaming", 2, "__restrict__", "__ldcs", "__ldcs", "__stcs"),
    ]
    for label, unroll, restrict, ldc, ld, st in variants:
        name = "tuning_" + label.replace(" ", "_")
        src = _VARIANT.format(
            name=name,
            unroll=unroll,
            restrict=restrict,
            ldc=ldc or "*",
            ld=ld or "*",
            store=f"{st}(z + j, r.w);" if st else "z[j] = r.w;",
        )
        try:
            kernel = cp.RawKernel(src, name)
        except Exception as exc:
            rows.append(dict(name=f"tuning {label}", note=f"failed: {exc}"[:90]))
            continue
        for block in (256, 512):
            resident = sms * (per_sm // block)
            row(f"{label}, block {block}, 1 wave", kernel, resident, block, np.int64(words))
    return rows


def _overhead_rows(cp: Any, asel: Any) -> list[dict[str, Any]]:
    """Host microseconds per call (no synchronization; 2^10 float32), by part."""
    from arrayselect.backends.cupy_backend import backend as cb
    from arrayselect.backends.cupy_backend import kernels as ck

    m = 1 << 10
    c = cp.random.randint(0, 2, size=m, dtype=cp.uint8).view(cp.bool_)
    t, e = _bits(cp, (m,), np.float32), _bits(cp, (m,), np.float32)
    z = cp.empty_like(t)
    spec = ck.vector_spec(1, 4)
    assert spec is not None
    raw = cb.vector_kernel(spec)
    ew = cb.elementwise_kernel(1, 4)
    u = np.dtype(np.uint32)
    size = np.int64(m)
    parts: list[tuple[str, Callable[[], Any]]] = [
        ("cupy.where", lambda: cp.where(c, t, e)),
        ("arrayselect.select (fast path)", lambda: asel.select(c, t, e)),
        ("arrayselect.select(out=)", lambda: asel.select(c, t, e, out=z)),
        ("arrayselect.select, scalar else", lambda: asel.select(c, t, 0.0)),
        ("cupy.empty", lambda: cp.empty((m,), np.float32)),
        ("word kernel launch alone", lambda: raw((1,), (256,), (c, t, e, z, size))),
        (
            "element-wise kernel launch alone (raw views)",
            lambda: ew(c.view(cp.uint8), t.view(u), e.view(u), z.view(u)),
        ),
        ("cupy.cuda.runtime.getDevice", cp.cuda.runtime.getDevice),
    ]
    rows: list[dict[str, Any]] = []
    stream = cp.cuda.get_current_stream()
    for label, fn in parts:
        for _ in range(200):
            fn()
        stream.synchronize()
        samples = []
        for _ in range(15):
            start = time.perf_counter()
            for _ in range(200):
                fn()
            samples.append((time.perf_counter() - start) / 200)
            stream.synchronize()
        rows.append(
            dict(
                name=f"host per call: {label}",
                seconds=float(statistics.median(samples)),
                note="no sync; 2^10 float32",
            )
        )
    return rows


def _pattern_rows(cp: Any, asel: Any, side: int, rep: int, batch: int) -> list[dict[str, Any]]:
    """The asv broadcast patterns at ``side x side`` float32: arrayselect vs ``cupy.where``."""
    N = M = side
    f32 = np.float32
    rows: list[dict[str, Any]] = []
    cN1 = cp.random.randint(0, 2, size=(N, 1), dtype=cp.uint8).view(cp.bool_)
    cNM = cp.random.randint(0, 2, size=(N, M), dtype=cp.uint8).view(cp.bool_)
    cu8 = cp.random.randint(0, 3, size=(N, M), dtype=cp.uint8)
    tNM, eNM = _bits(cp, (N, M), f32), _bits(cp, (N, M), f32)
    tN1, e1M = _bits(cp, (N, 1), f32), _bits(cp, (1, M), f32)
    patterns: list[tuple[str, tuple[Any, Any, Any]]] = [
        ("same shape", (cNM, tNM, eNM)),
        ("cond row (N, 1)", (cN1, tNM, eNM)),
        ("outer: then (N, 1), else (1, M)", (cNM, tN1, e1M)),
        ("transposed", (cNM.T, tNM.T, eNM.T)),
        ("step-2 slices", (cNM[::2, ::2], tNM[::2, ::2], eNM[1::2, 1::2])),
        ("scalar else", (cNM, tNM, 0.0)),
        ("uint8 cond (nonzero is true)", (cu8, tNM, eNM)),
    ]
    for label, (pc, pt, pe) in patterns:
        ref_e = cp.asarray(pe, dtype=pt.dtype) if isinstance(pe, float) else pe
        ok = _same_bits(cp, asel.select(pc, pt, pe), cp.where(pc != 0, pt, ref_e))

        def pattern_ours(pc: Any = pc, pt: Any = pt, pe: Any = pe) -> Any:
            return asel.select(pc, pt, pe)

        def pattern_where(pc: Any = pc, pt: Any = pt, pe: Any = pe) -> Any:
            return cp.where(pc, pt, pe)

        b = batch if N * M >= 1 << 22 else 50
        t_ours, t_where = time_pair(cp, pattern_ours, pattern_where, rep, b)
        ratio = t_ours / t_where
        rows.append(
            dict(
                name=f"pattern {N}x{M} float32, {label}",
                seconds=t_ours,
                where_seconds=t_where,
                ratio_to_where=ratio,
                note=("bits equal; " if ok else "BITS DIFFER; ")
                + ("not slower" if ratio <= NOISE else "SLOWER than cupy.where"),
            )
        )

    return rows


def _jax_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``jax.jit(select)`` vs ``jax.jit(jnp.where)`` on the GPU, samples interleaved."""
    try:
        import jax
        import jax.numpy as jnp

        gpus = jax.devices("gpu")
    except Exception as exc:
        return [dict(name="jax on GPU", note=f"not measured: {type(exc).__name__}: {exc}"[:100])]
    import arrayselect as asel

    rows: list[dict[str, Any]] = []
    ours = jax.jit(lambda c, t, e: asel.select(c, t, e))
    ref = jax.jit(jnp.where)
    for log2 in sorted({20, 24, args.log2_size}):
        n = 1 << log2
        with jax.default_device(gpus[0]):
            c = jax.random.bernoulli(jax.random.PRNGKey(0), 0.5, (n,))
            t = jax.random.normal(jax.random.PRNGKey(1), (n,), jnp.float32)
            e = jax.random.normal(jax.random.PRNGKey(2), (n,), jnp.float32)
            same = bool((ours(c, t, e) == ref(c, t, e)).all())
            hlo = [str(f.lower(c, t, e).compile().as_text()) for f in (ours, ref)]
            # the optimized HLO modules, names aside: the same program or not
            same_hlo = _strip_names(hlo[0]) == _strip_names(hlo[1])
            inner = max(1, min(50, (1 << 24) // n))
            samples: dict[str, list[float]] = {"arrayselect (jit)": [], "jnp.where (jit)": []}
            fns = (("arrayselect (jit)", ours), ("jnp.where (jit)", ref))
            for _ in range(3):
                for _, fn in fns:
                    fn(c, t, e).block_until_ready()
            for _ in range(args.repeat):
                for impl, fn in fns:
                    start = time.perf_counter()
                    for _ in range(inner):
                        r = fn(c, t, e)
                    r.block_until_ready()
                    samples[impl].append((time.perf_counter() - start) / inner)
            timings = {k: float(statistics.median(v)) for k, v in samples.items()}
        for impl, secs in timings.items():
            rows.append(
                dict(
                    name=f"jax {gpus[0].device_kind} 2^{log2} float32: {impl}",
                    seconds=secs,
                    gbps=13 * n / secs / 1e9,
                    ratio_to_where=secs / timings["jnp.where (jit)"],
                    note=f"wall clock, {inner} calls per sample"
                    + ("; values equal" if same else "; VALUES DIFFER")
                    + ("; same optimized HLO" if same_hlo else "; HLO differs"),
                )
            )
    return rows


def _strip_names(hlo: str) -> str:
    """HLO text without the module name and metadata (which name the Python function)."""
    import re

    text = re.sub(r"HloModule \S+", "HloModule _", hlo)
    text = re.sub(r", metadata=\{[^}]*\}", "", text)
    return re.sub(r"jit_\w+", "jit_", text)


def format_table(results: dict[str, Any]) -> str:
    """The results as a text table."""
    if not results.get("measured"):
        return f"GPU benchmarks: not measured -- {results.get('reason', 'no GPU')}"
    lines = [f"GPU benchmarks on {results.get('device')}, cupy {results.get('cupy')}"]
    # where / select: the peer's time over select's, above 1 when select is faster
    header = f"{'benchmark':62} {'median':>10} {'GB/s':>8} {'of copy':>8} {'where /':>8}  note"
    lines += [header, "-" * len(header)]
    for r in results["rows"]:
        secs = f"{r['seconds'] * 1e3:.3f} ms" if "seconds" in r else "-"
        gbps = f"{r['gbps']:.0f}" if "gbps" in r else "-"
        frac = f"{r['fraction_of_copy']:.1%}" if "fraction_of_copy" in r else "-"
        ratio = f"{1 / r['ratio_to_where']:.3f}" if "ratio_to_where" in r else "-"
        if "speedup" in r:
            ratio = f"{r['speedup']:.2f}"
        lines.append(
            f"{r['name'][:62]:62} {secs:>10} {gbps:>8} {frac:>8} {ratio:>8}  {r.get('note', '')}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="samples per benchmark (>= 20)")
    parser.add_argument("--batch", type=int, default=5, help="calls per sample")
    parser.add_argument("--log2-size", type=int, default=28, help="log2 of the large size")
    parser.add_argument("--log2-patterns", type=int, default=26, help="log2 of N*M (even)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument(
        "--no-tuning", dest="tuning", action="store_false", help="skip the kernel-variant rows"
    )
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    try:
        run(args, results)
    except Exception as exc:
        import traceback

        traceback.print_exc()
        results.setdefault("rows", []).append(
            dict(name="ERROR", note=f"{type(exc).__name__}: {exc}"[:200])
        )
    print(format_table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if any(r["name"].endswith("ERROR") for r in results.get("rows", [])):
        return 1
    return 0 if results.get("measured") else 2


if __name__ == "__main__":
    sys.exit(main())
