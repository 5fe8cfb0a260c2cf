//! The MD tests' states (fcc lattice, random gas, velocities at a
//! temperature); the physics they are checked against is the oracle's
//! (`crate::oracle::Pair64`).

#![allow(
    clippy::needless_range_loop,
    reason = "component loops read best indexed"
)]

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::oracle::{System64, energy_kinetic};

/// `sum m v^2 / 2`.
pub(super) fn kinetic(vel: &[[f64; 3]], m: &[f64]) -> f64 {
    energy_kinetic(&System64 {
        pos: Vec::new(),
        vel: vel.to_vec(),
        mass: m.to_vec(),
    })
}

/// An fcc lattice of `c^3` unit cells (`4 c^3` bodies) at number density
/// `rho` filling the box `[0, L)^3` (LAMMPS `lattice fcc rho`), and `L`.
pub(super) fn fcc(c: usize, rho: f64) -> (Vec<[f64; 3]>, f64) {
    let a = (4.0 / rho).cbrt();
    let basis = [
        [0.0, 0.0, 0.0],
        [0.5, 0.5, 0.0],
        [0.5, 0.0, 0.5],
        [0.0, 0.5, 0.5],
    ];
    let mut out = Vec::new();
    for x in 0..c {
        for y in 0..c {
            for z in 0..c {
                for b in basis {
                    out.push([
                        (x as f64 + b[0]) * a,
                        (y as f64 + b[1]) * a,
                        (z as f64 + b[2]) * a,
                    ]);
                }
            }
        }
    }
    (out, a * c as f64)
}

/// Velocities at temperature `t` (unit masses, `3N - 3` degrees of
/// freedom) with zero total momentum.
pub(super) fn velocities(n: usize, t: f64, seed: u64) -> Vec<[f64; 3]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut v: Vec<[f64; 3]> = (0..n)
        .map(|_| std::array::from_fn(|_| rng.random_range(-1.0..1.0)))
        .collect();
    let mean: [f64; 3] = std::array::from_fn(|k| v.iter().map(|x| x[k]).sum::<f64>() / n as f64);
    v.iter_mut()
        .for_each(|x| (0..3).for_each(|k| x[k] -= mean[k]));
    let ones = vec![1.0; n];
    let now = 2.0 * kinetic(&v, &ones) / (3 * n - 3).max(1) as f64;
    let s = if now > 0.0 { (t / now).sqrt() } else { 0.0 };
    v.iter_mut()
        .for_each(|x| x.iter_mut().for_each(|c| *c *= s));
    v
}

/// `n` bodies uniform in the box, no two closer than `dmin` (a dilute gas;
/// rejection sampling).
pub(super) fn random_gas(n: usize, l: [f64; 3], dmin: f64, seed: u64) -> Vec<[f64; 3]> {
    add_gas(Vec::new(), n, l, dmin, seed)
}

/// `bodies` and uniform random ones after them up to `n`, no new one closer
/// than `dmin` to any other (minimum image). Panics if 10^6 tries do not
/// find room.
pub(super) fn add_gas(
    mut bodies: Vec<[f64; 3]>,
    n: usize,
    l: [f64; 3],
    dmin: f64,
    seed: u64,
) -> Vec<[f64; 3]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut tries = 0;
    while bodies.len() < n {
        tries += 1;
        assert!(
            tries < 1_000_000,
            "no room for {n} bodies {dmin} apart in {l:?}"
        );
        let p: [f64; 3] = std::array::from_fn(|k| rng.random_range(0.0..l[k]));
        let far = bodies.iter().all(|q| {
            let d: [f64; 3] = std::array::from_fn(|k| {
                let d = q[k] - p[k];
                d - l[k] * (d / l[k]).round()
            });
            d[0] * d[0] + d[1] * d[1] + d[2] * d[2] >= dmin * dmin
        });
        if far {
            bodies.push(p);
        }
    }
    bodies
}
