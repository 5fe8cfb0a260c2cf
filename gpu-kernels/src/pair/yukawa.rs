//! Screened Coulomb, LAMMPS's `pair_style yukawa kappa r_c`:
//! `u(r) = A e^(-kappa r) / r`, `pair_coeff I J A [r_c]`.
//!
//! LAMMPS takes `kappa` once for all pairs (`pair_style yukawa kappa`);
//! here it is the second coefficient of each pair (`A kappa`, so one
//! potential can hold what LAMMPS holds, and `PairSpec` fills it from the
//! style's argument). Per pair, as `pair_yukawa.cpp`: `1 / r` from
//! `rsqrt(r^2)`, `r = r^2 / r`, `e^(-kappa r)` ([`math::exp`]), then `F / r
//! = A e^(-kappa r) (kappa + 1 / r) / r^2` and `u = A e^(-kappa r) / r`.
//! Mixed as LAMMPS mixes: `A` by `mix_energy(A_i, A_j, 1, 1)`, the cutoff
//! by `mix_distance` (and `kappa`, one value in LAMMPS, as the mean).

use super::math::{self, Lane};
use super::{HEADER, PairLaw, Row};
#[cfg(not(target_arch = "nvptx64"))]
use super::{Coeffs, Invalid, Mixing, PairSetup, Reference, finite, non_negative};

/// Screened Coulomb (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct Yukawa;

const A: usize = HEADER;
const KAPPA: usize = HEADER + 1;

/// `1 / r` and `A e^(-kappa r)`.
#[inline(always)]
fn parts<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R) {
    let rinv = r2.rsqrt();
    let r = r2 * rinv;
    (rinv, w.word(A) * math::exp(-(r * w.word(KAPPA))))
}

impl PairLaw for Yukawa {
    const STYLE: &'static str = "yukawa";
    const TITLE: &'static str = "Yukawa";
    const PARAMS: &'static [&'static str] = &["A", "kappa"];
    const WORDS: usize = 2;

    #[inline(always)]
    fn force<R: Lane, W: Row<R>>(w: &W, r2: R) -> R {
        let (rinv, s) = parts(w, r2);
        s * (w.word(KAPPA) + rinv) * rinv * rinv
    }

    #[inline(always)]
    fn energy_force<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R) {
        let (rinv, s) = parts(w, r2);
        (s * rinv, s * (w.word(KAPPA) + rinv) * rinv * rinv)
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl PairSetup for Yukawa {
    const LENGTH: Option<usize> = None;
    const EXAMPLE: &'static [f32] = &[1.0, 1.0, 2.5];

    /// `A` finite (an `f32`, any sign), `kappa` finite and `>= 0`.
    fn prepare(c: &Coeffs<'_>, words: &mut [f32]) -> Result<(), Invalid> {
        let a = finite("Yukawa A", c.params[0])?;
        let kappa = non_negative("Yukawa kappa", c.params[1])?;
        words[0] = a as f32;
        words[1] = kappa as f32;
        Ok(())
    }

    fn reference(c: &Coeffs<'_>, r2: f64) -> Reference {
        let (a, kappa) = (c.params[0], c.params[1]);
        let r = libm::sqrt(r2);
        let screening = libm::exp(-kappa * r);
        Reference {
            energy: a * screening / r,
            fpair: a * screening * (kappa + 1.0 / r) / r2,
            energy_scale: a.abs() * screening / r,
            fpair_scale: a.abs() * screening * (kappa + 1.0 / r) / r2,
            slope: kappa * r + 3.0,
        }
    }

    fn mix(rule: Mixing, ii: &Coeffs<'_>, jj: &Coeffs<'_>, params: &mut [f64]) -> Option<f64> {
        params[0] = rule.energy(ii.params[0], jj.params[0], 1.0, 1.0);
        params[1] = 0.5 * (ii.params[1] + jj.params[1]);
        Some(rule.distance(ii.cutoff, jj.cutoff))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coulomb_without_screening_and_the_mixed_amplitude() {
        let c = Coeffs {
            params: &[2.0, 0.0],
            cutoff: 3.0,
            data: &[],
        };
        let r = Yukawa::reference(&c, 4.0);
        assert_eq!((r.energy, r.fpair), (1.0, 0.25));
        let d = Coeffs {
            params: &[8.0, 0.0],
            cutoff: 2.0,
            data: &[],
        };
        let mut p = [0.0; 2];
        assert_eq!(Yukawa::mix(Mixing::Arithmetic, &c, &d, &mut p), Some(2.5));
        assert_eq!(p, [4.0, 0.0]);
    }
}
