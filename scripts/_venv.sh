# Sourced by the other scripts: create .venv (if missing) and install the
# package with the extras named in $ARRAYSELECT_EXTRAS. Needs only python3 >= 3.11
# and a C compiler.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# editable_mode=strict: a tree of links to the sources on a plain .pth path, which
# type checkers follow (the default mode's import hook hides the package from mypy).
.venv/bin/python -m pip install -q -e ".[${ARRAYSELECT_EXTRAS}]" --config-settings editable_mode=strict
