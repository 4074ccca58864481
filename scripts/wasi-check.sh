#!/usr/bin/env bash
# Builds the library for WASI (wasm32-wasip1 with SIMD128, cmake/toolchains/wasi.cmake) as build/wasi/libuform_static.a
# and runs its C and unit suites as WASI modules under Wasmtime (docs/building.md, "Building for WASI"): the PyTorch
# goldens through the C API on the wasm-simd128 class, the refusals of bad input and weights, executors without
# threads, and the trainer's maths.
#
# Installs what is missing first, so running it again costs only the build and the tests: Debian's wasm32 C and C++
# runtimes (wasi-libc, libc++ and libc++abi, compiler-rt's builtins) and lld, then PyPI's wasmtime, pinned, into
# build/wasi/venv. apt-get needs root or sudo, and waits for another apt-get holding /tmp/apt.lock.
#
#   scripts/wasi-check.sh            # everything
#   scripts/wasi-check.sh --install  # only the packages
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

UFORM_WASI_BUILD=build/wasi
UFORM_WASI_PACKAGES=(wasi-libc libc++-22-dev-wasm32 libc++abi-22-dev-wasm32 libclang-rt-22-dev-wasm32 lld-22)
UFORM_WASMTIME_VERSION=50.0.1

log() { printf 'wasi-check: %s\n' "$*" >&2; }

# shellcheck source=scripts/packages.sh
source scripts/packages.sh

# The wasm32 runtimes and the linker, through apt-get under the shared lock.
install_packages() {
    local missing=()
    for package in "${UFORM_WASI_PACKAGES[@]}"; do installed "$package" || missing+=("$package"); done
    [ "${#missing[@]}" -gt 0 ] || return 0
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    as_root flock /tmp/apt.lock apt-get -o DPkg::Lock::Timeout=900 update -qq
    as_root flock /tmp/apt.lock apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends \
        "${missing[@]}" > /dev/null
}

# Wasmtime's Python embedding, the modules' runner (scripts/wasi-run.py), in a virtual environment of its own.
install_wasmtime() {
    local python="$UFORM_WASI_BUILD/venv/bin/python3"
    if [ -x "$python" ] && "$python" -c "import importlib.metadata as m, sys; sys.exit(m.version('wasmtime') != '$UFORM_WASMTIME_VERSION')" 2> /dev/null; then
        return 0
    fi
    log "installing wasmtime $UFORM_WASMTIME_VERSION into $UFORM_WASI_BUILD/venv"
    python3 -m venv "$UFORM_WASI_BUILD/venv"
    "$python" -m pip install -q --disable-pip-version-check "wasmtime==$UFORM_WASMTIME_VERSION"
}

install_packages
mkdir -p "$UFORM_WASI_BUILD"
install_wasmtime
[ "${1:-}" = --install ] && exit 0

sysroot="$(scripts/wasi-sysroot.sh "$UFORM_WASI_BUILD/sysroot")"
cmake -S . -B "$UFORM_WASI_BUILD" -G Ninja --log-level=WARNING --toolchain cmake/toolchains/wasi.cmake \
    -DUFORM_WASI_SYSROOT="$sysroot" -DUFORM_WARNINGS_AS_ERRORS=ON
cmake --build "$UFORM_WASI_BUILD" -j2
ctest --test-dir "$UFORM_WASI_BUILD" --output-on-failure -j2
