//! The MD tests' independent `f64` reference: brute-force all-pairs
//! Lennard-Jones with the minimum image, cutoff, optional shift and virial,
//! a velocity-Verlet integrator on it, and the test states (fcc lattice,
//! random gas). No code shared with the kernels; `O(N^2)` per evaluation.
//! (To be folded into `nbody_host::oracle` beside the CPU engine's LJ.)

#![allow(
    clippy::needless_range_loop,
    reason = "component loops read best indexed"
)]

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The force law and the box.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lj {
    pub l: [f64; 3],
    pub rc: f64,
    pub eps: f64,
    pub sigma: f64,
    pub shift: bool,
}

/// Forces and their error scales, energy, virial.
pub(crate) struct Evaluation {
    /// Force on each body.
    pub force: Vec<[f64; 3]>,
    /// Per body and component, the sum over pairs of
    /// `24 eps r^-2 (2 (s/r)^12 + (s/r)^6) |d|`: the magnitudes the f32
    /// kernel rounds, term by term (the error scale of the force).
    pub scale: Vec<[f64; 3]>,
    /// Per body, the sum over pairs of `24 eps r^-2 (2 (s/r)^12 + (s/r)^6)`
    /// (times a position error: the force's sensitivity to it, over 15).
    pub magnitude: Vec<f64>,
    /// Pairs within the cutoff, per body.
    pub inside: Vec<usize>,
    /// Potential energy.
    pub potential: f64,
    /// Sum over pairs of `|4 eps ((s/r)^12 + (s/r)^6)|` (its error scale).
    pub potential_scale: f64,
    /// `sum over pairs r_ij . F_ij`.
    pub virial: f64,
    /// Sum over pairs of `24 eps (2 (s/r)^12 + (s/r)^6)`.
    pub virial_scale: f64,
    /// The smallest pair distance within the cutoff.
    pub closest: f64,
}

impl Lj {
    /// `d - L round(d / L)` per component.
    pub(crate) fn min_image(&self, d: [f64; 3]) -> [f64; 3] {
        std::array::from_fn(|k| d[k] - self.l[k] * (d[k] / self.l[k]).round())
    }

    /// `4 eps ((s/r)^12 - (s/r)^6)`, minus its value at the cutoff if shifted.
    pub(crate) fn energy_at(&self, r2: f64) -> f64 {
        let u = |r2: f64| {
            let s6 = (self.sigma * self.sigma / r2).powi(3);
            4.0 * self.eps * (s6 * s6 - s6)
        };
        u(r2)
            - if self.shift {
                u(self.rc * self.rc)
            } else {
                0.0
            }
    }

    /// Everything about `pos` (all pairs, minimum image, `r < r_c`).
    pub(crate) fn evaluate(&self, pos: &[[f64; 3]]) -> Evaluation {
        let n = pos.len();
        let mut e = Evaluation {
            force: vec![[0.0; 3]; n],
            scale: vec![[0.0; 3]; n],
            magnitude: vec![0.0; n],
            inside: vec![0; n],
            potential: 0.0,
            potential_scale: 0.0,
            virial: 0.0,
            virial_scale: 0.0,
            closest: f64::INFINITY,
        };
        for i in 0..n {
            for j in i + 1..n {
                let d = self.min_image(std::array::from_fn(|k| pos[j][k] - pos[i][k]));
                let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                if r2 >= self.rc * self.rc {
                    continue;
                }
                let s6 = (self.sigma * self.sigma / r2).powi(3);
                // -u'(r) / r, and the same with both terms' magnitudes added.
                let f = 24.0 * self.eps * (2.0 * s6 * s6 - s6) / r2;
                let fs = 24.0 * self.eps * (2.0 * s6 * s6 + s6) / r2;
                e.magnitude[i] += fs;
                e.magnitude[j] += fs;
                e.closest = e.closest.min(r2.sqrt());
                for k in 0..3 {
                    // Force on i is along x_i - x_j = -d.
                    e.force[i][k] -= f * d[k];
                    e.force[j][k] += f * d[k];
                    for b in [i, j] {
                        e.scale[b][k] += fs * d[k].abs();
                    }
                }
                e.inside[i] += 1;
                e.inside[j] += 1;
                e.potential += self.energy_at(r2);
                e.potential_scale += 4.0 * self.eps * (s6 * s6 + s6);
                e.virial += f * r2;
                e.virial_scale += fs * r2;
            }
        }
        e
    }

    /// All pairs `i < j` closer than `r` (minimum image), with their distance.
    pub(crate) fn pairs_within(&self, pos: &[[f64; 3]], r: f64) -> Vec<(usize, usize, f64)> {
        let mut out = Vec::new();
        for i in 0..pos.len() {
            for j in i + 1..pos.len() {
                let d = self.min_image(std::array::from_fn(|k| pos[j][k] - pos[i][k]));
                let rij = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                if rij < r {
                    out.push((i, j, rij));
                }
            }
        }
        out
    }

    /// `steps` velocity-Verlet steps of `dt` (masses `m`), in place; returns
    /// the total energy after each step.
    pub(crate) fn verlet(
        &self,
        pos: &mut [[f64; 3]],
        vel: &mut [[f64; 3]],
        m: &[f64],
        dt: f64,
        steps: usize,
    ) -> Vec<f64> {
        let mut f = self.evaluate(pos).force;
        let mut energies = Vec::with_capacity(steps);
        for _ in 0..steps {
            for i in 0..pos.len() {
                for k in 0..3 {
                    vel[i][k] += 0.5 * dt * f[i][k] / m[i];
                    pos[i][k] += dt * vel[i][k];
                }
            }
            let e = self.evaluate(pos);
            f = e.force;
            for i in 0..pos.len() {
                for k in 0..3 {
                    vel[i][k] += 0.5 * dt * f[i][k] / m[i];
                }
            }
            energies.push(e.potential + kinetic(vel, m));
        }
        energies
    }
}

/// `sum m v^2 / 2`.
pub(crate) fn kinetic(vel: &[[f64; 3]], m: &[f64]) -> f64 {
    vel.iter()
        .zip(m)
        .map(|(v, &m)| 0.5 * m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))
        .sum()
}

/// An fcc lattice of `c^3` unit cells (`4 c^3` bodies) at number density
/// `rho` filling the box `[0, L)^3` (LAMMPS `lattice fcc rho`), and `L`.
pub(crate) fn fcc(c: usize, rho: f64) -> (Vec<[f64; 3]>, f64) {
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
pub(crate) fn velocities(n: usize, t: f64, seed: u64) -> Vec<[f64; 3]> {
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
pub(crate) fn random_gas(n: usize, l: [f64; 3], dmin: f64, seed: u64) -> Vec<[f64; 3]> {
    add_gas(Vec::new(), n, l, dmin, seed)
}

/// `bodies` and uniform random ones after them up to `n`, no new one closer
/// than `dmin` to any other (minimum image). Panics if 10^6 tries do not
/// find room.
pub(crate) fn add_gas(
    mut bodies: Vec<[f64; 3]>,
    n: usize,
    l: [f64; 3],
    dmin: f64,
    seed: u64,
) -> Vec<[f64; 3]> {
    let lj = Lj {
        l,
        rc: 1.0,
        eps: 1.0,
        sigma: 1.0,
        shift: false,
    };
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
            let d = lj.min_image(std::array::from_fn(|k| q[k] - p[k]));
            d[0] * d[0] + d[1] * d[1] + d[2] * d[2] >= dmin * dmin
        });
        if far {
            bodies.push(p);
        }
    }
    bodies
}
