//! Edits a copy of the headers (a new enumerator, a new config field), regenerates into a temporary
//! directory, and checks that the Rust layer follows, that it compiles, and that `--check` notices staleness.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh directory under the target directory, emptied.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn libclang() {
    if std::env::var_os("LIBCLANG_PATH").is_none() {
        for candidate in [
            "/usr/lib/llvm-22/lib",
            "/usr/lib/llvm-21/lib",
            "/usr/lib/llvm-20/lib",
            "/usr/lib/llvm-19/lib",
        ] {
            if Path::new(candidate).is_dir() {
                std::env::set_var("LIBCLANG_PATH", candidate);
                return;
            }
        }
    }
}

fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "`{from}` should occur once");
    text.replacen(from, to, 1)
}

fn copy_headers(into: &Path) {
    for header in uform_gen::HEADERS {
        let name = format!("{header}.h");
        std::fs::copy(root().join("include/uform").join(&name), into.join(&name)).unwrap();
    }
}

#[test]
fn the_rust_layer_follows_an_edited_header() {
    libclang();
    let dir = scratch("regenerate");
    let include = dir.join("include/uform");
    std::fs::create_dir_all(&include).unwrap();
    copy_headers(&include);

    // A new enumerator, renamed for Rust, and a new field of a verb's argument struct.
    let types = std::fs::read_to_string(include.join("types.h")).unwrap();
    let types = replace_once(
        &types,
        "} uform_scalar_t;",
        "    /** IEEE 754 binary64. @uform rust=F64 */\n    uform_scalar_f64_k = 8,\n} uform_scalar_t;",
    );
    std::fs::write(include.join("types.h"), types).unwrap();
    let encode = std::fs::read_to_string(include.join("encode.h")).unwrap();
    let encode = replace_once(
        &encode,
        "    /** Nullable; receives what the call did. */\n    uform_text_encode_stats_t *stats;",
        "    /** Tokens per item at most; zero takes all. */\n    size_t max_tokens;\n    /** Nullable; receives what the call did. */\n    uform_text_encode_stats_t *stats;",
    );
    std::fs::write(include.join("encode.h"), encode).unwrap();

    let files = uform_gen::generate(&include).unwrap_or_else(|error| panic!("{error}"));
    let text = |name: &str| {
        files
            .iter()
            .find(|f| f.path == Path::new(name))
            .map(|f| f.text.clone())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let sys = text("sys.rs");
    assert!(sys.contains("uform_scalar_f64_k: uform_scalar_t = uform_scalar_t(8)"));
    assert!(sys.contains("pub max_tokens: usize"));
    let types = text("generated/types.rs");
    assert!(
        types.contains("F64 = 8"),
        "the enumerator reaches the Rust enum"
    );
    assert!(
        types.contains("8 => Some(Self::F64)"),
        "and its conversion from C"
    );
    assert!(types.contains("Self::F64"), "and `ALL`");
    let encode = text("generated/encode.rs");
    assert!(
        encode.contains("pub max_tokens: usize"),
        "the field reaches the config"
    );
    assert!(
        encode.contains("max_tokens: self.max_tokens"),
        "and its conversion to C"
    );

    // The regenerated layer compiles with the hand-written core, without the C library or libclang.
    let krate = dir.join("crate");
    std::fs::create_dir_all(krate.join("rust/generated")).unwrap();
    for entry in std::fs::read_dir(root().join("rust")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            std::fs::copy(&path, krate.join("rust").join(path.file_name().unwrap())).unwrap();
        }
    }
    for file in &files {
        std::fs::write(krate.join("rust").join(&file.path), &file.text).unwrap();
    }
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"uform\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[lib]\npath = \"rust/lib.rs\"\n\n[workspace]\n",
    )
    .unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["check", "--offline", "--quiet", "--lib"])
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the regenerated layer does not compile:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn check_fails_on_stale_output_and_passes_on_fresh() {
    libclang();
    let dir = scratch("check");
    let out = dir.join("rust");
    let binary = env!("CARGO_BIN_EXE_uform-gen");
    let include = root().join("include/uform");
    let run = |args: &[&str]| {
        Command::new(binary)
            .args(args)
            .arg("--include")
            .arg(&include)
            .arg("--out")
            .arg(&out)
            .status()
            .unwrap()
    };
    assert!(
        !run(&["--check"]).success(),
        "nothing generated yet is stale"
    );
    assert!(run(&[]).success(), "generating succeeds");
    assert!(run(&["--check"]).success(), "fresh output passes");
    let types = out.join("generated/types.rs");
    let text = std::fs::read_to_string(&types).unwrap();
    std::fs::write(&types, text.replacen("Deferred = 1", "Deferred = 99", 1)).unwrap();
    assert!(!run(&["--check"]).success(), "an edited enum is stale");
    assert!(run(&[]).success());
    let text = std::fs::read_to_string(&types).unwrap();
    std::fs::write(&types, text.replace("\n\n", "\n\n\n")).unwrap();
    assert!(run(&["--check"]).success(), "formatting is not staleness");
    std::fs::write(
        &types,
        format!("{text}\n// a comment the generator does not write\n"),
    )
    .unwrap();
    assert!(
        !run(&["--check"]).success(),
        "a comment the generator does not write is stale"
    );
    assert!(run(&[]).success());
    let safety = text
        .lines()
        .find(|line| line.trim_start().starts_with("// SAFETY: "))
        .expect("the generated layer documents its unsafe blocks");
    std::fs::write(&types, text.replacen(&format!("{safety}\n"), "", 1)).unwrap();
    assert!(
        !run(&["--check"]).success(),
        "a missing `// SAFETY:` line is stale"
    );
}

#[test]
fn the_checked_in_layer_is_fresh() {
    libclang();
    let files = uform_gen::generate(&root().join("include/uform"))
        .unwrap_or_else(|error| panic!("{error}"));
    for file in files {
        let current =
            std::fs::read_to_string(root().join("rust").join(&file.path)).unwrap_or_default();
        assert!(
            uform_gen::same(&current, &file.text),
            "`rust/{}` is stale: run `cargo run -p uform-gen`",
            file.path.display()
        );
    }
}
