"""Every measured figure in README.md and docs/*.md says where it comes from.

A *figure* is a number with a unit of time or speed (``4.1 µs``, ``5.5 ms``, ``12 ns``,
``27.8 GB/s``, ``382,425 calls/s``) or a ratio (``1.35x``, or with the multiplication
sign). Each block that
holds one (a paragraph, a list item, a table, a fenced code block) must carry one
provenance tag, in the block itself or in the paragraph just above it (a table's or a
sample output's caption), of the form CONTRIBUTING.md documents::

    (measured: AMD EPYC 2 cores, load 0.9, 2026-11-28, `python asv_benchmarks/kernel_ratios.py`)

that is: the CPU (or GPU) model, the load average, the date, and the command in
backticks. A figure measured at a load above the usable cores says so in the same tag
(``load 12 (loaded: not typical)``); a record that did not keep the load says ``load not
recorded``. Figures in a fenced code block that is a sample of a
command's output take their tag from its caption. A block whose numbers are settings,
thresholds or targets rather than measurements says so instead:
``(not measured: the default threshold)``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]

FIGURE = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:µs|us|ms|ns|GB/s|MB/s|calls/s)(?!\w)"
    r"|(?<![\w.])\d+(?:\.\d+)?\s?[x\u00d7](?![\w-]|\s?\d)"  # not a shape: 1000 x 1000
)
TAG = re.compile(  # a line may break anywhere between the parts
    r"\(measured:\s+(?P<cpu>[^,()]+),\s+load\s+(?P<load>[0-9][^,]*|not\s+recorded),\s+"
    r"(?P<date>\d{4}-\d{2}-\d{2}),\s+`(?P<command>[^`]+)`\)"
)
# A block whose numbers are settings, thresholds or targets, not measurements.
NOT_MEASURED = re.compile(r"\(not\s+measured:\s+[^)]+\)")
# What the CPU part must name: a vendor and model family, or a GPU.
MACHINE = re.compile(r"AMD|Intel|EPYC|Xeon|Apple|ARM|Graviton|NVIDIA|H100|H200|A100|GPU")


def blocks(text: str) -> list[tuple[int, str]]:
    """Split a Markdown page into (first line number, block text): paragraphs, list
    items, tables, fenced code blocks and headings, in order."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        start = i
        if line.lstrip().startswith(("```", "~~~")):
            fence = line.lstrip()[:3]
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(fence):
                i += 1
            i += 1
        elif line.startswith("#"):
            i += 1
        elif line.lstrip().startswith("|"):
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                i += 1
        else:
            i += 1
            while (
                i < len(lines)
                and lines[i].strip()
                and not lines[i].lstrip().startswith(("```", "|", "#"))
                and not re.match(r"\s*([*-]|\d+\.)\s", lines[i])
            ):
                i += 1
        out.append((start + 1, "\n".join(lines[start:i])))
    return out


def bare_figures(text: str) -> list[tuple[int, str]]:
    """The (line, figure) of every figure whose block and caption carry no tag."""
    found = []
    page = blocks(text)
    for k, (line, block) in enumerate(page):
        figures = FIGURE.findall(block)
        if not figures:
            continue
        caption = page[k - 1][1] if k and not page[k - 1][1].startswith("#") else ""
        tagged = [m for m in TAG.finditer(block + "\n" + caption) if MACHINE.search(m["cpu"])]
        if not tagged and not NOT_MEASURED.search(block + "\n" + caption):
            found.append((line, figures[0]))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_has_its_provenance(page: Path) -> None:
    if not page.exists():
        pytest.skip(f"{page.name} does not exist")
    bare = bare_figures(page.read_text())
    listing = "\n".join(f"  {page.name}:{line}: {figure!r}" for line, figure in bare)
    assert not bare, f"figures without a (measured: ...) tag:\n{listing}"


def test_the_check_fails_on_a_bare_figure_and_passes_a_tagged_one() -> None:
    bare = "Some text.\n\nA select took 4.1 µs at 10^3 elements, 2.4x np.where.\n"
    assert bare_figures(bare) == [(3, "4.1 µs")]
    tag = "(measured: AMD EPYC 2 cores, load 0.9, 2026-11-28, `python x.py`)"
    assert bare_figures(bare.replace("np.where.", f"np.where {tag}.")) == []
    table = f"Ratios {tag}:\n\n| case | ratio |\n|---|---|\n| a | 1.35x |\n"
    assert bare_figures(table) == []  # the caption's tag
    untagged_table = "Ratios:\n\n| case | ratio |\n|---|---|\n| a | 1.35x |\n"
    assert bare_figures(untagged_table) == [(3, "1.35x")]
    assert bare_figures("It took 3 ms (measured: somewhere, load 1, 2026-11-28, `x`).") != []
    assert bare_figures("Shapes 3x3, 1000 \u00d7 1000 and hex 0x1f are not figures.") == []
    assert bare_figures("A ratio of 2.5\u00d7 np.where.") == [(1, "2.5\u00d7")]
    assert bare_figures("The target is 1.5x (not measured: a target).") == []
