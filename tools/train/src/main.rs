//! `uform-train`: trains UForm's small multimodal model on the CPU from the data `tools/data/prepare.py` writes
//! (WordNet synsets as bags, Fashion-MNIST images with captions, spoken lemmas and glosses, multiple-choice items),
//! with all four objectives at once, after a versioned recipe file (`tools/train/recipes/*.toml`, `recipe.rs`); scores
//! a checkpoint on the test split (`evaluate`); and prints the batches a recipe draws as JSON (`batches`).
//!
//! ```sh
//! python3 tools/data/prepare.py                                   # once: target/data
//! cargo run --release -p uform-train                              # recipes/smoke.toml into target/train/smoke
//! cargo run --release -p uform-train -- --recipe tools/train/recipes/wordnet-d.toml --out target/train/d
//! cargo run --release -p uform-train -- evaluate --model target/train/d/checkpoint.safetensors
//! cargo run --release -p uform-train -- batches --recipe tools/train/recipes/wordnet-s.toml --step 16500
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod baseline;
mod batches;
mod calibration;
mod checkpoint;
mod data;
mod evaluate;
mod metrics;
mod progress;
mod recipe;
mod report;
mod share;
mod tasks;
mod train;
mod trainer;

/// Trains a stage after a recipe file, resuming it with `--resume`; or evaluates a checkpoint; or prints batches.
#[derive(Parser, Debug)]
#[command(name = "uform-train", args_conflicts_with_subcommands = true)]
struct Cli {
    /// What to do other than training.
    #[command(subcommand)]
    command: Option<Command>,
    /// The training run's options.
    #[command(flatten)]
    train: TrainArgs,
}

/// The subcommands besides training.
#[derive(Subcommand, Debug)]
enum Command {
    /// Scores a checkpoint on the test split and writes the table and the calibrated checkpoint.
    Evaluate(EvaluateArgs),
    /// Prints the batches a recipe draws at some steps, as JSON, one per line.
    Batches(BatchesArgs),
}

/// Where a training stage's files are; everything else is the recipe's.
#[derive(Args, Debug)]
pub struct TrainArgs {
    /// The recipe file (default: tools/train/recipes/smoke.toml).
    #[arg(long, value_name = "FILE")]
    pub recipe: Option<PathBuf>,
    /// A checkpoint the stage starts from (its `trainer.step` starts the schedule); none: seeded weights.
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// The data directory tools/data/prepare.py wrote (default: target/data).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// The run directory: checkpoints, log.tsv (default: target/train/<the recipe's name>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Continue from the run directory's checkpoint (given the same --model); without it a run directory holding a
    /// checkpoint is refused.
    #[arg(long)]
    pub resume: bool,
    /// Train at most N steps in this session, then save and stop; the schedule stays the recipe's.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub steps: Option<u64>,
    /// Worker threads, the calling one included (at least 2; default: the cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..))]
    pub threads: Option<u64>,
    /// Processes of a data-parallel mesh (1: no mesh); every rank takes the same options.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub ranks: u64,
    /// This process's rank in the mesh, below --ranks.
    #[arg(long, value_name = "R", default_value_t = 0)]
    pub rank: u64,
    /// The directory the ranks meet in (default: <out>/mesh).
    #[arg(long, value_name = "DIR")]
    pub exchange: Option<PathBuf>,
    /// The address this rank listens at.
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1")]
    pub hostname: String,
}

/// What `evaluate` scores and where its table goes.
#[derive(Args, Debug)]
pub struct EvaluateArgs {
    /// The checkpoint to evaluate.
    #[arg(long, value_name = "PATH")]
    pub model: PathBuf,
    /// The data directory (default: target/data).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Where the table and the calibrated checkpoint go (default: <the model's directory>/evaluation).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Threads: the executor's and the scoring's (at least 2; default: the cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..))]
    pub threads: Option<u64>,
    /// The row length the model was trained with: longer texts are cut, longer choice items dropped.
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = clap::value_parser!(u64).range(2..))]
    pub columns: u64,
    /// Queries scored per retrieval task, drawn with --seed (0: all).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub queries: usize,
    /// Test images scored zero-shot (0: all).
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub images: usize,
    /// Test choice items scored (0: all).
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub choices: usize,
    /// Calibration items the temperature fit takes (0: all; a fit holds about 6 MB per item).
    #[arg(long, value_name = "N", default_value_t = calibration::DEFAULT_ITEMS)]
    pub calibration: usize,
    /// The samples' seed.
    #[arg(long, value_name = "N", default_value_t = 13)]
    pub seed: u64,
}

/// Which batches `batches` prints.
#[derive(Args, Debug)]
pub struct BatchesArgs {
    /// The recipe whose `[batch]` table, seed and columns draw them (default: tools/train/recipes/smoke.toml).
    #[arg(long, value_name = "FILE")]
    pub recipe: Option<PathBuf>,
    /// The data directory (default: target/data).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// The split: train draws a training step's batch, validation the validation batches.
    #[arg(long, value_enum, default_value = "train")]
    pub split: batches::SplitArg,
    /// The first step (train) or validation batch drawn.
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub step: u64,
    /// How many consecutive batches.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub count: u64,
}

/// The repository's `target/` directory, where the data and the runs go by default.
pub fn target() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or(manifest)
        .join("target")
}

/// The smoke recipe, the default.
pub fn smoke_recipe() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/recipes/smoke.toml"))
}

/// The default number of threads: the cores, at least 2.
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .max(2)
}

/// Runs what the command line asks for; an error is printed and the exit status is 1.
fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Some(Command::Evaluate(arguments)) => evaluate::run(&arguments),
        Some(Command::Batches(arguments)) => batches::run(&arguments),
        None => train::run(&cli.train),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("\nuform-train: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_keeps_the_files_and_the_session() {
        let cli = Cli::try_parse_from([
            "uform-train",
            "--recipe",
            "r.toml",
            "--model",
            "m.safetensors",
            "--out",
            "o",
            "--resume",
            "--steps",
            "250",
            "--threads",
            "2",
        ])
        .unwrap();
        assert!(cli.command.is_none());
        let train = cli.train;
        assert_eq!(
            (
                train.recipe.unwrap(),
                train.model.unwrap(),
                train.out.unwrap()
            ),
            ("r.toml".into(), "m.safetensors".into(), "o".into())
        );
        assert_eq!(
            (train.resume, train.steps, train.threads, train.ranks),
            (true, Some(250), Some(2), 1)
        );
        // A recipe's fields are not flags; threads below two and zero steps are refused.
        for refused in [
            &["uform-train", "--lr", "1e-3"][..],
            &["uform-train", "--threads", "1"],
            &["uform-train", "--steps", "0"],
            &["uform-train", "evaluate"],
        ] {
            assert!(Cli::try_parse_from(refused).is_err(), "{refused:?}");
        }
        let cli =
            Cli::try_parse_from(["uform-train", "evaluate", "--model", "m.safetensors"]).unwrap();
        assert!(
            matches!(cli.command, Some(Command::Evaluate(e)) if e.columns == 128 && e.queries == 1000)
        );
    }
}
