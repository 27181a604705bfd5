"""Command line: ``python -m arrayselect [--version] [selfcheck | bench [--quick] [--png P]]``."""

from __future__ import annotations

import argparse
import sys

from arrayselect._base.version import __version__
from arrayselect._tools.selfcheck import run_selfcheck


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``arrayselect`` command; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        0 on success, 1 when a check failed, 2 for a usage error.
    """
    parser = argparse.ArgumentParser(
        prog="arrayselect",
        description="The command line of arrayselect. With no command, or with selfcheck, "
        "it runs the source specifications' examples on every installed backend and prints "
        "a table; bench times select against each "
        "library's own where.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("selfcheck", help="run the specifications' examples on every backend")
    bench = sub.add_parser(
        "bench",
        help="time select against each library's where on every backend and device present",
        description="Time select against each library's own where on every backend and "
        "device present, check every result against NumPy bit for bit, and print a table "
        "with the machine, its load average before and after, the spread of every figure, "
        "and the rows whose spread or load make their ratio unreliable.",
    )
    bench.add_argument(
        "--quick",
        action="store_true",
        help="a shorter run: 87 and 188 s measured on a shared 2-core machine at load "
        "average 10 to 13, with NumPy, PyTorch, JAX and Dask installed (less when idle)",
    )
    bench.add_argument(
        "--png", metavar="PATH", help="also write a bar chart to PATH (needs matplotlib)"
    )
    args = parser.parse_args(argv)
    if args.command in (None, "selfcheck"):
        return 0 if run_selfcheck() else 1
    if args.command == "bench":
        from arrayselect._tools.bench import main as bench_main

        return bench_main(quick=args.quick, png=args.png)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
