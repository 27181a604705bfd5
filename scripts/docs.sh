#!/usr/bin/env bash
# Build the documentation (warnings are errors) and run every code example of the
# pages and docstrings as a doctest. The site lands in docs/_build/html/index.html.
# Arguments go to sphinx-build (e.g. -j 2, or -E to rebuild everything).
ARRAYSELECT_EXTRAS=test,dev,docs
source "$(dirname "$0")/_venv.sh"
.venv/bin/sphinx-build -W --keep-going -b html "$@" docs docs/_build/html
.venv/bin/python -m pytest -q tests/test_docs.py
