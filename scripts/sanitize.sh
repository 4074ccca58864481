#!/usr/bin/env bash
# Runs the Rust suites against the stub with the C and C++ side built under a Clang sanitizer, since Miri
# cannot follow calls into C: build.rs builds libuform_static.a with -fsanitize=<list> (UFORM_SANITIZE) and
# links Clang's shared runtimes; the test binaries run with the runtime preloaded, as it must come first.
#
#   scripts/sanitize.sh                      # AddressSanitizer
#   scripts/sanitize.sh undefined            # UndefinedBehaviorSanitizer
#   scripts/sanitize.sh address,undefined    # both
#
# The trybuild suite (tests/compile.rs) runs rustc and is left out. Leak checking is off: the tests leak
# their `'static` handlers on purpose (Box::leak), and one leaks a whole deferred call to prove it safe.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
sanitizers="${1:-address}"
export CC="${CC:-clang-22}" CXX="${CXX:-clang++-22}"
export UFORM_SANITIZE="$sanitizers"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/sanitize-${sanitizers//,/-}}"

runtime_dir="$("$CXX" -print-runtime-dir)"
arch="$(uname -m)"
preload=()
for sanitizer in ${sanitizers//,/ }; do
    case "$sanitizer" in
        address) runtime=asan ;;
        undefined) runtime=ubsan_standalone ;;
        *) echo "sanitize: unknown sanitizer $sanitizer" >&2; exit 2 ;;
    esac
    for candidate in "$runtime_dir/libclang_rt.$runtime-$arch.so" "$runtime_dir/libclang_rt.$runtime.so"; do
        if [ -f "$candidate" ]; then
            preload+=("$candidate")
            break
        fi
    done
done
# AddressSanitizer's runtime includes UBSan's, and only one of them may be preloaded.
if [[ ",$sanitizers," == *,address,* ]]; then
    preload=("${preload[0]}")
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
runner="env LD_PRELOAD=${preload[*]}"
target="$(rustc -vV | sed -n 's/^host: //p')"
runner_variable="CARGO_TARGET_$(tr '[:lower:]-' '[:upper:]_' <<< "$target")_RUNNER"
export "$runner_variable=$runner"

suites=()
for suite in tests/*.rs; do
    name="$(basename "$suite" .rs)"
    # compile runs rustc; library_allocations defines malloc, which the sanitizer runtime must own.
    [ "$name" = compile ] || [ "$name" = library_allocations ] || suites+=(--test "$name")
done
cargo test --features stub --lib "${suites[@]}"
