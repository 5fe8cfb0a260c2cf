//! Collisional gravity (issue 26): the kernels of a 4th-order Hermite block
//! step. Every body is predicted to the block time ([`hermite_predict`]),
//! the active bodies' predicted states are gathered ([`hermite_gather`]),
//! their force, jerk and potential are summed over every predicted j-body
//! through shared-memory tiles ([`hermite_force`], in f64 or mixed
//! precision, the j-bodies optionally split over several blocks), the
//! split sums are added in a fixed order ([`hermite_reduce`]), and the
//! host's corrected bodies are written back ([`hermite_scatter`]). The host
//! keeps the block bookkeeping (`nbody-host`'s `hermite/block.rs`).
//!
//! Everything is `f64` ([`Vec4d`]): positions, velocities, derivatives,
//! sums. Body times are integer ticks held exactly in an `f64` (below
//! `2^53`), so the device's predictor computes the very step `h` the host
//! computes, and [`predict`] is the host's predictor too: the same bits.
//!
//! # The two force kernels
//! Per pair, with `r = x_j - x_i`, `v = v_j - v_i`, `d^2 = |r|^2 + eps^2`:
//! `acc += m r / d^3`, `pot -= m / d`, `jerk += m (v - 3 (r.v) r / d^2) / d^3`.
//!
//! - **f64** (`MIXED = false`): every operation in `f64`; `1 / d` from an
//!   `f32` seed (`rsqrt.approx.ftz.f32`, the only approximate instruction
//!   the project's PTX may use) refined by one third-order step in `f64`
//!   ([`rsqrt_f64`]): within an ulp or two of `1 / sqrt`.
//! - **mixed** (`MIXED = true`): the force and potential exactly as in f64
//!   (separation, `d^2`, `1 / d`, the sums); the jerk in `f32` from the
//!   separation and relative velocity taken in double-single (each j-body's
//!   position and velocity split once per tile into an `f32` high part and
//!   the `f32` remainder, so the differences keep `f32` precision however
//!   far the pair is from the origin), `1/d^2` and `m/d^3` rounded to
//!   `f32`, summed in `f32` over at most 32 j-bodies and then in `f64`.
//!   Half the `f64` operations of the f64 kernel: the jerk's fourteen go to
//!   the `f32` pipe, which has 64 times the `f64` pipe's lanes on most
//!   GPUs but only twice on an H100/H200, where the `f32` jerk's 31 issue
//!   slots (double-single differences, conversions) cost about what the
//!   f64 jerk's 14 half-rate `f64` instructions do: there mixed is barely
//!   faster than f64 (docs/collisional.md, "Throughput on an H200"). The
//!   force keeps `f64` accuracy (a
//!   relative force error of 1e-10 needs the separation to about 37 bits, so
//!   no part of it is computed from `f32` coordinates); the jerk's error is
//!   `f32`'s, as in the CPU's mixed loops (`nbody-host` `hermite/forces.rs`).
//!
//! # Range
//! The `f32` seed needs `d^2` in `f32`'s normal range: `d^2 < 2^-126`
//! (a separation below 1e-19 at zero softening) gives a non-finite field,
//! which the host reports; `d^2 >= 2^128` (beyond 1.8e19) contributes 0.
//!
//! # Thread mapping of the force kernels
//! One thread per active i-body, `block` of them per block; the j-bodies in
//! tiles of `block` through shared memory. The grid is `iblocks * jparts`
//! blocks ([`force_shape`]): block `b` takes i-bodies of i-block
//! `b % iblocks` and the `b / iblocks`-th of `jparts` contiguous ranges of
//! tiles, and writes its sums to its own slice of `partials`; with one part
//! those are the results, otherwise [`hermite_reduce`] adds the parts in
//! order (the same bits on every schedule). Each i-body skips its own slot
//! (`islot`, [`NO_SLOT`] for none) by index, so the self-pair is exactly
//! zero at any softening; coincident distinct bodies at zero softening give
//! a non-finite field (the host names them). The mask is applied only in
//! the one tile that holds the own slot (`full_tile`'s `SELF`): the
//! other full tiles run a loop without it.
//!
//! (Over 600 lines: one kernel family, its six entry points and the
//! arithmetic they share, with its tests.)

use crate::exec::{Exec, Global, Word};
use crate::integrate::global_thread;
use crate::interaction::Real;
use crate::shape::LaunchShape;
use crate::vec4::Vec4;

/// Four `f64`, 32 bytes, aligned to 16 (two `ld.v2.f64` / `LDS.128`).
///
/// | buffer | `x, y, z` | `w` |
/// | --- | --- | --- |
/// | positions | position | mass |
/// | velocities (state) | velocity | the body's time in ticks |
/// | velocities (predicted, i-bodies) | velocity | 0 |
/// | accelerations, jerks | vector | 0 |
/// | results (two per i-body) | acceleration, jerk | potential, 0 |
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Vec4d {
    /// x component.
    pub x: f64,
    /// y component.
    pub y: f64,
    /// z component.
    pub z: f64,
    /// Mass, time, potential or 0 (see the table).
    pub w: f64,
}

// SAFETY: four f64 (`repr(C, align(16))`), 32 bytes, no padding, every bit
// pattern valid.
unsafe impl Word for Vec4d {}

impl Vec4d {
    /// A vector from its four components.
    #[inline(always)]
    pub const fn new(x: f64, y: f64, z: f64, w: f64) -> Self {
        Vec4d { x, y, z, w }
    }

    /// `[x, y, z]` with `w`.
    #[inline(always)]
    pub const fn from_xyz(v: [f64; 3], w: f64) -> Self {
        Vec4d::new(v[0], v[1], v[2], w)
    }

    /// `[x, y, z]`.
    #[inline(always)]
    pub const fn xyz(self) -> [f64; 3] {
        [self.x, self.y, self.z]
    }
}

/// The `islot` of an i-body that is not among the j-bodies: nothing skipped.
pub const NO_SLOT: u32 = u32::MAX;

/// Bytes of shared memory per j-body of a tile: position and mass, velocity
/// (f64); position and mass, then the double-single split (mixed).
pub const fn tile_bytes(mixed: bool) -> u32 {
    if mixed { 32 + 48 } else { 64 }
}

/// The force kernels' launch: `ceil(ni / block) * jparts` blocks, one tile
/// of `block` j-bodies in shared memory. `None` if the grid would exceed
/// [`MAX_GRID`](crate::shape::MAX_GRID).
pub const fn force_shape(ni: u32, block: u32, jparts: u32, mixed: bool) -> Option<LaunchShape> {
    let grid = ni.div_ceil(block) as u64 * jparts as u64;
    if grid > crate::shape::MAX_GRID as u64 {
        return None;
    }
    Some(LaunchShape {
        grid: grid as u32,
        block,
        shared_bytes: block * tile_bytes(mixed),
    })
}

/// `a b + c` with one rounding.
#[inline(always)]
pub fn fma(a: f64, b: f64, c: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf64(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::fma(a, b, c)
    }
}

/// `1 / sqrt(x)` in `f64` for `x` in `f32`'s normal range: the `f32`
/// estimate `y` (on the GPU `rsqrt.approx.ftz.f32`, relative error below
/// `2^-22`; on the host correctly rounded) refined by one third-order step,
/// `y + y e (1/2 + 3 e / 8)` with `e = 1 - x y^2` (`y^2` is exact in
/// `f64`): the remaining error `5 e^3 / 16` is below `2^-64`, so the result
/// is within the last roundings of the true value.
///
/// Outside the range: `x >= 2^128` gives 0, `x < 2^-126` (subnormal in
/// `f32`, flushed to zero on the GPU) gives `+inf` on the GPU.
#[inline(always)]
pub fn rsqrt_f64(x: f64) -> f64 {
    let y = (x as f32).rsqrt() as f64;
    let e = fma(-x, y * y, 1.0);
    fma(y, e * fma(e, 0.375, 0.5), y)
}

/// The Hermite predictor of one body over `h`: `x + v h + a h^2/2 + j h^3/6`
/// and `v + a h + j h^2/2`, evaluated left to right without fused
/// operations, so the host (`hermite/block.rs`) and the device give the
/// same bits.
#[inline(always)]
pub fn predict(x: [f64; 3], v: [f64; 3], a: [f64; 3], j: [f64; 3], h: f64) -> ([f64; 3], [f64; 3]) {
    let (h2, h3) = (h * h / 2.0, h * h * h / 6.0);
    let mut xp = [0.0; 3];
    let mut vp = [0.0; 3];
    let mut k = 0;
    while k < 3 {
        xp[k] = x[k] + v[k] * h + a[k] * h2 + j[k] * h3;
        vp[k] = v[k] + a[k] * h + j[k] * h2;
        k += 1;
    }
    (xp, vp)
}

/// Every body predicted to tick `next`: body `i` at tick `vel[i].w` moves
/// by `h = (next - vel[i].w) per_tick` ([`predict`]); `ppos` gets the
/// predicted position and the mass, `pvel` the predicted velocity and 0.
///
/// # Safety
/// Every buffer holds `n` elements; `ppos` and `pvel` overlap none of the
/// others; launched with [`shape::per_body`](crate::shape::per_body)`(n, block)`.
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn hermite_predict<E: Exec>(
    e: &E,
    pos: Global<Vec4d>,
    vel: Global<Vec4d>,
    acc: Global<Vec4d>,
    jerk: Global<Vec4d>,
    ppos: Global<Vec4d>,
    pvel: Global<Vec4d>,
    n: u32,
    next: f64,
    per_tick: f64,
) {
    let i = global_thread(e);
    if i < n {
        // SAFETY: i < n, every buffer holds n elements, thread i alone
        // writes element i of `ppos` and `pvel`, which no thread reads.
        unsafe {
            let (p, v) = (e.load(pos, i), e.load(vel, i));
            let (a, j) = (e.load(acc, i), e.load(jerk, i));
            let h = (next - v.w) * per_tick;
            let (xp, vp) = predict(p.xyz(), v.xyz(), a.xyz(), j.xyz(), h);
            e.store(ppos, i, Vec4d::from_xyz(xp, p.w));
            e.store(pvel, i, Vec4d::from_xyz(vp, 0.0));
        }
    }
}

/// The active bodies' predicted states as i-bodies: `ipos[k] =
/// ppos[active[k]]`, `ivel[k] = pvel[active[k]]`.
///
/// # Safety
/// `ppos` and `pvel` hold `n` elements, `active`, `ipos` and `ivel` `ni`;
/// every `active[k] < n`; launched with
/// [`shape::per_body`](crate::shape::per_body)`(ni, block)`.
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn hermite_gather<E: Exec>(
    e: &E,
    ppos: Global<Vec4d>,
    pvel: Global<Vec4d>,
    active: Global<u32>,
    ipos: Global<Vec4d>,
    ivel: Global<Vec4d>,
    n: u32,
    ni: u32,
) {
    let k = global_thread(e);
    if k < ni {
        // SAFETY: k < ni; active[k] < n (the caller's contract, checked by
        // the emulator's bounds); thread k alone writes element k.
        unsafe {
            let s = e.load(active, k);
            if s < n {
                e.store(ipos, k, e.load(ppos, s));
                e.store(ivel, k, e.load(pvel, s));
            }
        }
    }
}

/// Corrected bodies written back: body `active[k]` gets `update[4k..4k+4]`
/// (position and mass, velocity and time, acceleration, jerk).
///
/// # Safety
/// `update` holds `4 ni` elements, `active` `ni` distinct indices below
/// `n`, the other buffers `n`; launched with
/// [`shape::per_body`](crate::shape::per_body)`(ni, block)`.
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn hermite_scatter<E: Exec>(
    e: &E,
    update: Global<Vec4d>,
    active: Global<u32>,
    pos: Global<Vec4d>,
    vel: Global<Vec4d>,
    acc: Global<Vec4d>,
    jerk: Global<Vec4d>,
    n: u32,
    ni: u32,
) {
    let k = global_thread(e);
    if k < ni {
        // SAFETY: k < ni; the indices are distinct and below n (the
        // caller's contract), so each element is written by one thread.
        unsafe {
            let s = e.load(active, k);
            if s < n {
                e.store(pos, s, e.load(update, 4 * k));
                e.store(vel, s, e.load(update, 4 * k + 1));
                e.store(acc, s, e.load(update, 4 * k + 2));
                e.store(jerk, s, e.load(update, 4 * k + 3));
            }
        }
    }
}

/// The parts of a split force sum added in order: `out[2k + c] = sum over
/// p of partials[2 (p ni + k) + c]`.
///
/// # Safety
/// `partials` holds `2 ni jparts` elements, `out` `2 ni`; launched with
/// [`shape::per_body`](crate::shape::per_body)`(ni, block)`.
pub unsafe fn hermite_reduce<E: Exec>(
    e: &E,
    partials: Global<Vec4d>,
    out: Global<Vec4d>,
    ni: u32,
    jparts: u32,
) {
    let k = global_thread(e);
    if k < ni {
        let mut c = 0;
        while c < 2 {
            // SAFETY: 2 (p ni + k) + c < 2 ni jparts for p < jparts, k < ni;
            // thread k alone writes out[2k + c].
            unsafe {
                let mut s = e.load(partials, 2 * k + c);
                let mut p = 1;
                while p < jparts {
                    let q = e.load(partials, 2 * (p * ni + k) + c);
                    s = Vec4d::new(s.x + q.x, s.y + q.y, s.z + q.z, s.w + q.w);
                    p += 1;
                }
                e.store(out, 2 * k + c, s);
            }
            c += 1;
        }
    }
}

/// `x` as an `f32` and the `f32` remainder: `x = hi + lo` to about 2^-48.
#[inline(always)]
fn split(x: f64) -> (f32, f32) {
    let hi = x as f32;
    (hi, (x - hi as f64) as f32)
}

/// One i-body: its predicted state (with the double-single split for the
/// mixed jerk) and its sums.
struct Sink {
    x: [f64; 3],
    v: [f64; 3],
    /// Position high and low parts, velocity high and low parts (mixed).
    xh: [f32; 3],
    xl: [f32; 3],
    vh: [f32; 3],
    vl: [f32; 3],
    acc: [f64; 3],
    pot: f64,
    jerk: [f64; 3],
    /// The mixed jerk's `f32` sums since the last [`flush`](Self::flush).
    k: [f32; 3],
}

/// The j-bodies of a mixed tile summed in `f32` before going into `f64`
/// (the full tiles' unrolled groups are this long too).
const JERK_FLUSH: u32 = 32;

impl Sink {
    #[inline(always)]
    fn new(p: Vec4d, v: Vec4d) -> Sink {
        let (x, v) = (p.xyz(), v.xyz());
        let (mut xh, mut xl, mut vh, mut vl) = ([0f32; 3], [0f32; 3], [0f32; 3], [0f32; 3]);
        let mut c = 0;
        while c < 3 {
            (xh[c], xl[c]) = split(x[c]);
            (vh[c], vl[c]) = split(v[c]);
            c += 1;
        }
        Sink {
            x,
            v,
            xh,
            xl,
            vh,
            vl,
            acc: [0.0; 3],
            pot: 0.0,
            jerk: [0.0; 3],
            k: [0.0; 3],
        }
    }

    /// Adds the mixed jerk's `f32` sums to the `f64` ones.
    #[inline(always)]
    fn flush(&mut self) {
        let mut c = 0;
        while c < 3 {
            self.jerk[c] += self.k[c] as f64;
            self.k[c] = 0.0;
            c += 1;
        }
    }

    /// The pair with the j-body in tile slot `s` (of `b`); `own`: whether
    /// it is this i-body's own slot (then it adds exactly nothing).
    ///
    /// # Safety
    /// Slot `s` of the tile was written before the last barrier.
    #[inline(always)]
    unsafe fn pair<E: Exec, const MIXED: bool>(
        &mut self,
        e: &E,
        s: u32,
        b: u32,
        own: bool,
        eps2: f64,
    ) {
        // SAFETY: the caller's contract (a tile slot, `2 b` Vec4 from the
        // start is the mixed split, `b` Vec4d from the start the velocities).
        let pj: Vec4d = unsafe { e.shared_load(s) };
        let (dx, dy, dz) = (pj.x - self.x[0], pj.y - self.x[1], pj.z - self.x[2]);
        let r2 = fma(dx, dx, fma(dy, dy, fma(dz, dz, eps2)));
        // The self-pair's `1/d` is cleared with a mask, not a select, which
        // LLVM would turn into a branch around the square root.
        let keep = (own as u64).wrapping_sub(1);
        let rinv = f64::from_bits(rsqrt_f64(r2).to_bits() & keep);
        let rinv2 = rinv * rinv;
        let mr = pj.w * rinv;
        let mr3 = mr * rinv2;
        self.acc[0] = fma(mr3, dx, self.acc[0]);
        self.acc[1] = fma(mr3, dy, self.acc[1]);
        self.acc[2] = fma(mr3, dz, self.acc[2]);
        self.pot -= mr;
        if MIXED {
            // SAFETY: as above.
            let (d0, d1, d2): (Vec4, Vec4, Vec4) = unsafe {
                (
                    e.shared_load(2 * b + 3 * s),
                    e.shared_load(2 * b + 3 * s + 1),
                    e.shared_load(2 * b + 3 * s + 2),
                )
            };
            // [xh yh zh xl] [yl zl uh vh] [wh ul vl wl]
            let fx = (d0.x - self.xh[0]) + (d0.w - self.xl[0]);
            let fy = (d0.y - self.xh[1]) + (d1.x - self.xl[1]);
            let fz = (d0.z - self.xh[2]) + (d1.y - self.xl[2]);
            let du = (d1.z - self.vh[0]) + (d2.y - self.vl[0]);
            let dv = (d1.w - self.vh[1]) + (d2.z - self.vl[1]);
            let dw = (d2.x - self.vh[2]) + (d2.w - self.vl[2]);
            let (q2, q3) = (rinv2 as f32, mr3 as f32);
            let rv = 3.0 * fx.mul_add(du, fy.mul_add(dv, fz * dw)) * q2;
            self.k[0] = q3.mul_add((-rv).mul_add(fx, du), self.k[0]);
            self.k[1] = q3.mul_add((-rv).mul_add(fy, dv), self.k[1]);
            self.k[2] = q3.mul_add((-rv).mul_add(fz, dw), self.k[2]);
        } else {
            // SAFETY: as above.
            let vj: Vec4d = unsafe { e.shared_load(b + s) };
            let (du, dv, dw) = (vj.x - self.v[0], vj.y - self.v[1], vj.z - self.v[2]);
            let rv = 3.0 * fma(dx, du, fma(dy, dv, dz * dw)) * rinv2;
            self.jerk[0] = fma(mr3, fma(-rv, dx, du), self.jerk[0]);
            self.jerk[1] = fma(mr3, fma(-rv, dy, dv), self.jerk[1]);
            self.jerk[2] = fma(mr3, fma(-rv, dz, dw), self.jerk[2]);
        }
    }
}

/// The pairs of one full tile of `b` j-bodies (`b` a multiple of 32), in
/// unrolled groups of 32, the mixed jerk's `f32` sums flushed after each;
/// with `SELF`, the pair with tile slot `mine` adds exactly nothing,
/// without it no slot is skipped (`mine` is then not in the tile).
///
/// # Safety
/// All `b` slots of the tile were written before the last barrier.
#[inline(always)]
unsafe fn full_tile<E: Exec, const MIXED: bool, const SELF: bool>(
    sink: &mut Sink,
    e: &E,
    b: u32,
    mine: u32,
    eps2: f64,
) {
    let mut s = 0;
    while s < b {
        seq_macro::seq!(U in 0..32 {
            // SAFETY: s + U < b: a slot written before the barrier.
            unsafe { sink.pair::<E, MIXED>(e, s + U, b, SELF && s + U == mine, eps2) };
        });
        if MIXED {
            sink.flush();
        }
        s += 32;
    }
}

/// Force, jerk and potential (no `G`) of i-bodies `0..ni` from j-bodies
/// `0..nj`, each i-body skipping the j-slot `islot[k]`: see the module
/// documentation. `partials[2 (p ni + k)]` gets part `p`'s acceleration and
/// potential of i-body `k`, `partials[2 (p ni + k) + 1]` its jerk.
///
/// # Safety
/// `jpos`, `jvel` hold `nj >= 1` elements, `ipos`, `ivel`, `islot` `ni >= 1`,
/// `partials` `2 ni jparts`; `1 <= jparts`; launched with
/// [`force_shape`]`(ni, block, jparts, MIXED)` and a valid block
/// ([`shape::is_valid_block`](crate::shape::is_valid_block)).
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
// Inlined into its entry point: LLVM would otherwise keep the mixed
// instance, grown by the two full-tile loops, as a separate `.func`.
#[inline(always)]
pub unsafe fn hermite_force<E: Exec, const MIXED: bool>(
    e: &E,
    jpos: Global<Vec4d>,
    jvel: Global<Vec4d>,
    ipos: Global<Vec4d>,
    ivel: Global<Vec4d>,
    islot: Global<u32>,
    partials: Global<Vec4d>,
    ni: u32,
    nj: u32,
    jparts: u32,
    eps2: f64,
) {
    let b = e.block_dim();
    let t = e.thread_idx();
    let iblocks = ni.div_ceil(b);
    let part = e.block_idx() / iblocks;
    let k = (e.block_idx() % iblocks) * b + t;
    // Threads past ni compute for the last i-body and store nothing: every
    // thread loads tiles and reaches every barrier.
    let kk = k.min(ni - 1);
    // SAFETY: kk < ni.
    let (own, mut sink) = unsafe {
        (
            e.load(islot, kk),
            Sink::new(e.load(ipos, kk), e.load(ivel, kk)),
        )
    };
    let tiles = nj.div_ceil(b);
    let per = tiles.div_ceil(jparts);
    let mut tile = part * per;
    let last = if tile + per < tiles {
        tile + per
    } else {
        tiles
    };
    while tile < last {
        let base = tile * b;
        // SAFETY: min(base + t, nj - 1) < nj; slot t of the tile is this
        // thread's, read by the others only after the barrier below and
        // rewritten only after the next one.
        unsafe {
            let j = (base + t).min(nj - 1);
            let p = e.load(jpos, j);
            e.shared_store(t, p);
            let v = e.load(jvel, j);
            if MIXED {
                let (xh, xl) = split(p.x);
                let (yh, yl) = split(p.y);
                let (zh, zl) = split(p.z);
                let (uh, ul) = split(v.x);
                let (vh, vl) = split(v.y);
                let (wh, wl) = split(v.z);
                e.shared_store(2 * b + 3 * t, Vec4::new(xh, yh, zh, xl));
                e.shared_store(2 * b + 3 * t + 1, Vec4::new(yl, zl, uh, vh));
                e.shared_store(2 * b + 3 * t + 2, Vec4::new(wh, ul, vl, wl));
            } else {
                e.shared_store(b + t, v);
            }
        }
        e.sync_threads();
        let count = if nj - base < b { nj - base } else { b };
        // The tile slot of this i-body's own j-slot (never matched if not in it).
        let mine = own.wrapping_sub(base);
        let mut s = 0;
        if count == b {
            // A full tile. Only the tile holding this i-body's own slot
            // needs the self-pair mask: every other one takes the unmasked
            // loop (four instructions an interaction fewer in the SASS; a
            // warp whose threads disagree runs both for that one tile).
            if mine < b {
                // SAFETY: a full tile, written before the barrier.
                unsafe { full_tile::<E, MIXED, true>(&mut sink, e, b, mine, eps2) };
            } else {
                // SAFETY: as above.
                unsafe { full_tile::<E, MIXED, false>(&mut sink, e, b, mine, eps2) };
            }
        } else {
            while s < count {
                // SAFETY: s < count <= b: a slot written before the barrier.
                unsafe { sink.pair::<E, MIXED>(e, s, b, s == mine, eps2) };
                s += 1;
                if MIXED && s % JERK_FLUSH == 0 {
                    sink.flush();
                }
            }
            if MIXED {
                sink.flush();
            }
        }
        e.sync_threads();
        tile += 1;
    }
    if k < ni {
        let at = 2 * (part * ni + k);
        // SAFETY: at + 1 < 2 ni jparts (k < ni, part < jparts); each slot is
        // written by this thread alone.
        unsafe {
            e.store(partials, at, Vec4d::from_xyz(sink.acc, sink.pot));
            e.store(partials, at + 1, Vec4d::from_xyz(sink.jerk, 0.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_four_f64_in_32_bytes() {
        assert_eq!(core::mem::size_of::<Vec4d>(), 32);
        assert_eq!(core::mem::align_of::<Vec4d>(), 16);
        assert_eq!(tile_bytes(false) % 16, 0);
        assert_eq!(tile_bytes(true) % 16, 0);
    }

    #[test]
    fn the_refined_rsqrt_is_within_two_ulp() {
        let mut x = 1.0e-30f64;
        while x < 1.0e30 {
            for f in [1.0, 1.0 + 1e-9, 1.37, 2.0 - 1e-12, 3.3] {
                let v = x * f;
                let want = 1.0 / libm::sqrt(v);
                let got = rsqrt_f64(v);
                let ulp = (want.to_bits() as i64 - got.to_bits() as i64).abs();
                assert!(
                    ulp <= 2,
                    "rsqrt({v:e}) = {got:e}, want {want:e} ({ulp} ulp)"
                );
            }
            x *= 7.3;
        }
        // Past f32's range: 0, not NaN.
        assert_eq!(rsqrt_f64(1e40), 0.0);
    }

    #[test]
    fn a_split_holds_48_bits() {
        for x in [1.0 / 3.0, -12_345.678_901_234_5, 1e-7 + 1e-20] {
            let (hi, lo) = split(x);
            assert!((hi as f64 + lo as f64 - x).abs() <= x.abs() * 2f64.powi(-47));
        }
    }

    #[test]
    fn the_predictor_is_the_taylor_polynomial() {
        let (xp, vp) = predict([1.0; 3], [2.0; 3], [6.0; 3], [12.0; 3], 0.5);
        // 1 + 1 + 0.75 + 0.25, 2 + 3 + 1.5
        assert_eq!(xp, [3.0; 3]);
        assert_eq!(vp, [6.5; 3]);
        assert_eq!(
            predict([1.0; 3], [2.0; 3], [6.0; 3], [12.0; 3], 0.0).0,
            [1.0; 3]
        );
    }
}
