//! The one pairwise interaction, shared by every kernel and by the host CPU backend.
//!
//! The functions are generic over [`Real`], the number type of one lane: an
//! `f32` in the GPU kernels and in the emulator, a SIMD vector of `f32` (one
//! body per lane) in the host's vectorised backend. Every backend computes
//! this formula:
//!
//! ```text
//! a_i += m_j r_ij / (|r_ij|^2 + eps^2)^(3/2),   r_ij = x_j - x_i
//! ```
//!
//! written with explicit fused multiply-adds and a fast reciprocal square root:
//! 3 subtractions, 3 FMAs for `|r|^2 + eps^2`, one `rsqrt`, 3 multiplications
//! for `m_j / d^3`, 3 FMAs into the accumulator: 13 operations, the floor for
//! this formula on a GPU. `G` is applied once per body by the callers, not per pair.
//! The GPU kernels and the emulator call these functions as they are; the CPU
//! backend's hot loops use a rearranged form with the same operations
//! (`nbody-host/src/cpu/loops.rs`, `pull_fast`), and its guarded path these.

use core::ops::{Add, Mul, Neg, Sub};

/// The arithmetic of one lane: what the interaction needs from a number type.
///
/// Implemented here for `f32` (on the GPU with NVVM's approximate `rsqrt`, on the
/// host correctly rounded); `nbody-host` implements it for its SIMD vectors. There is no
/// constructor from `f32` here: the host's vector types are made only from a
/// proof that the CPU has their instruction set, so generic code receives its
/// constants as values of `Self`.
pub trait Real:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Neg<Output = Self>
{
    /// `self * a + b` with one rounding (a fused multiply-add).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// `1 / sqrt(self)`; `+inf` for `+0`. Fast on the GPU (`rsqrt.approx.ftz.f32`,
    /// relative error below 2^-22), correctly rounded on the host for `f32`.
    fn rsqrt(self) -> Self;
    /// `min(self, f32::MAX)`, with NaN mapped to `f32::MAX`: leaves every finite
    /// value unchanged and turns `inf` (and `0 * inf`) into a finite number.
    fn min_finite(self) -> Self;
}

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.rsqrt.approx.ftz.f"]
    fn nvvm_rsqrt_approx_ftz(x: f32) -> f32;
}

impl Real for f32 {
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        // nvptx does not contract `a * b + c`; ask for the FMA explicitly.
        core::intrinsics::fmaf32(self, a, b)
    }

    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        libm::fmaf(self, a, b)
    }

    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn rsqrt(self) -> Self {
        // `1.0 / x.sqrt()` would become IEEE `sqrt.rn` + `div.rn` with slow
        // paths; the approximate, flush-to-zero form is one MUFU.RSQ.
        // SAFETY: the declaration matches LLVM's `float @llvm.nvvm.rsqrt.approx.ftz.f(float)`,
        // a pure intrinsic defined for every f32 (no memory, no preconditions), and this
        // is only compiled for nvptx64, where NVVM provides it.
        unsafe { nvvm_rsqrt_approx_ftz(self) }
    }

    /// The correctly rounded `1/sqrt(x)`: what the software CUDA device
    /// returns for `rsqrt.approx` (in `f64`, one rounding to `f32` at the
    /// end; correct for every `f32` in `[1, 4)`, so for every normal input,
    /// which `tests/emulator.rs` checks against softcuda), so kernels give
    /// the emulator and softcuda the same bits. (`1 / sqrtf(x)` rounds
    /// twice and is an ulp off for a quarter of the inputs.)
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    fn rsqrt(self) -> Self {
        (1.0 / libm::sqrt(self as f64)) as f32
    }

    #[inline(always)]
    fn min_finite(self) -> Self {
        // `f32::min` returns the non-NaN operand (IEEE minNum, PTX `min.f32`).
        self.min(f32::MAX)
    }
}

/// A position and mass: one body, or one body per lane of a SIMD vector.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointMass<R> {
    /// x position.
    pub x: R,
    /// y position.
    pub y: R,
    /// z position.
    pub z: R,
    /// Mass.
    pub m: R,
}

/// An acceleration (or any 3-vector) per lane.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vec3<R> {
    /// x component.
    pub x: R,
    /// y component.
    pub y: R,
    /// z component.
    pub z: R,
}

impl<R: Real> Vec3<R> {
    /// `v` in every component (e.g. a vector's zero).
    #[inline(always)]
    pub fn splat(v: R) -> Self {
        Vec3 { x: v, y: v, z: v }
    }

    /// Every component multiplied by `k`.
    #[inline(always)]
    pub fn scale(self, k: R) -> Self {
        Vec3 {
            x: self.x * k,
            y: self.y * k,
            z: self.z * k,
        }
    }
}

impl From<crate::Vec4> for PointMass<f32> {
    #[inline(always)]
    fn from(v: crate::Vec4) -> Self {
        PointMass {
            x: v.x,
            y: v.y,
            z: v.z,
            m: v.w,
        }
    }
}

impl Vec3<f32> {
    /// The zero vector.
    #[inline(always)]
    pub fn zero() -> Self {
        Vec3::splat(0.0)
    }

    /// As a [`Vec4`](crate::Vec4) with `w = 0`.
    #[inline(always)]
    pub fn to_vec4(self) -> crate::Vec4 {
        crate::Vec4::new(self.x, self.y, self.z, 0.0)
    }
}

/// `r = x_j - x_i` and `1 / (|r|^2 + eps^2)^(3/2)`.
#[inline(always)]
fn separation<R: Real>(pi: &PointMass<R>, pj: &PointMass<R>, eps2: R) -> (Vec3<R>, R) {
    let r = Vec3 {
        x: pj.x - pi.x,
        y: pj.y - pi.y,
        z: pj.z - pi.z,
    };
    let d2 = r.z.mul_add(r.z, r.y.mul_add(r.y, r.x.mul_add(r.x, eps2)));
    let inv = d2.rsqrt();
    (r, inv * inv * inv)
}

/// Adds body j's pull on body i (without `G`) to `acc`:
/// `acc + m_j r_ij / (|r_ij|^2 + eps^2)^(3/2)`.
///
/// Safe for every pair: when `r_ij = 0` (the self-pair, or a massless padding
/// body at the same point) the contribution is exactly zero for any `eps2`,
/// `0` included, never NaN. The guard is one `min` that leaves every finite
/// factor unchanged, so results equal [`interaction_distinct`]'s wherever that
/// one is finite.
#[inline(always)]
pub fn interaction<R: Real>(
    acc: Vec3<R>,
    pi: &PointMass<R>,
    pj: &PointMass<R>,
    eps2: R,
) -> Vec3<R> {
    let (r, inv3) = separation(pi, pj, eps2);
    // 0 * inf (r = 0, eps = 0) would be NaN; clamp the factor to f32::MAX and
    // the product with r = 0 is exactly 0.
    let f = (pj.m * inv3).min_finite();
    Vec3 {
        x: r.x.mul_add(f, acc.x),
        y: r.y.mul_add(f, acc.y),
        z: r.z.mul_add(f, acc.z),
    }
}

/// [`interaction`] without the self-pair guard, for the hot loops.
///
/// Equal to [`interaction`] whenever `m_j / (|r|^2 + eps^2)^(3/2)` is finite:
/// for every pair when `eps > 0` and `max m / eps^3` is finite in f32, and for
/// every pair of distinct, non-coincident bodies when `eps = 0`. Kernels use
/// it only on tiles that cannot hold body i itself nor padding, and only in
/// their unguarded instances: the host launches the guarded ones ([`pull`],
/// [`pair`] with `GUARD`) whenever the softening is zero or `m / eps^3` could
/// overflow, as the CPU backend does.
#[inline(always)]
pub fn interaction_distinct<R: Real>(
    acc: Vec3<R>,
    pi: &PointMass<R>,
    pj: &PointMass<R>,
    eps2: R,
) -> Vec3<R> {
    let (r, inv3) = separation(pi, pj, eps2);
    let f = pj.m * inv3;
    Vec3 {
        x: r.x.mul_add(f, acc.x),
        y: r.y.mul_add(f, acc.y),
        z: r.z.mul_add(f, acc.z),
    }
}

/// Both halves of one pair (Newton's third law), with `s = 1/d^3` computed once:
/// returns `(acc_i + m_j s r, acc_j - m_i s r, s)`, `s = 1/(|r|^2 + eps^2)^(3/2)`.
///
/// For distinct bodies (the triangle schedule never pairs a body with itself).
#[inline(always)]
pub fn pair_interaction<R: Real>(
    acc_i: Vec3<R>,
    acc_j: Vec3<R>,
    pi: &PointMass<R>,
    pj: &PointMass<R>,
    eps2: R,
) -> (Vec3<R>, Vec3<R>, R) {
    let (r, inv3) = separation(pi, pj, eps2);
    let fi = pj.m * inv3;
    // The negation folds into the multiply (FMUL with a negated operand).
    let nfj = (-pi.m) * inv3;
    (
        Vec3 {
            x: r.x.mul_add(fi, acc_i.x),
            y: r.y.mul_add(fi, acc_i.y),
            z: r.z.mul_add(fi, acc_i.z),
        },
        Vec3 {
            x: r.x.mul_add(nfj, acc_j.x),
            y: r.y.mul_add(nfj, acc_j.y),
            z: r.z.mul_add(nfj, acc_j.z),
        },
        inv3,
    )
}

/// [`pair_interaction`] with [`interaction`]'s guard on both factors (without
/// `s`): coincident bodies, and a massless padding body, contribute exactly 0
/// to both sides at any `eps2`, `0` included. Equal to [`pair_interaction`]
/// wherever that one is finite. For host code that may pair coincident
/// bodies (the CPU backend at `eps = 0`).
#[inline(always)]
pub fn pair_interaction_guarded<R: Real>(
    acc_i: Vec3<R>,
    acc_j: Vec3<R>,
    pi: &PointMass<R>,
    pj: &PointMass<R>,
    eps2: R,
) -> (Vec3<R>, Vec3<R>) {
    let (r, inv3) = separation(pi, pj, eps2);
    let fi = (pj.m * inv3).min_finite();
    let nfj = -(pi.m * inv3).min_finite();
    (
        Vec3 {
            x: r.x.mul_add(fi, acc_i.x),
            y: r.y.mul_add(fi, acc_i.y),
            z: r.z.mul_add(fi, acc_i.z),
        },
        Vec3 {
            x: r.x.mul_add(nfj, acc_j.x),
            y: r.y.mul_add(nfj, acc_j.y),
            z: r.z.mul_add(nfj, acc_j.z),
        },
    )
}

/// The hot loops' one-sided interaction: [`interaction`] when `GUARD` (zero
/// softening, where coincident bodies must contribute zero, not NaN), else
/// [`interaction_distinct`] (one `min` fewer per pair).
#[inline(always)]
pub fn pull<R: Real, const GUARD: bool>(
    acc: Vec3<R>,
    pi: &PointMass<R>,
    pj: &PointMass<R>,
    eps2: R,
) -> Vec3<R> {
    if GUARD {
        interaction(acc, pi, pj, eps2)
    } else {
        interaction_distinct(acc, pi, pj, eps2)
    }
}

/// The hot loops' pair interaction: [`pair_interaction`], or when `GUARD`
/// [`pair_interaction_guarded`] (whose third value is `eps2`: callers use it
/// only as scratch).
#[inline(always)]
pub fn pair<R: Real, const GUARD: bool>(
    acc_i: Vec3<R>,
    acc_j: Vec3<R>,
    pi: &PointMass<R>,
    pj: &PointMass<R>,
    eps2: R,
) -> (Vec3<R>, Vec3<R>, R) {
    if GUARD {
        let (ai, aj) = pair_interaction_guarded(acc_i, acc_j, pi, pj, eps2);
        (ai, aj, eps2)
    } else {
        pair_interaction(acc_i, acc_j, pi, pj, eps2)
    }
}

/// `m_j / sqrt(|r_ij|^2 + eps^2)`: body j's share of body i's softened
/// potential (without `-G m_i`). The caller excludes the self-pair.
#[inline(always)]
pub fn potential<R: Real>(pi: &PointMass<R>, pj: &PointMass<R>, eps2: R) -> R {
    let (dx, dy, dz) = (pj.x - pi.x, pj.y - pi.y, pj.z - pi.z);
    let d2 = dz.mul_add(dz, dy.mul_add(dy, dx.mul_add(dx, eps2)));
    pj.m * d2.rsqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pm(x: f32, y: f32, z: f32, m: f32) -> PointMass<f32> {
        PointMass { x, y, z, m }
    }

    #[test]
    fn guarded_pair_is_zero_for_coincident_bodies_and_equal_otherwise() {
        let p = pm(1.0, 2.0, 3.0, 4.0);
        let (a, b) = pair_interaction_guarded(Vec3::zero(), Vec3::zero(), &p, &p, 0.0);
        assert_eq!([a.x, a.y, a.z, b.x, b.y, b.z], [0.0; 6]);
        let q = pm(-1.0, 0.5, 2.0, 0.25);
        let (a, b) = pair_interaction_guarded(Vec3::zero(), Vec3::zero(), &p, &q, 0.01);
        let (c, d, _) = pair_interaction(Vec3::zero(), Vec3::zero(), &p, &q, 0.01);
        assert_eq!(
            [a.x, a.y, a.z, b.x, b.y, b.z],
            [c.x, c.y, c.z, d.x, d.y, d.z]
        );
    }

    #[test]
    fn matches_newton_for_a_simple_pair() {
        // Body j at distance 2 on the x axis with mass 3, no softening:
        // a = 3 * 2 / 2^3 = 0.75 towards j.
        let a = interaction(
            Vec3::zero(),
            &pm(0.0, 0.0, 0.0, 1.0),
            &pm(2.0, 0.0, 0.0, 3.0),
            0.0,
        );
        assert_eq!(
            a,
            Vec3 {
                x: 0.75,
                y: 0.0,
                z: 0.0
            }
        );
        let b = interaction_distinct(
            Vec3::zero(),
            &pm(0.0, 0.0, 0.0, 1.0),
            &pm(2.0, 0.0, 0.0, 3.0),
            0.0,
        );
        assert_eq!(a, b);
    }

    #[test]
    fn softening_follows_the_plummer_form() {
        let eps2 = 0.25f32;
        let a = interaction(
            Vec3::zero(),
            &pm(0.0, 0.0, 0.0, 1.0),
            &pm(0.0, 1.5, 0.0, 2.0),
            eps2,
        );
        let d2 = 1.5f64 * 1.5 + 0.25;
        let expect = 2.0 * 1.5 / (d2 * d2.sqrt());
        assert!(
            ((a.y as f64) - expect).abs() < 1e-6 * expect,
            "{a:?} vs {expect}"
        );
    }

    #[test]
    fn self_pair_is_exactly_zero_for_any_softening() {
        let p = pm(1.25, -3.5, 7.0, 2.5);
        for eps2 in [0.0f32, 1e-30, 0.01, 1.0] {
            let a = interaction(Vec3::zero(), &p, &p, eps2);
            assert_eq!(a, Vec3::zero(), "eps2 = {eps2}");
            assert!(a.x.to_bits() == 0 && a.y.to_bits() == 0 && a.z.to_bits() == 0);
        }
        // A massless padding body on top of body i: still zero, not NaN.
        let a = interaction(Vec3::zero(), &p, &pm(1.25, -3.5, 7.0, 0.0), 0.0);
        assert_eq!(a, Vec3::zero());
        // Without the guard the self-pair at eps = 0 is NaN: the guard is needed.
        let b = interaction_distinct(Vec3::zero(), &p, &p, 0.0);
        assert!(b.x.is_nan());
    }

    #[test]
    fn pair_interaction_is_both_one_sided_interactions() {
        let pi = pm(0.5, 1.0, -2.0, 3.0);
        let pj = pm(-1.0, 2.5, 0.25, 0.5);
        let eps2 = 0.01;
        let (ai, aj, _) = pair_interaction(Vec3::zero(), Vec3::zero(), &pi, &pj, eps2);
        let ai_ref = interaction(Vec3::zero(), &pi, &pj, eps2);
        let aj_ref = interaction(Vec3::zero(), &pj, &pi, eps2);
        for (a, b) in [
            (ai.x, ai_ref.x),
            (ai.y, ai_ref.y),
            (ai.z, ai_ref.z),
            (aj.x, aj_ref.x),
            (aj.y, aj_ref.y),
            (aj.z, aj_ref.z),
        ] {
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1e-30), "{a} vs {b}");
        }
        // Momentum: m_i a_i + m_j a_j = 0 up to rounding.
        let px = pi.m * ai.x + pj.m * aj.x;
        assert!(px.abs() < 1e-6 * (pi.m * ai.x).abs());
    }

    #[test]
    fn potential_is_softened_inverse_distance() {
        let u = potential(&pm(0.0, 0.0, 0.0, 1.0), &pm(3.0, 4.0, 0.0, 2.0), 0.0);
        assert!((u - 0.4).abs() < 1e-7);
    }
}
