//! The command line every example shares (`nbody_tiled`, `nbody_mpi`,
//! `lj_melt`, `md`): each includes this directory with
//! `#[path = "cli/mod.rs"] mod cli;` (it is not an example itself).
//!
//! | file | what |
//! | --- | --- |
//! | `mod.rs` | exit statuses, the one-line error report, parsing, `main` |
//! | `flags.rs` | the flags of every run ([`RunFlags`]), declared once: steps, backend and instruction set, outputs, resume, `--quiet`; the backend they choose, the checks of the output paths |
//! | `progress.rs` | progress on stderr: a bar on a terminal, plain lines otherwise, nothing with `--quiet` |
//! | `session.rs` | what the stepping loop drives ([`Session`]: one [`Simulation`](nbody_host::Simulation) or MPI ranks), the loop itself ([`drive`]) with checkpoints, archive records and stops |
//! | `nbody.rs` | gravity (`nbody_tiled`, `nbody_mpi`): its flags, settings and report |
//! | `md_run.rs` | molecular dynamics (`lj_melt`, `md`): the thermo, trajectory and analysis flags, the run loop, the LAMMPS-style report |
//! | `lj_outputs.rs` | MD's `--dump`/`--rdf`/`--msd`: checked, fed at each stop, written |
#![allow(
    dead_code,
    unused_imports,
    unused_macros,
    reason = "each example uses its own subset"
)]

/// The exit statuses as `--help` states them: the end of every example's
/// `AFTER_HELP` (`concat!`, so the examples include this module with
/// `#[macro_use]`).
macro_rules! exit_statuses_help {
    () => {
        "Exit status: 0 success, 1 backend failure or other error, 2 usage (flags),
3 invalid input (parameters, bodies, input files, memory for the run), 4 file I/O,
5 divergence (a non-finite state or energy, or a run that exploded)."
    };
}

mod flags;
pub mod lj_outputs;
pub mod md_run;
pub mod nbody;
mod progress;
mod session;

use std::ffi::OsString;
use std::io::Write;

use clap::Parser;

pub use flags::{
    AutoPicks, BackendArg, RunFlags, checkpoint_kind, exploded, invalid, parse_isa, usage,
};
pub use progress::{PROGRESS_LINE_EVERY, Progress, Reporter, with_reporter};
pub(crate) use session::forward_to_sim;
pub use session::{Local, Session, drive, open_archive};

/// Exit statuses, each a kind of failure.
pub mod exit {
    /// The backend failed or cannot run here (no CUDA, an instruction set
    /// this CPU lacks, an emulator or driver error), or anything else.
    pub const OTHER: u8 = 1;
    /// The command line: unknown or conflicting flags, bad flag syntax, a
    /// flag that contradicts the checkpoint or cannot apply, an output that
    /// needs `--force`, one path given to two outputs.
    pub const USAGE: u8 = 2;
    /// Invalid input: parameters or bodies the library refuses (`N`, `dt`,
    /// masses, block size, a Lennard-Jones setting), input files that are
    /// not valid or of the wrong kind, too little memory for the run.
    pub const INPUT: u8 = 3;
    /// Reading or writing a file failed (including an output path checked
    /// before the run).
    pub const IO: u8 = 4;
    /// The run diverged: a non-finite state or energy, or an exploded one.
    pub const DIVERGED: u8 = 5;
}

/// A failed run: the exit status ([`exit`]) and the one line to print.
#[derive(Debug)]
pub struct Failure {
    /// The exit status.
    pub code: u8,
    /// `error: ...`, one line.
    pub line: String,
    /// The error is another MPI rank's (`nbody_host::Error::OtherRank`),
    /// which prints its own line.
    pub elsewhere: bool,
}

/// `main`: runs `cli` on the process's arguments and streams, prints the
/// error line and returns its status.
pub fn main_with(
    cli: impl FnOnce(
        Vec<OsString>,
        &mut dyn Write,
        &mut (dyn Write + Send),
        Progress,
    ) -> Result<(), Failure>,
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
                elsewhere: false,
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
                elsewhere: false,
            })
        }
    }
}

/// A run's error as its [`Failure`]: exit status and one line.
pub fn failure(e: &anyhow::Error) -> Failure {
    let elsewhere = e.chain().any(|c| {
        matches!(
            c.downcast_ref::<nbody_host::Error>(),
            Some(nbody_host::Error::OtherRank { .. })
        )
    });
    Failure {
        code: exit_code(e),
        line: format!("error: {}", one_line(e)),
        elsewhere,
    }
}

/// The exit status of an error: from the first cause that says.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    use nbody_host::Error as E;
    for cause in e.chain() {
        if cause.is::<flags::Usage>() {
            return exit::USAGE;
        }
        if cause.is::<flags::Invalid>() {
            return exit::INPUT;
        }
        if cause.is::<flags::Exploded>() {
            return exit::DIVERGED;
        }
        if cause.is::<std::io::Error>() {
            return exit::IO;
        }
        if let Some(error) = cause.downcast_ref::<E>() {
            return match error {
                E::Io { .. } => exit::IO,
                E::Diverged { .. }
                | E::BoxTooSmall { .. }
                | E::Exploded { .. }
                | E::NonFiniteEnergy { .. }
                | E::NonFiniteSnapshot { .. } => exit::DIVERGED,
                E::NoBodies
                | E::TooManyBodies { .. }
                | E::LengthMismatch { .. }
                | E::InvalidMass { .. }
                | E::NonFiniteInput { .. }
                | E::InvalidTimeStep(_)
                | E::InvalidSoftening(_)
                | E::InvalidGravitationalConstant(_)
                | E::InvalidParameter { .. }
                | E::InvalidTargetTime { .. }
                | E::CoincidentBodies { .. }
                | E::InvalidCombination(_)
                | E::Overlapping { .. }
                | E::InvalidBlockSize { .. }
                | E::SharedMemoryExceeded { .. }
                | E::GridTooLarge { .. }
                | E::DeviceMemoryExceeded { .. }
                | E::HostMemoryExceeded { .. }
                | E::InvalidFile { .. }
                | E::InvalidRenderSetting { .. }
                | E::InvalidMdSetting { .. } => exit::INPUT,
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

/// `t` rounded to 12 significant digits, printed as the shortest decimal
/// that reads back as that: the clock adds `dt` once a step, so ten steps
/// of 0.01 make 0.09999999999999999, printed `0.1`.
pub fn rounded(t: f64) -> String {
    match format!("{t:.11e}").parse::<f64>() {
        Ok(r) => format!("{r}"),
        Err(_) => format!("{t}"),
    }
}
