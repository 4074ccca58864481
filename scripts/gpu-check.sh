#!/usr/bin/env bash
# The CUDA residency on a lent GPU machine (an H200: driver 580, CUDA 13.0, PyTorch cu130; no network), well within
# 8 minutes there: tests/unit/vram_test.cpp (the VRAM model against the PyTorch goldens and the RAM residency with
# docs/model.md's bounds, E4M3 weights, image pixels, narrow scalars, VRAM arenas and device pointers, deferred calls and
# contention, calls without an executor, a steady loop taking no device memory), the same under compute-sanitizer's
# memcheck where it is installed, then the benchmark beside PyTorch CUDA (BF16, `torch.compile` when it works) on the
# small geometry, 256 texts x 256 bytes: tokens per second, the ratio, and the share of 790 TFLOP/s (PyTorch's BF16
# matrix rate measured there).
#
# That machine lacks the RAM residency's system libraries (FFmpeg, Gloo, kissfft) and cannot install any, so the
# programs are built here and carried:
#
#   scripts/gpu-check.sh --pack   # here: builds build/gpu (-DUFORM_CUDA=ON, Release) and writes .gpu/pack.tar.xz:
#                                 # uform_unit_vram_test, uform_vram_bench and the shared libraries they load (~50 MB)
#   scripts/gpu-check.sh          # there, through the device tool with carry [".gpu"], from the repository root
#
# `scripts/gpu-check.sh --build` builds on the machine it runs on instead of unpacking (where those libraries exist).
# `scripts/gpu-check.sh --train` (after `--pack`, or with `--build`) checks the CUDA trainer's pieces instead:
# tests/unit/vram_train_test.cpp (the device update against the RAM kernels bit for bit, cuBLASLt's forward and backward
# products against a double reference), tests/unit/vram_train_step_test.cpp (the whole GPU step against the RAM one on
# the golden batch: terms 1e-3, gradients' cosine 0.999 and error 1e-2, 20 steps' weights 5e-3, no device allocation
# after the first step, save -> load on the CPU -> embeddings' cosine 0.9999, resume both ways), both under memcheck
# (the step test over 2 steps there), then the training benchmark beside PyTorch CUDA on the small geometry, 256 texts x
# 256 bytes (uform_train_bench --vram against tools/bench/train_worker.py --device cuda --bf16 --compile: the same
# step, InfoNCE over bags of two, AdamW): tokens per second, the ratio, and the share of the GPU's BF16 rate; and
# tests/unit/vram_mesh_test.cpp (two processes on the one GPU as a VRAM mesh, staged through host memory over Gloo,
# against one process within the RAM mesh test's bounds; a one-rank mesh over NCCL, its sums on a stream of their own
# overlapping the backward, against no mesh). The pack carries
# libnccl.so.2, which the library loads at a VRAM mesh's bootstrap.
# cuBLASLt is not carried (500 MB): the programs load the libcublasLt.so.13 of the machine's PyTorch (its
# nvidia-cublas wheel) or of its CUDA toolkit. Exits nonzero when a check fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
log() { printf 'gpu-check: %s\n' "$*" >&2; }

build() {
    local dir="$1"
    shift
    cmake -S . -B "$dir" -G Ninja -DUFORM_STUB=OFF -DUFORM_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DUFORM_BUILD_BENCH=ON \
        -DUFORM_BUILD_TESTS=ON "$@" > "$dir.configure.log"
    cmake --build "$dir" --target uform_unit_vram_test uform_unit_vram_train_test uform_unit_vram_train_step_test \
        uform_unit_vram_mesh_test uform_vram_bench uform_train_bench
}

pack=0 own_build=0 train=0
for argument in "$@"; do
    case "$argument" in
        --pack) pack=1 ;;
        --build) own_build=1 ;;
        --train) train=1 ;;
        *)
            log "unknown argument $argument (--pack, --build, --train)"
            exit 2
            ;;
    esac
done

if [ "$pack" = 1 ]; then
    mkdir -p build
    build build/gpu
    staging="$(mktemp -d)"
    mkdir -p "$staging/bin" "$staging/lib"
    cp build/gpu/tests/uform_unit_vram_test build/gpu/tests/uform_unit_vram_train_test \
        build/gpu/tests/uform_unit_vram_train_step_test build/gpu/tests/uform_unit_vram_mesh_test \
        build/gpu/bench/uform_vram_bench build/gpu/bench/uform_train_bench "$staging/bin/"
    # Every shared library they load but glibc's and the C++ runtime's, which the machine has newer (its Python 3.12.3
    # is Ubuntu 24.04's: glibc 2.39, GCC 13's libstdc++); carrying them would also reach compute-sanitizer.
    for program in "$staging"/bin/*; do
        ldd "$program" | awk '$3 ~ /^\// {print $1, $3}'
    done | sort -u | while read -r name path; do
        case "$name" in
            libc.so* | libm.so* | libstdc++.so* | libgcc_s.so* | ld-linux* | libpthread.so* | libdl.so* | librt.so*) ;;
            *) cp -L "$path" "$staging/lib/$name" ;;
        esac
    done
    # NCCL, which the library loads with dlopen (so ldd does not list it): the wheel's beside the toolkit.
    nccl="$(find "$HOME/.cache/uform" -name libnccl.so.2 2> /dev/null | head -n 1)"
    if [ -n "$nccl" ]; then cp -L "$nccl" "$staging/lib/"; else log "no libnccl.so.2 to carry: the NCCL path will not run"; fi
    mkdir -p .gpu
    exclude="$(git rev-parse --git-path info/exclude)"
    grep -qx '/.gpu/' "$exclude" 2> /dev/null || echo '/.gpu/' >> "$exclude"
    tar -C "$staging" -cf - . | xz -T2 -6 > .gpu/pack.tar.xz
    rm -rf "$staging"
    log "packed $(du -h .gpu/pack.tar.xz | cut -f1) into .gpu/pack.tar.xz; run scripts/gpu-check.sh there with carry [\".gpu\"]"
    exit 0
fi

start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || log "nvidia-smi answered nothing"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
libraries="" # the folders our two programs load libraries from; never PyTorch's (the carried ones could shadow its own)
if [ "$own_build" = 1 ]; then
    build "$work/build"
    mkdir -p "$work/bin"
    cp "$work/build/tests/uform_unit_vram_test" "$work/build/tests/uform_unit_vram_train_test" \
        "$work/build/tests/uform_unit_vram_train_step_test" "$work/build/tests/uform_unit_vram_mesh_test" \
        "$work/build/bench/uform_vram_bench" "$work/build/bench/uform_train_bench" "$work/bin/"
elif [ -f .gpu/pack.tar.xz ]; then
    tar -C "$work" -xJf .gpu/pack.tar.xz
    libraries="$work/lib"
else
    log "no .gpu/pack.tar.xz: run scripts/gpu-check.sh --pack where the build's libraries are, and carry .gpu"
    exit 2
fi

# cuBLASLt: the machine's own, from PyTorch's nvidia-cublas wheel or a toolkit.
cublas="$(python3 -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "lib"))' 2> /dev/null ||
    true)"
for dir in "$cublas" /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    if [ -n "$dir" ] && [ -f "$dir/libcublasLt.so.13" ]; then
        libraries="${libraries:+$libraries:}$dir"
        log "cuBLASLt from $dir"
        break
    fi
done
# Runs one of our programs with the carried libraries and cuBLASLt's folder on the loader's path.
ours() { LD_LIBRARY_PATH="$libraries${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }

failed=0
# Runs `$1` (a test in $work/bin), then the same under compute-sanitizer's memcheck where it is installed.
checked() {
    if ! UFORM_TEST_DATA="$root/tests/data" ours "$work/bin/$1"; then
        log "FAILED: $1"
        failed=1
    fi
    command -v compute-sanitizer > /dev/null || return 0
    log "$1 under compute-sanitizer (memcheck)"
    if ! UFORM_TEST_DATA="$root/tests/data" ours timeout 180 compute-sanitizer --tool memcheck --error-exitcode 9 \
        "$work/bin/$1" > "$work/memcheck.log" 2>&1; then
        tail -n 40 "$work/memcheck.log"
        log "FAILED: compute-sanitizer memcheck of $1 (or its 180 s limit)"
        failed=1
    else
        tail -n 3 "$work/memcheck.log"
    fi
}
# The training step beside PyTorch CUDA's on the small geometry: tokens per second, the ratio, the share of the GPU's
# BF16 rate (the trainer's product FLOPs over 790 TFLOP/s), and the trainer's first and last loss.
train_benchmark() {
    log "the training benchmark: small geometry, 256 texts x 256 bytes"
    python3 tools/checkpoint/write_checkpoint.py --geometry small --out "$work/small.safetensors" > /dev/null
    local mine theirs
    if ! mine="$(ours "$work/bin/uform_train_bench" --vram --json --model "$work/small.safetensors" --texts 256 \
        --bytes 256 --steps 10 | grep '"kind": "train"')"; then
        log "FAILED: uform_train_bench --vram"
        failed=1
        return 0
    fi
    theirs="$(PYTHONUNBUFFERED=1 timeout 300 python3 tools/bench/train_worker.py step --checkpoint \
        "$work/small.safetensors" --texts 256 --bytes 256 --steps 10 --bf16 --device cuda --compile | tail -n 1)"
    python3 - "$mine" "$theirs" << 'PYTHON'
import json, sys
ours, theirs = (json.loads(text) for text in sys.argv[1:3])
rate = ours["tokens_per_s"] / theirs["tokens_per_s"]
mfu = ours["product_flops"] / ours["seconds_per_step"] / 790e12 * 100
print(f"uform CUDA trainer: {ours['tokens_per_s']:,.0f} tokens/s ({ours['seconds_per_step'] * 1e3:.2f} ms a step), "
      f"products at {mfu:.1f}% of 790 TFLOP/s, {rate:.2f}x PyTorch; loss {ours['loss_first']:.4f} -> "
      f"{ours['loss_last']:.4f}")
print(f"PyTorch CUDA BF16 ({'torch.compile' if theirs.get('compiled') else 'eager'}): {theirs['tokens_per_s']:,.0f} "
      f"tokens/s ({theirs['seconds'] * 1e3:.2f} ms a step)")
print("targets of the GPU training step: >= 1.3x PyTorch, >= 40% of the GPU's BF16 rate")
PYTHON
}

if [ "$train" = 1 ]; then
    log "the CUDA trainer's pieces (the device update, the products forward and backward)"
    checked uform_unit_vram_train_test
    log "the CUDA trainer's step against the RAM trainer's: 20 steps"
    if ! UFORM_TEST_DATA="$root/tests/data" ours "$work/bin/uform_unit_vram_train_step_test"; then
        log "FAILED: uform_unit_vram_train_step_test"
        failed=1
    fi
    log "the same over 2 steps (under memcheck where it is installed)"
    UFORM_TRAIN_CHECK_STEPS=2 checked uform_unit_vram_train_step_test
    log "the VRAM trainer over a mesh: 2 processes on one GPU (staged over Gloo) vs 1; 1 rank over NCCL (overlapped sums)"
    if ! UFORM_TEST_DATA="$root/tests/data" ours timeout 300 "$work/bin/uform_unit_vram_mesh_test"; then
        log "FAILED: uform_unit_vram_mesh_test"
        failed=1
    fi
    train_benchmark
    log "done in $((SECONDS - start)) s"
    exit "$failed"
fi
log "the VRAM test (numerics, arenas, deferred calls, steady loop)"
checked uform_unit_vram_test

log "the benchmark: small geometry, 256 texts x 256 bytes"
python3 tools/checkpoint/write_checkpoint.py --geometry small --out "$work/small.safetensors" > /dev/null
ours_bf16="$(ours "$work/bin/uform_vram_bench" --checkpoint "$work/small.safetensors" --texts 256 --bytes 256 --repeats 20)"
ours_e4m3="$(ours "$work/bin/uform_vram_bench" --checkpoint "$work/small.safetensors" --texts 256 --bytes 256 --repeats 20 \
    --e4m3)"
theirs="$(PYTHONUNBUFFERED=1 timeout 300 python3 tools/bench/text_worker.py torch --checkpoint "$work/small.safetensors" \
    --texts 256 --bytes 256 --repeats 20 --bf16 --device cuda --compile | tail -n 1)"
python3 - "$ours_bf16" "$ours_e4m3" "$theirs" << 'PYTHON'
import json, sys
ours, e4m3, theirs = (json.loads(text) for text in sys.argv[1:4])
tokens = 256 * 256
torch_rate = tokens / theirs["seconds"]
for name, run in (("uform CUDA BF16", ours), ("uform CUDA E4M3", e4m3)):
    print(f"{name}: {run['tokens_per_second']:,.0f} tokens/s ({run['seconds'] * 1e3:.3f} ms a call), "
          f"{run['tflops']:.1f} TFLOP/s = {run['tflops'] / 790 * 100:.1f}% of 790, "
          f"{run['tokens_per_second'] / torch_rate:.2f}x PyTorch; device bytes taken in the timed loop: "
          f"{run['device_bytes_taken']}")
print(f"PyTorch CUDA BF16 ({'torch.compile' if theirs.get('compiled') else 'eager'}): {torch_rate:,.0f} tokens/s "
      f"({theirs['seconds'] * 1e3:.3f} ms a call)")
print("targets of the GPU text forward: >= 1.5x PyTorch, >= 40% of the GPU's BF16 rate")
PYTHON
log "done in $((SECONDS - start)) s"
exit "$failed"
