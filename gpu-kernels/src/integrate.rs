//! The integrators' per-body operations: kick (`v += a h`), drift
//! (`x += v h`), the two fused (semi-implicit Euler from stored accelerations),
//! and the divergence check. Which integrator runs them in which order is the
//! host's business (`nbody-host`'s `integrator.rs`).
//!
//! All are one thread per body, launched with [`shape::per_body`](crate::shape::per_body).
//! Positions are double-buffered: kernels that move bodies read `pos_in` and write
//! `pos_out`, so no thread ever reads a position another thread has already moved.

use crate::exec::{Exec, Global};
use crate::interaction::{Real, Vec3};
use crate::vec4::Vec4;

/// One semi-implicit Euler update: `v' = v + a dt`, `x' = x + v' dt`; mass kept.
#[inline(always)]
pub fn euler_update(pos: Vec4, vel: Vec4, acc: Vec3<f32>, dt: f32) -> (Vec4, Vec4) {
    let v = Vec4::new(
        Real::mul_add(acc.x, dt, vel.x),
        Real::mul_add(acc.y, dt, vel.y),
        Real::mul_add(acc.z, dt, vel.z),
        vel.w,
    );
    let p = Vec4::new(
        Real::mul_add(v.x, dt, pos.x),
        Real::mul_add(v.y, dt, pos.y),
        Real::mul_add(v.z, dt, pos.z),
        pos.w,
    );
    (p, v)
}

/// The global index of this thread in a one-thread-per-body launch.
#[inline(always)]
pub fn global_thread<E: Exec>(e: &E) -> u32 {
    e.block_idx() * e.block_dim() + e.thread_idx()
}

/// A kick and a drift by the same `dt`, fused: `v' = v + a dt`,
/// `x' = x + v' dt` (semi-implicit Euler from stored accelerations, e.g. the
/// triangle kernel's).
///
/// # Safety
/// `pos_in`, `pos_out`, `vel` and `acc` hold `n` elements, `pos_in` and
/// `pos_out` do not overlap; launched with
/// [`shape::per_body`](crate::shape::per_body)`(n, block)`.
///
/// # Parameters
/// `dt`: time step. `acc` holds `G`-scaled accelerations.
pub unsafe fn kick_drift<E: Exec>(
    e: &E,
    pos_in: Global<Vec4>,
    pos_out: Global<Vec4>,
    vel: Global<Vec4>,
    acc: Global<Vec4>,
    n: u32,
    dt: f32,
) {
    let i = global_thread(e);
    if i < n {
        // SAFETY: i < n and every buffer holds n elements; thread i touches only element i.
        unsafe {
            let a = e.load(acc, i);
            let (p, v) = euler_update(
                e.load(pos_in, i),
                e.load(vel, i),
                Vec3 {
                    x: a.x,
                    y: a.y,
                    z: a.z,
                },
                dt,
            );
            e.store(vel, i, v);
            e.store(pos_out, i, p);
        }
    }
}

/// Kick: `v += a dt` (leapfrog uses `dt / 2` twice per step).
///
/// # Safety
/// `vel` and `acc` hold `n` elements; launched with [`shape::per_body`](crate::shape::per_body).
pub unsafe fn kick<E: Exec>(e: &E, vel: Global<Vec4>, acc: Global<Vec4>, n: u32, dt: f32) {
    let i = global_thread(e);
    if i < n {
        // SAFETY: i < n and every buffer holds n elements; thread i touches only element i.
        unsafe {
            let a = e.load(acc, i);
            let v = e.load(vel, i);
            e.store(
                vel,
                i,
                Vec4::new(
                    Real::mul_add(a.x, dt, v.x),
                    Real::mul_add(a.y, dt, v.y),
                    Real::mul_add(a.z, dt, v.z),
                    v.w,
                ),
            );
        }
    }
}

/// Drift: `x' = x + v dt`, from `pos_in` into `pos_out`; mass kept.
///
/// # Safety
/// All buffers hold `n` elements; launched with [`shape::per_body`](crate::shape::per_body).
pub unsafe fn drift<E: Exec>(
    e: &E,
    pos_in: Global<Vec4>,
    pos_out: Global<Vec4>,
    vel: Global<Vec4>,
    n: u32,
    dt: f32,
) {
    let i = global_thread(e);
    if i < n {
        // SAFETY: i < n and every buffer holds n elements; thread i touches only element i.
        unsafe {
            let p = e.load(pos_in, i);
            let v = e.load(vel, i);
            e.store(
                pos_out,
                i,
                Vec4::new(
                    Real::mul_add(v.x, dt, p.x),
                    Real::mul_add(v.y, dt, p.y),
                    Real::mul_add(v.z, dt, p.z),
                    p.w,
                ),
            );
        }
    }
}

/// Value of `flag[0]` while every body is finite.
pub const ALL_FINITE: u32 = u32::MAX;

/// Divergence check, launched after every step: if body `i`'s position or
/// velocity is not finite and `flag[0]` is still [`ALL_FINITE`] (or already
/// this `step`), sets `flag[0] = step` and raises `flag[1]` to `i`.
///
/// Launches in one stream run in order, so `flag[0]` ends up holding the first
/// step that went wrong and `flag[1]` the highest-numbered body that was bad
/// after it, whatever the threads' order (the host resets `flag[1]` to 0).
/// Every access to the flag is atomic: several threads of one launch may find
/// a bad body, and plain stores to one word would race. Costs one read of the
/// state; atomics only where a body is bad.
///
/// # Safety
/// `pos` and `vel` hold `n` elements, `flag` two; launched with
/// [`shape::per_body`](crate::shape::per_body).
pub unsafe fn check_finite<E: Exec>(
    e: &E,
    pos: Global<Vec4>,
    vel: Global<Vec4>,
    n: u32,
    step: u32,
    flag: Global<u32>,
) {
    let i = global_thread(e);
    if i < n {
        // SAFETY: i < n and `pos`, `vel` hold n elements, `flag` two words,
        // accessed only atomically.
        unsafe {
            let p = e.load(pos, i);
            let v = e.load(vel, i);
            let finite = p.x.is_finite()
                && p.y.is_finite()
                && p.z.is_finite()
                && v.x.is_finite()
                && v.y.is_finite()
                && v.z.is_finite();
            if !finite {
                // An atomic read (add 0): other threads may be setting it.
                let first = e.atomic_add_u32(flag, 0, 0);
                if first == ALL_FINITE || first == step {
                    e.atomic_min_u32(flag, 0, step);
                    e.atomic_max_u32(flag, 1, i);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn euler_uses_the_new_velocity_for_the_drift() {
        let (p, v) = euler_update(
            Vec4::new(1.0, 0.0, 0.0, 5.0),
            Vec4::new(0.0, 1.0, 0.0, 0.0),
            Vec3 {
                x: 2.0,
                y: 0.0,
                z: 0.0,
            },
            0.5,
        );
        assert_eq!(v, Vec4::new(1.0, 1.0, 0.0, 0.0));
        assert_eq!(p, Vec4::new(1.5, 0.5, 0.0, 5.0));
    }
}
