//! Builds `libuform_static.a` and tells rustc how to link it.
//!
//! - Features: none (the RAM residency), `cuda` (the RAM and NVIDIA residencies), `rocm` (the RAM and AMD
//!   residencies), `stub`; `stub` refuses either GPU feature, and CMake refuses `cuda` beside `rocm`.
//! - `cuda` needs a CUDA toolkit, which cmake/UformCuda.cmake finds: `UFORM_CUDA_ROOT`, `CUDA_PATH` or `CUDA_HOME`,
//!   the wheels `scripts/setup-cuda.sh` installs (`UFORM_CUDA_CACHE`), `/usr/local/cuda`, or the `nvcc` on the `PATH`.
//!   The archive then needs the static CUDA runtime after it, which `uform.pc` names by path; cuBLASLt is loaded at
//!   run time (cuda/blas.cpp), from the toolkit the build used, else through the loader's search path.
//! - `rocm` compiles cuda/ as HIP with rocm/ beside it, and needs HIP and the AMDGPU device libraries, which
//!   cmake/UformRocm.cmake finds: `ROCM_PATH`, `/opt/rocm`, or Debian's packages with the bitcode
//!   `scripts/setup-rocm.sh` unpacks (`UFORM_ROCM_DEVICE_LIBS`, `UFORM_ROCM_CACHE`). The archive then needs HIP's
//!   shared runtime, `libamdhip64.so`, which `uform.pc` names by path.
//! - `UFORM_LIBRARY_DIR=<dir>` links the `libuform_static.a` CMake already built there, and runs no CMake.
//! - Otherwise CMake builds the `uform_static` target from the crate's sources into `OUT_DIR` through the
//!   `cmake` crate: Ninja when it is on the `PATH` (unless `CMAKE_GENERATOR` names another), the compilers
//!   `CC` and `CXX` name, else CMake's default (cmake/UformCompilers.cmake: `clang-22`, else `clang`).
//! - The RAM residency compiles the NumKong, StringZilla and ForkUnion trees of the crates Cargo resolved,
//!   which Cargo.toml lists as `cfg(any())` dependencies, so that Cargo locks them but never builds them.
//!   This script finds their roots with `cargo metadata --locked --offline`, or `cargo metadata --locked`
//!   (which downloads them) when they are not unpacked yet, and hands each to CMake as
//!   `UFORM_<DEP>_SOURCE_DIR`; the same variable in the environment overrides the lookup. This is the one
//!   search: cmake/UformCrates.cmake only falls back to Cargo's registry for a standalone CMake build.
//! - The system libraries the archive needs after it (the C++ runtime, threads, and, as the residencies
//!   image, video and audio codecs) are CMake's to know: it writes them on the `Libs:` line of `uform.pc`
//!   (cmake/UformLinkFlags.cmake), and this script forwards that line to rustc.
//! - WASI (`wasm32-wasip1`): `WASI_SDK_PATH` names the SDK, which the repository's toolchain file
//!   (cmake/toolchains/wasi.cmake) reads; the crate needs `-C target-feature=+simd128` and the RAM residency
//!   (no feature), which this checks (rust/build_script/wasi.rs, tested by tests/build_wasi.rs).
//! - `UFORM_SANITIZE=address` (or `undefined`, or both, comma-separated) builds the C++ side with those
//!   sanitizers and links Clang's shared runtimes with an rpath; run the binaries with the runtime
//!   preloaded, as `scripts/sanitize.sh` does.
//! - `UFORM_CMAKE_BUILD_TYPE` overrides the CMake build type the Cargo profile implies.
//!
//! Every input is declared through `rerun-if-changed` and `rerun-if-env-changed`, so a rebuild with
//! nothing changed runs neither this script nor CMake.

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "rust/build_script/wasi.rs"]
mod wasi;

/// The archive CMake builds and this links.
const ARCHIVE: &str = "libuform_static.a";
/// The CMake target that builds it.
const TARGET: &str = "uform_static";
/// The pkg-config file CMake writes beside the build, naming what links after the archive.
const PKG_CONFIG_FILE: &str = "uform.pc";

/// The sources every build reads, relative to the manifest, which this watches; each residency adds its own
/// folder (`stub` or `cpp`).
const SOURCES: &[&str] = &["include", "c", "common", "cmake", "CMakeLists.txt"];

/// The environment this script and CMake read, beyond what the `cmake` and `cc` crates declare themselves.
const ENVIRONMENT: &[&str] = &[
    "UFORM_LIBRARY_DIR",
    "UFORM_CMAKE_BUILD_TYPE",
    "UFORM_SANITIZE",
    "UFORM_NUMKONG_SOURCE_DIR",
    "UFORM_STRINGZILLA_SOURCE_DIR",
    "UFORM_FORKUNION_SOURCE_DIR",
    "CC",
    "CXX",
    "CMAKE_GENERATOR",
    "WASI_SDK_PATH",
    "PKG_CONFIG_PATH",
    "UFORM_CUDA_ROOT",
    "UFORM_CUDA_CACHE",
    "CUDA_PATH",
    "CUDA_HOME",
    "ROCM_PATH",
    "UFORM_ROCM_DEVICE_LIBS",
    "UFORM_ROCM_CACHE",
];

/// The crates whose C and C++ trees the RAM residency compiles, with the CMake variables naming their roots.
const DEPENDENCIES: &[(&str, &str)] = &[
    ("numkong", "UFORM_NUMKONG_SOURCE_DIR"),
    ("stringzilla", "UFORM_STRINGZILLA_SOURCE_DIR"),
    ("forkunion", "UFORM_FORKUNION_SOURCE_DIR"),
];

struct Features {
    cuda: bool,
    rocm: bool,
    stub: bool,
}

fn main() {
    let features = Features {
        cuda: env::var_os("CARGO_FEATURE_CUDA").is_some(),
        rocm: env::var_os("CARGO_FEATURE_ROCM").is_some(),
        stub: env::var_os("CARGO_FEATURE_STUB").is_some(),
    };
    if features.stub && (features.cuda || features.rocm) {
        panic!(
            "uform: the `stub` feature cannot be combined with `cuda` or `rocm`: `stub` links a stand-in \
             for testing callers, while `cuda` and `rocm` link GPU residencies for shipping. Enable `stub` \
             alone to test, or the GPU features without `stub`."
        );
    }

    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("Cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=build.rs");
    for variable in ENVIRONMENT {
        println!("cargo:rerun-if-env-changed={variable}");
    }
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let sanitizers = env::var("UFORM_SANITIZE")
        .ok()
        .filter(|value| !value.is_empty());

    let (library_dir, pkg_config) =
        match env::var_os("UFORM_LIBRARY_DIR").filter(|dir| !dir.is_empty()) {
            Some(dir) => prebuilt(Path::new(&dir)),
            None => {
                watch_sources(&manifest_dir, &features);
                build_with_cmake(&manifest_dir, &features, &target_os, sanitizers.as_deref())
            }
        };
    println!("cargo:rustc-link-search=native={}", library_dir.display());
    println!("cargo:rustc-link-lib=static={TARGET}");
    link_system_libraries(pkg_config.as_deref(), &target_os);
    if let Some(sanitizers) = sanitizers {
        link_sanitizers(&sanitizers);
    }
}

/// Declares the sources CMake reads, so Cargo reruns this script when, and only when, one of them changes
/// (a prebuilt archive declares itself instead). Paths that do not exist are left out, since Cargo treats
/// them as always stale.
fn watch_sources(manifest_dir: &Path, features: &Features) {
    let residency = if features.stub { "stub" } else { "cpp" };
    let gpu: &[&str] = match (features.cuda, features.rocm) {
        (_, true) => &["cuda", "rocm"], // the AMD residency compiles cuda/ too
        (true, false) => &["cuda"],
        (false, false) => &[],
    };
    for source in SOURCES.iter().chain([&residency]).chain(gpu) {
        if manifest_dir.join(source).exists() {
            println!("cargo:rerun-if-changed={source}");
        }
    }
    // The RAM build's dependency trees follow Cargo's resolution.
    if !features.stub && manifest_dir.join("Cargo.lock").is_file() {
        println!("cargo:rerun-if-changed=Cargo.lock");
    }
}

/// The directory of a `libuform_static.a` built beforehand, refusing one that lacks it, and the
/// `uform.pc` of its build or installation, if any.
fn prebuilt(dir: &Path) -> (PathBuf, Option<PathBuf>) {
    if !dir.is_dir() {
        panic!(
            "uform: UFORM_LIBRARY_DIR names `{}`, which is not a directory. Point it at the directory holding \
             the `{ARCHIVE}` a CMake build produced (`cmake -S . -B build -G Ninja && cmake --build build \
             --target {TARGET}`, then UFORM_LIBRARY_DIR=$PWD/build), or unset it to let Cargo run CMake.",
            dir.display()
        );
    }
    if !dir.join(ARCHIVE).is_file() {
        panic!(
            "uform: UFORM_LIBRARY_DIR names `{}`, which holds no `{ARCHIVE}`. Build it with `cmake --build \
             <build-dir> --target {TARGET}` and point UFORM_LIBRARY_DIR at the folder holding the archive \
             (the build folder, or `lib` of an installation), or unset it to let Cargo run CMake.",
            dir.display()
        );
    }
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    println!("cargo:rerun-if-changed={}", dir.join(ARCHIVE).display());
    // A build folder holds `uform.pc` beside the archive, an installation in `lib/pkgconfig/`.
    let pkg_config = [
        dir.join(PKG_CONFIG_FILE),
        dir.join("pkgconfig").join(PKG_CONFIG_FILE),
    ]
    .into_iter()
    .find(|path| path.is_file());
    if let Some(path) = &pkg_config {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    (dir, pkg_config)
}

/// Configures and builds the `uform_static` target into `OUT_DIR`, answering the directory of the archive
/// and the `uform.pc` CMake configured.
fn build_with_cmake(
    manifest_dir: &Path,
    features: &Features,
    target_os: &str,
    sanitizers: Option<&str>,
) -> (PathBuf, Option<PathBuf>) {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("Cargo sets OUT_DIR"));
    let library_dir = out_dir.join("lib");
    let on_off = |on: bool| if on { "ON" } else { "OFF" };

    let mut config = cmake::Config::new(manifest_dir);
    config
        .build_target(TARGET)
        .define("UFORM_STUB", on_off(features.stub))
        .define("UFORM_CUDA", on_off(features.cuda))
        .define("UFORM_ROCM", on_off(features.rocm))
        .define("UFORM_BUILD_TESTS", "OFF")
        .define("UFORM_BUILD_BENCH", "OFF") // tools/bench/ is not shipped with the crate
        .define("CMAKE_ARCHIVE_OUTPUT_DIRECTORY", &library_dir);
    if let Ok(build_type) = env::var("UFORM_CMAKE_BUILD_TYPE") {
        config.profile(&build_type);
    }
    if let Some(sanitizers) = sanitizers {
        config.define("UFORM_SANITIZE", sanitizers);
    }
    if env::var_os("CMAKE_GENERATOR").is_none() && find_program("ninja").is_some() {
        config.generator("Ninja");
    }
    if target_os == "wasi" {
        configure_wasi(&mut config, manifest_dir, features);
    } else {
        default_compilers(&mut config, manifest_dir);
    }
    if !features.stub {
        let mut metadata = None;
        for (name, variable) in DEPENDENCIES {
            let root = match env::var_os(variable).filter(|root| !root.is_empty()) {
                Some(root) => PathBuf::from(root),
                None => {
                    let metadata = metadata.get_or_insert_with(|| cargo_metadata(manifest_dir));
                    package_root(metadata, name).unwrap_or_else(|error| {
                        panic!(
                            "uform: cannot find the sources of the `{name}` crate Cargo resolved: {error}. \
                             Run `cargo fetch`, or set {variable} to the root of an unpacked `{name}` crate, \
                             or build the stand-in with `--features stub`, which needs none."
                        )
                    })
                }
            };
            config.define(variable, root);
        }
    }

    let build_dir = config.build().join("build");
    let archive_dir = if library_dir.join(ARCHIVE).is_file() {
        library_dir
    } else {
        find_file(&build_dir, ARCHIVE).unwrap_or_else(|| {
            panic!(
                "uform: CMake built the `{TARGET}` target, but no `{ARCHIVE}` appeared under `{}`.",
                out_dir.display()
            )
        })
    };
    let pkg_config = Some(build_dir.join(PKG_CONFIG_FILE)).filter(|path| path.is_file());
    (archive_dir, pkg_config)
}

/// What `cargo metadata` answers for this package: offline first, then letting Cargo download the
/// locked `cfg(any())` dependencies, which `cargo build` never unpacks.
fn cargo_metadata(manifest_dir: &Path) -> Result<serde_json::Value, String> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut failure = String::new();
    for offline in [true, false] {
        let mut command = Command::new(&cargo);
        command
            .args(["metadata", "--format-version", "1", "--locked"])
            .arg("--manifest-path")
            .arg(manifest_dir.join("Cargo.toml"));
        if offline {
            command.arg("--offline");
        }
        match command.output() {
            Ok(output) if output.status.success() => {
                return serde_json::from_slice(&output.stdout)
                    .map_err(|error| format!("`cargo metadata` answered no JSON ({error})"));
            }
            Ok(output) => failure = String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            Err(error) => failure = format!("running {cargo:?} failed ({error})"),
        }
    }
    Err(format!("`cargo metadata --locked` failed ({failure})"))
}

/// The folder of the `name` package `cargo metadata` lists, preferring the one this package depends on.
fn package_root(
    metadata: &Result<serde_json::Value, String>,
    name: &str,
) -> Result<PathBuf, String> {
    let metadata = metadata.as_ref().map_err(Clone::clone)?;
    let packages = metadata["packages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    // The ids this package depends on: `resolve.root` is the package of the manifest asked about.
    let root = &metadata["resolve"]["root"];
    let nodes = metadata["resolve"]["nodes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let direct = nodes
        .iter()
        .find(|node| node["id"] == *root)
        .and_then(|node| node["dependencies"].as_array())
        .map(Vec::as_slice)
        .unwrap_or_default();
    let candidates: Vec<&serde_json::Value> = packages
        .iter()
        .filter(|package| package["name"] == name)
        .collect();
    let chosen = candidates
        .iter()
        .find(|package| direct.contains(&package["id"]))
        .or(candidates.first())
        .ok_or_else(|| format!("`cargo metadata` lists no `{name}` package"))?;
    let manifest = chosen["manifest_path"]
        .as_str()
        .ok_or_else(|| format!("`cargo metadata` names no manifest of `{name}`"))?;
    Path::new(manifest)
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("`{manifest}` lies in no folder"))
}

/// Leaves the compilers to CMake's default (cmake/UformCompilers.cmake, as its toolchain file) when neither `CC`
/// nor `CXX` names one; else the `cmake` crate hands CMake the compilers the `cc` crate resolves from them.
fn default_compilers(config: &mut cmake::Config, manifest_dir: &Path) {
    let set = |variable| env::var_os(variable).is_some_and(|value| !value.is_empty());
    if !set("CC") && !set("CXX") {
        config.define(
            "CMAKE_TOOLCHAIN_FILE",
            manifest_dir.join("cmake/UformCompilers.cmake"),
        );
    }
}

/// Hands CMake the repository's WASI toolchain file, or stops with the reason a WASI build cannot be made.
fn configure_wasi(config: &mut cmake::Config, manifest_dir: &Path, features: &Features) {
    let plan = wasi::plan(
        manifest_dir,
        (features.stub, features.cuda, features.rocm),
        env::var_os("WASI_SDK_PATH").as_deref(),
        &env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default(),
        Path::exists,
    )
    .unwrap_or_else(|reason| panic!("{reason}"));
    config
        .define("CMAKE_TOOLCHAIN_FILE", &plan.toolchain)
        .env("WASI_SDK_PATH", &plan.sdk);
}

/// Forwards the system libraries on the `Libs:` line of `uform.pc` to rustc: `-L`, `-l`, `-pthread` and
/// archives or shared objects named by path. The archive itself and `-fsanitize=` are this script's to
/// link. Without the file, links the C++ runtime the platform defaults to, and threads.
fn link_system_libraries(pkg_config: Option<&Path>, target_os: &str) {
    let libs = pkg_config.and_then(|path| {
        let text = fs::read_to_string(path).ok()?;
        let line = text.lines().find_map(|line| line.strip_prefix("Libs:"))?;
        Some(line.to_owned())
    });
    let Some(libs) = libs else {
        if target_os == "wasi" {
            for library in wasi::LINK_LIBRARIES {
                println!("cargo:rustc-link-lib={library}");
            }
            return;
        }
        let stdlib = match target_os {
            "macos" | "ios" | "freebsd" | "openbsd" => "c++",
            "android" => "c++_shared",
            _ => "stdc++",
        };
        println!("cargo:rustc-link-lib={stdlib}");
        if matches!(
            target_os,
            "linux" | "android" | "freebsd" | "openbsd" | "netbsd"
        ) {
            println!("cargo:rustc-link-lib=pthread");
        }
        return;
    };
    for flag in libs.split_whitespace() {
        if flag.contains("${") || flag == format!("-l{TARGET}") || flag.starts_with("-fsanitize=") {
            continue;
        }
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(library) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={library}");
        } else if flag == "-pthread" {
            println!("cargo:rustc-link-lib=pthread");
        } else if let Some((dir, kind, file)) = library_by_path(flag) {
            // A library named by path (the static CUDA runtime): linked by its file name, for every crate.
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib={kind}:+verbatim={file}");
        } else if Path::new(flag).is_absolute() {
            println!("cargo:rustc-link-arg={flag}");
        } else {
            println!("cargo:warning=uform: `{flag}` on the Libs line of uform.pc is not forwarded to rustc");
        }
    }
}

/// The folder, link kind and file name of a library that `flag` names by absolute path (`.a` static, `.so` or `.so.N`
/// shared), or `None`.
fn library_by_path(flag: &str) -> Option<(PathBuf, &'static str, String)> {
    let path = Path::new(flag);
    if !path.is_absolute() {
        return None;
    }
    let file = path.file_name()?.to_str()?.to_owned();
    let kind = if file.ends_with(".a") {
        "static"
    } else if file.ends_with(".so") || file.contains(".so.") {
        "dylib"
    } else {
        return None;
    };
    Some((path.parent()?.to_path_buf(), kind, file))
}

/// Links the shared runtimes of the sanitizers the archive was built with, from the C++ compiler's
/// runtime directory, with an rpath to them.
fn link_sanitizers(sanitizers: &str) {
    let compiler = env::var_os("CXX").unwrap_or_else(|| OsString::from("clang++"));
    let output = Command::new(&compiler)
        .arg("-print-runtime-dir")
        .output()
        .unwrap_or_else(|error| {
            panic!("uform: UFORM_SANITIZE needs Clang as CXX; running {compiler:?} failed: {error}")
        });
    let runtime_dir = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    println!("cargo:rustc-link-search=native={runtime_dir}");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{runtime_dir}");
    for sanitizer in sanitizers.split(',') {
        let runtime = match sanitizer.trim() {
            "address" => "asan",
            "undefined" => "ubsan_standalone",
            other => panic!("uform: UFORM_SANITIZE names `{other}`; use `address`, `undefined`, or both comma-separated."),
        };
        // A per-target runtime directory names the runtime without the architecture.
        let name = if Path::new(&runtime_dir)
            .join(format!("libclang_rt.{runtime}.so"))
            .is_file()
        {
            format!("clang_rt.{runtime}")
        } else {
            format!("clang_rt.{runtime}-{arch}")
        };
        println!("cargo:rustc-link-lib=dylib={name}");
    }
}

/// The folder under `dir` holding a file named `name`, searching depth first.
fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    let mut subdirs = Vec::new();
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            subdirs.push(path);
        } else if path.file_name().is_some_and(|file| file == name) {
            return Some(dir.to_path_buf());
        }
    }
    subdirs.iter().find_map(|subdir| find_file(subdir, name))
}

/// The path of a program on the `PATH`, if any.
fn find_program(name: &str) -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}
