//! The command line shared by `nbody_tiled` (one process) and `nbody_mpi`
//! (MPI ranks): the flags ([`RunArgs`]), building the run's settings from
//! them, the checks before a run, the run loop itself ([`run`], over a
//! [`Session`]), the report and its `result` line, and the exit statuses.
//! Each example includes this file as a module and adds its own flags and
//! `main`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Args, Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use nbody_host::snapshot::ArchiveWriter;
use nbody_host::{
    Backend, BackendKind, Checkpoint, CpuTuning, Energy, HermiteSettings, Integrator, Isa, Kernel,
    Params, Precision, Simulation, SimulationBuilder, ic, snapshot,
};

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

/// The end of `--help`: units and exit statuses.
pub const AFTER_HELP: &str = "\
Units: none built in. G = 1 by default (--softening and --dt are in the same
length and time units as the positions and velocities); the initial conditions
are in N-body (Henon) units, G = 1 and total mass 1, except the cube (unit
masses, NVIDIA Warp's example).

Exit status: 0 success, 1 backend failure or other error, 2 usage (flags),
3 invalid input (parameters, bodies, input files, memory for N), 4 file I/O,
5 divergence (a non-finite state or energy).";

/// The flags of every N-body run (flattened into each example's parser).
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("periodic").args(["checkpoint", "archive"]).multiple(true)))]
pub struct RunArgs {
    /// Number of bodies [default: 65536 on a GPU, 16384 on the CPU, 2048 in the emulator]
    #[arg(long, conflicts_with_all = ["init", "resume"])]
    pub n: Option<usize>,
    /// Steps to run; with --resume, the step count to reach (counted from the
    /// start of the run) [default: 100 on a GPU, 10 on the CPU, 2 in the emulator]
    #[arg(long)]
    pub steps: Option<u64>,
    /// Time step [default: 0.01, or the checkpoint's]
    #[arg(long)]
    pub dt: Option<f64>,
    /// Plummer softening length [default: 0.1, or the checkpoint's]
    #[arg(long)]
    pub softening: Option<f64>,
    /// Force kernel [default: tiled, or the checkpoint's]
    #[arg(long, value_enum)]
    pub kernel: Option<KernelArg>,
    /// Threads per block, a power of two in 32..=1024 [default: 256, or the checkpoint's]
    #[arg(long)]
    pub block: Option<u32>,
    /// Time integrator [default: euler, or the checkpoint's]; hermite: 4th-order
    /// Hermite with block time steps in f64 (--dt is then the interval at whose
    /// ends all bodies are synchronised, default 0.125)
    #[arg(long, value_enum)]
    pub integrator: Option<IntegratorArg>,
    /// Hermite: Aarseth's accuracy parameter eta [default: 0.02]
    #[arg(long, value_name = "E")]
    pub eta: Option<f64>,
    /// Hermite: the starting criterion's eta_s [default: eta / 20]
    #[arg(long, value_name = "E")]
    pub eta_s: Option<f64>,
    /// Hermite: integrate to this time exactly (instead of --steps intervals)
    #[arg(long, value_name = "T", conflicts_with = "steps")]
    pub t_end: Option<f64>,
    /// Hermite: force precision [default: f64]
    #[arg(long, value_enum)]
    pub precision: Option<PrecisionArg>,
    /// Where to run
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Start from an (N, 7) .npy array: x y z vx vy vz m per row
    #[arg(long, value_name = "FILE.npy", conflicts_with = "resume")]
    pub init: Option<PathBuf>,
    /// Initial conditions (when neither --init nor --resume is given)
    #[arg(long, value_enum, default_value_t = IcArg::Cube, conflicts_with_all = ["init", "resume"])]
    pub ic: IcArg,
    /// Seed of the initial conditions [default: 42]
    #[arg(long, conflicts_with_all = ["init", "resume"])]
    pub seed: Option<u64>,
    /// Save the final state as an (N, 7) float32 .npy file
    #[arg(long, value_name = "FILE.npy")]
    pub save: Option<PathBuf>,
    /// Write a checkpoint at the end (and every --every steps), atomically;
    /// an existing file is only replaced with --force or when it is the --resume file
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// Append snapshots to an archive (nbody_host::snapshot::Archive) at the
    /// start, every --every steps and at the end; with --resume, the archive
    /// is continued from the checkpoint's step
    #[arg(long, value_name = "FILE")]
    pub archive: Option<PathBuf>,
    /// Checkpoint and archive every K steps (of the whole run)
    #[arg(long, value_name = "K", requires = "periodic", value_parser = clap::value_parser!(u64).range(1..))]
    pub every: Option<u64>,
    /// Replace an existing --checkpoint or --archive file of another run
    #[arg(long)]
    pub force: bool,
    /// Continue from a checkpoint (parameters from the checkpoint)
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
    /// With --resume: apply --dt, --softening, --kernel, --block or
    /// --integrator values that differ from the checkpoint's (refused
    /// otherwise); the report lists them
    #[arg(long, requires = "resume")]
    pub allow_changes: bool,
    /// Skip the two energy sums (each costs about as much as a step on the
    /// CPU); the result line then says energy_rel_change=skipped
    #[arg(long)]
    pub no_energy: bool,
    /// Render an animated GIF of the run (a frame every --render-every steps,
    /// state copied back only then, outside the timing)
    #[arg(long, value_name = "FILE.gif")]
    pub render: Option<PathBuf>,
    /// Steps between rendered frames
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub render_every: u64,
    /// CPU backend: use this instruction set (avx512, avx2+fma, neon, scalar)
    /// instead of the best one detected
    #[arg(long, value_name = "ISA", value_parser = parse_isa)]
    pub cpu_isa: Option<Isa>,
}

pub fn parse_isa(name: &str) -> std::result::Result<Isa, String> {
    Isa::from_name(name).ok_or_else(|| {
        format!("unknown instruction set {name:?}: avx512, avx2+fma, neon or scalar")
    })
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum KernelArg {
    Simt,
    Tiled,
    Triangle,
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
/// `--precision`), checked: an invalid value is an error naming it.
pub fn hermite_settings(cli: &RunArgs) -> nbody_host::Result<HermiteSettings> {
    let eta = cli.eta.unwrap_or(0.02);
    let mut settings = HermiteSettings::new(eta)?;
    if let Some(eta_s) = cli.eta_s {
        settings = settings.with_eta_s(eta_s)?;
    }
    Ok(settings.with_precision(match cli.precision {
        Some(PrecisionArg::Mixed) => Precision::Mixed,
        _ => Precision::F64,
    }))
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BackendArg {
    Auto,
    Cpu,
    Cuda,
    Emulator,
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

/// A command-line mistake found after parsing (exit status 2).
#[derive(Debug)]
pub struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

pub fn usage(message: String) -> anyhow::Error {
    Usage(message).into()
}

/// Seconds between progress lines when stderr is not a terminal.
pub const PROGRESS_LINE_EVERY: Duration = Duration::from_secs(5);

/// Parses `args` (program name first) into `C`: `Ok(None)` after printing
/// `--help` or `--version` to `out`; a command-line error as its [`Failure`]
/// (clap's first paragraph on one line, exit status 2).
pub fn parse<C: Parser>(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    out: &mut dyn Write,
) -> Result<Option<C>, Failure> {
    match C::try_parse_from(args) {
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
fn exit_code(e: &anyhow::Error) -> u8 {
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
                | E::InvalidBlockSize { .. }
                | E::SharedMemoryExceeded { .. }
                | E::GridTooLarge { .. }
                | E::DeviceMemoryExceeded { .. }
                | E::HostMemoryExceeded { .. }
                | E::InvalidFile { .. }
                | E::InvalidRenderSetting { .. }
                | E::InvalidParameter { .. }
                | E::InvalidTargetTime { .. }
                | E::CoincidentBodies { .. } => exit::INPUT,
                _ => exit::OTHER,
            };
        }
    }
    exit::OTHER
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
pub fn defaults_for(backend: &str) -> (usize, u64) {
    match backend {
        "cuda" => (65_536, 100),
        "emulator" => (2_048, 2),
        _ => (16_384, 10),
    }
}

/// Applies the command line's parameters over `base` (the defaults or the
/// checkpoint's).
pub fn configure(builder: SimulationBuilder, cli: &RunArgs, base: &Params) -> SimulationBuilder {
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
        // `prepare` checked the settings.
        Some(IntegratorArg::Hermite) => {
            Integrator::Hermite(hermite_settings(cli).unwrap_or_default())
        }
    };
    let default_dt = match (cli.integrator, base.integrator()) {
        (Some(IntegratorArg::Hermite), nbody_host::Integrator::SemiImplicitEuler) => 0.125,
        _ => base.dt_f64(),
    };
    let cpu = Backend::Cpu(CpuTuning {
        isa: cli.cpu_isa,
        ..CpuTuning::default()
    });
    builder
        .dt(cli.dt.unwrap_or(default_dt))
        .softening(
            cli.softening
                .unwrap_or(base.gravity().unwrap_or_default().softening_f64()),
        )
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

/// The settings of the simulation the command line asks for (bodies
/// loaded or generated, parameters, backend); also returns the checkpoint's
/// parameters it changed (with `--allow-changes`).
pub fn prepare(cli: &RunArgs) -> Result<(SimulationBuilder, Vec<String>)> {
    let hermite = matches!(cli.integrator, Some(IntegratorArg::Hermite));
    if hermite {
        hermite_settings(cli)?;
    } else if cli.resume.is_none() {
        for (flag, given) in [
            ("--eta", cli.eta.is_some()),
            ("--eta-s", cli.eta_s.is_some()),
            ("--t-end", cli.t_end.is_some()),
            ("--precision", cli.precision.is_some()),
        ] {
            if given {
                return Err(usage(format!(
                    "{flag} is a setting of --integrator hermite"
                )));
            }
        }
    }
    if let Some(path) = &cli.resume {
        let checkpoint = Checkpoint::load(path)?;
        let base = checkpoint.params.clone();
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
        return Ok((builder, changes));
    }
    let base = Params::default();
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
        return Ok((configure(builder, cli, &base), Vec::new()));
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
                configure(Simulation::builder(ic::uniform_cube(1, 0)), cli, &base).build()?;
            let (n, _) = defaults_for(probe.backend().name());
            drop(probe);
            cli.ic.setup().generate(n, seed)?
        }
    };
    Ok((
        configure(Simulation::builder(bodies), cli, &base),
        Vec::new(),
    ))
}

/// Whether `a` and `b` name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Checks every output path before anything runs: writable, and not
/// another run's checkpoint or archive unless `--force`.
pub fn check_outputs(cli: &RunArgs) -> Result<()> {
    for path in [&cli.save, &cli.checkpoint, &cli.render, &cli.archive]
        .into_iter()
        .flatten()
    {
        snapshot::check_output_path(path)?;
    }
    if let Some(path) = &cli.checkpoint
        && path.exists()
        && !cli.force
        && !cli.resume.as_ref().is_some_and(|r| same_file(r, path))
    {
        return Err(usage(format!(
            "--checkpoint {}: the file exists (another run's checkpoint?); pass --force to \
             replace it, or --resume from it",
            path.display()
        )));
    }
    if let Some(path) = &cli.archive
        && path.exists()
        && !cli.force
        && cli.resume.is_none()
    {
        return Err(usage(format!(
            "--archive {}: the file exists (another run's archive?); pass --force to replace \
             it, or --resume a checkpoint of the run that wrote it to continue it",
            path.display()
        )));
    }
    Ok(())
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

/// What the run loop drives: one [`Simulation`], or one rank's part of a
/// distributed run (whose methods are then collective: every rank calls
/// them in the same order, and only rank 0 writes files).
pub trait Session {
    /// Steps taken since the start of the run.
    fn steps_done(&self) -> u64;
    /// Number of bodies (of the whole system).
    fn len(&self) -> usize;
    /// Simulated time.
    fn time(&self) -> f64;
    /// The run's parameters.
    fn params(&self) -> Params;
    /// The backend in use (this rank's).
    fn backend(&self) -> BackendKind;
    /// What enumerates the pairs, for the report and `kernel=`.
    fn method(&self) -> &'static str;
    /// Advances `steps` steps.
    fn step(&mut self, steps: u64) -> nbody_host::Result<()>;
    /// Total energy now.
    fn energy(&mut self) -> nbody_host::Result<Energy>;
    /// Writes a checkpoint.
    fn save_checkpoint(&mut self, path: &Path) -> nbody_host::Result<()>;
    /// Writes an `.npy` snapshot.
    fn save_npy(&mut self, path: &Path) -> nbody_host::Result<()>;
    /// Opens the archive: continued at step `at` (a resumed run's archive
    /// that exists), else created.
    fn open_archive(&mut self, path: &Path, at: Option<u64>) -> nbody_host::Result<()>;
    /// The step of the archive's last record.
    fn archive_last_step(&mut self) -> Option<u64>;
    /// Appends a snapshot to the open archive.
    fn append_archive(&mut self) -> nbody_host::Result<()>;
    /// The simulation itself, where there is one in this process (for
    /// `--render`).
    fn simulation(&mut self) -> Option<&mut Simulation>;
    /// Lines to add to the report, and ` key=value` fields to append to the
    /// `result` line, once the run is done.
    fn summary(&mut self) -> nbody_host::Result<(Vec<String>, String)> {
        Ok((Vec::new(), String::new()))
    }
}

/// The [`Session`] methods that `Simulation` and `DistributedSimulation`
/// both have under the same names, forwarded to the session's `sim`.
macro_rules! forward_to_sim {
    () => {
        fn steps_done(&self) -> u64 {
            self.sim.steps_done()
        }
        fn len(&self) -> usize {
            self.sim.len()
        }
        fn time(&self) -> f64 {
            self.sim.time()
        }
        fn params(&self) -> nbody_host::Params {
            self.sim.params().clone()
        }
        fn backend(&self) -> nbody_host::BackendKind {
            self.sim.backend()
        }
        fn method(&self) -> &'static str {
            self.sim.method()
        }
        fn step(&mut self, steps: u64) -> nbody_host::Result<()> {
            self.sim.step(steps)
        }
        fn energy(&mut self) -> nbody_host::Result<nbody_host::Energy> {
            self.sim.energy()
        }
        fn save_checkpoint(&mut self, path: &std::path::Path) -> nbody_host::Result<()> {
            self.sim.save_checkpoint(path)
        }
        fn save_npy(&mut self, path: &std::path::Path) -> nbody_host::Result<()> {
            self.sim.save_npy(path)
        }
    };
}
// (`nbody_mpi` uses it by path; `nbody_tiled` only through `Local`.)
#[allow(
    unused_imports,
    reason = "`nbody_mpi` uses it by path; `nbody_tiled` only through `Local`"
)]
pub(crate) use forward_to_sim;

/// One simulation in this process, with its archive.
pub struct Local {
    /// The simulation.
    pub sim: Simulation,
    /// The archive, once opened.
    pub archive: Option<ArchiveWriter>,
}

impl Session for Local {
    forward_to_sim!();

    fn open_archive(&mut self, path: &Path, at: Option<u64>) -> nbody_host::Result<()> {
        self.archive = Some(match at {
            Some(step) => ArchiveWriter::continue_at(path, step)?,
            None => ArchiveWriter::create(path)?,
        });
        Ok(())
    }
    fn archive_last_step(&mut self) -> Option<u64> {
        self.archive.as_ref().and_then(ArchiveWriter::last_step)
    }
    fn append_archive(&mut self) -> nbody_host::Result<()> {
        match &mut self.archive {
            Some(archive) => archive.append(&self.sim),
            None => Ok(()),
        }
    }
    fn simulation(&mut self) -> Option<&mut Simulation> {
        Some(&mut self.sim)
    }
}

/// Runs `session` as `cli` asks (steps, checkpoints, archive, frames,
/// snapshot) and writes the report to `out`, progress to `err`. `changes`
/// are the checkpoint's parameters the command line changed.
pub fn run(
    cli: &RunArgs,
    session: &mut dyn Session,
    changes: &[String],
    out: &mut dyn Write,
    err: &mut dyn Write,
    progress: Progress,
) -> Result<()> {
    let (_, default_steps) = defaults_for(session.backend().name());
    let start = session.steps_done();
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
    let n = session.len();

    if let Some(path) = &cli.archive {
        let continued = cli.resume.is_some() && path.exists();
        session.open_archive(path, continued.then_some(start))?;
        if session.archive_last_step() != Some(start) {
            session.append_archive()?;
        }
    }

    let e0 = if cli.no_energy {
        None
    } else {
        Some(session.energy()?)
    };
    let mut stepping = Duration::ZERO;
    let mut target = target;
    if let Some(t_end) = cli.t_end {
        // Hermite: to `t_end` exactly, in one call (no --every, no frames).
        let sim = session
            .simulation()
            .ok_or_else(|| usage("--t-end needs the simulation in one process".into()))?;
        if sim.params().integrator().hermite().is_none() {
            return Err(usage("--t-end needs --integrator hermite".into()));
        }
        let t = Instant::now();
        let stepped = sim.integrate_to(t_end);
        stepping += t.elapsed();
        stepped?;
        target = session.steps_done();
    }
    let to_run = target - start;
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
    let mut recorder = match &cli.render {
        Some(path) => {
            use nbody_host::render::{Camera, Recorder, Renderer};
            let sim = session
                .simulation()
                .ok_or_else(|| usage("--render needs the simulation in one process".into()))?;
            let camera = Camera::fit(sim.positions()?, glam::Vec3::NEG_Z, 1.1)?;
            let mut recorder =
                Recorder::new(Renderer::new(camera, 480, 480)?, cli.render_every)?.gif(path)?;
            recorder.capture(sim)?;
            Some(recorder)
        }
        None => None,
    };
    // Chunks of about 1% of the run, so the bar moves; cut at checkpoints
    // and frames.
    let chunk = (to_run / 100).max(1);
    let mut last_checkpoint = None;
    while session.steps_done() < target {
        let done = session.steps_done();
        let mut end = (done + chunk).min(target);
        if let Some(k) = cli.every {
            end = end.min((done / k + 1) * k);
        }
        if recorder.is_some() {
            let k = cli.render_every;
            end = end.min((done / k + 1) * k);
        }
        let t = Instant::now();
        let stepped = session.step(end - done);
        stepping += t.elapsed();
        if let Err(e) = stepped {
            bar.abandon();
            return Err(e.into());
        }
        bar.set_position(end - start);
        if let Some(lines) = &mut lines {
            lines.update(err, end - start, to_run, target, end);
        }
        if let Some(k) = cli.every
            && end % k == 0
        {
            if let Some(path) = &cli.checkpoint {
                session.save_checkpoint(path)?;
                last_checkpoint = Some(end);
            }
            if cli.archive.is_some() {
                session.append_archive()?;
            }
        }
        if let (Some(recorder), Some(sim)) = (&mut recorder, session.simulation())
            && (end % cli.render_every == 0 || end == target)
        {
            recorder.capture(sim)?;
        }
    }
    bar.finish_and_clear();
    let done = session.steps_done();
    if let Some(path) = &cli.checkpoint
        && last_checkpoint != Some(done)
    {
        session.save_checkpoint(path)?;
    }
    if cli.archive.is_some() && session.archive_last_step() != Some(done) {
        session.append_archive()?;
    }
    if let (Some(recorder), Some(path)) = (recorder, &cli.render) {
        let frames = recorder.finish()?;
        writeln!(out, "wrote {} ({frames} frames)", path.display())?;
    }
    let energies = match e0 {
        Some(e0) => Some((e0, session.energy()?)),
        None => None,
    };
    if let Some(path) = &cli.save {
        session.save_npy(path)?;
    }
    let (mut more_lines, mut more_fields) = session.summary()?;
    let stats = session.simulation().and_then(|sim| sim.hermite_stats());
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
        session.time()
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
