//! The aarch64 vector type: `F32x4` (NEON). The safety argument is the
//! parent module's (`super`): a value exists only on a CPU with its
//! instructions.

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
