//! Functions other than verbs: getters `Handle::<what>(&self)`, constructors `Handle::<verb>(...)`, and
//! `@uform slice` functions filling a caller's slice.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::ir::{CType, Function};
use crate::names::{base, clean_doc, ident};

use super::fields::Kind;
use super::safety::Unsafe;
use super::{doc, handle_info, maybe, prim, Cx, Result};

impl Cx<'_> {
    pub(super) fn emit_function(&self, f: &Function) -> Result<TokenStream> {
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
                let rust = self.struct_ident(c);
                (
                    ty,
                    quote!(core::mem::MaybeUninit::<sys::#c_ty>::zeroed()),
                    quote!(crate::#rust::from_raw(&out)),
                )
            }
            _ => return Ok(None),
        };
        let out_type = match &**to {
            CType::Enum(c) | CType::Struct(c) => format!("sys::{c}"),
            number => prim(number)?.to_string(),
        };
        let call_safety = Unsafe::Get { function: &f.name }.comment();
        let read_safety = Unsafe::Got {
            function: &f.name,
            ty: &out_type,
        }
        .comment();
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
                    #call_safety
                    let status = unsafe { sys::#c_fn(crate::marshal::Handle::raw(self), out.as_mut_ptr(), &mut message) };
                    crate::error::check(status, message)?;
                    #read_safety
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
                    args.push(quote!(crate::marshal::Handle::raw(#pident)));
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
                    let rust = self.struct_ident(c);
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
        let resurface_safety = Unsafe::Resurface { function: &f.name }.comment();
        let resurface = maybe(
            quote!(#resurface_safety unsafe { crate::call::HandlerSlot::resurface(slot) };),
            has_progress,
        );
        let call_safety = Unsafe::Construct { function: &f.name }.comment();
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
                    #call_safety
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
        let rust = self.struct_ident(&elem);
        let name = ident(base(&f.name));
        let pname = ident(pointer);
        let zeroed_safety = Unsafe::Zeroed {
            ty: &format!("sys::{elem}"),
        }
        .comment();
        let call_safety = Unsafe::Fill {
            function: &f.name,
            pointer,
            capacity,
        }
        .comment();
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
                let mut raw: Vec<sys::#c_ty> = (0..#pname.len())
                    .map(|_| {
                        #zeroed_safety
                        unsafe { core::mem::zeroed() }
                    })
                    .collect();
                let mut count = 0usize;
                let mut message = core::ptr::null();
                #call_safety
                let status = unsafe { sys::#c_fn(#(#call_args),*) };
                crate::error::check(status, message)?;
                for (out, raw) in #pname.iter_mut().zip(&raw).take(count) {
                    *out = crate::#rust::from_raw(raw)?;
                }
                Ok(count)
            }
        })
    }
}
