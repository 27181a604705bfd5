"""The capability probe behind the documentation's tables (``docs/_ext/capabilities.py``)."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# Documentation tooling, not part of the package: imported from docs/_ext, as the
# Sphinx build (docs/conf.py) and tests/test_docs.py import its neighbours.
_EXT = str(Path(__file__).resolve().parents[1] / "docs" / "_ext")
if _EXT not in sys.path:
    sys.path.insert(0, _EXT)
caps: Any = importlib.import_module("capabilities")


def _installed(key: str, module: str) -> bool:
    if importlib.util.find_spec(module.partition(".")[0]) is None:
        return False
    if key == "cupy":
        try:
            return bool(importlib.import_module("cupy").cuda.runtime.getDeviceCount() > 0)
        except Exception:
            return False
    return True


@pytest.fixture(scope="module")
def table() -> list[caps.BackendCapabilities]:
    return caps.capability_table()


def test_a_row_per_installed_library(table: list[caps.BackendCapabilities]) -> None:
    libraries = {row.library for row in table}
    for key, module in caps.LIBRARIES:
        assert (key in libraries) == _installed(key, module), key
    for row in table:
        assert list(row.dtypes) == list(caps.DTYPES)
        assert list(row.features) == list(caps.FEATURES)


def test_native_backends_have_a_portable_twin(table: list[caps.BackendCapabilities]) -> None:
    for row in table:
        if not row.forced_portable and not row.backend.startswith("portable"):
            twins = [r for r in table if r.library == row.library and r.forced_portable]
            assert [r.backend for r in twins] == [f"portable[{row.library}]"]


def test_numpy_supports_every_dtype_and_out(table: list[caps.BackendCapabilities]) -> None:
    (numpy_row,) = [r for r in table if r.library == "numpy" and not r.forced_portable]
    assert numpy_row.backend == "numpy"
    for name, cell in numpy_row.dtypes.items():
        if name == "bfloat16" and importlib.util.find_spec("ml_dtypes") is None:
            assert cell.status == "absent"
        else:
            assert cell.status == "yes", (name, cell)
    assert numpy_row.features["out="].status == "yes"
    assert numpy_row.features["integer cond"].status == "yes"
    assert numpy_row.features["lazy"].status == "no"
    assert numpy_row.features["devices"].status == "yes"


def test_no_unexpected_failures_where_the_contract_is_clear(
    table: list[caps.BackendCapabilities],
) -> None:
    """Every backend takes bool/int/float32/64/complex, an integer cond, and keeps devices."""
    core = ("bool", "int8", "int32", "int64", "uint8", "float32", "float64", "complex64")
    for row in table:
        for name in core:
            assert row.dtypes[name].status == "yes", (row.label, name, row.dtypes[name])
        assert row.features["integer cond"].status == "yes", row.label
        assert row.features["devices"].status == "yes", (row.label, row.features["devices"])
        expected_out = "yes" if row.library in ("numpy", "torch", "cupy") else "no"
        assert row.features["out="].status == expected_out, (row.label, row.features["out="])


def test_dask_is_lazy(table: list[caps.BackendCapabilities]) -> None:
    rows = [r for r in table if r.library == "dask"]
    if not rows:
        pytest.skip("dask is not installed")
    assert all(r.features["lazy"].status == "yes" for r in rows)


def test_jax_transformations_are_really_tried(table: list[caps.BackendCapabilities]) -> None:
    rows = [r for r in table if r.library == "jax" and not r.forced_portable]
    if not rows:
        pytest.skip("jax is not installed")
    (row,) = rows
    for feature in ("vmap", "jit"):
        assert row.features[feature].status == "yes", (feature, row.features[feature])
    for feature in ("grad", "export"):
        assert row.features[feature].status != "n/a", feature


def test_probe_values_are_awkward() -> None:
    values = caps.probe_values("float32")
    assert values is not None
    then, _ = values
    bits = then.view(np.uint32)
    assert 0x7FC00001 in bits and 0x80000000 in bits and 0x00000001 in bits
    assert np.isnan(then).any() and np.isinf(then).any()
    ints = caps.probe_values("int8")
    assert ints is not None
    assert ints[0].min() == -128 and ints[0].max() == 127


def test_markdown_tables(table: list[caps.BackendCapabilities]) -> None:
    dtypes = caps.dtype_markdown(table).splitlines()
    features = caps.feature_markdown(table).splitlines()
    assert len(dtypes) == 2 + len(caps.DTYPES)
    assert len(features) == 2 + len(caps.FEATURES)
    for line in dtypes + features:
        cells = re.split(r"(?<!\\)\|", line)[1:-1]  # split on unescaped pipes
        assert len(cells) == len(table) + 1, line


def test_unknown_library_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown library"):
        caps.capability_table(["nosuchlib"])


def test_cell_markdown() -> None:
    assert caps.Cell("yes").markdown() == "✅"
    assert caps.Cell("no", "why").markdown() == "❌ why"


def test_docstring_examples() -> None:
    failures, tried = doctest.testmod(caps, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
