//! `uform-train batches`: the batches a recipe draws, as JSON on the standard output, one batch a line, exactly as
//! training draws them (a train batch is step K's, a validation batch the K-th of every validation). It is the one
//! implementation of the batch recipe that other tools read batches from (docs/data.md, "Sampling a batch").

use std::error::Error;
use std::io::Write;

use clap::ValueEnum;

use crate::data::{Data, Random, Split};
use crate::recipe::Recipe;
use crate::train::VALIDATION_STREAM;
use crate::BatchesArgs;

/// The splits batches are drawn from.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SplitArg {
    /// A training step's batch: generator `(seed, step)`.
    Train,
    /// A validation batch: generator `(seed ^ u64::MAX, index)`, as a run's validations draw them.
    Validation,
}

/// Prints the batches `arguments` ask for.
pub fn run(arguments: &BatchesArgs) -> Result<(), Box<dyn Error>> {
    let recipe = Recipe::read(&arguments.recipe.clone().unwrap_or_else(crate::smoke_recipe))?;
    let root = arguments
        .data
        .clone()
        .unwrap_or_else(|| crate::target().join("data"));
    let data = crate::train::load_data(&root, &recipe)?;
    let mut out = std::io::stdout().lock();
    for line in lines(
        &data,
        &recipe,
        arguments.split,
        arguments.step,
        arguments.count,
    )? {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The JSON lines of `count` batches from `step` on, each with its step.
fn lines(
    data: &Data,
    recipe: &Recipe,
    split: SplitArg,
    step: u64,
    count: u64,
) -> Result<Vec<String>, Box<dyn Error>> {
    let (seed, split) = match split {
        SplitArg::Train => (recipe.seed, Split::Train),
        SplitArg::Validation => (recipe.seed ^ VALIDATION_STREAM, Split::Validation),
    };
    (step..step + count)
        .map(|k| {
            let mut json = data
                .batch(&mut Random::new(seed, k), split, &recipe.batch)?
                .to_json();
            json["step"] = k.into();
            Ok(json.to_string())
        })
        .collect()
}
