//! The evaluation table: one row per figure, each beside chance and a baseline measured on the same items, with the
//! issue's target and whether it is met, written as Markdown (`evaluation.md`) and as TSV (`evaluation.tsv`, read by
//! `tools/plot/plot_run.py`).

use std::error::Error;
use std::fmt::Write as _;
use std::path::Path;

/// How a figure reads.
#[derive(Clone, Copy, PartialEq)]
pub enum Unit {
    /// A share, printed as a percentage.
    Percent,
    /// A plain number (the calibration error), printed with three decimals.
    Plain,
}

/// The target a figure of the evaluation is held to (docs/training/README.md, "Evaluation").
#[derive(Clone, Copy)]
pub enum Target {
    /// None for this figure.
    None,
    /// At least ten times chance.
    TenTimesChance,
    /// At least ten times chance and at least the baseline.
    TenTimesChanceAndBaseline,
    /// At most this value.
    AtMost(f64),
    /// At least this value.
    AtLeast(f64),
}

/// One figure of the table.
pub struct Row {
    /// What is measured, such as `synonym -> lemma`.
    pub task: String,
    /// How it is scored, such as `embedding cosine`.
    pub scorer: String,
    /// The metric, such as `recall@10`.
    pub metric: String,
    /// The model's figure.
    pub model: f64,
    /// The baseline's name and figure, when there is one.
    pub baseline: Option<(String, f64)>,
    /// The figure by chance, when it means something.
    pub chance: Option<f64>,
    /// The target.
    pub target: Target,
    /// Queries or items scored.
    pub items: usize,
    /// How it reads.
    pub unit: Unit,
}

impl Row {
    /// The target in words and whether it is met (`None` without a target).
    fn verdict(&self) -> (String, Option<bool>) {
        let chance = self.chance.unwrap_or(0.0);
        let baseline = self.baseline.as_ref().map_or(0.0, |(_, value)| *value);
        match self.target {
            Target::None => (String::new(), None),
            Target::TenTimesChance => (
                format!(">= {}", self.show(10.0 * chance)),
                Some(self.model >= 10.0 * chance),
            ),
            Target::TenTimesChanceAndBaseline => (
                format!(">= {} and >= baseline", self.show(10.0 * chance)),
                Some(self.model >= 10.0 * chance && self.model >= baseline),
            ),
            Target::AtMost(limit) => (
                format!("<= {}", self.show(limit)),
                Some(self.model <= limit),
            ),
            Target::AtLeast(limit) => (
                format!(">= {}", self.show(limit)),
                Some(self.model >= limit),
            ),
        }
    }

    /// A value in this row's unit.
    fn show(&self, value: f64) -> String {
        match self.unit {
            Unit::Percent => format!("{:.2}%", 100.0 * value),
            Unit::Plain => format!("{value:.3}"),
        }
    }
}

/// Writes `evaluation.md` (the table under `heading`, then `notes` as a list) and `evaluation.tsv` into `out`.
pub fn write(
    out: &Path,
    heading: &str,
    rows: &[Row],
    notes: &[String],
) -> Result<(), Box<dyn Error>> {
    std::fs::create_dir_all(out)?;
    let mut markdown = format!("{heading}\n\n");
    markdown.push_str("| task | scorer | metric | model | baseline | chance | model / chance | target | met | n |\n");
    markdown.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    let mut tsv = String::from(
        "#task\tscorer\tmetric\tmodel\tbaseline\tbaseline_value\tchance\ttarget\tmet\titems\tunit\n",
    );
    for row in rows {
        let (target, met) = row.verdict();
        let met = met.map_or("", |met| if met { "yes" } else { "no" });
        let baseline = row
            .baseline
            .as_ref()
            .map_or("—".to_owned(), |(name, value)| {
                format!("{} ({name})", row.show(*value))
            });
        let chance = row.chance.map_or("—".to_owned(), |chance| row.show(chance));
        let ratio = match row.chance {
            Some(chance) if chance > 0.0 && row.unit == Unit::Percent => {
                format!("{:.1}x", row.model / chance)
            }
            _ => "—".to_owned(),
        };
        writeln!(
            markdown,
            "| {} | {} | {} | {} | {baseline} | {chance} | {ratio} | {target} | {met} | {} |",
            row.task,
            row.scorer,
            row.metric,
            row.show(row.model),
            row.items
        )?;
        let (baseline_name, baseline_value) = row
            .baseline
            .as_ref()
            .map_or((String::new(), String::new()), |(name, value)| {
                (name.clone(), value.to_string())
            });
        writeln!(
            tsv,
            "{}\t{}\t{}\t{}\t{baseline_name}\t{baseline_value}\t{}\t{target}\t{met}\t{}\t{}",
            row.task,
            row.scorer,
            row.metric,
            row.model,
            row.chance
                .map_or(String::new(), |chance| chance.to_string()),
            row.items,
            if row.unit == Unit::Percent {
                "share"
            } else {
                "plain"
            },
        )?;
    }
    markdown.push('\n');
    for note in notes {
        writeln!(markdown, "- {note}")?;
    }
    std::fs::write(out.join("evaluation.md"), markdown)?;
    std::fs::write(out.join("evaluation.tsv"), tsv)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(model: f64, target: Target) -> Row {
        Row {
            task: "t".into(),
            scorer: "s".into(),
            metric: "recall@1".into(),
            model,
            baseline: Some(("b".into(), 0.3)),
            chance: Some(0.01),
            target,
            items: 5,
            unit: Unit::Percent,
        }
    }

    #[test]
    fn verdicts_hold_each_figure_to_its_target() {
        assert_eq!(row(0.11, Target::TenTimesChance).verdict().1, Some(true));
        assert_eq!(row(0.09, Target::TenTimesChance).verdict().1, Some(false));
        assert_eq!(
            row(0.2, Target::TenTimesChanceAndBaseline).verdict().1,
            Some(false)
        );
        assert_eq!(
            row(0.3, Target::TenTimesChanceAndBaseline).verdict().1,
            Some(true)
        );
        assert_eq!(row(0.3, Target::None).verdict().1, None);
        let mut ece = row(0.04, Target::AtMost(0.05));
        ece.unit = Unit::Plain;
        assert_eq!(ece.verdict(), ("<= 0.050".to_owned(), Some(true)));
        let mut rho = row(0.79, Target::AtLeast(0.8));
        rho.unit = Unit::Plain;
        assert_eq!(rho.verdict(), (">= 0.800".to_owned(), Some(false)));
    }
}
