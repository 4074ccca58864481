//! UForm.
