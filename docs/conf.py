"""Sphinx configuration of the arrayselect documentation.

Build: ``bash scripts/docs.sh`` (or ``sphinx-build -W --keep-going -b html docs
docs/_build/html`` in an environment with the ``docs`` extra). Tables and
figures that describe the code are generated at build time by
``docs/_ext/asel_docs.py`` into ``docs/_generated/`` (not committed).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import arrayselect  # noqa: E402

project = "arrayselect"
author = "the arrayselect authors"
copyright = "the arrayselect authors"
release = arrayselect.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "asel_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_generated", "README.md", ".venv", "**/.ipynb_checkpoints"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

intersphinx_mapping: dict[str, tuple[str, str | None]] = {}

html_theme = "pydata_sphinx_theme"
html_title = f"arrayselect {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path: list[str] = []


def _skip_field_aliases(app: object, what: str, name: str, obj: object, skip: bool,
                        options: object) -> bool | None:
    """Leave out a NamedTuple field's own entry ("Alias for field number 0"): its class
    documents the field in its Attributes section."""
    if (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
        return True
    return None


def setup(app: object) -> None:
    app.connect("autodoc-skip-member", _skip_field_aliases)  # type: ignore[attr-defined]
