//! The periodic orthorhombic box of the short-range (Lennard-Jones) kernels,
//! `[0, Lx) x [0, Ly) x [0, Lz)`: wrapping, cell keys, the minimum image and
//! ghost images (pure functions), and the per-body kernels of a periodic run:
//! the drift with the rebuild trigger, and the ghosts' placement and update.
//!
//! # Ghosts instead of a minimum image in the force loop
//! The neighbour list is built with the minimum image ([`min_image`]), but a
//! pair that crosses a face is stored as an index of a *ghost*: a copy of the
//! neighbour shifted by whole box lengths, kept after the `n` real bodies in
//! the position buffer. The force loop then reads `x_j - x_i` with three
//! subtractions and no rounding to the nearest image (9 instructions fewer per
//! pair), as LAMMPS does with its ghost atoms. Bodies are wrapped into the box
//! only when the list is rebuilt (LAMMPS's `pbc()` on reneighbouring steps);
//! between rebuilds they move at most `skin / 2` past a face, and their
//! ghosts move with them ([`ghost_update`]).
//!
//! Body `p` near a face of dimension `d` (closer than the ghost radius `rg`)
//! has a ghost shifted by `+L_d` when it lies in the lower half of the box,
//! `-L_d` in the upper half ([`ghost_mask`]); near an edge or a corner it has
//! one ghost per non-empty subset of those shifts: `2^k - 1` ghosts for `k`
//! faces ([`ghost_count`]). With `rg >= r_list` and `r_list <= L / 2`, every
//! image a minimum-image pair within `r_list` needs is one of them (for
//! `x_i, x_j` in `[0, L)`: `|x_j + L - x_i| < r_list` implies `x_j < r_list`).

use crate::exec::{Exec, Global, Word};
use crate::integrate::global_thread;
use crate::interaction::Real;
use crate::vec4::Vec4;

/// What travels with a body when the bodies are sorted by cell: its image
/// counters (how many box lengths it was wrapped by, per dimension, so the
/// unwrapped position is `x + image * L`) and its original index.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tag {
    /// Image counter in x.
    pub ix: i32,
    /// Image counter in y.
    pub iy: i32,
    /// Image counter in z.
    pub iz: i32,
    /// The body's index in the caller's order.
    pub id: u32,
}

// SAFETY: three i32 and a u32 (`repr(C, align(16))`), 16 bytes, no padding,
// every bit pattern valid.
unsafe impl Word for Tag {}

/// The status buffer of a periodic run, `STATUS_WORDS` words the host reads
/// once per step: words 0 and 1 are the divergence flag of
/// [`check_finite`](crate::integrate::check_finite) (first bad step, body),
/// the others the words below.
pub const STATUS_FINITE: u32 = 0;
/// Status word: non-zero when a body moved more than `skin / 2` since the
/// last build (set by [`drift_check`]): the list must be rebuilt.
pub const STATUS_MOVED: u32 = 2;
/// Status word: the largest neighbour count of a body whose list did not fit
/// the capacity (0 when every list fit): grow the capacity to at least this.
pub const STATUS_NEIGHBOURS: u32 = 3;
/// Status word: the number of ghosts the last build needs (the scan total).
pub const STATUS_GHOSTS: u32 = 4;
/// Status word: non-zero when the builder met a pair whose image had no
/// ghost (impossible for `r_list <= L / 2`; a bug if ever set).
pub const STATUS_LOST: u32 = 5;
/// Status word: where scans whose total nobody reads put it.
pub const STATUS_SCRATCH: u32 = 6;
/// Status word: non-zero while this step rebuilds the lists, set by
/// [`gate`]; every kernel of a build returns at once when it is zero, so a
/// whole step (and a batch of steps) is queued without the host knowing
/// whether it rebuilds.
pub const STATUS_DUE: u32 = 7;
/// Status word: builds since the host last cleared it (counted by [`gate`]).
pub const STATUS_BUILDS: u32 = 8;
/// Status word: forced builds (a fixed interval's) at which a body had
/// moved more than `skin / 2` since the previous one: LAMMPS's dangerous
/// builds (counted by [`gate`]).
pub const STATUS_DANGEROUS: u32 = 9;
/// Status word: the most ghosts a build of this batch needed when they did
/// not fit the ghost slots (0 when they did); sticky until the host clears
/// it, which then grows the buffers and replays the batch.
pub const STATUS_GHOST_NEED: u32 = 10;
/// Status word: the neighbour-list entries of the last build, summed.
pub const STATUS_ENTRIES: u32 = 11;
/// Status word: steps since the last build (kept by [`gate`]).
pub const STATUS_SINCE: u32 = 12;
/// Words in the status buffer.
pub const STATUS_WORDS: u32 = 16;

/// [`gate`]'s `force`: build when a body moved more than `skin / 2`.
pub const GATE_AUTO: u32 = 0;
/// [`gate`]'s `force`: build now, counted (a fixed interval's build).
pub const GATE_FORCE: u32 = 1;
/// [`gate`]'s `force`: build now, not counted (the start, a replay).
pub const GATE_QUIET: u32 = 2;

/// Whether this step rebuilds the lists (`status[STATUS_DUE]`, written by
/// [`gate`] in an earlier launch).
///
/// # Safety
/// `status` holds [`STATUS_WORDS`] words.
#[inline(always)]
pub unsafe fn building<E: Exec>(e: &E, status: Global<u32>) -> bool {
    // SAFETY: STATUS_DUE < STATUS_WORDS.
    unsafe { e.load(status, STATUS_DUE) != 0 }
}

/// The build decision of a step, on the device: with `force` =
/// [`GATE_AUTO`] the lists are rebuilt when a body moved more than
/// `skin / 2` since the last build (`status[STATUS_MOVED]`, set by
/// [`drift_check`]), with [`GATE_FORCE`] or [`GATE_QUIET`] always. When
/// building, every thread clears its cell count (`counts[i] = 0`, `i <
/// len`) for the build's binning. Thread 0 writes the decision to
/// `status[STATUS_DUE]` and keeps the counters: builds and dangerous builds
/// (forced ones with `STATUS_MOVED` set) unless quiet, and the steps since
/// the last build. `STATUS_MOVED` is cleared later, by
/// [`copy_back`](crate::binning::copy_back) (no thread of this launch may
/// write a word the others read).
///
/// # Safety
/// `status` holds [`STATUS_WORDS`] words, `counts` `len`; launched with
/// [`shape::per_body`](crate::shape::per_body)`(len, ..)`.
pub unsafe fn gate<E: Exec>(e: &E, status: Global<u32>, counts: Global<u32>, len: u32, force: u32) {
    let i = global_thread(e);
    // SAFETY: every status index is below STATUS_WORDS; i < len for `counts`; thread 0 alone
    // writes status, and no thread reads the words it writes.
    unsafe {
        let moved = e.load(status, STATUS_MOVED) != 0;
        let due = force != GATE_AUTO || moved;
        if due && i < len {
            e.store(counts, i, 0);
        }
        if i == 0 {
            e.store(status, STATUS_DUE, due as u32);
            let since = e.load(status, STATUS_SINCE);
            e.store(status, STATUS_SINCE, if due { 0 } else { since + 1 });
            if due && force != GATE_QUIET {
                e.store(status, STATUS_BUILDS, e.load(status, STATUS_BUILDS) + 1);
                if force == GATE_FORCE && moved {
                    let dangerous = e.load(status, STATUS_DANGEROUS);
                    e.store(status, STATUS_DANGEROUS, dangerous + 1);
                }
            }
        }
    }
}

/// `floor(x)`.
#[inline(always)]
pub fn floor(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::floorf32(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::floorf(x)
    }
}

/// `x` rounded to the nearest integer, ties to even (`cvt.rni`).
#[inline(always)]
pub fn rint(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::round_ties_even_f32(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::rintf(x)
    }
}

/// The box lengths and the cell grid, as the kernels receive them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    /// Box lengths `[Lx, Ly, Lz]`.
    pub l: [f32; 3],
    /// Cells per side `[nx, ny, nz]`, each at least 1.
    pub n: [u32; 3],
}

impl Grid {
    /// From the kernels' scalar parameters.
    #[inline(always)]
    pub fn new(lx: f32, ly: f32, lz: f32, nx: u32, ny: u32, nz: u32) -> Grid {
        Grid {
            l: [lx, ly, lz],
            n: [nx, ny, nz],
        }
    }

    /// Number of cells.
    #[inline(always)]
    pub fn cells(&self) -> u32 {
        self.n[0] * self.n[1] * self.n[2]
    }

    /// The cell coordinates of a wrapped position (in `[0, L)`): one
    /// multiplication and a truncation per dimension, clamped to the last
    /// cell (a position just below `L` may round up). The builder and the
    /// binning call this same function on the same stored positions, so they
    /// agree on every body's cell bit for bit.
    #[inline(always)]
    pub fn cell_coords(&self, p: Vec4) -> [u32; 3] {
        let x = [p.x, p.y, p.z];
        core::array::from_fn(|d| {
            let per_length = self.n[d] as f32 / self.l[d];
            ((x[d] * per_length) as u32).min(self.n[d] - 1)
        })
    }

    /// The cell index `(cz ny + cy) nx + cx`.
    #[inline(always)]
    pub fn cell_index(&self, c: [u32; 3]) -> u32 {
        (c[2] * self.n[1] + c[1]) * self.n[0] + c[0]
    }
}

/// `x` wrapped into `[0, l)` and the number of box lengths taken off:
/// `x ~ w + k l` up to one rounding of `x - k l`.
///
/// A result that rounds to `l` (a tiny negative `w` plus `l`) becomes `0`
/// with `k + 1`: the position error is below one rounding of `l`.
#[inline(always)]
pub fn wrap(x: f32, l: f32) -> (f32, i32) {
    let kf = floor(x / l);
    let mut w = Real::mul_add(-kf, l, x);
    // (Wrapping: a body 2^31 box lengths away has diverged; the check reports it.)
    let mut k = kf as i32;
    if w >= l {
        w -= l;
        k = k.wrapping_add(1);
    }
    if w < 0.0 {
        w += l;
        k = k.wrapping_sub(1);
    }
    if w >= l {
        w = 0.0;
        k = k.wrapping_add(1);
    }
    (w, k)
}

/// The minimum image of a separation `d` (|d| < l for wrapped positions)
/// and the number of box lengths taken off: `(d - s l, s)`.
#[inline(always)]
pub fn min_image(d: f32, l: f32, inv_l: f32) -> (f32, f32) {
    let s = rint(d * inv_l);
    (Real::mul_add(-s, l, d), s)
}

/// Bits `d` (0..3): body has ghosts shifted in dimension `d`; bits `3 + d`:
/// that shift is `-L_d` (the body is in the upper half of the box), else
/// `+L_d`. Near a face means closer than `rg`.
#[inline(always)]
pub fn ghost_mask(p: Vec4, l: [f32; 3], rg: f32) -> u32 {
    let x = [p.x, p.y, p.z];
    let mut mask = 0;
    let mut d = 0;
    while d < 3 {
        if x[d] < 0.5 * l[d] {
            if x[d] < rg {
                mask |= 1 << d;
            }
        } else if x[d] >= l[d] - rg {
            mask |= (1 << d) | (8 << d);
        }
        d += 1;
    }
    mask
}

/// Ghosts of a body with this [`ghost_mask`]: `2^k - 1`, `k` the faces it is near.
#[inline(always)]
pub fn ghosts_of(mask: u32) -> u32 {
    (1 << (mask & 7).count_ones()) - 1
}

/// The shift of ghost `r` (`1..=ghosts_of(mask)`) of a body: bit `b` of `r`
/// selects the `b`-th dimension present in `mask`.
#[inline(always)]
pub fn ghost_shift(mask: u32, r: u32, l: [f32; 3]) -> Vec4 {
    let mut s = [0.0f32; 3];
    let mut bit = 0;
    let mut d = 0;
    while d < 3 {
        if mask & (1 << d) != 0 {
            if r & (1 << bit) != 0 {
                s[d] = if mask & (8 << d) != 0 { -l[d] } else { l[d] };
            }
            bit += 1;
        }
        d += 1;
    }
    Vec4::new(s[0], s[1], s[2], 0.0)
}

/// The ghost `r` of a body (with this [`ghost_mask`]) that sits at
/// `x_j - s L` for the minimum-image multiples `s` (each -1, 0 or 1, not all
/// 0), or `None` when the body has no such ghost.
#[inline(always)]
pub fn ghost_rank(mask: u32, s: [f32; 3]) -> Option<u32> {
    let mut r = 0;
    let mut bit = 0;
    let mut d = 0;
    while d < 3 {
        let present = mask & (1 << d) != 0;
        if s[d] != 0.0 {
            // x_j - s L: s = -1 needs the +L ghost, s = +1 the -L one.
            let minus = s[d] > 0.0;
            if !present || (mask & (8 << d) != 0) != minus {
                return None;
            }
            r |= 1 << bit;
        }
        if present {
            bit += 1;
        }
        d += 1;
    }
    Some(r)
}

/// The ghost radius for a list radius: `r_list` plus 2^-18 of the longest
/// side, so a pair the builder accepts with rounding at `r_list` still finds
/// its ghost. Every kernel derives it with this one function.
#[inline(always)]
pub fn ghost_radius(rlist2: f32, l: [f32; 3]) -> f32 {
    let longest = l[0].max(l[1]).max(l[2]);
    #[cfg(target_arch = "nvptx64")]
    let r = core::intrinsics::sqrtf32(rlist2);
    #[cfg(not(target_arch = "nvptx64"))]
    let r = libm::sqrtf(rlist2);
    r + longest * (1.0 / 262_144.0)
}

/// Drift `x += v dt` in place, and the rebuild trigger: a body farther than
/// `sqrt(limit2)` (`skin / 2`) from where it was at the last build sets
/// `status[STATUS_MOVED]` (an atomic max, so racing writers are fine). The
/// build's position is compared scaled by `(sx, sy, sz)`, the box's scale
/// since the build (1 without a barostat, bit for bit the unscaled test:
/// `fma(-r, 1, q)` rounds `q - r` once).
///
/// # Safety
/// `pos`, `vel` and `reference` hold `n` elements, `status`
/// [`STATUS_WORDS`]; launched with [`shape::per_body`](crate::shape::per_body).
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn drift_check<E: Exec>(
    e: &E,
    pos: Global<Vec4>,
    vel: Global<Vec4>,
    reference: Global<Vec4>,
    status: Global<u32>,
    n: u32,
    dt: f32,
    limit2: f32,
    sx: f32,
    sy: f32,
    sz: f32,
) {
    let i = global_thread(e);
    if i < n {
        // SAFETY: i < n and the buffers hold n elements; thread i touches only element i (and
        // the status word atomically).
        unsafe {
            let p = e.load(pos, i);
            let v = e.load(vel, i);
            let q = Vec4::new(
                Real::mul_add(v.x, dt, p.x),
                Real::mul_add(v.y, dt, p.y),
                Real::mul_add(v.z, dt, p.z),
                p.w,
            );
            e.store(pos, i, q);
            let r = e.load(reference, i);
            let (dx, dy, dz) = (
                Real::mul_add(-r.x, sx, q.x),
                Real::mul_add(-r.y, sy, q.y),
                Real::mul_add(-r.z, sz, q.z),
            );
            let d2 = Real::mul_add(dz, dz, Real::mul_add(dy, dy, dx * dx));
            #[allow(
                clippy::neg_cmp_op_on_partial_ord,
                reason = "`!(d2 <= limit2)` is also true for NaN, which must trigger a rebuild"
            )]
            if !(d2 <= limit2) {
                e.atomic_max_u32(status, STATUS_MOVED, 1);
            }
        }
    }
}

/// Ghosts per body: `gcount[p] = ghosts_of(ghost_mask(x_p))`, the input of
/// the scan that gives each body's first ghost slot; nothing unless the step
/// builds ([`building`]).
///
/// # Safety
/// `pos` and `gcount` hold `n` elements, `status` [`STATUS_WORDS`];
/// launched with [`shape::per_body`](crate::shape::per_body).
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn ghost_count<E: Exec>(
    e: &E,
    pos: Global<Vec4>,
    gcount: Global<u32>,
    status: Global<u32>,
    n: u32,
    lx: f32,
    ly: f32,
    lz: f32,
    rlist2: f32,
) {
    let p = global_thread(e);
    // SAFETY: `status` holds STATUS_WORDS words (the contract).
    if p < n && unsafe { building(e, status) } {
        let l = [lx, ly, lz];
        let rg = ghost_radius(rlist2, l);
        // SAFETY: p < n; thread p touches only element p.
        unsafe {
            let mask = ghost_mask(e.load(pos, p), l, rg);
            e.store(gcount, p, ghosts_of(mask));
        }
    }
}

/// Places the ghosts of body `p` at slots `goff[p] ..` (the exclusive scan
/// of [`ghost_count`]): `src[g] = p`, `shift[g]`, the ghost's position
/// `pos[n + g] = x_p + shift[g]` and its type `types[n + g] = types[p]`. Slots at or past `gcap` are not written:
/// the neighbour build compares the scan total (`status[STATUS_GHOSTS]`)
/// with `gcap` and raises `status[STATUS_GHOST_NEED]`, and the host grows
/// the buffers and replays the batch. Nothing unless the step builds.
///
/// # Safety
/// `pos` and `types` hold `n + gcap` elements, `goff` `n`, `src` and `shift` `gcap`,
/// `status` [`STATUS_WORDS`]; launched with
/// [`shape::per_body`](crate::shape::per_body)`(n, ..)`.
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn ghost_place<E: Exec>(
    e: &E,
    pos: Global<Vec4>,
    types: Global<u32>,
    goff: Global<u32>,
    src: Global<u32>,
    shift: Global<Vec4>,
    status: Global<u32>,
    n: u32,
    gcap: u32,
    lx: f32,
    ly: f32,
    lz: f32,
    rlist2: f32,
) {
    let p = global_thread(e);
    // SAFETY: `status` holds STATUS_WORDS words (the contract).
    if p < n && unsafe { building(e, status) } {
        let l = [lx, ly, lz];
        let rg = ghost_radius(rlist2, l);
        // SAFETY: p < n; ghost slots g < gcap belong to body p alone (the scan's ranges are
        // disjoint), so no two threads write one element.
        unsafe {
            let x = e.load(pos, p);
            let t = e.load(types, p);
            let mask = ghost_mask(x, l, rg);
            let base = e.load(goff, p);
            let mut r = 1;
            while r <= ghosts_of(mask) {
                let g = base + r - 1;
                if g < gcap {
                    let s = ghost_shift(mask, r, l);
                    e.store(src, g, p);
                    e.store(shift, g, s);
                    e.store(pos, n + g, Vec4::new(x.x + s.x, x.y + s.y, x.z + s.z, x.w));
                    e.store(types, n + g, t);
                }
                r += 1;
            }
        }
    }
}

/// Moves the ghosts with their bodies: `pos[n + g] = pos[src[g]] + shift[g]`
/// for the ghosts of the last build, `g < min(status[STATUS_GHOSTS], gcap)`
/// (their count is on the device: the host queues steps without reading it),
/// each shift's `±L_d` taken as `±l_d` of the box now (`lx, ly, lz`: the
/// build's box bit for bit without a barostat; a barostat's box between
/// builds, `nbody-host/src/plan/md/npt.rs`).
///
/// # Safety
/// `pos` holds `n + gcap` elements, `src` and `shift` `gcap`, every
/// `src[g] < n` for the last build's ghosts, `status` [`STATUS_WORDS`];
/// launched with [`shape::per_body`](crate::shape::per_body)`(gcap, ..)`.
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn ghost_update<E: Exec>(
    e: &E,
    pos: Global<Vec4>,
    src: Global<u32>,
    shift: Global<Vec4>,
    status: Global<u32>,
    n: u32,
    gcap: u32,
    lx: f32,
    ly: f32,
    lz: f32,
) {
    let g = global_thread(e);
    // SAFETY: STATUS_GHOSTS < STATUS_WORDS.
    let ghosts = unsafe { e.load(status, STATUS_GHOSTS) }.min(gcap);
    if g < ghosts {
        // SAFETY: g < ghosts <= gcap and src[g] < n: in bounds; thread g writes only
        // pos[n + g], which no thread reads (sources are real bodies).
        unsafe {
            let b = e.load(shift, g);
            let s = Vec4::new(now(b.x, lx), now(b.y, ly), now(b.z, lz), 0.0);
            let x = e.load(pos, e.load(src, g));
            e.store(pos, n + g, Vec4::new(x.x + s.x, x.y + s.y, x.z + s.z, x.w));
        }
    }
}

/// A ghost's shift `±L` (or 0) of the build, as `±l` of the box now.
#[inline(always)]
fn now(shift: f32, l: f32) -> f32 {
    if shift > 0.0 {
        l
    } else if shift < 0.0 {
        -l
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_lands_in_the_box() {
        let l = 3.7f32;
        for &x in &[
            0.0,
            -0.0,
            3.7,
            -3.7,
            7.4,
            1.0,
            -1e-9,
            3.7 - 1e-7,
            3.7 + 1e-6,
            100.3,
            -55.5,
        ] {
            let (w, k) = wrap(x, l);
            assert!((0.0..l).contains(&w), "{x} -> {w}");
            let back = w as f64 + k as f64 * l as f64;
            assert!(
                (back - x as f64).abs() <= 2.0 * 4e-7 * (x.abs() as f64 + l as f64),
                "{x}"
            );
        }
    }

    #[test]
    fn ghost_ranks_enumerate_the_shifts() {
        let l = [4.0f32, 5.0, 6.0];
        // Near the lower x face and the upper z face: shifts +Lx, -Lz, both.
        let p = Vec4::new(0.5, 2.5, 5.8, 1.0);
        let mask = ghost_mask(p, l, 1.0);
        assert_eq!(ghosts_of(mask), 3);
        for r in 1..=3 {
            let s = ghost_shift(mask, r, l);
            // The pair's multiples s are minus the ghost's shift in box lengths.
            let m = [-s.x / l[0], -s.y / l[1], -s.z / l[2]];
            assert_eq!(ghost_rank(mask, m), Some(r));
        }
        assert_eq!(ghost_rank(mask, [0.0, 1.0, 0.0]), None);
        assert_eq!(ghost_rank(mask, [1.0, 0.0, 0.0]), None);
    }
}
