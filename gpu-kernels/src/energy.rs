//! Total kinetic and softened potential energy, reduced in `f64`.
//!
//! # Thread mapping
//! One thread per body `i` (padding threads past `N` contribute exactly zero), tiles of
//! `B` bodies through shared memory as in [`tiled`](crate::tiled).
//!
//! # Precision
//! The potential of body `i` is summed in `f32` within a tile (at most 1024
//! terms) and the tile sums are accumulated in `f64`; kinetic energy is `f64`
//! from the start; the block reduces both in `f64` in shared memory and writes
//! one pair of partial sums per block, which the host adds in `f64`. So the
//! rounding error grows with the tile size, not with `N`: at `N = 10^6` the
//! relative error stays near the `f32` error of one tile sum (~1e-6), where a
//! plain `f32` running sum would lose about three more digits.
//!
//! Output: `partials[2 b] = sum_i m_i |v_i|^2 / 2` and
//! `partials[2 b + 1] = sum_i m_i sum_{j != i} m_j / sqrt(|r_ij|^2 + eps^2)` over
//! block `b`'s bodies. The host forms `K = sum` and `U = -G / 2 * sum` (each pair
//! is counted twice).

use crate::exec::{Exec, Global};
use crate::integrate::global_thread;
use crate::interaction::{PointMass, potential};
use crate::reduce::block_sums;
use crate::tiled::load_or_pad;
use crate::vec4::Vec4;

/// Per-block partial sums of kinetic energy and of `m_i * potential_i`.
///
/// # Safety
/// `pos` and `vel` hold `n` elements, `partials` holds
/// [`shape::energy_partials`](crate::shape::energy_partials)`(n, block)`;
/// launched with [`shape::energy`](crate::shape::energy)`(n, block)`, `block` valid.
///
/// # Parameters
/// `eps2`: softening length squared (the same as the force's).
pub unsafe fn energy_partials<E: Exec>(
    e: &E,
    pos: Global<Vec4>,
    vel: Global<Vec4>,
    n: u32,
    eps2: f32,
    partials: Global<f64>,
) {
    let b = e.block_dim();
    let t = e.thread_idx();
    let i = global_thread(e);
    // SAFETY: `load_or_pad` reads index min(i, n - 1) < n of `pos`, which holds n bodies.
    let body = unsafe { load_or_pad(e, pos, n, i) };
    let pi = PointMass::from(body);
    let kinetic = if i < n {
        // SAFETY: i < n, and `vel` holds n elements.
        let v = unsafe { e.load(vel, i) };
        let v2 = v.x as f64 * v.x as f64 + v.y as f64 * v.y as f64 + v.z as f64 * v.z as f64;
        0.5 * body.w as f64 * v2
    } else {
        0.0
    };

    let mut phi = 0.0f64;
    let tiles = n.div_ceil(b);
    let mut k = 0;
    while k < tiles {
        // SAFETY: slot t < block of the `block * 16` shared bytes; read below only after the
        // barrier.
        unsafe { e.shared_store(t, load_or_pad(e, pos, n, k * b + t)) };
        e.sync_threads();
        let count = b.min(n - k * b);
        let mut tile_sum = 0.0f32;
        let mut s = 0;
        while s < count {
            // SAFETY: s < count <= block: a slot written before the barrier above.
            let pj = PointMass::from(unsafe { e.shared_load::<Vec4>(s) });
            let u = potential(&pi, &pj, eps2);
            // Exclude the self-pair (its term is m_i / eps, or inf at eps = 0).
            tile_sum += if k * b + s != i { u } else { 0.0 };
            s += 1;
        }
        phi += tile_sum as f64;
        e.sync_threads();
        k += 1;
    }
    // Padding threads add exactly nothing: their massless copy of body N - 1
    // sits on body N - 1, so at zero softening `phi` is infinite and
    // `0 * phi` would be NaN.
    let potential_i = if i < n { body.w as f64 * phi } else { 0.0 };

    // The block's sums in f64, a fixed-order tree: kinetic and potential.
    // SAFETY: every thread of the block gets here; the launch's 16 * block shared bytes and
    // `partials`' 2 values per block (the contract).
    unsafe { block_sums(e, [kinetic, potential_i], partials) };
}
