//! [`CpuBlockForces`]: the block-pair primitive on the SIMD loops.
//!
//! Both blocks go into one structure of arrays, `I` then `J`, each padded to
//! whole register groups; then
//! - `pull`: the all-pairs loop over `J`'s real bodies for every i-group of
//!   `I` (rayon tasks of `i_block` bodies), continuing the running sums in
//!   the accelerations;
//! - `pull_pair`: the third-law tile `tri_pair` on a rectangle: `I` and `J`
//!   each cut into `k` blocks, and in round `r` the tiles `(a, (a + r) mod k)`,
//!   in which no block occurs twice, run in parallel;
//! - `pull_within`: the third-law schedule of the CPU engine on `I` alone;
//! - the potentials: the pair potential loop on `I`, and its cross form.
//!
//! Block decompositions depend on the sizes and the tuning only, never on the
//! thread count: the same calls give the same bits on any number of threads.

use gpu_kernels::Vec4;
use rayon::prelude::*;

use super::CpuTuning;
use super::engine::{all_pairs_parallel, all_pairs_task, force_loops, pair_potential, round_up};
use super::loops::{AccBlock, ForceLoops, PAD_POSITION, Soa};
use super::schedule::{self, MIN_BLOCKS, split_blocks};
use crate::block_pair::{BlockPairs, gravity_of, needs_guard};
use crate::config::Params;
use crate::engine::BackendKind;
use crate::error::Result;

/// Vectors of i-bodies per parallel task of the cross potential (a fixed
/// cut: the sum's order does not depend on the thread count).
const POTENTIAL_CHUNK_VECTORS: usize = 16;

/// The block-pair primitive of the CPU backend.
pub(crate) struct CpuBlockForces {
    loops: ForceLoops,
    tuning: CpuTuning,
    eps2: f32,
    /// Both blocks, each padded (reused between calls).
    soa: Soa,
    /// `I`, padding, `J`, padding, before the copy into `soa`.
    staging: Vec<Vec4>,
}

/// The accelerations of a block as a structure of arrays (padded).
#[derive(Default)]
struct Acc3 {
    x: Vec<f32>,
    y: Vec<f32>,
    z: Vec<f32>,
}

impl Acc3 {
    /// `acc`'s components, padded with zeros to `padded`.
    fn from(acc: &[Vec4], padded: usize) -> Acc3 {
        let comp = |f: fn(&Vec4) -> f32| {
            let mut v: Vec<f32> = acc.iter().map(f).collect();
            v.resize(padded, 0.0);
            v
        };
        Acc3 {
            x: comp(|a| a.x),
            y: comp(|a| a.y),
            z: comp(|a| a.z),
        }
    }

    /// Writes the sums back into `acc` (its `w` kept).
    fn store(&self, acc: &mut [Vec4]) {
        for (k, a) in acc.iter_mut().enumerate() {
            (a.x, a.y, a.z) = (self.x[k], self.y[k], self.z[k]);
        }
    }
}

/// `k` as equal as whole `group`s allow, over `groups` groups; some blocks
/// are empty when `k > groups`. Boundaries in bodies, from `offset`.
fn even_bounds(groups: usize, k: usize, group: usize, offset: usize) -> Vec<usize> {
    let (each, extra) = (groups / k, groups % k);
    let mut bounds = vec![offset];
    for b in 0..k {
        let last = *bounds.last().expect("starts with the offset");
        bounds.push(last + (each + usize::from(b < extra)) * group);
    }
    bounds
}

impl CpuBlockForces {
    /// The loops of `tuning`'s instruction set, guarded if the run's
    /// heaviest body `max_mass` (or zero softening) needs it.
    pub(crate) fn new(params: &Params, tuning: CpuTuning, max_mass: f32) -> Result<CpuBlockForces> {
        let eps2 = gravity_of(params)?.eps2();
        let loops = force_loops(&tuning, needs_guard(params, max_mass)?)?;
        Ok(CpuBlockForces {
            loops,
            tuning,
            eps2,
            soa: Soa::default(),
            staging: Vec::new(),
        })
    }

    /// Fills the structure of arrays with `blocks`, each padded to a whole
    /// number of `group`s; returns where each starts.
    fn stage(&mut self, blocks: &[&[Vec4]], group: usize) -> Vec<usize> {
        let pad = Vec4::new(PAD_POSITION, PAD_POSITION, PAD_POSITION, 0.0);
        self.staging.clear();
        let mut starts = Vec::with_capacity(blocks.len());
        for b in blocks {
            starts.push(self.staging.len());
            self.staging.extend_from_slice(b);
            self.staging
                .resize(starts[starts.len() - 1] + round_up(b.len(), group), pad);
        }
        self.soa.fill(&self.staging, self.staging.len());
        starts
    }
}

/// The blocks arrive checked (`block_pair::Checked`): equal lengths, none
/// empty.
impl BlockPairs for CpuBlockForces {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu {
            isa: self.loops.isa(),
            threads: rayon::current_num_threads(),
        }
    }

    fn pull(&mut self, i: &[Vec4], j: &[Vec4], acc_i: &mut [Vec4]) -> Result<()> {
        let group = self.loops.all_pairs_group;
        let starts = self.stage(&[i, j], group);
        let padded = starts[1];
        let mut acc = Acc3::from(acc_i, padded);
        all_pairs_parallel(
            &self.loops,
            &self.soa,
            starts[1]..starts[1] + j.len(),
            all_pairs_task(self.tuning.i_block, i.len(), group),
            [&mut acc.x, &mut acc.y, &mut acc.z],
            self.eps2,
            self.tuning.j_tile,
        );
        acc.store(acc_i);
        Ok(())
    }

    fn pull_pair(
        &mut self,
        i: &[Vec4],
        j: &[Vec4],
        acc_i: &mut [Vec4],
        react_j: &mut [Vec4],
    ) -> Result<()> {
        let group = self.loops.tri_group;
        let starts = self.stage(&[i, j], group);
        let (pad_i, pad_j) = (starts[1], self.staging.len() - starts[1]);
        let (mut ai, mut rj) = (Acc3::from(acc_i, pad_i), Acc3::from(react_j, pad_j));
        let (gi, gj) = (pad_i / group, pad_j / group);
        let k = i
            .len()
            .max(j.len())
            .div_ceil(self.tuning.i_block)
            .max(MIN_BLOCKS)
            .min(gi.max(gj));
        let (bi, bj) = (
            even_bounds(gi, k, group, 0),
            even_bounds(gj, k, group, starts[1]),
        );
        let local_j: Vec<usize> = bj.iter().map(|b| b - starts[1]).collect();
        let (soa, loops, eps2) = (&self.soa, &self.loops, self.eps2);
        for r in 0..k {
            let mut ib: Vec<Option<AccBlock<'_>>> = split3(&mut ai, &bi);
            let mut jb: Vec<Option<AccBlock<'_>>> = split3(&mut rj, &local_j);
            let tiles: Vec<(usize, AccBlock<'_>, usize, AccBlock<'_>)> = (0..k)
                .filter_map(|a| {
                    let b = (a + r) % k;
                    let (x, y) = (ib[a].take()?, jb[b].take()?);
                    (!x.x.is_empty() && !y.x.is_empty()).then_some((bi[a], x, bj[b], y))
                })
                .collect();
            tiles.into_par_iter().for_each(|(i0, mut x, j0, mut y)| {
                loops.tri_pair(soa, i0, &mut x, j0, &mut y, eps2);
            });
        }
        ai.store(acc_i);
        rj.store(react_j);
        Ok(())
    }

    fn pull_within(&mut self, i: &[Vec4], acc_i: &mut [Vec4]) -> Result<()> {
        let bounds = schedule::triangle_blocks(
            i.len(),
            self.tuning.i_block,
            MIN_BLOCKS,
            self.loops.tri_group,
        );
        let padded = *bounds.last().expect("at least one bound");
        self.stage(&[i], padded);
        let mut acc = Acc3::from(acc_i, padded);
        schedule::third_law(
            &self.loops,
            &self.soa,
            &bounds,
            i.len(),
            &mut acc.x,
            &mut acc.y,
            &mut acc.z,
            self.eps2,
        );
        acc.store(acc_i);
        Ok(())
    }

    fn potential_within(&mut self, i: &[Vec4]) -> Result<f64> {
        self.stage(&[i], self.loops.lanes);
        Ok(pair_potential(&self.loops, &self.soa, i.len(), self.eps2))
    }

    fn potential_between(&mut self, i: &[Vec4], j: &[Vec4]) -> Result<f64> {
        let lanes = self.loops.lanes;
        let starts = self.stage(&[i, j], lanes);
        let js = starts[1]..starts[1] + j.len();
        let chunk = POTENTIAL_CHUNK_VECTORS * lanes;
        let (soa, loops, eps2) = (&self.soa, &self.loops, self.eps2);
        let parts: Vec<f64> = (0..starts[1].div_ceil(chunk))
            .into_par_iter()
            .map(|c| {
                let i0 = c * chunk;
                let len = chunk.min(starts[1] - i0);
                loops.potential_cross(soa, i0, len, js.clone(), eps2)
            })
            .collect();
        Ok(parts.iter().sum())
    }
}

/// The blocks of `acc` cut at `bounds` (from 0), each as an [`AccBlock`].
fn split3<'a>(acc: &'a mut Acc3, bounds: &[usize]) -> Vec<Option<AccBlock<'a>>> {
    split_blocks(&mut acc.x, bounds)
        .into_iter()
        .zip(split_blocks(&mut acc.y, bounds))
        .zip(split_blocks(&mut acc.z, bounds))
        .map(|((x, y), z)| Some(AccBlock { x, y, z }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_bounds_cover_every_group_once() {
        for (groups, k, group, offset) in
            [(1, 4, 16, 0), (7, 4, 8, 32), (12, 3, 32, 5), (0, 2, 8, 0)]
        {
            let b = even_bounds(groups, k, group, offset);
            assert_eq!(b.len(), k + 1);
            assert_eq!((b[0], b[k]), (offset, offset + groups * group));
            let sizes: Vec<usize> = b.windows(2).map(|w| w[1] - w[0]).collect();
            assert!(sizes.iter().all(|s| s % group == 0));
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= group);
        }
    }
}
