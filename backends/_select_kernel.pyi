# Type stub of the compiled kernel (backends/_kernel/select_kernel.c).
from typing import Any

HAVE_THREADS: int
DEFAULT_PARALLEL_MIN: int

def select(
    cond: Any,
    then: Any,
    else_: Any,
    out: Any,
    out_shape: tuple[int, ...],
    cond_aligned: tuple[int, ...] | None,
    then_aligned: tuple[int, ...] | None,
    else_aligned: tuple[int, ...] | None,
    /,
) -> Any: ...
def fast_select(
    cond: Any,
    then: Any,
    else_: Any,
    auto_broadcast: Any,
    axis: Any,
    cond_broadcast: Any,
    out: Any,
    /,
) -> Any: ...
def remember(
    cond: Any,
    then: Any,
    else_: Any,
    auto_broadcast: Any,
    axis: Any,
    cond_broadcast: Any,
    out_shape: Any,
    cond_aligned: Any,
    then_aligned: Any,
    else_aligned: Any,
    out_dtype: Any,
    check: Any,
    /,
) -> bool: ...
def configure(
    backend: Any, backends: Any, force_var: Any, backend_key: Any, miss: Any, general: Any, /
) -> None: ...
def clear_cache() -> None: ...
def fast_stats() -> dict[str, int]: ...
def set_num_threads(n: int, /) -> None: ...
def get_num_threads() -> int: ...
def set_parallel_min(n: int, /) -> None: ...
def get_parallel_min() -> int: ...
def stats() -> dict[str, int]: ...
def explain(
    cond: Any,
    then: Any,
    else_: Any,
    out: Any,
    out_shape: tuple[int, ...],
    cond_aligned: tuple[int, ...] | None,
    then_aligned: tuple[int, ...] | None,
    else_aligned: tuple[int, ...] | None,
    /,
) -> dict[str, Any]: ...
def set_pool_limit(n: int, /) -> None: ...
def pool_info() -> dict[str, int]: ...
def release_pool() -> None: ...
def set_adaptive(on: bool, /) -> None: ...
