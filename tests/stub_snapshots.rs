//! Snapshots of what the stub answers for a fixed set of calls, so that a change in what callers' tests see
//! shows up in review: the rows of a few items per modality, `describe`, the status and message of each class
//! of bad input, and a training step's stats. The snapshots live in `tests/snapshots/`; after a deliberate
//! change, review the `.snap.new` files `INSTA_UPDATE=new` writes (or run `cargo insta review`).
//!
//! Stub only: the rows are the stub's deterministic ones, and the trainer runs on its simulated GPUs. Rows
//! print rounded, so that the last bits of a platform's `sqrt` never show.
#![cfg(feature = "stub")]

mod common;

use std::fmt::Write;
use std::path::{Path, PathBuf};

use common::TINY;
use uform::*;

/// The leading values of a row: enough to see it change, few enough to read.
const SHOWN: usize = 6;

/// A media file of `tests/data/media`.
fn media(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/media")
        .join(name)
}

/// The leading values of each row of `values`, `columns` to a row.
fn leading(out: &mut String, values: &[f32], columns: usize) {
    for row in values.chunks(columns) {
        let shown: Vec<String> = row.iter().take(SHOWN).map(|v| format!("{v:+.6}")).collect();
        writeln!(out, "    [{}, ...]", shown.join(", ")).unwrap();
    }
}

/// Every surface of an answer: its shape, offsets, and each item's first rows.
fn encoded(encoded: &Encoded<'_>) -> Result<String> {
    let mut out = String::new();
    if let Some(rows) = &encoded.embeddings {
        writeln!(
            out,
            "embeddings: {} x {} {}",
            rows.count(),
            rows.columns(),
            rows.scalar()
        )
        .unwrap();
        leading(&mut out, rows.values::<f32>()?, rows.columns());
    }
    for (name, tape) in [
        ("states", &encoded.states),
        ("token vectors", &encoded.token_vectors),
    ] {
        let Some(tape) = tape else { continue };
        let rows = tape.rows();
        writeln!(
            out,
            "{name}: {} x {} {}, offsets {:?}",
            rows.count(),
            rows.columns(),
            rows.scalar(),
            tape.offsets()?
        )
        .unwrap();
        for item in 0..tape.items() {
            let first = tape.item(item)?;
            let values = first.values::<f32>()?;
            writeln!(out, "  item {item}, first row:").unwrap();
            leading(
                &mut out,
                &values[..values.len().min(first.columns())],
                first.columns(),
            );
        }
    }
    Ok(out)
}

/// What a failing call answers, or that it did not fail.
fn outcome<T>(answer: Result<T>) -> String {
    match answer {
        Ok(_) => "ok".to_owned(),
        Err(error) => error.to_string(),
    }
}

#[test]
fn the_rows_of_each_modality() -> Result<()> {
    let model = Model::load_ram(TINY)?;
    let mut arena = Arena::new();
    let every = Outputs::EMBEDDINGS | Outputs::STATES | Outputs::TOKEN_VECTORS;

    let texts = model.text_encode(&["a cat", "on a mat"], every, Scalar::F32, &mut arena)?;
    insta::assert_snapshot!("text", encoded(&texts)?);

    let small = vec![128u8; 8 * 8 * 3];
    let tall: Vec<u8> = (0..16 * 8 * 3).map(|i| (i % 251) as u8).collect();
    let pixels = model.image_encode_pixels(
        &[small.as_slice(), tall.as_slice()],
        &[8, 16],
        &[8, 8],
        Outputs::EMBEDDINGS | Outputs::STATES,
        Scalar::F32,
        &mut arena,
    )?;
    insta::assert_snapshot!("image_pixels", encoded(&pixels)?);

    let images = model.image_encode(
        &[media("photo.jpg"), media("gray.png")],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    insta::assert_snapshot!("image_files", encoded(&images)?);

    let clips = model.video_encode(
        &[media("clip.mp4")],
        Outputs::EMBEDDINGS | Outputs::STATES,
        Scalar::F32,
        &mut arena,
    )?;
    insta::assert_snapshot!("video_files", encoded(&clips)?);

    let recordings = model.audio_encode(
        &[media("tone.wav"), media("tone.flac")],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    insta::assert_snapshot!("audio_files", encoded(&recordings)?);

    let second: Vec<f32> = (0..16_000).map(|i| (i as f32 * 0.01).sin()).collect();
    let short = vec![0.25f32; 3_000];
    let samples = model.audio_encode_samples(
        &[second.as_slice(), short.as_slice()],
        16_000,
        Outputs::EMBEDDINGS | Outputs::STATES,
        Scalar::F32,
        &mut arena,
    )?;
    insta::assert_snapshot!("audio_samples", encoded(&samples)?);

    let config = TextChooseConfig {
        temperature_groups: &[0, 1],
        ..TextChooseConfig::default()
    };
    let probabilities = model.text_choose(
        &["keep this candidate?", "expand which neighbour?"],
        &["yn", "ABCD"],
        config,
        &mut arena,
    )?;
    let mut chosen = format!("offsets {:?}\n", probabilities.offsets()?);
    for item in 0..probabilities.items() {
        let values: Vec<String> = probabilities
            .item(item)?
            .iter()
            .map(|p| format!("{p:.6}"))
            .collect();
        writeln!(chosen, "item {item}: [{}]", values.join(", ")).unwrap();
    }
    insta::assert_snapshot!("text_choose", chosen);
    Ok(())
}

#[test]
fn describe() -> Result<()> {
    let model = Model::load_ram(TINY)?;
    insta::assert_snapshot!(format!("{:#?}", model.describe()?));
    Ok(())
}

#[test]
fn each_bad_input_class() -> Result<()> {
    let model = Model::load_ram(TINY)?;
    let mut arena = Arena::new();
    let e = Outputs::EMBEDDINGS;
    let dir = common::scratch_dir("snapshots");
    let empty = dir.join("empty.wav");
    std::fs::write(&empty, b"").unwrap();
    let garbage = dir.join("garbage.safetensors");
    std::fs::write(&garbage, b"not a checkpoint").unwrap();
    let pixels = vec![0u8; 8 * 8 * 3];
    let second = vec![0.25f32; 16_000];
    let half = model.text_encode(&["bf16"], e, Scalar::BF16, &mut arena)?;
    let bf16_values = outcome(half.embeddings.expect("embeddings").values::<f32>());

    let cases: Vec<(&str, String)> = vec![
        (
            "tape offsets leave the data",
            outcome(model.text_encode(
                (b"abc".as_slice(), [0usize, 4]),
                e,
                Scalar::F32,
                &mut arena,
            )),
        ),
        (
            "tape offsets fall",
            outcome(model.text_encode(
                (b"abc".as_slice(), [0usize, 2, 1]),
                e,
                Scalar::F32,
                &mut arena,
            )),
        ),
        (
            "a text past max_bytes",
            outcome(model.text_encode(&["x".repeat(16_385)], e, Scalar::F32, &mut arena)),
        ),
        (
            "one height per item",
            outcome(model.image_encode_pixels(
                &[pixels.as_slice()],
                &[8, 8],
                &[8],
                e,
                Scalar::F32,
                &mut arena,
            )),
        ),
        (
            "pixels disagree with the height",
            outcome(model.image_encode_pixels(
                &[pixels.as_slice()],
                &[9],
                &[8],
                e,
                Scalar::F32,
                &mut arena,
            )),
        ),
        (
            "a zero height",
            outcome(model.image_encode_pixels(
                &[pixels.as_slice()],
                &[0],
                &[8],
                e,
                Scalar::F32,
                &mut arena,
            )),
        ),
        (
            "a NaN sample",
            outcome(model.audio_encode_samples(
                &[[f32::NAN].as_slice()],
                16_000,
                e,
                Scalar::F32,
                &mut arena,
            )),
        ),
        (
            "a zero sample rate",
            outcome(model.audio_encode_samples(
                &[second.as_slice()],
                0,
                e,
                Scalar::F32,
                &mut arena,
            )),
        ),
        (
            "states as i8",
            outcome(model.text_encode(&["x"], Outputs::STATES, Scalar::I8, &mut arena)),
        ),
        ("bf16 rows read as f32", bf16_values),
        (
            "a missing media file",
            outcome(model.image_encode(&[dir.join("missing.jpg")], e, Scalar::F32, &mut arena)),
        ),
        (
            "an empty media file",
            outcome(model.audio_encode(&[&empty], e, Scalar::F32, &mut arena)),
        ),
        (
            "a temperature group past the model's",
            outcome(model.text_choose(
                &["a", "b"],
                &["yn", "yn"],
                TextChooseConfig {
                    temperature_groups: &[0, common::CHOICE_GROUPS],
                    ..TextChooseConfig::default()
                },
                &mut arena,
            )),
        ),
        (
            "repeated choice bytes",
            outcome(model.text_choose(&["a"], &["yy"], TextChooseConfig::default(), &mut arena)),
        ),
        (
            "no choice",
            outcome(model.text_choose(&["a"], &[""], TextChooseConfig::default(), &mut arena)),
        ),
        (
            "one choice item per text",
            outcome(model.text_choose(
                &["a", "b"],
                &["yn"],
                TextChooseConfig::default(),
                &mut arena,
            )),
        ),
        (
            "a missing checkpoint",
            outcome(Model::load_ram(&dir.join("missing.safetensors"))),
        ),
        (
            "a checkpoint that is not one",
            outcome(Model::load_ram(&garbage)),
        ),
        (
            "init_vram on a RAM executor",
            outcome(Trainer::init_vram(
                &Executor::for_ram(&[], None, 1)?,
                TrainerInitVramConfig::default(),
            )),
        ),
    ];
    std::fs::remove_dir_all(dir).ok();
    let mut out = String::new();
    for (case, answer) in cases {
        writeln!(out, "{case}: {answer}").unwrap();
    }
    insta::assert_snapshot!(out);
    Ok(())
}

#[test]
fn a_training_step() -> Result<()> {
    let exchange = common::scratch_dir("snapshot-trainer");
    let executor = unsafe { Executor::for_vram(&[0], None, &[], None, &[], 0)? };
    let options = MeshOptions {
        directory: &exchange,
        job: "snapshots",
        ..MeshOptions::default()
    };
    let mesh = Mesh::bootstrap(&executor, &options)?;
    let config = TrainerInitVramConfig {
        mesh: Some(&mesh),
        depth: 2,
        hidden: 64,
        objective: Objective::Joint,
        seed: 7,
        ..TrainerInitVramConfig::default()
    };
    let trainer = Trainer::init_vram(&executor, config)?;
    let mut out = String::new();
    for step in 0..2 {
        let mut stats = TrainerStepStats::default();
        let config = TrainerStepConfig {
            bags: &[0, 0, 1, 1],
            relations: Relations {
                attract: Edges {
                    offsets: &[0, 1, 2, 3, 4],
                    ids: &[1, 0, 3, 2],
                    weights: &[],
                },
                ..Relations::default()
            },
            stats: Some(&mut stats),
            ..TrainerStepConfig::default()
        };
        trainer.on(&executor).step(
            &[Modality::Text; 4],
            &[
                "a cat on a mat",
                "a kitten on a rug",
                "a dog in the fog",
                "a puppy in the mist",
            ],
            config,
        )?;
        // Wall time is the one field that differs from run to run.
        stats.nanoseconds = 0;
        writeln!(out, "step {step}: {stats:#?}").unwrap();
    }
    insta::assert_snapshot!(out);
    drop(trainer);
    drop(mesh);
    std::fs::remove_dir_all(exchange).ok();
    Ok(())
}

#[test]
fn a_calibration() -> Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let config = TrainerInitRamConfig {
        depth: 2,
        hidden: 64,
        choices: Choices {
            groups: 3,
            weight: 0.0,
        },
        seed: 7,
        ..TrainerInitRamConfig::default()
    };
    let trainer = Trainer::init_ram(&executor, config)?;
    let mut stats = TrainerCalibrateStats::default();
    let config = TrainerCalibrateConfig {
        temperature_groups: &[0, 1, 1, 0],
        stats: Some(&mut stats),
        ..TrainerCalibrateConfig::default()
    };
    let targets: [&[f32]; 4] = [&[1.0, 0.0], &[0.0, 1.0], &[0.2, 0.3, 0.5], &[0.5, 0.5]];
    trainer.on(&executor).calibrate(
        &["is it?", "yes or no", "pick one", "maybe"],
        &["yn", "yn", "ABC", "yn"],
        &targets,
        config,
    )?;
    // Wall time is the one field that differs from run to run.
    stats.nanoseconds = 0;
    insta::assert_snapshot!(format!("{stats:#?}"));
    Ok(())
}
