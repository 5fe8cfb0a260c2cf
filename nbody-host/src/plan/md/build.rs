//! Starting a run and building its lists: the upload, the first build (the
//! buffers grown until everything fits), and the launches of a build that
//! the device decides on (every one returns at once unless
//! `status[STATUS_DUE]` says the step builds, `gpu_kernels::periodic::gate`):
//! the counting sort by cell, the ghosts and the neighbour lists.

use gpu_kernels::Vec4;
use gpu_kernels::entry::Launch;
use gpu_kernels::integrate::ALL_FINITE;
use gpu_kernels::periodic::{
    GATE_QUIET, STATUS_GHOST_NEED, STATUS_GHOSTS, STATUS_MOVED, STATUS_NEIGHBOURS, STATUS_SCRATCH,
    STATUS_SINCE, STATUS_WORDS,
};
use gpu_kernels::shape;

use super::params::invalid;
use super::{MdBuf, MdPlan, with_headroom};
use crate::error::{Error, Result};
use crate::plan::device::{Device, vec4_words};

/// Where a continued run's lists were built, on the device's terms.
pub(crate) struct Origin<'a> {
    /// Positions at that build (user order; masses in `w`).
    pub reference: &'a [Vec4],
    /// Steps since it.
    pub since: u64,
    /// The grid of that build where a barostat has changed the box since
    /// (`None`: the box now): the lists are rebuilt in it, as they were.
    pub built: Option<gpu_kernels::periodic::Grid>,
}

impl MdPlan {
    /// Uploads the bodies (positions with masses in `w`, velocities),
    /// builds the lists and computes the first accelerations.
    #[cfg(test)]
    pub(crate) fn start<D: Device<MdBuf>>(
        &mut self,
        dev: &mut D,
        pos: &[Vec4],
        vel: &[Vec4],
    ) -> Result<()> {
        self.start_with(dev, pos, vel, &[], &[], None)
    }

    /// `start` with image counters per body to start from (none: all zero),
    /// as a continued run has them, the bodies' atom types (none: all
    /// type 0), and where a continued run's lists were built (then `pos`
    /// are in that build's frame, and the continuation is bit for bit the
    /// run it continues).
    pub(crate) fn start_with<D: Device<MdBuf>>(
        &mut self,
        dev: &mut D,
        pos: &[Vec4],
        vel: &[Vec4],
        images: &[[i32; 3]],
        types: &[u32],
        origin: Option<&Origin>,
    ) -> Result<()> {
        let n = self.n as usize;
        if !types.is_empty() && types.len() != n {
            return Err(Error::InvalidCombination(format!(
                "{} atom types for {n} bodies",
                types.len()
            )));
        }
        self.params.pair.check_types(types)?;
        if !images.is_empty() && images.len() != n {
            return Err(Error::InvalidCombination(format!(
                "{} image counters for {n} bodies",
                images.len()
            )));
        }
        if let Some(o) = origin
            && o.reference.len() != n
        {
            return Err(Error::InvalidCombination(format!(
                "a neighbour origin of {} positions for {n} bodies",
                o.reference.len()
            )));
        }
        if pos.len() != n || vel.len() != n {
            return Err(Error::LengthMismatch {
                positions: pos.len(),
                velocities: vel.len(),
                masses: pos.len(),
            });
        }
        for (index, (p, v)) in pos.iter().zip(vel).enumerate() {
            for (quantity, value) in [("position", [p.x, p.y, p.z]), ("velocity", [v.x, v.y, v.z])]
            {
                if !value.iter().all(|c| c.is_finite()) {
                    return Err(Error::NonFiniteInput {
                        index,
                        quantity,
                        value,
                    });
                }
            }
            if !(p.w.is_finite() && p.w >= 0.0) {
                return Err(Error::InvalidMass { index, mass: p.w });
            }
            if p.w == 0.0 {
                return Err(invalid(
                    "mass",
                    0.0,
                    "must be > 0 (accelerations are F / m)",
                ));
            }
        }
        let sized = self.buffer_words()?;
        if let Some(free) = dev.free_bytes()? {
            let needed = sized.iter().map(|&(_, w)| 4 * w.max(1) as u64).sum();
            if needed > free {
                return Err(Error::DeviceMemoryExceeded {
                    n,
                    needed,
                    available: free,
                });
            }
        }
        for (buf, words) in sized {
            dev.alloc(buf, words, false)?;
        }
        let now = self.grid;
        if let Some(built) = origin.and_then(|o| o.built) {
            // A barostat's continuation: its lists of the build's box (the
            // cells' buffers grown where that box had more cells).
            self.grid = built;
            if built.cells() > now.cells() {
                dev.alloc(MdBuf::Starts, built.cells() as usize + 1, false)?;
                let scan = shape::scan(self.n.max(built.cells() + 1), self.params.scan_block);
                dev.alloc(MdBuf::ScanSums, scan.grid.max(1) as usize, false)?;
            }
        }
        // A continuation builds from where its lists were built.
        dev.write(
            MdBuf::Pos,
            0,
            &vec4_words(origin.map_or(pos, |o| o.reference)),
        )?;
        dev.write(MdBuf::Vel, 0, &vec4_words(vel))?;
        let tags: Vec<u32> = (0..self.n)
            .flat_map(|id| {
                let [x, y, z] = images.get(id as usize).copied().unwrap_or([0; 3]);
                [x as u32, y as u32, z as u32, id]
            })
            .collect();
        dev.write(MdBuf::Tag, 0, &tags)?;
        if !types.is_empty() {
            dev.write(MdBuf::Type, 0, types)?;
        }
        let table: Vec<u32> = self
            .params
            .pair
            .table()
            .iter()
            .map(|w| w.to_bits())
            .collect();
        dev.write(MdBuf::PairTable, 0, &table)?;
        dev.write(MdBuf::Status, 0, &[ALL_FINITE, 0])?;
        self.first_build(dev)?;
        self.grid = now;
        if let Some(o) = origin {
            self.place_frame(dev, pos, o)?;
        }
        self.forces(dev, false)
    }

    /// After a continuation's build from its reference positions: the
    /// bodies' positions `pos` (user order, that build's frame) where the
    /// build put their bodies, the ghosts moved with them, and the rebuild
    /// trigger and the steps since the build as the run had them (a
    /// fixed interval leaves the trigger set until its next build).
    fn place_frame<D: Device<MdBuf>>(
        &mut self,
        dev: &mut D,
        pos: &[Vec4],
        o: &Origin,
    ) -> Result<()> {
        let n = self.n as usize;
        let tags = super::words_tag(&dev.read(MdBuf::Tag, 0, 4 * n)?);
        let by_slot: Vec<Vec4> = tags.iter().map(|t| pos[t.id as usize]).collect();
        dev.write(MdBuf::Pos, 0, &vec4_words(&by_slot))?;
        self.ghost_update(dev)?;
        // `drift_check`'s test, in its arithmetic (the build's positions
        // scaled with the box since, `npt.rs`).
        let (limit2, [sx, sy, sz]) = self.margin();
        let moved = pos.iter().zip(o.reference).any(|(q, r)| {
            let (dx, dy, dz) = (
                (-r.x).mul_add(sx, q.x),
                (-r.y).mul_add(sy, q.y),
                (-r.z).mul_add(sz, q.z),
            );
            let d2 = dz.mul_add(dz, dy.mul_add(dy, dx * dx));
            // NaN is not within, as there.
            let within = d2 <= limit2;
            !within
        });
        let since = o.since.min(u32::MAX as u64);
        dev.write(MdBuf::Status, STATUS_MOVED as usize, &[moved as u32])?;
        dev.write(MdBuf::Status, STATUS_SINCE as usize, &[since as u32])?;
        self.since_build = since;
        Ok(())
    }

    /// Every buffer of the plan and its words (the ghost slots and list
    /// capacity as they are now); with [`Device::free_bytes`] the check,
    /// before anything is allocated, that the device holds them.
    fn buffer_words(&self) -> Result<Vec<(MdBuf, usize)>> {
        let n = self.n as usize;
        let cells = self.cell_count() as usize;
        let scan_grids =
            shape::scan(self.n.max(self.cell_count() + 1), self.params.scan_block).grid;
        Ok(vec![
            (MdBuf::Pos, 4 * (n + self.gcap as usize)),
            (MdBuf::PosNext, 4 * (n + self.gcap as usize)),
            (MdBuf::Vel, 4 * n),
            (MdBuf::VelNext, 4 * n),
            (MdBuf::Tag, 4 * n),
            (MdBuf::TagNext, 4 * n),
            (MdBuf::Type, n + self.gcap as usize),
            (MdBuf::TypeNext, n + self.gcap as usize),
            (MdBuf::PairTable, self.params.pair.table().len()),
            (MdBuf::Reference, 4 * n),
            (MdBuf::Acc, 4 * n),
            (MdBuf::Cell, n),
            (MdBuf::Slot, n),
            (MdBuf::Starts, cells + 1),
            (MdBuf::Order, n),
            (MdBuf::ScanSums, scan_grids as usize),
            (MdBuf::GhostOff, n),
            (MdBuf::GhostSrc, self.gcap as usize),
            (MdBuf::GhostShift, 4 * self.gcap as usize),
            (MdBuf::NList, self.nlist_words()?),
            (MdBuf::NCount, n),
            (MdBuf::Status, STATUS_WORDS as usize),
            (
                MdBuf::Partials,
                2 * shape::pair_partials(self.n, self.params.block) as usize,
            ),
            // The saved start of a batch (`batch.rs`).
            (MdBuf::SavedPos, 4 * n),
            (MdBuf::SavedVel, 4 * n),
            (MdBuf::SavedTag, 4 * n),
            (MdBuf::SavedType, n),
            (MdBuf::SavedAcc, 4 * n),
            (MdBuf::SavedReference, 4 * n),
            (MdBuf::SavedStatus, STATUS_WORDS as usize),
        ])
    }

    /// The first build, the ghost and list buffers grown until everything
    /// fits (one status read per try); counted as a build.
    fn first_build<D: Device<MdBuf>>(&mut self, dev: &mut D) -> Result<()> {
        loop {
            self.queue_build(dev, GATE_QUIET)?;
            let status = dev.read(MdBuf::Status, 0, STATUS_WORDS as usize)?;
            self.check_lost(&status)?;
            if !self.grow(dev, &status)? {
                self.ghosts = status[STATUS_GHOSTS as usize];
                self.entries = status[gpu_kernels::periodic::STATUS_ENTRIES as usize];
                self.builds += 1;
                self.since_build = 0;
                self.built = self.grid;
                return Ok(());
            }
        }
    }

    /// An error if a build met a pair without a ghost image (a bug if ever).
    pub(super) fn check_lost(&self, status: &[u32]) -> Result<()> {
        if status[gpu_kernels::periodic::STATUS_LOST as usize] != 0 {
            return Err(Error::Unsupported(format!(
                "neighbour build: a pair within cutoff + skin had no ghost image (box {:?}, cells {:?}): the box is too small for the minimum image",
                self.grid.l, self.grid.n
            )));
        }
        Ok(())
    }

    /// Grows the ghost slots and the lists' capacity to what a build of
    /// `status` needed, clearing the words that said so; `false` when
    /// everything fitted.
    pub(super) fn grow<D: Device<MdBuf>>(&mut self, dev: &mut D, status: &[u32]) -> Result<bool> {
        let n = self.n;
        let ghosts = status[STATUS_GHOST_NEED as usize].max(status[STATUS_GHOSTS as usize]);
        let needed = status[STATUS_NEIGHBOURS as usize];
        let mut grew = false;
        self.check_growth(dev, ghosts, needed)?;
        if ghosts > self.gcap {
            self.gcap = self.ghost_slots(ghosts);
            let words = 4 * (n + self.gcap) as usize;
            dev.alloc(MdBuf::Pos, words, true)?;
            dev.alloc(MdBuf::PosNext, words, false)?;
            dev.alloc(MdBuf::Type, (n + self.gcap) as usize, true)?;
            dev.alloc(MdBuf::TypeNext, (n + self.gcap) as usize, false)?;
            dev.alloc(MdBuf::GhostSrc, self.gcap as usize, false)?;
            dev.alloc(MdBuf::GhostShift, 4 * self.gcap as usize, false)?;
            grew = true;
        }
        if needed > 0 {
            self.cap = with_headroom(needed);
            dev.alloc(MdBuf::NList, self.nlist_words()?, false)?;
            grew = true;
        }
        if grew {
            dev.write(MdBuf::Status, STATUS_NEIGHBOURS as usize, &[0])?;
            dev.write(MdBuf::Status, STATUS_GHOST_NEED as usize, &[0])?;
        }
        Ok(grew)
    }

    /// The rebuild trigger now, `(limit^2, scale)`: the squared distance a
    /// body may move from its position at the last build scaled by `scale`
    /// per axis, the box's scale since that build (the CPU engine's
    /// `scaled_margin`). A pair listed at `r_list` then is at least
    /// `s r_list` apart now (`s` the least scale, at most 1), so every pair
    /// within the cutoff is listed, its ghost with it, while each body
    /// stays within `(s r_list - r_c) / 2` of its scaled build position:
    /// `skin / 2` when the box has not changed; below 0 (every body
    /// triggers) when the box shrank past what the lists allow.
    pub(super) fn margin(&self) -> (f32, [f32; 3]) {
        let (now, built) = (self.grid.l, self.built.l);
        let scale = [0, 1, 2].map(|a| now[a] / built[a]);
        if scale == [1.0; 3] {
            return (self.limit2, scale);
        }
        let s = scale.iter().fold(1.0f32, |m, &x| m.min(x));
        let (r_c, skin) = (self.params.cutoff(), self.params.skin);
        let limit = 0.5 * (s * (r_c + skin) - r_c);
        (if limit > 0.0 { limit * limit } else { -1.0 }, scale)
    }

    /// Ghost slots for `ghosts` ghosts, with room to spare.
    fn ghost_slots(&self, ghosts: u32) -> u32 {
        (ghosts + ghosts / 4 + 32).min(7 * self.n)
    }

    /// Moves the last build's ghosts with their bodies.
    pub(super) fn ghost_update<D: Device<MdBuf>>(&self, dev: &mut D) -> Result<()> {
        dev.launch(
            Launch::MdGhostUpdate {
                pos: MdBuf::Pos,
                src: MdBuf::GhostSrc,
                shift: MdBuf::GhostShift,
                status: MdBuf::Status,
                n: self.n,
                gcap: self.gcap,
                lx: self.grid.l[0],
                ly: self.grid.l[1],
                lz: self.grid.l[2],
            },
            self.per_body(self.gcap),
        )
    }

    /// An [`Error::DeviceMemoryExceeded`] when the buffers [`grow`](Self::grow)
    /// would allocate for `ghosts` ghosts and `needed` list entries per body
    /// do not fit in the device's free memory (the old ones still held).
    fn check_growth<D: Device<MdBuf>>(&self, dev: &mut D, ghosts: u32, needed: u32) -> Result<()> {
        let (n, mut grown) = (self.n as u64, 0u64);
        if ghosts > self.gcap {
            let gcap = self.ghost_slots(ghosts) as u64;
            // Pos, PosNext (4 words), Type, TypeNext, GhostSrc, GhostShift.
            grown += 4 * (2 * 4 * (n + gcap) + 2 * (n + gcap) + 5 * gcap);
        }
        if needed > 0 {
            grown += 4 * shape::neighbour_stride(self.n) as u64 * with_headroom(needed) as u64;
        }
        if grown > 0
            && let Some(free) = dev.free_bytes()?
            && grown > free
        {
            return Err(Error::DeviceMemoryExceeded {
                n: self.n as usize,
                needed: grown,
                available: free,
            });
        }
        Ok(())
    }

    /// Exclusive scan of `len` words of `buf` in place; the total goes to
    /// status word `total_at`.
    pub(super) fn scan<D: Device<MdBuf>>(
        &self,
        dev: &mut D,
        buf: MdBuf,
        len: u32,
        total_at: u32,
    ) -> Result<()> {
        let b = self.params.scan_block;
        let blocks = shape::scan(len, b);
        dev.launch(
            Launch::ScanBlocks {
                data: buf,
                out: buf,
                sums: MdBuf::ScanSums,
                status: MdBuf::Status,
                len,
            },
            blocks,
        )?;
        dev.launch(
            Launch::ScanSums {
                sums: MdBuf::ScanSums,
                count: blocks.grid,
                status: MdBuf::Status,
                total_at,
            },
            shape::scan_sums(b),
        )?;
        dev.launch(
            Launch::ScanAdd {
                out: buf,
                offsets: MdBuf::ScanSums,
                status: MdBuf::Status,
                len,
            },
            blocks,
        )
    }

    /// Queues a build of the lists that the device decides on: the gate
    /// (`force`, a `gpu_kernels::periodic::GATE_*`: when a body moved past
    /// half the skin, or now), then the sort by cell, the ghosts and the
    /// lists, each returning at once unless the gate said build. Overflows
    /// are left in the status words for the batch's end (`batch.rs`).
    pub(crate) fn queue_build<D: Device<MdBuf>>(&self, dev: &mut D, force: u32) -> Result<()> {
        let n = self.n;
        let [lx, ly, lz] = self.grid.l;
        let [nx, ny, nz] = self.grid.n;
        let cells = self.cell_count();
        let status = MdBuf::Status;
        dev.launch(
            Launch::MdGate {
                status,
                counts: MdBuf::Starts,
                len: cells + 1,
                force,
            },
            self.per_body(cells + 1),
        )?;
        let body = self.per_body(n);
        dev.launch(
            Launch::MdBin {
                pos: MdBuf::Pos,
                tag: MdBuf::Tag,
                cell: MdBuf::Cell,
                slot: MdBuf::Slot,
                counts: MdBuf::Starts,
                status,
                n,
                lx,
                ly,
                lz,
                nx,
                ny,
                nz,
            },
            body,
        )?;
        self.scan(dev, MdBuf::Starts, cells + 1, STATUS_SCRATCH)?;
        dev.launch(
            Launch::MdScatter {
                cell: MdBuf::Cell,
                slot: MdBuf::Slot,
                start: MdBuf::Starts,
                order: MdBuf::Order,
                status,
                n,
                cells,
            },
            body,
        )?;
        dev.launch(
            Launch::MdReorder {
                pos_in: MdBuf::Pos,
                vel_in: MdBuf::Vel,
                tag_in: MdBuf::Tag,
                type_in: MdBuf::Type,
                cell: MdBuf::Cell,
                start: MdBuf::Starts,
                order: MdBuf::Order,
                pos_out: MdBuf::PosNext,
                vel_out: MdBuf::VelNext,
                tag_out: MdBuf::TagNext,
                type_out: MdBuf::TypeNext,
                reference: MdBuf::Reference,
                status,
                n,
                cells,
            },
            body,
        )?;
        dev.launch(
            Launch::MdCopyBack {
                pos_from: MdBuf::PosNext,
                vel_from: MdBuf::VelNext,
                tag_from: MdBuf::TagNext,
                type_from: MdBuf::TypeNext,
                pos_to: MdBuf::Pos,
                vel_to: MdBuf::Vel,
                tag_to: MdBuf::Tag,
                type_to: MdBuf::Type,
                status,
                n,
            },
            body,
        )?;
        dev.launch(
            Launch::MdGhostCount {
                pos: MdBuf::Pos,
                gcount: MdBuf::GhostOff,
                status,
                n,
                lx,
                ly,
                lz,
                rlist2: self.rlist2,
            },
            body,
        )?;
        self.scan(dev, MdBuf::GhostOff, n, STATUS_GHOSTS)?;
        dev.launch(
            Launch::MdGhostPlace {
                pos: MdBuf::Pos,
                types: MdBuf::Type,
                goff: MdBuf::GhostOff,
                src: MdBuf::GhostSrc,
                shift: MdBuf::GhostShift,
                status,
                n,
                gcap: self.gcap,
                lx,
                ly,
                lz,
                rlist2: self.rlist2,
            },
            body,
        )?;
        dev.launch(self.neighbours(self.cap), body)?;
        dev.launch(
            Launch::MdCountEntries {
                ncount: MdBuf::NCount,
                status,
                n,
            },
            shape::count_entries(n, self.params.block),
        )
    }

    /// The neighbour build with capacity `cap` (the plan's own, or a
    /// smaller one in the overflow test).
    pub(super) fn neighbours(&self, cap: u32) -> Launch<MdBuf> {
        let [lx, ly, lz] = self.grid.l;
        let [nx, ny, nz] = self.grid.n;
        Launch::MdNeighbours {
            pos: MdBuf::Pos,
            start: MdBuf::Starts,
            goff: MdBuf::GhostOff,
            nlist: MdBuf::NList,
            ncount: MdBuf::NCount,
            status: MdBuf::Status,
            n: self.n,
            cap,
            gcap: self.gcap,
            lx,
            ly,
            lz,
            nx,
            ny,
            nz,
            rlist2: self.rlist2,
        }
    }
}
