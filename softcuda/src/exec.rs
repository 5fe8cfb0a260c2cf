//! Executing instructions for a group of lanes of one warp.
//!
//! `run` executes straight-line code for a fixed set of lanes (a warp's
//! active mask in lockstep, or a single thread under the adversarial
//! schedule) and returns to its scheduler at everything that needs one:
//! a divergent branch, a barrier, a warp collective it cannot complete
//! alone, an exit, the reconvergence point, or the end of its time slice.
//! Registers live per warp in lane-major arrays (`reg * 32 + lane`), so one
//! decoded instruction is applied to 32 lanes in a tight loop. Loads, stores,
//! atomics and fences follow the memory model of [`crate::visibility`] and
//! report to [`crate::race`] and [`crate::sync`].
//!
//! Over 600 lines: one match arm per decoded operation, kept beside the
//! hot-path helpers they share.

use crate::account::{self, Stats};
use crate::decode::Kernel;
use crate::fmath;
use crate::ir::*;
use crate::memory::{GlobalMemory, LOCAL_WINDOW, SHARED_WINDOW};
use crate::mufu;
use crate::race::{Access, Cell, Conflict, Kind, Layout, Stamp, View};
use crate::sync::{self, BlockSync, Knowledge, Release, includes};
use crate::visibility::MemModel;

const FULL: u32 = u32::MAX;
/// The word a shuffle from a lane outside the member mask returns.
const POISON_WORD: u32 = u32::from_le_bytes(crate::memory::POISON);

/// Launch-wide values the special registers read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Consts {
    pub ntid: [u32; 3],
    pub nctaid: [u32; 3],
    pub ctaid: [u32; 3],
    pub nwarps: u32,
    pub nsm: u32,
    pub smid: u32,
    pub dyn_smem: u32,
    pub total_smem: u32,
    pub grid_id: u64,
}

/// One warp's registers and identity.
pub(crate) struct Warp {
    pub r32: Vec<u32>,
    pub r64: Vec<u64>,
    pub pred: Vec<u32>,
    pub tid: [[u32; 32]; 3],
    /// Linear thread index within the block, per lane.
    pub thread: [u32; 32],
    /// Lanes that exist (the last warp of a block may be partial).
    pub valid: u32,
    /// Lanes that have exited.
    pub exited: u32,
    /// Warp index in the block.
    pub index: u32,
    /// Completed full-mask `bar.warp.sync`s (race-detector ordering).
    pub wepoch: u32,
    /// Instructions issued (for `%clock`).
    pub clock: u64,
    /// Each lane's release clock (see [`crate::sync`]).
    pub sclock: [u32; 32],
    /// Lanes that acquired something through memory.
    pub know: u32,
    /// Local memory, `local_bytes` per lane.
    pub local: Vec<u8>,
    pub local_bytes: u32,
}

impl Warp {
    pub(crate) fn new(kernel: &Kernel, index: u32, block: [u32; 3]) -> Warp {
        let threads = block[0] * block[1] * block[2];
        let mut w = Warp {
            r32: vec![0; kernel.n32 as usize * 32],
            r64: vec![0; kernel.n64 as usize * 32],
            pred: vec![0; kernel.npred as usize],
            tid: [[0; 32]; 3],
            thread: [0; 32],
            valid: 0,
            exited: 0,
            index,
            wepoch: 0,
            clock: 0,
            sclock: [0; 32],
            know: 0,
            local: vec![0; kernel.local_bytes as usize * 32],
            local_bytes: kernel.local_bytes,
        };
        w.reset(index, block, threads);
        w
    }

    /// Prepares the warp for a new block (registers keep stale values, as on
    /// hardware: PTX defines no initial register contents).
    pub(crate) fn reset(&mut self, index: u32, block: [u32; 3], threads: u32) {
        self.index = index;
        self.valid = 0;
        self.exited = 0;
        self.wepoch = 0;
        self.clock = 0;
        self.sclock = [0; 32];
        self.know = 0;
        for lane in 0..32u32 {
            let t = index * 32 + lane;
            self.thread[lane as usize] = t;
            if t < threads {
                self.valid |= 1 << lane;
                self.tid[0][lane as usize] = t % block[0];
                self.tid[1][lane as usize] = (t / block[0]) % block[1];
                self.tid[2][lane as usize] = t / (block[0] * block[1]);
            }
        }
        self.pred.iter_mut().for_each(|p| *p = 0);
    }

    #[inline(always)]
    fn special32(&self, sp: Special, c: &Consts) -> [u32; 32] {
        let lanes = || -> [u32; 32] { std::array::from_fn(|l| l as u32) };
        match sp {
            Special::Tid(d) => self.tid[d as usize],
            Special::Ntid(d) => [c.ntid[d as usize]; 32],
            Special::Ctaid(d) => [c.ctaid[d as usize]; 32],
            Special::Nctaid(d) => [c.nctaid[d as usize]; 32],
            Special::LaneId => lanes(),
            Special::WarpId => [self.index; 32],
            Special::NWarpId => [c.nwarps; 32],
            Special::SmId => [c.smid; 32],
            Special::NSmId => [c.nsm; 32],
            Special::LaneMaskEq => std::array::from_fn(|l| 1u32 << l),
            Special::LaneMaskLt => std::array::from_fn(|l| (1u32 << l) - 1),
            Special::LaneMaskLe => std::array::from_fn(|l| ((1u64 << (l + 1)) - 1) as u32),
            Special::LaneMaskGt => std::array::from_fn(|l| !(((1u64 << (l + 1)) - 1) as u32)),
            Special::LaneMaskGe => std::array::from_fn(|l| !((1u32 << l) - 1)),
            Special::Clock => [self.clock as u32; 32],
            Special::DynamicSmemSize => [c.dyn_smem; 32],
            Special::TotalSmemSize => [c.total_smem; 32],
            Special::GridId => [c.grid_id as u32; 32],
        }
    }

    #[inline(always)]
    fn get32(&self, s: Src, c: &Consts) -> [u32; 32] {
        match s {
            Src::R(r) => {
                let r = r as usize * 32;
                self.r32[r..r + 32].try_into().expect("32 lanes")
            }
            Src::I(v) => [v as u32; 32],
            Src::Sp(sp) => self.special32(sp, c),
        }
    }

    #[inline(always)]
    fn get64(&self, s: Src, c: &Consts) -> [u64; 32] {
        match s {
            Src::R(r) => {
                let r = r as usize * 32;
                self.r64[r..r + 32].try_into().expect("32 lanes")
            }
            Src::I(v) => [v; 32],
            Src::Sp(Special::Clock) => [self.clock; 32],
            Src::Sp(Special::GridId) => [c.grid_id; 32],
            Src::Sp(sp) => self.special32(sp, c).map(u64::from),
        }
    }

    #[inline(always)]
    fn put32(&mut self, d: Reg, out: &[u32; 32], g: u32) {
        let d = d as usize * 32;
        let dst: &mut [u32; 32] = (&mut self.r32[d..d + 32]).try_into().expect("32 lanes");
        if g == FULL {
            *dst = *out;
        } else {
            for l in 0..32 {
                if g >> l & 1 != 0 {
                    dst[l] = out[l];
                }
            }
        }
    }

    #[inline(always)]
    fn put64(&mut self, d: Reg, out: &[u64; 32], g: u32) {
        let d = d as usize * 32;
        let dst: &mut [u64; 32] = (&mut self.r64[d..d + 32]).try_into().expect("32 lanes");
        if g == FULL {
            *dst = *out;
        } else {
            for l in 0..32 {
                if g >> l & 1 != 0 {
                    dst[l] = out[l];
                }
            }
        }
    }

    #[inline(always)]
    fn put_pred(&mut self, d: Reg, bits: u32, g: u32) {
        if let Some(p) = self.pred.get_mut(d as usize) {
            *p = (*p & !g) | (bits & g);
        }
    }

    /// The lanes of `mask` for which `p` holds.
    #[inline(always)]
    pub(crate) fn pred_mask(&self, p: PredSrc, mask: u32) -> u32 {
        if p.reg == u32::MAX {
            return if p.neg { 0 } else { mask };
        }
        let v = self.pred[p.reg as usize];
        mask & if p.neg { !v } else { v }
    }

    fn put_dst(&mut self, d: Dst, lane: usize, v: u64) {
        match d {
            Dst::R32(r) => self.r32[r as usize * 32 + lane] = v as u32,
            Dst::R64(r) => self.r64[r as usize * 32 + lane] = v,
            Dst::Sink => {}
        }
    }

    fn lane_value(&self, s: Src, wide: bool, lane: usize, c: &Consts) -> u64 {
        match (s, wide) {
            (Src::R(r), false) => self.r32[r as usize * 32 + lane] as u64,
            (Src::R(r), true) => self.r64[r as usize * 32 + lane],
            (Src::I(v), _) => v,
            (s, true) => self.get64(s, c)[lane],
            (s, false) => self.get32(s, c)[lane] as u64,
        }
    }
}

/// What went wrong while executing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// An access outside every mapped range (`CUDA_ERROR_ILLEGAL_ADDRESS`).
    IllegalAddress {
        /// The state space the address was used with.
        space: Space,
        /// The address (a state-space offset for shared and local).
        addr: u64,
        /// Bytes accessed.
        bytes: u32,
    },
    /// An access not aligned to its size (`CUDA_ERROR_MISALIGNED_ADDRESS`).
    Misaligned {
        /// The state space.
        space: Space,
        /// The address.
        addr: u64,
        /// Bytes accessed.
        bytes: u32,
    },
    /// A data race (shared or global memory).
    Race {
        /// Shared or global.
        space: Space,
        /// Shared offset or global address of the word.
        addr: u64,
        /// The two accesses.
        conflict: Conflict,
    },
    /// `trap` executed.
    Trap,
    /// A barrier used wrongly (divergent, reached after threads exited,
    /// deadlock) or a warp collective that cannot complete.
    Sync(String),
    /// More instructions than the launch limit (probably an infinite loop).
    InstructionLimit(u64),
}

/// A fault with where it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What.
    pub kind: FaultKind,
    /// The instruction.
    pub pc: u32,
    /// Thread index within the block, when one thread is to blame.
    pub thread: Option<u32>,
}

/// Why [`run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Reached `stop_at`.
    Reconverge,
    /// `taken` lanes branch to `target`, the others fall through to `pc + 1`.
    Diverge { pc: u32, taken: u32, target: u32 },
    /// All lanes arrived at `bar.sync` at `pc`.
    Barrier { pc: u32 },
    /// A warp collective at `pc` needs lanes this group does not hold.
    Collective { pc: u32 },
    /// `lanes` executed `exit` at `pc` (all of the group if equal to its mask).
    Exit { pc: u32, lanes: u32 },
    /// The time slice ended before `pc`.
    Budget { pc: u32 },
}

/// Race checking switches.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Check {
    pub shared: bool,
    pub global: bool,
}

/// Everything a warp's instructions can touch besides its registers.
pub(crate) struct Env<'a> {
    pub kernel: &'a Kernel,
    pub params: &'a [u8],
    pub consts: Consts,
    pub shared: &'a mut [u8],
    pub shared_shadow: &'a mut [Cell],
    pub shared_tag: u32,
    pub bepoch: u32,
    pub global: &'a mut GlobalMemory,
    pub check: Check,
    /// Threads per block, this block's index and the launch's operation.
    pub layout: Layout,
    /// Earlier operations running concurrently, with their threads per block.
    pub concurrent: &'a [(u32, u32)],
    /// Thread index of the block's thread 0 within the launch.
    pub thread_base: u32,
    pub stats: &'a mut Stats,
    /// The block's threads' synchronisation through memory.
    pub sync: &'a mut BlockSync,
    /// Release records, L1s, the nc snapshot.
    pub mm: &'a mut MemModel,
    /// The block's SM: an index into `mm.l1` (adversarial schedule), or
    /// [`NO_SM`] (every access goes to memory).
    pub sm: usize,
}

/// No L1: accesses go to memory (the deterministic schedule).
pub(crate) const NO_SM: usize = usize::MAX;

#[inline(always)]
fn f(x: u32) -> f32 {
    f32::from_bits(x)
}

#[inline(always)]
fn d(x: u64) -> f64 {
    f64::from_bits(x)
}

#[inline(always)]
fn map1<T: Copy, U: Copy + Default>(a: &[T; 32], op: impl Fn(T) -> U) -> [U; 32] {
    let mut out = [U::default(); 32];
    for l in 0..32 {
        out[l] = op(a[l]);
    }
    out
}

#[inline(always)]
fn map2<T: Copy, U: Copy + Default>(a: &[T; 32], b: &[T; 32], op: impl Fn(T, T) -> U) -> [U; 32] {
    let mut out = [U::default(); 32];
    for l in 0..32 {
        out[l] = op(a[l], b[l]);
    }
    out
}

#[inline(always)]
fn map3<T: Copy, U: Copy + Default>(
    a: &[T; 32],
    b: &[T; 32],
    c: &[T; 32],
    op: impl Fn(T, T, T) -> U,
) -> [U; 32] {
    let mut out = [U::default(); 32];
    for l in 0..32 {
        out[l] = op(a[l], b[l], c[l]);
    }
    out
}

/// `fma.rn.f32` on 32 lanes. Without the FMA instruction `f32::mul_add`
/// is a libm call per lane; with it (checked at run time) the loop is a few
/// vector instructions. Both are the correctly rounded fused multiply-add.
#[inline(always)]
fn fma_lanes(a: &[u32; 32], b: &[u32; 32], c: &[u32; 32]) -> [u32; 32] {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { fma_lanes_avx2(a, b, c) };
        }
    }
    map3(a, b, c, |x, y, z| {
        fmath::canonical(f(x).mul_add(f(y), f(z))).to_bits()
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn fma_lanes_avx2(a: &[u32; 32], b: &[u32; 32], c: &[u32; 32]) -> [u32; 32] {
    map3(a, b, c, |x, y, z| {
        fmath::canonical(f(x).mul_add(f(y), f(z))).to_bits()
    })
}

#[inline(always)]
fn bits_of(cond: impl Fn(usize) -> bool) -> u32 {
    let mut bits = 0u32;
    for l in 0..32 {
        bits |= (cond(l) as u32) << l;
    }
    bits
}

fn sext(v: u32, w: u8) -> u32 {
    if w >= 32 {
        v
    } else {
        (((v << (32 - w)) as i32) >> (32 - w)) as u32
    }
}

fn zext(v: u32, w: u8) -> u32 {
    if w >= 32 { v } else { v & ((1u32 << w) - 1) }
}

/// 32-bit integer operation on `w`-bit values (operands already normalised).
#[inline(always)]
fn i32_op(k: I32, w: u8, a: u32, b: u32, c: u32, e: u32) -> u32 {
    let wb = w as u32;
    match k {
        I32::Add => a.wrapping_add(b),
        I32::Sub => a.wrapping_sub(b),
        I32::MulLo => a.wrapping_mul(b),
        I32::MulHiU => ((a as u64 * b as u64) >> wb) as u32,
        I32::MulHiS => ((a as i32 as i64 * b as i32 as i64) >> wb) as u32,
        I32::DivU => a.checked_div(b).unwrap_or(u32::MAX),
        I32::DivS => {
            if b == 0 {
                u32::MAX
            } else {
                (a as i32).wrapping_div(b as i32) as u32
            }
        }
        I32::RemU => a.checked_rem(b).unwrap_or(a),
        I32::RemS => {
            if b == 0 {
                a
            } else {
                (a as i32).wrapping_rem(b as i32) as u32
            }
        }
        I32::MinU => a.min(b),
        I32::MinS => (a as i32).min(b as i32) as u32,
        I32::MaxU => a.max(b),
        I32::MaxS => (a as i32).max(b as i32) as u32,
        I32::And => a & b,
        I32::Or => a | b,
        I32::Xor => a ^ b,
        I32::Shl => {
            if b >= wb {
                0
            } else {
                a << b
            }
        }
        I32::ShrU => {
            if b >= wb {
                0
            } else {
                a >> b
            }
        }
        I32::ShrS => ((a as i32) >> b.min(31)) as u32,
        I32::MadLo => a.wrapping_mul(b).wrapping_add(c),
        I32::MadHiU => (((a as u64 * b as u64) >> wb) as u32).wrapping_add(c),
        I32::MadHiS => (((a as i32 as i64 * b as i32 as i64) >> wb) as u32).wrapping_add(c),
        I32::Neg => a.wrapping_neg(),
        I32::Not => !a,
        I32::Abs => (a as i32).wrapping_abs() as u32,
        I32::Cnot => (a == 0) as u32,
        I32::Popc => a.count_ones(),
        I32::Clz => a.leading_zeros(),
        I32::Brev => a.reverse_bits(),
        I32::Mov => a,
        I32::BfeU | I32::BfeS => {
            let pos = b & 0xff;
            let len = c & 0xff;
            if len == 0 {
                return 0;
            }
            let field = if pos >= 32 { 0 } else { a >> pos };
            let field = if len >= 32 {
                field
            } else {
                field & ((1u32 << len) - 1)
            };
            if k == I32::BfeS {
                // Sign bit: bit pos+len-1 of a, or a's sign if beyond.
                let sbit = pos.saturating_add(len).saturating_sub(1).min(31);
                let neg = (a >> sbit) & 1 != 0;
                if len >= 32 {
                    field
                } else if neg {
                    field | !((1u32 << len) - 1)
                } else {
                    field
                }
            } else {
                field
            }
        }
        I32::Bfi => {
            // bfi d, a, b, pos c, len e: insert a's low bits into b.
            let pos = c & 0xff;
            let len = e & 0xff;
            if len == 0 || pos >= 32 {
                return b;
            }
            let mask = if len >= 32 {
                u32::MAX
            } else {
                (1u32 << len) - 1
            } << pos;
            (b & !mask) | ((a << pos) & mask)
        }
        I32::Prmt => {
            let bytes = (a as u64) | ((b as u64) << 32);
            let mut r = 0u32;
            for i in 0..4 {
                let sel = (c >> (4 * i)) & 0xf;
                let byte = ((bytes >> (8 * (sel & 7))) & 0xff) as u32;
                let byte = if sel & 8 != 0 {
                    if byte & 0x80 != 0 { 0xff } else { 0 }
                } else {
                    byte
                };
                r |= byte << (8 * i);
            }
            r
        }
        I32::AddSat => (a as i32).saturating_add(b as i32) as u32,
        I32::SubSat => (a as i32).saturating_sub(b as i32) as u32,
    }
}

fn signed_i32(k: I32) -> bool {
    matches!(
        k,
        I32::MulHiS
            | I32::MadHiS
            | I32::DivS
            | I32::RemS
            | I32::MinS
            | I32::MaxS
            | I32::ShrS
            | I32::Abs
            | I32::Neg
            | I32::AddSat
            | I32::SubSat
    )
}

#[inline(always)]
fn i64_op(k: I64, a: u64, b: u64, c: u64) -> u64 {
    match k {
        I64::Add => a.wrapping_add(b),
        I64::Sub => a.wrapping_sub(b),
        I64::MulLo => a.wrapping_mul(b),
        I64::MulHiU => ((a as u128 * b as u128) >> 64) as u64,
        I64::MulHiS => ((a as i64 as i128 * b as i64 as i128) >> 64) as u64,
        I64::DivU => a.checked_div(b).unwrap_or(u64::MAX),
        I64::DivS => {
            if b == 0 {
                u64::MAX
            } else {
                (a as i64).wrapping_div(b as i64) as u64
            }
        }
        I64::RemU => a.checked_rem(b).unwrap_or(a),
        I64::RemS => {
            if b == 0 {
                a
            } else {
                (a as i64).wrapping_rem(b as i64) as u64
            }
        }
        I64::MinU => a.min(b),
        I64::MinS => (a as i64).min(b as i64) as u64,
        I64::MaxU => a.max(b),
        I64::MaxS => (a as i64).max(b as i64) as u64,
        I64::And => a & b,
        I64::Or => a | b,
        I64::Xor => a ^ b,
        I64::MadLo => a.wrapping_mul(b).wrapping_add(c),
        I64::Neg => a.wrapping_neg(),
        I64::Not => !a,
        I64::Abs => (a as i64).wrapping_abs() as u64,
        I64::Mov => a,
        I64::Brev => a.reverse_bits(),
    }
}

fn sat01(x: f32) -> f32 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

/// One f32 operation on one lane.
#[inline(always)]
fn f32_op(k: F32, rnd: Rnd, a: f32, b: f32, c: f32) -> f32 {
    let directed = matches!(rnd, Rnd::Rz | Rnd::Rm | Rnd::Rp);
    let r = match k {
        F32::Add if directed => fmath::add_directed(a, b, rnd),
        F32::Sub if directed => fmath::add_directed(a, -b, rnd),
        F32::Mul if directed => fmath::mul_directed(a, b, rnd),
        F32::Add => a + b,
        F32::Sub => a - b,
        F32::Mul => a * b,
        F32::Fma => a.mul_add(b, c),
        F32::Div => a / b,
        F32::Min => fmath::min32(a, b),
        F32::Max => fmath::max32(a, b),
        F32::Neg => -a,
        F32::Abs => a.abs(),
        F32::Sqrt => a.sqrt(),
        F32::Rsqrt => fmath::rsqrt_f32(a),
        F32::MufuRsqrt => mufu::rsqrt(a),
        F32::MufuRcp => mufu::rcp(a),
        F32::Rcp => 1.0 / a,
        F32::Ex2 => (a as f64).exp2() as f32,
        F32::Lg2 => (a as f64).log2() as f32,
        F32::Sin => (a as f64).sin() as f32,
        F32::Cos => (a as f64).cos() as f32,
        F32::Tanh => (a as f64).tanh() as f32,
        F32::Copysign => b.copysign(a),
    };
    // sm_90 returns 0x7fffffff for every NaN an f32 operation produces; the
    // sign operations stay bit operations (PTX leaves their NaN unspecified).
    if matches!(k, F32::Neg | F32::Abs | F32::Copysign) {
        r
    } else {
        fmath::canonical(r)
    }
}

#[inline(always)]
fn f64_op(k: F64, a: f64, b: f64, c: f64) -> f64 {
    match k {
        F64::Add => a + b,
        F64::Sub => a - b,
        F64::Mul => a * b,
        F64::Fma => a.mul_add(b, c),
        F64::Div => a / b,
        F64::Min => fmath::min64(a, b),
        F64::Max => fmath::max64(a, b),
        F64::Neg => -a,
        F64::Abs => a.abs(),
        F64::Sqrt => a.sqrt(),
        F64::Rsqrt => 1.0 / a.sqrt(),
        F64::Rcp => 1.0 / a,
        F64::Copysign => b.copysign(a),
    }
}

fn compare_f(cmp: Cmp, a: f64, b: f64) -> bool {
    let nan = a.is_nan() || b.is_nan();
    match cmp {
        Cmp::Eq => !nan && a == b,
        Cmp::Ne => !nan && a != b,
        Cmp::Lt => !nan && a < b,
        Cmp::Le => !nan && a <= b,
        Cmp::Gt => !nan && a > b,
        Cmp::Ge => !nan && a >= b,
        Cmp::Equ => nan || a == b,
        Cmp::Neu => nan || a != b,
        Cmp::Ltu => nan || a < b,
        Cmp::Leu => nan || a <= b,
        Cmp::Gtu => nan || a > b,
        Cmp::Geu => nan || a >= b,
        Cmp::Num => !nan,
        Cmp::Nan => nan,
    }
}

fn compare_ord<T: PartialOrd>(cmp: Cmp, a: T, b: T) -> bool {
    match cmp {
        Cmp::Eq => a == b,
        Cmp::Ne => a != b,
        Cmp::Lt => a < b,
        Cmp::Le => a <= b,
        Cmp::Gt => a > b,
        Cmp::Ge => a >= b,
        _ => false,
    }
}

fn compare_bits(env: &Env, warp: &Warp, cmp: Cmp, ty: CmpTy, a: Src, b: Src) -> u32 {
    let c = &env.consts;
    match ty {
        CmpTy::U32 { w } => {
            let (a, b) = (warp.get32(a, c), warp.get32(b, c));
            if w == 32 && cmp == Cmp::Eq {
                return bits_of(|l| a[l] == b[l]);
            }
            bits_of(|l| compare_ord(cmp, zext(a[l], w), zext(b[l], w)))
        }
        CmpTy::S32 { w } => {
            let (a, b) = (warp.get32(a, c), warp.get32(b, c));
            bits_of(|l| compare_ord(cmp, sext(a[l], w) as i32, sext(b[l], w) as i32))
        }
        CmpTy::U64 => {
            let (a, b) = (warp.get64(a, c), warp.get64(b, c));
            bits_of(|l| compare_ord(cmp, a[l], b[l]))
        }
        CmpTy::S64 => {
            let (a, b) = (warp.get64(a, c), warp.get64(b, c));
            bits_of(|l| compare_ord(cmp, a[l] as i64, b[l] as i64))
        }
        CmpTy::F32 => {
            let (a, b) = (warp.get32(a, c), warp.get32(b, c));
            bits_of(|l| compare_f(cmp, f(a[l]) as f64, f(b[l]) as f64))
        }
        CmpTy::F64 => {
            let (a, b) = (warp.get64(a, c), warp.get64(b, c));
            bits_of(|l| compare_f(cmp, d(a[l]), d(b[l])))
        }
    }
}

fn bool_op(k: BoolOp, a: u32, b: u32) -> u32 {
    match k {
        BoolOp::And => a & b,
        BoolOp::Or => a | b,
        BoolOp::Xor => a ^ b,
    }
}

/// Where a resolved access lands.
#[derive(Clone, Copy, Debug)]
enum Loc {
    Shared(usize),
    Local(usize),
    Global(usize, usize),
}

impl Env<'_> {
    fn fault<T>(&self, kind: FaultKind, pc: u32, thread: Option<u32>) -> Result<T, Fault> {
        Err(Fault { kind, pc, thread })
    }

    /// Resolves `len` bytes at `addr` used with `space` by `lane`.
    fn locate(
        &mut self,
        warp: &Warp,
        space: Space,
        addr: u64,
        len: u32,
        lane: usize,
        pc: u32,
    ) -> Result<(Loc, Space), Fault> {
        let (space, a) = match space {
            Space::Generic => {
                if (SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&addr) {
                    (Space::Shared, addr - SHARED_WINDOW)
                } else if (LOCAL_WINDOW..LOCAL_WINDOW + (1 << 32)).contains(&addr) {
                    (Space::Local, addr - LOCAL_WINDOW)
                } else {
                    (Space::Global, addr)
                }
            }
            Space::Const => (Space::Global, addr),
            s => (s, addr),
        };
        let thread = Some(warp.thread[lane]);
        if len > 1 && a % len as u64 != 0 {
            return self.fault(
                FaultKind::Misaligned {
                    space,
                    addr,
                    bytes: len,
                },
                pc,
                thread,
            );
        }
        let illegal = FaultKind::IllegalAddress {
            space,
            addr,
            bytes: len,
        };
        match space {
            Space::Shared => {
                if a.checked_add(len as u64)
                    .is_some_and(|e| e <= self.shared.len() as u64)
                {
                    Ok((Loc::Shared(a as usize), space))
                } else {
                    self.fault(illegal, pc, thread)
                }
            }
            Space::Local => {
                if a.checked_add(len as u64)
                    .is_some_and(|e| e <= warp.local_bytes as u64)
                {
                    Ok((
                        Loc::Local(lane * warp.local_bytes as usize + a as usize),
                        space,
                    ))
                } else {
                    self.fault(illegal, pc, thread)
                }
            }
            _ => match self.global.locate(a, len as u64) {
                Some(i) => {
                    let base = self.global.alloc_mut(i).base;
                    Ok((Loc::Global(i, (a - base) as usize), space))
                }
                None => self.fault(illegal, pc, thread),
            },
        }
    }

    fn bytes<'w>(&'w mut self, warp: &'w mut Warp, loc: Loc, len: usize) -> &'w mut [u8] {
        match loc {
            Loc::Shared(o) => &mut self.shared[o..o + len],
            Loc::Local(o) => &mut warp.local[o..o + len],
            Loc::Global(i, o) => &mut self.global.alloc_mut(i).data[o..o + len],
        }
    }

    /// Race check of an access to `len` bytes at `loc` by `lane`.
    #[allow(
        clippy::too_many_arguments,
        reason = "the decoded operands are passed unpacked, in the hot path"
    )]
    fn check_race(
        &mut self,
        warp: &Warp,
        loc: Loc,
        addr: u64,
        len: u32,
        lane: usize,
        acc: Access,
        pc: u32,
    ) -> Result<(), Fault> {
        let t = warp.thread[lane];
        let stamp = Stamp {
            thread: self.thread_base + t + 1,
            op: self.layout.op,
            bepoch: self.bepoch,
            wepoch: warp.wepoch,
            clock: warp.sclock[lane],
            pc,
        };
        let know = if warp.know >> lane & 1 != 0 {
            self.sync.knowledge(t)
        } else {
            None
        };
        let (cells, tag, off, space, keep) = match loc {
            Loc::Shared(o) if self.check.shared => (
                &mut *self.shared_shadow,
                self.shared_tag,
                o,
                Space::Shared,
                false,
            ),
            Loc::Global(i, o) if self.check.global => {
                let a = self.global.alloc_mut(i);
                if a.shadow.is_empty() {
                    a.shadow = vec![Cell::default(); a.data.len().div_ceil(4)];
                }
                (&mut a.shadow[..], self.layout.op, o, Space::Global, true)
            }
            _ => return Ok(()),
        };
        let view = View {
            block_threads: self.layout.block_threads,
            op: self.layout.op,
            concurrent: if keep { self.concurrent } else { &[] },
            know,
        };
        let first = off / 4;
        let last = (off + len as usize - 1) / 4;
        for (w, cell) in cells.iter_mut().enumerate().take(last + 1).skip(first) {
            if let Some(conflict) = cell.access(tag, stamp, acc, &view, keep) {
                let word_addr = addr - (off as u64 % 4) + ((w - first) as u64) * 4;
                return self.fault(
                    FaultKind::Race {
                        space,
                        addr: word_addr,
                        conflict,
                    },
                    pc,
                    Some(warp.thread[lane]),
                );
            }
        }
        Ok(())
    }

    /// Whether the race detector watches `loc` (and so follows the
    /// synchronisation through it).
    fn watched(&self, loc: Loc) -> bool {
        match loc {
            Loc::Shared(_) => self.check.shared,
            Loc::Global(..) => self.check.global,
            Loc::Local(_) => false,
        }
    }

    fn sync_key(&self, loc: Loc, addr: u64) -> u64 {
        match loc {
            Loc::Shared(o) => sync::shared_key(self.shared_tag, o as u64),
            _ => sync::global_key(addr),
        }
    }

    /// The acquire half of a strong read of `key` by `lane`: a release
    /// recorded there is acquired now (`.acquire`) or by the lane's next
    /// fence (`.relaxed`), if the two are morally strong.
    fn acquire_from(&mut self, warp: &mut Warp, lane: usize, key: u64, order: MemOrder) {
        if self.mm.sync.is_empty() {
            return;
        }
        let Some(rec) = self.mm.sync.get(key) else {
            return;
        };
        let (op, block) = (self.layout.op, self.layout.block);
        if !includes(rec.scope, rec.op, rec.block, op, block)
            || !includes(order.scope, op, block, rec.op, rec.block)
        {
            return;
        }
        let ts = self.sync.threads.entry(warp.thread[lane]).or_default();
        if order.acquires() {
            ts.know.join(&rec.know);
            warp.know |= 1 << lane;
        } else if ts.pending.len() < 64 {
            ts.pending.push(rec.clone());
        }
    }

    /// What `lane` releases now: what it acquired, its own accesses up to
    /// its release clock, and its block's earlier barrier intervals.
    fn released(&self, warp: &Warp, lane: usize) -> Knowledge {
        let t = warp.thread[lane];
        let mut k = self
            .sync
            .threads
            .get(&t)
            .map(|s| s.know.clone())
            .unwrap_or_default();
        k.add_thread(self.layout.op, self.thread_base + t + 1, warp.sclock[lane]);
        k.add_block(self.layout.op, self.layout.block, self.bepoch);
        k
    }

    /// The release half of a strong write to `key` by `lane`: a `.release`
    /// (or one after a fence) records what the lane releases; a relaxed
    /// store ends the location's release sequence, a read-modify-write
    /// continues it.
    fn release_to(&mut self, warp: &mut Warp, lane: usize, key: u64, order: MemOrder, rmw: bool) {
        let rec = if order.releases() {
            let know = self.released(warp, lane);
            warp.sclock[lane] += 1;
            Some((know, order.scope))
        } else if self.sync.threads.is_empty() {
            None
        } else {
            self.sync
                .threads
                .get(&warp.thread[lane])
                .and_then(|s| s.fence.clone())
                .map(|(k, fs)| (k, fs.min(order.scope)))
        };
        match rec {
            Some((know, scope)) => self.mm.sync.set(
                key,
                Release {
                    know,
                    scope,
                    op: self.layout.op,
                    block: self.layout.block,
                },
            ),
            None if !rmw => self.mm.sync.end(key),
            None => {}
        }
    }

    /// `fence.sc`/`fence.acq_rel`/`membar` at `scope` by `lane`: acquires
    /// what the lane's earlier relaxed reads saw (from writers the scope
    /// includes), and is released by its later strong writes.
    fn fence_lane(&mut self, warp: &mut Warp, lane: usize, scope: Scope) {
        let (op, block) = (self.layout.op, self.layout.block);
        let t = warp.thread[lane];
        let ts = self.sync.threads.entry(t).or_default();
        let sync::ThreadSync { know, pending, .. } = ts;
        pending.retain(|rec| {
            let covered = includes(scope, op, block, rec.op, rec.block);
            if covered {
                know.join(&rec.know);
            }
            !covered
        });
        if !know.is_empty() {
            warp.know |= 1 << lane;
        }
        let k = self.released(warp, lane);
        if let Some(ts) = self.sync.threads.get_mut(&t) {
            ts.fence = Some((k, scope));
        }
        warp.sclock[lane] += 1;
    }

    /// A full-mask `bar.warp.sync`: the warp's lanes learn what any knew.
    pub(crate) fn warp_synced(&mut self, warp: &mut Warp) {
        if warp.know == 0 {
            return;
        }
        let mut all = Knowledge::default();
        for l in lanes(warp.know) {
            if let Some(k) = self.sync.knowledge(warp.thread[l]) {
                all.join(k);
            }
        }
        let live = warp.valid & !warp.exited;
        for l in lanes(live) {
            self.sync
                .threads
                .entry(warp.thread[l])
                .or_default()
                .know
                .join(&all);
        }
        warp.know |= live;
    }

    /// A store or atomic is about to change allocation `i`: the launch's
    /// `ld.global.nc` snapshot of it is kept first.
    #[inline(always)]
    fn before_store(&mut self, i: usize) {
        if self.mm.snapshot != 0 {
            self.global.keep_snapshot(i, self.mm.snapshot);
        }
    }

    /// Reads `out.len()` bytes at `loc` (generic or global address `addr`)
    /// as this thread sees them.
    fn load_bytes(&mut self, warp: &Warp, loc: Loc, addr: u64, out: &mut [u8], order: MemOrder) {
        let len = out.len();
        match loc {
            Loc::Global(i, o) => {
                if order.sem == Sem::ReadOnly {
                    out.copy_from_slice(self.global.read_only(i, o, len, self.mm.snapshot));
                    return;
                }
                let global = &mut *self.global;
                match self.mm.l1.get_mut(self.sm) {
                    Some(l1) if order.strong().is_some_and(|s| s >= Scope::Gpu) => {
                        l1.write_back_range(global, addr, len as u64);
                        out.copy_from_slice(&global.alloc_mut(i).data[o..o + len]);
                        l1.refresh_range(global, addr, len as u64);
                    }
                    Some(l1) => l1.read(global, addr, out),
                    None => out.copy_from_slice(&global.alloc_mut(i).data[o..o + len]),
                }
            }
            Loc::Shared(o) => out.copy_from_slice(&self.shared[o..o + len]),
            Loc::Local(o) => out.copy_from_slice(&warp.local[o..o + len]),
        }
    }

    /// Writes `bytes` at `loc` (generic or global address `addr`).
    fn store_bytes(&mut self, warp: &mut Warp, loc: Loc, addr: u64, bytes: &[u8], order: MemOrder) {
        let len = bytes.len();
        match loc {
            Loc::Global(i, o) => {
                self.before_store(i);
                let global = &mut *self.global;
                match self.mm.l1.get_mut(self.sm) {
                    Some(l1) if order.strong().is_some_and(|s| s >= Scope::Gpu) => {
                        if order.releases() {
                            l1.flush(global);
                        }
                        l1.write_back_range(global, addr, len as u64);
                        global.alloc_mut(i).data[o..o + len].copy_from_slice(bytes);
                        l1.refresh_range(global, addr, len as u64);
                    }
                    Some(l1) => l1.write(global, addr, bytes),
                    None => global.alloc_mut(i).data[o..o + len].copy_from_slice(bytes),
                }
            }
            Loc::Shared(o) => self.shared[o..o + len].copy_from_slice(bytes),
            Loc::Local(o) => warp.local[o..o + len].copy_from_slice(bytes),
        }
    }

    /// An atomic read-modify-write of `len` bytes at `loc`: returns the old
    /// value. At `.gpu`/`.sys` scope it acts on device memory; at `.cta`
    /// scope on global memory, in the adversarial schedule, on the SM's L1
    /// (so `.cta` atomics of blocks on different SMs lose updates).
    fn rmw(
        &mut self,
        warp: &mut Warp,
        loc: Loc,
        addr: u64,
        len: usize,
        order: MemOrder,
        f: impl FnOnce(u64) -> u64,
    ) -> u64 {
        let apply = |bytes: &mut [u8]| {
            let old = read_le(bytes);
            bytes.copy_from_slice(&f(old).to_le_bytes()[..bytes.len()]);
            old
        };
        match loc {
            Loc::Global(i, o) => {
                self.before_store(i);
                let global = &mut *self.global;
                match self.mm.l1.get_mut(self.sm) {
                    Some(l1) if order.scope == Scope::Cta => {
                        let mut b = [0u8; 8];
                        l1.read(global, addr, &mut b[..len]);
                        let old = apply(&mut b[..len]);
                        l1.write(global, addr, &b[..len]);
                        old
                    }
                    Some(l1) => {
                        if order.releases() {
                            l1.flush(global);
                        }
                        l1.write_back_range(global, addr, len as u64);
                        let old = apply(&mut global.alloc_mut(i).data[o..o + len]);
                        l1.refresh_range(global, addr, len as u64);
                        if order.acquires() {
                            l1.invalidate(global);
                        }
                        old
                    }
                    None => apply(&mut global.alloc_mut(i).data[o..o + len]),
                }
            }
            Loc::Shared(o) => apply(&mut self.shared[o..o + len]),
            Loc::Local(o) => apply(&mut warp.local[o..o + len]),
        }
    }

    /// After an acquire at `.gpu`/`.sys` scope: this SM's L1 is dropped.
    fn acquire_l1(&mut self, order: MemOrder) {
        if order.acquires()
            && order.scope >= Scope::Gpu
            && let Some(l1) = self.mm.l1.get_mut(self.sm)
        {
            l1.invalidate(self.global);
        }
    }
}

fn addr_of(warp: &Warp, a: &Addr, lane: usize) -> u64 {
    let base = match a.base {
        AddrBase::R64(r) => warp.r64[r as usize * 32 + lane],
        AddrBase::R32(r) => warp.r32[r as usize * 32 + lane] as u64,
        AddrBase::Abs(v) => v,
    };
    base.wrapping_add(a.offset as u64)
}

fn read_le(b: &[u8]) -> u64 {
    let mut v = [0u8; 8];
    v[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(v)
}

fn extend(v: u64, size: u8, sext: bool) -> u64 {
    if !sext || size >= 8 {
        return v;
    }
    let sh = 64 - 8 * size as u32;
    (((v << sh) as i64) >> sh) as u64
}

fn lanes(mut m: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

#[allow(
    clippy::too_many_arguments,
    reason = "the decoded operands are passed unpacked, in the hot path"
)]
fn exec_ld(
    env: &mut Env,
    warp: &mut Warp,
    space: Space,
    dst: &[Dst; 4],
    n: u8,
    size: u8,
    sx: bool,
    addr: &Addr,
    order: MemOrder,
    g: u32,
    pc: u32,
) -> Result<(), Fault> {
    let len = n as u32 * size as u32;
    let mut shared_acc: [(u32, u64); 32] = [(0, 0); 32];
    let mut ns = 0;
    let mut global_acc = [0u64; 32];
    let mut ng = 0;
    // Broadcast: every lane reads the same shared bytes (the tiled kernel's
    // hot loop). Read and check them once, for two distinct lanes.
    let first = g.trailing_zeros() as usize;
    let a0 = addr_of(warp, addr, first);
    let uniform = order.sem == Sem::Weak
        && env.sm == NO_SM
        && g.count_ones() > 1
        && matches!(
            addr.base,
            AddrBase::R64(_) | AddrBase::R32(_) | AddrBase::Abs(_)
        )
        && lanes(g).all(|l| addr_of(warp, addr, l) == a0);
    if uniform {
        let (loc, sp) = env.locate(warp, space, a0, len, first, pc)?;
        if matches!(loc, Loc::Local(_)) {
            // Thread-private: fall through to the per-lane path.
        } else {
            let second = lanes(g).nth(1).expect("two lanes");
            let read = Access::weak(Kind::Read);
            env.check_race(warp, loc, a0, len, first, read, pc)?;
            env.check_race(warp, loc, a0, len, second, read, pc)?;
            let mut buf = [0u8; 32];
            buf[..len as usize].copy_from_slice(env.bytes(warp, loc, len as usize));
            for k in 0..n as usize {
                let v = extend(
                    read_le(&buf[k * size as usize..(k + 1) * size as usize]),
                    size,
                    sx,
                );
                for l in lanes(g) {
                    warp.put_dst(dst[k], l, v);
                }
            }
            let addr_acc = match loc {
                Loc::Global(..) => {
                    global_acc[0] = a0;
                    ng = 1;
                    0
                }
                Loc::Shared(o) => o as u64,
                Loc::Local(_) => 0,
            };
            if sp == Space::Shared {
                for l in lanes(g) {
                    shared_acc[ns] = (l as u32, addr_acc);
                    ns += 1;
                }
            }
            env.stats.request(
                &shared_acc[..ns],
                &global_acc[..ng],
                len,
                account::Access::Load,
            );
            return Ok(());
        }
    }
    let strong = order.strong();
    for l in lanes(g) {
        let a = addr_of(warp, addr, l);
        let (loc, sp) = env.locate(warp, space, a, len, l, pc)?;
        let acc = Access {
            kind: Kind::Read,
            strong,
            nc: order.sem == Sem::ReadOnly && matches!(loc, Loc::Global(..)),
        };
        env.check_race(warp, loc, a, len, l, acc, pc)?;
        let mut buf = [0u8; 32];
        env.load_bytes(warp, loc, a, &mut buf[..len as usize], order);
        for k in 0..n as usize {
            let v = extend(
                read_le(&buf[k * size as usize..(k + 1) * size as usize]),
                size,
                sx,
            );
            warp.put_dst(dst[k], l, v);
        }
        if strong.is_some() && env.watched(loc) {
            let key = env.sync_key(loc, a);
            env.acquire_from(warp, l, key, order);
        }
        match (loc, sp) {
            (Loc::Shared(o), _) => {
                shared_acc[ns] = (l as u32, o as u64);
                ns += 1;
            }
            (Loc::Global(..), _) => {
                global_acc[ng] = a;
                ng += 1;
            }
            _ => {}
        }
    }
    env.acquire_l1(order);
    env.stats.request(
        &shared_acc[..ns],
        &global_acc[..ng],
        len,
        account::Access::Load,
    );
    Ok(())
}

#[allow(
    clippy::too_many_arguments,
    reason = "the decoded operands are passed unpacked, in the hot path"
)]
fn exec_st(
    env: &mut Env,
    warp: &mut Warp,
    space: Space,
    src: &[(Src, bool); 4],
    n: u8,
    size: u8,
    addr: &Addr,
    order: MemOrder,
    g: u32,
    pc: u32,
) -> Result<(), Fault> {
    let len = n as u32 * size as u32;
    let mut shared_acc: [(u32, u64); 32] = [(0, 0); 32];
    let mut ns = 0;
    let mut global_acc = [0u64; 32];
    let mut ng = 0;
    let acc = Access {
        kind: Kind::Write,
        strong: order.strong(),
        nc: false,
    };
    for l in lanes(g) {
        let a = addr_of(warp, addr, l);
        let (loc, _) = env.locate(warp, space, a, len, l, pc)?;
        env.check_race(warp, loc, a, len, l, acc, pc)?;
        let mut buf = [0u8; 32];
        for k in 0..n as usize {
            let (s, wide) = src[k];
            let v = warp.lane_value(s, wide, l, &env.consts);
            let sz = size as usize;
            buf[k * sz..(k + 1) * sz].copy_from_slice(&v.to_le_bytes()[..sz]);
        }
        env.store_bytes(warp, loc, a, &buf[..len as usize], order);
        if env.watched(loc) && (acc.strong.is_some() || !env.mm.sync.is_empty()) {
            let key = env.sync_key(loc, a);
            if acc.strong.is_some() {
                env.release_to(warp, l, key, order, false);
            } else {
                env.mm.sync.end(key);
            }
        }
        match loc {
            Loc::Shared(o) => {
                shared_acc[ns] = (l as u32, o as u64);
                ns += 1;
            }
            Loc::Global(..) => {
                global_acc[ng] = a;
                ng += 1;
            }
            Loc::Local(_) => {}
        }
    }
    env.stats.request(
        &shared_acc[..ns],
        &global_acc[..ng],
        len,
        account::Access::Store,
    );
    Ok(())
}

fn atom_apply(op: AtomOp, ty: AtomTy, old: u64, b: u64, c: u64) -> u64 {
    match ty {
        AtomTy::F32 => {
            // atom/red.add.f32: round to nearest, subnormals flushed.
            let r = fmath::canonical(fmath::ftz32(
                fmath::ftz32(f(old as u32)) + fmath::ftz32(f(b as u32)),
            ));
            r.to_bits() as u64
        }
        AtomTy::F64 => (d(old) + d(b)).to_bits(),
        AtomTy::U32 | AtomTy::S32 => {
            let (o, b, c) = (old as u32, b as u32, c as u32);
            (match op {
                AtomOp::Add => o.wrapping_add(b),
                AtomOp::Min if ty == AtomTy::S32 => (o as i32).min(b as i32) as u32,
                AtomOp::Max if ty == AtomTy::S32 => (o as i32).max(b as i32) as u32,
                AtomOp::Min => o.min(b),
                AtomOp::Max => o.max(b),
                AtomOp::Inc => {
                    if o >= b {
                        0
                    } else {
                        o + 1
                    }
                }
                AtomOp::Dec => {
                    if o == 0 || o > b {
                        b
                    } else {
                        o - 1
                    }
                }
                AtomOp::And => o & b,
                AtomOp::Or => o | b,
                AtomOp::Xor => o ^ b,
                AtomOp::Exch => b,
                AtomOp::Cas => {
                    if o == b {
                        c
                    } else {
                        o
                    }
                }
            }) as u64
        }
        AtomTy::U64 | AtomTy::S64 => match op {
            AtomOp::Add => old.wrapping_add(b),
            AtomOp::Min if ty == AtomTy::S64 => (old as i64).min(b as i64) as u64,
            AtomOp::Max if ty == AtomTy::S64 => (old as i64).max(b as i64) as u64,
            AtomOp::Min => old.min(b),
            AtomOp::Max => old.max(b),
            AtomOp::And => old & b,
            AtomOp::Or => old | b,
            AtomOp::Xor => old ^ b,
            AtomOp::Exch => b,
            AtomOp::Cas => {
                if old == b {
                    c
                } else {
                    old
                }
            }
            AtomOp::Inc | AtomOp::Dec => old,
        },
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "the decoded operands are passed unpacked, in the hot path"
)]
fn exec_atom(
    env: &mut Env,
    warp: &mut Warp,
    space: Space,
    op: AtomOp,
    ty: AtomTy,
    dst: Dst,
    addr: &Addr,
    b: Src,
    c: Src,
    order: MemOrder,
    g: u32,
    pc: u32,
) -> Result<(), Fault> {
    let len = ty.size();
    let wide = len == 8;
    let mut shared_acc: [(u32, u64); 32] = [(0, 0); 32];
    let mut ns = 0;
    let mut global_acc = [0u64; 32];
    let mut ng = 0;
    let acc = Access {
        kind: Kind::Atomic,
        strong: Some(order.scope),
        nc: false,
    };
    // Lanes in order: the hardware serialises conflicting atomics in some order.
    for l in lanes(g) {
        let a = addr_of(warp, addr, l);
        let (loc, _) = env.locate(warp, space, a, len, l, pc)?;
        env.check_race(warp, loc, a, len, l, acc, pc)?;
        let bv = warp.lane_value(b, wide, l, &env.consts);
        let cv = warp.lane_value(c, wide, l, &env.consts);
        let old = env.rmw(warp, loc, a, len as usize, order, |old| {
            atom_apply(op, ty, old, bv, cv)
        });
        warp.put_dst(dst, l, old);
        if env.watched(loc) {
            let key = env.sync_key(loc, a);
            env.acquire_from(warp, l, key, order);
            env.release_to(warp, l, key, order, true);
        }
        match loc {
            Loc::Shared(o) => {
                shared_acc[ns] = (l as u32, o as u64);
                ns += 1;
            }
            Loc::Global(..) => {
                global_acc[ng] = a;
                ng += 1;
            }
            Loc::Local(_) => {}
        }
    }
    let access = if dst == Dst::Sink {
        account::Access::Atomic
    } else {
        account::Access::AtomicReturn
    };
    env.stats
        .request(&shared_acc[..ns], &global_acc[..ng], len, access);
    Ok(())
}

/// Executes a warp collective (`shfl.sync`, `vote.sync`) for the lanes `g`,
/// all of which are at this instruction.
pub(crate) fn exec_collective(env: &mut Env, warp: &mut Warp, inst: &Inst, g: u32) {
    let c = env.consts;
    match inst.op {
        Op::Shfl {
            mode,
            d,
            dp,
            a,
            b,
            c: cc,
            ..
        } => {
            let av = warp.get32(a, &c);
            let bv = warp.get32(b, &c);
            let cv = warp.get32(cc, &c);
            let mut out = av;
            let mut valid = 0u32;
            for l in lanes(g) {
                let lane = l as u32;
                let clamp = cv[l] & 0x1f;
                let seg = (cv[l] >> 8) & 0x1f;
                let min_lane = lane & seg;
                let max_lane = min_lane | (clamp & !seg);
                let (j, ok) = match mode {
                    ShflMode::Up => {
                        let j = lane as i32 - bv[l] as i32;
                        (j.max(0) as u32, j >= max_lane as i32)
                    }
                    ShflMode::Down => {
                        let j = lane + bv[l];
                        (j, j <= max_lane)
                    }
                    ShflMode::Bfly => {
                        let j = lane ^ bv[l];
                        (j, j <= max_lane)
                    }
                    ShflMode::Idx => {
                        let j = min_lane | (bv[l] & !seg);
                        (j, j <= max_lane)
                    }
                };
                // Out of range: the thread's own value, predicate false. A
                // source lane outside the member mask is undefined in PTX:
                // poison (what never-written memory reads as), so code that
                // relies on it shows.
                if ok && j < 32 {
                    if g >> j & 1 != 0 {
                        out[l] = av[j as usize];
                        valid |= 1 << l;
                    } else {
                        out[l] = POISON_WORD;
                    }
                }
            }
            warp.put32(d, &out, g);
            if dp != u32::MAX {
                warp.put_pred(dp, valid, g);
            }
        }
        Op::Vote { mode, d, a, .. } => {
            let p = warp.pred_mask(a, g);
            match mode {
                VoteMode::Ballot => warp.put32(d, &[p; 32], g),
                VoteMode::All => warp.put_pred(d, if p == g { u32::MAX } else { 0 }, g),
                VoteMode::Any => warp.put_pred(d, if p != 0 { u32::MAX } else { 0 }, g),
                VoteMode::Uni => warp.put_pred(d, if p == 0 || p == g { u32::MAX } else { 0 }, g),
            }
        }
        _ => {}
    }
}

/// The member mask of a collective as seen by `lane`.
pub(crate) fn member_mask(env: &Env, warp: &Warp, inst: &Inst, lane: usize) -> u32 {
    let m = match inst.op {
        Op::WarpSync { mask } | Op::Shfl { mask, .. } | Op::Vote { mask, .. } => mask,
        _ => return 0,
    };
    warp.get32(m, &env.consts)[lane]
}

/// Runs instructions from `pc` for the lanes `mask` of `warp` (see the module
/// documentation for when it returns). `lockstep` lets warp collectives
/// whose members are all in `mask` complete in place.
pub(crate) fn run(
    env: &mut Env,
    warp: &mut Warp,
    mut pc: u32,
    mask: u32,
    stop_at: u32,
    mut budget: u64,
    lockstep: bool,
) -> Result<Stop, Fault> {
    let kernel = env.kernel;
    let insts = &kernel.insts[..];
    let active = mask.count_ones() as u64;
    let c = env.consts;
    loop {
        if pc == stop_at {
            return Ok(Stop::Reconverge);
        }
        if budget == 0 {
            return Ok(Stop::Budget { pc });
        }
        budget -= 1;
        let Some(inst) = insts.get(pc as usize) else {
            // Falling off the end is an exit.
            return Ok(Stop::Exit { pc, lanes: mask });
        };
        env.stats.warp_instructions += 1;
        env.stats.thread_instructions += active;
        warp.clock += 1;
        let g = warp.pred_mask(inst.guard, mask);
        match &inst.op {
            Op::Bra { target, uni } => {
                if g == mask {
                    pc = *target;
                } else if g == 0 {
                    pc += 1;
                } else {
                    if *uni {
                        return env.fault(FaultKind::Sync("bra.uni diverged".into()), pc, None);
                    }
                    return Ok(Stop::Diverge {
                        pc,
                        taken: g,
                        target: *target,
                    });
                }
                continue;
            }
            Op::Exit => {
                if g == 0 {
                    pc += 1;
                    continue;
                }
                return Ok(Stop::Exit { pc, lanes: g });
            }
            Op::Trap => {
                if g == 0 {
                    pc += 1;
                    continue;
                }
                return env.fault(
                    FaultKind::Trap,
                    pc,
                    Some(warp.thread[g.trailing_zeros() as usize]),
                );
            }
            Op::BarSync { count } => {
                if g == 0 {
                    pc += 1;
                    continue;
                }
                if let Some(count) = count {
                    let want = c.ntid[0] * c.ntid[1] * c.ntid[2];
                    let lane = g.trailing_zeros() as usize;
                    let n = warp.get32(*count, &c)[lane];
                    if n != want.div_ceil(32) * 32 && n != want {
                        return env.fault(
                            FaultKind::Sync(format!(
                                "bar.sync with a thread count of {n} (the block has {want}): partial barriers are not supported"
                            )),
                            pc,
                            None,
                        );
                    }
                }
                if g != mask {
                    return env.fault(
                        FaultKind::Sync(
                            "bar.sync under a predicate that differs between threads".into(),
                        ),
                        pc,
                        None,
                    );
                }
                return Ok(Stop::Barrier { pc });
            }
            Op::WarpSync { .. } | Op::Shfl { .. } | Op::Vote { .. } => {
                if g == 0 {
                    pc += 1;
                    continue;
                }
                if lockstep && g == mask {
                    let live = warp.valid & !warp.exited;
                    let lane = g.trailing_zeros() as usize;
                    let members = member_mask(env, warp, inst, lane) & live;
                    let uniform =
                        lanes(g).all(|l| member_mask(env, warp, inst, l) & live == members);
                    if uniform && members & !g == 0 && members & g == members && members != 0 {
                        if let Op::WarpSync { .. } = inst.op {
                            if members == live {
                                warp.wepoch += 1;
                                env.stats.warp_barriers += 1;
                                env.warp_synced(warp);
                            }
                        } else {
                            exec_collective(env, warp, inst, g);
                        }
                        pc += 1;
                        continue;
                    }
                }
                return Ok(Stop::Collective { pc });
            }
            Op::ActiveMask { d } => {
                warp.put32(*d, &[mask; 32], g);
            }
            Op::Nop => {}
            op => {
                if g != 0 {
                    exec_op(env, warp, op, g, pc, &c)?;
                }
            }
        }
        pc += 1;
    }
}

/// The non-control operations.
#[inline(always)]
fn exec_op(
    env: &mut Env,
    warp: &mut Warp,
    op: &Op,
    g: u32,
    pc: u32,
    c: &Consts,
) -> Result<(), Fault> {
    match *op {
        Op::F32 {
            k,
            rnd,
            ftz,
            sat,
            d,
            a,
            b,
            c: cc,
        } => {
            let av = warp.get32(a, c);
            let out: [u32; 32] = if !ftz && !sat && matches!(rnd, Rnd::Rn | Rnd::None) {
                match k {
                    F32::Fma => {
                        let (bv, cv) = (warp.get32(b, c), warp.get32(cc, c));
                        fma_lanes(&av, &bv, &cv)
                    }
                    F32::Mul => map2(&av, &warp.get32(b, c), |x, y| {
                        fmath::canonical(f(x) * f(y)).to_bits()
                    }),
                    F32::Add => map2(&av, &warp.get32(b, c), |x, y| {
                        fmath::canonical(f(x) + f(y)).to_bits()
                    }),
                    F32::Sub => map2(&av, &warp.get32(b, c), |x, y| {
                        fmath::canonical(f(x) - f(y)).to_bits()
                    }),
                    _ => {
                        let (bv, cv) = (warp.get32(b, c), warp.get32(cc, c));
                        map3(&av, &bv, &cv, |x, y, z| {
                            f32_op(k, rnd, f(x), f(y), f(z)).to_bits()
                        })
                    }
                }
            } else {
                let (bv, cv) = (warp.get32(b, c), warp.get32(cc, c));
                map3(&av, &bv, &cv, |x, y, z| {
                    let fl = |v: u32| if ftz { fmath::ftz32(f(v)) } else { f(v) };
                    let mut r = f32_op(k, rnd, fl(x), fl(y), fl(z));
                    if sat {
                        r = sat01(r);
                    }
                    if ftz {
                        r = fmath::ftz32(r);
                    }
                    r.to_bits()
                })
            };
            warp.put32(d, &out, g);
        }
        Op::I32 {
            k,
            w,
            d,
            a,
            b,
            c: cc,
            e,
        } => {
            let av = warp.get32(a, c);
            let out = match k {
                I32::Mov => av,
                I32::Add if w == 32 => map2(&av, &warp.get32(b, c), |x, y| x.wrapping_add(y)),
                I32::MadLo if w == 32 => {
                    let (bv, cv) = (warp.get32(b, c), warp.get32(cc, c));
                    map3(&av, &bv, &cv, |x, y, z| x.wrapping_mul(y).wrapping_add(z))
                }
                _ => {
                    let (mut bv, mut cv, ev) =
                        (warp.get32(b, c), warp.get32(cc, c), warp.get32(e, c));
                    let mut av = av;
                    if w < 32 {
                        let norm = |v: u32| {
                            if signed_i32(k) {
                                sext(v, w)
                            } else {
                                zext(v, w)
                            }
                        };
                        av = av.map(norm);
                        if !matches!(k, I32::Shl | I32::ShrU | I32::ShrS) {
                            bv = bv.map(norm);
                        }
                        cv = cv.map(norm);
                    }
                    let mut out = [0u32; 32];
                    for l in 0..32 {
                        out[l] = i32_op(k, w, av[l], bv[l], cv[l], ev[l]);
                    }
                    if w < 32 {
                        out = out.map(|v| zext(v, w));
                    }
                    out
                }
            };
            warp.put32(d, &out, g);
        }
        Op::I64 { k, d, a, b, c: cc } => {
            let av = warp.get64(a, c);
            let out = match k {
                I64::Mov => av,
                I64::Add => map2(&av, &warp.get64(b, c), |x, y| x.wrapping_add(y)),
                _ => {
                    let (bv, cv) = (warp.get64(b, c), warp.get64(cc, c));
                    map3(&av, &bv, &cv, |x, y, z| i64_op(k, x, y, z))
                }
            };
            warp.put64(d, &out, g);
        }
        Op::Shift64 { k, d, a, b } => {
            let av = warp.get64(a, c);
            let bv = warp.get32(b, c);
            let mut out = [0u64; 32];
            for l in 0..32 {
                let s = bv[l];
                out[l] = match k {
                    I32::Shl => {
                        if s >= 64 {
                            0
                        } else {
                            av[l] << s
                        }
                    }
                    I32::ShrU => {
                        if s >= 64 {
                            0
                        } else {
                            av[l] >> s
                        }
                    }
                    _ => ((av[l] as i64) >> s.min(63)) as u64,
                };
            }
            warp.put64(d, &out, g);
        }
        Op::Count64 { k, d, a } => {
            let av = warp.get64(a, c);
            let out = map1(&av, |x| {
                if k == I32::Popc {
                    x.count_ones()
                } else {
                    x.leading_zeros()
                }
            });
            warp.put32(d, &out, g);
        }
        Op::Wide {
            signed,
            w,
            d,
            a,
            b,
            c: cc,
        } => {
            let (av, bv) = (warp.get32(a, c), warp.get32(b, c));
            if w == 32 {
                let mut out = map2(&av, &bv, |x, y| {
                    if signed {
                        (x as i32 as i64 * y as i32 as i64) as u64
                    } else {
                        x as u64 * y as u64
                    }
                });
                if let Some(cc) = cc {
                    let cv = warp.get64(cc, c);
                    for l in 0..32 {
                        out[l] = out[l].wrapping_add(cv[l]);
                    }
                }
                warp.put64(d, &out, g);
            } else {
                let mut out = map2(&av, &bv, |x, y| {
                    if signed {
                        (sext(x, 16) as i32).wrapping_mul(sext(y, 16) as i32) as u32
                    } else {
                        zext(x, 16).wrapping_mul(zext(y, 16))
                    }
                });
                if let Some(cc) = cc {
                    let cv = warp.get32(cc, c);
                    for l in 0..32 {
                        out[l] = out[l].wrapping_add(cv[l]);
                    }
                }
                warp.put32(d, &out, g);
            }
        }
        Op::F64 {
            k,
            d: dd,
            a,
            b,
            c: cc,
            ..
        } => {
            let (av, bv, cv) = (warp.get64(a, c), warp.get64(b, c), warp.get64(cc, c));
            let out = map3(&av, &bv, &cv, |x, y, z| {
                f64_op(k, d(x), d(y), d(z)).to_bits()
            });
            warp.put64(dd, &out, g);
        }
        Op::Setp {
            cmp,
            ty,
            d,
            d2,
            a,
            b,
            comb,
        } => {
            let bits = compare_bits(env, warp, cmp, ty, a, b);
            let (t, f_) = match comb {
                None => (bits, !bits),
                Some((k, p)) => {
                    let pv = warp.pred_mask(p, u32::MAX);
                    (bool_op(k, bits, pv), bool_op(k, !bits, pv))
                }
            };
            warp.put_pred(d, t, g);
            if d2 != u32::MAX {
                warp.put_pred(d2, f_, g);
            }
        }
        Op::Set {
            cmp,
            ty,
            d,
            float,
            a,
            b,
        } => {
            let bits = compare_bits(env, warp, cmp, ty, a, b);
            let one = if float { 1.0f32.to_bits() } else { u32::MAX };
            let out: [u32; 32] = std::array::from_fn(|l| if bits >> l & 1 != 0 { one } else { 0 });
            warp.put32(d, &out, g);
        }
        Op::Selp { wide, d, a, b, p } => {
            let pv = warp.pred_mask(p, u32::MAX);
            if wide {
                let (av, bv) = (warp.get64(a, c), warp.get64(b, c));
                let out: [u64; 32] =
                    std::array::from_fn(|l| if pv >> l & 1 != 0 { av[l] } else { bv[l] });
                warp.put64(d, &out, g);
            } else {
                let (av, bv) = (warp.get32(a, c), warp.get32(b, c));
                let out: [u32; 32] =
                    std::array::from_fn(|l| if pv >> l & 1 != 0 { av[l] } else { bv[l] });
                warp.put32(d, &out, g);
            }
        }
        Op::PredLogic { k, d, a, b } => {
            let av = warp.pred_mask(a, u32::MAX);
            let bits = match k {
                None => av,
                Some(k) => bool_op(k, av, warp.pred_mask(b, u32::MAX)),
            };
            warp.put_pred(d, bits, g);
        }
        Op::Pack64 { d, lo, hi } => {
            let (lv, hv) = (warp.get32(lo, c), warp.get32(hi, c));
            let out = map2(&lv, &hv, |l, h| (l as u64) | ((h as u64) << 32));
            warp.put64(d, &out, g);
        }
        Op::Unpack64 { lo, hi, a } => {
            let av = warp.get64(a, c);
            for l in lanes(g) {
                warp.put_dst(lo, l, av[l] & 0xffff_ffff);
                warp.put_dst(hi, l, av[l] >> 32);
            }
        }
        Op::Cvt {
            to,
            from,
            rnd,
            sat,
            ftz,
            d,
            a,
            a_wide,
        } => {
            let av: [u64; 32] = if a_wide {
                warp.get64(a, c)
            } else {
                warp.get32(a, c).map(u64::from)
            };
            if let (NumTy::F32, NumTy::F64, false, false, Rnd::None | Rnd::Rn) =
                (from, to, sat, ftz, rnd)
            {
                // The energy kernel's widening: exact.
                for l in lanes(g) {
                    warp.put_dst(d, l, (f(av[l] as u32) as f64).to_bits());
                }
            } else {
                for l in lanes(g) {
                    warp.put_dst(d, l, fmath::convert(av[l], from, to, rnd, sat, ftz));
                }
            }
        }
        Op::Cvta {
            to,
            space,
            d,
            a,
            narrow,
        } => {
            let window = match space {
                Space::Shared => SHARED_WINDOW,
                Space::Local => LOCAL_WINDOW,
                _ => 0,
            };
            if narrow {
                let av = warp.get32(a, c);
                let out = map1(&av, |x| {
                    if to {
                        (x as u64).wrapping_sub(window) as u32
                    } else {
                        (x as u64).wrapping_add(window) as u32
                    }
                });
                warp.put32(d, &out, g);
            } else {
                let av = warp.get64(a, c);
                let out = map1(&av, |x| {
                    if to {
                        x.wrapping_sub(window)
                    } else {
                        x.wrapping_add(window)
                    }
                });
                warp.put64(d, &out, g);
            }
        }
        Op::LdParam {
            dst,
            n,
            size,
            offset,
            sext: sx,
        } => {
            for (k, &dk) in dst.iter().enumerate().take(n as usize) {
                let o = offset as usize + k * size as usize;
                let Some(bytes) = env.params.get(o..o + size as usize) else {
                    return env.fault(
                        FaultKind::IllegalAddress {
                            space: Space::Generic,
                            addr: o as u64,
                            bytes: size as u32,
                        },
                        pc,
                        None,
                    );
                };
                let v = extend(read_le(bytes), size, sx);
                match dk {
                    Dst::R32(r) => warp.put32(r, &[v as u32; 32], g),
                    Dst::R64(r) => warp.put64(r, &[v; 32], g),
                    Dst::Sink => {}
                }
            }
        }
        Op::Ld {
            space,
            ref dst,
            n,
            size,
            sext: sx,
            ref addr,
            order,
        } => exec_ld(env, warp, space, dst, n, size, sx, addr, order, g, pc)?,
        Op::St {
            space,
            ref src,
            n,
            size,
            ref addr,
            order,
        } => exec_st(env, warp, space, src, n, size, addr, order, g, pc)?,
        Op::Atom {
            space,
            op,
            ty,
            d,
            ref addr,
            b,
            c: cc,
            order,
        } => exec_atom(env, warp, space, op, ty, d, addr, b, cc, order, g, pc)?,
        Op::Fence { scope } => {
            if env.check.shared || env.check.global {
                for l in lanes(g) {
                    env.fence_lane(warp, l, scope);
                }
            }
            if scope >= Scope::Gpu
                && let Some(l1) = env.mm.l1.get_mut(env.sm)
            {
                l1.invalidate(env.global);
            }
        }
        Op::Bra { .. }
        | Op::Exit
        | Op::Trap
        | Op::BarSync { .. }
        | Op::WarpSync { .. }
        | Op::Shfl { .. }
        | Op::Vote { .. }
        | Op::ActiveMask { .. }
        | Op::Nop => unreachable!("control operations are handled by run"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_fma_is_the_correctly_rounded_fma() {
        let mut s = 0x9e37_79b9u32;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            s
        };
        let special = [
            0u32,
            0x8000_0000,
            1,
            0x807f_ffff,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0x7f7f_ffff,
            0x3f80_0001,
        ];
        for round in 0..2000 {
            let mut a = [0u32; 32];
            let mut b = [0u32; 32];
            let mut c = [0u32; 32];
            for l in 0..32 {
                let pick = |v: u32, k: usize| {
                    if round % 7 == 0 {
                        special[(v as usize + k) % special.len()]
                    } else {
                        v
                    }
                };
                a[l] = pick(next(), l);
                b[l] = pick(next(), l + 1);
                c[l] = pick(next(), l + 2);
            }
            let got = fma_lanes(&a, &b, &c);
            for l in 0..32 {
                let want = f(a[l]).mul_add(f(b[l]), f(c[l]));
                assert!(
                    got[l] == want.to_bits() || (want.is_nan() && f(got[l]).is_nan()),
                    "fma({:#x}, {:#x}, {:#x})",
                    a[l],
                    b[l],
                    c[l]
                );
            }
        }
    }
}
