"""Scale Select out: Dask arrays and JAX sharded arrays, side by side.

Both stories run the same call, ``arrayselect.select(cond, then, else_)``, on
arrays that no single buffer holds:

* **Dask**: the inputs are generated lazily, block by block; ``select`` adds
  one ``blockwise`` layer to the graph (nothing is computed during the call)
  and every block goes to the backend of its block type (NumPy here, CuPy for
  CuPy blocks). The graph runs on the threaded scheduler and on a
  ``dask.distributed`` LocalCluster of two worker processes; only a checksum
  comes back to the client.
* **JAX**: the inputs are generated directly as sharded arrays over a 1-d
  device mesh (four CPU devices forced with ``XLA_FLAGS``; GPUs/TPUs work the
  same way); ``select`` keeps the sharding, eagerly and under ``jax.jit``.
  See "Devices and sharding" in ``docs/jax.md`` for what arrayselect guarantees.

Run it with ``python examples/scale_out.py`` (10^7 elements by default), or
smaller: ``python examples/scale_out.py --n 100000``. ``--no-cluster`` skips
the LocalCluster, ``--only dask`` / ``--only jax`` runs one story. The
environment variable ``ARRAYSELECT_EXAMPLE_N`` sets the default size.
"""

from __future__ import annotations

import argparse
import os
import time

# JAX reads XLA_FLAGS once, when it starts: ask for 4 host devices before importing it.
_FLAG = "--xla_force_host_platform_device_count"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" {_FLAG}=4").strip()

import numpy as np  # noqa: E402

import arrayselect as asel  # noqa: E402


def _bits_checksum(x):  # type: ignore[no-untyped-def]
    """Sum of the float32 bit patterns as uint64: equal exactly when the bits are equal."""
    import operator

    return x.map_blocks(operator.methodcaller("view", np.uint32), dtype=np.uint32).sum(
        dtype=np.uint64
    )


def dask_story(n: int, chunk: int, cluster: bool) -> None:
    """Select on lazily generated Dask arrays; threaded scheduler and LocalCluster."""
    import dask
    import dask.array as da

    rng = da.random.default_rng(42)
    then = rng.random((n,), chunks=chunk, dtype=np.float32)
    else_ = rng.standard_normal((n,), chunks=chunk, dtype=np.float32)
    cond = then > np.float32(0.5)

    out = asel.select(cond, then, else_)  # lazy: one new blockwise layer
    reference = da.where(cond, then, else_)
    inputs = set(cond.dask.layers) | set(then.dask.layers) | set(else_.dask.layers)
    print(
        f"[dask] backend={asel.backend_for(cond, then, else_).name} shape={out.shape} "
        f"blocks={len(out.chunks[0])} of {out.chunks[0][0]} "
        f"new graph layers={sorted(name.split('-')[0] for name in set(out.dask.layers) - inputs)}"
    )

    start = time.perf_counter()
    got, want = dask.compute(_bits_checksum(out), _bits_checksum(reference), scheduler="threads")
    elapsed = time.perf_counter() - start
    print(
        f"[dask threads] checksum={int(got)} da.where={int(want)} "
        f"{'match' if got == want else 'MISMATCH'} ({elapsed:.2f} s for both)"
    )
    if got != want:
        raise SystemExit("dask threaded result differs from da.where")

    if not cluster:
        return
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=40,
        ) as local_cluster,
        Client(local_cluster) as client,
    ):
        start = time.perf_counter()
        got, want = client.compute([_bits_checksum(out), _bits_checksum(reference)], sync=True)
        elapsed = time.perf_counter() - start
        print(
            f"[dask cluster] {len(client.scheduler_info()['workers'])} workers "
            f"checksum={int(got)} da.where={int(want)} "
            f"{'match' if got == want else 'MISMATCH'} ({elapsed:.2f} s for both)"
        )
        if got != want:
            raise SystemExit("dask cluster result differs from da.where")


def jax_story(n: int) -> None:
    """Select on JAX arrays sharded over a 1-d mesh of all devices."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = jax.devices()
    n -= n % len(devices)  # an even split over the devices
    mesh = jax.make_mesh((len(devices),), ("x",))
    sharding = NamedSharding(mesh, P("x"))

    # Generated in place, shard by shard: no host copy of the whole array.
    def make(key):  # type: ignore[no-untyped-def]
        k1, k2 = jax.random.split(key)
        then = jax.random.uniform(k1, (n,), jnp.float32)
        else_ = jax.random.normal(k2, (n,), jnp.float32)
        return then > 0.5, then, else_

    make = jax.jit(make, out_shardings=(sharding, sharding, sharding))
    cond, then, else_ = make(jax.random.key(42))

    out = asel.select(cond, then, else_)  # eager
    selected = jax.jit(lambda c, t, e: asel.select(c, t, e))(cond, then, else_)  # traced
    reference = jnp.where(cond, then, else_)
    same = bool(jnp.array_equal(out, reference)) and bool(jnp.array_equal(selected, reference))
    print(
        f"[jax] backend={asel.backend_for(cond, then, else_).name} devices={len(devices)} "
        f"shape={out.shape}"
    )
    print(f"[jax] input  sharding: {then.sharding.spec} over mesh {dict(mesh.shape)}")
    print(
        f"[jax] output sharding: {out.sharding.spec} (eager), "
        f"{selected.sharding.spec} (jit); shards per device: "
        f"{[s.data.shape[0] for s in out.addressable_shards]}"
    )
    kept = out.sharding.is_equivalent_to(sharding, 1) and selected.sharding.is_equivalent_to(
        sharding, 1
    )
    print(f"[jax] sharding kept={kept} jnp.where {'match' if same else 'MISMATCH'}")
    if not (same and kept):
        raise SystemExit("jax result differs from jnp.where or lost its sharding")


def main(argv: list[str] | None = None) -> None:
    """Run both stories (see the module docstring for the options)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--n",
        type=int,
        default=int(os.environ.get("ARRAYSELECT_EXAMPLE_N", 10**7)),
        help="number of elements",
    )
    parser.add_argument("--chunk", type=int, default=None, help="Dask block size (n/8)")
    parser.add_argument("--no-cluster", action="store_true", help="skip the LocalCluster")
    parser.add_argument("--only", choices=("dask", "jax"), default=None)
    args = parser.parse_args(argv)
    chunk = args.chunk or max(1, args.n // 8)
    if args.only in (None, "dask"):
        dask_story(args.n, chunk, cluster=not args.no_cluster)
    if args.only in (None, "jax"):
        jax_story(args.n)


if __name__ == "__main__":  # needed: LocalCluster starts worker processes
    main()
