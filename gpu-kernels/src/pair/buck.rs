//! Buckingham, LAMMPS's `pair_style buck r_c`:
//! `u(r) = A e^(-r / rho) - C / r^6`, `pair_coeff I J A rho C [r_c]`.
//!
//! Words: `A`, `1 / rho`, `C` and `pair_buck.cpp`'s `buck1 = A / rho`,
//! `buck2 = 6 C`. Per pair: one reciprocal (`r^-2`, `r^-6`), one `rsqrt`
//! (`r`), one [`math::exp`], then `F / r = (buck1 r e^(-r / rho) - buck2
//! r^-6) / r^2` and `u = A e^(-r / rho) - C r^-6`. LAMMPS does not mix it.
//! (At small `r` the `-C / r^6` wins: the "Buckingham catastrophe" is the
//! law's, as in LAMMPS.)

use super::math::{self, ExpRepulsion, Lane};
use super::{HEADER, PairLaw, Row};
#[cfg(not(target_arch = "nvptx64"))]
use super::{Coeffs, Invalid, PairSetup, Reference, finite, positive};

/// Buckingham (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct Buckingham;

const A: usize = HEADER;
const RHOINV: usize = HEADER + 1;
const C: usize = HEADER + 2;
const BUCK1: usize = HEADER + 3;
const BUCK2: usize = HEADER + 4;

/// `r^-2`, `r^-6`, `r` and `e^(-r / rho)`.
#[inline(always)]
fn parts<R: Lane, W: Row<R>>(w: &W, r2: R) -> ExpRepulsion<R> {
    math::exp_repulsion(r2, |r| -(r * w.word(RHOINV)))
}

/// `F / r = (buck1 r e^(-r / rho) - buck2 r^-6) / r^2`.
#[inline(always)]
fn fpair<R: Lane, W: Row<R>>(w: &W, p: ExpRepulsion<R>) -> R {
    p.fpair(w.word(BUCK1), |p| -(w.word(BUCK2) * p.r6i))
}

impl PairLaw for Buckingham {
    const STYLE: &'static str = "buck";
    const TITLE: &'static str = "Buckingham";
    const PARAMS: &'static [&'static str] = &["A", "rho", "C"];
    const WORDS: usize = 5;

    #[inline(always)]
    fn force<R: Lane, W: Row<R>>(w: &W, r2: R) -> R {
        fpair(w, parts(w, r2))
    }

    #[inline(always)]
    fn energy_force<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R) {
        let p = parts(w, r2);
        (p.energy(w.word(A), -(w.word(C) * p.r6i)), fpair(w, p))
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl PairSetup for Buckingham {
    const LENGTH: Option<usize> = None;
    /// Repulsion wins down to `r ~ 0.35` (a barrier of ~80 above the
    /// catastrophe), the force balances near the fcc neighbours at 1.1.
    const EXAMPLE: &'static [f32] = &[20000.0, 0.1, 1.0, 2.5];

    /// `rho` finite and `> 0`; `A` and `C` finite (`f32`s of any sign),
    /// with `A / rho` an `f32`.
    fn prepare(c: &Coeffs<'_>, words: &mut [f32]) -> Result<(), Invalid> {
        let a = finite("Buckingham A", c.params[0])?;
        let rho = positive("Buckingham rho", c.params[1])?;
        let cc = finite("Buckingham C", c.params[2])?;
        let buck1 = finite("Buckingham A / rho", a / rho)?;
        for (out, v) in words.iter_mut().zip([a, 1.0 / rho, cc, buck1, 6.0 * cc]) {
            *out = v as f32;
        }
        Ok(())
    }

    fn reference(c: &Coeffs<'_>, r2: f64) -> Reference {
        let (a, rho, cc) = (c.params[0], c.params[1], c.params[2]);
        let r = libm::sqrt(r2);
        let r6i = 1.0 / (r2 * r2 * r2);
        let e = libm::exp(-r / rho);
        Reference {
            energy: a * e - cc * r6i,
            fpair: (a / rho * r * e - 6.0 * cc * r6i) / r2,
            energy_scale: a.abs() * e + cc.abs() * r6i,
            fpair_scale: (a.abs() / rho * r * e + 6.0 * cc.abs() * r6i) / r2,
            slope: r / rho + 8.0,
        }
    }
}
