# Type stub of the compiled hit path of the fast-path protocol (_fastcall.c).
from collections.abc import Sequence
from typing import Any

class RawKey:
    def __init__(
        self, head: tuple[Any, ...], types: tuple[type, ...], signatures: bytes, /
    ) -> None: ...

class SignatureCall:
    def __init__(
        self,
        types: frozenset[type],
        signature: Any,
        raw_signature: Any,
        cache: dict[Any, Any],
        miss: Any,
        general: Any,
        run: Any,
        backend: Any,
        check_devices: Any,
        check_out: Any,
        error: type[BaseException],
        run_checks_devices: bool,
        /,
    ) -> None: ...
    def __call__(
        self,
        cond: Any,
        then: Any,
        else_: Any,
        auto_broadcast: Any,
        axis: Any,
        cond_broadcast: Any,
        out: Any,
        /,
    ) -> Any: ...

def family_find(
    kind: str,
    operands: Sequence[Any],
    portable: bool,
    layouts: dict[Any, Any],
    checks: dict[type, Any],
    memos: dict[Any, Any],
    backends: dict[Any, Any],
    /,
) -> Any: ...
