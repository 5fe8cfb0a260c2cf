//! The block-pair primitive as kernel launches: [`PairPlan`], the launch of
//! each operation, and [`PairForces`], which runs them over any [`Device`]:
//! what the emulator and the CUDA backend run for
//! [`BlockForces`](crate::block_pair::BlockForces) (the same launches on
//! both, as for whole simulations).
//!
//! Buffers are named by role ([`PairBuf`]); each plan method gives the one
//! launch of an operation, or `None` when a block is empty (nothing to do).

use std::collections::BTreeMap;

use gpu_kernels::Vec4;
use gpu_kernels::entry::{Entry, Launch};
use gpu_kernels::shape::{self, LaunchShape, TRIANGLE_MAX_BLOCK};

use super::device::{Device, vec4_words, words_f64, words_vec4};
use super::triangle_launch;
use crate::block_pair::{BlockPairs, gravity_of, needs_guard};
use crate::config::Params;
use crate::engine::BackendKind;
use crate::error::{Error, Result};

/// A device buffer of a block-pair launch, by role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum PairBuf {
    /// Block `I`'s positions and masses (`ni` × `Vec4`).
    PosI,
    /// Block `J`'s positions and masses (`nj` × `Vec4`).
    PosJ,
    /// Accelerations of `I` (`ni` × `Vec4`), added to.
    AccI,
    /// Reactions on `J` (`nj` × `Vec4`), added to.
    ReactJ,
    /// `f64` partial sums of a potential.
    Partials,
}

/// One launch: the entry point with its arguments, and its shape.
pub(crate) type PairLaunch = (Launch<PairBuf>, LaunchShape);

/// The launches of the block-pair operations for one force law and kernel
/// block size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PairPlan {
    eps2: f32,
    /// The guarded kernels (zero softening, or masses that could overflow).
    guard: bool,
    /// Threads per block of the tiled-like kernels: the run's kernel block.
    block: u32,
    /// Threads per block of the register-blocked (triangle-like) kernels.
    pair_block: u32,
}

impl PairPlan {
    /// The plan for `params` (gravity only), guarded if the run's heaviest
    /// body `max_mass` needs it.
    pub(crate) fn new(params: &Params, max_mass: f32) -> Result<PairPlan> {
        let eps2 = gravity_of(params)?.eps2();
        let block = params.kernel().block();
        Ok(PairPlan {
            eps2,
            guard: needs_guard(params, max_mass)?,
            block,
            pair_block: block.min(TRIANGLE_MAX_BLOCK),
        })
    }

    /// `acc_i += pull of J on I` ([`Launch::BlockPull`]).
    pub(crate) fn pull(&self, ni: u32, nj: u32) -> Option<PairLaunch> {
        if ni == 0 || nj == 0 {
            return None;
        }
        let (pos_i, pos_j, acc, eps2) = (PairBuf::PosI, PairBuf::PosJ, PairBuf::AccI, self.eps2);
        let launch = if self.guard {
            Launch::BlockPullGuarded {
                pos_i,
                pos_j,
                acc,
                ni,
                nj,
                eps2,
            }
        } else {
            Launch::BlockPull {
                pos_i,
                pos_j,
                acc,
                ni,
                nj,
                eps2,
            }
        };
        Some((launch, shape::tiled(ni, self.block)))
    }

    /// Each cross pair once, both halves ([`Launch::BlockPair`]);
    /// [`Error::GridTooLarge`] past the grid limit.
    pub(crate) fn pull_pair(&self, ni: u32, nj: u32) -> Result<Option<PairLaunch>> {
        if ni == 0 || nj == 0 {
            return Ok(None);
        }
        let shape = shape::block_pair(ni, nj, self.pair_block).ok_or_else(|| {
            let s = shape::triangle_group_size(self.pair_block) as u64;
            Error::GridTooLarge {
                kernel: "block_pair",
                n: ni.max(nj) as usize,
                block: self.pair_block,
                blocks: (ni as u64).div_ceil(s) * (nj as u64).div_ceil(s),
                max: shape::MAX_GRID,
            }
        })?;
        let (pos_i, pos_j, acc_i, react_j, eps2) = (
            PairBuf::PosI,
            PairBuf::PosJ,
            PairBuf::AccI,
            PairBuf::ReactJ,
            self.eps2,
        );
        let launch = if self.guard {
            Launch::BlockPairGuarded {
                pos_i,
                pos_j,
                acc_i,
                react_j,
                ni,
                nj,
                eps2,
            }
        } else {
            Launch::BlockPair {
                pos_i,
                pos_j,
                acc_i,
                react_j,
                ni,
                nj,
                eps2,
            }
        };
        Ok(Some((launch, shape)))
    }

    /// The pairs within `I` once: the triangle kernel with `G = 1`, adding
    /// to [`PairBuf::AccI`].
    pub(crate) fn pull_within(&self, ni: u32) -> Result<Option<PairLaunch>> {
        let shape = shape::triangle(ni, self.pair_block).ok_or(Error::GridTooLarge {
            kernel: "triangle",
            n: ni as usize,
            block: self.pair_block,
            blocks: shape::triangle_blocks(ni, self.pair_block),
            max: shape::MAX_GRID,
        })?;
        if shape.grid == 0 {
            return Ok(None);
        }
        let launch = triangle_launch(self.guard, PairBuf::PosI, PairBuf::AccI, ni, 1.0, self.eps2);
        Ok(Some((launch, shape)))
    }

    /// The potential of the pairs within `I`: the energy kernel, with
    /// [`PairBuf::AccI`] (zeros) as the velocities, whose kinetic partial
    /// sums are not used ([`finish_within`](Self::finish_within)).
    pub(crate) fn potential_within(&self, ni: u32) -> Option<PairLaunch> {
        (ni > 0).then(|| {
            (
                Launch::Energy {
                    pos: PairBuf::PosI,
                    vel: PairBuf::AccI,
                    n: ni,
                    eps2: self.eps2,
                    partials: PairBuf::Partials,
                },
                shape::energy(ni, self.block),
            )
        })
    }

    /// `f64` partial sums [`potential_within`](Self::potential_within) writes.
    pub(crate) fn within_partials(&self, ni: u32) -> usize {
        shape::energy_partials(ni, self.block) as usize
    }

    /// The pair sum from [`potential_within`](Self::potential_within)'s
    /// partials (every pair was counted twice).
    pub(crate) fn finish_within(partials: &[f64]) -> f64 {
        0.5 * partials.iter().skip(1).step_by(2).sum::<f64>()
    }

    /// The potential between `I` and `J` ([`Launch::BlockPotential`]); its
    /// partial sums add up to the pair sum.
    pub(crate) fn potential_between(&self, ni: u32, nj: u32) -> Option<PairLaunch> {
        (ni > 0 && nj > 0).then(|| {
            (
                Launch::BlockPotential {
                    pos_i: PairBuf::PosI,
                    pos_j: PairBuf::PosJ,
                    ni,
                    nj,
                    eps2: self.eps2,
                    partials: PairBuf::Partials,
                },
                shape::block_potential(ni, self.block),
            )
        })
    }

    /// `f64` partial sums [`potential_between`](Self::potential_between) writes.
    pub(crate) fn between_partials(&self, ni: u32) -> usize {
        shape::block_potential_partials(ni, self.block) as usize
    }

    /// One launch of every operation, in the order above, for checking the
    /// kernels' limits before anything runs: blocks of two bodies, since a
    /// launch's block size and shared memory do not depend on the lengths.
    pub(crate) fn every_launch(&self) -> Result<Vec<PairLaunch>> {
        Ok([
            self.pull(2, 2),
            self.pull_pair(2, 2)?,
            self.pull_within(2)?,
            self.potential_within(2),
            self.potential_between(2, 2),
        ]
        .into_iter()
        .flatten()
        .collect())
    }
}

/// One block of a call: its role, its bodies (`None`: zeros) and length.
type Input<'a> = (PairBuf, Option<&'a [Vec4]>, usize);

/// The block-pair primitive over the device `D`: the launches of
/// [`PairPlan`], with the device's buffers kept between calls and
/// reallocated only when a block's length changes. One object per device,
/// so several GPUs of one machine can each take blocks.
pub(crate) struct PairForces<D> {
    plan: PairPlan,
    dev: D,
    /// Words allocated per role.
    words: BTreeMap<PairBuf, usize>,
}

impl<D: Device<PairBuf>> PairForces<D> {
    /// The plan for `params` and the run's heaviest body `max_mass`, then
    /// the device (`open`, called only once they are known good), with
    /// every launch the plan can make checked against it (shared memory,
    /// the kernels' limits) before any is made.
    pub(crate) fn new(
        params: &Params,
        max_mass: f32,
        open: impl FnOnce() -> Result<D>,
    ) -> Result<PairForces<D>> {
        let plan = PairPlan::new(params, max_mass)?;
        let mut dev = open()?;
        let launches: Vec<(Entry, LaunchShape)> = plan
            .every_launch()?
            .iter()
            .map(|(l, s)| (l.entry(), *s))
            .collect();
        let needed = launches.iter().map(|(_, s)| s.shared_bytes).max();
        let available = dev.shared_opt_in();
        if let Some(needed) = needed.filter(|&n| n > available) {
            return Err(Error::SharedMemoryExceeded {
                block: params.kernel().block(),
                kernel: params.kernel().name(),
                needed,
                available,
            });
        }
        dev.check_launches(&launches)?;
        Ok(PairForces {
            plan,
            dev,
            words: BTreeMap::new(),
        })
    }

    /// `role`'s buffer with exactly `words` words, (re)allocated (zeroed)
    /// only if its length differs; whether it was.
    fn sized(&mut self, role: PairBuf, words: usize) -> Result<bool> {
        if self.words.get(&role) == Some(&words) {
            return Ok(false);
        }
        self.dev.alloc(role, words, false)?;
        self.words.insert(role, words);
        Ok(true)
    }

    /// Queues the uploads of `inputs` (zeros where a block is `None`), the
    /// reset of `partials` `f64` partial sums if the launch writes any, and
    /// the launch, in that order.
    fn run(&mut self, inputs: &[Input<'_>], partials: usize, op: PairLaunch) -> Result<()> {
        for &(role, bodies, len) in inputs {
            let fresh = self.sized(role, 4 * len)?;
            match bodies {
                Some(bodies) => self.dev.write(role, 0, &vec4_words(bodies))?,
                None if !fresh => self.dev.fill(role, 0)?,
                None => {}
            }
        }
        if partials > 0 && !self.sized(PairBuf::Partials, 2 * partials)? {
            self.dev.fill(PairBuf::Partials, 0)?;
        }
        let (launch, shape) = op;
        self.dev.launch(launch, shape)
    }

    /// Waits for the launch and copies buffer `role` back into `out`.
    fn download(&mut self, role: PairBuf, out: &mut [Vec4]) -> Result<()> {
        let words = self.dev.read(role, 0, 4 * out.len())?;
        out.copy_from_slice(&words_vec4(&words));
        Ok(())
    }

    /// Waits for the launch and reads the first `count` partial sums.
    fn partial_sums(&mut self, count: usize) -> Result<Vec<f64>> {
        Ok(words_f64(&self.dev.read(
            PairBuf::Partials,
            0,
            2 * count,
        )?))
    }
}

impl<D: Device<PairBuf>> BlockPairs for PairForces<D> {
    fn kind(&self) -> BackendKind {
        self.dev.kind()
    }

    fn pull(&mut self, i: &[Vec4], j: &[Vec4], acc_i: &mut [Vec4]) -> Result<()> {
        let Some(op) = self.plan.pull(i.len() as u32, j.len() as u32) else {
            return Ok(());
        };
        let inputs = [
            (PairBuf::PosI, Some(i), i.len()),
            (PairBuf::PosJ, Some(j), j.len()),
            (PairBuf::AccI, Some(&*acc_i), acc_i.len()),
        ];
        self.run(&inputs, 0, op)?;
        self.download(PairBuf::AccI, acc_i)
    }

    fn pull_pair(
        &mut self,
        i: &[Vec4],
        j: &[Vec4],
        acc_i: &mut [Vec4],
        react_j: &mut [Vec4],
    ) -> Result<()> {
        let Some(op) = self.plan.pull_pair(i.len() as u32, j.len() as u32)? else {
            return Ok(());
        };
        let inputs = [
            (PairBuf::PosI, Some(i), i.len()),
            (PairBuf::PosJ, Some(j), j.len()),
            (PairBuf::AccI, Some(&*acc_i), acc_i.len()),
            (PairBuf::ReactJ, Some(&*react_j), react_j.len()),
        ];
        self.run(&inputs, 0, op)?;
        self.download(PairBuf::AccI, acc_i)?;
        self.download(PairBuf::ReactJ, react_j)
    }

    fn pull_within(&mut self, i: &[Vec4], acc_i: &mut [Vec4]) -> Result<()> {
        let Some(op) = self.plan.pull_within(i.len() as u32)? else {
            return Ok(());
        };
        let inputs = [
            (PairBuf::PosI, Some(i), i.len()),
            (PairBuf::AccI, Some(&*acc_i), acc_i.len()),
        ];
        self.run(&inputs, 0, op)?;
        self.download(PairBuf::AccI, acc_i)
    }

    fn potential_within(&mut self, i: &[Vec4]) -> Result<f64> {
        let n = i.len() as u32;
        let Some(op) = self.plan.potential_within(n) else {
            return Ok(0.0);
        };
        // The energy kernel's velocities: zeros (its kinetic sums are not used).
        let inputs = [
            (PairBuf::PosI, Some(i), i.len()),
            (PairBuf::AccI, None, i.len()),
        ];
        let count = self.plan.within_partials(n);
        self.run(&inputs, count, op)?;
        Ok(PairPlan::finish_within(&self.partial_sums(count)?))
    }

    fn potential_between(&mut self, i: &[Vec4], j: &[Vec4]) -> Result<f64> {
        let (ni, nj) = (i.len() as u32, j.len() as u32);
        let Some(op) = self.plan.potential_between(ni, nj) else {
            return Ok(0.0);
        };
        let inputs = [
            (PairBuf::PosI, Some(i), i.len()),
            (PairBuf::PosJ, Some(j), j.len()),
        ];
        let count = self.plan.between_partials(ni);
        self.run(&inputs, count, op)?;
        Ok(self.partial_sums(count)?.iter().sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Kernel;
    use crate::force::ForceLaw;
    use crate::integrator::Integrator;
    use gpu_kernels::entry::Entry;

    fn plan(eps: f64, block: u32) -> PairPlan {
        let force = ForceLaw::gravity(1.0, eps).unwrap();
        let params =
            Params::new(0.01, force, Kernel::Tiled { block }, Integrator::Leapfrog).unwrap();
        PairPlan::new(&params, 1.0).unwrap()
    }

    #[test]
    fn empty_blocks_launch_nothing_and_the_rest_cover_their_bodies() {
        let p = plan(0.1, 1024);
        assert!(p.pull(0, 5).is_none() && p.pull(5, 0).is_none());
        assert!(p.pull_pair(0, 5).unwrap().is_none());
        assert!(p.pull_within(1).unwrap().is_none());
        assert!(p.potential_within(0).is_none());
        assert!(p.potential_between(3, 0).is_none());
        let (l, s) = p.pull(3000, 17).unwrap();
        assert_eq!(l.entry(), Entry::BlockPull);
        assert!(s.grid * 2 * s.block >= 3000);
        let (l, s) = p.pull_pair(3000, 17).unwrap().unwrap();
        assert_eq!((l.entry(), s.block), (Entry::BlockPair, 512));
        let (l, s) = p.pull_within(3000).unwrap().unwrap();
        assert_eq!((l.entry(), s.block), (Entry::TriangleAccel, 512));
        assert_eq!(l.args().as_slice()[3], gpu_kernels::entry::Arg::F32(1.0)); // G = 1
        assert_eq!(p.within_partials(3000), 2 * 3000usize.div_ceil(1024));
        assert_eq!(p.between_partials(3000), 3000usize.div_ceil(1024));
    }

    #[test]
    fn every_launch_has_the_blocks_and_shared_memory_of_any_length() {
        for (eps, block) in [(0.0, 1024), (0.1, 64)] {
            let p = plan(eps, block);
            let every = p.every_launch().unwrap();
            let large = [
                p.pull(3000, 700),
                p.pull_pair(3000, 700).unwrap(),
                p.pull_within(3000).unwrap(),
                p.potential_within(3000),
                p.potential_between(3000, 700),
            ];
            assert_eq!(every.len(), large.len());
            for ((l, s), large) in every.iter().zip(large) {
                let (big, t) = large.unwrap();
                assert_eq!(l.entry(), big.entry());
                assert_eq!((s.block, s.shared_bytes), (t.block, t.shared_bytes));
                assert!(s.grid > 0);
            }
        }
    }

    #[test]
    fn zero_softening_launches_the_guarded_kernels() {
        let p = plan(0.0, 64);
        assert_eq!(p.pull(10, 10).unwrap().0.entry(), Entry::BlockPullGuarded);
        let pair = p.pull_pair(10, 10).unwrap().unwrap().0.entry();
        assert_eq!(pair, Entry::BlockPairGuarded);
        let within = p.pull_within(10).unwrap().unwrap().0.entry();
        assert_eq!(within, Entry::TriangleAccelGuarded);
    }

    #[test]
    fn a_rectangle_past_the_grid_limit_is_an_error() {
        let e = plan(0.1, 32).pull_pair(1 << 30, 1 << 30).unwrap_err();
        assert!(matches!(e, Error::GridTooLarge { .. }), "{e}");
    }

    #[test]
    fn only_gravity_and_sane_masses() {
        let force = ForceLaw::gravity(1.0, 0.1).unwrap();
        let params = Params::new(0.01, force, Kernel::default(), Integrator::Leapfrog).unwrap();
        assert!(PairPlan::new(&params, f32::NAN).is_err());
        assert!(PairPlan::new(&params, -1.0).is_err());
    }
}
