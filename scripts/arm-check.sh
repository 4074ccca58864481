#!/usr/bin/env bash
# Cross-builds the RAM residency for AArch64 (cmake/toolchains/aarch64-linux-gnu.cmake) and runs the suites that prove
# each Arm CPU class under QEMU's user-mode emulation, one emulated CPU at a time (docs/building.md, "Cross-building
# for AArch64"):
#
#   neoverse-n1                          NEON without SVE: dispatches as arm-neon; arm-sve, arm-sve2, arm-sme refused
#   max,sve-default-vector-length=16     SVE2 at 128 bits: dispatches as arm-sve2; arm-sme refused
#   max,sve-default-vector-length=64     SVE2 at 512 bits: the same, at four times the vector length
#
# On each: c.dispatch (the class `auto` picks, as `describe` reports it, against the one expected of the CPU, and the
# refusal of the ones it cannot run), c.class_goldens (the classes the CPU can run, pinned one at a time, against the
# PyTorch text goldens), c.serial_bits (the serial class's bits against x86-64's), unit.train_trunk_test (the trainer's
# gradients against the PyTorch training goldens) and c.bad_input; on neoverse-n1 also c.numerics (every golden through
# the C API), which exceeds ctest's 300 s on an emulated SVE core (docs/decisions.md, "Arm classes tested under QEMU").
# Every test is built, so the whole tree compiles for AArch64 warning-free. Each part logs its time: on 2 cores shared
# with other builds, 1.5 min to install the packages on a fresh machine, 3 to 4.5 min to build, 1 to 1.5 min per CPU.
#
# Installs what is missing first, so running it again costs only the build and the tests: QEMU, Debian's arm64
# multiarch C/C++ runtime and codec packages, lld, and Gloo's arm64 library unpacked into build/arm-gloo. Needs root
# or sudo for apt-get.
#
#   scripts/arm-check.sh            # everything
#   scripts/arm-check.sh --install  # only the packages
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

UFORM_ARM_BUILD=build/arm
UFORM_ARM_GLOO="$PWD/build/arm-gloo"

# The arm64 libraries the cross build links: the C and C++ runtimes, the codecs (cpp/media/), and what Gloo's library
# needs beside them. Gloo itself installs into /usr/lib, where the host's copy lives, so it is unpacked instead.
UFORM_ARM_PACKAGES=(libc6-dev:arm64 libstdc++-12-dev:arm64 libgcc-12-dev:arm64 libavformat-dev:arm64
    libavcodec-dev:arm64 libswscale-dev:arm64 libswresample-dev:arm64 libavutil-dev:arm64 libkissfft-dev:arm64
    libhiredis0.14:arm64 libibverbs1:arm64)

log() { printf 'arm-check: %s\n' "$*" >&2; }

# shellcheck source=scripts/packages.sh
source scripts/packages.sh

# QEMU, lld and the arm64 packages, through Debian multiarch.
install_packages() {
    local missing=() update=0
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        as_root dpkg --add-architecture arm64
        update=1
    fi
    command -v qemu-aarch64 > /dev/null || command -v qemu-aarch64-static > /dev/null || missing+=(qemu-user)
    installed lld-22 || missing+=(lld-22)
    for package in "${UFORM_ARM_PACKAGES[@]}"; do installed "$package" || missing+=("$package"); done
    [ "${#missing[@]}" -gt 0 ] || [ "$update" -eq 1 ] || return 0
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Waits for another apt-get's lock instead of failing at once.
    local wait_lock=(-o DPkg::Lock::Timeout=900)
    as_root apt-get "${wait_lock[@]}" update -qq
    as_root apt-get "${wait_lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
}

# Gloo's arm64 shared library, unpacked from its Debian package (cmake/toolchains/aarch64-gloo/GlooConfig.cmake).
unpack_gloo() {
    [ -e "$UFORM_ARM_GLOO/usr/lib/libgloo.so.0" ] && return 0
    log "unpacking libgloo0:arm64 into $UFORM_ARM_GLOO"
    local scratch
    scratch="$(mktemp -d)"
    (cd "$scratch" && apt-get download -qq libgloo0:arm64)
    mkdir -p "$UFORM_ARM_GLOO"
    dpkg -x "$scratch"/libgloo0_*_arm64.deb "$UFORM_ARM_GLOO"
    rm -r "$scratch"
}

SECONDS=0
install_packages
unpack_gloo
log "packages ready in ${SECONDS} s"
[ "${1:-}" = --install ] && exit 0

cmake -S . -B "$UFORM_ARM_BUILD" -G Ninja --log-level=WARNING \
    -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake -DUFORM_ARM_GLOO_PREFIX="$UFORM_ARM_GLOO" \
    -DUFORM_WARNINGS_AS_ERRORS=ON -DUFORM_BUILD_BENCH=OFF -DUFORM_HEADER_CHECKS=OFF
SECONDS=0
cmake --build "$UFORM_ARM_BUILD" -j2
log "built in ${SECONDS} s"

# One emulated CPU: its QEMU name, the class `auto` must dispatch as, the classes it must refuse, the classes
# c.class_goldens pins, and the suites besides c.dispatch, c.bad_input, c.class_goldens and c.serial_bits.
run_on() {
    log "QEMU_CPU=$1: expecting $2, refusing $3, pinning $4"
    SECONDS=0
    QEMU_CPU="$1" UFORM_TEST_CPU_CLASS="$2" UFORM_TEST_CPU_CLASS_ABSENT="$3" UFORM_TEST_CPU_CLASSES="$4" \
        ctest --test-dir "$UFORM_ARM_BUILD" --output-on-failure -j2 \
        -R "^(c\.dispatch|c\.bad_input|c\.class_goldens|c\.serial_bits|$5)\$"
    log "QEMU_CPU=$1: suites ran in ${SECONDS} s"
}
run_on neoverse-n1 arm-neon "arm-sve arm-sve2 arm-sme" "serial arm-neon" 'c\.numerics|unit\.train_trunk_test'
run_on max,sve-default-vector-length=16 arm-sve2 arm-sme "arm-neon arm-sve arm-sve2" 'unit\.train_trunk_test'
run_on max,sve-default-vector-length=64 arm-sve2 arm-sme "arm-sve arm-sve2" 'unit\.train_trunk_test'
