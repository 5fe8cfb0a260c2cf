//! Block pairs: the forces and potential between two separate blocks of
//! bodies `I` (`ni` bodies) and `J` (`nj` bodies), the unit of work that a
//! ring of MPI ranks (`nbody-host`'s `distributed` module), or several GPUs
//! in one machine, hand out. Three kernels:
//!
//! - [`block_pull`]: `acc_i += sum_{j in J} m_j r_ij / (|r_ij|^2 + eps^2)^(3/2)`,
//!   the block's sum formed in registers and added to `acc_i` once. The
//!   thread mapping of [`tiled`](crate::tiled): two i-bodies per thread, tiles
//!   of `J` through shared memory.
//! - [`block_pair`]: Newton's third law across the blocks: each pair `(i, j)`
//!   once, `acc_i += m_j s r`, `react_j -= m_i s r`; the register-blocked
//!   rotation of [`triangle`](crate::triangle) on a rectangle of group pairs
//!   instead of a triangle, added to both buffers with `red.add.f32`.
//! - [`block_potential`]: `sum_{i in I} m_i sum_{j in J} m_j / sqrt(|r_ij|^2 + eps^2)`
//!   in per-block `f64` partial sums, as [`energy`](crate::energy) does within
//!   one buffer.
//!
//! None of them applies `G`: the host scales once per body (or per energy),
//! as the CPU backend does. `I` and `J` are different bodies for
//! [`block_pair`] and [`block_potential`] (the pairs within one block are the
//! triangle and energy kernels' job); [`block_pull`] may be given the same
//! buffer twice (the diagonal of an all-pairs ring), whose self-pair term is
//! exactly zero: guarded, or with `eps > 0` where `m / eps^3` is finite (the
//! only case the host launches the unguarded twin in).

use seq_macro::seq;

use crate::exec::{Exec, Global};
use crate::integrate::global_thread;
use crate::interaction::{PointMass, Vec3, potential, pull};
use crate::reduce::block_sums;
use crate::shape::{TILED_BODIES_PER_THREAD, TRIANGLE_BODIES_PER_THREAD, WARP};
use crate::tiled::load_or_pad;
use crate::triangle::{pair_step, reaction_slot};
use crate::vec4::Vec4;

/// `R`: the i-bodies each thread of [`block_pair`] holds.
const R: usize = TRIANGLE_BODIES_PER_THREAD as usize;

/// Adds the pull of every body of `J` to `acc[i]` for every body `i` of `I`
/// (without `G`): the sum over `J` in registers, in `j` order, then one
/// addition to `acc[i]` (whose `w` is kept).
///
/// # Safety
/// `pos_i` and `acc` hold `ni >= 1` elements, `pos_j` holds `nj >= 1`;
/// launched with [`shape::tiled`](crate::shape::tiled)`(ni, block)`, `block`
/// valid ([`shape::is_valid_block`](crate::shape::is_valid_block)).
///
/// # Parameters
/// `eps2`: softening length squared; `GUARD`: the guarded interaction (zero
/// softening, or `m / eps^3` that could overflow), one `min` more per pair.
pub unsafe fn block_pull<E: Exec, const GUARD: bool>(
    e: &E,
    pos_i: Global<Vec4>,
    pos_j: Global<Vec4>,
    acc: Global<Vec4>,
    ni: u32,
    nj: u32,
    eps2: f32,
) {
    let b = e.block_dim();
    let t = e.thread_idx();
    let i0 = e.block_idx() * TILED_BODIES_PER_THREAD * b + t;
    let i1 = i0 + b;
    // SAFETY: `load_or_pad` only reads indices below ni (ni >= 1).
    let (p0, p1) = unsafe {
        (
            PointMass::from(load_or_pad(e, pos_i, ni, i0)),
            PointMass::from(load_or_pad(e, pos_i, ni, i1)),
        )
    };
    let (mut a0, mut a1) = (Vec3::zero(), Vec3::zero());
    let tiles = nj.div_ceil(b);
    let full_tiles = nj / b;
    let mut k = 0;
    while k < tiles {
        // SAFETY: slot t < block of the `block * 16` shared bytes; the tile is read only after
        // the barrier, and rewritten only after the next one. `load_or_pad` reads below nj.
        unsafe { e.shared_store(t, load_or_pad(e, pos_j, nj, k * b + t)) };
        e.sync_threads();
        if k < full_tiles {
            // Unrolled 32 times: every valid block size is a multiple of 32.
            let mut s = 0;
            unrolled_while!(s < b, by 32, |U| {
                // SAFETY: s + U < block: a tile slot written before the barrier.
                let pj = PointMass::from(unsafe { e.shared_load::<Vec4>(s + U) });
                a0 = pull::<f32, GUARD>(a0, &p0, &pj, eps2);
                a1 = pull::<f32, GUARD>(a1, &p1, &pj, eps2);
            });
        } else {
            let count = nj - k * b;
            let mut s = 0;
            while s < count {
                // SAFETY: s < count <= block: a tile slot written before the barrier.
                let pj = PointMass::from(unsafe { e.shared_load::<Vec4>(s) });
                a0 = pull::<f32, GUARD>(a0, &p0, &pj, eps2);
                a1 = pull::<f32, GUARD>(a1, &p1, &pj, eps2);
                s += 1;
            }
        }
        e.sync_threads();
        k += 1;
    }
    for (i, a) in [(i0, a0), (i1, a1)] {
        if i < ni {
            // SAFETY: i < ni, `acc` holds ni elements, each read and written by one thread.
            unsafe {
                let old = e.load(acc, i);
                e.store(
                    acc,
                    i,
                    Vec4::new(old.x + a.x, old.y + a.y, old.z + a.z, old.w),
                );
            }
        }
    }
}

/// Every pair `(i, j)`, `i` in `I` and `j` in `J`, once (Newton's third law):
/// adds `m_j s r_ij` to `acc_i[i]` and `-m_i s r_ij` to `react_j[j]`, without
/// `G`, `s = 1 / (|r_ij|^2 + eps^2)^(3/2)`.
///
/// The triangle kernel's block, on a rectangle: with `S = R B` bodies per
/// group, block `id` pairs i-group `id mod ceil(ni / S)` with j-group
/// `id / ceil(ni / S)`; its j-group is taken as `R` sub-tiles of `B` bodies
/// through shared memory, each rotated past the threads' `R` register-held
/// i-bodies warp chunk by warp chunk (see [`triangle`](crate::triangle) for
/// why the rotation needs no lockstep).
///
/// # Safety
/// `pos_i` and `acc_i` hold `ni >= 1` elements, `pos_j` and `react_j` hold
/// `nj >= 1`; `acc_i` and `react_j` are different buffers and take atomics;
/// launched with [`shape::block_pair`](crate::shape::block_pair)`(ni, nj, block)`,
/// `block` valid for it ([`shape::is_valid_triangle_block`](crate::shape::is_valid_triangle_block)).
///
/// # Parameters
/// `eps2`: softening length squared; `GUARD`: the guarded interaction (zero
/// softening: coincident bodies of the two blocks then contribute exactly
/// zero, not NaN), one `min` more per pair.
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn block_pair<E: Exec, const GUARD: bool>(
    e: &E,
    pos_i: Global<Vec4>,
    pos_j: Global<Vec4>,
    acc_i: Global<Vec4>,
    react_j: Global<Vec4>,
    ni: u32,
    nj: u32,
    eps2: f32,
) {
    let b = e.block_dim();
    let t = e.thread_idx();
    let (lane, warp, warps) = (t % WARP, t / WARP, b / WARP);
    let group = TRIANGLE_BODIES_PER_THREAD * b;
    let i_groups = ni.div_ceil(group);
    let (gx, gy) = (e.block_idx() % i_groups, e.block_idx() / i_groups);
    let i0 = group * gx + t;
    let zero = PointMass::from(Vec4::ZERO);
    let mut pi = [zero; R];
    let mut ai = [Vec3::zero(); R];
    for (r, p) in pi.iter_mut().enumerate() {
        // SAFETY: `load_or_pad` only reads indices below ni.
        *p = PointMass::from(unsafe { load_or_pad(e, pos_i, ni, i0 + r as u32 * b) });
    }
    let own = reaction_slot(t);
    let react = react_j.components();
    let mut q = 0;
    while q < TRIANGLE_BODIES_PER_THREAD {
        let j0 = group * gy + q * b;
        // SAFETY: this thread's own two slots (`own`, `own + 32`) of the
        // `2 * block` Vec4, unused by others until the barrier below;
        // `load_or_pad` reads below nj.
        unsafe {
            e.shared_store(own + WARP, load_or_pad(e, pos_j, nj, j0 + t));
            e.shared_store(own, Vec4::ZERO);
        }
        e.sync_threads();
        let interior = group * gx + group <= ni && j0 + b <= nj;
        let mut k = 0;
        if interior {
            while k < warps {
                let base = ((warp + k) & (warps - 1)) * 2 * WARP + lane;
                seq!(S in 0..32 {
                    // SAFETY: this warp owns chunk `base` in this super-step;
                    // `base ^ S` stays inside it and differs per lane at each
                    // step (the triangle module's documentation).
                    unsafe { pair_step::<E, GUARD>(e, base ^ S, &pi, &mut ai, [true; R], eps2) };
                    e.sync_warp();
                });
                e.sync_threads();
                k += 1;
            }
        } else {
            while k < warps {
                let chunk = (warp + k) & (warps - 1);
                let mut s = 0;
                while s < WARP {
                    let l = lane ^ s;
                    let j = j0 + chunk * WARP + l;
                    let mut take = [false; R];
                    for (r, tk) in take.iter_mut().enumerate() {
                        *tk = i0 + r as u32 * b < ni && j < nj;
                    }
                    if take.iter().any(|&tk| tk) {
                        // SAFETY: slot `l` of the chunk this warp owns;
                        // `l = lane ^ s` differs per lane at each step.
                        unsafe {
                            pair_step::<E, GUARD>(e, chunk * 2 * WARP + l, &pi, &mut ai, take, eps2)
                        };
                    }
                    e.sync_warp();
                    s += 1;
                }
                e.sync_threads();
                k += 1;
            }
        }
        // SAFETY: after the barrier, slot `own` holds this thread's j
        // reaction and nobody writes it until the next sub-tile's store;
        // indices 4 (j0 + t) + c are in bounds when j0 + t < nj (checked);
        // `react_j` takes atomics.
        unsafe {
            if j0 + t < nj {
                let aj = e.shared_load::<Vec4>(own);
                e.atomic_add(react, 4 * (j0 + t), aj.x);
                e.atomic_add(react, 4 * (j0 + t) + 1, aj.y);
                e.atomic_add(react, 4 * (j0 + t) + 2, aj.z);
            }
        }
        q += 1;
    }
    let acc = acc_i.components();
    for (r, a) in ai.iter().enumerate() {
        let i = i0 + r as u32 * b;
        if i < ni {
            // SAFETY: 4 i + c is in bounds for i < ni; `acc_i` takes atomics.
            unsafe {
                e.atomic_add(acc, 4 * i, a.x);
                e.atomic_add(acc, 4 * i + 1, a.y);
                e.atomic_add(acc, 4 * i + 2, a.z);
            }
        }
    }
}

/// Per-block `f64` partial sums of `m_i sum_{j in J} m_j / sqrt(|r_ij|^2 + eps^2)`
/// over the block's i-bodies of `I` (without `-G`; each cross pair once).
///
/// One thread per i-body, `J` in tiles through shared memory, each tile's sum
/// in `f32` and the tile sums in `f64`, then a tree reduction in `f64` in
/// shared memory, as in [`energy`](crate::energy).
///
/// # Safety
/// `pos_i` holds `ni >= 1` elements, `pos_j` holds `nj >= 1`, `partials`
/// holds [`shape::block_potential_partials`](crate::shape::block_potential_partials)`(ni, block)`;
/// launched with [`shape::block_potential`](crate::shape::block_potential)`(ni, block)`,
/// `block` valid.
///
/// # Parameters
/// `eps2`: softening length squared (the same as the force's).
pub unsafe fn block_potential<E: Exec>(
    e: &E,
    pos_i: Global<Vec4>,
    pos_j: Global<Vec4>,
    ni: u32,
    nj: u32,
    eps2: f32,
    partials: Global<f64>,
) {
    let b = e.block_dim();
    let t = e.thread_idx();
    let i = global_thread(e);
    // SAFETY: `load_or_pad` reads index min(i, ni - 1) < ni of `pos_i`.
    let body = unsafe { load_or_pad(e, pos_i, ni, i) };
    let pi = PointMass::from(body);
    let mut phi = 0.0f64;
    let tiles = nj.div_ceil(b);
    let mut k = 0;
    while k < tiles {
        // SAFETY: slot t < block of the `block * 16` shared bytes; read below only after the
        // barrier. `load_or_pad` reads below nj.
        unsafe { e.shared_store(t, load_or_pad(e, pos_j, nj, k * b + t)) };
        e.sync_threads();
        let count = b.min(nj - k * b);
        let mut tile_sum = 0.0f32;
        let mut s = 0;
        while s < count {
            // SAFETY: s < count <= block: a slot written before the barrier above.
            let pj = PointMass::from(unsafe { e.shared_load::<Vec4>(s) });
            tile_sum += potential(&pi, &pj, eps2);
            s += 1;
        }
        phi += tile_sum as f64;
        e.sync_threads();
        k += 1;
    }
    // Padding threads add exactly nothing (their `phi` may be infinite at
    // zero softening, and `0 * inf` would be NaN).
    let mine = if i < ni { body.w as f64 * phi } else { 0.0 };
    // SAFETY: every thread of the block gets here; 8 * block <= 16 * block shared bytes;
    // `partials` holds one value per block (the contract).
    unsafe { block_sums(e, [mine], partials) };
}
