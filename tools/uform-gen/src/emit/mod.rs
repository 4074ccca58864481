//! From the IR to the safe layer's token streams, one per header.
//!
//! The walks read the IR into what the Rust layer needs (`fields`: a struct's fields as the Rust layer
//! groups them; `params`: a verb's parameters; `uses`: which conversions anything calls), and the
//! emitters turn that into tokens, one module per kind of item: `enums`, `structs`, `functions` and
//! `verbs`; `safety` words the comment above each `unsafe` block they emit.

mod enums;
mod fields;
mod functions;
mod params;
pub(crate) mod safety;
mod structs;
mod uses;
mod verbs;

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{CType, Decl, Ir, Struct};
use crate::names::{ident, type_name};

type Result<T, E = String> = std::result::Result<T, E>;

/// One header's safe layer.
pub struct Output {
    /// The header's module name (`types`, `model`, `encode`, `train`).
    pub header: String,
    /// The module's items.
    pub tokens: TokenStream,
}

/// What the generator knows of a hand-written handle.
struct HandleInfo {
    /// Its Rust type.
    rust: &'static str,
    /// Whether a call takes it by `&mut`.
    mutable: bool,
    /// Whether its Rust type has a lifetime.
    lifetime: bool,
    /// The marker its receivers' verbs name, if it has verbs.
    of: Option<&'static str>,
}

fn handle_info(c: &str) -> Option<HandleInfo> {
    let (rust, mutable, lifetime, of) = match c {
        "uform_executor_t" => ("Executor", false, false, None),
        "uform_arena_t" => ("Arena", true, false, None),
        "uform_model_t" => ("Model", false, false, Some("OfModel")),
        "uform_mesh_t" => ("Mesh", false, false, None),
        "uform_trainer_t" => ("Trainer", false, true, Some("OfTrainer")),
        _ => return None,
    };
    Some(HandleInfo {
        rust,
        mutable,
        lifetime,
        of,
    })
}

/// Whether a handle is taken by `&mut`.
fn is_mutable_handle(c: &str) -> bool {
    handle_info(c).is_some_and(|h| h.mutable)
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

/// A number's Rust type.
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

/// A number's zero.
fn zero(ty: &CType) -> TokenStream {
    match ty {
        CType::F32 | CType::F64 => quote!(0.0),
        CType::Bool => quote!(false),
        _ => quote!(0),
    }
}

/// `tokens` when `present`, else nothing.
fn maybe(tokens: TokenStream, present: bool) -> TokenStream {
    if present {
        tokens
    } else {
        TokenStream::new()
    }
}

/// What every emitter reads: the IR, and which conversions anything calls.
struct Cx<'i> {
    ir: &'i Ir,
    uses: uses::Uses,
}

impl<'i> Cx<'i> {
    fn is_flags(&self, c: &str) -> bool {
        self.ir
            .enum_named(c)
            .is_some_and(|e| e.directives.first("flags").is_some())
    }

    fn is_config(&self, c: &str) -> bool {
        self.ir
            .struct_named(c)
            .is_some_and(|s| s.directives.first("config").is_some())
    }

    fn struct_of(&self, c: &str) -> Result<&'i Struct> {
        self.ir
            .struct_named(c)
            .ok_or_else(|| format!("uform-gen: unknown struct `{c}`"))
    }

    fn enum_type(&self, c: &str) -> TokenStream {
        let name = ident(&type_name(c));
        quote!(crate::#name)
    }

    /// `NAMEConfig` for a `@uform config NAME` struct, else the struct's type name.
    fn struct_rust_name(&self, c: &str) -> String {
        match self
            .ir
            .struct_named(c)
            .and_then(|s| s.directives.first("config"))
        {
            Some([name, ..]) => format!("{name}Config"),
            _ => type_name(c),
        }
    }

    fn struct_ident(&self, c: &str) -> Ident {
        ident(&self.struct_rust_name(c))
    }

    /// The Rust type of a struct, with `lifetime` when it needs one.
    fn struct_type(&self, c: &str, lifetime: &TokenStream) -> Result<TokenStream> {
        let name = self.struct_ident(c);
        Ok(if self.needs_lifetime(c)? {
            quote!(crate::#name<#lifetime>)
        } else {
            quote!(crate::#name)
        })
    }

    /// The Rust type of an element of a slice or tape.
    fn elem_type(&self, elem: &CType) -> Result<TokenStream> {
        Ok(match elem {
            CType::Char | CType::Int("u8") => quote!(u8),
            CType::Enum(e) => self.enum_type(e),
            other => prim(other)?,
        })
    }
}

/// Emits the safe layer, one token stream per header that has one.
pub fn emit(ir: &Ir) -> Result<Vec<Output>> {
    let cx = Cx {
        ir,
        uses: uses::Uses::of(ir),
    };
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
