//! Newton's third law: each pair computed once, on an upper-triangle block
//! schedule (blocks of i-bodies paired with blocks of j-bodies, `gx <= gy`).
//!
//! # Tiling
//! With block size `B`, the bodies form `G = (N - 2) / B + 1` groups and the
//! grid has `G (G + 1) / 2` blocks, one per group pair `(gx, gy)`, `gx <= gy`
//! ([`shape::triangle_block_coords`](crate::shape::triangle_block_coords),
//! closed form). Block `(gx, gy)` pairs i-bodies `B gx + t` with j-bodies
//! `B gy + 1 + slot`, `t, slot in 0..B`. On diagonal blocks (`gx == gy`) only
//! `j > i` counts, i.e. `slot >= t`: thread `t` does `B - t` pairs. Every pair
//! `i < j < N` lies in exactly one block (tested in `nbody-host`).
//!
//! # Thread mapping
//! Body `i` and its acceleration stay in registers. The `B` j-bodies and their
//! accumulated reactions live in shared memory (`2 B * 16` bytes). For each
//! pair, `s = 1 / (|r|^2 + eps^2)^(3/2)` is computed once and both
//! `a_i += m_j s r` and `a_j -= m_i s r` are applied
//! ([`pair_interaction`]), so unequal
//! masses are exact. At the end, block and j accumulators are added to the
//! global accelerations with `red.add.f32`, so `acc` must be zero before the
//! launch: the host's plan clears it (`ZeroAcc`) right before.
//!
//! # Making the rotation safe without lockstep
//! The textbook form of this kernel rotates j slots, thread `t` taking slot
//! `(t + s) mod B` at step `s`, assuming the block runs in lockstep. Since Volta, threads of a warp
//! are scheduled independently, so thread `t` at step `s + 1` could update the
//! reaction of the slot thread `t + 1` is still updating at step `s`. Here the
//! slots are cut into warp-sized chunks of 32: in super-step `k`, warp `w` owns
//! chunk `(w + k) mod (B / 32)` alone, lane `l` takes slot `l XOR s` of it
//! at step `s` (a permutation of the 32 slots for each `s`, and each lane meets
//! every slot once over the 32 steps; XOR costs one instruction where `mod`
//! costs two), and a warp barrier (`bar.warp.sync`) separates the steps; a
//! block barrier separates super-steps. No two threads ever touch the same
//! reaction between two barriers that order them; the emulator's race
//! detector checks exactly this.
//!
//! Shared layout: chunk `c` occupies 64 `Vec4` slots, reactions at `64 c + l`
//! and bodies at `64 c + 32 + l`, so one slot address serves both loads.

use seq_macro::seq;

use crate::exec::{Exec, Global};
use crate::interaction::{PointMass, Vec3, pair_interaction};
use crate::shape::{WARP, triangle_block_coords};
use crate::tiled::load_or_pad;
use crate::vec4::Vec4;

/// Shared-memory `Vec4` index of the reaction accumulator of j slot `slot`
/// (the body is 32 slots further on).
#[inline(always)]
pub const fn reaction_slot(slot: u32) -> u32 {
    (slot / WARP) * 2 * WARP + slot % WARP
}

#[inline(always)]
fn xyz(v: Vec4) -> Vec3<f32> {
    Vec3 {
        x: v.x,
        y: v.y,
        z: v.z,
    }
}

/// One step of the rotation: the pair (this thread's i, slot at `reaction`).
#[inline(always)]
unsafe fn pair_step<E: Exec>(
    e: &E,
    reaction: u32,
    pi: &PointMass<f32>,
    ai: Vec3<f32>,
    eps2: f32,
) -> Vec3<f32> {
    // SAFETY: `reaction` and `reaction + 32` are slots of this warp's chunk, inside the `2 *
    // block` Vec4 of shared memory; the XOR schedule gives each lane a different slot between
    // warp barriers (module documentation).
    unsafe {
        let pj = PointMass::from(e.shared_load::<Vec4>(reaction + WARP));
        let (ai, aj, s) = pair_interaction(ai, xyz(e.shared_load::<Vec4>(reaction)), pi, &pj, eps2);
        // `w` is scratch: storing this pair's `s` there makes the write one
        // 128-bit store; a 96-bit one is two instructions, a constant `w` a MOV.
        e.shared_store(reaction, Vec4::new(aj.x, aj.y, aj.z, s));
        ai
    }
}

/// Adds `G sum_{j != i} m_j r_ij / (|r_ij|^2 + eps^2)^(3/2)` to `acc[i]` for
/// every body, computing each pair once.
///
/// # Safety
/// `pos` and `acc` hold `n` elements and `acc` is zero (or holds a sum to add
/// to); launched with [`shape::triangle`](crate::shape::triangle)`(n, block)`,
/// `block` valid ([`shape::is_valid_block`](crate::shape::is_valid_block)).
///
/// # Parameters
/// `g`: gravitational constant; `eps2`: softening length squared.
pub unsafe fn triangle_accel<E: Exec>(
    e: &E,
    pos: Global<Vec4>,
    acc: Global<Vec4>,
    n: u32,
    g: f32,
    eps2: f32,
) {
    let b = e.block_dim();
    let t = e.thread_idx();
    let (lane, warp, warps) = (t % WARP, t / WARP, b / WARP);
    let (gx, gy) = triangle_block_coords(e.block_idx());
    let i = b * gx + t;
    let j0 = b * gy + 1;
    // SAFETY: `load_or_pad` only reads indices below n.
    let pi = PointMass::from(unsafe { load_or_pad(e, pos, n, i) });
    let own = reaction_slot(t);
    // SAFETY: this thread's own two slots (`own`, `own + 32`) of the `2 * block` Vec4;
    // `load_or_pad` reads below n.
    unsafe {
        e.shared_store(own + WARP, load_or_pad(e, pos, n, j0 + t));
        e.shared_store(own, Vec4::ZERO);
    }
    e.sync_threads();

    let diagonal = gx == gy;
    let interior = !diagonal && b * gx + b <= n && j0 + b <= n;
    let mut ai = Vec3::zero();
    // Two copies of the super-step loop, so the hot one is a straight run of
    // 32 steps with no bounds checks: blocks away from the diagonal and the end.
    let mut k = 0;
    if interior {
        while k < warps {
            let base = ((warp + k) & (warps - 1)) * 2 * WARP;
            seq!(S in 0..32 {
                // SAFETY: this warp owns chunk `base` in this super-step; `(base + lane) ^ S`
                // stays inside it and differs per lane at each step (module documentation).
                ai = unsafe { pair_step(e, (base + lane) ^ S, &pi, ai, eps2) };
                e.sync_warp();
            });
            e.sync_threads();
            k += 1;
        }
    } else {
        while k < warps {
            let chunk = (warp + k) & (warps - 1);
            let base = chunk * 2 * WARP;
            let mut s = 0;
            while s < WARP {
                let l = lane ^ s;
                let slot = chunk * WARP + l;
                if i < n && j0 + slot < n && (!diagonal || slot >= t) {
                    // SAFETY: slot `base + l` of the chunk this warp owns; l = lane ^ s differs
                    // per lane at each step.
                    ai = unsafe { pair_step(e, base + l, &pi, ai, eps2) };
                }
                e.sync_warp();
                s += 1;
            }
            e.sync_threads();
            k += 1;
        }
    }

    let comps = acc.components();
    // SAFETY: after the last barrier, slot `own` holds this thread's j reaction; indices 4 (j0
    // + t) + c and 4 i + c are in bounds when j0 + t < n and i < n (checked); `acc` takes
    // atomics.
    unsafe {
        if j0 + t < n {
            let aj = e.shared_load::<Vec4>(own);
            e.atomic_add(comps, 4 * (j0 + t), g * aj.x);
            e.atomic_add(comps, 4 * (j0 + t) + 1, g * aj.y);
            e.atomic_add(comps, 4 * (j0 + t) + 2, g * aj.z);
        }
        if i < n {
            e.atomic_add(comps, 4 * i, g * ai.x);
            e.atomic_add(comps, 4 * i + 1, g * ai.y);
            e.atomic_add(comps, 4 * i + 2, g * ai.z);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reaction_and_body_slots_interleave_per_warp_chunk() {
        assert_eq!(reaction_slot(0), 0);
        assert_eq!(reaction_slot(31), 31);
        assert_eq!(reaction_slot(32), 64);
        assert_eq!(reaction_slot(63), 95);
        // All 2B slots of B = 1024 are distinct and fit 2B Vec4.
        let mut seen = [false; 2048];
        for s in 0..1024 {
            for idx in [reaction_slot(s), reaction_slot(s) + WARP] {
                assert!(!seen[idx as usize]);
                seen[idx as usize] = true;
            }
        }
        assert!(seen.iter().all(|&x| x));
    }
}
