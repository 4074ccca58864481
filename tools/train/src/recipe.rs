//! Recipes: the versioned TOML files under `tools/train/recipes/` that say everything a training stage does besides
//! where its files are. Top-level keys set the schedule, the losses and the run's rhythm; the `[batch]` table sets how
//! a step's batch is drawn (`data::BatchRecipe`). Every key is optional and unknown keys are refused; the defaults are
//! those of [`Recipe::default`] and [`BatchRecipe::default`], the 50-step smoke run of `recipes/smoke.toml`.

use std::error::Error;
use std::path::Path;

use serde::Deserialize;
use uform::PairLossForm;

use crate::data::BatchRecipe;

/// Packed rows a step's texts fill at most unless the recipe says otherwise: the trainer's own default.
pub const DEFAULT_ROWS: usize = 64;

/// One training stage, as a recipe file states it.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Recipe {
    /// What the stage is, in a line: printed when it starts.
    pub description: String,
    /// Steps of the whole schedule, counting those of earlier stages: warm-up, then cosine to a hundredth of the peak.
    pub steps: usize,
    /// The step after which the stage saves and stops while the schedule stays `steps` long (a stage stopped where
    /// the next one starts).
    pub stop_at: Option<usize>,
    /// A wall-time budget in minutes for one session: past it the run saves and stops, and `--resume` goes on.
    pub minutes: Option<f64>,
    /// Steps between checkpoints, each followed by the validation loss.
    pub every: usize,
    /// Keep a copy of every checkpoint saved as `checkpoint-<step>.safetensors` (for averaging or probing).
    pub keep: bool,
    /// The `trainer.step` the `--model` checkpoint must hold, so a stage starts from the checkpoint it was made from.
    pub from_step: Option<usize>,
    /// Validation batches per validation.
    pub validation_batches: usize,
    /// Tokens per packed row: the longest text (longer ones are cut, longer choice items dropped), and the patches
    /// an image fills.
    pub columns: usize,
    /// Packed rows of `columns` tokens a step's texts fill at most, which sizes the trainer's buffers; a step whose
    /// texts need more is refused (`limit-exceeded`), so a recipe that draws more texts raises it.
    pub rows: usize,
    /// Peak learning rate.
    pub learning_rate: f32,
    /// The masked-byte term's weight in the joint loss (the other terms weigh 1).
    pub masking_weight: f32,
    /// Seed of the weights, the masking and the batches.
    pub seed: u64,
    /// The contrastive term's pair loss.
    pub pair_loss: PairLoss,
    /// The contrastive scale the stage starts at, written as its logarithm over the `--model` checkpoint's
    /// `trainer.contrastive.log_scale` in the copy the stage starts from (0 < scale <= 100).
    pub contrastive_scale: Option<f32>,
    /// The contrastive bias the stage starts at, written over the `--model` checkpoint's `trainer.contrastive.bias`
    /// in the same copy (|bias| <= 100; only the sigmoid form reads it).
    pub contrastive_bias: Option<f32>,
    /// The distillation term's weight in the joint loss (docs/model.md, "Distillation"): positive trains it on the
    /// teacher's rows (`tools/data/prepare.py --teacher`), which the run then needs; 0 leaves the rows unread.
    pub distill_weight: f32,
    /// The distillation term's student temperature.
    pub student_temperature: f32,
    /// The distillation term's teacher temperature.
    pub teacher_temperature: f32,
    /// Calibration items the final temperature fit takes, drawn with the seed; zero takes all.
    pub calibration: usize,
    /// How a step's batch is drawn.
    pub batch: BatchRecipe,
}

/// The contrastive term's form, as a recipe spells it.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PairLoss {
    /// InfoNCE over each anchor's row (the default).
    InfoNce,
    /// Every ordered pair its own logistic loss (docs/model.md, "Contrastive, sigmoid").
    Sigmoid,
}

impl From<PairLoss> for PairLossForm {
    /// The trainer's name for the same form.
    fn from(form: PairLoss) -> Self {
        match form {
            PairLoss::InfoNce => PairLossForm::InfoNce,
            PairLoss::Sigmoid => PairLossForm::Sigmoid,
        }
    }
}

impl Default for Recipe {
    /// The smoke run: 50 steps from seeded weights, a checkpoint every 25.
    fn default() -> Self {
        Self {
            description: String::new(),
            steps: 50,
            stop_at: None,
            minutes: None,
            every: 25,
            keep: false,
            from_step: None,
            validation_batches: 2,
            columns: 128,
            rows: DEFAULT_ROWS,
            learning_rate: 2e-3,
            masking_weight: 1.0,
            seed: 13,
            pair_loss: PairLoss::InfoNce,
            contrastive_scale: None,
            contrastive_bias: None,
            distill_weight: 0.0,
            student_temperature: 0.05,
            teacher_temperature: 0.05,
            calibration: crate::calibration::DEFAULT_ITEMS,
            batch: BatchRecipe::default(),
        }
    }
}

impl Recipe {
    /// Reads and checks a recipe file.
    pub fn read(path: &Path) -> Result<Self, Box<dyn Error>> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("{}: {error}", path.display()))?;
        Self::parse(&text).map_err(|error| format!("{}: {error}", path.display()).into())
    }

    /// Parses and checks a recipe's text.
    pub fn parse(text: &str) -> Result<Self, Box<dyn Error>> {
        let recipe: Self = toml::from_str(text)?;
        recipe.check()?;
        Ok(recipe)
    }

    /// The last step this stage trains to: `stop_at`, else the schedule's end.
    pub fn last_step(&self) -> usize {
        self.stop_at.unwrap_or(self.steps)
    }

    /// Refuses values no run could train with.
    fn check(&self) -> Result<(), Box<dyn Error>> {
        if self.steps == 0 || self.every == 0 {
            return Err("steps and every need at least one step".into());
        }
        if let Some(stop) = self.stop_at {
            if stop == 0 || stop > self.steps {
                return Err(format!(
                    "stop_at takes a step from 1 to steps ({}), not {stop}",
                    self.steps
                )
                .into());
            }
        }
        if self
            .minutes
            .is_some_and(|minutes| minutes.is_nan() || minutes <= 0.0)
        {
            return Err("minutes must be positive".into());
        }
        self.check_contrastive()?;
        self.check_distill()?;
        // The trainer refuses negative and non-finite weights itself; zero it would read as its default of 1.
        if self.masking_weight == 0.0 {
            return Err(
                "masking_weight 0 would train as 1 (the trainer's default): give a positive weight"
                    .into(),
            );
        }
        if self.columns < 2 {
            return Err("columns needs room for a byte and a choice's CHOOSE token".into());
        }
        if self.rows == 0 {
            return Err("rows takes a count of packed rows of 1 or more".into());
        }
        self.batch.check()
    }

    /// Refuses a distillation weight or temperature the trainer would refuse, and other texts without the term.
    fn check_distill(&self) -> Result<(), Box<dyn Error>> {
        if !(self.distill_weight >= 0.0 && self.distill_weight <= 1e6) {
            return Err(format!(
                "distill_weight takes a weight in [0, 1e6], not {}",
                self.distill_weight
            )
            .into());
        }
        for (name, value) in [
            ("student_temperature", self.student_temperature),
            ("teacher_temperature", self.teacher_temperature),
        ] {
            if !(1e-3..=1e3).contains(&value) {
                return Err(
                    format!("{name} takes a temperature in [1e-3, 1e3], not {value}").into(),
                );
            }
        }
        if self.batch.extras > 0 && self.distill_weight == 0.0 {
            return Err(
                "[batch] extras train the distillation term alone: give a positive distill_weight"
                    .into(),
            );
        }
        Ok(())
    }

    /// Refuses a contrastive scale or bias out of range.
    fn check_contrastive(&self) -> Result<(), Box<dyn Error>> {
        if let Some(bias) = self.contrastive_bias {
            if bias.is_nan() || bias.abs() > 100.0 {
                return Err(
                    format!("contrastive_bias takes a bias in [-100, 100], not {bias}").into(),
                );
            }
        }
        if let Some(scale) = self.contrastive_scale {
            if !(scale > 0.0 && scale <= 100.0) {
                return Err(
                    format!("contrastive_scale takes a scale in (0, 100], not {scale}").into(),
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::RareBy;

    /// The recipe files under `tools/train/recipes/`, by name.
    fn shipped(name: &str) -> Recipe {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("recipes")
            .join(name);
        Recipe::read(&path).unwrap()
    }

    #[test]
    fn an_empty_recipe_is_the_default_and_smoke_toml_says_so() {
        assert_eq!(Recipe::parse("").unwrap(), Recipe::default());
        let smoke = shipped("smoke.toml");
        assert_eq!(
            Recipe {
                description: String::new(),
                ..smoke
            },
            Recipe::default()
        );
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        for (text, expected) in [
            ("stepz = 3", "unknown field"),
            ("[batch]\ngroupz = 3", "unknown field"),
            (
                "steps = 100\nstop_at = 101",
                "stop_at takes a step from 1 to steps (100)",
            ),
            (
                "steps = 100\nstop_at = 0",
                "stop_at takes a step from 1 to steps (100)",
            ),
            ("pair_loss = \"hinge\"", "unknown variant"),
            ("rows = 0", "rows takes a count of packed rows"),
            (
                "contrastive_scale = 0.0",
                "contrastive_scale takes a scale in (0, 100]",
            ),
            (
                "contrastive_bias = -101.0",
                "contrastive_bias takes a bias in [-100, 100]",
            ),
            ("masking_weight = 0.0", "masking_weight 0"),
            ("[batch]\nper_group = 1", "two items per group"),
            ("[batch]\nfloor = 0.0", "floor must be positive"),
            ("[batch]\nrare_by = \"word\"", "unknown variant"),
            (
                "distill_weight = -1.0",
                "distill_weight takes a weight in [0, 1e6]",
            ),
            ("distill_weight = nan", "distill_weight takes a weight"),
            (
                "student_temperature = 0.0",
                "student_temperature takes a temperature in [1e-3, 1e3]",
            ),
            (
                "teacher_temperature = 2000.0",
                "teacher_temperature takes a temperature",
            ),
            ("[batch]\nextras = 8", "give a positive distill_weight"),
            ("distil_weight = 1.0", "unknown field"),
        ] {
            let error = Recipe::parse(text).expect_err(text).to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn the_distillation_pilot_is_s_with_the_teacher() {
        let (w, s) = (shipped("distill-pilot.toml"), shipped("wordnet-s.toml"));
        assert_eq!(
            (
                w.from_step,
                w.steps,
                w.minutes,
                w.learning_rate,
                w.pair_loss
            ),
            (Some(17750), 18750, Some(20.0), s.learning_rate, s.pair_loss)
        );
        assert_eq!(
            (
                w.distill_weight,
                w.student_temperature,
                w.teacher_temperature
            ),
            (1.0, 0.05, 0.05)
        );
        assert_eq!(
            w.batch, s.batch,
            "the partial store had no other texts to draw"
        );
        assert_eq!(
            Recipe::default().distill_weight,
            0.0,
            "no recipe distills unless it says so"
        );
    }

    #[test]
    fn pilot_x_is_w_with_the_distillation_weighted_four() {
        let (w, x) = (
            shipped("distill-pilot.toml"),
            shipped("distill-pilot-x.toml"),
        );
        assert_eq!(x.distill_weight, 4.0);
        let as_w = Recipe {
            description: w.description.clone(),
            distill_weight: w.distill_weight,
            ..x
        };
        assert_eq!(as_w, w, "X changes nothing else");
    }

    #[test]
    fn stage_y_is_x_on_the_whole_store_for_longer() {
        let (x, y) = (shipped("distill-pilot-x.toml"), shipped("wordnet-y.toml"));
        assert_eq!(
            (y.from_step, y.steps, y.minutes, y.keep, y.batch.extras),
            (Some(17750), 21750, Some(85.0), true, 16)
        );
        let as_x = Recipe {
            description: x.description.clone(),
            steps: x.steps,
            minutes: x.minutes,
            keep: x.keep,
            batch: BatchRecipe {
                extras: 0,
                ..y.batch
            },
            ..y
        };
        assert_eq!(as_x, x, "Y changes nothing else");
    }

    #[test]
    fn stage_z_is_y_with_more_pictures_and_speech_and_z2_adds_families() {
        let (y, z, z2) = (
            shipped("wordnet-y.toml"),
            shipped("wordnet-z.toml"),
            shipped("wordnet-z2.toml"),
        );
        assert_eq!(
            (z.minutes, z.batch.class_images, z.batch.spoken),
            (Some(60.0), 5, 4)
        );
        let as_y = Recipe {
            description: y.description.clone(),
            minutes: y.minutes,
            batch: BatchRecipe {
                class_images: y.batch.class_images,
                spoken: y.batch.spoken,
                ..z.batch
            },
            ..z.clone()
        };
        assert_eq!(as_y, y, "Z changes nothing else");
        assert_eq!(
            (
                z2.from_step,
                z2.steps,
                z2.minutes,
                z2.rows,
                z2.batch.families
            ),
            (Some(21750), 24750, Some(45.0), 96, 16)
        );
        let as_z = Recipe {
            description: z.description.clone(),
            from_step: z.from_step,
            steps: z.steps,
            minutes: z.minutes,
            rows: z.rows,
            batch: BatchRecipe {
                families: 0,
                ..z2.batch
            },
            ..z2
        };
        assert_eq!(as_z, z, "Z2 changes nothing else");
    }

    #[test]
    fn the_stages_recipes_state_their_documented_flags() {
        // docs/model-card.md, "Reproducing it": each stage's command, its flags over the old defaults.
        let d = shipped("wordnet-d.toml");
        assert_eq!(
            (d.steps, d.minutes, d.every, d.stop_at, d.batch),
            (9000, Some(58.0), 500, None, BatchRecipe::default())
        );
        let n = shipped("wordnet-n.toml");
        assert_eq!(
            (
                n.steps,
                n.stop_at,
                n.every,
                n.from_step,
                n.learning_rate,
                n.pair_loss
            ),
            (15000, Some(10500), 500, Some(9000), 5e-4, PairLoss::Sigmoid)
        );
        assert_eq!(
            (n.contrastive_scale, n.contrastive_bias),
            (Some(10.0), Some(-10.0))
        );
        let n_batch = BatchRecipe {
            outliers: 16,
            vocabulary: 80,
            vocabulary_common: Some(3.0),
            common: 0.75,
            floor: 1.0,
            cap: 18.0,
            rare_by: RareBy::Lemma,
            hypernyms: 0.5,
            hypernym_weight: 0.5,
            ..BatchRecipe::default()
        };
        assert_eq!(n.batch, n_batch);
        let r = shipped("wordnet-r.toml");
        assert_eq!(
            (
                r.steps,
                r.stop_at,
                r.every,
                r.keep,
                r.from_step,
                r.learning_rate
            ),
            (16500, None, 500, true, Some(10500), 5e-4)
        );
        let r_batch = BatchRecipe {
            vocabulary: 150,
            hypernyms: 1.0,
            hypernym_weight: 1.0,
            lemma_documents: 0.5,
            ..n_batch
        };
        assert_eq!(
            (r.pair_loss, r.contrastive_scale, r.batch),
            (PairLoss::Sigmoid, None, r_batch)
        );
        let s = shipped("wordnet-s.toml");
        assert_eq!(
            (
                s.steps,
                s.stop_at,
                s.every,
                s.keep,
                s.from_step,
                s.learning_rate
            ),
            (18250, None, 250, true, Some(16500), 2e-4)
        );
        let s_batch = BatchRecipe {
            lemma_documents: 0.0,
            ..r_batch
        };
        assert_eq!(
            (s.pair_loss, s.minutes, s.batch),
            (PairLoss::Sigmoid, None, s_batch)
        );
    }
}
