//! The binding's own unit tests: gathering, tape and edge checks, handlers and flags. The suites under
//! `tests/` drive the whole crate against the stub.

use core::ops::ControlFlow;

use crate::call::{HandlerSlot, Measure, RawTape};
use crate::inputs::{self, Accepts, Bytes, Each, Lent, OnePath, Owned, Samples, TapeNames};
use crate::{Outputs, Status};

const NAMES: &TapeNames = &TapeNames {
    fall: "fall",
    leave: "leave",
    per_item: "per item",
};

/// Gathers an input the way a call does, answering its tape and the scratch it filled.
fn gather<M, K: inputs::Kind, I: Accepts<M, K>>(input: I) -> (Measure, Vec<usize>, I::Kept) {
    let measure = input.measure(NAMES).unwrap();
    let mut scratch = vec![0usize; measure.words];
    let mut tail = scratch.as_mut_slice();
    let kept = input.keep(&mut tail);
    assert!(
        tail.is_empty(),
        "an input fills exactly the words it measured"
    );
    (measure, scratch, kept)
}

/// Copies a tape's elements and offsets out.
///
/// # Safety
/// `tape.data` points to `tape.length` elements and `tape.offsets` is `NULL` or points to `tape.count + 1`
/// offsets, all alive for the call: the scratch or the input the tape was gathered from or lent by.
unsafe fn read<E: Copy>(tape: RawTape<E>) -> (Vec<E>, Vec<usize>) {
    // SAFETY: the caller promises `length` elements at `data`.
    let data = unsafe { core::slice::from_raw_parts(tape.data, tape.length) }.to_vec();
    let offsets = if tape.offsets.is_null() {
        Vec::new()
    } else {
        // SAFETY: the offsets are not `NULL`, so the caller promises `count + 1` of them.
        unsafe { core::slice::from_raw_parts(tape.offsets, tape.count + 1) }.to_vec()
    };
    (data, offsets)
}

#[test]
fn items_gather_into_one_tape() {
    let texts = ["a cat", "", "a dog in the fog"];
    let (measure, _scratch, kept) = gather::<Lent, Bytes, _>(&texts);
    assert_eq!(measure.count, 3);
    let tape = <&[&str; 3] as Accepts<Lent, Bytes>>::tape(&kept);
    // SAFETY: the tape points into the scratch or the input `gather` kept, both still alive.
    let (data, offsets) = unsafe { read(tape) };
    assert_eq!(data, b"a cata dog in the fog");
    assert_eq!(offsets, [0, 5, 5, 21]);

    let owned = vec![String::from("xy"), String::from("z")];
    let (_, _scratch, kept) = gather::<Owned, Bytes, _>(owned);
    // SAFETY: the tape points into the scratch or the input `gather` kept, both still alive.
    let (data, offsets) = unsafe { read(<Vec<String> as Accepts<Owned, Bytes>>::tape(&kept)) };
    assert_eq!((data, offsets), (b"xyz".to_vec(), vec![0, 2, 3]));

    let samples = vec![vec![1.0f32, 2.0], vec![3.0]];
    let (_, _scratch, kept) = gather::<Lent, Samples, _>(&samples);
    // SAFETY: the tape points into the scratch or the input `gather` kept, both still alive.
    let (data, offsets) = unsafe { read(<&Vec<Vec<f32>> as Accepts<Lent, Samples>>::tape(&kept)) };
    assert_eq!((data, offsets), (vec![1.0, 2.0, 3.0], vec![0, 2, 3]));
}

#[test]
fn empty_batches_gather_one_offset() {
    let texts: [&str; 0] = [];
    let (measure, scratch, _) = gather::<Lent, Bytes, _>(texts);
    assert_eq!((measure.count, measure.words, scratch), (0, 1, vec![0]));
}

#[test]
fn tapes_are_lent_without_a_copy_once_checked() {
    let data = b"first documentthe second".as_slice();
    let (measure, scratch, kept) = gather::<Lent, Bytes, _>((data, [0usize, 14, 24]));
    assert_eq!((measure.count, measure.words, scratch.len()), (2, 0, 0));
    let tape = <(&[u8], [usize; 3]) as Accepts<Lent, Bytes>>::tape(&kept);
    assert_eq!(tape.data, data.as_ptr(), "the data is lent, not copied");

    let check = |length, offsets: &[usize]| inputs::check_tape(length, offsets, NAMES);
    assert_eq!(check(3, &[]), Ok(0), "no offsets is an empty tape");
    assert_eq!(check(3, &[0, 3]), Ok(1));
    assert_eq!(
        check(3, &[2, 2, 3]),
        Ok(2),
        "offsets need not start at zero"
    );
    assert_eq!(
        check(3, &[0, 2, 1]).map_err(|e| (e.status, e.message)),
        Err((Status::ShapeMismatch, "fall"))
    );
    assert_eq!(
        check(3, &[0, 4]).map_err(|e| (e.status, e.message)),
        Err((Status::ShapeMismatch, "leave"))
    );
}

#[test]
fn per_item_values_are_lent_or_copied() {
    let heights = [2usize, 3];
    let (measure, _, kept) = gather::<Lent, Each<usize>, _>(&heights);
    assert_eq!((measure.count, measure.words), (2, 0));
    assert_eq!(
        <&[usize; 2] as Accepts<Lent, Each<usize>>>::tape(&kept).data,
        heights.as_ptr()
    );

    let (measure, _scratch, kept) = gather::<Owned, Each<usize>, _>(vec![4usize, 5, 6]);
    assert_eq!((measure.count, measure.words), (3, 3));
    // SAFETY: the tape points into the scratch or the input `gather` kept, both still alive.
    let (data, _) = unsafe { read(<Vec<usize> as Accepts<Owned, Each<usize>>>::tape(&kept)) };
    assert_eq!(data, [4, 5, 6]);

    assert!(inputs::per_item(2, 2, NAMES).is_ok());
    assert_eq!(
        inputs::per_item(1, 2, NAMES).map_err(|e| e.status),
        Err(Status::ShapeMismatch)
    );
}

#[test]
fn single_paths() {
    let (_, _, kept) = gather::<Lent, OnePath, _>("checkpoint.safetensors");
    // SAFETY: the tape points into the scratch or the input `gather` kept, both still alive.
    let (data, _) = unsafe { read(<&str as Accepts<Lent, OnePath>>::tape(&kept)) };
    assert_eq!(data, b"checkpoint.safetensors");
    let (_, _scratch, kept) = gather::<Owned, OnePath, _>(std::path::PathBuf::from("a/b"));
    // SAFETY: the tape points into the scratch or the input `gather` kept, both still alive.
    let (data, _) = unsafe { read(<std::path::PathBuf as Accepts<Owned, OnePath>>::tape(&kept)) };
    assert_eq!(data, b"a/b");
}

#[test]
fn edges_are_checked_as_the_library_does() {
    let check = |offsets: &[usize], ids: &[usize], weights: &[f32], items| {
        inputs::check_edges(offsets, ids, weights, items).map_err(|e| e.status)
    };
    assert_eq!(check(&[], &[], &[], 4), Ok(()));
    assert_eq!(check(&[0, 1, 2, 3, 4], &[1, 0, 3, 2], &[], 4), Ok(()));
    assert_eq!(
        check(&[0, 1, 2, 3, 4], &[1, 0, 3, 2], &[1.0, 0.5, 2.0, 1.0], 4),
        Ok(())
    );
    assert_eq!(check(&[], &[1], &[], 4), Err(Status::ShapeMismatch));
    assert_eq!(
        check(&[0, 1, 2], &[1, 0], &[], 4),
        Err(Status::ShapeMismatch)
    );
    assert_eq!(
        check(&[0, 2, 1, 3, 4], &[1, 0, 3, 2], &[], 4),
        Err(Status::ShapeMismatch)
    );
    assert_eq!(
        check(&[0, 1, 2, 3, 3], &[1, 0, 3, 2], &[], 4),
        Err(Status::ShapeMismatch)
    );
    assert_eq!(
        check(&[0, 1, 2, 3, 4], &[1, 0, 3, 2], &[1.0], 4),
        Err(Status::ShapeMismatch)
    );
    assert_eq!(
        check(&[0, 1, 2, 3, 4], &[1, 0, 3, 9], &[], 4),
        Err(Status::InvalidArgument)
    );
    assert_eq!(
        check(&[0, 1, 2, 3, 4], &[0, 0, 3, 2], &[], 4),
        Err(Status::InvalidArgument)
    );
    assert_eq!(
        check(&[0, 1, 2, 3, 4], &[1, 0, 3, 2], &[1.0, 0.0, 1.0, 1.0], 4),
        Err(Status::InvalidArgument)
    );
    assert_eq!(
        check(
            &[0, 1, 2, 3, 4],
            &[1, 0, 3, 2],
            &[1.0, f32::NAN, 1.0, 1.0],
            4
        ),
        Err(Status::InvalidArgument)
    );
}

#[test]
fn handlers_stop_on_break_and_catch_panics() {
    let mut calls = Vec::new();
    let mut handler = |completed: usize, total: usize| {
        calls.push((completed, total));
        if completed < total {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    };
    let mut slot = HandlerSlot::new();
    let slot: *mut HandlerSlot = &mut slot;
    let (progress, context) = crate::progress::arm(slot, Some(&mut handler));
    let progress = progress.expect("a trampoline for a handler");
    // SAFETY: `context` is the slot `arm` armed, live on this stack, and the handler it stores is alive.
    assert!(!unsafe { progress(context, 1, 2) }, "Continue continues");
    // SAFETY: `context` is the slot `arm` armed, live on this stack, and the handler it stores is alive.
    assert!(unsafe { progress(context, 2, 2) }, "Break stops");
    // SAFETY: the slot lives on this stack and no trampoline runs on it any more.
    assert!(unsafe { HandlerSlot::take_panic(slot) }.is_none());
    assert_eq!(calls, [(1, 2), (2, 2)]);

    let mut panicking = |_: usize, _: usize| -> ControlFlow<()> { panic!("from a handler") };
    let mut slot = HandlerSlot::new();
    let slot: *mut HandlerSlot = &mut slot;
    let (progress, context) = crate::progress::arm(slot, Some(&mut panicking));
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    // SAFETY: `context` is the slot `arm` armed, live on this stack, and the handler it stores is alive.
    let stopped = unsafe { progress.unwrap()(context, 0, 1) };
    std::panic::set_hook(hook);
    assert!(stopped, "a panic stops the call");
    // SAFETY: the slot lives on this stack and no trampoline runs on it any more.
    let payload = unsafe { HandlerSlot::take_panic(slot) }.expect("the panic is stashed");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"from a handler"));

    let (progress, context) = crate::progress::arm(slot, None);
    assert!(
        progress.is_none() && context.is_null(),
        "no handler, no trampoline"
    );
}

#[test]
fn outputs_join_and_default_to_embeddings() {
    assert_eq!(Outputs::default(), Outputs::EMBEDDINGS);
    let both = Outputs::EMBEDDINGS | Outputs::STATES;
    assert!(both.contains(Outputs::STATES) && !both.contains(Outputs::TOKEN_VECTORS));
    assert_eq!(format!("{both:?}"), "EMBEDDINGS | STATES");
    assert_eq!(Outputs::ALL.bits(), 7);
}
