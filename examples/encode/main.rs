//! Encodes texts with a UForm checkpoint and prints their embeddings' shape, a cosine similarity matrix, the
//! other texts ranked by similarity to the first, and the throughput; or, given a folder, encodes its texts,
//! images, videos and audio into a USearch index and prints the files nearest a query text; or, given probe triples,
//! prints which of them the model ranks as written.
//!
//! ```sh
//! cargo run --release --example encode                              # the shipped model, built-in texts
//! cargo run --release --example encode -- "a cat" "a feline" "a truck"
//! cargo run --release --example encode -- --model model.safetensors "a cat" "a dog"
//! cargo run --release --example encode -- --lines corpus.txt        # one text per line, with a progress bar
//! cargo run --release --example encode -- --folder tests/data/media --query "an image of a sneaker"
//! cargo run --release --example encode -- --probes tests/data/probes/everyday.tsv
//! ```

use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Instant;

use uform::*;

mod folder;
mod probes;

/// The texts encoded when none are given.
const BUILT_IN: [&str; 4] = [
    "a cat on a mat",
    "a kitten on a rug",
    "a dog in the fog",
    "stock prices fell sharply",
];

/// The model the repository ships (docs/search.md), loaded unless `--model` names another.
const SHIPPED_MODEL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/models/uform-wordnet-small.safetensors"
);

/// Batches above this many items report progress on standard error.
const PROGRESS_FROM: usize = 256;

fn main() {
    if let Err(error) = run() {
        eprintln!("encode: {error}");
        std::process::exit(1);
    }
}

/// What the command line asks for.
struct Args {
    /// The checkpoint to load.
    model_path: PathBuf,
    /// The texts to encode.
    texts: Vec<String>,
    /// The folder to index and search instead, the query and how many hits to print.
    folder: Option<PathBuf>,
    query: Option<String>,
    top: usize,
    /// The probe triples to score instead (probes.rs).
    probes: Option<PathBuf>,
}

/// Parses the arguments, loads the model, encodes and prints.
fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let Some(args) = parse_args()? else {
        return Ok(());
    };
    let texts = args.texts;
    let executor = Executor::for_ram(&[], None, 0)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(args.model_path.as_path())?;
    let description = model.describe()?;
    println!(
        "model: {} (build {}), depth {}, hidden {}, {} dimensions, dispatched as {}",
        args.model_path.display(),
        build_flavor(),
        description.depth,
        description.hidden,
        description.dimensions,
        description.cpu_class
    );
    if let Some(folder) = args.folder {
        let query = args.query.ok_or("--folder needs a --query")?;
        return search(&model, &executor, &mut arena, &folder, &query, args.top);
    }
    if let Some(path) = args.probes {
        let probes = probes::read(&path)?;
        println!("probes of {}:", path.display());
        probes::score(&model, &executor, &mut arena, &probes)?;
        return Ok(());
    }

    let mut stats = TextEncodeStats::default();
    let started = Instant::now();
    let encoded = encode(&model, &executor, &mut arena, &texts, &mut stats)?;
    let seconds = started.elapsed().as_secs_f64();
    if texts.len() >= PROGRESS_FROM {
        eprintln!();
    }

    let embeddings = encoded
        .embeddings
        .ok_or("the model answered no embeddings")?;
    let values: &[f32] = embeddings.values()?;
    let columns = embeddings.columns();
    println!("embeddings: {} x {} f32", embeddings.count(), columns);
    print_similarities(&texts, values, columns);
    println!(
        "throughput: {} texts, {} tokens in {:.3} ms: {:.0} tokens/s",
        stats.items,
        stats.tokens,
        seconds * 1e3,
        stats.tokens as f64 / seconds.max(1e-9)
    );
    Ok(())
}

/// Reads the command line, with the built-in texts when it names none; `None` once `--help` printed the usage.
fn parse_args() -> std::result::Result<Option<Args>, Box<dyn std::error::Error>> {
    let mut model_path = PathBuf::from(SHIPPED_MODEL);
    let mut texts: Vec<String> = Vec::new();
    let (mut folder, mut query, mut top) = (None::<PathBuf>, None::<String>, 5usize);
    let mut probes = None::<PathBuf>;
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--model" => model_path = arguments.next().ok_or("--model needs a path")?.into(),
            "--lines" => {
                let path = arguments.next().ok_or("--lines needs a path")?;
                texts.extend(std::fs::read_to_string(path)?.lines().map(str::to_owned));
            }
            "--folder" => folder = Some(arguments.next().ok_or("--folder needs a path")?.into()),
            "--query" => query = Some(arguments.next().ok_or("--query needs a text")?),
            "--top" => top = arguments.next().ok_or("--top needs a count")?.parse()?,
            "--probes" => probes = Some(arguments.next().ok_or("--probes needs a path")?.into()),
            "--help" | "-h" => {
                println!("usage: encode [--model PATH] [--lines FILE] [TEXT...]");
                println!("       encode [--model PATH] --folder DIR --query TEXT [--top N]");
                println!("       encode [--model PATH] --probes FILE");
                return Ok(None);
            }
            _ => texts.push(argument),
        }
    }
    if texts.is_empty() {
        texts = BUILT_IN.iter().map(|text| text.to_string()).collect();
    }
    Ok(Some(Args {
        model_path,
        texts,
        folder,
        query,
        top,
        probes,
    }))
}

/// Encodes `texts` into embeddings in `arena`, filling `stats`, with a progress bar on standard error for
/// large batches.
fn encode<'a>(
    model: &'a Model,
    executor: &'a Executor,
    arena: &'a mut Arena,
    texts: &[String],
    stats: &mut TextEncodeStats,
) -> uform::Result<Encoded<'a>> {
    let total_items = texts.len();
    let mut bar = |completed: usize, total: usize| {
        if total_items >= PROGRESS_FROM {
            let filled = completed * 40 / total.max(1);
            eprint!(
                "\r[{}{}] {completed}/{total}",
                "#".repeat(filled),
                " ".repeat(40 - filled)
            );
            let _ = std::io::stderr().flush();
        }
        ControlFlow::Continue(())
    };
    let config = TextEncodeConfig {
        stats: Some(stats),
        progress: Some(&mut bar),
        ..TextEncodeConfig::from(Scalar::F32)
    };
    model
        .on(executor)
        .text_encode(texts, Outputs::EMBEDDINGS, config, arena)
}

/// Prints the cosine similarity matrix of the first texts, and the others ranked by similarity to the first.
fn print_similarities(texts: &[String], values: &[f32], columns: usize) {
    // Embeddings are unit rows, so a dot product is their cosine.
    let cosine = |i: usize, j: usize| -> f32 {
        let (row_i, row_j) = (
            &values[i * columns..][..columns],
            &values[j * columns..][..columns],
        );
        row_i.iter().zip(row_j).map(|(a, b)| a * b).sum()
    };
    let shown = texts.len().min(8);
    println!("cosine similarity of the first {shown} texts:");
    for (i, text) in texts.iter().take(shown).enumerate() {
        let cells: Vec<String> = (0..shown)
            .map(|j| format!("{:+.3}", cosine(i, j)))
            .collect();
        println!("  {}  {}", cells.join(" "), truncate(text, 40));
    }
    if texts.len() > 2 {
        let mut others: Vec<usize> = (1..texts.len()).collect();
        others.sort_by(|&a, &b| cosine(0, b).total_cmp(&cosine(0, a)));
        println!("nearest to {:?} first:", truncate(&texts[0], 40));
        for &j in others.iter().take(shown) {
            println!("  {:+.3}  {}", cosine(0, j), truncate(&texts[j], 40));
        }
    }
}

/// The first `limit` characters of `text`, with an ellipsis when cut.
fn truncate(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Indexes `folder` (folder.rs) and prints the `top` files nearest `query`, and the batches the library refused.
fn search(
    model: &Model,
    executor: &Executor,
    arena: &mut Arena,
    folder: &std::path::Path,
    query: &str,
    top: usize,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let index = folder::FolderIndex::build(model, executor, arena, folder)?;
    let seconds = started.elapsed().as_secs_f64();
    for (modality, count, error) in &index.skipped {
        eprintln!("skipped {count} {modality:?} file(s): {error}");
    }
    println!(
        "{} files of {} encoded as i8 into a USearch index in {:.2} s; nearest to {query:?}:",
        index.files.len(),
        folder.display(),
        seconds
    );
    for hit in index.nearest(model, executor, arena, query, top)? {
        println!(
            "  {:+.3}  {:<5}  {}",
            hit.similarity,
            format!("{:?}", hit.file.modality).to_lowercase(),
            hit.file.path.display()
        );
    }
    Ok(())
}
