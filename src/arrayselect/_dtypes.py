"""The dtype names of the specification and their NumPy dtypes.

Shared by the self-describing tools (capability probe, benchmark); the core
validates dtypes by kind and never needs the names.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The dtypes of the specification (SPEC §4), in table order.
SPEC_DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The NumPy dtype called ``name``; ``"bfloat16"`` comes from ``ml_dtypes``.

    Raises
    ------
    ImportError
        For ``"bfloat16"`` when ``ml_dtypes`` is not installed.
    """
    if name == "bfloat16":
        import ml_dtypes

        bfloat16: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
        return bfloat16
    return np.dtype(name)
