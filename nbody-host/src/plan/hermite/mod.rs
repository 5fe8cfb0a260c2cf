//! The Hermite kernels (`gpu_kernels::hermite`) as launches ([`HermitePlan`])
//! and [`DeviceFields`], which runs them over any [`Device`]: the forces of
//! a Hermite run on `Backend::Emulator` and `Backend::Cuda` (the block
//! bookkeeping stays on the host, `hermite/block.rs`, shared with the CPU
//! engine), and of libgrape6 on a GPU ([`HermiteForces`]).
//!
//! # A block step on the device
//! The device holds every body (position and mass, velocity and its time
//! in ticks, acceleration, jerk: [`HermiteBuf::Pos`] ...), loaded at each
//! synchronisation. A block step uploads the active indices, then queues
//! the predictor for all bodies, the gather of the active ones, the force
//! launch (and the reduction of its parts) and reads the fields back; once
//! the host has corrected the block, it uploads the corrected bodies and
//! the scatter kernel writes them back. Per block step: two uploads of the
//! active bodies' size, one read, four or five launches; nothing of size
//! `N` crosses the bus.

use std::collections::BTreeMap;

use gpu_kernels::entry::{Entry, Launch};
use gpu_kernels::hermite::{NO_SLOT, force_shape};
use gpu_kernels::shape::{self, LaunchShape};

use super::ELEMENTWISE_BLOCK;
use super::device::{Device, words_f64};
use crate::engine::BackendKind;
use crate::error::{Error, Result};
use crate::hermite::fields::{BlockFields, HermiteForces, check_call};
use crate::hermite::{Field, HermiteState, Precision, Sink, Sources};

/// A device buffer of the Hermite plan, by role (each of
/// [`Vec4d`](gpu_kernels::hermite::Vec4d)s, or `u32` indices).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum HermiteBuf {
    /// Positions and masses (`n`).
    Pos,
    /// Velocities and each body's time in ticks (`n`).
    Vel,
    /// Accelerations, with `G` (`n`).
    Acc,
    /// Jerks, with `G` (`n`).
    Jerk,
    /// Predicted positions and masses: the j-bodies (`n`).
    PPos,
    /// Predicted velocities (`n`).
    PVel,
    /// The active bodies' indices, also the i-bodies' own slots (`ni` `u32`).
    Active,
    /// The i-bodies' positions (`ni`).
    IPos,
    /// The i-bodies' velocities (`ni`).
    IVel,
    /// The parts of a split force sum (`2 ni jparts`).
    Partials,
    /// Acceleration and potential, jerk, per i-body (`2 ni`).
    Out,
    /// Corrected bodies: position, velocity, acceleration, jerk (`4 ni`).
    Update,
}

/// 32-bit words of a [`Vec4d`].
const WORDS: usize = 8;

/// Blocks a force launch aims for when the active block alone would give
/// fewer: enough to fill a 132-SM GPU a few times over.
const TARGET_BLOCKS: u32 = 512;

/// Fewest tiles of j-bodies each part of a split force sum takes: a part
/// that loads fewer tiles spends more on its start than on its pairs.
const MIN_TILES_PER_PART: u32 = 4;

/// One launch and its shape.
pub(crate) type HermiteLaunch = (Launch<HermiteBuf>, LaunchShape);

/// The launches of the Hermite kernels for one precision and block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HermitePlan {
    /// Threads per block of the force kernels (and j-bodies per tile).
    block: u32,
    mixed: bool,
}

impl HermitePlan {
    /// The plan for force blocks of `block` threads in `precision`; an
    /// invalid block size is an error naming it.
    pub(crate) fn new(block: u32, precision: Precision) -> Result<HermitePlan> {
        if !shape::is_valid_block(block) {
            return Err(Error::InvalidBlockSize {
                block,
                kernel: "hermite",
                max: shape::MAX_BLOCK,
            });
        }
        Ok(HermitePlan {
            block,
            mixed: precision == Precision::Mixed,
        })
    }

    /// The force kernel's entry point.
    pub(crate) fn force_entry(&self) -> Entry {
        if self.mixed {
            Entry::HermiteForceMixed
        } else {
            Entry::HermiteForce
        }
    }

    /// Every body predicted to tick `next` ([`Launch::HermitePredict`]).
    pub(crate) fn predict(&self, n: u32, next: f64, per_tick: f64) -> HermiteLaunch {
        use HermiteBuf::*;
        (
            Launch::HermitePredict {
                pos: Pos,
                vel: Vel,
                acc: Acc,
                jerk: Jerk,
                ppos: PPos,
                pvel: PVel,
                n,
                next,
                per_tick,
            },
            shape::per_body(n, ELEMENTWISE_BLOCK),
        )
    }

    /// The active bodies' predicted states as i-bodies ([`Launch::HermiteGather`]).
    pub(crate) fn gather(&self, n: u32, ni: u32) -> HermiteLaunch {
        use HermiteBuf::*;
        (
            Launch::HermiteGather {
                ppos: PPos,
                pvel: PVel,
                active: Active,
                ipos: IPos,
                ivel: IVel,
                n,
                ni,
            },
            shape::per_body(ni, ELEMENTWISE_BLOCK),
        )
    }

    /// The corrected bodies written back ([`Launch::HermiteScatter`]).
    pub(crate) fn scatter(&self, n: u32, ni: u32) -> HermiteLaunch {
        use HermiteBuf::*;
        (
            Launch::HermiteScatter {
                update: Update,
                active: Active,
                pos: Pos,
                vel: Vel,
                acc: Acc,
                jerk: Jerk,
                n,
                ni,
            },
            shape::per_body(ni, ELEMENTWISE_BLOCK),
        )
    }

    /// How many parts the j-bodies of a force launch are split into: one
    /// when the i-bodies alone make [`TARGET_BLOCKS`] blocks, otherwise as
    /// many as reach it with at least [`MIN_TILES_PER_PART`] tiles each. A
    /// function of the lengths only, so every device sums in the same order.
    pub(crate) fn jparts(&self, ni: u32, nj: u32) -> u32 {
        let iblocks = ni.div_ceil(self.block).max(1);
        let tiles = nj.div_ceil(self.block);
        TARGET_BLOCKS
            .div_ceil(iblocks)
            .min(tiles / MIN_TILES_PER_PART)
            .max(1)
    }

    /// The force launch for `ni >= 1` i-bodies ([`HermiteBuf::IPos`],
    /// [`IVel`](HermiteBuf::IVel), own slots in
    /// [`Active`](HermiteBuf::Active)) from `nj >= 1` j-bodies
    /// ([`PPos`](HermiteBuf::PPos), [`PVel`](HermiteBuf::PVel)) in `jparts`
    /// parts, then the reduction of the parts if there are several: the
    /// results in [`HermiteBuf::Out`] either way.
    pub(crate) fn force(
        &self,
        ni: u32,
        nj: u32,
        jparts: u32,
        eps2: f64,
    ) -> Result<Vec<HermiteLaunch>> {
        use HermiteBuf::*;
        let shape = force_shape(ni, self.block, jparts, self.mixed).ok_or(Error::GridTooLarge {
            kernel: self.force_entry().name(),
            n: ni as usize,
            block: self.block,
            blocks: ni.div_ceil(self.block) as u64 * jparts as u64,
            max: shape::MAX_GRID,
        })?;
        let partials = if jparts == 1 { Out } else { Partials };
        let (jpos, jvel, ipos, ivel, islot) = (PPos, PVel, IPos, IVel, Active);
        let force = if self.mixed {
            Launch::HermiteForceMixed {
                jpos,
                jvel,
                ipos,
                ivel,
                islot,
                partials,
                ni,
                nj,
                jparts,
                eps2,
            }
        } else {
            Launch::HermiteForce {
                jpos,
                jvel,
                ipos,
                ivel,
                islot,
                partials,
                ni,
                nj,
                jparts,
                eps2,
            }
        };
        let mut launches = vec![(force, shape)];
        if jparts > 1 {
            launches.push((
                Launch::HermiteReduce {
                    partials: Partials,
                    out: Out,
                    ni,
                    jparts,
                },
                shape::per_body(ni, ELEMENTWISE_BLOCK),
            ));
        }
        Ok(launches)
    }

    /// One launch of every kernel, for checking the kernels' limits before
    /// anything runs (block size and shared memory do not depend on the
    /// lengths).
    pub(crate) fn every_launch(&self) -> Vec<(Entry, LaunchShape)> {
        let mut all = vec![
            self.predict(2, 0.0, 1.0),
            self.gather(2, 2),
            self.scatter(2, 2),
        ];
        all.extend(self.force(2, 2, 2, 0.0).expect("a grid of 2 blocks"));
        all.iter().map(|(l, s)| (l.entry(), *s)).collect()
    }

    /// The shared memory of the force launch.
    pub(crate) fn shared_bytes(&self) -> u32 {
        self.block * gpu_kernels::hermite::tile_bytes(self.mixed)
    }
}

/// Words of `v` as a [`Vec4d`]'s memory.
fn push_vec4d(words: &mut Vec<u32>, v: [f64; 3], w: f64) {
    for x in [v[0], v[1], v[2], w] {
        let b = x.to_ne_bytes();
        words.push(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
        words.push(u32::from_ne_bytes([b[4], b[5], b[6], b[7]]));
    }
}

/// The Hermite kernels over the device `D`: a block step's predictor and
/// forces ([`BlockFields`]) and libgrape6's calculations ([`HermiteForces`]).
pub(crate) struct DeviceFields<D> {
    plan: HermitePlan,
    precision: Precision,
    dev: D,
    /// Bodies held for block steps (0 until [`BlockFields::load`]).
    n: usize,
    /// Words allocated per role.
    words: BTreeMap<HermiteBuf, usize>,
}

impl<D: Device<HermiteBuf>> DeviceFields<D> {
    /// The plan for force blocks of `block` threads in `precision`, then the
    /// device (`open`, called only once they are known good), every launch
    /// checked against it (shared memory, the kernels' limits), and room
    /// for `n` bodies where the device has memory of its own.
    pub(crate) fn new(
        n: usize,
        block: u32,
        precision: Precision,
        open: impl FnOnce() -> Result<D>,
    ) -> Result<DeviceFields<D>> {
        let plan = HermitePlan::new(block, precision)?;
        if n > shape::MAX_BODIES as usize {
            return Err(Error::TooManyBodies {
                n,
                max: shape::MAX_BODIES as usize,
            });
        }
        let mut dev = open()?;
        let (needed, available) = (plan.shared_bytes(), dev.shared_opt_in());
        if needed > available {
            return Err(Error::SharedMemoryExceeded {
                block,
                kernel: plan.force_entry().name(),
                needed,
                available,
            });
        }
        if let Some(free) = dev.free_bytes()? {
            // Six arrays of n bodies, i-body arrays of up to n (two inputs,
            // two results, four updates), and the parts of a split sum (a
            // split only while the i-bodies make fewer than TARGET_BLOCKS).
            // (ni jparts <= 2 TARGET_BLOCKS block).
            let needed = (6 + 8) * 32 * n as u64 + 4 * 32 * TARGET_BLOCKS as u64 * block as u64;
            if needed > free {
                return Err(Error::DeviceMemoryExceeded {
                    n,
                    needed,
                    available: free,
                });
            }
        }
        dev.check_launches(&plan.every_launch())?;
        Ok(DeviceFields {
            plan,
            precision,
            dev,
            n: 0,
            words: BTreeMap::new(),
        })
    }

    /// `role` with room for at least `words` words (grown, never kept).
    fn ensure(&mut self, role: HermiteBuf, words: usize) -> Result<()> {
        if self.words.get(&role).is_some_and(|&w| w >= words) {
            return Ok(());
        }
        self.dev.alloc(role, words.max(1), false)?;
        self.words.insert(role, words.max(1));
        Ok(())
    }

    /// Uploads `data` as the first words of `role` (grown to fit).
    fn upload(&mut self, role: HermiteBuf, data: &[u32]) -> Result<()> {
        self.ensure(role, data.len())?;
        self.dev.write(role, 0, data)
    }

    /// The force launches for the i-bodies and j-bodies on the device, and
    /// the fields read back.
    fn run_force(&mut self, ni: usize, nj: usize, eps2: f64) -> Result<Vec<Field>> {
        let (ni32, nj32) = (ni as u32, nj as u32);
        let jparts = self.plan.jparts(ni32, nj32);
        let launches = self.plan.force(ni32, nj32, jparts, eps2)?;
        self.ensure(HermiteBuf::Out, 2 * WORDS * ni)?;
        if jparts > 1 {
            self.ensure(HermiteBuf::Partials, 2 * WORDS * ni * jparts as usize)?;
        }
        for (launch, shape) in launches {
            self.dev.launch(launch, shape)?;
        }
        let out = words_f64(&self.dev.read(HermiteBuf::Out, 0, 2 * WORDS * ni)?);
        Ok(out
            .chunks_exact(8)
            .map(|c| Field {
                acc: [c[0], c[1], c[2]],
                pot: c[3],
                jerk: [c[4], c[5], c[6]],
            })
            .collect())
    }

    /// The active indices as the device's `u32` list.
    fn upload_active(&mut self, active: &[usize]) -> Result<()> {
        let idx: Vec<u32> = active.iter().map(|&i| i as u32).collect();
        self.upload(HermiteBuf::Active, &idx)
    }
}

impl<D: Device<HermiteBuf>> BlockFields for DeviceFields<D> {
    fn kind(&self) -> BackendKind {
        self.dev.kind()
    }

    fn load(&mut self, s: &HermiteState) -> Result<()> {
        let n = s.pos.len();
        let mut pos = Vec::with_capacity(WORDS * n);
        let mut vel = Vec::with_capacity(WORDS * n);
        let mut acc = Vec::with_capacity(WORDS * n);
        let mut jerk = Vec::with_capacity(WORDS * n);
        for i in 0..n {
            push_vec4d(&mut pos, s.pos[i], s.mass[i]);
            push_vec4d(&mut vel, s.vel[i], 0.0);
            push_vec4d(&mut acc, s.acc[i], 0.0);
            push_vec4d(&mut jerk, s.jerk[i], 0.0);
        }
        self.upload(HermiteBuf::Pos, &pos)?;
        self.upload(HermiteBuf::Vel, &vel)?;
        self.upload(HermiteBuf::Acc, &acc)?;
        self.upload(HermiteBuf::Jerk, &jerk)?;
        self.ensure(HermiteBuf::PPos, WORDS * n)?;
        self.ensure(HermiteBuf::PVel, WORDS * n)?;
        self.n = n;
        Ok(())
    }

    fn fields(
        &mut self,
        s: &HermiteState,
        _tick: &[u64],
        next: u64,
        per_tick: f64,
        active: &[usize],
        eps2: f64,
    ) -> Result<Vec<Field>> {
        let (n, ni) = (self.n, active.len());
        if n != s.pos.len() {
            return Err(Error::Unsupported(format!(
                "the device holds {n} bodies, the state {}: load it first",
                s.pos.len()
            )));
        }
        if ni == 0 {
            return Ok(Vec::new());
        }
        self.upload_active(active)?;
        self.ensure(HermiteBuf::IPos, WORDS * ni)?;
        self.ensure(HermiteBuf::IVel, WORDS * ni)?;
        // Ticks are below 2^51: exact in f64, as the host's predictor has them.
        for (launch, shape) in [
            self.plan.predict(n as u32, next as f64, per_tick),
            self.plan.gather(n as u32, ni as u32),
        ] {
            self.dev.launch(launch, shape)?;
        }
        self.run_force(ni, n, eps2)
    }

    fn corrected(&mut self, s: &HermiteState, tick: &[u64], active: &[usize]) -> Result<()> {
        let ni = active.len();
        if ni == 0 {
            return Ok(());
        }
        let mut update = Vec::with_capacity(4 * WORDS * ni);
        for &i in active {
            push_vec4d(&mut update, s.pos[i], s.mass[i]);
            push_vec4d(&mut update, s.vel[i], tick[i] as f64);
            push_vec4d(&mut update, s.acc[i], 0.0);
            push_vec4d(&mut update, s.jerk[i], 0.0);
        }
        self.upload(HermiteBuf::Update, &update)?;
        self.upload_active(active)?;
        let (launch, shape) = self.plan.scatter(self.n as u32, ni as u32);
        self.dev.launch(launch, shape)
    }
}

impl<D: Device<HermiteBuf>> HermiteForces for DeviceFields<D> {
    fn kind(&self) -> BackendKind {
        self.dev.kind()
    }

    fn precision(&self) -> Precision {
        self.precision
    }

    fn evaluate(
        &mut self,
        sources: &Sources,
        sinks: &[Sink],
        eps2: f64,
        out: &mut [Field],
    ) -> Result<()> {
        check_call(sources, sinks, eps2, out)?;
        let (ni, nj) = (sinks.len(), sources.len());
        if ni == 0 {
            return Ok(());
        }
        if nj == 0 {
            out.fill(Field::default());
            return Ok(());
        }
        // The j-bodies as the predicted ones; these bodies are not a block
        // step's (the next `load` rewrites them).
        self.n = 0;
        let (mut jpos, mut jvel) = (
            Vec::with_capacity(WORDS * nj),
            Vec::with_capacity(WORDS * nj),
        );
        for j in 0..nj {
            push_vec4d(&mut jpos, sources.position(j), sources.mass(j));
            push_vec4d(&mut jvel, sources.velocity(j), 0.0);
        }
        self.upload(HermiteBuf::PPos, &jpos)?;
        self.upload(HermiteBuf::PVel, &jvel)?;
        let (mut ipos, mut ivel) = (
            Vec::with_capacity(WORDS * ni),
            Vec::with_capacity(WORDS * ni),
        );
        let mut slot = Vec::with_capacity(ni);
        for s in sinks {
            push_vec4d(&mut ipos, s.pos, 0.0);
            push_vec4d(&mut ivel, s.vel, 0.0);
            slot.push(s.slot.map_or(NO_SLOT, |j| j as u32));
        }
        self.upload(HermiteBuf::IPos, &ipos)?;
        self.upload(HermiteBuf::IVel, &ivel)?;
        self.upload(HermiteBuf::Active, &slot)?;
        let fields = self.run_force(ni, nj, eps2)?;
        out.copy_from_slice(&fields);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
