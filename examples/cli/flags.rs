//! The flags every run has, declared once ([`RunFlags`], flattened into
//! each example's parser), what they choose, and the checks of the output
//! paths before anything runs.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{ArgGroup, Args, ValueEnum};
use nbody_host::{Backend, CpuTuning, Isa, snapshot};

/// A command-line mistake found after parsing (exit status 2).
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A [`Usage`] error.
pub fn usage(message: String) -> anyhow::Error {
    Usage(message).into()
}

/// An input the example cannot run, found by the example itself (exit
/// status 3): a checkpoint of another kind of run.
#[derive(Debug)]
pub struct Invalid(pub String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

/// An [`Invalid`] error.
pub fn invalid(message: String) -> anyhow::Error {
    Invalid(message).into()
}

/// A run that blew up, found by the example itself (exit status 5): an
/// energy jump far beyond any integration error.
#[derive(Debug)]
pub struct Exploded(pub String);

impl std::fmt::Display for Exploded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Exploded {}

/// An [`Exploded`] error.
pub fn exploded(message: String) -> anyhow::Error {
    Exploded(message).into()
}

/// The kind of run a checkpoint's parameters make (force law, and for
/// gravity the integrator), and what continues it: for the error of an
/// example given another kind's.
pub fn checkpoint_kind(params: &nbody_host::Params) -> (String, &'static str) {
    match params.force().as_pair() {
        // The Hermite integrator runs in one process only.
        None if params.integrator().hermite().is_some() => {
            ("Hermite gravity".into(), "nbody_tiled")
        }
        None => ("gravity".into(), "nbody_tiled (or nbody_mpi)"),
        Some(p) if p.style() == nbody_host::PairStyle::LennardJones => {
            ("Lennard-Jones".into(), "lj_melt")
        }
        Some(p) => (
            format!("{} pair-potential", p.style().name()),
            "md (lj_melt runs lj/cut only)",
        ),
    }
}

/// The flags of every run: how long, where, what it writes, what it
/// continues, how much it says.
#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("periodic").args(["checkpoint", "archive"]).multiple(true)))]
pub struct RunFlags {
    /// Steps to run; with --resume, the step count to reach (counted from
    /// the start of the run)
    #[arg(long)]
    pub steps: Option<u64>,
    /// Where to run
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// The CPU backend's instruction set (avx512, avx2+fma, neon, scalar)
    /// instead of the best one detected; also with --backend auto where it
    /// picks the CPU; refused with another backend
    #[arg(long, value_name = "ISA", value_parser = parse_isa)]
    pub cpu_isa: Option<Isa>,
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
    /// No progress on stderr (a bar on a terminal, else a line every few
    /// seconds); notes and errors still go there, the report to stdout
    #[arg(long, short)]
    pub quiet: bool,
}

/// `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    Auto,
    Cpu,
    Cuda,
    Emulator,
}

/// `--cpu-isa`'s parser: a known name, and an instruction set of this
/// machine's architecture (NEON on x86-64 can never run).
pub fn parse_isa(name: &str) -> std::result::Result<Isa, String> {
    let isa = Isa::from_name(name).ok_or_else(|| {
        format!("unknown instruction set {name:?}: avx512, avx2+fma, neon or scalar")
    })?;
    let (arch, native): (&str, &[Isa]) = if cfg!(target_arch = "x86_64") {
        ("x86-64", &[Isa::Avx512, Isa::Avx2Fma, Isa::Scalar])
    } else if cfg!(target_arch = "aarch64") {
        ("aarch64", &[Isa::Neon, Isa::Scalar])
    } else {
        ("this architecture", &[Isa::Scalar])
    };
    if native.contains(&isa) {
        return Ok(isa);
    }
    let names: Vec<&str> = native.iter().map(|i| i.name()).collect();
    Err(format!(
        "instruction set {isa} is not available on {arch}, which has {}",
        names.join(", ")
    ))
}

/// Where [`BackendArg::Auto`] runs an example's force law.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoPicks {
    /// Always the CPU (short-range forces).
    Cpu,
    /// A CUDA device where there is one, else the CPU (gravity).
    CudaIfPresent,
}

/// Whether a CUDA device starts here (what [`Backend::Auto`] tries first
/// for gravity): a one-body simulation on device 0.
fn cuda_present() -> bool {
    nbody_host::Simulation::builder(nbody_host::ic::uniform_cube(1, 0))
        .backend(Backend::Cuda { device: 0 })
        .build()
        .is_ok()
}

impl RunFlags {
    /// The backend `--backend` and `--cpu-isa` ask for. `--cpu-isa` applies
    /// whenever the CPU runs, also where `--backend auto` picks it (for
    /// `auto`), and is a [`Usage`] error where another backend runs.
    pub fn backend(&self, auto: AutoPicks) -> Result<Backend> {
        let cpu = |isa| {
            Backend::Cpu(CpuTuning {
                isa,
                ..CpuTuning::default()
            })
        };
        Ok(match (self.backend, self.cpu_isa) {
            (BackendArg::Cpu, isa) => cpu(isa),
            (BackendArg::Auto, None) => Backend::Auto,
            (BackendArg::Auto, Some(isa)) => {
                if auto == AutoPicks::CudaIfPresent && cuda_present() {
                    return Err(usage(format!(
                        "--cpu-isa {isa}: --backend auto runs on the CUDA device here, where an \
                         instruction set of the CPU does not apply; pass --backend cpu"
                    )));
                }
                cpu(Some(isa))
            }
            (BackendArg::Cuda, None) => Backend::Cuda { device: 0 },
            (BackendArg::Emulator, None) => Backend::emulator(),
            (other, Some(isa)) => {
                let name = other.to_possible_value().map(|v| v.get_name().to_owned());
                return Err(usage(format!(
                    "--cpu-isa {isa} chooses the CPU backend's instruction set; it does not \
                     apply to --backend {}",
                    name.unwrap_or_default()
                )));
            }
        })
    }

    /// Checks every output path before anything runs (`outputs`: the
    /// example's, each with its flag, including `--save`, `--checkpoint`
    /// and `--archive`): writable, and not another run's checkpoint or
    /// archive unless `--force`.
    pub fn check_outputs(&self, outputs: &[(&str, &Option<PathBuf>)]) -> Result<()> {
        // One file per output, and the checkpoint resumed from is only
        // ever replaced by the new checkpoint.
        let named: Vec<(&str, &PathBuf, PathBuf)> = outputs
            .iter()
            .filter_map(|&(flag, path)| path.as_ref().map(|p| (flag, p, identity(p))))
            .collect();
        for (i, (a, path, id)) in named.iter().enumerate() {
            if let Some((b, ..)) = named[i + 1..].iter().find(|(.., other)| other == id) {
                return Err(usage(format!(
                    "{a} and {b} name the same file {}: each output needs its own",
                    path.display()
                )));
            }
            if let Some(resume) = &self.resume
                && *a != "--checkpoint"
                && identity(resume) == *id
            {
                return Err(usage(format!(
                    "{a} {} is the --resume checkpoint: writing it there would destroy the \
                     checkpoint (only --checkpoint may replace it)",
                    path.display()
                )));
            }
        }
        for (_, path) in outputs {
            if let Some(path) = path {
                snapshot::check_output_path(path)?;
            }
        }
        if let Some(path) = &self.checkpoint
            && path.exists()
            && !self.force
            && !self.resume.as_ref().is_some_and(|r| same_file(r, path))
        {
            return Err(usage(format!(
                "--checkpoint {}: the file exists (another run's checkpoint?); pass --force to \
                 replace it, or --resume from it",
                path.display()
            )));
        }
        if let Some(path) = &self.archive
            && path.exists()
            && !self.force
            && self.resume.is_none()
        {
            return Err(usage(format!(
                "--archive {}: the file exists (another run's archive?); pass --force to replace \
                 it, or --resume a checkpoint of the run that wrote it to continue it",
                path.display()
            )));
        }
        Ok(())
    }

    /// The outputs every run has, with their flags.
    pub fn outputs(&self) -> [(&'static str, &Option<PathBuf>); 3] {
        [
            ("--save", &self.save),
            ("--checkpoint", &self.checkpoint),
            ("--archive", &self.archive),
        ]
    }
}

/// The file `path` names, however spelled: its canonical path where it
/// exists, else its directory's canonical path and its name.
fn identity(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (absolute.parent(), absolute.file_name()) {
        (Some(dir), Some(name)) => dir
            .canonicalize()
            .map(|dir| dir.join(name))
            .unwrap_or(absolute),
        _ => absolute,
    }
}

/// Whether `a` and `b` name the same existing file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
