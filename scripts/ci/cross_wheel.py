"""Make the wheel for a foreign Linux CPU from the x86-64 wheel, with a cross compiler.

Usage::

    python scripts/ci/cross_wheel.py --wheel dist/arrayselect-...-x86_64.whl \\
        --root ROOT --cc aarch64-linux-gnu-gcc --out DIR

ROOT is a Debian root of the target architecture (the qemu jobs' root) holding its
``python3`` and ``libpython3-dev`` (Python's headers, ``_sysconfigdata_*.py``) and
``python3-numpy`` (NumPy's headers). The three extensions are compiled on this machine by
CC, a native cross compiler (no emulation: gcc under qemu took 1465 s for them on aarch64),
from the sources and with the flags that ``setup.py`` gives setuptools (it is imported for
them), against the root's Python and NumPy headers. The wheel's Python files and metadata
are copied, its x86-64 extensions replaced, its tag and RECORD rewritten for the target
(e.g. ``cp314-cp314-linux_aarch64``); the path of the new wheel is printed. The target's
own pip then installs it as any wheel (scripts/ci/job_qemu.sh).
"""

from __future__ import annotations

import argparse
import ast
import base64
import hashlib
import os
import runpy
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def target_config(root: Path) -> dict[str, str]:
    """The root's Python build configuration (its ``_sysconfigdata_*.py``), read, not run."""
    found = sorted(root.glob("usr/lib/python3.*/_sysconfigdata_*.py"))
    if not found:
        raise SystemExit(f"cross_wheel: no _sysconfigdata_*.py under {root}/usr/lib/python3.*")
    tree = ast.parse(found[-1].read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "build_time_vars":
            config: dict[str, str] = ast.literal_eval(node.value)
            return config
    raise SystemExit(f"cross_wheel: no build_time_vars in {found[-1]}")


def build_extensions(cc: str, root: Path, config: dict[str, str], work: Path) -> dict[str, Path]:
    """Compile setup.py's extensions with ``cc``; return {module name: built file}."""
    setup = runpy.run_path(str(REPO / "setup.py"), run_name="setup_config")
    numpy_include = next(root.glob("usr/lib/python3/dist-packages/numpy/_core/include"), None)
    if numpy_include is None:
        raise SystemExit(f"cross_wheel: no NumPy headers in {root} (python3-numpy)")
    python_include = root / str(config["INCLUDEPY"]).lstrip("/")
    # Debian's pyconfig.h includes <TRIPLET/python3.X/pyconfig.h>: the root's /usr/include,
    # searched after the cross compiler's own headers (its libc's, not the root's)
    includes = [f"-I{python_include}", f"-idirafter{root / 'usr/include'}"]
    flags = ["-fPIC", "-DNDEBUG", "-fwrapv", "-Wall", *setup["_UNIX_FLAGS"]]
    if setup["_STRIP"]:
        flags += setup["_UNIX_STRIP_COMPILE"]
    built = {}
    for ext in setup["extensions"](str(numpy_include)):
        objects = []
        for source in ext.sources:
            obj = work / (ext.name + "." + Path(source).stem + ".o")
            macros = [f"-D{name}" + (f"={value}" if value is not None else "")
                      for name, value in ext.define_macros]  # fmt: skip
            command = [cc, *flags, *includes, *[f"-I{REPO / d}" for d in ext.include_dirs]]
            command += [*macros, "-c", str(REPO / source), "-o", str(obj)]
            subprocess.run(command, check=True)
            objects.append(str(obj))
        target = work / (ext.name.rpartition(".")[2] + str(config["EXT_SUFFIX"]))
        link = [cc, "-shared", "-pthread", *objects, "-o", str(target)]
        subprocess.run(link + (setup["_UNIX_STRIP_LINK"] if setup["_STRIP"] else []), check=True)
        built[ext.name] = target
    return built


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def repack(wheel: Path, built: dict[str, Path], config: dict[str, str], out: Path) -> Path:
    """The wheel with its extensions replaced by ``built`` and tagged for the target."""
    version = str(config["VERSION"]).replace(".", "")
    machine = str(config["MULTIARCH"]).split("-")[0]  # aarch64-linux-gnu -> aarch64
    tag = f"cp{version}-cp{version}-linux_{machine}"
    name, ver = wheel.name.split("-")[:2]
    target = out / f"{name}-{ver}-{tag}.whl"
    suffix = str(config["EXT_SUFFIX"])
    replaced = {
        module.replace(".", "/").rpartition("/")[0] + "/" + path.name: path
        for module, path in built.items()
    }
    records = []
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        names = [n for n in src.namelist() if not n.endswith((".so", "/RECORD"))]
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        for entry in names:
            data = src.read(entry)
            if entry.endswith(".dist-info/WHEEL"):
                lines = [ln for ln in data.decode().splitlines() if ln and not ln.startswith("Tag:")]
                data = ("\n".join([*lines, f"Tag: {tag}"]) + "\n").encode()
            dst.writestr(entry, data)
            records.append(_record_line(entry, data))
        for entry, path in sorted(replaced.items()):
            assert entry.endswith(suffix)
            data = path.read_bytes()
            dst.writestr(entry, data)
            records.append(_record_line(entry, data))
        dst.writestr(record_name, "\n".join([*records, f"{record_name},,"]) + "\n")
    return target


def main(argv: list[str] | None = None) -> int:
    """Cross-compile, repack, print the new wheel's path."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", required=True, type=Path, help="the x86-64 wheel")
    parser.add_argument("--root", required=True, type=Path, help="the target's Debian root")
    parser.add_argument("--cc", required=True, help="the cross compiler, e.g. s390x-linux-gnu-gcc")
    parser.add_argument("--out", required=True, type=Path, help="where the wheel goes")
    args = parser.parse_args(argv)
    config = target_config(args.root)
    with tempfile.TemporaryDirectory() as work:
        built = build_extensions(args.cc, args.root, config, Path(work))
        print(repack(args.wheel, built, config, args.out))
    return 0


if __name__ == "__main__":
    os.chdir(REPO)
    sys.exit(main())
