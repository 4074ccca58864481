//! The training run of issue 13: a small multimodal model trained on the CPU from the data `tools/data/prepare.py`
//! writes (WordNet synsets as bags, Fashion-MNIST images with captions, spoken lemmas and glosses, multiple-choice
//! items), with all four objectives at once: masked bytes, contrastive InfoNCE over bags and edges, late interaction
//! (lemmas query, glosses are documents) and choices. It prints a progress line (loss per term, tokens/s, ETA),
//! saves a checkpoint into the run directory every `--every` steps and at the end, with the validation split's loss
//! beside it, and appends every step to `log.tsv`. Started again with the same run directory, it resumes from the
//! last checkpoint: the step count and the schedule continue, and a step's batch depends on the seed and the step's
//! index alone, so the resumed run draws the batches the uninterrupted one would.
//!
//! With `--ranks N` the run is rank `--rank` of a data-parallel mesh of N processes (`Mesh::bootstrap` through the
//! shared directory `--exchange`, default `<run>/mesh`): every rank draws the same batch and trains on the bags that
//! fall to it (`share.rs`); rank 0 alone logs, saves, validates and calibrates.
//!
//! At the schedule's last step the run fits the choice temperature on the calibration split (`calibration.rs`)
//! before its final save. `wordnet evaluate` scores a checkpoint on the test split instead (`evaluate.rs`).
//!
//! ```sh
//! python3 tools/data/prepare.py                                   # once: target/data
//! cargo run --release --example wordnet                           # 50 steps into target/wordnet, ~1-2 min
//! cargo run --release --example wordnet -- --steps 3000 --minutes 55 --every 250
//! cargo run --release --example wordnet -- evaluate --model target/wordnet/checkpoint.safetensors
//! cargo run --release --example wordnet -- --ranks 2 --rank 0 --threads 2 & \
//!     cargo run --release --example wordnet -- --ranks 2 --rank 1 --threads 2; wait   # two processes, one mesh
//! ```

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use uform::*;

mod baseline;
mod calibration;
mod checkpoint;
mod data;
mod evaluate;
mod metrics;
mod report;
mod share;
mod tasks;

use data::{Batch, Data, Random, Recipe, Split};

/// The model's geometry when the run starts from seeded weights: about 3.4 M trunk parameters.
const DEPTH: usize = 4;
/// Trunk width.
const HIDDEN: usize = 256;
/// Attention heads.
const HEADS: usize = 4;
/// Feed-forward width.
const FFN_HIDDEN: usize = 768;
/// Embedding columns.
const DIMENSIONS: usize = 256;
/// Columns of the late-interaction token vectors.
const TOKEN_WIDTH: usize = 64;
/// Image patch side in pixels (a 28x28 image is 7x7 patches before the grid fills the row's budget).
const PATCH_SIDE: usize = 4;
/// The audio front-end's sample rate, the clips' own.
const SAMPLE_RATE: usize = 16_000;
/// Frames per video tubelet: the front-end is built so the checkpoint can embed clips, though no clip trains it yet.
const TUBELET_FRAMES: usize = 2;

/// Tokens per packed row by default: 98% of the texts fit in 127 bytes, and an image's grid fills a row (a 28x28 image
/// becomes 11x11 patches), so a shorter row makes every image cheaper. `wordnet evaluate` reads texts the same way.
const COLUMNS: usize = 128;

/// The stream of the validation batches' generator: the same batches at every validation, so the curve compares.
const VALIDATION_STREAM: u64 = u64::MAX;

/// The run directory's checkpoint, the one a restart resumes from.
const CHECKPOINT: &str = "checkpoint.safetensors";
/// Items a step's batch may hold when its recipe draws no more: the trainer's default, 64 rows of four.
const DEFAULT_SEGMENTS: usize = 256;
/// The copy of `--init` a stage with `--contrastive-scale` starts from, in the run directory.
const INIT_COPY: &str = "init.safetensors";

/// What the command line asked for.
struct Options {
    /// The data directory `tools/data/prepare.py` wrote.
    data: PathBuf,
    /// Where the checkpoint and the log go, and what a restart resumes from.
    run: PathBuf,
    /// Steps of the whole run (the schedule's length), counting those of earlier sessions.
    steps: usize,
    /// Wall-time budget of this session in minutes: past it, the run saves and stops.
    minutes: Option<f64>,
    /// Steps between checkpoints (each followed by the validation loss).
    every: usize,
    /// The step after which this session saves and stops, the schedule still `steps` long: a stage stopped where
    /// another begins, reproducibly.
    stop_at: Option<usize>,
    /// Keep a copy of every checkpoint saved, as `checkpoint-<step>.safetensors` beside the one a restart reads.
    keep: bool,
    /// Validation batches per validation.
    validation_batches: usize,
    /// How a batch is drawn.
    recipe: Recipe,
    /// Tokens per packed row: the longest text (longer ones are cut, longer choice items dropped), and the patches
    /// an image fills.
    columns: usize,
    /// Worker threads, the calling one included.
    threads: usize,
    /// Peak learning rate.
    learning_rate: f32,
    /// The masked-byte term's weight in the joint loss (the other terms weigh 1).
    masking_weight: f32,
    /// Seed of the weights, the masking and the batches.
    seed: u64,
    /// Start afresh even when the run directory holds a checkpoint.
    fresh: bool,
    /// A checkpoint whose weights a new run starts from, as a second stage: the schedule counts on from its steps.
    init: Option<PathBuf>,
    /// The contrastive scale a second stage starts at, written over the `--init` checkpoint's
    /// `trainer.contrastive.log_scale` (as its logarithm) in the copy the run starts from.
    contrastive_scale: Option<f32>,
    /// The contrastive bias a second stage starts at (`trainer.contrastive.bias`, which the sigmoid form alone reads),
    /// written over the `--init` checkpoint's in the same copy.
    contrastive_bias: Option<f32>,
    /// The contrastive term's pair loss: InfoNCE (the default) or the sigmoid form (MODEL.md, "Training").
    pair_loss: PairLossForm,
    /// Calibration items the final temperature fit takes, drawn with the seed; zero takes all.
    calibration: usize,
    /// Processes of the mesh the run trains over (one: no mesh), and this one's rank.
    ranks: usize,
    rank: usize,
    /// The directory the ranks meet in, and the address this rank listens at.
    exchange: Option<PathBuf>,
    hostname: String,
}

fn main() {
    let mut arguments = std::env::args().skip(1).peekable();
    let outcome = if arguments.peek().map(String::as_str) == Some("evaluate") {
        evaluate::run(arguments.skip(1))
    } else {
        run(arguments)
    };
    if let Err(error) = outcome {
        eprintln!("\nwordnet: {error}");
        std::process::exit(1);
    }
}

/// Parses the arguments; `None` when only the usage was asked for.
fn parse(mut arguments: impl Iterator<Item = String>) -> Result<Option<Options>, Box<dyn Error>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let target = concat!(env!("CARGO_MANIFEST_DIR"), "/target");
    let mut options = Options {
        data: Path::new(target).join("data"),
        run: Path::new(target).join("wordnet"),
        steps: 50,
        minutes: None,
        every: 25,
        stop_at: None,
        keep: false,
        validation_batches: 2,
        recipe: Recipe {
            groups: 34,
            images: 10,
            spoken: 2,
            per_group: 3,
            hard: 0.5,
            choices: 4,
            common: 0.75,
            floor: 1.0,
            cap: f64::INFINITY,
            hypernyms: 0.0,
            hypernym_weight: 0.35,
            articles: 0.25,
            class_images: 3,
            rare_senses: 0.0,
            rare_by_lemma: false,
            vocabulary: 0,
            vocabulary_common: None,
            supersense: 0.0,
            lemma_documents: 0.0,
            outliers: 0,
        },
        columns: COLUMNS,
        threads: cores.max(2),
        learning_rate: 2e-3,
        masking_weight: 1.0,
        seed: 13,
        fresh: false,
        init: None,
        contrastive_scale: None,
        contrastive_bias: None,
        pair_loss: PairLossForm::InfoNce,
        calibration: calibration::DEFAULT_ITEMS,
        ranks: 1,
        rank: 0,
        exchange: None,
        hostname: "127.0.0.1".to_owned(),
    };
    while let Some(argument) = arguments.next() {
        let mut value = |what: &str| arguments.next().ok_or(format!("{argument} needs {what}"));
        match argument.as_str() {
            "--data" => options.data = value("a directory")?.into(),
            "--run" => options.run = value("a directory")?.into(),
            "--steps" => options.steps = value("a count")?.parse()?,
            "--minutes" => options.minutes = Some(value("minutes")?.parse()?),
            "--every" => options.every = value("a count")?.parse()?,
            "--stop-at" => options.stop_at = Some(value("a step")?.parse()?),
            "--keep" => options.keep = true,
            "--validation-batches" => options.validation_batches = value("a count")?.parse()?,
            "--groups" => options.recipe.groups = value("a count")?.parse()?,
            "--images" => options.recipe.images = value("a count")?.parse()?,
            "--spoken" => options.recipe.spoken = value("a count")?.parse()?,
            "--per-group" => options.recipe.per_group = value("a count")?.parse()?,
            "--hard" => options.recipe.hard = value("a probability")?.parse()?,
            "--choices" => options.recipe.choices = value("a count")?.parse()?,
            "--common" => options.recipe.common = value("an exponent")?.parse()?,
            "--floor" => options.recipe.floor = value("a weight")?.parse()?,
            "--cap" => options.recipe.cap = value("a tag count")?.parse()?,
            "--hypernyms" => options.recipe.hypernyms = value("a probability")?.parse()?,
            "--hypernym-weight" => options.recipe.hypernym_weight = value("a weight")?.parse()?,
            "--articles" => options.recipe.articles = value("a probability")?.parse()?,
            "--class-images" => options.recipe.class_images = value("a count")?.parse()?,
            "--rare-senses" => options.recipe.rare_senses = value("a probability")?.parse()?,
            "--rare-by" => {
                options.recipe.rare_by_lemma = match value("lemma or synset")?.as_str() {
                    "lemma" => true,
                    "synset" => false,
                    other => {
                        return Err(format!("--rare-by takes lemma or synset, not {other:?}").into())
                    }
                }
            }
            "--vocabulary" => options.recipe.vocabulary = value("a count")?.parse()?,
            "--vocabulary-common" => {
                options.recipe.vocabulary_common = Some(value("an exponent")?.parse()?)
            }
            "--supersense" => options.recipe.supersense = value("a weight")?.parse()?,
            "--outliers" => options.recipe.outliers = value("a count")?.parse()?,
            "--lemma-documents" => {
                options.recipe.lemma_documents = value("a probability")?.parse()?
            }
            "--init" => options.init = Some(value("a checkpoint")?.into()),
            "--contrastive-scale" => options.contrastive_scale = Some(value("a scale")?.parse()?),
            "--contrastive-bias" => options.contrastive_bias = Some(value("a bias")?.parse()?),
            "--pair-loss" => options.pair_loss = value("info-nce or sigmoid")?.parse()?,
            "--columns" => options.columns = value("a count")?.parse()?,
            "--threads" => options.threads = value("a count")?.parse()?,
            "--lr" => options.learning_rate = value("a rate")?.parse()?,
            "--masking-weight" => options.masking_weight = value("a weight")?.parse()?,
            "--seed" => options.seed = value("a number")?.parse()?,
            "--fresh" => options.fresh = true,
            "--calibration" => options.calibration = value("a count")?.parse()?,
            "--ranks" => options.ranks = value("a count")?.parse()?,
            "--rank" => options.rank = value("an index")?.parse()?,
            "--exchange" => options.exchange = Some(value("a directory")?.into()),
            "--hostname" => options.hostname = value("an address")?,
            "--help" | "-h" => {
                println!(
                    "usage: wordnet [--data DIR] [--run DIR] [--steps N] [--minutes M] [--every N]"
                );
                println!("               [--stop-at STEP] [--keep]");
                println!("               [--validation-batches N] [--groups N] [--images N] [--spoken N]");
                println!("               [--per-group N] [--hard P] [--choices N] [--common E] [--articles P]");
                println!(
                    "               [--floor W] [--cap U] [--hypernyms P] [--hypernym-weight W]"
                );
                println!(
                    "               [--class-images N] [--rare-senses P] [--rare-by lemma|synset]"
                );
                println!(
                    "               [--vocabulary N] [--vocabulary-common E] [--supersense W] [--outliers N] \
                     [--lemma-documents P]"
                );
                println!("               [--init CHECKPOINT]");
                println!(
                    "               [--contrastive-scale S] [--contrastive-bias B] [--pair-loss FORM]"
                );
                println!("               [--columns N] [--threads N]");
                println!("               [--lr RATE] [--masking-weight W] [--seed N] [--fresh] [--calibration N]");
                println!(
                    "               [--ranks N --rank R [--exchange DIR] [--hostname ADDRESS]]"
                );
                println!("       wordnet evaluate --help");
                println!("--steps: the whole run's steps, earlier sessions' included (the schedule's length)");
                println!(
                    "--minutes: this session's budget; past it the run saves, validates and stops"
                );
                println!(
                    "--stop-at: save and stop after this step, the schedule still --steps long (a stage stopped \
                     where the next starts); --keep: keep every checkpoint saved as checkpoint-<step>.safetensors"
                );
                println!("--fresh: start from seeded weights even when --run holds a checkpoint");
                println!(
                    "--masking-weight: the masked-byte term's weight in the joint loss (default 1, as every other term)"
                );
                println!(
                    "--common, --floor, --cap: a synset is drawn with weight W + min(uses, U)^E, its uses the \
                     concordances' tag counts (defaults 0.75, 1, inf); --hypernyms: the chance of drawing a \
                     synset's hypernym beside it (default 0), their items attracting at --hypernym-weight (0.35); \
                     --articles: the share of noun and verb lemmas read as \"a cat\", \"to begin\" \
                     (default 0.25)"
                );
                println!(
                    "--class-images: images beside each class's caption (default 3); --rare-senses: the chance that \
                     a lemma in a rare sense of its word (\"cat\" in \"Caterpillar, cat\") may be drawn (default 0), \
                     rare by its synset's tag count (default) or by the lemma's own (--rare-by lemma)"
                );
                println!(
                    "--vocabulary: WordNet groups beside the others that take their lemmas alone (default 0), drawn \
                     with --common's exponent or --vocabulary-common's"
                );
                println!(
                    "--supersense: the attract weight between items of two noun or verb synsets of one WordNet \
                     lexicographer file (\"cat\" and \"feline\" are noun.animal) that no other edge joins \
                     (default 0: none)"
                );
                println!(
                    "--outliers: synthetic pictures that are not garments (outliers.tsv) a batch, each a negative \
                     alone in a bag of its own (default 0)"
                );
                println!(
                    "--lemma-documents: the chance that a group's canonical lemma is a late-interaction document, \
                     which its synonyms query by MaxSim, rather than a query (default 0)"
                );
                println!(
                    "--init: start a new run from this checkpoint's weights, a second stage: its schedule runs from \
                     the checkpoint's steps to --steps at the peak --lr, then cosine, without warm-up"
                );
                println!(
                    "--contrastive-scale: with --init, the contrastive scale the stage starts at (0 < S <= 100), \
                     written as ln S over the checkpoint's trainer.contrastive.log_scale in <run>/init.safetensors; \
                     trained on from there (default: the checkpoint's own)"
                );
                println!(
                    "--contrastive-bias: with --init, the contrastive bias the stage starts at (|B| <= 100), written \
                     over trainer.contrastive.bias in the same copy; --pair-loss: the contrastive term's form, {} \
                     (default {})",
                    PairLossForm::ALL
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(" or "),
                    PairLossForm::InfoNce
                );
                println!(
                    "--ranks, --rank: train as rank R of N processes over a mesh met in --exchange (default \
                     <run>/mesh), listening at --hostname (default 127.0.0.1); every rank takes the same options"
                );
                println!(
                    "--calibration: calibration items the final temperature fit takes (default {}; 0: all)",
                    calibration::DEFAULT_ITEMS
                );
                return Ok(None);
            }
            _ => return Err(format!("unknown argument {argument:?}; try --help").into()),
        }
    }
    if options.steps == 0 || options.every == 0 {
        return Err("--steps and --every need at least one step".into());
    }
    if let Some(stop) = options.stop_at {
        if stop == 0 || stop > options.steps {
            return Err(format!(
                "--stop-at takes a step from 1 to --steps ({}), not {stop}",
                options.steps
            )
            .into());
        }
    }
    if options.threads < 2 {
        return Err(
            "--threads needs at least 2: the executor owns a thread besides the caller".into(),
        );
    }
    if let Some(bias) = options.contrastive_bias {
        if options.init.is_none() {
            return Err(
                "--contrastive-bias needs --init: it rewrites the starting checkpoint's bias"
                    .into(),
            );
        }
        if bias.is_nan() || bias.abs() > 100.0 {
            return Err(
                format!("--contrastive-bias takes a bias in [-100, 100], not {bias}").into(),
            );
        }
    }
    if let Some(scale) = options.contrastive_scale {
        if options.init.is_none() {
            return Err(
                "--contrastive-scale needs --init: it rewrites the starting checkpoint's scale"
                    .into(),
            );
        }
        if !(scale > 0.0 && scale <= 100.0) {
            return Err(
                format!("--contrastive-scale takes a scale in (0, 100], not {scale}").into(),
            );
        }
    }
    if options.ranks == 0 || options.rank >= options.ranks {
        return Err("--rank must be below --ranks, which needs at least one process".into());
    }
    if options.ranks > 1 && options.minutes.is_some() {
        return Err(
            "--minutes cannot stop a mesh's ranks at the same step: bound a mesh run by --steps"
                .into(),
        );
    }
    // The trainer refuses negative and non-finite weights itself; zero it would read as its default of 1.
    if options.masking_weight == 0.0 {
        return Err(
            "--masking-weight 0 would train as 1 (the trainer's default): give a positive weight"
                .into(),
        );
    }
    if options.columns < 2 {
        return Err("--columns needs room for a byte and a choice's CHOOSE token".into());
    }
    if options.recipe.per_group < 2 || options.recipe.groups <= options.recipe.images {
        return Err(
            "a batch needs two items per group and WordNet groups besides the images".into(),
        );
    }
    if !(options.recipe.floor > 0.0 && options.recipe.cap >= 0.0) {
        return Err(
            "--floor must be positive (a synset weighing nothing could never fill a batch) and --cap at least 0"
                .into(),
        );
    }
    Ok(Some(options))
}

/// The trainer's configuration: the four objectives over the seeded geometry, or over `checkpoint` when it is not
/// empty (its geometry is the same: a restart names the values the checkpoint holds).
fn config<'a>(
    options: &Options,
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
            form: options.pair_loss,
            ..Contrastive::default()
        },
        masking: Masking {
            weight: options.masking_weight,
            ..Masking::default()
        },
        batch: BatchShape {
            // The trainer's default (64 rows, four items a row) unless the recipe can draw more items than that.
            max_segments_per_device: options.recipe.max_items().max(DEFAULT_SEGMENTS),
            max_columns_per_row: options.columns,
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
        },
        late_interaction: LateInteraction {
            token_width: TOKEN_WIDTH,
            ..LateInteraction::default()
        },
        choices: Choices {
            groups: 1,
            ..Choices::default()
        },
        schedule,
        seed: options.seed,
    }
}

/// The step's stats' terms, in the order the progress line and the log print them.
fn terms(stats: &TrainerStepStats) -> [f32; 5] {
    [
        stats.loss,
        stats.masking_loss,
        stats.contrastive_loss,
        stats.late_interaction_loss,
        stats.choices_loss,
    ]
}

/// The terms as `loss (masking, contrastive, late, choices)`.
fn show(terms: &[f32; 5]) -> String {
    format!(
        "loss {:.3} (masking {:.3}, contrastive {:.3}, late {:.3}, choices {:.3})",
        terms[0], terms[1], terms[2], terms[3], terms[4]
    )
}

/// `h:mm:ss`.
fn clock(duration: Duration) -> String {
    let seconds = duration.as_secs();
    format!(
        "{}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// Runs one step over `batch`, answering its stats.
fn step(
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
fn validate(
    executor: &Executor,
    options: &Options,
    checkpoint: &Path,
    batches: &[Batch],
) -> Result<[f32; 5], Box<dyn Error>> {
    let frozen = Schedule {
        steps: 1,
        warmup_steps: 1,
        learning_rate: 1e-30,
        min_learning_rate: 1e-30,
        ..Schedule::default()
    };
    let trainer = Trainer::init_ram(executor, config(options, checkpoint, frozen, None))?;
    let mut sums = [0f32; 5];
    for batch in batches {
        let stats = step(&trainer, executor, batch)?;
        for (sum, term) in sums.iter_mut().zip(terms(&stats)) {
            *sum += term / batches.len() as f32;
        }
    }
    Ok(sums)
}

/// Loads the data, resumes or seeds the trainer, and trains, saves and validates until the steps or the minutes run
/// out.
fn run(arguments: impl Iterator<Item = String>) -> Result<(), Box<dyn Error>> {
    let Some(options) = parse(arguments)? else {
        return Ok(());
    };
    let opened = Instant::now();
    let recipe = options.recipe;
    let data = Data::load(
        &options.data,
        options.columns - 1,
        [&|uses| recipe.weight(uses), &|uses| {
            recipe.vocabulary_weight(uses)
        }],
    )?;
    let (groups, items, edges, choices) = data.counts();
    println!(
        "data: {} ({groups} groups, {items} items, {edges} attract/repel edges, {choices} choice items; \
         {} texts cut to {} bytes, {} longer choice items dropped) read in {:.1} s",
        options.data.display(),
        data.cut_texts,
        options.columns - 1,
        data.dropped_choices,
        opened.elapsed().as_secs_f64(),
    );

    std::fs::create_dir_all(&options.run)?;
    let checkpoint = options.run.join(CHECKPOINT);
    let resume = !options.fresh && checkpoint.exists();
    // The optimiser steps a checkpoint took: its `trainer.step` tensor (F32 [1], MODEL.md). A second stage (`--init`)
    // starts where its first ended, and its schedule goes from there at the peak rate.
    let stage = options
        .init
        .as_deref()
        .map(|init| checkpoint::scalar(init, "trainer.step", 0))
        .transpose()?
        .map(|steps| steps as usize);
    let rewrites: Vec<(&str, f32)> = [
        (
            "trainer.contrastive.log_scale",
            options.contrastive_scale.map(f32::ln),
        ),
        ("trainer.contrastive.bias", options.contrastive_bias),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name, value?)))
    .collect();
    let start_from = match &options.init {
        _ if resume => checkpoint.clone(),
        Some(init) if !rewrites.is_empty() => {
            let copy = options.run.join(INIT_COPY);
            checkpoint::write_with_scalars(init, &rewrites, &copy)?;
            copy
        }
        Some(init) => init.clone(),
        None => PathBuf::new(),
    };
    let first = if resume {
        checkpoint::scalar(&checkpoint, "trainer.step", 0)? as usize
    } else {
        stage.unwrap_or(0)
    };
    if first >= options.steps || options.stop_at.is_some_and(|stop| first >= stop) {
        println!(
            "{} already took {first} of {} steps: nothing to do",
            start_from.display(),
            options.stop_at.unwrap_or(options.steps)
        );
        return Ok(());
    }
    let schedule = Schedule {
        steps: options.steps,
        warmup_steps: stage.unwrap_or(options.steps / 10).max(1),
        learning_rate: options.learning_rate,
        ..Schedule::default()
    };
    let executor = Executor::for_ram(&[], None, options.threads - 1)?;
    let exchange = options
        .exchange
        .clone()
        .unwrap_or_else(|| options.run.join("mesh"));
    let mesh = if options.ranks > 1 {
        std::fs::create_dir_all(&exchange)?;
        println!(
            "mesh: rank {} of {}, meeting in {}",
            options.rank,
            options.ranks,
            exchange.display()
        );
        Some(Mesh::bootstrap(
            &executor,
            &MeshOptions {
                host_domain_index: options.rank,
                host_domain_count: options.ranks,
                directory: &exchange,
                job: "wordnet",
                timeout_seconds: 600,
                hostname: &options.hostname,
            },
        )?)
    } else {
        None
    };
    let leader = options.rank == 0;
    let trainer = Trainer::init_ram(
        &executor,
        config(&options, &start_from, schedule, mesh.as_ref()),
    )?;
    let recipe = &options.recipe;
    let origin = if resume {
        format!("resumed at step {first} from {}", checkpoint.display())
    } else if let Some(init) = &options.init {
        format!("from the weights of {} (step {first})", init.display())
    } else {
        "from seeded weights".to_owned()
    };
    println!(
        "model: depth {DEPTH}, hidden {HIDDEN}, {HEADS} heads, ffn {FFN_HIDDEN}, {DIMENSIONS} dimensions, token \
         vectors of {TOKEN_WIDTH}; image patches of {PATCH_SIDE}, audio at {SAMPLE_RATE} Hz, rows of {} columns",
        options.columns
    );
    println!(
        "run: {} steps {} ({} train synsets; a batch: {} groups, {} of them image classes and {} spoken, up to {} \
         items each, {} images per class, {} choice items; synsets drawn by {} + min(uses, {})^{}, hypernyms beside at {} \
         attracting at {}, articles on {} of lemmas, rare senses at {} by the {}'s uses, {} vocabulary groups drawn by min(uses, {})^{}, lexicographer files attracting at {}, canonical lemmas documents at {}, {} outlier pictures), masked bytes weighing {}, peak learning rate {:e}, {} threads, seed {}",
        options.steps,
        origin,
        data.wordnet_groups(Split::Train),
        recipe.groups,
        recipe.images,
        recipe.spoken,
        recipe.per_group,
        recipe.class_images,
        recipe.choices,
        recipe.floor,
        recipe.cap,
        recipe.common,
        recipe.hypernyms,
        recipe.hypernym_weight,
        recipe.articles,
        recipe.rare_senses,
        if recipe.rare_by_lemma { "lemma" } else { "synset" },
        recipe.vocabulary,
        recipe.cap,
        recipe.vocabulary_common.unwrap_or(recipe.common),
        recipe.supersense,
        recipe.lemma_documents,
        recipe.outliers,
        options.masking_weight,
        options.learning_rate,
        options.threads,
        options.seed,
    );

    let validation: Vec<Batch> = (0..options.validation_batches as u64)
        .map(|b| {
            data.batch(
                &mut Random::new(options.seed ^ VALIDATION_STREAM, b),
                Split::Validation,
                recipe,
            )
        })
        .collect::<Result<_, _>>()?;
    let log_path = options.run.join(if leader {
        "log.tsv".to_owned()
    } else {
        format!("log.rank{}.tsv", options.rank)
    });
    let fresh_log = !resume || !log_path.exists();
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(resume)
        .truncate(!resume)
        .open(&log_path)?;
    if fresh_log {
        writeln!(
            log,
            "#steps\tsplit\tloss\tmasking\tcontrastive\tlate_interaction\tchoices\ttokens\tseconds"
        )?;
    }

    let started = Instant::now();
    let deadline = options.minutes.map(|m| Duration::from_secs_f64(m * 60.0));
    let (mut tokens, mut nanoseconds) = (0usize, 0u64);
    let mut last_saved = first;
    for index in first..options.steps {
        let mut batch = data.batch(
            &mut Random::new(options.seed, index as u64),
            Split::Train,
            recipe,
        )?;
        if options.ranks > 1 {
            batch = share::share(&batch, options.rank, options.ranks).0;
        }
        let stats = step(&trainer, &executor, &batch)?;
        tokens += stats.tokens;
        nanoseconds += stats.nanoseconds;
        let done = index + 1;
        let elapsed = started.elapsed();
        let per_step = elapsed / (done - first) as u32;
        let mut left = per_step * (options.steps - done) as u32;
        if let Some(deadline) = deadline {
            left = left.min(deadline.saturating_sub(elapsed));
        }
        let seconds = stats.nanoseconds as f64 * 1e-9;
        writeln!(
            log,
            "{done}\ttrain\t{}\t{}\t{seconds:.3}",
            terms(&stats).map(|t| t.to_string()).join("\t"),
            stats.tokens
        )?;
        let stop_here = options.stop_at == Some(done);
        if !leader {
            last_saved = done; // rank 0 saves; this rank's steps are in its log
            if stop_here {
                break;
            }
            continue;
        }
        eprint!(
            "\rstep {done}/{}  {}  lr {:.1e}  {:.0} tokens/s  {} elapsed, ETA {} ",
            options.steps,
            show(&terms(&stats)),
            stats.learning_rate,
            tokens as f64 / (nanoseconds as f64 * 1e-9).max(1e-9),
            clock(elapsed),
            clock(left),
        );
        let _ = std::io::stderr().flush();
        let out_of_time = deadline.is_some_and(|deadline| elapsed >= deadline);
        if done % options.every == 0 || done == options.steps || out_of_time || stop_here {
            if done == options.steps {
                let stats = calibration::calibrate(
                    &trainer,
                    &executor,
                    &data,
                    options.calibration,
                    options.seed,
                )?;
                eprintln!();
                println!(
                    "calibrated the choice temperature on {} held-out items: cross-entropy {:.4} at T = 1, {:.4} \
                     fitted",
                    stats.items, stats.loss_before, stats.loss_after
                );
            }
            trainer.on(&executor).save(&checkpoint)?;
            if options.keep {
                std::fs::copy(
                    &checkpoint,
                    options.run.join(format!("checkpoint-{done}.safetensors")),
                )?;
            }
            last_saved = done;
            let loss = validate(&executor, &options, &checkpoint, &validation)?;
            eprintln!();
            println!(
                "step {done}: saved {}; validation {}",
                checkpoint.display(),
                show(&loss)
            );
            writeln!(
                log,
                "{done}\tvalidation\t{}\t0\t0",
                loss.map(|t| t.to_string()).join("\t")
            )?;
            log.flush()?;
        }
        if out_of_time {
            println!(
                "the {} minute budget is spent: run again to resume from step {done}",
                options.minutes.unwrap_or(0.0)
            );
            break;
        }
        if stop_here {
            println!(
                "stopped after step {done} (--stop-at); the schedule runs to {}",
                options.steps
            );
            break;
        }
    }
    println!(
        "trained steps {first}..{last_saved} in {} ({:.0} tokens/s in the trainer); log: {}",
        clock(started.elapsed()),
        tokens as f64 / (nanoseconds as f64 * 1e-9).max(1e-9),
        log_path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn parsed(arguments: &[&str]) -> Result<super::Options, String> {
        parse(arguments.iter().map(|a| (*a).to_owned()))
            .map(|options| options.expect("not --help"))
            .map_err(|error| error.to_string())
    }

    #[test]
    fn stop_at_takes_a_step_of_the_schedule() {
        let options = parsed(&["--steps", "100", "--stop-at", "60", "--keep"]).unwrap();
        assert_eq!(
            (options.steps, options.stop_at, options.keep),
            (100, Some(60), true)
        );
        assert_eq!(
            parsed(&["--steps", "100", "--stop-at", "100"])
                .unwrap()
                .stop_at,
            Some(100)
        );
        assert!(parsed(&[]).unwrap().stop_at.is_none() && !parsed(&[]).unwrap().keep);
        for refused in [
            ["--steps", "100", "--stop-at", "0"],
            ["--steps", "100", "--stop-at", "101"],
        ] {
            let error = parsed(&refused).err().expect("refused");
            assert!(
                error.contains("--stop-at takes a step from 1 to --steps (100)"),
                "{error}"
            );
        }
    }
}
