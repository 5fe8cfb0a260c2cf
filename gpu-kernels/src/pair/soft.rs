//! The cosine soft repulsion, LAMMPS's `pair_style soft r_c`:
//! `u(r) = A [1 + cos(pi r / r_c)]`, `pair_coeff I J A [r_c]`.
//!
//! Words: `A`, `A pi / r_c`, `pi / r_c`. Per pair, as `pair_soft.cpp`: `r`
//! from `rsqrt(r^2)`, `(sin, cos)(pi r / r_c)` ([`math::sin_cos`]: FMAs and
//! roundings, no `sin.approx`), `F / r = A (pi / r_c) sin(pi r / r_c) / r`,
//! `u = A [1 + cos(pi r / r_c)]`. Zero energy and force at the cutoff
//! already (the shift subtracts `u(r_c) = 0`). Mixed as LAMMPS mixes: `A`
//! always geometrically, the cutoff by `mix_distance`.

use super::math::{self, Lane};
use super::{HEADER, PairLaw, Row};
#[cfg(not(target_arch = "nvptx64"))]
use super::{Coeffs, Invalid, Mixing, PairSetup, Reference, finite};

/// Cosine soft repulsion (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct Soft;

const A: usize = HEADER;
const A_PI_RC: usize = HEADER + 1;
const PI_RC: usize = HEADER + 2;

/// `1 / r` and `(sin, cos)(pi r / r_c)`.
#[inline(always)]
fn parts<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, (R, R)) {
    let rinv = r2.rsqrt();
    (rinv, math::sin_cos(r2 * rinv * w.word(PI_RC)))
}

impl PairLaw for Soft {
    const STYLE: &'static str = "soft";
    const TITLE: &'static str = "soft (cosine)";
    const PARAMS: &'static [&'static str] = &["A"];
    const WORDS: usize = 3;

    #[inline(always)]
    fn force<R: Lane, W: Row<R>>(w: &W, r2: R) -> R {
        let (rinv, (s, _)) = parts(w, r2);
        w.word(A_PI_RC) * s * rinv
    }

    #[inline(always)]
    fn energy_force<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R) {
        let (rinv, (s, c)) = parts(w, r2);
        (
            w.word(A).mul_add(c, w.word(A)),
            w.word(A_PI_RC) * s * rinv,
        )
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl PairSetup for Soft {
    const LENGTH: Option<usize> = None;
    const EXAMPLE: &'static [f32] = &[1.0, 1.5];

    /// `A` finite (an `f32`).
    fn prepare(c: &Coeffs<'_>, words: &mut [f32]) -> Result<(), Invalid> {
        let a = finite("soft A", c.params[0])?;
        let pi_rc = core::f64::consts::PI / c.cutoff;
        for (out, v) in words.iter_mut().zip([a, a * pi_rc, pi_rc]) {
            *out = v as f32;
        }
        Ok(())
    }

    fn reference(c: &Coeffs<'_>, r2: f64) -> Reference {
        let a = c.params[0];
        let pi = core::f64::consts::PI;
        let r = libm::sqrt(r2);
        let arg = pi * r / c.cutoff;
        Reference {
            energy: a * (1.0 + libm::cos(arg)),
            fpair: a * libm::sin(arg) * pi / c.cutoff / r,
            // The sine and cosine's roundings are absolute: scales from
            // their amplitude, not their value.
            energy_scale: 2.0 * a.abs(),
            fpair_scale: a.abs() * pi / c.cutoff / r,
            slope: arg + 1.0,
        }
    }

    /// `pair_soft.cpp`, `init_one`: "always mix prefactors geometrically".
    fn mix(rule: Mixing, ii: &Coeffs<'_>, jj: &Coeffs<'_>, params: &mut [f64]) -> Option<f64> {
        params[0] = libm::sqrt(ii.params[0] * jj.params[0]);
        Some(rule.distance(ii.cutoff, jj.cutoff))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twice_a_at_contact_and_zero_at_the_cutoff() {
        let c = Coeffs {
            params: &[3.0],
            cutoff: 2.0,
            data: &[],
        };
        let at = Soft::reference(&c, 4.0);
        assert!(at.energy.abs() < 1e-15 && at.fpair.abs() < 1e-15, "{at:?}");
        assert!((Soft::reference(&c, 1e-12).energy - 6.0).abs() < 1e-9);
        let mid = Soft::reference(&c, 1.0);
        assert!((mid.energy - 3.0).abs() < 1e-15 && (mid.fpair - 1.5 * core::f64::consts::PI).abs() < 1e-12);
    }
}
