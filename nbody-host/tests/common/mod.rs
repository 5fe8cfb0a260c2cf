//! Helpers shared by the integration tests (each test file is its own
//! crate: `mod common;` includes this file, and uses some of it).
#![allow(dead_code, reason = "each test binary uses its own subset")]

use glam::Vec3;
use nbody_host::oracle::System64;
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
