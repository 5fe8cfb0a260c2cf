//! Progress on stderr while a run works: on a terminal an indicatif bar
//! (what it is doing, steps done, steps/s, ETA), redrawn as time passes
//! even within one long step; otherwise a plain line `progress: ...` at
//! most every few seconds, also while one phase (the initial conditions,
//! an O(N^2) energy sum, a long step) lasts; nothing with `--quiet` (or on
//! MPI ranks other than 0). Notes go to stderr in every mode.

use std::io::{IsTerminal, Write};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How progress is shown on stderr.
#[derive(Clone, Copy, Debug)]
pub enum Progress {
    /// A progress bar (stderr is a terminal).
    Bar,
    /// A plain line `progress: ...` at most this often (with 0, one at
    /// each chunk of steps and no lines while a phase lasts).
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

    /// Nothing if `quiet`, else this.
    pub fn unless(self, quiet: bool) -> Progress {
        if quiet { Progress::Off } else { self }
    }
}

/// Runs `f` with a [`Reporter`] writing to `err`: a bar, or plain lines
/// (with a thread that writes one while a phase or a step lasts), or
/// nothing; the bar is cleared when `f` returns.
pub fn with_reporter<T>(
    progress: Progress,
    err: &mut (dyn Write + Send),
    f: impl FnOnce(&Reporter) -> T,
) -> T {
    let reporter = Reporter::new(progress, err);
    std::thread::scope(|s| {
        if let Progress::Lines(every) = progress
            && !every.is_zero()
        {
            let reporter = &reporter;
            s.spawn(move || reporter.tick(every));
        }
        let result = f(&reporter);
        reporter.finish();
        result
    })
}

/// The bar's look outside the stepping loop: what the run does, for how long.
fn spinner() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg} {elapsed_precise}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// What a run is doing, for its progress display (see [`with_reporter`]).
pub struct Reporter<'a> {
    progress: Progress,
    bar: ProgressBar,
    state: Mutex<State<'a>>,
    /// Wakes the line thread when the run is done.
    done: Condvar,
}

struct State<'a> {
    err: &'a mut (dyn Write + Send),
    start: Instant,
    last_line: Instant,
    phase: String,
    stepping: Option<Stepping>,
    done: bool,
}

/// The stepping loop's progress.
#[derive(Clone, Copy)]
struct Stepping {
    start: u64,
    target: u64,
    at: u64,
    since: Instant,
}

impl Stepping {
    /// `progress: step ...`: where it is, the rate and the time left.
    fn line(&self, now: Instant) -> String {
        let (done, total) = (self.at - self.start, self.target - self.start);
        let elapsed = now.duration_since(self.since).as_secs_f64();
        if done == 0 {
            return format!(
                "progress: step {}/{} (0%), {elapsed:.1} s, the first steps running",
                self.at, self.target
            );
        }
        let rate = done as f64 / elapsed.max(1e-9);
        let left = elapsed * (total - done) as f64 / done.max(1) as f64;
        format!(
            "progress: step {}/{} ({:.0}%), {elapsed:.1} s, {rate:.3} steps/s, about {left:.0} s left",
            self.at,
            self.target,
            100.0 * done as f64 / total.max(1) as f64
        )
    }
}

impl<'a> Reporter<'a> {
    fn new(progress: Progress, err: &'a mut (dyn Write + Send)) -> Reporter<'a> {
        let bar = match progress {
            Progress::Bar => {
                let bar = ProgressBar::new_spinner();
                bar.set_style(spinner());
                bar.enable_steady_tick(Duration::from_millis(200));
                bar
            }
            _ => ProgressBar::hidden(),
        };
        let now = Instant::now();
        Reporter {
            progress,
            bar,
            state: Mutex::new(State {
                err,
                start: now,
                last_line: now,
                phase: String::new(),
                stepping: None,
                done: false,
            }),
            done: Condvar::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State<'a>> {
        // Progress is a courtesy: a panic elsewhere leaves nothing here half-done.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run now does `what` (before or after the stepping loop).
    pub fn phase(&self, what: &str) {
        let mut state = self.state();
        state.phase = what.to_owned();
        if state.stepping.take().is_some() {
            self.bar.set_style(spinner());
        }
        self.bar.set_message(what.to_owned());
    }

    /// The stepping loop starts: steps `start..target`.
    pub(super) fn steps(&self, start: u64, target: u64) {
        let mut state = self.state();
        state.phase = "stepping".into();
        state.stepping = Some(Stepping {
            start,
            target,
            at: start,
            since: Instant::now(),
        });
        if let Progress::Bar = self.progress {
            self.bar.set_length(target - start);
            self.bar.set_position(0);
            self.bar.reset_eta();
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:40} {pos}/{len} steps, {per_sec}, {elapsed_precise} (eta {eta})",
            ) {
                self.bar.set_style(style);
            }
        }
    }

    /// The loop reached step `at`: a line if one is due.
    pub(super) fn reached(&self, at: u64) {
        let mut state = self.state();
        let Some(stepping) = &mut state.stepping else {
            return;
        };
        stepping.at = at;
        let stepping = *stepping;
        self.bar.set_position(at - stepping.start);
        if let Progress::Lines(every) = self.progress {
            let now = Instant::now();
            if now.duration_since(state.last_line) >= every && stepping.target > stepping.start {
                state.last_line = now;
                let line = stepping.line(now);
                // Progress is a courtesy: a closed stderr does not stop the run.
                let _ = writeln!(state.err, "{line}");
            }
        }
    }

    /// A note on stderr (in every mode, `--quiet` included).
    pub fn note(&self, text: &str) {
        let mut state = self.state();
        let err = &mut state.err;
        self.bar.suspend(|| {
            let _ = writeln!(err, "note: {text}");
        });
    }

    /// Runs `f` (which writes to stdout) with the bar out of the way.
    pub fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        self.bar.suspend(f)
    }

    /// The run stopped on an error: the bar stays where it was.
    pub(super) fn abandon(&self) {
        if let Progress::Bar = self.progress {
            self.bar.abandon();
        }
    }

    /// The run is done: the bar goes, the line thread stops.
    fn finish(&self) {
        self.state().done = true;
        self.done.notify_all();
        self.bar.finish_and_clear();
    }

    /// The line thread: while the run lasts, a line whenever `every` has
    /// passed without one (a long phase or step says it is alive).
    fn tick(&self, every: Duration) {
        let mut state = self.state();
        while !state.done {
            let now = Instant::now();
            let due = state.last_line + every;
            if now >= due {
                state.last_line = now;
                let line = match &state.stepping {
                    Some(stepping) => stepping.line(now),
                    None => format!(
                        "progress: {}, {:.1} s into the run",
                        state.phase,
                        now.duration_since(state.start).as_secs_f64()
                    ),
                };
                let _ = writeln!(state.err, "{line}");
                continue;
            }
            state = self
                .done
                .wait_timeout(state, due - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
