//! `@uform enum` as a Rust enum, `@uform flags` as a bit set.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{Enum, Variant};
use crate::names::{base, camel, clean_doc, ident, type_name};

use super::safety::Unsafe;
use super::{doc, maybe, Cx, Result};

/// The suffix of an enumerator: `fast` for `uform_mood_fast_k`.
fn suffix<'v>(e: &Enum, v: &'v Variant) -> Result<&'v str> {
    let stem = base(&e.c);
    v.c.strip_prefix(&format!("uform_{stem}_"))
        .and_then(|s| s.strip_suffix("_k"))
        .ok_or_else(|| format!("uform-gen: `{}` is not named `uform_{stem}_..._k`", v.c))
}

/// The example name the header's name function quotes (`such as `"shape-mismatch"``), or the first variant's.
fn example(name_doc: &str, variants: &[(Ident, &Variant)]) -> String {
    if let Some(at) = name_doc.find("such as `") {
        let rest = &name_doc[at + "such as `".len()..];
        if let Some(end) = rest.find('`') {
            return format!("`{}`", &rest[..end]);
        }
    }
    variants
        .first()
        .map(|(rust, _)| format!("the name of `{rust}`"))
        .unwrap_or_default()
}

impl Cx<'_> {
    pub(super) fn emit_enum(&self, e: &Enum) -> Result<TokenStream> {
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
            let suffix = suffix(e, v)?;
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
            let default = maybe(quote!(#[default]), v.value == 0);
            quote!(#docs #[doc(alias = #alias)] #default #rust = #value,)
        });
        let all = variants.iter().map(|(rust, _)| quote!(Self::#rust));

        let name_fn = format!("uform_{stem}_name");
        let parse_fn = format!("uform_{stem}_parse");
        let name_decl = self.ir.function_named(&name_fn);
        let has_parse = !print_only && self.ir.function_named(&parse_fn).is_some();

        let mut text = clean_doc(&e.doc);
        text.push_str(&format!("\n\nMirrors `{c_name}`"));
        match (name_decl.is_some(), has_parse) {
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
        let derive_default = maybe(quote!(Default,), has_zero);

        let name_impl = match name_decl {
            Some(f) => {
                let example = example(&f.doc, &variants);
                let name_doc = doc(&format!(
                    "The name the C table owns, such as {example}.\n\nCalls `{name_fn}`."
                ));
                let alias = &name_fn;
                let safety = Unsafe::Name { function: &name_fn }.comment();
                let name_fn = ident(&name_fn);
                quote! {
                    #name_doc
                    #[doc(alias = #alias)]
                    pub fn name(self) -> &'static str {
                        #safety
                        let name = unsafe { crate::marshal::static_str(sys::#name_fn(self.to_raw())) };
                        name.unwrap_or("")
                    }
                }
            }
            None => TokenStream::new(),
        };
        let display = maybe(
            quote! {
                impl core::fmt::Display for #name {
                    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                        f.write_str(self.name())
                    }
                }
            },
            name_decl.is_some(),
        );
        let from_str = if has_parse {
            let parse_doc = doc(&format!(
                "Parses a name the C table owns; an unknown name is `Status::InvalidArgument`.\n\nCalls `{parse_fn}`."
            ));
            let alias = &parse_fn;
            let safety = Unsafe::Parse {
                function: &parse_fn,
            }
            .comment();
            let parse_fn = ident(&parse_fn);
            quote! {
                impl core::str::FromStr for #name {
                    type Err = crate::Error;
                    #parse_doc
                    #[doc(alias = #alias)]
                    fn from_str(text: &str) -> crate::Result<Self> {
                        let mut raw = sys::#c_ty(0);
                        crate::marshal::parse(text, |name| {
                            #safety
                            unsafe { sys::#parse_fn(name, &mut raw) }
                        })?;
                        Self::from_raw(raw).ok_or(crate::error::invalid("the name is not one this type holds"))
                    }
                }
            }
        } else {
            TokenStream::new()
        };
        let from_raw = if self.uses.read(c_name) {
            let matches = variants.iter().map(|(rust, v)| {
                let value = Literal::u64_unsuffixed(v.value);
                quote!(#value => Some(Self::#rust),)
            });
            quote! {
                /// The enumerator of a C value; `None` for a value this binding does not know.
                pub(crate) const fn from_raw(raw: sys::#c_ty) -> Option<Self> {
                    match raw.0 {
                        #(#matches)*
                        _ => None,
                    }
                }
            }
        } else {
            TokenStream::new()
        };
        let to_raw = maybe(
            quote! {
                /// The C value.
                pub(crate) const fn to_raw(self) -> sys::#c_ty {
                    sys::#c_ty(self as #repr)
                }
            },
            self.uses.written(c_name),
        );

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
                #from_raw
                #to_raw
            }

            #display
            #from_str
        })
    }

    fn emit_flags(&self, e: &Enum) -> Result<TokenStream> {
        let name = ident(&type_name(&e.c));
        let c_ty = ident(&e.c);
        let c_name = &e.c;
        let repr = format_ident!("{}", e.repr);
        let mut flags = Vec::new();
        for v in &e.variants {
            flags.push((format_ident!("{}", suffix(e, v)?.to_uppercase()), v));
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
        let to_raw = maybe(
            quote! {
                /// The C value.
                pub(crate) const fn to_raw(self) -> sys::#c_ty {
                    sys::#c_ty(self.0)
                }
            },
            self.uses.written(c_name),
        );
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

                #to_raw
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
}
