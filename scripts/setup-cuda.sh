#!/usr/bin/env bash
# Installs a CUDA 13.0 toolchain from NVIDIA's PyPI wheels into a virtual environment under a cache folder, for
# machines without a system CUDA toolkit (CI, the development machines): nvcc with its front-ends (crt, NVVM), the
# runtime (headers, libcudart_static.a), CCCL's headers, cuBLAS/cuBLASLt, and NCCL (its header and libnccl.so.2, which
# a VRAM mesh loads at its bootstrap). The versions are pinned to the 13.0 releases (NCCL's CUDA 13 wheel), so that
# what they build runs under a 580-series driver (CUDA 13.0). Prints the toolkit's root, the folder
# holding bin/nvcc, include/ and lib/, which CMake takes as UFORM_CUDA_ROOT (cmake/UformCuda.cmake also finds it
# there by itself). Runs again in a second once installed.
#
#   scripts/setup-cuda.sh                       # or: scripts/setup.sh --cuda
#   cmake -S . -B build/cuda -G Ninja -DUFORM_CUDA=ON -DUFORM_CUDA_ROOT="$(scripts/setup-cuda.sh)"
#
# UFORM_CUDA_CACHE overrides the cache folder (default: ${XDG_CACHE_HOME:-$HOME/.cache}/uform).
set -euo pipefail

UFORM_CUDA_WHEELS=(
    nvidia-cuda-nvcc==13.0.88
    nvidia-cuda-crt==13.0.88
    nvidia-nvvm==13.0.88
    nvidia-cuda-runtime==13.0.96
    nvidia-cuda-cccl==13.0.85
    nvidia-cublas==13.0.2.14
    nvidia-nccl-cu13==2.32.6
)

log() { printf 'setup-cuda: %s\n' "$*" >&2; }

cache="${UFORM_CUDA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/uform}"
venv="$cache/cuda-13.0"
stamp="$venv/uform-wheels.txt"

toolkit_root() {
    local root
    root="$(find "$venv/lib" -maxdepth 4 -type d -path '*/site-packages/nvidia/cu13' 2> /dev/null | head -n 1)"
    [ -n "$root" ] && [ -x "$root/bin/nvcc" ] && printf '%s\n' "$root"
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${UFORM_CUDA_WHEELS[*]}" ] && root="$(toolkit_root)"; then
    printf '%s\n' "$root"
    exit 0
fi

if ! python3 -c 'import ensurepip, venv' 2> /dev/null; then
    log "installing python3-venv"
    if [ "$(id -u)" -eq 0 ]; then as_root=(); else as_root=(sudo); fi
    "${as_root[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends python3-venv >&2
fi

log "installing ${UFORM_CUDA_WHEELS[*]} into $venv"
mkdir -p "$cache"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${UFORM_CUDA_WHEELS[@]}" >&2
root="$(toolkit_root)" || { log "the wheels hold no nvidia/cu13/bin/nvcc under $venv"; exit 1; }
printf '%s\n' "${UFORM_CUDA_WHEELS[*]}" > "$stamp"
log "ready: $("$root/bin/nvcc" --version | tail -n 1)"
printf '%s\n' "$root"
