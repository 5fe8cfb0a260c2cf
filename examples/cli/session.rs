//! What the stepping loop drives ([`Session`]: one [`Simulation`] in this
//! process, or one rank's part of a distributed run) and the loop itself
//! ([`drive`]): steps in chunks, checkpoints and archive records every
//! `--every` steps, stops where the example wants the state, progress.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use nbody_host::snapshot::ArchiveWriter;
use nbody_host::{BackendKind, Energy, Params, Simulation};

use super::RunFlags;
use super::progress::Reporter;

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
    /// `--render` and the thermo output).
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
pub(crate) use forward_to_sim;

/// One simulation in this process, with its archive.
pub struct Local {
    /// The simulation.
    pub sim: Simulation,
    /// The archive, once opened.
    pub archive: Option<ArchiveWriter>,
}

impl Local {
    /// `sim`, no archive open yet.
    pub fn new(sim: Simulation) -> Local {
        Local { sim, archive: None }
    }
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

/// Opens `--archive` (continued from the checkpoint's step on a resume
/// whose archive exists) and appends the starting state unless it is
/// already there.
pub fn open_archive(session: &mut dyn Session, flags: &RunFlags) -> Result<()> {
    if let Some(path) = &flags.archive {
        let start = session.steps_done();
        let continued = flags.resume.is_some() && path.exists();
        session.open_archive(path, continued.then_some(start))?;
        if session.archive_last_step() != Some(start) {
            session.append_archive()?;
        }
    }
    Ok(())
}

/// Steps `session` to step `target` in chunks of about 1% of the run, cut
/// at every multiple of `--every` (where it writes the checkpoint and an
/// archive record) and of each of `stops` (where, and at the end, it calls
/// `at_stop` with the step reached), showing the progress on `reporter`;
/// then the final checkpoint and archive record. Returns the time spent in
/// [`Session::step`] alone.
pub fn drive(
    session: &mut dyn Session,
    target: u64,
    flags: &RunFlags,
    reporter: &Reporter,
    stops: &[u64],
    mut at_stop: impl FnMut(&mut dyn Session, u64) -> Result<()>,
) -> Result<Duration> {
    let start = session.steps_done();
    let to_run = target.saturating_sub(start);
    reporter.steps(start, target);
    // Chunks of about 1% of the run, so the bar moves; cut at checkpoints
    // and stops.
    let chunk = (to_run / 100).max(1);
    let mut stepping = Duration::ZERO;
    let mut last_checkpoint = None;
    while session.steps_done() < target {
        let done = session.steps_done();
        let mut end = (done + chunk).min(target);
        for k in flags.every.iter().chain(stops) {
            end = end.min((done / k + 1) * k);
        }
        let t = Instant::now();
        let stepped = session.step(end - done);
        stepping += t.elapsed();
        if let Err(e) = stepped {
            reporter.abandon();
            return Err(e.into());
        }
        reporter.reached(end);
        if let Some(k) = flags.every
            && end.is_multiple_of(k)
        {
            if let Some(path) = &flags.checkpoint {
                session.save_checkpoint(path)?;
                last_checkpoint = Some(end);
            }
            if flags.archive.is_some() {
                session.append_archive()?;
            }
        }
        if stops.iter().any(|&k| end.is_multiple_of(k)) || end == target {
            at_stop(session, end)?;
        }
    }
    let done = session.steps_done();
    if let Some(path) = &flags.checkpoint
        && last_checkpoint != Some(done)
    {
        reporter.phase("writing the checkpoint");
        session.save_checkpoint(path)?;
    }
    if flags.archive.is_some() && session.archive_last_step() != Some(done) {
        reporter.phase("appending to the archive");
        session.append_archive()?;
    }
    Ok(stepping)
}
