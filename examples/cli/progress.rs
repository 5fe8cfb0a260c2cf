//! Progress on stderr: a bar on a terminal, plain periodic lines
//! otherwise, nothing with `--quiet` (or on MPI ranks other than 0).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How progress is shown on stderr.
#[derive(Clone, Copy, Debug)]
pub enum Progress {
    /// A progress bar (stderr is a terminal).
    Bar,
    /// A plain line `progress: step ...` at most this often.
    Lines(Duration),
    /// Nothing.
    Off,
}

/// Seconds between progress lines when stderr is not a terminal.
pub const PROGRESS_LINE_EVERY: Duration = Duration::from_secs(5);

impl Progress {
    /// A bar on a terminal, plain lines otherwise.
    pub fn for_stderr() -> Progress {
        if std::io::stderr().is_terminal() {
            Progress::Bar
        } else {
            Progress::Lines(PROGRESS_LINE_EVERY)
        }
    }
}

/// Shows the progress of one stepping loop from `start` to `target`.
pub(super) struct Reporter {
    bar: ProgressBar,
    lines: Option<Lines>,
    start: u64,
    target: u64,
}

/// Prints `progress: ...` lines at most every `every`.
struct Lines {
    every: Duration,
    start: Instant,
    last: Instant,
}

impl Reporter {
    /// A reporter for the steps `start..target`.
    pub(super) fn new(progress: Progress, start: u64, target: u64) -> Reporter {
        let to_run = target.saturating_sub(start);
        let bar = match progress {
            Progress::Bar => {
                let bar = ProgressBar::new(to_run);
                if let Ok(style) = ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} steps  {elapsed_precise} (eta {eta})",
                ) {
                    bar.set_style(style);
                }
                bar
            }
            _ => ProgressBar::hidden(),
        };
        let lines = match progress {
            Progress::Lines(every) => Some(Lines {
                every,
                start: Instant::now(),
                last: Instant::now(),
            }),
            _ => None,
        };
        Reporter {
            bar,
            lines,
            start,
            target,
        }
    }

    /// The loop reached step `at`.
    pub(super) fn reached(&mut self, err: &mut dyn Write, at: u64) {
        let done = at - self.start;
        self.bar.set_position(done);
        let total = self.target - self.start;
        let Some(lines) = &mut self.lines else { return };
        let now = Instant::now();
        if now.duration_since(lines.last) < lines.every || total == 0 {
            return;
        }
        lines.last = now;
        let elapsed = now.duration_since(lines.start).as_secs_f64();
        let left = elapsed * (total - done) as f64 / done.max(1) as f64;
        // Progress is a courtesy: a closed stderr does not stop the run.
        let _ = writeln!(
            err,
            "progress: step {at}/{} ({:.0}%), {elapsed:.1} s, about {left:.0} s left",
            self.target,
            100.0 * done as f64 / total as f64
        );
    }

    /// The loop stopped on an error: the bar stays where it was.
    pub(super) fn abandon(&self) {
        self.bar.abandon();
    }

    /// The loop is done: the bar goes.
    pub(super) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
