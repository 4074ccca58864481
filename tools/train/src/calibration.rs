//! Fitting the choice temperature on the held-out `calibration` choice items (docs/data.md, "The split"), through the
//! trainer's `calibrate` verb: the training run does it before its final save, and the evaluation does it on a copy of
//! the checkpoint it measures.

use std::error::Error;

use uform::{Executor, TrainVerbs, Trainer, TrainerCalibrateConfig, TrainerCalibrateStats};

use crate::data::{Data, Random, Split};

/// Fits the trainer's temperature group 0 on up to `limit` calibration items (all when `limit` is zero or more than
/// there are; a sample drawn with `seed` otherwise), answering what the call did. The fitted temperature is the
/// trainer's state until its next `save`.
pub fn calibrate(
    trainer: &Trainer<'_>,
    executor: &Executor,
    data: &Data,
    limit: usize,
    seed: u64,
) -> Result<TrainerCalibrateStats, Box<dyn Error>> {
    let items: Vec<_> = data.choice_items(Split::Calibration).collect();
    if items.is_empty() {
        return Err("the data holds no calibration choice items (docs/data.md)".into());
    }
    let chosen: Vec<usize> = if limit == 0 || limit >= items.len() {
        (0..items.len()).collect()
    } else {
        let mut chosen = Random::new(seed, CALIBRATION_STREAM)
            .sample(&(0..items.len()).collect::<Vec<_>>(), limit);
        chosen.sort_unstable();
        chosen
    };
    let texts: Vec<&str> = chosen.iter().map(|&i| items[i].0).collect();
    let legal: Vec<&str> = chosen.iter().map(|&i| items[i].1).collect();
    let targets: Vec<&[f32]> = chosen.iter().map(|&i| items[i].2).collect();
    let mut stats = TrainerCalibrateStats::default();
    let config = TrainerCalibrateConfig {
        stats: Some(&mut stats),
        ..TrainerCalibrateConfig::default()
    };
    trainer
        .on(executor)
        .calibrate(&texts, &legal, &targets, config)?;
    Ok(stats)
}

/// The calibration items a fit takes by default, of the 5,916 the split holds: one temperature needs no more to be
/// fitted well, and 500 take a few seconds (`uform_trainer_calibrate` scores them in chunks, in bounded memory).
pub const DEFAULT_ITEMS: usize = 500;

/// The stream of the calibration sample's generator, apart from the steps' and the evaluation's.
const CALIBRATION_STREAM: u64 = 0xCA11_B4A7;
