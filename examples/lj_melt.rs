//! LAMMPS's classic `in.lj` benchmark, the 3D Lennard-Jones melt, on this
//! library: an fcc lattice at reduced density 0.8442 (20^3 unit cells,
//! 32,000 atoms) in a periodic box, velocities at T = 1.44, `lj/cut 2.5`,
//! a 0.3 skin with lists rebuilt every 20 steps, velocity Verlet (NVE) with
//! `dt = 0.005`, 100 steps.
//!
//! ```text
//! cargo run --release --example lj_melt                              # in.lj
//! cargo run --release --example lj_melt -- --cells 10 --steps 1000 --shift --thermo 100
//! lammps-peer init lj.npy --cells 20 && cargo run --release --example lj_melt -- --init lj.npy --box 33.5919238
//! cargo run --release --example lj_melt -- --steps 1000 --checkpoint lj.ckpt --archive lj.nbar --every 100
//! cargo run --release --example lj_melt -- --dump melt.dcd --dump-every 20 --rdf gr.txt --msd msd.txt
//! ```
//!
//! Prints a LAMMPS-style thermo table (`Step Temp PotEng KinEng TotEng
//! Press`, energies per atom, LJ units) every `--thermo` steps, LAMMPS's
//! time split (Pair, Neigh, Modify = the integrator, Output = thermo,
//! trajectory frames and g(r)/MSD samples), and
//! one machine-readable line:
//!
//! ```text
//! result backend=cpu atoms=32000 steps=100 seconds=0.9 atom_steps_per_s=3.5e6 pe0=-6.77 etotal0=-4.62 etotal=-4.63 temp=0.75
//! ```
//!
//! `seconds` is the loop's wall time, thermo output, frames and samples
//! included (LAMMPS's "Loop time", which includes its dumps), which the
//! time split's five sections add up to. `--dump`, `--rdf`, `--msd`:
//! trajectories and analysis (`cli/md_run.rs`, `cli/lj_outputs.rs`, docs/md.md
//! "Trajectories and analysis").
//! `--plot FILE.png` draws kinetic, potential and total energy per atom
//! against time (sampled about 400 times), the relative drift of the total
//! below them, and with `--lammps-thermo FILE` (the thermo table
//! `lammps-peer run` prints) LAMMPS's beside them. Progress goes to stderr
//! (`--quiet`: none). Errors are one line `error: ...` on stderr with the
//! exit statuses of `nbody_tiled`; a run that explodes stops with status 5
//! naming the step and a body.
//!
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use nbody_host::{Boundary, Checkpoint, ForceLaw, Integrator, PairStyle, Simulation, snapshot};

// The command line every example shares.
#[macro_use]
#[path = "cli/mod.rs"]
mod cli;
use cli::md_run::{self, MdJob, MdOutputFlags, MdSystemFlags};
use cli::{AutoPicks, RunFlags};
pub use cli::{Failure, Progress, exit};

/// The end of `--help`: units and exit statuses.
pub const AFTER_HELP: &str = concat!(
    "\
Units: LAMMPS's `units lj` (sigma = epsilon = mass = k_B = 1; time in tau).
Energies in the thermo table and the result line are per atom; the
temperature counts 3N - 3 degrees of freedom; the pressure comes from the
virial, as LAMMPS prints them.

",
    exit_statuses_help!()
);

/// Steps of a run without `--steps` (in.lj's).
const DEFAULT_STEPS: u64 = 100;

/// The Lennard-Jones melt (LAMMPS's in.lj) on the N-body library.
#[derive(Parser, Debug)]
#[command(
    name = "lj_melt",
    version,
    allow_negative_numbers = true,
    after_help = AFTER_HELP,
    mut_arg("steps", |a| a.help(
        "Steps to run; with --resume, the step count to reach (counted from the start of \
         the run) [default: 100]"
    )),
    mut_arg("resume", |a| a.help("Continue from a checkpoint (all parameters from it)")),
)]
struct Cli {
    #[command(flatten)]
    system: MdSystemFlags,
    /// Cutoff r_c (in sigma)
    #[arg(long, default_value_t = 2.5, conflicts_with = "resume")]
    cutoff: f64,
    /// Seed of the lattice's velocities
    #[arg(long, default_value_t = 87287, conflicts_with_all = ["init", "resume"])]
    seed: u64,
    /// Shift the potential to zero at the cutoff (LAMMPS pair_modify shift yes)
    #[arg(long, conflicts_with = "resume")]
    shift: bool,
    /// Start from an (N, 7) .npy array (x y z vx vy vz m), e.g. `lammps-peer init`
    #[arg(
        long,
        value_name = "FILE.npy",
        requires = "box_length",
        conflicts_with = "resume"
    )]
    init: Option<PathBuf>,
    /// The cubic periodic box [0, L)^3 of --init
    #[arg(long = "box", value_name = "L", requires = "init")]
    box_length: Option<f64>,
    #[command(flatten)]
    run: RunFlags,
    #[command(flatten)]
    outputs: MdOutputFlags,
}

fn main() -> ExitCode {
    cli::main_with(|args, out, err, progress| cli(args, out, err, progress))
}

/// Parses `args` (program name first), runs, writes the report to `out`
/// and progress lines to `err`. Errors come back as one line `error: ...`
/// with their exit status.
pub fn cli(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    out: &mut dyn Write,
    err: &mut (dyn Write + Send),
    progress: Progress,
) -> Result<(), Failure> {
    let Some(cli) = cli::parse::<Cli>(args, out)? else {
        return Ok(());
    };
    let progress = progress.unless(cli.run.quiet);
    cli::with_reporter(progress, err, |reporter| run(&cli, out, reporter))
        .map_err(|e| cli::failure(&e))
}

/// Builds the simulation the command line asks for.
fn build(cli: &Cli) -> Result<Simulation> {
    if let Some(path) = &cli.run.resume {
        let (checkpoint, md) = Checkpoint::load_with_md(path)?;
        let style = checkpoint.params.force().as_pair().map(|p| p.style());
        if style != Some(PairStyle::LennardJones) {
            let (kind, example) = cli::checkpoint_kind(&checkpoint.params);
            return Err(cli::invalid(format!(
                "--resume {}: this is a {kind} checkpoint: use {example}",
                path.display()
            )));
        }
        let builder = Simulation::from_checkpoint(checkpoint);
        let builder = match md {
            Some(md) => builder.md_state(md),
            None => builder,
        };
        return Ok(builder.backend(cli.run.backend(AutoPicks::Cpu)?).build()?);
    }
    let (atoms, boundary) = match (&cli.init, cli.box_length) {
        (Some(path), Some(l)) => (
            snapshot::load_npy(path).with_context(|| format!("--init {}", path.display()))?,
            Boundary::cubic(l),
        ),
        _ => cli.system.lattice(cli.seed)?,
    };
    Ok(Simulation::builder(atoms)
        .force(ForceLaw::lennard_jones(1.0, 1.0, cli.cutoff, cli.shift)?)
        .boundary(boundary)
        .neighbours(cli.system.neighbours())
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(cli.system.dt)
        .backend(cli.run.backend(AutoPicks::Cpu)?)
        .build()?)
}

fn run(cli: &Cli, out: &mut dyn Write, reporter: &cli::Reporter) -> Result<()> {
    let job = MdJob {
        run: &cli.run,
        outputs: &cli.outputs,
        default_steps: DEFAULT_STEPS,
        dt: cli.system.dt,
        rdf_cutoff: cli.cutoff,
        rdf_pairs: Vec::new(),
        title: "Lennard-Jones melt",
        conserves_energy: true,
    };
    md_run::run(&job, out, reporter, || build(cli))
}
