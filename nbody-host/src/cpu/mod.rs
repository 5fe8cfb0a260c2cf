//! The CPU backend: multithreaded (rayon) and vectorised (AVX-512 or
//! AVX2 + FMA, chosen at run time), same physics as the kernels.
//!
//! | file | what |
//! | --- | --- |
//! | `mod.rs` | [`CpuEngine`], [`CpuTuning`], [`Isa`] and the dispatch |
//! | `simd.rs` | safe vector types implementing [`Real`](gpu_kernels::interaction::Real) |
//! | `kernels.rs` | the force loops, generic over the vector type |
//!
//! The kernels [`Kernel::Simt`] and [`Kernel::Tiled`] both run the all-pairs
//! loop (i-bodies in SIMD lanes, j-bodies broadcast, several i-vectors per
//! broadcast, j in cache tiles); [`Kernel::Triangle`] uses Newton's third law,
//! each pair once, on a round-robin schedule of block tiles. Both are
//! deterministic: the same input gives bit-identical output on every run,
//! whatever the thread timing (and the thread count).
//!
//! # Accuracy
//! Measured against the `f64` [`oracle`](crate::oracle) by `tests/cpu_simd.rs`
//! (unequal random masses, uniform cube, `eps` in {0, 0.1}, every kernel and
//! every instruction set, N up to 2048): the largest relative error
//! `|a - a_ref| / max(|a_ref|, mean |a_ref|)` was 2.9e-6 (AVX2 + FMA; the test
//! allows 1e-5). The vector `rsqrt` is the hardware estimate plus one
//! Newton–Raphson step (a few 1e-7 relative); the rest is f32 summation.

mod kernels;
mod simd;

use glam::Vec3;
use gpu_kernels::Vec4;
use gpu_kernels::interaction::{PointMass, potential};
use rayon::prelude::*;

use crate::backend::{Divergence, Engine, EngineOptions};
use crate::config::{BackendKind, Integrator, Kernel, Params};
use crate::error::{Error, Result};
use crate::state::{Bodies, Energy};
use kernels::{AccBlock, KernelSet, Soa};

/// The instruction set of the CPU backend's force loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// AVX-512F: 16 bodies per vector (x86-64).
    Avx512,
    /// AVX2 with FMA: 8 bodies per vector (x86-64).
    Avx2Fma,
    /// NEON (Advanced SIMD): 4 bodies per vector (aarch64, where it is part
    /// of the base architecture).
    Neon,
    /// Plain `f32`, one body at a time: every CPU.
    Scalar,
}

impl Isa {
    /// Every instruction set, best first.
    pub const ALL: [Isa; 4] = [Isa::Avx512, Isa::Avx2Fma, Isa::Neon, Isa::Scalar];

    /// The best instruction set this CPU supports.
    pub fn detect() -> Isa {
        Isa::ALL
            .into_iter()
            .find(|isa| isa.is_available())
            .unwrap_or(Isa::Scalar)
    }

    /// The instruction sets this CPU supports, best first ([`Isa::Scalar`]
    /// always, last).
    pub fn available() -> Vec<Isa> {
        Isa::ALL
            .into_iter()
            .filter(|isa| isa.is_available())
            .collect()
    }

    /// Whether this CPU supports it (detected at run time).
    pub fn is_available(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx512 | Isa::Avx2Fma => false,
            Isa::Neon => cfg!(target_arch = "aarch64"),
        }
    }

    /// `"avx512"`, `"avx2+fma"`, `"neon"` or `"scalar"` (what [`BackendKind::Cpu`] reports).
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2Fma => "avx2+fma",
            Isa::Neon => "neon",
            Isa::Scalar => "scalar",
        }
    }

    /// Parses a [`name`](Isa::name); `"avx2"` is accepted for [`Isa::Avx2Fma`].
    pub fn from_name(name: &str) -> Option<Isa> {
        match name {
            "avx512" => Some(Isa::Avx512),
            "avx2+fma" | "avx2" => Some(Isa::Avx2Fma),
            "neon" => Some(Isa::Neon),
            "scalar" => Some(Isa::Scalar),
            _ => None,
        }
    }

    /// Bodies per vector: 16, 8, 4 or 1.
    pub fn lanes(self) -> usize {
        match self {
            Isa::Avx512 => 16,
            Isa::Avx2Fma => 8,
            Isa::Neon => 4,
            Isa::Scalar => 1,
        }
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Instruction set and blocking of the CPU backend.
///
/// ```
/// use nbody_host::{Backend, CpuTuning, Isa, Simulation, ic};
///
/// let tuning = CpuTuning { isa: Some(Isa::Scalar), ..CpuTuning::default() };
/// let sim = Simulation::builder(ic::plummer(64, 1))
///     .backend(Backend::Cpu)
///     .cpu_tuning(tuning)
///     .build()?;
/// assert!(sim.backend().to_string().starts_with("cpu (scalar, "));
/// # Ok::<(), nbody_host::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTuning {
    /// The instruction set; `None` (the default) picks [`Isa::detect`]. One
    /// this CPU lacks makes [`build`](crate::SimulationBuilder::build) fail
    /// with [`Error::Unsupported`].
    pub isa: Option<Isa>,
    /// Bodies per rayon task in the all-pairs loop, and the tile edge of the
    /// Newton's-third-law schedule, in whole register groups (32 bodies with
    /// AVX-512; 16, and 8 for the triangle, with AVX2), the triangle's blocks
    /// made equal up to one group. At least 1; default 2048. Capped so that
    /// every rayon thread gets at least two all-pairs tasks, and a triangle
    /// tile in each round.
    pub i_block: usize,
    /// j-bodies per cache tile of the all-pairs loop (16 bytes each). At
    /// least 1; default 2048 (32 KiB, an L1 data cache).
    pub j_tile: usize,
    /// From this many bodies on, [`Kernel::Simt`] and [`Kernel::Tiled`] also
    /// run the Newton's-third-law loop (each pair once), which is then the
    /// faster one: same physics, sums in a different (but still fixed)
    /// order. [`Kernel::Triangle`] always runs it. `usize::MAX` keeps Simt
    /// and Tiled on the all-pairs loop, whose sum for each body runs over
    /// `j = 0..N` in order whatever the blocking. Default 1024 (from there on
    /// the third-law loop is 1.2x faster or more with AVX-512 and with AVX2
    /// on the machine of `docs/performance.md`; at 512 they tie).
    pub third_law_min_n: usize,
}

impl Default for CpuTuning {
    fn default() -> Self {
        CpuTuning {
            isa: None,
            i_block: 2048,
            j_tile: 2048,
            third_law_min_n: 1024,
        }
    }
}

/// The CPU engine.
pub struct CpuEngine {
    pos: Vec<Vec4>,
    vel: Vec<Vec4>,
    acc: Vec<Vec4>,
    params: Params,
    isa: Isa,
    kernels: KernelSet,
    /// Bodies per all-pairs task, a multiple of `kernels.all_pairs_group`.
    all_pairs_block: usize,
    /// Where the blocks of the Newton's-third-law schedule start, then the
    /// padded length: equal blocks up to one `kernels.tri_group`.
    tri_bounds: Vec<usize>,
    j_tile: usize,
    /// Whether the forces come from the Newton's-third-law loop
    /// ([`Kernel::Triangle`], or `N >= CpuTuning::third_law_min_n`).
    third_law: bool,
    soa: Soa,
    ax: Vec<f32>,
    ay: Vec<f32>,
    az: Vec<f32>,
}

/// A unit of work of one round of the Newton's-third-law schedule.
enum TriTask<'a> {
    /// The pairs within block `.0`.
    Diag(usize, AccBlock<'a>),
    /// The pairs between blocks `.0 < .2`, once each.
    Pair(usize, AccBlock<'a>, usize, AccBlock<'a>),
}

/// Round `r < nb` of a round-robin tournament of `nb` blocks (`nb` rounds): pairs
/// `(a, b)`, `a < b`, and diagonal blocks, no block twice. Over the rounds
/// every pair and every diagonal block occurs exactly once.
///
/// Odd `nb`: the circle method, pairs `{a, b}` with `a + b = 2 r mod nb` and
/// the one block left over takes its diagonal. Even `nb`: the circle method
/// on the first `nb - 1` blocks, with the left-over block paired with the
/// last one, so each of the `nb - 1` rounds has `nb / 2` equal tiles (which
/// split evenly over an even thread count), then one round of all the
/// diagonals.
fn round(nb: usize, r: usize) -> (Vec<(usize, usize)>, Vec<usize>) {
    debug_assert!(r < nb);
    let even = nb.is_multiple_of(2);
    if even && r == nb - 1 {
        return (Vec::new(), (0..nb).collect());
    }
    let t = if even { nb - 1 } else { nb };
    let mut pairs: Vec<(usize, usize)> = (1..=(t - 1) / 2)
        .map(|k| {
            let (a, b) = ((r + k) % t, (r + t - k) % t);
            (a.min(b), a.max(b))
        })
        .collect();
    if even {
        pairs.push((r, nb - 1));
        (pairs, Vec::new())
    } else {
        (pairs, vec![r])
    }
}

/// `v` cut at `bounds` (ascending, from 0 to `v.len()`).
fn split_blocks<'a>(mut v: &'a mut [f32], bounds: &[usize]) -> Vec<&'a mut [f32]> {
    bounds
        .windows(2)
        .map(|w| {
            let (block, rest) = std::mem::take(&mut v).split_at_mut(w[1] - w[0]);
            v = rest;
            block
        })
        .collect()
}

/// The block boundaries of the Newton's-third-law schedule for `n` bodies:
/// about `n / i_block` blocks but at least `min_blocks` (even where there
/// are several, so that the rounds of [`round`] are full), whole `group`s
/// each, as equal as whole groups allow; the last boundary is the padded
/// length.
fn triangle_blocks(n: usize, i_block: usize, min_blocks: usize, group: usize) -> Vec<usize> {
    let groups = n.div_ceil(group).max(1);
    let mut nb = n.div_ceil(i_block.max(1)).max(min_blocks).clamp(1, groups);
    if nb > 1 && nb % 2 == 1 && nb < groups {
        nb += 1;
    }
    let (each, extra) = (groups / nb, groups % nb);
    let mut bounds = Vec::with_capacity(nb + 1);
    let mut at = 0;
    bounds.push(at);
    for k in 0..nb {
        at += (each + usize::from(k < extra)) * group;
        bounds.push(at);
    }
    bounds
}

/// Bodies per parallel task of the kick and the drift.
const AXPY_CHUNK: usize = 2048;

fn round_up(n: usize, k: usize) -> usize {
    n.div_ceil(k) * k
}

impl CpuEngine {
    /// Copies the bodies in and picks the instruction set; for leapfrog,
    /// computes the initial accelerations.
    ///
    /// Fails with [`Error::Unsupported`] if [`CpuTuning::isa`] names an
    /// instruction set this CPU lacks, or a block size is 0.
    pub fn new(bodies: &Bodies, params: &Params, options: &EngineOptions) -> Result<CpuEngine> {
        let tuning = options.cpu_tuning;
        if tuning.i_block == 0 || tuning.j_tile == 0 {
            return Err(Error::Unsupported(format!(
                "CPU tuning: i_block = {} and j_tile = {} must both be at least 1",
                tuning.i_block, tuning.j_tile
            )));
        }
        let isa = tuning.isa.unwrap_or_else(Isa::detect);
        let (pos, vel) = bodies.to_device_layout();
        let kernels = KernelSet::new(isa, needs_guard(&pos, params.eps2())).ok_or_else(|| {
            Error::Unsupported(format!(
                "CPU instruction set {isa} is not available on this CPU (available: {})",
                Isa::available()
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let n = pos.len();
        // At least two tasks per thread (and, for the triangle, one tile per
        // thread in each round), however large `i_block`.
        let threads = rayon::current_num_threads();
        let all_pairs_block = round_up(
            tuning.i_block.min(n.div_ceil(2 * threads)).max(1),
            kernels.all_pairs_group,
        );
        let tri_bounds = triangle_blocks(n, tuning.i_block, 2 * threads, kernels.tri_group);
        let mut engine = CpuEngine {
            pos,
            vel,
            acc: vec![Vec4::ZERO; n],
            params: *params,
            isa,
            kernels,
            all_pairs_block,
            tri_bounds,
            j_tile: tuning.j_tile,
            third_law: matches!(params.kernel, Kernel::Triangle { .. })
                || n >= tuning.third_law_min_n,
            soa: Soa::default(),
            ax: Vec::new(),
            ay: Vec::new(),
            az: Vec::new(),
        };
        if params.integrator == Integrator::Leapfrog {
            engine.compute_accelerations();
        }
        Ok(engine)
    }

    fn compute_accelerations(&mut self) {
        let n = self.pos.len();
        let triangle = self.third_law;
        let padded = if triangle {
            *self.tri_bounds.last().expect("at least one bound")
        } else {
            round_up(n, self.kernels.all_pairs_group)
        };
        self.soa.fill(&self.pos, padded);
        for a in [&mut self.ax, &mut self.ay, &mut self.az] {
            a.clear();
            a.resize(padded, 0.0);
        }
        if triangle {
            self.triangle();
        } else {
            self.all_pairs();
        }
        let g = self.params.g;
        for (i, a) in self.acc.iter_mut().enumerate() {
            *a = Vec4::new(self.ax[i] * g, self.ay[i] * g, self.az[i] * g, 0.0);
        }
    }

    /// All pairs: one rayon task per block of `all_pairs_block` i-bodies.
    fn all_pairs(&mut self) {
        let (b, eps2, j_tile) = (self.all_pairs_block, self.params.eps2(), self.j_tile);
        let (soa, n, kernels) = (&self.soa, self.pos.len(), &self.kernels);
        self.ax
            .par_chunks_mut(b)
            .zip(self.ay.par_chunks_mut(b))
            .zip(self.az.par_chunks_mut(b))
            .enumerate()
            .for_each(|(k, ((x, y), z))| {
                let mut acc = AccBlock { x, y, z };
                kernels.all_pairs(soa, 0..n, k * b, &mut acc, eps2, j_tile);
            });
    }

    /// Newton's third law: the tiles of the blocks of `tri_bounds`, round by
    /// round; the tiles of a round touch disjoint blocks and run in parallel.
    fn triangle(&mut self) {
        let eps2 = self.params.eps2();
        let (soa, pos, kernels, bounds) = (
            &self.soa,
            &self.pos[..],
            &self.kernels,
            &self.tri_bounds[..],
        );
        let n = pos.len();
        let nb = bounds.len() - 1;
        for r in 0..nb {
            let mut blocks: Vec<Option<AccBlock<'_>>> = split_blocks(&mut self.ax, bounds)
                .into_iter()
                .zip(split_blocks(&mut self.ay, bounds))
                .zip(split_blocks(&mut self.az, bounds))
                .map(|((x, y), z)| Some(AccBlock { x, y, z }))
                .collect();
            let (pairs, diags) = round(nb, r);
            let mut tasks: Vec<TriTask<'_>> = Vec::with_capacity(pairs.len() + diags.len());
            for d in diags {
                tasks.extend(blocks[d].take().map(|acc| TriTask::Diag(d, acc)));
            }
            for (i, j) in pairs {
                if let (Some(acc_i), Some(acc_j)) = (blocks[i].take(), blocks[j].take()) {
                    tasks.push(TriTask::Pair(i, acc_i, j, acc_j));
                }
            }
            tasks.into_par_iter().for_each(|task| match task {
                TriTask::Diag(d, mut acc) => {
                    let i0 = bounds[d];
                    kernels.tri_diag(soa, i0, &mut acc, n.saturating_sub(i0), eps2);
                }
                TriTask::Pair(i, mut acc_i, j, mut acc_j) => {
                    kernels.tri_pair(soa, bounds[i], &mut acc_i, bounds[j], &mut acc_j, eps2);
                }
            });
        }
    }

    /// [`Engine::step`], called on a rayon worker thread.
    fn step_on_pool(&mut self, steps: u64) -> Result<Option<Divergence>> {
        let dt = self.params.dt;
        for s in 1..=steps {
            let bad = match self.params.integrator {
                Integrator::SemiImplicitEuler => {
                    self.compute_accelerations();
                    self.kick(dt);
                    self.drift(dt)
                }
                Integrator::Leapfrog => {
                    self.kick(0.5 * dt);
                    let bad = self.drift(dt);
                    self.compute_accelerations();
                    self.kick(0.5 * dt);
                    bad
                }
            };
            if let Some(body) = bad {
                return Ok(Some(Divergence {
                    after_step: s,
                    body,
                    steps_run: s,
                }));
            }
        }
        Ok(None)
    }

    /// `v += a dt` for every body.
    fn kick(&mut self, dt: f32) {
        let kernels = &self.kernels;
        self.vel
            .par_chunks_mut(AXPY_CHUNK)
            .zip(self.acc.par_chunks(AXPY_CHUNK))
            .for_each(|(v, a)| kernels.axpy(v, a, dt));
    }

    /// `x += v dt`; returns the first body that is not finite afterwards.
    fn drift(&mut self, dt: f32) -> Option<usize> {
        let kernels = &self.kernels;
        self.pos
            .par_chunks_mut(AXPY_CHUNK)
            .zip(self.vel.par_chunks(AXPY_CHUNK))
            .for_each(|(p, v)| kernels.axpy(p, v, dt));
        self.pos.iter().zip(&self.vel).position(|(p, v)| {
            !(p.x.is_finite()
                && p.y.is_finite()
                && p.z.is_finite()
                && v.x.is_finite()
                && v.y.is_finite()
                && v.z.is_finite())
        })
    }
}

impl Engine for CpuEngine {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu {
            isa: self.isa.name(),
            threads: rayon::current_num_threads(),
        }
    }

    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        // On a pool thread: the rounds' parallel loops then start from a
        // worker instead of being injected from outside (and the caller
        // woken) once per round.
        rayon::scope(|_| self.step_on_pool(steps))
    }

    fn read_state(&mut self) -> Result<Bodies> {
        Ok(Bodies::from_device_layout(&self.pos, &self.vel))
    }

    fn energy(&mut self) -> Result<Energy> {
        let eps2 = self.params.eps2();
        let pos = &self.pos;
        let (kinetic, pair_sum) = pos
            .par_iter()
            .zip(&self.vel)
            .enumerate()
            .map(|(i, (p, v))| {
                let kinetic = 0.5
                    * p.w as f64
                    * ((v.x as f64).powi(2) + (v.y as f64).powi(2) + (v.z as f64).powi(2));
                let pi = PointMass::from(*p);
                let phi: f64 = pos
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, &pj)| potential(&pi, &PointMass::from(pj), eps2) as f64)
                    .sum();
                (kinetic, p.w as f64 * phi)
            })
            .reduce(|| (0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
        Ok(Energy {
            kinetic,
            potential: -0.5 * self.params.g as f64 * pair_sum,
        })
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        self.compute_accelerations();
        Ok(self.acc.iter().map(|a| Vec3::new(a.x, a.y, a.z)).collect())
    }
}

/// Whether the force loops need the guarded interaction: always at `eps = 0`
/// (the self pair, coincident bodies); otherwise only if `m / d^3` could
/// overflow f32 for the heaviest body at the softening length, which the
/// unguarded forms would turn into NaN for massless (padding) bodies.
fn needs_guard(pos: &[Vec4], eps2: f32) -> bool {
    let max_m = pos.iter().fold(0.0f32, |m, p| m.max(p.w)) as f64;
    let eps2 = eps2 as f64;
    if eps2 < f32::MIN_POSITIVE as f64 {
        return true;
    }
    // 1 / d^3 at d = eps, with room for the rsqrt's error and rounding.
    let inv3 = 1.01 * eps2.powf(-1.5);
    !(inv3 < f32::MAX as f64 && max_m * inv3 < f32::MAX as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_round_robin_covers_every_pair_once() {
        for nb in 1..=12 {
            let mut seen = vec![vec![0u32; nb]; nb];
            let mut byes = vec![0u32; nb];
            for r in 0..nb {
                let (pairs, diags) = round(nb, r);
                let mut busy = vec![false; nb];
                for &(a, b) in &pairs {
                    assert!(a < b && b < nb, "nb {nb} round {r}: ({a}, {b})");
                    assert!(!busy[a] && !busy[b], "nb {nb} round {r}: block twice");
                    busy[a] = true;
                    busy[b] = true;
                    seen[a][b] += 1;
                }
                for d in diags {
                    assert!(!busy[d], "nb {nb} round {r}: diagonal block {d} also busy");
                    busy[d] = true;
                    byes[d] += 1;
                }
                if nb % 2 == 0 && !pairs.is_empty() {
                    assert_eq!(pairs.len(), nb / 2, "nb {nb} round {r}: a block idles");
                }
            }
            assert!(byes.iter().all(|&b| b == 1), "nb {nb}: diagonals {byes:?}");
            for (a, row) in seen.iter().enumerate() {
                for (b, &count) in row.iter().enumerate().skip(a + 1) {
                    assert_eq!(count, 1, "nb {nb}: pair ({a}, {b})");
                }
            }
        }
    }

    #[test]
    fn triangle_blocks_are_whole_groups_nearly_equal_and_even_in_number() {
        for n in [1, 2, 17, 100, 1000, 4096, 16384, 100_003] {
            for (i_block, min_blocks, group) in
                [(1024, 4, 32), (512, 2, 48), (1, 1, 8), (1 << 20, 8, 16)]
            {
                let b = triangle_blocks(n, i_block, min_blocks, group);
                let sizes: Vec<usize> = b.windows(2).map(|w| w[1] - w[0]).collect();
                let what =
                    format!("n {n} i_block {i_block} min {min_blocks} group {group}: {sizes:?}");
                assert_eq!(b[0], 0, "{what}");
                assert_eq!(*b.last().unwrap(), n.div_ceil(group) * group, "{what}");
                assert!(sizes.iter().all(|&s| s > 0 && s % group == 0), "{what}");
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(hi - lo <= group, "{what}");
                let nb = sizes.len();
                let groups = n.div_ceil(group);
                assert!(nb == 1 || nb.is_multiple_of(2) || nb == groups, "{what}");
                assert!(nb >= min_blocks.min(groups), "{what}");
                assert!(nb >= n.div_ceil(i_block).min(groups), "{what}");
            }
        }
    }

    #[test]
    fn the_guard_is_dropped_only_when_every_factor_is_finite() {
        let pos = [Vec4::new(0.0, 0.0, 0.0, 1.0), Vec4::new(1.0, 0.0, 0.0, 0.0)];
        assert!(needs_guard(&pos, 0.0));
        assert!(needs_guard(&pos, 1e-40));
        assert!(!needs_guard(&pos, 0.01));
        // m / eps^3 = 1e30 / 1e-12 overflows f32.
        let heavy = [Vec4::new(0.0, 0.0, 0.0, 1e30)];
        assert!(needs_guard(&heavy, 1e-8));
        assert!(!needs_guard(&heavy, 1.0));
    }
}
