// README, "Training", verbatim.
#![allow(dead_code, unused)]
use std::path::Path;
use uform::*;

fn training(rank: usize, nodes: usize, modalities: Vec<Modality>, contents: Vec<&str>) -> uform::Result<()> {
    let executor = unsafe { Executor::for_vram(&[0, 1], None, &[], None, &[], 0)? };
    let mesh = Mesh::bootstrap(&executor, &MeshOptions {
        host_domain_index: rank,
        host_domain_count: nodes,
        directory: Path::new("/shared/exchange"),
        job: "run-17",
        ..MeshOptions::default()
    })?;
    let trainer = Trainer::init_vram(&executor, TrainerInitVramConfig {
        mesh: Some(&mesh),
        depth: 12,
        hidden: 512,
        objective: Objective::Joint,
        batch: BatchShape { max_rows_per_device: 64, max_segments_per_device: 256, max_columns_per_row: 1024,
                            max_bags_per_device: 128, image: ImageShape { patch_side: 16, channels: 0 },
                            ..BatchShape::default() },
        schedule: Schedule { steps: 100_000, ..Schedule::default() },
        seed: 42,
        ..TrainerInitVramConfig::default()
    })?;

    let mut stats = TrainerStepStats::default();
    let relations = Relations { attract: Edges { offsets: &[0, 1, 2, 3, 4], ids: &[1, 0, 3, 2], weights: &[] },
                                ..Relations::default() };
    let config = TrainerStepConfig { bags: &[0, 0, 1, 1], relations, stats: Some(&mut stats), ..TrainerStepConfig::default() };
    trainer.on(&executor).step(&modalities, &contents, config)?;
    trainer.on(&executor).save("checkpoint.safetensors")?;
    Ok(())
}

fn main() {}
