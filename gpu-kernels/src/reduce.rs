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
