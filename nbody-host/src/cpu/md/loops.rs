//! The pair loops of the CPU backend, generic over the vector type
//! ([`Lanes`]) and the pair law ([`PairLaw`]), and instantiated per
//! instruction set inside `#[target_feature]` entry points, as the gravity
//! loops are (`super::super::loops`): one driver for every law. Each pair's
//! coefficients come from [`Rows`] (`rows.rs`): splatted once for a
//! single-type run, gathered by type otherwise.
//!
//! (One coherent thing, kept in one file although long: the loops share
//! the pair arithmetic and are instantiated together per instruction set.)
//!
//! # Verlet lists ([`MdLoops::list_forces`], [`MdLoops::list_energy`])
//! One task (a z-layer of cells, see `super::build`) takes its i-bodies in
//! turn. The neighbours `j` of each (indices into `pos`, padded to whole
//! vectors with `i` itself, which the mask drops) are taken `LANES` at a
//! time: positions gathered, `d = x_i - x_j` by the minimum image
//! (`d -= L round(d / L)`), `r^2`, `1 / r^2` from the hardware reciprocal and
//! one Newton step, the law's `fpair = F(r) / r` (Lennard-Jones: LAMMPS's
//! `r^-6 (lj1 r^-6 - lj2) / r^2`), zero beyond the pair's cutoff; `F_i +=
//! fpair d` in registers. With **half lists**
//! (Newton's third law, each pair once) `pos` is the task's *window* (its
//! bodies, then those its lists reach) and the reaction `F_j -= fpair d` is
//! gathered, subtracted and scattered into the window's force buffer (the
//! `j` of one vector are distinct, so no two lanes collide, except padding
//! lanes, which write back the value they read). With **full lists** (each
//! pair from both ends, no reaction) `pos` is every body. Every sum runs in
//! list order: the result depends on the lists, never on the thread count.
//!
//! # Building lists ([`MdLoops::cell_lists`])
//! The candidates of a cell's bodies, runs of consecutive cells of its
//! stencil (contiguous in memory), are tested `LANES` at a time against
//! `r_list^2`, and the indices within range appended in order.
//!
//! # All pairs ([`MdLoops::full_forces`], [`MdLoops::full_energy`])
//! For [`Neighbours::AllPairs`](crate::Neighbours::AllPairs): each i against
//! every `j != i`, contiguous loads, no third law (each body's sum is its
//! own, in `j` order), for small systems and as the plain reference.
//!
//! # Energy and virial
//! The law's `u - offset` and `fpair r^2` per pair in `f32`, accumulated in
//! `f64` lanes (as the gravity potential is).
//!
//! (Over 600 lines: the pair loops share private helpers and are instantiated together per instruction set.)

use gpu_kernels::interaction::Vec3;
use gpu_kernels::pair::{CUTOFF2, OFFSET, PairLaw, Row};

use super::super::isa::{Isa, Supported};
use super::super::lanes::{Lanes, MAX_LANES};
use super::rows::{Rows, Setup, Typed, Uniform};

/// Positions of a window of bodies (equal lengths), and their atom types
/// (as long, or empty where the loop is a single-type one).
#[derive(Clone, Copy)]
pub(crate) struct Pos<'a> {
    /// x.
    pub x: &'a [f32],
    /// y.
    pub y: &'a [f32],
    /// z.
    pub z: &'a [f32],
    /// Atom types.
    pub t: &'a [u32],
}

/// Forces on a window of bodies (equal lengths).
pub(crate) struct Forces<'a> {
    /// x.
    pub x: &'a mut [f32],
    /// y.
    pub y: &'a mut [f32],
    /// z.
    pub z: &'a mut [f32],
}

/// One task's lists: the neighbours of its i-body `i`, which is
/// `pos[first + i]`, are `pos[j[offsets[i]..offsets[i + 1]]]`, a whole
/// number of vectors, padded with `first + i`.
#[derive(Clone, Copy)]
pub(crate) struct List<'a> {
    /// Where the task's i-bodies start in `pos`.
    pub first: usize,
    /// `n_i + 1` offsets into `j`.
    pub offsets: &'a [u32],
    /// Indices into `pos`.
    pub j: &'a [u32],
}

/// The box, in vectors.
struct Splat<V> {
    l: [V; 3],
    inv_l: [V; 3],
}

impl<V: Lanes> Splat<V> {
    #[inline(always)]
    fn new(cap: V::Cap, c: &Setup) -> Splat<V> {
        let s = |v| V::splat(cap, v);
        Splat {
            l: c.lengths.map(s),
            inv_l: c.inv_lengths.map(s),
        }
    }
}

/// How far ahead in a list the loops ask for its entries (in entries: 2 KiB,
/// about six bodies' lists): the lists stream from memory (80 lanes of 4
/// bytes per body), and on the 2-vCPU Xeon of `docs/md.md` the hardware
/// prefetcher left that stream to demand misses; with this hint the force
/// loop at 256,000 atoms took a third of the time.
const LIST_AHEAD: usize = 512;

/// Asks the caches for the line holding `p` (a hint: nothing is read
/// architecturally, and no address faults).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` only hints the cache: it reads nothing into a
    // register and never faults, whatever the address; SSE, which has it,
    // is part of x86_64.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks for the list entries `LIST_AHEAD` past `at..end` (one hint per 64
/// bytes), before the loop over `at..end` needs them.
#[inline(always)]
fn prefetch_list(j: &[u32], at: usize, end: usize) {
    let mut p = at + LIST_AHEAD;
    while p < end + LIST_AHEAD {
        // `wrapping_add`: the address may lie past the list (a hint only).
        prefetch(j.as_ptr().wrapping_add(p));
        p += 16;
    }
}

/// `d = x_i - x_j` (the minimum image if `PERIODIC`) and `|d|^2`.
#[inline(always)]
fn separation<V: Lanes, const PERIODIC: bool>(
    xi: &[V; 3],
    xj: [V; 3],
    k: &Splat<V>,
) -> (Vec3<V>, V) {
    let mut d = [xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]];
    if PERIODIC {
        for ((d, l), inv_l) in d.iter_mut().zip(&k.l).zip(&k.inv_l) {
            // d - L round(d / L), one rounding in the FMA.
            *d = (*d * *inv_l).round_even().neg_mul_add(*l, *d);
        }
    }
    let r2 = d[2].mul_add(d[2], d[1].mul_add(d[1], d[0] * d[0]));
    (
        Vec3 {
            x: d[0],
            y: d[1],
            z: d[2],
        },
        r2,
    )
}

/// `F / r` of law `L` for `row`, where `mask`, else 0.
#[inline(always)]
fn fpair<V: Lanes, L: PairLaw, W: Row<V>>(row: &W, r2: V, mask: V::Mask) -> V {
    L::force(row, r2).zero_unless(mask)
}

/// `(u - offset, r^2 F / r)` of law `L` for `row`, where `mask`, else 0.
#[inline(always)]
fn pair_energy<V: Lanes, L: PairLaw, W: Row<V>>(row: &W, r2: V, mask: V::Mask) -> (V, V) {
    let (u, f) = L::energy_force(row, r2);
    (
        (u - row.word(OFFSET)).zero_unless(mask),
        f.zero_unless(mask) * r2,
    )
}

#[inline(always)]
fn body<V: Lanes>(cap: V::Cap, pos: &Pos<'_>, i: usize) -> [V; 3] {
    [
        V::splat(cap, pos.x[i]),
        V::splat(cap, pos.y[i]),
        V::splat(cap, pos.z[i]),
    ]
}

/// Adds to `f` the forces of the pairs of `list` (see the module
/// documentation): on the i-bodies, `f[i]`, and with `REACT` (half lists)
/// the reactions, `f[j]` (then `f` is indexed like `pos`, `first = 0`).
/// Returns `sum r^2 F / r` over the list's entries (the virial, each pair
/// once with half lists, twice with full lists): one FMA per vector, in
/// `f32` per body, summed in `f64` (what a barostat reads every step).
#[inline(always)]
fn list_forces_body<V: Lanes, L: PairLaw, S: Rows<V>, const PERIODIC: bool, const REACT: bool>(
    cap: V::Cap,
    pos: Pos<'_>,
    f: &mut Forces<'_>,
    list: List<'_>,
    c: &Setup,
    rows: S,
) -> f64 {
    let k = Splat::<V>::new(cap, c);
    let bound = pos.x.len() as u32;
    let zero = V::splat(cap, 0.0);
    let mut ew = V::wide_zero(cap);
    // Full lists: the force vectors of the last `held` bodies, reduced
    // `LANES` bodies at a time (`Lanes::sums`, the same bits as one sum
    // each); half lists sum each body at once, before the next body's
    // reactions reach it.
    let mut held = [[zero; MAX_LANES]; 3];
    let mut n_held = 0;
    for (i, w) in list.offsets.windows(2).enumerate() {
        let me = list.first + i;
        let xi = body::<V>(cap, &pos, me);
        let rows = rows.for_body(me);
        let mut fi = Vec3::splat(zero);
        let mut wi = zero;
        let mut at = w[0] as usize;
        prefetch_list(list.j, at, w[1] as usize);
        while at < w[1] as usize {
            let idx = V::load_idx(cap, &list.j[at..], bound);
            let xj = [
                V::gather(cap, pos.x, idx),
                V::gather(cap, pos.y, idx),
                V::gather(cap, pos.z, idx),
            ];
            let (d, r2) = separation::<V, PERIODIC>(&xi, xj, &k);
            let row = rows.row(idx);
            let mask = r2.lt_and(row.word(CUTOFF2), V::valid(idx, me as u32, bound));
            let fp = fpair::<V, L, _>(&row, r2, mask);
            fi = Vec3 {
                x: d.x.mul_add(fp, fi.x),
                y: d.y.mul_add(fp, fi.y),
                z: d.z.mul_add(fp, fi.z),
            };
            wi = r2.mul_add(fp, wi);
            if REACT {
                let fj = [
                    d.x.neg_mul_add(fp, V::gather(cap, f.x, idx)),
                    d.y.neg_mul_add(fp, V::gather(cap, f.y, idx)),
                    d.z.neg_mul_add(fp, V::gather(cap, f.z, idx)),
                ];
                fj[0].scatter(f.x, idx);
                fj[1].scatter(f.y, idx);
                fj[2].scatter(f.z, idx);
            }
            at += V::LANES;
        }
        if REACT || V::LANES == 1 {
            f.x[i] += fi.x.sum();
            f.y[i] += fi.y.sum();
            f.z[i] += fi.z.sum();
        } else {
            held[0][n_held] = fi.x;
            held[1][n_held] = fi.y;
            held[2][n_held] = fi.z;
            n_held += 1;
            if n_held == V::LANES {
                let first = i + 1 - V::LANES;
                for (out, held) in [&mut *f.x, &mut *f.y, &mut *f.z].into_iter().zip(&held) {
                    let out = &mut out[first..];
                    (V::load(cap, out) + V::sums(&held[..V::LANES])).store(out);
                }
                n_held = 0;
            }
        }
        ew = wi.wide_add(ew);
    }
    // The last bodies, fewer than `LANES`, one at a time.
    let first = list.offsets.len().saturating_sub(1) - n_held;
    for (out, held) in [&mut *f.x, &mut *f.y, &mut *f.z].into_iter().zip(&held) {
        for (o, v) in out[first..].iter_mut().zip(&held[..n_held]) {
            *o += v.sum();
        }
    }
    V::wide_dot(ew, V::splat(cap, 1.0))
}

/// `(U, W)` summed over the entries of `list` (each pair once with half
/// lists, twice with full lists), in `f64`.
#[inline(always)]
fn list_energy_body<V: Lanes, L: PairLaw, S: Rows<V>, const PERIODIC: bool>(
    cap: V::Cap,
    pos: Pos<'_>,
    list: List<'_>,
    c: &Setup,
    rows: S,
) -> (f64, f64) {
    let k = Splat::<V>::new(cap, c);
    let bound = pos.x.len() as u32;
    let (mut eu, mut ew) = (V::wide_zero(cap), V::wide_zero(cap));
    for (i, w) in list.offsets.windows(2).enumerate() {
        let me = list.first + i;
        let xi = body::<V>(cap, &pos, me);
        let rows = rows.for_body(me);
        let mut at = w[0] as usize;
        prefetch_list(list.j, at, w[1] as usize);
        while at < w[1] as usize {
            let idx = V::load_idx(cap, &list.j[at..], bound);
            let xj = [
                V::gather(cap, pos.x, idx),
                V::gather(cap, pos.y, idx),
                V::gather(cap, pos.z, idx),
            ];
            let (_, r2) = separation::<V, PERIODIC>(&xi, xj, &k);
            let row = rows.row(idx);
            let mask = r2.lt_and(row.word(CUTOFF2), V::valid(idx, me as u32, bound));
            let (u, w) = pair_energy::<V, L, _>(&row, r2, mask);
            eu = u.wide_add(eu);
            ew = w.wide_add(ew);
            at += V::LANES;
        }
    }
    let one = V::splat(cap, 1.0);
    (V::wide_dot(eu, one), V::wide_dot(ew, one))
}

/// The forces on bodies `first..first + out.x.len()` from every other body
/// of `pos` (its first `n`; the arrays are padded to whole vectors), each
/// sum over `j` in order; returns their `sum r^2 F / r` (each pair twice).
#[inline(always)]
fn full_forces_body<V: Lanes, L: PairLaw, S: Rows<V>, const PERIODIC: bool>(
    cap: V::Cap,
    pos: Pos<'_>,
    n: usize,
    first: usize,
    out: &mut Forces<'_>,
    c: &Setup,
    rows: S,
) -> f64 {
    let k = Splat::<V>::new(cap, c);
    let bound = pos.x.len() as u32;
    let zero = V::splat(cap, 0.0);
    let mut ew = V::wide_zero(cap);
    for o in 0..out.x.len() {
        let i = first + o;
        let xi = body::<V>(cap, &pos, i);
        let rows = rows.for_body(i);
        let mut fi = Vec3::splat(zero);
        let mut wi = zero;
        for j0 in (0..n).step_by(V::LANES) {
            let idx = V::iota_idx(cap, j0 as u32, bound);
            let xj = [
                V::load(cap, &pos.x[j0..]),
                V::load(cap, &pos.y[j0..]),
                V::load(cap, &pos.z[j0..]),
            ];
            let (d, r2) = separation::<V, PERIODIC>(&xi, xj, &k);
            let row = rows.row(idx);
            let mask = r2.lt_and(row.word(CUTOFF2), V::valid(idx, i as u32, n as u32));
            let fp = fpair::<V, L, _>(&row, r2, mask);
            fi = Vec3 {
                x: d.x.mul_add(fp, fi.x),
                y: d.y.mul_add(fp, fi.y),
                z: d.z.mul_add(fp, fi.z),
            };
            wi = r2.mul_add(fp, wi);
        }
        out.x[o] = fi.x.sum();
        out.y[o] = fi.y.sum();
        out.z[o] = fi.z.sum();
        ew = wi.wide_add(ew);
    }
    V::wide_dot(ew, V::splat(cap, 1.0))
}

/// `(2U, 2W)` over the i-bodies `first..first + len` against every other
/// body (each pair counted from both ends), in `f64`.
#[inline(always)]
fn full_energy_body<V: Lanes, L: PairLaw, S: Rows<V>, const PERIODIC: bool>(
    cap: V::Cap,
    pos: Pos<'_>,
    n: usize,
    first: usize,
    len: usize,
    c: &Setup,
    rows: S,
) -> (f64, f64) {
    let k = Splat::<V>::new(cap, c);
    let bound = pos.x.len() as u32;
    let (mut eu, mut ew) = (V::wide_zero(cap), V::wide_zero(cap));
    for i in first..first + len {
        let xi = body::<V>(cap, &pos, i);
        let rows = rows.for_body(i);
        for j0 in (0..n).step_by(V::LANES) {
            let idx = V::iota_idx(cap, j0 as u32, bound);
            let xj = [
                V::load(cap, &pos.x[j0..]),
                V::load(cap, &pos.y[j0..]),
                V::load(cap, &pos.z[j0..]),
            ];
            let (_, r2) = separation::<V, PERIODIC>(&xi, xj, &k);
            let row = rows.row(idx);
            let mask = r2.lt_and(row.word(CUTOFF2), V::valid(idx, i as u32, n as u32));
            let (u, w) = pair_energy::<V, L, _>(&row, r2, mask);
            eu = u.wide_add(eu);
            ew = w.wide_add(ew);
        }
    }
    let one = V::splat(cap, 1.0);
    (V::wide_dot(eu, one), V::wide_dot(ew, one))
}

/// A run of candidate neighbours: slots `start..end`, listed as `j + shift`
/// (wrapping: the window index of a half list, or the slot itself).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    /// First slot.
    pub start: usize,
    /// One past the last.
    pub end: usize,
    /// Added (wrapping) to a slot to list it.
    pub shift: u32,
    /// The image of the run's bodies that lies near the listed body, when
    /// it is one for the whole run (a periodic box with 3 or more cells per
    /// side, or open space: `x_j + image`, no rounding per pair), or `None`:
    /// the minimum image per pair.
    pub image: Option<[f32; 3]>,
}

/// Appends `j + run.shift` for every `j` of `run` but `skip` within
/// `sqrt(r2max)` of `xi` (a plain function, not a closure: closures do not
/// inherit the caller's target features, and the intrinsics would not inline).
#[inline(always)]
#[allow(
    clippy::too_many_arguments,
    reason = "the inner loop of `cell_lists_body`"
)]
fn scan<V: Lanes, const PERIODIC: bool>(
    cap: V::Cap,
    pos: Pos<'_>,
    xi: &[V; 3],
    run: Run,
    skip: usize,
    r2max: V,
    k: &Splat<V>,
    out: &mut Vec<u32>,
) {
    let mut j = run.start;
    while j < run.end {
        let xj = [
            V::load(cap, &pos.x[j..]),
            V::load(cap, &pos.y[j..]),
            V::load(cap, &pos.z[j..]),
        ];
        let (_, r2) = separation::<V, PERIODIC>(xi, xj, k);
        let idx = V::iota_idx(cap, j as u32, u32::MAX);
        let valid = V::valid(idx, skip as u32, run.end as u32);
        V::append_selected(cap, r2.lt_and(r2max, valid), j as u32, run.shift, out);
        j += V::LANES;
    }
}

/// The lists of the bodies `cell` (slots) against the candidate `runs`:
/// for each body `i`, in order, every `j` of the runs (and with `half`
/// lists, every `j > i` of `cell`, listed with `own_shift`; with full lists
/// every `j != i` of the runs) with `|x_j - x_i|^2 < r2max` (minimum image
/// if `PERIODIC`) appended to `out` as `j + shift`, tested `LANES` at a
/// time; then padding with `i + pad_shift` to a whole number of vectors,
/// and the end of `i`'s list pushed to `offsets`. `pos` holds at least
/// `LANES - 1` values after every run.
#[inline(always)]
#[allow(
    clippy::too_many_arguments,
    reason = "one call per cell, all plain data"
)]
fn cell_lists_body<V: Lanes, const PERIODIC: bool>(
    cap: V::Cap,
    pos: Pos<'_>,
    cell: std::ops::Range<usize>,
    runs: &[Run],
    half: bool,
    own_shift: u32,
    pad_shift: u32,
    r2max: f32,
    c: &Setup,
    out: &mut Vec<u32>,
    offsets: &mut Vec<u32>,
) {
    let k = Splat::<V>::new(cap, c);
    let r2max = V::splat(cap, r2max);
    for i in cell.clone() {
        let xi = body::<V>(cap, &pos, i);
        let before = out.len();
        if half {
            let own = Run {
                start: i + 1,
                end: cell.end,
                shift: own_shift,
                image: None,
            };
            scan::<V, PERIODIC>(cap, pos, &xi, own, usize::MAX, r2max, &k, out);
        }
        for &run in runs {
            let skip = if half { usize::MAX } else { i };
            match run.image {
                // d = x_j + image - x_i: the image folded into x_i.
                Some(image) => {
                    // (No closure: it would not inherit the target features.)
                    let xs = [
                        xi[0] - V::splat(cap, image[0]),
                        xi[1] - V::splat(cap, image[1]),
                        xi[2] - V::splat(cap, image[2]),
                    ];
                    scan::<V, false>(cap, pos, &xs, run, skip, r2max, &k, out)
                }
                None => scan::<V, PERIODIC>(cap, pos, &xi, run, skip, r2max, &k, out),
            }
        }
        let pad = (V::LANES - (out.len() - before) % V::LANES) % V::LANES;
        out.extend(std::iter::repeat_n((i as u32).wrapping_add(pad_shift), pad));
        offsets.push(out.len() as u32);
    }
}

/// `dst += src * h`, one rounding per element.
#[inline(always)]
fn axpy_body(dst: &mut [f32], src: &[f32], h: f32) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s.mul_add(h, *d);
    }
}

type ListForcesFn = unsafe fn(Pos<'_>, &mut Forces<'_>, List<'_>, &Setup) -> f64;
type ListEnergyFn = unsafe fn(Pos<'_>, List<'_>, &Setup) -> (f64, f64);
type CellListsFn = unsafe fn(
    Pos<'_>,
    std::ops::Range<usize>,
    &[Run],
    bool,
    u32,
    u32,
    f32,
    &Setup,
    &mut Vec<u32>,
    &mut Vec<u32>,
);
type FullForcesFn = unsafe fn(Pos<'_>, usize, usize, &mut Forces<'_>, &Setup) -> f64;
type FullEnergyFn = unsafe fn(Pos<'_>, usize, usize, usize, &Setup) -> (f64, f64);
type AxpyFn = unsafe fn(&mut [f32], &[f32], f32);
type AxisPassFn =
    unsafe fn(&mut [f32], &mut [f32], &[f32], Option<f32>, Option<f32>, Option<f32>) -> AxisPass;

/// What one axis of a chunk's integrator pass found ([`MdLoops::axis_pass`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AxisPass {
    /// Every position and velocity is finite.
    pub finite: bool,
    /// The drift moved a body more than half the box.
    pub too_far: bool,
    /// Every position lies in `[0, L)` after the drift (false for NaN).
    pub inside: bool,
}

/// `v += acc kick`, then `x += v drift` (each one rounding per element),
/// with the checks of the pass folded without short cuts, all compiled for
/// the instruction set (in the generic pass the checks were SSE code: with
/// this a WCA run at 32,000 atoms took 0.96x the CPU time, same bits).
#[inline(always)]
fn axis_pass_body(
    x: &mut [f32],
    v: &mut [f32],
    acc: &[f32],
    kick: Option<f32>,
    drift: Option<f32>,
    l: Option<f32>,
) -> AxisPass {
    if let Some(h) = kick {
        axpy_body(v, acc, h);
    }
    let (mut too_far, mut inside) = (false, true);
    if let Some(h) = drift {
        if let Some(l) = l {
            let half = 0.5 * l;
            too_far = v.iter().fold(false, |far, &v| far | ((v * h).abs() > half));
        }
        axpy_body(x, v, h);
        if let Some(l) = l {
            inside = x.iter().fold(true, |ok, &x| ok & (x >= 0.0) & (x < l));
        }
    }
    let finite = x
        .iter()
        .chain(v.iter())
        .fold(true, |ok, x| ok & x.is_finite());
    AxisPass {
        finite,
        too_far,
        inside,
    }
}

/// The pair entry points of one instruction set and one law, for open space
/// or a periodic box, one or several atom types.
///
/// Made only from a [`Supported`] proof that the CPU has the instruction set;
/// holding it is what makes calling the `unsafe` `#[target_feature]`
/// functions stored here sound.
#[derive(Clone, Copy)]
pub(crate) struct MdLoops {
    /// Bodies per vector: lists are padded to multiples of it.
    pub lanes: usize,
    support: Supported,
    half_forces: ListForcesFn,
    full_list_forces: ListForcesFn,
    list_energy: ListEnergyFn,
    cell_lists: CellListsFn,
    full_forces: FullForcesFn,
    full_energy: FullEnergyFn,
    axpy: AxpyFn,
    axis_pass: AxisPassFn,
}

impl std::fmt::Debug for MdLoops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MdLoops")
            .field("isa", &self.support.isa())
            .field("lanes", &self.lanes)
            .finish_non_exhaustive()
    }
}

/// One instruction set's entry points (see the gravity loops' macro).
macro_rules! md_entry_points {
    ($name:ident, $v:ty $(, $feat:literal)?) => {
        mod $name {
            use super::*;
            use crate::cpu::isa::Capability;
            use crate::cpu::simd::Simd;

            pub(super) const LANES: usize = <$v as Simd>::LANES;

            /// The vector type's token.
            ///
            /// # Safety
            /// The CPU has the instruction set.
            #[inline(always)]
            unsafe fn cap() -> <$v as Simd>::Cap {
                // SAFETY: the caller's contract.
                unsafe { <<$v as Simd>::Cap as Capability>::assume() }
            }

            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn list_forces<L: PairLaw, const T: bool, const P: bool, const R: bool>(
                pos: Pos<'_>,
                f: &mut Forces<'_>,
                list: List<'_>,
                c: &Setup,
            ) -> f64 {
                // SAFETY: this function requires the features.
                let cap = unsafe { cap() };
                if T {
                    let rows = Typed::<$v>::new(cap, c, pos.t);
                    list_forces_body::<$v, L, _, P, R>(cap, pos, f, list, c, rows)
                } else {
                    let rows = Uniform::<$v>::new(cap, c);
                    list_forces_body::<$v, L, _, P, R>(cap, pos, f, list, c, rows)
                }
            }

            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn list_energy<L: PairLaw, const T: bool, const P: bool>(
                pos: Pos<'_>,
                list: List<'_>,
                c: &Setup,
            ) -> (f64, f64) {
                // SAFETY: this function requires the features.
                let cap = unsafe { cap() };
                if T {
                    let rows = Typed::<$v>::new(cap, c, pos.t);
                    list_energy_body::<$v, L, _, P>(cap, pos, list, c, rows)
                } else {
                    let rows = Uniform::<$v>::new(cap, c);
                    list_energy_body::<$v, L, _, P>(cap, pos, list, c, rows)
                }
            }

            $(#[target_feature(enable = $feat)])?
            #[allow(clippy::too_many_arguments, reason = "mirrors cell_lists_body")]
            pub(super) unsafe fn cell_lists<const P: bool>(
                pos: Pos<'_>,
                cell: std::ops::Range<usize>,
                runs: &[Run],
                half: bool,
                own_shift: u32,
                pad_shift: u32,
                r2max: f32,
                c: &Setup,
                out: &mut Vec<u32>,
                offsets: &mut Vec<u32>,
            ) {
                // SAFETY: this function requires the features.
                let cap = unsafe { cap() };
                cell_lists_body::<$v, P>(
                    cap, pos, cell, runs, half, own_shift, pad_shift, r2max, c, out, offsets,
                )
            }

            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn full_forces<L: PairLaw, const T: bool, const P: bool>(
                pos: Pos<'_>,
                n: usize,
                first: usize,
                out: &mut Forces<'_>,
                c: &Setup,
            ) -> f64 {
                // SAFETY: this function requires the features.
                let cap = unsafe { cap() };
                if T {
                    let rows = Typed::<$v>::new(cap, c, pos.t);
                    full_forces_body::<$v, L, _, P>(cap, pos, n, first, out, c, rows)
                } else {
                    let rows = Uniform::<$v>::new(cap, c);
                    full_forces_body::<$v, L, _, P>(cap, pos, n, first, out, c, rows)
                }
            }

            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn full_energy<L: PairLaw, const T: bool, const P: bool>(
                pos: Pos<'_>,
                n: usize,
                first: usize,
                len: usize,
                c: &Setup,
            ) -> (f64, f64) {
                // SAFETY: this function requires the features.
                let cap = unsafe { cap() };
                if T {
                    let rows = Typed::<$v>::new(cap, c, pos.t);
                    full_energy_body::<$v, L, _, P>(cap, pos, n, first, len, c, rows)
                } else {
                    let rows = Uniform::<$v>::new(cap, c);
                    full_energy_body::<$v, L, _, P>(cap, pos, n, first, len, c, rows)
                }
            }

            // With FMA enabled `mul_add` is one instruction, not a call.
            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn axpy(dst: &mut [f32], src: &[f32], h: f32) {
                axpy_body(dst, src, h)
            }

            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn axis_pass(
                x: &mut [f32],
                v: &mut [f32],
                acc: &[f32],
                kick: Option<f32>,
                drift: Option<f32>,
                l: Option<f32>,
            ) -> AxisPass {
                axis_pass_body(x, v, acc, kick, drift, l)
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
md_entry_points!(avx512, crate::cpu::simd::F32x16, "avx512f");
#[cfg(target_arch = "x86_64")]
md_entry_points!(avx2, crate::cpu::simd::F32x8, "avx2,fma");
#[cfg(target_arch = "aarch64")]
md_entry_points!(neon, crate::cpu::simd::F32x4);
md_entry_points!(scalar, f32);

/// One of the four instances `$f::<L, typed, periodic[, R]>`.
macro_rules! pick {
    ($m:ident::$f:ident, $l:ty, $t:expr, $p:expr $(, $r:literal)?) => {
        match ($t, $p) {
            (true, true) => $m::$f::<$l, true, true $(, $r)?>,
            (true, false) => $m::$f::<$l, true, false $(, $r)?>,
            (false, true) => $m::$f::<$l, false, true $(, $r)?>,
            (false, false) => $m::$f::<$l, false, false $(, $r)?>,
        }
    };
}

macro_rules! md_loops {
    ($m:ident, $l:ty, $support:expr, $typed:expr, $periodic:expr) => {
        MdLoops {
            lanes: $m::LANES,
            support: $support,
            half_forces: pick!($m::list_forces, $l, $typed, $periodic, true),
            full_list_forces: pick!($m::list_forces, $l, $typed, $periodic, false),
            list_energy: pick!($m::list_energy, $l, $typed, $periodic),
            cell_lists: if $periodic {
                $m::cell_lists::<true>
            } else {
                $m::cell_lists::<false>
            },
            full_forces: pick!($m::full_forces, $l, $typed, $periodic),
            full_energy: pick!($m::full_energy, $l, $typed, $periodic),
            axpy: $m::axpy,
            axis_pass: $m::axis_pass,
        }
    };
}

impl MdLoops {
    /// The entry points of the instruction set `support` proves present,
    /// for law `L`, with the minimum image if `periodic`, reading each
    /// pair's types if `typed` (else the single row of one type).
    pub fn new<L: PairLaw>(support: Supported, typed: bool, periodic: bool) -> MdLoops {
        match support.isa() {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => md_loops!(avx512, L, support, typed, periodic),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => md_loops!(avx2, L, support, typed, periodic),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => md_loops!(neon, L, support, typed, periodic),
            // `Supported` is only made for instruction sets this target can
            // have: the rest cannot occur, and the scalar loops serve them.
            _ => md_loops!(scalar, L, support, typed, periodic),
        }
    }

    /// The instruction set of the loops.
    pub fn isa(&self) -> Isa {
        self.support.isa()
    }

    /// Adds the forces of `list`'s pairs to `f`: with `half` lists on both
    /// bodies of each pair (`f` indexed like `pos`, `list.first = 0`), with
    /// full lists on the i-bodies only (`f` indexed by `i`); returns the
    /// entries' `sum r^2 F / r`.
    pub fn list_forces(
        &self,
        pos: Pos<'_>,
        f: &mut Forces<'_>,
        list: List<'_>,
        half: bool,
        c: &Setup,
    ) -> f64 {
        let w = pos.x.len();
        let n_i = list.offsets.len().saturating_sub(1);
        assert!(pos.y.len() == w && pos.z.len() == w && list.first + n_i <= w);
        let need = if half { w } else { n_i };
        assert!(f.x.len() >= need && f.y.len() >= need && f.z.len() >= need);
        assert!(!half || list.first == 0);
        let run = if half {
            self.half_forces
        } else {
            self.full_list_forces
        };
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { run(pos, f, list, c) }
    }

    /// `(U, W)` summed over `list`'s entries.
    pub fn list_energy(&self, pos: Pos<'_>, list: List<'_>, c: &Setup) -> (f64, f64) {
        let w = pos.x.len();
        let n_i = list.offsets.len().saturating_sub(1);
        assert!(pos.y.len() == w && pos.z.len() == w && list.first + n_i <= w);
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { (self.list_energy)(pos, list, c) }
    }

    /// The lists of the bodies `cell` against `runs` (see `cell_lists_body`).
    #[allow(clippy::too_many_arguments, reason = "mirrors cell_lists_body")]
    pub fn cell_lists(
        &self,
        pos: Pos<'_>,
        cell: std::ops::Range<usize>,
        runs: &[Run],
        half: bool,
        own_shift: u32,
        pad_shift: u32,
        r2max: f32,
        c: &Setup,
        out: &mut Vec<u32>,
        offsets: &mut Vec<u32>,
    ) {
        let w = pos.x.len();
        assert!(pos.y.len() == w && pos.z.len() == w && cell.start <= cell.end);
        let last = runs
            .iter()
            .map(|r| r.end)
            .chain([cell.end])
            .max()
            .unwrap_or(0);
        assert!(last + self.lanes - 1 <= w && runs.iter().all(|r| r.start <= r.end));
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe {
            (self.cell_lists)(
                pos, cell, runs, half, own_shift, pad_shift, r2max, c, out, offsets,
            )
        }
    }

    /// The forces on bodies `first..first + out.x.len()` from the other
    /// `n` bodies of `pos` (padded to whole vectors); returns their
    /// `sum r^2 F / r` (each pair twice).
    pub fn full_forces(
        &self,
        pos: Pos<'_>,
        n: usize,
        first: usize,
        out: &mut Forces<'_>,
        c: &Setup,
    ) -> f64 {
        let w = pos.x.len();
        assert!(pos.y.len() == w && pos.z.len() == w && w.is_multiple_of(self.lanes) && n <= w);
        assert!(out.y.len() == out.x.len() && out.z.len() == out.x.len());
        assert!(first + out.x.len() <= n);
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { (self.full_forces)(pos, n, first, out, c) }
    }

    /// `(2U, 2W)` of the i-bodies `first..first + len` against all `n`.
    pub fn full_energy(
        &self,
        pos: Pos<'_>,
        n: usize,
        first: usize,
        len: usize,
        c: &Setup,
    ) -> (f64, f64) {
        let w = pos.x.len();
        assert!(pos.y.len() == w && pos.z.len() == w && w.is_multiple_of(self.lanes) && n <= w);
        assert!(first + len <= n);
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { (self.full_energy)(pos, n, first, len, c) }
    }

    /// One axis of a chunk in the integrator's pass: `v += acc kick`, then
    /// `x += v drift` (if any), and what the checks found ([`AxisPass`]:
    /// `too_far` and `inside` against the box length `l`, if any).
    pub fn axis_pass(
        &self,
        x: &mut [f32],
        v: &mut [f32],
        acc: &[f32],
        kick: Option<f32>,
        drift: Option<f32>,
        l: Option<f32>,
    ) -> AxisPass {
        assert!(x.len() == v.len() && (kick.is_none() || acc.len() == v.len()));
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { (self.axis_pass)(x, v, acc, kick, drift, l) }
    }

    /// `dst += src * h`, fused (equal lengths).
    pub fn axpy(&self, dst: &mut [f32], src: &[f32], h: f32) {
        assert_eq!(dst.len(), src.len());
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { (self.axpy)(dst, src, h) }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::lanes::{Lanes, MAX_LANES};

    /// Sixteen vectors' worth of lanes whose sums depend on the order of
    /// the additions (large and small values, both signs).
    fn values() -> Vec<f32> {
        (0..MAX_LANES * MAX_LANES)
            .map(|k| {
                let m = [1.0e7, 1.0, -3.3e-3, -2.5e6, 0.7][k % 5];
                m * (1.0 + (k as f32 * 0.618).fract())
            })
            .collect()
    }

    /// `(sums, sum each)` of `LANES` vectors of [`values`], as bits.
    #[inline(always)]
    fn both<V: Lanes>(cap: V::Cap) -> (Vec<u32>, Vec<u32>) {
        let x = values();
        let vs: Vec<V> = x
            .chunks(V::LANES)
            .take(V::LANES)
            .map(|c| V::load(cap, c))
            .collect();
        let mut got = vec![0.0; V::LANES];
        V::sums(&vs).store(&mut got);
        let each = vs.iter().map(|v| v.sum().to_bits()).collect();
        (got.iter().map(|v| v.to_bits()).collect(), each)
    }

    /// `gather_pair` and two gathers of a 37-word table at the segment
    /// starts `at` (every start from 0 to 35, some twice), as bits.
    #[inline(always)]
    fn pairs<V: Lanes>(cap: V::Cap) -> (Vec<u32>, Vec<u32>) {
        let table: Vec<f32> = (0..37).map(|k| 1.5 + k as f32 * 0.25).collect();
        let (mut got, mut want) = (Vec::new(), Vec::new());
        let mut out = vec![0.0; V::LANES];
        for first in (0..36).step_by(V::LANES) {
            let at: Vec<f32> = (0..V::LANES)
                .map(|k| ((first + 3 * k) % 36) as f32)
                .collect();
            let at = V::load(cap, &at);
            let (a, b) = V::gather_pair(cap, &table, at);
            let next = at + V::splat(cap, 1.0);
            for v in [a, b] {
                v.store(&mut out);
                got.extend(out.iter().map(|v| v.to_bits()));
            }
            for v in [at, next] {
                V::gather(cap, &table, v.to_idx(37)).store(&mut out);
                want.extend(out.iter().map(|v| v.to_bits()));
            }
        }
        (got, want)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn pairs_avx512() -> (Vec<u32>, Vec<u32>) {
        use crate::cpu::isa::Capability;
        // SAFETY: this function requires AVX-512F.
        pairs::<crate::cpu::simd::F32x16>(unsafe { Capability::assume() })
    }

    /// A table's segment read with one 64-bit gather per lane (AVX-512)
    /// is the two words the separate gathers read.
    #[test]
    fn gather_pair_reads_both_words_of_each_segment() {
        let (got, want) = pairs::<f32>(());
        assert_eq!(got, want);
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::isa::HasAvx512::detect().is_some() {
            // SAFETY: the CPU has AVX-512F.
            let (got, want) = unsafe { pairs_avx512() };
            assert_eq!(got, want);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn both_avx512() -> (Vec<u32>, Vec<u32>) {
        use crate::cpu::isa::Capability;
        // SAFETY: this function requires AVX-512F.
        both::<crate::cpu::simd::F32x16>(unsafe { Capability::assume() })
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn both_avx2() -> (Vec<u32>, Vec<u32>) {
        use crate::cpu::isa::Capability;
        // SAFETY: this function requires AVX2 and FMA.
        both::<crate::cpu::simd::F32x8>(unsafe { Capability::assume() })
    }

    /// The batched reduction of the full-list loop (`Lanes::sums`, a
    /// transposing tree on AVX-512) gives each body's force the bits of its
    /// own `sum()`, on every instruction set this CPU has; and the data is
    /// such that another order of the additions would show.
    #[test]
    fn sums_of_many_vectors_are_each_vectors_sum_bit_for_bit() {
        let (got, each) = both::<f32>(());
        assert_eq!(got, each);
        let x = values();
        let left_to_right = |c: &[f32]| c.iter().fold(0.0f32, |a, b| a + b).to_bits();
        #[cfg(target_arch = "x86_64")]
        {
            use crate::cpu::isa::{HasAvx2Fma, HasAvx512};
            if HasAvx512::detect().is_some() {
                // SAFETY: the CPU has AVX-512F.
                let (got, each) = unsafe { both_avx512() };
                assert_eq!(got, each, "AVX-512");
                let naive: Vec<u32> = x.chunks(16).map(left_to_right).collect();
                assert_ne!(got, naive, "the values do not tell the orders apart");
            }
            if HasAvx2Fma::detect().is_some() {
                // SAFETY: the CPU has AVX2 and FMA.
                let (got, each) = unsafe { both_avx2() };
                assert_eq!(got, each, "AVX2");
                assert_ne!(
                    got,
                    x.chunks(8).take(8).map(left_to_right).collect::<Vec<_>>()
                );
            }
        }
    }
}
