//! Syntax tree to the executable form ([`Kernel`]): registers resolved to
//! bank indices (with the nested scopes of inline assembly), labels to
//! instruction indices, symbols to offsets, parameters laid out as the driver
//! lays them out, and every opcode checked. An opcode or modifier the
//! interpreter does not implement is an error naming it and its line, so a
//! kernel never runs with an instruction silently skipped.
//! (Over 600 lines: every opcode family shares the `Decoder` state; one file keeps it private.)

use std::collections::HashMap;
use std::fmt;

use crate::cfg;
use crate::ir::Scope as MemScope;
use crate::ir::*;
use crate::mufu;
use crate::parse::{self, Body, Imm, Operand};

/// A decode error: the PTX line and what is wrong or unsupported there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The kernel being decoded.
    pub kernel: String,
    /// 1-based PTX line.
    pub line: u32,
    /// The opcode (or directive) concerned.
    pub opcode: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PTX line {} (kernel {}): `{}`: {}",
            self.line, self.kernel, self.opcode, self.message
        )
    }
}

impl std::error::Error for DecodeError {}

/// One kernel parameter as the driver lays it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelParam {
    /// Its PTX name.
    pub name: String,
    /// Its PTX type (`u64`, `u32`, `f32`, `b8`...).
    pub ty: String,
    /// Size in bytes.
    pub size: u32,
    /// Alignment in bytes.
    pub align: u32,
    /// Offset in the parameter buffer.
    pub offset: u32,
}

/// A decoded entry point, ready to launch.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Entry name.
    pub name: String,
    /// Parameters in order.
    pub params: Vec<KernelParam>,
    /// Size of the parameter buffer.
    pub param_bytes: u32,
    /// Bytes of static `.shared` variables.
    pub static_shared: u32,
    /// Offset of dynamic (`.extern .shared`) memory in the shared window.
    pub dynamic_shared_offset: u32,
    /// Bytes of `.local` memory per thread.
    pub local_bytes: u32,
    /// `.maxntid` / `.reqntid` product, if given.
    pub max_threads: Option<u32>,
    /// `.reqntid`: the exact block shape every launch must have.
    pub reqntid: Option<[u32; 3]>,
    /// Registers per thread the JIT gives the entry
    /// (`CU_FUNC_ATTRIBUTE_NUM_REGS`): measured on an H200, or estimated
    /// ([`crate::regalloc`]).
    pub registers: u32,
    /// Whether [`Kernel::registers`] is the H200's measured count.
    pub registers_measured: bool,
    /// Line of the `.entry`.
    pub line: u32,
    pub(crate) insts: Vec<Inst>,
    /// The opcode text of each instruction, for messages.
    pub(crate) opcodes: Vec<Box<str>>,
    /// For each branch, the instruction where its divergent paths reconverge
    /// (the immediate post-dominator); [`cfg::NO_PC`] when they only meet at exit.
    pub(crate) reconverge: Vec<u32>,
    pub(crate) n32: u32,
    pub(crate) n64: u32,
    pub(crate) npred: u32,
}

impl Kernel {
    /// Number of instructions.
    pub fn len(&self) -> usize {
        self.insts.len()
    }

    /// Whether the kernel has no instructions.
    pub fn is_empty(&self) -> bool {
        self.insts.is_empty()
    }

    /// The PTX line of instruction `pc`.
    pub fn line_of(&self, pc: u32) -> u32 {
        self.insts.get(pc as usize).map_or(self.line, |i| i.line)
    }

    /// The opcode text of instruction `pc`.
    pub fn opcode_of(&self, pc: u32) -> &str {
        self.opcodes.get(pc as usize).map_or("?", |s| s)
    }

    /// A launch block other than the entry's `.reqntid`, as an error message.
    pub fn check_reqntid(&self, block: [u32; 3]) -> Result<(), String> {
        match self.reqntid {
            Some(req) if req != block => Err(format!(
                "{}: block {block:?}, the entry's .reqntid requires exactly {req:?}",
                self.name
            )),
            _ => Ok(()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bank {
    R32,
    R64,
    Pred,
}

#[derive(Clone, Copy, Debug)]
struct RegInfo {
    bank: Bank,
    index: u32,
}

/// A literal's interpretation in an instruction.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lit {
    /// Integer or raw bits of this many bits.
    Int(u8),
    F32,
    F64,
}

#[derive(Default)]
struct Scope {
    exact: HashMap<String, RegInfo>,
    /// `%r<N>`: prefix -> (bank, first index, count)
    ranges: HashMap<String, (Bank, u32, u32)>,
}

/// Symbol addresses known to a kernel.
#[derive(Clone, Copy, Debug)]
enum Sym {
    Param { offset: u32 },
    Shared { offset: u32 },
    Local { offset: u32 },
}

struct Decoder<'a> {
    kernel: &'a str,
    scopes: Vec<Scope>,
    counts: [u32; 3],
    syms: HashMap<String, Sym>,
    labels: HashMap<String, u32>,
    line: u32,
    opcode: String,
    mufu: mufu::Model,
}

fn align_up(v: u32, a: u32) -> u32 {
    v.div_ceil(a.max(1)) * a.max(1)
}

/// Size and natural alignment of a scalar PTX type.
fn type_size(ty: &str) -> Option<u32> {
    Some(match ty {
        "b8" | "u8" | "s8" | "pred" => 1,
        "b16" | "u16" | "s16" | "f16" | "bf16" => 2,
        "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" => 4,
        "b64" | "u64" | "s64" | "f64" => 8,
        "b128" => 16,
        _ => return None,
    })
}

fn bank_of_type(ty: &str) -> Option<Bank> {
    match ty {
        "pred" => Some(Bank::Pred),
        _ => match type_size(ty)? {
            1 | 2 | 4 => Some(Bank::R32),
            8 => Some(Bank::R64),
            _ => None,
        },
    }
}

/// `(kind, bits)` of a type suffix: `('u', 32)` for `u32`.
fn split_type(ty: &str) -> Option<(char, u8)> {
    let k = ty.chars().next()?;
    let bits: u8 = ty[1..].parse().ok()?;
    matches!(k, 'b' | 'u' | 's' | 'f').then_some((k, bits))
}

fn special(name: &str) -> Option<(Special, bool)> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    let (base, comp) = name.split_once('.').unwrap_or((name, ""));
    let sp = match base {
        "%tid" => Special::Tid(dim(comp)?),
        "%ntid" => Special::Ntid(dim(comp)?),
        "%ctaid" => Special::Ctaid(dim(comp)?),
        "%nctaid" => Special::Nctaid(dim(comp)?),
        "%laneid" => Special::LaneId,
        "%warpid" => Special::WarpId,
        "%nwarpid" => Special::NWarpId,
        "%smid" => Special::SmId,
        "%nsmid" => Special::NSmId,
        "%lanemask_eq" => Special::LaneMaskEq,
        "%lanemask_lt" => Special::LaneMaskLt,
        "%lanemask_le" => Special::LaneMaskLe,
        "%lanemask_gt" => Special::LaneMaskGt,
        "%lanemask_ge" => Special::LaneMaskGe,
        "%clock" => Special::Clock,
        "%clock64" => return Some((Special::Clock, true)),
        "%dynamic_smem_size" => Special::DynamicSmemSize,
        "%total_smem_size" => Special::TotalSmemSize,
        "%gridid" => return Some((Special::GridId, true)),
        _ => return None,
    };
    Some((sp, false))
}

type R<T> = Result<T, DecodeError>;

/// Why an approximate instruction other than the two captured ones is
/// refused under the default [`mufu::Model::Sm90`].
const NOT_CAPTURED: &str = "an approximate instruction whose sm_90 bits are not captured (only rsqrt.approx.ftz.f32 and rcp.approx.ftz.f32 are: softcuda/src/mufu.rs); refused rather than computed correctly rounded, which no GPU does. Capture it with scripts/gpu/capture_mufu.py, or run with SOFTCUDA_MUFU=ieee (every approximate instruction correctly rounded)";

impl Decoder<'_> {
    fn fail<T>(&self, message: impl Into<String>) -> R<T> {
        Err(DecodeError {
            kernel: self.kernel.to_owned(),
            line: self.line,
            opcode: self.opcode.clone(),
            message: message.into(),
        })
    }

    fn declare(&mut self, ty: &str, name: &str, count: Option<u32>) -> R<()> {
        let Some(bank) = bank_of_type(ty) else {
            return self.fail(format!("register type .{ty} is not supported"));
        };
        let slot = bank as usize;
        let n = count.unwrap_or(1);
        let first = self.counts[slot];
        self.counts[slot] += n;
        let scope = self.scopes.last_mut().expect("a scope");
        match count {
            Some(n) => {
                scope.ranges.insert(name.to_owned(), (bank, first, n));
            }
            None => {
                scope
                    .exact
                    .insert(name.to_owned(), RegInfo { bank, index: first });
            }
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<RegInfo> {
        for scope in self.scopes.iter().rev() {
            if let Some(r) = scope.exact.get(name) {
                return Some(*r);
            }
            let digits = name.len() - name.bytes().rev().take_while(u8::is_ascii_digit).count();
            if digits < name.len() {
                let (prefix, num) = name.split_at(digits);
                if let Some(&(bank, first, count)) = scope.ranges.get(prefix)
                    && let Ok(k) = num.parse::<u32>()
                    && k < count
                {
                    return Some(RegInfo {
                        bank,
                        index: first + k,
                    });
                }
            }
        }
        None
    }

    fn reg(&self, name: &str, bank: Bank) -> R<Reg> {
        match self.lookup(name) {
            Some(r) if r.bank == bank => Ok(r.index),
            Some(r) => self.fail(format!(
                "register {name} is {:?}, the instruction needs {bank:?}",
                r.bank
            )),
            None => self.fail(format!("undeclared register {name}")),
        }
    }

    fn pred(&self, op: &Operand) -> R<PredSrc> {
        match op {
            Operand::Name(n) => Ok(PredSrc {
                reg: self.reg(n, Bank::Pred)?,
                neg: false,
            }),
            Operand::Not(n) => Ok(PredSrc {
                reg: self.reg(n, Bank::Pred)?,
                neg: true,
            }),
            // `mov.pred %p, 0` / `1` / `-1` (LLVM's true): the constant, as the absent
            // guard (negated for 0).
            Operand::Imm(Imm::Int(v)) => Ok(PredSrc {
                neg: *v == 0,
                ..PredSrc::TRUE
            }),
            _ => self.fail(format!("expected a predicate, found {op:?}")),
        }
    }

    fn pred_dst(&self, op: &Operand) -> R<Reg> {
        match op {
            Operand::Name(n) => self.reg(n, Bank::Pred),
            Operand::Sink => Ok(u32::MAX),
            _ => self.fail(format!("expected a predicate destination, found {op:?}")),
        }
    }

    fn dst(&self, op: &Operand, bank: Bank) -> R<Reg> {
        match op {
            Operand::Name(n) => self.reg(n, bank),
            _ => self.fail(format!("expected a register destination, found {op:?}")),
        }
    }

    /// A destination in whichever bank its register was declared.
    fn dst_any(&self, op: &Operand) -> R<Dst> {
        match op {
            Operand::Sink => Ok(Dst::Sink),
            Operand::Name(n) => match self.lookup(n) {
                Some(RegInfo {
                    bank: Bank::R32,
                    index,
                }) => Ok(Dst::R32(index)),
                Some(RegInfo {
                    bank: Bank::R64,
                    index,
                }) => Ok(Dst::R64(index)),
                Some(_) => self.fail(format!("{n} is a predicate")),
                None => self.fail(format!("undeclared register {n}")),
            },
            _ => self.fail(format!("expected a register destination, found {op:?}")),
        }
    }

    /// The bank a source register was declared in (for cvt / st).
    fn src_bank(&self, op: &Operand) -> Option<Bank> {
        match op {
            Operand::Name(n) => self.lookup(n).map(|r| r.bank),
            _ => None,
        }
    }

    fn imm(&self, imm: Imm, lit: Lit) -> R<u64> {
        Ok(match (imm, lit) {
            (Imm::Int(v), Lit::Int(bits)) => {
                if bits >= 64 {
                    v as u64
                } else {
                    (v as u64) & ((1u64 << bits) - 1)
                }
            }
            (Imm::F32(b), Lit::Int(32)) | (Imm::F32(b), Lit::F32) => b as u64,
            (Imm::F64(b), Lit::Int(64)) | (Imm::F64(b), Lit::F64) => b,
            (Imm::F32(b), Lit::F64) => (f32::from_bits(b) as f64).to_bits(),
            (Imm::F64(b), Lit::F32) => (f64::from_bits(b) as f32).to_bits() as u64,
            (Imm::Float(v), Lit::F32) => (v as f32).to_bits() as u64,
            (Imm::Float(v), Lit::F64) => v.to_bits(),
            (Imm::Int(v), Lit::F32) => (v as f32).to_bits() as u64,
            (Imm::Int(v), Lit::F64) => (v as f64).to_bits(),
            (i, _) => return self.fail(format!("literal {i:?} does not fit the operand")),
        })
    }

    fn src(&self, op: &Operand, bank: Bank, lit: Lit) -> R<Src> {
        match op {
            Operand::Imm(i) => Ok(Src::I(self.imm(*i, lit)?)),
            Operand::Name(n) if n.starts_with('%') => {
                if let Some((sp, wide)) = special(n) {
                    // %clock64 and %gridid are 64-bit; the others 32-bit. A
                    // 32-bit special read into a 64-bit operand is widened.
                    if wide && bank != Bank::R64 {
                        return self.fail(format!("{n} is 64-bit"));
                    }
                    return Ok(Src::Sp(sp));
                }
                Ok(Src::R(self.reg(n, bank)?))
            }
            Operand::Name(n) => match self.syms.get(n.as_str()) {
                Some(Sym::Shared { offset }) | Some(Sym::Local { offset }) => {
                    Ok(Src::I(*offset as u64))
                }
                Some(Sym::Param { .. }) => self.fail(format!(
                    "taking the address of parameter {n} is not supported"
                )),
                None => self.fail(format!("unknown symbol {n}")),
            },
            Operand::Addr(parse::AddrBase::Symbol(n), off) => match self.syms.get(n.as_str()) {
                Some(Sym::Shared { offset }) | Some(Sym::Local { offset }) => {
                    Ok(Src::I((*offset as i64 + off) as u64))
                }
                _ => self.fail(format!("unknown symbol {n}")),
            },
            _ => self.fail(format!("unsupported source operand {op:?}")),
        }
    }

    fn s32(&self, op: &Operand, lit: Lit) -> R<Src> {
        self.src(op, Bank::R32, lit)
    }

    fn s64(&self, op: &Operand, lit: Lit) -> R<Src> {
        self.src(op, Bank::R64, lit)
    }

    fn addr(&self, op: &Operand, space: Space) -> R<Addr> {
        let Operand::Addr(base, offset) = op else {
            return self.fail(format!("expected an address [..], found {op:?}"));
        };
        let base = match base {
            parse::AddrBase::Reg(r) => match self.lookup(r) {
                Some(RegInfo {
                    bank: Bank::R64,
                    index,
                }) => AddrBase::R64(index),
                Some(RegInfo {
                    bank: Bank::R32,
                    index,
                }) => AddrBase::R32(index),
                _ => return self.fail(format!("bad address register {r}")),
            },
            parse::AddrBase::Abs(v) => AddrBase::Abs(*v as u64),
            parse::AddrBase::Symbol(s) => match (self.syms.get(s.as_str()), space) {
                (Some(Sym::Shared { offset }), Space::Shared) => AddrBase::Abs(*offset as u64),
                (Some(Sym::Local { offset }), Space::Local) => AddrBase::Abs(*offset as u64),
                (Some(_), _) => {
                    return self.fail(format!("symbol {s} used with the wrong state space"));
                }
                (None, _) => return self.fail(format!("unknown symbol {s}")),
            },
        };
        Ok(Addr {
            base,
            offset: *offset,
        })
    }

    fn operands<'o>(&self, ops: &'o [Operand], n: usize) -> R<&'o [Operand]> {
        if ops.len() != n {
            return self.fail(format!("expected {n} operands, found {}", ops.len()));
        }
        Ok(ops)
    }

    fn label(&self, op: &Operand) -> R<u32> {
        match op {
            Operand::Name(n) => match self.labels.get(n.as_str()) {
                Some(&pc) => Ok(pc),
                None => self.fail(format!("unknown label {n}")),
            },
            _ => self.fail(format!("expected a label, found {op:?}")),
        }
    }

    fn instruction(&mut self, inst: &parse::Instruction) -> R<Op> {
        let parts: Vec<&str> = inst.opcode.split('.').collect();
        let base = parts[0];
        let mods = &parts[1..];
        let has = |m: &str| mods.contains(&m);
        let ops = &inst.operands[..];
        let ty_str = *mods.last().unwrap_or(&"");
        let rnd = [
            ("rn", Rnd::Rn),
            ("rz", Rnd::Rz),
            ("rm", Rnd::Rm),
            ("rp", Rnd::Rp),
            ("rni", Rnd::Rni),
            ("rzi", Rnd::Rzi),
            ("rmi", Rnd::Rmi),
            ("rpi", Rnd::Rpi),
        ]
        .iter()
        .find(|(m, _)| has(m))
        .map_or(Rnd::None, |(_, r)| *r);

        match base {
            "add" | "sub" | "mul" | "mad" | "fma" | "div" | "rem" | "min" | "max" | "neg"
            | "abs" | "and" | "or" | "xor" | "not" | "cnot" | "shl" | "shr" | "popc" | "clz"
            | "brev" | "sqrt" | "rsqrt" | "rcp" | "ex2" | "lg2" | "sin" | "cos" | "tanh"
            | "copysign" | "bfe" | "bfi" | "prmt" => self.arith(base, mods, ops, rnd),
            "mov" => self.mov(ty_str, ops),
            "setp" => self.setp(mods, ops),
            "set" => self.set(mods, ops),
            "selp" => {
                let ops = self.operands(ops, 4)?;
                let (k, bits) = split_type(ty_str).unwrap_or(('?', 0));
                let (bank, lit) = match (k, bits) {
                    ('f', 32) => (Bank::R32, Lit::F32),
                    ('f', 64) => (Bank::R64, Lit::F64),
                    (_, 64) => (Bank::R64, Lit::Int(64)),
                    (_, 8 | 16 | 32) => (Bank::R32, Lit::Int(bits)),
                    _ => return self.fail("unsupported type"),
                };
                Ok(Op::Selp {
                    wide: bank == Bank::R64,
                    d: self.dst(&ops[0], bank)?,
                    a: self.src(&ops[1], bank, lit)?,
                    b: self.src(&ops[2], bank, lit)?,
                    p: self.pred(&ops[3])?,
                })
            }
            "cvt" => self.cvt(mods, ops, rnd),
            "cvta" => {
                let ops = self.operands(ops, 2)?;
                let to = has("to");
                let space = if has("global") {
                    Space::Global
                } else if has("shared") {
                    Space::Shared
                } else if has("local") {
                    Space::Local
                } else if has("const") {
                    Space::Const
                } else {
                    return self.fail("unsupported state space");
                };
                let narrow = ty_str == "u32";
                let bank = if narrow { Bank::R32 } else { Bank::R64 };
                Ok(Op::Cvta {
                    to,
                    space,
                    d: self.dst(&ops[0], bank)?,
                    a: self.src(&ops[1], bank, Lit::Int(if narrow { 32 } else { 64 }))?,
                    narrow,
                })
            }
            "ld" | "ldu" | "st" => self.memory(base, mods, ops),
            "atom" | "red" => self.atom(base == "red", mods, ops),
            "bra" => {
                let ops = self.operands(ops, 1)?;
                Ok(Op::Bra {
                    target: self.label(&ops[0])?,
                    uni: has("uni"),
                })
            }
            "ret" | "exit" => Ok(Op::Exit),
            "trap" => Ok(Op::Trap),
            "bar" | "barrier" => {
                if mods.first() == Some(&"warp") && mods.get(1) == Some(&"sync") {
                    let ops = self.operands(ops, 1)?;
                    return Ok(Op::WarpSync {
                        mask: self.s32(&ops[0], Lit::Int(32))?,
                    });
                }
                if !(mods.first() == Some(&"sync") || (base == "barrier" && mods.is_empty())) {
                    return self
                        .fail("only bar.sync / barrier.sync and bar.warp.sync are supported");
                }
                if ops.is_empty() || ops.len() > 2 {
                    return self.fail("expected a barrier id and an optional count");
                }
                match ops[0] {
                    Operand::Imm(Imm::Int(0)) => {}
                    _ => return self.fail("only barrier 0 is supported"),
                }
                let count = match ops.get(1) {
                    Some(c) => Some(self.s32(c, Lit::Int(32))?),
                    None => None,
                };
                Ok(Op::BarSync { count })
            }
            "membar" | "fence" => self.fence(base, mods),
            "nanosleep" | "prefetch" | "prefetchu" | "pmevent" => Ok(Op::Nop),
            "shfl" => {
                if mods.first() != Some(&"sync") {
                    return self.fail("shfl without .sync is not supported (sm_70+)");
                }
                let ops = self.operands(ops, 5)?;
                let mode = match mods.get(1) {
                    Some(&"idx") => ShflMode::Idx,
                    Some(&"up") => ShflMode::Up,
                    Some(&"down") => ShflMode::Down,
                    Some(&"bfly") => ShflMode::Bfly,
                    _ => return self.fail("unknown shfl mode"),
                };
                let (d, dp) = match &ops[0] {
                    Operand::Pair(a, b) => (self.reg(a, Bank::R32)?, self.reg(b, Bank::Pred)?),
                    o => (self.dst(o, Bank::R32)?, u32::MAX),
                };
                Ok(Op::Shfl {
                    mode,
                    d,
                    dp,
                    a: self.s32(&ops[1], Lit::Int(32))?,
                    b: self.s32(&ops[2], Lit::Int(32))?,
                    c: self.s32(&ops[3], Lit::Int(32))?,
                    mask: self.s32(&ops[4], Lit::Int(32))?,
                })
            }
            "vote" => {
                if mods.first() != Some(&"sync") {
                    return self.fail("vote without .sync is not supported (sm_70+)");
                }
                let ops = self.operands(ops, 3)?;
                let mode = match mods.get(1) {
                    Some(&"all") => VoteMode::All,
                    Some(&"any") => VoteMode::Any,
                    Some(&"uni") => VoteMode::Uni,
                    Some(&"ballot") => VoteMode::Ballot,
                    _ => return self.fail("unknown vote mode"),
                };
                let d = if mode == VoteMode::Ballot {
                    self.dst(&ops[0], Bank::R32)?
                } else {
                    self.pred_dst(&ops[0])?
                };
                Ok(Op::Vote {
                    mode,
                    d,
                    a: self.pred(&ops[1])?,
                    mask: self.s32(&ops[2], Lit::Int(32))?,
                })
            }
            "activemask" => {
                let ops = self.operands(ops, 1)?;
                Ok(Op::ActiveMask {
                    d: self.dst(&ops[0], Bank::R32)?,
                })
            }
            "call" => self.fail("calls to device functions are not supported (inline them)"),
            _ => self.fail("unsupported instruction"),
        }
    }

    fn arith(&mut self, base: &str, mods: &[&str], ops: &[Operand], rnd: Rnd) -> R<Op> {
        let has = |m: &str| mods.contains(&m);
        let ty_str = *mods.last().unwrap_or(&"");
        let Some((kind, bits)) =
            split_type(ty_str).or_else(|| (ty_str == "pred").then_some(('p', 1)))
        else {
            return self.fail(format!("unsupported type .{ty_str}"));
        };
        for m in mods {
            let known = matches!(
                *m,
                "rn" | "rz"
                    | "rm"
                    | "rp"
                    | "ftz"
                    | "sat"
                    | "approx"
                    | "full"
                    | "lo"
                    | "hi"
                    | "wide"
                    | "u8"
                    | "u16"
                    | "u32"
                    | "u64"
                    | "s8"
                    | "s16"
                    | "s32"
                    | "s64"
                    | "b8"
                    | "b16"
                    | "b32"
                    | "b64"
                    | "f32"
                    | "f64"
                    | "pred"
                    | "f16"
            );
            if !known {
                return self.fail(format!("unsupported modifier .{m}"));
            }
        }
        if kind == 'p' {
            let k = match base {
                "and" => Some(BoolOp::And),
                "or" => Some(BoolOp::Or),
                "xor" => Some(BoolOp::Xor),
                "not" => None,
                _ => return self.fail("unsupported predicate operation"),
            };
            if k.is_none() {
                let ops = self.operands(ops, 2)?;
                let mut a = self.pred(&ops[1])?;
                a.neg = !a.neg;
                return Ok(Op::PredLogic {
                    k: None,
                    d: self.dst(&ops[0], Bank::Pred)?,
                    a,
                    b: PredSrc::TRUE,
                });
            }
            let ops = self.operands(ops, 3)?;
            return Ok(Op::PredLogic {
                k,
                d: self.dst(&ops[0], Bank::Pred)?,
                a: self.pred(&ops[1])?,
                b: self.pred(&ops[2])?,
            });
        }
        let arity = match base {
            "neg" | "abs" | "not" | "cnot" | "popc" | "clz" | "brev" | "sqrt" | "rsqrt" | "rcp"
            | "ex2" | "lg2" | "sin" | "cos" | "tanh" => 1,
            "mad" | "fma" | "bfe" | "prmt" => 3,
            "bfi" => 4,
            _ => 2,
        };
        let ops = self.operands(ops, arity + 1)?;
        if kind == 'f' {
            if bits == 16 {
                return self.fail("f16 arithmetic is not supported");
            }
            let wide = bits == 64;
            let (bank, lit) = if wide {
                (Bank::R64, Lit::F64)
            } else {
                (Bank::R32, Lit::F32)
            };
            let d = self.dst(&ops[0], bank)?;
            let mut s = [Src::I(0); 3];
            for (k, op) in ops[1..].iter().enumerate() {
                s[k] = self.src(op, bank, lit)?;
            }
            let [a, b, c] = s;
            if matches!(rnd, Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi) {
                return self.fail("integer rounding is only valid for cvt");
            }
            if wide {
                let k = match base {
                    "add" => F64::Add,
                    "sub" => F64::Sub,
                    "mul" => F64::Mul,
                    "mad" | "fma" => F64::Fma,
                    "div" => F64::Div,
                    "min" => F64::Min,
                    "max" => F64::Max,
                    "neg" => F64::Neg,
                    "abs" => F64::Abs,
                    "sqrt" => F64::Sqrt,
                    "rsqrt" => F64::Rsqrt,
                    "rcp" => F64::Rcp,
                    "copysign" => F64::Copysign,
                    _ => return self.fail("unsupported f64 operation"),
                };
                if has("approx") && self.mufu == mufu::Model::Sm90 {
                    return self.fail(NOT_CAPTURED);
                }
                if matches!(
                    k,
                    F64::Add | F64::Sub | F64::Mul | F64::Fma | F64::Div | F64::Sqrt | F64::Rcp
                ) && !matches!(rnd, Rnd::None | Rnd::Rn)
                {
                    return self.fail("directed rounding of f64 arithmetic is not supported");
                }
                return Ok(Op::F64 { k, rnd, d, a, b, c });
            }
            let k = match base {
                "add" => F32::Add,
                "sub" => F32::Sub,
                "mul" => F32::Mul,
                "mad" | "fma" => F32::Fma,
                "div" => F32::Div,
                "min" => F32::Min,
                "max" => F32::Max,
                "neg" => F32::Neg,
                "abs" => F32::Abs,
                "sqrt" => F32::Sqrt,
                "rsqrt" => F32::Rsqrt,
                "rcp" => F32::Rcp,
                "ex2" => F32::Ex2,
                "lg2" => F32::Lg2,
                "sin" => F32::Sin,
                "cos" => F32::Cos,
                "tanh" => F32::Tanh,
                "copysign" => F32::Copysign,
                _ => return self.fail("unsupported f32 operation"),
            };
            let k = match (self.mufu, has("approx") || has("full"), k) {
                (mufu::Model::Sm90, true, F32::Rsqrt) if has("ftz") => F32::MufuRsqrt,
                (mufu::Model::Sm90, true, F32::Rcp) if has("ftz") => F32::MufuRcp,
                (mufu::Model::Sm90, true, _) => return self.fail(NOT_CAPTURED),
                (_, _, k) => k,
            };
            if matches!(k, F32::Fma | F32::Div | F32::Sqrt | F32::Rcp)
                && !matches!(rnd, Rnd::None | Rnd::Rn)
            {
                return self.fail("directed rounding of this f32 operation is not supported");
            }
            if base == "mad" && rnd == Rnd::None {
                // `mad.f32` without rounding is an unfused multiply-add on sm_1x
                // and a fused one since sm_20: PTX requires `.rn` for sm_20+.
                return self.fail("mad.f32 needs a rounding modifier");
            }
            return Ok(Op::F32 {
                k,
                rnd,
                ftz: has("ftz"),
                sat: has("sat"),
                d,
                a,
                b,
                c,
            });
        }
        // Integers.
        let signed = kind == 's';
        if base == "mul" && has("wide") || base == "mad" && has("wide") {
            if bits != 16 && bits != 32 {
                return self.fail("wide multiplication needs 16- or 32-bit operands");
            }
            let (dbank, dbits) = if bits == 32 {
                (Bank::R64, 64)
            } else {
                (Bank::R32, 32)
            };
            return Ok(Op::Wide {
                signed,
                w: bits,
                d: self.dst(&ops[0], dbank)?,
                a: self.s32(&ops[1], Lit::Int(bits))?,
                b: self.s32(&ops[2], Lit::Int(bits))?,
                c: if base == "mad" {
                    Some(self.src(&ops[3], dbank, Lit::Int(dbits))?)
                } else {
                    None
                },
            });
        }
        if has("sat") && !(signed && bits == 32 && (base == "add" || base == "sub")) {
            return self.fail(".sat is only supported on add/sub.s32");
        }
        if bits == 64 {
            let k = match base {
                "add" => I64::Add,
                "sub" => I64::Sub,
                "mul" if has("hi") => {
                    if signed {
                        I64::MulHiS
                    } else {
                        I64::MulHiU
                    }
                }
                "mul" => I64::MulLo,
                "mad" if has("hi") => return self.fail("mad.hi.64 is not supported"),
                "mad" => I64::MadLo,
                "div" if signed => I64::DivS,
                "div" => I64::DivU,
                "rem" if signed => I64::RemS,
                "rem" => I64::RemU,
                "min" if signed => I64::MinS,
                "min" => I64::MinU,
                "max" if signed => I64::MaxS,
                "max" => I64::MaxU,
                "and" => I64::And,
                "or" => I64::Or,
                "xor" => I64::Xor,
                "neg" => I64::Neg,
                "not" => I64::Not,
                "abs" => I64::Abs,
                "brev" => I64::Brev,
                "shl" | "shr" => {
                    let k = match (base, signed) {
                        ("shl", _) => I32::Shl,
                        (_, true) => I32::ShrS,
                        _ => I32::ShrU,
                    };
                    return Ok(Op::Shift64 {
                        k,
                        d: self.dst(&ops[0], Bank::R64)?,
                        a: self.s64(&ops[1], Lit::Int(64))?,
                        b: self.s32(&ops[2], Lit::Int(32))?,
                    });
                }
                "popc" | "clz" => {
                    return Ok(Op::Count64 {
                        k: if base == "popc" { I32::Popc } else { I32::Clz },
                        d: self.dst(&ops[0], Bank::R32)?,
                        a: self.s64(&ops[1], Lit::Int(64))?,
                    });
                }
                _ => return self.fail("unsupported 64-bit integer operation"),
            };
            let d = self.dst(&ops[0], Bank::R64)?;
            let mut s = [Src::I(0); 3];
            for (i, op) in ops[1..].iter().enumerate() {
                s[i] = self.s64(op, Lit::Int(64))?;
            }
            return Ok(Op::I64 {
                k,
                d,
                a: s[0],
                b: s[1],
                c: s[2],
            });
        }
        if !matches!(bits, 8 | 16 | 32) {
            return self.fail(format!("unsupported type .{ty_str}"));
        }
        let k = match base {
            "add" if has("sat") => I32::AddSat,
            "sub" if has("sat") => I32::SubSat,
            "add" => I32::Add,
            "sub" => I32::Sub,
            "mul" if has("hi") => {
                if signed {
                    I32::MulHiS
                } else {
                    I32::MulHiU
                }
            }
            "mul" => I32::MulLo,
            "mad" if has("hi") => {
                if signed {
                    I32::MadHiS
                } else {
                    I32::MadHiU
                }
            }
            "mad" => I32::MadLo,
            "div" if signed => I32::DivS,
            "div" => I32::DivU,
            "rem" if signed => I32::RemS,
            "rem" => I32::RemU,
            "min" if signed => I32::MinS,
            "min" => I32::MinU,
            "max" if signed => I32::MaxS,
            "max" => I32::MaxU,
            "and" => I32::And,
            "or" => I32::Or,
            "xor" => I32::Xor,
            "shl" => I32::Shl,
            "shr" if signed => I32::ShrS,
            "shr" => I32::ShrU,
            "neg" => I32::Neg,
            "not" => I32::Not,
            "abs" => I32::Abs,
            "cnot" => I32::Cnot,
            "popc" => I32::Popc,
            "clz" => I32::Clz,
            "brev" => I32::Brev,
            "bfe" if signed => I32::BfeS,
            "bfe" => I32::BfeU,
            "bfi" => I32::Bfi,
            "prmt" => {
                if mods.len() != 1 {
                    return self.fail("only the default prmt mode is supported");
                }
                I32::Prmt
            }
            _ => return self.fail("unsupported integer operation"),
        };
        if bits != 32
            && matches!(
                k,
                I32::Popc
                    | I32::Clz
                    | I32::Brev
                    | I32::BfeU
                    | I32::BfeS
                    | I32::Bfi
                    | I32::Prmt
                    | I32::MulHiU
                    | I32::MulHiS
                    | I32::MadHiU
                    | I32::MadHiS
            )
        {
            return self.fail("only the 32-bit form is supported");
        }
        let d = self.dst(&ops[0], Bank::R32)?;
        let mut s = [Src::I(0); 4];
        for (i, op) in ops[1..].iter().enumerate() {
            // Shift amounts and bit-field positions are 32-bit.
            let lit = if matches!(k, I32::Shl | I32::ShrU | I32::ShrS) && i == 1 {
                Lit::Int(32)
            } else {
                Lit::Int(bits)
            };
            s[i] = self.s32(op, lit)?;
        }
        Ok(Op::I32 {
            k,
            w: bits,
            d,
            a: s[0],
            b: s[1],
            c: s[2],
            e: s[3],
        })
    }

    fn mov(&self, ty_str: &str, ops: &[Operand]) -> R<Op> {
        let ops = self.operands(ops, 2)?;
        if ty_str == "pred" {
            return Ok(Op::PredLogic {
                k: None,
                d: self.dst(&ops[0], Bank::Pred)?,
                a: self.pred(&ops[1])?,
                b: PredSrc::TRUE,
            });
        }
        let Some((kind, bits)) = split_type(ty_str) else {
            return self.fail(format!("unsupported type .{ty_str}"));
        };
        let lit = match kind {
            'f' if bits == 32 => Lit::F32,
            'f' if bits == 64 => Lit::F64,
            _ => Lit::Int(bits),
        };
        match (&ops[0], &ops[1], bits) {
            (Operand::Vector(v), a, 64) if v.len() == 2 => Ok(Op::Unpack64 {
                lo: self.dst_any(&v[0])?,
                hi: self.dst_any(&v[1])?,
                a: self.s64(a, Lit::Int(64))?,
            }),
            (d, Operand::Vector(v), 64) if v.len() == 2 => Ok(Op::Pack64 {
                d: self.dst(d, Bank::R64)?,
                lo: self.s32(&v[0], Lit::Int(32))?,
                hi: self.s32(&v[1], Lit::Int(32))?,
            }),
            (Operand::Vector(_), _, _) | (_, Operand::Vector(_), _) => {
                self.fail("only 2 x 32 -> 64 bit packing is supported")
            }
            (d, a, 64) => Ok(Op::I64 {
                k: I64::Mov,
                d: self.dst(d, Bank::R64)?,
                a: self.s64(a, lit)?,
                b: Src::I(0),
                c: Src::I(0),
            }),
            (d, a, 8 | 16 | 32) => Ok(Op::I32 {
                k: I32::Mov,
                w: 32,
                d: self.dst(d, Bank::R32)?,
                a: self.s32(a, lit)?,
                b: Src::I(0),
                c: Src::I(0),
                e: Src::I(0),
            }),
            _ => self.fail(format!("unsupported type .{ty_str}")),
        }
    }

    fn cmp_parts(&self, cmp: &str, ty_str: &str) -> R<(Cmp, CmpTy, Bank, Lit)> {
        let Some((kind, bits)) = split_type(ty_str) else {
            return self.fail(format!("unsupported type .{ty_str}"));
        };
        let cmp = match cmp {
            "eq" => Cmp::Eq,
            "ne" => Cmp::Ne,
            "lt" | "lo" => Cmp::Lt,
            "le" | "ls" => Cmp::Le,
            "gt" | "hi" => Cmp::Gt,
            "ge" | "hs" => Cmp::Ge,
            "equ" => Cmp::Equ,
            "neu" => Cmp::Neu,
            "ltu" => Cmp::Ltu,
            "leu" => Cmp::Leu,
            "gtu" => Cmp::Gtu,
            "geu" => Cmp::Geu,
            "num" => Cmp::Num,
            "nan" => Cmp::Nan,
            c => return self.fail(format!("unknown comparison .{c}")),
        };
        let (ty, bank, lit) = match (kind, bits) {
            ('f', 32) => (CmpTy::F32, Bank::R32, Lit::F32),
            ('f', 64) => (CmpTy::F64, Bank::R64, Lit::F64),
            ('s', 64) => (CmpTy::S64, Bank::R64, Lit::Int(64)),
            ('u' | 'b', 64) => (CmpTy::U64, Bank::R64, Lit::Int(64)),
            ('s', 8 | 16 | 32) => (CmpTy::S32 { w: bits }, Bank::R32, Lit::Int(bits)),
            ('u' | 'b', 8 | 16 | 32) => (CmpTy::U32 { w: bits }, Bank::R32, Lit::Int(bits)),
            _ => return self.fail(format!("unsupported type .{ty_str}")),
        };
        let float = matches!(ty, CmpTy::F32 | CmpTy::F64);
        let unordered = matches!(
            cmp,
            Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu | Cmp::Num | Cmp::Nan
        );
        if unordered && !float {
            return self.fail("unordered comparisons need a float type");
        }
        Ok((cmp, ty, bank, lit))
    }

    fn setp(&self, mods: &[&str], ops: &[Operand]) -> R<Op> {
        let (cmp_s, bool_s, ty_s) = match mods {
            [c, t] => (*c, None, *t),
            // `setp.lt.ftz.f32`
            [c, f, t] if *f == "ftz" => (*c, None, *t),
            [c, b, t] => (*c, Some(*b), *t),
            [c, b, f, t] if *f == "ftz" => (*c, Some(*b), *t),
            _ => return self.fail("malformed setp"),
        };
        let bool_s = bool_s.filter(|b| *b != "ftz");
        let (cmp, ty, bank, lit) = self.cmp_parts(cmp_s, ty_s)?;
        let comb_op = match bool_s {
            None => None,
            Some("and") => Some(BoolOp::And),
            Some("or") => Some(BoolOp::Or),
            Some("xor") => Some(BoolOp::Xor),
            Some(b) => return self.fail(format!("unknown setp modifier .{b}")),
        };
        let ops = self.operands(ops, if comb_op.is_some() { 4 } else { 3 })?;
        let (d, d2) = match &ops[0] {
            Operand::Pair(a, b) => (self.reg(a, Bank::Pred)?, self.reg(b, Bank::Pred)?),
            o => (self.pred_dst(o)?, u32::MAX),
        };
        let comb = match comb_op {
            Some(k) => Some((k, self.pred(&ops[3])?)),
            None => None,
        };
        Ok(Op::Setp {
            cmp,
            ty,
            d,
            d2,
            a: self.src(&ops[1], bank, lit)?,
            b: self.src(&ops[2], bank, lit)?,
            comb,
        })
    }

    fn set(&self, mods: &[&str], ops: &[Operand]) -> R<Op> {
        let mods: Vec<&str> = mods.iter().copied().filter(|m| *m != "ftz").collect();
        let [cmp_s, dty, sty] = mods[..] else {
            return self.fail("only set.cmp.dtype.stype is supported");
        };
        let (cmp, ty, bank, lit) = self.cmp_parts(cmp_s, sty)?;
        let float = match dty {
            "u32" | "s32" | "b32" => false,
            "f32" => true,
            _ => return self.fail("unsupported set destination type"),
        };
        let ops = self.operands(ops, 3)?;
        Ok(Op::Set {
            cmp,
            ty,
            d: self.dst(&ops[0], Bank::R32)?,
            float,
            a: self.src(&ops[1], bank, lit)?,
            b: self.src(&ops[2], bank, lit)?,
        })
    }

    fn num_ty(&self, s: &str) -> R<NumTy> {
        Ok(match split_type(s) {
            Some(('u' | 'b', b @ (8 | 16 | 32 | 64))) => NumTy::U(b),
            Some(('s', b @ (8 | 16 | 32 | 64))) => NumTy::S(b),
            Some(('f', 32)) => NumTy::F32,
            Some(('f', 64)) => NumTy::F64,
            Some(('f', 16)) => NumTy::F16,
            _ => return self.fail(format!("unsupported conversion type .{s}")),
        })
    }

    fn cvt(&self, mods: &[&str], ops: &[Operand], rnd: Rnd) -> R<Op> {
        let types: Vec<&str> = mods
            .iter()
            .copied()
            .filter(|m| split_type(m).is_some())
            .collect();
        for m in mods {
            if split_type(m).is_none()
                && !matches!(
                    *m,
                    "rn" | "rz" | "rm" | "rp" | "rni" | "rzi" | "rmi" | "rpi" | "ftz" | "sat"
                )
            {
                return self.fail(format!("unsupported modifier .{m}"));
            }
        }
        let [to_s, from_s] = types[..] else {
            return self.fail("cvt needs a destination and a source type");
        };
        let to = self.num_ty(to_s)?;
        let from = self.num_ty(from_s)?;
        let ops = self.operands(ops, 2)?;
        let d = self.dst_any(&ops[0])?;
        let a_wide = match self.src_bank(&ops[1]) {
            Some(Bank::R64) => true,
            Some(Bank::R32) => false,
            Some(Bank::Pred) => return self.fail("cvt of a predicate"),
            None => from.wide(),
        };
        let lit = match from {
            NumTy::F32 => Lit::F32,
            NumTy::F64 => Lit::F64,
            NumTy::U(b) | NumTy::S(b) => Lit::Int(b),
            NumTy::F16 => Lit::Int(16),
        };
        let a = self.src(&ops[1], if a_wide { Bank::R64 } else { Bank::R32 }, lit)?;
        let float_to_float = matches!(from, NumTy::F32 | NumTy::F64 | NumTy::F16)
            && matches!(to, NumTy::F32 | NumTy::F64 | NumTy::F16);
        if float_to_float
            && !matches!(
                rnd,
                Rnd::None | Rnd::Rn | Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi
            )
            && to_s != from_s
            && !(from == NumTy::F32 && to == NumTy::F64)
        {
            return self.fail("directed rounding of float narrowing is not supported");
        }
        Ok(Op::Cvt {
            to,
            from,
            rnd,
            sat: mods.contains(&"sat"),
            ftz: mods.contains(&"ftz"),
            d,
            a,
            a_wide,
        })
    }

    fn space_of(&self, mods: &[&str]) -> R<Option<Space>> {
        let mut space = None;
        for m in mods {
            let s = match *m {
                "global" => Space::Global,
                "shared" | "shared::cta" => Space::Shared,
                "local" => Space::Local,
                "const" => Space::Const,
                "param" => {
                    return Ok(None);
                }
                "shared::cluster" => return self.fail("cluster shared memory is not supported"),
                _ => continue,
            };
            space = Some(s);
        }
        Ok(Some(space.unwrap_or(Space::Generic)))
    }

    /// `membar.{cta,gl,sys}`, `fence.{sc,acq_rel}.{cta,gpu,sys}`; proxy
    /// fences order nothing the interpreter models.
    fn fence(&self, base: &str, mods: &[&str]) -> R<Op> {
        if base == "membar" {
            let scope = match mods {
                ["cta"] => MemScope::Cta,
                ["gl"] => MemScope::Gpu,
                ["sys"] => MemScope::Sys,
                _ => return self.fail("membar needs .cta, .gl or .sys"),
            };
            return Ok(Op::Fence { scope });
        }
        if mods.first().is_some_and(|m| m.starts_with("proxy")) {
            return Ok(Op::Nop);
        }
        match mods {
            ["sc" | "acq_rel", "cta"] => Ok(Op::Fence {
                scope: MemScope::Cta,
            }),
            ["sc" | "acq_rel", "gpu"] => Ok(Op::Fence {
                scope: MemScope::Gpu,
            }),
            ["sc" | "acq_rel", "sys"] => Ok(Op::Fence {
                scope: MemScope::Sys,
            }),
            _ => self.fail("fence needs .sc or .acq_rel and a scope (.cta, .gpu, .sys)"),
        }
    }

    /// The semantics and scope of `ld`/`ldu`/`st` from its modifiers.
    fn mem_order(&self, base: &str, mods: &[&str]) -> R<MemOrder> {
        let has = |m: &str| mods.contains(&m);
        let scope = [
            ("cta", MemScope::Cta),
            ("gpu", MemScope::Gpu),
            ("sys", MemScope::Sys),
        ]
        .into_iter()
        .find(|(m, _)| has(m))
        .map(|(_, s)| s);
        let sem = if base == "ldu" || has("nc") {
            if base == "st" {
                return self.fail("st.nc does not exist");
            }
            Sem::ReadOnly
        } else if has("volatile") {
            return Ok(MemOrder {
                sem: Sem::Relaxed,
                scope: MemScope::Sys,
            });
        } else if has("relaxed") {
            Sem::Relaxed
        } else if has("acquire") {
            if base == "st" {
                return self.fail("st.acquire does not exist");
            }
            Sem::Acquire
        } else if has("release") {
            if base != "st" {
                return self.fail("ld.release does not exist");
            }
            Sem::Release
        } else {
            Sem::Weak
        };
        if matches!(sem, Sem::Relaxed | Sem::Acquire | Sem::Release) && scope.is_none() {
            return self
                .fail("a .relaxed, .acquire or .release access needs a scope (.cta, .gpu, .sys)");
        }
        Ok(MemOrder {
            sem,
            scope: scope.unwrap_or(MemScope::Gpu),
        })
    }

    fn memory(&self, base: &str, mods: &[&str], ops: &[Operand]) -> R<Op> {
        let ty_str = *mods.last().unwrap_or(&"");
        for m in &mods[..mods.len().saturating_sub(1)] {
            let known = matches!(
                *m,
                "global"
                    | "shared"
                    | "shared::cta"
                    | "local"
                    | "const"
                    | "param"
                    | "v2"
                    | "v4"
                    | "ca"
                    | "cg"
                    | "cs"
                    | "lu"
                    | "cv"
                    | "wb"
                    | "wt"
                    | "nc"
                    | "volatile"
                    | "relaxed"
                    | "acquire"
                    | "release"
                    | "weak"
                    | "gpu"
                    | "sys"
                    | "cta"
                    | "L1::evict_normal"
                    | "L1::evict_unchanged"
                    | "L1::evict_first"
                    | "L1::evict_last"
                    | "L1::no_allocate"
                    | "L2::64B"
                    | "L2::128B"
                    | "L2::256B"
                    | "L2::evict_first"
                    | "L2::evict_last"
                    | "L2::evict_normal"
            );
            if !known {
                return self.fail(format!("unsupported modifier .{m}"));
            }
        }
        let n: u8 = if mods.contains(&"v4") {
            4
        } else if mods.contains(&"v2") {
            2
        } else {
            1
        };
        let Some((kind, bits)) = split_type(ty_str) else {
            return self.fail(format!("unsupported type .{ty_str}"));
        };
        if !matches!(bits, 8 | 16 | 32 | 64) {
            return self.fail(format!("unsupported type .{ty_str}"));
        }
        let size = bits / 8;
        let sext = kind == 's';
        let space = self.space_of(mods)?;
        let order = self.mem_order(base, mods)?;
        let ops = self.operands(ops, 2)?;
        if base == "st" {
            let Some(space) = space else {
                return self.fail("st.param is not supported in kernels");
            };
            let addr = self.addr(&ops[0], space)?;
            let items: Vec<&Operand> = match &ops[1] {
                Operand::Vector(v) => v.iter().collect(),
                o => vec![o],
            };
            if items.len() != n as usize {
                return self.fail("vector length does not match .v2/.v4");
            }
            let lit = match (kind, bits) {
                ('f', 32) => Lit::F32,
                ('f', 64) => Lit::F64,
                _ => Lit::Int(bits),
            };
            let mut src = [(Src::I(0), false); 4];
            for (k, op) in items.iter().enumerate() {
                let wide = match self.src_bank(op) {
                    Some(Bank::R64) => true,
                    Some(Bank::R32) => false,
                    Some(Bank::Pred) => return self.fail("store of a predicate"),
                    None => bits == 64,
                };
                if wide && bits < 64 {
                    // PTX allows a wider source; the low bytes are stored.
                }
                src[k] = (
                    self.src(op, if wide { Bank::R64 } else { Bank::R32 }, lit)?,
                    wide,
                );
            }
            return Ok(Op::St {
                space,
                src,
                n,
                size,
                addr,
                order,
            });
        }
        let items: Vec<&Operand> = match &ops[0] {
            Operand::Vector(v) => v.iter().collect(),
            o => vec![o],
        };
        if items.len() != n as usize {
            return self.fail("vector length does not match .v2/.v4");
        }
        let mut dst = [Dst::Sink; 4];
        for (k, op) in items.iter().enumerate() {
            dst[k] = self.dst_any(op)?;
            if bits == 64 && matches!(dst[k], Dst::R32(_)) {
                return self.fail("64-bit load into a 32-bit register");
            }
        }
        match space {
            None => {
                let Operand::Addr(parse::AddrBase::Symbol(s), off) = &ops[1] else {
                    return self.fail("ld.param needs a parameter name");
                };
                let Some(Sym::Param { offset }) = self.syms.get(s.as_str()) else {
                    return self.fail(format!("{s} is not a parameter of this kernel"));
                };
                Ok(Op::LdParam {
                    dst,
                    n,
                    size,
                    offset: (*offset as i64 + off) as u32,
                    sext,
                })
            }
            Some(space) => Ok(Op::Ld {
                space,
                dst,
                n,
                size,
                sext,
                addr: self.addr(&ops[1], space)?,
                order,
            }),
        }
    }

    fn atom(&self, red: bool, mods: &[&str], ops: &[Operand]) -> R<Op> {
        let ty_str = *mods.last().unwrap_or(&"");
        let space = self.space_of(mods)?.unwrap_or(Space::Generic);
        let mut op = None;
        let mut order = MemOrder::ATOMIC;
        for m in &mods[..mods.len().saturating_sub(1)] {
            let o = match *m {
                "relaxed" => {
                    order.sem = Sem::Relaxed;
                    continue;
                }
                "acquire" => {
                    order.sem = Sem::Acquire;
                    continue;
                }
                "release" => {
                    order.sem = Sem::Release;
                    continue;
                }
                "acq_rel" => {
                    order.sem = Sem::AcqRel;
                    continue;
                }
                "cta" => {
                    order.scope = MemScope::Cta;
                    continue;
                }
                "gpu" => {
                    order.scope = MemScope::Gpu;
                    continue;
                }
                "sys" => {
                    order.scope = MemScope::Sys;
                    continue;
                }
                "add" => AtomOp::Add,
                "min" => AtomOp::Min,
                "max" => AtomOp::Max,
                "inc" => AtomOp::Inc,
                "dec" => AtomOp::Dec,
                "and" => AtomOp::And,
                "or" => AtomOp::Or,
                "xor" => AtomOp::Xor,
                "exch" => AtomOp::Exch,
                "cas" => AtomOp::Cas,
                "global" | "shared" | "shared::cta" => continue,
                m => return self.fail(format!("unsupported modifier .{m}")),
            };
            op = Some(o);
        }
        let Some(op) = op else {
            return self.fail("missing atomic operation");
        };
        let ty = match ty_str {
            "u32" | "b32" => AtomTy::U32,
            "s32" => AtomTy::S32,
            "u64" | "b64" => AtomTy::U64,
            "s64" => AtomTy::S64,
            "f32" => AtomTy::F32,
            "f64" => AtomTy::F64,
            t => return self.fail(format!("unsupported atomic type .{t}")),
        };
        let valid = match op {
            AtomOp::Add => true,
            AtomOp::Min | AtomOp::Max => !matches!(ty, AtomTy::F32 | AtomTy::F64),
            AtomOp::Inc | AtomOp::Dec => ty == AtomTy::U32,
            AtomOp::And | AtomOp::Or | AtomOp::Xor | AtomOp::Exch | AtomOp::Cas => {
                matches!(ty, AtomTy::U32 | AtomTy::U64)
            }
        };
        if !valid {
            return self.fail("operation not defined for this type");
        }
        let wide = ty.size() == 8;
        let bank = if wide { Bank::R64 } else { Bank::R32 };
        let lit = match ty {
            AtomTy::F32 => Lit::F32,
            AtomTy::F64 => Lit::F64,
            _ => Lit::Int(if wide { 64 } else { 32 }),
        };
        let cas = op == AtomOp::Cas;
        let expect = if red { 2 } else { 3 } + cas as usize;
        let ops = self.operands(ops, expect)?;
        let (d, rest) = if red {
            (Dst::Sink, ops)
        } else {
            let d = match &ops[0] {
                Operand::Sink => Dst::Sink,
                o => {
                    let r = self.dst(o, bank)?;
                    if wide { Dst::R64(r) } else { Dst::R32(r) }
                }
            };
            (d, &ops[1..])
        };
        Ok(Op::Atom {
            space,
            op,
            ty,
            d,
            addr: self.addr(&rest[0], space)?,
            b: self.src(&rest[1], bank, lit)?,
            c: if cas {
                self.src(&rest[2], bank, lit)?
            } else {
                Src::I(0)
            },
            order,
        })
    }
}

/// Decodes entry `f` of module `m` with the hardware's approximate
/// instructions ([`mufu::Model::Sm90`]).
pub fn decode_entry(m: &parse::Module, f: &parse::Function) -> Result<Kernel, DecodeError> {
    decode_entry_with(m, f, mufu::Model::Sm90)
}

/// Decodes entry `f` of module `m`, approximate instructions as `mufu` says.
pub fn decode_entry_with(
    m: &parse::Module,
    f: &parse::Function,
    mufu: mufu::Model,
) -> Result<Kernel, DecodeError> {
    let mut d = Decoder {
        mufu,
        kernel: &f.name,
        scopes: vec![Scope::default()],
        counts: [0; 3],
        syms: HashMap::new(),
        labels: HashMap::new(),
        line: f.line,
        opcode: ".entry".to_owned(),
    };
    // Parameters, laid out as cuLaunchKernel lays them out: each at its
    // natural (or declared) alignment.
    let mut params = Vec::new();
    let mut offset = 0u32;
    for p in &f.params {
        let Some(elem) = type_size(&p.ty) else {
            return d.fail(format!(
                "parameter {} has unsupported type .{}",
                p.name, p.ty
            ));
        };
        let size = elem * p.array.unwrap_or(1);
        let align = p.align.unwrap_or(elem).max(1);
        offset = align_up(offset, align);
        d.syms.insert(p.name.clone(), Sym::Param { offset });
        params.push(KernelParam {
            name: p.name.clone(),
            ty: p.ty.clone(),
            size,
            align,
            offset,
        });
        offset += size;
    }
    let param_bytes = offset;

    // Shared memory: static variables first, then the dynamic region, where
    // every `.extern .shared` array starts.
    let mut shared_end = 0u32;
    let mut dyn_align = 16u32;
    let mut externs = Vec::new();
    let mut local_end = 0u32;
    let mut vars: Vec<&parse::Variable> = m.variables.iter().collect();
    for (_, b) in &f.body {
        if let Body::Var(v) = b {
            vars.push(v);
        }
    }
    for v in vars {
        d.line = v.line;
        d.opcode = format!(".{:?}", v.space).to_lowercase();
        if v.initialized {
            return d.fail(format!("initialised variable {} is not supported", v.name));
        }
        let elem = type_size(&v.ty).unwrap_or(1);
        let align = v.align.unwrap_or(elem).max(1);
        match v.space {
            parse::Space::Shared if v.external || v.array == Some(0) => {
                dyn_align = dyn_align.max(align);
                externs.push(v.name.clone());
            }
            parse::Space::Shared => {
                shared_end = align_up(shared_end, align);
                d.syms
                    .insert(v.name.clone(), Sym::Shared { offset: shared_end });
                shared_end += elem * v.array.unwrap_or(1);
            }
            parse::Space::Local => {
                local_end = align_up(local_end, align);
                d.syms
                    .insert(v.name.clone(), Sym::Local { offset: local_end });
                local_end += elem * v.array.unwrap_or(1);
            }
            parse::Space::Global | parse::Space::Const => {
                // Module-scope device variables need an allocation per module;
                // only an error if a kernel uses them (unknown symbol).
            }
        }
    }
    let dynamic_shared_offset = align_up(shared_end, dyn_align);
    for name in externs {
        d.syms.insert(
            name,
            Sym::Shared {
                offset: dynamic_shared_offset,
            },
        );
    }

    // Labels: the index of the next instruction.
    let mut pc = 0u32;
    for (_, b) in &f.body {
        match b {
            Body::Label(l) => {
                d.labels.insert(l.clone(), pc);
            }
            Body::Inst(_) => pc += 1,
            _ => {}
        }
    }

    let mut insts = Vec::new();
    let mut opcodes = Vec::new();
    for (line, b) in &f.body {
        d.line = *line;
        match b {
            Body::Open => d.scopes.push(Scope::default()),
            Body::Close => {
                if d.scopes.len() <= 1 {
                    return d.fail("unbalanced }");
                }
                d.scopes.pop();
            }
            Body::Reg { ty, names } => {
                d.opcode = ".reg".to_owned();
                for (name, count) in names {
                    d.declare(ty, name, *count)?;
                }
            }
            Body::Var(_) | Body::Label(_) => {}
            Body::Inst(inst) => {
                d.opcode = inst.opcode.clone();
                let guard = match &inst.guard {
                    None => PredSrc::TRUE,
                    Some((neg, p)) => PredSrc {
                        reg: d.reg(p, Bank::Pred)?,
                        neg: *neg,
                    },
                };
                let op = d.instruction(inst)?;
                insts.push(Inst {
                    op,
                    guard,
                    line: *line,
                });
                opcodes.push(inst.opcode.clone().into_boxed_str());
            }
        }
    }
    let reconverge = cfg::reconvergence_points(&insts);
    let (registers, source) = crate::regalloc::registers(f);
    Ok(Kernel {
        name: f.name.clone(),
        params,
        param_bytes,
        static_shared: shared_end,
        dynamic_shared_offset,
        local_bytes: local_end,
        max_threads: f.max_threads,
        reqntid: f.reqntid,
        registers,
        registers_measured: source == crate::regalloc::Source::Measured,
        line: f.line,
        insts,
        opcodes,
        reconverge,
        n32: d.counts[Bank::R32 as usize],
        n64: d.counts[Bank::R64 as usize],
        npred: d.counts[Bank::Pred as usize],
    })
}
