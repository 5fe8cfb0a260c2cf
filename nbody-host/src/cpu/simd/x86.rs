//! The x86-64 vector types: `F32x16` (AVX-512F) and `F32x8` (AVX2 + FMA).
//! The safety argument is the parent module's (`super`): a value exists only
//! on a CPU with its instructions.

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
