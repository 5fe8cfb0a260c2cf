//! Binning: the counting sort of bodies by cell that every neighbour-list
//! build starts with (the sort + scan of Compyle's worked example, SciPy 2020),
//! in three kernels around the scan of [`scan`](crate::scan):
//!
//! 1. [`bin`]: wrap each body into the box (image counters updated), its cell
//!    key, and a slot in its cell from an atomic count;
//! 2. (the exclusive scan of the counts: each cell's first index, `start`);
//! 3. [`scatter`]: `order[start[c] + slot] = i`, the bodies grouped by cell in
//!    the order the atomics happened to give;
//! 4. [`reorder`]: each body's rank within its cell by its index (so the
//!    order within a cell is stable, whatever the atomics did), and the move
//!    of position, velocity, [`Tag`] and type to `start[c] + rank`, plus the
//!    reference positions of the rebuild trigger.
//!
//! The result is deterministic: the same bodies in the same order give the
//! same sorted arrays bit for bit on any schedule. Ranking costs
//! `O(cell occupancy)` per body (about 20 to 40 in a Lennard-Jones liquid).

use crate::exec::{Exec, Global};
use crate::integrate::global_thread;
use crate::periodic::{Grid, Tag, wrap};
use crate::vec4::Vec4;

/// Wraps body `i` into the box in place (`pos`, and `tag`'s image counters),
/// writes its cell `cell[i]` and takes a slot in it:
/// `slot[i] = atomicAdd(counts[cell[i]], 1)`.
///
/// # Safety
/// `pos`, `tag`, `cell`, `slot` hold `n` elements, `counts` at least
/// `nx ny nz` zeroed words; launched with [`shape::per_body`](crate::shape::per_body).
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn bin<E: Exec>(
    e: &E,
    pos: Global<Vec4>,
    tag: Global<Tag>,
    cell: Global<u32>,
    slot: Global<u32>,
    counts: Global<u32>,
    n: u32,
    lx: f32,
    ly: f32,
    lz: f32,
    nx: u32,
    ny: u32,
    nz: u32,
) {
    let i = global_thread(e);
    if i < n {
        let grid = Grid::new(lx, ly, lz, nx, ny, nz);
        // SAFETY: i < n; thread i touches only element i of each buffer, and counts atomically.
        unsafe {
            let p = e.load(pos, i);
            let mut t = e.load(tag, i);
            let (x, kx) = wrap(p.x, lx);
            let (y, ky) = wrap(p.y, ly);
            let (z, kz) = wrap(p.z, lz);
            t.ix = t.ix.wrapping_add(kx);
            t.iy = t.iy.wrapping_add(ky);
            t.iz = t.iz.wrapping_add(kz);
            let w = Vec4::new(x, y, z, p.w);
            e.store(pos, i, w);
            e.store(tag, i, t);
            let c = grid.cell_index(grid.cell_coords(w));
            e.store(cell, i, c);
            e.store(slot, i, e.atomic_add_u32(counts, c, 1));
        }
    }
}

/// `order[start[cell[i]] + slot[i]] = i`: the bodies grouped by cell.
///
/// # Safety
/// `cell`, `slot` and `order` hold `n` elements, every `cell[i] < cells`,
/// `start` `cells + 1` (the exclusive scan of [`bin`]'s counts); launched with
/// [`shape::per_body`](crate::shape::per_body).
pub unsafe fn scatter<E: Exec>(
    e: &E,
    cell: Global<u32>,
    slot: Global<u32>,
    start: Global<u32>,
    order: Global<u32>,
    n: u32,
    cells: u32,
) {
    let i = global_thread(e);
    if i < n {
        // SAFETY: i < n, c < cells; the slots of one cell are distinct (atomic counts) and the
        // cells' ranges disjoint (the scan), so each element of `order` has one writer.
        unsafe {
            let c = e.load(cell, i).min(cells - 1);
            e.store(order, e.load(start, c) + e.load(slot, i), i);
        }
    }
}

/// Moves body `i = order[q]` to `start[c] + rank`, `rank` the number of
/// bodies of its cell `c` with a smaller index (a stable order), writing its
/// position to `pos_out` (and `reference`, with `w = 0`), its velocity, tag
/// and atom type to `vel_out`, `tag_out` and `type_out`.
///
/// # Safety
/// The `_in` and `_out` buffers and `cell`, `order`, `reference` hold `n`
/// elements, `start` `cells + 1`; `order` is [`scatter`]'s output for these
/// `cell` and `start`; outputs do not overlap inputs; launched with
/// [`shape::per_body`](crate::shape::per_body).
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn reorder<E: Exec>(
    e: &E,
    pos_in: Global<Vec4>,
    vel_in: Global<Vec4>,
    tag_in: Global<Tag>,
    type_in: Global<u32>,
    cell: Global<u32>,
    start: Global<u32>,
    order: Global<u32>,
    pos_out: Global<Vec4>,
    vel_out: Global<Vec4>,
    tag_out: Global<Tag>,
    type_out: Global<u32>,
    reference: Global<Vec4>,
    n: u32,
    cells: u32,
) {
    let q = global_thread(e);
    if q < n {
        // SAFETY: q < n; the cell's range [first, last) lies in [0, n] (the scan of counts of
        // these bodies); ranks within a cell are distinct (distinct indices), so each output
        // element has one writer. `c < cells`, so `start[c + 1]` is in bounds.
        unsafe {
            let i = e.load(order, q);
            let c = e.load(cell, i);
            let (first, last) = (e.load(start, c), e.load(start, c.min(cells - 1) + 1));
            let mut rank = 0;
            let mut k = first;
            while k < last {
                rank += (e.load(order, k) < i) as u32;
                k += 1;
            }
            let to = first + rank;
            // Each value stored right after its load: whole-struct copies held across other
            // stores went through local memory (a stack frame).
            let p = e.load(pos_in, i);
            e.store(pos_out, to, p);
            e.store(reference, to, Vec4::new(p.x, p.y, p.z, 0.0));
            e.store(vel_out, to, e.load(vel_in, i));
            e.store(tag_out, to, e.load(tag_in, i));
            e.store(type_out, to, e.load(type_in, i));
        }
    }
}
