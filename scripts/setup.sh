#!/usr/bin/env bash
# Installs what building and testing UForm needs on a fresh Debian machine, and only what is missing, so
# running it again costs a second: Clang 22 with its sanitizer runtimes and libclang (for the Rust generator
# check), clang-format, Ninja, pkg-config,
# the codec headers, Gloo (the RAM mesh), the data of the training run (tools/data/prepare.py: WordNet,
# Fashion-MNIST, espeak-ng, sox), CMake >= 3.27 (from PyPI when the system's is older), and the sources of the crates
# Cargo.lock names (NumKong, StringZilla, ForkUnion), which the standalone CMake build compiles.
#
#   scripts/setup.sh            # then: cmake -S . -B build -G Ninja && cmake --build build
#   scripts/setup.sh --cuda     # also NVIDIA's CUDA 13.0 wheels (scripts/setup-cuda.sh), for -DUFORM_CUDA=ON
#
# Used by .ci/run and by the README's commands. Needs root or sudo for apt-get.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The toolchain, from Debian's packages.
UFORM_TOOL_PACKAGES=(clang-22 clang-format-22 libclang-rt-22-dev libclang1-22 ninja-build pkg-config)

# Codec headers: the Debian -dev packages of FFmpeg, whose decoders cpp/media/ uses for every image, video and
# audio format, plus pkg-config, through which CMake finds them.
UFORM_CODEC_PACKAGES=(pkg-config libavformat-dev libavcodec-dev libswscale-dev libswresample-dev libavutil-dev libkissfft-dev)

# The RAM residency's mesh: Gloo (its TCP transport and file rendezvous), which CMake finds as the package `Gloo`.
UFORM_MESH_PACKAGES=(libgloo-dev)

# The training run's data (tools/data/prepare.py, docs/data.md): WordNet 3.0's database, Fashion-MNIST's IDX files,
# espeak-ng to speak WordNet's lemmas and sox to resample the clips to 16 kHz; python3 runs the tool.
UFORM_DATA_PACKAGES=(python3 wordnet-base dataset-fashion-mnist espeak-ng sox)

UFORM_CMAKE_MINIMUM=3.27

log() { printf 'setup: %s\n' "$*" >&2; }

# shellcheck source=scripts/packages.sh
source scripts/packages.sh

missing_packages=()
for package in "${UFORM_TOOL_PACKAGES[@]}" "${UFORM_CODEC_PACKAGES[@]}" "${UFORM_MESH_PACKAGES[@]}" \
    "${UFORM_DATA_PACKAGES[@]}"; do
    installed "$package" || missing_packages+=("$package")
done
if [ "${#missing_packages[@]}" -gt 0 ]; then
    log "installing ${missing_packages[*]}"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends "${missing_packages[@]}"
fi

# CMake: PyPI's wheel when the one on PATH is missing or older than the minimum.
cmake_is_recent() {
    command -v cmake > /dev/null || return 1
    local version
    version="$(cmake --version | head -n 1 | sed -E 's/[^0-9]*([0-9]+\.[0-9]+(\.[0-9]+)?).*/\1/')"
    [ "$(printf '%s\n%s\n' "$UFORM_CMAKE_MINIMUM" "$version" | sort -V | head -n 1)" = "$UFORM_CMAKE_MINIMUM" ]
}
if ! cmake_is_recent; then
    log "installing CMake >= $UFORM_CMAKE_MINIMUM from PyPI"
    python3 -m pip install --quiet 'cmake>=3.27,<4.5'
    hash -r
    cmake_is_recent || { log "cmake on PATH is still older than $UFORM_CMAKE_MINIMUM: $(command -v cmake)"; exit 1; }
fi

# The crates' sources: `cargo fetch` unpacks every package Cargo.lock names, including the ones Cargo.toml
# lists under cfg(any()) that `cargo build` alone never downloads. CMake then finds them offline.
if command -v cargo > /dev/null; then
    cargo fetch --locked --quiet
else
    log "cargo is not on PATH: the RAM build will need -DUFORM_<CRATE>_SOURCE_DIR= (see cmake/UformCrates.cmake)"
fi

# The CUDA toolchain, only when asked for: NVIDIA's wheels in a virtual environment (scripts/setup-cuda.sh).
if [ "${1:-}" = "--cuda" ]; then
    log "CUDA toolkit: $(scripts/setup-cuda.sh)"
fi

log "ready: $(clang-22 --version | head -n 1); $(cmake --version | head -n 1); ninja $(ninja --version)"
