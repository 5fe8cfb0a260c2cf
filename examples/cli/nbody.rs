//! Gravity's command line (`nbody_tiled` in one process, `nbody_mpi` over
//! MPI ranks): its flags ([`RunArgs`], around the shared [`RunFlags`]), the
//! settings they make, the run ([`run`], over a [`Session`]), the report
//! and its `result` line. The Hermite integrator (`--integrator hermite`,
//! `--eta`, `--eta-s`, `--t-end`, `--precision`) runs in one process only:
//! f64 state, `--init` read in f64, `--save` as float64, and
//! `block_steps=` / `force_evals=` on the result line.
//!
//! (Over 600 lines: gravity's flags, the settings they make and the run that uses them change together.)

use std::io::Write;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use nbody_host::{
    Checkpoint, HermiteSettings, Integrator, Kernel, Params, Precision, Simulation,
    SimulationBuilder, ic, snapshot,
};

use super::{
    AutoPicks, Reporter, RunFlags, Session, checkpoint_kind, drive, invalid, open_archive, usage,
};

/// The end of `--help`: units and exit statuses.
pub const AFTER_HELP: &str = concat!(
    "\
Units: none built in. G = 1 by default (--softening and --dt are in the same
length and time units as the positions and velocities); the initial conditions
are in N-body (Henon) units, G = 1 and total mass 1, except the cube (unit
masses, NVIDIA Warp's example).

",
    exit_statuses_help!()
);

/// The flags of every N-body run (flattened into each example's parser).
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Number of bodies [default: 65536 on a GPU, 16384 on the CPU, 2048 in the emulator]
    #[arg(long, conflicts_with_all = ["init", "resume"])]
    pub n: Option<usize>,
    /// Time step [default: 0.01, or the checkpoint's]
    #[arg(long)]
    pub dt: Option<f64>,
    /// Plummer softening length [default: 0.1, or the checkpoint's]
    #[arg(long)]
    pub softening: Option<f64>,
    /// Force kernel [default: auto (chosen from N and the device; tiled on
    /// the CPU), tiled with --block alone, or the checkpoint's]
    #[arg(long, value_enum)]
    pub kernel: Option<KernelArg>,
    /// Threads per block, a power of two in 32..=1024 [default: 256, or the checkpoint's]
    #[arg(long)]
    pub block: Option<u32>,
    /// Split kernel: threads per body, a power of two from 1 to the block
    /// [default: 16 or the block, or the checkpoint's]
    #[arg(long)]
    pub split: Option<u32>,
    /// CUDA graphs for the gravity steps on a GPU: auto (for N up to
    /// 2048, where launches are a visible part of a step; measured slower
    /// on an H200 at N = 4096 and 16384), on, off
    #[arg(long, value_enum, default_value_t = GraphsArg::Auto)]
    pub graphs: GraphsArg,
    /// Time integrator [default: euler, or the checkpoint's]; hermite: 4th-order
    /// Hermite with block time steps in f64 (--dt is then the interval at whose
    /// ends all bodies are synchronised, default 0.125)
    #[arg(long, value_enum)]
    pub integrator: Option<IntegratorArg>,
    /// Hermite: Aarseth's accuracy parameter eta [default: 0.02, or the checkpoint's]
    #[arg(long, value_name = "E")]
    pub eta: Option<f64>,
    /// Hermite: the starting criterion's eta_s [default: eta / 20, or the checkpoint's]
    #[arg(long, value_name = "E")]
    pub eta_s: Option<f64>,
    /// Hermite: integrate to this time exactly (instead of --steps intervals)
    #[arg(long, value_name = "T", conflicts_with = "steps")]
    pub t_end: Option<f64>,
    /// Hermite: force precision [default: f64, or the checkpoint's]
    #[arg(long, value_enum)]
    pub precision: Option<PrecisionArg>,
    /// Start from an (N, 7) .npy array: x y z vx vy vz m per row
    #[arg(long, value_name = "FILE.npy", conflicts_with = "resume")]
    pub init: Option<std::path::PathBuf>,
    /// Initial conditions (when neither --init nor --resume is given)
    #[arg(long, value_enum, default_value_t = IcArg::Cube, conflicts_with_all = ["init", "resume"])]
    pub ic: IcArg,
    /// Seed of the initial conditions [default: 42]
    #[arg(long, conflicts_with_all = ["init", "resume"])]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub run: RunFlags,
    /// With --resume: apply --dt, --softening, --kernel, --block, --split,
    /// --integrator, --eta, --eta-s or --precision values that differ from
    /// the checkpoint's (refused otherwise); the report lists them
    #[arg(long, requires = "resume")]
    pub allow_changes: bool,
    /// Skip the two energy sums (each costs about as much as a step on the
    /// CPU); the result line then says energy_rel_change=skipped
    #[arg(long)]
    pub no_energy: bool,
    /// Render an animated GIF of the run (a frame every --render-every steps,
    /// state copied back only then, outside the timing)
    #[arg(long, value_name = "FILE.gif")]
    pub render: Option<std::path::PathBuf>,
    /// Steps between rendered frames
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub render_every: u64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum KernelArg {
    Simt,
    Tiled,
    Triangle,
    Split,
    Auto,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum GraphsArg {
    Auto,
    On,
    Off,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum IntegratorArg {
    Euler,
    Leapfrog,
    Hermite,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PrecisionArg {
    F64,
    Mixed,
}

/// The Hermite settings of the command line (`--eta`, `--eta-s`,
/// `--precision`) over `base` (the checkpoint's; the defaults without):
/// a new `--eta` starts from `eta_s = eta / 20` unless `--eta-s` is given.
/// An invalid value is an error naming it.
pub fn hermite_settings(
    cli: &RunArgs,
    base: Option<HermiteSettings>,
) -> nbody_host::Result<HermiteSettings> {
    let mut settings = match (cli.eta, base) {
        (Some(eta), _) => HermiteSettings::new(eta)?,
        (None, Some(base)) => base,
        (None, None) => HermiteSettings::default(),
    };
    if let Some(eta_s) = cli.eta_s {
        settings = settings.with_eta_s(eta_s)?;
    }
    if let Some(precision) = cli.precision {
        settings = settings.with_precision(match precision {
            PrecisionArg::F64 => Precision::F64,
            PrecisionArg::Mixed => Precision::Mixed,
        });
    }
    Ok(settings)
}

/// The integrator the command line runs over `base`'s (the checkpoint's, or
/// the defaults): `--integrator`, and for Hermite its settings, checked.
/// Hermite's flags with another integrator are a usage error.
pub fn integrator(cli: &RunArgs, base: &Params) -> Result<Integrator> {
    let chosen = match cli.integrator {
        None => base.integrator(),
        Some(IntegratorArg::Euler) => Integrator::SemiImplicitEuler,
        Some(IntegratorArg::Leapfrog) => Integrator::Leapfrog,
        Some(IntegratorArg::Hermite) => {
            Integrator::Hermite(base.integrator().hermite().unwrap_or_default())
        }
    };
    if let Some(settings) = chosen.hermite() {
        return Ok(Integrator::Hermite(hermite_settings(cli, Some(settings))?));
    }
    for (flag, given) in [
        ("--eta", cli.eta.is_some()),
        ("--eta-s", cli.eta_s.is_some()),
        ("--t-end", cli.t_end.is_some()),
        ("--precision", cli.precision.is_some()),
    ] {
        if given {
            return Err(usage(format!(
                "{flag} is a setting of --integrator hermite (this run integrates with {})",
                chosen.name()
            )));
        }
    }
    Ok(chosen)
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum IcArg {
    Cube,
    Plummer,
    Collision,
    Disk,
}

impl IcArg {
    pub fn setup(self) -> ic::Setup {
        match self {
            IcArg::Cube => ic::Setup::UniformCube,
            IcArg::Plummer => ic::Setup::Plummer,
            IcArg::Collision => ic::Setup::Collision,
            IcArg::Disk => ic::Setup::ColdDisk,
        }
    }
}

/// Defaults that depend on where the run lands: (bodies, steps).
pub fn defaults_for(backend: &str) -> (usize, u64) {
    match backend {
        "cuda" => (65_536, 100),
        "emulator" => (2_048, 2),
        _ => (16_384, 10),
    }
}

impl RunArgs {
    /// Checks what the parser cannot (`--allow-changes` needs `--resume`;
    /// `--t-end`, one call to the end, has no `--every` or frames between)
    /// and every output path, before anything runs.
    pub fn check_outputs(&self) -> Result<()> {
        if self.allow_changes && self.run.resume.is_none() {
            return Err(usage(
                "--allow-changes applies a checkpoint's changed parameters: it needs --resume"
                    .into(),
            ));
        }
        if self.t_end.is_some() {
            for (flag, given) in [
                ("--every", self.run.every.is_some()),
                ("--render", self.render.is_some()),
            ] {
                if given {
                    return Err(usage(format!(
                        "{flag} needs --steps: --t-end integrates to the end in one call, with                          no checkpoints, records or frames between (the --checkpoint and                          --archive of the end are written)"
                    )));
                }
            }
        }
        let [save, checkpoint, archive] = self.run.outputs();
        self.run
            .check_outputs(&[save, checkpoint, ("--render", &self.render), archive])
    }
}

/// Applies the command line's parameters over `base` (the defaults or the
/// checkpoint's).
pub fn configure(
    builder: SimulationBuilder,
    cli: &RunArgs,
    base: &Params,
) -> Result<SimulationBuilder> {
    let block = cli.block.unwrap_or(base.kernel().block());
    let split = Kernel::Split {
        block,
        split: cli.split.unwrap_or(match base.kernel() {
            Kernel::Split { split, .. } => split,
            _ => Kernel::default_split(block),
        }),
    };
    let kernel = match cli.kernel {
        None => match base.kernel() {
            Kernel::Auto if cli.split.is_some() => split,
            // --block alone: the tiled kernel, as before `auto`.
            Kernel::Auto if cli.block.is_some() => Kernel::Tiled { block },
            Kernel::Auto => Kernel::Auto,
            Kernel::Simt { .. } => Kernel::Simt { block },
            Kernel::Tiled { .. } => Kernel::Tiled { block },
            Kernel::Split { .. } => split,
            _ => Kernel::Triangle { block },
        },
        Some(KernelArg::Simt) => Kernel::Simt { block },
        Some(KernelArg::Tiled) => Kernel::Tiled { block },
        Some(KernelArg::Triangle) => Kernel::Triangle { block },
        Some(KernelArg::Split) => split,
        Some(KernelArg::Auto) => Kernel::Auto,
    };
    let integrator = integrator(cli, base)?;
    // Hermite's dt is the synchronisation interval: 0.125 for a new run.
    let default_dt = match (integrator.hermite(), &cli.run.resume) {
        (Some(_), None) => 0.125,
        _ => base.dt_f64(),
    };
    Ok(builder
        .dt(cli.dt.unwrap_or(default_dt))
        .softening(
            cli.softening
                .unwrap_or(base.gravity().unwrap_or_default().softening_f64()),
        )
        .kernel(kernel)
        .graphs(match cli.graphs {
            GraphsArg::Auto => nbody_host::Graphs::Auto,
            GraphsArg::On => nbody_host::Graphs::On,
            GraphsArg::Off => nbody_host::Graphs::Off,
        })
        .integrator(integrator)
        .backend(cli.run.backend(AutoPicks::CudaIfPresent)?))
}

/// The checkpoint's parameters that the command line would change, as
/// `name old -> new`.
fn changes_from(cli: &RunArgs, base: &Params) -> Vec<String> {
    let mut changes = Vec::new();
    if let Some(dt) = cli.dt
        && dt != base.dt_f64()
    {
        changes.push(format!("dt {} -> {dt}", base.dt_f64()));
    }
    let eps = base.gravity().unwrap_or_default().softening();
    if let Some(s) = cli.softening
        && s as f32 != eps
    {
        changes.push(format!("softening {eps} -> {s}"));
    }
    let kernel = base.kernel();
    if let Some(k) = cli.kernel {
        let name = k.to_possible_value().map(|v| v.get_name().to_owned());
        if name.as_deref() != Some(kernel.name()) {
            changes.push(format!(
                "kernel {} -> {}",
                kernel.name(),
                name.unwrap_or_default()
            ));
        }
    }
    if let Some(block) = cli.block
        && block != kernel.block()
    {
        changes.push(format!("block {} -> {block}", kernel.block()));
    }
    if let Some(split) = cli.split
        && split != kernel.split()
    {
        changes.push(format!("split {} -> {split}", kernel.split()));
    }
    if let Some(i) = cli.integrator {
        let name = i.to_possible_value().map(|v| v.get_name().to_owned());
        if name.as_deref() != Some(base.integrator().name()) {
            changes.push(format!(
                "integrator {} -> {}",
                base.integrator().name(),
                name.unwrap_or_default()
            ));
        }
    }
    if let (Some(old), Ok(new)) = (base.integrator().hermite(), integrator(cli, base))
        && let Some(new) = new.hermite()
    {
        if new.eta() != old.eta() {
            changes.push(format!("eta {} -> {}", old.eta(), new.eta()));
        }
        if new.eta_s() != old.eta_s() {
            changes.push(format!("eta_s {} -> {}", old.eta_s(), new.eta_s()));
        }
        if new.precision() != old.precision() {
            changes.push(format!(
                "precision {} -> {}",
                old.precision(),
                new.precision()
            ));
        }
    }
    changes
}

/// The settings of the simulation the command line asks for (bodies
/// loaded or generated, parameters, backend); also returns the checkpoint's
/// parameters it changed (with `--allow-changes`).
pub fn prepare(cli: &RunArgs) -> Result<(SimulationBuilder, Vec<String>)> {
    if let Some(path) = &cli.run.resume {
        let checkpoint = Checkpoint::load(path)?;
        let base = checkpoint.params.clone();
        if base.force().as_gravity().is_none() {
            let (kind, example) = checkpoint_kind(&base);
            return Err(invalid(format!(
                "--resume {}: this is a {kind} checkpoint: use {example}",
                path.display()
            )));
        }
        integrator(cli, &base)?;
        let changes = changes_from(cli, &base);
        if !changes.is_empty() && !cli.allow_changes {
            return Err(usage(format!(
                "--resume {}: the command line changes the checkpoint's parameters ({}), so the \
                 continued run would not be the one checkpointed; pass --allow-changes to apply them",
                path.display(),
                changes.join(", ")
            )));
        }
        // A Hermite run goes on from its f64 state, which only
        // `Simulation::resume` reads.
        let resumed = match base.integrator().hermite() {
            Some(_) => Simulation::resume(path)?,
            None => Simulation::from_checkpoint(checkpoint),
        };
        let builder = configure(resumed, cli, &base)?;
        return Ok((builder, changes));
    }
    // A fresh run's defaults, the kernel chosen from N and the device.
    let d = Params::default();
    let base = Params::new(d.dt_f64(), d.force().clone(), Kernel::Auto, d.integrator())?;
    let hermite = integrator(cli, &base)?.hermite().is_some();
    let seed = cli.seed.unwrap_or(42);
    if let (true, Some(path)) = (hermite, &cli.init) {
        // Hermite starts from the file's f64 values themselves.
        let (pos, vel, mass) =
            snapshot::load_npy_f64(path).with_context(|| format!("--init {}", path.display()))?;
        let d = |v: &[[f64; 3]]| {
            v.iter()
                .map(|&x| glam::DVec3::from_array(x))
                .collect::<Vec<_>>()
        };
        let builder = Simulation::builder_f64(&d(&pos), &d(&vel), &mass)?;
        return Ok((configure(builder, cli, &base)?, Vec::new()));
    }
    let bodies = match (&cli.init, cli.n) {
        (Some(path), _) => {
            snapshot::load_npy(path).with_context(|| format!("--init {}", path.display()))?
        }
        (None, Some(n)) => cli.ic.setup().generate(n, seed)?,
        (None, None) => {
            // The default size depends on the backend: find out where a
            // one-body simulation with the same settings lands.
            let probe =
                configure(Simulation::builder(ic::uniform_cube(1, 0)), cli, &base)?.build()?;
            let (n, _) = defaults_for(probe.backend().name());
            drop(probe);
            cli.ic.setup().generate(n, seed)?
        }
    };
    Ok((
        configure(Simulation::builder(bodies), cli, &base)?,
        Vec::new(),
    ))
}

/// Runs `session` as `cli` asks (steps, checkpoints, archive, frames,
/// snapshot) and writes the report to `out`, progress and notes to
/// `reporter`. `changes` are the checkpoint's parameters the command line
/// changed.
pub fn run(
    cli: &RunArgs,
    session: &mut dyn Session,
    changes: &[String],
    out: &mut dyn Write,
    reporter: &Reporter,
) -> Result<()> {
    let flags = &cli.run;
    let (_, default_steps) = defaults_for(session.backend().name());
    let pairs = |n: usize| n as f64 * n as f64 / 2.0;
    let start = session.steps_done();
    let mut target = match (flags.steps, &flags.resume) {
        (Some(steps), Some(_)) if steps < start => {
            return Err(usage(format!(
                "--steps {steps} is below step {start} of the checkpoint: --steps is the step \
                 count to reach, counted from the start of the run"
            )));
        }
        (Some(steps), _) => steps,
        (None, Some(_)) => default_steps.max(start),
        (None, None) => default_steps,
    };
    if flags.resume.is_some() && target == start && cli.t_end.is_none() {
        reporter.note(&format!(
            "the checkpoint is already at step {start}: nothing to run"
        ));
    }
    let n = session.len();
    // A resumed Hermite run's counters go on from the checkpoint's.
    let stats_before = session.simulation().and_then(|sim| sim.hermite_stats());

    if flags.archive.is_some() {
        reporter.phase("opening the archive");
    }
    open_archive(session, flags)?;
    let e0 = if cli.no_energy {
        None
    } else {
        reporter.phase(&format!(
            "the initial energy (N^2 / 2 = {:.2e} pairs)",
            pairs(n)
        ));
        Some(session.energy()?)
    };
    let mut recorder = match &cli.render {
        Some(path) => {
            use nbody_host::render::{Camera, Recorder, Renderer};
            let sim = session
                .simulation()
                .ok_or_else(|| usage("--render needs the simulation in one process".into()))?;
            let camera = Camera::fit(sim.positions()?, glam::Vec3::NEG_Z, 1.1)?;
            let p = sim.params().clone();
            let caption = format!(
                "N = {}, {}, {}, dt {}",
                sim.len(),
                p.integrator().name(),
                p.kernel(),
                p.dt_f64()
            );
            let mut recorder = Recorder::new(Renderer::new(camera, 480, 480)?, cli.render_every)?
                .gif(path)?
                .caption(caption);
            recorder.capture(sim)?;
            Some(recorder)
        }
        None => None,
    };
    let stops: Vec<u64> = match recorder {
        Some(_) => vec![cli.render_every],
        None => Vec::new(),
    };
    let mut stepping = std::time::Duration::ZERO;
    if let Some(t_end) = cli.t_end {
        // Hermite: to `t_end` exactly, in one call (whole intervals of dt,
        // then a shorter one, counted as a step); `drive` below writes the
        // checkpoint and the archive record of the end.
        let sim = session
            .simulation()
            .ok_or_else(|| usage("--t-end needs the simulation in one process".into()))?;
        if sim.params().integrator().hermite().is_none() {
            return Err(usage("--t-end needs --integrator hermite".into()));
        }
        reporter.phase(&format!(
            "integrating to t = {t_end} (Hermite block steps, from t = {})",
            super::rounded(sim.time())
        ));
        let t = Instant::now();
        let stepped = sim.integrate_to(t_end);
        stepping += t.elapsed();
        stepped?;
        target = session.steps_done();
    }
    let to_run = target - start;
    stepping += drive(session, target, flags, reporter, &stops, |session, end| {
        if let (Some(recorder), Some(sim)) = (&mut recorder, session.simulation())
            && (end % cli.render_every == 0 || end == target)
        {
            recorder.capture(sim)?;
        }
        Ok(())
    })?;
    if let (Some(recorder), Some(path)) = (recorder, &cli.render) {
        let frames = recorder.finish()?;
        writeln!(out, "wrote {} ({frames} frames)", path.display())?;
    }
    let energies = match e0 {
        Some(e0) => {
            reporter.phase(&format!(
                "the final energy (N^2 / 2 = {:.2e} pairs)",
                pairs(n)
            ));
            Some((e0, session.energy()?))
        }
        None => None,
    };
    if let Some(path) = &flags.save {
        reporter.phase("writing the state");
        session.save_npy(path)?;
    }
    let (mut more_lines, mut more_fields) = session.summary()?;
    // This command's block steps and force evaluations (as steps= counts
    // this command's steps).
    let stats = session
        .simulation()
        .and_then(|sim| sim.hermite_stats())
        .map(|end| {
            let before = stats_before.unwrap_or_default();
            nbody_host::HermiteStats {
                block_steps: end.block_steps - before.block_steps,
                force_evals: end.force_evals - before.force_evals,
            }
        });
    if let Some(stats) = stats {
        more_lines.push(format!(
            "hermite     {} block steps, {} force evaluations, mean block {:.2}",
            stats.block_steps,
            stats.force_evals,
            stats.mean_block()
        ));
        more_fields.push_str(&format!(
            " block_steps={} force_evals={}",
            stats.block_steps, stats.force_evals
        ));
    }

    let seconds = stepping.as_secs_f64();
    // Hermite: each force evaluation is one body against all N.
    let interactions = match stats {
        Some(stats) => stats.force_evals as f64 * n as f64,
        None => (n as f64) * (n as f64) * (to_run as f64),
    };
    let pips = if seconds > 0.0 {
        interactions / seconds
    } else {
        0.0
    };
    let p = session.params();
    let (backend, method, integrator) = (session.backend(), session.method(), p.integrator());
    let time = session.time();
    reporter.suspend(|| {
        report(
            out,
            Report {
                backend,
                method,
                integrator,
                params: p,
                changes,
                n,
                start,
                target,
                time,
                seconds,
                pips,
                more_lines,
                more_fields,
                energies,
            },
        )
    })
}

/// What the report says.
struct Report<'a> {
    backend: nbody_host::BackendKind,
    method: &'static str,
    integrator: Integrator,
    params: Params,
    changes: &'a [String],
    n: usize,
    start: u64,
    target: u64,
    time: f64,
    seconds: f64,
    pips: f64,
    more_lines: Vec<String>,
    more_fields: String,
    energies: Option<(nbody_host::Energy, nbody_host::Energy)>,
}

/// Writes the report and its `result` line to `out`.
fn report(out: &mut dyn Write, r: Report<'_>) -> Result<()> {
    let Report {
        backend,
        method,
        integrator,
        params: p,
        changes,
        n,
        start,
        target,
        time,
        seconds,
        pips,
        more_lines,
        more_fields,
        energies,
    } = r;
    let to_run = target - start;
    let w = |e: std::io::Error| anyhow::Error::new(e).context("writing the report");
    writeln!(out, "backend     {backend}").map_err(w)?;
    writeln!(
        out,
        "kernel      {} as {method}, {integrator}, dt {}, {}",
        p.kernel(),
        p.dt_f64(),
        p.force()
    )
    .map_err(w)?;
    if !changes.is_empty() {
        writeln!(
            out,
            "changed     {} (on resume, --allow-changes)",
            changes.join(", ")
        )
        .map_err(w)?;
    }
    writeln!(
        out,
        "bodies      {n}, steps {to_run} ({start} -> {target}), t = {}",
        super::rounded(time)
    )
    .map_err(w)?;
    writeln!(out, "wall time   {seconds:.3} s, {pips:.3e} interactions/s").map_err(w)?;
    for line in more_lines {
        writeln!(out, "{line}").map_err(w)?;
    }
    let de = match energies {
        Some((e0, e1)) => {
            let de = e1.relative_change_from(&e0);
            writeln!(
                out,
                "energy      {:.6e} -> {:.6e}, |dE/E| = {de:.3e}",
                e0.total(),
                e1.total()
            )
            .map_err(w)?;
            format!("{de:.4e}")
        }
        None => {
            writeln!(out, "energy      skipped (--no-energy)").map_err(w)?;
            "skipped".to_owned()
        }
    };
    writeln!(
        out,
        "result backend={} kernel={} integrator={} n={n} steps={to_run} seconds={seconds} pips={pips:.6e} energy_rel_change={de}{more_fields}",
        backend.name(),
        method,
        integrator.name(),
    )
    .map_err(w)?;
    out.flush().context("writing the report")?;
    Ok(())
}
