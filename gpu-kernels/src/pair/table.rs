//! Tabulated, LAMMPS's `pair_style table linear N`: the energy and
//! `F / r` at `N` points evenly spaced in `r^2` from the table's inner
//! radius to the pair's cutoff, interpolated linearly in `r^2` between
//! them, as `pair_table.cpp` does (`pair_coeff I J FILE KEYWORD [r_c]`:
//! reading the file, and the spline LAMMPS puts through its points to
//! resample them on that grid, are the host's: `nbody-host`'s
//! `pair::table`).
//!
//! **Data.** What a pair's [`Coeffs::data`] holds: LAMMPS's own arrays of
//! the resampled table, in `f64`: `innersq`, `delta` (the spacing in
//! `r^2`), `invdelta`, `N`, then `e[0..N]` and `f[0..N]` (`f` already
//! divided by `r`, as LAMMPS stores it). The oracle interpolates them as
//! `PairTable::compute` does; the kernels read an `f32` copy placed after
//! the rows of the coefficient table: per segment `k < N - 1` the four
//! words `f[k], f[k+1] - f[k], e[k], e[k+1] - e[k]` (LAMMPS's `f, df, e,
//! de`). The row holds `innersq`, `invdelta`, where the pair's segments
//! start, and the last segment's index (all exact in `f32`).
//!
//! **Per pair.** `x = (r^2 - innersq) invdelta`, the segment `k = min(trunc
//! x, N - 2)`, the fraction `x - k`, and `F / r = f[k] + (x - k) df[k]`
//! (one FMA), from two words of the segment (four with the energy): two
//! loads on the GPU, on the CPU two 64-bit gathers of 8 lanes each
//! ([`Row::data_pair`]) per vector of 16 pairs, besides the row's. A pair closer than the table's inner radius has no value:
//! LAMMPS stops with "Pair distance < table inner cutoff"; here its force
//! is NaN, which the step's divergence check reports with the body. The
//! shift is refused (LAMMPS does not shift a table: tabulate the energy
//! you want); LAMMPS does not mix tables either.

use super::{HEADER, Lane, PairLaw, Row};
#[cfg(not(target_arch = "nvptx64"))]
use super::{Coeffs, Invalid, PairSetup, Reference};

/// Tabulated, linear interpolation (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct Table;

const INNER2: usize = HEADER;
const INVDELTA: usize = HEADER + 1;
const BASE: usize = HEADER + 2;
const LAST: usize = HEADER + 3;

/// Words per segment of a pair's data: `f`, `df`, `e`, `de`.
pub const SEGMENT: usize = 4;

/// Where the data starts: `innersq`, `delta`, `invdelta`, `N`, then `e` and `f`.
pub const DATA_HEADER: usize = 4;

/// The segment's first word and the fraction, NaN below the inner radius.
#[inline(always)]
fn segment<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R, R) {
    let x = (r2 - w.word(INNER2)) * w.word(INVDELTA);
    let k = x.trunc().min(w.word(LAST));
    let at = k.mul_add(x.lit(SEGMENT as f32), w.word(BASE));
    (x, at, x - k)
}

/// `v` where `x >= 0`, NaN below the table.
#[inline(always)]
fn inside<R: Lane>(x: R, v: R) -> R {
    x.lt_select(x.lit(0.0), x.lit(f32::NAN), v)
}

impl PairLaw for Table {
    const STYLE: &'static str = "table";
    const TITLE: &'static str = "tabulated";
    const PARAMS: &'static [&'static str] = &[];
    const WORDS: usize = 4;

    #[inline(always)]
    fn force<R: Lane, W: Row<R>>(w: &W, r2: R) -> R {
        let (x, at, frac) = segment(w, r2);
        let (f, df) = w.data_pair(at);
        inside(x, frac.mul_add(df, f))
    }

    #[inline(always)]
    fn energy_force<R: Lane, W: Row<R>>(w: &W, r2: R) -> (R, R) {
        let (x, at, frac) = segment(w, r2);
        let (f, df) = w.data_pair(at);
        let (e, de) = w.data_pair(at + x.lit(2.0));
        let (f, e) = (frac.mul_add(df, f), frac.mul_add(de, e));
        (inside(x, e), inside(x, f))
    }
}

/// The example's points: LAMMPS-style resampled Lennard-Jones (`eps = sigma
/// = 1`) from `r = 0.7` to the cutoff.
#[cfg(not(target_arch = "nvptx64"))]
const EXAMPLE_POINTS: usize = 500;

/// A pair's data, named.
#[cfg(not(target_arch = "nvptx64"))]
struct Data<'a> {
    innersq: f64,
    delta: f64,
    invdelta: f64,
    e: &'a [f64],
    f: &'a [f64],
}

#[cfg(not(target_arch = "nvptx64"))]
fn data<'a>(c: &Coeffs<'a>) -> Result<Data<'a>, Invalid> {
    let bad = |requirement| Invalid {
        name: "table data length",
        value: c.data.len() as f64,
        requirement,
    };
    let d = c.data;
    if d.len() < DATA_HEADER {
        return Err(bad("must hold innersq, delta, invdelta, N, then N energies and N forces"));
    }
    let n = d[3];
    if !(n >= 2.0 && n <= (1 << 22) as f64 && n == libm::floor(n)) {
        return Err(Invalid {
            name: "table length N",
            value: n,
            requirement: "must be an integer in 2..=4194304",
        });
    }
    let n = n as usize;
    if d.len() != DATA_HEADER + 2 * n {
        return Err(bad("must be 4 + 2 N (innersq, delta, invdelta, N, e[N], f[N])"));
    }
    Ok(Data {
        innersq: d[0],
        delta: d[1],
        invdelta: d[2],
        e: &d[DATA_HEADER..DATA_HEADER + n],
        f: &d[DATA_HEADER + n..],
    })
}

#[cfg(not(target_arch = "nvptx64"))]
impl PairSetup for Table {
    const LENGTH: Option<usize> = None;
    const EXAMPLE: &'static [f32] = &[2.5];
    const SHIFT: bool = false;
    const EXAMPLE_DATA: usize = DATA_HEADER + 2 * EXAMPLE_POINTS;

    /// The data as [`Coeffs::data`] describes it: `0 < innersq < r_c^2 =
    /// innersq + (N - 1) delta` (to `1e-9`), `invdelta = 1 / delta`, every
    /// energy and force an `f32`.
    fn prepare(c: &Coeffs<'_>, words: &mut [f32]) -> Result<(), Invalid> {
        let t = data(c)?;
        let n = t.e.len();
        let rc2 = c.cutoff * c.cutoff;
        if !(t.innersq > 0.0 && t.innersq < rc2 && (t.innersq as f32) > 0.0) {
            return Err(Invalid {
                name: "table inner radius squared",
                value: t.innersq,
                requirement: "must be > 0 and below the cutoff squared",
            });
        }
        let outer = t.innersq + (n - 1) as f64 * t.delta;
        if !((outer - rc2).abs() <= 1e-9 * rc2 && (t.invdelta * t.delta - 1.0).abs() <= 1e-12) {
            return Err(Invalid {
                name: "table outer radius squared",
                value: outer,
                requirement: "must equal the cutoff squared (innersq + (N - 1) delta, invdelta = 1 / delta)",
            });
        }
        for &v in t.e.iter().chain(t.f) {
            super::finite("table energy or force", v).or_else(|e| {
                // Below the smallest normal f32: as good as 0.
                if v.is_finite() && (v as f32).abs() < f32::MIN_POSITIVE {
                    Ok(0.0)
                } else {
                    Err(e)
                }
            })?;
        }
        words[0] = t.innersq as f32;
        words[1] = t.invdelta as f32;
        words[3] = (n - 2) as f32;
        Ok(())
    }

    fn reference(c: &Coeffs<'_>, r2: f64) -> Reference {
        let Ok(t) = data(c) else {
            return Reference {
                energy: f64::NAN,
                fpair: f64::NAN,
                energy_scale: 0.0,
                fpair_scale: 0.0,
                slope: 0.0,
            };
        };
        let tlm1 = t.e.len() - 1;
        // PairTable::compute, LINEAR: below the inner radius LAMMPS stops.
        let x = (r2 - t.innersq) * t.invdelta;
        let k = if x >= 0.0 { (x as usize).min(tlm1 - 1) } else { 0 };
        let rsq_k = t.innersq + k as f64 * t.delta;
        let fraction = (r2 - rsq_k) * t.invdelta;
        let (df, de) = (t.f[k + 1] - t.f[k], t.e[k + 1] - t.e[k]);
        let nan_below = |v: f64| if x < 0.0 { f64::NAN } else { v };
        // The f32 evaluation rounds x (and innersq, invdelta) to a few
        // ulps of r^2 invdelta: that many times df.
        let spread = 1.0 + r2 * t.invdelta / 64.0;
        let fpair_scale = t.f[k].abs() + df.abs() * spread;
        let energy_scale = t.e[k].abs() + de.abs() * spread;
        let ratio = |d: f64, s: f64| if s > 0.0 { 2.0 * r2 * t.invdelta * d.abs() / s } else { 0.0 };
        Reference {
            energy: nan_below(t.e[k] + fraction * de),
            fpair: nan_below(t.f[k] + fraction * df),
            energy_scale,
            fpair_scale,
            slope: ratio(df, fpair_scale).max(ratio(de, energy_scale)) + 1.0,
        }
    }

    fn data_words(c: &Coeffs<'_>) -> usize {
        data(c).map_or(0, |t| SEGMENT * (t.e.len() - 1))
    }

    fn tabulate(c: &Coeffs<'_>, base: u32, words: &mut [f32], out: &mut [f32]) {
        let Ok(t) = data(c) else { return };
        words[2] = base as f32;
        for (k, seg) in out.chunks_exact_mut(SEGMENT).enumerate() {
            let words = [t.f[k], t.f[k + 1] - t.f[k], t.e[k], t.e[k + 1] - t.e[k]];
            for (o, v) in seg.iter_mut().zip(words) {
                *o = v as f32;
            }
        }
    }

    /// Lennard-Jones (`eps = sigma = 1`) at the grid's points, inner
    /// radius 0.7, as LAMMPS's arrays would hold it from an exact file.
    fn example_data(cutoff: f64, out: &mut [f64]) {
        let n = EXAMPLE_POINTS;
        let innersq = 0.49;
        let delta = (cutoff * cutoff - innersq) / (n - 1) as f64;
        out[..DATA_HEADER].copy_from_slice(&[innersq, delta, 1.0 / delta, n as f64]);
        for i in 0..n {
            let rsq = innersq + i as f64 * delta;
            let s6 = 1.0 / (rsq * rsq * rsq);
            out[DATA_HEADER + i] = 4.0 * (s6 * s6 - s6);
            out[DATA_HEADER + n + i] = 24.0 * (2.0 * s6 * s6 - s6) / rsq;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pair::{MAX_ROW, Words, fill_row};

    #[test]
    fn interpolation_is_lammps_linear_in_r2_and_nan_below_the_table() {
        // Three points in r^2 (1, 2, 3): e = 10 r^2, f = -r^2.
        let data = [1.0, 1.0, 1.0, 3.0, 10.0, 20.0, 30.0, -1.0, -2.0, -3.0];
        let c = Coeffs {
            params: &[],
            cutoff: 3f64.sqrt(),
            data: &data,
        };
        let r = Table::reference(&c, 2.5);
        assert_eq!((r.energy, r.fpair), (25.0, -2.5));
        assert!(Table::reference(&c, 0.9).fpair.is_nan());
        let mut table = [0.0f32; MAX_ROW + 8];
        let (row, rest) = table.split_at_mut(6);
        fill_row::<Table>(&c, false, row, &mut rest[..8], 6).unwrap();
        assert_eq!(table[6..14], [-1.0, -1.0, 10.0, 10.0, -2.0, -1.0, 20.0, 10.0]);
        let w = Words {
            row: core::array::from_fn(|k| table[k]),
            table: &table,
        };
        assert_eq!(Table::energy_force(&w, 2.5f32), (25.0, -2.5));
        assert_eq!(Table::energy_force(&w, 1.5f32), (15.0, -1.5));
        // The top of the last segment (x = 2): its upper end.
        assert_eq!(Table::force(&w, 3.0f32), -3.0);
        assert!(Table::force(&w, 0.9f32).is_nan());
        // An index far off the table reads inside it (NaN or a word of it).
        let far = Table::force(&w, 1e30f32);
        assert!(far.is_finite());
        // Malformed data is refused, named.
        let short = Coeffs {
            data: &data[..9],
            ..c
        };
        let e = fill_row::<Table>(&short, false, &mut [0.0; 8], &mut [], 0).unwrap_err();
        assert_eq!(e.name, "table data length");
        let bad_cut = Coeffs { cutoff: 2.0, ..c };
        let e = fill_row::<Table>(&bad_cut, false, &mut [0.0; 8], &mut [], 0).unwrap_err();
        assert_eq!(e.name, "table outer radius squared");
    }

    #[test]
    fn the_example_follows_lennard_jones_within_its_interpolation_error() {
        let mut data = [0.0; DATA_HEADER + 2 * EXAMPLE_POINTS];
        Table::example_data(2.5, &mut data);
        let c = Coeffs {
            params: &[],
            cutoff: 2.5,
            data: &data,
        };
        for k in 0..100 {
            let r = 0.8 + 0.017 * k as f64;
            let r2 = r * r;
            let s6 = 1.0 / (r2 * r2 * r2);
            let f = 24.0 * (2.0 * s6 * s6 - s6) / r2;
            let got = Table::reference(&c, r2).fpair;
            assert!((got - f).abs() <= 3e-3 * (f.abs() + 1.0), "r {r}: {got} vs {f}");
        }
    }
}
