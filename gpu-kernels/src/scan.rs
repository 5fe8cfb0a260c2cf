//! Exclusive prefix sums of `u32` over the whole grid: a block-level scan,
//! a pass over the block sums, and a pass that adds them back (the
//! reduce-then-scan of the cell starts in Compyle's worked example, SciPy
//! 2020, and of the ghost slots).
//!
//! 1. [`scan_blocks`]: each block scans `blockDim` elements in shared memory
//!    (Hillis-Steele, ping-pong buffers: `log2(blockDim)` barriers, no
//!    write-after-read hazard within a step) and writes its total to
//!    `sums[block]`;
//! 2. [`scan_sums`]: one block scans `sums` in place, in chunks of
//!    `blockDim` with a running carry, and writes the grand total to
//!    `status[total_at]`;
//! 3. [`scan_add`]: each element gets its block's offset.
//!
//! Nothing depends on the order in which blocks run or on how threads
//! interleave between barriers (the three launches are ordered by the
//! stream); each output is the same exact integer on any schedule. The
//! scans belong to the lists' builds: each does nothing unless the step
//! builds ([`building`]), a decision every thread of a block shares.
//! Launch shapes: [`shape::scan`](crate::shape::scan) (all three use the
//! same block size).

use crate::exec::{Exec, Global};
use crate::integrate::global_thread;
use crate::periodic::building;

/// The inclusive scan of one value per thread across the block, in shared
/// buffers at words `[0, b)` and `[b, 2b)`, `b = blockDim`, starting in the
/// one at `start` (0 or `b`): the sum and the buffer it ended in. Every
/// thread of the block must call it (it has barriers). Each thread's result
/// is the slot it wrote last, so no barrier follows the last step; the last
/// step read the other buffer, so a next call that starts where this one
/// ended overwrites nothing another thread may still read.
///
/// # Safety
/// The launch has at least `8 * blockDim` bytes of dynamic shared memory.
#[inline(always)]
unsafe fn block_inclusive_scan<E: Exec>(e: &E, v: u32, start: u32) -> (u32, u32) {
    let b = e.block_dim();
    let t = e.thread_idx();
    // SAFETY: slots t and b + t are below 2 b: inside the shared memory; between two barriers
    // each slot of the buffer being written has one writer (thread t writes slot t), and the
    // buffer being read is not written.
    unsafe {
        e.shared_store(start + t, v);
        let mut from = start;
        let mut offset = 1;
        while offset < b {
            e.sync_threads();
            let mut x = e.shared_load::<u32>(from + t);
            if t >= offset {
                x = x.wrapping_add(e.shared_load::<u32>(from + t - offset));
            }
            let to = b - from;
            e.shared_store(to + t, x);
            from = to;
            offset *= 2;
        }
        (e.shared_load::<u32>(from + t), from)
    }
}

/// Per block: `out[i] = sum of data[k]` over `k < i` in the block's range
/// `[block * blockDim, ..)`, and `sums[block]` = the block's total.
/// `out` may be `data` (each thread reads its element before any write).
///
/// # Safety
/// `data` and `out` hold `len` elements, `sums` one per block, `status`
/// [`STATUS_WORDS`](crate::periodic::STATUS_WORDS); launched with
/// [`shape::scan`](crate::shape::scan)`(len, block)`.
pub unsafe fn scan_blocks<E: Exec>(
    e: &E,
    data: Global<u32>,
    out: Global<u32>,
    sums: Global<u32>,
    status: Global<u32>,
    len: u32,
) {
    // SAFETY: `status` holds STATUS_WORDS words (the contract); every thread of the block
    // returns, or none.
    if !unsafe { building(e, status) } {
        return;
    }
    let i = global_thread(e);
    // SAFETY: i < len for the loads and stores of data/out; `sums` has one slot per block;
    // the scan's shared-memory contract is the launch shape's.
    unsafe {
        let v = if i < len { e.load(data, i) } else { 0 };
        let (inclusive, _) = block_inclusive_scan(e, v, 0);
        if i < len {
            e.store(out, i, inclusive.wrapping_sub(v));
        }
        if e.thread_idx() == e.block_dim() - 1 {
            e.store(sums, e.block_idx(), inclusive);
        }
    }
}

/// One block: `sums` replaced by its exclusive scan, in chunks of
/// `blockDim` with a running carry; the grand total goes to
/// `status[total_at]`. Each chunk starts in the buffer the last one ended
/// in (see `block_inclusive_scan`), and its total is broadcast through
/// shared word `2 blockDim`, behind one barrier; the next chunk's steps
/// order the reads of that word before its next write.
///
/// # Safety
/// `sums` holds `count` elements, `status`
/// [`STATUS_WORDS`](crate::periodic::STATUS_WORDS) (`total_at` among them,
/// not `STATUS_DUE`); launched with one block
/// ([`shape::scan_sums`](crate::shape::scan_sums)).
pub unsafe fn scan_sums<E: Exec>(
    e: &E,
    sums: Global<u32>,
    count: u32,
    status: Global<u32>,
    total_at: u32,
) {
    // SAFETY: `status` holds STATUS_WORDS words (the contract); every thread of the block
    // returns, or none.
    if !unsafe { building(e, status) } {
        return;
    }
    let b = e.block_dim();
    let t = e.thread_idx();
    let mut carry = 0u32;
    let mut buffer = 0;
    let mut base = 0;
    while base < count {
        let i = base + t;
        // SAFETY: i < count for the accesses of `sums`; each thread owns element i; shared
        // memory as the launch shape gives it (2 b + 1 words): word 2 b is written by thread
        // b - 1 alone, and read by all after the barrier.
        unsafe {
            let v = if i < count { e.load(sums, i) } else { 0 };
            let (inclusive, end) = block_inclusive_scan(e, v, buffer);
            buffer = end;
            if i < count {
                e.store(sums, i, carry.wrapping_add(inclusive.wrapping_sub(v)));
            }
            if t == b - 1 {
                e.shared_store(2 * b, inclusive);
            }
            e.sync_threads();
            carry = carry.wrapping_add(e.shared_load::<u32>(2 * b));
        }
        base += b;
    }
    if t == 0 {
        // SAFETY: total_at is inside `status` (the contract).
        unsafe { e.store(status, total_at, carry) };
    }
}

/// `out[i] += offsets[block]`: the block offsets of [`scan_sums`] added to
/// [`scan_blocks`]' per-block scans.
///
/// # Safety
/// `out` holds `len` elements, `offsets` one per block, `status`
/// [`STATUS_WORDS`](crate::periodic::STATUS_WORDS); launched with
/// [`shape::scan`](crate::shape::scan)`(len, block)`, the same block as the
/// block scan.
pub unsafe fn scan_add<E: Exec>(
    e: &E,
    out: Global<u32>,
    offsets: Global<u32>,
    status: Global<u32>,
    len: u32,
) {
    let i = global_thread(e);
    // SAFETY: `status` holds STATUS_WORDS words (the contract).
    if i < len && unsafe { building(e, status) } {
        // SAFETY: i < len; thread i touches only element i of `out`.
        unsafe {
            let v = e.load(out, i).wrapping_add(e.load(offsets, e.block_idx()));
            e.store(out, i, v);
        }
    }
}
