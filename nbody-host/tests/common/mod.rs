//! Helpers shared by the integration tests (each test file is its own
//! crate: `mod common;` includes this file, and uses some of it).
#![allow(dead_code, reason = "each test binary uses its own subset")]

use glam::Vec3;
use nbody_host::oracle::{Pair64, System64};
use nbody_host::{Backend, Bodies, Integrator, Simulation};

/// `f32` unit roundoff.
pub const U: f64 = 1.0 / (1u64 << 24) as f64;

/// Every bit of the bodies: positions, velocities, then masses, for
/// comparisons that must be exact.
pub fn bits(b: &Bodies) -> Vec<u32> {
    b.positions
        .iter()
        .chain(&b.velocities)
        .flat_map(|v| v.to_array())
        .chain(b.masses.iter().copied())
        .map(f32::to_bits)
        .collect()
}

/// A leapfrog run on the CPU backend: `dt = 0.01`, softening 0.05.
pub fn leapfrog_cpu(bodies: Bodies) -> Simulation {
    Simulation::builder(bodies)
        .dt(0.01)
        .softening(0.05)
        .integrator(Integrator::Leapfrog)
        .backend(Backend::cpu())
        .build()
        .unwrap()
}

/// `S_i`: the sum of the magnitudes of body `i`'s pair terms
/// `G m_j |r_ij| / (|r_ij|^2 + eps^2)^(3/2)`, in `f64`: the scale of the
/// acceleration bounds (`tests/correctness.rs`, "Tolerances").
pub fn magnitude_sums(sys: &System64, g: f64, eps: f64) -> Vec<f64> {
    let n = sys.pos.len();
    (0..n)
        .map(|i| {
            (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    let r: f64 = (0..3)
                        .map(|k| (sys.pos[j][k] - sys.pos[i][k]).powi(2))
                        .sum();
                    g * sys.mass[j] * r.sqrt() / (r + eps * eps).powf(1.5)
                })
                .sum()
        })
        .collect()
}

/// `|a - b|`.
pub fn distance(a: Vec3, b: [f64; 3]) -> f64 {
    let d = [a.x as f64 - b[0], a.y as f64 - b[1], a.z as f64 - b[2]];
    norm(d)
}

/// `|v|`.
pub fn norm(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// The bounds on the velocity and position errors of a body after `k`
/// steps of `dt` whose accelerations are each within `acc_err`, from
/// (oracle) velocity `v` and position `x` (`tests/correctness.rs`,
/// "Tolerances"): `k dt acc_err` plus one FMA rounding per step for the
/// velocity, `k^2 dt^2 acc_err` plus the roundings for the position.
pub fn step_bounds(k: f64, dt: f64, acc_err: f64, x: [f64; 3], v: [f64; 3]) -> (f64, f64) {
    let v_bound = k * dt * acc_err + 2.0 * k * U * norm(v);
    let x_bound = k * k * dt * dt * acc_err + 2.0 * k * U * (norm(x) + dt * norm(v));
    (v_bound, x_bound)
}

/// Everything but the separation's rounding in a pair force's `f32`
/// evaluation, relative to each term's magnitude: the reciprocal and its
/// Newton step, about ten `f32` products and differences, and the sum of at
/// most 128 terms of a list, `4 * 2^-21 + (10 + 128) 2^-24 < 1e-5`, doubled
/// (`tests/md_oracle.rs` derives it).
pub const ARITHMETIC: f64 = 2e-5;

/// Per-body acceleration bounds and the potential and virial bounds of a
/// short-range state against the oracle (`tests/md_oracle.rs` derives them).
pub struct PairBounds {
    /// Per body, the bound on `|a - a_oracle|`.
    pub acc: Vec<f64>,
    /// On the potential energy.
    pub potential: f64,
    /// On the virial.
    pub virial: f64,
}

/// The bounds of `sys` (bodies of `types`) under the oracle `o`: each
/// pair's terms' magnitudes (the law's reference) times the separation's
/// rounding (`slope sqrt(3) delta / r`, `delta` a rounding of the largest
/// coordinate) plus [`ARITHMETIC`].
pub fn pair_bounds(sys: &System64, types: &[u32], o: &Pair64) -> PairBounds {
    let n = sys.pos.len();
    let t = |i: usize| types.get(i).copied().unwrap_or(0);
    let extent = sys.pos.iter().flatten().fold(
        o.lengths().map_or(0.0, |l| l[0].max(l[1]).max(l[2])),
        |m, x| m.max(x.abs()),
    );
    let delta = extent * 2f64.powi(-23);
    let mut acc = vec![0.0; n];
    let (mut potential, mut virial) = (0.0, 0.0);
    for (i, bound) in acc.iter_mut().enumerate() {
        for j in (0..n).filter(|&j| j != i) {
            let d = o.separation(&sys.pos[i], &sys.pos[j]);
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            let Some(p) = o.reference(t(i), t(j), r2) else {
                continue;
            };
            let r = r2.sqrt();
            let force = p.fpair_scale * r;
            let sep = 3f64.sqrt() * delta / r;
            *bound += force * (p.slope * sep + ARITHMETIC) / sys.mass[i];
            if i < j {
                potential += p.energy_scale * (p.slope * sep + ARITHMETIC);
                virial += force * r * (p.slope * sep + ARITHMETIC);
            }
        }
    }
    PairBounds {
        acc,
        potential,
        virial,
    }
}
