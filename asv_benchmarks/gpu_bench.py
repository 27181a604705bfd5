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
* if JAX sees a GPU: jitted ``arrayselect.select`` vs jitted ``jnp.where`` at
  2**28 float32 (wall clock with ``block_until_ready``).

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
    samples = []
    for _ in range(repeat):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        for _ in range(batch):
            fn()
        end.record(stream)
        end.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, end) / 1e3 / batch)
    return float(statistics.median(samples))


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


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run every benchmark; return the results (also printed)."""
    import arrayselect as asel

    cp, reason = _gpu()
    results: dict[str, Any] = {"measured": cp is not None, "rows": []}
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

    # --- asv patterns
    side = 1 << (args.log2_patterns // 2)
    N = M = side
    f32 = np.float32
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

        t_ours = time_events(cp, pattern_ours, rep, batch)
        t_where = time_events(cp, pattern_where, rep, batch)
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

    # --- JAX on the GPU
    rows.extend(_jax_rows(args))
    return results


def _jax_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    try:
        import jax
        import jax.numpy as jnp

        gpus = jax.devices("gpu")
    except Exception as exc:
        return [dict(name="jax on GPU", note=f"not measured: {type(exc).__name__}: {exc}"[:100])]
    import arrayselect as asel

    n = 1 << args.log2_size
    key = jax.random.PRNGKey(0)
    with jax.default_device(gpus[0]):
        c = jax.random.bernoulli(key, 0.5, (n,))
        t = jax.random.normal(key, (n,), jnp.float32)
        e = jax.random.normal(jax.random.PRNGKey(1), (n,), jnp.float32)
        ours = jax.jit(lambda c, t, e: asel.select(c, t, e))
        ref = jax.jit(jnp.where)
        rows = []
        timings = {}
        for impl, fn in (("arrayselect (jit)", ours), ("jnp.where (jit)", ref)):
            for _ in range(3):
                fn(c, t, e).block_until_ready()
            samples = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                fn(c, t, e).block_until_ready()
                samples.append(time.perf_counter() - start)
            timings[impl] = statistics.median(samples)
        for impl, secs in timings.items():
            rows.append(
                dict(
                    name=f"jax {gpus[0].device_kind} 2^{args.log2_size} float32: {impl}",
                    seconds=secs,
                    gbps=13 * n / secs / 1e9,
                    ratio_to_where=secs / timings["jnp.where (jit)"],
                    note="wall clock incl. dispatch",
                )
            )
    return rows


def format_table(results: dict[str, Any]) -> str:
    """The results as a text table."""
    if not results.get("measured"):
        return f"GPU benchmarks: not measured -- {results.get('reason', 'no GPU')}"
    lines = [f"GPU benchmarks on {results['device']}, cupy {results['cupy']}"]
    header = f"{'benchmark':62} {'median':>10} {'GB/s':>8} {'of copy':>8} {'/ where':>8}  note"
    lines += [header, "-" * len(header)]
    for r in results["rows"]:
        secs = f"{r['seconds'] * 1e3:.3f} ms" if "seconds" in r else "-"
        gbps = f"{r['gbps']:.0f}" if "gbps" in r else "-"
        frac = f"{r['fraction_of_copy']:.1%}" if "fraction_of_copy" in r else "-"
        ratio = f"{r['ratio_to_where']:.3f}" if "ratio_to_where" in r else "-"
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
    args = parser.parse_args(argv)
    results = run(args)
    print(format_table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if results["measured"] else 2


if __name__ == "__main__":
    sys.exit(main())
