#!/usr/bin/env bash
# The main job: set everything up, then run the self-check on every backend.
ARRAYSELECT_EXTRAS=backends
source "$(dirname "$0")/_venv.sh"
exec .venv/bin/python -m arrayselect selfcheck "$@"
