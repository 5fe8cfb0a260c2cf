//! NVIDIA Warp's N-body example's problem from the command line: `N` bodies in a uniform
//! cube, softening 0.1, `dt = 0.01`, `G = 1`, the tiled kernel with 256
//! threads per block, semi-implicit Euler, on the best backend present.
//!
//! ```text
//! cargo run --release --example nbody_tiled                      # defaults
//! cargo run --release --example nbody_tiled -- --n 4096 --steps 50 --integrator leapfrog
//! cargo run --release --example nbody_tiled -- --steps 1000 --checkpoint run.ckpt --every 100
//! cargo run --release --example nbody_tiled -- --steps 1000 --resume run.ckpt --save final.npy
//! ```
//!
//! Prints the backend, kernel, size, wall time, interactions per second
//! (PIPS, `N^2 steps / seconds`) and the relative energy change, then one
//! machine-readable line:
//!
//! ```text
//! result backend=cpu kernel=tiled integrator=euler n=16384 steps=10 seconds=2.5 pips=1.07e9 energy_rel_change=1.2e-6
//! ```
//!
//! Bad flags or files exit with status 2 and one line `error: ...`.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use nbody_host::{
    Backend, Bodies, Checkpoint, CpuTuning, Integrator, Isa, Kernel, Params, Simulation,
    SimulationBuilder, ic, snapshot,
};

/// Direct-summation N-body gravity: NVIDIA Warp's N-body example's tiled-kernel run.
#[derive(Parser, Debug)]
#[command(name = "nbody_tiled", allow_negative_numbers = true)]
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
    /// Seed of the initial conditions
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Save the final state as an (N, 7) float32 .npy file
    #[arg(long, value_name = "FILE.npy")]
    save: Option<PathBuf>,
    /// Write a checkpoint at the end (and every --every steps), atomically
    #[arg(long, value_name = "FILE")]
    checkpoint: Option<PathBuf>,
    /// Checkpoint every K steps (of the whole run)
    #[arg(long, value_name = "K", requires = "checkpoint", value_parser = clap::value_parser!(u64).range(1..))]
    every: Option<u64>,
    /// Continue from a checkpoint (parameters from the checkpoint unless given)
    #[arg(long, value_name = "FILE")]
    resume: Option<PathBuf>,
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

fn parse_isa(name: &str) -> std::result::Result<Isa, String> {
    Isa::from_name(name).ok_or_else(|| {
        format!("unknown instruction set {name:?}: avx512, avx2+fma, neon or scalar")
    })
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

fn main() -> ExitCode {
    let show_progress = std::io::stderr().is_terminal();
    match cli(
        std::env::args_os(),
        &mut std::io::stdout().lock(),
        show_progress,
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(line) => {
            eprintln!("{line}");
            ExitCode::from(2)
        }
    }
}

/// Parses `args` (program name first), runs, writes the report to `out`.
/// Errors come back as one line `error: ...`.
pub fn cli(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    out: &mut dyn Write,
    show_progress: bool,
) -> Result<(), String> {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version: not errors.
            return write!(out, "{e}").map_err(|e| format!("error: {e}"));
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
            return Err(if line.starts_with("error:") {
                line
            } else {
                format!("error: {line}")
            });
        }
    };
    run(&cli, out, show_progress).map_err(|e| format!("error: {}", one_line(&e)))
}

/// The error and its causes on one line, each cause only once (the library's
/// messages already include their I/O causes).
fn one_line(e: &anyhow::Error) -> String {
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

/// Defaults that depend on where the run lands: (bodies, steps).
fn defaults_for(backend: &str) -> (usize, u64) {
    match backend {
        "cuda" => (65_536, 100),
        "emulator" => (2_048, 2),
        _ => (16_384, 10),
    }
}

fn initial_conditions(ic: IcArg, n: usize, seed: u64) -> Bodies {
    match ic {
        IcArg::Cube => ic::uniform_cube(n, seed),
        IcArg::Plummer => ic::plummer(n, seed),
        IcArg::Collision => ic::collision(n, seed),
        IcArg::Disk => ic::cold_disk(n, seed),
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
        .dt(cli.dt.unwrap_or(base.dt() as f64))
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

/// Builds the simulation the command line asks for.
fn build(cli: &Cli) -> Result<Simulation> {
    if let Some(path) = &cli.resume {
        let checkpoint = Checkpoint::load(path)?;
        let base = checkpoint.params;
        return Ok(configure(Simulation::from_checkpoint(checkpoint), cli, &base).build()?);
    }
    let base = Params::default();
    let bodies = match (&cli.init, cli.n) {
        (Some(path), _) => snapshot::load_npy(path)?,
        (None, Some(n)) => initial_conditions(cli.ic, n, cli.seed),
        (None, None) => {
            // The default size depends on the backend: find out where a
            // one-body simulation with the same settings lands.
            let probe =
                configure(Simulation::builder(ic::uniform_cube(1, 0)), cli, &base).build()?;
            let (n, _) = defaults_for(probe.backend().name());
            drop(probe);
            initial_conditions(cli.ic, n, cli.seed)
        }
    };
    Ok(configure(Simulation::builder(bodies), cli, &base).build()?)
}

fn run(cli: &Cli, out: &mut dyn Write, show_progress: bool) -> Result<()> {
    let mut sim = build(cli)?;
    let (_, default_steps) = defaults_for(sim.backend().name());
    let start = sim.steps_done();
    let target = match (cli.steps, &cli.resume) {
        (Some(steps), Some(_)) => steps.max(start),
        (Some(steps), None) => steps,
        (None, Some(_)) => default_steps.max(start),
        (None, None) => default_steps,
    };
    let to_run = target - start;
    let n = sim.len();

    let e0 = sim.energy()?;
    let bar = if show_progress {
        let bar = ProgressBar::new(to_run);
        if let Ok(style) = ProgressStyle::with_template(
            "{bar:40} {pos}/{len} steps  {elapsed_precise} (eta {eta})",
        ) {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut recorder = match &cli.render {
        Some(path) => {
            use nbody_host::render::{Camera, Recorder, Renderer};
            let positions = sim.state()?.bodies.positions;
            let camera = Camera::fit(&positions, glam::Vec3::NEG_Z, 1.1)?;
            let mut recorder =
                Recorder::new(Renderer::new(camera, 480, 480)?, cli.render_every)?.gif(path)?;
            recorder.capture(&mut sim)?;
            Some(recorder)
        }
        None => None,
    };
    // Chunks of about 1% of the run, so the bar moves; cut at checkpoints
    // and frames.
    let chunk = (to_run / 100).max(1);
    let mut stepping = Duration::ZERO;
    let mut last_checkpoint = None;
    while sim.steps_done() < target {
        let done = sim.steps_done();
        let mut end = (done + chunk).min(target);
        if let Some(k) = cli.every {
            end = end.min((done / k + 1) * k);
        }
        if recorder.is_some() {
            let k = cli.render_every;
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
        if let (Some(path), Some(k)) = (&cli.checkpoint, cli.every)
            && end % k == 0
        {
            sim.save_checkpoint(path)?;
            last_checkpoint = Some(end);
        }
        if let Some(recorder) = &mut recorder
            && (end % cli.render_every == 0 || end == target)
        {
            recorder.capture(&mut sim)?;
        }
    }
    bar.finish_and_clear();
    if let Some(path) = &cli.checkpoint
        && last_checkpoint != Some(sim.steps_done())
    {
        sim.save_checkpoint(path)?;
    }
    if let (Some(recorder), Some(path)) = (recorder, &cli.render) {
        let frames = recorder.finish()?;
        writeln!(out, "wrote {} ({frames} frames)", path.display())?;
    }
    let e1 = sim.energy()?;
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
    let de = e1.relative_change_from(&e0);
    let p = sim.params();
    let (backend, method, integrator) = (sim.backend(), sim.method(), p.integrator());
    let w = |e: std::io::Error| anyhow::Error::new(e).context("writing the report");
    writeln!(out, "backend     {backend}").map_err(w)?;
    writeln!(
        out,
        "kernel      {} as {method}, {integrator}, dt {}, {}",
        p.kernel(),
        p.dt(),
        p.force()
    )
    .map_err(w)?;
    writeln!(out, "bodies      {n}, steps {to_run} ({start} -> {target})").map_err(w)?;
    writeln!(out, "wall time   {seconds:.3} s, {pips:.3e} interactions/s").map_err(w)?;
    writeln!(
        out,
        "energy      {:.6e} -> {:.6e}, |dE/E| = {de:.3e}",
        e0.total(),
        e1.total()
    )
    .map_err(w)?;
    writeln!(
        out,
        "result backend={} kernel={} integrator={} n={n} steps={to_run} seconds={seconds} pips={pips:.6e} energy_rel_change={de:.4e}",
        backend.name(),
        method,
        integrator.name(),
    )
    .map_err(w)?;
    out.flush().context("writing the report")?;
    Ok(())
}
