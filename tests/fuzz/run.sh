#!/usr/bin/env bash
# Builds a libFuzzer target with ASan and UBSan by hand and runs it: tests/fuzz/run.sh TARGET SECONDS
#   TARGET   checkpoint (checkpoint_fuzz.cpp), image, video or audio (media_fuzz.cpp's entry points), or abi or
#            reentry (abi_fuzz.cpp, reentry_fuzz.cpp: the C API over the stub backend)
#   SECONDS  how long to fuzz (default 60)
# Environment: CXX (default clang++-22), BUILD_DIR (default build/fuzz), JOBS (default 1), FUZZ_ARGS (extra).
# New inputs go to $BUILD_DIR/corpus-TARGET; the checked-in seeds in tests/fuzz/corpus/TARGET are only read.
set -euo pipefail
cd "$(dirname "$0")/../.."

target=${1:?usage: tests/fuzz/run.sh TARGET [SECONDS]}
seconds=${2:-60}
cxx=${CXX:-clang++-22}
build=${BUILD_DIR:-build/fuzz}
jobs=${JOBS:-1}

libraries=()
options=()
case "$target" in
checkpoint) sources=(common/checkpoint.cpp common/json.cpp common/regular_file.cpp "tests/fuzz/${target}_fuzz.cpp") ;;
image | video | audio)
    # One source for the three media targets, built per entry point, over the system's FFmpeg.
    sources=(cpp/media/*.cpp tests/fuzz/media_fuzz.cpp "-DUFORM_FUZZ_${target^^}")
    read -ra libraries < <(pkg-config --cflags --libs libavformat libavcodec libswscale libswresample libavutil kissfft-float)
    ;;
abi | reentry)
    # The C API over the stub, as the UFORM_STUB=ON build compiles it: c/ with the standard library's workers
    # (c/workers_forkunion.cpp compiles to nothing there), common/, and stub/.
    sources=(common/*.cpp)
    for source in c/*.cpp; do [[ "$source" == c/workers_forkunion.cpp ]] || sources+=("$source"); done
    # The version, as CMake configures it from Cargo.toml's.
    version=$(sed -nE 's/^version = "([^"]+)"$/\1/p' Cargo.toml | head -n 1)
    sources+=(stub/*.cpp "tests/fuzz/${target}_fuzz.cpp" -DUFORM_WITH_STUB=1 -DUFORM_WITH_CUDA=0 -DUFORM_WITH_ROCM=0
        "-DUFORM_LIBRARY_VERSION=\"$version\"")
    libraries=(-pthread)
    options=(-timeout=20) # a handler that waits for itself hangs: report it within 20 s
    ;;
*) echo "unknown fuzz target: $target" >&2; exit 2 ;;
esac

mkdir -p "$build/corpus-$target" "$build/artifacts-$target"
binary="$build/${target}_fuzz"
"$cxx" -std=c++23 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I. -Iinclude "${sources[@]}" "${libraries[@]}" -o "$binary"

dict=()
[[ -f "tests/fuzz/$target.dict" ]] && dict=(-dict="tests/fuzz/$target.dict")
parallel=()
((jobs > 1)) && parallel=(-jobs="$jobs" -workers="$jobs") # libFuzzer then logs to fuzz-N.log
exec "$binary" "${dict[@]}" "${parallel[@]}" "${options[@]}" -max_total_time="$seconds" -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts-$target/" ${FUZZ_ARGS:-} \
    "$build/corpus-$target" "tests/fuzz/corpus/$target"
