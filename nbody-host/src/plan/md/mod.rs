//! The short-range molecular-dynamics plan: a pair potential (any
//! [`PairStyle`](crate::PairStyle), any number of atom types) in a periodic
//! orthorhombic box with cell-built Verlet lists, integrated with velocity
//! Verlet, as a sequence of launches of the kernel table's MD entries.
//!
//! Driven by plain parameters ([`MdParams`]: box, pair potential, skin, dt)
//! over any [`Device`](super::device::Device) keyed by [`MdBuf`] (the
//! emulator's, `emulator/device.rs`; CUDA's, `cuda/device.rs`).
//! [`MdPlanEngine`] (`engine.rs`) runs it behind `Simulation` on
//! `Backend::Emulator` and `Backend::Cuda`: a pair potential in a periodic box
//! with cell-built full lists and velocity Verlet, under NVE, a thermostat
//! (`ensemble.rs`) or NPT (`npt.rs`: the box on the host, builds gated by
//! a margin scaled with the box); anything else is an `Error::Unsupported` naming it. The pair table is uploaded once
//! (`MdBuf::PairTable`), the atom types travel with the bodies through every
//! sort (`MdBuf::Type`, ghosts included).
//!
//! # One step (velocity Verlet)
//! `Kick(dt/2)`, [`MdDrift`](Entry::MdDrift) (drift in place and the rebuild
//! trigger), [`MdGhostUpdate`](Entry::MdGhostUpdate), a build that the
//! device decides on ([`MdGate`](Entry::MdGate): when a body moved more
//! than `skin / 2` since the last one, or, with a fixed interval,
//! [`MdPlan::set_rebuild_every`], every `k` steps, which the host knows),
//! the style's force kernel ([`LjForces`](Entry::LjForces) for
//! Lennard-Jones), `Kick(dt/2)`, [`CheckFinite`](Entry::CheckFinite) into
//! the status buffer. No step reads anything back.
//!
//! # A build
//! [`MdGate`](Entry::MdGate) (the decision, cell counts zeroed);
//! [`MdBin`](Entry::MdBin) (wrap, cell, atomic slot); the scan of the
//! counts (cell starts); [`MdScatter`](Entry::MdScatter);
//! [`MdReorder`](Entry::MdReorder) (rank by id within cells, reference
//! positions) and [`MdCopyBack`](Entry::MdCopyBack); the ghosts
//! ([`MdGhostCount`](Entry::MdGhostCount), a scan,
//! [`MdGhostPlace`](Entry::MdGhostPlace));
//! [`MdNeighbours`](Entry::MdNeighbours); [`MdCountEntries`](Entry::MdCountEntries).
//! Each returns at once when the gate said no.
//!
//! # A batch (`batch.rs`)
//! Steps are queued in batches with one read of the status words at the
//! end: divergence, builds, and overflows. Too many ghosts or neighbours for
//! the buffers (sticky words) grow them and replay the batch from its saved
//! start, the lists of that start rebuilt from its reference positions, so
//! no truncated list is ever used and the result is the one larger buffers
//! would have given, bit for bit.
//!
//! Every launch is deterministic (see `gpu_kernels::binning`), so a run
//! gives the same bits on any schedule and any thread count.

use gpu_kernels::periodic::{Grid, Tag};
use gpu_kernels::shape::{self, LaunchShape, NEIGHBOUR_GROUP};

use crate::error::Result;

mod batch;
mod build;
mod engine;
mod ensemble;
mod npt;
mod params;
mod step;

pub(crate) use engine::MdPlanEngine;
pub(crate) use params::MdParams;
#[cfg(test)]
use step::MdState;

#[cfg(test)]
pub(crate) mod softcuda_device;
#[cfg(test)]
mod tests;

/// A device buffer of the MD plan, by role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum MdBuf {
    /// Positions and masses, bodies then ghosts (`n + gcap` × `Vec4`).
    Pos,
    /// The reorder's output, swapped with `Pos` (same size).
    PosNext,
    /// Velocities (`n` × `Vec4`).
    Vel,
    /// The reorder's velocities, swapped with `Vel`.
    VelNext,
    /// Image counters and original indices (`n` × [`Tag`]).
    Tag,
    /// The reorder's tags, swapped with `Tag`.
    TagNext,
    /// Atom types, bodies then ghosts (`n + gcap` × `u32`).
    Type,
    /// The reorder's types, swapped with `Type` (same size).
    TypeNext,
    /// The pair potential's coefficient table (`types^2` rows × `f32`).
    PairTable,
    /// Positions at the last build (`n` × `Vec4`).
    Reference,
    /// Accelerations (`n` × `Vec4`).
    Acc,
    /// Cell of each body (`n` × `u32`).
    Cell,
    /// Slot of each body in its cell, from the atomic count (`n` × `u32`).
    Slot,
    /// Cell counts, scanned in place into cell starts (`cells + 1` × `u32`).
    Starts,
    /// Bodies grouped by cell (`n` × `u32`).
    Order,
    /// Block sums of the scans.
    ScanSums,
    /// Ghosts per body, scanned in place into first ghost slots (`n` × `u32`).
    GhostOff,
    /// Body of each ghost (`gcap` × `u32`).
    GhostSrc,
    /// Shift of each ghost (`gcap` × `Vec4`).
    GhostShift,
    /// Neighbour lists (`neighbour_stride(n) * cap` × `u32`).
    NList,
    /// Neighbour counts (`n` × `u32`).
    NCount,
    /// Status words (`STATUS_WORDS` × `u32`).
    Status,
    /// Thermo partial sums (`pair_partials` × `f64`).
    Partials,
    /// A batch's saved start (`batch.rs`): positions of the bodies (`n` ×
    /// `Vec4`), velocities, tags, types, accelerations, reference positions
    /// and status words, what a replay of the batch starts from.
    SavedPos,
    /// Saved velocities.
    SavedVel,
    /// Saved tags.
    SavedTag,
    /// Saved atom types (`n`).
    SavedType,
    /// Saved accelerations.
    SavedAcc,
    /// Saved reference positions (the last build's).
    SavedReference,
    /// Saved status words.
    SavedStatus,
    /// The thermostat's state (`ENS_WORDS` × `f64`, `ensemble.rs`).
    Ensemble,
    /// The thermostat's constants (`CFG_WORDS` × `f64`).
    EnsembleCfg,
    /// Langevin's friction and random accelerations by atom id (`n` ×
    /// `Vec4`; one element under the other ensembles).
    Lang,
    /// The thermostat pass's block sums (`2 × blocks` × `f64`).
    EnsemblePartials,
    /// A batch's saved thermostat state.
    SavedEnsemble,
    /// A batch's saved Langevin accelerations.
    SavedLang,
}

fn words_tag(w: &[u32]) -> Vec<Tag> {
    w.chunks_exact(4)
        .map(|c| Tag {
            ix: c[0] as i32,
            iy: c[1] as i32,
            iz: c[2] as i32,
            id: c[3],
        })
        .collect()
}

/// A capacity with room to spare: `needed` plus a quarter, a multiple of
/// [`NEIGHBOUR_GROUP`].
fn with_headroom(needed: u32) -> u32 {
    (needed + needed / 4 + NEIGHBOUR_GROUP).next_multiple_of(NEIGHBOUR_GROUP)
}

/// The launch sequence and the sizes it needs, for `n` bodies.
#[derive(Clone, Debug)]
pub(crate) struct MdPlan {
    params: MdParams,
    n: u32,
    grid: Grid,
    /// The grid of the last build: `grid` but under a barostat, whose box
    /// moves between builds (`npt.rs`); replays rebuild in it.
    built: Grid,
    rlist2: f32,
    /// `(skin / 2)^2`: the rebuild trigger.
    limit2: f32,
    /// Neighbour list capacity per body (a multiple of 4).
    cap: u32,
    /// Ghost slots allocated.
    gcap: u32,
    /// Ghosts of the current build (as of the last status read).
    ghosts: u32,
    /// List entries of the current build (as of the last status read).
    entries: u32,
    /// Builds so far.
    builds: u64,
    /// Rebuild every this many steps ([`Rebuild::Every`](crate::md::Rebuild::Every));
    /// `None`: when a body moved more than half the skin.
    every: Option<u32>,
    /// Steps since the last build.
    since_build: u64,
    /// Fixed-interval builds at which a body had moved more than half the skin.
    dangerous_builds: u64,
    /// The thermostat, under an ensemble other than NVE (`ensemble.rs`).
    ens: Option<ensemble::EnsPlan>,
    /// The barostat's run on the host, under NPT (`npt.rs`).
    npt: Option<Box<npt::NptRun>>,
}

impl MdPlan {
    /// Number of bodies.
    pub(crate) fn n(&self) -> u32 {
        self.n
    }

    /// The pair law.
    pub(crate) fn style(&self) -> crate::PairStyle {
        self.params.pair.style()
    }

    /// Neighbour list builds so far.
    pub(crate) fn builds(&self) -> u64 {
        self.builds
    }

    /// List entries per body of the current build.
    pub(crate) fn entries_per_body(&self) -> f64 {
        self.entries as f64 / self.n.max(1) as f64
    }

    /// Fixed-interval builds at which a body had moved more than half the
    /// skin since the previous one.
    pub(crate) fn dangerous_builds(&self) -> u64 {
        self.dangerous_builds
    }

    /// Rebuilds every `k` steps (`Some(k)`, LAMMPS's `every k check no`)
    /// instead of when a body moved more than half the skin (`None`).
    pub(crate) fn set_rebuild_every(&mut self, every: Option<u32>) {
        self.every = every.map(|k| k.max(1));
    }

    /// The neighbour list capacity per body.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> u32 {
        self.cap
    }

    /// Ghosts of the current build.
    #[cfg(test)]
    pub(crate) fn ghosts(&self) -> u32 {
        self.ghosts
    }

    /// The cells per side.
    pub(crate) fn cells(&self) -> [u32; 3] {
        self.grid.n
    }

    fn cell_count(&self) -> u32 {
        self.grid.cells()
    }

    fn per_body(&self, count: u32) -> LaunchShape {
        shape::per_body(count, self.params.block)
    }

    /// Sets a (smaller) neighbour capacity for the next build (tests: the
    /// overflow path).
    #[cfg(test)]
    pub(crate) fn set_capacity(&mut self, cap: u32) {
        self.cap = cap.next_multiple_of(NEIGHBOUR_GROUP).max(NEIGHBOUR_GROUP);
    }

    /// Sets (fewer) ghost slots for the next build (tests: the replay of a
    /// batch whose build needed more).
    #[cfg(test)]
    pub(crate) fn set_ghost_capacity(&mut self, gcap: u32) {
        self.gcap = gcap.min(self.gcap);
    }

    /// Words of the neighbour lists; an error when they would not be
    /// indexable with 31 bits (the kernels' indices are `u32`).
    fn nlist_words(&self) -> Result<usize> {
        let words = shape::neighbour_stride(self.n) as u64 * self.cap as u64;
        if words >= 1 << 31 {
            return Err(params::invalid(
                "neighbour list entries",
                words as f64,
                "must stay below 2^31 (fewer bodies, or a shorter cutoff + skin)",
            ));
        }
        Ok(words as usize)
    }
}
