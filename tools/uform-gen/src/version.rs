//! The version macros of `uform.h`, written from the `version` of the `[package]` table of the workspace's
//! Cargo.toml, the version's one home: `uform-gen` rewrites the three `#define UFORM_VERSION_*` lines, and
//! `--check` reports them stale when they disagree.

use regex_lite::Regex;

/// The `version` of a Cargo.toml's `[package]` table, as MAJOR, MINOR and PATCH.
pub fn package_version(manifest: &str) -> Result<[u32; 3], String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if !in_package {
            continue;
        }
        let Some(value) = line.strip_prefix("version") else {
            continue;
        };
        let pattern = Regex::new(r#"^\s*=\s*"(\d+)\.(\d+)\.(\d+)""#).expect("a valid pattern");
        let parts = pattern.captures(value).ok_or_else(|| {
            format!("uform-gen: Cargo.toml's version `{line}` is not MAJOR.MINOR.PATCH")
        })?;
        let number = |i: usize| {
            parts[i]
                .parse::<u32>()
                .map_err(|error| format!("uform-gen: {error}"))
        };
        return Ok([number(1)?, number(2)?, number(3)?]);
    }
    Err("uform-gen: Cargo.toml's [package] table has no version".into())
}

/// `header` with its `#define UFORM_VERSION_MAJOR`, `_MINOR` and `_PATCH` lines set to `version`.
pub fn with_version(header: &str, version: [u32; 3]) -> Result<String, String> {
    let mut text = header.to_owned();
    for (name, value) in ["MAJOR", "MINOR", "PATCH"].iter().zip(version) {
        let pattern = Regex::new(&format!(r"(?m)^#define UFORM_VERSION_{name} \d+$"))
            .expect("a valid pattern");
        if !pattern.is_match(&text) {
            return Err(format!(
                "uform-gen: uform.h has no `#define UFORM_VERSION_{name}` line"
            ));
        }
        text = pattern
            .replace(
                &text,
                format!("#define UFORM_VERSION_{name} {value}").as_str(),
            )
            .into_owned();
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_package_version_only() {
        let manifest = "[workspace]\nversion = \"9.9.9\"\n[package]\nname = \"uform\"\nversion = \"1.22.333\"\n";
        assert_eq!(package_version(manifest), Ok([1, 22, 333]));
        assert!(package_version("[package]\nversion = \"1.2\"\n").is_err());
        assert!(package_version("[dependencies]\nversion = \"1.2.3\"\n").is_err());
    }

    #[test]
    fn rewrites_the_three_macros() {
        let header = "#define UFORM_VERSION_MAJOR 0\n#define UFORM_VERSION_MINOR 1\n#define UFORM_VERSION_PATCH 0\n";
        let expected = "#define UFORM_VERSION_MAJOR 2\n#define UFORM_VERSION_MINOR 3\n#define UFORM_VERSION_PATCH 4\n";
        assert_eq!(with_version(header, [2, 3, 4]).as_deref(), Ok(expected));
        assert!(with_version("#define UFORM_VERSION_MAJOR 0\n", [2, 3, 4]).is_err());
    }
}
