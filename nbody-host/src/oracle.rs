//! A straightforward `f64` all-pairs reference: the oracle every backend and
//! kernel is tested against: softened gravity ([`accelerations`],
//! [`energy`], [`advance`]) and any pair potential with atom types, the
//! minimum image, the cutoffs, the shift and the virial ([`Pair64`]:
//! forces, energy and virial, velocity Verlet, and [`Pair64::evaluate`]
//! with the error scales the tests derive their bounds from).
//!
//! Gravity is written independently of `gpu-kernels` (no shared code, no
//! `f32`, no fast reciprocal square root). A pair law's `f64` formula is its
//! law file's [`PairSetup::reference`](gpu_kernels::pair::PairSetup::reference),
//! the textbook formula from the user's coefficients, which shares nothing
//! with the `f32` evaluation but the file (and LAMMPS checks both:
//! `scripts/ci-lammps.sh`); everything around it (pairs, minimum image,
//! cutoffs, shift, sums, integrator) is here. Simple enough to check by eye.
//! `O(N^2)` per force evaluation, single-threaded: for validation, not for
//! production runs.
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
#[cfg(test)]
use crate::pair::PairStyle;
use crate::pair::{PairPotential, Reference};
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

/// A pair potential and the box, the short-range oracle: the law's `f64`
/// reference per pair of atom types (from the `f32` coefficients the
/// engines use, widened exactly), the cutoffs and the shift, the minimum
/// image.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair64 {
    potential: PairPotential,
    lengths: Option<[f64; 3]>,
}

/// Everything the oracle knows about a state: forces, energy, virial, and
/// the scales of the `f32` rounding errors of each (the sums of the
/// magnitudes of the terms, which cancel where a relative bound on the
/// result would not hold).
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// The force on each body (not divided by its mass).
    pub force: Vec<[f64; 3]>,
    /// Per body and component, `sum |F / r|_terms |d_k|` over its pairs:
    /// the magnitudes an `f32` evaluation rounds.
    pub scale: Vec<[f64; 3]>,
    /// Per body, `sum |F / r|_terms (slope + 2)`: how much a position
    /// error moves the body's force, per unit of error.
    pub sensitivity: Vec<f64>,
    /// Pairs within the cutoff, per body.
    pub inside: Vec<usize>,
    /// Potential energy (shifted if the potential is).
    pub potential: f64,
    /// `sum |u|_terms` over the pairs.
    pub potential_scale: f64,
    /// `sum |u|_terms slope / r` over the pairs.
    pub potential_sensitivity: f64,
    /// The virial `sum over pairs r_ij . F_ij`.
    pub virial: f64,
    /// `sum |F / r|_terms r^2` over the pairs.
    pub virial_scale: f64,
    /// `sum |F / r|_terms r (slope + 1)` over the pairs.
    pub virial_sensitivity: f64,
    /// The largest `|u(r_c)|` subtracted by the shift (0 unshifted).
    pub offset: f64,
    /// The smallest pair distance within a cutoff.
    pub closest: f64,
}

impl Pair64 {
    /// The potential of a simulation in its space (box lengths widened
    /// from the `f32` the engines use).
    pub fn new(potential: &PairPotential, boundary: &crate::md::Boundary) -> Pair64 {
        Pair64 {
            potential: potential.clone(),
            lengths: boundary.lengths().map(|l| l.map(|x| x as f32 as f64)),
        }
    }

    /// The pair potential.
    pub fn potential(&self) -> &PairPotential {
        &self.potential
    }

    /// The periodic box, if any.
    pub fn lengths(&self) -> Option<[f64; 3]> {
        self.lengths
    }

    /// The cutoff of types `i` and `j`.
    pub fn cutoff(&self, i: u32, j: u32) -> f64 {
        self.potential.coeff(i, j).cutoff_f64()
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

    /// The law's reference (unshifted) for types `i` and `j` at `r^2`, or
    /// `None` at or beyond their cutoff.
    pub fn reference(&self, i: u32, j: u32, r2: f64) -> Option<Reference> {
        let rc = self.cutoff(i, j);
        (r2 < rc * rc).then(|| self.potential.reference(i, j, r2))
    }

    /// `u(r)` (shifted if set) and `F / r = -u'(r) / r`, both 0 at `r >= r_c`.
    pub fn pair(&self, i: u32, j: u32, r2: f64) -> (f64, f64) {
        match self.reference(i, j, r2) {
            Some(r) => (r.energy - self.potential.offset(i, j), r.fpair),
            None => (0.0, 0.0),
        }
    }

    /// Forces `F_i = sum_{j != i} -u'(r) r_hat_ij` (not divided by the
    /// masses), every pair by the minimum image, `O(N^2)`; `types` per body
    /// (empty: all 0).
    pub fn forces(&self, pos: &[[f64; 3]], types: &[u32]) -> Vec<[f64; 3]> {
        let t = |i: usize| types.get(i).copied().unwrap_or(0);
        let n = pos.len();
        let mut f = vec![[0.0f64; 3]; n];
        for i in 0..n {
            for j in 0..n {
                if j == i {
                    continue;
                }
                // d = x_j - x_i; the force on i points away from j when repulsive.
                let d = self.separation(&pos[i], &pos[j]);
                let (_, fpair) = self.pair(t(i), t(j), d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
                for k in 0..3 {
                    f[i][k] -= fpair * d[k];
                }
            }
        }
        f
    }

    /// `U = sum_{i<j} u(r_ij)` and the virial `W = sum_{i<j} r_ij . F_ij`.
    pub fn energy_virial(&self, pos: &[[f64; 3]], types: &[u32]) -> (f64, f64) {
        let t = |i: usize| types.get(i).copied().unwrap_or(0);
        let (mut u, mut w) = (0.0, 0.0);
        for i in 0..pos.len() {
            for j in i + 1..pos.len() {
                let d = self.separation(&pos[i], &pos[j]);
                let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                let (uij, fpair) = self.pair(t(i), t(j), r2);
                u += uij;
                w += fpair * r2;
            }
        }
        (u, w)
    }

    /// Everything about `pos` (all pairs, minimum image, `r < r_c`), with
    /// the error scales (see [`Evaluation`]).
    #[allow(
        clippy::needless_range_loop,
        reason = "component loops read best indexed"
    )]
    pub fn evaluate(&self, pos: &[[f64; 3]], types: &[u32]) -> Evaluation {
        let t = |i: usize| types.get(i).copied().unwrap_or(0);
        let n = pos.len();
        let mut e = Evaluation {
            force: vec![[0.0; 3]; n],
            scale: vec![[0.0; 3]; n],
            sensitivity: vec![0.0; n],
            inside: vec![0; n],
            potential: 0.0,
            potential_scale: 0.0,
            potential_sensitivity: 0.0,
            virial: 0.0,
            virial_scale: 0.0,
            virial_sensitivity: 0.0,
            offset: 0.0,
            closest: f64::INFINITY,
        };
        for i in 0..n {
            for j in i + 1..n {
                let d = self.separation(&pos[i], &pos[j]);
                let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                let Some(p) = self.reference(t(i), t(j), r2) else {
                    continue;
                };
                let r = r2.sqrt();
                let offset = self.potential.offset(t(i), t(j));
                e.closest = e.closest.min(r);
                e.offset = e.offset.max(offset.abs());
                for b in [i, j] {
                    e.sensitivity[b] += p.fpair_scale * (p.slope + 2.0);
                    e.inside[b] += 1;
                }
                for k in 0..3 {
                    // Force on i is along x_i - x_j = -d.
                    e.force[i][k] -= p.fpair * d[k];
                    e.force[j][k] += p.fpair * d[k];
                    for b in [i, j] {
                        e.scale[b][k] += p.fpair_scale * d[k].abs();
                    }
                }
                e.potential += p.energy - offset;
                e.potential_scale += p.energy_scale;
                e.potential_sensitivity += p.energy_scale * p.slope / r;
                e.virial += p.fpair * r2;
                e.virial_scale += p.fpair_scale * r2;
                e.virial_sensitivity += p.fpair_scale * r * (p.slope + 1.0);
            }
        }
        e
    }

    /// All pairs `i < j` closer than `r` (minimum image), with their distance.
    pub fn pairs_within(&self, pos: &[[f64; 3]], r: f64) -> Vec<(usize, usize, f64)> {
        let mut out = Vec::new();
        for i in 0..pos.len() {
            for j in i + 1..pos.len() {
                let d = self.separation(&pos[i], &pos[j]);
                let rij = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                if rij < r {
                    out.push((i, j, rij));
                }
            }
        }
        out
    }

    /// LAMMPS's thermo quantities of `sys` (see [`crate::md::Thermo`]).
    pub fn thermo(&self, sys: &System64, types: &[u32], step: u64) -> crate::md::Thermo {
        let kinetic = energy_kinetic(sys);
        let (potential, virial) = self.energy_virial(&sys.pos, types);
        let volume = self.lengths.map(|l| l[0] * l[1] * l[2]);
        let sums = crate::md::ThermoSums {
            kinetic,
            potential,
            virial,
            coupling: 0.0,
        };
        crate::md::Thermo::from_sums(step, sys.pos.len(), sums, volume)
    }

    /// `steps` steps of velocity Verlet (leapfrog kick-drift-kick), `a = F /
    /// m`; returns the total energy after each step. Positions are not
    /// wrapped: the minimum image makes that unnecessary, and they stay the
    /// unwrapped trajectory that a simulation reports as `x + image * L`.
    pub fn advance(&self, sys: &mut System64, types: &[u32], dt: f64, steps: usize) -> Vec<f64> {
        let accel = |sys: &System64| -> Vec<[f64; 3]> {
            self.forces(&sys.pos, types)
                .iter()
                .zip(&sys.mass)
                .map(|(f, m)| [f[0] / m, f[1] / m, f[2] / m])
                .collect()
        };
        let mut energies = Vec::with_capacity(steps);
        for _ in 0..steps {
            let a = accel(sys);
            kick(sys, &a, 0.5 * dt);
            drift(sys, dt);
            let a = accel(sys);
            kick(sys, &a, 0.5 * dt);
            energies.push(self.energy_virial(&sys.pos, types).0 + energy_kinetic(sys));
        }
        energies
    }
}

/// `sum m v^2 / 2`.
pub fn energy_kinetic(sys: &System64) -> f64 {
    sys.vel
        .iter()
        .zip(&sys.mass)
        .map(|(v, m)| 0.5 * m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))
        .sum()
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
        let boundary = crate::md::Boundary::cubic(10.0);
        let pot = |shift| PairPotential::new(PairStyle::LennardJones, &[1.0, 1.0], 2.5, shift);
        let lj = Pair64::new(&pot(false).unwrap(), &boundary);
        // The minimum of u at 2^(1/6): depth 1, no force.
        let r2 = 2f64.powf(1.0 / 3.0);
        let (u, f) = lj.pair(0, 0, r2);
        assert!((u + 1.0).abs() < 1e-12 && f.abs() < 1e-12, "{u} {f}");
        // Across the box face: 9.5 and 0.5 are 1 apart.
        let pos = [[9.5, 0.0, 0.0], [0.5, 0.0, 0.0]];
        let f = lj.forces(&pos, &[]);
        assert!(
            (f[0][0] + 24.0).abs() < 1e-12 && (f[1][0] - 24.0).abs() < 1e-12,
            "{f:?}"
        );
        let (u, w) = lj.energy_virial(&pos, &[]);
        assert_eq!((u, w), (0.0, 24.0));
        let e = lj.evaluate(&pos, &[]);
        assert_eq!((e.potential, e.virial, e.force), (u, w, f));
        // Beyond the cutoff nothing; with the shift u(r_c) = 0.
        assert_eq!(lj.pair(0, 0, 6.26), (0.0, 0.0));
        let shifted = Pair64::new(&pot(true).unwrap(), &boundary);
        assert!(shifted.pair(0, 0, 6.25 * (1.0 - 1e-12)).0.abs() < 1e-9);
    }

    #[test]
    fn each_pair_of_types_has_its_own_coefficients_and_cutoff() {
        let p = PairPotential::builder(PairStyle::LennardJones, 2)
            .coeff(0, 0, &[1.0, 1.0], 2.5)
            .coeff(0, 1, &[2.0, 1.0], 1.5)
            .coeff(1, 1, &[1.0, 2.0], 5.0)
            .build()
            .unwrap();
        let o = Pair64::new(&p, &crate::md::Boundary::Open);
        let pos = [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 3.0, 0.0]];
        // 0-1 at r = 2 is past the 0-1 cutoff 1.5; 0-2 at 3 is a 1-1 pair if
        // both are type 1 (sigma 2: u(3) = 4 ((2/3)^12 - (2/3)^6)).
        let (u, _) = o.energy_virial(&pos, &[1, 0, 1]);
        let s6 = (2.0f64 / 3.0).powi(6);
        assert!((u - 4.0 * (s6 * s6 - s6)).abs() < 1e-12, "{u}");
        let (u0, _) = o.energy_virial(&pos, &[]);
        let s6 = 0.5f64.powi(6);
        assert!((u0 - 4.0 * (s6 * s6 - s6)).abs() < 1e-12, "{u0}");
    }
}
