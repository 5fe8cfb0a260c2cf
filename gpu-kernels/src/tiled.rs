//! Tiled all-pairs through shared memory (the tiled kernel of NVIDIA Warp's
//! N-body example, fixed for every `N`).
//!
//! # Tiling
//! The bodies are cut into tiles of `B = blockDim.x` bodies. For each tile,
//! every thread of the block loads one body into dynamic shared memory
//! (`B * 16` bytes), the block synchronises, every thread interacts its bodies
//! with the whole tile, and the block synchronises again before the next load.
//! The last tile may be partial: Warp's example loops over `range(N / TILE_SIZE)`, which drops
//! the remainder bodies; here the tile count is `ceil(N / B)`, slots past `N`
//! hold massless padding, and the loop over a partial tile stops at `N`.
//!
//! # Thread mapping
//! Each thread carries [`TILED_BODIES_PER_THREAD`]
//! = 2 bodies in registers, `i0 = 2 B blockIdx.x + t` and `i1 = i0 + B`, so one
//! `LDS.128` of a `j` body serves two interactions; the grid is
//! `ceil(N / 2B)` blocks ([`shape::tiled`](crate::shape::tiled)). Threads whose
//! bodies lie past `N` still load tiles and reach every barrier; they only skip
//! the final store.
//!
//! # The hot loop
//! Tiles that hold neither of the block's own bodies nor padding use the
//! unguarded [`interaction_distinct`](crate::interaction::interaction_distinct), unrolled 32 times: 13 arithmetic
//! instructions per interaction plus half a shared load. The one or two tiles
//! holding the block's own bodies, and the partial last tile, use the guarded
//! [`interaction`], whose self-pair term is exactly zero for any softening.

use crate::exec::{Exec, Global};
use crate::integrate::euler_update;
use crate::interaction::{PointMass, Vec3, interaction, pull};
use crate::shape::TILED_BODIES_PER_THREAD;
use crate::vec4::Vec4;

/// Body `i`, or past the end (`i >= n >= 1`) a massless copy of body `n - 1`.
///
/// No loop ever interacts with padding (partial tiles stop at `n`); the mass
/// is zeroed anyway, so a padding body could only ever add exactly nothing.
/// The load is unconditional and only `w` is selected: a load inside a branch,
/// or a select of whole bodies, makes LLVM route the 16 bytes through local
/// memory (a stack frame).
#[inline(always)]
pub(crate) unsafe fn load_or_pad<E: Exec>(e: &E, pos: Global<Vec4>, n: u32, i: u32) -> Vec4 {
    // SAFETY: min(i, n - 1) < n (n >= 1, the launch contract) is in bounds of `pos`.
    let body = unsafe { e.load(pos, i.min(n - 1)) };
    Vec4::new(body.x, body.y, body.z, if i < n { body.w } else { 0.0 })
}

/// The two bodies of this thread, with their accelerations `G sum_j ...`.
#[inline(always)]
unsafe fn accumulate<E: Exec, const GUARD: bool>(
    e: &E,
    pos: Global<Vec4>,
    n: u32,
    g: f32,
    eps2: f32,
) -> [(u32, Vec4, Vec3<f32>); 2] {
    let b = e.block_dim();
    let t = e.thread_idx();
    let first_tile = e.block_idx() * TILED_BODIES_PER_THREAD;
    let i0 = first_tile * b + t;
    let i1 = i0 + b;
    // SAFETY: `load_or_pad` only reads indices below n.
    let (body0, body1) = unsafe { (load_or_pad(e, pos, n, i0), load_or_pad(e, pos, n, i1)) };
    let (p0, p1) = (PointMass::from(body0), PointMass::from(body1));
    let (mut a0, mut a1) = (Vec3::zero(), Vec3::zero());
    let tiles = n.div_ceil(b);
    let full_tiles = n / b;
    let mut k = 0;
    while k < tiles {
        // SAFETY: slot t < block of the `block * 16` shared bytes; the tile is read only after
        // the barrier, and rewritten only after the next one.
        unsafe { e.shared_store(t, load_or_pad(e, pos, n, k * b + t)) };
        e.sync_threads();
        if k < full_tiles && k != first_tile && k != first_tile + 1 {
            // Neither i0 nor i1 is in this tile, and it has no padding.
            // Unrolled 32 times: every valid block size is a multiple of 32.
            let mut s = 0;
            unrolled_while!(s < b, by 32, |U| {
                // SAFETY: s + U < block: a tile slot written before the barrier.
                let pj = PointMass::from(unsafe { e.shared_load::<Vec4>(s + U) });
                a0 = pull::<f32, GUARD>(a0, &p0, &pj, eps2);
                a1 = pull::<f32, GUARD>(a1, &p1, &pj, eps2);
            });
        } else {
            let count = b.min(n - k * b);
            let mut s = 0;
            while s < count {
                // SAFETY: s < count <= block: a tile slot written before the barrier.
                let pj = PointMass::from(unsafe { e.shared_load::<Vec4>(s) });
                a0 = interaction(a0, &p0, &pj, eps2);
                a1 = interaction(a1, &p1, &pj, eps2);
                s += 1;
            }
        }
        e.sync_threads();
        k += 1;
    }
    [(i0, body0, a0.scale(g)), (i1, body1, a1.scale(g))]
}

/// Accelerations `acc[i] = G sum_{j != i} m_j r_ij / (|r_ij|^2 + eps^2)^(3/2)`.
///
/// # Safety
/// `pos` and `acc` hold `n` elements; launched with
/// [`shape::tiled`](crate::shape::tiled)`(n, block)` and `block` valid
/// ([`shape::is_valid_block`](crate::shape::is_valid_block)).
///
/// # Parameters
/// `g`: gravitational constant; `eps2`: softening length squared; `GUARD`:
/// the guarded interaction, for zero softening (coincident bodies then
/// contribute exactly zero, not NaN), one `min` more per pair.
pub unsafe fn tiled_accel<E: Exec, const GUARD: bool>(
    e: &E,
    pos: Global<Vec4>,
    acc: Global<Vec4>,
    n: u32,
    g: f32,
    eps2: f32,
) {
    // SAFETY: this function's contract is `accumulate`'s (buffers of n bodies, the tiled launch
    // shape).
    for (i, _, a) in unsafe { accumulate::<E, GUARD>(e, pos, n, g, eps2) } {
        if i < n {
            // SAFETY: i < n, `acc` holds n elements, each written by one thread.
            unsafe { e.store(acc, i, a.to_vec4()) };
        }
    }
}

/// One semi-implicit Euler step fused with the tiled force loop:
/// `v += a dt`, `pos_out = pos_in + v dt`.
///
/// # Safety
/// All buffers hold `n` elements, `pos_in` and `pos_out` do not overlap;
/// launched with [`shape::tiled`](crate::shape::tiled)`(n, block)`, `block` valid.
///
/// # Parameters
/// `dt`: time step; `g`: gravitational constant; `eps2`: softening length
/// squared; `GUARD`: the guarded interaction, for zero softening.
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn tiled_euler<E: Exec, const GUARD: bool>(
    e: &E,
    pos_in: Global<Vec4>,
    pos_out: Global<Vec4>,
    vel: Global<Vec4>,
    n: u32,
    dt: f32,
    g: f32,
    eps2: f32,
) {
    // SAFETY: this function's contract is `accumulate`'s (buffers of n bodies, the tiled launch
    // shape).
    for (i, body, a) in unsafe { accumulate::<E, GUARD>(e, pos_in, n, g, eps2) } {
        if i < n {
            // SAFETY: i < n; thread-owned elements vel[i] and pos_out[i], and no thread reads
            // `pos_out`.
            unsafe {
                let (p, v) = euler_update(body, e.load(vel, i), a, dt);
                e.store(vel, i, v);
                e.store(pos_out, i, p);
            }
        }
    }
}
