#!/usr/bin/env bash
# Checks the crate `cargo publish` would upload, so that `cargo add uform` builds from the published sources:
#   1. every tracked file CMake and Cargo read (include/, c/, common/, stub/, cpp/, cuda/, rocm/, cmake/, the root
#      CMakeLists.txt, build.rs, rust/) is in the package, and nothing else beyond the manifest, the lock and
#      the README;
#   2. `cargo package --features stub` builds the packaged crate from its own tarball, with the stub (fast);
#   3. with UFORM_PACKAGE_RAM=1, the tarball's default build, the RAM residency, builds too (minutes: CMake
#      compiles NumKong, StringZilla and ForkUnion from the crates Cargo.lock names).
#
#   scripts/check-package.sh                      # what CI runs
#   UFORM_PACKAGE_RAM=1 scripts/check-package.sh  # before a release
#
# A dirty working tree is packaged as it stands (--allow-dirty); CI's clean checkout needs no such flag.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CC="${CC:-clang-22}" CXX="${CXX:-clang++-22}"

log() { printf 'check-package: %s\n' "$*" >&2; }

dirty=()
if [ -n "$(git status --porcelain 2> /dev/null)" ]; then
    dirty=(--allow-dirty)
    log "the working tree is dirty: packaging it as it stands"
fi

# 1. The file list.
listed="$(cargo package --list --quiet "${dirty[@]}")"
shipped_roots='^(include|c|common|stub|cpp|cuda|rocm|cmake|rust)/|^(CMakeLists\.txt|build\.rs|Cargo\.toml|Cargo\.toml\.orig|Cargo\.lock|README\.md|LICENSE|\.cargo_vcs_info\.json)$'
status=0
while IFS= read -r file; do
    if ! grep -qxF -- "$file" <<< "$listed"; then
        log "$file is not shipped: add it to the include list of Cargo.toml"
        status=1
    fi
done < <(git ls-files -- include c common stub cpp cuda rocm cmake CMakeLists.txt build.rs rust)
while IFS= read -r file; do
    if ! grep -qE -- "$shipped_roots" <<< "$file"; then
        log "$file is shipped but no build reads it: anchor the include pattern that matches it (\"/name\")"
        status=1
    fi
done <<< "$listed"
[ "$status" -eq 0 ] || exit "$status"
log "$(wc -l <<< "$listed") files listed, every source CMake reads among them"

# 2. The packaged crate builds from its tarball, with the stub.
cargo package --quiet --features stub "${dirty[@]}"
log "the packaged crate builds from its tarball with the stub"

# 3. The packaged crate's default build, the RAM residency.
if [ "${UFORM_PACKAGE_RAM:-0}" = 1 ]; then
    version="$(cargo metadata --format-version 1 --no-deps --offline |
        python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "uform"))')"
    unpacked="target/package-ram"
    rm -rf "$unpacked"
    mkdir -p "$unpacked"
    tar -xzf "target/package/uform-$version.crate" -C "$unpacked"
    (cd "$unpacked/uform-$version" && CARGO_TARGET_DIR="$PWD/../target" cargo build --locked --quiet)
    log "the packaged crate builds from its tarball with the RAM residency"
fi
