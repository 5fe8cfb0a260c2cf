//! NVIDIA Warp's N-body example's problem from the command line: `N` bodies in a uniform
//! cube, softening 0.1, `dt = 0.01`, `G = 1`, the tiled kernel with 256
//! threads per block, semi-implicit Euler, on the best backend present.
//!
//! ```text
//! cargo run --release --example nbody_tiled                      # defaults
//! cargo run --release --example nbody_tiled -- --n 4096 --steps 50 --integrator leapfrog
//! cargo run --release --example nbody_tiled -- --steps 1000 --checkpoint run.ckpt --archive run.nbar --every 100
//! cargo run --release --example nbody_tiled -- --steps 2000 --resume run.ckpt --checkpoint run.ckpt --archive run.nbar --every 100
//! ```
//!
//! Prints the backend, kernel, size, wall time, interactions per second
//! (PIPS, `N^2 steps / seconds`) and the relative energy change, then one
//! machine-readable line:
//!
//! ```text
//! result backend=cpu kernel=third-law integrator=euler n=16384 steps=10 seconds=2.5 pips=1.07e9 energy_rel_change=1.2e-6
//! ```
//!
//! `kernel=` names what ran (on the CPU, `all-pairs` or `third-law`);
//! `energy_rel_change=skipped` with `--no-energy`, which leaves out the two
//! O(N^2) energy sums. Errors are one line `error: ...` on stderr and an
//! exit status (see [`AFTER_HELP`]). Progress goes to stderr: a bar on a
//! terminal, a plain line every few seconds otherwise, none with `--quiet`.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

// The command line every example shares; `cli::nbody`: gravity's flags,
// settings and report, shared with `nbody_mpi`.
#[macro_use]
#[path = "cli/mod.rs"]
mod cli;

pub use cli::nbody::AFTER_HELP;
use cli::nbody::{self, RunArgs};
pub use cli::{Failure, Progress, exit};

/// Direct-summation N-body gravity: NVIDIA Warp's N-body example's tiled-kernel run.
#[derive(Parser, Debug)]
#[command(
    name = "nbody_tiled",
    version,
    allow_negative_numbers = true,
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

fn main() -> ExitCode {
    cli::main_with(|args, out, err, progress| cli(args, out, err, progress))
}

/// Parses `args` (program name first), runs, writes the report to `out`
/// and notes and progress lines to `err`. Errors come back as one line
/// `error: ...` with their exit status.
pub fn cli(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    out: &mut dyn Write,
    err: &mut (dyn Write + Send),
    progress: Progress,
) -> Result<(), Failure> {
    let Some(cli) = cli::parse::<Cli>(args, out)? else {
        return Ok(());
    };
    let progress = progress.unless(cli.run.run.quiet);
    cli::with_reporter(progress, err, |reporter| -> anyhow::Result<()> {
        cli.run.check_outputs()?;
        reporter.phase("preparing the bodies");
        let (builder, changes) = nbody::prepare(&cli.run)?;
        reporter.phase("starting the backend");
        let mut session = cli::Local::new(builder.build()?);
        nbody::run(&cli.run, &mut session, &changes, out, reporter)
    })
    .map_err(|e| cli::failure(&e))
}
