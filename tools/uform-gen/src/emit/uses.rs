//! Which conversions anything calls: the C enums and structs the library answers (converted from C) and
//! those a caller hands it (converted to C), through every function of the headers, whether the generated
//! layer or the hand-written core wraps it, so that the layer emits no conversion nobody calls.

use std::collections::BTreeSet;

use crate::ir::{CType, Ir};

/// The C enums and structs converted from C (`read`) and to C (`written`).
#[derive(Debug, Default)]
pub(super) struct Uses {
    read: BTreeSet<String>,
    written: BTreeSet<String>,
}

impl Uses {
    /// Walks every function's parameters and answer, and the fields of the structs they name; a `@uform
    /// config` struct is always handed over (its `into_raw` is its reason to be).
    pub(super) fn of(ir: &Ir) -> Self {
        let mut uses = Self::default();
        for s in ir.structs() {
            if s.directives.first("config").is_some() {
                uses.mark(ir, &CType::Struct(s.c.clone()), false);
            }
        }
        for f in ir.functions() {
            if let Some(ret) = &f.ret {
                uses.mark(ir, ret, true);
            }
            for (_, ty) in &f.params {
                match ty {
                    // An out-pointer: the library answers what it points to.
                    CType::Ptr { mutable: true, to } => uses.mark(ir, to, true),
                    // An argument struct, by pointer.
                    CType::Ptr { mutable: false, to } if matches!(**to, CType::Struct(_)) => {
                        uses.mark(ir, to, false)
                    }
                    by_value => uses.mark(ir, by_value, false),
                }
            }
        }
        uses
    }

    /// Marks `ty` as converted from C (`read`) or to C, and a struct's fields with it; out-pointers inside a
    /// struct are filled by the library in place, converting nothing.
    fn mark(&mut self, ir: &Ir, ty: &CType, read: bool) {
        let (CType::Enum(c) | CType::Struct(c)) = ty else {
            return;
        };
        let set = if read {
            &mut self.read
        } else {
            &mut self.written
        };
        if !set.insert(c.clone()) {
            return;
        }
        if let Some(s) = ir.struct_named(c) {
            for field in &s.fields {
                self.mark(ir, &field.ty, read);
            }
        }
    }

    /// Whether the library answers the enum or struct `c`.
    pub(super) fn read(&self, c: &str) -> bool {
        self.read.contains(c)
    }

    /// Whether a caller hands the library the enum or struct `c`.
    pub(super) fn written(&self, c: &str) -> bool {
        self.written.contains(c)
    }
}
