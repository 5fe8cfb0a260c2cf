//! All-pairs with the `j` range split over several threads per body (the
//! "multithreadBodies" idea of cuda-samples' `nbody`): for small `N`, where
//! one or two threads per body leave most of a large GPU idle (`N = 4096`
//! is 16 blocks of the tiled kernel on 132 SMs), `S` threads share each
//! body's sum, so `N = 4096` with `S = 16` launches 65,536 threads.
//!
//! # Thread mapping
//! A block of `B = blockDim.x` threads serves `R = B / S` bodies
//! (`S = split`, a power of two dividing `B`): thread `t` is part `s = t / R`
//! of body `i = R blockIdx.x + r`, `r = t % R`, so a warp's lanes hold
//! consecutive bodies of as few parts as possible. The grid is
//! `ceil(N / R)` blocks ([`shape::split`](crate::shape::split)).
//!
//! # Tiling
//! As the tiled kernel: tiles of `B` bodies through dynamic shared memory
//! (`16 B` bytes), one body loaded per thread, massless padding past `N`.
//! Of each tile, part `s` takes the slots `s, s + S, s + 2S, ...` (`R`
//! of them): the `32 / R` parts a warp holds (when `R < 32`) read adjacent
//! slots, consecutive 16-byte words, never two words of one bank group.
//! A block's `R` bodies lie in one tile (`R` divides `B`); that tile and
//! the partial last one use the guarded
//! [`interaction`], whose self-pair term
//! is exactly zero.
//!
//! # The reduction (deterministic)
//! After the last tile each thread stores its partial sum in its own slot
//! of the tile memory; after a barrier part 0 of each body adds the `S`
//! partials in the fixed order `s = 0, 1, ..., S - 1`. Every sum is taken
//! in an order fixed by `(N, B, S)`, so the bits do not depend on the
//! schedule (no atomics).

use crate::exec::{Exec, Global};
use crate::integrate::euler_update;
use crate::interaction::{PointMass, Vec3, interaction, pull};
use crate::tiled::load_or_pad;
use crate::vec4::Vec4;

/// This thread's body index, the body, and (in part 0 of each body) the
/// body's acceleration `G sum_j ...`; other parts return `None`.
#[inline(always)]
unsafe fn accumulate<E: Exec, const GUARD: bool>(
    e: &E,
    pos: Global<Vec4>,
    n: u32,
    split: u32,
    g: f32,
    eps2: f32,
) -> (u32, Vec4, Option<Vec3<f32>>) {
    let b = e.block_dim();
    let t = e.thread_idx();
    let bodies = b / split;
    let (part, r) = (t / bodies, t % bodies);
    let i = e.block_idx() * bodies + r;
    // SAFETY: `load_or_pad` only reads indices below n.
    let body = unsafe { load_or_pad(e, pos, n, i) };
    let pi = PointMass::from(body);
    let mut a = Vec3::zero();
    let own_tile = e.block_idx() * bodies / b;
    let (tiles, full_tiles) = (n.div_ceil(b), n / b);
    let mut k = 0;
    while k < tiles {
        // SAFETY: slot t < block of the `block * 16` shared bytes; the tile
        // is read only after the barrier, rewritten only after the next one.
        unsafe { e.shared_store(t, load_or_pad(e, pos, n, k * b + t)) };
        e.sync_threads();
        if k < full_tiles && k != own_tile {
            // Neither body i nor padding in this tile.
            let mut m = 0;
            unrolled_while!(m + 8 <= bodies, |U| {
                // SAFETY: part + split (m + U) < split * bodies = block: a
                // tile slot written before the barrier.
                let pj = PointMass::from(unsafe { e.shared_load::<Vec4>(part + (m + U) * split) });
                a = pull::<f32, GUARD>(a, &pi, &pj, eps2);
            });
            while m < bodies {
                // SAFETY: part + split m < block, as above.
                let pj = PointMass::from(unsafe { e.shared_load::<Vec4>(part + m * split) });
                a = pull::<f32, GUARD>(a, &pi, &pj, eps2);
                m += 1;
            }
        } else {
            let count = b.min(n - k * b);
            let mut slot = part;
            while slot < count {
                // SAFETY: slot < count <= block: a tile slot written before the barrier.
                let pj = PointMass::from(unsafe { e.shared_load::<Vec4>(slot) });
                a = interaction(a, &pi, &pj, eps2);
                slot += split;
            }
        }
        e.sync_threads();
        k += 1;
    }
    // The partial sums through the tile memory (free after the barrier
    // above), added by part 0 in the order of the parts.
    // SAFETY: slot t < block, rewritten after the last barrier of the loop.
    unsafe { e.shared_store(t, a.to_vec4()) };
    e.sync_threads();
    if part != 0 {
        return (i, body, None);
    }
    let mut sum = Vec3::zero();
    let mut q = 0;
    while q < split {
        // SAFETY: q bodies + r < split * bodies = block, written before the barrier.
        let p = unsafe { e.shared_load::<Vec4>(q * bodies + r) };
        sum = Vec3 {
            x: sum.x + p.x,
            y: sum.y + p.y,
            z: sum.z + p.z,
        };
        q += 1;
    }
    (i, body, Some(sum.scale(g)))
}

/// Accelerations `acc[i] = G sum_{j != i} m_j r_ij / (|r_ij|^2 + eps^2)^(3/2)`,
/// `split` threads per body.
///
/// # Safety
/// `pos` and `acc` hold `n` elements; launched with
/// [`shape::split`](crate::shape::split)`(n, block, split)`, `block` valid
/// and `split` valid for it ([`shape::is_valid_split`](crate::shape::is_valid_split)).
///
/// # Parameters
/// `split`: threads per body; `g`: gravitational constant; `eps2`:
/// softening length squared; `GUARD`: the guarded interaction, for zero
/// softening.
pub unsafe fn split_accel<E: Exec, const GUARD: bool>(
    e: &E,
    pos: Global<Vec4>,
    acc: Global<Vec4>,
    n: u32,
    split: u32,
    g: f32,
    eps2: f32,
) {
    // SAFETY: this function's contract is `accumulate`'s.
    let (i, _, a) = unsafe { accumulate::<E, GUARD>(e, pos, n, split, g, eps2) };
    if let Some(a) = a
        && i < n
    {
        // SAFETY: i < n, `acc` holds n elements, written by part 0 of body i only.
        unsafe { e.store(acc, i, a.to_vec4()) };
    }
}

/// One semi-implicit Euler step fused with [`split_accel`]'s force loop:
/// `v += a dt`, `pos_out = pos_in + v dt`.
///
/// # Safety
/// All buffers hold `n` elements, `pos_in` and `pos_out` do not overlap;
/// launched as [`split_accel`].
///
/// # Parameters
/// `split`: threads per body; `dt`: time step; `g`: gravitational
/// constant; `eps2`: softening length squared; `GUARD`: the guarded
/// interaction, for zero softening.
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn split_euler<E: Exec, const GUARD: bool>(
    e: &E,
    pos_in: Global<Vec4>,
    pos_out: Global<Vec4>,
    vel: Global<Vec4>,
    n: u32,
    split: u32,
    dt: f32,
    g: f32,
    eps2: f32,
) {
    // SAFETY: this function's contract is `accumulate`'s.
    let (i, body, a) = unsafe { accumulate::<E, GUARD>(e, pos_in, n, split, g, eps2) };
    if let Some(a) = a
        && i < n
    {
        // SAFETY: i < n; vel[i] and pos_out[i] are written by part 0 of body
        // i only, and no thread reads `pos_out`.
        unsafe {
            let (p, v) = euler_update(body, e.load(vel, i), a, dt);
            e.store(vel, i, v);
            e.store(pos_out, i, p);
        }
    }
}
