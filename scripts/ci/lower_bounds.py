"""Print pip ``==`` pins for the lower bounds pyproject.toml declares, one a line.

Usage::

    python3 scripts/ci/lower_bounds.py > oldest.txt
    python3 scripts/ci/lower_bounds.py --requirements > requirements.txt
    python3 scripts/ci/lower_bounds.py --test-tools > tools.txt
    pip install -c oldest.txt -r requirements.txt -r tools.txt

Reads ``[project] dependencies``, the ``backends`` extra and array-api-extra (the
libraries the support policy in docs/platforms.md covers) and turns every ``name>=X`` into
``name==X``, keeping environment markers, so the oldest-dependencies CI job
(scripts/ci/job_deps.sh oldest) installs exactly the declared minimums. ``--requirements``
prints those requirements as written; ``--test-tools`` the rest of the ``test`` extra, as
written (pip resolves the test tools), less CuPy and NVRTC (no GPU; their compile-only test
belongs to the main run). Standard library only (tomllib, Python >= 3.11).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

# name[extras] >= version [, ...] [; marker]
_REQ = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9_.-]+)(?P<extras>\[[^\]]*\])?\s*>=\s*(?P<version>[^,;\s]+)"
    r"[^;]*(?P<marker>;.*)?$"
)


def requirements(pyproject: Path) -> list[str]:
    """Return the package's dependencies and its ``backends`` extra, as written."""
    project = tomllib.loads(pyproject.read_text())["project"]
    extras = project["optional-dependencies"]
    return [*project["dependencies"], *extras["backends"], *_policy_test_deps(extras["test"])]


def _policy_test_deps(test: list[str]) -> list[str]:
    # array-api-extra is a test dependency (the reference of apply_where) that the support
    # policy covers like the libraries: pinned too
    return [r for r in test if r.startswith("array-api-extra")]


def pins(pyproject: Path) -> list[str]:
    """Return ``name==version[; marker]`` for every lower-bounded runtime/backend requirement."""
    out = []
    for requirement in requirements(pyproject):
        match = _REQ.match(requirement)
        if match is None:
            raise SystemExit(f"{requirement!r}: no lower bound (>=) to pin")
        out.append(f"{match['name']}=={match['version']}{match['marker'] or ''}")
    return out


def test_tools(pyproject: Path) -> list[str]:
    """Return the ``test`` extra's own requirements (not the backends, CuPy or NVRTC)."""
    test = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]["test"]
    skip = ("arrayselect", "cupy", "nvidia-")
    return [r for r in test if not r.startswith(skip) and r not in _policy_test_deps(test)]


def main(argv: list[str]) -> int:
    """Print the pins (or, with ``--test-tools``, the test tools) of the repository."""
    path = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if "--test-tools" in argv:
        print("\n".join(test_tools(path)))
    elif "--requirements" in argv:
        print("\n".join(requirements(path)))
    else:
        print("\n".join(pins(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
