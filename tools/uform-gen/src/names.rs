//! How C names become Rust names.

use proc_macro2::{Ident, Span};

/// Words the Rust layer spells as acronyms in type names: `uform_cpu_class_t` is `CPUClass`.
const ACRONYMS: &[(&str, &str)] = &[("cpu", "CPU"), ("gpu", "GPU")];

/// The C name without `uform_` and `_t`.
pub fn base(c: &str) -> &str {
    let c = c.strip_prefix("uform_").unwrap_or(c);
    c.strip_suffix("_t").unwrap_or(c)
}

/// `snake_case` as `CamelCase`.
pub fn camel(snake: &str) -> String {
    snake
        .split('_')
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

/// The Rust name of a C type: `uform_gpu_device_t` is `GPUDevice`.
pub fn type_name(c: &str) -> String {
    base(c)
        .split('_')
        .map(
            |word| match ACRONYMS.iter().find(|(lower, _)| *lower == word) {
                Some((_, upper)) => (*upper).to_owned(),
                None => camel(word),
            },
        )
        .collect()
}

/// An identifier, raw when it is a keyword.
pub fn ident(name: &str) -> Ident {
    const KEYWORDS: &[&str] = &[
        "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn",
        "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
        "return", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
        "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
        "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
    ];
    if KEYWORDS.contains(&name) {
        Ident::new_raw(name, Span::call_site())
    } else {
        Ident::new(name, Span::call_site())
    }
}

/// A doc comment of the C headers, cleaned for Rust: `@brief` dropped, `@param` lines and `@uform`
/// directives removed, lines trimmed.
pub fn clean_doc(doc: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    // The indentation of the `@param` line being skipped: deeper lines continue it.
    let mut param_indent: Option<usize> = None;
    for raw in doc.lines() {
        let indent = raw.len() - raw.trim_start().len();
        let line = raw.trim();
        if let Some(base) = param_indent {
            if !line.is_empty() && indent > base && !line.starts_with('@') {
                continue;
            }
            param_indent = None;
        }
        if line.starts_with("@param") {
            param_indent = Some(indent);
            continue;
        }
        let line = match line.find("@uform") {
            Some(at) => line[..at].trim_end(),
            None => line,
        };
        let line = line
            .strip_prefix("@brief")
            .map(str::trim_start)
            .unwrap_or(line);
        if line.is_empty() && out.last().is_none_or(String::is_empty) {
            continue;
        }
        out.push(line.to_owned());
    }
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out.join("\n")
}

/// The first sentence-bearing paragraph of a cleaned doc.
pub fn summary(doc: &str) -> String {
    clean_doc(doc).split("\n\n").next().unwrap_or("").to_owned()
}
