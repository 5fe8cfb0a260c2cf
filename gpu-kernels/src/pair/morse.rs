//! Morse, LAMMPS's `pair_style morse`:
//! `u(r) = D0 [e^(-2 alpha (r - r0)) - 2 e^(-alpha (r - r0))]`,
//! `pair_coeff I J D0 alpha r0 [r_c]`.
//!
//! Words: `morse1 = 2 D0 alpha` (LAMMPS's name), `D0`, `alpha`, `alpha r0`.
//! Per pair: `1 / r` from `rsqrt(r^2)` (`rsqrt.approx.ftz` on the GPU, the
//! instruction the gravity kernels use) and `r = r^2 / r` one product,
//! `e = exp(alpha r0 - alpha r)` ([`math::exp`]: FMAs, products and the
//! exponent bits, no `ex2.approx`, so the software CUDA device reproduces
//! it bit for bit), then LAMMPS's `F / r = morse1 (e^2 - e) / r` in three
//! products and a subtraction, and `u = D0 e (e - 2)`.

use super::math::{self, Lane};
use super::{HEADER, PairLaw, Row};
#[cfg(not(target_arch = "nvptx64"))]
use super::{Coeffs, Invalid, PairSetup, Reference, non_negative, normal, positive};

/// Morse (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct Morse;

const MORSE1: usize = HEADER;
const D0: usize = HEADER + 1;
const ALPHA: usize = HEADER + 2;
const ALPHA_R0: usize = HEADER + 3;

/// `1 / r` and `e = exp(-alpha (r - r0))`.
#[inline(always)]
fn inverse_and_exp<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R) {
    let rinv = r2.rsqrt();
    let r = r2 * rinv;
    (rinv, math::exp(r.mul_add(-w.word(ALPHA), w.word(ALPHA_R0))))
}

impl PairLaw for Morse {
    const STYLE: &'static str = "morse";
    const TITLE: &'static str = "Morse";
    const PARAMS: &'static [&'static str] = &["D0", "alpha", "r0"];
    const WORDS: usize = 4;

    #[inline(always)]
    fn force<R: Lane, W: Row<R>>(w: &W, r2: R) -> R {
        let (rinv, e) = inverse_and_exp(w, r2);
        w.word(MORSE1) * e * (e - e.lit(1.0)) * rinv
    }

    #[inline(always)]
    fn energy_force<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R) {
        let (rinv, e) = inverse_and_exp(w, r2);
        let f = w.word(MORSE1) * e * (e - e.lit(1.0)) * rinv;
        (w.word(D0) * e * (e - e.lit(2.0)), f)
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl PairSetup for Morse {
    const LENGTH: Option<usize> = Some(2);
    const EXAMPLE: &'static [f32] = &[1.0, 3.0, 1.1, 2.5];

    /// `D0` and `alpha` finite and `> 0`, `r0` finite and `>= 0` (normal
    /// `f32`s or 0), with `2 D0 alpha` a normal `f32`. LAMMPS does not
    /// mix Morse coefficients.
    fn prepare(c: &Coeffs<'_>, words: &mut [f32]) -> Result<(), Invalid> {
        let d0 = positive("Morse D0", c.params[0])?;
        let alpha = positive("Morse alpha", c.params[1])?;
        let r0 = non_negative("Morse r0", c.params[2])?;
        let morse1 = normal("Morse 2 D0 alpha", 2.0 * d0 * alpha)?;
        for (out, v) in words.iter_mut().zip([morse1, d0, alpha, alpha * r0]) {
            *out = v as f32;
        }
        Ok(())
    }

    fn reference(c: &Coeffs<'_>, r2: f64) -> Reference {
        let (d0, alpha, r0) = (c.params[0], c.params[1], c.params[2]);
        let r = libm::sqrt(r2);
        let e = libm::exp(-alpha * (r - r0));
        Reference {
            energy: d0 * (e * e - 2.0 * e),
            fpair: 2.0 * alpha * d0 * (e * e - e) / r,
            energy_scale: d0 * (e * e + 2.0 * e),
            fpair_scale: 2.0 * alpha * d0 * (e * e + e) / r,
            slope: 2.0 * alpha * r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pair::{MAX_ROW, Mixing, OFFSET, fill_row};

    fn c(params: &[f64]) -> Coeffs<'_> {
        Coeffs {
            params,
            cutoff: 2.5,
            data: &[],
        }
    }

    #[test]
    fn the_minimum_is_at_r0_with_depth_d0_and_bad_values_are_named() {
        let r = Morse::reference(&c(&[2.0, 3.0, 1.1]), 1.1 * 1.1);
        assert!((r.energy + 2.0).abs() < 1e-12 && r.fpair.abs() < 1e-12, "{r:?}");
        let mut row = [0.0f32; MAX_ROW];
        fill_row::<Morse>(&c(&[2.0, 3.0, 1.1]), true, &mut row, &mut [], 0).unwrap();
        assert_eq!(row[MORSE1..MORSE1 + 4], [12.0, 2.0, 3.0, 3.3f64 as f32]);
        let e = libm::exp(-3.0 * 1.4);
        assert_eq!(row[OFFSET], (2.0 * (e * e - 2.0 * e)) as f32);
        for (params, name) in [
            ([0.0, 3.0, 1.1], "D0"),
            ([f64::NAN, 3.0, 1.1], "D0"),
            ([1.0, -3.0, 1.1], "alpha"),
            ([1.0, 3.0, -0.5], "r0"),
            ([1.0, 3.0, f64::INFINITY], "r0"),
            ([1e30, 1e30, 1.0], "2 D0 alpha"),
        ] {
            let e = fill_row::<Morse>(&c(&params), false, &mut row, &mut [], 0).unwrap_err();
            assert!(e.name.ends_with(name), "{e:?}");
        }
        assert!(fill_row::<Morse>(&c(&[1.0, 3.0, 0.0]), false, &mut row, &mut [], 0).is_ok());
        // LAMMPS does not mix Morse.
        let one = c(&[1.0, 3.0, 1.1]);
        assert_eq!(Morse::mix(Mixing::Geometric, &one, &one, &mut [0.0; 3]), None);
    }
}
