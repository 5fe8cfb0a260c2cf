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
//! exit status (see [`AFTER_HELP`]). Without a terminal on stderr, a plain
//! progress line is printed every few seconds instead of a progress bar.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{ArgGroup, Parser, ValueEnum};
use nbody_host::{
    Backend, Checkpoint, CpuTuning, Integrator, Isa, Kernel, Params, Simulation, SimulationBuilder,
    ic, snapshot,
};

#[path = "cli/mod.rs"]
mod cli;
pub use cli::{Failure, Progress, exit};
use cli::{Periodic, parse_isa, usage};

/// The end of `--help`: units and exit statuses.
pub const AFTER_HELP: &str = "\
Units: none built in. G = 1 by default (--softening and --dt are in the same
length and time units as the positions and velocities); the initial conditions
are in N-body (Henon) units, G = 1 and total mass 1, except the cube (unit
masses, NVIDIA Warp's example).

Exit status: 0 success, 1 backend failure or other error, 2 usage (flags),
3 invalid input (parameters, bodies, input files, memory for N), 4 file I/O,
5 divergence (a non-finite state or energy).";

/// Direct-summation N-body gravity: NVIDIA Warp's N-body example's tiled-kernel run.
#[derive(Parser, Debug)]
#[command(
    name = "nbody_tiled",
    version,
    allow_negative_numbers = true,
    after_help = AFTER_HELP,
    group(ArgGroup::new("periodic").args(["checkpoint", "archive"]).multiple(true))
)]
struct Cli {
    /// Number of bodies [default: 65536 on a GPU, 16384 on the CPU, 2048 in the emulator]
    #[arg(long, conflicts_with_all = ["init", "resume"])]
    n: Option<usize>,
    /// Steps to run; with --resume, the step count to reach (counted from the
    /// start of the run) [default: 100 on a GPU, 10 on the CPU, 2 in the emulator]
    #[arg(long)]
    steps: Option<u64>,
    /// Time step [default: 0.01, or the checkpoint's]
    #[arg(long)]
    dt: Option<f64>,
    /// Plummer softening length [default: 0.1, or the checkpoint's]
    #[arg(long)]
    softening: Option<f64>,
    /// Force kernel [default: tiled, or the checkpoint's]
    #[arg(long, value_enum)]
    kernel: Option<KernelArg>,
    /// Threads per block, a power of two in 32..=1024 [default: 256, or the checkpoint's]
    #[arg(long)]
    block: Option<u32>,
    /// Time integrator [default: euler, or the checkpoint's]
    #[arg(long, value_enum)]
    integrator: Option<IntegratorArg>,
    /// Where to run
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Start from an (N, 7) .npy array: x y z vx vy vz m per row
    #[arg(long, value_name = "FILE.npy", conflicts_with = "resume")]
    init: Option<PathBuf>,
    /// Initial conditions (when neither --init nor --resume is given)
    #[arg(long, value_enum, default_value_t = IcArg::Cube, conflicts_with_all = ["init", "resume"])]
    ic: IcArg,
    /// Seed of the initial conditions [default: 42]
    #[arg(long, conflicts_with_all = ["init", "resume"])]
    seed: Option<u64>,
    /// Save the final state as an (N, 7) float32 .npy file
    #[arg(long, value_name = "FILE.npy")]
    save: Option<PathBuf>,
    /// Write a checkpoint at the end (and every --every steps), atomically;
    /// an existing file is only replaced with --force or when it is the --resume file
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<PathBuf>,
    /// Append snapshots to an archive (nbody_host::snapshot::Archive) at the
    /// start, every --every steps and at the end; with --resume, the archive
    /// is continued from the checkpoint's step
    #[arg(long, value_name = "FILE")]
    archive: Option<PathBuf>,
    /// Checkpoint and archive every K steps (of the whole run)
    #[arg(long, value_name = "K", requires = "periodic", value_parser = clap::value_parser!(u64).range(1..))]
    every: Option<u64>,
    /// Replace an existing --checkpoint or --archive file of another run
    #[arg(long)]
    force: bool,
    /// Continue from a checkpoint (parameters from the checkpoint)
    #[arg(long, value_name = "FILE")]
    resume: Option<PathBuf>,
    /// With --resume: apply --dt, --softening, --kernel, --block or
    /// --integrator values that differ from the checkpoint's (refused
    /// otherwise); the report lists them
    #[arg(long, requires = "resume")]
    allow_changes: bool,
    /// Skip the two energy sums (each costs about as much as a step on the
    /// CPU); the result line then says energy_rel_change=skipped
    #[arg(long)]
    no_energy: bool,
    /// Render an animated GIF of the run (a frame every --render-every steps,
    /// state copied back only then, outside the timing)
    #[arg(long, value_name = "FILE.gif")]
    render: Option<PathBuf>,
    /// Steps between rendered frames
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    render_every: u64,
    /// CPU backend: use this instruction set (avx512, avx2+fma, neon, scalar)
    /// instead of the best one detected
    #[arg(long, value_name = "ISA", value_parser = parse_isa)]
    cpu_isa: Option<Isa>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum KernelArg {
    Simt,
    Tiled,
    Triangle,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum IntegratorArg {
    Euler,
    Leapfrog,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum BackendArg {
    Auto,
    Cpu,
    Cuda,
    Emulator,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum IcArg {
    Cube,
    Plummer,
    Collision,
    Disk,
}

impl IcArg {
    fn setup(self) -> ic::Setup {
        match self {
            IcArg::Cube => ic::Setup::UniformCube,
            IcArg::Plummer => ic::Setup::Plummer,
            IcArg::Collision => ic::Setup::Collision,
            IcArg::Disk => ic::Setup::ColdDisk,
        }
    }
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
    err: &mut dyn Write,
    progress: Progress,
) -> Result<(), Failure> {
    match cli::parse::<Cli>(args, out)? {
        Some(cli) => run(&cli, out, err, progress).map_err(cli::failure),
        None => Ok(()),
    }
}

/// Defaults that depend on where the run lands: (bodies, steps).
fn defaults_for(backend: &str) -> (usize, u64) {
    match backend {
        "cuda" => (65_536, 100),
        "emulator" => (2_048, 2),
        _ => (16_384, 10),
    }
}

/// Applies the command line's parameters over `base` (the defaults or the
/// checkpoint's).
fn configure(builder: SimulationBuilder, cli: &Cli, base: &Params) -> SimulationBuilder {
    let block = cli.block.unwrap_or(base.kernel().block());
    let kernel = match cli.kernel {
        None => match base.kernel() {
            Kernel::Simt { .. } => Kernel::Simt { block },
            Kernel::Tiled { .. } => Kernel::Tiled { block },
            _ => Kernel::Triangle { block },
        },
        Some(KernelArg::Simt) => Kernel::Simt { block },
        Some(KernelArg::Tiled) => Kernel::Tiled { block },
        Some(KernelArg::Triangle) => Kernel::Triangle { block },
    };
    let integrator = match cli.integrator {
        None => base.integrator(),
        Some(IntegratorArg::Euler) => Integrator::SemiImplicitEuler,
        Some(IntegratorArg::Leapfrog) => Integrator::Leapfrog,
    };
    let cpu = Backend::Cpu(CpuTuning {
        isa: cli.cpu_isa,
        ..CpuTuning::default()
    });
    builder
        .dt(cli.dt.unwrap_or(base.dt_f64()))
        .softening(cli.softening.unwrap_or(base.gravity().softening() as f64))
        .kernel(kernel)
        .integrator(integrator)
        .backend(match cli.backend {
            BackendArg::Auto => Backend::Auto,
            BackendArg::Cpu => cpu,
            BackendArg::Cuda => Backend::Cuda { device: 0 },
            BackendArg::Emulator => Backend::emulator(),
        })
}

/// The checkpoint's parameters that the command line would change, as
/// `name old -> new`.
fn changes_from(cli: &Cli, base: &Params) -> Vec<String> {
    let mut changes = Vec::new();
    if let Some(dt) = cli.dt
        && dt != base.dt_f64()
    {
        changes.push(format!("dt {} -> {dt}", base.dt_f64()));
    }
    let eps = base.gravity().softening();
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
    changes
}

/// Builds the simulation the command line asks for; also returns the
/// checkpoint's parameters it changed (with `--allow-changes`).
fn build(cli: &Cli) -> Result<(Simulation, Vec<String>)> {
    if let Some(path) = &cli.resume {
        let checkpoint = Checkpoint::load(path)?;
        let base = checkpoint.params;
        let changes = changes_from(cli, &base);
        if !changes.is_empty() && !cli.allow_changes {
            return Err(usage(format!(
                "--resume {}: the command line changes the checkpoint's parameters ({}), so the \
                 continued run would not be the one checkpointed; pass --allow-changes to apply them",
                path.display(),
                changes.join(", ")
            )));
        }
        let builder = configure(Simulation::from_checkpoint(checkpoint), cli, &base);
        return Ok((builder.build()?, changes));
    }
    let base = Params::default();
    let seed = cli.seed.unwrap_or(42);
    let bodies = match (&cli.init, cli.n) {
        (Some(path), _) => {
            snapshot::load_npy(path).with_context(|| format!("--init {}", path.display()))?
        }
        (None, Some(n)) => cli.ic.setup().generate(n, seed)?,
        (None, None) => {
            // The default size depends on the backend: find out where a
            // one-body simulation with the same settings lands.
            let probe =
                configure(Simulation::builder(ic::uniform_cube(1, 0)), cli, &base).build()?;
            let (n, _) = defaults_for(probe.backend().name());
            drop(probe);
            cli.ic.setup().generate(n, seed)?
        }
    };
    Ok((
        configure(Simulation::builder(bodies), cli, &base).build()?,
        Vec::new(),
    ))
}

impl Cli {
    /// The checkpoint and archive flags.
    fn periodic(&self) -> Periodic {
        Periodic {
            checkpoint: self.checkpoint.clone(),
            archive: self.archive.clone(),
            every: self.every,
            force: self.force,
            resume: self.resume.clone(),
        }
    }
}

fn run(cli: &Cli, out: &mut dyn Write, err: &mut dyn Write, progress: Progress) -> Result<()> {
    let periodic = cli.periodic();
    periodic.check_outputs(&[&cli.save, &cli.checkpoint, &cli.render, &cli.archive])?;
    let (mut sim, changes) = build(cli)?;
    let (_, default_steps) = defaults_for(sim.backend().name());
    let start = sim.steps_done();
    let target = match (cli.steps, &cli.resume) {
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
    if cli.resume.is_some() && target == start {
        let _ = writeln!(
            err,
            "note: the checkpoint is already at step {start}: nothing to run"
        );
    }
    let to_run = target - start;
    let n = sim.len();

    let mut archive = periodic.open_archive(&sim)?;

    let e0 = if cli.no_energy {
        None
    } else {
        Some(sim.energy()?)
    };
    let mut recorder = match &cli.render {
        Some(path) => {
            use nbody_host::render::{Camera, Recorder, Renderer};
            let camera = Camera::fit(sim.positions()?, glam::Vec3::NEG_Z, 1.1)?;
            let mut recorder =
                Recorder::new(Renderer::new(camera, 480, 480)?, cli.render_every)?.gif(path)?;
            recorder.capture(&mut sim)?;
            Some(recorder)
        }
        None => None,
    };
    let stops: Vec<u64> = recorder
        .as_ref()
        .map(|_| cli.render_every)
        .into_iter()
        .collect();
    let stepping = cli::drive(
        &mut sim,
        target,
        &periodic,
        &mut archive,
        progress,
        err,
        &stops,
        |sim, end| {
            if let Some(recorder) = &mut recorder
                && (end % cli.render_every == 0 || end == target)
            {
                recorder.capture(sim)?;
            }
            Ok(())
        },
    )?;
    if let (Some(recorder), Some(path)) = (recorder, &cli.render) {
        let frames = recorder.finish()?;
        writeln!(out, "wrote {} ({frames} frames)", path.display())?;
    }
    let energies = match e0 {
        Some(e0) => Some((e0, sim.energy()?)),
        None => None,
    };
    if let Some(path) = &cli.save {
        sim.save_npy(path)?;
    }

    let seconds = stepping.as_secs_f64();
    let interactions = (n as f64) * (n as f64) * (to_run as f64);
    let pips = if seconds > 0.0 {
        interactions / seconds
    } else {
        0.0
    };
    let p = sim.params();
    let (backend, method, integrator) = (sim.backend(), sim.method(), p.integrator());
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
        sim.time()
    )
    .map_err(w)?;
    writeln!(out, "wall time   {seconds:.3} s, {pips:.3e} interactions/s").map_err(w)?;
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
        "result backend={} kernel={} integrator={} n={n} steps={to_run} seconds={seconds} pips={pips:.6e} energy_rel_change={de}",
        backend.name(),
        method,
        integrator.name(),
    )
    .map_err(w)?;
    out.flush().context("writing the report")?;
    Ok(())
}
