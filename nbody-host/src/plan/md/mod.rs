//! The short-range molecular-dynamics plan: Lennard-Jones in a periodic
//! orthorhombic box with cell-built Verlet lists, integrated with velocity
//! Verlet, as a sequence of launches of the kernel table's MD entries.
//!
//! Driven by plain parameters ([`MdParams`]: box, cutoff, skin, epsilon,
//! sigma, shift, dt) and by any device that implements [`MdDevice`] (the
//! emulator's in `emulator/md.rs`; the CUDA engine can implement the same
//! seven methods on cust buffers). Not wired into `Simulation` yet: that
//! waits for the public Lennard-Jones API.
//!
//! # One step (velocity Verlet)
//! `Kick(dt/2)`, [`MdDrift`](Entry::MdDrift) (drift in place and the rebuild
//! trigger), one read of the status words (the trigger and the previous
//! step's divergence check), then a rebuild if a body moved more than
//! `skin / 2` since the last one, else [`MdGhostUpdate`](Entry::MdGhostUpdate);
//! [`LjForces`](Entry::LjForces), `Kick(dt/2)`,
//! [`CheckFinite`](Entry::CheckFinite) into the status buffer.
//!
//! # A rebuild
//! Counts zeroed; [`MdBin`](Entry::MdBin) (wrap, cell, atomic slot); the
//! scan of the counts (cell starts); [`MdScatter`](Entry::MdScatter);
//! [`MdReorder`](Entry::MdReorder) (stable order within cells, reference
//! positions); the ghosts ([`MdGhostCount`](Entry::MdGhostCount), a scan,
//! [`MdGhostPlace`](Entry::MdGhostPlace)); [`MdNeighbours`](Entry::MdNeighbours);
//! one read of the status words: too many ghosts or neighbours for the
//! buffers grows them and builds again, so no list is ever truncated.
//!
//! Every launch is deterministic (see `gpu_kernels::binning`), so a run
//! gives the same bits on any schedule and any thread count.

use gpu_kernels::Vec4;
use gpu_kernels::entry::Launch;
use gpu_kernels::integrate::ALL_FINITE;
use gpu_kernels::lj::THERMO_PARTIALS;
use gpu_kernels::periodic::{
    self, Grid, STATUS_FINITE, STATUS_GHOSTS, STATUS_LOST, STATUS_MOVED, STATUS_NEIGHBOURS,
    STATUS_SCRATCH, STATUS_WORDS, Tag,
};
use gpu_kernels::shape::{self, LaunchShape, NEIGHBOUR_GROUP};

use crate::engine::Divergence;
use crate::error::{Error, Result};

#[cfg(test)]
mod reference;
#[cfg(test)]
mod softcuda_device;
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
    /// Thermo partial sums (`lj_partials` × `f64`).
    Partials,
}

/// What the MD plan needs from a device. Buffers are sized in 32-bit words;
/// every method orders itself after the work queued before it.
pub(crate) trait MdDevice {
    /// (Re)allocates `buf` with `words` words: zeroed, or with `keep` the old
    /// contents (as many words as fit) and zeros after them.
    fn alloc(&mut self, buf: MdBuf, words: usize, keep: bool) -> Result<()>;
    /// Writes `data` at word `offset` of `buf`.
    fn write(&mut self, buf: MdBuf, offset: usize, data: &[u32]) -> Result<()>;
    /// Sets every word of `buf` to `value`.
    fn fill(&mut self, buf: MdBuf, value: u32) -> Result<()>;
    /// Waits for the queued work and reads `len` words of `buf` from `offset`.
    fn read(&mut self, buf: MdBuf, offset: usize, len: usize) -> Result<Vec<u32>>;
    /// Queues a launch (skipped when the grid is empty).
    fn launch(&mut self, launch: Launch<MdBuf>, shape: LaunchShape) -> Result<()>;
    /// Swaps the memory behind two roles.
    fn swap(&mut self, a: MdBuf, b: MdBuf);
}

/// The physics and numerics of a run, in the caller's (reduced) units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MdParams {
    /// Box lengths; the box is `[0, L)` per dimension.
    pub lengths: [f32; 3],
    /// Cutoff radius `r_c`.
    pub cutoff: f32,
    /// Verlet skin: lists hold pairs within `r_c + skin`.
    pub skin: f32,
    /// Well depth.
    pub epsilon: f32,
    /// Length scale.
    pub sigma: f32,
    /// Shift the potential to zero at the cutoff (energy only).
    pub shift: bool,
    /// Time step.
    pub dt: f32,
    /// Cells per side; `None`: as many as fit (`floor(L / (r_c + skin))`).
    pub cells: Option<[u32; 3]>,
    /// Block of the scans (a valid block size).
    pub scan_block: u32,
    /// Block of every other kernel (a valid block size).
    pub block: u32,
}

impl MdParams {
    /// The parameters with automatic cells and the default blocks.
    pub(crate) fn new(
        lengths: [f32; 3],
        cutoff: f32,
        skin: f32,
        epsilon: f32,
        sigma: f32,
        shift: bool,
        dt: f32,
    ) -> MdParams {
        MdParams {
            lengths,
            cutoff,
            skin,
            epsilon,
            sigma,
            shift,
            dt,
            cells: None,
            scan_block: 256,
            block: 128,
        }
    }
}

/// Energies and pressure of the current state, summed in `f64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Thermo {
    /// Total kinetic energy.
    pub kinetic: f64,
    /// Total potential energy (shifted if the parameters say so).
    pub potential: f64,
    /// The virial `sum over pairs r_ij . F_ij`.
    pub virial: f64,
    /// Pressure `(2 K + W) / (3 V)`.
    pub pressure: f64,
}

/// Bodies as the plan holds them, back in the caller's order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MdState {
    /// Positions wrapped into the box, and masses.
    pub positions: Vec<Vec4>,
    /// Velocities.
    pub velocities: Vec<Vec4>,
    /// Image counters: unwrapped position = position + image * L.
    pub images: Vec<[i32; 3]>,
}

fn invalid(what: &'static str, value: f64, requirement: &'static str) -> Error {
    Error::InvalidMdSetting {
        what,
        value,
        requirement,
    }
}

fn vec4_words(v: &[Vec4]) -> Vec<u32> {
    v.iter()
        .flat_map(|p| p.to_array().map(f32::to_bits))
        .collect()
}

fn words_vec4(w: &[u32]) -> Vec<Vec4> {
    w.chunks_exact(4)
        .map(|c| {
            Vec4::new(
                f32::from_bits(c[0]),
                f32::from_bits(c[1]),
                f32::from_bits(c[2]),
                f32::from_bits(c[3]),
            )
        })
        .collect()
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
    rlist2: f32,
    /// `(skin / 2)^2`: the rebuild trigger.
    limit2: f32,
    rc2: f32,
    s6: f32,
    two_s6: f32,
    c6: f32,
    u6: f32,
    ushift: f32,
    /// Neighbour list capacity per body (a multiple of 4).
    cap: u32,
    /// Ghost slots allocated.
    gcap: u32,
    /// Ghosts of the current build.
    ghosts: u32,
    /// Builds so far.
    builds: u64,
}

impl MdPlan {
    /// Checks the parameters for `n` bodies; allocates nothing.
    pub(crate) fn new(n: usize, params: MdParams) -> Result<MdPlan> {
        let p = params;
        if n == 0 {
            return Err(Error::NoBodies);
        }
        // Ghosts (up to 7 per body) and list indices stay below 2^31.
        let max = (shape::MAX_BODIES / 8) as usize;
        if n > max {
            return Err(Error::TooManyBodies { n, max });
        }
        for (k, &l) in p.lengths.iter().enumerate() {
            if !(l.is_finite() && l > 0.0) {
                return Err(invalid(
                    ["box length x", "box length y", "box length z"][k],
                    l as f64,
                    "must be finite and > 0",
                ));
            }
        }
        if !(p.cutoff.is_finite() && p.cutoff > 0.0) {
            return Err(invalid("cutoff", p.cutoff as f64, "must be finite and > 0"));
        }
        if !(p.skin.is_finite() && p.skin >= 0.0) {
            return Err(invalid("skin", p.skin as f64, "must be finite and >= 0"));
        }
        if !(p.epsilon.is_finite() && p.epsilon > 0.0) {
            return Err(invalid(
                "epsilon",
                p.epsilon as f64,
                "must be finite and > 0",
            ));
        }
        if !(p.sigma.is_finite() && p.sigma > 0.0) {
            return Err(invalid("sigma", p.sigma as f64, "must be finite and > 0"));
        }
        if !(p.dt.is_finite() && p.dt > 0.0) {
            return Err(Error::InvalidTimeStep(p.dt as f64));
        }
        for (what, b) in [("scan block", p.scan_block), ("block", p.block)] {
            if !shape::is_valid_block(b) {
                return Err(invalid(
                    what,
                    b as f64,
                    "must be a power of two in 32..=1024",
                ));
            }
        }
        let rlist = p.cutoff as f64 + p.skin as f64;
        let shortest = p
            .lengths
            .iter()
            .fold(f64::INFINITY, |m, &l| m.min(l as f64));
        if rlist > 0.5 * shortest {
            return Err(invalid(
                "cutoff + skin",
                rlist,
                "must be at most half the shortest box length (minimum image)",
            ));
        }
        let cells = match p.cells {
            Some(c) => c,
            None => p
                .lengths
                .map(|l| ((l as f64 / rlist) as u32).clamp(1, 1024)),
        };
        for (k, &c) in cells.iter().enumerate() {
            if c == 0 || (p.lengths[k] as f64 / c as f64) < rlist {
                return Err(invalid(
                    "cells per side",
                    c as f64,
                    "must be at least 1 with cells no smaller than cutoff + skin",
                ));
            }
        }
        if cells.iter().map(|&c| c as u64).product::<u64>() >= shape::MAX_BODIES as u64 {
            return Err(invalid("cells", cells[0] as f64, "too many cells"));
        }
        // The force law in f32, from f64 (sigma^6 can be large; its products must stay finite).
        let (eps, sigma, rc) = (p.epsilon as f64, p.sigma as f64, p.cutoff as f64);
        let s6 = sigma.powi(6);
        let u_rc = 4.0 * eps * ((sigma / rc).powi(12) - (sigma / rc).powi(6));
        let consts = [s6, 2.0 * s6, 24.0 * eps * s6, 4.0 * eps * s6, u_rc];
        if !consts.iter().all(|c| c.abs() < f32::MAX as f64 / 16.0) {
            return Err(invalid("sigma", sigma, "gives force constants beyond f32"));
        }
        let n = n as u32;
        let volume: f64 = p.lengths.iter().map(|&l| l as f64).product();
        let expected = n as f64 / volume * 4.0 / 3.0 * std::f64::consts::PI * rlist.powi(3);
        let rg = rlist as f32 + p.lengths.iter().fold(0.0f32, |m, &l| m.max(l)) / 262_144.0;
        let ghost_fraction: f64 = p
            .lengths
            .iter()
            .map(|&l| 1.0 + 2.0 * (rg as f64 / l as f64).min(0.5))
            .product::<f64>()
            - 1.0;
        Ok(MdPlan {
            params: p,
            n,
            grid: Grid {
                l: p.lengths,
                n: cells,
            },
            rlist2: (rlist * rlist) as f32,
            limit2: (0.25 * p.skin as f64 * p.skin as f64) as f32,
            rc2: (rc * rc) as f32,
            s6: s6 as f32,
            two_s6: (2.0 * s6) as f32,
            c6: (24.0 * eps * s6) as f32,
            u6: (4.0 * eps * s6) as f32,
            ushift: if p.shift { u_rc as f32 } else { 0.0 },
            cap: with_headroom((expected.min(n as f64) as u32).max(4)),
            gcap: ((n as f64 * ghost_fraction * 1.25) as u32 + 32).min(7 * n),
            ghosts: 0,
            builds: 0,
        })
    }

    /// Number of bodies.
    pub(crate) fn n(&self) -> u32 {
        self.n
    }

    /// Neighbour list builds so far.
    pub(crate) fn builds(&self) -> u64 {
        self.builds
    }

    /// The neighbour list capacity per body.
    pub(crate) fn capacity(&self) -> u32 {
        self.cap
    }

    /// Ghosts of the current build.
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

    /// Uploads the bodies (positions with masses in `w`, velocities),
    /// builds the lists and computes the first accelerations.
    pub(crate) fn start<D: MdDevice>(
        &mut self,
        dev: &mut D,
        pos: &[Vec4],
        vel: &[Vec4],
    ) -> Result<()> {
        let n = self.n as usize;
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
            (MdBuf::NList, self.nlist_words()),
            (MdBuf::NCount, n),
            (MdBuf::Status, STATUS_WORDS as usize),
            (
                MdBuf::Partials,
                2 * shape::lj_partials(self.n, self.params.block) as usize,
            ),
        ];
        for (buf, words) in sized {
            dev.alloc(buf, words, false)?;
        }
        dev.write(MdBuf::Pos, 0, &vec4_words(pos))?;
        dev.write(MdBuf::Vel, 0, &vec4_words(vel))?;
        let tags: Vec<u32> = (0..self.n).flat_map(|id| [0, 0, 0, id]).collect();
        dev.write(MdBuf::Tag, 0, &tags)?;
        dev.write(MdBuf::Status, 0, &[ALL_FINITE, 0])?;
        self.rebuild(dev)?;
        self.forces(dev, false)
    }

    fn nlist_words(&self) -> usize {
        shape::neighbour_stride(self.n) as usize * self.cap as usize
    }

    /// Exclusive scan of `len` words of `buf` in place; the total goes to
    /// status word `total_at`.
    fn scan<D: MdDevice>(&self, dev: &mut D, buf: MdBuf, len: u32, total_at: u32) -> Result<()> {
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
    pub(crate) fn rebuild<D: MdDevice>(&mut self, dev: &mut D) -> Result<()> {
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
                cell: MdBuf::Cell,
                start: MdBuf::Starts,
                order: MdBuf::Order,
                pos_out: MdBuf::PosNext,
                vel_out: MdBuf::VelNext,
                tag_out: MdBuf::TagNext,
                reference: MdBuf::Reference,
                n,
                cells,
            },
            body,
        )?;
        dev.swap(MdBuf::Pos, MdBuf::PosNext);
        dev.swap(MdBuf::Vel, MdBuf::VelNext);
        dev.swap(MdBuf::Tag, MdBuf::TagNext);
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
            dev.launch(
                Launch::MdNeighbours {
                    pos: MdBuf::Pos,
                    start: MdBuf::Starts,
                    goff: MdBuf::GhostOff,
                    nlist: MdBuf::NList,
                    ncount: MdBuf::NCount,
                    status: MdBuf::Status,
                    n,
                    cap: self.cap,
                    lx,
                    ly,
                    lz,
                    nx,
                    ny,
                    nz,
                    rlist2: self.rlist2,
                },
                body,
            )?;
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
                dev.alloc(MdBuf::GhostSrc, self.gcap as usize, false)?;
                dev.alloc(MdBuf::GhostShift, 4 * self.gcap as usize, false)?;
            }
            if needed > 0 {
                self.cap = with_headroom(needed);
                dev.alloc(MdBuf::NList, self.nlist_words(), false)?;
                dev.write(MdBuf::Status, STATUS_NEIGHBOURS as usize, &[0])?;
            }
            if ghosts <= self.gcap && needed == 0 {
                self.ghosts = ghosts;
                self.builds += 1;
                return Ok(());
            }
        }
    }

    /// Accelerations at the current positions; with `thermo` also the
    /// partial sums of [`MdPlan::thermo`].
    fn forces<D: MdDevice>(&self, dev: &mut D, thermo: bool) -> Result<()> {
        let (pos, nlist, ncount, acc, vel, partials) = (
            MdBuf::Pos,
            MdBuf::NList,
            MdBuf::NCount,
            MdBuf::Acc,
            MdBuf::Vel,
            MdBuf::Partials,
        );
        let (n, extent, cap) = (self.n, self.n + self.ghosts, self.cap);
        let (rc2, s6, two_s6, c6, u6, ushift) = (
            self.rc2,
            self.s6,
            self.two_s6,
            self.c6,
            self.u6,
            self.ushift,
        );
        let launch = if thermo {
            Launch::LjForcesThermo {
                pos,
                nlist,
                ncount,
                acc,
                vel,
                partials,
                n,
                extent,
                cap,
                rc2,
                s6,
                two_s6,
                c6,
                u6,
                ushift,
            }
        } else {
            Launch::LjForces {
                pos,
                nlist,
                ncount,
                acc,
                vel,
                partials,
                n,
                extent,
                cap,
                rc2,
                s6,
                two_s6,
                c6,
                u6,
                ushift,
            }
        };
        dev.launch(launch, shape::lj(n, self.params.block, thermo))
    }

    fn kick<D: MdDevice>(&self, dev: &mut D) -> Result<()> {
        dev.launch(
            Launch::Kick {
                vel: MdBuf::Vel,
                acc: MdBuf::Acc,
                n: self.n,
                dt: 0.5 * self.params.dt,
            },
            self.per_body(self.n),
        )
    }

    /// Runs `steps` velocity-Verlet steps; stops at the first step after
    /// which a body is not finite (reported with the body's original index).
    pub(crate) fn step<D: MdDevice>(
        &mut self,
        dev: &mut D,
        steps: u64,
    ) -> Result<Option<Divergence>> {
        let n = self.n;
        let body = self.per_body(n);
        for s in 1..=steps {
            self.kick(dev)?;
            dev.launch(
                Launch::MdDrift {
                    pos: MdBuf::Pos,
                    vel: MdBuf::Vel,
                    reference: MdBuf::Reference,
                    status: MdBuf::Status,
                    n,
                    dt: self.params.dt,
                    limit2: self.limit2,
                },
                body,
            )?;
            let status = dev.read(MdBuf::Status, 0, STATUS_WORDS as usize)?;
            if status[STATUS_FINITE as usize] != ALL_FINITE {
                return self.diverged(dev, &status, s - 1, s - 1).map(Some);
            }
            if status[STATUS_MOVED as usize] != 0 {
                self.rebuild(dev)?;
            } else {
                dev.launch(
                    Launch::MdGhostUpdate {
                        pos: MdBuf::Pos,
                        src: MdBuf::GhostSrc,
                        shift: MdBuf::GhostShift,
                        n,
                        ghosts: self.ghosts,
                    },
                    self.per_body(self.ghosts),
                )?;
            }
            self.forces(dev, false)?;
            self.kick(dev)?;
            // The check numbers steps with a u32: the flag says "this step" when set.
            dev.launch(
                Launch::CheckFinite {
                    pos: MdBuf::Pos,
                    vel: MdBuf::Vel,
                    n,
                    step: 1,
                    flag: MdBuf::Status,
                },
                body,
            )?;
        }
        let status = dev.read(MdBuf::Status, 0, STATUS_WORDS as usize)?;
        if status[STATUS_FINITE as usize] != ALL_FINITE {
            return self.diverged(dev, &status, steps, steps).map(Some);
        }
        Ok(None)
    }

    /// The divergence in the caller's numbering; resets the flag.
    fn diverged<D: MdDevice>(
        &self,
        dev: &mut D,
        status: &[u32],
        after: u64,
        run: u64,
    ) -> Result<Divergence> {
        let slot = status[STATUS_FINITE as usize + 1] as usize;
        let tag = words_tag(&dev.read(MdBuf::Tag, 4 * slot, 4)?)[0];
        dev.write(MdBuf::Status, STATUS_FINITE as usize, &[ALL_FINITE, 0])?;
        Ok(Divergence {
            after_step: after,
            body: tag.id as usize,
            steps_run: run,
        })
    }

    /// Kinetic and potential energy, virial and pressure of the current
    /// state (recomputes the forces, which are unchanged).
    pub(crate) fn thermo<D: MdDevice>(&self, dev: &mut D) -> Result<Thermo> {
        self.forces(dev, true)?;
        let blocks = shape::lj_partials(self.n, self.params.block) / THERMO_PARTIALS;
        let words = dev.read(MdBuf::Partials, 0, 2 * (THERMO_PARTIALS * blocks) as usize)?;
        let values: Vec<f64> = words
            .chunks_exact(2)
            .map(|w| f64::from_bits(w[0] as u64 | (w[1] as u64) << 32))
            .collect();
        let sum = |k: usize| {
            values
                .iter()
                .skip(k)
                .step_by(THERMO_PARTIALS as usize)
                .sum::<f64>()
        };
        // Each pair is in both bodies' lists.
        let (potential, virial, kinetic) = (0.5 * sum(0), 0.5 * sum(1), sum(2));
        let volume: f64 = self.grid.l.iter().map(|&l| l as f64).product();
        Ok(Thermo {
            kinetic,
            potential,
            virial,
            pressure: (2.0 * kinetic + virial) / (3.0 * volume),
        })
    }

    /// The bodies in the caller's order: positions wrapped into the box with
    /// their image counters, velocities.
    pub(crate) fn read_state<D: MdDevice>(&self, dev: &mut D) -> Result<MdState> {
        let n = self.n as usize;
        let pos = words_vec4(&dev.read(MdBuf::Pos, 0, 4 * n)?);
        let vel = words_vec4(&dev.read(MdBuf::Vel, 0, 4 * n)?);
        let tags = words_tag(&dev.read(MdBuf::Tag, 0, 4 * n)?);
        let mut state = MdState {
            positions: vec![Vec4::ZERO; n],
            velocities: vec![Vec4::ZERO; n],
            images: vec![[0; 3]; n],
        };
        let [lx, ly, lz] = self.grid.l;
        for ((p, v), t) in pos.iter().zip(&vel).zip(&tags) {
            // Bodies drift up to skin / 2 out of the box between builds.
            let ((x, kx), (y, ky), (z, kz)) = (
                periodic::wrap(p.x, lx),
                periodic::wrap(p.y, ly),
                periodic::wrap(p.z, lz),
            );
            let id = t.id as usize;
            state.positions[id] = Vec4::new(x, y, z, p.w);
            state.velocities[id] = *v;
            state.images[id] = [
                t.ix.wrapping_add(kx),
                t.iy.wrapping_add(ky),
                t.iz.wrapping_add(kz),
            ];
        }
        Ok(state)
    }
}
