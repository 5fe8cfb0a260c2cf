//! The thermostats of short-range MD on the GPU plan: the per-atom passes
//! and the one-thread scalar updates around velocity Verlet's force
//! evaluation, in the CPU engine's order (`nbody-host`'s
//! `cpu/md/ensemble.rs`, LAMMPS's `fix nvt`, `fix langevin` + `fix nve`,
//! `fix temp/rescale` + `fix nve`).
//!
//! The thermostat's state lives in device memory ([`ENS_WORDS`] `f64`, laid
//! out as below) and its constants beside it ([`CFG_WORDS`] `f64`), so a
//! batch of steps needs no host round trip: [`begin`] (one thread) computes
//! the step's first velocity scaling from the state, [`pass`] (one thread
//! per atom) scales, draws Langevin's forces, kicks and writes per-block
//! sums of `m v^2` and `m a_L . v` (a fixed-order tree in shared memory, no
//! float atomics), and [`end`] (one thread) adds the blocks' sums in block
//! order and updates the state: the same bits on every run and schedule.
//! The scalar arithmetic is [`crate::ensemble`]'s, shared with the CPU.

use crate::ensemble::{self, MAX_CHAIN, NhState, NoseHoover, langevin_uniforms};
use crate::exec::{Exec, Global};
use crate::integrate::global_thread;
use crate::interaction::Real;
use crate::periodic::Tag;
use crate::reduce::{block_sums, ordered_sums};
use crate::vec4::Vec4;

/// The ensemble's kind in [`CFG_KIND`]: NVE (nothing to do).
pub const KIND_NVE: u32 = 0;
/// Nosé–Hoover chain (NVT).
pub const KIND_NVT: u32 = 1;
/// Langevin friction and random forces (with NVE).
pub const KIND_LANGEVIN: u32 = 2;
/// Velocity rescaling (with NVE).
pub const KIND_RESCALE: u32 = 3;

/// Constants (`f64` words of the `cfg` buffer): the kind.
pub const CFG_KIND: u32 = 0;
/// Target temperature (Nosé–Hoover).
pub const CFG_T_TARGET: u32 = 1;
/// `1 / Tdamp`.
pub const CFG_T_FREQ: u32 = 2;
/// Thermostats in the chain.
pub const CFG_TCHAIN: u32 = 3;
/// Degrees of freedom of the temperature.
pub const CFG_DOF: u32 = 4;
/// Atoms.
pub const CFG_NATOMS: u32 = 5;
/// The time step.
pub const CFG_DT: u32 = 6;
/// Rescaling: steps between checks.
pub const CFG_EVERY: u32 = 7;
/// Rescaling: target at the start.
pub const CFG_T_START: u32 = 8;
/// Rescaling: target after the ramp.
pub const CFG_T_STOP: u32 = 9;
/// Rescaling: the ramp's steps.
pub const CFG_RAMP: u32 = 10;
/// Rescaling: the band left alone.
pub const CFG_WINDOW: u32 = 11;
/// Rescaling: how far towards the target.
pub const CFG_FRACTION: u32 = 12;
/// Langevin: `1 / damp` (an `f32` value).
pub const CFG_GAMMA: u32 = 13;
/// Langevin: `sqrt(24 k T / (dt damp))` (an `f32` value).
pub const CFG_AMP: u32 = 14;
/// Langevin: the seed (`u64` bits).
pub const CFG_SEED: u32 = 15;
/// Words of the constants.
pub const CFG_WORDS: u32 = 16;

/// State (`f64` words of the `state` buffer): the [`NhState`], first
/// ([`NH_WORDS`] words: `eta`, `eta_dot`, `eta_dotdot`, `etap`, `etap_dot`,
/// `etap_dotdot`, `omega`, `omega_dot`, `mtk_term2`, `vol0`, `t_current`,
/// `lengths`).
pub const ENS_NH: u32 = 0;
/// Words of an [`NhState`].
pub const NH_WORDS: u32 = 6 * MAX_CHAIN as u32 + 2 + 5 + 3;
/// Langevin's `sum dt sum F . v`; rescaling's energy taken out.
pub const ENS_ENERGY: u32 = NH_WORDS;
/// Langevin's last `sum F . v`.
pub const ENS_ONESTEP: u32 = NH_WORDS + 1;
/// Steps taken under the ensemble (`u64` bits).
pub const ENS_STEPS: u32 = NH_WORDS + 2;
/// The scaling the next [`PASS_SCALE`] pass applies.
pub const ENS_SCALE: u32 = NH_WORDS + 3;
/// The barostat's half-step dilation the next [`PASS_DILATE`] pass applies
/// (NPT; set by the host, `nbody-host`'s `plan/md/npt.rs`).
pub const ENS_DILATE: u32 = NH_WORDS + 4;
/// Words of the state.
pub const ENS_WORDS: u32 = NH_WORDS + 5;

/// [`pass`]: `v *= state[ENS_SCALE]` first.
pub const PASS_SCALE: u32 = 1;
/// [`pass`]: Langevin's new `a_L = -v / damp + amp / sqrt(m) u` from `v`.
pub const PASS_FRESH: u32 = 2;
/// [`pass`]: `v += a h` (with [`PASS_LANGEVIN`], `v += (a + a_L) h`).
pub const PASS_KICK: u32 = 4;
/// [`pass`]: the kick adds Langevin's `a_L`.
pub const PASS_LANGEVIN: u32 = 8;
/// [`pass`]: per-block sums of `m v^2` and `m a_L . v` at the end.
pub const PASS_SUMS: u32 = 16;
/// [`pass`]: `x *= state[ENS_DILATE]` after the kick (the barostat's
/// dilation of the positions, either side of the drift, as the CPU's pass).
pub const PASS_DILATE: u32 = 32;

/// The Nosé–Hoover state kept at `at` of `buf`.
///
/// # Safety
/// `buf` holds `at + NH_WORDS` elements; no other thread writes them.
#[inline(always)]
unsafe fn load_nh<E: Exec>(e: &E, buf: Global<f64>, at: u32) -> NhState {
    let mut s = NhState::new([0.0; 3]);
    let mut k = at;
    let mut next = || {
        // SAFETY: k < at + NH_WORDS (the caller's bound).
        let x = unsafe { e.load(buf, k) };
        k += 1;
        x
    };
    for x in s.eta.iter_mut() {
        *x = next();
    }
    for x in s.eta_dot.iter_mut() {
        *x = next();
    }
    for x in s.eta_dotdot.iter_mut() {
        *x = next();
    }
    for x in s.etap.iter_mut() {
        *x = next();
    }
    for x in s.etap_dot.iter_mut() {
        *x = next();
    }
    for x in s.etap_dotdot.iter_mut() {
        *x = next();
    }
    s.omega = next();
    s.omega_dot = next();
    s.mtk_term2 = next();
    s.vol0 = next();
    s.t_current = next();
    for x in s.lengths.iter_mut() {
        *x = next();
    }
    s
}

/// Writes `s` at `at` of `buf` (the layout of [`load_nh`]).
///
/// # Safety
/// As [`load_nh`].
#[inline(always)]
unsafe fn store_nh<E: Exec>(e: &E, buf: Global<f64>, at: u32, s: &NhState) {
    let mut k = at;
    let mut put = |x: f64| {
        // SAFETY: k < at + NH_WORDS (the caller's bound).
        unsafe { e.store(buf, k, x) };
        k += 1;
    };
    s.eta.iter().for_each(|&x| put(x));
    s.eta_dot.iter().for_each(|&x| put(x));
    s.eta_dotdot.iter().for_each(|&x| put(x));
    s.etap.iter().for_each(|&x| put(x));
    s.etap_dot.iter().for_each(|&x| put(x));
    s.etap_dotdot.iter().for_each(|&x| put(x));
    // One call each (a loop over an array of them would put it in local memory).
    put(s.omega);
    put(s.omega_dot);
    put(s.mtk_term2);
    put(s.vol0);
    put(s.t_current);
    s.lengths.iter().for_each(|&x| put(x));
}

/// The Nosé–Hoover constants of the `cfg` buffer.
///
/// # Safety
/// `cfg` holds [`CFG_WORDS`] elements.
#[inline(always)]
unsafe fn nose_hoover<E: Exec>(e: &E, cfg: Global<f64>) -> NoseHoover {
    // SAFETY: every index below is < CFG_WORDS.
    unsafe {
        NoseHoover {
            t_target: e.load(cfg, CFG_T_TARGET),
            t_freq: e.load(cfg, CFG_T_FREQ),
            tchain: e.load(cfg, CFG_TCHAIN) as usize,
            dof: e.load(cfg, CFG_DOF),
            natoms: e.load(cfg, CFG_NATOMS),
            dt: e.load(cfg, CFG_DT),
            barostat: None,
        }
    }
}

/// The step's first velocity scaling (`nhc_temp`, NVT; 1 otherwise) into
/// `state[ENS_SCALE]`. Thread 0 works.
///
/// # Safety
/// `state` holds [`ENS_WORDS`] elements, `cfg` [`CFG_WORDS`]; launched with
/// [`shape::single`](crate::shape::single).
pub unsafe fn begin<E: Exec>(e: &E, state: Global<f64>, cfg: Global<f64>) {
    if global_thread(e) != 0 {
        return;
    }
    // SAFETY: the bounds of the contract; only thread 0 gets here.
    unsafe {
        let mut scale = 1.0;
        if e.load(cfg, CFG_KIND) as u32 == KIND_NVT {
            let nh = nose_hoover(e, cfg);
            let mut s = load_nh(e, state, ENS_NH);
            scale = nh.nhc_temp(&mut s);
            store_nh(e, state, ENS_NH, &s);
        }
        e.store(state, ENS_SCALE, scale);
    }
}

/// One pass over the atoms (`flags`, in this order: [`PASS_SCALE`],
/// [`PASS_FRESH`], [`PASS_KICK`], [`PASS_DILATE`], [`PASS_SUMS`]); Langevin's `a_L` is kept
/// by atom id in `lang`, so the sort of a build leaves it alone, and drawn
/// for step `steps + ahead`.
///
/// # Safety
/// `pos`, `vel`, `acc`, `tag` hold `n` elements, `lang` `lang_len` (`n`
/// when `flags` has [`PASS_FRESH`] or [`PASS_LANGEVIN`]), `state`
/// [`ENS_WORDS`], `cfg` [`CFG_WORDS`], `partials` `2 * grid`; launched with
/// [`shape::ensemble_pass`](crate::shape::ensemble_pass)`(n, block)`.
#[allow(
    clippy::too_many_arguments,
    reason = "a kernel's parameters are its buffers and scalars"
)]
pub unsafe fn pass<E: Exec>(
    e: &E,
    pos: Global<Vec4>,
    vel: Global<Vec4>,
    acc: Global<Vec4>,
    tag: Global<Tag>,
    lang: Global<Vec4>,
    state: Global<f64>,
    cfg: Global<f64>,
    partials: Global<f64>,
    n: u32,
    h: f32,
    flags: u32,
    ahead: u32,
    lang_len: u32,
) {
    let i = global_thread(e);
    // Langevin's arrays are indexed by id (< n): a shorter one is unused.
    let flags = if lang_len < n {
        flags & !(PASS_FRESH | PASS_LANGEVIN)
    } else {
        flags
    };
    // The per-atom work, then (with the sums) the block's tree. The sums'
    // case is decided first and uniformly: the atoms past `n` must not leave
    // for the exit from inside their branch, or the warp would reach the
    // block's bar.sync diverged (the compiler threads a later uniform test
    // into both sides of `i < n`; softcuda's checker caught it).
    let atom = |flags: u32| -> (f64, f64) {
        let (mut mv2, mut work) = (0.0f64, 0.0f64);
        if i < n {
            // SAFETY: i < n and the per-atom buffers hold n elements (`lang` n
            // when it is used: id < n); thread i touches only atom i's elements
            // (its position with PASS_DILATE); `state` and `cfg` are read only.
            unsafe {
                let mut v = e.load(vel, i);
                if flags & PASS_SCALE != 0 {
                    let s = e.load(state, ENS_SCALE) as f32;
                    v = Vec4::new(v.x * s, v.y * s, v.z * s, v.w);
                }
                let id = e.load(tag, i).id;
                let m = e.load(pos, i).w;
                let mut l = Vec4::ZERO;
                if flags & PASS_FRESH != 0 {
                    let gamma = e.load(cfg, CFG_GAMMA) as f32;
                    let amp = e.load(cfg, CFG_AMP) as f32;
                    let seed = e.load(cfg, CFG_SEED).to_bits();
                    let step = e.load(state, ENS_STEPS).to_bits() + ahead as u64;
                    let u = langevin_uniforms(seed, step, id);
                    let inv_mass = 1.0 / m;
                    let amp = amp * ensemble::sqrt(inv_mass as f64) as f32;
                    l = Vec4::new(
                        -v.x * gamma + amp * u[0],
                        -v.y * gamma + amp * u[1],
                        -v.z * gamma + amp * u[2],
                        0.0,
                    );
                    e.store(lang, id, l);
                } else if flags & PASS_LANGEVIN != 0 {
                    l = e.load(lang, id);
                }
                if flags & PASS_KICK != 0 {
                    let a = e.load(acc, i);
                    v = if flags & PASS_LANGEVIN != 0 {
                        Vec4::new(
                            v.x + (a.x + l.x) * h,
                            v.y + (a.y + l.y) * h,
                            v.z + (a.z + l.z) * h,
                            v.w,
                        )
                    } else {
                        Vec4::new(
                            Real::mul_add(a.x, h, v.x),
                            Real::mul_add(a.y, h, v.y),
                            Real::mul_add(a.z, h, v.z),
                            v.w,
                        )
                    };
                }
                e.store(vel, i, v);
                if flags & PASS_DILATE != 0 {
                    let d = e.load(state, ENS_DILATE) as f32;
                    let p = e.load(pos, i);
                    e.store(pos, i, Vec4::new(p.x * d, p.y * d, p.z * d, p.w));
                }
                if flags & PASS_SUMS != 0 {
                    let m = m as f64;
                    for (v, l) in [(v.x, l.x), (v.y, l.y), (v.z, l.z)] {
                        mv2 += m * v as f64 * v as f64;
                        work += m * l as f64 * v as f64;
                    }
                }
            }
        }
        (mv2, work)
    };
    if flags & PASS_SUMS == 0 {
        atom(flags);
        return;
    }
    let (mv2, work) = atom(flags);
    // The block's sums, a tree in f64 (fixed order): every thread of the block gets here.
    // SAFETY: the 2 b f64 of shared memory and `partials`' two values per block (the contract).
    unsafe { block_sums(e, [mv2, work], partials) };
}

/// The end of a step (one block; thread 0 updates): the blocks' sums of the last
/// [`PASS_SUMS`] pass added in block order, then the thermostat's update
/// (Nosé–Hoover's second half step, Langevin's energy tally, the rescaling
/// decision), the scaling that ends the step into `state[ENS_SCALE]`, and
/// the step counted.
///
/// # Safety
/// `state` holds [`ENS_WORDS`] elements, `cfg` [`CFG_WORDS`], `partials`
/// `2 * blocks`; launched with [`shape::ensemble_end`](crate::shape::ensemble_end)
/// (one block: every thread stages the sums, thread 0 works).
pub unsafe fn end<E: Exec>(
    e: &E,
    state: Global<f64>,
    cfg: Global<f64>,
    partials: Global<f64>,
    blocks: u32,
) {
    // Every thread of the block stages the partials; thread 0 adds them in
    // block order.
    // SAFETY: the one block of `shape::ensemble_end` calls it uniformly, with
    // its shared memory; `partials` holds 2 blocks values (the contract).
    let [mv2, work] = unsafe { ordered_sums::<E, 2>(e, partials, blocks) };
    if global_thread(e) != 0 {
        return;
    }
    // SAFETY: the bounds of the contract; only thread 0 gets here.
    unsafe {
        let kind = e.load(cfg, CFG_KIND) as u32;
        let dof = e.load(cfg, CFG_DOF);
        let dt = e.load(cfg, CFG_DT);
        let step = e.load(state, ENS_STEPS).to_bits() + 1;
        let t_now = mv2 / dof;
        let mut last = 1.0f64;
        if kind == KIND_NVT {
            let nh = nose_hoover(e, cfg);
            let mut s = load_nh(e, state, ENS_NH);
            s.t_current = t_now;
            last = nh.nhc_temp(&mut s);
            store_nh(e, state, ENS_NH, &s);
        } else if kind == KIND_LANGEVIN {
            e.store(state, ENS_ONESTEP, work);
            e.store(state, ENS_ENERGY, e.load(state, ENS_ENERGY) + work * dt);
        } else if kind == KIND_RESCALE {
            let every = e.load(cfg, CFG_EVERY) as u64;
            if step.is_multiple_of(every) && t_now > 0.0 {
                let (t_start, t_stop) = (e.load(cfg, CFG_T_START), e.load(cfg, CFG_T_STOP));
                let ramp = e.load(cfg, CFG_RAMP);
                let delta = if ramp == 0.0 {
                    1.0
                } else {
                    let d = step as f64 / ramp;
                    if d < 1.0 { d } else { 1.0 }
                };
                let target = t_start + delta * (t_stop - t_start);
                let off = t_now - target;
                if (if off < 0.0 { -off } else { off }) > e.load(cfg, CFG_WINDOW) {
                    let t_new = t_now - e.load(cfg, CFG_FRACTION) * off;
                    last = ensemble::sqrt(t_new / t_now);
                    let energy = e.load(state, ENS_ENERGY) + (t_now - t_new) * 0.5 * dof;
                    e.store(state, ENS_ENERGY, energy);
                }
            }
        }
        e.store(state, ENS_STEPS, f64::from_bits(step));
        e.store(state, ENS_SCALE, last);
    }
}
