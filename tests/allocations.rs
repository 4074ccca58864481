//! What the binding allocates, counted by a global allocator on the calling thread: a steady loop of
//! blocking calls allocates only the one tape its items gather into (nothing at all for a lent
//! `(data, offsets)` tape), and a deferred call allocates exactly one box. The library's own memory (arenas,
//! scratch) comes from C++ and is not counted here; the arena tests cover its high-water mark.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::TINY;
use uform::*;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count_one() {
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
}

// SAFETY: forwards to the system allocator, counting allocations on the calling thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        count_one();
        // SAFETY: forwarded.
        unsafe { System.realloc(pointer, layout, size) }
    }
    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(pointer, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Runs `body` and answers what it answered with the allocations it made on this thread.
fn allocations<R>(body: impl FnOnce() -> R) -> (R, usize) {
    let before = ALLOCATIONS.with(Cell::get);
    let answer = body();
    (answer, ALLOCATIONS.with(Cell::get) - before)
}

#[test]
fn a_steady_blocking_loop_allocates_only_its_tape() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 2)?;
    let model = Model::load_ram(TINY)?;
    let mut arena = Arena::new_in(&executor)?;
    let texts = ["a cat on a mat", "a dog in the fog", "a bird on a wire"];
    let outputs = Outputs::EMBEDDINGS | Outputs::STATES;
    model
        .on(&executor)
        .text_encode(&texts, outputs, Scalar::F32, &mut arena)?; // the first call grows things
    for _ in 0..50 {
        let (encoded, count) = allocations(|| {
            model
                .on(&executor)
                .text_encode(&texts, outputs, Scalar::F32, &mut arena)
        });
        encoded?;
        assert_eq!(
            count, 1,
            "a call gathering items allocates the one tape they gather into"
        );
    }
    for _ in 0..50 {
        let (encoded, count) =
            allocations(|| model.text_encode(&texts, outputs, Scalar::F32, &mut arena));
        encoded?;
        assert_eq!(count, 1, "the calling thread's receiver allocates the same");
    }
    Ok(())
}

#[test]
fn a_steady_loop_over_lent_tapes_allocates_nothing() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 2)?;
    let model = Model::load_ram(TINY)?;
    let mut arena = Arena::new_in(&executor)?;
    let data = b"a cat on a mata dog in the foga bird on a wire".as_slice();
    let offsets = [0usize, 14, 30, 46];
    let outputs = Outputs::EMBEDDINGS | Outputs::STATES | Outputs::TOKEN_VECTORS;
    let (first, _) = allocations(|| {
        model
            .on(&executor)
            .text_encode((data, offsets), outputs, Scalar::F32, &mut arena)
    });
    first?;
    for _ in 0..100 {
        let (encoded, count) = allocations(|| {
            let encoded = model.on(&executor).text_encode(
                (data, offsets),
                outputs,
                Scalar::F32,
                &mut arena,
            )?;
            // Reading the views allocates nothing either.
            let states = encoded.states.expect("states");
            Ok::<usize, Error>(
                states.offsets()?.len()
                    + states.item(2)?.count()
                    + encoded.embeddings.unwrap().values::<f32>()?.len(),
            )
        });
        encoded?;
        assert_eq!(count, 0, "a lent tape crosses without a copy");
    }
    Ok(())
}

#[test]
fn a_deferred_call_allocates_one_box() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 2)?;
    let model = Model::load_ram(TINY)?;
    let mut arena = Arena::new_in(&executor)?;
    for _ in 0..20 {
        let texts = vec![
            String::from("a cat on a mat"),
            String::from("a dog in the fog"),
        ];
        let (encoded, count) = allocations(|| {
            model
                .deferred(&executor)
                .text_encode(texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?
                .wait()
        });
        assert_eq!(encoded?.embeddings.map(|rows| rows.count()), Some(2));
        assert_eq!(
            count, 1,
            "the box holding the outcome, the argument struct and the inputs"
        );
    }
    let tape = (
        b"a cat on a mata dog in the fog".to_vec(),
        vec![0usize, 14, 30],
    );
    let (encoded, count) = allocations(|| {
        model
            .deferred(&executor)
            .text_encode(tape, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?
            .wait()
    });
    encoded?;
    assert_eq!(count, 1, "a moved tape lives in the box too");
    Ok(())
}

#[test]
fn a_failure_allocates_nothing() -> uform::Result<()> {
    let model = Model::load_ram(TINY)?;
    let mut arena = Arena::new();
    let (refused, count) = allocations(|| {
        model
            .text_encode(
                (b"short".as_slice(), [0usize, 9]),
                Outputs::EMBEDDINGS,
                Scalar::F32,
                &mut arena,
            )
            .map(|_| ())
    });
    assert_eq!(refused.unwrap_err().status, Status::ShapeMismatch);
    assert_eq!(count, 0, "an error carries a static message");
    let (refused, count) =
        allocations(|| Model::load_ram("/nonexistent/model.safetensors").map(|_| ()));
    assert_eq!(refused.unwrap_err().status, Status::NotFound);
    assert_eq!(count, 0);
    Ok(())
}
