# Type stub of the compiled kernel (backends/numpy_backend/_kernel/select_kernel.c).
from typing import Any

HAVE_THREADS: int
DEFAULT_PARALLEL_MIN: int

Dims = tuple[int, ...] | None

def select(
    cond: Any,
    then: Any,
    else_: Any,
    out: Any,
    out_shape: tuple[int, ...],
    cond_dims: Dims,
    then_dims: Dims,
    else_dims: Dims,
    max_threads: int = 0,
    on_openmp: bool = False,
    /,
) -> Any: ...
def set_openmp(address: int, /) -> None: ...
def select_n(which: Any, cases: tuple[Any, ...], out: Any, /) -> Any: ...
def select_cases(
    conds: tuple[Any, ...], choices: tuple[Any, ...], default: Any, out: Any, /
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
    out: Any,
    out_shape: tuple[Any, ...],
    cond_dims: tuple[int, ...],
    then_dims: tuple[int, ...],
    else_dims: tuple[int, ...],
    out_dtype: Any,
    scalar_range: tuple[Any, Any, bool] | None,
    /,
) -> bool: ...
def configure(miss: Any, general: Any, check_out: Any, cache_out_verdict: bool, /) -> None: ...
def clear_cache() -> None: ...
def fast_stats() -> dict[str, int]: ...
def set_num_threads(n: int, /) -> None: ...
def get_num_threads() -> int: ...
def set_parallel_min(n: int, /) -> None: ...
def get_parallel_min() -> int: ...
def stats() -> dict[str, Any]: ...
def explain(
    cond: Any,
    then: Any,
    else_: Any,
    out: Any,
    out_shape: tuple[int, ...],
    cond_dims: Dims,
    then_dims: Dims,
    else_dims: Dims,
    max_threads: int = 0,
    /,
) -> dict[str, Any]: ...
def set_pool_limit(n: int, /) -> None: ...
def pool_info() -> dict[str, int]: ...
def release_pool() -> None: ...
def set_load_guard(on: bool, /) -> None: ...
def set_spin_us(worker: float, caller: float, /) -> None: ...
def shutdown_pool() -> None: ...
def pool_workers() -> int: ...
def set_isa(name: str, /) -> None: ...
def isa_info() -> dict[str, Any]: ...
