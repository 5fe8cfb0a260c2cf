//! Starting a run and rebuilding its lists: the upload, the counting sort
//! by cell, the ghosts and the neighbour lists, with the buffers grown until
//! everything fits.

use gpu_kernels::Vec4;
use gpu_kernels::entry::Launch;
use gpu_kernels::integrate::ALL_FINITE;
use gpu_kernels::periodic::{
    STATUS_GHOSTS, STATUS_LOST, STATUS_MOVED, STATUS_NEIGHBOURS, STATUS_SCRATCH, STATUS_WORDS,
};
use gpu_kernels::shape;

use super::params::invalid;
use super::{MdBuf, MdPlan, with_headroom};
use crate::error::{Error, Result};
use crate::plan::device::{Device, vec4_words};

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
        self.start_with(dev, pos, vel, &[], &[])
    }

    /// `start` with image counters per body to start from (none: all zero),
    /// as a continued run has them, and the bodies' atom types (none: all
    /// type 0).
    pub(crate) fn start_with<D: Device<MdBuf>>(
        &mut self,
        dev: &mut D,
        pos: &[Vec4],
        vel: &[Vec4],
        images: &[[i32; 3]],
        types: &[u32],
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
        let cells = self.cell_count() as usize;
        let scan_grids =
            shape::scan(self.n.max(self.cell_count() + 1), self.params.scan_block).grid;
        let sized = [
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
        ];
        for (buf, words) in sized {
            dev.alloc(buf, words, false)?;
        }
        dev.write(MdBuf::Pos, 0, &vec4_words(pos))?;
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
        self.rebuild(dev)?;
        self.forces(dev, false)
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
                len,
            },
            blocks,
        )
    }

    /// Sorts the bodies by cell, places the ghosts and builds the lists,
    /// growing the ghost and list buffers until everything fits.
    pub(crate) fn rebuild<D: Device<MdBuf>>(&mut self, dev: &mut D) -> Result<()> {
        let n = self.n;
        let [lx, ly, lz] = self.grid.l;
        let [nx, ny, nz] = self.grid.n;
        let cells = self.cell_count();
        dev.write(MdBuf::Status, STATUS_MOVED as usize, &[0; 4])?;
        dev.fill(MdBuf::Starts, 0)?;
        let body = self.per_body(n);
        dev.launch(
            Launch::MdBin {
                pos: MdBuf::Pos,
                tag: MdBuf::Tag,
                cell: MdBuf::Cell,
                slot: MdBuf::Slot,
                counts: MdBuf::Starts,
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
                n,
                cells,
            },
            body,
        )?;
        dev.swap(MdBuf::Pos, MdBuf::PosNext);
        dev.swap(MdBuf::Vel, MdBuf::VelNext);
        dev.swap(MdBuf::Tag, MdBuf::TagNext);
        dev.swap(MdBuf::Type, MdBuf::TypeNext);
        loop {
            dev.launch(
                Launch::MdGhostCount {
                    pos: MdBuf::Pos,
                    gcount: MdBuf::GhostOff,
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
            let status = dev.read(MdBuf::Status, 0, STATUS_WORDS as usize)?;
            if status[STATUS_LOST as usize] != 0 {
                return Err(Error::Unsupported(format!(
                    "neighbour build: a pair within cutoff + skin had no ghost image (box {:?}, cells {:?}): the box is too small for the minimum image",
                    self.grid.l, self.grid.n
                )));
            }
            let ghosts = status[STATUS_GHOSTS as usize];
            let needed = status[STATUS_NEIGHBOURS as usize];
            if ghosts > self.gcap {
                self.gcap = (ghosts + ghosts / 4 + 32).min(7 * n);
                let words = 4 * (n + self.gcap) as usize;
                dev.alloc(MdBuf::Pos, words, true)?;
                dev.alloc(MdBuf::PosNext, words, false)?;
                dev.alloc(MdBuf::Type, (n + self.gcap) as usize, true)?;
                dev.alloc(MdBuf::TypeNext, (n + self.gcap) as usize, false)?;
                dev.alloc(MdBuf::GhostSrc, self.gcap as usize, false)?;
                dev.alloc(MdBuf::GhostShift, 4 * self.gcap as usize, false)?;
            }
            if needed > 0 {
                self.cap = with_headroom(needed);
                dev.alloc(MdBuf::NList, self.nlist_words()?, false)?;
                dev.write(MdBuf::Status, STATUS_NEIGHBOURS as usize, &[0])?;
            }
            if ghosts <= self.gcap && needed == 0 {
                self.ghosts = ghosts;
                self.builds += 1;
                self.since_build = 0;
                return Ok(());
            }
        }
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
