//! Floating-point semantics of PTX as sm_90 executes it: IEEE
//! round-to-nearest arithmetic is the host's, with every NaN result made the
//! canonical `0x7fffffff` (the hardware's); directed rounding, flush-to-zero,
//! PTX `min`/`max`, conversions with saturation here; the approximate
//! instructions the shipped PTX uses (`rsqrt.approx.ftz.f32`,
//! `rcp.approx.ftz.f32`) return the H200's bits ([`crate::mufu`]).
//!
//! [`rsqrt_f32`] (correctly rounded `1/sqrt(x)`) and the other approximate
//! instructions computed exactly rounded or through `f64` serve only
//! `SOFTCUDA_MUFU=ieee` ([`crate::mufu`]'s module docs): under the default
//! model the decoder refuses approximate instructions whose hardware bits are
//! not captured.
//! (Over 600 lines: PTX float semantics and their unit tests in one place.)

use std::cmp::Ordering;

use crate::ir::{NumTy, Rnd};

/// The NaN sm_90 produces for any f32 operation with a NaN result
/// (`0 * inf`, `inf - inf`, `sqrt(-1)`, a NaN operand, ...): `0x7fffffff`,
/// whatever the operands' payloads (CUDA C++ Programming Guide, "Floating-point
/// standard": "the result of a single-precision floating-point operation
/// involving one or more input NaNs is the quiet NaN of bit pattern
/// 0x7fffffff"; the H200 returned it for `0 * inf`, `inf - inf` and
/// `fma(0, inf, 0)`, issue 24).
#[inline(always)]
pub fn canonical(x: f32) -> f32 {
    if x.is_nan() {
        f32::from_bits(crate::mufu::CANONICAL_NAN)
    } else {
        x
    }
}

/// Subnormal to sign-preserving zero.
#[inline(always)]
pub fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

/// The next `f32` toward +infinity (`x` not NaN).
pub fn next_up(x: f32) -> f32 {
    if x == f32::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f32::from_bits(1);
    }
    let b = x.to_bits();
    f32::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

/// The next `f32` toward -infinity (`x` not NaN).
pub fn next_down(x: f32) -> f32 {
    -next_up(-x)
}

/// Rounds the exact value `s + e` (`s` the f64 rounding of it, `e` the exact
/// remainder) to f32 in direction `rnd`.
fn round_f32(s: f64, e: f64, rnd: Rnd) -> f32 {
    let r = s as f32;
    if r.is_nan() {
        return r;
    }
    // Sign of (r - (s + e)), exactly: r - s is exact (r is within one f32
    // ulp of s), and rounding the final subtraction cannot flip its sign.
    let diff = if r.is_infinite() {
        if r > 0.0 { 1.0 } else { -1.0 }
    } else {
        (r as f64 - s) - e
    };
    let exact_neg = (s + e) < 0.0 || (s + e == 0.0 && s.is_sign_negative());
    match rnd {
        Rnd::Rz => {
            if !exact_neg && diff > 0.0 {
                next_down(r)
            } else if exact_neg && diff < 0.0 {
                next_up(r)
            } else {
                r
            }
        }
        Rnd::Rm => {
            if diff > 0.0 {
                next_down(r)
            } else {
                r
            }
        }
        Rnd::Rp => {
            if diff < 0.0 {
                next_up(r)
            } else {
                r
            }
        }
        _ => r,
    }
}

/// `add.rz/rm/rp.f32`.
pub fn add_directed(a: f32, b: f32, rnd: Rnd) -> f32 {
    let (a, b) = (a as f64, b as f64);
    let s = a + b;
    if !s.is_finite() {
        return round_f32(s, 0.0, rnd);
    }
    // TwoSum: the exact error of s.
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    round_f32(s, e, rnd)
}

/// `mul.rz/rm/rp.f32` (the product of two f32 is exact in f64).
pub fn mul_directed(a: f32, b: f32, rnd: Rnd) -> f32 {
    round_f32(a as f64 * b as f64, 0.0, rnd)
}

/// PTX `min.f32`: a NaN operand is ignored (NaN only if both are), and
/// `-0 < +0`.
#[inline(always)]
pub fn min32(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        return if b.is_nan() {
            f32::from_bits(0x7fff_ffff)
        } else {
            b
        };
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        return if a.is_sign_negative() { a } else { b };
    }
    if a < b { a } else { b }
}

/// PTX `max.f32`.
#[inline(always)]
pub fn max32(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        return if b.is_nan() {
            f32::from_bits(0x7fff_ffff)
        } else {
            b
        };
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        return if a.is_sign_negative() { b } else { a };
    }
    if a > b { a } else { b }
}

/// PTX `min.f64`.
pub fn min64(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        return if a.is_sign_negative() { a } else { b };
    }
    if a < b { a } else { b }
}

/// PTX `max.f64`.
pub fn max64(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == b {
        return if a.is_sign_negative() { b } else { a };
    }
    if a > b { a } else { b }
}

/// `(mantissa, exponent)` with an odd (or zero) integer mantissa: `x = m 2^e`.
fn decompose(x: f64) -> (u64, i32) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), exp - 1075)
    };
    if m == 0 {
        return (0, 0);
    }
    let tz = m.trailing_zeros();
    (m >> tz, e + tz as i32)
}

/// Sign of `m^2 x - 1` for positive finite `m` (at most 26 significant bits)
/// and positive normal `x`, exactly.
fn cmp_square_times(m: f64, x: f32) -> Ordering {
    let (mm, me) = decompose(m);
    let (xm, xe) = decompose(x as f64);
    let prod = (mm as u128) * (mm as u128) * (xm as u128);
    let e = 2 * me + xe;
    if e >= 0 {
        // prod >= 1, so prod 2^e >= 1; equal only if both are 1.
        if prod == 1 && e == 0 {
            Ordering::Equal
        } else {
            Ordering::Greater
        }
    } else if -e >= 127 {
        // prod < 2^80 < 2^127 <= 2^-e.
        Ordering::Less
    } else {
        prod.cmp(&(1u128 << (-e)))
    }
}

/// The correctly rounded `1/sqrt(x)` with inputs flushed to zero: `+0 ->
/// +inf`, `-0 -> -inf`, negative -> NaN, `+inf -> +0`. What
/// `rsqrt.approx.ftz.f32` computes under `SOFTCUDA_MUFU=ieee` (the hardware's
/// bits are [`crate::mufu::rsqrt`]).
pub fn rsqrt_f32(x: f32) -> f32 {
    let x = ftz32(x);
    if x.is_nan() || x < 0.0 {
        return f32::from_bits(0x7fff_ffff);
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        };
    }
    if x == f32::INFINITY {
        return 0.0;
    }
    let y = 1.0 / (x as f64).sqrt();
    let r = y as f32;
    // y is within about 2^-51 (relative) of the exact value; the f32
    // rounding of y can only be wrong if y lies that close to a midpoint
    // between two f32 values. Then decide exactly.
    let lo_mid = (r as f64 + next_down(r) as f64) * 0.5;
    let hi_mid = (r as f64 + next_up(r) as f64) * 0.5;
    let tol = y * f64::powi(2.0, -48);
    if (y - hi_mid).abs() <= tol {
        // exact > hi_mid  <=>  1 > hi_mid^2 x
        return if cmp_square_times(hi_mid, x) == Ordering::Less {
            next_up(r)
        } else {
            r
        };
    }
    if (y - lo_mid).abs() <= tol {
        // exact < lo_mid  <=>  lo_mid^2 x > 1
        return if cmp_square_times(lo_mid, x) == Ordering::Greater {
            next_down(r)
        } else {
            r
        };
    }
    r
}

/// Correctly rounded `1/x` (`rcp.rn.f32`; `rcp.approx.ftz.f32` only under
/// `SOFTCUDA_MUFU=ieee`).
pub fn rcp_f32(x: f32, ftz: bool) -> f32 {
    let x = if ftz { ftz32(x) } else { x };
    let r = 1.0 / x;
    if ftz { ftz32(r) } else { r }
}

/// Rounds a float to an integer-valued float per `.rni/.rzi/.rmi/.rpi`.
pub fn round_int(x: f64, rnd: Rnd) -> f64 {
    match rnd {
        Rnd::Rzi | Rnd::Rz => x.trunc(),
        Rnd::Rmi | Rnd::Rm => x.floor(),
        Rnd::Rpi | Rnd::Rp => x.ceil(),
        _ => x.round_ties_even(),
    }
}

/// Value of `bits` (zero-extended register contents) as a signed or
/// unsigned integer of type `t`.
fn int_value(bits: u64, t: NumTy) -> i128 {
    match t {
        NumTy::U(w) => {
            if w >= 64 {
                bits as i128
            } else {
                (bits & ((1u64 << w) - 1)) as i128
            }
        }
        NumTy::S(w) => {
            let sh = 64 - w as u32;
            (((bits << sh) as i64) >> sh) as i128
        }
        _ => 0,
    }
}

fn int_range(t: NumTy) -> (i128, i128) {
    match t {
        NumTy::U(w) => (0, (1i128 << w) - 1),
        NumTy::S(w) => (-(1i128 << (w - 1)), (1i128 << (w - 1)) - 1),
        _ => (0, 0),
    }
}

fn int_bits(v: i128, t: NumTy) -> u64 {
    match t {
        NumTy::U(w) | NumTy::S(w) => {
            if w >= 64 {
                v as u64
            } else {
                (v as u64) & ((1u64 << w) - 1)
            }
        }
        _ => 0,
    }
}

/// Integer to f32 with directed rounding.
fn int_to_f32(v: i128, rnd: Rnd) -> f32 {
    let r = v as f32;
    let rv = r as f64 as i128; // exact: |r| < 2^128 and integral
    let diff = rv.cmp(&v);
    match (rnd, diff) {
        (Rnd::Rz, Ordering::Greater) if v >= 0 => next_down(r),
        (Rnd::Rz, Ordering::Less) if v < 0 => next_up(r),
        (Rnd::Rm, Ordering::Greater) => next_down(r),
        (Rnd::Rp, Ordering::Less) => next_up(r),
        _ => r,
    }
}

/// Integer to f64 with directed rounding.
fn int_to_f64(v: i128, rnd: Rnd) -> f64 {
    let r = v as f64;
    let rv = r as i128;
    let up = |x: f64| {
        f64::from_bits(if x >= 0.0 {
            x.to_bits() + 1
        } else {
            x.to_bits() - 1
        })
    };
    let down = |x: f64| -up(-x);
    match (rnd, rv.cmp(&v)) {
        (Rnd::Rz, Ordering::Greater) if v > 0 => down(r),
        (Rnd::Rz, Ordering::Less) if v < 0 => up(r),
        (Rnd::Rm, Ordering::Greater) => down(r),
        (Rnd::Rp, Ordering::Less) => up(r),
        _ => r,
    }
}

/// `cvt`: converts the register bits `a` of type `from` to the bits of type
/// `to` (zero-extended to 64), with PTX's rounding and saturation rules:
/// float-to-integer conversions always saturate and map NaN to 0.
pub fn convert(a: u64, from: NumTy, to: NumTy, rnd: Rnd, sat: bool, ftz: bool) -> u64 {
    let as_float = |bits: u64, t: NumTy| -> f64 {
        match t {
            NumTy::F32 => {
                let f = f32::from_bits(bits as u32);
                (if ftz { ftz32(f) } else { f }) as f64
            }
            _ => f64::from_bits(bits),
        }
    };
    let sat01 = |x: f64| -> f64 { if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) } };
    match (from, to) {
        (NumTy::U(_) | NumTy::S(_), NumTy::U(_) | NumTy::S(_)) => {
            let v = int_value(a, from);
            let v = if sat {
                let (lo, hi) = int_range(to);
                v.clamp(lo, hi)
            } else {
                v
            };
            int_bits(v, to)
        }
        (NumTy::F32 | NumTy::F64, NumTy::U(_) | NumTy::S(_)) => {
            let x = as_float(a, from);
            if x.is_nan() {
                return 0;
            }
            let x = round_int(x, rnd);
            let (lo, hi) = int_range(to);
            let v = if x <= lo as f64 {
                lo
            } else if x >= hi as f64 {
                hi
            } else {
                x as i128
            };
            int_bits(v, to)
        }
        (NumTy::U(_) | NumTy::S(_), NumTy::F32) => {
            let v = int_value(a, from);
            let mut r = int_to_f32(v, rnd);
            if sat {
                r = sat01(r as f64) as f32;
            }
            r.to_bits() as u64
        }
        (NumTy::U(_) | NumTy::S(_), NumTy::F64) => {
            let v = int_value(a, from);
            let mut r = int_to_f64(v, rnd);
            if sat {
                r = sat01(r);
            }
            r.to_bits()
        }
        (NumTy::F32 | NumTy::F64, NumTy::F32) => {
            let x = as_float(a, from);
            let mut r = match rnd {
                Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi => round_int(x, rnd) as f32,
                Rnd::Rz | Rnd::Rm | Rnd::Rp if from == NumTy::F64 => round_f32(x, 0.0, rnd),
                _ => x as f32,
            };
            if sat {
                r = sat01(r as f64) as f32;
            }
            if ftz {
                r = ftz32(r);
            }
            if r.is_nan() && from == NumTy::F64 && !sat {
                // The H200's cvt.rn.f32.f64 keeps the sign and the
                // payload's top bits, quieted (0xfff8000012345678 gave
                // 0xffc00000), as its f64 path keeps payloads.
                let b = a & ((1 << 63) | ((1 << 52) - 1));
                let bits =
                    ((b >> 63) << 31) as u32 | 0x7fc0_0000 | ((b >> 29) as u32 & 0x003f_ffff);
                return bits as u64;
            }
            if r.is_nan() {
                r = f32::from_bits(0x7fff_ffff);
            }
            r.to_bits() as u64
        }
        (NumTy::F32 | NumTy::F64, NumTy::F64) => {
            let x = as_float(a, from);
            let mut r = match rnd {
                Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi => round_int(x, rnd),
                _ => x,
            };
            if sat {
                r = sat01(r);
            }
            r.to_bits()
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rsqrt_exact_slow(x: f32) -> f32 {
        // Bisection on f32 candidates with the exact comparison.
        let y = (1.0 / (x as f64).sqrt()) as f32;
        let mut best = y;
        for c in [
            next_down(next_down(y)),
            next_down(y),
            y,
            next_up(y),
            next_up(next_up(y)),
        ] {
            let lo = (c as f64 + next_down(c) as f64) * 0.5;
            let hi = (c as f64 + next_up(c) as f64) * 0.5;
            // t in (lo, hi)?  t > lo <=> lo^2 x < 1;  t < hi <=> hi^2 x > 1
            if cmp_square_times(lo, x) != Ordering::Greater
                && cmp_square_times(hi, x) != Ordering::Less
            {
                best = c;
            }
        }
        best
    }

    #[test]
    fn rsqrt_is_correctly_rounded_and_flushes() {
        let mut s = 0x1234_5678u32;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let x = f32::from_bits((s & 0x7fff_ffff) % 0x7f00_0000 + 0x0080_0000);
            assert_eq!(rsqrt_f32(x), rsqrt_exact_slow(x), "x = {x:e}");
        }
        assert_eq!(rsqrt_f32(4.0), 0.5);
        assert_eq!(rsqrt_f32(0.0), f32::INFINITY);
        assert_eq!(rsqrt_f32(-0.0), f32::NEG_INFINITY);
        assert_eq!(rsqrt_f32(f32::from_bits(1)), f32::INFINITY); // FTZ
        assert!(rsqrt_f32(-1.0).is_nan());
        assert_eq!(rsqrt_f32(f32::INFINITY), 0.0);
    }

    #[test]
    fn directed_addition_and_multiplication() {
        let a = 1.0f32;
        let b = f32::EPSILON / 4.0; // below half an ulp of 1
        assert_eq!(add_directed(a, b, Rnd::Rz), 1.0);
        assert_eq!(add_directed(a, b, Rnd::Rm), 1.0);
        assert_eq!(add_directed(a, b, Rnd::Rp), next_up(1.0));
        assert_eq!(add_directed(-a, -b, Rnd::Rz), -1.0);
        assert_eq!(add_directed(-a, -b, Rnd::Rm), next_down(-1.0));
        assert_eq!(add_directed(f32::MAX, f32::MAX, Rnd::Rz), f32::MAX);
        let x = 1.0 + f32::EPSILON;
        assert_eq!(mul_directed(x, x, Rnd::Rz), 1.0 + 2.0 * f32::EPSILON);
        assert_eq!(
            mul_directed(x, x, Rnd::Rp),
            next_up(1.0 + 2.0 * f32::EPSILON)
        );
    }

    #[test]
    fn conversions_saturate_and_round() {
        let f = |x: f64| x.to_bits();
        assert_eq!(
            convert(f(-1.5), NumTy::F64, NumTy::U(64), Rnd::Rzi, false, false),
            0
        );
        assert_eq!(
            convert(f(1e30), NumTy::F64, NumTy::U(32), Rnd::Rzi, false, false),
            u32::MAX as u64
        );
        assert_eq!(
            convert(
                f(f64::NAN),
                NumTy::F64,
                NumTy::S(32),
                Rnd::Rni,
                false,
                false
            ),
            0
        );
        assert_eq!(
            convert(f(2.5), NumTy::F64, NumTy::S(32), Rnd::Rni, false, false),
            2
        );
        assert_eq!(
            convert(f(-2.5), NumTy::F64, NumTy::S(32), Rnd::Rmi, false, false) as u32,
            -3i32 as u32
        );
        assert_eq!(
            convert(
                0xffff_ffff,
                NumTy::S(32),
                NumTy::S(64),
                Rnd::None,
                false,
                false
            ),
            u64::MAX
        );
        assert_eq!(
            convert(
                0xffff_ffff,
                NumTy::U(32),
                NumTy::U(64),
                Rnd::None,
                false,
                false
            ),
            0xffff_ffff
        );
        assert_eq!(
            convert(300, NumTy::U(32), NumTy::U(8), Rnd::None, true, false),
            255
        );
        let big = (1u64 << 53) + 1;
        assert_eq!(
            f64::from_bits(convert(
                big,
                NumTy::U(64),
                NumTy::F64,
                Rnd::Rn,
                false,
                false
            )),
            (1u64 << 53) as f64
        );
        assert_eq!(
            f64::from_bits(convert(
                big,
                NumTy::U(64),
                NumTy::F64,
                Rnd::Rp,
                false,
                false
            )),
            ((1u64 << 53) + 2) as f64
        );
        assert_eq!(
            f32::from_bits(
                convert(16_777_217, NumTy::U(32), NumTy::F32, Rnd::Rz, false, false) as u32
            ),
            16_777_216.0
        );
    }

    #[test]
    fn min_max_ignore_nan() {
        assert_eq!(min32(f32::NAN, 1.0), 1.0);
        assert_eq!(max32(2.0, f32::NAN), 2.0);
        assert!(min32(f32::NAN, f32::NAN).is_nan());
        assert!(min32(0.0, -0.0).is_sign_negative());
        assert!(!max32(-0.0, 0.0).is_sign_negative());
        assert_eq!(min32(f32::INFINITY, f32::MAX), f32::MAX);
    }
}
