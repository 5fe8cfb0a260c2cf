//! What the command-line examples (`nbody_tiled`, `lj_melt`) share: exit
//! statuses, the one-line error report, progress display, the checks of
//! output paths, and the stepping loop that writes checkpoints and archive
//! records every `K` steps. Each example includes it with
//! `#[path = "cli/mod.rs"] mod cli;` (it is not an example itself).
#![allow(dead_code, reason = "each example uses its own subset")]

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use nbody_host::snapshot::{self, ArchiveWriter};
use nbody_host::{Isa, Simulation};

/// Exit statuses, each a kind of failure.
pub mod exit {
    /// The backend failed or cannot run here (no CUDA, an instruction set
    /// this CPU lacks, an emulator or driver error), or anything else.
    pub const OTHER: u8 = 1;
    /// The command line: unknown or conflicting flags, bad flag syntax, a
    /// flag that contradicts the checkpoint, an output that needs `--force`.
    pub const USAGE: u8 = 2;
    /// Invalid input: parameters or bodies the library refuses (`N`, `dt`,
    /// masses, block size), input files that are not valid, too little memory for `N`.
    pub const INPUT: u8 = 3;
    /// Reading or writing a file failed (including an output path checked
    /// before the run).
    pub const IO: u8 = 4;
    /// The run diverged: a non-finite state or energy.
    pub const DIVERGED: u8 = 5;
}

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

/// A failed run: the exit status ([`exit`]) and the one line to print.
#[derive(Debug)]
pub struct Failure {
    /// The exit status.
    pub code: u8,
    /// `error: ...`, one line.
    pub line: String,
}

/// A command-line mistake found after parsing (exit status 2).
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A [`Usage`] error.
pub fn usage(message: String) -> anyhow::Error {
    Usage(message).into()
}

/// `main`: runs `cli` on the process's arguments and streams, prints the
/// error line and returns its status.
pub fn main_with(
    cli: impl FnOnce(Vec<OsString>, &mut dyn Write, &mut dyn Write, Progress) -> Result<(), Failure>,
) -> std::process::ExitCode {
    let result = cli(
        std::env::args_os().collect(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr(),
        Progress::for_stderr(),
    );
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("{}", failure.line);
            std::process::ExitCode::from(failure.code)
        }
    }
}

/// Parses `args` (program name first): `Ok(None)` after writing `--help`
/// or `--version` to `out`, a [`Failure`] with status 2 and clap's first
/// paragraph on one line for a bad command line.
pub fn parse<P: Parser>(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    out: &mut dyn Write,
) -> Result<Option<P>, Failure> {
    match P::try_parse_from(args) {
        Ok(cli) => Ok(Some(cli)),
        Err(e) if !e.use_stderr() => {
            // --help, --version: not errors.
            write!(out, "{e}").map_err(|e| Failure {
                code: exit::IO,
                line: format!("error: {e}"),
            })?;
            Ok(None)
        }
        Err(e) => {
            // clap's first paragraph, on one line (the usage text is left out).
            let text = e.to_string();
            let first: Vec<&str> = text
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(str::trim)
                .collect();
            let line = first.join(" ");
            Err(Failure {
                code: exit::USAGE,
                line: if line.starts_with("error:") {
                    line
                } else {
                    format!("error: {line}")
                },
            })
        }
    }
}

/// A run's error as its [`Failure`].
pub fn failure(e: anyhow::Error) -> Failure {
    Failure {
        code: exit_code(&e),
        line: format!("error: {}", one_line(&e)),
    }
}

/// The exit status of an error: from the first cause that says.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    use nbody_host::Error as E;
    for cause in e.chain() {
        if cause.is::<Usage>() {
            return exit::USAGE;
        }
        if cause.is::<std::io::Error>() {
            return exit::IO;
        }
        if let Some(error) = cause.downcast_ref::<E>() {
            return match error {
                E::Io { .. } => exit::IO,
                E::Diverged { .. } | E::NonFiniteEnergy { .. } | E::NonFiniteSnapshot { .. } => {
                    exit::DIVERGED
                }
                E::NoBodies
                | E::TooManyBodies { .. }
                | E::LengthMismatch { .. }
                | E::InvalidMass { .. }
                | E::NonFiniteInput { .. }
                | E::InvalidTimeStep(_)
                | E::InvalidSoftening(_)
                | E::InvalidGravitationalConstant(_)
                | E::InvalidParameter { .. }
                | E::InvalidCombination(_)
                | E::Overlapping { .. }
                | E::InvalidBlockSize { .. }
                | E::SharedMemoryExceeded { .. }
                | E::GridTooLarge { .. }
                | E::DeviceMemoryExceeded { .. }
                | E::HostMemoryExceeded { .. }
                | E::InvalidFile { .. }
                | E::InvalidRenderSetting { .. } => exit::INPUT,
                _ => exit::OTHER,
            };
        }
    }
    exit::OTHER
}

/// The error and its causes on one line, each cause only once (the library's
/// messages already include their I/O causes).
pub fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
    }
    line.replace('\n', " ")
}

/// `--cpu-isa`'s parser.
pub fn parse_isa(name: &str) -> std::result::Result<Isa, String> {
    Isa::from_name(name).ok_or_else(|| {
        format!("unknown instruction set {name:?}: avx512, avx2+fma, neon or scalar")
    })
}

/// Whether `a` and `b` name the same existing file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// What a path names, for comparing outputs: the file, its symlinks and
/// its directory's resolved (as far as they exist), `.` and `..` gone.
fn output_identity(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = parent.canonicalize().unwrap_or(parent);
    match path.file_name() {
        Some(name) => dir.join(name),
        None => dir,
    }
}

/// Refuses two output flags naming the same file (exit status 2): each
/// would clobber the other's file.
pub fn distinct_outputs(outputs: &[(&str, &Option<PathBuf>)]) -> Result<()> {
    let given: Vec<(&str, &PathBuf, PathBuf)> = outputs
        .iter()
        .filter_map(|(flag, path)| path.as_ref().map(|p| (*flag, p, output_identity(p))))
        .collect();
    for (k, (flag, path, id)) in given.iter().enumerate() {
        if let Some((other, other_path, _)) = given[..k].iter().find(|(_, _, o)| o == id) {
            return Err(usage(format!(
                "{other} {} and {flag} {} name the same file: give each output its own",
                other_path.display(),
                path.display()
            )));
        }
    }
    Ok(())
}

/// The checkpoint and archive flags (`--checkpoint`, `--archive`,
/// `--every`, `--force`, `--resume`), as an example parsed them.
#[derive(Clone, Debug, Default)]
pub struct Periodic {
    /// `--checkpoint FILE`.
    pub checkpoint: Option<PathBuf>,
    /// `--archive FILE`.
    pub archive: Option<PathBuf>,
    /// `--every K`.
    pub every: Option<u64>,
    /// `--force`.
    pub force: bool,
    /// `--resume FILE`.
    pub resume: Option<PathBuf>,
}

impl Periodic {
    /// Checks every output path (`outputs`, in that order, which include
    /// the checkpoint and the archive) before anything runs: writable, and
    /// not another run's checkpoint or archive unless `--force`.
    pub fn check_outputs(&self, outputs: &[&Option<PathBuf>]) -> Result<()> {
        for path in outputs.iter().copied().flatten() {
            snapshot::check_output_path(path)?;
        }
        if let Some(path) = &self.checkpoint
            && path.exists()
            && !self.force
            && !self.resume.as_ref().is_some_and(|r| same_file(r, path))
        {
            return Err(usage(format!(
                "--checkpoint {}: the file exists (another run's checkpoint?); pass --force to \
                 replace it, or --resume from it",
                path.display()
            )));
        }
        if let Some(path) = &self.archive
            && path.exists()
            && !self.force
            && self.resume.is_none()
        {
            return Err(usage(format!(
                "--archive {}: the file exists (another run's archive?); pass --force to replace \
                 it, or --resume a checkpoint of the run that wrote it to continue it",
                path.display()
            )));
        }
        Ok(())
    }

    /// Opens the archive (continued from the checkpoint's step on a resume)
    /// and appends the starting state unless it is already there.
    pub fn open_archive(&self, sim: &Simulation) -> Result<Option<ArchiveWriter>> {
        let start = sim.steps_done();
        let mut archive = match &self.archive {
            Some(path) if self.resume.is_some() && path.exists() => {
                Some(ArchiveWriter::continue_at(path, start)?)
            }
            Some(path) => Some(ArchiveWriter::create(path)?),
            None => None,
        };
        if let Some(archive) = &mut archive
            && archive.last_step() != Some(start)
        {
            archive.append(sim)?;
        }
        Ok(archive)
    }
}

/// Prints `progress: ...` lines at most every `every`.
struct ProgressLines {
    every: Duration,
    start: Instant,
    last: Instant,
}

impl ProgressLines {
    fn update(&mut self, err: &mut dyn Write, done: u64, total: u64, target: u64, at: u64) {
        let now = Instant::now();
        if now.duration_since(self.last) < self.every || total == 0 {
            return;
        }
        self.last = now;
        let elapsed = now.duration_since(self.start).as_secs_f64();
        let left = elapsed * (total - done) as f64 / done.max(1) as f64;
        // Progress is a courtesy: a closed stderr does not stop the run.
        let _ = writeln!(
            err,
            "progress: step {at}/{target} ({:.0}%), {elapsed:.1} s, about {left:.0} s left",
            100.0 * done as f64 / total as f64
        );
    }
}

/// Steps `sim` to step `target` in chunks of about 1% of the run, cut at
/// every multiple of `periodic.every` (where it writes the checkpoint and an
/// archive record) and of each of `stops` (where it calls `at_stop` with the
/// step reached), showing `progress` on `err`; then the final checkpoint and
/// archive record. Returns the time spent in `Simulation::step` alone.
#[allow(
    clippy::too_many_arguments,
    reason = "one call per example, each argument its own concern"
)]
pub fn drive(
    sim: &mut Simulation,
    target: u64,
    periodic: &Periodic,
    archive: &mut Option<ArchiveWriter>,
    progress: Progress,
    err: &mut dyn Write,
    stops: &[u64],
    mut at_stop: impl FnMut(&mut Simulation, u64) -> Result<()>,
) -> Result<Duration> {
    let start = sim.steps_done();
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
    let mut lines = match progress {
        Progress::Lines(every) => Some(ProgressLines {
            every,
            start: Instant::now(),
            last: Instant::now(),
        }),
        _ => None,
    };
    // Chunks of about 1% of the run, so the bar moves; cut at checkpoints
    // and stops.
    let chunk = (to_run / 100).max(1);
    let mut stepping = Duration::ZERO;
    let mut last_checkpoint = None;
    while sim.steps_done() < target {
        let done = sim.steps_done();
        let mut end = (done + chunk).min(target);
        for k in periodic.every.iter().chain(stops) {
            end = end.min((done / k + 1) * k);
        }
        let t = Instant::now();
        let stepped = sim.step(end - done);
        stepping += t.elapsed();
        if let Err(e) = stepped {
            bar.abandon();
            return Err(e.into());
        }
        bar.set_position(end - start);
        if let Some(lines) = &mut lines {
            lines.update(err, end - start, to_run, target, end);
        }
        if let Some(k) = periodic.every
            && end.is_multiple_of(k)
        {
            if let Some(path) = &periodic.checkpoint {
                sim.save_checkpoint(path)?;
                last_checkpoint = Some(end);
            }
            if let Some(archive) = archive {
                archive.append(sim)?;
            }
        }
        if stops.iter().any(|&k| end.is_multiple_of(k)) || end == target {
            at_stop(sim, end)?;
        }
    }
    bar.finish_and_clear();
    if let Some(path) = &periodic.checkpoint
        && last_checkpoint != Some(sim.steps_done())
    {
        sim.save_checkpoint(path)?;
    }
    if let Some(archive) = archive
        && archive.last_step() != Some(sim.steps_done())
    {
        archive.append(sim)?;
    }
    Ok(stepping)
}
