"""Pictures of the broadcasting modes, drawn from the library's own shape logic.

Three kinds of figure, written as PNG files at build time:

* **value grids** (``mode_<name>.png``): a small 2-D example per mode. The top
  row shows ``cond``, ``then`` and ``else`` as given; the bottom row shows each
  one reshaped to the aligned shape of the core's plan
  (:func:`arrayselect._rules.shapes.make_plan`) and broadcast to the output shape
  (hatched cells are copies made by broadcasting), and the output that
  :func:`arrayselect.select` returned, coloured by the input each element came
  from.
* **shape charts** (``shapes_<group>.png``): the specification examples of
  :data:`arrayselect._tools.selfcheck.EXAMPLES`: where each input's dimensions land
  among the output's dimensions, and which ones broadcast or clash. The output
  shape, or the error, is what :func:`arrayselect.select_shape` answers.

* **the first-match rule** (``family_first_match.png``) of
  :func:`arrayselect.select_cases`, drawn from what it returns.

Run as a script to write the figures to a folder: ``python docs/_ext/mode_diagrams.py OUT``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

import arrayselect as asel
from arrayselect._rules.shapes import check_options, make_plan
from arrayselect._tools.selfcheck import EXAMPLES

THEN_COLOUR = "#4c9be8"
ELSE_COLOUR = "#f0a04b"
TRUE_COLOUR = "#7bc47f"
FALSE_COLOUR = "#e8e8e8"
CLASH_COLOUR = "#e05555"
PAD_COLOUR = "#ffffff"


@dataclass(frozen=True)
class GridExample:
    """A 2-D example of one mode, with NumPy inputs."""

    name: str
    title: str
    cond: np.ndarray
    then: np.ndarray
    else_: np.ndarray
    options: dict[str, Any]
    contrast: dict[str, Any] | None = None  # options under which the same call fails


def grid_examples() -> list[GridExample]:
    """The four value-grid examples, one per mode (numpy in two flavours)."""
    then34 = np.arange(1, 13).reshape(3, 4)
    return [
        GridExample(
            "numpy",
            "auto_broadcast='numpy' (default): cond (4,) one way onto then (3, 4) / else (3, 1)",
            np.array([True, False, True, True]),
            then34,
            -np.arange(1, 4).reshape(3, 1),
            {},
        ),
        GridExample(
            "multidirectional",
            "cond_broadcast='multidirectional': cond (3, 1) enlarges then (1, 4) and else ()",
            np.array([[True], [False], [True]]),
            np.arange(1, 5).reshape(1, 4),
            np.array(0),
            {"cond_broadcast": "multidirectional"},
            contrast={},
        ),
        GridExample(
            "pdpd",
            "auto_broadcast='pdpd', axis=0: else (3,) and cond (1, 4) fitted onto then (3, 4)",
            np.array([[True, False, False, True]]),
            then34,
            -np.arange(1, 4),
            {"auto_broadcast": "pdpd", "axis": 0},
            contrast={},
        ),
        GridExample(
            "none",
            "auto_broadcast='none': identical shapes, nothing broadcasts",
            np.array([[True, False, True, False], [False, True, False, True], [True] * 4]),
            then34,
            -then34,
            {"auto_broadcast": "none"},
        ),
    ]


def _placement(src: tuple[int, ...], rank: int, options: dict[str, Any]) -> int:
    """First output dimension an input's dimensions line up with."""
    if options.get("auto_broadcast") == "pdpd":
        axis = options.get("axis", -1)
        return rank - len(src) if axis == -1 else int(axis)
    return rank - len(src)


def aligned_shapes(ex: GridExample) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Output shape and the three aligned shapes, taken from the core's plan.

    Where the plan leaves an input as it is (``None``), NumPy's rule applies:
    it is padded with leading 1s.
    """
    mode, axis, cond_broadcast = check_options(
        ex.options.get("auto_broadcast", "numpy"),
        ex.options.get("axis", -1),
        ex.options.get("cond_broadcast", "unidirectional"),
    )
    plan = make_plan(
        ex.cond.shape,
        ex.then.shape,
        ex.else_.shape,
        mode,
        axis,
        cond_broadcast,
    )
    out = tuple(int(d) for d in plan.out_shape if d is not None)
    aligned = []
    for shape, planned in zip(
        (ex.cond.shape, ex.then.shape, ex.else_.shape), plan.aligned, strict=True
    ):
        full = tuple(planned) if planned is not None else shape
        aligned.append((1,) * (len(out) - len(full)) + tuple(int(d) for d in full))  # type: ignore[arg-type]
    return out, aligned


def _draw_grid(
    ax: Any,
    values: np.ndarray,
    colours: np.ndarray,
    hatched: np.ndarray | None,
    title: str,
) -> None:
    values2d = np.atleast_2d(values) if values.ndim < 2 else values
    rows, cols = values2d.shape
    colours2d = colours.reshape(values2d.shape)
    copied = None if hatched is None else hatched.reshape(values2d.shape)
    for i in range(rows):
        for j in range(cols):
            rect = Rectangle(
                (j, rows - 1 - i),
                1,
                1,
                facecolor=colours2d[i, j],
                edgecolor="#333333",
                hatch="///" if copied is not None and copied[i, j] else None,
                linewidth=1,
            )
            ax.add_patch(rect)
            v = values2d[i, j]
            text = ("T" if v else "F") if values2d.dtype == np.bool_ else str(v)
            ax.text(j + 0.5, rows - 1 - i + 0.5, text, ha="center", va="center", fontsize=9)
    ax.set_xlim(-0.1, 4.1)
    ax.set_ylim(-0.1, 3.1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=9)


def _colours_for(name: str, values: np.ndarray) -> np.ndarray:
    if name == "cond":
        return np.where(values.astype(bool), TRUE_COLOUR, FALSE_COLOUR)
    colour = THEN_COLOUR if name == "then" else ELSE_COLOUR
    return np.full(values.shape, colour, dtype=object)


def _replicated(aligned: tuple[int, ...], out: tuple[int, ...]) -> np.ndarray:
    """True for output positions that broadcasting fills with a copy."""
    index = np.indices(out)
    copy = np.zeros(out, dtype=bool)
    for d, (a, o) in enumerate(zip(aligned, out, strict=True)):
        if a == 1 and o > 1:
            copy |= index[d] > 0
    return copy


def draw_grid_example(ex: GridExample, path: Path) -> str:
    """Write the value-grid figure of ``ex`` to ``path``; return its caption text."""
    out_shape, aligned = aligned_shapes(ex)
    result = asel.select(ex.cond, ex.then, ex.else_, **ex.options)
    assert result.shape == out_shape, (result.shape, out_shape)
    fig, axes = plt.subplots(2, 4, figsize=(10, 4.6))
    names = ("cond", "then", "else")
    inputs = (ex.cond, ex.then, ex.else_)
    for k, (name, x, al) in enumerate(zip(names, inputs, aligned, strict=True)):
        shown = x.reshape(1, -1) if x.ndim < 2 else x
        _draw_grid(axes[0, k], shown, _colours_for(name, shown), None, f"{name} {x.shape}")
        wide = np.broadcast_to(x.reshape(al), out_shape)
        _draw_grid(
            axes[1, k],
            wide,
            _colours_for(name, wide),
            _replicated(al, out_shape),
            f"{name} as {al}, broadcast",
        )
    cond_wide = np.broadcast_to(ex.cond.reshape(aligned[0]), out_shape).astype(bool)
    colours = np.where(cond_wide, THEN_COLOUR, ELSE_COLOUR)
    _draw_grid(axes[1, 3], result, colours, None, f"select(...) {result.shape}")
    axes[0, 3].axis("off")
    opts = ", ".join(f"{k}={v!r}" for k, v in ex.options.items()) or "defaults"
    note = f"select(cond, then, else_, {opts})\nplan: aligned shapes {aligned}"
    if ex.contrast is not None:
        try:
            asel.select(ex.cond, ex.then, ex.else_, **ex.contrast)
            note += "\n(default options: accepted too)"
        except asel.SelectError as exc:
            note += "\nWith default options:\n" + _wrap(f"{type(exc).__name__}: {exc}", 38)
    axes[0, 3].text(0, 0.95, note, fontsize=7.5, va="top", family="monospace", wrap=True)
    fig.suptitle(ex.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return ex.title


def _wrap(text: str, width: int) -> str:
    words, lines, line = text.split(), [], ""
    for w in words:
        if len(line) + len(w) + 1 > width and line:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    lines.append(line)
    return "\n".join(lines[:9]) + ("\n…" if len(lines) > 9 else "")


# --------------------------------------------------------------------------- shape charts


def _example_shapes(example: Any) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    def shape(spec: Any) -> tuple[int, ...]:
        if isinstance(spec, tuple) and spec[0] in ("mask", "ones", "zeros"):
            return tuple(spec[1])
        if isinstance(spec, tuple) and spec[0] == "uint8":
            return np.asarray(spec[1]).shape
        return np.asarray(spec).shape

    return shape(example.cond), shape(example.then), shape(example.else_)


def spec_examples() -> list[dict[str, Any]]:
    """Every example of ``_selfcheck.EXAMPLES`` with ``select_shape``'s answer."""
    rows = []
    for example in EXAMPLES:
        cond, then, else_ = _example_shapes(example)
        try:
            answer: Any = asel.select_shape(cond, then, else_, **example.options)
            error = None
        except asel.SelectShapeError as exc:
            answer, error = None, str(exc)
        rows.append(
            {
                "source": example.source.strip(),
                "shapes": (cond, then, else_),
                "options": dict(example.options),
                "out": answer,
                "error": error,
            }
        )
    return rows


def _target(row: dict[str, Any]) -> tuple[int, ...]:
    _, then, else_ = row["shapes"]
    if row["out"] is not None:
        return tuple(row["out"])
    if (
        row["options"].get("auto_broadcast") == "pdpd"
        or row["options"].get("auto_broadcast") == "none"
    ):
        return then
    rank = max(len(then), len(else_))
    t = (1,) * (rank - len(then)) + then
    e = (1,) * (rank - len(else_)) + else_
    return tuple(max(a, b) for a, b in zip(t, e, strict=True))


def _trimmed(src: tuple[int, ...], options: dict[str, Any]) -> tuple[int, ...]:
    if options.get("auto_broadcast") != "pdpd":
        return src
    end = len(src)
    while end and src[end - 1] == 1:
        end -= 1
    return src[:end]


def draw_shape_chart(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """One band per example: output dims on top, each input's dims where they land.

    Columns are the output's dimensions, right-aligned; an input with more
    dimensions than the output gets extra columns on the left, drawn as clashes.
    """
    band = 5
    height = band * len(rows)
    fig, ax = plt.subplots(figsize=(9.5, 0.42 * height + 0.6))
    y = height
    for row in rows:
        target = _target(row)
        rank = len(target)
        cols = max([rank] + [len(s) for s in row["shapes"]])
        ok = row["error"] is None
        verdict = f"→ {tuple(row['out'])}" if ok else "✗ " + row["error"].split(":")[-1].strip()
        opts = ", ".join(f"{k}={v!r}" for k, v in row["options"].items())
        ax.text(0, y - 0.3, f"{row['source']}   {opts}", fontsize=8, weight="bold", va="center")
        ax.text(
            cols * 1.1 + 2.3,
            y - 1.4,
            _wrap(verdict, 60),
            fontsize=7.5,
            va="top",
            color="#222222" if ok else CLASH_COLOUR,
        )
        lines = [("output" if ok else "target", target)]
        lines += list(zip(("cond", "then", "else"), row["shapes"], strict=True))
        for k, (name, shape) in enumerate(lines):
            yy = y - 1.2 - k * 0.9
            ax.text(1.9, yy + 0.4, f"{name}", fontsize=8, ha="right", va="center")
            pdpd = row["options"].get("auto_broadcast") == "pdpd"
            if name in ("output", "target") or (pdpd and name == "then"):
                dims, start = shape, 0  # pdpd fits the others onto then as it is
            else:
                dims = _trimmed(shape, row["options"])
                start = _placement(shape, rank, row["options"])
            offset = cols - rank  # output dimension j is column offset + j
            for col in range(cols):
                j = col - offset
                x = 2.0 + col * 1.1
                if name in ("output", "target"):
                    face, text = ("#d9d9d9", str(shape[j])) if j >= 0 else (PAD_COLOUR, "·")
                elif not start <= j < start + len(dims):
                    face, text = PAD_COLOUR, "·"
                else:
                    d = dims[j - start]
                    face = {"cond": TRUE_COLOUR, "then": THEN_COLOUR, "else": ELSE_COLOUR}[name]
                    if j < 0 or (d != target[j] and d != 1):
                        face = CLASH_COLOUR
                    stretched = j >= 0 and d == 1 and target[j] != 1
                    text = str(d) + ("→" + str(target[j]) if stretched else "")
                ax.add_patch(
                    Rectangle(
                        (x, yy),
                        1.0,
                        0.8,
                        facecolor=face,
                        edgecolor="#555555",
                        linestyle=":" if text == "·" else "-",
                    )
                )
                ax.text(x + 0.5, yy + 0.4, text, ha="center", va="center", fontsize=8)
        y -= band
    ax.set_xlim(0, 12)
    ax.set_ylim(0, height + 0.2)
    ax.axis("off")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


CHOICE_COLOURS = ("#4c9be8", "#f0a04b", "#b07cc6")
DEFAULT_COLOUR = "#d0d0d0"


def draw_first_match(path: Path) -> None:
    """The first-match rule of :func:`arrayselect.select_cases`, on a 3x4 example.

    Top row: the three conditions and, per position, which one wins (the first
    that is true; ``d``: none, the default). Bottom row: the choices and the
    result that ``select_cases`` returned, coloured by the choice it came from.
    """
    rng = np.random.default_rng(4)
    conds = [rng.random((3, 4)) < p for p in (0.3, 0.5, 0.5)]
    choices = [np.arange(12).reshape(3, 4) + 100 * (k + 1) for k in range(3)]
    result = asel.select_cases(conds, choices, 0)
    stacked = np.stack([*conds, np.ones((3, 4), bool)])
    winner = np.argmax(stacked, axis=0)  # the first true, computed apart from the library
    colours = np.array([*CHOICE_COLOURS, DEFAULT_COLOUR], dtype=object)[winner]
    assert (result == np.where(winner < 3, np.choose(np.minimum(winner, 2), choices), 0)).all()
    fig, axes = plt.subplots(2, 4, figsize=(10, 4.6))
    for k in range(3):
        _draw_grid(axes[0, k], conds[k], _colours_for("cond", conds[k]), None, f"condlist[{k}]")
        _draw_grid(
            axes[1, k],
            choices[k],
            np.full((3, 4), CHOICE_COLOURS[k], dtype=object),
            None,
            f"choicelist[{k}]",
        )
    labels = np.array(["0", "1", "2", "d"], dtype=object)[winner]
    _draw_grid(axes[0, 3], labels, colours, None, "first true condition (d: none)")
    _draw_grid(axes[1, 3], result, colours, None, "select_cases(..., default=0)")
    fig.suptitle(
        "select_cases: the first true condition wins, the default where none is", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_all(folder: Path) -> list[Path]:
    """Write every figure into ``folder``; return the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "family_first_match.png"]
    draw_first_match(written[0])
    for ex in grid_examples():
        path = folder / f"mode_{ex.name}.png"
        draw_grid_example(ex, path)
        written.append(path)
    rows = [r for r in spec_examples() if len(r["shapes"][1]) >= 1]
    groups = {
        "numpy": [
            r
            for r in rows
            if r["options"].get("auto_broadcast", "numpy") == "numpy" and len(r["shapes"][1]) > 2
        ],
        "pdpd": [r for r in rows if r["options"].get("auto_broadcast") == "pdpd"],
    }
    titles = {
        "numpy": "auto_broadcast='numpy': the oneDNN / semantics examples",
        "pdpd": "auto_broadcast='pdpd': the semantics examples with then (2, 3, 4, 5)",
    }
    for group, members in groups.items():
        path = folder / f"shapes_{group}.png"
        draw_shape_chart(members, path, titles[group])
        written.append(path)
    return written


if __name__ == "__main__":
    for p in write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/_generated")):
        print(p)
