"""Build the NumPy kernel's C harness (``tests/kernel_harness.c``) for any C compiler.

One place says how: ``tests/test_numpy_kernel_harness.py`` builds it natively and
``scripts/cross_check.sh`` for Windows (mingw-w64), aarch64 and musl (zig).

    python tests/_c_harness.py OUTPUT CC [CC ARGS...]

compiles it with ``CC [CC ARGS...]`` and prints the output's path. The kernel's
files that need no Python (the loops, plans, pool and OS layer) are compiled
with ``-DSK_STANDALONE``; the harness checks them against its own reference.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "backends" / "shared" / "_kernel"
HARNESS = ROOT / "tests" / "kernel_harness.c"
# The kernel's files without Python objects (sk_kernel.h's SK_STANDALONE part).
STANDALONE_SOURCES = (
    "sk_loops.c",
    "sk_loops_avx2.c",
    "sk_loops_avx512.c",
    "sk_plan.c",
    "sk_pool.c",
    "sk_os_posix.c",
    "sk_os_win32.c",
    "sk_os_cpu.c",
)
# The warnings every build must be free of (as the cross check's extension builds).
WARNINGS = ("-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror")
# The wide loops as their own translation units (MSVC's construction) with GCC's
# per-ISA flags, so that construction runs here too.
ISA_UNIT_FLAGS = {
    "sk_loops_avx2.c": ("-mavx2",),
    "sk_loops_avx512.c": (
        "-mavx512f",
        "-mavx512bw",
        "-mavx512vl",
        "-mavx512dq",
        "-mavx512cd",
        "-mprefer-vector-width=512",
    ),
}


def harness_command(cc: list[str], output: Path, *, isa_units: bool = False) -> list[list[str]]:
    """The commands that build the harness into ``output`` with the compiler ``cc``.

    ``isa_units``: build the AVX2/AVX-512 loops as their own translation units,
    each with its ISA flags (how MSVC builds them), rather than through target
    attributes. Returns one command per object file, then the link command.
    """
    common = [*cc, "-std=gnu11", "-O2", *WARNINGS, "-DSK_STANDALONE", f"-I{KERNEL}"]
    if isa_units:
        common.append("-DSK_ISA_UNITS")
    commands, objects = [], []
    for name in (*STANDALONE_SOURCES, HARNESS):
        source = KERNEL / name if isinstance(name, str) else name
        obj = output.parent / f"{output.stem}_{source.stem}.o"
        flags = ISA_UNIT_FLAGS.get(source.name, ()) if isa_units else ()
        commands.append([*common, *flags, "-c", str(source), "-o", str(obj)])
        objects.append(str(obj))
    commands.append([*cc, *objects, "-o", str(output), "-lpthread"])
    return commands


def build(cc: list[str], output: Path, *, isa_units: bool = False) -> None:
    """Run ``harness_command``; raise with the compiler's message on failure."""
    for cmd in harness_command(cc, output, isa_units=isa_units):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}\n{proc.stdout}{proc.stderr}")


def main() -> None:
    """Command line: ``_c_harness.py OUTPUT CC [CC ARGS...]``."""
    output, cc = Path(sys.argv[1]), sys.argv[2:]
    try:
        build(cc, output)
    except RuntimeError as exc:
        sys.exit(str(exc))
    print(output)


if __name__ == "__main__":
    main()
