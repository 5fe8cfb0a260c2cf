//! The pre-decoded instruction set the interpreter executes.
//!
//! Every register operand is an index into one of three per-warp banks
//! (32-bit values, 64-bit values, predicates as lane masks), every branch
//! target an instruction index, every symbol an offset: executing an
//! instruction never looks up a name. Adding an opcode is one arm in
//! [`decode`](crate::decode) producing one of these variants (most new
//! arithmetic is one more [`I32`]/[`F32`]... kind) and one arm in
//! [`exec`](crate::exec).
//! (Over 600 lines: one instruction set, one file; its enums reference each other.)

/// A register index within its bank.
pub type Reg = u32;

/// A source operand; its width is implied by the instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Src {
    /// A register of the bank the instruction reads.
    R(Reg),
    /// An immediate (bits, zero-extended).
    I(u64),
    /// A special register (`%tid.x`, `%laneid`, ...).
    Sp(Special),
}

/// Special registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// `%tid.{x,y,z}`
    Tid(u8),
    /// `%ntid.{x,y,z}`
    Ntid(u8),
    /// `%ctaid.{x,y,z}`
    Ctaid(u8),
    /// `%nctaid.{x,y,z}`
    Nctaid(u8),
    /// `%laneid`
    LaneId,
    /// `%warpid` (the warp's index in its block)
    WarpId,
    /// `%nwarpid`
    NWarpId,
    /// `%smid` (always 0)
    SmId,
    /// `%nsmid`
    NSmId,
    /// `%lanemask_eq`
    LaneMaskEq,
    /// `%lanemask_lt`
    LaneMaskLt,
    /// `%lanemask_le`
    LaneMaskLe,
    /// `%lanemask_gt`
    LaneMaskGt,
    /// `%lanemask_ge`
    LaneMaskGe,
    /// `%clock`, `%clock64`: the warp's instruction count (deterministic).
    Clock,
    /// `%dynamic_smem_size`
    DynamicSmemSize,
    /// `%total_smem_size`
    TotalSmemSize,
    /// `%gridid` (the launch's sequence number)
    GridId,
}

/// A destination register in a bank chosen by its declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dst {
    /// 32-bit bank (also holds 8- and 16-bit registers, zero-extended).
    R32(Reg),
    /// 64-bit bank.
    R64(Reg),
    /// Discarded (`_`).
    Sink,
}

/// A predicate operand, possibly negated (`!%p`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PredSrc {
    /// Predicate register; [`PredSrc::TRUE`]'s is `u32::MAX`.
    pub reg: Reg,
    /// Negated.
    pub neg: bool,
}

impl PredSrc {
    /// The constant `true` (an absent guard).
    pub const TRUE: PredSrc = PredSrc {
        reg: u32::MAX,
        neg: false,
    };
}

/// State spaces of memory instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// No state space: a generic address, resolved per access.
    Generic,
    /// `.global`
    Global,
    /// `.shared` (this block's shared memory; shared-window offsets)
    Shared,
    /// `.local` (the thread's own local memory)
    Local,
    /// `.const` (treated as read-only global memory)
    Const,
}

/// The scope of a strong memory operation or a fence: the threads it
/// orders with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// `.cta`: the threads of the block.
    Cta,
    /// `.gpu` (`membar.gl`): every thread of the device.
    Gpu,
    /// `.sys`: the device and the host.
    Sys,
}

/// The memory-model semantics of a load, store or atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sem {
    /// Plain (`.weak`, the default for loads and stores): orders nothing.
    Weak,
    /// `.relaxed` (and `.volatile`, relaxed at `.sys`); atomics without a
    /// `.sem`.
    Relaxed,
    /// `.acquire`
    Acquire,
    /// `.release`
    Release,
    /// `.acq_rel` (atomics)
    AcqRel,
    /// `ld.global.nc` and `ldu`: the non-coherent read-only path.
    ReadOnly,
}

/// Semantics and scope of a memory instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemOrder {
    /// Weak, relaxed, acquire, release, read-only.
    pub sem: Sem,
    /// The scope (`.gpu` where the instruction names none).
    pub scope: Scope,
}

impl MemOrder {
    /// A plain access.
    pub const WEAK: MemOrder = MemOrder {
        sem: Sem::Weak,
        scope: Scope::Gpu,
    };
    /// An atomic without qualifiers (`.relaxed.gpu`).
    pub const ATOMIC: MemOrder = MemOrder {
        sem: Sem::Relaxed,
        scope: Scope::Gpu,
    };

    /// The scope of a strong access; `None` for weak and read-only ones.
    pub fn strong(self) -> Option<Scope> {
        match self.sem {
            Sem::Weak | Sem::ReadOnly => None,
            _ => Some(self.scope),
        }
    }

    /// Whether it has acquire semantics.
    pub fn acquires(self) -> bool {
        matches!(self.sem, Sem::Acquire | Sem::AcqRel)
    }

    /// Whether it has release semantics.
    pub fn releases(self) -> bool {
        matches!(self.sem, Sem::Release | Sem::AcqRel)
    }
}

/// The base of an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrBase {
    /// A 64-bit register.
    R64(Reg),
    /// A 32-bit register (32-bit shared or local addressing).
    R32(Reg),
    /// A constant (a symbol's offset, or an absolute address).
    Abs(u64),
}

/// `[base + offset]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Addr {
    /// The base.
    pub base: AddrBase,
    /// The constant offset.
    pub offset: i64,
}

/// Rounding modes of floating-point instructions and conversions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rnd {
    /// No modifier.
    None,
    /// `.rn`: to nearest even.
    Rn,
    /// `.rz`: toward zero.
    Rz,
    /// `.rm`: toward minus infinity.
    Rm,
    /// `.rp`: toward plus infinity.
    Rp,
    /// `.rni`: to nearest integer, ties to even.
    Rni,
    /// `.rzi`: to integer toward zero.
    Rzi,
    /// `.rmi`: to integer toward minus infinity.
    Rmi,
    /// `.rpi`: to integer toward plus infinity.
    Rpi,
}

/// Integer operations on the 32-bit bank (`w` gives the operand width).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum I32 {
    /// `add`
    Add,
    /// `sub`
    Sub,
    /// `mul.lo`
    MulLo,
    /// `mul.hi.u*`
    MulHiU,
    /// `mul.hi.s*`
    MulHiS,
    /// `div.u*`
    DivU,
    /// `div.s*`
    DivS,
    /// `rem.u*`
    RemU,
    /// `rem.s*`
    RemS,
    /// `min.u*`
    MinU,
    /// `min.s*`
    MinS,
    /// `max.u*`
    MaxU,
    /// `max.s*`
    MaxS,
    /// `and.b*`
    And,
    /// `or.b*`
    Or,
    /// `xor.b*`
    Xor,
    /// `shl.b*` (amounts past the width give 0)
    Shl,
    /// `shr.u*`
    ShrU,
    /// `shr.s*` (arithmetic)
    ShrS,
    /// `mad.lo` (a * b + c)
    MadLo,
    /// `mad.hi.u*`
    MadHiU,
    /// `mad.hi.s*`
    MadHiS,
    /// `neg.s*`
    Neg,
    /// `not.b*`
    Not,
    /// `abs.s*`
    Abs,
    /// `cnot.b*`
    Cnot,
    /// `popc.b32`
    Popc,
    /// `clz.b32`
    Clz,
    /// `brev.b32`
    Brev,
    /// `mov.b32` / `mov.u32`
    Mov,
    /// `bfe.u32` (a, pos b, len c)
    BfeU,
    /// `bfe.s32`
    BfeS,
    /// `bfi.b32` (insert a into b at pos c, len d: encoded with `d` in `e`)
    Bfi,
    /// `prmt.b32` (default mode)
    Prmt,
    /// `add.sat.s32`
    AddSat,
    /// `sub.sat.s32`
    SubSat,
}

/// Integer operations on the 64-bit bank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum I64 {
    /// `add`
    Add,
    /// `sub`
    Sub,
    /// `mul.lo`
    MulLo,
    /// `mul.hi.u64`
    MulHiU,
    /// `mul.hi.s64`
    MulHiS,
    /// `div.u64`
    DivU,
    /// `div.s64`
    DivS,
    /// `rem.u64`
    RemU,
    /// `rem.s64`
    RemS,
    /// `min.u64`
    MinU,
    /// `min.s64`
    MinS,
    /// `max.u64`
    MaxU,
    /// `max.s64`
    MaxS,
    /// `and.b64`
    And,
    /// `or.b64`
    Or,
    /// `xor.b64`
    Xor,
    /// `mad.lo.*64`
    MadLo,
    /// `neg.s64`
    Neg,
    /// `not.b64`
    Not,
    /// `abs.s64`
    Abs,
    /// `mov.b64`
    Mov,
    /// `brev.b64`
    Brev,
}

/// `f32` operations (all on the 32-bit bank).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum F32 {
    /// `add`
    Add,
    /// `sub`
    Sub,
    /// `mul`
    Mul,
    /// `fma` / `mad` (a * b + c, one rounding)
    Fma,
    /// `div.rn`, and `div.approx`/`div.full` under `SOFTCUDA_MUFU=ieee`
    /// (computed exactly rounded)
    Div,
    /// `min` (NaN-ignoring, as PTX)
    Min,
    /// `max`
    Max,
    /// `neg`
    Neg,
    /// `abs`
    Abs,
    /// `sqrt.rn` (and `sqrt.approx` under `SOFTCUDA_MUFU=ieee`)
    Sqrt,
    /// `rsqrt.approx` as the correctly rounded 1/sqrt
    /// ([`crate::fmath::rsqrt_f32`]; `SOFTCUDA_MUFU=ieee` only)
    Rsqrt,
    /// `rsqrt.approx.ftz.f32` as sm_90 computes it ([`crate::mufu::rsqrt`])
    MufuRsqrt,
    /// `rcp.rn` (and `rcp.approx` under `SOFTCUDA_MUFU=ieee`): correctly rounded
    Rcp,
    /// `rcp.approx.ftz.f32` as sm_90 computes it ([`crate::mufu::rcp`])
    MufuRcp,
    /// `ex2.approx`
    Ex2,
    /// `lg2.approx`
    Lg2,
    /// `sin.approx`
    Sin,
    /// `cos.approx`
    Cos,
    /// `tanh.approx`
    Tanh,
    /// `copysign` (sign of a, magnitude of b)
    Copysign,
}

/// `f64` operations (all on the 64-bit bank).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum F64 {
    /// `add`
    Add,
    /// `sub`
    Sub,
    /// `mul`
    Mul,
    /// `fma` / `mad`
    Fma,
    /// `div`
    Div,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `neg`
    Neg,
    /// `abs`
    Abs,
    /// `sqrt`
    Sqrt,
    /// `rsqrt.approx.f64` (correctly rounded; `SOFTCUDA_MUFU=ieee` only)
    Rsqrt,
    /// `rcp`
    Rcp,
    /// `copysign`
    Copysign,
}

/// Comparison operators of `setp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `eq`
    Eq,
    /// `ne`
    Ne,
    /// `lt` (`lo` for unsigned)
    Lt,
    /// `le` (`ls`)
    Le,
    /// `gt` (`hi`)
    Gt,
    /// `ge` (`hs`)
    Ge,
    /// `equ`: equal or unordered
    Equ,
    /// `neu`
    Neu,
    /// `ltu`
    Ltu,
    /// `leu`
    Leu,
    /// `gtu`
    Gtu,
    /// `geu`
    Geu,
    /// `num`: neither is NaN
    Num,
    /// `nan`: either is NaN
    Nan,
}

/// The operand type of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpTy {
    /// Unsigned (or bit) integers of `w` bits, 32-bit bank.
    U32 {
        /// 8, 16 or 32.
        w: u8,
    },
    /// Signed integers of `w` bits, 32-bit bank.
    S32 {
        /// 8, 16 or 32.
        w: u8,
    },
    /// Unsigned 64-bit.
    U64,
    /// Signed 64-bit.
    S64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

/// Boolean combination of `setp` and the `.pred` logic instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    /// `and`
    And,
    /// `or`
    Or,
    /// `xor`
    Xor,
}

/// Atomic operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomOp {
    /// `add`
    Add,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `inc` (wrapping at b)
    Inc,
    /// `dec`
    Dec,
    /// `and`
    And,
    /// `or`
    Or,
    /// `xor`
    Xor,
    /// `exch`
    Exch,
    /// `cas` (compare b, swap in c)
    Cas,
}

/// The value type of an atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomTy {
    /// `.u32` / `.b32`
    U32,
    /// `.s32`
    S32,
    /// `.u64` / `.b64`
    U64,
    /// `.s64`
    S64,
    /// `.f32` (flush-to-zero, round to nearest, as PTX specifies)
    F32,
    /// `.f64`
    F64,
}

impl AtomTy {
    /// Size in bytes.
    pub fn size(self) -> u32 {
        match self {
            AtomTy::U32 | AtomTy::S32 | AtomTy::F32 => 4,
            _ => 8,
        }
    }
}

/// A numeric type for conversions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumTy {
    /// Unsigned integer of this many bits.
    U(u8),
    /// Signed integer of this many bits.
    S(u8),
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `f16` (bits in the low half of a 32-bit register)
    F16,
}

impl NumTy {
    /// Whether values live in the 64-bit bank.
    pub fn wide(self) -> bool {
        matches!(self, NumTy::U(64) | NumTy::S(64) | NumTy::F64)
    }
}

/// `shfl.sync` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    /// `.idx`
    Idx,
    /// `.up`
    Up,
    /// `.down`
    Down,
    /// `.bfly`
    Bfly,
}

/// `vote.sync` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteMode {
    /// `.all`
    All,
    /// `.any`
    Any,
    /// `.uni`
    Uni,
    /// `.ballot.b32`
    Ballot,
}

/// One decoded operation.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// 32-bit integer arithmetic on `w`-bit operands.
    I32 {
        /// Operation.
        k: I32,
        /// Operand width in bits: 8, 16 or 32.
        w: u8,
        /// Destination (32-bit bank).
        d: Reg,
        /// Sources (unused ones are `I(0)`).
        a: Src,
        /// Second source.
        b: Src,
        /// Third source.
        c: Src,
        /// Fourth source (`bfi` only).
        e: Src,
    },
    /// 64-bit integer arithmetic.
    I64 {
        /// Operation.
        k: I64,
        /// Destination (64-bit bank).
        d: Reg,
        /// Sources.
        a: Src,
        /// Second source.
        b: Src,
        /// Third source.
        c: Src,
    },
    /// 64-bit shifts: the amount is a 32-bit operand.
    Shift64 {
        /// `shl`, `shr.u` or `shr.s` (as [`I32`] kinds).
        k: I32,
        /// Destination.
        d: Reg,
        /// Value (64-bit).
        a: Src,
        /// Amount (32-bit).
        b: Src,
    },
    /// `popc.b64`, `clz.b64`: 64-bit source, 32-bit result.
    Count64 {
        /// `Popc` or `Clz`.
        k: I32,
        /// Destination (32-bit bank).
        d: Reg,
        /// Source (64-bit).
        a: Src,
    },
    /// `mul.wide` / `mad.wide`: `w`-bit sources, `2w`-bit result.
    Wide {
        /// Signed operands.
        signed: bool,
        /// Source width: 16 (result in the 32-bit bank) or 32 (64-bit bank).
        w: u8,
        /// Destination.
        d: Reg,
        /// Sources.
        a: Src,
        /// Second source.
        b: Src,
        /// Addend for `mad.wide` (same bank as `d`), `None` for `mul.wide`.
        c: Option<Src>,
    },
    /// `f32` arithmetic.
    F32 {
        /// Operation.
        k: F32,
        /// Rounding (`.rn` is exact; others see [`crate::fmath`]).
        rnd: Rnd,
        /// `.ftz`: subnormal inputs and results flushed to zero.
        ftz: bool,
        /// `.sat`: result clamped to [0, 1].
        sat: bool,
        /// Destination.
        d: Reg,
        /// Sources.
        a: Src,
        /// Second source.
        b: Src,
        /// Third source.
        c: Src,
    },
    /// `f64` arithmetic.
    F64 {
        /// Operation.
        k: F64,
        /// Rounding.
        rnd: Rnd,
        /// Destination.
        d: Reg,
        /// Sources.
        a: Src,
        /// Second source.
        b: Src,
        /// Third source.
        c: Src,
    },
    /// `setp`: compare, optionally combine with a predicate, write one or
    /// two predicates.
    Setp {
        /// Comparison.
        cmp: Cmp,
        /// Operand type.
        ty: CmpTy,
        /// Predicate destination.
        d: Reg,
        /// Complement destination (`%p|%q`), `u32::MAX` if absent.
        d2: Reg,
        /// Sources.
        a: Src,
        /// Second source.
        b: Src,
        /// `.and/.or/.xor` with a predicate.
        comb: Option<(BoolOp, PredSrc)>,
    },
    /// `set.cmp.u32.type`: 0xFFFFFFFF or 0 (or 1.0f / 0.0f with `.f32`).
    Set {
        /// Comparison.
        cmp: Cmp,
        /// Operand type.
        ty: CmpTy,
        /// Destination (32-bit bank).
        d: Reg,
        /// Result as f32 1.0/0.0 rather than all-ones/0.
        float: bool,
        /// Sources.
        a: Src,
        /// Second source.
        b: Src,
    },
    /// `selp`: `d = p ? a : b`.
    Selp {
        /// 64-bit bank.
        wide: bool,
        /// Destination.
        d: Reg,
        /// Value when true.
        a: Src,
        /// Value when false.
        b: Src,
        /// Selector.
        p: PredSrc,
    },
    /// `and/or/xor/not/mov.pred`.
    PredLogic {
        /// Operation; `None` is `mov` (or `not` with a negated source).
        k: Option<BoolOp>,
        /// Destination predicate.
        d: Reg,
        /// First source.
        a: PredSrc,
        /// Second source (`PredSrc::TRUE` for unary forms).
        b: PredSrc,
    },
    /// `mov.b64 d, {lo, hi}`.
    Pack64 {
        /// Destination (64-bit).
        d: Reg,
        /// Low half (32-bit).
        lo: Src,
        /// High half (32-bit).
        hi: Src,
    },
    /// `mov.b64 {lo, hi}, a`.
    Unpack64 {
        /// Low half destination.
        lo: Dst,
        /// High half destination.
        hi: Dst,
        /// Source (64-bit).
        a: Src,
    },
    /// `cvt`.
    Cvt {
        /// Destination type.
        to: NumTy,
        /// Source type.
        from: NumTy,
        /// Rounding.
        rnd: Rnd,
        /// `.sat`
        sat: bool,
        /// `.ftz`
        ftz: bool,
        /// Destination (bank from `to`... or wider register).
        d: Dst,
        /// Source (bank from the register's declaration).
        a: Src,
        /// Whether `a` is read from the 64-bit bank.
        a_wide: bool,
    },
    /// `cvta` (to generic when `to` is false) / `cvta.to` (generic to space).
    Cvta {
        /// `cvta.to.space`: generic to space.
        to: bool,
        /// The non-generic space.
        space: Space,
        /// Destination (64-bit unless `narrow`).
        d: Reg,
        /// Source.
        a: Src,
        /// 32-bit addresses (`cvta.shared.u32`).
        narrow: bool,
    },
    /// `ld` from `.param`: the same bytes for every thread.
    LdParam {
        /// Destinations (vector loads have several).
        dst: [Dst; 4],
        /// Number of elements.
        n: u8,
        /// Element size in bytes.
        size: u8,
        /// Byte offset in the parameter buffer.
        offset: u32,
        /// Sign-extend into a wider register.
        sext: bool,
    },
    /// `ld` (global, shared, local, const, generic).
    Ld {
        /// State space.
        space: Space,
        /// Destinations.
        dst: [Dst; 4],
        /// Number of elements (1, 2 or 4).
        n: u8,
        /// Element size in bytes.
        size: u8,
        /// Sign-extend into a wider register.
        sext: bool,
        /// Address.
        addr: Addr,
        /// Memory-model semantics.
        order: MemOrder,
    },
    /// `st`.
    St {
        /// State space.
        space: Space,
        /// Sources and whether each reads the 64-bit bank.
        src: [(Src, bool); 4],
        /// Number of elements.
        n: u8,
        /// Element size in bytes.
        size: u8,
        /// Address.
        addr: Addr,
        /// Memory-model semantics.
        order: MemOrder,
    },
    /// `atom` (with a destination) and `red` (`d` is `Sink`).
    Atom {
        /// State space.
        space: Space,
        /// Operation.
        op: AtomOp,
        /// Value type.
        ty: AtomTy,
        /// Old value destination.
        d: Dst,
        /// Address.
        addr: Addr,
        /// Operand.
        b: Src,
        /// `cas` swap value.
        c: Src,
        /// Memory-model semantics (`.relaxed.gpu` by default).
        order: MemOrder,
    },
    /// `bra` to an instruction index.
    Bra {
        /// Target instruction.
        target: u32,
        /// `.uni`: must not diverge (checked).
        uni: bool,
    },
    /// `ret` / `exit`.
    Exit,
    /// `trap`: aborts the launch.
    Trap,
    /// `bar.sync` / `barrier.sync` / `bar.red`-less forms, barrier 0.
    BarSync {
        /// Expected thread count, if given.
        count: Option<Src>,
    },
    /// `bar.warp.sync mask`.
    WarpSync {
        /// Member mask.
        mask: Src,
    },
    /// `shfl.sync`.
    Shfl {
        /// Mode.
        mode: ShflMode,
        /// Destination.
        d: Reg,
        /// Optional predicate destination (`u32::MAX` if absent).
        dp: Reg,
        /// Value.
        a: Src,
        /// Lane / offset.
        b: Src,
        /// Clamp / segment mask.
        c: Src,
        /// Member mask.
        mask: Src,
    },
    /// `vote.sync`.
    Vote {
        /// Mode.
        mode: VoteMode,
        /// Destination: a predicate, or a 32-bit register for ballot.
        d: Reg,
        /// Input predicate.
        a: PredSrc,
        /// Member mask.
        mask: Src,
    },
    /// `activemask.b32`.
    ActiveMask {
        /// Destination.
        d: Reg,
    },
    /// `fence.sc`/`fence.acq_rel` and `membar` at a scope (`membar.gl` is
    /// `.gpu`): both an acquire and a release fence.
    Fence {
        /// The scope.
        scope: Scope,
    },
    /// `nanosleep`, `prefetch`, `pmevent`, proxy fences: no effect.
    Nop,
}

/// An instruction: its operation, guard and PTX line.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    /// What it does.
    pub op: Op,
    /// `@%p` / `@!%p`; [`PredSrc::TRUE`] when unguarded.
    pub guard: PredSrc,
    /// 1-based line in the PTX text.
    pub line: u32,
}
