//! A training stage after its recipe: it loads the data, starts from seeded weights, from `--model` (a later stage:
//! the schedule counts on from its `trainer.step`) or, with `--resume`, from the run directory's checkpoint, and
//! trains, saving a checkpoint every `every` steps and at the end with the validation loss beside it, appending every
//! step to `log.tsv`. A step's batch depends on the seed and the step's index alone, so a resumed run draws the
//! batches the uninterrupted one would. At the schedule's last step the run fits the choice temperature on the
//! calibration split (`calibration.rs`) before its final save.
//!
//! With `--ranks N` the run is rank `--rank` of a data-parallel mesh of N processes (`Mesh::bootstrap` through the
//! shared directory `--exchange`, default `<out>/mesh`): every rank draws the same batch and trains on the bags that
//! fall to it (`share.rs`); rank 0 alone logs the progress, saves, validates and calibrates.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use uform::*;

use crate::calibration;
use crate::checkpoint;
use crate::data::{Batch, Data, Random, Split};
use crate::progress::{self, Log};
use crate::recipe::Recipe;
use crate::share;
use crate::trainer::{
    self, DEPTH, DIMENSIONS, FFN_HIDDEN, HEADS, HIDDEN, PATCH_SIDE, SAMPLE_RATE, TOKEN_WIDTH,
};
use crate::TrainArgs;

/// The run directory's checkpoint, the one `--resume` continues from.
const CHECKPOINT: &str = "checkpoint.safetensors";
/// The copy of `--model` a stage with a contrastive scale or bias starts from, in the run directory.
const INIT_COPY: &str = "init.safetensors";
/// The stream of the validation batches' generator: the same batches at every validation, so the curve compares.
pub const VALIDATION_STREAM: u64 = u64::MAX;

/// A stage's settings: its recipe and the command line's files and session.
struct Stage {
    /// The recipe.
    recipe: Recipe,
    /// The data directory.
    data: PathBuf,
    /// The run directory.
    out: PathBuf,
    /// The checkpoint the stage starts from, when not seeded.
    model: Option<PathBuf>,
    /// Continue from the run directory's checkpoint.
    resume: bool,
    /// Steps this session trains at most.
    session: Option<usize>,
    /// Worker threads, the calling one included.
    threads: usize,
    /// Processes of the mesh (one: no mesh), and this one's rank.
    ranks: usize,
    /// This process's rank.
    rank: usize,
    /// The directory the ranks meet in.
    exchange: PathBuf,
    /// The address this rank listens at.
    hostname: String,
}

/// Where a stage starts: the weights, the step, and the schedule's warm-up.
struct Start {
    /// The checkpoint the trainer loads; empty: seeded weights.
    from: PathBuf,
    /// The steps already taken.
    first: usize,
    /// The steps `--model` had taken, a later stage's start (no warm-up: the schedule starts at the peak rate).
    stage: Option<usize>,
    /// How the progress reads it.
    origin: String,
}

/// Trains a stage after `arguments`.
pub fn run(arguments: &TrainArgs) -> Result<(), Box<dyn Error>> {
    let stage = Stage::new(arguments)?;
    std::fs::create_dir_all(&stage.out)?;
    let Some(start) = stage.start()? else {
        return Ok(());
    };
    let opened = Instant::now();
    let data = load_data(&stage.data, &stage.recipe)?;
    println!(
        "data: {} ({}) read in {:.1} s",
        stage.data.display(),
        describe_data(&data, stage.recipe.columns),
        opened.elapsed().as_secs_f64()
    );
    let schedule = Schedule {
        steps: stage.recipe.steps,
        warmup_steps: start.stage.unwrap_or(stage.recipe.steps / 10).max(1),
        learning_rate: stage.recipe.learning_rate,
        ..Schedule::default()
    };
    let executor = Executor::for_ram(&[], None, stage.threads - 1)?;
    let mesh = stage.join_mesh(&executor)?;
    let config = trainer::config(&stage.recipe, &start.from, schedule, mesh.as_ref());
    let trainer = Trainer::init_ram(&executor, config)?;
    stage.describe(&data, &start);
    let validation = (0..stage.recipe.validation_batches as u64)
        .map(|b| {
            let mut random = Random::new(stage.recipe.seed ^ VALIDATION_STREAM, b);
            data.batch(&mut random, Split::Validation, &stage.recipe.batch)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let log = Log::open(&stage.out, stage.rank, stage.resume)?;
    let mut session = Session {
        stage: &stage,
        data: &data,
        executor: &executor,
        trainer: &trainer,
        validation,
        log,
        started: Instant::now(),
        tokens: 0,
        nanoseconds: 0,
    };
    session.train(start.first)
}

/// Reads the data directory with the recipe's draw weights and row length, and the teacher's rows when the recipe
/// trains distillation (a directory without them is then refused).
pub fn load_data(root: &Path, recipe: &Recipe) -> Result<Data, Box<dyn Error>> {
    let batch = &recipe.batch;
    let mut data = Data::load(
        root,
        recipe.columns - 1,
        [&|uses| batch.weight(uses), &|uses| {
            batch.vocabulary_weight(uses)
        }],
    )?;
    if recipe.distill_weight > 0.0 {
        data.load_teacher(recipe.columns - 1)?;
    }
    Ok(data)
}

/// The data's counts for the opening line.
fn describe_data(data: &Data, columns: usize) -> String {
    let (groups, items, edges, choices) = data.counts();
    let teacher = data.teacher_counts().map_or(String::new(), |(rows, texts, extras, dropped, families)| {
        format!(
            "; teacher: {rows} rows of {}, {texts} items with one, {extras} other texts ({dropped} longer dropped), \
             {families} sentence families",
            data.teacher_width().unwrap_or(0)
        )
    });
    format!(
        "{groups} groups, {items} items, {edges} attract/repel edges, {choices} choice items; {} texts cut to {} \
         bytes, {} longer choice items dropped{teacher}",
        data.cut_texts,
        columns - 1,
        data.dropped_choices
    )
}

impl Stage {
    /// The stage the command line asks for: its recipe read and checked, the defaults filled in.
    fn new(arguments: &TrainArgs) -> Result<Self, Box<dyn Error>> {
        let path = arguments.recipe.clone().unwrap_or_else(crate::smoke_recipe);
        let recipe = Recipe::read(&path)?;
        let name = path
            .file_stem()
            .map_or("run".into(), |stem| stem.to_string_lossy().into_owned());
        let out = arguments
            .out
            .clone()
            .unwrap_or_else(|| crate::target().join("train").join(name));
        let (ranks, rank) = (arguments.ranks as usize, arguments.rank as usize);
        if rank >= ranks {
            return Err("--rank must be below --ranks".into());
        }
        if ranks > 1 && recipe.minutes.is_some() {
            return Err(
                "a recipe's minutes cannot stop a mesh's ranks at the same step: bound it by steps"
                    .into(),
            );
        }
        if arguments.model.is_none()
            && (recipe.contrastive_scale.is_some() || recipe.contrastive_bias.is_some())
        {
            return Err(
                "contrastive_scale and contrastive_bias rewrite a --model checkpoint: give one"
                    .into(),
            );
        }
        Ok(Self {
            data: arguments
                .data
                .clone()
                .unwrap_or_else(|| crate::target().join("data")),
            exchange: arguments
                .exchange
                .clone()
                .unwrap_or_else(|| out.join("mesh")),
            out,
            model: arguments.model.clone(),
            resume: arguments.resume,
            session: arguments.steps.map(|steps| steps as usize),
            threads: arguments
                .threads
                .map_or_else(crate::default_threads, |threads| threads as usize),
            ranks,
            rank,
            hostname: arguments.hostname.clone(),
            recipe,
        })
    }

    /// Where the stage starts, after checking `--resume` against the run directory and `--model` against the
    /// recipe's `from_step`; `None` when the run has trained its steps already.
    fn start(&self) -> Result<Option<Start>, Box<dyn Error>> {
        let checkpoint = self.out.join(CHECKPOINT);
        match (self.resume, checkpoint.exists()) {
            (false, true) => {
                return Err(format!(
                    "{} holds a checkpoint: --resume continues it, or give another --out",
                    self.out.display()
                )
                .into())
            }
            (true, false) => {
                return Err(format!("--resume: {} does not exist", checkpoint.display()).into())
            }
            _ => {}
        }
        let stage = self.model_step()?;
        let (from, first, origin) = if self.resume {
            let first = checkpoint::scalar(&checkpoint, "trainer.step", 0)? as usize;
            let origin = format!("resumed at step {first} from {}", checkpoint.display());
            (checkpoint, first, origin)
        } else if let Some(model) = &self.model {
            let first = stage.unwrap_or(0);
            let origin = format!("from the weights of {} (step {first})", model.display());
            (self.rewritten(model)?, first, origin)
        } else {
            (PathBuf::new(), 0, "from seeded weights".to_owned())
        };
        if first >= self.recipe.last_step() {
            println!(
                "{} already took {first} of {} steps: nothing to do",
                from.display(),
                self.recipe.last_step()
            );
            return Ok(None);
        }
        Ok(Some(Start {
            from,
            first,
            stage,
            origin,
        }))
    }

    /// The steps `--model` took (its `trainer.step`), checked against the recipe's `from_step`.
    fn model_step(&self) -> Result<Option<usize>, Box<dyn Error>> {
        let step = self
            .model
            .as_deref()
            .map(|model| checkpoint::scalar(model, "trainer.step", 0))
            .transpose()?
            .map(|steps| steps as usize);
        match (self.recipe.from_step, step) {
            (Some(expected), Some(step)) if expected != step => Err(format!(
                "the recipe starts from a checkpoint at step {expected}, but --model holds step {step}"
            )
            .into()),
            (Some(expected), None) => {
                Err(format!("the recipe starts from a checkpoint at step {expected}: give it as --model").into())
            }
            _ => Ok(step),
        }
    }

    /// `model`, or its copy in the run directory with the recipe's contrastive scale (as its logarithm) and bias
    /// written over its own, every other byte unchanged.
    fn rewritten(&self, model: &Path) -> Result<PathBuf, Box<dyn Error>> {
        let rewrites: Vec<(&str, f32)> = [
            (
                "trainer.contrastive.log_scale",
                self.recipe.contrastive_scale.map(f32::ln),
            ),
            ("trainer.contrastive.bias", self.recipe.contrastive_bias),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
        .collect();
        if rewrites.is_empty() {
            return Ok(model.to_owned());
        }
        let copy = self.out.join(INIT_COPY);
        checkpoint::write_with_scalars(model, &rewrites, &copy)?;
        Ok(copy)
    }

    /// The mesh of `--ranks` processes, met in `--exchange`; `None` for one process.
    fn join_mesh(&self, executor: &Executor) -> Result<Option<Mesh>, Box<dyn Error>> {
        if self.ranks == 1 {
            return Ok(None);
        }
        std::fs::create_dir_all(&self.exchange)?;
        println!(
            "mesh: rank {} of {}, meeting in {}",
            self.rank,
            self.ranks,
            self.exchange.display()
        );
        let options = MeshOptions {
            host_domain_index: self.rank,
            host_domain_count: self.ranks,
            directory: &self.exchange,
            job: "uform-train",
            timeout_seconds: 600,
            hostname: &self.hostname,
        };
        Ok(Some(Mesh::bootstrap(executor, &options)?))
    }

    /// Prints the model's geometry and the stage's recipe.
    fn describe(&self, data: &Data, start: &Start) {
        let (recipe, batch) = (&self.recipe, &self.recipe.batch);
        println!(
            "model: depth {DEPTH}, hidden {HIDDEN}, {HEADS} heads, ffn {FFN_HIDDEN}, {DIMENSIONS} dimensions, token \
             vectors of {TOKEN_WIDTH}; image patches of {PATCH_SIDE}, audio at {SAMPLE_RATE} Hz, rows of {} columns",
            recipe.columns
        );
        if !recipe.description.is_empty() {
            println!("recipe: {}", recipe.description);
        }
        println!(
            "run: {} steps {} ({} train synsets), stopping after step {}, saving every {}; a batch: {batch:?}; {:?} \
             pair loss, masked bytes weighing {}, distillation weighing {} (temperatures {} student, {} teacher), peak \
             learning rate {:e}, {} threads, seed {}",
            recipe.steps,
            start.origin,
            data.wordnet_groups(Split::Train),
            self.last_step(start.first),
            recipe.every,
            recipe.pair_loss,
            recipe.masking_weight,
            recipe.distill_weight,
            recipe.student_temperature,
            recipe.teacher_temperature,
            recipe.learning_rate,
            self.threads,
            recipe.seed,
        );
    }

    /// The step this session stops after: the recipe's last, or sooner by `--steps`.
    fn last_step(&self, first: usize) -> usize {
        let last = self.recipe.last_step();
        self.session.map_or(last, |steps| last.min(first + steps))
    }
}

/// A session of training: the stage, what it trains with, and the throughput so far.
struct Session<'a> {
    /// The stage.
    stage: &'a Stage,
    /// The data batches are drawn from.
    data: &'a Data,
    /// The executor every call runs on.
    executor: &'a Executor,
    /// The trainer.
    trainer: &'a Trainer<'a>,
    /// The fixed validation batches.
    validation: Vec<Batch>,
    /// This rank's log.
    log: Log,
    /// When the training loop started.
    started: Instant,
    /// Tokens trained on in this session.
    tokens: usize,
    /// Time the trainer spent on them.
    nanoseconds: u64,
}

impl Session<'_> {
    /// Trains from step `first` until the session's last step or the recipe's minutes, saving as it goes.
    fn train(&mut self, first: usize) -> Result<(), Box<dyn Error>> {
        let recipe = &self.stage.recipe;
        let last = self.stage.last_step(first);
        let deadline = recipe.minutes.map(|m| Duration::from_secs_f64(m * 60.0));
        let mut done = first;
        for index in first..last {
            let stats = self.step(index)?;
            done = index + 1;
            self.log.step(done, &stats)?;
            if self.stage.rank != 0 {
                continue; // rank 0 saves; this rank's steps are in its log
            }
            let elapsed = self.started.elapsed();
            let mut left = elapsed / (done - first) as u32 * (recipe.steps - done) as u32;
            if let Some(deadline) = deadline {
                left = left.min(deadline.saturating_sub(elapsed));
            }
            let rate = progress::throughput(self.tokens, self.nanoseconds);
            progress::line(done, recipe.steps, &stats, rate, elapsed, left);
            let out_of_time = deadline.is_some_and(|deadline| elapsed >= deadline);
            if done % recipe.every == 0 || done == recipe.steps || out_of_time || done == last {
                self.save(done)?;
            }
            if out_of_time {
                println!(
                    "the recipe's {} minute budget is spent: --resume goes on from step {done}",
                    recipe.minutes.unwrap_or(0.0)
                );
                break;
            }
        }
        self.stopped(first, done, last);
        Ok(())
    }

    /// Draws step `index`'s batch (this rank's share of it over a mesh) and trains on it.
    fn step(&mut self, index: usize) -> Result<TrainerStepStats, Box<dyn Error>> {
        let recipe = &self.stage.recipe;
        let mut random = Random::new(recipe.seed, index as u64);
        let mut batch = self.data.batch(&mut random, Split::Train, &recipe.batch)?;
        if self.stage.ranks > 1 {
            batch = share::share(&batch, self.stage.rank, self.stage.ranks).0;
        }
        let stats = trainer::step(self.trainer, self.executor, &batch)?;
        self.tokens += stats.tokens;
        self.nanoseconds += stats.nanoseconds;
        Ok(stats)
    }

    /// Saves the checkpoint after step `done` (calibrated first at the schedule's end, kept aside when the recipe
    /// keeps every one) and logs its validation loss.
    fn save(&mut self, done: usize) -> Result<(), Box<dyn Error>> {
        let (stage, recipe) = (self.stage, &self.stage.recipe);
        if done == recipe.steps {
            let stats = calibration::calibrate(
                self.trainer,
                self.executor,
                self.data,
                recipe.calibration,
                recipe.seed,
            )?;
            eprintln!();
            println!(
                "calibrated the choice temperature on {} held-out items: cross-entropy {:.4} at T = 1, {:.4} fitted",
                stats.items, stats.loss_before, stats.loss_after
            );
        }
        let checkpoint = stage.out.join(CHECKPOINT);
        self.trainer.on(self.executor).save(&checkpoint)?;
        if recipe.keep {
            let kept = stage.out.join(format!("checkpoint-{done}.safetensors"));
            std::fs::copy(&checkpoint, kept)?;
        }
        let loss = trainer::validate(self.executor, recipe, &checkpoint, &self.validation)?;
        eprintln!();
        println!(
            "step {done}: saved {}; validation {}",
            checkpoint.display(),
            trainer::show(&loss)
        );
        self.log.validation(done, &loss)
    }

    /// The session's last lines: why it stopped where it did, and its throughput.
    fn stopped(&self, first: usize, done: usize, last: usize) {
        let recipe = &self.stage.recipe;
        if done == last && last < recipe.steps {
            let why = if last == recipe.last_step() {
                "the recipe's stop_at"
            } else {
                "--steps"
            };
            println!(
                "stopped after step {done} ({why}); the schedule runs to {}",
                recipe.steps
            );
        }
        println!(
            "trained steps {first}..{done} in {} ({:.0} tokens/s in the trainer); log: {}",
            progress::clock(self.started.elapsed()),
            progress::throughput(self.tokens, self.nanoseconds),
            self.log.path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkpoint holding only the trainer's F32 scalars the start reads and rewrites.
    fn checkpoint(path: &Path, step: f32) {
        let names = [
            "trainer.step",
            "trainer.contrastive.log_scale",
            "trainer.contrastive.bias",
        ];
        let entries: Vec<String> = (0..names.len())
            .map(|i| {
                let (start, end) = (4 * i, 4 * i + 4);
                format!(
                    r#""{}":{{"dtype":"F32","shape":[1],"data_offsets":[{start},{end}]}}"#,
                    names[i]
                )
            })
            .collect();
        let header = format!("{{{}}}", entries.join(","));
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        for value in [step, 2.0, 0.0] {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        std::fs::write(path, bytes).unwrap();
    }

    /// The training arguments of a stage over `recipe` (written to `directory`) and `model`, into `directory/out`.
    fn arguments(directory: &Path, recipe: &str, model: Option<&Path>) -> TrainArgs {
        let path = directory.join("recipe.toml");
        std::fs::write(&path, recipe).unwrap();
        TrainArgs {
            recipe: Some(path),
            model: model.map(Path::to_owned),
            data: None,
            out: Some(directory.join("out")),
            resume: false,
            steps: None,
            threads: Some(2),
            ranks: 1,
            rank: 0,
            exchange: None,
            hostname: "127.0.0.1".to_owned(),
        }
    }

    #[test]
    fn a_stage_starts_from_its_model_its_copy_or_its_own_checkpoint() {
        let directory =
            std::env::temp_dir().join(format!("uform-train-start-{}", std::process::id()));
        let out = directory.join("out");
        std::fs::create_dir_all(&out).unwrap();
        let model = directory.join("model.safetensors");
        checkpoint(&model, 9000.0);
        let recipe = "from_step = 9000\nsteps = 15000\nstop_at = 10500\ncontrastive_scale = 10.0\n";

        // From --model: the schedule counts on from its step; the scale is written into a copy in the run directory.
        let stage = Stage::new(&arguments(&directory, recipe, Some(&model))).unwrap();
        let start = stage.start().unwrap().unwrap();
        assert_eq!(
            (start.first, start.stage, &start.from),
            (9000, Some(9000), &out.join(INIT_COPY))
        );
        let log_scale =
            checkpoint::scalar(&start.from, "trainer.contrastive.log_scale", 0).unwrap();
        assert_eq!(log_scale, 10f32.ln());
        assert_eq!(
            (stage.last_step(9000), stage.last_step(10500)),
            (10500, 10500)
        );

        // --steps bounds a session; a model at another step, or none, is refused.
        let mut session = arguments(&directory, recipe, Some(&model));
        session.steps = Some(250);
        assert_eq!(Stage::new(&session).unwrap().last_step(9000), 9250);
        checkpoint(&model, 8000.0);
        let error = Stage::new(&arguments(&directory, recipe, Some(&model)))
            .unwrap()
            .start()
            .err()
            .unwrap();
        assert!(
            error.to_string().contains("--model holds step 8000"),
            "{error}"
        );
        assert!(
            Stage::new(&arguments(&directory, recipe, None)).is_err(),
            "the scale needs --model"
        );

        // A run directory holding a checkpoint: refused without --resume, continued with it, done past stop_at.
        checkpoint(&model, 9000.0);
        checkpoint(&out.join(CHECKPOINT), 10000.0);
        let error = Stage::new(&arguments(&directory, recipe, Some(&model)))
            .unwrap()
            .start()
            .err()
            .unwrap();
        assert!(
            error.to_string().contains("--resume continues it"),
            "{error}"
        );
        let mut resumed = arguments(&directory, recipe, Some(&model));
        resumed.resume = true;
        let start = Stage::new(&resumed).unwrap().start().unwrap().unwrap();
        assert_eq!(
            (start.first, start.stage, &start.from),
            (10000, Some(9000), &out.join(CHECKPOINT))
        );
        checkpoint(&out.join(CHECKPOINT), 10500.0);
        assert!(Stage::new(&resumed).unwrap().start().unwrap().is_none());
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
