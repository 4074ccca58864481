//! What a run reports as it goes: `log.tsv` (a row per training step and per validation) and the progress line.

use std::error::Error;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use uform::TrainerStepStats;

use crate::trainer::{self, Terms};

/// A run's log: `log.tsv` for rank 0, `log.rank<R>.tsv` for the others.
pub struct Log {
    /// The open file.
    file: File,
    /// Its path, for the last line.
    pub path: PathBuf,
}

impl Log {
    /// Opens rank `rank`'s log in `run`: appended to when resuming, else started afresh with its header.
    pub fn open(run: &Path, rank: usize, resume: bool) -> Result<Self, Box<dyn Error>> {
        let path = run.join(if rank == 0 {
            "log.tsv".to_owned()
        } else {
            format!("log.rank{rank}.tsv")
        });
        let fresh = !resume || !path.exists();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(resume)
            .truncate(!resume)
            .open(&path)?;
        if fresh {
            writeln!(
                file,
                "#steps\tsplit\tloss\tmasking\tcontrastive\tlate_interaction\tchoices\tdistill\ttokens\tseconds"
            )?;
        }
        Ok(Self { file, path })
    }

    /// A training step's row.
    pub fn step(&mut self, done: usize, stats: &TrainerStepStats) -> Result<(), Box<dyn Error>> {
        let seconds = stats.nanoseconds as f64 * 1e-9;
        writeln!(
            self.file,
            "{done}\ttrain\t{}\t{}\t{seconds:.3}",
            trainer::terms(stats).map(|t| t.to_string()).join("\t"),
            stats.tokens
        )?;
        Ok(())
    }

    /// A validation's row, flushed with the rows before it.
    pub fn validation(&mut self, done: usize, loss: &Terms) -> Result<(), Box<dyn Error>> {
        writeln!(
            self.file,
            "{done}\tvalidation\t{}\t0\t0",
            loss.map(|t| t.to_string()).join("\t")
        )?;
        self.file.flush()?;
        Ok(())
    }
}

/// Tokens a second over what the trainer measured.
pub fn throughput(tokens: usize, nanoseconds: u64) -> f64 {
    tokens as f64 / (nanoseconds as f64 * 1e-9).max(1e-9)
}

/// Overwrites the progress line on the standard error: the step, its loss terms, the rate, the time spent and left.
pub fn line(
    done: usize,
    steps: usize,
    stats: &TrainerStepStats,
    tokens_per_second: f64,
    elapsed: Duration,
    left: Duration,
) {
    eprint!(
        "\rstep {done}/{steps}  {}  lr {:.1e}  {tokens_per_second:.0} tokens/s  {} elapsed, ETA {} ",
        trainer::show(&trainer::terms(stats)),
        stats.learning_rate,
        clock(elapsed),
        clock(left),
    );
    let _ = std::io::stderr().flush();
}

/// `h:mm:ss`.
pub fn clock(duration: Duration) -> String {
    let seconds = duration.as_secs();
    format!(
        "{}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_reads_hours_minutes_seconds() {
        assert_eq!(clock(Duration::from_secs(3 * 3600 + 7 * 60 + 5)), "3:07:05");
        assert_eq!(clock(Duration::from_millis(999)), "0:00:00");
    }

    #[test]
    fn a_resumed_log_keeps_its_rows_and_a_fresh_one_starts_over() {
        let run = std::env::temp_dir().join(format!("uform-train-log-{}", std::process::id()));
        std::fs::create_dir_all(&run).unwrap();
        let stats = TrainerStepStats {
            loss: 2.5,
            tokens: 7,
            ..TrainerStepStats::default()
        };
        let mut log = Log::open(&run, 0, false).unwrap();
        log.step(1, &stats).unwrap();
        drop(log);
        let mut log = Log::open(&run, 0, true).unwrap();
        log.validation(1, &[1.0; 6]).unwrap();
        let text = std::fs::read_to_string(run.join("log.tsv")).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text.lines().nth(1).unwrap().starts_with("1\ttrain\t2.5\t"));
        assert_eq!(
            text.lines().nth(2).unwrap(),
            "1\tvalidation\t1\t1\t1\t1\t1\t1\t0\t0"
        );
        drop(log);
        Log::open(&run, 0, false).unwrap();
        assert_eq!(
            std::fs::read_to_string(run.join("log.tsv"))
                .unwrap()
                .lines()
                .count(),
            1
        );
        assert!(Log::open(&run, 1, false)
            .unwrap()
            .path
            .ends_with("log.rank1.tsv"));
        std::fs::remove_dir_all(&run).unwrap();
    }
}
