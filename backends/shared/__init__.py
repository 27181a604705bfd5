"""What several backends share, written once: backends import this package, never each
other.

* the compiled CPU kernel, which the NumPy backend runs on arrays and the PyTorch
  backend on CPU tensors' memory: its loader and settings (:mod:`.kernel`, the C sources
  in ``_kernel/``), the select family on it (:mod:`.kernel_cases`) and the family's
  NumPy routes around it (:mod:`.numpy_family`); imported by those two backends only (this
  module does not import them);
* JAX's 64-bit mode: whether it is on (:func:`jax_x64_enabled`, what a JAX dtype
  decision depends on) and how to turn it on (:func:`jax_wider_dtypes_hint`), for the
  JAX backend and for the portable backend serving JAX arrays;
* PyTorch's tensors that ``torch.where`` has no kernels for
  (:func:`torch_unsupported_layout`), for the PyTorch backend and for the portable
  backend serving tensors;
* a Python scalar as a cache key, by its type and bits (:func:`scalar_key`), for the
  constants and fills the NumPy and JAX backends keep per value.

Nothing here imports a library: each function is asked about arrays of its library,
which is then imported already (``sys.modules``).
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Hashable
from typing import Any

__all__ = ["jax_wider_dtypes_hint", "jax_x64_enabled", "scalar_key", "torch_unsupported_layout"]

_PACK_FLOAT = struct.Struct("<d").pack
_PACK_COMPLEX = struct.Struct("<dd").pack


def scalar_key(value: bool | int | float | complex) -> Hashable:
    """A Python scalar as a cache key: equal for exactly the same scalar, its type and
    bits (a nan's sign and payload, the sign of a zero, which equality of values does
    not tell apart).

    A float is its 8 bytes and a complex its 16 (no other key is bytes), anything else
    ``(type, value)``.

    >>> from arrayselect.backends.shared import scalar_key
    >>> scalar_key(0.0) == scalar_key(-0.0), scalar_key(1) == scalar_key(True)
    (False, False)
    """
    if type(value) is float:
        return _PACK_FLOAT(value)
    if type(value) is complex:
        return _PACK_COMPLEX(value.real, value.imag)
    return type(value), value


def jax_x64_enabled() -> bool:
    """Whether JAX's 64-bit mode is on in this thread (the flag or a ``jax.enable_x64``
    block)."""
    return bool(sys.modules["jax"].config.jax_enable_x64)


def jax_wider_dtypes_hint() -> str:
    """How to turn on JAX's 64-bit mode, for the message that refuses a 64-bit dtype
    JAX would narrow (the block form where this JAX has it)."""
    if hasattr(sys.modules["jax"], "enable_x64"):
        return (
            "turn on JAX's 64-bit mode (jax.config.update('jax_enable_x64', True), the "
            "JAX_ENABLE_X64=1 environment variable, or a jax.enable_x64(True) block)"
        )
    return (
        "turn on JAX's 64-bit mode (jax.config.update('jax_enable_x64', True) or the "
        "JAX_ENABLE_X64=1 environment variable)"
    )


def torch_unsupported_layout(x: Any) -> tuple[str, str] | None:
    """What makes tensor ``x`` unfit for Select (sparse, mkldnn, quantized, nested),
    and how to convert it; ``None`` for a strided dense tensor.

    ``torch.where`` has no kernels for them.
    """
    # by name, not torch.strided: torch.compile's Dynamo failed ("dictionary changed size
    # during iteration") reading sys.modules while it traced a call that imported torch's
    # modules lazily
    if str(x.layout) != "torch.strided":
        return f"a tensor of layout {x.layout}", "convert it with x.to_dense()"
    if x.is_quantized:
        return "a quantized tensor", "convert it with x.dequantize()"
    if x.is_nested:
        return "a nested tensor", "convert it with x.to_padded_tensor(0)"
    return None
