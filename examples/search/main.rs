//! Search at scale: encodes the test split of the data `tools/data/prepare.py` writes (every distinct WordNet lemma,
//! gloss and usage example, and `--images` Fashion-MNIST test images) with the shipped model, keeps the embeddings in
//! USearch indexes of `f32`, `i8` and `b1` rows (the `Scalar` the library answered, added as it is), and reports each
//! index's build and search time and its recall@10 against exact search: the share of the exact `f32` cosine top 10
//! that the index's approximate top 10 holds, over `--queries` validation-split lemmas, which the index does not hold.
//!
//! ```sh
//! python3 tools/data/prepare.py                                   # once: target/data
//! cargo run --release --example search                            # ~40,000 texts and 2,000 images
//! cargo run --release --example search -- --images 10000 --queries 2000 --model other.safetensors
//! ```

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use uform::*;
use usearch::{b1x8, Index, IndexOptions, MetricKind, ScalarKind, VectorType};

mod exact;

/// Texts per encoding call: enough to keep the threads busy, few enough for a lively progress line.
const BATCH: usize = 1024;
/// Images per encoding call: an image is 256 tokens, a text about 25.
const IMAGE_BATCH: usize = 128;

/// Nearest neighbours compared per query.
const TOP: usize = 10;
/// Candidates a `b1` index hands to `f32` re-ranking.
const SHORTLIST: usize = 100;

/// What the command line asked for.
struct Options {
    data: PathBuf,
    model: PathBuf,
    texts: usize,
    images: usize,
    queries: usize,
    threads: usize,
}

impl Options {
    fn parse() -> Result<Self, Box<dyn Error>> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut options = Self {
            data: root.join("target/data"),
            model: root.join("models/uform-wordnet-small.safetensors"),
            texts: usize::MAX,
            images: 2_000,
            queries: 1_000,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let mut arguments = std::env::args().skip(1);
        while let Some(argument) = arguments.next() {
            let mut value = || arguments.next().ok_or(format!("{argument} needs a value"));
            match argument.as_str() {
                "--data" => options.data = value()?.into(),
                "--model" => options.model = value()?.into(),
                "--texts" => options.texts = value()?.parse()?,
                "--images" => options.images = value()?.parse()?,
                "--queries" => options.queries = value()?.parse()?,
                "--threads" => options.threads = value()?.parse::<usize>()?.max(1),
                "--help" | "-h" => {
                    println!("usage: search [--data DIR] [--model PATH] [--texts N] [--images N] [--queries N] [--threads N]");
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other:?}; see --help").into()),
            }
        }
        Ok(options)
    }
}

/// The corpus and the queries, read from `items.tsv`.
struct Corpus {
    /// Distinct texts of the test split's WordNet groups, in file order.
    texts: Vec<String>,
    /// Fashion-MNIST test images, by path.
    images: Vec<PathBuf>,
    /// Distinct canonical lemmas of the validation split that no test text equals.
    queries: Vec<String>,
}

impl Corpus {
    fn read(options: &Options) -> Result<Self, Box<dyn Error>> {
        let path = options.data.join("items.tsv");
        let tsv = std::fs::read_to_string(&path).map_err(|error| {
            format!(
                "{}: {error} (run python3 tools/data/prepare.py first)",
                path.display()
            )
        })?;
        let (mut texts, mut images, mut lemmas) = (Vec::new(), Vec::new(), Vec::new());
        let mut seen = std::collections::HashSet::new();
        let mut last_group = "";
        for line in tsv.lines().skip(1) {
            let fields: Vec<&str> = line.split('\t').collect();
            let [_, group, split, modality, role, content, _uses] = fields[..] else {
                return Err(
                    format!("{}: a line without seven fields: {line:?}", path.display()).into(),
                );
            };
            match (split, modality, role) {
                ("test", "text", "lemma" | "gloss" | "example")
                    if texts.len() < options.texts && seen.insert(content) =>
                {
                    texts.push(content.to_owned())
                }
                ("test", "image", _) if images.len() < options.images => {
                    images.push(options.data.join(content))
                }
                ("validation", "text", "lemma") if group != last_group => lemmas.push(content),
                _ => {}
            }
            last_group = group;
        }
        let mut queried = std::collections::HashSet::new();
        let queries = lemmas
            .into_iter()
            .filter(|lemma| !seen.contains(lemma) && queried.insert(*lemma))
            .take(options.queries)
            .map(str::to_owned)
            .collect();
        Ok(Self {
            texts,
            images,
            queries,
        })
    }
}

/// Every item's embedding as `f32`, `i8` and `b1` rows, one encoding pass per scalar.
struct Embeddings {
    f32: Vec<f32>,
    i8: Vec<i8>,
    b1: Vec<u8>,
}

/// Encodes `texts` and `images` as rows of `T`, in batches of [`BATCH`], with a progress line on standard error.
fn encode<T: Value>(
    model: &Model,
    executor: &Executor,
    arena: &mut Arena,
    texts: &[String],
    images: &[PathBuf],
) -> Result<Vec<T>, Box<dyn Error>> {
    let (total, mut done, mut rows) = (texts.len() + images.len(), 0, Vec::new());
    let started = Instant::now();
    let report = |done: usize| {
        let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
        eprint!(
            "\r  {:<4} {done}/{total} items, {rate:.0} items/s ",
            T::SCALAR.to_string()
        );
        let _ = std::io::stderr().flush();
    };
    for batch in texts.chunks(BATCH) {
        let encoded =
            model
                .on(executor)
                .text_encode(batch, Outputs::EMBEDDINGS, T::SCALAR, arena)?;
        rows.extend_from_slice(encoded.embeddings.ok_or("no embeddings")?.values::<T>()?);
        done += batch.len();
        report(done);
    }
    for batch in images.chunks(IMAGE_BATCH) {
        let encoded =
            model
                .on(executor)
                .image_encode(batch, Outputs::EMBEDDINGS, T::SCALAR, arena)?;
        rows.extend_from_slice(encoded.embeddings.ok_or("no embeddings")?.values::<T>()?);
        done += batch.len();
        report(done);
    }
    eprintln!("in {:.1} s", started.elapsed().as_secs_f64());
    Ok(rows)
}

/// Encodes the same items as `f32`, `i8` and `b1` rows.
fn encode_all(
    model: &Model,
    executor: &Executor,
    arena: &mut Arena,
    texts: &[String],
    images: &[PathBuf],
) -> Result<Embeddings, Box<dyn Error>> {
    Ok(Embeddings {
        f32: encode(model, executor, arena, texts, images)?,
        i8: encode(model, executor, arena, texts, images)?,
        b1: encode(model, executor, arena, texts, images)?,
    })
}

/// What every index is scored against: the exact top [`TOP`] of each query over the `f32` rows, which the
/// re-ranking rows also read.
struct Reference<'a> {
    items: &'a [f32],
    queries: &'a [f32],
    dimensions: usize,
    truth: Vec<Vec<u64>>,
    threads: usize,
}

/// One index's figures.
struct Measured {
    /// Recall@10 of the index's approximate search.
    recall: f64,
    /// Recall@10 of the index's exact search: what the rows' scalar and metric lose, without the graph.
    exact_recall: f64,
    build_seconds: f64,
    /// Seconds for all queries' approximate searches (and re-ranking).
    search_seconds: f64,
    bytes: usize,
}

/// Builds a USearch index over `items` (rows of `width` values of `T`, keyed by position) on the reference's
/// threads, searches it for each of `queries`' rows, approximately and exactly, and scores both against the
/// reference. With `shortlist` above [`TOP`], each search takes that many candidates and keeps the [`TOP`] best
/// by `f32` cosine.
fn measure<T: VectorType + Sync>(
    options: IndexOptions,
    items: &[T],
    queries: &[T],
    shortlist: usize,
    reference: &Reference,
) -> Result<Measured, Box<dyn Error>> {
    // Values of `T` per row: `b1` rows pack eight columns a byte.
    let width = match options.quantization {
        ScalarKind::B1 => options.dimensions.div_ceil(8),
        _ => options.dimensions,
    };
    let threads = reference.threads;
    let count = items.len() / width;
    let index = Index::new(&options)?;
    index.reserve_capacity_and_threads(count, threads)?;
    let started = Instant::now();
    let per_thread = count.div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let index = &index;
                scope.spawn(move || {
                    let first = (thread * per_thread).min(count);
                    let last = (first + per_thread).min(count);
                    (first..last)
                        .try_for_each(|key| index.add(key as u64, &items[key * width..][..width]))
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|worker| worker.join().expect("an indexing thread panicked"))
    })?;
    let build_seconds = started.elapsed().as_secs_f64();

    let shortlisted = |keys: Vec<u64>, query: usize| {
        if shortlist > TOP {
            let query = &reference.queries[query * reference.dimensions..][..reference.dimensions];
            exact::rerank(reference.items, query, &keys, TOP)
        } else {
            keys
        }
    };
    let started = Instant::now();
    let mut found = Vec::with_capacity(reference.truth.len());
    for (at, query) in queries.chunks(width).enumerate() {
        found.push(shortlisted(index.search(query, shortlist)?.keys, at));
    }
    let search_seconds = started.elapsed().as_secs_f64();
    let mut exactly = Vec::with_capacity(reference.truth.len());
    for (at, query) in queries.chunks(width).enumerate() {
        exactly.push(shortlisted(index.exact_search(query, shortlist)?.keys, at));
    }
    Ok(Measured {
        recall: exact::recall(&found, &reference.truth),
        exact_recall: exact::recall(&exactly, &reference.truth),
        build_seconds,
        search_seconds,
        bytes: index.memory_usage(),
    })
}

fn main() {
    if let Err(error) = run() {
        eprintln!("search: {error}");
        std::process::exit(1);
    }
}

/// Reads the corpus, encodes it and the queries, and prints each index's figures against exact search.
fn run() -> Result<(), Box<dyn Error>> {
    let options = Options::parse()?;
    let corpus = Corpus::read(&options)?;
    let executor = Executor::for_ram(&[], None, options.threads)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(options.model.as_path())?;
    let dimensions = model.describe()?.dimensions;
    let count = corpus.texts.len() + corpus.images.len();
    println!(
        "model: {}, {dimensions} dimensions; {} test texts and {} test images indexed, {} validation lemmas as queries, {} threads",
        options.model.display(),
        corpus.texts.len(),
        corpus.images.len(),
        corpus.queries.len(),
        options.threads
    );

    eprintln!("encoding the items:");
    let items = encode_all(&model, &executor, &mut arena, &corpus.texts, &corpus.images)?;
    eprintln!("encoding the queries:");
    let queries = encode_all(&model, &executor, &mut arena, &corpus.queries, &[])?;

    let started = Instant::now();
    let reference = Reference {
        truth: exact::top(&items.f32, &queries.f32, dimensions, TOP, options.threads),
        items: &items.f32,
        queries: &queries.f32,
        dimensions,
        threads: options.threads,
    };
    println!(
        "exact search (f32 cosine, brute force over {count} items): {:.3} s for {} queries",
        started.elapsed().as_secs_f64(),
        reference.truth.len()
    );
    let rows = measure_all(&items, &queries, &reference)?;
    print_table(rows, count, reference.truth.len());
    Ok(())
}

/// Builds and searches each kind of index: `f32` and `i8` by cosine, `b1` by Hamming, and `b1` re-ranked.
fn measure_all(
    items: &Embeddings,
    queries: &Embeddings,
    reference: &Reference,
) -> Result<[(String, Measured); 4], Box<dyn Error>> {
    let options = |metric, quantization| IndexOptions {
        dimensions: reference.dimensions,
        metric,
        quantization,
        ..IndexOptions::default()
    };
    let (cosine, hamming) = (MetricKind::Cos, MetricKind::Hamming);
    let (items_b1, queries_b1) = (b1x8::from_u8s(&items.b1), b1x8::from_u8s(&queries.b1));
    Ok([
        (
            "f32, cosine".to_owned(),
            measure(
                options(cosine, ScalarKind::F32),
                &items.f32,
                &queries.f32,
                TOP,
                reference,
            )?,
        ),
        (
            "i8, cosine".to_owned(),
            measure(
                options(cosine, ScalarKind::I8),
                &items.i8,
                &queries.i8,
                TOP,
                reference,
            )?,
        ),
        (
            "b1, Hamming".to_owned(),
            measure(
                options(hamming, ScalarKind::B1),
                items_b1,
                queries_b1,
                TOP,
                reference,
            )?,
        ),
        (
            format!("b1, Hamming, top {SHORTLIST} re-ranked by f32 cosine"),
            measure(
                options(hamming, ScalarKind::B1),
                items_b1,
                queries_b1,
                SHORTLIST,
                reference,
            )?,
        ),
    ])
}

/// Prints the figures as a Markdown table, over `count` indexed items and `queries` queries.
fn print_table(rows: [(String, Measured); 4], count: usize, queries: usize) {
    println!("| rows, metric | recall@{TOP} | recall@{TOP} of exact search over the same rows | build | search, per query | index memory |");
    println!("|---|---|---|---|---|---|");
    for (name, measured) in rows {
        println!(
            "| {name} | {:.3} | {:.3} | {:.2} s ({:.0} items/s) | {:.1} us | {:.1} MiB |",
            measured.recall,
            measured.exact_recall,
            measured.build_seconds,
            count as f64 / measured.build_seconds,
            measured.search_seconds * 1e6 / queries.max(1) as f64,
            measured.bytes as f64 / (1 << 20) as f64
        );
    }
}
