//! The WASI half of build.rs, kept apart so that tests/build_wasi.rs can test it: a `wasm32-wasip1` build hands
//! CMake the repository's WASI toolchain (cmake/toolchains/wasi.cmake), which reads the WASI SDK from
//! `WASI_SDK_PATH`, and links the archive with the SDK's C++ runtime. Not part of the library: build.rs and the test
//! include this file by path, and it uses the standard library alone.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The toolchain file CMake gets for WASI, relative to the manifest.
pub const TOOLCHAIN: &str = "cmake/toolchains/wasi.cmake";

/// What the toolchain file takes from the SDK, relative to its root.
pub const SDK_FILES: &[&str] = &["bin/clang", "bin/clang++", "share/wasi-sysroot"];

/// The libraries linked after the archive: the SDK's C++ runtime and WASI's emulated `mmap` (the weights' mapped
/// files); the WASI build writes no `uform.pc`.
pub const LINK_LIBRARIES: &[&str] = &["c++", "c++abi", "wasi-emulated-mman"];

/// How CMake builds the archive for WASI.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    /// `CMAKE_TOOLCHAIN_FILE`.
    pub toolchain: PathBuf,
    /// The SDK's root, which the toolchain file reads from `WASI_SDK_PATH` itself.
    pub sdk: PathBuf,
}

/// Checks a WASI build's inputs and answers its plan, or why it cannot be built: the features (`stub`, `cuda`,
/// `rocm`), `WASI_SDK_PATH` (`sdk`), the target features rustc builds with (`CARGO_CFG_TARGET_FEATURE`, which must
/// name `simd128`), and the SDK's files, probed through `exists`.
pub fn plan(
    manifest_dir: &Path,
    features: (bool, bool, bool),
    sdk: Option<&OsStr>,
    target_features: &str,
    exists: impl Fn(&Path) -> bool,
) -> Result<Plan, String> {
    let (stub, cuda, rocm) = features;
    if stub || cuda || rocm {
        return Err("uform: the WASI build is the RAM residency alone: build for wasm32-wasip1 without the \
                    `stub`, `cuda` and `rocm` features."
            .to_owned());
    }
    if !target_features
        .split(',')
        .any(|feature| feature == "simd128")
    {
        return Err(
            "uform: a WASI build needs 128-bit SIMD: build with RUSTFLAGS=\"-C target-feature=+simd128\", \
             or set that `target-feature` in `.cargo/config.toml`."
                .to_owned(),
        );
    }
    let Some(sdk) = sdk.filter(|sdk| !sdk.is_empty()) else {
        return Err(
            "uform: a WASI build needs the WASI SDK: set WASI_SDK_PATH to its root, the folder holding \
             `bin/clang` and `share/wasi-sysroot`."
                .to_owned(),
        );
    };
    let sdk = PathBuf::from(sdk);
    if let Some(missing) = SDK_FILES.iter().find(|file| !exists(&sdk.join(file))) {
        return Err(format!(
            "uform: WASI_SDK_PATH names `{}`, which lacks `{missing}`; point it at the root of a WASI SDK release.",
            sdk.display()
        ));
    }
    Ok(Plan {
        toolchain: manifest_dir.join(TOOLCHAIN),
        sdk,
    })
}
