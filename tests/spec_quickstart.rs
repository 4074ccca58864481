//! The README's Quickstart, run against the tiny checkpoint.
//!
//! Stub only: it checks the build is the stub.
#![cfg(feature = "stub")]

mod common;

use uform::*;

#[test]
fn quickstart() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 0)?; // the threads every receiver names
    let mut arena = Arena::new_in(&executor)?; // the memory outputs land in
    let model = Model::load_ram(common::TINY)?; // BFloat16 blocks, as the checkpoint stores them

    let texts = ["a cat on a mat", "a dog in the fog"];
    let encoded =
        model
            .on(&executor)
            .text_encode(&texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    let mut seen = false;
    if let Some(embeddings) = encoded.embeddings {
        let values: &[f32] = embeddings.values()?; // count × columns, zero-copy from the arena
        assert_eq!(values.len(), texts.len() * model.describe()?.dimensions);
        assert_eq!(embeddings.count(), texts.len());
        assert_eq!(embeddings.columns(), common::DIMENSIONS);
        assert_eq!(embeddings.scalar(), Scalar::F32);
        for row in values.chunks(embeddings.columns()) {
            assert!(
                (common::norm(row) - 1.0).abs() < 1e-3,
                "embeddings are unit rows"
            );
        }
        seen = true;
    }
    assert!(seen, "EMBEDDINGS were asked for");
    assert!(
        encoded.states.is_none() && encoded.token_vectors.is_none(),
        "surfaces left out answer None"
    );
    Ok(())
}

#[test]
fn the_description_matches_the_checkpoint() -> uform::Result<()> {
    let model = Model::load_ram(common::TINY)?;
    let description = model.describe()?;
    assert_eq!(description.dimensions, common::DIMENSIONS);
    assert_eq!(description.hidden, common::HIDDEN);
    assert_eq!(description.token_width, common::TOKEN_WIDTH);
    assert_eq!(description.choice_temperature_groups, common::CHOICE_GROUPS);
    assert_eq!(description.depth, 2);
    assert_eq!(description.residency, Residency::Ram);
    assert_eq!(description.quantization, Scalar::BF16);
    assert_eq!(
        description.gpu_class,
        GPUClass::Auto,
        "a RAM model dispatches on no GPU"
    );
    assert_ne!(
        description.cpu_class,
        CPUClass::Auto,
        "a RAM model reports the class it dispatched as"
    );
    Ok(())
}

#[test]
fn the_build_is_the_stub() {
    assert_eq!(uform::build_flavor(), "stub");
    assert!(!uform::version().is_empty());
}

#[test]
fn the_version_is_cargo_tomls() {
    assert_eq!(uform::version(), env!("CARGO_PKG_VERSION"));
    let part = |text: &str| text.parse::<u32>().unwrap();
    let header = (
        part(env!("CARGO_PKG_VERSION_MAJOR")),
        part(env!("CARGO_PKG_VERSION_MINOR")),
        part(env!("CARGO_PKG_VERSION_PATCH")),
    );
    assert_eq!(uform::HEADER_VERSION, header);
}
