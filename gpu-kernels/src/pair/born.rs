//! Born-Mayer-Huggins, LAMMPS's `pair_style born r_c`:
//! `u(r) = A e^((sigma - r) / rho) - C / r^6 + D / r^8`,
//! `pair_coeff I J A rho sigma C D [r_c]`.
//!
//! Words: `A`, `1 / rho`, `sigma / rho`, `C`, `D` and `pair_born.cpp`'s
//! `born1 = A / rho`, `born2 = 6 C`, `born3 = 8 D`. Per pair: one
//! reciprocal (`r^-2`, `r^-6`, `r^-8`), one `rsqrt` (`r`), one
//! [`math::exp`], then `F / r = (born1 r e - born2 r^-6 + born3 r^-8) /
//! r^2` and `u = A e - C r^-6 + D r^-8`. LAMMPS does not mix it.

use super::math::{self, ExpRepulsion, Lane};
use super::{HEADER, PairLaw, Row};
#[cfg(not(target_arch = "nvptx64"))]
use super::{Coeffs, Invalid, PairSetup, Reference, finite, positive};

/// Born-Mayer-Huggins (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct Born;

const A: usize = HEADER;
const RHOINV: usize = HEADER + 1;
const SIGMA_RHOINV: usize = HEADER + 2;
const C: usize = HEADER + 3;
const D: usize = HEADER + 4;
const BORN1: usize = HEADER + 5;
const BORN2: usize = HEADER + 6;
const BORN3: usize = HEADER + 7;

/// `r^-2`, `r^-6`, `r` and `e^((sigma - r) / rho)`.
#[inline(always)]
fn parts<R: Lane, W: Row<R>>(w: &W, r2: R) -> ExpRepulsion<R> {
    math::exp_repulsion(r2, |r| r.mul_add(-w.word(RHOINV), w.word(SIGMA_RHOINV)))
}

/// `F / r = (born1 r e - born2 r^-6 + born3 r^-8) / r^2`.
#[inline(always)]
fn fpair<R: Lane, W: Row<R>>(w: &W, p: ExpRepulsion<R>) -> R {
    let poly = (p.r2i * p.r6i).mul_add(w.word(BORN3), -(w.word(BORN2) * p.r6i));
    p.fpair(w.word(BORN1), |_| poly)
}

impl PairLaw for Born {
    const STYLE: &'static str = "born";
    const TITLE: &'static str = "Born-Mayer-Huggins";
    const PARAMS: &'static [&'static str] = &["A", "rho", "sigma", "C", "D"];
    const WORDS: usize = 8;

    #[inline(always)]
    fn force<R: Lane, W: Row<R>>(w: &W, r2: R) -> R {
        fpair(w, parts(w, r2))
    }

    #[inline(always)]
    fn energy_force<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R) {
        let p = parts(w, r2);
        let poly = (p.r2i * p.r6i).mul_add(w.word(D), -(w.word(C) * p.r6i));
        (p.energy(w.word(A), poly), fpair(w, p))
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl PairSetup for Born {
    const LENGTH: Option<usize> = None;
    const EXAMPLE: &'static [f32] = &[5.0, 0.15, 1.0, 1.0, 0.1, 2.5];

    /// `rho` finite and `> 0`; `A`, `sigma`, `C`, `D` finite (`f32`s of
    /// any sign), with `A / rho` an `f32`.
    fn prepare(c: &Coeffs<'_>, words: &mut [f32]) -> Result<(), Invalid> {
        let p = c.params;
        let a = finite("Born A", p[0])?;
        let rho = positive("Born rho", p[1])?;
        let sigma = finite("Born sigma", p[2])?;
        let cc = finite("Born C", p[3])?;
        let d = finite("Born D", p[4])?;
        let born1 = finite("Born A / rho", a / rho)?;
        let all = [a, 1.0 / rho, sigma / rho, cc, d, born1, 6.0 * cc, 8.0 * d];
        for (out, v) in words.iter_mut().zip(all) {
            *out = v as f32;
        }
        Ok(())
    }

    fn reference(c: &Coeffs<'_>, r2: f64) -> Reference {
        let [a, rho, sigma, cc, d] = [0, 1, 2, 3, 4].map(|k| c.params[k]);
        let r = libm::sqrt(r2);
        let r6i = 1.0 / (r2 * r2 * r2);
        let r8i = r6i / r2;
        let e = libm::exp((sigma - r) / rho);
        Reference {
            energy: a * e - cc * r6i + d * r8i,
            fpair: (a / rho * r * e - 6.0 * cc * r6i + 8.0 * d * r8i) / r2,
            energy_scale: a.abs() * e + cc.abs() * r6i + d.abs() * r8i,
            fpair_scale: (a.abs() / rho * r * e + 6.0 * cc.abs() * r6i + 8.0 * d.abs() * r8i)
                / r2,
            slope: r / rho + 10.0,
        }
    }
}
