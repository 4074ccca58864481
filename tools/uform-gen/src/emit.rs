//! From the IR to the safe layer's token streams, one per header.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{CType, Decl, Enum, Function, Header, Ir, Struct};
use crate::names::{base, camel, clean_doc, ident, type_name};

type Result<T, E = String> = std::result::Result<T, E>;

/// One header's safe layer.
pub struct Output {
    /// The header's module name (`types`, `model`, `encode`, `train`).
    pub header: String,
    /// The module's items.
    pub tokens: TokenStream,
}

/// What the generator knows of the hand-written handles.
struct HandleInfo {
    rust: &'static str,
    mutable: bool,
    lifetime: bool,
    of: Option<&'static str>,
}

fn handle_info(c: &str) -> Option<HandleInfo> {
    Some(match c {
        "uform_executor_t" => HandleInfo {
            rust: "Executor",
            mutable: false,
            lifetime: false,
            of: None,
        },
        "uform_arena_t" => HandleInfo {
            rust: "Arena",
            mutable: true,
            lifetime: false,
            of: None,
        },
        "uform_model_t" => HandleInfo {
            rust: "Model",
            mutable: false,
            lifetime: false,
            of: Some("OfModel"),
        },
        "uform_mesh_t" => HandleInfo {
            rust: "Mesh",
            mutable: false,
            lifetime: false,
            of: None,
        },
        "uform_trainer_t" => HandleInfo {
            rust: "Trainer",
            mutable: false,
            lifetime: true,
            of: Some("OfTrainer"),
        },
        _ => return None,
    })
}

/// The hand-written views of the structs verbs answer: their type (given a lifetime) and conversion.
fn view(c: &str, lifetime: &TokenStream) -> Option<(TokenStream, TokenStream)> {
    Some(match c {
        "uform_encoded_t" => (
            quote!(crate::Encoded<#lifetime>),
            quote!(crate::Encoded::from_raw(raw)),
        ),
        "uform_tape_t" => (
            quote!(crate::Tape<#lifetime>),
            quote!(crate::Tape::from_raw(raw)),
        ),
        "uform_rows_t" => (
            quote!(Option<crate::Rows<#lifetime>>),
            quote!(crate::Rows::from_raw(raw)),
        ),
        _ => return None,
    })
}

fn is_view(c: &str) -> bool {
    view(c, &quote!('a)).is_some()
}

/// `#[doc = " ..."]` lines.
fn doc(text: &str) -> TokenStream {
    let lines = text.lines().map(|line| {
        if line.is_empty() {
            String::new()
        } else {
            format!(" {line}")
        }
    });
    quote!(#(#[doc = #lines])*)
}

fn prim(ty: &CType) -> Result<TokenStream> {
    Ok(match ty {
        CType::Usize => quote!(usize),
        CType::Int(name) => {
            let name = format_ident!("{}", name);
            quote!(#name)
        }
        CType::F32 => quote!(f32),
        CType::F64 => quote!(f64),
        CType::Bool => quote!(bool),
        other => return Err(format!("uform-gen: `{other:?}` is not a number")),
    })
}

fn zero(ty: &CType) -> TokenStream {
    match ty {
        CType::F32 | CType::F64 => quote!(0.0),
        CType::Bool => quote!(false),
        _ => quote!(0),
    }
}

/// How a C field appears in Rust.
#[derive(Clone, Debug)]
enum Kind {
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

#[derive(Clone, Debug)]
struct RField {
    name: String,
    doc: String,
    kind: Kind,
}

struct Cx<'i> {
    ir: &'i Ir,
}

impl<'i> Cx<'i> {
    fn is_flags(&self, c: &str) -> bool {
        self.ir
            .enum_named(c)
            .is_some_and(|e| e.directives.first("flags").is_some())
    }

    fn enum_type(&self, c: &str) -> TokenStream {
        let name = ident(&type_name(c));
        quote!(crate::#name)
    }

    fn struct_rust_name(&self, c: &str) -> String {
        match self
            .ir
            .struct_named(c)
            .and_then(|s| s.directives.first("config").map(|w| w.to_vec()))
        {
            Some(words) if !words.is_empty() => format!("{}Config", words[0]),
            _ => type_name(c),
        }
    }

    /// The fields of a struct as the Rust layer groups them.
    fn classify(&self, s: &Struct) -> Result<Vec<RField>> {
        let fields = &s.fields;
        let named = |name: &str| fields.iter().any(|f| f.name == name);
        let mut consumed: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for (index, field) in fields.iter().enumerate() {
            if consumed.contains(&field.name) {
                continue;
            }
            let mut take = |name: String| -> Result<String> {
                if !named(&name) {
                    return Err(format!(
                        "uform-gen: `{}` names `{name}`, which `{}` lacks",
                        field.name, s.c
                    ));
                }
                consumed.push(name.clone());
                Ok(name)
            };
            let kind = if let Some(args) = field.directives.first("path") {
                Kind::Path {
                    length: take(
                        args.first()
                            .cloned()
                            .unwrap_or_else(|| format!("{}_length", field.name)),
                    )?,
                }
            } else if let Some(args) = field.directives.first("str") {
                Kind::Str {
                    length: take(
                        args.first()
                            .cloned()
                            .unwrap_or_else(|| format!("{}_length", field.name)),
                    )?,
                }
            } else if let Some(args) = field.directives.first("bytes") {
                if !matches!(&field.ty, CType::Ptr { mutable: false, .. }) {
                    return Err(format!(
                        "uform-gen: the bytes `{}.{}` are not a const pointer",
                        s.c, field.name
                    ));
                }
                Kind::Bytes {
                    length: take(
                        args.first()
                            .cloned()
                            .unwrap_or_else(|| format!("{}_length", field.name)),
                    )?,
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
                match &field.ty {
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
                    CType::Ptr { to, mutable }
                        if named(&format!("{}_count", field.name)) && !mutable =>
                    {
                        Kind::Slice {
                            count: take(format!("{}_count", field.name))?,
                            elem: (**to).clone(),
                        }
                    }
                    CType::Ptr { mutable: true, to } => match &**to {
                        CType::Struct(target) if self.is_pod(target)? => Kind::Out(target.clone()),
                        other => {
                            return Err(format!(
                                "uform-gen: `{}` points to `{other:?}`",
                                field.name
                            ))
                        }
                    },
                    CType::Handle(handle) => Kind::Handle(handle.clone()),
                    CType::Enum(e) if self.is_flags(e) => Kind::Flags(e.clone()),
                    CType::Enum(e) => Kind::Enum(e.clone()),
                    CType::Struct(target) => Kind::Nested(target.clone()),
                    CType::Array(elem, _) if **elem == CType::Char => Kind::Chars,
                    CType::Array(elem, len) if elem.is_number() => {
                        Kind::Array((**elem).clone(), *len)
                    }
                    number if number.is_number() => Kind::Number(number.clone()),
                    other => {
                        return Err(format!(
                            "uform-gen: `{}.{}` has a type it cannot map: `{other:?}`",
                            s.c, field.name
                        ))
                    }
                }
            };
            out.push(RField {
                name: field.name.clone(),
                doc: field.doc.clone(),
                kind,
            });
        }
        Ok(out)
    }

    fn struct_of(&self, c: &str) -> Result<&'i Struct> {
        self.ir
            .struct_named(c)
            .ok_or_else(|| format!("uform-gen: unknown struct `{c}`"))
    }

    /// Plain numbers, arrays of them and structs of them: mirrored `#[repr(C)]`, passed by pointer.
    fn is_pod(&self, c: &str) -> Result<bool> {
        let s = self.struct_of(c)?;
        for field in &s.fields {
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

    fn needs_lifetime(&self, c: &str) -> Result<bool> {
        for field in self.classify(self.struct_of(c)?)? {
            let needs = match &field.kind {
                Kind::Slice { .. }
                | Kind::Path { .. }
                | Kind::Str { .. }
                | Kind::Bytes { .. }
                | Kind::Tape { .. }
                | Kind::Handle(_)
                | Kind::Out(_)
                | Kind::Progress { .. } => true,
                Kind::Nested(nested) => self.needs_lifetime(nested)?,
                _ => false,
            };
            if needs {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// No `&mut`, no handler and no `String`: `Copy`.
    fn is_copy(&self, c: &str) -> Result<bool> {
        for field in self.classify(self.struct_of(c)?)? {
            let copy = match &field.kind {
                Kind::Chars | Kind::Out(_) | Kind::Progress { .. } => false,
                Kind::Handle(handle) => !handle_info(handle).is_some_and(|h| h.mutable),
                Kind::Nested(nested) => self.is_copy(nested)?,
                _ => true,
            };
            if !copy {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Converts from the C struct: only owned values, which the library fills.
    fn readable(&self, c: &str) -> Result<bool> {
        for field in self.classify(self.struct_of(c)?)? {
            let ok = match &field.kind {
                Kind::Number(_) | Kind::Enum(_) | Kind::Array(..) | Kind::Chars => true,
                Kind::Nested(nested) => self.readable(nested)?,
                _ => false,
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Converts to the C struct by reference: no `&mut`, no handler, no `String`.
    fn writable(&self, c: &str) -> Result<bool> {
        for field in self.classify(self.struct_of(c)?)? {
            let ok = match &field.kind {
                Kind::Chars | Kind::Out(_) | Kind::Progress { .. } => false,
                Kind::Handle(handle) => !handle_info(handle).is_some_and(|h| h.mutable),
                Kind::Nested(nested) => self.writable(nested)?,
                _ => true,
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The Rust type of a struct, with `lifetime` when it needs one.
    fn struct_type(&self, c: &str, lifetime: &TokenStream) -> Result<TokenStream> {
        let name = ident(&self.struct_rust_name(c));
        Ok(if self.needs_lifetime(c)? {
            quote!(crate::#name<#lifetime>)
        } else {
            quote!(crate::#name)
        })
    }

    fn elem_type(&self, elem: &CType) -> Result<TokenStream> {
        Ok(match elem {
            CType::Char | CType::Int("u8") => quote!(u8),
            CType::Enum(e) => self.enum_type(e),
            other => prim(other)?,
        })
    }

    fn field_type(&self, kind: &Kind) -> Result<TokenStream> {
        let a = quote!('a);
        Ok(match kind {
            Kind::Number(ty) => prim(ty)?,
            Kind::Enum(e) | Kind::Flags(e) => self.enum_type(e),
            Kind::Array(elem, len) => {
                let elem = prim(elem)?;
                let len = Literal::usize_unsuffixed(*len);
                quote!([#elem; #len])
            }
            Kind::Chars => quote!(String),
            Kind::Nested(c) => self.struct_type(c, &a)?,
            Kind::Slice { elem, .. } => {
                let elem = self.elem_type(elem)?;
                quote!(&'a [#elem])
            }
            Kind::Path { .. } => quote!(&'a std::path::Path),
            Kind::Str { .. } => quote!(&'a str),
            Kind::Bytes { .. } => quote!(&'a [u8]),
            Kind::Tape { elem } => {
                let elem = self.elem_type(elem)?;
                quote!((&'a [#elem], &'a [usize]))
            }
            Kind::Handle(handle) => {
                let info = handle_info(handle)
                    .ok_or_else(|| format!("uform-gen: unknown handle `{handle}`"))?;
                let name = format_ident!("{}", info.rust);
                let lifetime = if info.lifetime {
                    quote!(<'a>)
                } else {
                    quote!()
                };
                if info.mutable {
                    quote!(Option<&'a mut crate::#name #lifetime>)
                } else {
                    quote!(Option<&'a crate::#name #lifetime>)
                }
            }
            Kind::Out(c) => {
                let ty = self.struct_type(c, &a)?;
                quote!(Option<&'a mut #ty>)
            }
            Kind::Progress { .. } => quote!(Option<crate::Progress<'a>>),
        })
    }

    fn field_default(&self, kind: &Kind) -> Result<TokenStream> {
        Ok(match kind {
            Kind::Number(ty) => zero(ty),
            Kind::Enum(e) => {
                let e = self
                    .ir
                    .enum_named(e)
                    .ok_or_else(|| format!("uform-gen: unknown enum `{e}`"))?;
                if !e.variants.iter().any(|v| v.value == 0) {
                    return Err(format!(
                        "uform-gen: `{}` has no zero enumerator to default to",
                        e.c
                    ));
                }
                quote!(Default::default())
            }
            Kind::Flags(_) | Kind::Nested(_) => quote!(Default::default()),
            Kind::Array(elem, len) => {
                let zero = zero(elem);
                let len = Literal::usize_unsuffixed(*len);
                quote!([#zero; #len])
            }
            Kind::Chars => quote!(String::new()),
            Kind::Slice { .. } => quote!(&[]),
            Kind::Path { .. } => quote!(std::path::Path::new("")),
            Kind::Str { .. } => quote!(""),
            Kind::Bytes { .. } => quote!(&[]),
            Kind::Tape { .. } => quote!((&[], &[])),
            Kind::Handle(_) | Kind::Out(_) | Kind::Progress { .. } => quote!(None),
        })
    }

    /// The statements and the C fields that convert a field to the C struct.
    fn field_to_raw(&self, field: &RField) -> Result<(TokenStream, Vec<(Ident, TokenStream)>)> {
        let name = ident(&field.name);
        let mut lets = TokenStream::new();
        let fields = match &field.kind {
            Kind::Number(_) | Kind::Array(..) => vec![(name.clone(), quote!(self.#name))],
            Kind::Enum(_) | Kind::Flags(_) => vec![(name.clone(), quote!(self.#name.to_raw()))],
            Kind::Nested(_) => vec![(name.clone(), quote!(self.#name.as_raw()?))],
            Kind::Chars => {
                return Err("uform-gen: a string field cannot be handed to the library".into())
            }
            Kind::Slice { count, .. } => {
                let count = ident(count);
                vec![
                    (name.clone(), quote!(crate::raw::slice(self.#name).cast())),
                    (count, quote!(self.#name.len())),
                ]
            }
            Kind::Path { length } => {
                lets = quote!(let #name = crate::raw::path(self.#name)?;);
                vec![
                    (name.clone(), quote!(#name.0)),
                    (ident(length), quote!(#name.1)),
                ]
            }
            Kind::Str { length } => {
                lets = quote!(let #name = crate::raw::str(self.#name););
                vec![
                    (name.clone(), quote!(#name.0)),
                    (ident(length), quote!(#name.1)),
                ]
            }
            Kind::Bytes { length } => vec![
                (name.clone(), quote!(crate::raw::slice(self.#name).cast())),
                (ident(length), quote!(self.#name.len())),
            ],
            Kind::Tape { .. } => {
                lets = quote!(let #name = crate::inputs::lend(self.#name.0, self.#name.1););
                let (length, offsets, count) = (
                    format_ident!("{}_length", field.name),
                    format_ident!("{}_offsets", field.name),
                    format_ident!("{}_count", field.name),
                );
                vec![
                    (name.clone(), quote!(#name.data.cast())),
                    (length, quote!(#name.length)),
                    (offsets, quote!(#name.offsets)),
                    (count, quote!(#name.count)),
                ]
            }
            Kind::Handle(handle) => {
                let mutable = handle_info(handle).is_some_and(|h| h.mutable);
                if mutable {
                    vec![(name.clone(), quote!(crate::raw::handle_mut(self.#name)))]
                } else {
                    vec![(name.clone(), quote!(crate::raw::handle(self.#name)))]
                }
            }
            Kind::Out(_) => vec![(name.clone(), quote!(crate::raw::out(self.#name)))],
            Kind::Progress { context } => {
                let context = ident(context);
                lets = quote!(let (#name, #context) = crate::handler::arm(slot, self.#name););
                vec![
                    (name.clone(), quote!(#name)),
                    (context.clone(), quote!(#context)),
                ]
            }
        };
        Ok((lets, fields))
    }

    fn field_from_raw(&self, field: &RField) -> Result<TokenStream> {
        let name = ident(&field.name);
        Ok(match &field.kind {
            Kind::Number(_) | Kind::Array(..) => quote!(raw.#name),
            Kind::Enum(e) => {
                let ty = self.enum_type(e);
                let message = format!("the library answered a `{e}` this binding does not know");
                quote!(#ty::from_raw(raw.#name).ok_or(crate::error::unknown(#message))?)
            }
            Kind::Chars => quote!(crate::raw::string(&raw.#name)),
            Kind::Nested(c) => {
                let name_ty = ident(&self.struct_rust_name(c));
                quote!(crate::#name_ty::from_raw(&raw.#name)?)
            }
            other => {
                return Err(format!(
                    "uform-gen: `{other:?}` cannot be read back from the library"
                ))
            }
        })
    }

    // Enumerations ------------------------------------------------------------------------------------------

    fn emit_enum(&self, e: &Enum) -> Result<TokenStream> {
        if e.directives.first("flags").is_some() {
            return self.emit_flags(e);
        }
        let Some(args) = e.directives.first("enum") else {
            return Ok(TokenStream::new());
        };
        let skip: Vec<&str> = args
            .iter()
            .filter_map(|w| w.strip_prefix("skip="))
            .flat_map(|s| s.split(','))
            .collect();
        let print_only = args.iter().any(|w| w == "print-only");
        let stem = base(&e.c);
        let name = ident(&type_name(&e.c));
        let c_ty = ident(&e.c);
        let repr = format_ident!("{}", e.repr);
        let c_name = &e.c;

        let mut variants = Vec::new();
        for v in &e.variants {
            let suffix = v
                .c
                .strip_prefix(&format!("uform_{stem}_"))
                .and_then(|s| s.strip_suffix("_k"))
                .ok_or_else(|| format!("uform-gen: `{}` is not named `uform_{stem}_..._k`", v.c))?;
            if skip.contains(&suffix) {
                continue;
            }
            let rust = v.directives.value("rust").unwrap_or_else(|| camel(suffix));
            variants.push((ident(&rust), v));
        }
        let has_zero = variants.iter().any(|(_, v)| v.value == 0);

        let variant_defs = variants.iter().map(|(rust, v)| {
            let docs = doc(&clean_doc(&v.doc));
            let alias = &v.c;
            let value = Literal::u64_unsuffixed(v.value);
            let default = if v.value == 0 {
                quote!(#[default])
            } else {
                quote!()
            };
            quote!(#docs #[doc(alias = #alias)] #default #rust = #value,)
        });
        let matches = variants.iter().map(|(rust, v)| {
            let value = Literal::u64_unsuffixed(v.value);
            quote!(#value => Some(Self::#rust),)
        });
        let all = variants.iter().map(|(rust, _)| quote!(Self::#rust));

        let name_fn = format!("uform_{stem}_name");
        let parse_fn = format!("uform_{stem}_parse");
        let has_name = self.ir.function_named(&name_fn).is_some();
        let has_parse = !print_only && self.ir.function_named(&parse_fn).is_some();

        let mut text = clean_doc(&e.doc);
        text.push_str(&format!("\n\nMirrors `{c_name}`"));
        match (has_name, has_parse) {
            (true, true) => text.push_str(&format!(
                "; prints through `Display` (`{name_fn}`) and parses through `FromStr` (`{parse_fn}`) the names the C table owns."
            )),
            (true, false) => text.push_str(&format!("; prints through `Display` (`{name_fn}`) the names the C table owns.")),
            _ => text.push('.'),
        }
        if !skip.is_empty() {
            let skipped = skip
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ");
            text.push_str(&format!(
                " It leaves out {skipped}, which `Result` carries instead."
            ));
        }
        let docs = doc(&text);
        let derive_default = if has_zero { quote!(Default,) } else { quote!() };

        let name_impl = if has_name {
            let name_fn = ident(&name_fn);
            let example = example(
                self.ir
                    .function_named(&name_fn.to_string())
                    .map(|f| f.doc.as_str()),
                &variants,
            );
            let name_doc = doc(&format!(
                "The name the C table owns, such as {example}.\n\nCalls `{name_fn}`."
            ));
            let alias = name_fn.to_string();
            quote! {
                #name_doc
                #[doc(alias = #alias)]
                pub fn name(self) -> &'static str {
                    crate::raw::static_str(unsafe { sys::#name_fn(self.to_raw()) }).unwrap_or("")
                }
            }
        } else {
            quote!()
        };
        let display = if has_name {
            quote! {
                impl core::fmt::Display for #name {
                    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                        f.write_str(self.name())
                    }
                }
            }
        } else {
            quote!()
        };
        let from_str = if has_parse {
            let parse_fn = ident(&parse_fn);
            let parse_doc = doc(&format!(
                "Parses a name the C table owns; an unknown name is `Status::InvalidArgument`.\n\nCalls `{parse_fn}`."
            ));
            let alias = parse_fn.to_string();
            quote! {
                impl core::str::FromStr for #name {
                    type Err = crate::Error;
                    #parse_doc
                    #[doc(alias = #alias)]
                    fn from_str(text: &str) -> crate::Result<Self> {
                        let mut raw = sys::#c_ty(0);
                        crate::raw::parse(text, |name| unsafe { sys::#parse_fn(name, &mut raw) })?;
                        Self::from_raw(raw).ok_or(crate::error::invalid("the name is not one this type holds"))
                    }
                }
            }
        } else {
            quote!()
        };

        Ok(quote! {
            #docs
            #[doc(alias = #c_name)]
            #[derive(Clone, Copy, Debug, #derive_default PartialEq, Eq, Hash)]
            #[non_exhaustive]
            #[repr(#repr)]
            pub enum #name {
                #(#variant_defs)*
            }

            const _: () = assert!(core::mem::size_of::<#name>() == core::mem::size_of::<sys::#c_ty>());

            impl #name {
                /// Every enumerator, in the header's order.
                pub const ALL: &'static [Self] = &[#(#all),*];

                #name_impl

                /// The enumerator of a C value; `None` for a value this binding does not know.
                #[allow(dead_code)]
                pub(crate) const fn from_raw(raw: sys::#c_ty) -> Option<Self> {
                    match raw.0 {
                        #(#matches)*
                        _ => None,
                    }
                }

                /// The C value.
                #[allow(dead_code)]
                pub(crate) const fn to_raw(self) -> sys::#c_ty {
                    sys::#c_ty(self as #repr)
                }
            }

            #display
            #from_str
        })
    }

    fn emit_flags(&self, e: &Enum) -> Result<TokenStream> {
        let stem = base(&e.c);
        let name = ident(&type_name(&e.c));
        let c_ty = ident(&e.c);
        let c_name = &e.c;
        let repr = format_ident!("{}", e.repr);
        let mut flags = Vec::new();
        for v in &e.variants {
            let suffix = v
                .c
                .strip_prefix(&format!("uform_{stem}_"))
                .and_then(|s| s.strip_suffix("_k"))
                .ok_or_else(|| format!("uform-gen: `{}` is not named `uform_{stem}_..._k`", v.c))?;
            flags.push((format_ident!("{}", suffix.to_uppercase()), v));
        }
        let first = flags
            .first()
            .map(|(f, _)| f.clone())
            .ok_or_else(|| format!("uform-gen: `{c_name}` has no flags"))?;
        let consts = flags.iter().map(|(flag, v)| {
            let docs = doc(&clean_doc(&v.doc));
            let alias = &v.c;
            let value = Literal::u64_unsuffixed(v.value);
            quote!(#docs #[doc(alias = #alias)] pub const #flag: Self = Self(#value);)
        });
        let all = flags.iter().fold(0u64, |all, (_, v)| all | v.value);
        let all = Literal::u64_unsuffixed(all);
        let debug = flags.iter().map(|(flag, _)| {
            let text = flag.to_string();
            quote!((Self::#flag, #text))
        });
        let mut text = clean_doc(&e.doc);
        text.push_str(&format!(
            "\n\n`{first}` is the default, and `|` joins flags. Mirrors `{c_name}`."
        ));
        let docs = doc(&text);
        let default_doc = doc(&format!(
            "`{first}`, which is also what the library reads zero as."
        ));
        Ok(quote! {
            #docs
            #[doc(alias = #c_name)]
            #[derive(Clone, Copy, PartialEq, Eq, Hash)]
            pub struct #name(#repr);

            impl #name {
                #(#consts)*

                /// Every flag.
                pub const ALL: Self = Self(#all);

                /// The bits, as the C ABI holds them.
                pub const fn bits(self) -> #repr {
                    self.0
                }

                /// Whether every flag of `other` is set.
                pub const fn contains(self, other: Self) -> bool {
                    self.0 & other.0 == other.0
                }

                /// The flags of both.
                pub const fn union(self, other: Self) -> Self {
                    Self(self.0 | other.0)
                }

                /// The C value.
                #[allow(dead_code)]
                pub(crate) const fn to_raw(self) -> sys::#c_ty {
                    sys::#c_ty(self.0)
                }
            }

            impl Default for #name {
                #default_doc
                fn default() -> Self {
                    Self::#first
                }
            }

            impl core::ops::BitOr for #name {
                type Output = Self;
                fn bitor(self, other: Self) -> Self {
                    self.union(other)
                }
            }

            impl core::ops::BitOrAssign for #name {
                fn bitor_assign(&mut self, other: Self) {
                    *self = self.union(other);
                }
            }

            impl core::ops::BitAnd for #name {
                type Output = Self;
                fn bitand(self, other: Self) -> Self {
                    Self(self.0 & other.0)
                }
            }

            impl core::fmt::Debug for #name {
                fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    let mut first = true;
                    for (flag, name) in [#(#debug),*] {
                        if self.contains(flag) {
                            if !first {
                                f.write_str(" | ")?;
                            }
                            f.write_str(name)?;
                            first = false;
                        }
                    }
                    if first {
                        f.write_str("(none)")?;
                    }
                    Ok(())
                }
            }
        })
    }

    // Structs -----------------------------------------------------------------------------------------------

    fn emit_struct(&self, s: &Struct) -> Result<TokenStream> {
        if is_view(&s.c) {
            return Ok(TokenStream::new());
        }
        let config = s.directives.first("config").is_some();
        let rust = self.struct_rust_name(&s.c);
        let name = ident(&rust);
        let c_ty = ident(&s.c);
        let c_name = &s.c;
        let fields = self.classify(s)?;
        let lifetime = self.needs_lifetime(&s.c)?;
        let pod = self.is_pod(&s.c)?;
        let copy = self.is_copy(&s.c)?;
        let generics = if lifetime { quote!(<'a>) } else { quote!() };
        let anon = if lifetime { quote!(<'_>) } else { quote!() };
        let has_progress = fields
            .iter()
            .any(|f| matches!(f.kind, Kind::Progress { .. }));
        // A handler prints as its kind and bytes as their count (a checkpoint's would flood a log): `Debug`
        // is written out where either is.
        let manual_debug =
            has_progress || fields.iter().any(|f| matches!(f.kind, Kind::Bytes { .. }));

        let mut text = clean_doc(&s.doc);
        if config {
            text.push_str(&format!(
                "\n\nMirrors `{c_name}` field by field; a field left at its default is zero, which the library derives."
            ));
        } else {
            text.push_str(&format!("\n\nMirrors `{c_name}` field by field."));
        }
        let docs = doc(&text);

        let mut defs = Vec::new();
        let mut defaults = Vec::new();
        for field in &fields {
            let fname = ident(&field.name);
            let ty = self.field_type(&field.kind)?;
            let mut ftext = clean_doc(&field.doc);
            let c_fields = match &field.kind {
                Kind::Slice { count, .. } => format!("`{}` and `{count}`", field.name),
                Kind::Path { length } | Kind::Str { length } | Kind::Bytes { length } => {
                    format!("`{}` and `{length}`", field.name)
                }
                Kind::Tape { .. } => format!(
                    "the tape `{0}`, `{0}_length`, `{0}_offsets`, `{0}_count`",
                    field.name
                ),
                Kind::Progress { context } => format!("`{}` and `{context}`", field.name),
                _ => format!("`{}`", field.name),
            };
            if matches!(field.kind, Kind::Tape { .. }) {
                ftext.push_str("\n\nA `(data, offsets)` tape: item `i` spans `data[offsets[i]..offsets[i + 1]]`.");
            }
            ftext.push_str(&format!(
                "\n\nThe C field{} {c_fields}.",
                if c_fields.contains(" and ") || c_fields.starts_with("the tape") {
                    "s"
                } else {
                    ""
                }
            ));
            let fdoc = doc(&ftext);
            defs.push(quote!(#fdoc pub #fname: #ty,));
            let default = self.field_default(&field.kind)?;
            defaults.push(quote!(#fname: #default,));
        }

        // `Default` derives where every field's zero is its type's default (not so for `&Path`, nor arrays
        // longer than 32); elsewhere it is written out, field by field.
        let derive_default = fields.iter().all(|f| match &f.kind {
            Kind::Path { .. } => false,
            Kind::Array(_, len) => *len <= 32,
            _ => true,
        });
        let mut derives = Vec::new();
        if pod {
            derives.extend([quote!(Clone), quote!(Copy), quote!(Debug)]);
            if derive_default {
                derives.push(quote!(Default));
            }
            derives.push(quote!(PartialEq));
        } else {
            if self.is_clone(&fields) {
                derives.push(quote!(Clone));
            }
            if copy {
                derives.push(quote!(Copy));
            }
            if !manual_debug {
                derives.push(quote!(Debug));
            }
            if derive_default {
                derives.push(quote!(Default));
            }
            if self.is_comparable(&fields) {
                derives.push(quote!(PartialEq));
            }
        }
        let repr_c = if pod { quote!(#[repr(C)]) } else { quote!() };
        let derives = if derives.is_empty() {
            quote!()
        } else {
            quote!(#repr_c #[derive(#(#derives),*)])
        };
        let default_impl = if derive_default {
            quote!()
        } else {
            quote! {
                impl Default for #name #anon {
                    fn default() -> Self {
                        Self { #(#defaults)* }
                    }
                }
            }
        };

        let mut out = quote! {
            #docs
            #[doc(alias = #c_name)]
            #derives
            pub struct #name #generics {
                #(#defs)*
            }

            #default_impl
        };

        if manual_debug {
            let debug_fields = fields.iter().map(|f| {
                let fname = ident(&f.name);
                let text = &f.name;
                match f.kind {
                    Kind::Progress { .. } => {
                        quote!(.field(#text, &self.#fname.as_ref().map(|_| "FnMut")))
                    }
                    Kind::Bytes { .. } => {
                        quote!(.field(#text, &format_args!("[{} bytes]", self.#fname.len())))
                    }
                    _ => quote!(.field(#text, &self.#fname)),
                }
            });
            let text = rust.clone();
            out.extend(quote! {
                impl core::fmt::Debug for #name #anon {
                    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                        f.debug_struct(#text) #(#debug_fields)* .finish()
                    }
                }
            });
        }

        if pod {
            let offsets = fields.iter().map(|f| {
                let fname = ident(&f.name);
                quote!(assert!(core::mem::offset_of!(#name, #fname) == core::mem::offset_of!(sys::#c_ty, #fname));)
            });
            out.extend(quote! {
                const _: () = {
                    assert!(core::mem::size_of::<#name>() == core::mem::size_of::<sys::#c_ty>());
                    assert!(core::mem::align_of::<#name>() == core::mem::align_of::<sys::#c_ty>());
                    #(#offsets)*
                };
            });
        }

        // Conversions.
        let mut conversions = TokenStream::new();
        if config || self.writable(&s.c)? {
            let mut lets = TokenStream::new();
            let mut inits = Vec::new();
            for field in &fields {
                let (l, f) = self.field_to_raw(field)?;
                lets.extend(l);
                inits.extend(f.into_iter().map(|(n, e)| {
                    if n == e.to_string() {
                        quote!(#n,)
                    } else {
                        quote!(#n: #e,)
                    }
                }));
            }
            if config {
                let slot = if has_progress {
                    quote!(slot)
                } else {
                    quote!(_slot)
                };
                conversions.extend(quote! {
                    /// The C argument struct, storing the handler, if any, in `slot`.
                    pub(crate) fn into_raw(self, #slot: *mut crate::call::HandlerSlot) -> crate::Result<sys::#c_ty> {
                        #lets
                        Ok(sys::#c_ty { #(#inits)* })
                    }
                });
            } else {
                conversions.extend(quote! {
                    /// The C struct.
                    pub(crate) fn as_raw(&self) -> crate::Result<sys::#c_ty> {
                        #lets
                        Ok(sys::#c_ty { #(#inits)* })
                    }
                });
            }
        }
        if !config && self.readable(&s.c)? {
            let inits = fields
                .iter()
                .map(|f| {
                    let fname = ident(&f.name);
                    let expr = self.field_from_raw(f)?;
                    Ok(quote!(#fname: #expr,))
                })
                .collect::<Result<Vec<_>>>()?;
            conversions.extend(quote! {
                /// The struct the library filled.
                pub(crate) fn from_raw(raw: &sys::#c_ty) -> crate::Result<Self> {
                    Ok(Self { #(#inits)* })
                }
            });
        }
        if !conversions.is_empty() {
            out.extend(quote! {
                #[allow(dead_code)]
                impl #generics #name #generics {
                    #conversions
                }
            });
        }

        // Checks before a call.
        if config || self.writable(&s.c)? {
            let body = self.check_body(&fields)?;
            out.extend(quote! {
                impl crate::call::Check for #name #anon {
                    fn check(&self, items: usize) -> crate::Result<()> {
                        #body
                    }
                }
            });
        }

        // Conversions the spec shows: a bare `Scalar`, path or buffer into a config.
        if config {
            if let Some(scalar) = fields.iter().find(|f| {
                f.name == "scalar" && matches!(&f.kind, Kind::Enum(e) if e == "uform_scalar_t")
            }) {
                let fname = ident(&scalar.name);
                let fdoc = doc(&format!(
                    "A config whose `{}` is `scalar`, every other field at its default.",
                    scalar.name
                ));
                out.extend(quote! {
                    impl From<crate::Scalar> for #name #anon {
                        #fdoc
                        fn from(#fname: crate::Scalar) -> Self {
                            Self { #fname, ..Self::default() }
                        }
                    }
                });
            }
            if let Some(path) = fields.iter().find(|f| matches!(f.kind, Kind::Path { .. })) {
                let fname = ident(&path.name);
                for source in [
                    quote!(&'a str),
                    quote!(&'a String),
                    quote!(&'a std::path::Path),
                    quote!(&'a std::path::PathBuf),
                    quote!(&'a std::ffi::OsStr),
                ] {
                    let fdoc = doc(&format!(
                        "A config whose `{}` is `path`, every other field at its default.",
                        path.name
                    ));
                    out.extend(quote! {
                        impl<'a> From<#source> for #name<'a> {
                            #fdoc
                            fn from(path: #source) -> Self {
                                Self { #fname: std::path::Path::new(path), ..Self::default() }
                            }
                        }
                    });
                }
            }
            if let Some(bytes) = fields.iter().find(|f| matches!(f.kind, Kind::Bytes { .. })) {
                let fname = ident(&bytes.name);
                let fdoc = doc(&format!(
                    "A config whose `{}` is `bytes`, every other field at its default.",
                    bytes.name
                ));
                out.extend(quote! {
                    impl<'a> From<&'a [u8]> for #name<'a> {
                        #fdoc
                        fn from(bytes: &'a [u8]) -> Self {
                            Self { #fname: bytes, ..Self::default() }
                        }
                    }
                    impl<'a> From<&'a Vec<u8>> for #name<'a> {
                        #fdoc
                        fn from(bytes: &'a Vec<u8>) -> Self {
                            Self { #fname: bytes, ..Self::default() }
                        }
                    }
                    impl<'a, const N: usize> From<&'a [u8; N]> for #name<'a> {
                        #fdoc
                        fn from(bytes: &'a [u8; N]) -> Self {
                            Self { #fname: bytes, ..Self::default() }
                        }
                    }
                });
            }
        }
        Ok(out)
    }

    fn is_clone(&self, fields: &[RField]) -> bool {
        fields.iter().all(|f| match &f.kind {
            Kind::Out(_) | Kind::Progress { .. } => false,
            Kind::Handle(h) => !handle_info(h).is_some_and(|h| h.mutable),
            Kind::Nested(c) => self
                .struct_of(c)
                .ok()
                .and_then(|s| self.classify(s).ok())
                .is_some_and(|f| self.is_clone(&f)),
            _ => true,
        })
    }

    /// No handles, no `&mut`, no handler: `PartialEq`.
    fn is_comparable(&self, fields: &[RField]) -> bool {
        fields.iter().all(|f| match &f.kind {
            Kind::Out(_) | Kind::Progress { .. } | Kind::Handle(_) => false,
            Kind::Nested(c) => self
                .struct_of(c)
                .ok()
                .and_then(|s| self.classify(s).ok())
                .is_some_and(|f| self.is_comparable(&f)),
            _ => true,
        })
    }

    fn check_body(&self, fields: &[RField]) -> Result<TokenStream> {
        let slice = |name: &str| {
            fields
                .iter()
                .any(|f| f.name == name && matches!(f.kind, Kind::Slice { .. }))
        };
        if slice("offsets") && slice("ids") && slice("weights") {
            return Ok(quote!(crate::inputs::check_edges(
                self.offsets,
                self.ids,
                self.weights,
                items
            )));
        }
        let mut body = TokenStream::new();
        for field in fields {
            let fname = ident(&field.name);
            match &field.kind {
                Kind::Tape { .. } => {
                    let names = tape_names(&field.name, "");
                    body.extend(quote!(crate::inputs::check_tape(self.#fname.0.len(), self.#fname.1, #names)?;));
                }
                Kind::Nested(c) if self.writable(c)? => {
                    body.extend(quote!(crate::call::Check::check(&self.#fname, items)?;));
                }
                _ => {}
            }
        }
        Ok(quote! {
            let _ = items;
            #body
            Ok(())
        })
    }

    // Functions ---------------------------------------------------------------------------------------------

    fn emit_function(&self, f: &Function) -> Result<TokenStream> {
        if f.directives.first("verb").is_some() {
            return Ok(TokenStream::new());
        }
        if let Some(args) = f.directives.first("slice") {
            return self.emit_slice(f, args);
        }
        if let Some(tokens) = self.emit_getter(f)? {
            return Ok(tokens);
        }
        if let Some(tokens) = self.emit_constructor(f)? {
            return Ok(tokens);
        }
        Ok(TokenStream::new())
    }

    fn returns_status(f: &Function) -> bool {
        matches!(&f.ret, Some(CType::Enum(e)) if e == "uform_status_t")
            && f.params.last().is_some_and(|(name, _)| name == "message")
    }

    /// `uform_<handle>_<what>(handle, *out, message)` as `Handle::<what>(&self)`.
    fn emit_getter(&self, f: &Function) -> Result<Option<TokenStream>> {
        if !Self::returns_status(f) || f.params.len() != 3 {
            return Ok(None);
        }
        let (CType::Handle(handle), CType::Ptr { mutable: true, to }) =
            (&f.params[0].1, &f.params[1].1)
        else {
            return Ok(None);
        };
        let Some(info) = handle_info(handle) else {
            return Ok(None);
        };
        let Some(method) = f.name.strip_prefix(&format!("uform_{}_", base(handle))) else {
            return Ok(None);
        };
        let (ty, init, convert) = match &**to {
            number if number.is_number() => {
                let ty = prim(number)?;
                (
                    ty.clone(),
                    quote!(core::mem::MaybeUninit::<#ty>::zeroed()),
                    quote!(Ok(out)),
                )
            }
            CType::Enum(e) if !self.is_flags(e) => {
                let ty = self.enum_type(e);
                let c_ty = ident(e);
                let message = format!("the library answered a `{e}` this binding does not know");
                (
                    ty.clone(),
                    quote!(core::mem::MaybeUninit::<sys::#c_ty>::zeroed()),
                    quote!(#ty::from_raw(out).ok_or(crate::error::unknown(#message))),
                )
            }
            CType::Struct(c) if self.readable(c)? => {
                let ty = self.struct_type(c, &quote!('_))?;
                let c_ty = ident(c);
                let rust = ident(&self.struct_rust_name(c));
                (
                    ty,
                    quote!(core::mem::MaybeUninit::<sys::#c_ty>::zeroed()),
                    quote!(crate::#rust::from_raw(&out)),
                )
            }
            _ => return Ok(None),
        };
        let owner = format_ident!("{}", info.rust);
        let owner = if info.lifetime {
            quote!(crate::#owner<'_>)
        } else {
            quote!(crate::#owner)
        };
        let method = ident(method);
        let c_fn = ident(&f.name);
        let alias = &f.name;
        let docs = doc(&format!("{}\n\nCalls `{}`.", clean_doc(&f.doc), f.name));
        Ok(Some(quote! {
            impl #owner {
                #docs
                #[doc(alias = #alias)]
                pub fn #method(&self) -> crate::Result<#ty> {
                    let mut out = #init;
                    let mut message = core::ptr::null();
                    let status = unsafe { sys::#c_fn(crate::raw::Handle::raw(self), out.as_mut_ptr(), &mut message) };
                    crate::error::check(status, message)?;
                    let out = unsafe { out.assume_init() };
                    #convert
                }
            }
        }))
    }

    /// `uform_<handle>_<verb>(..., <handle> *out, message)` taking a config or options as `Handle::<verb>`.
    fn emit_constructor(&self, f: &Function) -> Result<Option<TokenStream>> {
        if !Self::returns_status(f) || f.params.len() < 3 {
            return Ok(None);
        }
        let (_, out_ty) = &f.params[f.params.len() - 2];
        let CType::Ptr { mutable: true, to } = out_ty else {
            return Ok(None);
        };
        let CType::Handle(handle) = &**to else {
            return Ok(None);
        };
        let Some(info) = handle_info(handle) else {
            return Ok(None);
        };
        let Some(method) = f.name.strip_prefix(&format!("uform_{}_", base(handle))) else {
            return Ok(None);
        };

        let inputs = &f.params[..f.params.len() - 2];
        let mut params = Vec::new();
        let mut lets = TokenStream::new();
        let mut args = Vec::new();
        let mut has_struct = false;
        let mut has_config = false;
        let mut has_progress = false;
        let mut lifetime_from = None;
        let mut i = 0;
        while i < inputs.len() {
            let (pname, ty) = &inputs[i];
            let pident = ident(pname);
            match ty {
                CType::Handle(h) if handle_info(h).is_some_and(|h| !h.mutable && !h.lifetime) => {
                    let rust =
                        format_ident!("{}", handle_info(h).map(|h| h.rust).unwrap_or_default());
                    params.push(quote!(#pident: &crate::#rust));
                    args.push(quote!(crate::raw::Handle::raw(#pident)));
                }
                CType::Ptr { mutable: false, to }
                    if matches!(&**to, CType::Void)
                        && inputs
                            .get(i + 1)
                            .is_some_and(|(n, t)| n == "length" && *t == CType::Usize) =>
                {
                    params.push(quote!(#pident: &[u8]));
                    args.push(quote!(#pident.as_ptr().cast()));
                    args.push(quote!(#pident.len()));
                    i += 1;
                }
                CType::Ptr { mutable: false, to } => {
                    let CType::Struct(c) = &**to else {
                        return Ok(None);
                    };
                    let s = self.struct_of(c)?;
                    has_struct = true;
                    let rust = ident(&self.struct_rust_name(c));
                    if s.directives.first("config").is_some() {
                        has_config = true;
                        has_progress |= self
                            .classify(s)?
                            .iter()
                            .any(|f| matches!(f.kind, Kind::Progress { .. }));
                        if self.needs_lifetime(c)? {
                            params.push(quote!(#pident: impl Into<crate::#rust<'a>>));
                            lifetime_from = Some(pname.clone());
                        } else {
                            params.push(quote!(#pident: impl Into<crate::#rust>));
                        }
                        lets.extend(quote!(let #pident = #pident.into().into_raw(slot)?;));
                    } else {
                        let ty = self.struct_type(c, &quote!('_))?;
                        params.push(quote!(#pident: &#ty));
                        lets.extend(quote!(let #pident = #pident.as_raw()?;));
                    }
                    args.push(quote!(&#pident));
                }
                _ => return Ok(None),
            }
            i += 1;
        }
        if !has_struct {
            return Ok(None);
        }
        let owner = format_ident!("{}", info.rust);
        let (impl_generics, owner_ty, method_generics) = match (info.lifetime, &lifetime_from) {
            (true, Some(_)) => (quote!(<'a>), quote!(crate::#owner<'a>), quote!()),
            (true, None) => (quote!(), quote!(crate::#owner<'_>), quote!()),
            (false, Some(_)) => (quote!(), quote!(crate::#owner), quote!(<'a>)),
            (false, None) => (quote!(), quote!(crate::#owner), quote!()),
        };
        let method = ident(method);
        let c_fn = ident(&f.name);
        let alias = &f.name;
        let mut text = clean_doc(&f.doc);
        if has_progress {
            text.push_str("\n\nA panic in the config's progress handler resurfaces here once the call returns.");
        }
        text.push_str(&format!("\n\nCalls `{}`.", f.name));
        let docs = doc(&text);
        let resurface = if has_progress {
            quote!(unsafe { crate::call::HandlerSlot::resurface(slot) };)
        } else {
            quote!()
        };
        let slot = if has_progress {
            quote!(let mut slot = crate::call::HandlerSlot::new(); let slot: *mut crate::call::HandlerSlot = &mut slot;)
        } else if has_config {
            quote!(let slot: *mut crate::call::HandlerSlot = core::ptr::null_mut();)
        } else {
            quote!()
        };
        Ok(Some(quote! {
            impl #impl_generics #owner_ty {
                #docs
                #[doc(alias = #alias)]
                pub fn #method #method_generics(#(#params),*) -> crate::Result<Self> {
                    #slot
                    #lets
                    let mut handle = core::ptr::null_mut();
                    let mut message = core::ptr::null();
                    let status = unsafe { sys::#c_fn(#(#args,)* &mut handle, &mut message) };
                    #resurface
                    crate::error::check(status, message)?;
                    Self::from_raw(handle)
                }
            }
        }))
    }

    /// `@uform slice POINTER CAPACITY`: a function filling a caller's array, answering how many there are.
    fn emit_slice(&self, f: &Function, args: &[String]) -> Result<TokenStream> {
        let [pointer, capacity] = args else {
            return Err(format!(
                "uform-gen: `{}`: `@uform slice` takes a pointer and a capacity",
                f.name
            ));
        };
        let mut call_args = Vec::new();
        let mut elem = None;
        for (name, ty) in &f.params {
            if name == pointer {
                let CType::Ptr { mutable: true, to } = ty else {
                    return Err(format!(
                        "uform-gen: `{}`: `{pointer}` is not a mutable pointer",
                        f.name
                    ));
                };
                let CType::Struct(c) = &**to else {
                    return Err(format!(
                        "uform-gen: `{}`: `{pointer}` does not point to a struct",
                        f.name
                    ));
                };
                elem = Some(c.clone());
                call_args.push(quote!(if raw.is_empty() {
                    core::ptr::null_mut()
                } else {
                    raw.as_mut_ptr()
                }));
            } else if name == capacity {
                call_args.push(quote!(raw.len()));
            } else if name == "message" {
                call_args.push(quote!(&mut message));
            } else if matches!(ty, CType::Ptr { mutable: true, to } if **to == CType::Usize) {
                call_args.push(quote!(&mut count));
            } else {
                return Err(format!(
                    "uform-gen: `{}`: cannot map `{name}` of a slice function",
                    f.name
                ));
            }
        }
        let elem = elem.ok_or_else(|| format!("uform-gen: `{}` lacks `{pointer}`", f.name))?;
        let c_ty = ident(&elem);
        let rust = ident(&self.struct_rust_name(&elem));
        let name = ident(base(&f.name));
        let pname = ident(pointer);
        let c_fn = ident(&f.name);
        let alias = &f.name;
        let docs = doc(&format!(
            "{}\n\nFills `{pointer}` and answers how many there are in all, which may exceed its length.\n\nCalls `{}`.",
            clean_doc(&f.doc),
            f.name
        ));
        Ok(quote! {
            #docs
            #[doc(alias = #alias)]
            pub fn #name(#pname: &mut [crate::#rust]) -> crate::Result<usize> {
                let mut raw: Vec<sys::#c_ty> = (0..#pname.len()).map(|_| unsafe { core::mem::zeroed() }).collect();
                let mut count = 0usize;
                let mut message = core::ptr::null();
                let status = unsafe { sys::#c_fn(#(#call_args),*) };
                crate::error::check(status, message)?;
                for (out, raw) in #pname.iter_mut().zip(&raw).take(count) {
                    *out = crate::#rust::from_raw(raw)?;
                }
                Ok(count)
            }
        })
    }

    // Verbs -------------------------------------------------------------------------------------------------

    fn emit_traits(&self, header: &Header) -> Result<TokenStream> {
        let mut out = TokenStream::new();
        let mut traits: Vec<String> = Vec::new();
        for f in self.ir.functions() {
            if let Some(args) = f.directives.first("verb") {
                let name = args.first().cloned().ok_or_else(|| {
                    format!("uform-gen: `{}`: `@uform verb` names no trait", f.name)
                })?;
                if !traits.contains(&name) {
                    traits.push(name);
                }
            }
        }
        for trait_name in traits {
            let verbs: Vec<&Function> = self
                .ir
                .functions()
                .filter(|f| {
                    f.directives
                        .first("verb")
                        .and_then(|a| a.first())
                        .is_some_and(|n| *n == trait_name)
                })
                .collect();
            let home = self
                .ir
                .headers
                .iter()
                .find(|h| {
                    h.decls
                        .iter()
                        .any(|d| matches!(d, Decl::Function(f) if f.name == verbs[0].name))
                })
                .map(|h| h.name.clone());
            if home.as_deref() != Some(header.name.as_str()) {
                continue;
            }
            out.extend(self.emit_trait(&trait_name, &verbs)?);
        }
        Ok(out)
    }

    fn emit_trait(&self, trait_name: &str, verbs: &[&Function]) -> Result<TokenStream> {
        let trait_ident = ident(trait_name);
        let receiver = &verbs[0].params[0].1;
        let CType::Handle(receiver) = receiver else {
            return Err(format!(
                "uform-gen: `{}` takes no receiver handle first",
                verbs[0].name
            ));
        };
        let info = handle_info(receiver)
            .ok_or_else(|| format!("uform-gen: unknown receiver `{receiver}`"))?;
        let of = format_ident!(
            "{}",
            info.of
                .ok_or_else(|| format!("uform-gen: `{receiver}` has no verbs"))?
        );
        let mut sigs = Vec::new();
        let mut bodies = Vec::new();
        let mut calls = TokenStream::new();
        let mut names = Vec::new();
        for verb in verbs {
            let v = self.verb(verb, receiver)?;
            names.push(format!("`{}`", v.method));
            sigs.push(v.signature.clone());
            bodies.push(v.body);
            calls.extend(v.call);
        }
        let receiver_name = info.rust.to_lowercase();
        let receivers = if info.of == Some("OfModel") {
            format!(
                "`&{0}` runs a verb on the calling thread, `{1}.on(&executor)` blocks on an executor, and `{1}.deferred(&executor)` submits it, answering a [`Deferred`](crate::Deferred)",
                info.rust, receiver_name
            )
        } else {
            format!(
                "`{0}.on(&executor)` blocks on an executor, and `{0}.deferred(&executor)` submits it, answering a [`Deferred`](crate::Deferred)",
                receiver_name
            )
        };
        let docs = doc(&format!(
            "The {receiver_name}'s verbs {}, written once for every receiver: {receivers}.\n\nEach verb takes the same arguments whatever the receiver; a blocking one answers its `Result` directly. A deferred receiver takes owned inputs and `'static` configs and handlers.",
            names.join(", ")
        ));
        let blanket_doc = doc(&format!("Every receiver of a {receiver_name}'s verbs."));
        Ok(quote! {
            #docs
            pub trait #trait_ident: crate::Receiver {
                #(#sigs;)*
            }

            #blanket_doc
            impl<R: crate::Receiver<Of = crate::call::#of>> #trait_ident for R {
                #(#bodies)*
            }

            #calls
        })
    }

    fn verb(&self, f: &Function, receiver: &str) -> Result<Verb> {
        let method = f
            .name
            .strip_prefix("uform_")
            .map(|n| n.strip_prefix(&format!("{}_", base(receiver))).unwrap_or(n))
            .unwrap_or(&f.name)
            .to_owned();
        let tapes: Vec<&[String]> = f.directives.all("tape").collect();
        let per_item: Vec<String> = f
            .directives
            .all("per-item")
            .filter_map(|a| a.first().cloned())
            .collect();
        let path: Option<String> = f.directives.first("path").and_then(|a| a.first().cloned());
        let result: Option<String> = f
            .directives
            .first("result")
            .and_then(|a| a.first().cloned());

        let params = &f.params;
        if params.len() < 4 || params[1].0 != "executor" {
            return Err(format!(
                "uform-gen: the verb `{}` does not take its receiver and executor first",
                f.name
            ));
        }
        let mut vparams: Vec<VParam> = Vec::new();
        let mut c_args: Vec<TokenStream> = vec![quote!(target.cast()), quote!(executor)];
        let mut i = 2;
        let end = params.len() - 2;
        if params[end].0 != "outcome" || params[end + 1].0 != "message" {
            return Err(format!(
                "uform-gen: the verb `{}` does not end with its outcome and message",
                f.name
            ));
        }
        while i < end {
            let (pname, ty) = &params[i];
            let pid = ident(pname);
            if let Some(tape) = tapes.iter().find(|t| t.first() == Some(pname)) {
                let CType::Ptr { to, .. } = ty else {
                    return Err(format!("uform-gen: the tape `{pname}` is not a pointer"));
                };
                let kind = match (&**to, tape.get(1).map(String::as_str)) {
                    (CType::Char | CType::Int("u8"), Some("paths")) => quote!(crate::inputs::Paths),
                    (CType::Char | CType::Int("u8"), _) => quote!(crate::inputs::Bytes),
                    (CType::F32, _) => quote!(crate::inputs::Samples),
                    (other, _) => return Err(format!("uform-gen: a tape of `{other:?}`")),
                };
                for (offset, suffix) in ["length", "offsets", "count"].iter().enumerate() {
                    if params.get(i + 1 + offset).map(|p| p.0.as_str())
                        != Some(&format!("{pname}_{suffix}"))
                    {
                        return Err(format!(
                            "uform-gen: the tape `{pname}` of `{}` lacks `{pname}_{suffix}`",
                            f.name
                        ));
                    }
                }
                c_args.push(quote!(#pid.data.cast(), #pid.length, #pid.offsets, #pid.count));
                vparams.push(VParam::Input {
                    name: pname.clone(),
                    kind,
                    tape: true,
                });
                i += 4;
                continue;
            }
            if per_item.contains(pname) {
                let CType::Ptr { to, .. } = ty else {
                    return Err(format!("uform-gen: `{pname}` is not a pointer"));
                };
                let elem = self.elem_type(to)?;
                c_args.push(quote!(#pid.data.cast()));
                vparams.push(VParam::Input {
                    name: pname.clone(),
                    kind: quote!(crate::inputs::Each<#elem>),
                    tape: false,
                });
                i += 1;
                continue;
            }
            if let Some(length) = &path {
                let pointer = length.strip_suffix("_length").unwrap_or(length);
                if pname == pointer {
                    if params.get(i + 1).map(|p| &p.0) != Some(length) {
                        return Err(format!(
                            "uform-gen: the path `{pointer}` of `{}` lacks `{length}` after it",
                            f.name
                        ));
                    }
                    c_args.push(quote!(#pid.data.cast(), #pid.length));
                    vparams.push(VParam::Input {
                        name: pname.clone(),
                        kind: quote!(crate::inputs::OnePath),
                        tape: false,
                    });
                    i += 2;
                    continue;
                }
            }
            if result.as_deref() == Some(pname.as_str()) {
                let CType::Ptr { mutable: true, to } = ty else {
                    return Err(format!(
                        "uform-gen: the result `{pname}` is not an out-pointer"
                    ));
                };
                let CType::Struct(c) = &**to else {
                    return Err(format!("uform-gen: the result `{pname}` is not a struct"));
                };
                vparams.push(VParam::Result { c: c.clone() });
                c_args.push(quote!(raw));
                i += 1;
                continue;
            }
            match ty {
                CType::Enum(e) if self.is_flags(e) => {
                    c_args.push(quote!(*#pid));
                    vparams.push(VParam::Flags {
                        name: pname.clone(),
                        c: e.clone(),
                    });
                }
                CType::Ptr { mutable: false, to } if matches!(&**to, CType::Struct(c) if self.struct_of(c).is_ok_and(|s| s.directives.first("config").is_some())) =>
                {
                    let CType::Struct(c) = &**to else {
                        unreachable!()
                    };
                    c_args.push(quote!(config));
                    vparams.push(VParam::Config { c: c.clone() });
                }
                CType::Handle(h) if handle_info(h).is_some_and(|h| h.mutable) => {
                    c_args.push(quote!(*#pid));
                    vparams.push(VParam::Arena {
                        name: pname.clone(),
                    });
                }
                number if number.is_number() => {
                    c_args.push(quote!(*#pid));
                    vparams.push(VParam::Number {
                        name: pname.clone(),
                        ty: number.clone(),
                    });
                }
                other => {
                    return Err(format!(
                        "uform-gen: the verb `{}` takes `{pname}: {other:?}`, which it cannot map",
                        f.name
                    ))
                }
            }
            i += 1;
        }
        c_args.push(quote!(outcome));
        c_args.push(quote!(message));

        let config_c = vparams.iter().find_map(|p| {
            if let VParam::Config { c } = p {
                Some(c.clone())
            } else {
                None
            }
        });
        let config_has_arena = match &config_c {
            Some(c) => self.classify(self.struct_of(c)?)?.iter().any(
                |f| matches!(&f.kind, Kind::Handle(h) if handle_info(h).is_some_and(|h| h.mutable)),
            ),
            None => false,
        };
        let has_arena = vparams.iter().any(|p| matches!(p, VParam::Arena { .. }));
        let config_lifetime = match &config_c {
            Some(c) => self.needs_lifetime(c)?,
            None => false,
        };
        let result_c = vparams.iter().find_map(|p| {
            if let VParam::Result { c } = p {
                Some(c.clone())
            } else {
                None
            }
        });
        let (output, output_c, finish) = match &result_c {
            Some(c) if has_arena => {
                let (ty, finish) = view(c, &quote!('a))
                    .ok_or_else(|| format!("uform-gen: `{c}` is not a view"))?;
                (ty, false, finish)
            }
            Some(c) if config_has_arena => {
                let (ty, finish) = view(c, &quote!('c))
                    .ok_or_else(|| format!("uform-gen: `{c}` is not a view"))?;
                (ty, true, finish)
            }
            Some(c) => {
                return Err(format!(
                    "uform-gen: `{}` answers `{c}` but names no arena",
                    f.name
                ))
            }
            None => (
                quote!(()),
                false,
                quote!({
                    let _ = raw;
                    Ok(())
                }),
            ),
        };

        // Generic parameters, with names that read well in the docs.
        let mut type_params = Vec::new();
        for p in &vparams {
            if let VParam::Input { name, .. } = p {
                let mut generic = camel(name);
                if [
                    "Bytes", "Paths", "Samples", "Each", "OnePath", "Config", "R",
                ]
                .contains(&generic.as_str())
                {
                    generic.push_str("In");
                }
                type_params.push((name.clone(), format_ident!("{}", generic)));
            }
        }
        let generic_of = |name: &str| {
            type_params
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, g)| g.clone())
        };

        let mut sig_params = Vec::new();
        let mut where_self = Vec::new();
        let mut where_r = Vec::new();
        let mut struct_fields = Vec::new();
        let mut struct_inits = Vec::new();
        let mut held_types = Vec::new();
        let mut held_exprs = Vec::new();
        let mut held_names = Vec::new();
        let mut measures = Vec::new();
        let mut tapes_after = Vec::new();
        let mut first_tape: Option<Ident> = None;
        let mut per_item_checks = Vec::new();
        let mut words = Vec::new();
        let mut config_expr = quote!();
        for p in &vparams {
            match p {
                VParam::Input { name, kind, tape } => {
                    let pid = ident(name);
                    let g = generic_of(name).expect("a generic per input");
                    sig_params.push(quote!(#pid: #g));
                    where_self.push(quote!(#g: crate::Accepts<Self::Mode, #kind>));
                    where_r.push(quote!(#g: crate::Accepts<R::Mode, #kind>));
                    struct_fields.push(quote!(#pid: #g));
                    struct_inits.push(quote!(#pid));
                    let accepts = quote!(<#g as crate::Accepts<R::Mode, #kind>>);
                    held_types.push(quote!(#accepts::Kept));
                    held_exprs.push(quote!(#accepts::keep(self.#pid, tail)));
                    held_names.push(pid.clone());
                    let names = tape_names(name, &first_tape_name(&vparams));
                    measures.push(quote!(let #pid = #accepts::measure(&self.#pid, #names)?;));
                    tapes_after.push(quote!(let #pid = #accepts::tape(#pid);));
                    words.push(quote!(#pid.words));
                    if *tape && first_tape.is_none() {
                        first_tape = Some(pid.clone());
                    } else if !*tape && kind.to_string().contains("Each") {
                        per_item_checks.push(pid.clone());
                    }
                }
                VParam::Flags { name, c } => {
                    let pid = ident(name);
                    let ty = self.enum_type(c);
                    let c_ty = ident(c);
                    sig_params.push(quote!(#pid: #ty));
                    struct_fields.push(quote!(#pid: #ty));
                    struct_inits.push(quote!(#pid));
                    held_types.push(quote!(sys::#c_ty));
                    held_exprs.push(quote!(self.#pid.to_raw()));
                    held_names.push(pid);
                }
                VParam::Number { name, ty } => {
                    let pid = ident(name);
                    let ty = prim(ty)?;
                    sig_params.push(quote!(#pid: #ty));
                    struct_fields.push(quote!(#pid: #ty));
                    struct_inits.push(quote!(#pid));
                    held_types.push(ty);
                    held_exprs.push(quote!(self.#pid));
                    held_names.push(pid);
                }
                VParam::Config { c } => {
                    let rust = ident(&self.struct_rust_name(c));
                    let c_ty = ident(c);
                    let ty = if config_lifetime {
                        quote!(crate::#rust<'c>)
                    } else {
                        quote!(crate::#rust)
                    };
                    sig_params.push(quote!(config: Config));
                    where_self.push(quote!(Config: Into<#ty>));
                    if config_lifetime {
                        where_self.push(quote!(Self::Mode: crate::inputs::Admits<'c>));
                    }
                    struct_fields.push(quote!(config: #ty));
                    struct_inits.push(quote!(config: config.into()));
                    held_types.push(quote!(sys::#c_ty));
                    held_exprs.push(quote!(config));
                    held_names.push(format_ident!("config"));
                    config_expr = quote!(let config = self.config.into_raw(slot)?;);
                }
                VParam::Arena { name } => {
                    let pid = ident(name);
                    sig_params.push(quote!(#pid: &'a mut crate::Arena));
                    struct_fields.push(quote!(#pid: &'a mut crate::Arena));
                    struct_inits.push(quote!(#pid));
                    held_types.push(quote!(sys::uform_arena_t));
                    held_exprs.push(quote!(crate::raw::Handle::raw(&*self.#pid)));
                    held_names.push(pid);
                }
                VParam::Result { .. } => {}
            }
        }
        if config_expr.is_empty() {
            config_expr = quote!(let _ = slot;);
        }
        let items = match &first_tape {
            Some(t) => quote!(#t.count),
            None => quote!(0),
        };
        let words_sum = if words.is_empty() {
            quote!(0)
        } else {
            quote!(#(#words)+*)
        };
        let per_item_checks = per_item_checks.iter().map(|p| {
            let message = format!("`{p}` holds one value per item of `{}`", first_tape.as_ref().map(ToString::to_string).unwrap_or_default());
            quote!(crate::inputs::per_item(#p.count, #items, &crate::inputs::TapeNames { fall: "", leave: "", per_item: #message })?;)
        });
        let check_config = if config_c.is_some() {
            quote!(crate::call::Check::check(&self.config, #items)?;)
        } else {
            quote!()
        };

        // Lifetimes: `'a` for the answer (and the arena), `'c` for the config.
        let mut method_lifetimes = vec![quote!('a)];
        let mut struct_lifetimes = Vec::new();
        if has_arena {
            struct_lifetimes.push(quote!('a));
        }
        if config_lifetime {
            method_lifetimes.push(quote!('c));
            struct_lifetimes.push(quote!('c));
        }
        let mut where_extra = vec![quote!(Self: 'a)];
        if output_c {
            where_extra.push(quote!('c: 'a));
        }
        let generic_idents: Vec<&Ident> = type_params.iter().map(|(_, g)| g).collect();
        let config_generic = if config_c.is_some() {
            quote!(Config,)
        } else {
            quote!()
        };
        let struct_name = format_ident!("{}Call", camel(&method));

        let mut text = clean_doc(&f.doc);
        text.push_str(&format!("\n\nCalls `{}`.", f.name));
        let docs = doc(&text);
        let alias = &f.name;
        let method_ident = ident(&method);
        let signature = quote! {
            #docs
            #[doc(alias = #alias)]
            fn #method_ident<#(#method_lifetimes,)* #(#generic_idents,)* #config_generic>(self, #(#sig_params),*)
                -> Self::Answer<'a, #output>
            where
                #(#where_self,)*
                #(#where_extra,)*
        };
        let body = quote! {
            fn #method_ident<#(#method_lifetimes,)* #(#generic_idents,)* #config_generic>(self, #(#sig_params),*)
                -> Self::Answer<'a, #output>
            where
                #(#where_self,)*
                #(#where_extra,)*
            {
                self.dispatch(#struct_name { #(#struct_inits),* })
            }
        };

        let c_fn = ident(&f.name);
        let raw_type = match &result_c {
            Some(c) => {
                let c = ident(c);
                quote!(sys::#c)
            }
            None => quote!(()),
        };
        let raw_unused = if result_c.is_none() {
            quote!(let _ = raw;)
        } else {
            quote!()
        };
        let call_doc = doc(&format!("One call of `{}`.", f.name));
        let output_impl = output.clone();
        let call = quote! {
            #call_doc
            struct #struct_name<#(#struct_lifetimes,)* #(#generic_idents),*> {
                #(#struct_fields,)*
            }

            unsafe impl<#(#struct_lifetimes,)* R, #(#generic_idents),*> crate::call::Verb<R> for #struct_name<#(#struct_lifetimes,)* #(#generic_idents),*>
            where
                R: crate::Receiver,
                #(#where_r,)*
            {
                type Held = (#(#held_types,)*);
                type Raw = #raw_type;
                type Output = #output_impl;

                fn measure(&self) -> crate::Result<usize> {
                    #(#measures)*
                    #(#per_item_checks)*
                    #check_config
                    Ok(#words_sum)
                }

                fn hold(self, tail: &mut &mut [usize], slot: *mut crate::call::HandlerSlot) -> crate::Result<Self::Held> {
                    #config_expr
                    Ok((#(#held_exprs,)*))
                }

                unsafe fn call(
                    held: *const Self::Held,
                    target: *mut core::ffi::c_void,
                    executor: sys::uform_executor_t,
                    raw: *mut Self::Raw,
                    outcome: *mut sys::uform_outcome_t,
                    message: *mut *const core::ffi::c_char,
                ) -> sys::uform_status_t {
                    let (#(#held_names,)*) = unsafe { &*held };
                    #(#tapes_after)*
                    #raw_unused
                    unsafe { sys::#c_fn(#(#c_args),*) }
                }

                unsafe fn finish(raw: &Self::Raw) -> crate::Result<Self::Output> {
                    #finish
                }
            }
        };
        Ok(Verb {
            method,
            signature,
            body,
            call,
        })
    }
}

fn first_tape_name(vparams: &[VParam]) -> String {
    vparams
        .iter()
        .find_map(|p| {
            if let VParam::Input {
                name, tape: true, ..
            } = p
            {
                Some(name.clone())
            } else {
                None
            }
        })
        .unwrap_or_default()
}

/// The messages of a tape's refusals, worded as the library words them.
fn tape_names(name: &str, first: &str) -> TokenStream {
    // As the library words them: `UFORM_TAPE_MESSAGES("the texts tape")`.
    let spoken = name.replace('_', " ");
    let fall = format!("the {spoken} tape's offsets fall");
    let leave = format!("the {spoken} tape's offsets leave its data");
    let per_item = if first.is_empty() || first == name {
        String::new()
    } else {
        format!("`{name}` holds one value per item of `{first}`")
    };
    quote!(&crate::inputs::TapeNames { fall: #fall, leave: #leave, per_item: #per_item })
}

/// The example name the header's name function quotes (`such as `"shape-mismatch"``), or the first variant's.
fn example(name_doc: Option<&str>, variants: &[(Ident, &crate::ir::Variant)]) -> String {
    if let Some(doc) = name_doc {
        if let Some(at) = doc.find("such as `") {
            let rest = &doc[at + "such as `".len()..];
            if let Some(end) = rest.find('`') {
                return format!("`{}`", &rest[..end]);
            }
        }
    }
    variants
        .first()
        .map(|(rust, _)| format!("the name of `{rust}`"))
        .unwrap_or_default()
}

enum VParam {
    Input {
        name: String,
        kind: TokenStream,
        tape: bool,
    },
    Flags {
        name: String,
        c: String,
    },
    Number {
        name: String,
        ty: CType,
    },
    Config {
        c: String,
    },
    Arena {
        name: String,
    },
    Result {
        c: String,
    },
}

struct Verb {
    method: String,
    signature: TokenStream,
    body: TokenStream,
    call: TokenStream,
}

/// Emits the safe layer, one token stream per header that has one.
pub fn emit(ir: &Ir) -> Result<Vec<Output>> {
    let cx = Cx { ir };
    let mut outputs = Vec::new();
    for header in &ir.headers {
        if header.name == "uform" {
            continue;
        }
        let mut items = TokenStream::new();
        for decl in &header.decls {
            items.extend(match decl {
                Decl::Enum(e) => cx.emit_enum(e)?,
                Decl::Struct(s) => cx.emit_struct(s)?,
                Decl::Function(f) => cx.emit_function(f)?,
            });
        }
        items.extend(cx.emit_traits(header)?);
        let module_doc = format!(
            " The safe layer of `include/uform/{}.h`, generated by `tools/uform-gen` from the `@uform` annotations the\n raw bindings carry. Do not edit: run `cargo run -p uform-gen`.",
            header.name
        );
        let lines = module_doc.lines();
        outputs.push(Output {
            header: header.name.clone(),
            tokens: quote! {
                #(#![doc = #lines])*

                use crate::sys;

                #items
            },
        });
    }
    Ok(outputs)
}
