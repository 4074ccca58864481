//! The binding refuses exactly what the C layer refuses, with the same status: random `(data, offsets)`
//! tapes (offsets that may fall or leave their data) and random edge sets go through the safe layer and,
//! unchanged, straight through `uform::sys`, and both answers must agree.

mod common;

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use uform::*;

/// The name of a C status, as the library's own table spells it.
fn c_name(status: sys::uform_status_t) -> &'static str {
    // SAFETY: the library answers a static, NUL-terminated name for every status it returns.
    unsafe { CStr::from_ptr(sys::uform_status_name(status)) }
        .to_str()
        .unwrap()
}

/// What the safe layer answered, spelled as the C layer would: `"ok"` or the status' name.
fn safe_name<T>(answer: &uform::Result<T>) -> String {
    match answer {
        Ok(_) => "ok".to_owned(),
        Err(error) => error.status.to_string(),
    }
}

/// A pointer the C layer may read `len` elements from: `NULL` for none, as the binding passes.
fn pointer<T>(values: &[T]) -> *const T {
    if values.is_empty() {
        ptr::null()
    } else {
        values.as_ptr()
    }
}

/// Offsets of every shape: ascending within the data, ascending past it, or in any order.
fn offsets(length: usize) -> impl Strategy<Value = Vec<usize>> {
    let ascending = proptest::collection::vec(0..=length, 1..8).prop_map(|mut offsets| {
        offsets.sort_unstable();
        offsets
    });
    let anywhere = proptest::collection::vec(0..=length + 4, 1..8);
    let leaving = proptest::collection::vec(0..=length + 4, 1..8).prop_map(|mut offsets| {
        offsets.sort_unstable();
        offsets
    });
    prop_oneof![4 => ascending, 1 => anywhere, 1 => leaving]
}

fn tape() -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
    proptest::collection::vec(any::<u8>(), 0..32).prop_flat_map(|data| {
        let length = data.len();
        (Just(data), offsets(length))
    })
}

fn samples_tape() -> impl Strategy<Value = (Vec<f32>, Vec<usize>)> {
    let sample = prop_oneof![8 => -1.0f32..1.0, 1 => Just(f32::NAN), 1 => Just(f32::INFINITY)];
    proptest::collection::vec(sample, 0..24).prop_flat_map(|data| {
        let length = data.len();
        (Just(data), offsets(length))
    })
}

/// Runs 256 inputs of `strategy` through `answers`, which answers the safe layer's and the C layer's
/// outcomes and a description of the input, and checks they agree; the inputs must include both accepted
/// and refused ones, so the agreement is not vacuous.
fn agree<S: Strategy>(strategy: S, answers: impl Fn(S::Value) -> (String, &'static str, String)) {
    let accepted = AtomicUsize::new(0);
    let refused = AtomicUsize::new(0);
    let config = ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest::test_runner::TestRunner::new(config)
        .run(&strategy, |input| {
            let (safe, c, input) = answers(input);
            prop_assert_eq!(&safe, c, "{}", input);
            let counter = if c == "ok" { &accepted } else { &refused };
            counter.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
    let (accepted, refused) = (accepted.into_inner(), refused.into_inner());
    assert!(
        accepted > 0 && refused > 0,
        "{accepted} inputs accepted and {refused} refused: the strategy is lopsided"
    );
}

#[test]
fn text_tapes_agree() {
    let model = Model::load_ram(common::TINY).unwrap();
    agree(tape(), |(data, offsets)| {
        let mut arena = Arena::new();
        let safe = model.text_encode(
            (data.as_slice(), offsets.as_slice()),
            Outputs::EMBEDDINGS,
            Scalar::F32,
            &mut arena,
        );
        let safe = safe_name(&safe);
        let mut encoded = MaybeUninit::<sys::uform_encoded_t>::zeroed();
        let mut message = ptr::null();
        // SAFETY: every pointer is valid for the lengths given; the call is blocking.
        let status = unsafe {
            sys::uform_text_encode(
                model.as_ptr().cast(),
                ptr::null_mut(),
                pointer(&data).cast(),
                data.len(),
                offsets.as_ptr(),
                offsets.len() - 1,
                sys::uform_outputs_t::uform_outputs_embeddings_k,
                ptr::null(),
                arena.as_ptr().cast(),
                encoded.as_mut_ptr(),
                ptr::null_mut(),
                &mut message,
            )
        };
        (
            safe,
            c_name(status),
            format!("data {data:?}, offsets {offsets:?}"),
        )
    });
}

#[test]
fn sample_tapes_agree() {
    let model = Model::load_ram(common::TINY).unwrap();
    let rates = prop_oneof![1 => Just(0usize), 4 => Just(8_000usize), 4 => Just(16_000usize)];
    agree((samples_tape(), rates), |((data, offsets), rate)| {
        let mut arena = Arena::new();
        let safe = model.audio_encode_samples(
            (data.as_slice(), offsets.as_slice()),
            rate,
            Outputs::EMBEDDINGS,
            Scalar::F32,
            &mut arena,
        );
        let safe = safe_name(&safe);
        let mut encoded = MaybeUninit::<sys::uform_encoded_t>::zeroed();
        let mut message = ptr::null();
        // SAFETY: as above.
        let status = unsafe {
            sys::uform_audio_encode_samples(
                model.as_ptr().cast(),
                ptr::null_mut(),
                pointer(&data),
                data.len(),
                offsets.as_ptr(),
                offsets.len() - 1,
                rate,
                sys::uform_outputs_t::uform_outputs_embeddings_k,
                ptr::null(),
                arena.as_ptr().cast(),
                encoded.as_mut_ptr(),
                ptr::null_mut(),
                &mut message,
            )
        };
        (
            safe,
            c_name(status),
            format!("samples {data:?}, offsets {offsets:?}, rate {rate}"),
        )
    });
}

#[test]
fn choice_tapes_agree() {
    let model = Model::load_ram(common::TINY).unwrap();
    agree(
        (tape(), tape()),
        |((texts, text_offsets), (choices, choice_offsets))| {
            let mut arena = Arena::new();
            let safe = model.text_choose(
                (texts.as_slice(), text_offsets.as_slice()),
                (choices.as_slice(), choice_offsets.as_slice()),
                TextChooseConfig::default(),
                &mut arena,
            );
            let safe = safe_name(&safe);
            let mut probabilities = MaybeUninit::<sys::uform_tape_t>::zeroed();
            let mut message = ptr::null();
            // SAFETY: as above.
            let status = unsafe {
                sys::uform_text_choose(
                    model.as_ptr().cast(),
                    ptr::null_mut(),
                    pointer(&texts).cast(),
                    texts.len(),
                    text_offsets.as_ptr(),
                    text_offsets.len() - 1,
                    pointer(&choices).cast(),
                    choices.len(),
                    choice_offsets.as_ptr(),
                    choice_offsets.len() - 1,
                    ptr::null(),
                    arena.as_ptr().cast(),
                    probabilities.as_mut_ptr(),
                    ptr::null_mut(),
                    &mut message,
                )
            };
            let input =
                format!("texts {texts:?} {text_offsets:?}, choices {choices:?} {choice_offsets:?}");
            (safe, c_name(status), input)
        },
    );
}

/// An edge set of every shape: offsets of any length and order, ids anywhere, weights of any count and sign.
#[cfg(feature = "stub")]
fn edges(items: usize) -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Vec<f32>)> {
    let weight = prop_oneof![6 => 0.1f32..4.0, 1 => Just(0.0f32), 1 => Just(-1.0f32), 1 => Just(f32::NAN), 1 => Just(f32::INFINITY)];
    let ids = proptest::collection::vec(0..items + 2, 0..8);
    (
        ids,
        proptest::collection::vec(weight, 0..8),
        any::<bool>(),
        0..items + 3,
    )
        .prop_flat_map(move |(ids, weights, matching_weights, offsets_count)| {
            let count = ids.len();
            // Mostly well-formed offsets (one per item plus one, from 0 to the ids), sometimes anything.
            let good =
                proptest::collection::vec(0..=count, items - 1).prop_map(move |mut inner| {
                    inner.sort_unstable();
                    let mut offsets = vec![0];
                    offsets.extend(inner);
                    offsets.push(count);
                    offsets
                });
            let any_offsets = proptest::collection::vec(0..count + 3, offsets_count);
            let weights = if matching_weights {
                weights.iter().copied().cycle().take(count).collect()
            } else {
                weights
            };
            (
                prop_oneof![3 => good, 1 => any_offsets],
                Just(ids),
                Just(weights),
            )
        })
}

#[test]
#[cfg(feature = "stub")] // a trainer needs GPUs: the stub's simulated ones
fn edge_sets_agree() {
    let exchange = common::scratch_dir("agreement");
    let executor = unsafe { Executor::for_vram(&[0], None, &[], None, &[], 0) }.unwrap();
    let options = MeshOptions {
        directory: &exchange,
        job: "agreement",
        ..MeshOptions::default()
    };
    let mesh = Mesh::bootstrap(&executor, &options).unwrap();
    let config = TrainerInitVramConfig {
        mesh: Some(&mesh),
        depth: 1,
        hidden: 64,
        ..TrainerInitVramConfig::default()
    };
    let trainer = Trainer::init_vram(&executor, config).unwrap();
    let contents = ["one", "two", "three", "four"];
    let modalities = [Modality::Text; 4];
    let items = contents.len();
    let joined: Vec<u8> = contents.concat().into_bytes();
    let mut content_offsets = vec![0usize];
    for text in contents {
        content_offsets.push(content_offsets.last().unwrap() + text.len());
    }
    let raw_modalities = vec![sys::uform_modality_t::uform_modality_text_k; items];

    agree(
        (edges(items), 0..3usize),
        |((offsets, ids, weights), set)| {
            let edge_set = Edges {
                offsets: &offsets,
                ids: &ids,
                weights: &weights,
            };
            let relations = match set {
                0 => Relations {
                    attract: edge_set,
                    ..Relations::default()
                },
                1 => Relations {
                    repel: edge_set,
                    ..Relations::default()
                },
                _ => Relations {
                    ignore: edge_set,
                    ..Relations::default()
                },
            };
            let config = TrainerStepConfig {
                relations,
                ..TrainerStepConfig::default()
            };
            let safe = safe_name(&trainer.on(&executor).step(&modalities, &contents, config));

            let raw_edges = sys::uform_edges_t {
                offsets: pointer(&offsets),
                offsets_count: offsets.len(),
                ids: pointer(&ids),
                ids_count: ids.len(),
                weights: pointer(&weights),
                weights_count: weights.len(),
            };
            // SAFETY: all-zero is the documented default of every argument struct.
            let mut args: sys::uform_trainer_step_args_t = unsafe { std::mem::zeroed() };
            match set {
                0 => args.relations.attract = raw_edges,
                1 => args.relations.repel = raw_edges,
                _ => args.relations.ignore = raw_edges,
            }
            let mut message = ptr::null();
            // SAFETY: every pointer is valid for the counts given; the call is blocking.
            let status = unsafe {
                sys::uform_trainer_step(
                    trainer.as_ptr().cast(),
                    executor.as_ptr().cast(),
                    raw_modalities.as_ptr(),
                    joined.as_ptr().cast(),
                    joined.len(),
                    content_offsets.as_ptr(),
                    items,
                    &args,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    &mut message,
                )
            };
            (
                safe,
                c_name(status),
                format!("set {set}: offsets {offsets:?}, ids {ids:?}, weights {weights:?}"),
            )
        },
    );
    drop(trainer);
    drop(mesh);
    std::fs::remove_dir_all(exchange).ok();
}
