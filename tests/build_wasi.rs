//! build.rs's WASI logic (rust/build_script/wasi.rs): which inputs a `wasm32-wasip1` build refuses, with what reason,
//! and the toolchain it hands CMake. Rust cannot target WASI on this project's CI machine, so the build itself is
//! exercised through CMake (scripts/wasi-check.sh), not through Cargo.

#[path = "../rust/build_script/wasi.rs"]
mod wasi;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const MANIFEST: &str = "/src/uform";
const SDK: &str = "/opt/wasi-sdk";

/// An SDK holding every file the toolchain needs.
fn complete(path: &Path) -> bool {
    path.starts_with(SDK)
}

fn plan_with(
    features: (bool, bool, bool),
    sdk: Option<&str>,
    target_features: &str,
    exists: impl Fn(&Path) -> bool,
) -> Result<wasi::Plan, String> {
    wasi::plan(
        Path::new(MANIFEST),
        features,
        sdk.map(OsStr::new),
        target_features,
        exists,
    )
}

#[test]
fn a_complete_sdk_with_simd128_gets_the_repository_toolchain() {
    let plan = plan_with(
        (false, false, false),
        Some(SDK),
        "bulk-memory,simd128,sign-ext",
        complete,
    )
    .unwrap();
    assert_eq!(
        plan.toolchain,
        PathBuf::from(MANIFEST).join("cmake/toolchains/wasi.cmake")
    );
    assert_eq!(plan.sdk, PathBuf::from(SDK));
}

#[test]
fn the_toolchain_file_exists_in_the_repository() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(manifest.join(wasi::TOOLCHAIN).is_file());
}

#[test]
fn without_simd128_the_build_is_refused() {
    for features in ["", "bulk-memory,sign-ext", "relaxed-simd128", "simd"] {
        let reason = plan_with((false, false, false), Some(SDK), features, complete).unwrap_err();
        assert!(
            reason.contains("target-feature=+simd128"),
            "{features}: {reason}"
        );
    }
}

#[test]
fn without_an_sdk_the_build_is_refused() {
    for sdk in [None, Some("")] {
        let reason = plan_with((false, false, false), sdk, "simd128", complete).unwrap_err();
        assert!(reason.contains("set WASI_SDK_PATH"), "{reason}");
    }
}

#[test]
fn an_sdk_lacking_a_file_is_named() {
    for missing in wasi::SDK_FILES {
        let lacking = Path::new(SDK).join(missing);
        let reason = plan_with((false, false, false), Some(SDK), "simd128", |path| {
            complete(path) && path != lacking
        })
        .unwrap_err();
        assert!(reason.contains(&format!("lacks `{missing}`")), "{reason}");
        assert!(reason.contains(SDK), "{reason}");
    }
}

#[test]
fn the_stub_and_the_gpu_residencies_are_refused() {
    for features in [
        (true, false, false),
        (false, true, false),
        (false, false, true),
    ] {
        let reason = plan_with(features, Some(SDK), "simd128", complete).unwrap_err();
        assert!(
            reason.contains("RAM residency alone"),
            "{features:?}: {reason}"
        );
    }
}

#[test]
fn the_link_agrees_with_the_cmake_toolchain() {
    // What the C tests' modules link beyond the C++ runtime is what a Rust program linking the archive needs too.
    let toolchain =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(wasi::TOOLCHAIN))
            .unwrap();
    let runtime = ["c++", "c++abi"];
    for library in wasi::LINK_LIBRARIES {
        assert!(
            runtime.contains(library) || toolchain.contains(&format!("-l{library}")),
            "{library} is linked by build.rs but not by {}",
            wasi::TOOLCHAIN
        );
    }
    assert!(runtime
        .iter()
        .all(|library| wasi::LINK_LIBRARIES.contains(library)));
}
