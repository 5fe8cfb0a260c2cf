//! The run of the molecular-dynamics examples (`lj_melt`, `md`), shared:
//! their output flags ([`MdOutputFlags`], declared once), the stepping loop
//! around a built [`Simulation`] with its trajectory and analysis outputs,
//! and the LAMMPS-style report (thermo table, time split, `result` line)
//! that the checks parse.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use nbody_host::md::{CellList, Ensemble, Lists, MdStats, Rebuild, Thermo};
use nbody_host::{Neighbours, Simulation};

use super::lj_outputs::Outputs;
use super::{Local, Reporter, RunFlags, drive, exploded, open_archive, usage};

/// The fcc start, the neighbour lists and the time step of an MD run
/// (`md` changes the defaults of `--cells` and `--rebuild-every` with
/// `mut_arg`). Needs the example to have `--init` and `--resume`.
#[derive(Args, Debug, Clone)]
pub struct MdSystemFlags {
    /// fcc unit cells per side (4 C^3 atoms), without --init
    #[arg(long, default_value_t = 20, conflicts_with_all = ["init", "resume"])]
    pub cells: usize,
    /// Reduced number density of the lattice
    #[arg(long, default_value_t = 0.8442, conflicts_with_all = ["init", "resume"])]
    pub density: f64,
    /// Initial temperature (velocities drawn, zero momentum, scaled to it)
    #[arg(long, default_value_t = 1.44, conflicts_with_all = ["init", "resume"])]
    pub temp: f64,
    /// Neighbour skin (in sigma)
    #[arg(long, default_value_t = 0.3, conflicts_with = "resume")]
    pub skin: f64,
    /// Time step (in tau)
    #[arg(long, default_value_t = 0.005, conflicts_with = "resume")]
    pub dt: f64,
    /// Rebuild the neighbour lists every K steps (LAMMPS's in.lj: 20), or
    /// 0: whenever an atom has moved half the skin (never a missed pair)
    #[arg(
        long,
        value_name = "K",
        default_value_t = 20,
        conflicts_with = "resume"
    )]
    pub rebuild_every: u32,
    /// Verlet lists: half (each pair once, Newton's third law), full, or
    /// the backend's faster
    #[arg(long, value_enum, default_value_t = ListsArg::Auto, conflicts_with = "resume")]
    pub lists: ListsArg,
}

/// `--lists`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ListsArg {
    Auto,
    Half,
    Full,
}

impl MdSystemFlags {
    /// The fcc start the flags ask for, velocities from `seed`.
    pub fn lattice(&self, seed: u64) -> Result<(nbody_host::Bodies, nbody_host::Boundary)> {
        Ok(nbody_host::ic::fcc_lattice(
            self.cells,
            self.density,
            self.temp,
            seed,
        )?)
    }

    /// The cell lists the flags ask for.
    pub fn neighbours(&self) -> Neighbours {
        let rebuild = match self.rebuild_every {
            0 => Rebuild::Auto,
            k => Rebuild::Every(k),
        };
        let lists = match self.lists {
            ListsArg::Auto => Lists::Auto,
            ListsArg::Half => Lists::Half,
            ListsArg::Full => Lists::Full,
        };
        Neighbours::Cells(CellList {
            rebuild,
            lists,
            ..CellList::new(self.skin)
        })
    }
}

/// The thermo, plot, trajectory and analysis flags of an MD run.
#[derive(Args, Debug, Clone)]
pub struct MdOutputFlags {
    /// Print a thermo line every K steps (0: only the first and the last)
    #[arg(long, value_name = "K", default_value_t = 50)]
    pub thermo: u64,
    /// Plot kinetic, potential and total energy per atom against time to a
    /// PNG, sampled about 400 times in the run (each sample costs about a
    /// force evaluation), and below them the relative drift of the total
    #[arg(long, value_name = "FILE.png")]
    pub plot: Option<PathBuf>,
    /// With --plot: LAMMPS's thermo table for the same run (the output of
    /// `lammps-peer run`), plotted beside ours
    #[arg(long, value_name = "FILE", requires = "plot")]
    pub lammps_thermo: Option<PathBuf>,
    /// Append a trajectory frame at the start and every --dump-every steps:
    /// .xyz (extended XYZ), .dcd (DCD, as LAMMPS's dump dcd) or .lammpstrj
    /// (LAMMPS's text dump with image counters); an existing file is only
    /// replaced with --force
    #[arg(long, value_name = "FILE")]
    pub dump: Option<PathBuf>,
    /// Steps between trajectory frames (and, by default, g(r) and MSD samples)
    #[arg(long, value_name = "K", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub dump_every: u64,
    /// Write unwrapped positions (x + image * L) to --dump, not wrapped ones
    #[arg(long, requires = "dump")]
    pub dump_unwrapped: bool,
    /// Write velocities to --dump too (.xyz and .lammpstrj)
    #[arg(long, requires = "dump")]
    pub dump_velocities: bool,
    /// Write g(r) (LAMMPS's compute rdf columns: all atoms, or with several
    /// atom types every type pair), the mean over the frames every
    /// --rdf-every steps after the start
    #[arg(long, value_name = "FILE")]
    pub rdf: Option<PathBuf>,
    /// Bins of --rdf
    #[arg(long, value_name = "N", default_value_t = 100, requires = "rdf")]
    pub rdf_bins: usize,
    /// Cutoff of --rdf (default: the pair cutoff)
    #[arg(long, value_name = "RC", requires = "rdf")]
    pub rdf_cutoff: Option<f64>,
    /// Steps between g(r) and MSD samples (default: --dump-every)
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub rdf_every: Option<u64>,
    /// Plot --rdf's g(r) to a PNG
    #[arg(long, value_name = "FILE.png", requires = "rdf")]
    pub rdf_plot: Option<PathBuf>,
    /// With --rdf-plot: LAMMPS's g(r) for the same frames (two columns, r
    /// and g, as scripts/peers/trajectory_check.py --mean writes it), dashed
    #[arg(long, value_name = "FILE", requires = "rdf_plot")]
    pub lammps_rdf: Option<PathBuf>,
    /// Write the mean-squared displacement from the start (unwrapped, LAMMPS's
    /// compute msd: step dx2 dy2 dz2 total) at the start and every --rdf-every steps
    #[arg(long, value_name = "FILE")]
    pub msd: Option<PathBuf>,
}

/// One MD run as an example asks for it.
pub struct MdJob<'a> {
    /// The flags every run has.
    pub run: &'a RunFlags,
    /// The thermo, plot, trajectory and analysis flags.
    pub outputs: &'a MdOutputFlags,
    /// Steps without `--steps`.
    pub default_steps: u64,
    /// The time step (of the trajectory's times).
    pub dt: f64,
    /// The g(r) cutoff without `--rdf-cutoff` (the pair cutoff).
    pub rdf_cutoff: f64,
    /// The type pairs of g(r) (types from 0; empty: all atoms).
    pub rdf_pairs: Vec<(u32, u32)>,
    /// The system, for the plots' titles.
    pub title: &'a str,
    /// Whether the total energy is conserved (NVE), so that a jump in it
    /// means the run exploded.
    pub conserves_energy: bool,
}

/// The pair enumeration in words (what the `neighbours` line prints), with
/// LAMMPS's equivalent settings.
fn neighbours_in_words(n: &Neighbours, cutoff: Option<f32>) -> String {
    let cells = match n {
        Neighbours::Cells(cells) => cells,
        Neighbours::AllPairs => return "all pairs (no lists; O(N^2) a step)".into(),
        _ => return "chosen by the library (Neighbours::Auto)".into(),
    };
    let lists = match cells.lists {
        Lists::Half => "half Verlet lists (each pair once, Newton's third law)",
        Lists::Full => "full Verlet lists (each pair from both atoms)",
        _ => "full Verlet lists (--lists auto: the faster here)",
    };
    let rebuild = match cells.rebuild {
        Rebuild::Every(k) => format!(
            "rebuilt every {k} steps whether needed or not (LAMMPS: neigh_modify every {k} check no)"
        ),
        _ => {
            "rebuilt whenever an atom has moved half the skin (LAMMPS: neigh_modify every 1 check \
              yes)"
                .into()
        }
    };
    let reach = cutoff.map_or(String::new(), |rc| {
        format!(
            ", pairs within r_c + skin = {}",
            g10(rc as f64 + cells.skin)
        )
    });
    let bins = if cells.bin_size > 0.0 {
        format!(", cells at least {} wide", g10(cells.bin_size))
    } else {
        String::new()
    };
    format!(
        "cell lists, skin {}{reach}{bins}; {lists}; {rebuild}",
        g10(cells.skin)
    )
}

/// `x` as C's `%.10g`: ten significant digits, trailing zeros dropped.
pub fn g10(x: f64) -> String {
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
pub fn thermo_row(t: &Thermo) -> String {
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
fn plot(path: &Path, title: &str, dt: f64, ours: &[Thermo], lammps: &[[f64; 6]]) -> Result<()> {
    use nbody_host::render::{EnergySeries, line_plot_panels};
    let series = |label: &str, points: Vec<(f64, f64)>| EnergySeries {
        label: label.to_string(),
        points,
    };
    let ours_at = |f: &dyn Fn(&Thermo) -> f64| -> Vec<(f64, f64)> {
        ours.iter().map(|t| (t.step as f64 * dt, f(t))).collect()
    };
    let mut energies = vec![
        series("kinetic", ours_at(&|t| t.kinetic)),
        series("potential", ours_at(&|t| t.potential)),
        series("total", ours_at(&|t| t.total)),
    ];
    // The drift of the total, relative to its start: invisible at the
    // energies' scale, where the total looks flat.
    let e0 = ours.first().map_or(1.0, |t| t.total);
    let scale = e0.abs().max(f64::MIN_POSITIVE);
    let mut drift = vec![series("total", ours_at(&|t| (t.total - e0) / scale))];
    if !lammps.is_empty() {
        let at = |k: usize| lammps.iter().map(|r| (r[0] * dt, r[k])).collect();
        energies.push(series("LAMMPS kinetic (dashed)", at(3)));
        energies.push(series("LAMMPS potential (dashed)", at(2)));
        energies.push(series("LAMMPS total (dashed)", at(4)));
        let l0 = lammps[0][4];
        let l_scale = l0.abs().max(f64::MIN_POSITIVE);
        drift.push(series(
            "LAMMPS total (dashed)",
            lammps
                .iter()
                .map(|r| (r[0] * dt, (r[4] - l0) / l_scale))
                .collect(),
        ));
    }
    line_plot_panels(
        path,
        &format!("{title}: energy per atom"),
        "time (tau)",
        &[
            ("energy per atom (epsilon)", &energies[..]),
            ("(E - E0) / |E0|, total", &drift[..]),
        ],
        (900, 800),
    )?;
    Ok(())
}

/// An error if the total energy per atom moved from `first`'s by more
/// than the larger of its kinetic and potential parts at the start (and
/// 1 epsilon): velocity Verlet keeps it to a tiny fraction of that at any
/// step size that integrates at all, so the run blew up (atoms that overlap
/// in the initial state, or too large a time step). Names the step and the
/// fastest body.
fn explosion(sim: &Simulation, first: &Thermo, now: &Thermo) -> Result<()> {
    let limit = first.kinetic.abs().max(first.potential.abs()).max(1.0);
    let jump = (now.total - first.total).abs();
    if jump <= limit {
        return Ok(());
    }
    let v = sim.velocities()?;
    let (body, speed) = v
        .iter()
        .map(|v| v.length())
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, f32::NAN));
    Err(exploded(format!(
        "the run exploded by step {}: the total energy per atom went from {} to {} (an \
         integrator that follows the motion keeps it within far less than {}); body {body} is \
         the fastest (speed {speed:.3e}): atoms that overlap (or nearly) in the initial state, \
         or too large a time step",
        now.step,
        g10(first.total),
        g10(now.total),
        g10(limit)
    )))
}

/// Where the GPU backends' Pair, Neigh and Modify times come from (the
/// CPU's are host time, as LAMMPS's): a note under the table.
fn timing_source(backend: &nbody_host::BackendKind) -> Option<String> {
    let how = match backend {
        nbody_host::BackendKind::Cuda { name, .. } if name.starts_with("softcuda") => {
            "device time between CUDA events around each step's launches, MODELLED by the \
             software CUDA device's time model (softcuda), not measured"
        }
        nbody_host::BackendKind::Cuda { .. } => {
            "device time between CUDA events around each step's launches (read once per batch)"
        }
        nbody_host::BackendKind::Emulator => "host time of the emulated launches",
        _ => return None,
    };
    Some(format!(
        "note        Pair, Neigh and Modify are {how}; Other is the rest of the loop"
    ))
}

/// LAMMPS's "MPI task timing breakdown" of the loop, `seconds` long:
/// the engine's pair, neighbour and integrator time within the loop (its
/// counters at the end less those at the start, which include the set-up's
/// list build and forces), the thermo output (its sums and printing,
/// `output`, timed by the loop), and the rest. The engine's times lie
/// within the steps and the output's between them, so the five sections
/// partition the loop's time by construction; builds are the loop's too
/// (LAMMPS counts them so).
fn timing(
    out: &mut dyn Write,
    before: &MdStats,
    after: &MdStats,
    seconds: f64,
    output: f64,
) -> std::io::Result<()> {
    let pair = after.pair_seconds - before.pair_seconds;
    let neigh = after.neighbour_seconds - before.neighbour_seconds;
    let modify = after.integrate_seconds - before.integrate_seconds;
    // Not below 0 but for the rounding of the differences.
    let other = (seconds - pair - neigh - modify - output).max(0.0);
    let total = pair + neigh + modify + output + other;
    writeln!(out, "Section |  time (s)  | %total")?;
    for (name, t) in [
        ("Pair", pair),
        ("Neigh", neigh),
        ("Modify", modify),
        ("Output", output),
        ("Other", other),
    ] {
        writeln!(
            out,
            "{name:<7} | {t:10.4} | {:6.2}",
            100.0 * t / total.max(1e-300)
        )?;
    }
    let (builds, dangerous) = (
        after.builds - before.builds,
        after.dangerous_builds - before.dangerous_builds,
    );
    writeln!(
        out,
        "Neighbor list builds = {builds}, dangerous builds = {dangerous}, list entries per atom = \
         {:.2} ({:.2} lanes with the padding), cells {:?}",
        after.neighbours_per_atom, after.lanes_per_atom, after.cells
    )?;
    if dangerous > 0 {
        writeln!(
            out,
            "note        {dangerous} of {builds} builds were dangerous: an atom had moved more \
             than half the skin since the build before, so a pair may have come within the cutoff \
             unlisted and its force been missed (LAMMPS's in.lj accepts this); --rebuild-every 0 \
             rebuilds whenever an atom has moved half the skin and never misses a pair"
        )?;
    }
    Ok(())
}

/// Runs `job`: checks every output, builds the simulation with `build`, steps
/// it with the thermo table, trajectory and analysis, and writes the report.
pub fn run(
    job: &MdJob,
    out: &mut dyn Write,
    reporter: &Reporter,
    build: impl FnOnce() -> Result<Simulation>,
) -> Result<()> {
    let flags = job.run;
    let cli = job.outputs;
    let [save, checkpoint, archive] = flags.outputs();
    flags.check_outputs(&[
        save,
        checkpoint,
        archive,
        ("--plot", &cli.plot),
        ("--dump", &cli.dump),
        ("--rdf", &cli.rdf),
        ("--msd", &cli.msd),
        ("--rdf-plot", &cli.rdf_plot),
    ])?;
    if let Some(path) = &cli.dump
        && path.exists()
        && !flags.force
    {
        return Err(usage(format!(
            "--dump {}: the file exists (another run's trajectory?); pass --force to replace it",
            path.display()
        )));
    }
    let mut analysis = Outputs::new(cli, job.dt, job.rdf_cutoff, &job.rdf_pairs)?;
    let lammps = match &cli.lammps_thermo {
        Some(path) => read_lammps_thermo(path)?,
        None => Vec::new(),
    };
    reporter.phase("building the lattice and the neighbour lists");
    let sim = build()?;
    let start = sim.steps_done();
    let target = flags.steps.unwrap_or(job.default_steps);
    if target < start {
        return Err(usage(format!(
            "--steps {target} is below step {start} of the checkpoint: --steps is the step count \
             to reach, counted from the start of the run"
        )));
    }
    analysis.start(&sim)?;
    let mut session = Local::new(sim);
    open_archive(&mut session, flags)?;
    let sim = &session.sim;
    let w = |e: std::io::Error| anyhow::Error::new(e).context("writing the report");
    let p = sim.params().clone();
    // The report goes to `out` in blocks, with the progress bar out of
    // the way; what follows the loop only once all of it succeeded.
    let mut report = Vec::new();
    let text = &mut report;
    writeln!(text, "backend     {} ({})", sim.backend(), sim.method()).map_err(w)?;
    writeln!(
        text,
        "system      {} atoms, {}, {}, velocity Verlet dt {}{}",
        sim.len(),
        p.boundary(),
        p.force(),
        p.dt_f64(),
        match p.ensemble() {
            Ensemble::Nve => String::new(),
            other => format!(", fix {other}"),
        }
    )
    .map_err(w)?;
    writeln!(
        text,
        "neighbours  {}",
        neighbours_in_words(&p.neighbours(), p.force().cutoff())
    )
    .map_err(w)?;
    reporter.phase("the initial thermo output");
    let first = sim.thermo()?;
    let mut rows = vec![first];
    writeln!(
        text,
        "{:>10} {:>14} {:>14} {:>14} {:>14} {:>14}",
        "Step", "Temp", "PotEng", "KinEng", "TotEng", "Press"
    )
    .map_err(w)?;
    writeln!(text, "{}", thermo_row(&first)).map_err(w)?;
    reporter.suspend(|| out.write_all(&report)).map_err(w)?;
    report.clear();
    // With --plot, samples for it at about 400 steps of the run besides
    // the thermo output's (each costs about one force evaluation).
    let sample = cli.plot.as_ref().map(|_| ((target - start) / 400).max(1));
    let mut stops: Vec<u64> = [(cli.thermo > 0).then_some(cli.thermo), sample]
        .into_iter()
        .flatten()
        .collect();
    stops.extend(analysis.stops());
    let mut output = 0.0;
    let before = session.sim.md_stats();
    let t = Instant::now();
    drive(
        &mut session,
        target,
        flags,
        reporter,
        &stops,
        |session, step| {
            let Some(sim) = session.simulation() else {
                bail!("the thermo output needs the simulation in this process");
            };
            let t = Instant::now();
            // Frames and samples count as output, as LAMMPS's dumps do.
            analysis.at(sim, step)?;
            let printed = step == target || (cli.thermo > 0 && step.is_multiple_of(cli.thermo));
            if !(printed || sample.is_some_and(|k| step.is_multiple_of(k))) {
                output += t.elapsed().as_secs_f64();
                return Ok(());
            }
            let thermo = sim.thermo()?;
            if job.conserves_energy {
                explosion(sim, &first, &thermo)?;
            }
            if printed {
                reporter
                    .suspend(|| writeln!(out, "{}", thermo_row(&thermo)))
                    .map_err(w)?;
            }
            output += t.elapsed().as_secs_f64();
            rows.push(thermo);
            Ok(())
        },
    )?;
    let sim = &session.sim;
    let seconds = t.elapsed().as_secs_f64();
    let last = sim.thermo()?;
    let steps = target - start;
    let text = &mut report;
    writeln!(
        text,
        "Loop time of {seconds:.6} on {} for {steps} steps with {} atoms",
        sim.backend(),
        sim.len()
    )
    .map_err(w)?;
    if let (Some(before), Some(after)) = (before, sim.md_stats()) {
        timing(text, &before, &after, seconds, output).map_err(w)?;
        if let Some(note) = timing_source(&sim.backend()) {
            writeln!(text, "{note}").map_err(w)?;
        }
    }
    if let Some(path) = &flags.save {
        reporter.phase("writing the state");
        sim.save_npy(path)?;
    }
    analysis.finish(text)?;
    if let Some(path) = &cli.plot {
        reporter.phase("plotting");
        plot(path, job.title, p.dt_f64(), &rows, &lammps)?;
        writeln!(text, "wrote {}", path.display()).map_err(w)?;
    }
    let rate = if seconds > 0.0 {
        sim.len() as f64 * steps as f64 / seconds
    } else {
        0.0
    };
    writeln!(
        text,
        "result backend={} atoms={} steps={steps} seconds={seconds:.6} atom_steps_per_s={rate:.6e} pe0={} etotal0={} etotal={} temp={}",
        sim.backend().name(),
        sim.len(),
        g10(first.potential),
        g10(first.total),
        g10(last.total),
        g10(last.temperature)
    )
    .map_err(w)?;
    reporter.suspend(|| out.write_all(&report)).map_err(w)?;
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
