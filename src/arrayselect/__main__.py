"""Command line: ``python -m arrayselect [selfcheck]``."""

from __future__ import annotations

import argparse
import sys

from arrayselect._selfcheck import run_selfcheck


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``arrayselect`` command; returns the exit status."""
    parser = argparse.ArgumentParser(prog="arrayselect", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("selfcheck", help="run the specifications' examples on every backend")
    args = parser.parse_args(argv)
    if args.command in (None, "selfcheck"):
        return 0 if run_selfcheck() else 1
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
