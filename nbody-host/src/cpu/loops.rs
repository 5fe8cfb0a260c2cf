//! The CPU force loops, generic over the vector type ([`Simd`]).
//! Over 600 lines on purpose: the loops share private helpers and are instantiated together per instruction set below.
//!
//! Every loop is an `#[inline(always)]` generic body instantiated inside one
//! `#[target_feature]` entry point per instruction set, so the vector
//! operations compile to AVX-512, AVX2/FMA or NEON instructions; [`ForceLoops`]
//! hands out the entry points of an instruction set only for a proof that
//! the CPU has it ([`Supported`]).
//!
//! # All pairs ([`ForceLoops::all_pairs`])
//! i-bodies in lanes (structure of arrays), `I_VECS` vectors of them with their
//! accelerations in registers, each j-body broadcast to every lane and
//! applied to all `I_VECS` vectors. The j loop runs over tiles of `j_tile`
//! bodies; for each tile, the i-groups of the block are visited in turn,
//! reloading their partial sums, so a tile stays in L1/L2 however large `N`.
//! The sum for body `i` runs over `j = 0..N` in order: deterministic.
//!
//! # Newton's third law ([`ForceLoops::tri_pair`], [`ForceLoops::tri_diag`])
//! On a tile of blocks `(I, J)`, `I != J`, every pair is computed once
//! ([`pair_interaction`](gpu_kernels::interaction::pair_interaction)
//! rearranged as [`pull_fast`]): `a_i += m_j s r` into registers, as in the
//! all-pairs loop (i-bodies in lanes, `I_VECS` vectors of them, each j-body
//! broadcast), and `a_j -= m_i s r` into a reaction vector per j-body whose
//! lanes are the different i-bodies. The reactions of a chunk of
//! [`TRI_J_CHUNK`] j-bodies stay in L1 while every i-group of `I` sweeps the
//! chunk, and are then summed across lanes once. The sweep is
//! software-pipelined (see [`sweep_pairs`]). A diagonal tile `(I, I)` does
//! the same with each i-group against the bodies after it, plus its own
//! bodies one-sided.
//! The caller runs tiles on a round-robin schedule in which no block occurs
//! twice in a round (`super::schedule`), so each tile writes its two
//! blocks' accelerations directly and the order of every sum is fixed.
//!
//! # Potential energy ([`ForceLoops::potential`], [`ForceLoops::potential_cross`])
//! `sum_{i<j} m_i m_j / sqrt(|r|^2 + eps^2)`, each pair once: i-bodies in
//! lanes, the j-bodies after them broadcast, `m_j / d` in `f32` exactly as the
//! scalar `1 / sqrt` gives it and accumulated in `f64` lanes.

use std::ops::Range;

use gpu_kernels::Vec4;
use gpu_kernels::interaction::{PointMass, Vec3, interaction, pair_interaction_guarded, potential};

use super::isa::{Isa, Supported};
use super::simd::Simd;

/// Positions and masses as a structure of arrays, padded to whole vectors
/// with massless bodies far from everything.
#[derive(Debug, Default)]
pub(crate) struct Soa {
    /// x positions.
    pub x: Vec<f32>,
    /// y positions.
    pub y: Vec<f32>,
    /// z positions.
    pub z: Vec<f32>,
    /// Masses (0 for padding).
    pub m: Vec<f32>,
    /// Masses divided by 8 (exactly, a power of two), for [`pull_fast`] and
    /// [`pair_back`], which fold the `1/2` of the Newton–Raphson step, cubed,
    /// into the mass.
    pub m_eighth: Vec<f32>,
}

/// Where padding bodies sit: far away (so `1 / d^3` underflows to 0 against
/// any body in a sane system, and a guarded pair never has `r = 0`), but with
/// `|r|^2` still finite in f32 against bodies within 1e18 of the origin.
pub(crate) const PAD_POSITION: f32 = 1.0e18;

impl Soa {
    /// Copies `pos` in and pads it to `padded` bodies.
    pub fn fill(&mut self, pos: &[Vec4], padded: usize) {
        debug_assert!(padded >= pos.len());
        for (dst, get, pad) in [
            (
                &mut self.x,
                (|p: &Vec4| p.x) as fn(&Vec4) -> f32,
                PAD_POSITION,
            ),
            (&mut self.y, |p: &Vec4| p.y, PAD_POSITION),
            (&mut self.z, |p: &Vec4| p.z, PAD_POSITION),
            (&mut self.m, |p: &Vec4| p.w, 0.0),
        ] {
            dst.clear();
            dst.extend(pos.iter().map(get));
            dst.resize(padded, pad);
        }
        self.m_eighth.clear();
        self.m_eighth.extend(self.m.iter().map(|m| m * 0.125));
    }

    /// Body `i`, one lane.
    #[inline(always)]
    fn body(&self, i: usize) -> PointMass<f32> {
        PointMass {
            x: self.x[i],
            y: self.y[i],
            z: self.z[i],
            m: self.m[i],
        }
    }

    /// Bodies `i..i + LANES`, with masses `m`, or `m / 8` if `scaled`.
    #[inline(always)]
    fn load<V: Simd>(&self, cap: V::Cap, i: usize, scaled: bool) -> PointMass<V> {
        let m = if scaled { &self.m_eighth } else { &self.m };
        PointMass {
            x: V::load(cap, &self.x[i..]),
            y: V::load(cap, &self.y[i..]),
            z: V::load(cap, &self.z[i..]),
            m: V::load(cap, &m[i..]),
        }
    }
}

/// The accelerations of one block of bodies (structure of arrays, equal lengths).
#[derive(Debug)]
pub(crate) struct AccBlock<'a> {
    /// x components.
    pub x: &'a mut [f32],
    /// y components.
    pub y: &'a mut [f32],
    /// z components.
    pub z: &'a mut [f32],
}

impl AccBlock<'_> {
    fn len(&self) -> usize {
        self.x.len()
    }

    #[inline(always)]
    fn load<V: Simd>(&self, cap: V::Cap, i: usize) -> Vec3<V> {
        Vec3 {
            x: V::load(cap, &self.x[i..]),
            y: V::load(cap, &self.y[i..]),
            z: V::load(cap, &self.z[i..]),
        }
    }

    #[inline(always)]
    fn store<V: Simd>(&mut self, i: usize, a: Vec3<V>) {
        a.x.store(&mut self.x[i..]);
        a.y.store(&mut self.y[i..]);
        a.z.store(&mut self.z[i..]);
    }
}

/// `r = x_j - x_i` and `w = y0 e = 2 / sqrt(r^2 + eps^2)` (to the refined
/// estimate's accuracy): the part of [`pull_fast`] and [`pair_front`] before
/// the masses come in.
#[inline(always)]
fn separation_and_w<V: Simd>(
    pi: &PointMass<V>,
    pj: &PointMass<V>,
    eps2: V,
    newton_three: V,
) -> (V, V, V, V) {
    let (dx, dy, dz) = (pj.x - pi.x, pj.y - pi.y, pj.z - pi.z);
    let d2 = dz.mul_add(dz, dy.mul_add(dy, dx.mul_add(dx, eps2)));
    let y0 = d2.rsqrt_estimate();
    (dx, dy, dz, y0 * (d2 * y0).neg_mul_add(y0, newton_three))
}

/// [`interaction_distinct`](gpu_kernels::interaction::interaction_distinct) rearranged for the CPU's hot loop: `acc +=
/// m_j r / (r^2 + eps^2)^(3/2)`, `r = x_j - x_i`, with `m8j = m_j / 8`.
///
/// The reciprocal square root is the hardware estimate `y0` with one
/// Newton–Raphson step, `y = y0 (3 - d2 y0^2) / 2`, as in [`Real::rsqrt`](gpu_kernels::interaction::Real::rsqrt); here
/// the `1/2`, cubed, is folded into the mass (`m_j y^3 = (m_j / 8) (y0 e)^3`,
/// `e = 3 - d2 y0^2`), which saves two multiplications and two constant
/// registers per interaction, and the `max` fix-up of [`Real::rsqrt`](gpu_kernels::interaction::Real::rsqrt) is not
/// needed because `d2 >= eps^2` is a positive normal number on this path
/// (see [`ForceLoops::new`]). Same operations as the GPU kernels up to the
/// rounding of the refined estimate; `tests/cpu_simd.rs` bounds the error
/// against the f64 oracle.
#[inline(always)]
pub(crate) fn pull_fast<V: Simd>(
    acc: Vec3<V>,
    pi: &PointMass<V>,
    pj: &PointMass<V>,
    eps2: V,
    newton_three: V,
) -> Vec3<V> {
    let (dx, dy, dz, w) = separation_and_w(pi, pj, eps2, newton_three);
    let f = (pj.m * w) * (w * w);
    Vec3 {
        x: dx.mul_add(f, acc.x),
        y: dy.mul_add(f, acc.y),
        z: dz.mul_add(f, acc.z),
    }
}

/// Adds to `acc` (block starting at body `i0`, length a multiple of
/// `I_VECS * LANES`) the pull of bodies `js` of `soa`, in order, in tiles of `j_tile`.
#[inline(always)]
fn pull_block<V: Simd, const I_VECS: usize, const GUARD: bool>(
    soa: &Soa,
    js: Range<usize>,
    i0: usize,
    acc: &mut AccBlock<'_>,
    eps2: f32,
    j_tile: usize,
    cap: V::Cap,
) {
    let lanes = V::LANES;
    let group = lanes * I_VECS;
    let len = acc.len();
    debug_assert_eq!(len % group, 0);
    let eps2 = V::splat(cap, eps2);
    let newton_three = V::splat(cap, 3.0);
    let mut start = js.start;
    while start < js.end {
        let end = start.saturating_add(j_tile.max(1)).min(js.end);
        let tile = BodyRun::of(soa, start, end - start, !GUARD);
        for g in (0..len).step_by(group) {
            let (pi, mut a) = load_group::<V, I_VECS>(soa, i0 + g, acc, g, false, cap);
            pull_all::<V, I_VECS, GUARD>(&tile, &pi, &mut a, eps2, newton_three);
            for (b, &ab) in a.iter().enumerate() {
                acc.store(g + b * lanes, ab);
            }
        }
        start = end;
    }
}

/// j-bodies per chunk of a triangle tile: the chunk's reaction vectors
/// (`3 x LANES` floats per body, 24 KiB at 16 lanes) stay in L1 while every
/// i-group of the tile sweeps over it.
const TRI_J_CHUNK: usize = 128;

/// The length of the next chunk of `left` j-bodies: the chunks of a run
/// are equal up to one body, none longer than [`TRI_J_CHUNK`] (a short last
/// chunk would pay the i-groups' loads and the pipeline's fill for little work).
fn chunk_len(left: usize) -> usize {
    left.div_ceil(left.div_ceil(TRI_J_CHUNK).max(1))
}

/// The separation of a pair and `w^3 = (y0 e)^3` (see [`pull_fast`]): the
/// first half of a pair interaction, computed one body ahead of the second
/// half ([`pair_back`]) in [`sweep_pairs`].
#[derive(Clone, Copy)]
struct PairFront<V> {
    dx: V,
    dy: V,
    dz: V,
    w3: V,
}

#[inline(always)]
fn pair_front<V: Simd>(
    pi: &PointMass<V>,
    pj: &PointMass<V>,
    eps2: V,
    newton_three: V,
) -> PairFront<V> {
    let (dx, dy, dz, w) = separation_and_w(pi, pj, eps2, newton_three);
    PairFront {
        dx,
        dy,
        dz,
        w3: w * (w * w),
    }
}

/// The second half of a pair interaction: `a_i += m_j w^3 r`,
/// `a_j -= m_i w^3 r` (masses divided by 8, as in [`pull_fast`]).
#[inline(always)]
fn pair_back<V: Simd>(
    acc_i: Vec3<V>,
    acc_j: Vec3<V>,
    f: &PairFront<V>,
    mi: V,
    mj: V,
) -> (Vec3<V>, Vec3<V>) {
    let (fi, fj) = (mj * f.w3, mi * f.w3);
    (
        Vec3 {
            x: f.dx.mul_add(fi, acc_i.x),
            y: f.dy.mul_add(fi, acc_i.y),
            z: f.dz.mul_add(fi, acc_i.z),
        },
        Vec3 {
            x: f.dx.neg_mul_add(fj, acc_j.x),
            y: f.dy.neg_mul_add(fj, acc_j.y),
            z: f.dz.neg_mul_add(fj, acc_j.z),
        },
    )
}

/// Positions and masses (or masses / 8) of a run of bodies, equal lengths.
#[derive(Clone, Copy)]
struct BodyRun<'a> {
    x: &'a [f32],
    y: &'a [f32],
    z: &'a [f32],
    m: &'a [f32],
}

impl<'a> BodyRun<'a> {
    /// Bodies `j0..j0 + len` of `soa`, with masses `m`, or `m / 8` if `scaled`.
    #[inline(always)]
    fn of(soa: &'a Soa, j0: usize, len: usize, scaled: bool) -> BodyRun<'a> {
        let m = if scaled { &soa.m_eighth } else { &soa.m };
        BodyRun {
            x: &soa.x[j0..j0 + len],
            y: &soa.y[j0..j0 + len],
            z: &soa.z[j0..j0 + len],
            m: &m[j0..j0 + len],
        }
    }

    /// Body `k` broadcast to every lane.
    #[inline(always)]
    fn broadcast<V: Simd>(&self, cap: V::Cap, k: usize) -> PointMass<V> {
        PointMass {
            x: V::splat(cap, self.x[k]),
            y: V::splat(cap, self.y[k]),
            z: V::splat(cap, self.z[k]),
            m: V::splat(cap, self.m[k]),
        }
    }
}

/// Every pair between the `I_VECS` i-vectors `pi` (accelerations `a`, in
/// registers) and the bodies `j0..j0 + react.len()` of `soa`, each broadcast
/// to every lane: `a_i` gains the pull of `j`, and `react[k]` (for body
/// `j0 + k`) the pull of the i-bodies on `j` with one i-body per lane, to be
/// summed across lanes by the caller.
///
/// The unguarded form is software-pipelined: the separation and `w^3` of
/// body `j + 1` are computed before the accumulation of body `j`, so the
/// long dependency chain of one pair (subtract, `r^2`, estimate, Newton step,
/// cube: about 35 cycles) overlaps the accumulation of the previous one and
/// the out-of-order window need not hold several whole pairs.
#[inline(always)]
fn sweep_pairs<V: Simd, const I_VECS: usize, const GUARD: bool>(
    soa: &Soa,
    j0: usize,
    pi: &[PointMass<V>; I_VECS],
    a: &mut [Vec3<V>; I_VECS],
    react: &mut [Vec3<V>],
    eps2: V,
    newton_three: V,
) {
    let len = react.len();
    if len == 0 {
        return;
    }
    let cap = eps2.cap();
    let bodies = BodyRun::of(soa, j0, len, !GUARD);
    if GUARD {
        for (k, r) in react.iter_mut().enumerate() {
            let pj = bodies.broadcast::<V>(cap, k);
            for b in 0..I_VECS {
                (a[b], *r) = pair_interaction_guarded(a[b], *r, &pi[b], &pj, eps2);
            }
        }
        return;
    }
    let zero = V::splat(cap, 0.0);
    let mut pj = bodies.broadcast::<V>(cap, 0);
    let mut front = [PairFront {
        dx: zero,
        dy: zero,
        dz: zero,
        w3: zero,
    }; I_VECS];
    for b in 0..I_VECS {
        front[b] = pair_front(&pi[b], &pj, eps2, newton_three);
    }
    let (last, before_last) = react.split_last_mut().expect("react is not empty");
    for (k, r) in before_last.iter_mut().enumerate() {
        let next_pj = bodies.broadcast::<V>(cap, k + 1);
        let mut next = front;
        for b in 0..I_VECS {
            next[b] = pair_front(&pi[b], &next_pj, eps2, newton_three);
        }
        for b in 0..I_VECS {
            (a[b], *r) = pair_back(a[b], *r, &front[b], pi[b].m, pj.m);
        }
        front = next;
        pj = next_pj;
    }
    for b in 0..I_VECS {
        (a[b], *last) = pair_back(a[b], *last, &front[b], pi[b].m, pj.m);
    }
}

/// Adds `react[k]` (already the reaction, `-m_i s r`, from the sweeps),
/// summed across lanes, to body `at + k` of `acc`.
#[inline(always)]
fn add_reactions<V: Simd>(acc: &mut AccBlock<'_>, at: usize, react: &[Vec3<V>]) {
    for (k, r) in react.iter().enumerate() {
        acc.x[at + k] += r.x.sum();
        acc.y[at + k] += r.y.sum();
        acc.z[at + k] += r.z.sum();
    }
}

/// The i-group of `I_VECS` vectors at body `i` of `soa` and their accelerations
/// at `g` of `acc`.
#[inline(always)]
fn load_group<V: Simd, const I_VECS: usize>(
    soa: &Soa,
    i: usize,
    acc: &AccBlock<'_>,
    g: usize,
    scaled: bool,
    cap: V::Cap,
) -> ([PointMass<V>; I_VECS], [Vec3<V>; I_VECS]) {
    let zero = V::splat(cap, 0.0);
    // Plain loops, not `array::from_fn`: a closure would not inherit the
    // caller's target features, and the loads would not inline.
    let mut pi = [PointMass {
        x: zero,
        y: zero,
        z: zero,
        m: zero,
    }; I_VECS];
    let mut a = [Vec3::splat(zero); I_VECS];
    for b in 0..I_VECS {
        pi[b] = soa.load(cap, i + b * V::LANES, scaled);
        a[b] = acc.load(cap, g + b * V::LANES);
    }
    (pi, a)
}

/// Adds to the accelerations `a` of the `I_VECS` i-vectors `pi` the pull of
/// every body of `bodies`, in order, each broadcast to every lane.
#[inline(always)]
fn pull_all<V: Simd, const I_VECS: usize, const GUARD: bool>(
    bodies: &BodyRun<'_>,
    pi: &[PointMass<V>; I_VECS],
    a: &mut [Vec3<V>; I_VECS],
    eps2: V,
    newton_three: V,
) {
    let cap = eps2.cap();
    for k in 0..bodies.x.len() {
        let pj = bodies.broadcast::<V>(cap, k);
        for b in 0..I_VECS {
            a[b] = if GUARD {
                interaction(a[b], &pi[b], &pj, eps2)
            } else {
                pull_fast(a[b], &pi[b], &pj, eps2, newton_three)
            };
        }
    }
}

/// Every pair between block `I` (bodies `i0..`, accelerations `acc_i`, a
/// multiple of `I_VECS * LANES` long) and block `J` (bodies `j0..`, `acc_j`),
/// once each: i-bodies in lanes, `I_VECS` vectors of them in registers, j-bodies
/// broadcast, [`TRI_J_CHUNK`] at a time ([`sweep_pairs`]); the reactions on
/// a chunk are summed across lanes once, after every i-group has swept it.
#[inline(always)]
fn pair_tile<V: Simd, const I_VECS: usize, const GUARD: bool>(
    soa: &Soa,
    i0: usize,
    acc_i: &mut AccBlock<'_>,
    j0: usize,
    acc_j: &mut AccBlock<'_>,
    eps2: f32,
    cap: V::Cap,
) {
    let group = V::LANES * I_VECS;
    debug_assert_eq!(acc_i.len() % group, 0);
    let (eps2, newton_three) = (V::splat(cap, eps2), V::splat(cap, 3.0));
    let zero = Vec3::splat(V::splat(cap, 0.0));
    let mut react = [zero; TRI_J_CHUNK];
    let mut c = 0;
    while c < acc_j.len() {
        let react = &mut react[..chunk_len(acc_j.len() - c)];
        react.fill(zero);
        for g in (0..acc_i.len()).step_by(group) {
            let (pi, mut a) = load_group::<V, I_VECS>(soa, i0 + g, acc_i, g, !GUARD, cap);
            sweep_pairs::<V, I_VECS, GUARD>(soa, j0 + c, &pi, &mut a, react, eps2, newton_three);
            for (b, &ab) in a.iter().enumerate() {
                acc_i.store(g + b * V::LANES, ab);
            }
        }
        add_reactions(acc_j, c, react);
        c += react.len();
    }
}

/// Every pair within the block of bodies `i0..` (accelerations `acc`, a
/// multiple of `I_VECS * LANES` long) once, against its first `nj` bodies (the
/// rest are padding): each i-group takes the pairs with the bodies after it
/// as in [`pair_tile`], and the pull of its own bodies one-sided.
#[inline(always)]
fn diag_tile<V: Simd, const I_VECS: usize, const GUARD: bool>(
    soa: &Soa,
    i0: usize,
    acc: &mut AccBlock<'_>,
    nj: usize,
    eps2: f32,
    cap: V::Cap,
) {
    let group = V::LANES * I_VECS;
    debug_assert_eq!(acc.len() % group, 0);
    let nj = nj.min(acc.len());
    let (eps2, newton_three) = (V::splat(cap, eps2), V::splat(cap, 3.0));
    let zero = Vec3::splat(V::splat(cap, 0.0));
    let mut react = [zero; TRI_J_CHUNK];
    let mut c = 0;
    while c < nj {
        let end = c + chunk_len(nj - c);
        let react = &mut react[..end - c];
        react.fill(zero);
        for g in (0..acc.len()).step_by(group).take_while(|&g| g < end) {
            let (pi, mut a) = load_group::<V, I_VECS>(soa, i0 + g, acc, g, !GUARD, cap);
            // The group's own bodies within the chunk (none if the group
            // ends before it): one-sided.
            let lo = g.max(c);
            let hi = (g + group).min(end).max(lo);
            let own = BodyRun::of(soa, i0 + lo, hi - lo, !GUARD);
            pull_all::<V, I_VECS, GUARD>(&own, &pi, &mut a, eps2, newton_three);
            // The bodies after the group: each pair once.
            let after = (g + group).max(c).min(end);
            sweep_pairs::<V, I_VECS, GUARD>(
                soa,
                i0 + after,
                &pi,
                &mut a,
                &mut react[after - c..],
                eps2,
                newton_three,
            );
            for (b, &ab) in a.iter().enumerate() {
                acc.store(g + b * V::LANES, ab);
            }
        }
        add_reactions(acc, c, react);
        c = end;
    }
}

/// `sum_i m_i sum_{j > i} m_j / sqrt(|r_ij|^2 + eps^2)` over the i-bodies
/// `i0..i0 + len` (`len` a multiple of `LANES`) and the j-bodies after them
/// up to `n`, in `f64`: each pair once.
///
/// Each term `m_j / d` is the `f32` value of the scalar
/// [`potential`](gpu_kernels::interaction::potential) (same `d^2`, a
/// correctly rounded `1 / sqrt`), converted to `f64` and summed there; a
/// vector's own pairs are taken one lane pair at a time.
#[inline(always)]
fn potential_block<V: Simd>(
    soa: &Soa,
    i0: usize,
    len: usize,
    n: usize,
    eps2: f32,
    cap: V::Cap,
) -> f64 {
    let lanes = V::LANES;
    debug_assert_eq!(len % lanes, 0);
    let eps2v = V::splat(cap, eps2);
    let mut total = 0.0f64;
    for i in (i0..(i0 + len).min(n)).step_by(lanes) {
        let pi = soa.load::<V>(cap, i, false);
        let after = (i + lanes).min(n);
        let js = BodyRun::of(soa, after, n - after, false);
        total += potential_row(&pi, &js, eps2v);
        // The pairs within the vector.
        for a in i..after {
            let pa = soa.body(a);
            let phi: f64 = (a + 1..after)
                .map(|b| potential(&pa, &soa.body(b), eps2) as f64)
                .sum();
            total += pa.m as f64 * phi;
        }
    }
    total
}

/// `sum_i m_i sum_{j in js} m_j / sqrt(|r_ij|^2 + eps^2)` over the i-bodies
/// `i0..i0 + len` (`len` a multiple of `LANES`) and every j-body of `js`
/// (bodies of another block: no pair is skipped), in `f64`; each term as in
/// [`potential_block`]. `js` holds no padding (a padding i-body has mass 0
/// and lies far from every j-body, so its terms are exactly 0).
#[inline(always)]
fn potential_cross_block<V: Simd>(
    soa: &Soa,
    i0: usize,
    len: usize,
    js: Range<usize>,
    eps2: f32,
    cap: V::Cap,
) -> f64 {
    debug_assert_eq!(len % V::LANES, 0);
    let eps2v = V::splat(cap, eps2);
    let bodies = BodyRun::of(soa, js.start, js.len(), false);
    (i0..i0 + len)
        .step_by(V::LANES)
        .map(|i| potential_row(&soa.load::<V>(cap, i, false), &bodies, eps2v))
        .sum()
}

/// `sum_lanes m_i sum_{j in js} m_j / sqrt(|r_ij|^2 + eps^2)` for the i-vector
/// `pi` (one body per lane): `m_j / d` in `f32` as the scalar `1 / sqrt`
/// gives it, accumulated in `f64` lanes.
#[inline(always)]
fn potential_row<V: Simd>(pi: &PointMass<V>, js: &BodyRun<'_>, eps2: V) -> f64 {
    let cap = eps2.cap();
    let mut acc = V::wide_zero(cap);
    for k in 0..js.x.len() {
        let pj = js.broadcast::<V>(cap, k);
        let (dx, dy, dz) = (pj.x - pi.x, pj.y - pi.y, pj.z - pi.z);
        let d2 = dz.mul_add(dz, dy.mul_add(dy, dx.mul_add(dx, eps2)));
        acc = (pj.m * d2.recip_sqrt()).wide_add(acc);
    }
    V::wide_dot(acc, pi.m)
}

/// `dst.xyz += src.xyz * dt` with one rounding per component (as the GPU's
/// `fma.rn`): the kick and the drift.
#[inline(always)]
fn axpy_body(dst: &mut [Vec4], src: &[Vec4], dt: f32) {
    for (d, s) in dst.iter_mut().zip(src) {
        d.x = s.x.mul_add(dt, d.x);
        d.y = s.y.mul_add(dt, d.y);
        d.z = s.z.mul_add(dt, d.z);
    }
}

/// The entry points of one instruction set, for one guard setting.
///
/// Made only from a [`Supported`] proof that the CPU has the instruction set
/// ([`ForceLoops::new`]); holding it is what makes calling the `unsafe`
/// `#[target_feature]` functions stored here sound.
#[derive(Clone, Copy)]
pub(crate) struct ForceLoops {
    /// Bodies per all-pairs i-group (`I_VECS * LANES`): block lengths are multiples of it.
    pub all_pairs_group: usize,
    /// Bodies per triangle i-group: triangle block lengths are multiples of it.
    pub tri_group: usize,
    /// Bodies per vector.
    pub lanes: usize,
    support: Supported,
    all_pairs: AllPairsFn,
    tri_pair: TriPairFn,
    tri_diag: TriDiagFn,
    potential: PotentialFn,
    potential_cross: PotentialCrossFn,
    axpy: AxpyFn,
}

type AllPairsFn = unsafe fn(&Soa, Range<usize>, usize, &mut AccBlock<'_>, f32, usize);
type TriPairFn = unsafe fn(&Soa, usize, &mut AccBlock<'_>, usize, &mut AccBlock<'_>, f32);
type TriDiagFn = unsafe fn(&Soa, usize, &mut AccBlock<'_>, usize, f32);
type PotentialFn = unsafe fn(&Soa, usize, usize, usize, f32) -> f64;
type PotentialCrossFn = unsafe fn(&Soa, usize, usize, Range<usize>, f32) -> f64;
type AxpyFn = unsafe fn(&mut [Vec4], &[Vec4], f32);

impl std::fmt::Debug for ForceLoops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForceLoops")
            .field("isa", &self.support.isa())
            .field("all_pairs_group", &self.all_pairs_group)
            .field("tri_group", &self.tri_group)
            .finish_non_exhaustive()
    }
}

/// One instruction set's entry points: vector type `$v`, `$ib` i-vectors per
/// group in the all-pairs loop, `$tb` in the triangle tile, and the target
/// features `$feat` enabled (none for the scalar fallback). Each mints its
/// vector type's capability token: its own contract (`#[target_feature]`,
/// an `unsafe fn`) already requires the features.
macro_rules! isa_entry_points {
    ($name:ident, $v:ty, $ib:literal, $tb:literal $(, $feat:literal)?) => {
        mod $name {
            use super::*;
            use crate::cpu::isa::Capability;

            pub(super) const ALL_PAIRS_I_VECS: usize = $ib;
            pub(super) const TRI_I_VECS: usize = $tb;
            pub(super) const LANES: usize = <$v as Simd>::LANES;

            /// The vector type's token.
            ///
            /// # Safety
            /// The CPU has the instruction set (`$feat`).
            #[inline(always)]
            unsafe fn cap() -> <$v as Simd>::Cap {
                // SAFETY: the caller's contract.
                unsafe { <<$v as Simd>::Cap as Capability>::assume() }
            }

            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn all_pairs<const GUARD: bool>(
                soa: &Soa,
                js: Range<usize>,
                i0: usize,
                acc: &mut AccBlock<'_>,
                eps2: f32,
                j_tile: usize,
            ) {
                // SAFETY: this function requires the features.
                let cap = unsafe { cap() };
                pull_block::<$v, $ib, GUARD>(soa, js, i0, acc, eps2, j_tile, cap)
            }

            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn tri_pair<const GUARD: bool>(
                soa: &Soa,
                i0: usize,
                acc_i: &mut AccBlock<'_>,
                j0: usize,
                acc_j: &mut AccBlock<'_>,
                eps2: f32,
            ) {
                // SAFETY: this function requires the features.
                let cap = unsafe { cap() };
                pair_tile::<$v, $tb, GUARD>(soa, i0, acc_i, j0, acc_j, eps2, cap)
            }

            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn tri_diag<const GUARD: bool>(
                soa: &Soa,
                i0: usize,
                acc: &mut AccBlock<'_>,
                nj: usize,
                eps2: f32,
            ) {
                // SAFETY: this function requires the features.
                let cap = unsafe { cap() };
                diag_tile::<$v, $tb, GUARD>(soa, i0, acc, nj, eps2, cap)
            }

            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn potential(
                soa: &Soa,
                i0: usize,
                len: usize,
                n: usize,
                eps2: f32,
            ) -> f64 {
                // SAFETY: this function requires the features.
                let cap = unsafe { cap() };
                potential_block::<$v>(soa, i0, len, n, eps2, cap)
            }

            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn potential_cross(
                soa: &Soa,
                i0: usize,
                len: usize,
                js: Range<usize>,
                eps2: f32,
            ) -> f64 {
                // SAFETY: this function requires the features.
                let cap = unsafe { cap() };
                potential_cross_block::<$v>(soa, i0, len, js, eps2, cap)
            }

            // With FMA enabled `mul_add` is one instruction, not a call.
            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn axpy(dst: &mut [Vec4], src: &[Vec4], dt: f32) {
                axpy_body(dst, src, dt)
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
isa_entry_points!(avx512, super::super::simd::F32x16, 2, 2, "avx512f");
#[cfg(target_arch = "x86_64")]
isa_entry_points!(avx2, super::super::simd::F32x8, 2, 1, "avx2,fma");
// NEON is part of the aarch64 base architecture: no target features needed.
#[cfg(target_arch = "aarch64")]
isa_entry_points!(neon, super::super::simd::F32x4, 2, 1);
// The scalar fallback: `f32` lanes, no target features.
isa_entry_points!(scalar, f32, 1, 1);

macro_rules! force_loops {
    ($m:ident, $support:expr, $guard:expr) => {
        ForceLoops {
            all_pairs_group: $m::LANES * $m::ALL_PAIRS_I_VECS,
            tri_group: $m::LANES * $m::TRI_I_VECS,
            lanes: $m::LANES,
            support: $support,
            all_pairs: if $guard {
                $m::all_pairs::<true>
            } else {
                $m::all_pairs::<false>
            },
            tri_pair: if $guard {
                $m::tri_pair::<true>
            } else {
                $m::tri_pair::<false>
            },
            tri_diag: if $guard {
                $m::tri_diag::<true>
            } else {
                $m::tri_diag::<false>
            },
            potential: $m::potential,
            potential_cross: $m::potential_cross,
            axpy: $m::axpy,
        }
    };
}

impl ForceLoops {
    /// The entry points of the instruction set `support` proves present.
    ///
    /// `guard`: use the guarded interaction (needed when `eps = 0`, or when
    /// `max m / eps^3` might overflow); without it the loops use the
    /// unguarded forms, equal wherever those are finite.
    pub fn new(support: Supported, guard: bool) -> ForceLoops {
        match support.isa() {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => force_loops!(avx512, support, guard),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => force_loops!(avx2, support, guard),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => force_loops!(neon, support, guard),
            // `Supported` is only made for instruction sets this target can
            // have: the rest cannot occur, and the scalar loops serve them.
            _ => force_loops!(scalar, support, guard),
        }
    }

    /// The instruction set of the loops.
    pub fn isa(&self) -> Isa {
        self.support.isa()
    }

    /// Adds to `acc` (bodies `i0..i0 + acc.len()`, a multiple of
    /// [`all_pairs_group`](Self::all_pairs_group), within `soa`) the pull
    /// (without `G`) of bodies `js` of `soa`, in order, `j_tile` at a time.
    pub fn all_pairs(
        &self,
        soa: &Soa,
        js: Range<usize>,
        i0: usize,
        acc: &mut AccBlock<'_>,
        eps2: f32,
        j_tile: usize,
    ) {
        assert!(acc.len().is_multiple_of(self.all_pairs_group) && i0 + acc.len() <= soa.x.len());
        assert!(js.start <= js.end && js.end <= soa.x.len());
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { (self.all_pairs)(soa, js, i0, acc, eps2, j_tile) }
    }

    /// Every pair between the blocks at `i0` and `j0` once, both halves.
    /// Block lengths are multiples of [`tri_group`](Self::tri_group).
    pub fn tri_pair(
        &self,
        soa: &Soa,
        i0: usize,
        acc_i: &mut AccBlock<'_>,
        j0: usize,
        acc_j: &mut AccBlock<'_>,
        eps2: f32,
    ) {
        assert!(acc_i.len().is_multiple_of(self.tri_group) && i0 + acc_i.len() <= soa.x.len());
        assert!(acc_j.len().is_multiple_of(self.tri_group) && j0 + acc_j.len() <= soa.x.len());
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { (self.tri_pair)(soa, i0, acc_i, j0, acc_j, eps2) }
    }

    /// Every pair within the block at `i0` once, against its first `nj`
    /// bodies (the others are padding). The block length is a multiple of
    /// [`tri_group`](Self::tri_group).
    pub fn tri_diag(&self, soa: &Soa, i0: usize, acc: &mut AccBlock<'_>, nj: usize, eps2: f32) {
        assert!(acc.len().is_multiple_of(self.tri_group) && i0 + acc.len() <= soa.x.len());
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { (self.tri_diag)(soa, i0, acc, nj, eps2) }
    }

    /// `sum_i m_i sum_{j > i, j < n} m_j / sqrt(|r_ij|^2 + eps^2)` over the
    /// i-bodies `i0..i0 + len` (`len` a multiple of [`lanes`](Self::lanes),
    /// within `soa`), in `f64`.
    pub fn potential(&self, soa: &Soa, i0: usize, len: usize, n: usize, eps2: f32) -> f64 {
        assert!(len.is_multiple_of(self.lanes) && i0 + len <= soa.x.len() && n <= soa.x.len());
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { (self.potential)(soa, i0, len, n, eps2) }
    }

    /// `sum_i m_i sum_{j in js} m_j / sqrt(|r_ij|^2 + eps^2)` over the
    /// i-bodies `i0..i0 + len` (`len` a multiple of [`lanes`](Self::lanes))
    /// and all j-bodies `js` (another block's, no padding), in `f64`.
    pub fn potential_cross(
        &self,
        soa: &Soa,
        i0: usize,
        len: usize,
        js: Range<usize>,
        eps2: f32,
    ) -> f64 {
        assert!(len.is_multiple_of(self.lanes) && i0 + len <= soa.x.len());
        assert!(js.start <= js.end && js.end <= soa.x.len());
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { (self.potential_cross)(soa, i0, len, js, eps2) }
    }

    /// `dst.xyz += src.xyz * dt`, fused (lengths equal).
    pub fn axpy(&self, dst: &mut [Vec4], src: &[Vec4], dt: f32) {
        assert_eq!(dst.len(), src.len());
        // SAFETY: `self.support` proves the CPU has the instruction set.
        unsafe { (self.axpy)(dst, src, dt) }
    }
}
