#!/usr/bin/env bash
# Build the documentation (warnings are errors) and run every code example of the
# pages and docstrings as a doctest (tests/test_docs.py). The site lands in
# docs/_build/html/index.html. Arguments go to sphinx-build (e.g. -E to rebuild
# everything). DOCS_DOCTESTS=0 skips the doctests (scripts/test.sh runs them with the
# rest of the suite).
ARRAYSELECT_EXTRAS=test,dev,docs
source "$(dirname "$0")/_venv.sh"
.venv/bin/sphinx-build -W --keep-going -b html "$@" docs docs/_build/html
if [ "${DOCS_DOCTESTS:-1}" != 0 ]; then
  .venv/bin/python -m pytest -q tests/test_docs.py
fi
