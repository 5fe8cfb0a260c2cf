//! The f64 oracle of the block-pair primitive (`BlockForces`) and the
//! check of every operation against it, shared by `tests/block_pair.rs`
//! (CPU, emulator) and `tests/cuda_block_pair.rs` (`Backend::Cuda`): blocks
//! of awkward sizes (0, 1, not multiples of the SIMD width or the register
//! group, shorter and longer than a GPU block), unequal random masses,
//! softening 0 and 0.1.
//!
//! # Tolerances
//! As in `tests/correctness.rs`: `u = 2^-24`; one pair term carries a
//! relative error of at most about 8u, and an `f32` sum of `m` terms, in any
//! order or tree (sequential, tiles, lanes summed across, atomics), adds at
//! most `(m - 1) u` times the sum of the magnitudes of what it adds (Higham,
//! *Accuracy and Stability*, sec. 4.2). An accumulator that starts at `A0`
//! and gains `m` terms with magnitude sum `S` is one such sum of `m + 1`
//! terms, so
//!
//! ```text
//! |a - A0 - a(oracle)| <= (m + 8) u (S + |A0|)                  (FORCE_BOUND)
//! ```
//!
//! with `S` computed here in f64. The potentials are sums of positive terms
//! `m_a m_b / d`: each term within about 8u in f32, summed in `f64` on the
//! CPU, and in `f32` tiles of at most `block` terms on the GPU kernels
//! (tile sums then in `f64`), so the relative error is at most
//! `(block + 8) u` (POTENTIAL_BOUND).

#![allow(dead_code, reason = "each test file uses part of it")]

use nbody_host::gpu_kernels::Vec4;
use nbody_host::oracle::{self, System64};
use nbody_host::{Backend, Bodies, ForceLaw, Integrator, Kernel, Params, ic};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub const U: f64 = 1.0 / (1u64 << 24) as f64;
pub const SOFTENINGS: [f64; 2] = [0.0, 0.1];

/// `(|I|, |J|)`: empty blocks, single bodies, sizes around the SIMD widths
/// (8, 16 lanes; register groups of 16 and 32) and the GPU blocks.
pub const SIZES: [(usize, usize); 11] = [
    (0, 5),
    (5, 0),
    (1, 1),
    (1, 17),
    (17, 1),
    (31, 33),
    (33, 31),
    (100, 257),
    (257, 100),
    (1000, 33),
    (3, 1000),
];

/// A Plummer sphere of `n` bodies with unequal random masses, as `Vec4`,
/// its centre moved off the origin by a random offset (so that the single
/// bodies of two one-body blocks do not coincide).
pub fn block(n: usize, seed: u64) -> Vec<Vec4> {
    let b = ic::plummer(n.max(1), seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut offset = || rng.random_range(-0.5f32..0.5);
    let (ox, oy, oz) = (offset(), offset(), offset());
    b.positions
        .iter()
        .take(n)
        .map(|p| {
            let m = rng.random_range(0.2f32..2.0) / 500.0;
            Vec4::new(p.x + ox, p.y + oy, p.z + oz, m)
        })
        .collect()
}

/// Starting accelerations (a running sum from earlier blocks).
pub fn start(n: usize, seed: u64) -> Vec<Vec4> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    (0..n)
        .map(|_| {
            let mut c = || rng.random_range(-0.1f32..0.1);
            Vec4::new(c(), c(), c(), 0.5)
        })
        .collect()
}

pub fn system(blocks: &[&[Vec4]]) -> System64 {
    let all: Vec<Vec4> = blocks.iter().flat_map(|b| b.iter().copied()).collect();
    System64::from_bodies(&Bodies {
        positions: all.iter().map(|p| glam::Vec3::new(p.x, p.y, p.z)).collect(),
        velocities: vec![glam::Vec3::ZERO; all.len()],
        masses: all.iter().map(|p| p.w).collect(),
    })
}

/// The oracle's pull of `j` on every body of `i` (`G = 1`): the
/// accelerations of `i` in the union minus those within `i` alone, and the
/// magnitude sums `S` of the cross terms.
pub fn oracle_pull(i: &[Vec4], j: &[Vec4], eps: f64) -> Vec<([f64; 3], f64)> {
    let both = system(&[i, j]);
    let alone = system(&[i]);
    let a_both = oracle::accelerations(&both.pos, &both.mass, 1.0, eps);
    let a_alone = oracle::accelerations(&alone.pos, &alone.mass, 1.0, eps);
    (0..i.len())
        .map(|k| {
            let s: f64 = (i.len()..both.pos.len())
                .map(|q| {
                    let r: f64 = (0..3)
                        .map(|c| (both.pos[q][c] - both.pos[k][c]).powi(2))
                        .sum();
                    both.mass[q] * r.sqrt() / (r + eps * eps).powf(1.5)
                })
                .sum();
            (std::array::from_fn(|c| a_both[k][c] - a_alone[k][c]), s)
        })
        .collect()
}

/// The oracle's accelerations within `i` (`G = 1`) and their magnitude sums.
pub fn oracle_within(i: &[Vec4], eps: f64) -> Vec<([f64; 3], f64)> {
    let sys = system(&[i]);
    let a = oracle::accelerations(&sys.pos, &sys.mass, 1.0, eps);
    (0..i.len())
        .map(|k| {
            let s: f64 = (0..i.len())
                .filter(|&q| q != k)
                .map(|q| {
                    let r: f64 = (0..3)
                        .map(|c| (sys.pos[q][c] - sys.pos[k][c]).powi(2))
                        .sum();
                    sys.mass[q] * r.sqrt() / (r + eps * eps).powf(1.5)
                })
                .sum();
            (a[k], s)
        })
        .collect()
}

/// Pair sum of the potential (positive, `G = 1`) from the oracle's energy.
pub fn oracle_potential(blocks: &[&[Vec4]], eps: f64) -> f64 {
    -oracle::energy(&system(blocks), 1.0, eps).potential
}

/// FORCE_BOUND for every body; returns the worst error in units of
/// `u (S + |A0|)`.
#[track_caller]
pub fn check_forces(
    what: &str,
    got: &[Vec4],
    a0: &[Vec4],
    reference: &[([f64; 3], f64)],
    terms: usize,
) -> f64 {
    assert_eq!(got.len(), reference.len(), "{what}");
    let mut worst = 0.0f64;
    for (k, (g, (r, s))) in got.iter().zip(reference).enumerate() {
        let start = [a0[k].x as f64, a0[k].y as f64, a0[k].z as f64];
        let norm0 = (start[0].powi(2) + start[1].powi(2) + start[2].powi(2)).sqrt();
        let d = [
            g.x as f64 - start[0] - r[0],
            g.y as f64 - start[1] - r[1],
            g.z as f64 - start[2] - r[2],
        ];
        let err = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let scale = U * (s + norm0);
        let bound = (terms as f64 + 8.0) * scale;
        assert!(
            err <= bound,
            "{what}: body {k}: {g:?} from {:?}, oracle adds {r:?}: error {err:e} > bound {bound:e}",
            a0[k]
        );
        assert_eq!(
            g.w.to_bits(),
            a0[k].w.to_bits(),
            "{what}: w of body {k} changed"
        );
        if scale > 0.0 {
            worst = worst.max(err / scale);
        }
    }
    worst
}

pub fn params(eps: f64, block: u32) -> Params {
    let force = ForceLaw::gravity(1.0, eps).unwrap();
    Params::new(0.01, force, Kernel::Tiled { block }, Integrator::Leapfrog).unwrap()
}

/// Every operation, on every pair of block lengths of `sizes` and both
/// softenings, against the oracle; returns the worst force error in units of
/// `u (S + |A0|)`.
pub fn check_backend(backend: Backend, block: u32, sizes: &[(usize, usize)]) -> f64 {
    let mut worst = 0.0f64;
    for &(ni, nj) in sizes {
        let (i, j) = (block_seeded(ni, 1), block_seeded(nj, 2));
        let max_mass = i.iter().chain(&j).fold(0.0f32, |m, p| m.max(p.w));
        for eps in SOFTENINGS {
            let mut f = backend.block_forces(&params(eps, block), max_mass).unwrap();
            let what = |op: &str| format!("{backend:?} block {block}: {op} {ni}x{nj}, eps {eps}");
            let on_i = oracle_pull(&i, &j, eps);

            let (a0, r0) = (start(ni, 3), start(nj, 4));
            let mut acc = a0.clone();
            f.pull(&i, &j, &mut acc).unwrap();
            worst = worst.max(check_forces(&what("pull"), &acc, &a0, &on_i, nj));

            let (mut acc, mut react) = (a0.clone(), r0.clone());
            f.pull_pair(&i, &j, &mut acc, &mut react).unwrap();
            worst = worst.max(check_forces(&what("pull_pair (I)"), &acc, &a0, &on_i, nj));
            let on_j = oracle_pull(&j, &i, eps);
            worst = worst.max(check_forces(&what("pull_pair (J)"), &react, &r0, &on_j, ni));

            let within = oracle_within(&i, eps);
            let mut acc = a0.clone();
            f.pull_within(&i, &mut acc).unwrap();
            worst = worst.max(check_forces(&what("pull_within"), &acc, &a0, &within, ni));
            // The diagonal of an all-pairs ring: the block against itself.
            let mut acc = a0.clone();
            f.pull(&i, &i, &mut acc).unwrap();
            worst = worst.max(check_forces(&what("pull (I, I)"), &acc, &a0, &within, ni));

            let tol = (block.max(16) as f64 + 8.0) * U;
            for (op, got, want) in [
                (
                    "potential_within",
                    f.potential_within(&i).unwrap(),
                    oracle_potential(&[&i], eps),
                ),
                (
                    "potential_between",
                    f.potential_between(&i, &j).unwrap(),
                    oracle_potential(&[&i, &j], eps)
                        - oracle_potential(&[&i], eps)
                        - oracle_potential(&[&j], eps),
                ),
            ] {
                assert!(
                    (got - want).abs() <= tol * want.abs() + 1e-15,
                    "{}: {got} vs oracle {want}",
                    what(op)
                );
            }
        }
    }
    worst
}

pub fn block_seeded(n: usize, seed: u64) -> Vec<Vec4> {
    block(n, 100 * seed + n as u64)
}
