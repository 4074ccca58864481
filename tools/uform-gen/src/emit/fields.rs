//! The field walk: a C struct's fields as the Rust layer groups them (a pointer and its count as one slice,
//! a tape's four fields as one pair, a handler and its context as one closure), and what follows for the
//! struct's type (a lifetime, `Copy`, conversions, checks).

use crate::ir::{CType, Field, Struct};

use super::{is_mutable_handle, Cx, Result};

/// How a C field appears in Rust.
#[derive(Clone, Debug)]
pub(super) enum Kind {
    Number(CType),
    Enum(String),
    Flags(String),
    Array(CType, usize),
    Chars,
    Nested(String),
    Slice { count: String, elem: CType },
    Path { length: String },
    Str { length: String },
    Bytes { length: String },
    Tape { elem: CType },
    Handle(String),
    Out(String),
    Progress { context: String },
}

impl Kind {
    /// Whether the Rust field borrows, so that its struct needs a lifetime.
    fn borrows(&self) -> bool {
        matches!(
            self,
            Kind::Slice { .. }
                | Kind::Path { .. }
                | Kind::Str { .. }
                | Kind::Bytes { .. }
                | Kind::Tape { .. }
                | Kind::Handle(_)
                | Kind::Out(_)
                | Kind::Progress { .. }
        )
    }

    /// Whether the Rust field is `Clone`.
    fn is_clone(&self) -> bool {
        match self {
            Kind::Out(_) | Kind::Progress { .. } => false,
            Kind::Handle(handle) => !is_mutable_handle(handle),
            _ => true,
        }
    }
}

/// A field as the Rust layer groups it: named after its first C field.
#[derive(Clone, Debug)]
pub(super) struct RField {
    pub name: String,
    pub doc: String,
    pub kind: Kind,
}

impl Cx<'_> {
    /// The fields of a struct as the Rust layer groups them.
    pub(super) fn classify(&self, s: &Struct) -> Result<Vec<RField>> {
        let mut consumed: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for (index, field) in s.fields.iter().enumerate() {
            if consumed.contains(&field.name) {
                continue;
            }
            let mut take = |name: String| -> Result<String> {
                if !s.fields.iter().any(|f| f.name == name) {
                    return Err(format!(
                        "uform-gen: `{}` names `{name}`, which `{}` lacks",
                        field.name, s.c
                    ));
                }
                consumed.push(name.clone());
                Ok(name)
            };
            let kind = match Self::directed_kind(s, field, &mut take)? {
                Some(kind) => kind,
                None => self.typed_kind(s, index, &mut take)?,
            };
            out.push(RField {
                name: field.name.clone(),
                doc: field.doc.clone(),
                kind,
            });
        }
        Ok(out)
    }

    /// The kind a field's `@uform path|str|bytes|tape` directive gives it, taking the fields that go with it;
    /// `None` without one.
    fn directed_kind(
        s: &Struct,
        field: &Field,
        take: &mut dyn FnMut(String) -> Result<String>,
    ) -> Result<Option<Kind>> {
        // `@uform path|str|bytes [LENGTH]`: the length field, `NAME_length` unless named.
        let length = |args: &[String]| {
            args.first()
                .cloned()
                .unwrap_or_else(|| format!("{}_length", field.name))
        };
        Ok(Some(if let Some(args) = field.directives.first("path") {
            Kind::Path {
                length: take(length(args))?,
            }
        } else if let Some(args) = field.directives.first("str") {
            Kind::Str {
                length: take(length(args))?,
            }
        } else if let Some(args) = field.directives.first("bytes") {
            if !matches!(&field.ty, CType::Ptr { mutable: false, .. }) {
                return Err(format!(
                    "uform-gen: the bytes `{}.{}` are not a const pointer",
                    s.c, field.name
                ));
            }
            Kind::Bytes {
                length: take(length(args))?,
            }
        } else if field.directives.first("tape").is_some() {
            for suffix in ["length", "offsets", "count"] {
                take(format!("{}_{suffix}", field.name))?;
            }
            let CType::Ptr { to, .. } = &field.ty else {
                return Err(format!(
                    "uform-gen: the tape `{}` is not a pointer",
                    field.name
                ));
            };
            Kind::Tape {
                elem: (**to).clone(),
            }
        } else {
            return Ok(None);
        }))
    }

    /// The kind the type of field `index` gives it, without a directive: a handler takes its context, a const
    /// pointer its `_count`.
    fn typed_kind(
        &self,
        s: &Struct,
        index: usize,
        take: &mut dyn FnMut(String) -> Result<String>,
    ) -> Result<Kind> {
        let fields = &s.fields;
        let field = &fields[index];
        let named = |name: &str| fields.iter().any(|f| f.name == name);
        Ok(match &field.ty {
            CType::Progress => {
                let context = fields
                    .get(index + 1)
                    .map(|f| f.name.clone())
                    .filter(|name| name.ends_with("context"))
                    .ok_or_else(|| {
                        format!("uform-gen: `{}` has no context field after it", field.name)
                    })?;
                Kind::Progress {
                    context: take(context)?,
                }
            }
            CType::Ptr { to, mutable } if named(&format!("{}_count", field.name)) && !mutable => {
                Kind::Slice {
                    count: take(format!("{}_count", field.name))?,
                    elem: (**to).clone(),
                }
            }
            CType::Ptr { mutable: true, to } => match &**to {
                CType::Struct(target) if self.is_pod(target)? => Kind::Out(target.clone()),
                other => return Err(format!("uform-gen: `{}` points to `{other:?}`", field.name)),
            },
            CType::Handle(handle) => Kind::Handle(handle.clone()),
            CType::Enum(e) if self.is_flags(e) => Kind::Flags(e.clone()),
            CType::Enum(e) => Kind::Enum(e.clone()),
            CType::Struct(target) => Kind::Nested(target.clone()),
            CType::Array(elem, _) if **elem == CType::Char => Kind::Chars,
            CType::Array(elem, len) if elem.is_number() => Kind::Array((**elem).clone(), *len),
            number if number.is_number() => Kind::Number(number.clone()),
            other => {
                return Err(format!(
                    "uform-gen: `{}.{}` has a type it cannot map: `{other:?}`",
                    s.c, field.name
                ))
            }
        })
    }

    /// Whether `holds` is true of every field of `c`, its nested structs' fields included.
    fn every_field(&self, c: &str, holds: &dyn Fn(&Kind) -> bool) -> Result<bool> {
        for field in self.classify(self.struct_of(c)?)? {
            let ok = match &field.kind {
                Kind::Nested(nested) => self.every_field(nested, holds)?,
                kind => holds(kind),
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Plain numbers, arrays of them and structs of them: mirrored `#[repr(C)]`, passed by pointer.
    pub(super) fn is_pod(&self, c: &str) -> Result<bool> {
        for field in &self.struct_of(c)?.fields {
            let ok = match &field.ty {
                ty if ty.is_number() => true,
                CType::Array(elem, _) => elem.is_number(),
                CType::Struct(nested) => self.is_pod(nested)?,
                _ => false,
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether the Rust struct borrows anything.
    pub(super) fn needs_lifetime(&self, c: &str) -> Result<bool> {
        Ok(!self.every_field(c, &|kind| !kind.borrows())?)
    }

    /// No `&mut`, no handler and no `String`: `Copy`, and converted to C by reference.
    pub(super) fn is_copy(&self, c: &str) -> Result<bool> {
        self.every_field(c, &|kind| kind.is_clone() && !matches!(kind, Kind::Chars))
    }

    /// No `&mut` and no handler: `Clone`.
    pub(super) fn is_clone(&self, c: &str) -> Result<bool> {
        self.every_field(c, &Kind::is_clone)
    }

    /// No handles, no `&mut`, no handler: `PartialEq`.
    pub(super) fn is_comparable(&self, c: &str) -> Result<bool> {
        self.every_field(c, &|kind| {
            !matches!(kind, Kind::Out(_) | Kind::Progress { .. } | Kind::Handle(_))
        })
    }

    /// Only owned values, which the library fills: converted from C.
    pub(super) fn readable(&self, c: &str) -> Result<bool> {
        self.every_field(c, &|kind| {
            matches!(
                kind,
                Kind::Number(_) | Kind::Enum(_) | Kind::Array(..) | Kind::Chars
            )
        })
    }

    /// Whether the struct's fields `offsets`, `ids` and `weights` are slices: a set of edges over a step's
    /// items.
    pub(super) fn is_edges(fields: &[RField]) -> bool {
        let slice = |name: &str| {
            fields
                .iter()
                .any(|f| f.name == name && matches!(f.kind, Kind::Slice { .. }))
        };
        slice("offsets") && slice("ids") && slice("weights")
    }

    /// Whether a struct has anything to check before a call, as the library would: a tape, edges, or a
    /// nested struct that has.
    pub(super) fn checks(&self, c: &str) -> Result<bool> {
        let fields = self.classify(self.struct_of(c)?)?;
        if Self::is_edges(&fields) {
            return Ok(true);
        }
        for field in &fields {
            let checks = match &field.kind {
                Kind::Tape { .. } => true,
                Kind::Nested(nested) => self.checks(nested)?,
                _ => false,
            };
            if checks {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
