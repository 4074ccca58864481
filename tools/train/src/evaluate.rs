//! `uform-train evaluate`: scores a checkpoint on the test split (docs/training/README.md, "Evaluation") and writes one
//! table, every figure beside chance and a baseline: text retrieval by embedding cosine and by MaxSim over token
//! vectors against character-3-gram TF-IDF, zero-shot Fashion-MNIST from the class captions, spoken lemmas against
//! their text, the student's agreement with the distillation teacher on held-out pairs, and the choices' accuracy and calibration error before and after fitting the temperature on the
//! calibration split, through the trainer's `calibrate` and `save`, the calibrated checkpoint loaded again.

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use uform::*;

use crate::baseline::TfIdf;
use crate::calibration::calibrate;
use crate::checkpoint;
use crate::data::{read_pairs, Data};
use crate::metrics;
use crate::report::{self, Row, Target, Unit};
use crate::tasks::{Choices, Limits, Retrieval, Tasks};
use crate::EvaluateArgs;

/// The distillation teacher, named as a baseline beside the student.
const TEACHER: &str = "all-MiniLM-L6-v2 teacher";
/// The bins of the expected calibration error.
const BINS: usize = 15;
/// Queries scored against all candidates at once by one thread: their token vectors stay in cache while the
/// candidates' stream past.
const BLOCK: usize = 16;

/// What the command line asked for.
struct Options {
    /// The checkpoint to evaluate.
    model: PathBuf,
    /// The data directory.
    data: PathBuf,
    /// Where the table and the calibrated checkpoint go.
    out: PathBuf,
    /// The row length the model was trained with: longer texts are cut, longer choice items dropped, as in training.
    columns: usize,
    /// How much of each task to score.
    limits: Limits,
    /// Calibration items to fit the temperature on, drawn with the seed; zero takes all.
    calibration: usize,
    /// Threads: the executor's and the scoring's.
    threads: usize,
    /// The samples' seed.
    seed: u64,
}

impl Options {
    /// The options `evaluate`'s arguments give, the defaults filled in.
    fn new(arguments: &EvaluateArgs) -> Self {
        let out = arguments.out.clone().unwrap_or_else(|| {
            let directory = arguments.model.parent().unwrap_or(Path::new("."));
            directory.join("evaluation")
        });
        Self {
            model: arguments.model.clone(),
            data: arguments
                .data
                .clone()
                .unwrap_or_else(|| crate::target().join("data")),
            out,
            columns: arguments.columns as usize,
            limits: Limits {
                queries: arguments.queries,
                images: arguments.images,
                choices: arguments.choices,
            },
            calibration: arguments.calibration,
            threads: arguments
                .threads
                .map_or_else(crate::default_threads, |threads| threads as usize),
            seed: arguments.seed,
        }
    }
}

/// Encoded items: unit embeddings and, when asked for, token vectors per item.
struct Encodings {
    /// `items × dimensions`.
    embeddings: Vec<f32>,
    /// Embedding columns.
    dimensions: usize,
    /// Every item's token vectors, one after another.
    tokens: Vec<f32>,
    /// `items + 1` row offsets into `tokens`.
    offsets: Vec<usize>,
    /// Tokens through the trunk.
    trunk_tokens: usize,
}

impl Encodings {
    /// Appends one call's embeddings and, when it answered them, its token vectors.
    fn append(&mut self, encoded: Encoded<'_>) -> Result<(), Box<dyn Error>> {
        append(
            &encoded.embeddings.ok_or("no embeddings answered")?,
            &mut self.embeddings,
        )?;
        if let Some(vectors) = encoded.token_vectors {
            let base = self.offsets.last().copied().unwrap_or(0);
            self.offsets
                .extend(vectors.offsets()?[1..].iter().map(|o| base + o));
            append(&vectors, &mut self.tokens)?;
        }
        Ok(())
    }

    /// Item `i`'s embedding.
    fn row(&self, i: usize) -> &[f32] {
        &self.embeddings[i * self.dimensions..(i + 1) * self.dimensions]
    }
}

/// What an encoding call reads.
#[derive(Clone, Copy)]
enum Form {
    /// Texts.
    Text,
    /// Image files.
    Image,
    /// Audio files.
    Audio,
}

/// Appends `rows` as F32 values, row by row (rows may be padded apart).
fn append(rows: &Rows<'_>, into: &mut Vec<f32>) -> Result<(), Box<dyn Error>> {
    let (bytes, row_bytes) = (rows.as_bytes()?, rows.columns() * 4);
    for r in 0..rows.count() {
        let row = &bytes[r * rows.stride()..r * rows.stride() + row_bytes];
        into.extend(
            row.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
    }
    Ok(())
}

/// Items encoded in one call, by form: fewer for the costlier media.
fn chunk_size(form: Form) -> usize {
    match form {
        Form::Text => 256,
        Form::Image => 64,
        Form::Audio => 16,
    }
}

/// Encodes `inputs` in chunks, keeping the embeddings and, with `token_vectors`, the token vectors.
fn encode(
    model: &Model,
    executor: &Executor,
    inputs: &[String],
    form: Form,
    token_vectors: bool,
    label: &str,
) -> Result<Encodings, Box<dyn Error>> {
    let mut outputs = Outputs::EMBEDDINGS;
    if token_vectors {
        outputs |= Outputs::TOKEN_VECTORS;
    }
    let chunk = chunk_size(form);
    let mut encodings = Encodings {
        embeddings: Vec::new(),
        dimensions: model.describe()?.dimensions,
        tokens: Vec::new(),
        offsets: vec![0],
        trunk_tokens: 0,
    };
    let mut arena = Arena::new_in(executor)?;
    let started = Instant::now();
    for (c, items) in inputs.chunks(chunk).enumerate() {
        let on = model.on(executor);
        let encoded = match form {
            Form::Text => {
                let mut stats = TextEncodeStats::default();
                let config = TextEncodeConfig {
                    stats: Some(&mut stats),
                    ..TextEncodeConfig::from(Scalar::F32)
                };
                let encoded = on.text_encode(items, outputs, config, &mut arena)?;
                encodings.trunk_tokens += stats.tokens;
                encoded
            }
            Form::Image => {
                let mut stats = ImageEncodeStats::default();
                let config = ImageEncodeConfig {
                    stats: Some(&mut stats),
                    ..ImageEncodeConfig::from(Scalar::F32)
                };
                let encoded = on.image_encode(items, outputs, config, &mut arena)?;
                encodings.trunk_tokens += stats.tokens;
                encoded
            }
            Form::Audio => {
                let mut stats = AudioEncodeStats::default();
                let config = AudioEncodeConfig {
                    stats: Some(&mut stats),
                    ..AudioEncodeConfig::from(Scalar::F32)
                };
                let encoded = on.audio_encode(items, outputs, config, &mut arena)?;
                encodings.trunk_tokens += stats.tokens;
                encoded
            }
        };
        encodings.append(encoded)?;
        eprint!("\r{label}: {}/{}", (c * chunk + items.len()), inputs.len());
        let _ = std::io::stderr().flush();
    }
    let seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "\r{label}: {} items, {} tokens in {seconds:.1} s ({:.0} tokens/s)",
        inputs.len(),
        encodings.trunk_tokens,
        encodings.trunk_tokens as f64 / seconds.max(1e-9)
    );
    Ok(encodings)
}

/// The rank of every query of `task` (metrics::rank), scoring blocks of [`BLOCK`] queries with `score` (a score per
/// candidate for each query of the block) on `threads` threads.
fn ranks<F>(task: &Retrieval, threads: usize, score: F) -> Vec<usize>
where
    F: Fn(std::ops::Range<usize>) -> Vec<Vec<f32>> + Sync,
{
    let blocks = task.queries.len().div_ceil(BLOCK);
    let mut ranks = vec![0; task.queries.len()];
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let score = &score;
                scope.spawn(move || {
                    let mut found = Vec::new();
                    for block in (t..blocks).step_by(threads) {
                        let range = block * BLOCK..((block + 1) * BLOCK).min(task.queries.len());
                        for (q, scores) in range.clone().zip(score(range)) {
                            found.push((
                                q,
                                metrics::rank(&scores, &task.relevant[q], &task.excluded[q]),
                            ));
                        }
                    }
                    found
                })
            })
            .collect();
        for worker in workers {
            for (q, rank) in worker.join().expect("a scoring thread panicked") {
                ranks[q] = rank;
            }
        }
    });
    ranks
}

/// Ranks by the cosine of unit embeddings.
fn cosine_ranks(
    task: &Retrieval,
    queries: &Encodings,
    candidates: &Encodings,
    threads: usize,
) -> Vec<usize> {
    ranks(task, threads, |range| {
        range
            .map(|q| {
                let query = queries.row(q);
                candidates
                    .embeddings
                    .chunks_exact(candidates.dimensions)
                    .map(|c| metrics::dot(query, c))
                    .collect()
            })
            .collect()
    })
}

/// Ranks by MaxSim over token vectors of `width` columns.
fn max_sim_ranks(
    task: &Retrieval,
    queries: &Encodings,
    candidates: &Encodings,
    width: usize,
    threads: usize,
) -> Vec<usize> {
    ranks(task, threads, |range| {
        let block: Vec<&[f32]> = range
            .map(|q| &queries.tokens[queries.offsets[q] * width..queries.offsets[q + 1] * width])
            .collect();
        metrics::max_sim(&block, &candidates.tokens, &candidates.offsets, width)
    })
}

/// Ranks by character-3-gram TF-IDF cosine, the candidates' document frequencies defining the weights.
fn tfidf_ranks(task: &Retrieval, threads: usize) -> Vec<usize> {
    let index = TfIdf::new(&task.candidates);
    ranks(task, threads, |range| {
        range.map(|q| index.scores(&task.queries[q])).collect()
    })
}

/// Each choice item's probabilities under `model`.
fn choose(
    model: &Model,
    executor: &Executor,
    choices: &Choices,
) -> Result<Vec<Vec<f32>>, Box<dyn Error>> {
    let mut arena = Arena::new_in(executor)?;
    let mut probabilities = Vec::with_capacity(choices.texts.len());
    let chunk = 128;
    for (texts, legal) in choices.texts.chunks(chunk).zip(choices.legal.chunks(chunk)) {
        let answered = model.on(executor).text_choose(
            texts,
            legal,
            TextChooseConfig::default(),
            &mut arena,
        )?;
        for i in 0..texts.len() {
            probabilities.push(answered.item(i)?.to_vec());
        }
        eprint!("\rchoices: {}/{}", probabilities.len(), choices.texts.len());
        let _ = std::io::stderr().flush();
    }
    eprintln!();
    Ok(probabilities)
}

/// Accuracy and expected calibration error (over [`BINS`] bins) of probabilities against the answers.
fn choice_figures(probabilities: &[Vec<f32>], answers: &[usize]) -> (f64, f64) {
    let confidences: Vec<f32> = probabilities
        .iter()
        .map(|p| p.iter().copied().fold(0.0, f32::max))
        .collect();
    let correct: Vec<bool> = probabilities
        .iter()
        .zip(answers)
        .map(|(p, &answer)| metrics::argmax(p) == answer)
        .collect();
    let accuracy = metrics::recall(
        &correct
            .iter()
            .map(|&right| usize::from(!right))
            .collect::<Vec<_>>(),
        1,
    );
    (
        accuracy,
        metrics::expected_calibration_error(&confidences, &correct, BINS),
    )
}

/// The rows of one retrieval task: recall@1 and @10 for each scorer (embedding cosine, MaxSim when given), each
/// beside the named baseline's ranks when given, and chance.
fn retrieval_rows(
    task_name: &str,
    task: &Retrieval,
    scored: &[(&str, &[usize])],
    baseline: Option<(&str, &[usize])>,
    target: Target,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for &(scorer, ranks) in scored {
        for k in [1, 10] {
            rows.push(Row {
                task: task_name.to_owned(),
                scorer: scorer.to_owned(),
                metric: format!("recall@{k}"),
                model: metrics::recall(ranks, k),
                baseline: baseline.map(|(name, b)| (name.to_owned(), metrics::recall(b, k))),
                chance: Some(task.chance(k)),
                target,
                items: task.queries.len(),
                unit: Unit::Percent,
            });
        }
    }
    rows
}

/// What the parts of an evaluation share, and the rows and notes they have written.
struct Evaluation<'a> {
    /// The command line.
    options: &'a Options,
    /// The data, for the calibration items.
    data: &'a Data,
    /// The test split's tasks.
    tasks: &'a Tasks,
    /// The checkpoint's model.
    model: &'a Model,
    /// The executor every call runs on.
    executor: &'a Executor,
    /// The token vectors' width; 0 when the checkpoint has no token head.
    width: usize,
    /// The table's rows so far.
    rows: Vec<Row>,
    /// The notes under the table so far.
    notes: Vec<String>,
}

impl Evaluation<'_> {
    /// Encodes texts or media with this evaluation's model and executor.
    fn encode(
        &self,
        inputs: &[String],
        form: Form,
        token_vectors: bool,
        label: &str,
    ) -> Result<Encodings, Box<dyn Error>> {
        encode(
            self.model,
            self.executor,
            inputs,
            form,
            token_vectors,
            label,
        )
    }

    /// Text retrieval by embedding cosine, MaxSim and TF-IDF; answers the lemma candidates' encodings, which the
    /// spoken lemmas rank too.
    fn text_retrieval(&mut self) -> Result<Encodings, Box<dyn Error>> {
        let (threads, width, late) = (self.options.threads, self.width, self.width > 0);
        let mut lemma_candidates = None;
        for (name, task) in [
            ("synonym -> lemma", &self.tasks.synonyms),
            ("lemma -> gloss", &self.tasks.glosses),
        ] {
            let queries =
                self.encode(&task.queries, Form::Text, late, &format!("{name}: queries"))?;
            let candidates = self.encode(
                &task.candidates,
                Form::Text,
                late,
                &format!("{name}: candidates"),
            )?;
            let timer = Instant::now();
            let cosine = cosine_ranks(task, &queries, &candidates, threads);
            let tfidf = tfidf_ranks(task, threads);
            let max_sim = if late {
                max_sim_ranks(task, &queries, &candidates, width, threads)
            } else {
                Vec::new()
            };
            let mut scored = vec![("embedding cosine", cosine.as_slice())];
            if late {
                scored.push(("MaxSim, token vectors", max_sim.as_slice()));
            }
            eprintln!("{name}: scored in {:.1} s", timer.elapsed().as_secs_f64());
            self.text_retrieval_rows(name, task, &scored, &tfidf);
            if std::ptr::eq(task, &self.tasks.synonyms) {
                lemma_candidates = Some(candidates);
            }
        }
        if !late {
            self.notes
                .push("the checkpoint has no token head: no MaxSim rows".to_owned());
        }
        Ok(lemma_candidates.expect("the synonyms' candidates were encoded"))
    }

    /// A text retrieval task's rows: each scorer beside TF-IDF (synonyms held to it too), the embedding cosine beside
    /// the teacher when the data holds its rows, and the task's note.
    fn text_retrieval_rows(
        &mut self,
        name: &str,
        task: &Retrieval,
        scored: &[(&str, &[usize])],
        tfidf: &[usize],
    ) {
        let target = if std::ptr::eq(task, &self.tasks.synonyms) {
            Target::TenTimesChanceAndBaseline
        } else {
            Target::TenTimesChance
        };
        let baseline = Some(("char-3-gram TF-IDF", tfidf));
        self.rows
            .extend(retrieval_rows(name, task, scored, baseline, target));
        if let Some(teacher) = self.teacher_ranks(task) {
            let baseline = Some((TEACHER, teacher.as_slice()));
            let rows = retrieval_rows(name, task, &scored[..1], baseline, Target::None);
            self.rows.extend(rows);
        }
        self.notes.push(format!(
            "{name}: {} of {} queries (drawn with seed {}), {} candidates",
            task.queries.len(),
            task.available,
            self.options.seed,
            task.candidates.len()
        ));
    }

    /// The teacher's ranks on a text retrieval task, by the cosine of its stored rows of the same texts, when the data
    /// holds a complete teacher store (the student beside its teacher on the same queries and candidates).
    fn teacher_ranks(&self, task: &Retrieval) -> Option<Vec<usize>> {
        let width = self.data.teacher_width()?;
        let rows = |texts: &[String]| {
            self.data
                .teacher_rows_of(texts)
                .map(|embeddings| Encodings {
                    embeddings,
                    dimensions: width,
                    tokens: Vec::new(),
                    offsets: Vec::new(),
                    trunk_tokens: 0,
                })
        };
        let (queries, candidates) = (rows(&task.queries)?, rows(&task.candidates)?);
        Some(cosine_ranks(
            task,
            &queries,
            &candidates,
            self.options.threads,
        ))
    }

    /// Spoken lemmas against the lemma texts, whose encodings `lemmas` holds when they are the same candidates.
    fn spoken(&mut self, lemmas: Encodings) -> Result<(), Box<dyn Error>> {
        let spoken = &self.tasks.spoken;
        if spoken.queries.is_empty() {
            self.notes
                .push("the test split has no spoken lemmas: no audio rows".to_owned());
            return Ok(());
        }
        let clips = self.encode(&spoken.queries, Form::Audio, false, "spoken lemmas")?;
        let texts = if spoken.candidates == self.tasks.synonyms.candidates {
            lemmas
        } else {
            self.encode(&spoken.candidates, Form::Text, false, "lemma texts")?
        };
        let ranks = cosine_ranks(spoken, &clips, &texts, self.options.threads);
        let scored = [("embedding cosine", ranks.as_slice())];
        self.rows.extend(retrieval_rows(
            "spoken lemma -> text",
            spoken,
            &scored,
            None,
            Target::TenTimesChance,
        ));
        self.notes.push(format!(
            "spoken lemma -> text: {} of {} clips, {} candidates (the test synsets' distinct canonical lemmas)",
            spoken.queries.len(),
            spoken.available,
            spoken.candidates.len()
        ));
        Ok(())
    }

    /// Zero-shot Fashion-MNIST: each class's prototype is the normalised mean of its test captions' embeddings.
    fn zero_shot(&mut self) -> Result<(), Box<dyn Error>> {
        let zero_shot = &self.tasks.zero_shot;
        let captions: Vec<String> = zero_shot.captions.concat();
        let caption_rows = self.encode(&captions, Form::Text, false, "captions")?;
        let dimensions = caption_rows.dimensions;
        let mut prototypes = vec![0f32; zero_shot.classes.len() * dimensions];
        let mut next = 0;
        for (prototype, texts) in prototypes
            .chunks_exact_mut(dimensions)
            .zip(&zero_shot.captions)
        {
            for _ in texts {
                prototype
                    .iter_mut()
                    .zip(caption_rows.row(next))
                    .for_each(|(p, v)| *p += v);
                next += 1;
            }
            let norm = metrics::dot(prototype, prototype).sqrt().max(1e-12);
            prototype.iter_mut().for_each(|p| *p /= norm);
        }
        let images = self.encode(&zero_shot.images, Form::Image, false, "images")?;
        let right = (0..zero_shot.images.len())
            .filter(|&i| {
                let scores: Vec<f32> = prototypes
                    .chunks_exact(dimensions)
                    .map(|p| metrics::dot(images.row(i), p))
                    .collect();
                metrics::argmax(&scores) == zero_shot.labels[i]
            })
            .count();
        let classes = zero_shot.classes.len();
        self.rows.push(Row {
            task: "Fashion-MNIST zero-shot".to_owned(),
            scorer: "embedding cosine".to_owned(),
            metric: "accuracy".to_owned(),
            model: right as f64 / zero_shot.images.len().max(1) as f64,
            baseline: None,
            chance: Some(1.0 / classes.max(1) as f64),
            target: Target::None,
            items: zero_shot.images.len(),
            unit: Unit::Percent,
        });
        self.notes.push(format!(
            "Fashion-MNIST zero-shot: {} of {} test images (drawn with seed {}); each of the {classes} classes' \
             prototype averages the embeddings of its test captions ({} in all: the held-out template with the \
             class's 2-3 names)",
            zero_shot.images.len(),
            zero_shot.available,
            self.options.seed,
            captions.len(),
        ));
        Ok(())
    }

    /// The student's agreement with the teacher on the held-out pairs of `teacher/pairs.tsv`: Spearman's correlation
    /// of the embedding cosines with the teacher's, beside that of char-3-gram TF-IDF cosines.
    fn teacher_agreement(&mut self) -> Result<(), Box<dyn Error>> {
        let Some(pairs) = read_pairs(&self.options.data, self.options.columns - 1)? else {
            self.notes.push(
                "the data has no teacher pairs (tools/data/prepare.py --teacher): no Spearman row"
                    .to_owned(),
            );
            return Ok(());
        };
        let firsts: Vec<String> = pairs.iter().map(|pair| pair.a.clone()).collect();
        let seconds: Vec<String> = pairs.iter().map(|pair| pair.b.clone()).collect();
        let a = self.encode(&firsts, Form::Text, false, "teacher pairs: first texts")?;
        let b = self.encode(&seconds, Form::Text, false, "teacher pairs: second texts")?;
        let student: Vec<f32> = (0..pairs.len())
            .map(|i| metrics::dot(a.row(i), b.row(i)))
            .collect();
        let teacher: Vec<f32> = pairs.iter().map(|pair| pair.cosine).collect();
        let index = TfIdf::new(&seconds);
        let tfidf: Vec<f32> = firsts
            .iter()
            .enumerate()
            .map(|(i, text)| index.scores(text)[i])
            .collect();
        self.rows.push(Row {
            task: "student vs teacher cosines, held-out pairs".to_owned(),
            scorer: "embedding cosine".to_owned(),
            metric: "Spearman".to_owned(),
            model: metrics::spearman(&student, &teacher),
            baseline: Some((
                "char-3-gram TF-IDF".to_owned(),
                metrics::spearman(&tfidf, &teacher),
            )),
            chance: None,
            target: Target::AtLeast(0.8),
            items: pairs.len(),
            unit: Unit::Plain,
        });
        let kinds = ["synset", "related", "random"].map(|kind| {
            let n = pairs.iter().filter(|pair| pair.kind == kind).count();
            format!("{n} {kind}")
        });
        self.notes.push(format!(
            "student vs teacher: {} pairs of test texts ({}), the teacher's cosines from teacher/pairs.tsv",
            pairs.len(),
            kinds.join(", ")
        ));
        Ok(())
    }

    /// Choices at temperature 1, then with the temperature fitted on the calibration split through the trainer, saved
    /// as `<out>/calibrated.safetensors` and loaded again.
    fn choices(&mut self) -> Result<(), Box<dyn Error>> {
        let (options, choices) = (self.options, &self.tasks.choices);
        let temperature = checkpoint::scalar(&options.model, "head.choice.temperatures", 0)?;
        let at_temperature = choose(self.model, self.executor, choices)?;
        let before: Vec<Vec<f32>> = at_temperature
            .iter()
            .map(|p| metrics::retempered(p, temperature))
            .collect();
        let (accuracy_before, ece_before) = choice_figures(&before, &choices.answers);

        let (calibrated_path, stats) = self.calibrated_copy()?;
        let calibrated = Model::load_ram(&calibrated_path)
            .map_err(|error| format!("{}: {error}", calibrated_path.display()))?;
        let fitted = checkpoint::scalar(&calibrated_path, "head.choice.temperatures", 0)?;
        let after = choose(&calibrated, self.executor, choices)?;
        let (accuracy_after, ece_after) = choice_figures(&after, &choices.answers);

        let ece = format!("ECE, {BINS} bins");
        let fit = format!("text_choose, calibrated T = {fitted:.3}");
        let plain = "text_choose, T = 1";
        let row = |scorer: &str, metric: &str, figures: (f64, Option<f64>), unit, target| {
            choice_row(choices, scorer, metric, figures, unit, target)
        };
        self.rows.extend([
            row(
                plain,
                "accuracy",
                (accuracy_before, None),
                Unit::Percent,
                Target::None,
            ),
            row(
                &fit,
                "accuracy",
                (accuracy_after, Some(accuracy_before)),
                Unit::Percent,
                Target::None,
            ),
            row(plain, &ece, (ece_before, None), Unit::Plain, Target::None),
            row(
                &fit,
                &ece,
                (ece_after, Some(ece_before)),
                Unit::Plain,
                Target::AtMost(0.05),
            ),
        ]);
        self.notes.push(format!(
            "choices: {} of {} test items (drawn with seed {}); the temperature was fitted on {} calibration items \
             (held-out cross-entropy {:.4} at T = 1, {:.4} at T = {fitted:.3}), saved to {} and loaded again",
            choices.texts.len(),
            choices.available,
            options.seed,
            stats.items,
            stats.loss_before,
            stats.loss_after,
            calibrated_path.display()
        ));
        if temperature != 1.0 {
            self.notes.push(format!(
                "the checkpoint carried T = {temperature:.3}: its T = 1 probabilities are its own raised to the power \
                 {temperature:.3} and renormalised"
            ));
        }
        Ok(())
    }

    /// Fits the temperature of a trainer loaded from the model on the calibration items and saves it as
    /// `<out>/calibrated.safetensors`, answering that path and what the fit did.
    fn calibrated_copy(&self) -> Result<(PathBuf, TrainerCalibrateStats), Box<dyn Error>> {
        let options = self.options;
        let config = TrainerInitRamConfig {
            checkpoint: &options.model,
            batch: BatchShape {
                max_columns_per_row: options.columns,
                ..BatchShape::default()
            },
            ..TrainerInitRamConfig::default()
        };
        let trainer = Trainer::init_ram(self.executor, config)?;
        let timer = Instant::now();
        let stats = calibrate(
            &trainer,
            self.executor,
            self.data,
            options.calibration,
            options.seed,
        )?;
        std::fs::create_dir_all(&options.out)?;
        let calibrated_path = options.out.join("calibrated.safetensors");
        trainer.on(self.executor).save(&calibrated_path)?;
        eprintln!(
            "calibration: {} items, {} tokens in {:.1} s; cross-entropy {:.4} -> {:.4}",
            stats.items,
            stats.tokens,
            timer.elapsed().as_secs_f64(),
            stats.loss_before,
            stats.loss_after
        );
        Ok((calibrated_path, stats))
    }
}

/// A row of the choices' table: `figures` are the model's value and its baseline's (the same at temperature 1).
fn choice_row(
    choices: &Choices,
    scorer: &str,
    metric: &str,
    figures: (f64, Option<f64>),
    unit: Unit,
    target: Target,
) -> Row {
    let chance = choices
        .legal
        .iter()
        .map(|l| 1.0 / l.len() as f64)
        .sum::<f64>()
        / choices.legal.len().max(1) as f64;
    Row {
        task: "choices".to_owned(),
        scorer: scorer.to_owned(),
        metric: metric.to_owned(),
        model: figures.0,
        baseline: figures.1.map(|b| ("temperature 1".to_owned(), b)),
        chance: (unit == Unit::Percent).then_some(chance),
        target,
        items: choices.texts.len(),
        unit,
    }
}

/// Reads the data as a run does, with the teacher's rows when the data holds them.
fn load_data(options: &Options) -> Result<Data, Box<dyn Error>> {
    let mut data = Data::load(&options.data, options.columns - 1, [&|_| 1.0, &|_| 1.0])?;
    if options.data.join("teacher/manifest.json").exists() {
        data.load_teacher(options.columns - 1)?;
    }
    Ok(data)
}

/// Runs `uform-train evaluate`.
pub fn run(arguments: &EvaluateArgs) -> Result<(), Box<dyn Error>> {
    let options = Options::new(arguments);
    let started = Instant::now();
    let data = load_data(&options)?;
    let tasks = Tasks::new(&data, &options.limits, options.seed)?;
    let model = Model::load_ram(&options.model)
        .map_err(|error| format!("{}: {error}", options.model.display()))?;
    let description = model.describe()?;
    let steps = checkpoint::scalar(&options.model, "trainer.step", 0)
        .map_or(String::from("unknown"), |s| format!("{}", s as usize));
    println!(
        "evaluating {} (step {steps}; {} dimensions, token vectors of {}) on {} with {} threads",
        options.model.display(),
        description.dimensions,
        description.token_width,
        options.data.display(),
        options.threads
    );
    let executor = Executor::for_ram(&[], None, options.threads - 1)?;
    let mut evaluation = Evaluation {
        options: &options,
        data: &data,
        tasks: &tasks,
        model: &model,
        executor: &executor,
        width: description.token_width,
        rows: Vec::new(),
        notes: Vec::new(),
    };
    let lemmas = evaluation.text_retrieval()?;
    evaluation.teacher_agreement()?;
    evaluation.spoken(lemmas)?;
    evaluation.zero_shot()?;
    if description.choice_temperature_groups == 0 {
        evaluation
            .notes
            .push("the checkpoint has no choice head: no choice rows".to_owned());
    } else {
        evaluation.choices()?;
    }

    let heading = format!(
        "## Evaluation of `{}` (step {steps}) on the test split",
        options.model.display()
    );
    evaluation.notes.push(format!(
        "evaluated in {:.0} s with {} threads",
        started.elapsed().as_secs_f64(),
        options.threads
    ));
    report::write(&options.out, &heading, &evaluation.rows, &evaluation.notes)?;
    println!(
        "{}",
        std::fs::read_to_string(options.out.join("evaluation.md"))?
    );
    println!(
        "written: {}",
        options.out.join("evaluation.{md,tsv}").display()
    );
    Ok(())
}
