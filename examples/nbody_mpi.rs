//! `nbody_tiled` over MPI ranks (feature `mpi`): the same flags, report and
//! `result` line (plus `ranks=`), the forces by a systolic ring of ranks
//! (`nbody_host::distributed`), each rank on its own backend.
//!
//! ```text
//! cargo build --release --features mpi --example nbody_mpi
//! mpirun -n 4 target/release/examples/nbody_mpi --n 65536 --steps 10
//! mpirun -n 2 target/release/examples/nbody_mpi --n 65536 --steps 100 --checkpoint run.ckpt --every 50
//! mpirun -n 3 target/release/examples/nbody_mpi --resume run.ckpt --steps 200   # another rank count
//! ```
//!
//! ```text
//! result backend=cpu kernel=ring-third-law integrator=euler n=65536 steps=10 seconds=... pips=... energy_rel_change=... ranks=4
//! ```
//!
//! `--ring all-pairs|third-law` picks the ring (default third-law: each pair
//! of blocks once, reactions sent back). Rank 0 reads the input files and
//! writes every output (one checkpoint of the whole system, which also
//! resumes in `nbody_tiled`); with `--backend cuda` each rank takes the GPU
//! of its rank on the node. `--render` is refused (a frame needs the whole
//! state every few steps: render from the archive instead). Exit statuses as
//! `nbody_tiled`'s, the same on every rank; the rank whose error it is
//! prints it.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use mpi::Threading;
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use nbody_host::distributed::{self, DistributedSimulation, RingScheme};
use nbody_host::snapshot::ArchiveWriter;
use nbody_host::{Backend, Bodies, Params, Simulation};

// The command line every example shares; `cli::nbody`: gravity's flags,
// settings and report, shared with `nbody_tiled` (whose one-process
// session this example does not use).
#[macro_use]
#[path = "cli/mod.rs"]
mod cli;

use cli::nbody::{self, AFTER_HELP, RunArgs};
use cli::{Failure, PROGRESS_LINE_EVERY, Progress, Session, exit};

/// Why `--render` is refused over MPI ranks (its `--help`, and the error).
const RENDER_REFUSED: &str = "Refused by nbody_mpi: a frame needs every body's position in one \
process every --render-every steps, a gather of the whole state to rank 0 that the ring \
otherwise never does (and that would sit in the timing); write an --archive instead and \
render its records afterwards (snapshot::Archive::get(i)?.builder().build()? and \
render::Recorder::capture), or run nbody_tiled --render on one process";

/// Direct-summation N-body gravity over MPI ranks: a systolic ring of blocks.
#[derive(Parser, Debug)]
#[command(
    name = "nbody_mpi",
    version,
    allow_negative_numbers = true,
    after_help = AFTER_HELP,
    mut_arg("render", |a| a.help(RENDER_REFUSED)),
    mut_arg("render_every", |a| a.help("Not used: --render is refused (see --render)")),
)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
    /// How the ring pairs the blocks: third-law (each pair of blocks once,
    /// p/2 shifts, reactions sent back) or all-pairs (p - 1 shifts)
    #[arg(long, value_enum, default_value_t = RingArg::ThirdLaw)]
    ring: RingArg,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum RingArg {
    AllPairs,
    ThirdLaw,
}

/// One rank's part of the run, with the archive (on rank 0).
struct Ranks {
    sim: DistributedSimulation,
    archive: Option<ArchiveWriter>,
}

impl Ranks {
    /// Rank 0's `value`, on every rank.
    fn root_value(&self, value: u64) -> u64 {
        let mut v = value;
        self.sim
            .communicator()
            .process_at_rank(0)
            .broadcast_into(&mut v);
        v
    }
}

impl Session for Ranks {
    cli::forward_to_sim!();

    fn open_archive(&mut self, path: &Path, at: Option<u64>) -> nbody_host::Result<()> {
        // Rank 0 decides (it alone sees the file) and opens it.
        let at = self.root_value(at.unwrap_or(u64::MAX));
        let opened = if self.sim.rank() == 0 {
            match at {
                u64::MAX => ArchiveWriter::create(path),
                step => ArchiveWriter::continue_at(path, step),
            }
            .map(Some)
        } else {
            Ok(None)
        };
        self.archive = distributed::agree(self.sim.communicator(), opened)?;
        Ok(())
    }
    fn archive_last_step(&mut self) -> Option<u64> {
        let last = self.archive.as_ref().and_then(ArchiveWriter::last_step);
        Some(self.root_value(last.unwrap_or(u64::MAX))).filter(|&s| s != u64::MAX)
    }
    fn append_archive(&mut self) -> nbody_host::Result<()> {
        self.sim.append_to(self.archive.as_mut())
    }
    fn simulation(&mut self) -> Option<&mut Simulation> {
        None
    }
    /// The ring's time per rank (the slowest rank's) and `ranks=`.
    fn summary(&mut self) -> nbody_host::Result<(Vec<String>, String)> {
        let t = self.sim.ring_timings();
        let comm = self.sim.communicator();
        let mut most = [0.0f64; 2];
        comm.all_reduce_into(
            &[t.compute, t.wait][..],
            &mut most[..],
            SystemOperation::max(),
        );
        let mut bytes = 0u64;
        comm.all_reduce_into(&t.bytes_sent, &mut bytes, SystemOperation::sum());
        let ranks = self.sim.ranks();
        let evaluations = t.evaluations.max(1) as f64;
        let line = format!(
            "ring        {ranks} ranks, {}, {} trips (forces and energies): {:.4} s computing and {:.4} s waiting for blocks per trip (slowest rank), {:.3e} bytes sent in all",
            self.sim.scheme().name(),
            t.evaluations,
            most[0] / evaluations,
            most[1] / evaluations,
            bytes as f64
        );
        Ok((vec![line], format!(" ranks={ranks}")))
    }
}

/// [`distributed::agree`] for the example's own errors: `Ok` on every rank,
/// or each failed rank's own error and [`nbody_host::Error::OtherRank`] on
/// the others.
fn agree<T>(world: &SimpleCommunicator, local: anyhow::Result<T>) -> anyhow::Result<T> {
    let failed = nbody_host::Error::OtherRank {
        rank: world.rank() as usize,
    };
    let flag = distributed::agree(world, local.as_ref().map(|_| ()).map_err(|_| failed));
    match (local, flag) {
        (Err(own), _) => Err(own),
        (Ok(_), Err(elsewhere)) => Err(elsewhere.into()),
        (Ok(value), Ok(())) => Ok(value),
    }
}

fn main() -> ExitCode {
    let Some((universe, _)) = mpi::initialize_with_threading(Threading::Funneled) else {
        eprintln!("error: MPI was already initialised");
        return ExitCode::from(exit::OTHER);
    };
    // A panic on one rank stops the job instead of leaving the others waiting.
    distributed::abort_on_panic();
    let world = universe.world();
    let root = world.rank() == 0;
    let progress = match (root, std::io::stderr().is_terminal()) {
        (false, _) => Progress::Off,
        (true, true) => Progress::Bar,
        (true, false) => Progress::Lines(PROGRESS_LINE_EVERY),
    };
    // Only rank 0 reports.
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr());
    let (mut sink_out, mut sink_err) = (std::io::sink(), std::io::sink());
    let (out, err): (&mut dyn Write, &mut (dyn Write + Send)) = if root {
        (&mut stdout, &mut stderr)
    } else {
        (&mut sink_out, &mut sink_err)
    };
    let result = cli(std::env::args_os(), &world, out, err, progress);
    // The same exit status on every rank; the lowest rank whose error it is
    // prints it (every rank has the same command-line error).
    let (code, own) = match &result {
        Ok(()) => (0u8, false),
        Err(f) => (f.code, !f.elsewhere),
    };
    let mut status = 0u8;
    world.all_reduce_into(&code, &mut status, SystemOperation::max());
    let mine = if own { world.rank() } else { i32::MAX };
    let mut first = i32::MAX;
    world.all_reduce_into(&mine, &mut first, SystemOperation::min());
    if let Err(f) = result
        && own
        && first == world.rank()
    {
        eprintln!("{}", f.line);
    }
    ExitCode::from(status)
}

/// Parses `args`, runs on the ranks of `world` and reports on rank 0 (to
/// `out` and `err`; the other ranks pass sinks).
fn cli(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    world: &SimpleCommunicator,
    out: &mut dyn Write,
    err: &mut (dyn Write + Send),
    progress: Progress,
) -> Result<(), Failure> {
    let Some(cli) = cli::parse::<Cli>(args, out)? else {
        return Ok(());
    };
    let progress = progress.unless(cli.run.run.quiet);
    cli::with_reporter(progress, err, |reporter| -> anyhow::Result<()> {
        if cli.run.render.is_some() {
            return Err(cli::usage(format!("--render: {RENDER_REFUSED}")));
        }
        let root = world.rank() == 0;
        // Rank 0 checks the outputs and reads or makes the bodies; the
        // others only need their backend.
        reporter.phase("preparing the bodies");
        let prepared = agree(
            world,
            if root {
                cli.run
                    .check_outputs()
                    .and_then(|()| nbody::prepare(&cli.run))
            } else {
                let empty = Simulation::builder(Bodies::default());
                nbody::configure(empty, &cli.run, &Params::default()).map(|b| (b, Vec::new()))
            },
        )?;
        let (mut builder, changes) = prepared;
        if let cli::BackendArg::Cuda = cli.run.run.backend {
            // Each rank takes the GPU of its rank on the node.
            let device = world.split_shared(world.rank()).rank() as u32;
            builder = builder.backend(Backend::Cuda { device });
        }
        let scheme = match cli.ring {
            RingArg::AllPairs => RingScheme::AllPairs,
            RingArg::ThirdLaw => RingScheme::ThirdLaw,
        };
        reporter.phase("starting the ranks");
        let mut session = Ranks {
            sim: DistributedSimulation::build(world, builder, scheme)?,
            archive: None,
        };
        nbody::run(&cli.run, &mut session, &changes, out, reporter)
    })
    .map_err(|e| cli::failure(&e))
}
