//! `@uform verb TRAIT`: each verb once, as a provided method of `TRAIT` that every receiver of its handle
//! implements, and the call description (`crate::call::Verb` in the crate) the receivers run blocking or
//! deferred. The parameters come from the walk in `params.rs`.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{CType, Decl, Function, Header};
use crate::names::{camel, clean_doc, ident};

use super::fields::Kind;
use super::params::{Input, Param, Shape};
use super::safety::Unsafe;
use super::structs::tape_names;
use super::{doc, handle_info, is_mutable_handle, maybe, prim, view, Cx, Result};

/// What one parameter contributes to the method and to its call.
#[derive(Default)]
struct Piece {
    /// The method's parameter: `texts: Texts`.
    param: Option<TokenStream>,
    /// The bounds on the method's generics: `Texts: crate::Accepts<Self::Mode, ...>`.
    bounds: Vec<TokenStream>,
    /// The bound on the call's generic: `Texts: crate::Accepts<R::Mode, ...>`.
    call_bound: Option<TokenStream>,
    /// The call's field and how the method fills it.
    field: Option<(TokenStream, TokenStream)>,
    /// What the call holds while the library runs: its name, type and how `hold` makes it.
    held: Option<(Ident, TokenStream, TokenStream)>,
    /// `measure`'s statement for an input, and the words of scratch it answers.
    measure: Option<(TokenStream, TokenStream)>,
    /// `measure`'s check once every input is measured: a per-item input's count, the config's fields.
    check: Option<TokenStream>,
    /// `call`'s statement turning a held input into its tape.
    tape: Option<TokenStream>,
    /// The C arguments.
    args: TokenStream,
}

/// A verb's tokens: the trait's provided method and the call it dispatches.
struct VerbTokens {
    method: String,
    provided: TokenStream,
    call: TokenStream,
}

/// The generic parameter naming an input: its camel-cased name, `In`-suffixed where that names something
/// else in scope.
fn generic(name: &str) -> Ident {
    let mut generic = camel(name);
    if [
        "Bytes", "Paths", "Samples", "Each", "OnePath", "Config", "R",
    ]
    .contains(&generic.as_str())
    {
        generic.push_str("In");
    }
    format_ident!("{}", generic)
}

impl Cx<'_> {
    /// The traits whose first verb `header` declares.
    pub(super) fn emit_traits(&self, header: &Header) -> Result<TokenStream> {
        let mut traits: Vec<(String, Vec<&Function>)> = Vec::new();
        for f in self.ir.functions() {
            let Some(args) = f.directives.first("verb") else {
                continue;
            };
            let name = args
                .first()
                .ok_or_else(|| format!("uform-gen: `{}`: `@uform verb` names no trait", f.name))?;
            match traits.iter_mut().find(|(t, _)| t == name) {
                Some((_, verbs)) => verbs.push(f),
                None => traits.push((name.clone(), vec![f])),
            }
        }
        let mut out = TokenStream::new();
        for (name, verbs) in traits {
            let home = header
                .decls
                .iter()
                .any(|d| matches!(d, Decl::Function(f) if f.name == verbs[0].name));
            if home {
                out.extend(self.emit_trait(&name, &verbs)?);
            }
        }
        Ok(out)
    }

    fn emit_trait(&self, trait_name: &str, verbs: &[&Function]) -> Result<TokenStream> {
        let trait_ident = ident(trait_name);
        let CType::Handle(receiver) = &verbs[0].params[0].1 else {
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
        let mut methods = Vec::new();
        let mut calls = TokenStream::new();
        let mut names = Vec::new();
        for verb in verbs {
            let v = self.verb(verb, receiver)?;
            names.push(format!("`{}`", v.method));
            methods.push(v.provided);
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
                #(#methods)*
            }

            #blanket_doc
            impl<R: crate::Receiver<Of = crate::call::#of>> #trait_ident for R {}

            #calls
        })
    }

    /// One parameter's share of the method and the call; `items` counts the first tape's items.
    fn piece(&self, p: &Param, shape: &Shape, items: &TokenStream) -> Result<Piece> {
        Ok(match p {
            Param::Input { name, input } => self.input_piece(name, input, shape, items)?,
            Param::Flags { name, c } => {
                let pid = ident(name);
                let ty = self.enum_type(c);
                let c_ty = ident(c);
                Piece {
                    param: Some(quote!(#pid: #ty)),
                    field: Some((quote!(#pid: #ty), quote!(#pid))),
                    held: Some((pid.clone(), quote!(sys::#c_ty), quote!(self.#pid.to_raw()))),
                    args: quote!(*#pid,),
                    ..Piece::default()
                }
            }
            Param::Number { name, ty } => {
                let pid = ident(name);
                let ty = prim(ty)?;
                Piece {
                    param: Some(quote!(#pid: #ty)),
                    field: Some((quote!(#pid: #ty), quote!(#pid))),
                    held: Some((pid.clone(), ty, quote!(self.#pid))),
                    args: quote!(*#pid,),
                    ..Piece::default()
                }
            }
            Param::Config { c } => self.config_piece(c, items)?,
            Param::Arena { name } => {
                let pid = ident(name);
                Piece {
                    param: Some(quote!(#pid: &'a mut crate::Arena)),
                    field: Some((quote!(#pid: &'a mut crate::Arena), quote!(#pid))),
                    held: Some((
                        pid.clone(),
                        quote!(sys::uform_arena_t),
                        quote!(crate::marshal::Handle::raw(&*self.#pid)),
                    )),
                    args: quote!(*#pid,),
                    ..Piece::default()
                }
            }
            Param::Result { .. } => Piece {
                args: quote!(raw,),
                ..Piece::default()
            },
        })
    }

    /// An input's piece: a generic accepted in the receiver's mode, measured, held and passed as a tape.
    fn input_piece(
        &self,
        name: &str,
        input: &Input,
        shape: &Shape,
        items: &TokenStream,
    ) -> Result<Piece> {
        let pid = ident(name);
        let g = generic(name);
        let kind = match input {
            Input::Bytes => quote!(crate::inputs::Bytes),
            Input::Paths => quote!(crate::inputs::Paths),
            Input::Samples => quote!(crate::inputs::Samples),
            Input::OnePath => quote!(crate::inputs::OnePath),
            Input::Each(elem) => {
                let elem = self.elem_type(elem)?;
                quote!(crate::inputs::Each<#elem>)
            }
        };
        let accepts = quote!(<#g as crate::Accepts<R::Mode, #kind>>);
        let names = tape_names(name, shape.first_tape().unwrap_or_default());
        let check = matches!(input, Input::Each(_)).then(|| {
            let message = format!(
                "`{name}` holds one value per item of `{}`",
                shape.first_tape().unwrap_or_default()
            );
            quote!(crate::inputs::per_item(#pid.count, #items, &crate::inputs::TapeNames { fall: "", leave: "", per_item: #message })?;)
        });
        let args = match input {
            Input::Each(_) => quote!(#pid.data.cast(),),
            Input::OnePath => quote!(#pid.data.cast(), #pid.length,),
            _ => quote!(#pid.data.cast(), #pid.length, #pid.offsets, #pid.count,),
        };
        Ok(Piece {
            param: Some(quote!(#pid: #g)),
            bounds: vec![quote!(#g: crate::Accepts<Self::Mode, #kind>)],
            call_bound: Some(quote!(#g: crate::Accepts<R::Mode, #kind>)),
            field: Some((quote!(#pid: #g), quote!(#pid))),
            held: Some((
                pid.clone(),
                quote!(#accepts::Kept),
                quote!(#accepts::keep(self.#pid, tail)),
            )),
            measure: Some((
                quote!(let #pid = #accepts::measure(&self.#pid, #names)?;),
                quote!(#pid.words),
            )),
            check,
            tape: Some(quote!(let #pid = #accepts::tape(#pid);)),
            args,
        })
    }

    /// The config's piece: anything `Into` the config struct (`'c` where it borrows), checked and held raw.
    fn config_piece(&self, c: &str, items: &TokenStream) -> Result<Piece> {
        let rust = self.struct_ident(c);
        let c_ty = ident(c);
        let lifetime = self.needs_lifetime(c)?;
        let ty = if lifetime {
            quote!(crate::#rust<'c>)
        } else {
            quote!(crate::#rust)
        };
        let mut bounds = vec![quote!(Config: Into<#ty>)];
        if lifetime {
            bounds.push(quote!(Self::Mode: crate::inputs::Admits<'c>));
        }
        let check = self
            .checks(c)?
            .then(|| quote!(crate::call::Check::check(&self.config, #items)?;));
        Ok(Piece {
            param: Some(quote!(config: Config)),
            bounds,
            field: Some((quote!(config: #ty), quote!(config: config.into()))),
            held: Some((format_ident!("config"), quote!(sys::#c_ty), quote!(config))),
            check,
            args: quote!(config,),
            ..Piece::default()
        })
    }

    /// What the verb answers, whether that borrows the config's arena (`'c`) rather than its own (`'a`),
    /// and how `finish` converts the views.
    fn answer(&self, f: &Function, shape: &Shape) -> Result<(TokenStream, bool, TokenStream)> {
        let Some(c) = shape.result() else {
            return Ok((
                quote!(()),
                false,
                quote!({
                    let _ = raw;
                    Ok(())
                }),
            ));
        };
        let config_has_arena = match shape.config() {
            Some(config) => self
                .classify(self.struct_of(config)?)?
                .iter()
                .any(|field| matches!(&field.kind, Kind::Handle(h) if is_mutable_handle(h))),
            None => false,
        };
        let lifetime = if shape.has_arena() {
            quote!('a)
        } else if config_has_arena {
            quote!('c)
        } else {
            return Err(format!(
                "uform-gen: `{}` answers `{c}` but names no arena",
                f.name
            ));
        };
        let (ty, finish) =
            view(c, &lifetime).ok_or_else(|| format!("uform-gen: `{c}` is not a view"))?;
        Ok((ty, !shape.has_arena(), finish))
    }

    fn verb(&self, f: &Function, receiver: &str) -> Result<VerbTokens> {
        let shape = self.walk(f, receiver)?;
        let items = match shape.first_tape() {
            Some(tape) => {
                let tape = ident(tape);
                quote!(#tape.count)
            }
            None => quote!(0),
        };
        let pieces = shape
            .params
            .iter()
            .map(|p| self.piece(p, &shape, &items))
            .collect::<Result<Vec<_>>>()?;
        let (output, output_c, finish) = self.answer(f, &shape)?;
        let config_lifetime = match shape.config() {
            Some(c) => self.needs_lifetime(c)?,
            None => false,
        };
        let verb = Verb {
            f,
            generics: shape
                .params
                .iter()
                .filter_map(|p| match p {
                    Param::Input { name, .. } => Some(generic(name)),
                    _ => None,
                })
                .collect(),
            struct_name: format_ident!("{}Call", camel(&shape.method)),
            shape: &shape,
            pieces,
            output,
            output_c,
            finish,
            config_lifetime,
        };
        Ok(VerbTokens {
            method: shape.method.clone(),
            provided: verb.provided(),
            call: verb.call(),
        })
    }
}

/// A verb, walked and cut into pieces, ready to write.
struct Verb<'v> {
    f: &'v Function,
    shape: &'v Shape,
    pieces: Vec<Piece>,
    /// The generic parameter of each input.
    generics: Vec<Ident>,
    /// The call's struct: `TextEncodeCall`.
    struct_name: Ident,
    /// What the verb answers, whether that borrows the config (`'c`), and how `finish` converts it.
    output: TokenStream,
    output_c: bool,
    finish: TokenStream,
    /// Whether the config borrows (`'c`).
    config_lifetime: bool,
}

impl Verb<'_> {
    /// The trait's provided method, dispatching the call to the receiver; `'a` for the answer (and the
    /// arena), `'c` for the config.
    fn provided(&self) -> TokenStream {
        let f = self.f;
        let docs = doc(&format!("{}\n\nCalls `{}`.", clean_doc(&f.doc), f.name));
        let alias = &f.name;
        let method = ident(&self.shape.method);
        let lifetimes = [quote!('a)]
            .into_iter()
            .chain(self.config_lifetime.then(|| quote!('c)));
        let generics = &self.generics;
        let config_generic = maybe(quote!(Config,), self.shape.config().is_some());
        let params = self.pieces.iter().filter_map(|p| p.param.as_ref());
        let bounds = self.pieces.iter().flat_map(|p| &p.bounds);
        let outlives = maybe(quote!('c: 'a,), self.output_c);
        let inits = self
            .pieces
            .iter()
            .filter_map(|p| p.field.as_ref().map(|f| &f.1));
        let (output, struct_name) = (&self.output, &self.struct_name);
        quote! {
            #docs
            #[doc(alias = #alias)]
            fn #method<#(#lifetimes,)* #(#generics,)* #config_generic>(self, #(#params),*)
                -> Self::Answer<'a, #output>
            where
                #(#bounds,)*
                Self: 'a,
                #outlives
            {
                self.dispatch(#struct_name { #(#inits),* })
            }
        }
    }

    /// The call's struct and its `Verb` impl: measure, hold, call and finish.
    fn call(&self) -> TokenStream {
        let pieces = &self.pieces;
        let lifetimes: Vec<TokenStream> = self
            .shape
            .has_arena()
            .then(|| quote!('a))
            .into_iter()
            .chain(self.config_lifetime.then(|| quote!('c)))
            .collect();
        let generics = &self.generics;
        let fields = pieces.iter().filter_map(|p| p.field.as_ref().map(|f| &f.0));
        let call_bounds = pieces.iter().filter_map(|p| p.call_bound.as_ref());
        let held_types = pieces.iter().filter_map(|p| p.held.as_ref().map(|h| &h.1));
        let raw_type = match self.shape.result() {
            Some(c) => {
                let c = ident(c);
                quote!(sys::#c)
            }
            None => quote!(()),
        };
        let verb_safety = Unsafe::Verb {
            function: self.f.name.as_str(),
            result: self.shape.result(),
        }
        .comment();
        let call_doc = doc(&format!("One call of `{}`.", self.f.name));
        let (measure, hold, raw_call) = (self.measure(), self.hold(), self.raw_call());
        let (output, finish, struct_name) = (&self.output, &self.finish, &self.struct_name);
        quote! {
            #call_doc
            struct #struct_name<#(#lifetimes,)* #(#generics),*> {
                #(#fields,)*
            }

            #verb_safety
            unsafe impl<#(#lifetimes,)* R, #(#generics),*> crate::call::Verb<R> for #struct_name<#(#lifetimes,)* #(#generics),*>
            where
                R: crate::Receiver,
                #(#call_bounds,)*
            {
                type Held = (#(#held_types,)*);
                type Raw = #raw_type;
                type Output = #output;

                #measure

                #hold

                #raw_call

                unsafe fn finish(raw: &Self::Raw) -> crate::Result<Self::Output> {
                    #finish
                }
            }
        }
    }

    /// The call's `measure`: each input measured, then the checks, answering the words of scratch they need.
    fn measure(&self) -> TokenStream {
        let pieces = &self.pieces;
        let measures = pieces
            .iter()
            .filter_map(|p| p.measure.as_ref().map(|m| &m.0));
        let words: Vec<&TokenStream> = pieces
            .iter()
            .filter_map(|p| p.measure.as_ref().map(|m| &m.1))
            .collect();
        let words = if words.is_empty() {
            quote!(0)
        } else {
            quote!(#(#words)+*)
        };
        let checks = pieces.iter().filter_map(|p| p.check.as_ref());
        quote! {
            fn measure(&self) -> crate::Result<usize> {
                #(#measures)*
                #(#checks)*
                Ok(#words)
            }
        }
    }

    /// The call's `hold`: the config made raw in the handler slot, and what every piece holds.
    fn hold(&self) -> TokenStream {
        let held_exprs = self
            .pieces
            .iter()
            .filter_map(|p| p.held.as_ref().map(|h| &h.2));
        let hold_config = if self.shape.config().is_some() {
            quote!(let config = self.config.into_raw(slot)?;)
        } else {
            quote!(let _ = slot;)
        };
        quote! {
            fn hold(self, tail: &mut &mut [usize], slot: *mut crate::call::HandlerSlot) -> crate::Result<Self::Held> {
                #hold_config
                Ok((#(#held_exprs,)*))
            }
        }
    }

    /// The call's `call`: the held values unpacked, inputs turned into tapes, and the C function called.
    fn raw_call(&self) -> TokenStream {
        let pieces = &self.pieces;
        let held_names = pieces.iter().filter_map(|p| p.held.as_ref().map(|h| &h.0));
        let tapes = pieces.iter().filter_map(|p| p.tape.as_ref());
        let args = pieces.iter().map(|p| &p.args);
        let raw_unused = match self.shape.result() {
            Some(_) => TokenStream::new(),
            None => quote!(let _ = raw;),
        };
        let function = self.f.name.as_str();
        let held_safety = Unsafe::Held { function }.comment();
        let call_safety = Unsafe::Call { function }.comment();
        let c_fn = ident(&self.f.name);
        quote! {
            unsafe fn call(
                held: *const Self::Held,
                target: *mut core::ffi::c_void,
                executor: sys::uform_executor_t,
                raw: *mut Self::Raw,
                outcome: *mut sys::uform_outcome_t,
                message: *mut *const core::ffi::c_char,
            ) -> sys::uform_status_t {
                #held_safety
                let (#(#held_names,)*) = unsafe { &*held };
                #(#tapes)*
                #raw_unused
                #call_safety
                unsafe { sys::#c_fn(target.cast(), executor, #(#args)* outcome, message) }
            }
        }
    }
}
