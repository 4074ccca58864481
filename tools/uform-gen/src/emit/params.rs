//! The parameter walk: a verb's C parameters, between its receiver and executor and its outcome and
//! message, grouped as the Rust method takes them (a tape's four parameters as one input, a path and its
//! length as one), with no tokens yet: `verbs.rs` writes them.

use crate::ir::{CType, Function};
use crate::names::base;

use super::{is_mutable_handle, Cx, Result};

/// What an input accepts: the `crate::inputs` kind its generic parameter names.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Input {
    /// A tape of bytes (`@uform tape NAME`).
    Bytes,
    /// A tape of paths (`@uform tape NAME paths`).
    Paths,
    /// A tape of `float` samples.
    Samples,
    /// One value per item of the first tape (`@uform per-item NAME`).
    Each(CType),
    /// One path and its length (`@uform path LENGTH`).
    OnePath,
}

/// A verb's parameter, or the C parameters the Rust layer takes as one.
#[derive(Clone, Debug)]
pub(super) enum Param {
    /// An input taken through `Accepts`.
    Input { name: String, input: Input },
    /// A set of flags, by value.
    Flags { name: String, c: String },
    /// A number, by value.
    Number { name: String, ty: CType },
    /// The argument struct, a `@uform config`.
    Config { c: String },
    /// The arena the answer lands in.
    Arena { name: String },
    /// The out-pointer of the views the verb answers (`@uform result NAME`).
    Result { c: String },
}

/// A verb as the walk reads it.
pub(super) struct Shape {
    /// The Rust method: the C name without `uform_` and the receiver's name.
    pub method: String,
    pub params: Vec<Param>,
}

impl Shape {
    /// The argument struct's C name.
    pub fn config(&self) -> Option<&str> {
        self.params.iter().find_map(|p| match p {
            Param::Config { c } => Some(c.as_str()),
            _ => None,
        })
    }

    /// The C name of the struct of views the verb answers.
    pub fn result(&self) -> Option<&str> {
        self.params.iter().find_map(|p| match p {
            Param::Result { c } => Some(c.as_str()),
            _ => None,
        })
    }

    /// Whether the verb takes an arena.
    pub fn has_arena(&self) -> bool {
        self.params.iter().any(|p| matches!(p, Param::Arena { .. }))
    }

    /// The first tape, whose items every per-item input and the config's checks count.
    pub fn first_tape(&self) -> Option<&str> {
        self.params.iter().find_map(|p| match p {
            Param::Input {
                name,
                input: Input::Bytes | Input::Paths | Input::Samples,
            } => Some(name.as_str()),
            _ => None,
        })
    }
}

/// The annotations of a verb that name its parameters: `@uform tape`, `per-item`, `path` and `result`.
struct Annotations<'f> {
    tapes: Vec<&'f [String]>,
    per_item: Vec<String>,
    path: Option<String>,
    result: Option<String>,
}

impl<'f> Annotations<'f> {
    /// Reads the annotations of `f`.
    fn of(f: &'f Function) -> Self {
        Annotations {
            tapes: f.directives.all("tape").collect(),
            per_item: f
                .directives
                .all("per-item")
                .filter_map(|a| a.first().cloned())
                .collect(),
            path: f.directives.first("path").and_then(|a| a.first().cloned()),
            result: f
                .directives
                .first("result")
                .and_then(|a| a.first().cloned()),
        }
    }
}

/// Whether the C parameters after `at` are named `names`, in order.
fn followed_by(c: &[(String, CType)], at: usize, names: &[String]) -> bool {
    names
        .iter()
        .enumerate()
        .all(|(offset, name)| c.get(at + 1 + offset).map(|p| &p.0) == Some(name))
}

/// The Rust method's name: the C name without `uform_` and the receiver's name.
fn method_name(f: &Function, receiver: &str) -> String {
    f.name
        .strip_prefix("uform_")
        .map(|n| n.strip_prefix(&format!("{}_", base(receiver))).unwrap_or(n))
        .unwrap_or(&f.name)
        .to_owned()
}

/// Where the verb's own parameters end: checks it takes its receiver and executor first and its outcome
/// and message last.
fn verb_end(f: &Function) -> Result<usize> {
    let c = &f.params;
    if c.len() < 4 || c[1].0 != "executor" {
        return Err(format!(
            "uform-gen: the verb `{}` does not take its receiver and executor first",
            f.name
        ));
    }
    let end = c.len() - 2;
    if c[end].0 != "outcome" || c[end + 1].0 != "message" {
        return Err(format!(
            "uform-gen: the verb `{}` does not end with its outcome and message",
            f.name
        ));
    }
    Ok(end)
}

/// The tape input at C parameter `i` (`@uform tape NAME [paths]`), which takes four C parameters.
fn tape_param(f: &Function, i: usize, tape: &[String]) -> Result<(Param, usize)> {
    let (name, ty) = &f.params[i];
    let CType::Ptr { to, .. } = ty else {
        return Err(format!("uform-gen: the tape `{name}` is not a pointer"));
    };
    let input = match (&**to, tape.get(1).map(String::as_str)) {
        (CType::Char | CType::Int("u8"), Some("paths")) => Input::Paths,
        (CType::Char | CType::Int("u8"), _) => Input::Bytes,
        (CType::F32, _) => Input::Samples,
        (other, _) => return Err(format!("uform-gen: a tape of `{other:?}`")),
    };
    let rest = ["length", "offsets", "count"].map(|suffix| format!("{name}_{suffix}"));
    if !followed_by(&f.params, i, &rest) {
        return Err(format!(
            "uform-gen: the tape `{name}` of `{}` lacks `{}`",
            f.name,
            rest.join("`, `")
        ));
    }
    Ok((
        Param::Input {
            name: name.clone(),
            input,
        },
        4,
    ))
}

/// The out-pointer of the views the verb answers (`@uform result NAME`).
fn result_param(name: &str, ty: &CType) -> Result<Param> {
    let CType::Ptr { mutable: true, to } = ty else {
        return Err(format!(
            "uform-gen: the result `{name}` is not an out-pointer"
        ));
    };
    let CType::Struct(c) = &**to else {
        return Err(format!("uform-gen: the result `{name}` is not a struct"));
    };
    Ok(Param::Result { c: c.clone() })
}

impl Cx<'_> {
    /// Reads the `@uform verb` function `f` of the handle `receiver`.
    pub(super) fn walk(&self, f: &Function, receiver: &str) -> Result<Shape> {
        let method = method_name(f, receiver);
        let notes = Annotations::of(f);
        let end = verb_end(f)?;
        let mut params = Vec::new();
        let mut i = 2;
        while i < end {
            let (param, taken) = self.param_at(f, &notes, i)?;
            params.push(param);
            i += taken;
        }
        Ok(Shape { method, params })
    }

    /// The parameter starting at C parameter `i`, and how many C parameters it takes.
    fn param_at(&self, f: &Function, notes: &Annotations, i: usize) -> Result<(Param, usize)> {
        let (name, ty) = &f.params[i];
        Ok(
            if let Some(tape) = notes.tapes.iter().find(|t| t.first() == Some(name)) {
                tape_param(f, i, tape)?
            } else if notes.per_item.contains(name) {
                let CType::Ptr { to, .. } = ty else {
                    return Err(format!("uform-gen: `{name}` is not a pointer"));
                };
                (
                    Param::Input {
                        name: name.clone(),
                        input: Input::Each((**to).clone()),
                    },
                    1,
                )
            } else if let Some(length) = notes
                .path
                .as_ref()
                .filter(|length| length.strip_suffix("_length").unwrap_or(length) == name)
            {
                if !followed_by(&f.params, i, std::slice::from_ref(length)) {
                    return Err(format!(
                        "uform-gen: the path `{name}` of `{}` lacks `{length}` after it",
                        f.name
                    ));
                }
                (
                    Param::Input {
                        name: name.clone(),
                        input: Input::OnePath,
                    },
                    2,
                )
            } else if notes.result.as_deref() == Some(name.as_str()) {
                (result_param(name, ty)?, 1)
            } else {
                (self.plain_param(f, name, ty)?, 1)
            },
        )
    }

    /// A parameter no annotation names: flags, the config, the arena or a number.
    fn plain_param(&self, f: &Function, name: &str, ty: &CType) -> Result<Param> {
        Ok(match ty {
            CType::Enum(e) if self.is_flags(e) => Param::Flags {
                name: name.to_owned(),
                c: e.clone(),
            },
            CType::Ptr { mutable: false, to } => match &**to {
                CType::Struct(c) if self.is_config(c) => Param::Config { c: c.clone() },
                other => {
                    return Err(format!(
                        "uform-gen: the verb `{}` takes `{name}: *const {other:?}`, which it cannot map",
                        f.name
                    ))
                }
            },
            CType::Handle(h) if is_mutable_handle(h) => Param::Arena {
                name: name.to_owned(),
            },
            number if number.is_number() => Param::Number {
                name: name.to_owned(),
                ty: number.clone(),
            },
            other => {
                return Err(format!(
                    "uform-gen: the verb `{}` takes `{name}: {other:?}`, which it cannot map",
                    f.name
                ))
            }
        })
    }
}
