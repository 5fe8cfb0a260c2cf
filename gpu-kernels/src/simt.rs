//! SIMT all-pairs: one thread per body reading every other body from global
//! memory (the baseline `integrate_bodies` of NVIDIA Warp's N-body example).
//!
//! # Thread mapping
//! One thread per body `i = blockIdx.x * blockDim.x + threadIdx.x`; threads
//! with `i >= n` exit at once (this kernel has no barriers).
//!
//! # Memory
//! Every thread reads all `n` bodies from global memory (`ld.global.v4.f32`,
//! 16 bytes per body). In the first part of the split `j` loop (below) a
//! warp's lanes read the same `j` at the same time, a broadcast; in the
//! second each lane starts after its own body, so the lanes read consecutive
//! bodies (coalesced, mostly L1 hits): the software device counts about 0.27
//! global 32-byte sectors per interaction over a whole launch, against 1/32
//! for pure broadcasts. No shared memory.
//!
//! # The self-pair
//! The `j` loop is split into `0..i` and `i+1..n`, so body `i` never meets
//! itself and the hot loop uses the unguarded
//! [`interaction_distinct`](crate::interaction::interaction_distinct).

use crate::exec::{Exec, Global};
use crate::integrate::{euler_update, global_thread};
use crate::interaction::{PointMass, Vec3, pull};
use crate::vec4::Vec4;

/// Sum over `j in start..end` of body j's pull on `pi` (without `G`).
#[inline(always)]
unsafe fn sum_range<E: Exec, const GUARD: bool>(
    e: &E,
    pos: Global<Vec4>,
    pi: &PointMass<f32>,
    start: u32,
    end: u32,
    eps2: f32,
    mut acc: Vec3<f32>,
) -> Vec3<f32> {
    let mut j = start;
    // Unrolled 8 times, then one at a time.
    unrolled_while!(j + 8 <= end, |U| {
        // SAFETY: j + U < end <= n: in bounds of `pos` (n bodies).
        let pj = PointMass::from(unsafe { e.load(pos, j + U) });
        acc = pull::<f32, GUARD>(acc, pi, &pj, eps2);
    });
    while j < end {
        // SAFETY: j < end <= n: in bounds of `pos` (n bodies).
        let pj = PointMass::from(unsafe { e.load(pos, j) });
        acc = pull::<f32, GUARD>(acc, pi, &pj, eps2);
        j += 1;
    }
    acc
}

/// Body `i` and its acceleration `G * sum_j` from all other bodies.
#[inline(always)]
unsafe fn accel_of<E: Exec, const GUARD: bool>(
    e: &E,
    pos: Global<Vec4>,
    n: u32,
    i: u32,
    g: f32,
    eps2: f32,
) -> (Vec4, Vec3<f32>) {
    // SAFETY: i < n (the callers check it), `pos` holds n bodies.
    let body = unsafe { e.load(pos, i) };
    let pi = PointMass::from(body);
    // SAFETY: 0 <= i < n: the range lies within `pos`.
    let acc = unsafe { sum_range::<E, GUARD>(e, pos, &pi, 0, i, eps2, Vec3::zero()) };
    // SAFETY: i + 1 <= n: the range lies within `pos`.
    let acc = unsafe { sum_range::<E, GUARD>(e, pos, &pi, i + 1, n, eps2, acc) };
    (body, acc.scale(g))
}

/// Accelerations `acc[i] = G sum_{j != i} m_j r_ij / (|r_ij|^2 + eps^2)^(3/2)`.
///
/// # Safety
/// `pos` and `acc` hold `n` elements; launched with
/// [`shape::per_body`](crate::shape::per_body)`(n, block)`.
///
/// # Parameters
/// `g`: gravitational constant; `eps2`: softening length squared; `GUARD`:
/// the guarded interaction, for zero softening (coincident bodies then
/// contribute exactly zero, not NaN), one `min` more per pair.
pub unsafe fn simt_accel<E: Exec, const GUARD: bool>(
    e: &E,
    pos: Global<Vec4>,
    acc: Global<Vec4>,
    n: u32,
    g: f32,
    eps2: f32,
) {
    let i = global_thread(e);
    if i < n {
        // SAFETY: i < n, `pos` and `acc` hold n elements; thread i writes only acc[i].
        unsafe {
            let (_, a) = accel_of::<E, GUARD>(e, pos, n, i, g, eps2);
            e.store(acc, i, a.to_vec4());
        }
    }
}

/// One semi-implicit Euler step fused with the force loop (Warp's
/// `integrate_bodies`): `v += a dt`, `pos_out = pos_in + v dt`.
///
/// # Safety
/// All buffers hold `n` elements, `pos_in` and `pos_out` do not overlap;
/// launched with [`shape::per_body`](crate::shape::per_body)`(n, block)`.
///
/// # Parameters
/// `dt`: time step; `g`: gravitational constant; `eps2`: softening length
/// squared; `GUARD`: the guarded interaction, for zero softening.
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn simt_euler<E: Exec, const GUARD: bool>(
    e: &E,
    pos_in: Global<Vec4>,
    pos_out: Global<Vec4>,
    vel: Global<Vec4>,
    n: u32,
    dt: f32,
    g: f32,
    eps2: f32,
) {
    let i = global_thread(e);
    if i < n {
        // SAFETY: i < n and every buffer holds n elements; thread i writes only vel[i] and
        // pos_out[i], and no thread reads `pos_out`.
        unsafe {
            let (body, a) = accel_of::<E, GUARD>(e, pos_in, n, i, g, eps2);
            let (p, v) = euler_update(body, e.load(vel, i), a, dt);
            e.store(vel, i, v);
            e.store(pos_out, i, p);
        }
    }
}
