//! Trains a tiny UForm model on the CPU: masked bytes plus contrastive InfoNCE over pairs of paraphrases
//! (each pair one bag), with a progress line on standard error; saves the checkpoint, then loads the
//! weights of step 0 and of the last step with the inference loader and prints how similar paraphrases and
//! unrelated texts embed before and after.
//!
//! ```sh
//! cargo run --release --example train                          # seeded tiny geometry, built-in pairs
//! cargo run --release --example train -- --steps 1000 --batch 32
//! cargo run --release --example train -- --model tests/data/tiny.safetensors --out tiny-tuned.safetensors
//! cargo run --release --example train -- --lines pairs.txt     # consecutive lines are paraphrases
//! ```

use std::error::Error;
use std::io::Write;
use std::path::PathBuf;

use uform::*;

mod report;
mod texts;

use texts::{Pairs, Sampler};

/// What the command line asked for.
struct Options {
    /// The checkpoint to start from; `None` seeds the tiny geometry.
    model: Option<PathBuf>,
    /// The training texts.
    pairs: Pairs,
    /// Optimiser steps.
    steps: usize,
    /// Items per step, two per pair.
    batch: usize,
    /// Worker threads, the calling one included (the executor owns the others).
    threads: usize,
    /// Peak learning rate.
    learning_rate: f32,
    /// Seed of the weights, the masking and the sampling.
    seed: u64,
    /// Where the trained checkpoint goes.
    out: PathBuf,
}

fn main() {
    if let Err(error) = run() {
        eprintln!("train: {error}");
        std::process::exit(1);
    }
}

/// Parses the arguments; `None` when only the usage was asked for.
fn parse() -> Result<Option<Options>, Box<dyn Error>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut options = Options {
        model: None,
        pairs: Pairs::built_in(),
        steps: 300,
        batch: 16,
        threads: cores.max(2),
        learning_rate: 3e-3,
        seed: 42,
        out: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/target/train/tiny-trained.safetensors"
        )
        .into(),
    };
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        let mut value = |what: &str| arguments.next().ok_or(format!("{argument} needs {what}"));
        match argument.as_str() {
            "--model" => options.model = Some(value("a path")?.into()),
            "--lines" => {
                options.pairs = Pairs::from_lines(&std::fs::read_to_string(value("a path")?)?)
            }
            "--steps" => options.steps = value("a count")?.parse()?,
            "--batch" => options.batch = value("a count")?.parse()?,
            "--threads" => options.threads = value("a count")?.parse()?,
            "--lr" => options.learning_rate = value("a rate")?.parse()?,
            "--seed" => options.seed = value("a number")?.parse()?,
            "--out" => options.out = value("a path")?.into(),
            "--help" | "-h" => {
                println!("usage: train [--model PATH] [--lines FILE] [--steps N] [--batch ITEMS] [--threads N]");
                println!("             [--lr RATE] [--seed N] [--out PATH]");
                println!("--lines: one text per line, lines 1 and 2 a pair of paraphrases, 3 and 4 the next...");
                println!("--threads: workers, the calling thread included (default: one per core, at least 2)");
                return Ok(None);
            }
            _ => return Err(format!("unknown argument {argument:?}; try --help").into()),
        }
    }
    if options.batch < 4 || options.batch % 2 != 0 {
        return Err("--batch needs an even count of at least 4 (two pairs or more)".into());
    }
    if options.pairs.count() < 2 {
        return Err("training needs at least two pairs of texts".into());
    }
    if options.threads < 2 {
        return Err(
            "--threads needs at least 2: the trainer's executor owns a thread besides the caller"
                .into(),
        );
    }
    if options.steps == 0 {
        return Err("--steps needs at least one step".into());
    }
    Ok(Some(options))
}

/// The trainer's configuration: the joint objective over the options' checkpoint or the seeded tiny geometry.
fn config(options: &Options) -> TrainerInitRamConfig<'_> {
    let schedule = Schedule {
        steps: options.steps,
        warmup_steps: options.steps / 10,
        learning_rate: options.learning_rate,
        ..Schedule::default()
    };
    let common = TrainerInitRamConfig {
        objective: Objective::Joint,
        schedule,
        seed: options.seed,
        ..TrainerInitRamConfig::default()
    };
    match &options.model {
        Some(checkpoint) => TrainerInitRamConfig {
            checkpoint,
            ..common
        },
        None => TrainerInitRamConfig {
            depth: 2,
            hidden: 64,
            heads: 2,
            ffn_hidden: 192,
            dimensions: 64,
            late_interaction: LateInteraction {
                token_width: 32,
                ..LateInteraction::default()
            },
            choices: Choices {
                groups: 2,
                ..Choices::default()
            },
            ..common
        },
    }
}

/// Trains, saves, and compares the embeddings of step 0 and of the last step.
fn run() -> Result<(), Box<dyn Error>> {
    let Some(options) = parse()? else {
        return Ok(());
    };
    let executor = Executor::for_ram(&[], None, options.threads - 1)?;
    let trainer = Trainer::init_ram(&executor, config(&options))?;

    // The weights before any step, saved beside the output so that the inference loader can encode with them.
    if let Some(folder) = options.out.parent() {
        std::fs::create_dir_all(folder)?;
    }
    let step0 = options.out.with_extension("step0.safetensors");
    trainer.on(&executor).save(&step0)?;
    let description = Model::load_ram(&step0)?.describe()?;
    println!(
        "model: {}, depth {}, hidden {}, {} heads of {}, ffn {}, {} dimensions, token vectors of {}",
        options.model.as_deref().map_or("seeded".into(), |p| p.display().to_string()),
        description.depth,
        description.hidden,
        description.heads,
        description.head_dim,
        description.ffn_hidden,
        description.dimensions,
        description.token_width,
    );
    println!(
        "training: {} steps of {} items ({} pairs, one bag each) from {} pairs, masking + contrastive InfoNCE, \
         peak learning rate {:e}, {} threads",
        options.steps,
        options.batch,
        options.batch / 2,
        options.pairs.count(),
        options.learning_rate,
        options.threads,
    );

    let history = train(&trainer, &executor, &options)?;
    trainer.on(&executor).save(&options.out)?;
    report::losses(&history);
    println!(
        "saved: {} (step 0: {})",
        options.out.display(),
        step0.display()
    );

    report::similarities(&executor, &options.pairs, &step0, &options.out)?;
    Ok(())
}

/// Runs the steps, drawing each batch's pairs from `options.pairs`, and answers every step's stats.
fn train(
    trainer: &Trainer<'_>,
    executor: &Executor,
    options: &Options,
) -> Result<Vec<TrainerStepStats>, Box<dyn Error>> {
    let pairs_per_step = options.batch / 2;
    let modalities = vec![Modality::Text; options.batch];
    let bags: Vec<usize> = (0..options.batch).map(|item| item / 2).collect();
    let mut sampler = Sampler::new(options.pairs.count(), options.seed);
    let mut history = Vec::with_capacity(options.steps);
    let (mut tokens, mut nanoseconds) = (0usize, 0u64);
    for _ in 0..options.steps {
        let contents: Vec<&str> = sampler
            .draw(pairs_per_step)
            .into_iter()
            .flat_map(|pair| {
                options.pairs.texts[2 * pair..2 * pair + 2]
                    .iter()
                    .map(String::as_str)
            })
            .collect();
        let mut stats = TrainerStepStats::default();
        let config = TrainerStepConfig {
            bags: &bags,
            stats: Some(&mut stats),
            ..TrainerStepConfig::default()
        };
        trainer.on(executor).step(&modalities, &contents, config)?;
        tokens += stats.tokens;
        nanoseconds += stats.nanoseconds;
        eprint!(
            "\rstep {}/{}  loss {:.3} (masking {:.3}, contrastive {:.3})  gradient norm {:.3}  lr {:.2e}  {:.0} tokens/s ",
            stats.step + 1,
            options.steps,
            stats.loss,
            stats.masking_loss,
            stats.contrastive_loss,
            stats.gradient_norm,
            stats.learning_rate,
            tokens as f64 / (nanoseconds as f64 * 1e-9).max(1e-9),
        );
        let _ = std::io::stderr().flush();
        history.push(stats);
    }
    eprintln!();
    Ok(history)
}
