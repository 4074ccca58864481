//! The trainer a stage drives: the seeded model's geometry, the configuration a recipe gives it, one step over a
//! batch, and the validation loss of a saved checkpoint.

use std::error::Error;
use std::path::Path;

use uform::*;

use crate::data::Batch;
use crate::recipe::Recipe;

/// The model's geometry when the run starts from seeded weights: about 3.4 M trunk parameters.
pub const DEPTH: usize = 4;
/// Trunk width.
pub const HIDDEN: usize = 256;
/// Attention heads.
pub const HEADS: usize = 4;
/// Feed-forward width.
pub const FFN_HIDDEN: usize = 768;
/// Embedding columns.
pub const DIMENSIONS: usize = 256;
/// Columns of the late-interaction token vectors.
pub const TOKEN_WIDTH: usize = 64;
/// Image patch side in pixels (a 28x28 image is 7x7 patches before the grid fills the row's budget).
pub const PATCH_SIDE: usize = 4;
/// The audio front-end's sample rate, the clips' own.
pub const SAMPLE_RATE: usize = 16_000;
/// Frames per video tubelet: the front-end is built so the checkpoint can embed clips, though no clip trains it yet.
const TUBELET_FRAMES: usize = 2;
/// Items a step's batch may hold when its recipe draws no more: the trainer's default, 64 rows of four.
const DEFAULT_SEGMENTS: usize = 256;

/// The trainer's configuration: the joint objective's terms (distillation among them, which has data only in a step
/// that brings teacher rows) over the seeded geometry, or over `checkpoint` when it is not
/// empty (its geometry is the same: a restart names the values the checkpoint holds).
pub fn config<'a>(
    recipe: &Recipe,
    checkpoint: &'a Path,
    schedule: Schedule,
    mesh: Option<&'a Mesh>,
) -> TrainerInitRamConfig<'a> {
    TrainerInitRamConfig {
        mesh,
        checkpoint,
        depth: DEPTH,
        hidden: HIDDEN,
        heads: HEADS,
        ffn_hidden: FFN_HIDDEN,
        dimensions: DIMENSIONS,
        objective: Objective::Joint,
        contrastive: Contrastive {
            form: recipe.pair_loss.into(),
            ..Contrastive::default()
        },
        masking: Masking {
            weight: recipe.masking_weight,
            ..Masking::default()
        },
        batch: batch_shape(recipe),
        late_interaction: LateInteraction {
            token_width: TOKEN_WIDTH,
            ..LateInteraction::default()
        },
        choices: Choices {
            groups: 1,
            ..Choices::default()
        },
        distill: Distill {
            weight: recipe.distill_weight,
            student_temperature: recipe.student_temperature,
            teacher_temperature: recipe.teacher_temperature,
        },
        schedule,
        seed: recipe.seed,
    }
}

/// The batch's shape: the recipe's packed rows of its columns, the trainer's default segments (four items a row of 64)
/// unless the recipe can draw more items than that, and the front-ends' geometry.
fn batch_shape(recipe: &Recipe) -> BatchShape {
    BatchShape {
        max_rows_per_device: recipe.rows,
        max_segments_per_device: recipe.batch.max_items().max(DEFAULT_SEGMENTS),
        max_columns_per_row: recipe.columns,
        image: ImageShape {
            patch_side: PATCH_SIDE,
            ..ImageShape::default()
        },
        video: VideoShape {
            tubelet_frames: TUBELET_FRAMES,
            ..VideoShape::default()
        },
        audio: AudioShape {
            sample_rate: SAMPLE_RATE,
            ..AudioShape::default()
        },
        ..BatchShape::default()
    }
}

/// A step's loss terms, in the order the progress line and the log print them: joint, masking, contrastive, late
/// interaction, choices, distillation.
pub type Terms = [f32; 6];

/// The step's stats' terms.
pub fn terms(stats: &TrainerStepStats) -> Terms {
    [
        stats.loss,
        stats.masking_loss,
        stats.contrastive_loss,
        stats.late_interaction_loss,
        stats.choices_loss,
        stats.distill_loss,
    ]
}

/// The terms as `loss (masking, contrastive, late, choices, distill)`.
pub fn show(terms: &Terms) -> String {
    format!(
        "loss {:.3} (masking {:.3}, contrastive {:.3}, late {:.3}, choices {:.3}, distill {:.3})",
        terms[0], terms[1], terms[2], terms[3], terms[4], terms[5]
    )
}

/// Runs one step over `batch` (with its teacher rows, when it has them), answering its stats.
pub fn step(
    trainer: &Trainer<'_>,
    executor: &Executor,
    batch: &Batch,
) -> Result<TrainerStepStats, Box<dyn Error>> {
    let contents: Vec<&str> = batch.contents.iter().map(String::as_str).collect();
    let mut stats = TrainerStepStats::default();
    let has_choices = !batch.choices.0.is_empty();
    let config = TrainerStepConfig {
        bags: &batch.bags,
        relations: Relations {
            attract: batch.attract.edges(),
            repel: batch.repel.edges(),
            ..Relations::default()
        },
        sides: &batch.sides,
        choices: if has_choices {
            (&batch.choices.0, &batch.choices.1)
        } else {
            (&[], &[])
        },
        choice_targets: if has_choices {
            (&batch.targets.0, &batch.targets.1)
        } else {
            (&[], &[])
        },
        teacher: &batch.teacher,
        teacher_width: batch.teacher_width,
        stats: Some(&mut stats),
        ..TrainerStepConfig::default()
    };
    trainer
        .on(executor)
        .step(&batch.modalities, &contents, config)?;
    Ok(stats)
}

/// The validation loss of the weights in `checkpoint`: the mean terms over the fixed validation batches, each a step
/// of a trainer loaded from it whose learning rate (1e-30) leaves the weights as they are.
pub fn validate(
    executor: &Executor,
    recipe: &Recipe,
    checkpoint: &Path,
    batches: &[Batch],
) -> Result<Terms, Box<dyn Error>> {
    let frozen = Schedule {
        steps: 1,
        warmup_steps: 1,
        learning_rate: 1e-30,
        min_learning_rate: 1e-30,
        ..Schedule::default()
    };
    let trainer = Trainer::init_ram(executor, config(recipe, checkpoint, frozen, None))?;
    let mut sums = [0f32; 6];
    for batch in batches {
        let stats = step(&trainer, executor, batch)?;
        for (sum, term) in sums.iter_mut().zip(terms(&stats)) {
            *sum += term / batches.len() as f32;
        }
    }
    Ok(sums)
}
