//! Lennard-Jones forces over the neighbour lists of
//! [`neighbours`](crate::neighbours), one thread per body.
//!
//! `u(r) = 4 eps ((sigma / r)^12 - (sigma / r)^6)` for `r < r_c` (optionally
//! shifted by `u(r_c)` so it is zero at the cutoff), zero beyond. Body `i`
//! gets `a_i = (1 / m_i) sum_j f(r) (x_j - x_i)` with
//! `f(r) = r^-2 r^-6 (c6 - c12 r^-6)`, `c12 = 48 eps sigma^12`,
//! `c6 = 24 eps sigma^6`, over its list. Periodic images are ghosts in the
//! position buffer (see [`periodic`](crate::periodic)), so `x_j - x_i` is three
//! subtractions; per pair the loop costs the index and position loads, 3
//! subtractions, 3 FMAs for `r^2`, one reciprocal (`rcp.approx.ftz`), 2
//! products for `r^-6`, one FMA and 2 products for `f`, the cutoff select and
//! 3 FMAs into the accumulators.
//!
//! The `THERMO` instance also sums, per body, the pair energy `u(r)` and the
//! virial `r . F = r^-6 (c12 r^-6 - c6)` (each pair appears in both bodies'
//! lists: the host halves both), plus `m v^2 / 2`, and reduces them in `f64`
//! per block into `partials[3 b ..]`: potential, virial, kinetic. The plain
//! instance leaves those parameters unread, so its loop stays lean.
//!
//! Two bodies at the same point give `r^-2 = inf` and a NaN acceleration,
//! which the step's divergence check ([`check_finite`](crate::integrate::check_finite))
//! reports with the body's index: never a silent NaN.

use crate::exec::{Exec, Global};
use crate::integrate::global_thread;
use crate::interaction::Real;
use crate::shape::{NEIGHBOUR_GROUP, WARP, neighbour_slot};
use crate::vec4::Vec4;

/// Index groups per round of the force loop (the literal in its `seq!`):
/// 16 pairs, so the round's address, count and branch cost under one
/// instruction per pair.
const ROUND_GROUPS: u32 = 4;

/// Values each block of the `THERMO` instance writes to `partials`.
pub const THERMO_PARTIALS: u32 = 3;

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    #[link_name = "llvm.nvvm.rcp.approx.ftz.f"]
    fn nvvm_rcp_approx_ftz(x: f32) -> f32;
}

/// `1 / x`: one `MUFU.RCP` on the GPU (`rcp.approx.ftz.f32`, within 1 ulp),
/// exact on the host.
#[inline(always)]
pub fn rcp(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: a pure NVVM intrinsic, defined for every input.
        unsafe { nvvm_rcp_approx_ftz(x) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        1.0 / x
    }
}

/// Lennard-Jones accelerations `acc[i]` from the neighbour lists, and with
/// `THERMO` the per-block potential, virial and kinetic sums.
///
/// # Safety
/// `pos` holds the `n` bodies and every ghost an entry of `nlist` names,
/// `nlist` [`neighbour_stride`](crate::shape::neighbour_stride)`(n) * cap` words, `ncount`, `acc` and
/// `vel` `n` elements, `partials` [`THERMO_PARTIALS`] `f64` per block (read
/// only by the `THERMO` instance); launched with
/// [`shape::lj`](crate::shape::lj)`(n, block, THERMO)`.
///
/// # Parameters
/// `extent`: bodies plus ghosts in `pos` (sizes the emulator's bounds
/// checks); `cap`: the lists' capacity; `rc2`: the cutoff squared; `s6`:
/// `sigma^6`; `two_s6`: `2 sigma^6`; `c6`: `24 eps sigma^6`; `u6`:
/// `4 eps sigma^6`; `ushift`: `u(r_c)` to subtract per pair within the
/// cutoff, or 0 (energy only).
#[allow(
    clippy::too_many_arguments,
    clippy::erasing_op,
    reason = "one argument per PTX kernel parameter; `U * WARP` with U = 0 from `seq!`"
)]
pub unsafe fn lj_forces<E: Exec, const THERMO: bool>(
    e: &E,
    pos: Global<Vec4>,
    nlist: Global<u32>,
    ncount: Global<u32>,
    acc: Global<Vec4>,
    vel: Global<Vec4>,
    partials: Global<f64>,
    n: u32,
    extent: u32,
    cap: u32,
    rc2: f32,
    s6: f32,
    two_s6: f32,
    c6: f32,
    u6: f32,
    ushift: f32,
) {
    // `extent` (bodies and ghosts in `pos`) only sizes the host's bounds checks.
    let _ = extent;
    let i = global_thread(e);
    let k = Coefficients { rc2, s6, two_s6 };
    let mut sums = [0.0f64; 3];
    if i < n {
        // SAFETY: i < n; entries of the list are indices of bodies or ghosts in `pos`; body i's
        // `ncount[i] <= cap` entries lie in its column (`shape::neighbour_slot`: groups of 4,
        // 128 words apart, 16-byte aligned); thread i writes only acc[i].
        unsafe {
            let pi = e.load(pos, i);
            let count = e.load(ncount, i).min(cap);
            let column = nlist.offset(neighbour_slot(i, 0, cap));
            let groups = column.quads();
            let mut a = Sums::default();
            // ROUND pairs per round: 16-byte index loads from one address.
            let rounds = count / (ROUND_GROUPS * NEIGHBOUR_GROUP);
            let mut r = 0;
            while r < rounds {
                let round = groups.offset(r * (ROUND_GROUPS * WARP));
                seq_macro::seq!(G in 0..4 {
                    let q = e.load(round, G * WARP).0;
                    seq_macro::seq!(U in 0..4 {
                        pair::<THERMO>(&mut a, pi, e.load(pos, q[U]), &k);
                    });
                });
                r += 1;
            }
            // Then whole groups of four, then one at a time.
            let mut g = rounds * ROUND_GROUPS;
            while g < count / NEIGHBOUR_GROUP {
                let q = e.load(groups, g * WARP).0;
                seq_macro::seq!(U in 0..4 {
                    pair::<THERMO>(&mut a, pi, e.load(pos, q[U]), &k);
                });
                g += 1;
            }
            let mut done = g * NEIGHBOUR_GROUP;
            while done < count {
                let j = e.load(column, neighbour_slot(0, done, cap));
                pair::<THERMO>(&mut a, pi, e.load(pos, j), &k);
                done += 1;
            }
            let scale = c6 / pi.w;
            e.store(
                acc,
                i,
                Vec4::new(a.x * scale, a.y * scale, a.z * scale, 0.0),
            );
            if THERMO {
                let v = e.load(vel, i);
                let v2 =
                    v.x as f64 * v.x as f64 + v.y as f64 * v.y as f64 + v.z as f64 * v.z as f64;
                sums = [
                    u6 as f64 * a.pe as f64 - ushift as f64 * a.inside as f64,
                    c6 as f64 * a.virial as f64,
                    0.5 * pi.w as f64 * v2,
                ];
            }
        }
    }
    if THERMO {
        // SAFETY: every thread of the block reaches the reduction; shared memory holds
        // 3 * blockDim f64 (the launch shape) and `partials` 3 per block.
        unsafe { block_sums(e, sums, partials) };
    }
}

/// The force law's constants, per thread (see [`lj_forces`]' parameters).
struct Coefficients {
    rc2: f32,
    s6: f32,
    two_s6: f32,
}

/// One body's running sums, in units that keep constants out of the loop:
/// `x, y, z`: `sum r^-8 (1 - 2 sigma^6 r^-6) r_ij` (times `c6 / m_i` at the
/// end); with thermo, `pe`: `sum r^-6 (sigma^6 r^-6 - 1)` (times `u6`),
/// `virial`: `sum r^-6 (2 sigma^6 r^-6 - 1)` (times `c6`), `inside`: pairs
/// within the cutoff (times the shift).
#[derive(Default)]
struct Sums {
    x: f32,
    y: f32,
    z: f32,
    pe: f32,
    virial: f32,
    inside: f32,
}

/// Adds body `j`'s Lennard-Jones force on body `i` (zero beyond the cutoff)
/// to `a`, and with `THERMO` the pair's energy and virial.
///
/// `f / c6 = r^-8 (1 - 2 sigma^6 r^-6)`: two products for `r^-6` and
/// `r^-8`... written `r^-6 r^-2`, one FMA with the immediate 1, one product:
/// no constant but `2 sigma^6` in the loop, which ptxas reads from the
/// parameter bank.
#[inline(always)]
fn pair<const THERMO: bool>(a: &mut Sums, pi: Vec4, pj: Vec4, k: &Coefficients) {
    let dx = pj.x - pi.x;
    let dy = pj.y - pi.y;
    let dz = pj.z - pi.z;
    let r2 = Real::mul_add(dz, dz, Real::mul_add(dy, dy, dx * dx));
    let inside = r2 < k.rc2;
    // The cutoff as `1 / r^2 = 0`: every term below is then exactly 0.
    let ri2 = if inside { rcp(r2) } else { 0.0 };
    let ri6 = ri2 * ri2 * ri2;
    let f = ri6 * Real::mul_add(-k.two_s6, ri6, 1.0) * ri2;
    a.x = Real::mul_add(dx, f, a.x);
    a.y = Real::mul_add(dy, f, a.y);
    a.z = Real::mul_add(dz, f, a.z);
    if THERMO {
        a.pe += ri6 * Real::mul_add(k.s6, ri6, -1.0);
        a.virial += ri6 * Real::mul_add(k.two_s6, ri6, -1.0);
        a.inside += if inside { 1.0 } else { 0.0 };
    }
}

/// Tree reduction of three `f64` per thread across the block, in a fixed
/// order (so the same inputs give the same bits); thread 0 writes the block's
/// sums to `partials[3 block ..]`.
///
/// # Safety
/// Every thread of the block calls it; the launch has `24 * blockDim` bytes of
/// dynamic shared memory; `partials` holds 3 `f64` per block.
#[inline(always)]
unsafe fn block_sums<E: Exec>(e: &E, sums: [f64; 3], partials: Global<f64>) {
    let b = e.block_dim();
    let t = e.thread_idx();
    // SAFETY: slots k * b + t < 3 b, each thread its own; read after the barrier.
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
            // thread writes only its own slots k * b + t.
            unsafe {
                for k in 0..3 {
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
        // SAFETY: slots 0, b, 2b are complete after the last barrier; 3 values per block.
        unsafe {
            for k in 0..3 {
                e.store(partials, 3 * e.block_idx() + k, e.shared_load::<f64>(k * b));
            }
        }
    }
}
