//! The intermediate representation: what the raw bindings declare, header by header, with the `@uform`
//! annotations their doc comments carry. Parsed from `rust/sys.rs` with `syn`, so no second C parser.

use std::collections::{BTreeMap, BTreeSet};

use syn::{Expr, ForeignItem, Item, Lit, Type};

/// A C type as the bindings spell it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CType {
    /// `size_t`.
    Usize,
    /// A fixed-width or C integer, by its Rust spelling (`u32`, `i32`, `u64`, `u8`, ...).
    Int(&'static str),
    /// `float`.
    F32,
    /// `double`.
    F64,
    /// `bool`.
    Bool,
    /// `char`.
    Char,
    /// `void`.
    Void,
    /// An enumeration (or flags) by its C name.
    Enum(String),
    /// A struct by its C name.
    Struct(String),
    /// An opaque handle by its C name (`uform_model_t`).
    Handle(String),
    /// The progress handler type.
    Progress,
    /// A pointer.
    Ptr { mutable: bool, to: Box<CType> },
    /// A fixed-size array.
    Array(Box<CType>, usize),
}

impl CType {
    /// Whether the type is a plain number (or `bool`).
    pub fn is_number(&self) -> bool {
        matches!(
            self,
            CType::Usize | CType::Int(_) | CType::F32 | CType::F64 | CType::Bool
        )
    }
}

/// The `@uform` directives of a doc comment, each split into words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Directives(pub Vec<Vec<String>>);

impl Directives {
    /// Reads every `@uform ...` up to the end of its line.
    pub fn parse(doc: &str) -> Self {
        let mut directives = Vec::new();
        for line in doc.lines() {
            let mut rest = line;
            while let Some(at) = rest.find("@uform") {
                let after = &rest[at + "@uform".len()..];
                let end = after.find("@uform").unwrap_or(after.len());
                let words: Vec<String> =
                    after[..end].split_whitespace().map(str::to_owned).collect();
                if !words.is_empty() {
                    directives.push(words);
                }
                rest = &after[end..];
            }
        }
        Self(directives)
    }

    /// The directives whose first word is `kind`, without it.
    pub fn all<'s>(&'s self, kind: &'s str) -> impl Iterator<Item = &'s [String]> + 's {
        self.0
            .iter()
            .filter(move |words| words[0] == kind)
            .map(|words| &words[1..])
    }

    /// The first directive whose first word is `kind`, without it.
    pub fn first(&self, kind: &str) -> Option<&[String]> {
        self.0
            .iter()
            .find(|words| words[0] == kind)
            .map(|words| &words[1..])
    }

    /// The value of a `key=value` directive.
    pub fn value(&self, key: &str) -> Option<String> {
        self.0
            .iter()
            .flatten()
            .find_map(|word| word.strip_prefix(key)?.strip_prefix('=').map(str::to_owned))
    }
}

/// One enumerator.
#[derive(Clone, Debug)]
pub struct Variant {
    pub c: String,
    pub value: u64,
    pub doc: String,
    pub directives: Directives,
}

/// An enumeration, or a set of flags.
#[derive(Clone, Debug)]
pub struct Enum {
    pub c: String,
    pub doc: String,
    pub directives: Directives,
    /// The integer type the bindings hold it in (`u32` or `i32`).
    pub repr: &'static str,
    pub variants: Vec<Variant>,
}

/// A field of a struct.
#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub ty: CType,
    pub doc: String,
    pub directives: Directives,
}

/// A struct with named fields.
#[derive(Clone, Debug)]
pub struct Struct {
    pub c: String,
    pub doc: String,
    pub directives: Directives,
    pub fields: Vec<Field>,
}

/// A function.
#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub doc: String,
    pub directives: Directives,
    pub params: Vec<(String, CType)>,
    pub ret: Option<CType>,
}

/// Something a header declares, in the order it does.
#[derive(Clone, Debug)]
pub enum Decl {
    Enum(Enum),
    Struct(Struct),
    Function(Function),
}

/// The declarations of one header.
#[derive(Clone, Debug)]
pub struct Header {
    /// The module name: `types`, `model`, `encode`, `train`, `uform`.
    pub name: String,
    pub decls: Vec<Decl>,
}

/// Everything the bindings declare.
#[derive(Clone, Debug, Default)]
pub struct Ir {
    pub headers: Vec<Header>,
}

impl Ir {
    pub fn enums(&self) -> impl Iterator<Item = &Enum> {
        self.headers.iter().flat_map(|h| &h.decls).filter_map(|d| {
            if let Decl::Enum(e) = d {
                Some(e)
            } else {
                None
            }
        })
    }
    pub fn structs(&self) -> impl Iterator<Item = &Struct> {
        self.headers.iter().flat_map(|h| &h.decls).filter_map(|d| {
            if let Decl::Struct(s) = d {
                Some(s)
            } else {
                None
            }
        })
    }
    pub fn functions(&self) -> impl Iterator<Item = &Function> {
        self.headers.iter().flat_map(|h| &h.decls).filter_map(|d| {
            if let Decl::Function(f) = d {
                Some(f)
            } else {
                None
            }
        })
    }
    pub fn enum_named(&self, c: &str) -> Option<&Enum> {
        self.enums().find(|e| e.c == c)
    }
    pub fn struct_named(&self, c: &str) -> Option<&Struct> {
        self.structs().find(|s| s.c == c)
    }
    pub fn function_named(&self, c: &str) -> Option<&Function> {
        self.functions().find(|f| f.name == c)
    }
}

/// The text of an item's `#[doc = "..."]` attributes.
fn doc_of(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(meta) = &attr.meta {
            if let Expr::Lit(syn::ExprLit {
                lit: Lit::Str(text),
                ..
            }) = &meta.value
            {
                lines.push(text.value());
            }
        }
    }
    lines.join("\n")
}

/// The names the bindings give kinds of types, gathered before resolving any type.
#[derive(Default)]
struct Names {
    enums: BTreeSet<String>,
    structs: BTreeSet<String>,
    handles: BTreeSet<String>,
    progress: BTreeSet<String>,
}

fn last_ident(path: &syn::Path) -> String {
    path.segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

fn resolve(ty: &Type, names: &Names) -> Result<CType, String> {
    Ok(match ty {
        Type::Path(path) => {
            let name = last_ident(&path.path);
            match name.as_str() {
                "usize" | "size_t" => CType::Usize,
                "u8" | "c_uchar" => CType::Int("u8"),
                "i8" | "c_schar" => CType::Int("i8"),
                "u16" | "c_ushort" => CType::Int("u16"),
                "i16" | "c_short" => CType::Int("i16"),
                "u32" | "c_uint" => CType::Int("u32"),
                "i32" | "c_int" => CType::Int("i32"),
                "u64" | "c_ulonglong" => CType::Int("u64"),
                "i64" | "c_longlong" => CType::Int("i64"),
                "f32" | "c_float" => CType::F32,
                "f64" | "c_double" => CType::F64,
                "bool" => CType::Bool,
                "c_char" => CType::Char,
                "c_void" => CType::Void,
                other if names.enums.contains(other) => CType::Enum(other.to_owned()),
                other if names.structs.contains(other) => CType::Struct(other.to_owned()),
                other if names.handles.contains(other) => CType::Handle(other.to_owned()),
                other if names.progress.contains(other) => CType::Progress,
                other => {
                    return Err(format!(
                        "uform-gen: the bindings use a type it does not know: `{other}`"
                    ))
                }
            }
        }
        Type::Ptr(pointer) => CType::Ptr {
            mutable: matches!(pointer.mutability, syn::PointerMutability::Mut(_)),
            to: Box::new(resolve(&pointer.elem, names)?),
        },
        Type::Array(array) => {
            let Expr::Lit(syn::ExprLit {
                lit: Lit::Int(len), ..
            }) = &array.len
            else {
                return Err("uform-gen: an array whose length is not a literal".into());
            };
            let len = len.base10_parse::<usize>().map_err(|e| e.to_string())?;
            CType::Array(Box::new(resolve(&array.elem, names)?), len)
        }
        other => {
            return Err(format!(
                "uform-gen: the bindings use a type it does not know: `{}`",
                quote::quote!(#other)
            ))
        }
    })
}

/// Splits `rust/sys.rs` into its headers' chunks at the `// @header NAME.h` lines the generator writes.
pub fn split_sys(text: &str) -> Vec<(String, String)> {
    let mut chunks: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(header) = line.trim().strip_prefix("// @header ") {
            chunks.push((
                header.trim().trim_end_matches(".h").to_owned(),
                String::new(),
            ));
        } else if let Some((_, chunk)) = chunks.last_mut() {
            chunk.push_str(line);
            chunk.push('\n');
        }
    }
    chunks
}

/// The enumerators of each enum, by the enum's C name.
type Variants = BTreeMap<String, Vec<Variant>>;

/// Parses the chunks of the raw bindings, header by header, into the IR.
pub fn parse(chunks: &[(String, String)]) -> Result<Ir, String> {
    let files: Vec<(String, syn::File)> = chunks
        .iter()
        .map(|(header, text)| {
            syn::parse_file(text)
                .map(|file| (header.clone(), file))
                .map_err(|e| format!("uform-gen: {header}: {e}"))
        })
        .collect::<Result<_, _>>()?;

    // First pass: the names of every kind of type, and the enumerators of each enum.
    let mut names = Names::default();
    let mut variants = Variants::new();
    for (_, file) in &files {
        for item in &file.items {
            match item {
                Item::Struct(s) => name_struct(s, &mut names),
                Item::Type(alias) => name_alias(alias, &mut names),
                Item::Impl(block) => collect_variants(block, &mut variants)?,
                _ => {}
            }
        }
    }

    // Second pass: declarations in order.
    let mut ir = Ir::default();
    for (header, file) in &files {
        ir.headers.push(Header {
            name: header.clone(),
            decls: header_decls(file, &names, &mut variants)?,
        });
    }
    Ok(ir)
}

/// Files a struct's name: a tuple struct is an enum, a struct with an `_unused` field is opaque and named nowhere.
fn name_struct(s: &syn::ItemStruct, names: &mut Names) {
    let name = s.ident.to_string();
    match &s.fields {
        syn::Fields::Unnamed(_) => {
            names.enums.insert(name);
        }
        syn::Fields::Named(fields) => {
            let opaque = fields
                .named
                .iter()
                .any(|f| f.ident.as_ref().is_some_and(|i| i == "_unused"));
            if !opaque {
                names.structs.insert(name);
            }
        }
        syn::Fields::Unit => {}
    }
}

/// Files a type alias's name: a pointer is a handle, an `Option` the progress handler, an alias of a struct a struct.
fn name_alias(alias: &syn::ItemType, names: &mut Names) {
    let name = alias.ident.to_string();
    match &*alias.ty {
        Type::Ptr(_) => {
            names.handles.insert(name);
        }
        Type::Path(path) if last_ident(&path.path) == "Option" => {
            names.progress.insert(name);
        }
        Type::Path(path) if names.structs.contains(&last_ident(&path.path)) => {
            names.structs.insert(name);
        }
        _ => {}
    }
}

/// Adds the enumerators an `impl` block declares as constants (`const NAME: T = T(value)`) to its type's list.
fn collect_variants(block: &syn::ItemImpl, variants: &mut Variants) -> Result<(), String> {
    let Type::Path(self_ty) = &*block.self_ty else {
        return Ok(());
    };
    let owner = last_ident(&self_ty.path);
    for member in &block.items {
        let syn::ImplItem::Const(constant) = member else {
            continue;
        };
        let Expr::Call(call) = &constant.expr else {
            continue;
        };
        let Some(Expr::Lit(syn::ExprLit {
            lit: Lit::Int(value),
            ..
        })) = call.args.first()
        else {
            continue;
        };
        let doc = doc_of(&constant.attrs);
        variants.entry(owner.clone()).or_default().push(Variant {
            c: constant.ident.to_string(),
            value: value.base10_parse().map_err(|e| e.to_string())?,
            directives: Directives::parse(&doc),
            doc,
        });
    }
    Ok(())
}

/// One header's declarations in order: its enums, structs, struct aliases and functions.
fn header_decls(
    file: &syn::File,
    names: &Names,
    variants: &mut Variants,
) -> Result<Vec<Decl>, String> {
    let mut decls = Vec::new();
    for item in &file.items {
        match item {
            Item::Struct(s) => {
                if let Some(decl) = struct_decl(s, names, variants)? {
                    decls.push(decl);
                }
            }
            Item::Type(alias) => {
                if let Some(decl) = alias_decl(alias, names, &decls)? {
                    decls.push(decl);
                }
            }
            Item::ForeignMod(block) => {
                for member in &block.items {
                    if let ForeignItem::Fn(function) = member {
                        decls.push(function_decl(function, names)?);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(decls)
}

/// The declaration of an enum (taking its enumerators from `variants`) or a struct; `None` for an opaque struct.
fn struct_decl(
    s: &syn::ItemStruct,
    names: &Names,
    variants: &mut Variants,
) -> Result<Option<Decl>, String> {
    let name = s.ident.to_string();
    let doc = doc_of(&s.attrs);
    Ok(match &s.fields {
        syn::Fields::Unnamed(fields) if names.enums.contains(&name) => {
            let repr = match fields.unnamed.first().map(|f| resolve(&f.ty, names)) {
                Some(Ok(CType::Int(repr))) => repr,
                _ => {
                    return Err(format!(
                        "uform-gen: the enum `{name}` is not held in an integer"
                    ))
                }
            };
            Some(Decl::Enum(Enum {
                variants: variants.remove(&name).unwrap_or_default(),
                directives: Directives::parse(&doc),
                c: name,
                doc,
                repr,
            }))
        }
        syn::Fields::Named(fields) if names.structs.contains(&name) => {
            let fields = fields
                .named
                .iter()
                .map(|f| field_of(f, names))
                .collect::<Result<_, String>>()?;
            Some(Decl::Struct(Struct {
                directives: Directives::parse(&doc),
                c: name,
                doc,
                fields,
            }))
        }
        _ => None,
    })
}

/// A struct's field, with its doc comment and directives.
fn field_of(f: &syn::Field, names: &Names) -> Result<Field, String> {
    let doc = doc_of(&f.attrs);
    Ok(Field {
        name: f
            .ident
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        ty: resolve(&f.ty, names)?,
        directives: Directives::parse(&doc),
        doc,
    })
}

/// `typedef struct_t alias_t;`: a second name for a struct, with its own doc and directives (such as another
/// `@uform config`), so two C names share one layout; `None` for an alias of anything else.
fn alias_decl(
    alias: &syn::ItemType,
    names: &Names,
    decls: &[Decl],
) -> Result<Option<Decl>, String> {
    let Type::Path(path) = &*alias.ty else {
        return Ok(None);
    };
    let target = last_ident(&path.path);
    if !names.structs.contains(&target) {
        return Ok(None);
    }
    let fields = decls
        .iter()
        .find_map(|d| match d {
            Decl::Struct(s) if s.c == target => Some(s.fields.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            format!(
                "uform-gen: the alias `{}` names `{target}` before it is declared",
                alias.ident
            )
        })?;
    let doc = doc_of(&alias.attrs);
    Ok(Some(Decl::Struct(Struct {
        directives: Directives::parse(&doc),
        c: alias.ident.to_string(),
        doc,
        fields,
    })))
}

/// A C function's declaration: its named parameters and return type.
fn function_decl(function: &syn::ForeignItemFn, names: &Names) -> Result<Decl, String> {
    let doc = doc_of(&function.attrs);
    let params = function
        .sig
        .inputs
        .iter()
        .map(|input| match input {
            syn::FnArg::Typed(typed) => {
                let syn::Pat::Ident(name) = &*typed.pat else {
                    return Err("uform-gen: a parameter without a name".to_owned());
                };
                Ok((name.ident.to_string(), resolve(&typed.ty, names)?))
            }
            syn::FnArg::Receiver(_) => Err("uform-gen: a receiver in a C function".to_owned()),
        })
        .collect::<Result<_, _>>()?;
    let ret = match &function.sig.output {
        syn::ReturnType::Default => None,
        syn::ReturnType::Type(_, ty) => Some(resolve(ty, names)?),
    };
    Ok(Decl::Function(Function {
        name: function.sig.ident.to_string(),
        directives: Directives::parse(&doc),
        doc,
        params,
        ret,
    }))
}
