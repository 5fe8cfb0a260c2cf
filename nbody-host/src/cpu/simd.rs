//! SIMD vectors of `f32` for the CPU force loops: one body per lane.
//!
//! (One coherent thing, kept in one file although long: every vector type
//! implements the same two traits, and they are read side by side.)
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
mod x86 {
    use core::arch::x86_64::*;
    use core::ops::{Add, Mul, Neg, Sub};

    use super::{HasAvx2Fma, HasAvx512, Simd};
    use gpu_kernels::interaction::Real;

    /// Sixteen `f32` lanes in an AVX-512 register, with the proof that the
    /// CPU has AVX-512F.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct F32x16 {
        v: __m512,
        cap: HasAvx512,
    }

    /// Eight `f32` lanes in an AVX register, with the proof that the CPU has
    /// AVX2 and FMA.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct F32x8 {
        v: __m256,
        cap: HasAvx2Fma,
    }

    // SAFETY (every `unsafe` block below that the comment does not repeat):
    // the intrinsics need AVX-512F, or AVX2 and FMA, which the CPU has
    // because a value (or the token) of the type exists (module
    // documentation); the pointer accesses are bounds-checked first.

    binops!(F32x16: Add, add, _mm512_add_ps; Sub, sub, _mm512_sub_ps; Mul, mul, _mm512_mul_ps;);
    binops!(F32x8: Add, add, _mm256_add_ps; Sub, sub, _mm256_sub_ps; Mul, mul, _mm256_mul_ps;);

    impl F32x16 {
        #[inline(always)]
        fn with(self, v: __m512) -> F32x16 {
            F32x16 { v, cap: self.cap }
        }

        /// The register, for the extensions in `super::super::lanes`.
        #[inline(always)]
        pub(crate) fn raw(self) -> __m512 {
            self.v
        }

        /// A vector from a register, with the proof that the CPU has AVX-512F.
        #[inline(always)]
        pub(crate) fn from_raw(cap: HasAvx512, v: __m512) -> F32x16 {
            F32x16 { v, cap }
        }
    }

    impl F32x8 {
        #[inline(always)]
        fn with(self, v: __m256) -> F32x8 {
            F32x8 { v, cap: self.cap }
        }

        /// The register, for the extensions in `super::super::lanes`.
        #[inline(always)]
        pub(crate) fn raw(self) -> __m256 {
            self.v
        }

        /// A vector from a register, with the proof that the CPU has AVX2 and FMA.
        #[inline(always)]
        pub(crate) fn from_raw(cap: HasAvx2Fma, v: __m256) -> F32x8 {
            F32x8 { v, cap }
        }
    }

    impl Neg for F32x16 {
        type Output = F32x16;
        #[inline(always)]
        fn neg(self) -> F32x16 {
            // Flip the sign bit (AVX-512F has the integer XOR; the float one is DQ).
            // SAFETY: see above.
            self.with(unsafe {
                _mm512_castsi512_ps(_mm512_xor_si512(
                    _mm512_castps_si512(self.v),
                    _mm512_set1_epi32(i32::MIN),
                ))
            })
        }
    }

    impl Neg for F32x8 {
        type Output = F32x8;
        #[inline(always)]
        fn neg(self) -> F32x8 {
            // SAFETY: see above.
            self.with(unsafe { _mm256_xor_ps(self.v, _mm256_set1_ps(-0.0)) })
        }
    }

    impl Real for F32x16 {
        #[inline(always)]
        fn mul_add(self, a: Self, b: Self) -> Self {
            // SAFETY: see above.
            self.with(unsafe { _mm512_fmadd_ps(self.v, a.v, b.v) })
        }

        /// `vrsqrt14ps` and one Newton–Raphson step (see the module documentation).
        #[inline(always)]
        fn rsqrt(self) -> Self {
            // SAFETY: see above.
            self.with(unsafe {
                let y0 = _mm512_rsqrt14_ps(self.v);
                let a = _mm512_mul_ps(self.v, y0);
                let e = _mm512_fnmadd_ps(a, y0, _mm512_set1_ps(3.0));
                let e = _mm512_max_ps(e, _mm512_set1_ps(1.0));
                _mm512_mul_ps(_mm512_mul_ps(y0, _mm512_set1_ps(0.5)), e)
            })
        }

        #[inline(always)]
        fn min_finite(self) -> Self {
            // `vminps` returns its second operand when either is NaN.
            // SAFETY: see above.
            self.with(unsafe { _mm512_min_ps(self.v, _mm512_set1_ps(f32::MAX)) })
        }
    }

    impl Real for F32x8 {
        #[inline(always)]
        fn mul_add(self, a: Self, b: Self) -> Self {
            // SAFETY: see above.
            self.with(unsafe { _mm256_fmadd_ps(self.v, a.v, b.v) })
        }

        /// `vrsqrtps` and one Newton–Raphson step (see the module documentation).
        #[inline(always)]
        fn rsqrt(self) -> Self {
            // SAFETY: see above.
            self.with(unsafe {
                let y0 = _mm256_rsqrt_ps(self.v);
                let a = _mm256_mul_ps(self.v, y0);
                let e = _mm256_fnmadd_ps(a, y0, _mm256_set1_ps(3.0));
                let e = _mm256_max_ps(e, _mm256_set1_ps(1.0));
                _mm256_mul_ps(_mm256_mul_ps(y0, _mm256_set1_ps(0.5)), e)
            })
        }

        #[inline(always)]
        fn min_finite(self) -> Self {
            // `vminps` returns its second operand when either is NaN.
            // SAFETY: see above.
            self.with(unsafe { _mm256_min_ps(self.v, _mm256_set1_ps(f32::MAX)) })
        }
    }

    impl Simd for F32x16 {
        const LANES: usize = 16;
        type Cap = HasAvx512;
        type Wide = (__m512d, __m512d);

        #[inline(always)]
        fn splat(cap: HasAvx512, v: f32) -> Self {
            // SAFETY: `cap` proves the CPU has AVX-512F.
            let v = unsafe { _mm512_set1_ps(v) };
            F32x16 { v, cap }
        }

        #[inline(always)]
        fn load(cap: HasAvx512, src: &[f32]) -> Self {
            let src = &src[..16];
            // SAFETY: `cap` proves AVX-512F; `src` holds 16 floats.
            let v = unsafe { _mm512_loadu_ps(src.as_ptr()) };
            F32x16 { v, cap }
        }

        #[inline(always)]
        fn cap(self) -> HasAvx512 {
            self.cap
        }

        #[inline(always)]
        fn store(self, dst: &mut [f32]) {
            let dst = &mut dst[..16];
            // SAFETY: see above; `dst` holds 16 floats.
            unsafe { _mm512_storeu_ps(dst.as_mut_ptr(), self.v) }
        }

        #[inline(always)]
        fn rsqrt_estimate(self) -> Self {
            // SAFETY: see above.
            self.with(unsafe { _mm512_rsqrt14_ps(self.v) })
        }

        #[inline(always)]
        fn recip_sqrt(self) -> Self {
            // SAFETY: see above.
            self.with(unsafe { _mm512_div_ps(_mm512_set1_ps(1.0), _mm512_sqrt_ps(self.v)) })
        }

        #[inline(always)]
        fn neg_mul_add(self, a: Self, b: Self) -> Self {
            // SAFETY: see above.
            self.with(unsafe { _mm512_fnmadd_ps(self.v, a.v, b.v) })
        }

        #[inline(always)]
        fn sum(self) -> f32 {
            // SAFETY: see above.
            unsafe { _mm512_reduce_add_ps(self.v) }
        }

        #[inline(always)]
        fn wide_zero(_: HasAvx512) -> Self::Wide {
            // SAFETY: the token proves AVX-512F.
            unsafe { (_mm512_setzero_pd(), _mm512_setzero_pd()) }
        }

        #[inline(always)]
        fn wide_add(self, acc: Self::Wide) -> Self::Wide {
            // SAFETY: see above.
            unsafe {
                let lo = _mm512_cvtps_pd(_mm512_castps512_ps256(self.v));
                let hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(
                    _mm512_castps_pd(self.v),
                )));
                (_mm512_add_pd(acc.0, lo), _mm512_add_pd(acc.1, hi))
            }
        }

        #[inline(always)]
        fn wide_dot(acc: Self::Wide, weights: Self) -> f64 {
            let mut lanes = [0f64; 16];
            let mut w = [0f32; 16];
            weights.store(&mut w);
            // SAFETY: `acc` exists, so AVX-512F does; `lanes` holds 16 f64.
            unsafe {
                _mm512_storeu_pd(lanes.as_mut_ptr(), acc.0);
                _mm512_storeu_pd(lanes.as_mut_ptr().add(8), acc.1);
            }
            lanes.iter().zip(w).map(|(a, w)| a * w as f64).sum()
        }
    }

    impl Simd for F32x8 {
        const LANES: usize = 8;
        type Cap = HasAvx2Fma;
        type Wide = (__m256d, __m256d);

        #[inline(always)]
        fn splat(cap: HasAvx2Fma, v: f32) -> Self {
            // SAFETY: `cap` proves the CPU has AVX2 and FMA.
            let v = unsafe { _mm256_set1_ps(v) };
            F32x8 { v, cap }
        }

        #[inline(always)]
        fn load(cap: HasAvx2Fma, src: &[f32]) -> Self {
            let src = &src[..8];
            // SAFETY: `cap` proves AVX2; `src` holds 8 floats.
            let v = unsafe { _mm256_loadu_ps(src.as_ptr()) };
            F32x8 { v, cap }
        }

        #[inline(always)]
        fn cap(self) -> HasAvx2Fma {
            self.cap
        }

        #[inline(always)]
        fn store(self, dst: &mut [f32]) {
            let dst = &mut dst[..8];
            // SAFETY: see above; `dst` holds 8 floats.
            unsafe { _mm256_storeu_ps(dst.as_mut_ptr(), self.v) }
        }

        #[inline(always)]
        fn rsqrt_estimate(self) -> Self {
            // SAFETY: see above.
            self.with(unsafe { _mm256_rsqrt_ps(self.v) })
        }

        #[inline(always)]
        fn recip_sqrt(self) -> Self {
            // SAFETY: see above.
            self.with(unsafe { _mm256_div_ps(_mm256_set1_ps(1.0), _mm256_sqrt_ps(self.v)) })
        }

        #[inline(always)]
        fn neg_mul_add(self, a: Self, b: Self) -> Self {
            // SAFETY: see above.
            self.with(unsafe { _mm256_fnmadd_ps(self.v, a.v, b.v) })
        }

        #[inline(always)]
        fn sum(self) -> f32 {
            // SAFETY: see above.
            unsafe {
                let h = _mm_add_ps(
                    _mm256_castps256_ps128(self.v),
                    _mm256_extractf128_ps(self.v, 1),
                );
                let h = _mm_add_ps(h, _mm_movehl_ps(h, h));
                _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)))
            }
        }

        #[inline(always)]
        fn wide_zero(_: HasAvx2Fma) -> Self::Wide {
            // SAFETY: the token proves AVX2.
            unsafe { (_mm256_setzero_pd(), _mm256_setzero_pd()) }
        }

        #[inline(always)]
        fn wide_add(self, acc: Self::Wide) -> Self::Wide {
            // SAFETY: see above.
            unsafe {
                let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(self.v));
                let hi = _mm256_cvtps_pd(_mm256_extractf128_ps(self.v, 1));
                (_mm256_add_pd(acc.0, lo), _mm256_add_pd(acc.1, hi))
            }
        }

        #[inline(always)]
        fn wide_dot(acc: Self::Wide, weights: Self) -> f64 {
            let mut lanes = [0f64; 8];
            let mut w = [0f32; 8];
            weights.store(&mut w);
            // SAFETY: `acc` exists, so AVX2 does; `lanes` holds 8 f64.
            unsafe {
                _mm256_storeu_pd(lanes.as_mut_ptr(), acc.0);
                _mm256_storeu_pd(lanes.as_mut_ptr().add(4), acc.1);
            }
            lanes.iter().zip(w).map(|(a, w)| a * w as f64).sum()
        }
    }
}

#[cfg(target_arch = "aarch64")]
pub(crate) use arm::F32x4;

#[cfg(target_arch = "aarch64")]
mod arm {
    use core::arch::aarch64::*;
    use core::ops::{Add, Mul, Neg, Sub};

    use super::{HasNeon, Simd};
    use gpu_kernels::interaction::Real;

    /// Four `f32` lanes in a NEON register, with the (always true on
    /// aarch64) proof that the CPU has NEON.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct F32x4 {
        v: float32x4_t,
        cap: HasNeon,
    }

    // SAFETY (every `unsafe` block below that the comment does not repeat):
    // NEON is present (a value or token of the type exists, and NEON is part
    // of the aarch64 base architecture); pointer accesses are bounds-checked
    // first.

    binops!(F32x4: Add, add, vaddq_f32; Sub, sub, vsubq_f32; Mul, mul, vmulq_f32;);

    impl F32x4 {
        #[inline(always)]
        fn with(self, v: float32x4_t) -> F32x4 {
            F32x4 { v, cap: self.cap }
        }

        /// The register, for the extensions in `super::super::lanes`.
        #[inline(always)]
        pub(crate) fn raw(self) -> float32x4_t {
            self.v
        }

        /// A vector from a register, with the proof that the CPU has NEON.
        #[inline(always)]
        pub(crate) fn from_raw(cap: HasNeon, v: float32x4_t) -> F32x4 {
            F32x4 { v, cap }
        }
    }

    impl Neg for F32x4 {
        type Output = F32x4;
        #[inline(always)]
        fn neg(self) -> F32x4 {
            // SAFETY: see above.
            self.with(unsafe { vnegq_f32(self.v) })
        }
    }

    /// `frsqrte` (about 8 bits) and one Newton–Raphson step,
    /// `y0 (3 - x y0^2) / 2` with `frsqrts(x, y0^2)`: about 16 bits, what the
    /// hot loops' own step expects of an estimate (the x86 estimates have 12
    /// or 14). `frsqrts` gives 1.5 for `0 * inf`, so `0 -> inf` and
    /// `inf -> 0` come out right.
    #[inline(always)]
    fn step(x: float32x4_t, y: float32x4_t) -> float32x4_t {
        // SAFETY: NEON is part of the aarch64 base architecture.
        unsafe { vmulq_f32(y, vrsqrtsq_f32(x, vmulq_f32(y, y))) }
    }

    /// See [`step`].
    #[inline(always)]
    fn estimate(x: float32x4_t) -> float32x4_t {
        // SAFETY: NEON is part of the aarch64 base architecture.
        step(x, unsafe { vrsqrteq_f32(x) })
    }

    impl Real for F32x4 {
        #[inline(always)]
        fn mul_add(self, a: Self, b: Self) -> Self {
            // vfmaq_f32(c, x, y) = c + x y, one rounding.
            // SAFETY: see above.
            self.with(unsafe { vfmaq_f32(b.v, self.v, a.v) })
        }

        /// [`estimate`] and a second step: f32 accuracy.
        #[inline(always)]
        fn rsqrt(self) -> Self {
            self.with(step(self.v, estimate(self.v)))
        }

        #[inline(always)]
        fn min_finite(self) -> Self {
            // `fminnm` returns the number when the other operand is NaN.
            // SAFETY: see above.
            self.with(unsafe { vminnmq_f32(self.v, vdupq_n_f32(f32::MAX)) })
        }
    }

    impl Simd for F32x4 {
        const LANES: usize = 4;
        type Cap = HasNeon;
        type Wide = (float64x2_t, float64x2_t);

        #[inline(always)]
        fn splat(cap: HasNeon, v: f32) -> Self {
            // SAFETY: see above.
            let v = unsafe { vdupq_n_f32(v) };
            F32x4 { v, cap }
        }

        #[inline(always)]
        fn load(cap: HasNeon, src: &[f32]) -> Self {
            let src = &src[..4];
            // SAFETY: see above; `src` holds 4 floats.
            let v = unsafe { vld1q_f32(src.as_ptr()) };
            F32x4 { v, cap }
        }

        #[inline(always)]
        fn cap(self) -> HasNeon {
            self.cap
        }

        #[inline(always)]
        fn store(self, dst: &mut [f32]) {
            let dst = &mut dst[..4];
            // SAFETY: see above; `dst` holds 4 floats.
            unsafe { vst1q_f32(dst.as_mut_ptr(), self.v) }
        }

        #[inline(always)]
        fn rsqrt_estimate(self) -> Self {
            self.with(estimate(self.v))
        }

        #[inline(always)]
        fn recip_sqrt(self) -> Self {
            // SAFETY: see above.
            self.with(unsafe { vdivq_f32(vdupq_n_f32(1.0), vsqrtq_f32(self.v)) })
        }

        #[inline(always)]
        fn neg_mul_add(self, a: Self, b: Self) -> Self {
            // vfmsq_f32(c, x, y) = c - x y, one rounding.
            // SAFETY: see above.
            self.with(unsafe { vfmsq_f32(b.v, self.v, a.v) })
        }

        #[inline(always)]
        fn sum(self) -> f32 {
            // SAFETY: see above.
            unsafe { vaddvq_f32(self.v) }
        }

        #[inline(always)]
        fn wide_zero(_: HasNeon) -> Self::Wide {
            // SAFETY: see above.
            unsafe { (vdupq_n_f64(0.0), vdupq_n_f64(0.0)) }
        }

        #[inline(always)]
        fn wide_add(self, acc: Self::Wide) -> Self::Wide {
            // SAFETY: see above.
            unsafe {
                let lo = vcvt_f64_f32(vget_low_f32(self.v));
                let hi = vcvt_high_f64_f32(self.v);
                (vaddq_f64(acc.0, lo), vaddq_f64(acc.1, hi))
            }
        }

        #[inline(always)]
        fn wide_dot(acc: Self::Wide, weights: Self) -> f64 {
            let mut lanes = [0f64; 4];
            let mut w = [0f32; 4];
            weights.store(&mut w);
            // SAFETY: see above; `lanes` holds 4 f64.
            unsafe {
                vst1q_f64(lanes.as_mut_ptr(), acc.0);
                vst1q_f64(lanes.as_mut_ptr().add(2), acc.1);
            }
            lanes.iter().zip(w).map(|(a, w)| a * w as f64).sum()
        }
    }
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;
    use gpu_kernels::interaction::{PointMass, Vec3, interaction};

    /// What the tests ask of one vector type, run inside a function with its
    /// target features enabled.
    struct Probe {
        rsqrt: Vec<f32>,
        min_finite: Vec<f32>,
        neg: Vec<f32>,
        /// Lane sums of `1, 2, .., LANES` and of `1, 1/2, .., 2^(1 - LANES)`.
        sums: [f32; 2],
        self_pair: [Vec<f32>; 3],
    }

    #[inline(always)]
    fn probe<V: Simd>(cap: V::Cap, x: &[f32]) -> Probe {
        let lanes = V::LANES;
        let mut out = vec![0.0; lanes];
        let each = |f: &dyn Fn(V) -> V, out: &mut Vec<f32>| {
            let mut all = Vec::new();
            for c in x.chunks(lanes) {
                f(V::load(cap, c)).store(out);
                all.extend_from_slice(out);
            }
            all
        };
        let rsqrt = each(&|v: V| v.rsqrt(), &mut out);
        let min_finite = each(&|v: V| v.min_finite(), &mut out);
        let neg = each(&|v: V| -v, &mut out);
        let iota: Vec<f32> = (1..=lanes).map(|i| i as f32).collect();
        let halves: Vec<f32> = (0..lanes).map(|i| 0.5f32.powi(i as i32)).collect();
        let sums = [V::load(cap, &iota).sum(), V::load(cap, &halves).sum()];
        // Body i against itself, lane by lane, at eps = 0: exactly zero
        // (positions from the finite inputs).
        let finite: Vec<f32> = x.iter().copied().filter(|v| v.is_finite()).collect();
        let p = PointMass {
            x: V::load(cap, &finite),
            y: V::splat(cap, -2.5),
            z: V::splat(cap, 7.0),
            m: V::splat(cap, 3.0),
        };
        let zero = V::splat(cap, 0.0);
        let a = interaction(Vec3::splat(zero), &p, &p, zero);
        let mut self_pair = [vec![0.0; lanes], vec![0.0; lanes], vec![0.0; lanes]];
        a.x.store(&mut self_pair[0]);
        a.y.store(&mut self_pair[1]);
        a.z.store(&mut self_pair[2]);
        Probe {
            rsqrt,
            min_finite,
            neg,
            sums,
            self_pair,
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn probe_avx2(cap: HasAvx2Fma, x: &[f32]) -> Probe {
        probe::<F32x8>(cap, x)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn probe_avx512(cap: HasAvx512, x: &[f32]) -> Probe {
        probe::<F32x16>(cap, x)
    }

    /// 64 inputs: special values first, then normal numbers over the whole range.
    fn inputs() -> Vec<f32> {
        let mut x = vec![
            0.0,
            1e-40,
            f32::MIN_POSITIVE,
            f32::INFINITY,
            f32::MAX,
            1.0,
            0.25,
            2.0,
        ];
        let mut v = 1.3e-37f32;
        while x.len() < 64 {
            x.push(v);
            v *= 3.7e1;
            if v > 1e37 {
                v = 0.77 * v.sqrt().sqrt();
            }
        }
        x
    }

    fn check(name: &str, p: Probe, lanes: usize, tol: f64) {
        let x = inputs();
        for (&xi, &r) in x.iter().zip(&p.rsqrt) {
            match xi {
                0.0 => assert_eq!(r, f32::INFINITY, "{name}: rsqrt(0)"),
                f32::INFINITY => assert_eq!(r, 0.0, "{name}: rsqrt(inf)"),
                _ if xi < f32::MIN_POSITIVE => {
                    // Denormal: +inf (treated as 0, like the GPU's .ftz) or close.
                    let want = 1.0 / (xi as f64).sqrt();
                    assert!(
                        r == f32::INFINITY || ((r as f64) - want).abs() <= tol * want,
                        "{name}: rsqrt({xi:e}) = {r:e}"
                    );
                }
                _ => {
                    let want = 1.0 / (xi as f64).sqrt();
                    let err = ((r as f64) - want).abs() / want;
                    assert!(err <= tol, "{name}: rsqrt({xi:e}) = {r:e}, error {err:e}");
                }
            }
        }
        for (&xi, &m) in x.iter().zip(&p.min_finite) {
            assert_eq!(m, xi.min(f32::MAX), "{name}: min_finite({xi:e})");
        }
        for (&xi, &n) in x.iter().zip(&p.neg) {
            assert_eq!(n.to_bits(), (-xi).to_bits(), "{name}: -{xi:e}");
        }
        // Both sums are exact in f32.
        let want = [
            (lanes * (lanes + 1) / 2) as f32,
            2.0 - 0.5f32.powi(lanes as i32 - 1),
        ];
        assert_eq!(p.sums, want, "{name}: lane sums");
        for c in &p.self_pair {
            assert!(
                c.iter().all(|v| v.to_bits() == 0),
                "{name}: self pair {c:?}"
            );
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_vectors_match_the_scalar_semantics() {
        let Some(cap) = HasAvx2Fma::detect() else {
            eprintln!("no AVX2 + FMA on this CPU: skipped");
            return;
        };
        // SAFETY: `cap` proves the CPU has AVX2 and FMA.
        let p = unsafe { probe_avx2(cap, &inputs()) };
        // One Newton step from 1.5 * 2^-12: ~1.5 * e^2 plus rounding.
        check("avx2", p, 8, 4e-7);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx512_vectors_match_the_scalar_semantics() {
        let Some(cap) = HasAvx512::detect() else {
            eprintln!("no AVX-512F on this CPU: skipped");
            return;
        };
        // SAFETY: `cap` proves the CPU has AVX-512F.
        let p = unsafe { probe_avx512(cap, &inputs()) };
        check("avx512", p, 16, 2e-7);
    }

    #[cfg(target_arch = "aarch64")]
    #[test]
    fn neon_vectors_match_the_scalar_semantics() {
        // Two Newton steps from an 8-bit estimate.
        let cap = HasNeon::detect().expect("NEON is part of aarch64");
        check("neon", probe::<F32x4>(cap, &inputs()), 4, 4e-7);
    }
}
