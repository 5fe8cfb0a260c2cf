//! A user's own pair law, written as docs/md.md "Your own pair law" says:
//! Lennard-Jones 12-6 again, under the name `lj/user`, from scratch (none of
//! `lj.rs`'s helpers), so `scripts/user-law-cost.sh` can time a law added
//! the documented way against the built-in `lj/cut` in one binary.
//! The script copies this file to `gpu-kernels/src/pair/lj_user.rs` in a
//! scratch tree and adds its line to `pair_styles!`; it is not built here.

#[cfg(not(target_arch = "nvptx64"))]
use super::{Coeffs, Invalid, PairSetup, Reference, positive};
use super::{HEADER, Lane, PairLaw, Row};

/// Lennard-Jones as a user law.
#[derive(Clone, Copy, Debug)]
pub struct LjUser;

/// Words after the header: `48 eps s^12`, `24 eps s^6`, `4 eps s^12`, `4 eps s^6`.
const A12: usize = HEADER;
const B6: usize = HEADER + 1;
const U12: usize = HEADER + 2;
const U6: usize = HEADER + 3;

impl PairLaw for LjUser {
    const STYLE: &'static str = "lj/user";
    const TITLE: &'static str = "user Lennard-Jones";
    const PARAMS: &'static [&'static str] = &["epsilon", "sigma"];
    const WORDS: usize = 4;

    #[inline(always)]
    fn force<R: Lane, W: Row<R>>(w: &W, r2: R) -> R {
        let r2i = r2.recip();
        let r6i = r2i * r2i * r2i;
        r6i * r6i.mul_add(w.word(A12), -w.word(B6)) * r2i
    }

    #[inline(always)]
    fn energy_force<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R) {
        let r2i = r2.recip();
        let r6i = r2i * r2i * r2i;
        let f = r6i * r6i.mul_add(w.word(A12), -w.word(B6)) * r2i;
        (r6i * r6i.mul_add(w.word(U12), -w.word(U6)), f)
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl PairSetup for LjUser {
    const LENGTH: Option<usize> = Some(1);
    const EXAMPLE: &'static [f32] = &[1.0, 1.0, 2.5];

    fn prepare(c: &Coeffs<'_>, words: &mut [f32]) -> Result<(), Invalid> {
        let e = positive("user Lennard-Jones epsilon", c.params[0])?;
        let s = positive("user Lennard-Jones sigma", c.params[1])?;
        let s6 = s * s * s * s * s * s;
        let all = [
            48.0 * e * s6 * s6,
            24.0 * e * s6,
            4.0 * e * s6 * s6,
            4.0 * e * s6,
        ];
        for (out, v) in words.iter_mut().zip(all) {
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
}
