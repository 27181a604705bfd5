from typing import Any

class RecentCalls:
    def __init__(
        self, tensor_type: type, offset: int, readers: tuple[int, ...], fallback: Any = None
    ) -> None: ...
    def fast_path(
        self, cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any, out: Any, /
    ) -> Any: ...
    def __call__(self, cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any) -> Any: ...
    def remember(
        self,
        cond: Any,
        then: Any,
        else_: Any,
        ab: Any,
        axis: Any,
        cb: Any,
        run: Any,
        then_range: Any = None,
        else_range: Any = None,
        /,
    ) -> bool: ...
    def read(self, x: Any, /) -> tuple[int, int, int, int, tuple[int, ...]] | None: ...
    def signature(self, x: Any, /) -> tuple[Any, ...]: ...
    def held(self) -> int: ...
    def forget(self) -> None: ...
