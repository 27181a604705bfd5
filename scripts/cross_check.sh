#!/usr/bin/env bash
# Build the C extensions and the kernel's C harness for the platforms this Linux
# x86-64 machine cannot be, and run the harness where an emulator can:
#
#   windows (wine)  mingw-w64, against Windows Python (Debian's python3.11 source:
#                   Include/ and PC/pyconfig.h) and NumPy (its win_amd64 wheel):
#                   the three extensions with -Werror, the .pyd files link (an import
#                   library made by dlltool from the symbols they use) and export
#                   PyInit_* and threadpoolctl's two entry points; the harness
#                   (loops, plans, thread pool) runs under Wine
#   macos arm64     zig cc: the three extensions with -Werror against the macOS NumPy
#   macos x86_64    wheels' headers, linked as bundles (-undefined dynamic_lookup)
#   aarch64 (qemu)  zig cc: the harness, static for aarch64-linux-musl, under
#                   qemu-user-static
#   musl            zig cc: the three extensions for x86_64-linux-musl against the
#                   musllinux NumPy wheel's headers; the harness runs natively
#
# One line per platform, then a summary; exit status 1 if any failed. Its tools:
# gcc-mingw-w64-x86-64, wine64 and qemu-user-static (Debian; scripts/ci/system_setup.sh
# installs them) and ziglang (PyPI, in .venv with the dev extra); a missing one ends it
# with an error. Downloads are cached under .cache/cross_check (a rerun is quick).
# Python headers for macOS and musl: this Python's own (an LP64 pyconfig.h, the
# same sizes as those targets'), as nothing for them is installable here.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=$ROOT/.cache/cross_check
OUT=$CACHE/build
mkdir -p "$CACHE" "$OUT"
PY=${PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=python3
PYVER=3.11 # Debian bookworm's python3.11 source package gives the Windows headers
NUMPY=$("$PY" -c "import numpy; print(numpy.__version__)")
KERNEL=backends/shared/_kernel
WARN=(-Wall -Wextra -Wno-unused-parameter -Werror)
CFLAGS=(-O2 -std=gnu11 -fno-strict-aliasing -fvisibility=hidden "${WARN[@]}")
export WINEDEBUG=-all WINEPREFIX=$CACHE/wine

log() { echo "cross_check: $*" >&2; }

# --- tools -------------------------------------------------------------------
source scripts/ci/_job.sh  # debian_source
for tool in x86_64-w64-mingw32-gcc qemu-aarch64-static; do
  command -v "$tool" > /dev/null || { log "$tool is missing (scripts/ci/system_setup.sh installs it)"; exit 1; }
done
WINE=$(command -v wine64 || echo /usr/lib/wine/wine64)
[ -x "$WINE" ] || { log "wine64 is missing (scripts/ci/system_setup.sh installs it)"; exit 1; }
"$PY" -c "import ziglang" || { log "ziglang is missing from $PY (the dev extra has it)"; exit 1; }
ZIG=("$PY" -m ziglang)
export ZIG_GLOBAL_CACHE_DIR=$CACHE/zig ZIG_LOCAL_CACHE_DIR=$CACHE/zig
export PIP_CACHE_DIR=$CACHE/pip  # its own: other jobs run beside this one

# --- headers -----------------------------------------------------------------
numpy_include() { # platform tag -> the wheel's numpy/_core/include, unpacked once
  local dir=$CACHE/numpy-$NUMPY-$1
  if [ ! -d "$dir/numpy/_core/include" ]; then
    "$PY" -m pip download -q --no-deps --only-binary=:all: --platform "$1" \
      --python-version "$PYVER" --implementation cp "numpy==$NUMPY" -d "$CACHE/wheels" > /dev/null
    local whl
    whl=$(ls "$CACHE"/wheels/numpy-"$NUMPY"-*-"$1".whl | head -1)
    "$PY" -c "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); \
[z.extract(n, sys.argv[2]) for n in z.namelist() if n.startswith('numpy/_core/include/')]" \
      "$whl" "$dir"
  fi
  echo "$dir/numpy/_core/include"
}

windows_python_include() { # Include/ and PC/pyconfig.h of Debian's python3.11 source
  local dir=$CACHE/python$PYVER-windows tarball
  if [ ! -f "$dir/PC/pyconfig.h" ]; then
    tarball=$(debian_source "python$PYVER" bookworm "${PYVER/./\\.}"'\.[0-9]+') || return 1
    mkdir -p "$dir"
    tar -xf "$tarball" -C "$dir" --strip-components=1 --wildcards '*/Include' '*/PC/pyconfig.h'
  fi
  echo "$dir"
}

# --- checks ------------------------------------------------------------------
declare -A RESULT
run_check() { # name function: one line, PASS or FAIL with the log's tail
  local name=$1 logf=$OUT/${1// /_}.log
  logf=${logf//[()]/}
  # in a background subshell: set -e holds there (it does not in an `if` condition)
  "$2" > "$logf" 2>&1 &
  if wait $!; then
    RESULT[$name]=pass
    echo "$name: ok — $(tail -1 "$logf")"
  else
    RESULT[$name]=FAIL
    echo "$name: FAILED (log: $logf)"
    tail -20 "$logf" | sed 's/^/    /'
  fi
}

# The one-file extensions: object folder under $EXT_DIR, and source.
declare -A SINGLE=([fastcall]=src/arrayselect/_dispatch/_fastcall.c [fields]=backends/torch_backend/_fields.c)
EXTS=(kernel "${!SINGLE[@]}")

# extensions CC... : compile the three extensions' C files with -Werror into $EXT_DIR
compile_extensions() {
  local cc=("$@") f ext
  rm -rf "$EXT_DIR" && mkdir -p "$EXT_DIR/kernel"
  for f in $KERNEL/*.c; do
    "${cc[@]}" "${CFLAGS[@]}" "${INCLUDES[@]}" -I$KERNEL -c "$f" \
      -o "$EXT_DIR/kernel/$(basename "${f%.c}").o"
  done
  for ext in "${!SINGLE[@]}"; do
    mkdir -p "$EXT_DIR/$ext"
    # -I: _vectorcall_type.h, the type boilerplate both share
    "${cc[@]}" "${CFLAGS[@]}" "${INCLUDES[@]}" -Isrc/arrayselect/_dispatch -c "${SINGLE[$ext]}" \
      -o "$EXT_DIR/$ext/_$ext.o"
  done
}

check_windows() {
  local cc=(x86_64-w64-mingw32-gcc) pyinc npinc
  pyinc=$(windows_python_include)
  npinc=$(numpy_include win_amd64)
  INCLUDES=(-I"$pyinc/Include" -I"$pyinc/PC" -I"$npinc" -DMS_WIN64)
  EXT_DIR=$OUT/windows
  compile_extensions "${cc[@]}"
  # the import library of python311.dll: the Python symbols the objects use
  {
    echo "LIBRARY python${PYVER/./}.dll"
    echo EXPORTS
    x86_64-w64-mingw32-nm -u "$EXT_DIR"/*/*.o |
      awk '{print $NF}' | sed 's/^__imp_//' | grep -E '^_?Py' | sort -u
  } > "$EXT_DIR/python.def"
  x86_64-w64-mingw32-dlltool -d "$EXT_DIR/python.def" -l "$EXT_DIR/libpython.a"
  "${cc[@]}" -shared -s -o "$EXT_DIR/_select_kernel.pyd" "$EXT_DIR"/kernel/*.o "$EXT_DIR/libpython.a"
  local ext exports
  for ext in "${!SINGLE[@]}"; do
    "${cc[@]}" -shared -s -o "$EXT_DIR/_$ext.pyd" "$EXT_DIR/$ext"/*.o "$EXT_DIR/libpython.a"
    # not `objdump | grep -q`: grep's early exit can end objdump with SIGPIPE,
    # which pipefail reports as a failure (the likely cause of one silent failure)
    exports=$(x86_64-w64-mingw32-objdump -p "$EXT_DIR/_$ext.pyd")
    grep -qw "PyInit__$ext" <<< "$exports" || { echo "_$ext.pyd does not export PyInit__$ext"; return 1; }
  done
  exports=$(x86_64-w64-mingw32-objdump -p "$EXT_DIR/_select_kernel.pyd" | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p')
  for sym in PyInit__select_kernel arrayselect_get_num_threads arrayselect_set_num_threads; do
    grep -qw "$sym" <<< "$exports" || { echo "_select_kernel.pyd does not export $sym"; return 1; }
  done
  # the harness under Wine (static: no mingw DLLs to find)
  "$PY" tests/_c_harness.py "$EXT_DIR/kernel_harness.exe" x86_64-w64-mingw32-gcc -static
  "$WINE" "$EXT_DIR/kernel_harness.exe" 20 | tee "$EXT_DIR/harness.txt"
  local used
  used=$(grep -o 'threads used at most [0-9]*' "$EXT_DIR/harness.txt")
  echo "extensions -Werror, .pyd exports ok; harness $(grep -o '^loops: [0-9]* cases' "$EXT_DIR/harness.txt"), pool $used, $(tail -1 "$EXT_DIR/harness.txt")"
}

check_macos() { # arch
  local arch=$1 tag npinc
  [ "$arch" = arm64 ] && tag=macosx_11_0_arm64 || tag=macosx_10_9_x86_64
  npinc=$(numpy_include $tag)
  INCLUDES=(-I"$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" -I"$npinc")
  EXT_DIR=$OUT/macos-$arch
  local target=${arch/arm64/aarch64}-macos.11.0
  compile_extensions "${ZIG[@]}" cc -target "$target"
  for ext in "${EXTS[@]}"; do
    "${ZIG[@]}" cc -target "$target" -shared -undefined dynamic_lookup \
      -o "$EXT_DIR/$ext.so" "$EXT_DIR/$ext"/*.o
  done
  echo "three extensions -Werror, linked ($(file -b "$EXT_DIR/kernel.so" | cut -d, -f1))"
}
check_macos_arm64() { check_macos arm64; }
check_macos_x86_64() { check_macos x86_64; }

check_aarch64() {
  EXT_DIR=$OUT/aarch64
  mkdir -p "$EXT_DIR"
  "$PY" tests/_c_harness.py "$EXT_DIR/kernel_harness" "${ZIG[@]}" cc -target aarch64-linux-musl -static
  qemu-aarch64-static "$EXT_DIR/kernel_harness" 18 | tee "$EXT_DIR/harness.txt"
  echo "harness $(grep -o '^loops: [0-9]* cases on [a-z ]*' "$EXT_DIR/harness.txt"), pool $(grep -o 'threads used at most [0-9]*' "$EXT_DIR/harness.txt"), $(tail -1 "$EXT_DIR/harness.txt")"
}

check_musl() {
  local npinc
  npinc=$(numpy_include musllinux_1_2_x86_64)
  INCLUDES=(-I"$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" -I"$npinc")
  EXT_DIR=$OUT/musl
  compile_extensions "${ZIG[@]}" cc -target x86_64-linux-musl -fPIC
  for ext in "${EXTS[@]}"; do
    "${ZIG[@]}" cc -target x86_64-linux-musl -shared -o "$EXT_DIR/$ext.so" "$EXT_DIR/$ext"/*.o
  done
  "$PY" tests/_c_harness.py "$EXT_DIR/kernel_harness" "${ZIG[@]}" cc -target x86_64-linux-musl -static
  "$EXT_DIR/kernel_harness" 18 > "$EXT_DIR/harness.txt"
  echo "three extensions -Werror, linked; harness $(grep -o '^loops: [0-9]* cases on [a-z0-9 ]*' "$EXT_DIR/harness.txt"), $(tail -1 "$EXT_DIR/harness.txt")"
}

run_check "windows (wine)" check_windows
run_check "macos arm64" check_macos_arm64
run_check "macos x86_64" check_macos_x86_64
run_check "aarch64 (qemu)" check_aarch64
run_check "musl" check_musl

failed=0
for name in "${!RESULT[@]}"; do
  [ "${RESULT[$name]}" = pass ] || failed=$((failed + 1))
done
echo "cross check: $((${#RESULT[@]} - failed)) of ${#RESULT[@]} platforms passed"
[ "$failed" -eq 0 ]
