//! The CPU trainer through the crate: a checkpoint saved mid-run encodes, through the
//! inference loader, what the trainer's own forward scored with the same weights (embeddings cosine >= 0.9999, texts,
//! an image, an audio and a video file); resuming continues the schedule; a cancelled step, a media file that does not
//! decode and a non-finite step change no weight; calibration fits the temperatures the saved checkpoint carries.
#![cfg(not(feature = "stub"))]

mod common;

use std::ops::ControlFlow;
use std::path::Path;

use common::golden::cosine;
use common::{scratch_dir, DIMENSIONS, TINY};
use uform::*;

const IMAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/train/image.png");
const AUDIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/train/audio.wav");
const VIDEO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/media/clip.mp4");
const TEXTS: [&str; 4] = [
    "a cat sits on the mat",
    "the cat is on the mat",
    "dogs bark at night",
    "a dog barks in the dark",
];

/// The mixed batch: four texts in two bags, an image and a recording in a bag, and a video clip.
fn batch() -> (Vec<Modality>, Vec<&'static str>) {
    let mut modalities = vec![Modality::Text; TEXTS.len()];
    modalities.extend([Modality::Image, Modality::Audio, Modality::Video]);
    let mut contents = TEXTS.to_vec();
    contents.extend([IMAGE, AUDIO, VIDEO]);
    (modalities, contents)
}

const BAGS: [usize; 7] = [0, 0, 1, 1, 2, 2, 3];

/// A contrastive trainer (no masking, so a step's embeddings are inference's) from the tiny checkpoint.
fn trainer<'e>(executor: &'e Executor, checkpoint: &'e Path) -> Result<Trainer<'e>> {
    Trainer::init_ram(
        executor,
        TrainerInitRamConfig {
            checkpoint,
            objective: Objective::Contrastive,
            schedule: Schedule {
                steps: 100,
                warmup_steps: 2,
                learning_rate: 1e-2,
                ..Schedule::default()
            },
            seed: 11,
            ..TrainerInitRamConfig::default()
        },
    )
}

/// Runs one step over the batch, answering its stats and scored embeddings.
fn step(
    trainer: &Trainer<'_>,
    executor: &Executor,
    arena: &mut Arena,
) -> Result<(TrainerStepStats, Vec<f32>)> {
    let (modalities, contents) = batch();
    let mut stats = TrainerStepStats::default();
    let config = TrainerStepConfig {
        bags: &BAGS,
        stats: Some(&mut stats),
        arena: Some(arena),
        ..TrainerStepConfig::default()
    };
    let rows = trainer.on(executor).step(&modalities, &contents, config)?;
    let embeddings = rows.expect("an arena was named").values::<f32>()?.to_vec();
    Ok((stats, embeddings))
}

#[test]
fn a_saved_checkpoint_encodes_what_the_trainer_scored() -> Result<()> {
    let scratch = scratch_dir("ram-training");
    let executor = Executor::for_ram(&[], None, 2)?;
    let mut arena = Arena::new();
    let trainer = trainer(&executor, Path::new(TINY))?;
    let (first, _) = step(&trainer, &executor, &mut arena)?;
    assert_eq!((first.step, first.items), (0, 7));
    assert!(first.loss.is_finite() && first.contrastive_loss > 0.0);
    assert!(first.gradient_norm > 0.0 && first.tokens > 0);
    assert_eq!(
        first.masking_loss, 0.0,
        "the contrastive objective masks nothing"
    );

    // The weights after step 0, saved; step 1 scores with exactly those weights before it updates them.
    let saved = scratch.join("step1.safetensors");
    trainer.on(&executor).save(&saved)?;
    let (second, scored) = step(&trainer, &executor, &mut arena)?;
    assert_eq!(second.step, 1);
    assert!(
        second.contrastive_loss < first.contrastive_loss,
        "the step learned"
    );

    let model = Model::load_ram(&saved)?;
    let texts = model.text_encode(&TEXTS[..], Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    let mut encoded = texts.embeddings.unwrap().values::<f32>()?.to_vec();
    let image = model.image_encode(&[IMAGE], Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    encoded.extend_from_slice(image.embeddings.unwrap().values::<f32>()?);
    let audio = model.audio_encode(&[AUDIO], Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    encoded.extend_from_slice(audio.embeddings.unwrap().values::<f32>()?);
    let video = model.video_encode(&[VIDEO], Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    encoded.extend_from_slice(video.embeddings.unwrap().values::<f32>()?);
    assert_eq!(encoded.len(), scored.len());
    for (item, (ours, theirs)) in encoded
        .chunks(DIMENSIONS)
        .zip(scored.chunks(DIMENSIONS))
        .enumerate()
    {
        let c = cosine(ours, theirs);
        assert!(
            c >= 0.9999,
            "item {item}: the loaded checkpoint's embedding has cosine {c} with the step's"
        );
    }

    // A trainer started from the checkpoint continues the schedule where it stopped.
    let resumed = self::trainer(&executor, &saved)?;
    let (again, _) = step(&resumed, &executor, &mut arena)?;
    assert_eq!(again.step, 1, "resuming continues the step count");
    assert_eq!(again.learning_rate, second.learning_rate);
    std::fs::remove_dir_all(scratch).ok();
    Ok(())
}

/// The bytes of a checkpoint the trainer saves now.
fn snapshot(trainer: &Trainer<'_>, executor: &Executor, path: &Path) -> Vec<u8> {
    trainer.on(executor).save(path).unwrap();
    std::fs::read(path).unwrap()
}

#[test]
fn failed_steps_change_no_weight() -> Result<()> {
    let scratch = scratch_dir("ram-training-failures");
    let executor = Executor::for_ram(&[], None, 2)?;
    let mut arena = Arena::new();
    let trainer = trainer(&executor, Path::new(TINY))?;
    let path = scratch.join("weights.safetensors");
    let before = snapshot(&trainer, &executor, &path);
    let (modalities, mut contents) = batch();

    let mut stop = |_: usize, _: usize| ControlFlow::Break(());
    let config = TrainerStepConfig {
        bags: &BAGS,
        progress: Some(&mut stop),
        ..TrainerStepConfig::default()
    };
    let error = trainer
        .on(&executor)
        .step(&modalities, &contents, config)
        .unwrap_err();
    assert_eq!(error.status, Status::Cancelled);
    assert_eq!(
        snapshot(&trainer, &executor, &path),
        before,
        "a cancelled step"
    );

    let broken = scratch.join("not-an-image.png");
    std::fs::write(&broken, "plain text, not a picture\n").unwrap();
    let broken = broken.to_str().unwrap().to_owned();
    contents[4] = &broken;
    let config = TrainerStepConfig {
        bags: &BAGS,
        ..TrainerStepConfig::default()
    };
    let error = trainer
        .on(&executor)
        .step(&modalities, &contents, config)
        .unwrap_err();
    assert!(!error.message.is_empty());
    assert_eq!(
        snapshot(&trainer, &executor, &path),
        before,
        "a media file that does not decode"
    );

    // The next step proceeds, from step 0.
    let (stats, _) = step(&trainer, &executor, &mut arena)?;
    assert_eq!(stats.step, 0);
    assert_ne!(
        snapshot(&trainer, &executor, &path),
        before,
        "a step that ran moved the weights"
    );
    std::fs::remove_dir_all(scratch).ok();
    Ok(())
}

#[test]
fn calibration_fits_the_temperatures_the_checkpoint_carries() -> Result<()> {
    let scratch = scratch_dir("ram-training-calibration");
    let executor = Executor::for_ram(&[], None, 1)?;
    let trainer = trainer(&executor, Path::new(TINY))?;
    let texts = [
        "The sky is blue. Answer y or n: ",
        "Grass is red. Answer y or n: ",
        "Pick a letter: ",
    ];
    let targets: [&[f32]; 3] = [&[1.0, 0.0], &[0.0, 1.0], &[0.1, 0.2, 0.7]];
    let mut stats = TrainerCalibrateStats::default();
    let config = TrainerCalibrateConfig {
        temperature_groups: &[1, 1, 1],
        stats: Some(&mut stats),
        ..TrainerCalibrateConfig::default()
    };
    trainer
        .on(&executor)
        .calibrate(&texts, &["yn", "yn", "ABC"], &targets, config)?;
    assert_eq!((stats.items, stats.groups_fitted), (3, 1));
    assert!(stats.loss_after <= stats.loss_before + 1e-6, "{stats:?}");
    let path = scratch.join("calibrated.safetensors");
    trainer.on(&executor).save(&path)?;

    // Group 1's temperature changed the saved model's probabilities; group 0 kept the checkpoint's.
    let original = Model::load_ram(TINY)?;
    let calibrated = Model::load_ram(&path)?;
    let choose = |model: &Model, group: usize| -> Result<Vec<f32>> {
        let mut arena = Arena::new();
        let config = TextChooseConfig {
            temperature_groups: &[group],
            ..TextChooseConfig::default()
        };
        Ok(model
            .text_choose(&texts[..1], &["yn"], config, &mut arena)?
            .values::<f32>()?
            .to_vec())
    };
    assert_eq!(choose(&original, 0)?, choose(&calibrated, 0)?);
    assert_ne!(choose(&original, 1)?, choose(&calibrated, 1)?);
    std::fs::remove_dir_all(scratch).ok();
    Ok(())
}

/// A choice item that states its answer, "... the answer is C ...", with a seeded letter and filler.
fn stated_answer(seed: &mut u64) -> (String, usize) {
    const WORDS: [&str; 8] = [
        "red", "blue", "quick", "slow", "tall", "small", "green", "old",
    ];
    let mut next = |n: usize| {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 33) % n as u64) as usize
    };
    let answer = next(4);
    let text = format!(
        "{} {}: the answer is {}. which?",
        WORDS[next(8)],
        WORDS[next(8)],
        char::from(b'A' + answer as u8)
    );
    (text, answer)
}

#[test]
fn the_choice_term_learns_and_text_choose_answers_with_it() -> Result<()> {
    // The choices objective alone, from the tiny checkpoint, on items whose text names the answer: the term falls from
    // about ln 4 and the saved checkpoint's `text_choose` picks the named letter on items it never trained on.
    let scratch = scratch_dir("ram-training-choices");
    let executor = Executor::for_ram(&[], None, 2)?;
    let trainer = Trainer::init_ram(
        &executor,
        TrainerInitRamConfig {
            checkpoint: Path::new(TINY),
            objective: Objective::Choices,
            schedule: Schedule {
                steps: 120,
                warmup_steps: 10,
                learning_rate: 1e-2,
                ..Schedule::default()
            },
            seed: 5,
            ..TrainerInitRamConfig::default()
        },
    )?;
    const ITEMS: usize = 16;
    let (mut seed, mut first, mut last) = (1u64, 0.0, 0.0);
    for step in 0..120 {
        let items: Vec<(String, usize)> = (0..ITEMS).map(|_| stated_answer(&mut seed)).collect();
        let contents: Vec<&str> = items.iter().map(|(text, _)| text.as_str()).collect();
        let legal = b"ABCD".repeat(ITEMS);
        let mut targets = vec![0.0f32; 4 * ITEMS];
        for (i, (_, answer)) in items.iter().enumerate() {
            targets[4 * i + answer] = 1.0;
        }
        let offsets: Vec<usize> = (0..=ITEMS).map(|i| 4 * i).collect();
        let mut stats = TrainerStepStats::default();
        let config = TrainerStepConfig {
            choices: (&legal, &offsets),
            choice_targets: (&targets, &offsets),
            stats: Some(&mut stats),
            ..TrainerStepConfig::default()
        };
        trainer
            .on(&executor)
            .step(&vec![Modality::Text; ITEMS], &contents, config)?;
        if step == 0 {
            first = stats.choices_loss;
        }
        last = stats.choices_loss;
    }
    println!("the choice term fell from {first:.3} to {last:.3} in 120 steps");
    assert!(
        first > 1.0 && last < 0.3 * first,
        "the choice term fell from {first} to {last}"
    );

    let path = scratch.join("choices.safetensors");
    trainer.on(&executor).save(&path)?;
    let model = Model::load_ram(&path)?;
    let mut held_out = 9_999u64;
    let items: Vec<(String, usize)> = (0..40).map(|_| stated_answer(&mut held_out)).collect();
    let texts: Vec<&str> = items.iter().map(|(text, _)| text.as_str()).collect();
    let mut arena = Arena::new();
    let chosen = model.text_choose(
        &texts,
        &vec!["ABCD"; texts.len()],
        TextChooseConfig::default(),
        &mut arena,
    )?;
    let right = (0..items.len())
        .filter(|&i| {
            let p = chosen.item(i).expect("one row per item");
            let best = (0..4).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap();
            best == items[i].1
        })
        .count();
    println!("{right} of 40 held-out items answered right");
    assert!(right >= 36, "{right} of 40 held-out items answered right");
    std::fs::remove_dir_all(scratch).ok();
    Ok(())
}
