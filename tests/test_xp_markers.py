"""The ``skip_xp_backend``/``xfail_xp_backend`` markers: applied per backend, checked early.

Each test writes a small test file next to copies of ``conftest.py`` and
``xp_helpers.py`` and runs pytest on it in a subprocess (``pytester``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from xp_helpers import Backend

HERE = Path(__file__).resolve().parent


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester directory with this suite's conftest and helpers."""
    pytester.makeconftest((HERE / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(xp_helpers=(HERE / "xp_helpers.py").read_text(encoding="utf-8"))
    return pytester


def test_markers_skip_and_xfail_only_their_backend(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_marked="""
        import pytest
        from xp_helpers import Backend

        @pytest.mark.skip_xp_backend(Backend.TORCH, reason="torch: not here")
        @pytest.mark.xfail_xp_backend(Backend.DASK, reason="dask: fails", strict=True)
        def test_it(library):
            assert library is not Backend.DASK
        """
    )
    result = suite.runpytest_subprocess("-p", "no:cacheprovider", "-rsx")
    result.assert_outcomes(passed=len(Backend) - 2, skipped=1, xfailed=1)
    result.stdout.fnmatch_lines(["*torch: not here*", "*dask: fails*"])


#: Malformed markers and what the usage error says of each.
MALFORMED = {
    'skip_xp_backend("torch", reason="a string, not a Backend")': "a Backend member",
    "skip_xp_backend(Backend.TORCH)": "needs reason=",
    'skip_xp_backend(Backend.TORCH, reason="")': "needs reason=",
    'skip_xp_backend(Backend.TORCH, Backend.JAX, reason="two")': "a Backend member",
    'skip_xp_backend(Backend.TORCH, reson="typo")': "unexpected keyword",
    "xfail_xp_backend(Backend.TORCH, strict=True)": "needs reason=",
}


def test_a_malformed_marker_is_a_usage_error(suite: pytest.Pytester) -> None:
    tests = [
        f"@pytest.mark.{marker}\ndef test_{i}(library):\n    pass\n"
        for i, marker in enumerate(MALFORMED)
    ]
    # A well-formed marker on a test without xp/library would skip nothing.
    tests.append(
        '@pytest.mark.skip_xp_backend(Backend.TORCH, reason="no library")\n'
        "def test_no_library():\n    pass\n"
    )
    suite.makepyfile(
        test_marked="import pytest\nfrom xp_helpers import Backend\n\n\n" + "\n\n".join(tests)
    )
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    expected = [f"*test_marked.py::test_{i}: *{c}*" for i, c in enumerate(MALFORMED.values())]
    expected.append("*test_marked.py::test_no_library: *takes neither xp nor library*")
    result.stderr.fnmatch_lines(expected)
