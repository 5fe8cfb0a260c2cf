//! What a pair law needs of a lane beyond [`Real`]: constants, a
//! reciprocal, rounding, exact powers of two, `min`/`max`, a compare and
//! select; and the functions built from them that `Real` lacks, [`exp`],
//! [`sqrt`], [`sin_cos`] and [`abs`].
//!
//! Everything here is FMAs, products, sums and exact bit operations on the
//! exponent field, plus the two approximate instructions the kernels already
//! use on the GPU (`rcp.approx.ftz` for [`Lane::recip`], `rsqrt.approx.ftz`
//! for [`Real::rsqrt`]): no `ex2.approx`, `lg2.approx` or other MUFU
//! function, because the software CUDA device (`softcuda`) reproduces only
//! those two bit for bit, and the host's SIMD loops have no such instruction.

use crate::interaction::Real;

/// A lane of the pair loops: `f32` on the GPU and in the emulator, a SIMD
/// vector in the host's CPU backend (`nbody-host` implements it there).
pub trait Lane: Real {
    /// The constant `v` in every lane. A value of `Self` is the proof that
    /// the CPU has its instruction set, so constants are made from one.
    fn lit(self, v: f32) -> Self;
    /// `1 / self`: `rcp.approx.ftz.f32` on the GPU (within 1 ulp), exact on
    /// the host for `f32`, estimate and Newton step(s) for vectors (a few
    /// ulps).
    fn recip(self) -> Self;
    /// The nearest integer, ties to even.
    fn round_even(self) -> Self;
    /// `2^self` for an integer-valued `self` in `[-126, 127]`, built from
    /// the exponent bits (exact).
    fn pow2i(self) -> Self;
    /// The smaller of the two, lane by lane.
    fn min(self, other: Self) -> Self;
    /// The larger of the two, lane by lane.
    fn max(self, other: Self) -> Self;
    /// The integer toward zero (`cvt.rzi.f32.f32` on the GPU): the index
    /// of a table's segment.
    fn trunc(self) -> Self;
    /// `yes` in the lanes where `self < bound`, `no` elsewhere (and where
    /// either is NaN): one compare and one select.
    fn lt_select(self, bound: Self, yes: Self, no: Self) -> Self;
}

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.rcp.approx.ftz.f"]
    fn nvvm_rcp_approx_ftz(x: f32) -> f32;
}

/// `1 / x`: one `MUFU.RCP` on the GPU (`rcp.approx.ftz.f32`, within 1 ulp),
/// exact on the host.
#[inline(always)]
pub fn rcp(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: a pure NVVM intrinsic, defined for every input.
        unsafe { nvvm_rcp_approx_ftz(x) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        1.0 / x
    }
}

impl Lane for f32 {
    #[inline(always)]
    fn lit(self, v: f32) -> f32 {
        v
    }

    #[inline(always)]
    fn recip(self) -> f32 {
        rcp(self)
    }

    #[inline(always)]
    fn round_even(self) -> f32 {
        crate::periodic::rint(self)
    }

    #[inline(always)]
    fn pow2i(self) -> f32 {
        // Exponent field k + 127 in 1..=254: a normal power of two.
        f32::from_bits(((self as i32 + 127) as u32) << 23)
    }

    #[inline(always)]
    fn min(self, other: f32) -> f32 {
        f32::min(self, other)
    }

    #[inline(always)]
    fn max(self, other: f32) -> f32 {
        f32::max(self, other)
    }

    #[inline(always)]
    fn trunc(self) -> f32 {
        #[cfg(target_arch = "nvptx64")]
        {
            core::intrinsics::truncf32(self)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            libm::truncf(self)
        }
    }

    #[inline(always)]
    fn lt_select(self, bound: f32, yes: f32, no: f32) -> f32 {
        if self < bound { yes } else { no }
    }
}

/// `ln 2` split for Cody–Waite range reduction: `LN2_HI` has 8 low zero
/// bits, so `k LN2_HI` is exact for `|k| < 2^8`.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// `e^x`, within 2 `f32` ulps for `x` in `[-87, 88]`, in 12 FMAs,
/// products and sums plus the clamp, the rounding and the exponent bits
/// (Cephes' `expf`): `x = k ln 2 + r` with `k` the nearest
/// integer to `x / ln 2` (Cody–Waite, two FMAs), a degree-7 polynomial for
/// `e^r` on `|r| <= ln 2 / 2`, times `2^k` from the exponent bits.
///
/// Arguments are clamped to `[-87, 88]` first: below, the result is
/// `e^-87 = 1.6e-38` rather than a denormal or 0 (an absolute error under
/// `2e-38`); above, `e^88 = 1.65e38` rather than overflowing to infinity.
#[inline(always)]
pub fn exp<R: Lane>(x: R) -> R {
    let x = x.max(x.lit(-87.0)).min(x.lit(88.0));
    let k = (x * x.lit(core::f32::consts::LOG2_E)).round_even();
    let r = k.mul_add(x.lit(-LN2_HI), x);
    let r = k.mul_add(x.lit(-LN2_LO), r);
    let p = r.mul_add(x.lit(1.987_569_1e-4), x.lit(1.398_199_9e-3));
    let p = r.mul_add(p, x.lit(8.333_452e-3));
    let p = r.mul_add(p, x.lit(4.166_579_6e-2));
    let p = r.mul_add(p, x.lit(1.666_666_6e-1));
    let p = r.mul_add(p, x.lit(0.5));
    let p = (r * r).mul_add(p, r) + x.lit(1.0);
    p * k.pow2i()
}

/// `sqrt(x)` for `x > 0` as `x * rsqrt(x)`: one `MUFU.RSQ` and a product on
/// the GPU (relative error below `2^-22`), the host's `rsqrt` elsewhere.
#[inline(always)]
pub fn sqrt<R: Lane>(x: R) -> R {
    x * x.rsqrt()
}

/// `|x|` as `max(x, -x)`.
#[inline(always)]
pub fn abs<R: Lane>(x: R) -> R {
    x.max(-x)
}

/// The exponential-repulsion half that `born` and `buck` share (LAMMPS's
/// `pair_born.cpp` and `pair_buck.cpp` have it too), written once so the
/// two laws keep the same rounding: `r^-2`, `r^-6`, `r` and
/// `e^(exponent(r))` from `r^2` (one reciprocal, one `rsqrt`, one [`exp`]).
#[inline(always)]
pub fn exp_repulsion<R: Lane>(r2: R, exponent: impl FnOnce(R) -> R) -> ExpRepulsion<R> {
    let r2i = r2.recip();
    let r6i = r2i * r2i * r2i;
    let r = sqrt(r2);
    ExpRepulsion {
        r2i,
        r6i,
        r,
        e: exp(exponent(r)),
    }
}

/// What [`exp_repulsion`] computes once per pair for the energy and the
/// force alike.
#[derive(Clone, Copy)]
pub struct ExpRepulsion<R> {
    /// `r^-2`.
    pub r2i: R,
    /// `r^-6`.
    pub r6i: R,
    /// `r`.
    pub r: R,
    /// `e^(exponent(r))`, the repulsion's shape.
    pub e: R,
}

impl<R: Lane> ExpRepulsion<R> {
    /// `F / r = (a_rho r e + dispersion) / r^2`, with `a_rho = A / rho`
    /// (LAMMPS's `born1`, `buck1`) and `dispersion` the law's `r^-n` terms of
    /// `-r dU/dr`. (A closure, evaluated after `a_rho r`, so each law's
    /// instructions come out in the order they had before the helper.)
    #[inline(always)]
    pub fn fpair(self, a_rho: R, dispersion: impl FnOnce(Self) -> R) -> R {
        let rep = a_rho * self.r;
        rep.mul_add(self.e, dispersion(self)) * self.r2i
    }

    /// `u = A e + dispersion`, with `dispersion` the law's `r^-n` terms.
    #[inline(always)]
    pub fn energy(self, a: R, dispersion: R) -> R {
        a.mul_add(self.e, dispersion)
    }
}

/// `pi` in three parts for Cody–Waite range reduction (Cephes' `DP1..3`
/// times 4): `k PI_A` and `k PI_B` are exact for `|k| < 2^8`.
const PI_A: f32 = 3.140_625;
const PI_B: f32 = 9.675_026e-4;
const PI_C: f32 = 1.509_958e-7;

/// `(sin x, cos x)`, each within `2e-7` absolute for `|x| <= 100`, in
/// about 20 FMAs, products and sums plus two roundings: `x = k pi + r` with
/// `k` the nearest integer to `x / pi` (Cody–Waite in three FMAs, so `|r|
/// <= pi / 2`), least-squares polynomials of degree 11 (`sin r`, odd) and
/// 12 (`cos r`, even) on `[-pi/2, pi/2]`, times `(-1)^k` (from the parity
/// of `k`: `1 - 4 |k/2 - round(k/2)|`, no select).
#[inline(always)]
pub fn sin_cos<R: Lane>(x: R) -> (R, R) {
    let k = (x * x.lit(core::f32::consts::FRAC_1_PI)).round_even();
    let r = k.mul_add(x.lit(-PI_A), x);
    let r = k.mul_add(x.lit(-PI_B), r);
    let r = k.mul_add(x.lit(-PI_C), r);
    let h = k * x.lit(0.5);
    let sign = abs(h - h.round_even()).mul_add(x.lit(-4.0), x.lit(1.0));
    let t = r * r;
    let s = t.mul_add(x.lit(-2.384_198_8e-8), x.lit(2.752_230_4e-6));
    let s = t.mul_add(s, x.lit(-1.984_079_6e-4));
    let s = t.mul_add(s, x.lit(8.333_33e-3));
    let s = t.mul_add(s, x.lit(-0.166_666_67));
    let s = (r * t).mul_add(s, r);
    let c = t.mul_add(x.lit(1.991_815e-9), x.lit(-2.752_552_3e-7));
    let c = t.mul_add(c, x.lit(2.480_106_6e-5));
    let c = t.mul_add(c, x.lit(-1.388_888_5e-3));
    let c = t.mul_add(c, x.lit(4.166_666_6e-2));
    let c = t.mul_add(c, x.lit(-0.5));
    let c = t.mul_add(c, x.lit(1.0));
    (sign * s, sign * c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_two_ulps_of_f64() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x <= 88.0 {
            let got = exp(x) as f64;
            let want = libm::exp(x as f64);
            let ulp = (want as f32).to_bits();
            let ulp = f32::from_bits(ulp + 1) as f64 - f32::from_bits(ulp) as f64;
            worst = worst.max((got - want).abs() / ulp);
            x += 0.013;
        }
        assert!(worst <= 2.0, "worst error {worst} ulps");
        assert_eq!(exp(0.0f32), 1.0);
        // Clamped, never denormal, zero or infinite.
        assert_eq!(exp(-200.0f32), exp(-87.0f32));
        assert!(exp(-87.0f32) > 1.5e-38 && exp(-87.0f32) < 1.7e-38);
        assert_eq!(exp(500.0f32), exp(88.0f32));
        assert!(exp(88.0f32).is_finite());
    }

    #[test]
    fn powers_of_two_are_exact_and_sqrt_is_close() {
        for k in -126..=127 {
            assert_eq!((k as f32).pow2i(), libm::ldexpf(1.0, k), "2^{k}");
        }
        for x in [1e-30f32, 0.5, 2.0, 6.25, 1e30] {
            let s = sqrt(x) as f64;
            assert!((s - (x as f64).sqrt()).abs() <= 2e-7 * s, "sqrt {x}");
        }
        assert_eq!(2.5f32.round_even(), 2.0);
        assert_eq!((-3.5f32).round_even(), -4.0);
        assert_eq!(2.9f32.trunc(), 2.0);
        assert_eq!((-2.9f32).trunc(), -2.0);
        assert_eq!(1.0f32.lt_select(2.0, 5.0, 6.0), 5.0);
        assert_eq!(2.0f32.lt_select(2.0, 5.0, 6.0), 6.0);
        assert_eq!(f32::NAN.lt_select(2.0, 5.0, 6.0), 6.0);
        assert_eq!(abs(-1.5f32), 1.5);
    }

    #[test]
    fn sin_and_cos_are_within_2e_7_absolute() {
        let (mut ws, mut wc) = (0.0f64, 0.0f64);
        let mut x = -100.0f32;
        while x <= 100.0 {
            let (s, c) = sin_cos(x);
            ws = ws.max((s as f64 - libm::sin(x as f64)).abs());
            wc = wc.max((c as f64 - libm::cos(x as f64)).abs());
            x += 0.0007;
        }
        assert!(ws <= 2e-7 && wc <= 2e-7, "sin {ws:e}, cos {wc:e}");
        assert_eq!(sin_cos(0.0f32), (0.0, 1.0));
    }
}
