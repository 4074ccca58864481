//! The README's "Arenas": reuse across a loop, host pages, and VRAM arenas whose host accessors refuse
//! `Status::Device` while `as_ptr` still hands the rows on.
//!
//! Stub only: the VRAM arenas live on the stub's simulated GPUs.
#![cfg(feature = "stub")]

mod common;

use common::TINY;
use uform::*;

#[test]
fn the_readme_loop_reuses_one_arena() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 2)?;
    let model = Model::load_ram(TINY)?;
    let batches = vec![
        vec!["first batch", "of two"],
        vec!["second", "batch of"],
        vec!["third", "and last"],
    ];
    let mut consumed = Vec::new();
    let mut consume = |values: Option<&[f32]>| consumed.push(values.map(<[f32]>::to_vec));

    let mut arena = Arena::new_in(&executor)?;
    for batch in &batches {
        let encoded =
            model
                .on(&executor)
                .text_encode(batch, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
        consume(
            encoded
                .embeddings
                .map(|rows| rows.values::<f32>())
                .transpose()?,
        ); // rewinds next iteration
    }

    assert_eq!(consumed.len(), batches.len());
    for (values, batch) in consumed.iter().zip(&batches) {
        assert_eq!(
            values.as_ref().map(Vec::len),
            Some(batch.len() * common::DIMENSIONS)
        );
    }
    Ok(())
}

#[test]
fn a_steady_loop_stops_growing_its_arena() -> uform::Result<()> {
    let model = Model::load_ram(TINY)?;
    let mut arena = Arena::new(); // host pages for the calling thread
    assert_eq!(
        arena.capacity()?,
        0,
        "an arena allocates only when a call writes into it"
    );
    let texts = ["same shape", "every time"];
    model.text_encode(
        &texts,
        Outputs::EMBEDDINGS | Outputs::STATES,
        Scalar::F32,
        &mut arena,
    )?;
    let high_water = arena.capacity()?;
    assert!(high_water > 0);
    for _ in 0..10 {
        model.text_encode(
            &texts,
            Outputs::EMBEDDINGS | Outputs::STATES,
            Scalar::F32,
            &mut arena,
        )?;
        assert_eq!(arena.capacity()?, high_water);
    }
    assert_eq!(arena.residency()?, Residency::Ram);
    Ok(())
}

#[test]
fn results_kept_past_the_next_call_need_another_arena() -> uform::Result<()> {
    let model = Model::load_ram(TINY)?;
    let (mut first, mut second) = (Arena::new(), Arena::new());
    let kept = model.text_encode(&["kept"], Outputs::EMBEDDINGS, Scalar::F32, &mut first)?;
    let next = model.text_encode(&["next"], Outputs::EMBEDDINGS, Scalar::F32, &mut second)?;
    let (kept, next) = (
        kept.embeddings.unwrap().values::<f32>()?,
        next.embeddings.unwrap().values::<f32>()?,
    );
    assert_ne!(kept, next);
    Ok(())
}

#[test]
fn a_vram_arena_refuses_host_reads_but_lends_its_pointer() -> uform::Result<()> {
    let executor = unsafe { Executor::for_vram(&[0, 1], None, &[], None, &[], 0)? };
    let model = Model::load_vram(ModelLoadVramConfig {
        executor: Some(&executor),
        ..ModelLoadVramConfig::from(TINY)
    })?;
    let mut arena = Arena::new_in(&executor)?;
    assert_eq!(arena.residency()?, Residency::Vram);
    let outputs = Outputs::EMBEDDINGS | Outputs::STATES;
    let encoded = model.on(&executor).text_encode(
        &["on the device", "too"],
        outputs,
        Scalar::F32,
        &mut arena,
    )?;

    let embeddings = encoded.embeddings.expect("EMBEDDINGS were asked for");
    assert_eq!(embeddings.residency(), Residency::Vram);
    assert_eq!(
        (embeddings.count(), embeddings.columns()),
        (2, common::DIMENSIONS)
    );
    assert!(
        !embeddings.as_ptr().is_null(),
        "as_ptr hands the rows to another library"
    );
    assert_eq!(
        embeddings.values::<f32>().unwrap_err().status,
        Status::Device
    );
    assert_eq!(embeddings.as_bytes().unwrap_err().status, Status::Device);

    let states = encoded.states.expect("STATES were asked for");
    assert_eq!(states.offsets().unwrap_err().status, Status::Device);
    assert_eq!(states.item(0).unwrap_err().status, Status::Device);
    assert!(!states.as_ptr().is_null());
    Ok(())
}

#[test]
fn a_vram_arena_serves_only_vram_models() -> uform::Result<()> {
    let streams = unsafe { Executor::for_vram(&[0], None, &[], None, &[], 0)? };
    let model = Model::load_ram(TINY)?;
    let mut device_arena = Arena::new_in(&streams)?;
    let refused = model.text_encode(
        &["host model"],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut device_arena,
    );
    assert_eq!(refused.unwrap_err().status, Status::InvalidArgument);
    Ok(())
}
