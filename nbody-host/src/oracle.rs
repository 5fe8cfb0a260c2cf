//! A straightforward `f64` all-pairs reference: the oracle every backend and
//! kernel is tested against.
//!
//! Written independently of `gpu-kernels` (no shared code, no `f32`, no fast
//! reciprocal square root), and simple enough to check by eye. `O(N^2)` per
//! force evaluation, single-threaded: for validation, not for production runs.
//!
//! ```
//! use nbody_host::oracle::{self, System64};
//! use nbody_host::{Backend, Integrator, Simulation, ic};
//!
//! let bodies = ic::plummer(64, 3);
//! let mut sys = System64::from_bodies(&bodies);
//! oracle::advance(&mut sys, Integrator::Leapfrog, 1e-3, 1.0, 0.05, 10);
//! let mut sim = Simulation::builder(bodies).dt(1e-3).softening(0.05)
//!     .integrator(Integrator::Leapfrog).backend(Backend::cpu()).build()?;
//! sim.step(10)?;
//! let x = sim.positions()?[0];
//! assert!((x.x as f64 - sys.pos[0][0]).abs() < 1e-5);
//! let e = oracle::energy(&sys, 1.0, 0.05);
//! assert!((sim.energy()?.total() - e.total()).abs() < 1e-5 * e.total().abs());
//! # Ok::<(), nbody_host::Error>(())
//! ```

use crate::integrator::Integrator;
use crate::state::{Bodies, Energy};

/// A system in `f64`.
#[derive(Clone, Debug, PartialEq)]
pub struct System64 {
    /// Positions.
    pub pos: Vec<[f64; 3]>,
    /// Velocities.
    pub vel: Vec<[f64; 3]>,
    /// Masses.
    pub mass: Vec<f64>,
}

impl System64 {
    /// Widens `f32` bodies to `f64` exactly.
    pub fn from_bodies(b: &Bodies) -> System64 {
        System64 {
            pos: b
                .positions
                .iter()
                .map(|p| [p.x as f64, p.y as f64, p.z as f64])
                .collect(),
            vel: b
                .velocities
                .iter()
                .map(|v| [v.x as f64, v.y as f64, v.z as f64])
                .collect(),
            mass: b.masses.iter().map(|&m| m as f64).collect(),
        }
    }
}

/// `a_i = G sum_{j != i} m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2)`.
pub fn accelerations(pos: &[[f64; 3]], mass: &[f64], g: f64, eps: f64) -> Vec<[f64; 3]> {
    let n = pos.len();
    let mut acc = vec![[0.0; 3]; n];
    for i in 0..n {
        let mut a = [0.0f64; 3];
        for j in 0..n {
            if j == i {
                continue;
            }
            let r = [
                pos[j][0] - pos[i][0],
                pos[j][1] - pos[i][1],
                pos[j][2] - pos[i][2],
            ];
            let d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + eps * eps;
            let s = mass[j] / (d2 * d2.sqrt());
            for k in 0..3 {
                a[k] += s * r[k];
            }
        }
        acc[i] = [g * a[0], g * a[1], g * a[2]];
    }
    acc
}

/// Kinetic and softened potential energy,
/// `U = -G sum_{i<j} m_i m_j / sqrt(|r_ij|^2 + eps^2)`.
pub fn energy(sys: &System64, g: f64, eps: f64) -> Energy {
    let n = sys.pos.len();
    let mut kinetic = 0.0;
    let mut potential = 0.0;
    for i in 0..n {
        let v = sys.vel[i];
        kinetic += 0.5 * sys.mass[i] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        for j in i + 1..n {
            let r = [
                sys.pos[j][0] - sys.pos[i][0],
                sys.pos[j][1] - sys.pos[i][1],
                sys.pos[j][2] - sys.pos[i][2],
            ];
            let d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + eps * eps;
            potential -= g * sys.mass[i] * sys.mass[j] / d2.sqrt();
        }
    }
    Energy { kinetic, potential }
}

/// Advances `steps` steps of `integrator` with time step `dt`.
///
/// Semi-implicit Euler: `v += a(x) dt; x += v dt`. Leapfrog (kick-drift-kick):
/// `v += a(x) dt/2; x += v dt; v += a(x) dt/2`.
pub fn advance(
    sys: &mut System64,
    integrator: Integrator,
    dt: f64,
    g: f64,
    eps: f64,
    steps: usize,
) {
    for _ in 0..steps {
        match integrator {
            Integrator::SemiImplicitEuler => {
                let a = accelerations(&sys.pos, &sys.mass, g, eps);
                kick(sys, &a, dt);
                drift(sys, dt);
            }
            Integrator::Leapfrog => {
                let a = accelerations(&sys.pos, &sys.mass, g, eps);
                kick(sys, &a, 0.5 * dt);
                drift(sys, dt);
                let a = accelerations(&sys.pos, &sys.mass, g, eps);
                kick(sys, &a, 0.5 * dt);
            }
        }
    }
}

fn kick(sys: &mut System64, a: &[[f64; 3]], dt: f64) {
    for (v, a) in sys.vel.iter_mut().zip(a) {
        for k in 0..3 {
            v[k] += a[k] * dt;
        }
    }
}

fn drift(sys: &mut System64, dt: f64) {
    for (x, v) in sys.pos.iter_mut().zip(&sys.vel) {
        for k in 0..3 {
            x[k] += v[k] * dt;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_bodies_attract_symmetrically() {
        let pos = [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]];
        let a = accelerations(&pos, &[1.0, 3.0], 1.0, 0.0);
        assert_eq!(a[0], [0.75, 0.0, 0.0]);
        assert_eq!(a[1], [-0.25, 0.0, 0.0]);
        let sys = System64 {
            pos: pos.to_vec(),
            vel: vec![[0.0, 1.0, 0.0], [0.0; 3]],
            mass: vec![1.0, 3.0],
        };
        let e = energy(&sys, 2.0, 0.0);
        assert_eq!(e.kinetic, 0.5);
        assert_eq!(e.potential, -3.0);
    }

    #[test]
    fn leapfrog_keeps_a_circular_orbit() {
        // Two equal masses m = 1 at distance 1, G = 1: circular speed 1/sqrt(2) each, period pi * sqrt(2).
        let v = 0.5f64.sqrt(); // m v^2 / r = G m^2 / d^2 with r = 0.5, d = 1
        let mut sys = System64 {
            pos: vec![[-0.5, 0.0, 0.0], [0.5, 0.0, 0.0]],
            vel: vec![[0.0, -v, 0.0], [0.0, v, 0.0]],
            mass: vec![1.0, 1.0],
        };
        let e0 = energy(&sys, 1.0, 0.0).total();
        advance(&mut sys, Integrator::Leapfrog, 1e-3, 1.0, 0.0, 4443); // ~one period
        let e1 = energy(&sys, 1.0, 0.0).total();
        assert!(((e1 - e0) / e0).abs() < 1e-6, "{e0} -> {e1}");
        let r = ((sys.pos[1][0] - sys.pos[0][0]).powi(2) + (sys.pos[1][1] - sys.pos[0][1]).powi(2))
            .sqrt();
        assert!((r - 1.0).abs() < 1e-5, "separation {r}");
    }
}
