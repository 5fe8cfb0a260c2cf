//! Newton's third law: each pair computed once, on an upper-triangle block
//! schedule (groups of i-bodies paired with groups of j-bodies, `gx <= gy`),
//! register-blocked so that each shared-memory access serves several pairs.
//!
//! # Tiling
//! With block size `B` and `R =` [`TRIANGLE_BODIES_PER_THREAD`], the bodies
//! form groups of `S = R B` and `G = (N - 2) / S + 1` of them; the grid has
//! `G (G + 1) / 2` blocks, one per group pair `(gx, gy)`, `gx <= gy`
//! ([`shape::triangle_block_coords`](crate::shape::triangle_block_coords),
//! closed form). Block `(gx, gy)` pairs the i-bodies `S gx + t + r B`
//! (thread `t`, `r < R`) with the j-bodies `S gy + 1 + q B + slot`, taken as
//! `R` sub-tiles `q` of `B` slots; on diagonal blocks (`gx == gy`) only
//! `j > i` counts. Every pair `i < j < N` lies in exactly one block (tested
//! in `nbody-host`).
//!
//! # Thread mapping: register blocking
//! Each thread keeps its `R` i-bodies and their accelerations in registers.
//! A sub-tile's `B` j-bodies and their accumulated reactions live in shared
//! memory (`2 B * 16` bytes). At each step a thread loads one j-body and its
//! reaction (two `LDS.128`), computes the `R` pairs with its i-bodies, each
//! with `s = 1 / (|r|^2 + eps^2)^(3/2)` computed once for both
//! `a_i += m_j s r` and `a_j -= m_i s r` ([`pair_interaction`](crate::interaction::pair_interaction), so unequal
//! masses are exact), and stores the reaction back once (one `STS.128`): three
//! 16-byte shared accesses per `R` pairs instead of per pair, which is what
//! bounds the one-body-per-thread form on Hopper (three wavefronts per warp
//! step against about 21 issue slots). After each sub-tile the reactions, and
//! at the end the i accelerations, are added to the global accelerations with
//! `red.add.f32`, so `acc` must be zero before the launch: the host's plan
//! clears it (`ZeroAcc`) right before. Registers grow with `R` (the i-bodies,
//! their accelerations): at `R = 4` the kernel needs more than 64 per
//! thread, so blocks of 1024 threads cannot launch it
//! ([`shape::TRIANGLE_MAX_BLOCK`](crate::shape::TRIANGLE_MAX_BLOCK)).
//!
//! # Making the rotation safe without lockstep
//! The textbook form of this kernel rotates j slots, thread `t` taking slot
//! `(t + s) mod B` at step `s`, assuming the block runs in lockstep. Since
//! Volta, threads of a warp are scheduled independently, so thread `t` at step
//! `s + 1` could update the reaction of the slot thread `t + 1` is still
//! updating at step `s`. Here the slots are cut into warp-sized chunks of 32:
//! in super-step `k`, warp `w` owns chunk `(w + k) mod (B / 32)` alone, lane
//! `l` takes slot `l XOR s` of it at step `s` (a permutation of the 32 slots
//! for each `s`, and each lane meets every slot once over the 32 steps; XOR
//! costs one instruction where `mod` costs two), and a warp barrier
//! (`bar.warp.sync`) separates the steps; a block barrier separates
//! super-steps and sub-tiles. No two threads ever touch the same reaction
//! between two barriers that order them; the emulator's race detector checks
//! exactly this.
//!
//! Shared layout: chunk `c` occupies 64 `Vec4` slots, reactions at `64 c + l`
//! and bodies at `64 c + 32 + l`, so one slot address serves both loads.

use seq_macro::seq;

use crate::exec::{Exec, Global};
use crate::interaction::{PointMass, Vec3, pair};
use crate::shape::{TRIANGLE_BODIES_PER_THREAD, WARP, triangle_block_coords};
use crate::tiled::load_or_pad;
use crate::vec4::Vec4;

/// `R`: the i-bodies each thread holds (see the module documentation).
const R: usize = TRIANGLE_BODIES_PER_THREAD as usize;

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

/// One step of the rotation: the j slot at `reaction` against this thread's
/// i-bodies `pi[r]` for every `r` with `take[r]`, the reaction loaded and
/// stored once.
///
/// # Safety
/// `reaction` and `reaction + 32` are slots of the chunk this warp owns in
/// this super-step, and no other lane of the warp uses this slot in this step.
#[inline(always)]
pub(crate) unsafe fn pair_step<E: Exec, const GUARD: bool>(
    e: &E,
    reaction: u32,
    pi: &[PointMass<f32>; R],
    ai: &mut [Vec3<f32>; R],
    take: [bool; R],
    eps2: f32,
) {
    // SAFETY: the caller's contract: the slot is this lane's in this step.
    unsafe {
        let pj = PointMass::from(e.shared_load::<Vec4>(reaction + WARP));
        let mut aj = xyz(e.shared_load::<Vec4>(reaction));
        let mut s = 0.0;
        for r in 0..R {
            if take[r] {
                (ai[r], aj, s) = pair::<f32, GUARD>(ai[r], aj, &pi[r], &pj, eps2);
            }
        }
        // `w` is scratch: storing a pair's `s` there makes the write one
        // 128-bit store; a 96-bit one is two instructions, a constant `w` a MOV.
        e.shared_store(reaction, Vec4::new(aj.x, aj.y, aj.z, s));
    }
}

/// Adds `G sum_{j != i} m_j r_ij / (|r_ij|^2 + eps^2)^(3/2)` to `acc[i]` for
/// every body, computing each pair once.
///
/// # Safety
/// `pos` and `acc` hold `n` elements and `acc` is zero (or holds a sum to add
/// to); launched with [`shape::triangle`](crate::shape::triangle)`(n, block)`,
/// `block` valid for it ([`shape::is_valid_triangle_block`](crate::shape::is_valid_triangle_block)).
///
/// # Parameters
/// `g`: gravitational constant; `eps2`: softening length squared; `GUARD`:
/// the guarded interaction, for zero softening (coincident bodies then
/// contribute exactly zero, not NaN), one `min` more per pair.
pub unsafe fn triangle_accel<E: Exec, const GUARD: bool>(
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
    let group = TRIANGLE_BODIES_PER_THREAD * b;
    let (gx, gy) = triangle_block_coords(e.block_idx());
    let i0 = group * gx + t;
    let diagonal = gx == gy;
    let zero = PointMass::from(Vec4::ZERO);
    let mut pi = [zero; R];
    let mut ai = [Vec3::zero(); R];
    for (r, p) in pi.iter_mut().enumerate() {
        // SAFETY: `load_or_pad` only reads indices below n.
        *p = PointMass::from(unsafe { load_or_pad(e, pos, n, i0 + r as u32 * b) });
    }
    let own = reaction_slot(t);
    let comps = acc.components();
    let mut q = 0;
    while q < TRIANGLE_BODIES_PER_THREAD {
        let j0 = group * gy + 1 + q * b;
        // SAFETY: this thread's own two slots (`own`, `own + 32`) of the
        // `2 * block` Vec4, unused by others until the barrier below;
        // `load_or_pad` reads below n.
        unsafe {
            e.shared_store(own + WARP, load_or_pad(e, pos, n, j0 + t));
            e.shared_store(own, Vec4::ZERO);
        }
        e.sync_threads();

        // Two copies of the super-step loop, so the hot one is a straight run
        // of 32 steps with no bounds checks: off the diagonal, inside N.
        let interior = !diagonal && group * gx + group <= n && j0 + b <= n;
        let mut k = 0;
        if interior {
            while k < warps {
                let base = ((warp + k) & (warps - 1)) * 2 * WARP + lane;
                seq!(S in 0..32 {
                    // SAFETY: this warp owns chunk `base` in this super-step;
                    // `base ^ S` stays inside it and differs per lane at each
                    // step (module documentation).
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
                        let i = i0 + r as u32 * b;
                        *tk = i < n && j < n && (!diagonal || j > i);
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
        // indices 4 (j0 + t) + c are in bounds when j0 + t < n (checked);
        // `acc` takes atomics.
        unsafe {
            if j0 + t < n {
                let aj = e.shared_load::<Vec4>(own);
                e.atomic_add(comps, 4 * (j0 + t), g * aj.x);
                e.atomic_add(comps, 4 * (j0 + t) + 1, g * aj.y);
                e.atomic_add(comps, 4 * (j0 + t) + 2, g * aj.z);
            }
        }
        // No barrier before the next sub-tile: every thread stores only its
        // own two slots there, and the last super-step's barrier already
        // ordered every other warp's accesses to them before this point.
        q += 1;
    }

    for (r, a) in ai.iter().enumerate() {
        let i = i0 + r as u32 * b;
        if i < n {
            // SAFETY: 4 i + c is in bounds for i < n; `acc` takes atomics.
            unsafe {
                e.atomic_add(comps, 4 * i, g * a.x);
                e.atomic_add(comps, 4 * i + 1, g * a.y);
                e.atomic_add(comps, 4 * i + 2, g * a.z);
            }
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
