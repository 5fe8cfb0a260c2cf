//! A straightforward `f64` all-pairs reference: the oracle every backend and
//! kernel is tested against: softened gravity ([`accelerations`],
//! [`energy`], [`advance`]) and Lennard-Jones with the minimum image, the
//! cutoff, the shift and the virial ([`lj_forces`], [`lj_energy_virial`],
//! [`lj_advance`]).
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
/// `v += a(x) dt/2; x += v dt; v += a(x) dt/2`. Hermite: 4th-order Hermite
/// with the shared step `dt` ([`crate::hermite::reference::hermite_shared`]).
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
            // Shared steps of dt: the block-step integrator's limit.
            Integrator::Hermite(_) => crate::hermite::reference::hermite_shared(
                &mut sys.pos,
                &mut sys.vel,
                &sys.mass,
                dt,
                g,
                eps * eps,
                1,
            ),
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

/// The Lennard-Jones parameters and the box of the LJ oracle, in `f64`
/// (widened exactly from the `f32` values the engines use).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lj64 {
    /// `epsilon`.
    pub epsilon: f64,
    /// `sigma`.
    pub sigma: f64,
    /// The cutoff `r_c`.
    pub cutoff: f64,
    /// Whether `u` is shifted to 0 at `r_c`.
    pub shift: bool,
    /// Periodic box lengths (minimum image), or `None` for open space.
    pub lengths: Option<[f64; 3]>,
}

impl Lj64 {
    /// From the validated parameters of a simulation.
    pub fn new(lj: &crate::LennardJones, boundary: &crate::md::Boundary) -> Lj64 {
        Lj64 {
            epsilon: lj.epsilon() as f64,
            sigma: lj.sigma() as f64,
            cutoff: lj.cutoff() as f64,
            shift: lj.shift(),
            lengths: boundary.lengths().map(|l| l.map(|x| x as f32 as f64)),
        }
    }

    /// `x_j - x_i`, by the minimum image in a periodic box.
    pub fn separation(&self, xi: &[f64; 3], xj: &[f64; 3]) -> [f64; 3] {
        let mut d = [xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]];
        if let Some(l) = self.lengths {
            for k in 0..3 {
                d[k] -= l[k] * (d[k] / l[k]).round();
            }
        }
        d
    }

    /// `u(r)` (shifted if set) and `-du/dr / r`, both 0 at `r >= r_c`.
    pub fn pair(&self, r2: f64) -> (f64, f64) {
        if r2 >= self.cutoff * self.cutoff {
            return (0.0, 0.0);
        }
        let u = |r2: f64| {
            let s6 = (self.sigma * self.sigma / r2).powi(3);
            4.0 * self.epsilon * (s6 * s6 - s6)
        };
        let s6 = (self.sigma * self.sigma / r2).powi(3);
        let shift = if self.shift {
            u(self.cutoff * self.cutoff)
        } else {
            0.0
        };
        (
            u(r2) - shift,
            24.0 * self.epsilon * (2.0 * s6 * s6 - s6) / r2,
        )
    }
}

/// Lennard-Jones forces `F_i = sum_{j != i} -du/dr r_hat_ij` (not divided by
/// the masses), every pair by the minimum image, `O(N^2)`.
pub fn lj_forces(pos: &[[f64; 3]], lj: &Lj64) -> Vec<[f64; 3]> {
    let n = pos.len();
    let mut f = vec![[0.0f64; 3]; n];
    for i in 0..n {
        for j in 0..n {
            if j == i {
                continue;
            }
            // d = x_j - x_i; the force on i points away from j when repulsive.
            let d = lj.separation(&pos[i], &pos[j]);
            let (_, fpair) = lj.pair(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            for k in 0..3 {
                f[i][k] -= fpair * d[k];
            }
        }
    }
    f
}

/// `U = sum_{i<j} u(r_ij)` and the virial `W = sum_{i<j} r_ij . F_ij`.
pub fn lj_energy_virial(pos: &[[f64; 3]], lj: &Lj64) -> (f64, f64) {
    let (mut u, mut w) = (0.0, 0.0);
    for i in 0..pos.len() {
        for j in i + 1..pos.len() {
            let d = lj.separation(&pos[i], &pos[j]);
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            let (uij, fpair) = lj.pair(r2);
            u += uij;
            w += fpair * r2;
        }
    }
    (u, w)
}

/// LAMMPS's thermo quantities of `sys` (see [`crate::md::Thermo`]).
pub fn lj_thermo(sys: &System64, lj: &Lj64, step: u64) -> crate::md::Thermo {
    let kinetic = energy_kinetic(sys);
    let (potential, virial) = lj_energy_virial(&sys.pos, lj);
    let volume = lj.lengths.map(|l| l[0] * l[1] * l[2]);
    crate::md::Thermo::from_sums(step, sys.pos.len(), kinetic, potential, virial, volume)
}

fn energy_kinetic(sys: &System64) -> f64 {
    sys.vel
        .iter()
        .zip(&sys.mass)
        .map(|(v, m)| 0.5 * m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))
        .sum()
}

/// `steps` steps of velocity Verlet (leapfrog kick-drift-kick) under
/// Lennard-Jones forces, `a = F / m`. Positions are not wrapped: the minimum
/// image makes that unnecessary, and they stay the unwrapped trajectory
/// that a simulation reports as `x + image * L`.
pub fn lj_advance(sys: &mut System64, lj: &Lj64, dt: f64, steps: usize) {
    let accel = |sys: &System64| -> Vec<[f64; 3]> {
        lj_forces(&sys.pos, lj)
            .iter()
            .zip(&sys.mass)
            .map(|(f, m)| [f[0] / m, f[1] / m, f[2] / m])
            .collect()
    };
    for _ in 0..steps {
        let a = accel(sys);
        kick(sys, &a, 0.5 * dt);
        drift(sys, dt);
        let a = accel(sys);
        kick(sys, &a, 0.5 * dt);
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

    #[test]
    fn lj_pairs_follow_the_textbook_potential_with_minimum_image() {
        let lj = Lj64 {
            epsilon: 1.0,
            sigma: 1.0,
            cutoff: 2.5,
            shift: false,
            lengths: Some([10.0; 3]),
        };
        // The minimum of u at 2^(1/6): depth 1, no force.
        let r2 = 2f64.powf(1.0 / 3.0);
        let (u, f) = lj.pair(r2);
        assert!((u + 1.0).abs() < 1e-12 && f.abs() < 1e-12, "{u} {f}");
        // Across the box face: 9.5 and 0.5 are 1 apart.
        let pos = [[9.5, 0.0, 0.0], [0.5, 0.0, 0.0]];
        let f = lj_forces(&pos, &lj);
        assert!(
            (f[0][0] + 24.0).abs() < 1e-12 && (f[1][0] - 24.0).abs() < 1e-12,
            "{f:?}"
        );
        let (u, w) = lj_energy_virial(&pos, &lj);
        assert_eq!((u, w), (0.0, 24.0));
        // Beyond the cutoff nothing; with the shift u(r_c) = 0.
        assert_eq!(lj.pair(6.26), (0.0, 0.0));
        let shifted = Lj64 { shift: true, ..lj };
        assert!(shifted.pair(6.25 * (1.0 - 1e-12)).0.abs() < 1e-9);
    }
}
