#!/usr/bin/env bash
# Lays out a wasm32-wasip1 sysroot from Debian's wasm32-wasi packages (wasi-libc, libc++-22-dev-wasm32,
# libc++abi-22-dev-wasm32) and prints its path. Clang 22 looks for `include/wasm32-wasip1` and `lib/wasm32-wasip1`
# under the sysroot; Debian installs them as `wasm32-wasi`, so the sysroot is two symbolic links.
#
#   scripts/wasi-sysroot.sh [FOLDER]     # default build/wasi/sysroot; prints the folder
#
# A real WASI SDK needs none of this: cmake/toolchains/wasi.cmake takes its sysroot from WASI_SDK_PATH.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="${1:-build/wasi/sysroot}"

for folder in /usr/include/wasm32-wasi /usr/lib/wasm32-wasi; do
    if [ ! -d "$folder" ]; then
        echo "wasi-sysroot: $folder is missing: install wasi-libc, libc++-22-dev-wasm32 and libc++abi-22-dev-wasm32" >&2
        exit 1
    fi
done
mkdir -p "$root/include" "$root/lib"
ln -sfn /usr/include/wasm32-wasi "$root/include/wasm32-wasip1"
ln -sfn /usr/lib/wasm32-wasi "$root/lib/wasm32-wasip1"
cd "$root" && pwd
