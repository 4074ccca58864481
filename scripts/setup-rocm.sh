#!/usr/bin/env bash
# Installs what the AMD residency (-DUFORM_ROCM=ON) compiles with on a Debian machine without ROCm: the HIP runtime's
# headers and library and the HSA runtime's from Debian's packages, and the AMDGPU device libraries' bitcode for
# gfx90a and gfx942. Debian bookworm's device libraries (ROCm 5.2) predate gfx942, so the bitcode comes from a newer
# release's `rocm-device-libs-17` package, downloaded by name with apt into a cache folder and unpacked there, not
# installed (its own apt lists live in that folder, so the system's sources stay as they are). Clang 22 then compiles
# the HIP sources for both targets (cmake/UformRocm.cmake). Prints the folder holding the bitcode (amdgcn/bitcode/),
# which CMake takes as UFORM_ROCM_DEVICE_LIBS (cmake/UformRocm.cmake also finds it there by itself). Runs again in a
# second once installed.
#
#   cmake -S . -B build/rocm -G Ninja -DUFORM_ROCM=ON -DUFORM_ROCM_DEVICE_LIBS="$(scripts/setup-rocm.sh)"
#
# UFORM_ROCM_CACHE overrides the cache folder (default: ${XDG_CACHE_HOME:-$HOME/.cache}/uform).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# HIP's headers and libamdhip64, the HSA runtime's headers (which HIP's include), from the system's release, and
# Clang 22's tools, whose clang-offload-bundler joins the host and device objects of a HIP compile.
UFORM_ROCM_PACKAGES=(libamdhip64-dev libhsa-runtime-dev clang-tools-22)
# The device libraries with gfx942's bitcode: the package, and the release whose archive carries it.
UFORM_ROCM_BITCODE_PACKAGE=rocm-device-libs-17
UFORM_ROCM_BITCODE_SUITE=trixie

log() { printf 'setup-rocm: %s\n' "$*" >&2; }

# shellcheck source=scripts/packages.sh
source scripts/packages.sh

cache="${UFORM_ROCM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/uform}/rocm-bitcode"
# The folder holding amdgcn/bitcode/*.bc once unpacked, or nothing.
bitcode_root() {
    local found
    found="$(find "$cache/root" -type f -name 'oclc_isa_version_942.bc' 2> /dev/null | head -n 1)"
    [ -n "$found" ] && dirname "$(dirname "$(dirname "$found")")"
}

missing_packages=()
for package in "${UFORM_ROCM_PACKAGES[@]}"; do
    installed "$package" || missing_packages+=("$package")
done
if [ "${#missing_packages[@]}" -gt 0 ]; then
    log "installing ${missing_packages[*]}"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq >&2
    as_root apt-get install -y -qq --no-install-recommends "${missing_packages[@]}" >&2
fi

if root="$(bitcode_root)"; then
    printf '%s\n' "$root"
    exit 0
fi

# A private apt state: the newer release's index only, under the cache folder.
log "downloading $UFORM_ROCM_BITCODE_PACKAGE from Debian $UFORM_ROCM_BITCODE_SUITE into $cache"
mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial" "$cache/deb"
sources="$cache/apt/sources.list"
printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s main\n' \
    "$UFORM_ROCM_BITCODE_SUITE" > "$sources"
apt_private=(-o "Dir::Etc::SourceList=$sources" -o "Dir::Etc::SourceParts=-" -o "Dir::State::Lists=$cache/apt/lists"
    -o "Dir::Cache=$cache/apt/cache" -o "Dir::State::Status=/dev/null" -o "APT::Sandbox::User=root")
apt-get "${apt_private[@]}" update -qq >&2
(cd "$cache/deb" && apt-get "${apt_private[@]}" download "$UFORM_ROCM_BITCODE_PACKAGE" >&2)
rm -rf "$cache/root"
for deb in "$cache"/deb/*.deb; do
    dpkg-deb -x "$deb" "$cache/root"
done
rm -rf "$cache/apt"
if ! root="$(bitcode_root)"; then
    log "$UFORM_ROCM_BITCODE_PACKAGE holds no gfx942 bitcode (oclc_isa_version_942.bc)"
    exit 1
fi
log "ready: HIP $(dpkg-query -W -f='${Version}' libamdhip64-dev), device libraries in $root"
printf '%s\n' "$root"
