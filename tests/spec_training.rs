//! The README's "Training", end to end against the stub's simulated GPUs: a one-host mesh bootstrapped
//! through a scratch folder, a trainer, a step with relations and stats, and a saved checkpoint.
//!
//! Stub only: the trainer and the mesh run on the stub's simulated GPUs.
#![cfg(feature = "stub")]

mod common;

use std::path::Path;

use uform::*;

/// The README's snippet, with a scratch folder for the exchange and the checkpoint.
#[test]
fn the_readme_snippet_trains_and_saves() -> uform::Result<()> {
    let exchange = common::scratch_dir("exchange");
    let (rank, nodes) = (0, 1);
    let modalities = [Modality::Text; 4];
    let contents = [
        "a cat on a mat",
        "a kitten on a rug",
        "a dog in the fog",
        "a puppy in the mist",
    ];

    let executor = unsafe { Executor::for_vram(&[0, 1], None, &[], None, &[], 0)? };
    let mesh = Mesh::bootstrap(
        &executor,
        &MeshOptions {
            host_domain_index: rank,
            host_domain_count: nodes,
            directory: Path::new(&exchange),
            job: "run-17",
            ..MeshOptions::default()
        },
    )?;
    let trainer = Trainer::init_vram(
        &executor,
        TrainerInitVramConfig {
            mesh: Some(&mesh),
            depth: 12,
            hidden: 512,
            objective: Objective::Joint,
            batch: BatchShape {
                max_rows_per_device: 64,
                max_segments_per_device: 256,
                max_columns_per_row: 1024,
                max_bags_per_device: 128,
                image: ImageShape {
                    patch_side: 16,
                    channels: 0,
                },
                ..BatchShape::default()
            },
            schedule: Schedule {
                steps: 100_000,
                ..Schedule::default()
            },
            seed: 42,
            ..TrainerInitVramConfig::default()
        },
    )?;

    let mut stats = TrainerStepStats::default();
    let relations = Relations {
        attract: Edges {
            offsets: &[0, 1, 2, 3, 4],
            ids: &[1, 0, 3, 2],
            weights: &[],
        },
        ..Relations::default()
    };
    let config = TrainerStepConfig {
        bags: &[0, 0, 1, 1],
        relations,
        stats: Some(&mut stats),
        ..TrainerStepConfig::default()
    };
    let scored = trainer.on(&executor).step(&modalities, &contents, config)?;
    assert!(
        scored.is_none(),
        "without an arena, a step answers no embeddings"
    );
    assert_eq!(stats.step, 0);
    assert_eq!(stats.items, 4);
    assert!(stats.loss.is_finite());
    assert!(stats.tokens >= contents.iter().map(|text| text.len()).sum::<usize>());

    let checkpoint = exchange.join("checkpoint.safetensors");
    trainer.on(&executor).save(&checkpoint)?;
    assert!(checkpoint.is_file());
    let trained = Model::load_ram(&checkpoint)?;
    assert_eq!(trained.describe()?.depth, 12);
    assert_eq!(trained.describe()?.hidden, 512);

    let description = mesh.describe()?;
    assert_eq!(
        (description.host_domain_index, description.host_domain_count),
        (0, 1)
    );
    assert_eq!(description.local_devices, 2);
    assert_eq!(description.gpu_class.to_string(), "nvidia-hopper");
    assert!(
        !description.multimem_tier.to_string().is_empty(),
        "a MultimemTier prints its name"
    );
    drop(trainer); // the mesh outlives every trainer made over it
    drop(mesh);
    std::fs::remove_dir_all(exchange).ok();
    Ok(())
}

/// A trainer over a one-host mesh in a scratch folder, with the executor it runs on.
fn with_trainer(test: impl FnOnce(&Executor, &Trainer<'_>)) {
    let exchange = common::scratch_dir("trainer");
    let executor = unsafe { Executor::for_vram(&[0], None, &[], None, &[], 0) }.unwrap();
    let options = MeshOptions {
        directory: &exchange,
        job: "steps",
        ..MeshOptions::default()
    };
    let mesh = Mesh::bootstrap(&executor, &options).unwrap();
    let config = TrainerInitVramConfig {
        mesh: Some(&mesh),
        depth: 2,
        hidden: 64,
        seed: 7,
        ..TrainerInitVramConfig::default()
    };
    let trainer = Trainer::init_vram(&executor, config).unwrap();
    test(&executor, &trainer);
    drop(trainer);
    drop(mesh);
    std::fs::remove_dir_all(exchange).ok();
}

#[test]
fn a_step_with_an_arena_answers_the_scored_embeddings() {
    with_trainer(|executor, trainer| {
        let mut arena = Arena::new_in(executor).unwrap();
        let mut stats = TrainerStepStats::default();
        let config = TrainerStepConfig {
            arena: Some(&mut arena),
            stats: Some(&mut stats),
            ..TrainerStepConfig::default()
        };
        let scored = trainer
            .on(executor)
            .step(&[Modality::Text; 3], &["one", "two", "three"], config)
            .unwrap();
        let rows = scored.expect("an arena was named");
        assert_eq!(rows.count(), 3);
        assert_eq!(rows.scalar(), Scalar::F32);
        assert_eq!(rows.residency(), Residency::Vram);

        let config = TrainerStepConfig {
            stats: Some(&mut stats),
            ..TrainerStepConfig::default()
        };
        trainer
            .on(executor)
            .step(&[Modality::Text; 2], &["four", "five"], config)
            .unwrap();
        assert_eq!(stats.step, 1, "steps count from zero");
    });
}

#[test]
fn choices_and_sides_cross_as_tapes() {
    with_trainer(|executor, trainer| {
        let sides = [
            LateInteractionSide::Query,
            LateInteractionSide::Document,
            LateInteractionSide::None,
        ];
        let config = TrainerStepConfig {
            sides: &sides,
            choices: (b"ynABC".as_slice(), &[0, 2, 2, 5]),
            choice_targets: (&[0.25, 0.75, 0.5, 0.25, 0.25], &[0, 2, 2, 5]),
            ..TrainerStepConfig::default()
        };
        trainer
            .on(executor)
            .step(&[Modality::Text; 3], &["q", "d", "c"], config)
            .unwrap();
    });
}

#[test]
fn teacher_rows_cross_as_a_slice_and_a_width() {
    with_trainer(|executor, trainer| {
        let step = |teacher: &[f32], teacher_width: usize, stats: Option<&mut TrainerStepStats>| {
            let config = TrainerStepConfig {
                bags: &[0, 0, 1],
                teacher,
                teacher_width,
                stats,
                ..TrainerStepConfig::default()
            };
            let texts = ["a cat", "a kitten", "a truck"];
            trainer
                .on(executor)
                .step(&[Modality::Text; 3], &texts, config)
                .map(|_| ())
        };
        let rows = [1.0, 0.1, 0.0, 0.9, 0.2, 0.0, 0.0, 0.0, 1.0];
        let mut stats = TrainerStepStats::default();
        step(&rows, 3, Some(&mut stats)).unwrap();
        assert!(stats.distill_loss > 0.0 && stats.contrastive_loss > 0.0);
        assert!(
            stats.loss > stats.distill_loss,
            "the joint sum holds the term"
        );
        let status = |teacher: &[f32], width| step(teacher, width, None).unwrap_err().status;
        assert_eq!(
            status(&rows, 4),
            Status::ShapeMismatch,
            "rows not one per item"
        );
        assert_eq!(
            status(&rows, 0),
            Status::InvalidArgument,
            "rows without a width"
        );
        assert_eq!(
            status(&[], 3),
            Status::ShapeMismatch,
            "a width without rows"
        );
        let mut bad = rows;
        bad[4] = f32::NAN;
        assert_eq!(status(&bad, 3), Status::InvalidArgument, "a NaN row");
    });
}

#[test]
fn relations_are_checked_against_the_items() {
    with_trainer(|executor, trainer| {
        let step = |relations: Relations<'_>| {
            let config = TrainerStepConfig {
                relations,
                ..TrainerStepConfig::default()
            };
            trainer
                .on(executor)
                .step(&[Modality::Text; 2], &["left", "right"], config)
                .map(|_| ())
        };
        let edges = |offsets, ids, weights| Relations {
            repel: Edges {
                offsets,
                ids,
                weights,
            },
            ..Relations::default()
        };
        assert!(step(edges(&[0, 1, 2], &[1, 0], &[0.5, 2.0])).is_ok());
        assert_eq!(
            step(edges(&[0, 1, 2], &[1, 2], &[])).unwrap_err().status,
            Status::InvalidArgument,
            "outside the batch"
        );
        assert_eq!(
            step(edges(&[0, 1, 2], &[0, 0], &[])).unwrap_err().status,
            Status::InvalidArgument,
            "a self edge"
        );
        assert_eq!(
            step(edges(&[0, 1, 2], &[1, 0], &[1.0, -1.0]))
                .unwrap_err()
                .status,
            Status::InvalidArgument
        );
        assert_eq!(
            step(edges(&[0, 2], &[1, 0], &[])).unwrap_err().status,
            Status::ShapeMismatch,
            "offsets per item"
        );
        assert_eq!(
            step(edges(&[0, 2, 1], &[1, 0], &[])).unwrap_err().status,
            Status::ShapeMismatch,
            "falling"
        );
    });
}

#[test]
fn init_vram_refuses_a_ram_executor() {
    let executor = Executor::for_ram(&[], None, 1).unwrap();
    let refused = Trainer::init_vram(&executor, TrainerInitVramConfig::default());
    assert_eq!(
        refused.err().map(|error| error.status),
        Some(Status::Unsupported),
        "a RAM executor trains through init_ram"
    );
}

/// A RAM trainer with the stub: the configuration of a VRAM one; steps, calibration and saves on its executor.
#[test]
fn a_ram_trainer_steps_calibrates_and_saves() -> uform::Result<()> {
    let scratch = common::scratch_dir("ram-trainer");
    let executor = Executor::for_ram(&[], None, 1)?;
    let trainer = Trainer::init_ram(
        &executor,
        TrainerInitRamConfig {
            depth: 2,
            hidden: 64,
            choices: Choices {
                groups: 2,
                weight: 0.0,
            },
            seed: 7,
            ..TrainerInitRamConfig::default()
        },
    )?;
    let mut stats = TrainerStepStats::default();
    let config = TrainerStepConfig {
        bags: &[0, 0, 1],
        stats: Some(&mut stats),
        ..TrainerStepConfig::default()
    };
    trainer
        .on(&executor)
        .step(&[Modality::Text; 3], &["one", "uno", "two"], config)?;
    assert_eq!((stats.step, stats.items), (0, 3));
    assert!(stats.loss.is_finite());

    let mut calibrated = TrainerCalibrateStats::default();
    let config = TrainerCalibrateConfig {
        temperature_groups: &[0, 1, 1],
        stats: Some(&mut calibrated),
        ..TrainerCalibrateConfig::default()
    };
    let targets: [&[f32]; 3] = [&[1.0, 0.0], &[0.0, 1.0], &[0.2, 0.3, 0.5]];
    trainer.on(&executor).calibrate(
        &["is it?", "yes or no", "pick one"],
        &["yn", "yn", "ABC"],
        &targets,
        config,
    )?;
    assert_eq!((calibrated.items, calibrated.groups_fitted), (3, 2));
    assert_eq!(calibrated.tokens, "is it?yes or nopick one".len() + 3);
    assert!(calibrated.loss_after <= calibrated.loss_before + 1e-5);

    let refused = trainer.on(&executor).calibrate(
        &["is it?"],
        &["yn"],
        &[&[0.5f32, 0.4][..]],
        TrainerCalibrateConfig::default(),
    );
    assert_eq!(
        refused.err().map(|error| error.status),
        Some(Status::InvalidArgument),
        "targets that do not sum to one"
    );

    let checkpoint = scratch.join("ram.safetensors");
    trainer.on(&executor).save(&checkpoint)?;
    let trained = Model::load_ram(&checkpoint)?;
    assert_eq!(trained.describe()?.hidden, 64);
    assert_eq!(trained.describe()?.choice_temperature_groups, 2);

    let vram = unsafe { Executor::for_vram(&[0], None, &[], None, &[], 0)? };
    let mesh = Mesh::bootstrap(
        &vram,
        &MeshOptions {
            directory: &scratch,
            job: "ram",
            ..MeshOptions::default()
        },
    )?;
    let meshed = TrainerInitRamConfig {
        mesh: Some(&mesh),
        ..TrainerInitRamConfig::default()
    };
    assert_eq!(
        Trainer::init_ram(&executor, meshed).err().map(|e| e.status),
        Some(Status::InvalidArgument),
        "a RAM trainer's mesh is joined over a RAM executor, not a VRAM one"
    );
    assert_eq!(
        Mesh::bootstrap(&executor, &MeshOptions::default())
            .err()
            .map(|e| e.status),
        Some(Status::Unsupported),
        "the stub joins no RAM mesh"
    );
    assert_eq!(
        trainer.on(&vram).save(&checkpoint).err().map(|e| e.status),
        Some(Status::InvalidArgument),
        "an executor of another residency than the trainer's"
    );
    let pinned = Executor::for_ram(&[0], None, 1)?;
    assert_eq!(
        trainer
            .on(&pinned)
            .save(&checkpoint)
            .err()
            .map(|e| e.status),
        Some(Status::InvalidArgument),
        "an executor of other NUMA nodes than the trainer's"
    );
    drop(trainer);
    drop(mesh);
    std::fs::remove_dir_all(scratch).ok();
    Ok(())
}

/// Starting from a checkpoint, a geometry field is zero or the checkpoint's; anything else is refused.
#[test]
fn a_checkpoint_s_geometry_wins_and_contradictions_are_refused() -> uform::Result<()> {
    let scratch = common::scratch_dir("ram-trainer-geometry");
    let executor = Executor::for_ram(&[], None, 1)?;
    let seeded = Trainer::init_ram(
        &executor,
        TrainerInitRamConfig {
            depth: 2,
            hidden: 64,
            ..TrainerInitRamConfig::default()
        },
    )?;
    let checkpoint = scratch.join("seeded.safetensors");
    seeded.on(&executor).save(&checkpoint)?;
    drop(seeded);

    let agreeing = TrainerInitRamConfig {
        checkpoint: &checkpoint,
        hidden: 64,
        ..TrainerInitRamConfig::default()
    };
    Trainer::init_ram(&executor, agreeing)?;
    let contradicting = TrainerInitRamConfig {
        checkpoint: &checkpoint,
        depth: 4,
        ..TrainerInitRamConfig::default()
    };
    assert_eq!(
        Trainer::init_ram(&executor, contradicting)
            .err()
            .map(|e| e.status),
        Some(Status::InvalidArgument)
    );
    std::fs::remove_dir_all(scratch).ok();
    Ok(())
}
