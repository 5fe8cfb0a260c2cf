//! Lennard-Jones with a linear force shift, LAMMPS's `pair_style
//! lj/smooth/linear`: `u(r) = u_LJ(r) - u_LJ(r_c) - (r - r_c) u_LJ'(r_c)`,
//! so the energy and the force both go to zero at the cutoff,
//! `pair_coeff I J eps sigma [r_c]`.
//!
//! Words as `pair_lj_smooth_linear.cpp` names them: `lj1 .. lj4` (as
//! `lj/cut`), `ljcut = u_LJ(r_c)`, `dljcut = -u_LJ'(r_c)` and `r_c`; per
//! pair `F / r = r^-6 (lj1 r^-6 - lj2) / r^2 - dljcut / r` (one reciprocal,
//! one `rsqrt`) and `u = r^-6 (lj3 r^-6 - lj4) - ljcut + (r - r_c) dljcut`.
//! The shift (`pair_modify shift`) changes nothing: `u(r_c) = 0` already
//! (LAMMPS ignores it for this style). Mixed as `lj/cut`.

use super::{HEADER, Lane, PairLaw, Row};
#[cfg(not(target_arch = "nvptx64"))]
use super::{Coeffs, Invalid, Mixing, PairSetup, Reference};

/// Lennard-Jones, force shifted (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct LjSmoothLinear;

const LJ1: usize = HEADER;
const LJ2: usize = HEADER + 1;
const LJ3: usize = HEADER + 2;
const LJ4: usize = HEADER + 3;
const LJCUT: usize = HEADER + 4;
const DLJCUT: usize = HEADER + 5;
const RC: usize = HEADER + 6;

/// `1 / r`, `r^-6` and the plain Lennard-Jones `F / r`.
#[inline(always)]
fn parts<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R, R) {
    let r2i = r2.recip();
    let r6i = r2i * r2i * r2i;
    let rinv = r2.rsqrt();
    (rinv, r6i, r6i * r6i.mul_add(w.word(LJ1), -w.word(LJ2)) * r2i)
}

impl PairLaw for LjSmoothLinear {
    const STYLE: &'static str = "lj/smooth/linear";
    const TITLE: &'static str = "Lennard-Jones (linear force shift)";
    const PARAMS: &'static [&'static str] = &["epsilon", "sigma"];
    const WORDS: usize = 7;

    #[inline(always)]
    fn force<R: Lane, W: Row<R>>(w: &W, r2: R) -> R {
        let (rinv, _, f) = parts(w, r2);
        rinv.mul_add(-w.word(DLJCUT), f)
    }

    #[inline(always)]
    fn energy_force<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R) {
        let (rinv, r6i, f) = parts(w, r2);
        let u = r6i * r6i.mul_add(w.word(LJ3), -w.word(LJ4)) - w.word(LJCUT);
        let r = r2 * rinv;
        (
            (r - w.word(RC)).mul_add(w.word(DLJCUT), u),
            rinv.mul_add(-w.word(DLJCUT), f),
        )
    }
}

/// `(ljcut, dljcut)` of LAMMPS's `init_one` from `lj1 .. lj4` and `r_c`.
#[cfg(not(target_arch = "nvptx64"))]
fn at_cutoff(lj: &[f64; 4], rc: f64) -> (f64, f64) {
    let cut6inv = libm::pow(rc, -6.0);
    let cutinv = 1.0 / rc;
    (
        cut6inv * (lj[2] * cut6inv - lj[3]),
        cutinv * cut6inv * (lj[0] * cut6inv - lj[1]),
    )
}

#[cfg(not(target_arch = "nvptx64"))]
impl PairSetup for LjSmoothLinear {
    const LENGTH: Option<usize> = Some(1);
    const EXAMPLE: &'static [f32] = &[1.0, 1.0, 2.5];

    /// As `lj/cut`'s.
    fn prepare(c: &Coeffs<'_>, words: &mut [f32]) -> Result<(), Invalid> {
        let lj = super::lj::lj_words(c.params)?;
        let (ljcut, dljcut) = at_cutoff(&lj, c.cutoff);
        let all = [lj[0], lj[1], lj[2], lj[3], ljcut, dljcut, c.cutoff];
        for (out, v) in words.iter_mut().zip(all) {
            *out = v as f32;
        }
        Ok(())
    }

    fn reference(c: &Coeffs<'_>, r2: f64) -> Reference {
        let (e, s) = (c.params[0], c.params[1]);
        let lj = [
            48.0 * e * libm::pow(s, 12.0),
            24.0 * e * libm::pow(s, 6.0),
            4.0 * e * libm::pow(s, 12.0),
            4.0 * e * libm::pow(s, 6.0),
        ];
        let (ljcut, dljcut) = at_cutoff(&lj, c.cutoff);
        let r = libm::sqrt(r2);
        let r6i = 1.0 / (r2 * r2 * r2);
        Reference {
            energy: r6i * (lj[2] * r6i - lj[3]) - ljcut + (r - c.cutoff) * dljcut,
            fpair: (r6i * (lj[0] * r6i - lj[1]) / r - dljcut) / r,
            energy_scale: r6i * (lj[2] * r6i + lj[3])
                + ljcut.abs()
                + (r + c.cutoff) * dljcut.abs(),
            fpair_scale: r6i * (lj[0] * r6i + lj[1]) / r2 + dljcut.abs() / r,
            slope: 13.0,
        }
    }

    /// As `lj/cut` (`pair_lj_smooth_linear.cpp`, `init_one`).
    fn mix(rule: Mixing, ii: &Coeffs<'_>, jj: &Coeffs<'_>, params: &mut [f64]) -> Option<f64> {
        super::lj::mix_lj(rule, ii, jj, params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_and_force_vanish_at_the_cutoff() {
        let c = Coeffs {
            params: &[1.0, 1.0],
            cutoff: 2.5,
            data: &[],
        };
        let at = LjSmoothLinear::reference(&c, 6.25);
        assert!(at.energy.abs() < 1e-15 && at.fpair.abs() < 1e-15, "{at:?}");
        // Inside, the plain LJ force minus F(r_c): at r = 1, 24 - F(2.5).
        let f_rc = 24.0 * (2.0 * 2.5f64.powi(-12) - 2.5f64.powi(-6)) / 2.5;
        let one = LjSmoothLinear::reference(&c, 1.0);
        assert!((one.fpair - (24.0 - f_rc)).abs() < 1e-12, "{one:?}");
    }
}
