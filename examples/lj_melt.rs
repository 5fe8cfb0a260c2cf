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
//! included (LAMMPS's "Loop time", which includes its dumps). `--dump`,
//! `--rdf`, `--msd`: trajectories and analysis (`cli/lj_outputs.rs`,
//! docs/md.md "Trajectories and analysis"). `--plot FILE.png` draws kinetic, potential and total energy
//! per atom against time, with `--lammps-thermo FILE` (the thermo table
//! `lammps-peer run` prints) LAMMPS's beside them. Errors are one line
//! `error: ...` on stderr with the exit statuses of `nbody_tiled`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use nbody_host::md::{CellList, Lists, MdStats, Rebuild, Thermo};
use nbody_host::{
    Backend, Boundary, CpuTuning, ForceLaw, Integrator, Isa, Neighbours, PairStyle, Simulation, ic,
    snapshot,
};

#[path = "cli/mod.rs"]
mod cli;
#[path = "cli/lj_outputs.rs"]
mod outputs;
pub use cli::{Failure, Progress, exit};
use cli::{Periodic, parse_isa, usage};

/// The end of `--help`: units and exit statuses.
pub const AFTER_HELP: &str = "\
Units: LAMMPS's `units lj` (sigma = epsilon = mass = k_B = 1; time in tau).
Energies in the thermo table and the result line are per atom; the
temperature counts 3N - 3 degrees of freedom; the pressure comes from the
virial, as LAMMPS prints them.

Exit status: 0 success, 1 backend failure or other error, 2 usage (flags),
3 invalid input (parameters, bodies, input files), 4 file I/O,
5 divergence (a non-finite state or energy).";

/// The Lennard-Jones melt (LAMMPS's in.lj) on the N-body library.
#[derive(Parser, Debug)]
#[command(name = "lj_melt", version, allow_negative_numbers = true, after_help = AFTER_HELP)]
struct Cli {
    /// fcc unit cells per side (4 C^3 atoms)
    #[arg(long, default_value_t = 20, conflicts_with_all = ["init", "resume"])]
    cells: usize,
    /// Reduced number density of the lattice
    #[arg(long, default_value_t = 0.8442, conflicts_with_all = ["init", "resume"])]
    density: f64,
    /// Initial temperature (velocities drawn, zero momentum, scaled to it)
    #[arg(long, default_value_t = 1.44, conflicts_with_all = ["init", "resume"])]
    temp: f64,
    /// Cutoff r_c (in sigma)
    #[arg(long, default_value_t = 2.5, conflicts_with = "resume")]
    cutoff: f64,
    /// Neighbour skin (in sigma)
    #[arg(long, default_value_t = 0.3, conflicts_with = "resume")]
    skin: f64,
    /// Time step (in tau)
    #[arg(long, default_value_t = 0.005, conflicts_with = "resume")]
    dt: f64,
    /// Steps to run; with --resume, the step count to reach
    #[arg(long, default_value_t = 100)]
    steps: u64,
    /// Print a thermo line every K steps (0: only the first and the last)
    #[arg(long, value_name = "K", default_value_t = 50)]
    thermo: u64,
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
    /// Rebuild the neighbour lists every K steps (LAMMPS's in.lj: 20), or
    /// 0: whenever an atom has moved half the skin (never a missed pair)
    #[arg(
        long,
        value_name = "K",
        default_value_t = 20,
        conflicts_with = "resume"
    )]
    rebuild_every: u32,
    /// Verlet lists: half (each pair once, Newton's third law), full, or
    /// the backend's faster
    #[arg(long, value_enum, default_value_t = ListsArg::Auto, conflicts_with = "resume")]
    lists: ListsArg,
    /// Where to run
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// CPU backend: this instruction set (avx512, avx2+fma, neon, scalar)
    #[arg(long, value_name = "ISA", value_parser = parse_isa)]
    cpu_isa: Option<Isa>,
    /// Save the final state as an (N, 7) float32 .npy file
    #[arg(long, value_name = "FILE.npy")]
    save: Option<PathBuf>,
    /// Write a checkpoint at the end (and every --every steps), atomically;
    /// an existing file is only replaced with --force or when it is the --resume file
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<PathBuf>,
    /// Append snapshots to an archive at the start, every --every steps and
    /// at the end; with --resume, continued from the checkpoint's step
    #[arg(long, value_name = "FILE")]
    archive: Option<PathBuf>,
    /// Checkpoint and archive every K steps (of the whole run)
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    every: Option<u64>,
    /// Replace an existing --checkpoint, --archive or --dump file of another run
    #[arg(long)]
    force: bool,
    /// Append a trajectory frame at the start and every --dump-every steps:
    /// .xyz (extended XYZ), .dcd (DCD, as LAMMPS's dump dcd) or .lammpstrj
    /// (LAMMPS's text dump with image counters)
    #[arg(long, value_name = "FILE")]
    dump: Option<PathBuf>,
    /// Steps between trajectory frames (and, by default, g(r) and MSD samples)
    #[arg(long, value_name = "K", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    dump_every: u64,
    /// Write unwrapped positions (x + image * L) to --dump, not wrapped ones
    #[arg(long, requires = "dump")]
    dump_unwrapped: bool,
    /// Write velocities to --dump too (.xyz and .lammpstrj)
    #[arg(long, requires = "dump")]
    dump_velocities: bool,
    /// Write g(r) of all atoms (LAMMPS's compute rdf columns), the mean over
    /// the frames every --rdf-every steps after the start
    #[arg(long, value_name = "FILE")]
    rdf: Option<PathBuf>,
    /// Bins of --rdf
    #[arg(long, value_name = "N", default_value_t = 100, requires = "rdf")]
    rdf_bins: usize,
    /// Cutoff of --rdf (default: the pair cutoff)
    #[arg(long, value_name = "RC", requires = "rdf")]
    rdf_cutoff: Option<f64>,
    /// Steps between g(r) and MSD samples (default: --dump-every)
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    rdf_every: Option<u64>,
    /// Plot --rdf's g(r) to a PNG
    #[arg(long, value_name = "FILE.png", requires = "rdf")]
    rdf_plot: Option<PathBuf>,
    /// With --rdf-plot: LAMMPS's g(r) for the same frames (two columns, r
    /// and g, as scripts/peers/trajectory_check.py --mean writes it), dashed
    #[arg(long, value_name = "FILE", requires = "rdf_plot")]
    lammps_rdf: Option<PathBuf>,
    /// Write the mean-squared displacement from the start (unwrapped, LAMMPS's
    /// compute msd: step dx2 dy2 dz2 total) at the start and every --rdf-every steps
    #[arg(long, value_name = "FILE")]
    msd: Option<PathBuf>,
    /// Continue from a checkpoint (all parameters from it)
    #[arg(long, value_name = "FILE")]
    resume: Option<PathBuf>,
    /// Plot kinetic, potential and total energy per atom against time to a PNG
    #[arg(long, value_name = "FILE.png")]
    plot: Option<PathBuf>,
    /// With --plot: LAMMPS's thermo table for the same run (the output of
    /// `lammps-peer run`), plotted beside ours
    #[arg(long, value_name = "FILE", requires = "plot")]
    lammps_thermo: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ListsArg {
    Auto,
    Half,
    Full,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum BackendArg {
    Auto,
    Cpu,
    Cuda,
    Emulator,
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
    err: &mut dyn Write,
    progress: Progress,
) -> Result<(), Failure> {
    match cli::parse::<Cli>(args, out)? {
        Some(cli) => run(&cli, out, err, progress).map_err(cli::failure),
        None => Ok(()),
    }
}

impl Cli {
    fn periodic(&self) -> Periodic {
        Periodic {
            checkpoint: self.checkpoint.clone(),
            archive: self.archive.clone(),
            every: self.every,
            force: self.force,
            resume: self.resume.clone(),
        }
    }

    fn backend(&self) -> Backend {
        match self.backend {
            BackendArg::Auto => Backend::Auto,
            BackendArg::Cpu => Backend::Cpu(CpuTuning {
                isa: self.cpu_isa,
                ..CpuTuning::default()
            }),
            BackendArg::Cuda => Backend::Cuda { device: 0 },
            BackendArg::Emulator => Backend::emulator(),
        }
    }
}

/// Builds the simulation the command line asks for.
fn build(cli: &Cli) -> Result<Simulation> {
    if let Some(path) = &cli.resume {
        return Ok(Simulation::resume(path)?.backend(cli.backend()).build()?);
    }
    let (atoms, boundary) = match (&cli.init, cli.box_length) {
        (Some(path), Some(l)) => (
            snapshot::load_npy(path).with_context(|| format!("--init {}", path.display()))?,
            Boundary::cubic(l),
        ),
        _ => ic::fcc_lattice(cli.cells, cli.density, cli.temp, cli.seed)?,
    };
    let rebuild = match cli.rebuild_every {
        0 => Rebuild::Auto,
        k => Rebuild::Every(k),
    };
    let lists = match cli.lists {
        ListsArg::Auto => Lists::Auto,
        ListsArg::Half => Lists::Half,
        ListsArg::Full => Lists::Full,
    };
    Ok(Simulation::builder(atoms)
        .force(ForceLaw::lennard_jones(1.0, 1.0, cli.cutoff, cli.shift)?)
        .boundary(boundary)
        .neighbours(Neighbours::Cells(CellList {
            rebuild,
            lists,
            ..CellList::new(cli.skin)
        }))
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(cli.dt)
        .backend(cli.backend())
        .build()?)
}

/// `x` as C's `%.10g`: ten significant digits, trailing zeros dropped.
fn g10(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let exponent = x.abs().log10().floor() as i32;
    let text = if (-5..10).contains(&exponent) {
        format!("{:.*}", (9 - exponent).max(0) as usize, x)
    } else {
        format!("{x:.9e}")
    };
    match text.split_once('e') {
        Some((m, e)) if m.contains('.') => {
            format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.'))
        }
        _ if text.contains('.') => text.trim_end_matches('0').trim_end_matches('.').to_string(),
        _ => text,
    }
}

/// One row of the thermo table, LAMMPS's columns.
fn thermo_row(t: &Thermo) -> String {
    format!(
        "{:>10} {:>14} {:>14} {:>14} {:>14} {:>14}",
        t.step,
        g10(t.temperature),
        g10(t.potential),
        g10(t.kinetic),
        g10(t.total),
        t.pressure.map_or("-".into(), g10)
    )
}

/// LAMMPS's thermo rows `step temp pe ke etotal press` from its output.
fn read_lammps_thermo(path: &Path) -> Result<Vec<[f64; 6]>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--lammps-thermo {}", path.display()))?;
    let rows: Vec<[f64; 6]> = text
        .lines()
        .filter_map(|line| {
            let v: Vec<f64> = line
                .split_whitespace()
                .map(|w| w.parse().ok())
                .collect::<Option<_>>()?;
            <[f64; 6]>::try_from(v).ok()
        })
        .collect();
    if rows.is_empty() {
        bail!(
            "--lammps-thermo {}: no thermo rows (six numbers: step temp pe ke etotal press)",
            path.display()
        );
    }
    Ok(rows)
}

/// The energy plot: ours solid, LAMMPS's dashed.
fn plot(path: &Path, dt: f64, ours: &[Thermo], lammps: &[[f64; 6]]) -> Result<()> {
    use nbody_host::render::{EnergySeries, line_plot};
    let series = |label: &str, points: Vec<(f64, f64)>| EnergySeries {
        label: label.to_string(),
        points,
    };
    let ours_at = |f: fn(&Thermo) -> f64| ours.iter().map(|t| (t.step as f64 * dt, f(t))).collect();
    let mut all = vec![
        series("kinetic", ours_at(|t| t.kinetic)),
        series("potential", ours_at(|t| t.potential)),
        series("total", ours_at(|t| t.total)),
    ];
    if !lammps.is_empty() {
        let at = |k: usize| lammps.iter().map(|r| (r[0] * dt, r[k])).collect();
        all.push(series("LAMMPS kinetic (dashed)", at(3)));
        all.push(series("LAMMPS potential (dashed)", at(2)));
        all.push(series("LAMMPS total (dashed)", at(4)));
    }
    line_plot(
        path,
        "Lennard-Jones melt: energy per atom",
        ("time (tau)", "energy per atom (epsilon)"),
        &all,
        (900, 560),
    )?;
    Ok(())
}

/// LAMMPS's "MPI task timing breakdown", from the engine's counters.
fn timing(out: &mut dyn Write, stats: &MdStats, seconds: f64, print: f64) -> std::io::Result<()> {
    let modify = stats.integrate_seconds;
    let output = stats.thermo_seconds + print;
    let other = (seconds - stats.pair_seconds - stats.neighbour_seconds - modify - output).max(0.0);
    writeln!(out, "Section |  time (s)  | %total")?;
    for (name, t) in [
        ("Pair", stats.pair_seconds),
        ("Neigh", stats.neighbour_seconds),
        ("Modify", modify),
        ("Output", output),
        ("Other", other),
    ] {
        writeln!(
            out,
            "{name:<7} | {t:10.4} | {:6.2}",
            100.0 * t / seconds.max(1e-300)
        )?;
    }
    writeln!(
        out,
        "Neighbor list builds = {}, dangerous builds = {}, list entries per atom = {:.2} ({:.2} \
         lanes with the padding), cells {:?}",
        stats.builds,
        stats.dangerous_builds,
        stats.neighbours_per_atom,
        stats.lanes_per_atom,
        stats.cells
    )
}

fn run(cli: &Cli, out: &mut dyn Write, err: &mut dyn Write, progress: Progress) -> Result<()> {
    let periodic = cli.periodic();
    let outputs = [
        ("--save", &cli.save),
        ("--checkpoint", &cli.checkpoint),
        ("--archive", &cli.archive),
        ("--plot", &cli.plot),
        ("--dump", &cli.dump),
        ("--rdf", &cli.rdf),
        ("--msd", &cli.msd),
        ("--rdf-plot", &cli.rdf_plot),
    ];
    cli::distinct_outputs(&outputs)?;
    periodic.check_outputs(&outputs.map(|(_, path)| path))?;
    if let Some(path) = &cli.dump
        && path.exists()
        && !cli.force
    {
        return Err(usage(format!(
            "--dump {}: the file exists (another run's trajectory?); pass --force to replace it",
            path.display()
        )));
    }
    let mut analysis = outputs::Outputs::new(cli)?;
    let lammps = match &cli.lammps_thermo {
        Some(path) => read_lammps_thermo(path)?,
        None => Vec::new(),
    };
    let mut sim = build(cli)?;
    let lennard_jones =
        |f: &ForceLaw| f.as_pair().map(|p| p.style()) == Some(PairStyle::LennardJones);
    if !lennard_jones(sim.params().force()) {
        return Err(usage(format!(
            "--resume: the checkpoint is not a Lennard-Jones run ({})",
            sim.params().force()
        )));
    }
    let start = sim.steps_done();
    if cli.steps < start {
        return Err(usage(format!(
            "--steps {} is below step {start} of the checkpoint: --steps is the step count to \
             reach, counted from the start of the run",
            cli.steps
        )));
    }
    let target = cli.steps;
    analysis.start(&sim)?;
    let mut archive = periodic.open_archive(&sim)?;
    let w = |e: std::io::Error| anyhow::Error::new(e).context("writing the report");
    let p = sim.params().clone();
    writeln!(out, "backend     {} ({})", sim.backend(), sim.method()).map_err(w)?;
    writeln!(
        out,
        "system      {} atoms, {}, {}, velocity Verlet dt {}",
        sim.len(),
        p.boundary(),
        p.force(),
        p.dt_f64()
    )
    .map_err(w)?;
    writeln!(out, "neighbours  {:?}", p.neighbours()).map_err(w)?;
    let first = sim.thermo()?;
    let mut rows = vec![first];
    writeln!(
        out,
        "{:>10} {:>14} {:>14} {:>14} {:>14} {:>14}",
        "Step", "Temp", "PotEng", "KinEng", "TotEng", "Press"
    )
    .map_err(w)?;
    writeln!(out, "{}", thermo_row(&first)).map_err(w)?;
    let mut stops: Vec<u64> = (cli.thermo > 0).then_some(cli.thermo).into_iter().collect();
    stops.extend(analysis.stops());
    let mut printing = 0.0;
    let t = Instant::now();
    cli::drive(
        &mut sim,
        target,
        &periodic,
        &mut archive,
        progress,
        err,
        &stops,
        |sim, step| {
            // Dumps and samples count as output, as LAMMPS's dumps do.
            let p = Instant::now();
            analysis.at(sim, step)?;
            printing += p.elapsed().as_secs_f64();
            if (cli.thermo > 0 && step.is_multiple_of(cli.thermo)) || step == target {
                let thermo = sim.thermo()?;
                let p = Instant::now();
                writeln!(out, "{}", thermo_row(&thermo)).map_err(w)?;
                printing += p.elapsed().as_secs_f64();
                rows.push(thermo);
            }
            Ok(())
        },
    )?;
    let seconds = t.elapsed().as_secs_f64();
    let last = sim.thermo()?;
    let steps = target - start;
    writeln!(
        out,
        "Loop time of {seconds:.6} on {} for {steps} steps with {} atoms",
        sim.backend(),
        sim.len()
    )
    .map_err(w)?;
    if let Some(stats) = sim.md_stats() {
        timing(out, &stats, seconds, printing).map_err(w)?;
    }
    if let Some(path) = &cli.save {
        sim.save_npy(path)?;
    }
    analysis.finish(out)?;
    if let Some(path) = &cli.plot {
        plot(path, p.dt_f64(), &rows, &lammps)?;
        writeln!(out, "wrote {}", path.display()).map_err(w)?;
    }
    let rate = if seconds > 0.0 {
        sim.len() as f64 * steps as f64 / seconds
    } else {
        0.0
    };
    writeln!(
        out,
        "result backend={} atoms={} steps={steps} seconds={seconds:.6} atom_steps_per_s={rate:.6e} pe0={} etotal0={} etotal={} temp={}",
        sim.backend().name(),
        sim.len(),
        g10(first.potential),
        g10(first.total),
        g10(last.total),
        g10(last.temperature)
    )
    .map_err(w)?;
    out.flush().context("writing the report")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::g10;

    #[test]
    fn g10_is_c_printf_percent_g_with_ten_digits() {
        assert_eq!(g10(-6.773368053), "-6.773368053");
        assert_eq!(g10(1.44), "1.44");
        assert_eq!(g10(0.7574531032456), "0.7574531032");
        assert_eq!(g10(-4.622361337), "-4.622361337");
        assert_eq!(g10(32000.0), "32000");
        assert_eq!(g10(1.5e-7), "1.5e-7");
    }
}
