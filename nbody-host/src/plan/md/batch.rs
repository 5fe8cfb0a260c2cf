//! Steps in batches, with one read of the status words per batch (issue
//! 23): every step is queued with its build decided on the device, and the
//! host learns at the batch's end what happened (builds, dangerous builds,
//! a divergence, an overflow).
//!
//! # Replays
//! Each batch starts by saving the bodies (positions, velocities, tags,
//! types, accelerations, the last build's reference positions), the
//! thermostat's state (`ensemble.rs`) and the status words on the device.
//! If a build of the batch needed more ghost slots or list entries than
//! the buffers hold (the sticky words `STATUS_GHOST_NEED` and
//! `STATUS_NEIGHBOURS`; the kernels stay inside the
//! buffers meanwhile), the host grows the buffers, restores the saved start,
//! rebuilds its lists from its reference positions and runs the batch
//! again. The lists of a build depend only on the reference positions and
//! the bodies' ids (the sort ranks by id within a cell), so the rebuilt
//! lists are the ones the batch started with, and the replay gives the
//! bits that buffers large enough from the start would have given. A
//! divergence is replayed the same way up to the step that went wrong, so
//! the state reported is the one after that step.

use gpu_kernels::entry::Launch;
use gpu_kernels::integrate::ALL_FINITE;
use gpu_kernels::periodic::{
    GATE_AUTO, GATE_FORCE, GATE_QUIET, STATUS_BUILDS, STATUS_DANGEROUS, STATUS_ENTRIES,
    STATUS_FINITE, STATUS_GHOST_NEED, STATUS_GHOSTS, STATUS_NEIGHBOURS, STATUS_SINCE, STATUS_WORDS,
};

use super::{MdBuf, MdPlan, words_tag};
use crate::engine::Divergence;
use crate::error::Result;
use crate::plan::device::{Device, Section};

/// Steps queued between two reads of the status words: at most one host
/// round trip per 64 steps (issue 23 asks for at most one per 8), and a
/// bounded replay when a buffer overflows.
pub(crate) const BATCH_STEPS: u32 = 64;

/// The buffers a batch saves, each with its saved copy and its words per
/// body (`None`: the status words).
const SAVED: [(MdBuf, MdBuf, Option<usize>); 7] = [
    (MdBuf::Pos, MdBuf::SavedPos, Some(4)),
    (MdBuf::Vel, MdBuf::SavedVel, Some(4)),
    (MdBuf::Tag, MdBuf::SavedTag, Some(4)),
    (MdBuf::Type, MdBuf::SavedType, Some(1)),
    (MdBuf::Acc, MdBuf::SavedAcc, Some(4)),
    (MdBuf::Reference, MdBuf::SavedReference, Some(4)),
    (MdBuf::Status, MdBuf::SavedStatus, None),
];

/// How a batch ended.
enum BatchEnd {
    /// Every step ran.
    Done,
    /// The state went non-finite after local step `after` (1-based); the
    /// device holds the state after it, and `body` is the original index of
    /// a body that was not finite.
    Diverged { after: u64, body: usize },
}

impl MdPlan {
    /// Runs `steps` velocity-Verlet steps in batches of [`BATCH_STEPS`];
    /// stops at the first step after which a body is not finite (reported
    /// with the body's original index, the device holding the state after
    /// that step).
    pub(crate) fn step<D: Device<MdBuf>>(
        &mut self,
        dev: &mut D,
        steps: u64,
    ) -> Result<Option<Divergence>> {
        if self.npt.is_some() {
            return self.step_npt(dev, steps);
        }
        let mut done = 0u64;
        while done < steps {
            let batch = (steps - done).min(BATCH_STEPS as u64) as u32;
            match self.run_batch(dev, batch)? {
                BatchEnd::Done => done += batch as u64,
                BatchEnd::Diverged { after, body } => {
                    return Ok(Some(Divergence {
                        after_step: done + after,
                        body,
                        steps_run: done + after,
                    }));
                }
            }
        }
        Ok(None)
    }

    /// The gate of local step `s` of a batch whose first step follows
    /// `since` steps without a build: automatic, or with a fixed interval
    /// a forced build where it falls (`None`: no build kernels at all).
    pub(super) fn gate_of(&self, since: u64, s: u32) -> Option<u32> {
        match self.every {
            None => Some(GATE_AUTO),
            Some(k) => (since + s as u64)
                .is_multiple_of(k as u64)
                .then_some(GATE_FORCE),
        }
    }

    /// Queues local step `s` of a batch (velocity Verlet; see `mod.rs`).
    fn queue_step<D: Device<MdBuf>>(&self, dev: &mut D, s: u32, gate: Option<u32>) -> Result<()> {
        let n = self.n;
        let body = self.per_body(n);
        dev.mark(Some(Section::Modify))?;
        if self.ens.is_some() {
            self.ensemble_first_half(dev)?;
        } else {
            self.kick(dev)?;
        }
        dev.launch(
            Launch::MdDrift {
                pos: MdBuf::Pos,
                vel: MdBuf::Vel,
                reference: MdBuf::Reference,
                status: MdBuf::Status,
                n,
                dt: self.params.dt,
                limit2: self.limit2,
                sx: 1.0,
                sy: 1.0,
                sz: 1.0,
            },
            body,
        )?;
        self.ghost_update(dev)?;
        if let Some(force) = gate {
            dev.mark(Some(Section::Neigh))?;
            self.queue_build(dev, force)?;
        }
        dev.mark(Some(Section::Pair))?;
        self.forces(dev, false)?;
        dev.mark(Some(Section::Modify))?;
        if self.ens.is_some() {
            self.ensemble_second_half(dev)?;
        } else {
            self.kick(dev)?;
        }
        dev.launch(
            Launch::CheckFinite {
                pos: MdBuf::Pos,
                vel: MdBuf::Vel,
                n,
                step: s,
                flag: MdBuf::Status,
            },
            body,
        )
    }

    /// Saves the batch's start on the device.
    pub(super) fn save<D: Device<MdBuf>>(&self, dev: &mut D) -> Result<()> {
        for (buf, saved, per_body) in SAVED {
            let words = per_body.map_or(STATUS_WORDS as usize, |w| w * self.n as usize);
            dev.copy(buf, saved, words)?;
        }
        for (buf, saved, words) in self.ensemble_saved() {
            dev.copy(buf, saved, words)?;
        }
        Ok(())
    }

    /// Restores the saved start, its lists rebuilt from its reference
    /// positions in that build's grid (the bodies are in that build's order
    /// already, so the sort leaves them where they are and the lists come
    /// out the same).
    pub(super) fn restore<D: Device<MdBuf>>(&mut self, dev: &mut D) -> Result<()> {
        for (buf, saved, per_body) in SAVED {
            let words = per_body.map_or(STATUS_WORDS as usize, |w| w * self.n as usize);
            dev.copy(saved, buf, words)?;
        }
        for (buf, saved, words) in self.ensemble_saved() {
            dev.copy(saved, buf, words)?;
        }
        dev.copy(MdBuf::Reference, MdBuf::Pos, 4 * self.n as usize)?;
        let now = self.grid;
        self.grid = self.built;
        let built = self.queue_build(dev, GATE_QUIET);
        self.grid = now;
        built?;
        dev.copy(MdBuf::SavedPos, MdBuf::Pos, 4 * self.n as usize)?;
        dev.copy(MdBuf::SavedStatus, MdBuf::Status, STATUS_WORDS as usize)
    }

    /// Clears the status words a batch reports in.
    pub(super) fn clear_batch_words<D: Device<MdBuf>>(&self, dev: &mut D) -> Result<()> {
        dev.write(MdBuf::Status, STATUS_FINITE as usize, &[ALL_FINITE, 0])?;
        dev.write(MdBuf::Status, STATUS_NEIGHBOURS as usize, &[0])?;
        dev.write(MdBuf::Status, STATUS_BUILDS as usize, &[0, 0])?;
        dev.write(MdBuf::Status, STATUS_GHOST_NEED as usize, &[0])
    }

    /// One batch of `steps` steps (see the module documentation).
    fn run_batch<D: Device<MdBuf>>(&mut self, dev: &mut D, steps: u32) -> Result<BatchEnd> {
        dev.mark(Some(Section::Modify))?;
        self.clear_batch_words(dev)?;
        self.save(dev)?;
        let since = self.since_build;
        loop {
            for s in 1..=steps {
                self.queue_step(dev, s, self.gate_of(since, s))?;
            }
            dev.mark(None)?;
            let status = dev.read(MdBuf::Status, 0, STATUS_WORDS as usize)?;
            self.check_lost(&status)?;
            if status[STATUS_GHOST_NEED as usize] > self.gcap
                || status[STATUS_NEIGHBOURS as usize] > 0
            {
                // Grow, then run the batch again from its start.
                self.grow(dev, &status)?;
                dev.mark(Some(Section::Neigh))?;
                self.restore(dev)?;
                continue;
            }
            let first_bad = status[STATUS_FINITE as usize];
            if first_bad != ALL_FINITE {
                // Again up to the step that went wrong, then name a body.
                dev.mark(Some(Section::Neigh))?;
                self.restore(dev)?;
                for s in 1..=first_bad {
                    self.queue_step(dev, s, self.gate_of(since, s))?;
                }
                dev.mark(None)?;
                let status = dev.read(MdBuf::Status, 0, STATUS_WORDS as usize)?;
                self.account(&status, since, first_bad);
                let slot = status[STATUS_FINITE as usize + 1] as usize;
                let tag = words_tag(&dev.read(MdBuf::Tag, 4 * slot, 4)?)[0];
                dev.write(MdBuf::Status, STATUS_FINITE as usize, &[ALL_FINITE, 0])?;
                return Ok(BatchEnd::Diverged {
                    after: first_bad as u64,
                    body: tag.id as usize,
                });
            }
            self.account(&status, since, steps);
            return Ok(BatchEnd::Done);
        }
    }

    /// What `steps` steps of a batch that started `since` steps after a
    /// build tell the host through the status words: builds, dangerous
    /// builds, the current build's ghosts and entries, steps since it (a
    /// fixed interval's gates are not launched between its builds: the host
    /// counts those steps itself).
    pub(super) fn account(&mut self, status: &[u32], since: u64, steps: u32) {
        self.builds += status[STATUS_BUILDS as usize] as u64;
        self.dangerous_builds += status[STATUS_DANGEROUS as usize] as u64;
        self.ghosts = status[STATUS_GHOSTS as usize];
        self.entries = status[STATUS_ENTRIES as usize];
        self.since_build = match self.every {
            None => status[STATUS_SINCE as usize] as u64,
            Some(k) => (since + steps as u64) % k as u64,
        };
    }
}
