//! `cargo run -p uform-gen [-- --check] [--include DIR] [--out DIR]`: writes the version macros of
//! `uform.h` from Cargo.toml's version, regenerates `rust/sys.rs` and `rust/generated/*.rs` from
//! `include/uform/*.h`, or, with `--check`, exits non-zero when any of them is stale.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What the command line asks for.
struct Options {
    /// The headers' folder.
    include: PathBuf,
    /// The Rust layer's folder.
    out: PathBuf,
    /// Whether to only check, writing nothing.
    check: bool,
}

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let options = match parse_args(&root) {
        Ok(options) => options,
        Err(code) => return code,
    };
    find_libclang();
    let mut stale = Vec::new();
    match version_macros(
        &root.join("Cargo.toml"),
        &options.include.join("uform.h"),
        options.check,
    ) {
        Ok(Some(path)) => stale.push(path),
        Ok(None) => {}
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    }
    let files = match uform_gen::generate(&options.include) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    if let Err(error) = write_files(&files, &options, &mut stale) {
        eprintln!("{error}");
        return ExitCode::from(2);
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
    if options.check {
        println!("uform-gen: the generated layer is up to date");
    }
    ExitCode::SUCCESS
}

/// Reads the command line; the exit code instead where it asked for help or is wrong.
fn parse_args(root: &Path) -> Result<Options, ExitCode> {
    let mut options = Options {
        include: root.join("include/uform"),
        out: root.join("rust"),
        check: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => options.check = true,
            "--include" => {
                options.include = args.next().map(PathBuf::from).unwrap_or(options.include)
            }
            "--out" => options.out = args.next().map(PathBuf::from).unwrap_or(options.out),
            "-h" | "--help" => {
                println!("usage: uform-gen [--check] [--include DIR] [--out DIR]");
                println!("  writes uform.h's version macros from Cargo.toml's version, and regenerates DIR/sys.rs and");
                println!("  DIR/generated/*.rs (default: rust/) from include/uform/*.h;");
                println!("  --check exits 1, writing nothing, when the checked-in output differs from the headers'.");
                return Err(ExitCode::SUCCESS);
            }
            other => {
                eprintln!("uform-gen: unknown argument `{other}`; try --help");
                return Err(ExitCode::from(2));
            }
        }
    }
    Ok(options)
}

/// Points bindgen at the newest installed libclang unless `LIBCLANG_PATH` already names one.
fn find_libclang() {
    if std::env::var_os("LIBCLANG_PATH").is_some() {
        return;
    }
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

/// Writes each generated file whose checked-in text differs, or, with `--check`, adds its path to `stale`.
fn write_files(
    files: &[uform_gen::File],
    options: &Options,
    stale: &mut Vec<PathBuf>,
) -> Result<(), String> {
    for file in files {
        let path = options.out.join(&file.path);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if uform_gen::same(&current, &file.text) {
            continue;
        }
        if options.check {
            stale.push(path);
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|error| {
                format!("uform-gen: cannot create `{}`: {error}", parent.display())
            })?;
        }
        std::fs::write(&path, &file.text)
            .map_err(|error| format!("uform-gen: cannot write `{}`: {error}", path.display()))?;
        println!("uform-gen: wrote {}", path.display());
    }
    Ok(())
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
