//! Full neighbour lists on the GPU, one thread per body, from the cells.
//!
//! # Layout
//! The lists of the 32 bodies of a warp form one tile; in it, neighbours
//! `4 g .. 4 g + 3` of every body are 16 contiguous bytes, and group `g` of
//! the 32 bodies fills 512 contiguous bytes
//! ([`shape::neighbour_slot`](crate::shape::neighbour_slot)). So the force
//! kernel's warp reads four neighbour indices per thread with one coalesced
//! 128-bit request (four full 128-byte lines), the layout of HOOMD-blue and
//! LAMMPS's GPU package (neighbour `k` of bodies `i .. i + 31` together)
//! with four neighbours per load instead of one: a quarter of the index
//! load instructions for the same bytes. `ncount[i]` is the list's length.
//!
//! # Capacity
//! Each list has room for `cap` entries (a multiple of 4). A body with more neighbours writes
//! the first `cap`, stores `ncount[i] = cap`, and raises
//! `status[STATUS_NEIGHBOURS]` to its true count (an atomic max). Likewise a
//! build that needed more ghosts than the `gcap` slots
//! (`status[STATUS_GHOSTS] > gcap`) raises `status[STATUS_GHOST_NEED]` and
//! stores no entry of a ghost past them (so nothing reads outside the
//! buffers). Both words stay set until the host reads them (once per batch
//! of steps, since builds are decided on the device): it then grows the
//! buffers and replays the batch from its saved start, so a truncated list
//! is never used for a step that counts. [`count_entries`] adds the lists'
//! lengths up into `status[STATUS_ENTRIES]`.
//!
//! # Enumeration
//! Body `i` (bodies sorted by cell, positions wrapped) visits its own cell and
//! the neighbouring ones: three per dimension where the grid has at least
//! three cells, otherwise every cell of that dimension once (1 or 2), so no
//! cell and no pair is visited twice. Each candidate `j != i` is taken at its
//! minimum image; within `r_list` (`r^2 < rlist2`) it is stored as `j`, or,
//! when the image is a shifted one, as the index `n + goff[j] + r` of the
//! ghost of `j` at that image (see [`periodic`](crate::periodic)). Every body
//! visits the cells in the same order, so bodies of one cell (neighbours in a
//! warp) walk the same candidates: the force kernel's neighbour loads of a
//! warp fall on few sectors.
//!
//! With at least [`FAST_CELLS`] cells on every side the same lists, entry
//! for entry and in the same order, come from row runs: a row's cells
//! `x - 1, x, x + 1` are consecutive in the sorted arrays (two runs where
//! the row wraps), and every candidate of a run takes the same minimum-image
//! shift ([`neighbour_cell`]), so no `rint` per candidate and no ghost test
//! in unshifted runs: about half the instructions per candidate of the
//! general loop (docs/gpu/issue-23-whole-step.md, item 4's build analysis).

use crate::exec::{Exec, Global};
use crate::integrate::global_thread;
use crate::interaction::Real;
use crate::periodic::{
    Grid, STATUS_ENTRIES, STATUS_GHOST_NEED, STATUS_GHOSTS, STATUS_LOST, STATUS_NEIGHBOURS,
    building, ghost_mask, ghost_radius, ghost_rank, min_image,
};
use crate::shape::neighbour_slot;
use crate::vec4::Vec4;

/// The distinct cell offsets of one dimension: `-1, 0, 1` with at least
/// three cells, `0, 1` with two, `0` with one (as a start and a count).
#[inline(always)]
fn offsets(cells: u32) -> (u32, u32) {
    // Offsets are added as `cells + o - 1`, o in 0..count.
    match cells {
        1 => (1, 1),
        2 => (1, 2),
        _ => (0, 3),
    }
}

/// Builds body `i`'s list (see the module documentation).
///
/// # Safety
/// `pos` holds the `n` sorted, wrapped bodies, `start` the `nx ny nz + 1`
/// cell starts of them, `goff` the `n` ghost offsets, `nlist`
/// [`neighbour_stride`](crate::shape::neighbour_stride)`(n) * cap` words, `cap` a
/// multiple of [`NEIGHBOUR_GROUP`](crate::shape::NEIGHBOUR_GROUP), `ncount` `n`, `status`
/// [`STATUS_WORDS`](crate::periodic::STATUS_WORDS), `gcap` the ghost slots
/// after the `n` bodies; launched with
/// [`shape::per_body`](crate::shape::per_body).
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn build<E: Exec>(
    e: &E,
    pos: Global<Vec4>,
    start: Global<u32>,
    goff: Global<u32>,
    nlist: Global<u32>,
    ncount: Global<u32>,
    status: Global<u32>,
    n: u32,
    cap: u32,
    gcap: u32,
    lx: f32,
    ly: f32,
    lz: f32,
    nx: u32,
    ny: u32,
    nz: u32,
    rlist2: f32,
) {
    let i = global_thread(e);
    // SAFETY: `status` holds STATUS_WORDS words (the contract).
    if i >= n || !unsafe { building(e, status) } {
        return;
    }
    let grid = Grid::new(lx, ly, lz, nx, ny, nz);
    let l = grid.l;
    let inv_l = [1.0 / lx, 1.0 / ly, 1.0 / lz];
    let rg = ghost_radius(rlist2, l);
    let mut list = List {
        i,
        n,
        cap,
        gcap,
        count: 0,
        lost: false,
        short: false,
    };
    // SAFETY: i < n and every j read lies in a cell's range [start[c], start[c + 1]) within
    // [0, n); thread i writes only its own list column and count (and status atomically).
    unsafe {
        let pi = e.load(pos, i);
        let c = grid.cell_coords(pi);
        if nx >= FAST_CELLS && ny >= FAST_CELLS && nz >= FAST_CELLS {
            let mut oz = 0;
            while oz < 3 {
                let (cz, sz) = neighbour_cell(c[2], oz, nz);
                let mut oy = 0;
                while oy < 3 {
                    let (cy, sy) = neighbour_cell(c[1], oy, ny);
                    let row = (cz * ny + cy) * nx;
                    // The row's three cells in the general loop's order (x - 1, x, x + 1),
                    // as at most two runs of consecutive cells with one shift each.
                    let ((a0, a1, sa), (b0, b1, sb)) = if c[0] == 0 {
                        ((nx - 1, nx - 1, 1.0), (0, 1, 0.0))
                    } else if c[0] == nx - 1 {
                        ((nx - 2, nx - 1, 0.0), (0, 0, -1.0))
                    } else {
                        ((c[0] - 1, c[0] + 1, 0.0), (1, 0, 0.0))
                    };
                    let cells = Cells {
                        pos,
                        start,
                        nlist,
                        pi,
                        rlist2,
                    };
                    let ghosts = Ghosts { goff, l, rg };
                    run(e, &mut list, &cells, &ghosts, row, a0, a1, [sa, sy, sz]);
                    run(e, &mut list, &cells, &ghosts, row, b0, b1, [sb, sy, sz]);
                    oy += 1;
                }
                oz += 1;
            }
        } else {
            let (oz0, kz) = offsets(nz);
            let (oy0, ky) = offsets(ny);
            let (ox0, kx) = offsets(nx);
            let mut oz = 0;
            while oz < kz {
                let cz = (c[2] + nz + oz0 + oz - 1) % nz;
                let mut oy = 0;
                while oy < ky {
                    let cy = (c[1] + ny + oy0 + oy - 1) % ny;
                    let mut ox = 0;
                    while ox < kx {
                        let cx = (c[0] + nx + ox0 + ox - 1) % nx;
                        let cell = grid.cell_index([cx, cy, cz]);
                        let (first, last) = (e.load(start, cell), e.load(start, cell + 1));
                        let mut j = first;
                        while j < last {
                            if j != i {
                                let pj = e.load(pos, j);
                                let (dx, sx) = min_image(pj.x - pi.x, l[0], inv_l[0]);
                                let (dy, sy) = min_image(pj.y - pi.y, l[1], inv_l[1]);
                                let (dz, sz) = min_image(pj.z - pi.z, l[2], inv_l[2]);
                                let r2 = Real::mul_add(dz, dz, Real::mul_add(dy, dy, dx * dx));
                                if r2 < rlist2 {
                                    let entry = if sx == 0.0 && sy == 0.0 && sz == 0.0 {
                                        Some(j)
                                    } else {
                                        ghost_rank(ghost_mask(pj, l, rg), [sx, sy, sz])
                                            .map(|r| n + e.load(goff, j) + r - 1)
                                    };
                                    list.push(e, nlist, entry);
                                }
                            }
                            j += 1;
                        }
                        ox += 1;
                    }
                    oy += 1;
                }
                oz += 1;
            }
        }
        let List {
            count, lost, short, ..
        } = list;
        e.store(ncount, i, count.min(cap));
        if count > cap {
            e.atomic_max_u32(status, STATUS_NEIGHBOURS, count);
        }
        if lost {
            e.atomic_max_u32(status, STATUS_LOST, 1);
        }
        if short {
            e.atomic_max_u32(status, STATUS_GHOST_NEED, e.load(status, STATUS_GHOSTS));
        }
    }
}

/// Cells per side from which [`build`] walks a row of three cells as runs
/// of consecutive cells with one periodic shift per run (see
/// [`neighbour_cell`]); below it, the general loop (a minimum image per
/// candidate).
pub const FAST_CELLS: u32 = 5;

/// Neighbour cell `o` (0, 1, 2 for offsets -1, 0, +1) of cell `c` on a side
/// of `cells >= FAST_CELLS`, and the minimum-image shift in box lengths that
/// [`min_image`] gives every candidate of it: `+1` where the offset wraps
/// below 0, `-1` above the last cell, else `0`. Why it is the same `s` for
/// every candidate: the build's positions are wrapped into `[0, L)` and
/// binned by [`Grid::cell_coords`] from the same bits, so two bodies at most
/// one cell apart differ by less than `2 L / cells (1 + 2^-22) <= 0.41 L`
/// (`rint` gives 0), and across the wrap by more than `0.59 L` and less than
/// `L` (`rint` gives 1). With that `s`, `mul_add(-s, L, d)` is the general
/// loop's difference bit for bit (for `s = 0`, `d` itself).
#[inline(always)]
pub fn neighbour_cell(c: u32, o: u32, cells: u32) -> (u32, f32) {
    if c + o == 0 {
        (cells - 1, 1.0)
    } else if c + o > cells {
        (0, -1.0)
    } else {
        (c + o - 1, 0.0)
    }
}

/// One body's list being written: its slots, count and overflow flags.
struct List {
    i: u32,
    n: u32,
    cap: u32,
    gcap: u32,
    count: u32,
    lost: bool,
    short: bool,
}

impl List {
    /// Appends an entry (`None`: a ghost that does not exist, the lost flag;
    /// a ghost past the `gcap` slots: the short flag, nothing stored).
    ///
    /// # Safety
    /// `nlist` holds the lists of [`build`]'s contract.
    #[inline(always)]
    unsafe fn push<E: Exec>(&mut self, e: &E, nlist: Global<u32>, entry: Option<u32>) {
        match entry {
            // A ghost past the slots: the batch is replayed.
            Some(entry) if entry >= self.n + self.gcap => self.short = true,
            Some(entry) => {
                if self.count < self.cap {
                    // SAFETY: the slot lies in body i's column of the lists (the contract).
                    unsafe { e.store(nlist, neighbour_slot(self.i, self.count, self.cap), entry) };
                }
                self.count += 1;
            }
            None => self.lost = true,
        }
    }
}

/// What a shifted run needs to name a ghost.
struct Ghosts {
    goff: Global<u32>,
    l: [f32; 3],
    rg: f32,
}

/// The buffers and the body a run of cells is tested against.
struct Cells {
    pos: Global<Vec4>,
    start: Global<u32>,
    nlist: Global<u32>,
    pi: Vec4,
    rlist2: f32,
}

/// Cells `c0..=c1` of the row starting at cell `row` (none when `c0 > c1`),
/// all at the shift `s`: their candidates, consecutive in the sorted
/// arrays, in one loop.
///
/// # Safety
/// The cells lie in the grid of `start`; the buffers as [`build`]'s contract.
#[allow(
    clippy::too_many_arguments,
    reason = "the inlined loop's state, kept in registers"
)]
#[inline(always)]
unsafe fn run<E: Exec>(
    e: &E,
    list: &mut List,
    cells: &Cells,
    ghosts: &Ghosts,
    row: u32,
    c0: u32,
    c1: u32,
    s: [f32; 3],
) {
    if c0 > c1 {
        return;
    }
    // SAFETY: row + c1 + 1 <= the cell count (the contract); the rest as the callees'.
    unsafe {
        let first = e.load(cells.start, row + c0);
        let last = e.load(cells.start, row + c1 + 1);
        if s[0] == 0.0 && s[1] == 0.0 && s[2] == 0.0 {
            run_unshifted(
                e,
                list,
                cells.pos,
                cells.nlist,
                cells.pi,
                first,
                last,
                cells.rlist2,
            );
        } else {
            run_shifted(
                e,
                list,
                cells.pos,
                cells.nlist,
                ghosts,
                cells.pi,
                s,
                first,
                last,
                cells.rlist2,
            );
        }
    }
}

/// Candidates `first..last`, a run of cells with no periodic shift: each
/// within `r_list` is listed as itself. No minimum image per candidate (the
/// difference is the general loop's, bit for bit: [`neighbour_cell`]).
///
/// # Safety
/// `first..last` lies in `[0, n)` of `pos`, `nlist` as [`build`]'s contract.
#[allow(
    clippy::too_many_arguments,
    reason = "the inlined loop's state, kept in registers"
)]
#[inline(always)]
unsafe fn run_unshifted<E: Exec>(
    e: &E,
    list: &mut List,
    pos: Global<Vec4>,
    nlist: Global<u32>,
    pi: Vec4,
    first: u32,
    last: u32,
    rlist2: f32,
) {
    let mut j = first;
    while j < last {
        // SAFETY: j < last <= n (the contract).
        let pj = unsafe { e.load(pos, j) };
        let (dx, dy, dz) = (pj.x - pi.x, pj.y - pi.y, pj.z - pi.z);
        let r2 = Real::mul_add(dz, dz, Real::mul_add(dy, dy, dx * dx));
        if r2 < rlist2 && j != list.i {
            // A body, never a ghost past the slots: no check of `gcap`.
            if list.count < list.cap {
                // SAFETY: the slot lies in body i's column of the lists (the contract).
                unsafe { e.store(nlist, neighbour_slot(list.i, list.count, list.cap), j) };
            }
            list.count += 1;
        }
        j += 1;
    }
}

/// Candidates `first..last`, a run of cells whose candidates all take the
/// shift `s` (box lengths per dimension, not all 0): each within `r_list`
/// is listed as its ghost at that image, as the general loop does.
///
/// # Safety
/// `first..last` lies in `[0, n)` of `pos` and `goff`, `nlist` as
/// [`build`]'s contract.
#[allow(
    clippy::too_many_arguments,
    reason = "the inlined loop's state, kept in registers"
)]
#[inline(always)]
unsafe fn run_shifted<E: Exec>(
    e: &E,
    list: &mut List,
    pos: Global<Vec4>,
    nlist: Global<u32>,
    ghosts: &Ghosts,
    pi: Vec4,
    s: [f32; 3],
    first: u32,
    last: u32,
    rlist2: f32,
) {
    let l = ghosts.l;
    let mut j = first;
    while j < last {
        // SAFETY: j < last <= n (the contract).
        let pj = unsafe { e.load(pos, j) };
        let dx = Real::mul_add(-s[0], l[0], pj.x - pi.x);
        let dy = Real::mul_add(-s[1], l[1], pj.y - pi.y);
        let dz = Real::mul_add(-s[2], l[2], pj.z - pi.z);
        let r2 = Real::mul_add(dz, dz, Real::mul_add(dy, dy, dx * dx));
        if r2 < rlist2 {
            let n = list.n;
            // SAFETY: j < n for `goff`; `nlist` as the contract.
            unsafe {
                let entry = ghost_rank(ghost_mask(pj, l, ghosts.rg), s)
                    .map(|r| n + e.load(ghosts.goff, j) + r - 1);
                list.push(e, nlist, entry);
            }
        }
        j += 1;
    }
}

/// The lists' lengths added up: each block sums its `ncount` in shared
/// memory (a tree in a fixed order) and adds the sum to
/// `status[STATUS_ENTRIES]` with one atomic (integers: the total is exact
/// in any order). Nothing unless the step builds.
///
/// # Safety
/// `ncount` holds `n` words, `status`
/// [`STATUS_WORDS`](crate::periodic::STATUS_WORDS); launched with
/// [`shape::count_entries`](crate::shape::count_entries)`(n, block)`.
pub unsafe fn count_entries<E: Exec>(e: &E, ncount: Global<u32>, status: Global<u32>, n: u32) {
    // SAFETY: `status` holds STATUS_WORDS words (the contract); every thread of the block
    // returns, or none.
    if !unsafe { building(e, status) } {
        return;
    }
    let (t, b) = (e.thread_idx(), e.block_dim());
    let i = global_thread(e);
    // SAFETY: i < n for `ncount`; shared slots t and t + half are below b (the launch's b
    // words); between barriers each slot has one writer and is read after the barrier.
    unsafe {
        let v = if i < n { e.load(ncount, i) } else { 0 };
        e.shared_store(t, v);
        let mut half = b / 2;
        while half > 0 {
            e.sync_threads();
            if t < half {
                let sum = e
                    .shared_load::<u32>(t)
                    .wrapping_add(e.shared_load::<u32>(t + half));
                e.shared_store(t, sum);
            }
            half /= 2;
        }
        if t == 0 {
            e.atomic_add_u32(status, STATUS_ENTRIES, e.shared_load::<u32>(0));
        }
    }
}
