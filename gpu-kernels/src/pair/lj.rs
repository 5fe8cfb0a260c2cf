//! Lennard-Jones 12-6, LAMMPS's `pair_style lj/cut`:
//! `u(r) = 4 eps ((sigma / r)^12 - (sigma / r)^6)`, `pair_coeff I J eps sigma [r_c]`.
//!
//! Words as LAMMPS's `pair_lj_cut.cpp` names them: `lj1 = 48 eps
//! sigma^12`, `lj2 = 24 eps sigma^6`, `lj3 = 4 eps sigma^12`, `lj4 = 4 eps
//! sigma^6`; per pair `F / r = r^-6 (lj1 r^-6 - lj2) / r^2` and `u = r^-6
//! (lj3 r^-6 - lj4)`: one reciprocal, 2 products for `r^-6`, one FMA and 2
//! products (energy: one FMA and a product more).

use super::{HEADER, Lane, PairLaw, Row};
#[cfg(not(target_arch = "nvptx64"))]
use super::{Coeffs, Invalid, Mixing, PairSetup, Reference, normal, positive};

/// Lennard-Jones 12-6 (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct LennardJones;

const LJ1: usize = HEADER;
const LJ2: usize = HEADER + 1;
const LJ3: usize = HEADER + 2;
const LJ4: usize = HEADER + 3;

/// `1 / r^2` and `r^-6`.
#[inline(always)]
fn inverse_powers<R: Lane>(r2: R) -> (R, R) {
    let r2i = r2.recip();
    (r2i, r2i * r2i * r2i)
}

impl PairLaw for LennardJones {
    const STYLE: &'static str = "lj/cut";
    const TITLE: &'static str = "Lennard-Jones";
    const PARAMS: &'static [&'static str] = &["epsilon", "sigma"];
    const WORDS: usize = 4;

    #[inline(always)]
    fn force<R: Lane, W: Row<R>>(w: &W, r2: R) -> R {
        let (r2i, r6i) = inverse_powers(r2);
        r6i * r6i.mul_add(w.word(LJ1), -w.word(LJ2)) * r2i
    }

    #[inline(always)]
    fn energy_force<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R) {
        let (r2i, r6i) = inverse_powers(r2);
        let f = r6i * r6i.mul_add(w.word(LJ1), -w.word(LJ2)) * r2i;
        (r6i * r6i.mul_add(w.word(LJ3), -w.word(LJ4)), f)
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl PairSetup for LennardJones {
    const LENGTH: Option<usize> = Some(1);
    const EXAMPLE: &'static [f32] = &[1.0, 1.0, 2.5];

    /// `epsilon` and `sigma` finite and `> 0` (normal `f32`s), with `48 eps
    /// sigma^12` a normal `f32` (units where both are near 1).
    fn prepare(c: &Coeffs<'_>, words: &mut [f32]) -> Result<(), Invalid> {
        let w = lj_words(c.params)?;
        for (out, v) in words.iter_mut().zip(w) {
            *out = v as f32;
        }
        Ok(())
    }

    fn reference(c: &Coeffs<'_>, r2: f64) -> Reference {
        let (e, s) = (c.params[0], c.params[1]);
        let t = s * s / r2;
        let s6 = t * t * t;
        Reference {
            energy: 4.0 * e * (s6 * s6 - s6),
            fpair: 24.0 * e * (2.0 * s6 * s6 - s6) / r2,
            energy_scale: 4.0 * e * (s6 * s6 + s6),
            fpair_scale: 24.0 * e * (2.0 * s6 * s6 + s6) / r2,
            slope: 13.0,
        }
    }

    /// LAMMPS's `pair_lj_cut.cpp` `init_one`: `epsilon` by
    /// `mix_energy`, `sigma` and the cutoff by `mix_distance`.
    fn mix(rule: Mixing, ii: &Coeffs<'_>, jj: &Coeffs<'_>, params: &mut [f64]) -> Option<f64> {
        mix_lj(rule, ii, jj, params)
    }
}

/// LAMMPS's Lennard-Jones mixing (`lj/cut`, `lj/smooth/linear`).
#[cfg(not(target_arch = "nvptx64"))]
pub(super) fn mix_lj(
    rule: Mixing,
    ii: &Coeffs<'_>,
    jj: &Coeffs<'_>,
    params: &mut [f64],
) -> Option<f64> {
    let (e1, s1, e2, s2) = (ii.params[0], ii.params[1], jj.params[0], jj.params[1]);
    params[0] = rule.energy(e1, e2, s1, s2);
    params[1] = rule.distance(s1, s2);
    Some(rule.distance(ii.cutoff, jj.cutoff))
}

/// `lj1 .. lj4` (LAMMPS's names) of `epsilon` and `sigma`, each checked.
#[cfg(not(target_arch = "nvptx64"))]
pub(super) fn lj_words(params: &[f64]) -> Result<[f64; 4], Invalid> {
    let e = positive("Lennard-Jones epsilon", params[0])?;
    let s = positive("Lennard-Jones sigma", params[1])?;
    let s6 = s * s * s * s * s * s;
    let lj1 = normal("Lennard-Jones 48 epsilon sigma^12", 48.0 * e * s6 * s6)?;
    Ok([lj1, 24.0 * e * s6, 4.0 * e * s6 * s6, 4.0 * e * s6])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pair::{MAX_ROW, fill_row};

    fn c(params: &[f64], cutoff: f64) -> Coeffs<'_> {
        Coeffs {
            params,
            cutoff,
            data: &[],
        }
    }

    #[test]
    fn the_words_are_lammps_constants_and_the_minimum_is_where_it_should_be() {
        let mut row = [0.0f32; MAX_ROW];
        fill_row::<LennardJones>(&c(&[1.0, 1.0], 2.5), true, &mut row, &mut [], 0).unwrap();
        let u_rc = 4.0 * (2.5f64.powi(-12) - 2.5f64.powi(-6));
        assert_eq!(row[..6], [6.25, u_rc as f32, 48.0, 24.0, 4.0, 4.0]);
        // The minimum at 2^(1/6) sigma, depth eps.
        let r = LennardJones::reference(&c(&[1.0, 1.0], 2.5), 2f64.powf(1.0 / 3.0));
        assert!((r.energy + 1.0).abs() < 1e-12 && r.fpair.abs() < 1e-12, "{r:?}");
        for (params, name) in [
            ([0.0, 1.0], "epsilon"),
            ([-1.0, 1.0], "epsilon"),
            ([f64::NAN, 1.0], "epsilon"),
            ([1.0, 0.0], "sigma"),
            ([1.0, f64::INFINITY], "sigma"),
            ([1.0, 1e4], "sigma^12"),
        ] {
            let e = fill_row::<LennardJones>(&c(&params, 2.5), false, &mut row, &mut [], 0)
                .unwrap_err();
            assert!(e.name.ends_with(name), "{e:?}");
        }
        // Mixed as LAMMPS mixes (pair_lj_cut.cpp, init_one).
        let mut p = [0.0; 2];
        let rc = LennardJones::mix(
            Mixing::Arithmetic,
            &c(&[1.0, 1.0], 2.5),
            &c(&[0.5, 0.88], 2.2),
            &mut p,
        );
        assert_eq!(p[0], 0.5f64.sqrt());
        assert!((p[1] - 0.94).abs() < 1e-15 && (rc.unwrap() - 2.35).abs() < 1e-15);
    }
}
