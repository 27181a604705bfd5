"""Every relative link and every repository path the documentation cites exists.

The pages (``docs/*.md``) and the README are the project's contract: a reader must
be able to open what they point to. Generated files (``docs/_generated``, written
while the pages are built) are left out.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP_FOLDERS = ("src", "backends", "tests", "docs", "scripts", "examples", "asv_benchmarks", ".ci")

# [text](target) and ![alt](target) in Markdown.
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# A path under a top-level folder, in backticks or a link: `tests/test_x.py::name`.
_PATH = re.compile(
    r"(?<![\w./-])((?:" + "|".join(re.escape(f) for f in TOP_FOLDERS) + r")/[\w./-]*[\w/])"
)


def _cited(text: str) -> list[str]:
    """Repository paths named in code spans of a page (``::test`` parts dropped)."""
    spans = re.findall(r"`([^`\n]+)`", text)
    found: list[str] = []
    for span in spans:
        for match in _PATH.finditer(span):
            path = match.group(1).split("::")[0]
            if "*" in path or "{" in path:
                continue
            found.append(path)
    return found


def _generated(path: str) -> bool:
    """Written while the pages are built or benchmarks run, not kept in the repository."""
    parts = path.split("/")
    return "_generated" in parts or ".asv" in parts or path.startswith("docs/_build")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    missing = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or an anchor on the page
        path = target.split("#")[0]
        if _generated(path):
            continue
        if not (page.parent / path).exists():
            missing.append(target)
    assert not missing, f"{page.name} links to files that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_cited_repository_paths_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    missing = [p for p in _cited(text) if not _generated(p) and not (ROOT / p).exists()]
    assert not missing, f"{page.name} cites paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_cites_a_contract_outside_the_repository(page: Path) -> None:
    # The pages are the contract; a file no reader has cannot be cited as one.
    assert "SPEC.md" not in page.read_text(encoding="utf-8"), page.name


def test_the_path_finder_finds_paths() -> None:
    text = "see `tests/test_packaging.py::test_x` and `docs/nowhere.md`, not `src/*.py`"
    assert _cited(text) == ["tests/test_packaging.py", "docs/nowhere.md"]


def test_command_line_help_is_plain_text_and_names_the_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from arrayselect.__main__ import main

    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text  # reST markup does not belong in a terminal
    assert "With no command, or with selfcheck" in " ".join(text.split())


def test_selfcheck_rows_are_labelled_by_the_pages() -> None:
    from arrayselect._tools.selfcheck import EXAMPLES

    assert not [ex.source for ex in EXAMPLES if ex.source.startswith("SPEC")]
