//! What must compile and what must not, pinned with trybuild in one project build:
//! - `tests/readme/*.rs` hold the README's snippets verbatim, each inside a function whose parameters
//!   stand for the variables the README leaves to its reader; they must compile (and their `main`s run).
//! - `tests/compile_fail/*.rs` hold the compile errors the README promises: a deferred receiver refuses
//!   borrowed inputs and configs borrowing locals, neither a `Deferred` nor a view outlives what it
//!   borrows, and an executor is not `Sync`. Their `.stderr` files hold rustc's messages; regenerate them
//!   with `TRYBUILD=overwrite cargo test --features stub --test compile` and review the diff.
//!
//! Stub only: its README snippets load onto GPUs and train, and each case rebuilds the library.
#![cfg(feature = "stub")]

#[test]
fn readme_snippets_compile_and_promised_errors_do_not() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/readme/*.rs");
    cases.compile_fail("tests/compile_fail/*.rs");
}
