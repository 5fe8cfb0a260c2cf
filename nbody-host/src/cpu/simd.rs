//! SIMD vectors of `f32` for the CPU kernels: one body per lane.
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
//! # Safety
//! The vector types are crate-private and their methods execute AVX-512F or
//! AVX2/FMA instructions. Values of them are only ever created inside the
//! kernel entry points of [`super::kernels`], which carry the matching
//! `#[target_feature]` and are reached only through
//! [`super::kernels::KernelSet::new`], after `is_x86_feature_detected!`
//! confirmed the CPU has the features. The methods are `#[inline(always)]`,
//! so they compile into those entry points with the features enabled.

use gpu_kernels::interaction::Real;

/// What the force loops need beyond [`Real`]: loads, stores and lane sums.
pub(crate) trait Simd: Real + Send + Sync + 'static {
    /// Bodies per vector.
    const LANES: usize;

    /// The first `LANES` values of `src` (panics if shorter).
    fn load(src: &[f32]) -> Self;

    /// Writes the lanes to the first `LANES` values of `dst` (panics if shorter).
    fn store(self, dst: &mut [f32]);

    /// The bare hardware estimate of `1 / sqrt(self)` (`vrsqrt14ps`,
    /// `vrsqrtps`; `frsqrte` with one step on NEON, whose estimate has only
    /// 8 bits; exact for `f32`), for the unguarded hot loops, which apply
    /// their own Newton–Raphson step (`super::kernels::pull_fast`). Only
    /// meaningful for positive normal inputs.
    fn rsqrt_estimate(self) -> Self;

    /// `b - self * a` with one rounding (`vfnmadd`).
    fn neg_mul_add(self, a: Self, b: Self) -> Self;

    /// The sum of the lanes, in a fixed order.
    fn sum(self) -> f32;
}

impl Simd for f32 {
    const LANES: usize = 1;

    #[inline(always)]
    fn load(src: &[f32]) -> Self {
        src[0]
    }

    #[inline(always)]
    fn store(self, dst: &mut [f32]) {
        dst[0] = self;
    }

    #[inline(always)]
    fn rsqrt_estimate(self) -> Self {
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
}

#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{F32x8, F32x16};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;
    use core::ops::{Add, Mul, Neg, Sub};

    use super::Simd;
    use gpu_kernels::interaction::Real;

    /// Sixteen `f32` lanes in an AVX-512 register (needs AVX-512F; see the
    /// module's safety note).
    #[derive(Clone, Copy, Debug)]
    #[repr(transparent)]
    pub(crate) struct F32x16(__m512);

    /// Eight `f32` lanes in an AVX register (needs AVX2 and FMA; see the
    /// module's safety note).
    #[derive(Clone, Copy, Debug)]
    #[repr(transparent)]
    pub(crate) struct F32x8(__m256);

    // SAFETY (every `unsafe` block below): the intrinsics need AVX-512F, or
    // AVX2 and FMA, which the CPU has whenever a value of these types exists
    // (module documentation); the pointer accesses are bounds-checked first.

    macro_rules! binop {
        ($t:ty, $tr:ident, $f:ident, $intr:ident) => {
            impl $tr for $t {
                type Output = $t;
                #[inline(always)]
                fn $f(self, rhs: $t) -> $t {
                    Self(unsafe { $intr(self.0, rhs.0) })
                }
            }
        };
    }

    binop!(F32x16, Add, add, _mm512_add_ps);
    binop!(F32x16, Sub, sub, _mm512_sub_ps);
    binop!(F32x16, Mul, mul, _mm512_mul_ps);
    binop!(F32x8, Add, add, _mm256_add_ps);
    binop!(F32x8, Sub, sub, _mm256_sub_ps);
    binop!(F32x8, Mul, mul, _mm256_mul_ps);

    impl Neg for F32x16 {
        type Output = F32x16;
        #[inline(always)]
        fn neg(self) -> F32x16 {
            // Flip the sign bit (AVX-512F has the integer XOR; the float one is DQ).
            Self(unsafe {
                _mm512_castsi512_ps(_mm512_xor_si512(
                    _mm512_castps_si512(self.0),
                    _mm512_set1_epi32(i32::MIN),
                ))
            })
        }
    }

    impl Neg for F32x8 {
        type Output = F32x8;
        #[inline(always)]
        fn neg(self) -> F32x8 {
            Self(unsafe { _mm256_xor_ps(self.0, _mm256_set1_ps(-0.0)) })
        }
    }

    impl Real for F32x16 {
        #[inline(always)]
        fn splat(v: f32) -> Self {
            Self(unsafe { _mm512_set1_ps(v) })
        }

        #[inline(always)]
        fn mul_add(self, a: Self, b: Self) -> Self {
            Self(unsafe { _mm512_fmadd_ps(self.0, a.0, b.0) })
        }

        /// `vrsqrt14ps` and one Newton–Raphson step (see the module documentation).
        #[inline(always)]
        fn rsqrt(self) -> Self {
            unsafe {
                let y0 = _mm512_rsqrt14_ps(self.0);
                let a = _mm512_mul_ps(self.0, y0);
                let e = _mm512_fnmadd_ps(a, y0, _mm512_set1_ps(3.0));
                let e = _mm512_max_ps(e, _mm512_set1_ps(1.0));
                Self(_mm512_mul_ps(_mm512_mul_ps(y0, _mm512_set1_ps(0.5)), e))
            }
        }

        #[inline(always)]
        fn min_finite(self) -> Self {
            // `vminps` returns its second operand when either is NaN.
            Self(unsafe { _mm512_min_ps(self.0, _mm512_set1_ps(f32::MAX)) })
        }
    }

    impl Real for F32x8 {
        #[inline(always)]
        fn splat(v: f32) -> Self {
            Self(unsafe { _mm256_set1_ps(v) })
        }

        #[inline(always)]
        fn mul_add(self, a: Self, b: Self) -> Self {
            Self(unsafe { _mm256_fmadd_ps(self.0, a.0, b.0) })
        }

        /// `vrsqrtps` and one Newton–Raphson step (see the module documentation).
        #[inline(always)]
        fn rsqrt(self) -> Self {
            unsafe {
                let y0 = _mm256_rsqrt_ps(self.0);
                let a = _mm256_mul_ps(self.0, y0);
                let e = _mm256_fnmadd_ps(a, y0, _mm256_set1_ps(3.0));
                let e = _mm256_max_ps(e, _mm256_set1_ps(1.0));
                Self(_mm256_mul_ps(_mm256_mul_ps(y0, _mm256_set1_ps(0.5)), e))
            }
        }

        #[inline(always)]
        fn min_finite(self) -> Self {
            // `vminps` returns its second operand when either is NaN.
            Self(unsafe { _mm256_min_ps(self.0, _mm256_set1_ps(f32::MAX)) })
        }
    }

    impl Simd for F32x16 {
        const LANES: usize = 16;

        #[inline(always)]
        fn load(src: &[f32]) -> Self {
            let src = &src[..16];
            Self(unsafe { _mm512_loadu_ps(src.as_ptr()) })
        }

        #[inline(always)]
        fn store(self, dst: &mut [f32]) {
            let dst = &mut dst[..16];
            unsafe { _mm512_storeu_ps(dst.as_mut_ptr(), self.0) }
        }

        #[inline(always)]
        fn rsqrt_estimate(self) -> Self {
            Self(unsafe { _mm512_rsqrt14_ps(self.0) })
        }

        #[inline(always)]
        fn neg_mul_add(self, a: Self, b: Self) -> Self {
            Self(unsafe { _mm512_fnmadd_ps(self.0, a.0, b.0) })
        }

        #[inline(always)]
        fn sum(self) -> f32 {
            unsafe { _mm512_reduce_add_ps(self.0) }
        }
    }

    impl Simd for F32x8 {
        const LANES: usize = 8;

        #[inline(always)]
        fn load(src: &[f32]) -> Self {
            let src = &src[..8];
            Self(unsafe { _mm256_loadu_ps(src.as_ptr()) })
        }

        #[inline(always)]
        fn store(self, dst: &mut [f32]) {
            let dst = &mut dst[..8];
            unsafe { _mm256_storeu_ps(dst.as_mut_ptr(), self.0) }
        }

        #[inline(always)]
        fn rsqrt_estimate(self) -> Self {
            Self(unsafe { _mm256_rsqrt_ps(self.0) })
        }

        #[inline(always)]
        fn neg_mul_add(self, a: Self, b: Self) -> Self {
            Self(unsafe { _mm256_fnmadd_ps(self.0, a.0, b.0) })
        }

        #[inline(always)]
        fn sum(self) -> f32 {
            unsafe {
                let h = _mm_add_ps(
                    _mm256_castps256_ps128(self.0),
                    _mm256_extractf128_ps(self.0, 1),
                );
                let h = _mm_add_ps(h, _mm_movehl_ps(h, h));
                _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)))
            }
        }
    }
}

#[cfg(target_arch = "aarch64")]
pub(crate) use arm::F32x4;

#[cfg(target_arch = "aarch64")]
mod arm {
    use core::arch::aarch64::*;
    use core::ops::{Add, Mul, Neg, Sub};

    use super::Simd;
    use gpu_kernels::interaction::Real;

    /// Four `f32` lanes in a NEON register (NEON is part of the aarch64 base
    /// architecture, so these are always available there).
    #[derive(Clone, Copy, Debug)]
    #[repr(transparent)]
    pub(crate) struct F32x4(float32x4_t);

    // SAFETY (every `unsafe` block below): NEON is always present on
    // aarch64; the pointer accesses are bounds-checked first.

    macro_rules! binop {
        ($tr:ident, $f:ident, $intr:ident) => {
            impl $tr for F32x4 {
                type Output = F32x4;
                #[inline(always)]
                fn $f(self, rhs: F32x4) -> F32x4 {
                    Self(unsafe { $intr(self.0, rhs.0) })
                }
            }
        };
    }

    binop!(Add, add, vaddq_f32);
    binop!(Sub, sub, vsubq_f32);
    binop!(Mul, mul, vmulq_f32);

    impl Neg for F32x4 {
        type Output = F32x4;
        #[inline(always)]
        fn neg(self) -> F32x4 {
            Self(unsafe { vnegq_f32(self.0) })
        }
    }

    /// `frsqrte` (about 8 bits) and one Newton–Raphson step,
    /// `y0 (3 - x y0^2) / 2` with `frsqrts(x, y0^2)`: about 16 bits, what the
    /// hot loops' own step expects of an estimate (the x86 estimates have 12
    /// or 14). `frsqrts` gives 1.5 for `0 * inf`, so `0 -> inf` and
    /// `inf -> 0` come out right.
    #[inline(always)]
    fn step(x: float32x4_t, y: float32x4_t) -> float32x4_t {
        unsafe { vmulq_f32(y, vrsqrtsq_f32(x, vmulq_f32(y, y))) }
    }

    /// See [`step`].
    #[inline(always)]
    fn estimate(x: float32x4_t) -> float32x4_t {
        step(x, unsafe { vrsqrteq_f32(x) })
    }

    impl Real for F32x4 {
        #[inline(always)]
        fn splat(v: f32) -> Self {
            Self(unsafe { vdupq_n_f32(v) })
        }

        #[inline(always)]
        fn mul_add(self, a: Self, b: Self) -> Self {
            // vfmaq_f32(c, x, y) = c + x y, one rounding.
            Self(unsafe { vfmaq_f32(b.0, self.0, a.0) })
        }

        /// [`estimate`] and a second step: f32 accuracy.
        #[inline(always)]
        fn rsqrt(self) -> Self {
            Self(step(self.0, estimate(self.0)))
        }

        #[inline(always)]
        fn min_finite(self) -> Self {
            // `fminnm` returns the number when the other operand is NaN.
            Self(unsafe { vminnmq_f32(self.0, vdupq_n_f32(f32::MAX)) })
        }
    }

    impl Simd for F32x4 {
        const LANES: usize = 4;

        #[inline(always)]
        fn load(src: &[f32]) -> Self {
            let src = &src[..4];
            Self(unsafe { vld1q_f32(src.as_ptr()) })
        }

        #[inline(always)]
        fn store(self, dst: &mut [f32]) {
            let dst = &mut dst[..4];
            unsafe { vst1q_f32(dst.as_mut_ptr(), self.0) }
        }

        #[inline(always)]
        fn rsqrt_estimate(self) -> Self {
            Self(estimate(self.0))
        }

        #[inline(always)]
        fn neg_mul_add(self, a: Self, b: Self) -> Self {
            // vfmsq_f32(c, x, y) = c - x y, one rounding.
            Self(unsafe { vfmsq_f32(b.0, self.0, a.0) })
        }

        #[inline(always)]
        fn sum(self) -> f32 {
            unsafe { vaddvq_f32(self.0) }
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
    fn probe<V: Simd>(x: &[f32]) -> Probe {
        let lanes = V::LANES;
        let mut out = vec![0.0; lanes];
        let each = |f: &dyn Fn(V) -> V, out: &mut Vec<f32>| {
            let mut all = Vec::new();
            for c in x.chunks(lanes) {
                f(V::load(c)).store(out);
                all.extend_from_slice(out);
            }
            all
        };
        let rsqrt = each(&|v: V| v.rsqrt(), &mut out);
        let min_finite = each(&|v: V| v.min_finite(), &mut out);
        let neg = each(&|v: V| -v, &mut out);
        let iota: Vec<f32> = (1..=lanes).map(|i| i as f32).collect();
        let halves: Vec<f32> = (0..lanes).map(|i| 0.5f32.powi(i as i32)).collect();
        let sums = [V::load(&iota).sum(), V::load(&halves).sum()];
        // Body i against itself, lane by lane, at eps = 0: exactly zero
        // (positions from the finite inputs).
        let finite: Vec<f32> = x.iter().copied().filter(|v| v.is_finite()).collect();
        let p = PointMass {
            x: V::load(&finite),
            y: V::splat(-2.5),
            z: V::splat(7.0),
            m: V::splat(3.0),
        };
        let a = interaction(Vec3::zero(), &p, &p, V::splat(0.0));
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
    unsafe fn probe_avx2(x: &[f32]) -> Probe {
        probe::<F32x8>(x)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn probe_avx512(x: &[f32]) -> Probe {
        probe::<F32x16>(x)
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
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            eprintln!("no AVX2 + FMA on this CPU: skipped");
            return;
        }
        // SAFETY: the CPU has AVX2 and FMA.
        let p = unsafe { probe_avx2(&inputs()) };
        // One Newton step from 1.5 * 2^-12: ~1.5 * e^2 plus rounding.
        check("avx2", p, 8, 4e-7);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx512_vectors_match_the_scalar_semantics() {
        if !is_x86_feature_detected!("avx512f") {
            eprintln!("no AVX-512F on this CPU: skipped");
            return;
        }
        // SAFETY: the CPU has AVX-512F.
        let p = unsafe { probe_avx512(&inputs()) };
        check("avx512", p, 16, 2e-7);
    }

    #[cfg(target_arch = "aarch64")]
    #[test]
    fn neon_vectors_match_the_scalar_semantics() {
        // Two Newton steps from an 8-bit estimate.
        check("neon", probe::<F32x4>(&inputs()), 4, 4e-7);
    }
}
