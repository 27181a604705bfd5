"""``bench --quick``'s NumPy rows with or without the compiled modules, for comparing.

Run it alternately, so that both see the same machine::

    for i in 1 2 3; do
        .venv/bin/python asv_benchmarks/no_kernel_rows.py
        .venv/bin/python asv_benchmarks/no_kernel_rows.py --no-kernel
    done

``--no-kernel`` makes ``arrayselect._dispatch._fastcall`` and the NumPy kernel unimportable
before arrayselect is imported (a meta-path finder raising ``ImportError`` for those
two names, as a build without a C compiler has them missing), so the NumPy backend
runs through ``numpy.where`` (docs/platforms.md). It prints the bench's table for
the ``numpy`` target (each row checked against NumPy bit for bit) and whether the
kernel was built.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

COMPILED = ("arrayselect._dispatch._fastcall", "arrayselect.backends.shared._select_kernel")


class _NoCompiled:
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name in COMPILED:
            raise ImportError(f"No module named {name!r} (blocked by --no-kernel)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-kernel", action="store_true", help="block the compiled modules")
    args = parser.parse_args()
    if args.no_kernel:
        sys.meta_path.insert(0, _NoCompiled())  # type: ignore[arg-type]

    import arrayselect as asel
    from arrayselect import adapters
    from arrayselect._tools import bench as _bench

    report = _bench.run_bench(
        quick=True, targets=[_bench.Target(adapters.get("numpy"))], progress=None
    )
    print(_bench.format_table(report))
    print(f"kernel built: {asel.runtime_info()['kernel']['built']}; matches NumPy: {report.ok}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
