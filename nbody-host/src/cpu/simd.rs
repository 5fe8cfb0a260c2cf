//! SIMD vectors of `f32` for the CPU force loops: one body per lane.
//!
//! The vector types themselves are in `simd/x86.rs` and `simd/arm.rs`, their
//! tests in `simd/tests.rs`.
//!
//! `F32x16` (AVX-512F), `F32x8` (AVX2 + FMA) and, on aarch64, `F32x4`
//! (NEON) wrap the `std::arch` vector types and implement [`Real`], so the
//! force loops run the very
//! formula of [`gpu_kernels::interaction`] with `LANES` bodies at a time; plain
//! `f32` is the one-lane fallback. Every operation maps to one instruction
//! except [`Real::rsqrt`]: the hardware estimate (`vrsqrt14ps`, relative
//! error below 2^-14, or `vrsqrtps`, below 1.5 * 2^-12) refined by one
//! Newton–Raphson step, which brings it to f32 accuracy (a few 1e-7).
//!
//! # The Newton–Raphson step
//! `y1 = (y0 / 2) * max(3 - x y0^2, 1)`, computed as `a = x y0`,
//! `e = 3 - a y0` (one FMA), with `vmaxps`, which returns its second operand
//! when the first is NaN. For positive normal `x`, `x y0^2` is within 2^-11
//! of 1, so `e` is about 2, the `max` changes nothing and this is the classic
//! step `y0 (3 - x y0^2) / 2`. The `max` handles the inputs where the
//! estimate is not finite and positive: `x = +0` (`y0 = +inf`, `a` NaN),
//! denormal `x` with `vrsqrtps`, which treats it as 0 as the GPU's `.ftz`
//! form does (`y0 = +inf`, `a = +inf`, `e = -inf`), and `x = +inf` (`y0 = 0`,
//! `a` NaN): `e` becomes 1 and `y1 = y0 / 2`, i.e. `+inf` or `0` again. So
//! `rsqrt(+0) = +inf` exactly as on the scalar path, and the self pair
//! contributes exactly 0 through
//! [`interaction`](gpu_kernels::interaction::interaction)'s guard. NaN or
//! negative `x` give NaN, as the estimate does. One instruction more than
//! the unguarded step; tested below against these cases for both types.
//!
//! # Safety: a capability, held by the compiler
//! Each vector type carries a zero-sized token of its instruction set
//! ([`HasAvx512`], [`HasAvx2Fma`], [`HasNeon`], see `super::isa`), and the
//! only constructors, [`Simd::splat`] and [`Simd::load`], take one; every
//! other operation makes its result from its operands, whose tokens it
//! passes on. Tokens come from run-time detection, or are minted (`unsafe`)
//! inside the `#[target_feature]` entry points of `super::loops`, whose
//! contract requires the features. So a value of these types exists only on
//! a CPU that has their instructions, which is what every `unsafe` block
//! below relies on. The methods are `#[inline(always)]`, so they compile
//! into those entry points with the features enabled.

use gpu_kernels::interaction::Real;

#[allow(
    unused_imports,
    reason = "each target uses the tokens of its own vector types"
)]
use super::isa::{HasAvx2Fma, HasAvx512, HasNeon};

/// What the force loops need beyond [`Real`]: construction from a
/// capability, loads, stores, lane sums and `f64` accumulation.
pub(crate) trait Simd: Real + Send + Sync + 'static {
    /// Bodies per vector.
    const LANES: usize;

    /// The proof that the CPU has this type's instruction set.
    type Cap: super::isa::Capability + Send + Sync;

    /// Per-lane `f64` accumulators (energy sums).
    type Wide: Copy;

    /// `v` in every lane.
    fn splat(cap: Self::Cap, v: f32) -> Self;

    /// The first `LANES` values of `src` (panics if shorter).
    fn load(cap: Self::Cap, src: &[f32]) -> Self;

    /// The capability this value carries (for constants next to it).
    fn cap(self) -> Self::Cap;

    /// Writes the lanes to the first `LANES` values of `dst` (panics if shorter).
    fn store(self, dst: &mut [f32]);

    /// The bare hardware estimate of `1 / sqrt(self)` (`vrsqrt14ps`,
    /// `vrsqrtps`; `frsqrte` with one step on NEON, whose estimate has only
    /// 8 bits; exact for `f32`), for the unguarded hot loops, which apply
    /// their own Newton–Raphson step (`super::loops::pull_fast`). Only
    /// meaningful for positive normal inputs.
    fn rsqrt_estimate(self) -> Self;

    /// `1 / sqrt(self)` with a correctly rounded square root and division,
    /// as the scalar `1.0 / x.sqrt()` (the energy's potential).
    fn recip_sqrt(self) -> Self;

    /// `b - self * a` with one rounding (`vfnmadd`).
    fn neg_mul_add(self, a: Self, b: Self) -> Self;

    /// The sum of the lanes, in a fixed order.
    fn sum(self) -> f32;

    /// Zeroed `f64` accumulators.
    fn wide_zero(cap: Self::Cap) -> Self::Wide;

    /// `acc` plus the lanes converted to `f64` (exactly) and added (rounded in `f64`).
    fn wide_add(self, acc: Self::Wide) -> Self::Wide;

    /// `sum_l acc[l] * weights[l]` in `f64`, lanes in order.
    fn wide_dot(acc: Self::Wide, weights: Self) -> f64;
}

impl Simd for f32 {
    const LANES: usize = 1;
    type Cap = ();
    type Wide = f64;

    #[inline(always)]
    fn splat(_: (), v: f32) -> Self {
        v
    }

    #[inline(always)]
    fn load(_: (), src: &[f32]) -> Self {
        src[0]
    }

    #[inline(always)]
    fn cap(self) {}

    #[inline(always)]
    fn store(self, dst: &mut [f32]) {
        dst[0] = self;
    }

    #[inline(always)]
    fn rsqrt_estimate(self) -> Self {
        1.0 / self.sqrt()
    }

    #[inline(always)]
    fn recip_sqrt(self) -> Self {
        1.0 / self.sqrt()
    }

    #[inline(always)]
    fn neg_mul_add(self, a: Self, b: Self) -> Self {
        (-self).mul_add(a, b)
    }

    #[inline(always)]
    fn sum(self) -> f32 {
        self
    }

    #[inline(always)]
    fn wide_zero(_: ()) -> f64 {
        0.0
    }

    #[inline(always)]
    fn wide_add(self, acc: f64) -> f64 {
        acc + self as f64
    }

    #[inline(always)]
    fn wide_dot(acc: f64, weights: f32) -> f64 {
        acc * weights as f64
    }
}

/// `Add`, `Sub` and `Mul` for a vector type `$t { v, cap }` through intrinsics.
macro_rules! binops {
    ($t:ident: $($tr:ident, $f:ident, $intr:ident;)*) => {
        $(
            impl $tr for $t {
                type Output = $t;
                #[inline(always)]
                fn $f(self, rhs: $t) -> $t {
                    // SAFETY: `self` exists, so the CPU has the instructions
                    // (module documentation).
                    $t { v: unsafe { $intr(self.v, rhs.v) }, cap: self.cap }
                }
            }
        )*
    };
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{F32x8, F32x16};

#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(target_arch = "aarch64")]
pub(crate) use arm::F32x4;

#[cfg(target_arch = "aarch64")]
mod arm;

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests;
