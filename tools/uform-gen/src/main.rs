//! `cargo run -p uform-gen [-- --check] [--include DIR] [--out DIR]`: writes the version macros of
//! `uform.h` from Cargo.toml's version, regenerates `rust/sys.rs` and `rust/generated/*.rs` from
//! `include/uform/*.h`, or, with `--check`, exits non-zero when any of them is stale.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut include = root.join("include/uform");
    let mut out = root.join("rust");
    let mut check = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => check = true,
            "--include" => include = args.next().map(PathBuf::from).unwrap_or(include),
            "--out" => out = args.next().map(PathBuf::from).unwrap_or(out),
            "-h" | "--help" => {
                println!("usage: uform-gen [--check] [--include DIR] [--out DIR]");
                println!("  writes uform.h's version macros from Cargo.toml's version, and regenerates DIR/sys.rs and");
                println!("  DIR/generated/*.rs (default: rust/) from include/uform/*.h;");
                println!("  --check exits 1, writing nothing, when the checked-in output differs from the headers'.");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("uform-gen: unknown argument `{other}`; try --help");
                return ExitCode::from(2);
            }
        }
    }
    if std::env::var_os("LIBCLANG_PATH").is_none() {
        for candidate in [
            "/usr/lib/llvm-22/lib",
            "/usr/lib/llvm-21/lib",
            "/usr/lib/llvm-20/lib",
            "/usr/lib/llvm-19/lib",
        ] {
            if std::path::Path::new(candidate).is_dir() {
                std::env::set_var("LIBCLANG_PATH", candidate);
                break;
            }
        }
    }
    let mut stale = Vec::new();
    match version_macros(&root.join("Cargo.toml"), &include.join("uform.h"), check) {
        Ok(Some(path)) => stale.push(path),
        Ok(None) => {}
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    }
    let files = match uform_gen::generate(&include) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    for file in &files {
        let path = out.join(&file.path);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if uform_gen::same(&current, &file.text) {
            continue;
        }
        if check {
            stale.push(path);
        } else {
            if let Some(parent) = path.parent() {
                if let Err(error) = std::fs::create_dir_all(parent) {
                    eprintln!("uform-gen: cannot create `{}`: {error}", parent.display());
                    return ExitCode::from(2);
                }
            }
            if let Err(error) = std::fs::write(&path, &file.text) {
                eprintln!("uform-gen: cannot write `{}`: {error}", path.display());
                return ExitCode::from(2);
            }
            println!("uform-gen: wrote {}", path.display());
        }
    }
    if !stale.is_empty() {
        for path in &stale {
            eprintln!(
                "uform-gen: `{}` is stale; run `cargo run -p uform-gen`",
                path.display()
            );
        }
        return ExitCode::FAILURE;
    }
    if check {
        println!("uform-gen: the generated layer is up to date");
    }
    ExitCode::SUCCESS
}

/// Writes the version macros of `header` (`uform.h`) from `manifest`'s version; with `check`, writes nothing and
/// answers the header's path when it is stale.
fn version_macros(manifest: &Path, header: &Path, check: bool) -> Result<Option<PathBuf>, String> {
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .map_err(|error| format!("uform-gen: cannot read `{}`: {error}", path.display()))
    };
    let current = read(header)?;
    let wanted = uform_gen::version::with_version(
        &current,
        uform_gen::version::package_version(&read(manifest)?)?,
    )?;
    if wanted == current {
        return Ok(None);
    }
    if check {
        return Ok(Some(header.to_path_buf()));
    }
    std::fs::write(header, &wanted)
        .map_err(|error| format!("uform-gen: cannot write `{}`: {error}", header.display()))?;
    println!("uform-gen: wrote {}", header.display());
    Ok(None)
}
