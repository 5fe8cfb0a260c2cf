//! The f64 reference of the collisional part, written to be checked by eye:
//! force, jerk and potential of chosen bodies from all others
//! ([`field`]), the total energy ([`energy`]), and a shared-time-step
//! 4th-order Hermite integrator ([`hermite_shared`]), which
//! [`oracle::advance`](crate::oracle::advance) runs for
//! [`Integrator::Hermite`](crate::Integrator::Hermite).
//!
//! Independent of the optimised loops (`forces.rs`: no lanes, no estimate,
//! IEEE `sqrt` and division, one body at a time, single-threaded).

use super::forces::Field;

/// The field at body `i` from every other body `j` (without `G`), softening `eps2`.
pub fn field(pos: &[[f64; 3]], vel: &[[f64; 3]], mass: &[f64], i: usize, eps2: f64) -> Field {
    let mut f = Field::default();
    for j in 0..pos.len() {
        if j == i {
            continue;
        }
        let r: [f64; 3] = std::array::from_fn(|k| pos[j][k] - pos[i][k]);
        let v: [f64; 3] = std::array::from_fn(|k| vel[j][k] - vel[i][k]);
        let d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + eps2;
        let d = d2.sqrt();
        let m_d3 = mass[j] / (d2 * d);
        let rv = r[0] * v[0] + r[1] * v[1] + r[2] * v[2];
        for k in 0..3 {
            f.acc[k] += m_d3 * r[k];
            f.jerk[k] += m_d3 * (v[k] - 3.0 * rv / d2 * r[k]);
        }
        f.pot -= mass[j] / d;
    }
    f
}

/// Kinetic and potential energy, `U = -G sum_{i<j} m_i m_j / d_ij`.
pub fn energy(pos: &[[f64; 3]], vel: &[[f64; 3]], mass: &[f64], g: f64, eps2: f64) -> (f64, f64) {
    let n = pos.len();
    let (mut kinetic, mut potential) = (0.0, 0.0);
    for i in 0..n {
        let v = vel[i];
        kinetic += 0.5 * mass[i] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        for j in i + 1..n {
            let r: [f64; 3] = std::array::from_fn(|k| pos[j][k] - pos[i][k]);
            let d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + eps2;
            potential -= g * mass[i] * mass[j] / d2.sqrt();
        }
    }
    (kinetic, potential)
}

/// `steps` steps of a shared-time-step 4th-order Hermite integrator
/// (predict everyone, evaluate, correct everyone) with step `dt`: the
/// textbook scheme of Makino & Aarseth (1992) without individual steps.
pub fn hermite_shared(
    pos: &mut [[f64; 3]],
    vel: &mut [[f64; 3]],
    mass: &[f64],
    dt: f64,
    g: f64,
    eps2: f64,
    steps: usize,
) {
    let n = pos.len();
    let fields = |p: &[[f64; 3]], v: &[[f64; 3]]| -> Vec<Field> {
        (0..n).map(|i| field(p, v, mass, i, eps2)).collect()
    };
    let scale =
        |f: Field| -> ([f64; 3], [f64; 3]) { (f.acc.map(|a| g * a), f.jerk.map(|j| g * j)) };
    let mut now: Vec<_> = fields(pos, vel).into_iter().map(scale).collect();
    for _ in 0..steps {
        let (h, h2, h3) = (dt, dt * dt / 2.0, dt * dt * dt / 6.0);
        let mut xp = pos.to_vec();
        let mut vp = vel.to_vec();
        for i in 0..n {
            let (a, j) = now[i];
            for k in 0..3 {
                xp[i][k] = pos[i][k] + vel[i][k] * h + a[k] * h2 + j[k] * h3;
                vp[i][k] = vel[i][k] + a[k] * h + j[k] * h2;
            }
        }
        let next: Vec<_> = fields(&xp, &vp).into_iter().map(scale).collect();
        for i in 0..n {
            let ((a0, j0), (a1, j1)) = (now[i], next[i]);
            for k in 0..3 {
                // Snap and crackle at the start from the two ends (Hermite interpolation).
                let snap = (-6.0 * (a0[k] - a1[k]) - dt * (4.0 * j0[k] + 2.0 * j1[k])) / (dt * dt);
                let crackle =
                    (12.0 * (a0[k] - a1[k]) + 6.0 * dt * (j0[k] + j1[k])) / (dt * dt * dt);
                let dt4 = dt * dt * dt * dt;
                pos[i][k] = xp[i][k] + snap * dt4 / 24.0 + crackle * dt4 * dt / 120.0;
                vel[i][k] = vp[i][k] + snap * dt * dt * dt / 6.0 + crackle * dt4 / 24.0;
            }
        }
        now = next;
    }
}
