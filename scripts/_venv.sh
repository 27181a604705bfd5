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
# Our machines have a C compiler: a C extension that fails to build is an error
# here (a user's install would only warn and run without it).
export ARRAYSELECT_REQUIRE_KERNEL=1
# editable_mode=strict: a tree of links to the sources on a plain .pth path, which
# type checkers follow (the default mode's import hook hides the package from mypy).
# setuptools says so in a warning block on every install; that one warning is
# silenced. scripts/constraints.txt pins what our machines need (the CPU torch),
# which the extras leave open.
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q \
  -e ".[${ARRAYSELECT_EXTRAS}]" -c scripts/constraints.txt --config-settings editable_mode=strict
