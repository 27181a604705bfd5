"""``examples/scale_out.py`` (docs/scaling.md) runs, small, so that it cannot rot."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "scale_out.py"


def _have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.mark.skipif(not EXAMPLE.exists(), reason="examples/ is not part of this checkout")
def test_scale_out_example_runs() -> None:
    if not (_have("dask") and _have("distributed")):
        pytest.skip("dask[distributed] is not installed")
    args = [sys.executable, str(EXAMPLE), "--n", "40000", "--chunk", "7000"]
    if not _have("jax"):
        args += ["--only", "dask"]
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "MISMATCH" not in out
    assert "[dask threads]" in out and "[dask cluster] 2 workers" in out
    assert "new graph layers=['select']" in out
    if _have("jax"):
        assert "[jax] backend=" in out and "devices=4" in out
        assert "sharding kept=True jnp.where match" in out
