//! What the example prints after training: how the losses moved, and how similarly the checkpoints of
//! step 0 and of the last step embed paraphrases and unrelated texts.

use std::error::Error;
use std::path::Path;

use uform::*;

use crate::texts::Pairs;

/// Steps averaged at each end of the run, to smooth the per-batch noise.
const WINDOW: usize = 10;

/// Pairs shown in the cosine matrices.
const SHOWN_PAIRS: usize = 4;

/// A loss term's name and how to read it from a step's stats.
type Term = (&'static str, fn(&TrainerStepStats) -> f32);

/// The mean of `field` over `steps`.
fn mean(steps: &[TrainerStepStats], field: impl Fn(&TrainerStepStats) -> f32) -> f32 {
    steps.iter().map(field).sum::<f32>() / steps.len().max(1) as f32
}

/// Prints the losses of the first and the last steps, the time and the throughput.
pub fn losses(history: &[TrainerStepStats]) {
    let window = WINDOW.min(history.len());
    let (first, last) = (&history[..window], &history[history.len() - window..]);
    let seconds = history.iter().map(|s| s.nanoseconds).sum::<u64>() as f64 * 1e-9;
    let tokens: usize = history.iter().map(|s| s.tokens).sum();
    println!(
        "trained {} steps in {seconds:.1} s ({:.0} tokens/s); mean of the first {window} steps -> the last {window}:",
        history.len(),
        tokens as f64 / seconds.max(1e-9)
    );
    let terms: [Term; 3] = [
        ("loss", |s| s.loss),
        ("masking", |s| s.masking_loss),
        ("contrastive", |s| s.contrastive_loss),
    ];
    for (name, field) in terms {
        println!(
            "  {name:<12} {:.3} -> {:.3}",
            mean(first, field),
            mean(last, field)
        );
    }
}

/// The cosine of two rows; zero when either is zero.
fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norms =
        a.iter().map(|x| x * x).sum::<f32>().sqrt() * b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norms == 0.0 {
        0.0
    } else {
        dot / norms
    }
}

/// The embeddings of `texts` under the checkpoint at `path`, one row per text.
fn embed(
    executor: &Executor,
    path: &Path,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, Box<dyn Error>> {
    let model = Model::load_ram(path)?;
    let mut arena = Arena::new_in(executor)?;
    let encoded =
        model
            .on(executor)
            .text_encode(texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    let rows = encoded
        .embeddings
        .ok_or("the model answered no embeddings")?;
    let columns = rows.columns();
    Ok(rows
        .values::<f32>()?
        .chunks(columns)
        .map(<[f32]>::to_vec)
        .collect())
}

/// The mean cosine of paraphrase pairs and of every other pair of distinct texts.
fn pair_means(rows: &[Vec<f32>]) -> (f32, f32) {
    let (mut same, mut other) = ((0.0, 0usize), (0.0, 0usize));
    for i in 0..rows.len() {
        for j in i + 1..rows.len() {
            let sum = if i / 2 == j / 2 {
                &mut same
            } else {
                &mut other
            };
            sum.0 += cosine(&rows[i], &rows[j]);
            sum.1 += 1;
        }
    }
    (
        same.0 / same.1.max(1) as f32,
        other.0 / other.1.max(1) as f32,
    )
}

/// Prints the cosine matrix of the first pairs' texts, each paraphrase's cell in brackets.
fn matrix(title: &str, rows: &[Vec<f32>], texts: &[String]) {
    println!("{title}:");
    let shown = rows.len().min(2 * SHOWN_PAIRS);
    for i in 0..shown {
        let cells: String = (0..shown)
            .map(|j| {
                let c = cosine(&rows[i], &rows[j]);
                if i != j && i / 2 == j / 2 {
                    format!("[{c:+.2}]")
                } else {
                    format!(" {c:+.2} ")
                }
            })
            .collect();
        println!("  {cells}  {}", texts[i]);
    }
}

/// Encodes every training text with the checkpoints of step 0 and of the last step, and prints both cosine matrices
/// and the mean cosine of
/// paraphrases against other pairs.
pub fn similarities(
    executor: &Executor,
    pairs: &Pairs,
    before: &Path,
    after: &Path,
) -> Result<(), Box<dyn Error>> {
    let before = embed(executor, before, &pairs.texts)?;
    let after = embed(executor, after, &pairs.texts)?;
    matrix(
        "cosine similarity before training, at step 0 (paraphrases in brackets)",
        &before,
        &pairs.texts,
    );
    matrix(
        "cosine similarity after training (paraphrases in brackets)",
        &after,
        &pairs.texts,
    );
    let (same_before, other_before) = pair_means(&before);
    let (same_after, other_after) = pair_means(&after);
    println!(
        "mean cosine over all {} training texts, before -> after:",
        pairs.texts.len()
    );
    println!("  paraphrase pairs   {same_before:+.3} -> {same_after:+.3}");
    println!("  other pairs        {other_before:+.3} -> {other_after:+.3}");
    println!(
        "  gap                {:+.3} -> {:+.3}",
        same_before - other_before,
        same_after - other_after
    );
    Ok(())
}
