//! The file verbs of the RAM residency through the crate: the JPEG, PNG, WebP, MP4, WebM, WAV, FLAC, MP3 and Opus
//! files of `tests/data/media/` against `media.safetensors` (embeddings cosine >= 0.999 through the decoders, the
//! media goldens' bound), on every receiver (calling thread, an executor, a deferred call), and a batch with one bad file
//! failing whole, naming that item in its stats; E4M3 and int8 models within cosine 0.99 of the BF16 load on them.
#![cfg(not(feature = "stub"))]

mod common;

use std::path::PathBuf;

use common::golden::{assert_embeddings_agree, Golden};
use common::{scratch_dir, DIMENSIONS, TINY};
use uform::*;

/// The media files of one golden group, as paths under `tests/data/media/`.
fn files(golden: &Golden, group: &str) -> Vec<PathBuf> {
    let (names, offsets) = (
        golden.u8(&format!("{group}.files")),
        golden.usize(&format!("{group}.file_offsets")),
    );
    let folder = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/media"));
    offsets
        .windows(2)
        .map(|w| folder.join(std::str::from_utf8(&names[w[0]..w[1]]).unwrap()))
        .collect()
}

/// Checks one answer's token counts and embeddings against a golden group.
fn check(what: &str, encoded: &Encoded<'_>, golden: &Golden, group: &str) {
    let tokens = golden.usize(&format!("{group}.token_offsets"));
    let embeddings = encoded
        .embeddings
        .as_ref()
        .expect("EMBEDDINGS were asked for");
    assert_eq!(
        embeddings.count(),
        tokens.len() - 1,
        "{what}: one embedding per file"
    );
    let ours = embeddings.values::<f32>().unwrap();
    let expected = golden.f32(&format!("{group}.embeddings"));
    assert_embeddings_agree(what, ours, &expected, DIMENSIONS, 0.999);
}

#[test]
fn media_files_agree_with_the_reference_on_every_receiver() -> Result<()> {
    let golden = Golden::open("media.safetensors");
    let model = Model::load_ram(TINY)?;
    let executor = Executor::for_ram(&[], None, 2)?;
    let mut arena = Arena::new();
    let (images, videos, audio) = (
        files(&golden, "image"),
        files(&golden, "video"),
        files(&golden, "audio"),
    );
    let (outputs, scalar) = (Outputs::EMBEDDINGS, Scalar::F32);

    check(
        "images",
        &model.image_encode(&images, outputs, scalar, &mut arena)?,
        &golden,
        "image",
    );
    check(
        "videos",
        &model.video_encode(&videos, outputs, scalar, &mut arena)?,
        &golden,
        "video",
    );
    check(
        "audio",
        &model.audio_encode(&audio, outputs, scalar, &mut arena)?,
        &golden,
        "audio",
    );

    let on = model.on(&executor);
    check(
        "images on two threads",
        &on.image_encode(&images, outputs, scalar, &mut arena)?,
        &golden,
        "image",
    );
    check(
        "videos on two threads",
        &on.video_encode(&videos, outputs, scalar, &mut arena)?,
        &golden,
        "video",
    );
    check(
        "audio on two threads",
        &on.audio_encode(&audio, outputs, scalar, &mut arena)?,
        &golden,
        "audio",
    );

    let deferred =
        model
            .deferred(&executor)
            .image_encode(images.clone(), outputs, scalar, &mut arena)?;
    check("deferred images", &deferred.wait()?, &golden, "image");
    let deferred =
        model
            .deferred(&executor)
            .audio_encode(audio.clone(), outputs, scalar, &mut arena)?;
    check("deferred audio", &deferred.wait()?, &golden, "audio");
    Ok(())
}

#[test]
fn quantized_models_stay_close_to_the_bf16_load_on_media() -> Result<()> {
    let golden = Golden::open("media.safetensors");
    let groups = ["image", "video", "audio"].map(|group| (group, files(&golden, group)));
    let encode = |model: &Model, group: &str, paths: &[PathBuf]| -> Result<Vec<f32>> {
        let mut arena = Arena::new();
        let (outputs, scalar) = (Outputs::EMBEDDINGS, Scalar::F32);
        let encoded = match group {
            "image" => model.image_encode(paths, outputs, scalar, &mut arena)?,
            "video" => model.video_encode(paths, outputs, scalar, &mut arena)?,
            _ => model.audio_encode(paths, outputs, scalar, &mut arena)?,
        };
        Ok(encoded
            .embeddings
            .as_ref()
            .unwrap()
            .values::<f32>()?
            .to_vec())
    };
    let bf16 = Model::load_ram(TINY)?;
    for (name, quantization) in [("I8", Scalar::I8), ("E4M3", Scalar::E4M3)] {
        let model = Model::load_ram(ModelLoadRamConfig {
            quantization,
            ..ModelLoadRamConfig::from(TINY)
        })?;
        for (group, paths) in &groups {
            let (ours, theirs) = (encode(&model, group, paths)?, encode(&bf16, group, paths)?);
            let what = format!("{name} {group}");
            let worst = assert_embeddings_agree(&what, &ours, &theirs, DIMENSIONS, 0.99);
            eprintln!("{name} against BF16 on {group} files: worst embedding cosine {worst:.6}");
        }
    }
    Ok(())
}

#[test]
fn one_bad_file_fails_the_batch_and_is_named() -> Result<()> {
    let golden = Golden::open("media.safetensors");
    let model = Model::load_ram(TINY)?;
    let mut arena = Arena::new();
    let folder = scratch_dir("bad-media");
    let text = folder.join("not-an-image.jpg");
    std::fs::write(&text, "this is a text file named .jpg\n").unwrap();
    let mut images = files(&golden, "image");
    images.insert(1, text);

    let mut stats = ImageEncodeStats::default();
    let config = ImageEncodeConfig {
        stats: Some(&mut stats),
        ..ImageEncodeConfig::default()
    };
    let error = model
        .image_encode(&images, Outputs::EMBEDDINGS, config, &mut arena)
        .expect_err("the batch fails");
    assert_eq!(error.status, Status::Corrupt, "{error}");
    assert!(!error.message.is_empty());
    assert_eq!(stats.failed_item, 1, "the stats name the bad item");

    let missing = vec![images[0].clone(), folder.join("missing.png")];
    let mut stats = ImageEncodeStats::default();
    let config = ImageEncodeConfig {
        stats: Some(&mut stats),
        ..ImageEncodeConfig::default()
    };
    let error = model
        .image_encode(&missing, Outputs::EMBEDDINGS, config, &mut arena)
        .expect_err("the batch fails");
    assert_eq!(error.status, Status::NotFound, "{error}");
    assert_eq!(stats.failed_item, 1);

    let mut stats = AudioEncodeStats::default();
    let config = AudioEncodeConfig {
        stats: Some(&mut stats),
        ..AudioEncodeConfig::default()
    };
    let samples = (vec![0.0f32, f32::NAN, 0.5], vec![0usize, 1, 3]);
    let error = model
        .audio_encode_samples(samples, 16_000, Outputs::EMBEDDINGS, config, &mut arena)
        .expect_err("a NaN sample fails the call");
    assert_eq!(error.status, Status::InvalidArgument, "{error}");
    Ok(())
}
