//! The molecular-dynamics driver: any pair style, atom types, ensemble and
//! box this library runs, from LAMMPS's own words for them (`--pair` is
//! `pair_style`, `--pair-coeff` is `pair_coeff`), with `lj_melt`'s thermo
//! table, time split, trajectory and analysis outputs, checkpoints and
//! `result` line (the shared `cli/md_run.rs`).
//!
//! ```text
//! cargo run --release --example md -- --cells 8 --pair lj 2.5 --shift --steps 1000 --thermo 100
//! # Kob-Andersen 80:20 at density 1.2, NVT at T = 0.75 from an (N, 8) state x y z vx vy vz m type:
//! cargo run --release --example md -- --init ka.npy --box 9.4103602 --pair lj 2.5 \
//!     --pair-coeff 1 1 1.0 1.0 --pair-coeff 1 2 1.5 0.8 2.0 --pair-coeff 2 2 0.5 0.88 2.2 --shift \
//!     --dt 0.005 --steps 10000 --ensemble nvt --temp-target 0.75 --tdamp 0.5 --rdf gr.txt
//! ```
//!
//! Units are LAMMPS's `units lj`. Errors are one line `error: ...` with the
//! exit statuses of the other examples, each bad input found before any
//! work (unknown types, a missing pair coefficient, a cutoff over half the
//! box, a negative damping time, a table short of its cutoff, types of an
//! `(N, 8)` state that are not integers >= 1).

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use nbody_host::md::EnsembleFlags;
use nbody_host::pair::PairSpec;
use nbody_host::{Boundary, Checkpoint, Ensemble, ForceLaw, Integrator, Simulation, snapshot};

// The command line every example shares.
#[macro_use]
#[path = "cli/mod.rs"]
mod cli;
pub use cli::md_run::thermo_row;
use cli::md_run::{self, MdJob, MdOutputFlags, MdSystemFlags};
use cli::{AutoPicks, RunFlags, usage};
pub use cli::{Failure, Progress, exit};

/// The end of `--help`: units and exit statuses.
pub const AFTER_HELP: &str = concat!(
    "\
Units: LAMMPS's `units lj`. Energies in the thermo table and the result line
are per atom; the temperature counts 3N - 3 degrees of freedom; the pressure
comes from the virial, as LAMMPS prints them.

",
    exit_statuses_help!()
);

/// Steps of a run without `--steps`.
const DEFAULT_STEPS: u64 = 100;

/// Molecular dynamics with LAMMPS's pair styles, atom types and ensembles.
#[derive(Parser, Debug)]
#[command(
    name = "md",
    version,
    allow_negative_numbers = true,
    after_help = AFTER_HELP,
    mut_arg("steps", |a| a.help(
        "Steps to run; with --resume, the step count to reach (counted from the start of \
         the run) [default: 100]"
    )),
    mut_arg("resume", |a| a.help("Continue from a checkpoint (all parameters from it)")),
    mut_arg("cells", |a| a.default_value("5").help(
        "fcc unit cells per side (4 C^3 atoms of type 1), without --init"
    )),
    mut_arg("rebuild_every", |a| a.default_value("0").help(
        "Rebuild the neighbour lists every K steps, or 0: whenever an atom has moved half \
         the skin (LAMMPS's neigh_modify every 1 check yes)"
    )),
)]
pub struct Cli {
    /// Start from an (N, 7) or (N, 8) .npy array: x y z vx vy vz m [type],
    /// types numbered as LAMMPS's, 1, 2, ...
    #[arg(
        long,
        value_name = "FILE.npy",
        requires = "box_lengths",
        conflicts_with = "resume"
    )]
    init: Option<PathBuf>,
    /// The periodic box of --init: L (cubic) or LX LY LZ
    #[arg(long = "box", value_name = "L", num_args = 1..=3, requires = "init")]
    box_lengths: Vec<f64>,
    #[command(flatten)]
    system: MdSystemFlags,
    /// Seed of the lattice's velocities and of the Langevin forces
    #[arg(long, default_value_t = 87287, conflicts_with = "resume")]
    seed: u64,
    /// LAMMPS's pair_style and its arguments: lj CUTOFF (= lj/cut),
    /// lj/smooth/linear, morse, soft, born, buck CUTOFF; yukawa KAPPA
    /// CUTOFF; table linear N; wca
    #[arg(long, value_name = "STYLE", num_args = 1.., default_values_t = ["lj".to_string(), "2.5".to_string()], conflicts_with = "resume")]
    pair: Vec<String>,
    /// LAMMPS's pair_coeff I J COEFFS [CUTOFF] (repeatable), coefficients
    /// in LAMMPS's order; default for lj with none given: * * 1 1
    #[arg(long, value_name = "I J COEFF", num_args = 3.., action = clap::ArgAction::Append, conflicts_with = "resume")]
    pair_coeff: Vec<String>,
    /// `--pair-coeff`'s occurrences, each its words (from the matches:
    /// clap's derive flattens repeated multi-value flags).
    #[arg(skip)]
    pair_coeffs: Vec<Vec<String>>,
    /// Shift each pair's potential to zero at its cutoff (pair_modify shift yes)
    #[arg(long, conflicts_with = "resume")]
    shift: bool,
    /// The mixing rule of pairs not given (pair_modify mix): geometric
    /// (LAMMPS's default), arithmetic or sixthpower
    #[arg(long, value_name = "RULE", conflicts_with = "resume")]
    mix: Option<String>,
    /// nve, nvt (Nose-Hoover chains, fix nvt), langevin (fix langevin +
    /// fix nve), rescale (fix temp/rescale every step) or npt (fix npt iso)
    #[arg(
        long,
        value_name = "NAME",
        default_value = "nve",
        conflicts_with = "resume"
    )]
    ensemble: String,
    /// Target temperature of nvt, langevin, rescale and npt
    #[arg(long, value_name = "T", conflicts_with = "resume")]
    temp_target: Option<f64>,
    /// Thermostat damping time of nvt and npt; Langevin's damping time
    #[arg(long, value_name = "TAU", conflicts_with = "resume")]
    tdamp: Option<f64>,
    /// Target pressure of npt
    #[arg(long, value_name = "P", conflicts_with = "resume")]
    press_target: Option<f64>,
    /// Barostat damping time of npt
    #[arg(long, value_name = "TAU", conflicts_with = "resume")]
    pdamp: Option<f64>,
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
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let Some(mut cli) = cli::parse::<Cli>(args.clone(), out)? else {
        return Ok(());
    };
    // The same arguments parsed again, for the words of each --pair-coeff.
    if let Ok(matches) = <Cli as clap::CommandFactory>::command().try_get_matches_from(args)
        && let Some(groups) = matches.get_occurrences::<String>("pair_coeff")
    {
        cli.pair_coeffs = groups.map(|g| g.cloned().collect()).collect();
    }
    let progress = progress.unless(cli.run.quiet);
    cli::with_reporter(progress, err, |reporter| run(&cli, out, reporter))
        .map_err(|e| cli::failure(&e))
}

/// The system the flags describe, every value checked, nothing run yet.
pub struct Setup {
    /// The builder of the run (the backend not yet chosen).
    pub builder: nbody_host::SimulationBuilder,
    /// The atom types' count.
    pub types: u32,
    /// The longest pair cutoff.
    pub cutoff: f64,
    /// The ensemble.
    pub ensemble: Ensemble,
}

/// The fresh run's bodies, box, types, potential and ensemble, each bad
/// value one error naming it.
pub fn setup(cli: &Cli) -> Result<Setup> {
    let (atoms, boundary, types) = match &cli.init {
        Some(path) => {
            let (atoms, types) = snapshot::load_npy_typed(path)
                .with_context(|| format!("--init {}", path.display()))?;
            let lengths = match cli.box_lengths[..] {
                [l] => [l; 3],
                [x, y, z] => [x, y, z],
                _ => {
                    return Err(usage(format!(
                        "--box takes L or LX LY LZ, not {} numbers",
                        cli.box_lengths.len()
                    )));
                }
            };
            (atoms, Boundary::Periodic { lengths }, types)
        }
        None => {
            let (atoms, boundary) = cli.system.lattice(cli.seed)?;
            (atoms, boundary, None)
        }
    };
    let ntypes = types
        .as_ref()
        .map_or(1, |t| t.iter().copied().max().unwrap_or(0) + 1);
    let mut spec = PairSpec::parse_lammps(&cli.pair)?.shift(cli.shift);
    if let Some(rule) = &cli.mix {
        spec.pair_modify(&["mix", rule.as_str()])?;
    }
    if cli.pair_coeff.is_empty() && matches!(cli.pair[0].as_str(), "lj" | "lj/cut") {
        spec.pair_coeff(&["*", "*", "1.0", "1.0"])?;
    }
    for coeff in &cli.pair_coeffs {
        spec.pair_coeff(coeff)?;
    }
    let potential = spec.build(ntypes)?;
    let cutoff = potential.max_cutoff() as f64;
    let ensemble = EnsembleFlags {
        ensemble: Some(cli.ensemble.clone()),
        temp_target: cli.temp_target,
        tdamp: cli.tdamp,
        press_target: cli.press_target,
        pdamp: cli.pdamp,
        seed: cli.seed,
    }
    .ensemble()?;
    let mut builder = Simulation::builder(atoms)
        .force(ForceLaw::Pair(potential))
        .boundary(boundary)
        .neighbours(cli.system.neighbours())
        .ensemble(ensemble)
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(cli.system.dt);
    if let Some(types) = types {
        builder = builder.types(types);
    }
    Ok(Setup {
        builder,
        types: ntypes,
        cutoff,
        ensemble,
    })
}

/// A resumed run: the checkpoint and its MD state, checked to be a pair
/// potential's.
fn resumed(path: &std::path::Path) -> Result<(Checkpoint, Option<nbody_host::md::MdState>)> {
    let (checkpoint, md) = Checkpoint::load_with_md(path)?;
    if checkpoint.params.force().as_pair().is_none() {
        let (kind, example) = cli::checkpoint_kind(&checkpoint.params);
        return Err(cli::invalid(format!(
            "--resume {}: this is a {kind} checkpoint: use {example}",
            path.display()
        )));
    }
    Ok((checkpoint, md))
}

fn run(cli: &Cli, out: &mut dyn Write, reporter: &cli::Reporter) -> Result<()> {
    // Every flag and input checked before the outputs and the run.
    let (fresh, resume) = match &cli.run.resume {
        Some(path) => (None, Some(resumed(path)?)),
        None => (Some(setup(cli)?), None),
    };
    let (types, cutoff, ensemble, dt) = match (&fresh, &resume) {
        (Some(s), _) => (s.types, s.cutoff, s.ensemble, cli.system.dt),
        (_, Some((c, _))) => {
            let pair = c.params.force().as_pair().expect("checked by resumed");
            (
                pair.types(),
                pair.max_cutoff() as f64,
                c.params.ensemble(),
                c.params.dt_f64(),
            )
        }
        _ => unreachable!("a run is fresh or resumed"),
    };
    let pairs = if types > 1 {
        (0..types)
            .flat_map(|i| (i..types).map(move |j| (i, j)))
            .collect()
    } else {
        Vec::new()
    };
    let job = MdJob {
        run: &cli.run,
        outputs: &cli.outputs,
        default_steps: DEFAULT_STEPS,
        dt,
        rdf_cutoff: cutoff,
        rdf_pairs: pairs,
        title: "md",
        conserves_energy: ensemble == Ensemble::Nve,
    };
    md_run::run(&job, out, reporter, || {
        let backend = cli.run.backend(AutoPicks::Cpu)?;
        let builder = match (fresh, resume) {
            (Some(setup), _) => setup.builder,
            (_, Some((checkpoint, md))) => {
                let builder = Simulation::from_checkpoint(checkpoint);
                match md {
                    Some(md) => builder.md_state(md),
                    None => builder,
                }
            }
            _ => unreachable!("a run is fresh or resumed"),
        };
        Ok(builder.backend(backend).build()?)
    })
}
