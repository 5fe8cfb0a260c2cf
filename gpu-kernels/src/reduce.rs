//! Block reductions: the one fixed-order tree every kernel that sums `f64`
//! per block uses (energy, block pair, the pair kernel's thermo sums, the MD
//! ensemble pass), so that its order, and with it the bits, is written once.

use crate::exec::{Exec, Global};

/// Sums `K` `f64` values over the threads of the block in a fixed tree
/// order (slot `t` gets `t + stride` for `stride = b/2, b/4, .., 1`, a
/// barrier per level: the same inputs give the same bits on any schedule);
/// thread 0 writes the block's `K` sums to `partials[K block + k]`.
///
/// Thread mapping: value `k` of thread `t` lives in shared slot `k b + t`.
/// Every thread of the block must call it, in uniform control flow: it
/// reaches a `bar.sync` per level, and a warp diverged there (a thread that
/// returned early, or a branch on a per-thread condition around the call)
/// is undefined behaviour on the hardware; a thread with nothing to add
/// passes zeros.
///
/// # Safety
/// Called by every thread of the block; `blockDim` is a power of two; the
/// launch has `8 K blockDim` bytes of dynamic shared memory; `partials`
/// holds `K` `f64` per block of the grid.
#[inline(always)]
pub unsafe fn block_sums<E: Exec, const K: usize>(e: &E, sums: [f64; K], partials: Global<f64>) {
    let (b, t) = (e.block_dim(), e.thread_idx());
    // SAFETY: slots k b + t < K b, each thread its own; read after the barrier.
    unsafe {
        for (k, s) in sums.iter().enumerate() {
            e.shared_store::<f64>(k as u32 * b + t, *s);
        }
    }
    e.sync_threads();
    let mut stride = b / 2;
    while stride > 0 {
        if t < stride {
            // SAFETY: t + stride < 2 stride <= b: slots written before the last barrier; each
            // thread writes only its own slots k b + t.
            unsafe {
                for k in 0..K as u32 {
                    let s =
                        e.shared_load::<f64>(k * b + t) + e.shared_load::<f64>(k * b + t + stride);
                    e.shared_store(k * b + t, s);
                }
            }
        }
        e.sync_threads();
        stride /= 2;
    }
    if t == 0 {
        // SAFETY: slots k b are complete after the last barrier; `partials` holds K values
        // per block.
        unsafe {
            let block = e.block_idx();
            for k in 0..K as u32 {
                e.store(partials, K as u32 * block + k, e.shared_load::<f64>(k * b));
            }
        }
    }
}

/// Adds `count` groups of `K` `f64` (`partials[K g + k]`, the per-block sums
/// [`block_sums`] wrote) in group order, `sums[k] += partials[K g + k]` for
/// `g = 0, 1, ..`: the bits of one thread's serial loop. Every thread of the
/// (one) block stages a chunk of `blockDim` groups into shared memory with
/// one coalesced load each, and thread 0 adds the chunk from there: thread 0
/// alone loading from global memory waited a load latency per group
/// (about 0.14 ms a step at 1,000 blocks on an H200, 2026-11-27). The result
/// is meaningful on thread 0 only.
///
/// Thread mapping: group `base + t` of a chunk is staged by thread `t` in
/// shared slots `K t + k`.
///
/// # Safety
/// Called by every thread of the block in uniform control flow (a barrier per
/// chunk); the launch has `8 K blockDim` bytes of dynamic shared memory;
/// `partials` holds `K count` `f64`.
#[inline(always)]
pub unsafe fn ordered_sums<E: Exec, const K: usize>(
    e: &E,
    partials: Global<f64>,
    count: u32,
) -> [f64; K] {
    let (b, t) = (e.block_dim(), e.thread_idx());
    let mut sums = [0.0f64; K];
    let mut base = 0u32;
    while base < count {
        let chunk = if count - base < b { count - base } else { b };
        if t < chunk {
            // SAFETY: group base + t < count (K values each in `partials`);
            // thread t writes only its own slots K t + k < K b.
            unsafe {
                for k in 0..K as u32 {
                    let v = e.load(partials, K as u32 * (base + t) + k);
                    e.shared_store::<f64>(K as u32 * t + k, v);
                }
            }
        }
        e.sync_threads();
        if t == 0 {
            // SAFETY: slots below K chunk were written before the barrier.
            // Eight groups' loads are issued before their adds (the adds stay
            // in group order: the same bits as the plain loop).
            unsafe {
                let mut g = 0u32;
                while g + 8 <= chunk {
                    let mut v = [[0.0f64; K]; 8];
                    for (j, row) in v.iter_mut().enumerate() {
                        for (k, x) in row.iter_mut().enumerate() {
                            *x = e.shared_load::<f64>(K as u32 * (g + j as u32) + k as u32);
                        }
                    }
                    for row in &v {
                        for k in 0..K {
                            sums[k] += row[k];
                        }
                    }
                    g += 8;
                }
                while g < chunk {
                    for (k, s) in sums.iter_mut().enumerate() {
                        *s += e.shared_load::<f64>(K as u32 * g + k as u32);
                    }
                    g += 1;
                }
            }
        }
        // The next chunk overwrites the slots thread 0 has just read.
        e.sync_threads();
        base += chunk;
    }
    sums
}
