//! Structs: `@uform config` argument structs as `NAMEConfig`, the others as plain data, each with the
//! conversions and checks something calls.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

use crate::ir::Struct;
use crate::names::{clean_doc, ident};

use super::fields::{Kind, RField};
use super::{doc, handle_info, is_mutable_handle, is_view, maybe, prim, zero, Cx, Result};

/// The messages of a tape's refusals, worded as the library words them: `UFORM_TAPE_MESSAGES("the texts
/// tape")`, with the per-item message of a tape that is not the verb's first (`first`).
pub(super) fn tape_names(name: &str, first: &str) -> TokenStream {
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

/// A field's doc: the header's, and how to read a tape.
fn field_doc(field: &RField) -> Result<TokenStream> {
    let mut text = clean_doc(&field.doc);
    if text.is_empty() {
        return Err(format!(
            "uform-gen: the field `{}` has no doc comment in its header",
            field.name
        ));
    }
    if matches!(field.kind, Kind::Tape { .. }) {
        text.push_str(
            "\n\nA `(data, offsets)` tape: item `i` spans `data[offsets[i]..offsets[i + 1]]`.",
        );
    }
    Ok(doc(&text))
}

impl Cx<'_> {
    pub(super) fn emit_struct(&self, s: &Struct) -> Result<TokenStream> {
        if is_view(&s.c) {
            return Ok(TokenStream::new());
        }
        let fields = self.classify(s)?;
        let mut out = self.struct_definition(s, &fields)?;
        out.extend(self.struct_debug(s, &fields)?);
        if self.is_pod(&s.c)? {
            out.extend(self.struct_layout(s, &fields));
        }
        out.extend(self.struct_conversions(s, &fields)?);
        if self.checks(&s.c)? {
            out.extend(self.struct_check(s, &fields)?);
        }
        if s.directives.first("config").is_some() {
            out.extend(self.config_froms(s, &fields)?);
        }
        Ok(out)
    }

    fn name_and_lifetimes(&self, s: &Struct) -> Result<(Ident, TokenStream, TokenStream)> {
        let lifetime = self.needs_lifetime(&s.c)?;
        Ok((
            self.struct_ident(&s.c),
            maybe(quote!(<'a>), lifetime),
            maybe(quote!(<'_>), lifetime),
        ))
    }

    /// A handler prints as its kind and bytes as their count (a checkpoint's would flood a log): `Debug` is
    /// written out where either is.
    fn manual_debug(fields: &[RField]) -> bool {
        fields
            .iter()
            .any(|f| matches!(f.kind, Kind::Progress { .. } | Kind::Bytes { .. }))
    }

    /// The struct, its derives, and `Default` where it cannot derive.
    fn struct_definition(&self, s: &Struct, fields: &[RField]) -> Result<TokenStream> {
        let (name, generics, anon) = self.name_and_lifetimes(s)?;
        let c_name = &s.c;
        let mut text = clean_doc(&s.doc);
        if s.directives.first("config").is_some() {
            text.push_str(&format!(
                "\n\nMirrors `{c_name}` field by field; a field left at its default is zero, which the library derives."
            ));
        } else {
            text.push_str(&format!("\n\nMirrors `{c_name}` field by field."));
        }
        let docs = doc(&text);

        let mut defs = Vec::new();
        let mut defaults = Vec::new();
        for field in fields {
            let fname = ident(&field.name);
            let ty = self.field_type(&field.kind)?;
            let fdoc = field_doc(field)?;
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
        if self.is_clone(&s.c)? {
            derives.push(quote!(Clone));
        }
        if self.is_copy(&s.c)? {
            derives.push(quote!(Copy));
        }
        if !Self::manual_debug(fields) {
            derives.push(quote!(Debug));
        }
        if derive_default {
            derives.push(quote!(Default));
        }
        if self.is_comparable(&s.c)? {
            derives.push(quote!(PartialEq));
        }
        let repr_c = maybe(quote!(#[repr(C)]), self.is_pod(&s.c)?);
        let derives = maybe(
            quote!(#repr_c #[derive(#(#derives),*)]),
            !derives.is_empty(),
        );
        let default_impl = maybe(
            quote! {
                impl Default for #name #anon {
                    fn default() -> Self {
                        Self { #(#defaults)* }
                    }
                }
            },
            !derive_default,
        );
        Ok(quote! {
            #docs
            #[doc(alias = #c_name)]
            #derives
            pub struct #name #generics {
                #(#defs)*
            }

            #default_impl
        })
    }

    /// `Debug` written out, for a struct with a handler or bytes.
    fn struct_debug(&self, s: &Struct, fields: &[RField]) -> Result<TokenStream> {
        if !Self::manual_debug(fields) {
            return Ok(TokenStream::new());
        }
        let (name, _, anon) = self.name_and_lifetimes(s)?;
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
        let text = name.to_string();
        Ok(quote! {
            impl core::fmt::Debug for #name #anon {
                fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    f.debug_struct(#text) #(#debug_fields)* .finish()
                }
            }
        })
    }

    /// Assertions that a plain struct's layout is the C struct's, so that the library writes it in place.
    fn struct_layout(&self, s: &Struct, fields: &[RField]) -> TokenStream {
        let name = self.struct_ident(&s.c);
        let c_ty = ident(&s.c);
        let offsets = fields.iter().map(|f| {
            let fname = ident(&f.name);
            quote!(assert!(core::mem::offset_of!(#name, #fname) == core::mem::offset_of!(sys::#c_ty, #fname));)
        });
        quote! {
            const _: () = {
                assert!(core::mem::size_of::<#name>() == core::mem::size_of::<sys::#c_ty>());
                assert!(core::mem::align_of::<#name>() == core::mem::align_of::<sys::#c_ty>());
                #(#offsets)*
            };
        }
    }

    /// The conversions something calls: a config's `into_raw`, a struct handed to the library's `as_raw`,
    /// and a struct the library answers' `from_raw`.
    fn struct_conversions(&self, s: &Struct, fields: &[RField]) -> Result<TokenStream> {
        let (name, generics, _) = self.name_and_lifetimes(s)?;
        let c_ty = ident(&s.c);
        let config = s.directives.first("config").is_some();
        let mut conversions = TokenStream::new();
        if config || (self.uses.written(&s.c) && self.is_copy(&s.c)?) {
            let mut lets = TokenStream::new();
            let mut inits = Vec::new();
            for field in fields {
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
                let has_progress = fields
                    .iter()
                    .any(|f| matches!(f.kind, Kind::Progress { .. }));
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
        if !config && self.uses.read(&s.c) && self.readable(&s.c)? {
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
        Ok(maybe(
            quote! {
                impl #generics #name #generics {
                    #conversions
                }
            },
            !conversions.is_empty(),
        ))
    }

    /// The checks before a call of a struct that has any: its tapes, its edges, its nested structs'.
    fn struct_check(&self, s: &Struct, fields: &[RField]) -> Result<TokenStream> {
        let (name, _, anon) = self.name_and_lifetimes(s)?;
        let body = if Self::is_edges(fields) {
            quote!(crate::inputs::check_edges(
                self.offsets,
                self.ids,
                self.weights,
                items
            ))
        } else {
            let mut body = TokenStream::new();
            let mut reads_items = false;
            for field in fields {
                let fname = ident(&field.name);
                match &field.kind {
                    Kind::Tape { .. } => {
                        let names = tape_names(&field.name, "");
                        body.extend(quote!(crate::inputs::check_tape(self.#fname.0.len(), self.#fname.1, #names)?;));
                    }
                    Kind::Nested(c) if self.checks(c)? => {
                        reads_items = true;
                        body.extend(quote!(crate::call::Check::check(&self.#fname, items)?;));
                    }
                    _ => {}
                }
            }
            let ignore = maybe(quote!(let _ = items;), !reads_items);
            quote!(#ignore #body Ok(()))
        };
        Ok(quote! {
            impl crate::call::Check for #name #anon {
                fn check(&self, items: usize) -> crate::Result<()> {
                    #body
                }
            }
        })
    }

    /// The conversions the spec shows: a bare `Scalar`, path or buffer into a config.
    fn config_froms(&self, s: &Struct, fields: &[RField]) -> Result<TokenStream> {
        let (name, _, anon) = self.name_and_lifetimes(s)?;
        let mut out = TokenStream::new();
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
            let fdoc = doc(&format!(
                "A config whose `{}` is `path`, every other field at its default.",
                path.name
            ));
            for source in [
                quote!(&'a str),
                quote!(&'a String),
                quote!(&'a std::path::Path),
                quote!(&'a std::path::PathBuf),
                quote!(&'a std::ffi::OsStr),
            ] {
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
        Ok(out)
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
                let lifetime = maybe(quote!(<'a>), info.lifetime);
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
            Kind::Slice { count, .. } => vec![
                (
                    name.clone(),
                    quote!(crate::marshal::slice(self.#name).cast()),
                ),
                (ident(count), quote!(self.#name.len())),
            ],
            Kind::Path { length } => {
                lets = quote!(let #name = crate::marshal::path(self.#name)?;);
                vec![
                    (name.clone(), quote!(#name.0)),
                    (ident(length), quote!(#name.1)),
                ]
            }
            Kind::Str { length } => {
                lets = quote!(let #name = crate::marshal::str(self.#name););
                vec![
                    (name.clone(), quote!(#name.0)),
                    (ident(length), quote!(#name.1)),
                ]
            }
            Kind::Bytes { length } => vec![
                (
                    name.clone(),
                    quote!(crate::marshal::slice(self.#name).cast()),
                ),
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
            Kind::Handle(handle) if is_mutable_handle(handle) => {
                vec![(name.clone(), quote!(crate::marshal::handle_mut(self.#name)))]
            }
            Kind::Handle(_) => vec![(name.clone(), quote!(crate::marshal::handle(self.#name)))],
            Kind::Out(_) => vec![(name.clone(), quote!(crate::marshal::out(self.#name)))],
            Kind::Progress { context } => {
                let context = ident(context);
                lets = quote!(let (#name, #context) = crate::progress::arm(slot, self.#name););
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
            Kind::Chars => quote!(crate::marshal::string(&raw.#name)),
            Kind::Nested(c) => {
                let name_ty = self.struct_ident(c);
                quote!(crate::#name_ty::from_raw(&raw.#name)?)
            }
            other => {
                return Err(format!(
                    "uform-gen: `{other:?}` cannot be read back from the library"
                ))
            }
        })
    }
}
