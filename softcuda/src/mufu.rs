//! sm_90's multi-function unit, bit for bit: `rsqrt.approx.ftz.f32` and
//! `rcp.approx.ftz.f32` as an H200 returns them (captured 2026-11-27,
//! driver 580.159.04, `scripts/gpu/capture_mufu.py`).
//!
//! The hardware's result for `x'` in the table's octave (`[1, 4)` for rsqrt,
//! `[1, 2)` for rcp) is `reference(x') + diff[x']` as u32 bit patterns, with
//! `reference` the f64 computation rounded to f32 (`(1 / sqrt(x as f64)) as
//! f32`, `(1 / x as f64) as f32`) and `diff` in -2..=1 (committed under
//! `softcuda/data/` as 2-bit codes, zlib; `scripts/softcuda-mufu-tables.py`
//! regenerates and checks them). Every other input follows by an exact
//! power-of-two scaling, checked on the GPU for a third of all 2^32 inputs
//! with no mismatch: for positive normal `x = x' 4^k`, `rsqrt(x) =
//! rsqrt(x') 2^-k`; for normal `x = ±x' 2^e`, `rcp(x) = ±rcp(x') 2^-e` while
//! the result is normal (below it: a zero of `x`'s sign, flushed).
//!
//! Specials. Measured: `+0` and positive subnormals (flushed) give `+inf`,
//! `+inf` gives `+0`, every NaN input and rsqrt of a negative normal give the
//! canonical NaN `0x7fffffff`. Not in the measured third (chunks of negative
//! zero, subnormals, infinity and NaNs), so taken from the PTX ISA's table
//! with the hardware's canonical NaN: `-0` and negative subnormals give
//! `-inf`, rsqrt(`-inf`) the canonical NaN, rcp(`-inf`) `-0`.

use std::sync::OnceLock;

/// How the interpreter computes PTX's approximate instructions
/// (`SOFTCUDA_MUFU`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Model {
    /// The H200's bits for `rsqrt.approx.ftz.f32` and `rcp.approx.ftz.f32`;
    /// every other approximate instruction (`sqrt/ex2/lg2/sin/cos/tanh.approx`,
    /// `div.approx/full`, non-`.ftz` or `f64` forms) is refused at decode
    /// until its bits are captured, never silently computed another way.
    #[default]
    Sm90,
    /// Every approximate instruction correctly rounded (or through `f64`):
    /// not a GPU's bits, but those of the Rust source the PTX comes from on
    /// the host (`1.0 / x` for `rcp`), so a test can check the compiled PTX
    /// against its source bit for bit.
    CorrectlyRounded,
}

impl Model {
    /// `sm90` or `ieee`, as `SOFTCUDA_MUFU` spells them.
    pub fn by_name(name: &str) -> Option<Model> {
        match name {
            "sm90" | "sm_90" => Some(Model::Sm90),
            "ieee" => Some(Model::CorrectlyRounded),
            _ => None,
        }
    }
}

/// The canonical NaN every sm_90 f32 operation produces.
pub const CANONICAL_NAN: u32 = 0x7fff_ffff;

static RSQRT_Z: &[u8] = include_bytes!("../data/sm90_rsqrt_diff.zlib");
static RCP_Z: &[u8] = include_bytes!("../data/sm90_rcp_diff.zlib");

/// Inputs in the rsqrt table: every f32 in `[1, 4)`.
pub const RSQRT_ENTRIES: usize = 1 << 24;
/// Inputs in the rcp table: every f32 in `[1, 2)`.
pub const RCP_ENTRIES: usize = 1 << 23;

struct Tables {
    rsqrt: Vec<u8>,
    rcp: Vec<u8>,
}

fn inflate(z: &[u8], entries: usize, name: &str) -> Vec<u8> {
    let v = miniz_oxide::inflate::decompress_to_vec_zlib(z)
        .unwrap_or_else(|e| panic!("softcuda/data/{name}: corrupt zlib stream ({e:?})"));
    assert_eq!(
        v.len(),
        entries / 4,
        "softcuda/data/{name}: {} bytes after inflating, expected {}",
        v.len(),
        entries / 4
    );
    v
}

/// Inflated once per process (about 6 MiB, a few tens of milliseconds).
fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| Tables {
        rsqrt: inflate(RSQRT_Z, RSQRT_ENTRIES, "sm90_rsqrt_diff.zlib"),
        rcp: inflate(RCP_Z, RCP_ENTRIES, "sm90_rcp_diff.zlib"),
    })
}

#[inline(always)]
fn code(packed: &[u8], i: usize) -> i32 {
    ((packed[i >> 2] >> ((i & 3) * 2)) & 3) as i32 - 2
}

/// The hardware's rsqrt minus the reference, in ulps, for the input with
/// bits `0x3f80_0000 + i` (`i < 2^24`).
pub fn rsqrt_diff(i: usize) -> i32 {
    code(&tables().rsqrt, i)
}

/// The hardware's rcp minus the reference, in ulps, for the input with bits
/// `0x3f80_0000 + i` (`i < 2^23`).
pub fn rcp_diff(i: usize) -> i32 {
    code(&tables().rcp, i)
}

/// `(1 / sqrt(x as f64)) as f32`: the tables' reference.
#[inline(always)]
pub fn rsqrt_reference(x: f32) -> f32 {
    (1.0 / (x as f64).sqrt()) as f32
}

/// `(1 / x as f64) as f32`: the tables' reference.
#[inline(always)]
pub fn rcp_reference(x: f32) -> f32 {
    (1.0 / x as f64) as f32
}

/// `rsqrt.approx.ftz.f32` as sm_90 computes it.
pub fn rsqrt(x: f32) -> f32 {
    let b = x.to_bits();
    let negative = b >> 31 != 0;
    let e = (b >> 23) & 0xff;
    let m = b & 0x7f_ffff;
    if e == 0xff {
        return if m != 0 || negative {
            f32::from_bits(CANONICAL_NAN)
        } else {
            0.0
        };
    }
    if e == 0 {
        // Zero or subnormal, flushed to a zero of the same sign.
        return if negative {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        };
    }
    if negative {
        return f32::from_bits(CANONICAL_NAN);
    }
    // x = x' 4^k with x' in [1, 4).
    let ue = e as i32 - 127;
    let k = ue.div_euclid(2);
    let i = (((ue - 2 * k) as u32) << 23 | m) as usize;
    let xr = f32::from_bits(0x3f80_0000 + i as u32);
    let hw = rsqrt_reference(xr).to_bits() as i32 + rsqrt_diff(i);
    // |k| <= 63 keeps the result's exponent within 63..=190: always normal.
    f32::from_bits((hw - (k << 23)) as u32)
}

/// `rcp.approx.ftz.f32` as sm_90 computes it.
pub fn rcp(x: f32) -> f32 {
    let b = x.to_bits();
    let sign = b & 0x8000_0000;
    let e = (b >> 23) & 0xff;
    let m = b & 0x7f_ffff;
    if e == 0xff {
        return f32::from_bits(if m != 0 { CANONICAL_NAN } else { sign });
    }
    if e == 0 {
        return f32::from_bits(sign | 0x7f80_0000);
    }
    // x = ±x' 2^e with x' in [1, 2).
    let i = m as usize;
    let xr = f32::from_bits(0x3f80_0000 | m);
    let hw = rcp_reference(xr).to_bits() as i32 + rcp_diff(i);
    let r = hw - ((e as i32 - 127) << 23);
    if r < 0x0080_0000 {
        // Below the normal range: flushed.
        return f32::from_bits(sign);
    }
    f32::from_bits(sign | r as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octave_entries_are_reference_plus_table() {
        for i in [0usize, 1, 12345, (1 << 23) - 1, 1 << 23, (1 << 24) - 1] {
            let x = f32::from_bits(0x3f80_0000 + i as u32);
            let want = rsqrt_reference(x).to_bits() as i32 + rsqrt_diff(i);
            assert_eq!(rsqrt(x).to_bits() as i32, want, "rsqrt {x:e}");
        }
        for i in [0usize, 1, 777, (1 << 23) - 1] {
            let x = f32::from_bits(0x3f80_0000 + i as u32);
            let want = rcp_reference(x).to_bits() as i32 + rcp_diff(i);
            assert_eq!(rcp(x).to_bits() as i32, want, "rcp {x:e}");
        }
        assert_eq!(rsqrt(1.0), 1.0);
        assert_eq!(rcp(1.0), 1.0);
    }
}
