//! The `// SAFETY:` comments above the generated layer's `unsafe` blocks and impls: one template per kind of
//! block, filled with the C function (or type) it concerns, each saying what the headers' contract (the
//! lifetime rules of `types.h`, each header's own) guarantees for that call.
//!
//! A comment is no token, so an emitter places a marker where the comment goes, the statement or item
//! `uform_gen_safety!("...");`, and once prettyplease formatted it, [`join_markers`] puts each marker back
//! on one line and [`comments`] turns it into `// SAFETY:` lines at its indentation.

use proc_macro2::TokenStream;
use quote::quote;

/// The macro name of the marker, which no generated file keeps.
const MARKER: &str = "uform_gen_safety!(\"";

/// Where the comment lines wrap, indentation included.
const WIDTH: usize = 110;

/// A kind of `unsafe` block (or impl) the generated layer holds, with what its comment names.
pub(super) enum Unsafe<'a> {
    /// `uform_<enum>_name(value)`, whose answer `marshal::static_str` reads.
    Name { function: &'a str },
    /// `uform_<enum>_parse(name, &mut raw)` inside the closure `marshal::parse` calls.
    Parse { function: &'a str },
    /// A getter, `uform_<handle>_<what>(handle, out, &mut message)`.
    Get { function: &'a str },
    /// `out.assume_init()` once a getter answered `ok`.
    Got { function: &'a str, ty: &'a str },
    /// A constructor, `uform_<handle>_<verb>(args..., &mut handle, &mut message)`.
    Construct { function: &'a str },
    /// `HandlerSlot::resurface(slot)` once a blocking constructor returned.
    Resurface { function: &'a str },
    /// `core::mem::zeroed()` for an entry a slice function fills.
    Zeroed { ty: &'a str },
    /// A slice function, `uform_<what>(pointer, capacity, &mut count, &mut message)`.
    Fill {
        function: &'a str,
        pointer: &'a str,
        capacity: &'a str,
    },
    /// `&*held` at the start of a verb's `Verb::call`.
    Held { function: &'a str },
    /// The C verb called at the end of `Verb::call`.
    Call { function: &'a str },
    /// `unsafe impl Verb` for a verb's call struct; `result` is its result struct, if any.
    Verb {
        function: &'a str,
        result: Option<&'a str>,
    },
}

impl Unsafe<'_> {
    /// The comment's text, after `SAFETY: `.
    fn text(&self) -> String {
        match *self {
            Unsafe::Name { function } => format!(
                "`{function}` takes the enumerator by value and answers a static, NUL-terminated name the \
                 library never frees, or `NULL` for a value it does not know: what `static_str` requires."
            ),
            Unsafe::Parse { function } => format!(
                "`{function}` reads `name`, a NUL-terminated copy `marshal::parse` keeps alive until this \
                 closure returns, and writes at most the enumerator, through `&mut raw`, a local."
            ),
            Unsafe::Get { function } => format!(
                "`{function}` reads the handle `self` owns, live for this borrow, and writes only through \
                 `out` and `message`, locals that outlive the call; a message it writes is static (types.h)."
            ),
            Unsafe::Got { function, ty } => format!(
                "`out` started as zero bytes, a valid `{ty}`, and `{function}` answered `ok`, so `out` holds \
                 the value it wrote."
            ),
            Unsafe::Construct { function } => format!(
                "`{function}` runs to its end before returning, reading the argument struct and what it names \
                 (bytes, borrowed handles, the progress slot on this stack) only meanwhile, all of which \
                 outlive this statement, and writes only through `handle` and `message`, locals (types.h)."
            ),
            Unsafe::Resurface { function } => format!(
                "`{function}` returned, so the call is final and no trampoline runs on the slot, which \
                 lives on this stack, any more."
            ),
            Unsafe::Zeroed { ty } => format!(
                "bindgen writes `{ty}` as a `#[repr(C)]` struct of integers, enumerator newtypes, pointers, \
                 optional function pointers and arrays of them, each of which is valid as zero bytes."
            ),
            Unsafe::Fill {
                function,
                pointer,
                capacity,
            } => format!(
                "`{function}` writes at most `{capacity}` entries through `{pointer}`, here the buffer of \
                 `raw`'s `raw.len()` entries (`NULL` only when empty), then only `count` and `message`, \
                 locals, and keeps no pointer once it returns."
            ),
            Unsafe::Held { function } => format!(
                "by `Verb::call`'s contract, `held` points to the tuple `hold` answered for this call of \
                 `{function}`, initialised, in place and unchanged until the call is final."
            ),
            Unsafe::Call { function } => format!(
                "`{function}` reads what `held` holds (any tapes, which point into it and its scratch, \
                 argument struct and arena) and calls any handler through the slot `hold` armed; \
                 `Verb::call`'s contract keeps them in place until the call is final, which types.h asks \
                 of a blocking call (a `NULL` outcome) until it returns and of a deferred one until its \
                 outcome is final. The receiver borrows the target and the executor for as long, `raw` \
                 points to a zeroed result struct, and `outcome` and `message` to slots valid meanwhile."
            ),
            Unsafe::Verb {
                function,
                result: Some(result),
            } => format!(
                "`Raw` is `sys::{result}`, a `#[repr(C)]` struct of pointers and integers valid as zero bytes; \
                 `call` hands `{function}` only pointers into `held` and its scratch besides the receiver's \
                 own, and `finish` reads only the views `{function}` published into `raw` on success."
            ),
            Unsafe::Verb {
                function,
                result: None,
            } => format!(
                "`Raw` is `()`, since `{function}` answers no result struct; `call` hands it only pointers \
                 into `held` and its scratch besides the receiver's own, and `finish` reads nothing."
            ),
        }
    }

    /// The marker statement (or item) that [`comments`] turns into the comment.
    pub(super) fn comment(&self) -> TokenStream {
        let text = self.text();
        debug_assert!(
            !text.contains(['"', '\\', '\n']),
            "a safety comment holds no quote, backslash or newline: {text}"
        );
        quote!(uform_gen_safety!(#text);)
    }
}

/// Puts each marker of formatted source on one line, as prettyplease breaks a long one over three:
/// `uform_gen_safety!(`, the string, `);`.
pub(crate) fn join_markers(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut open: Option<String> = None;
    for line in source.lines() {
        if let Some(marker) = open.as_mut() {
            marker.push_str(line.trim());
            if line.trim_end().ends_with(");") {
                out.push_str(marker);
                out.push('\n');
                open = None;
            }
            continue;
        }
        if line.trim() == MARKER.trim_end_matches('"') {
            open = Some(line.trim_end().to_string());
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some(marker) = open {
        out.push_str(&marker);
        out.push('\n');
    }
    out
}

/// Replaces each marker line of formatted source with its `// SAFETY:` comment, wrapped at [`WIDTH`].
pub(crate) fn comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    for line in source.lines() {
        match marker(line) {
            Some((indent, text)) => wrap(&mut out, indent, &format!("SAFETY: {text}")),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// Whether `line` is a marker: its indentation and its comment's text.
pub(crate) fn marker(line: &str) -> Option<(&str, &str)> {
    let body = line.trim_start();
    let text = body.strip_prefix(MARKER)?.strip_suffix("\");")?;
    Some((&line[..line.len() - body.len()], text))
}

/// Appends `text` as `//` lines of at most [`WIDTH`] columns (a longer word keeps its own line).
fn wrap(out: &mut String, indent: &str, text: &str) {
    let mut line = String::new();
    for word in text.split(' ').filter(|word| !word.is_empty()) {
        if !line.is_empty() && indent.len() + 3 + line.len() + 1 + word.len() > WIDTH {
            out.push_str(&format!("{indent}// {line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&format!("{indent}// {line}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_become_wrapped_comments_at_their_indentation() {
        let long = "word ".repeat(40);
        let source =
            format!("fn f() {{\n    uform_gen_safety!(\"{long}\");\n    unsafe {{ g() }}\n}}\n");
        let text = comments(&source);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "fn f() {");
        assert!(lines[1].starts_with("    // SAFETY: word word"));
        assert!(lines[2].starts_with("    // word"), "{text}");
        assert!(lines.iter().all(|line| line.len() <= WIDTH));
        assert_eq!(lines[lines.len() - 2], "    unsafe { g() }");
        assert_eq!(text.matches("word").count(), 40, "no word is lost");
        assert!(!text.contains("uform_gen_safety"));
    }

    #[test]
    fn every_comment_is_one_line_of_tokens() {
        let kinds = [
            Unsafe::Name { function: "f" },
            Unsafe::Parse { function: "f" },
            Unsafe::Get { function: "f" },
            Unsafe::Got {
                function: "f",
                ty: "t",
            },
            Unsafe::Construct { function: "f" },
            Unsafe::Resurface { function: "f" },
            Unsafe::Zeroed { ty: "t" },
            Unsafe::Fill {
                function: "f",
                pointer: "p",
                capacity: "c",
            },
            Unsafe::Held { function: "f" },
            Unsafe::Call { function: "f" },
            Unsafe::Verb {
                function: "f",
                result: Some("r"),
            },
            Unsafe::Verb {
                function: "f",
                result: None,
            },
        ];
        for kind in kinds {
            let text = kind.text();
            assert!(!text.contains(['"', '\\', '\n']), "{text}");
            let tokens = kind.comment().to_string();
            let file = syn::parse_file(&format!("fn f() {{ {tokens} }}")).unwrap();
            let pretty = prettyplease::unparse(&file);
            let joined = join_markers(&pretty);
            let line = joined.lines().nth(1).unwrap();
            assert_eq!(marker(line).map(|(_, text)| text), Some(text.as_str()));
        }
    }
}
