"""Fixtures and hooks: every test that takes ``xp`` runs once per array library.

Modelled on data-apis/array-api-extra's ``tests/conftest.py``: a ``library``
fixture parametrized over the :class:`~xp_helpers.Backend` enum, an ``xp``
fixture that imports the library or skips with a reason, and two markers whose
arguments are checked when the tests are collected (a marker naming something
that is not a ``Backend``, an unknown keyword, a missing ``reason=`` or a marker
on a test without ``xp``/``library`` is a usage error, so a typo cannot
silently skip nothing):

* ``@pytest.mark.skip_xp_backend(Backend.X, reason="...")`` skips the test on X;
* ``@pytest.mark.xfail_xp_backend(Backend.X, reason="...", strict=...)`` expects
  it to fail on X.

``numpy_portable`` runs NumPy arrays inside :func:`arrayselect.force_portable`,
so the portable Array API backend is exercised on NumPy as well.

What the test modules share besides fixtures (``Backend``, dtypes,
``from_numpy``/``to_numpy``, ...) is in ``xp_helpers.py``.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from xp_helpers import Backend, adapter

import arrayselect
from arrayselect.adapters import LibraryUnavailableError

# CI's main job runs the suite against the installed wheel (scripts/ci/job_main.sh):
# the package must come from that venv, not from a checkout or an editable install.
_INSTALLED_IN = os.environ.get("ARRAYSELECT_TEST_INSTALLED_IN")
if _INSTALLED_IN and not Path(arrayselect.__file__).resolve().is_relative_to(
    Path(_INSTALLED_IN).resolve()
):
    raise pytest.UsageError(
        f"arrayselect was imported from {arrayselect.__file__}, "
        f"not from the installation in {_INSTALLED_IN}"
    )

# pytester runs the marker checks on small test files of their own (test_xp_markers.py).
pytest_plugins = ("pytester",)

# Filled while the session runs; printed by pytest_terminal_summary.
_SKIPPED_BACKENDS: dict[Backend, str] = {}
_OUTCOMES: dict[str, Counter[str]] = defaultdict(Counter)


def _import_backend(library: Backend) -> ModuleType:
    """Import the library of ``library`` or skip the test with a reason."""
    if library in _SKIPPED_BACKENDS:
        pytest.skip(_SKIPPED_BACKENDS[library])
    try:
        module: ModuleType = adapter(library).xp
    except LibraryUnavailableError as exc:
        _SKIPPED_BACKENDS[library] = str(exc)
        pytest.skip(str(exc))
    if library is Backend.JAX:
        import jax

        # Before any JAX array is made: 64-bit dtypes exist only with x64.
        jax.config.update("jax_enable_x64", True)
    return module


@pytest.fixture(params=tuple(Backend), ids=str)
def library(request: pytest.FixtureRequest) -> Backend:
    """The backend under test (``skip_xp_backend``/``xfail_xp_backend``: see the hooks)."""
    elem: Backend = request.param
    return elem


@pytest.fixture
def xp(library: Backend) -> Iterator[ModuleType]:
    """The array library module under test (``numpy`` for numpy_portable, ``torch`` for
    torch_portable).

    For ``numpy_portable`` and ``torch_portable`` the whole test runs inside
    :func:`arrayselect.force_portable`.
    """
    module = _import_backend(library)
    if library.portable:
        with arrayselect.force_portable():
            yield module
    else:
        yield module


# --------------------------------------------------------------------------- markers

#: The backend markers and the keywords each takes (``reason`` is required).
_XP_MARKERS: dict[str, frozenset[str]] = {
    "skip_xp_backend": frozenset({"reason"}),
    "xfail_xp_backend": frozenset({"reason", "strict"}),
}


def _xp_marks(item: pytest.Item) -> list[tuple[str, Backend, dict[str, Any]]]:
    """The backend markers of ``item`` as (name, backend, keywords), checked.

    Raises
    ------
    TypeError
        For a marker whose arguments are not one ``Backend`` and a ``reason``.
    """
    found = []
    for name, allowed in _XP_MARKERS.items():
        for marker in item.iter_markers(name):
            if len(marker.args) != 1 or not isinstance(marker.args[0], Backend):
                raise TypeError(
                    f"{name} takes one positional argument, a Backend member "
                    f"(e.g. Backend.JAX); got {marker.args!r}"
                )
            backend = marker.args[0]
            unknown = set(marker.kwargs) - allowed
            if unknown:
                raise TypeError(
                    f"{name}({backend}): unexpected keyword(s) {sorted(unknown)}; "
                    f"it takes {sorted(allowed)}"
                )
            reason = marker.kwargs.get("reason")
            if not isinstance(reason, str) or not reason.strip():
                raise TypeError(
                    f"{name}({backend}) needs reason='...': why the test does not run there"
                )
            found.append((name, backend, dict(marker.kwargs)))
    return found


#: What each test module tests, as a marker of its tests: the core (rules, validation,
#: caches, the public functions on every library), one backend's own machinery, the
#: tools (docs, packaging, benchmarks, CI), or the conformance runs of the real
#: runtimes. CI's jobs select by them (``-m "not tooling and not cupy"``); a new test
#: module must be placed here.
GROUPS: dict[str, tuple[str, ...]] = {
    "core": (
        "test_apply_where_callbacks.py", "test_bad_input.py", "test_cached_calls.py",
        "test_caches.py",
        "test_capabilities.py", "test_concurrency.py", "test_dtypes.py", "test_errors.py",
        "test_examples.py", "test_extreme.py", "test_family_fast_paths.py",
        "test_family_without_mask_indexing.py", "test_fuzz.py", "test_layers.py",
        "test_layout.py", "test_mixed_libraries.py", "test_plan_dims.py",
        "test_properties.py", "test_registry.py", "test_select_family.py",
        "test_signature_cache.py", "test_where.py", "test_xp_markers.py", "test_adapters.py",
    ),
    "numpy": (
        "test_free_threading.py", "test_kernel_stream.py", "test_kernel_strided.py",
        "test_no_kernel.py", "test_numpy_kernel.py", "test_numpy_kernel_cpu.py",
        "test_numpy_kernel_family.py", "test_numpy_kernel_harness.py",
        "test_numpy_kernel_pool.py",
    ),
    "torch": ("test_torch_backend.py", "test_torch_differential.py", "test_torch_fork.py"),
    "jax": ("test_jax_transforms.py", "test_jax_weak_types.py", "test_portable_jax_export.py"),
    "dask": ("test_dask_distributed.py", "test_dask_lazy.py"),
    "cupy": ("test_cupy_backend.py", "test_cupy_backend_emulated.py", "test_cupy_kernels.py"),
    "tooling": (
        "test_asv_suite.py", "test_bench.py", "test_ci_matrix.py", "test_doc_figures.py",
        "test_doc_links.py", "test_docs.py", "test_packaging.py", "test_scale_out_example.py",
    ),
    "runtimes": ("test_conformance_runtimes.py",),
}  # fmt: skip
_GROUP_OF = {module: group for group, modules in GROUPS.items() for module in modules}

#: What a module's tests also check, across groups: the matrix jobs select tests by
#: these markers and their groups (``-m``), never by file names.
ASPECTS: dict[str, tuple[str, ...]] = {
    # the dependencies' versions decide the outcome (their promotion, dtypes, eager and
    # compiled calls, JAX's 64-bit mode, Dask's graphs, the sdist and plugin builds):
    # the deps-* jobs
    "versions": (
        "test_where.py", "test_select_family.py", "test_mixed_libraries.py",
        "test_torch_backend.py", "test_jax_transforms.py", "test_dask_lazy.py",
        "test_registry.py", "test_dtypes.py", "test_no_kernel.py", "test_packaging.py",
    ),
    # the CPU, its byte order and the C ABI decide the outcome (the kernel's loops, bit
    # copies, shapes, scalar ranges): the qemu-* jobs
    "platform": (
        "test_numpy_kernel.py", "test_numpy_kernel_cpu.py", "test_numpy_kernel_family.py",
        "test_numpy_kernel_harness.py", "test_numpy_kernel_pool.py", "test_kernel_stream.py",
        "test_kernel_strided.py", "test_where.py", "test_select_family.py",
        "test_family_fast_paths.py", "test_family_without_mask_indexing.py",
        "test_layout.py", "test_dtypes.py", "test_bad_input.py", "test_plan_dims.py",
        "test_fuzz.py", "test_no_kernel.py", "test_errors.py", "test_extreme.py",
        "test_properties.py", "test_signature_cache.py",
    ),
    # threads share the caches, the kernel's pool and the output pool: the
    # freethreaded job
    "threads": (
        "test_free_threading.py", "test_numpy_kernel.py", "test_numpy_kernel_family.py",
        "test_numpy_kernel_pool.py", "test_signature_cache.py", "test_concurrency.py",
        "test_where.py", "test_select_family.py", "test_layout.py", "test_bad_input.py",
    ),
}  # fmt: skip
_ASPECTS_OF: dict[str, list[str]] = {}
for _aspect, _modules in ASPECTS.items():
    for _module in _modules:
        _ASPECTS_OF.setdefault(_module, []).append(_aspect)
_HERE = Path(__file__).resolve().parent
# This suite's own modules, not pytester's copies of this file beside test files of
# their own (tests/test_xp_markers.py).
_SUITE = (_HERE.parent / "pyproject.toml").is_file()


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark each test of this suite with its module's group and aspects (before ``-m``
    selects)."""
    group = _GROUP_OF.get(item.path.name)
    if group is not None and _SUITE and item.path.parent == _HERE:
        item.add_marker(group)
        for aspect in _ASPECTS_OF.get(item.path.name, ()):
            item.add_marker(aspect)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse the session when a test module has no group, or a backend marker is
    malformed or would skip nothing."""
    problems: dict[str, None] = {}  # one line per test function, not per parameter
    for module in _ASPECTS_OF.keys() - _GROUP_OF.keys():
        problems[f"{module}: in ASPECTS of tests/conftest.py but in no group"] = None
    for item in items:
        if _SUITE and item.path.parent == _HERE and item.path.name not in _GROUP_OF:
            problems[f"{item.path.name}: in no group of tests/conftest.py's GROUPS"] = None
        test = item.nodeid.partition("[")[0]
        try:
            marks = _xp_marks(item)
        except TypeError as exc:
            problems[f"{test}: {exc}"] = None
            continue
        if marks and "library" not in getattr(item, "fixturenames", ()):
            problems[f"{test}: {marks[0][0]} on a test that takes neither xp nor library"] = None
    if problems:
        raise pytest.UsageError("invalid test markers:\n" + "\n".join(problems))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Turn the backend markers for the backend this test runs on into skip/xfail marks.

    Runs before pytest's own setup hook, which then applies them (and reports
    a skip at the test's location).
    """
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("library") if callspec is not None else None
    for name, marked, kwargs in _xp_marks(item):
        if marked is backend:
            mark = pytest.mark.skip if name == "skip_xp_backend" else pytest.mark.xfail
            item.add_marker(mark(**kwargs))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "skip_xp_backend(library, /, *, reason): skip the test for one Backend",
    )
    config.addinivalue_line(
        "markers",
        "xfail_xp_backend(library, /, *, reason, strict=None): expect the test to fail for "
        "one Backend",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "library" in callspec.params:
        report.user_properties.append(("xp_backend", str(callspec.params["library"])))
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    backend = dict(report.user_properties).get("xp_backend")
    if backend is None:
        backend = "(no xp)"
    if report.when == "call" or (report.when == "setup" and not report.passed):
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        _OUTCOMES[backend][outcome] += 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    tr = terminalreporter
    tr.section("arrayselect backends")
    for library in Backend:
        counts = _OUTCOMES.get(str(library), Counter())
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no tests"
        if library in _SKIPPED_BACKENDS:
            tr.write_line(f"{library!s:18} SKIPPED: {_SKIPPED_BACKENDS[library]} ({summary})")
        elif counts.get("passed") or counts.get("failed"):
            tr.write_line(f"{library!s:18} ran: {summary}")
        else:
            tr.write_line(f"{library!s:18} not used ({summary})")
    other = _OUTCOMES.get("(no xp)")
    if other:
        summary = ", ".join(f"{n} {k}" for k, n in sorted(other.items()))
        tr.write_line(f"{'(backend-free)':18} {summary}")
