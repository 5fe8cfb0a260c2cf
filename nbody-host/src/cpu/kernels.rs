//! The CPU force loops, generic over the vector type ([`Simd`]).
//!
//! Every loop is an `#[inline(always)]` generic body instantiated inside one
//! `#[target_feature]` entry point per instruction set, so the vector
//! operations compile to AVX-512 or AVX2/FMA instructions; [`KernelSet`]
//! hands out the entry points of an instruction set only after checking
//! that the CPU has it.
//!
//! # All pairs ([`KernelSet::all_pairs`])
//! i-bodies in lanes (structure of arrays), `IB` vectors of them with their
//! accelerations in registers, each j-body broadcast to every lane and
//! applied to all `IB` vectors. The j loop runs over tiles of `j_tile`
//! bodies; for each tile, the i-groups of the block are visited in turn,
//! reloading their partial sums, so a tile stays in L1/L2 however large `N`.
//! The sum for body `i` runs over `j = 0..N` in order: deterministic.
//!
//! # Newton's third law ([`KernelSet::tri_pair`], [`KernelSet::tri_diag`])
//! On a tile of blocks `(I, J)`, `I != J`, every pair is computed once with
//! [`pair_interaction`](gpu_kernels::interaction::pair_interaction): `a_i += m_j s r` into registers, `a_j -= m_i s r`
//! into a reaction vector. To keep the reactions in lanes too (no horizontal
//! sums), a j-vector is used in its `LANES` rotations: at step `s` lane `t`
//! pairs i-body `t` with j-body `(t + s) mod LANES`; the reactions of
//! rotation `s` accumulate in their own vector (in L1) over the whole block
//! `I`, and are rotated back and summed once per j-vector. Diagonal tiles
//! `(I, I)` are done one-sided, all pairs (a fraction `B / N` of the work).
//! The caller runs tiles on a round-robin schedule in which no block occurs
//! twice in a round (see `super::CpuEngine`), so each tile writes its two
//! blocks' accelerations directly and the order of every sum is fixed.

use std::ops::Range;

use gpu_kernels::Vec4;
use gpu_kernels::interaction::{PointMass, Vec3, interaction, pair_interaction_guarded};

use super::Isa;
use super::simd::Simd;

/// Largest vector width.
const MAX_LANES: usize = 16;

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
    /// [`pair_fast`], which fold the `1/2` of the Newton–Raphson step, cubed,
    /// into the mass.
    pub m8: Vec<f32>,
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
        self.m8.clear();
        self.m8.extend(self.m.iter().map(|m| m * 0.125));
    }

    /// Bodies `i..i + LANES`, with masses `m`, or `m / 8` if `scaled`.
    #[inline(always)]
    fn load<V: Simd>(&self, i: usize, scaled: bool) -> PointMass<V> {
        PointMass {
            x: V::load(&self.x[i..]),
            y: V::load(&self.y[i..]),
            z: V::load(&self.z[i..]),
            m: V::load(if scaled { &self.m8[i..] } else { &self.m[i..] }),
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
    fn load<V: Simd>(&self, i: usize) -> Vec3<V> {
        Vec3 {
            x: V::load(&self.x[i..]),
            y: V::load(&self.y[i..]),
            z: V::load(&self.z[i..]),
        }
    }

    #[inline(always)]
    fn store<V: Simd>(&mut self, i: usize, a: Vec3<V>) {
        a.x.store(&mut self.x[i..]);
        a.y.store(&mut self.y[i..]);
        a.z.store(&mut self.z[i..]);
    }
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
/// (see [`KernelSet::new`]). Same operations as the GPU kernels up to the
/// rounding of the refined estimate; `tests/cpu_simd.rs` bounds the error
/// against the f64 oracle.
#[inline(always)]
pub(crate) fn pull_fast<V: Simd>(
    acc: Vec3<V>,
    pi: &PointMass<V>,
    pj: &PointMass<V>,
    eps2: V,
    three: V,
) -> Vec3<V> {
    let (dx, dy, dz) = (pj.x - pi.x, pj.y - pi.y, pj.z - pi.z);
    let d2 = dz.mul_add(dz, dy.mul_add(dy, dx.mul_add(dx, eps2)));
    let y0 = d2.rsqrt_estimate();
    let w = y0 * (d2 * y0).neg_mul_add(y0, three);
    let f = (pj.m * w) * (w * w);
    Vec3 {
        x: dx.mul_add(f, acc.x),
        y: dy.mul_add(f, acc.y),
        z: dz.mul_add(f, acc.z),
    }
}

/// [`pair_interaction`](gpu_kernels::interaction::pair_interaction) rearranged as [`pull_fast`]: masses of both bodies
/// divided by 8, `a_i += m_j s r`, `a_j -= m_i s r`.
#[inline(always)]
fn pair_fast<V: Simd>(
    acc_i: Vec3<V>,
    acc_j: Vec3<V>,
    pi: &PointMass<V>,
    pj: &PointMass<V>,
    eps2: V,
    three: V,
) -> (Vec3<V>, Vec3<V>) {
    let (dx, dy, dz) = (pj.x - pi.x, pj.y - pi.y, pj.z - pi.z);
    let d2 = dz.mul_add(dz, dy.mul_add(dy, dx.mul_add(dx, eps2)));
    let y0 = d2.rsqrt_estimate();
    let w = y0 * (d2 * y0).neg_mul_add(y0, three);
    let w3 = w * (w * w);
    let (fi, fj) = (pj.m * w3, pi.m * w3);
    (
        Vec3 {
            x: dx.mul_add(fi, acc_i.x),
            y: dy.mul_add(fi, acc_i.y),
            z: dz.mul_add(fi, acc_i.z),
        },
        Vec3 {
            x: dx.neg_mul_add(fj, acc_j.x),
            y: dy.neg_mul_add(fj, acc_j.y),
            z: dz.neg_mul_add(fj, acc_j.z),
        },
    )
}

/// Adds to `acc` (block starting at body `i0`, length a multiple of
/// `IB * LANES`) the pull of bodies `js` of `soa`, in order, in tiles of `j_tile`.
#[inline(always)]
fn one_sided<V: Simd, const IB: usize, const GUARD: bool>(
    soa: &Soa,
    js: Range<usize>,
    i0: usize,
    acc: &mut AccBlock<'_>,
    eps2: f32,
    j_tile: usize,
) {
    let lanes = V::LANES;
    let group = lanes * IB;
    let len = acc.len();
    debug_assert_eq!(len % group, 0);
    let eps2 = V::splat(eps2);
    let three = V::splat(3.0);
    let zero = V::splat(0.0);
    let masses = if GUARD { &soa.m } else { &soa.m8 };
    let mut start = js.start;
    while start < js.end {
        let end = start.saturating_add(j_tile.max(1)).min(js.end);
        let (tx, ty, tz, tm) = (
            &soa.x[start..end],
            &soa.y[start..end],
            &soa.z[start..end],
            &masses[start..end],
        );
        for g in (0..len).step_by(group) {
            // Plain loops, not `array::from_fn`: a closure would not inherit
            // the caller's target features, and the loads would not inline.
            let mut pi = [PointMass {
                x: zero,
                y: zero,
                z: zero,
                m: zero,
            }; IB];
            let mut a = [Vec3::<V>::zero(); IB];
            for b in 0..IB {
                pi[b] = soa.load(i0 + g + b * lanes, false);
                a[b] = acc.load(g + b * lanes);
            }
            for (((&x, &y), &z), &m) in tx.iter().zip(ty).zip(tz).zip(tm) {
                let pj = PointMass {
                    x: V::splat(x),
                    y: V::splat(y),
                    z: V::splat(z),
                    m: V::splat(m),
                };
                for b in 0..IB {
                    a[b] = if GUARD {
                        interaction(a[b], &pi[b], &pj, eps2)
                    } else {
                        pull_fast(a[b], &pi[b], &pj, eps2, three)
                    };
                }
            }
            for (b, &ab) in a.iter().enumerate() {
                acc.store(g + b * lanes, ab);
            }
        }
        start = end;
    }
}

/// Every pair between block `I` (bodies `i0..`, accelerations `acc_i`) and
/// block `J` (bodies `j0..`, `acc_j`), once each; both lengths multiples of
/// `IB * LANES`.
#[inline(always)]
fn pair_tile<V: Simd, const IB: usize, const GUARD: bool>(
    soa: &Soa,
    i0: usize,
    acc_i: &mut AccBlock<'_>,
    j0: usize,
    acc_j: &mut AccBlock<'_>,
    eps2: f32,
) {
    let lanes = V::LANES;
    let group = lanes * IB;
    debug_assert!(lanes <= MAX_LANES);
    debug_assert_eq!(acc_i.len() % group, 0);
    debug_assert_eq!(acc_j.len() % lanes, 0);
    let eps2 = V::splat(eps2);
    let three = V::splat(3.0);
    let zero = V::splat(0.0);
    let mut rot = [PointMass {
        x: zero,
        y: zero,
        z: zero,
        m: zero,
    }; MAX_LANES];
    let mut react = [Vec3::<V>::zero(); MAX_LANES];
    for jv in (0..acc_j.len()).step_by(lanes) {
        let pj: PointMass<V> = soa.load(j0 + jv, !GUARD);
        for s in 0..lanes {
            rot[s] = PointMass {
                x: pj.x.rotate(s),
                y: pj.y.rotate(s),
                z: pj.z.rotate(s),
                m: pj.m.rotate(s),
            };
            react[s] = Vec3::zero();
        }
        for g in (0..acc_i.len()).step_by(group) {
            let mut pi = [rot[0]; IB];
            let mut a = [Vec3::<V>::zero(); IB];
            for b in 0..IB {
                pi[b] = soa.load(i0 + g + b * lanes, !GUARD);
                a[b] = acc_i.load(g + b * lanes);
            }
            for s in 0..lanes {
                let mut r = react[s];
                for b in 0..IB {
                    (a[b], r) = if GUARD {
                        pair_interaction_guarded(a[b], r, &pi[b], &rot[s], eps2)
                    } else {
                        pair_fast(a[b], r, &pi[b], &rot[s], eps2, three)
                    };
                }
                react[s] = r;
            }
            for (b, &ab) in a.iter().enumerate() {
                acc_i.store(g + b * lanes, ab);
            }
        }
        // Lane t of react[s] is body (t + s) mod LANES: rotate back and sum.
        let mut sum: Vec3<V> = acc_j.load(jv);
        for (s, r) in react.iter().enumerate().take(lanes) {
            let k = (lanes - s) % lanes;
            sum = Vec3 {
                x: sum.x + r.x.rotate(k),
                y: sum.y + r.y.rotate(k),
                z: sum.z + r.z.rotate(k),
            };
        }
        acc_j.store(jv, sum);
    }
}

/// The entry points of one instruction set, for one guard setting.
///
/// Built only by [`KernelSet::new`], which checks that the CPU supports the
/// instruction set; that check is what makes calling the `unsafe`
/// `#[target_feature]` functions stored here sound.
#[derive(Clone, Copy)]
pub(crate) struct KernelSet {
    /// Bodies per all-pairs i-group (`IB * LANES`): block lengths are multiples of it.
    pub all_pairs_group: usize,
    /// Bodies per triangle i-group: triangle block lengths are multiples of it.
    pub tri_group: usize,
    all_pairs: AllPairsFn,
    tri_pair: TriPairFn,
}

type AllPairsFn = unsafe fn(&Soa, Range<usize>, usize, &mut AccBlock<'_>, f32, usize);
type TriPairFn = unsafe fn(&Soa, usize, &mut AccBlock<'_>, usize, &mut AccBlock<'_>, f32);

impl std::fmt::Debug for KernelSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelSet")
            .field("all_pairs_group", &self.all_pairs_group)
            .field("tri_group", &self.tri_group)
            .finish_non_exhaustive()
    }
}

/// One instruction set's entry points: vector type `$v`, `$ib` i-vectors per
/// group in the all-pairs loop, `$tb` in the triangle tile, and the target
/// features `$feat` enabled (none for the scalar fallback).
macro_rules! isa_entry_points {
    ($name:ident, $v:ty, $ib:literal, $tb:literal $(, $feat:literal)?) => {
        mod $name {
            use super::*;

            pub(super) const ALL_PAIRS_IB: usize = $ib;
            pub(super) const TRI_IB: usize = $tb;

            $(#[target_feature(enable = $feat)])?
            pub(super) unsafe fn all_pairs<const GUARD: bool>(
                soa: &Soa,
                js: Range<usize>,
                i0: usize,
                acc: &mut AccBlock<'_>,
                eps2: f32,
                j_tile: usize,
            ) {
                one_sided::<$v, $ib, GUARD>(soa, js, i0, acc, eps2, j_tile)
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
                pair_tile::<$v, $tb, GUARD>(soa, i0, acc_i, j0, acc_j, eps2)
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
isa_entry_points!(avx512, super::super::simd::F32x16, 2, 1, "avx512f");
#[cfg(target_arch = "x86_64")]
isa_entry_points!(avx2, super::super::simd::F32x8, 2, 1, "avx2,fma");
// The scalar fallback: `f32` lanes, no target features.
isa_entry_points!(scalar, f32, 1, 1);

macro_rules! kernel_set {
    ($m:ident, $lanes:expr, $guard:expr) => {
        if $guard {
            KernelSet {
                all_pairs_group: $lanes * $m::ALL_PAIRS_IB,
                tri_group: $lanes * $m::TRI_IB,
                all_pairs: $m::all_pairs::<true>,
                tri_pair: $m::tri_pair::<true>,
            }
        } else {
            KernelSet {
                all_pairs_group: $lanes * $m::ALL_PAIRS_IB,
                tri_group: $lanes * $m::TRI_IB,
                all_pairs: $m::all_pairs::<false>,
                tri_pair: $m::tri_pair::<false>,
            }
        }
    };
}

impl KernelSet {
    /// The entry points for `isa`, or `None` if this CPU lacks it.
    ///
    /// `guard`: use the guarded interaction (needed when `eps = 0`, or when
    /// `max m / eps^3` might overflow); without it the loops use the
    /// unguarded forms, equal wherever those are finite.
    pub fn new(isa: Isa, guard: bool) -> Option<KernelSet> {
        if !isa.is_available() {
            return None;
        }
        Some(match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => kernel_set!(avx512, 16, guard),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => kernel_set!(avx2, 8, guard),
            Isa::Scalar => kernel_set!(scalar, 1, guard),
            #[allow(unreachable_patterns)]
            _ => return None,
        })
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
        // SAFETY: `new` checked that the CPU has the instruction set.
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
        // SAFETY: `new` checked that the CPU has the instruction set.
        unsafe { (self.tri_pair)(soa, i0, acc_i, j0, acc_j, eps2) }
    }
}
