//! Registers per thread, as the driver's JIT (ptxas) reports them
//! (`CU_FUNC_ATTRIBUTE_NUM_REGS`), which bound a function's threads per
//! block.
//!
//! By default a function gets the count the H200's JIT gave the same code
//! (`softcuda/data/sm90_jit_registers.tsv`: entry, registers, and the
//! fingerprint of the entry's PTX tokens it was measured on, so an entry
//! whose code changed is no longer taken as measured). Any other entry gets
//! an estimate from the most 32-bit registers simultaneously live in the PTX
//! (64-bit values count two, predicates none, guarded definitions do not end
//! a value's life; backward liveness over the control-flow graph): ptxas
//! needs a floor of registers for small kernels (addresses, the stack
//! pointer) and rematerialises and reschedules large unrolled ones, so
//! `10 + 2/3 live`, fitted to the 33 entries measured first; against all
//! 63 measured on 2026-11-27 its mean error is 6 registers, at most 29
//! (the MD ensemble kernels): `tests/jit.rs`.

use std::collections::HashMap;

use crate::parse::{self, AddrBase, Body, Operand};

/// The estimate's floor: registers ptxas uses beyond a share of the PTX's
/// live values (fitted with [`ESTIMATE_SLOPE`] to the measured entries).
pub const ESTIMATE_BASE: u32 = 10;
/// The estimate's share of the PTX's live registers, `(numerator,
/// denominator)`.
pub const ESTIMATE_SLOPE: (u32, u32) = (2, 3);

/// The measured table: `(entry, registers, fingerprint)`.
static MEASURED: &str = include_str!("../data/sm90_jit_registers.tsv");

/// Where a register count came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The H200's JIT on the same code (fingerprint matched).
    Measured,
    /// [`estimate`]: not measured, or measured on different code.
    Estimated,
}

/// The measured count of entry `name` whose tokens have `fingerprint`.
pub fn measured(name: &str, fingerprint: u64) -> Option<u32> {
    MEASURED
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut it = l.split('\t');
            let (n, r, f) = (it.next()?, it.next()?, it.next()?);
            let f = u64::from_str_radix(f.trim_start_matches("0x"), 16).ok()?;
            (n == name && f == fingerprint)
                .then(|| r.parse().ok())
                .flatten()
        })
        .next()
}

/// Registers of entry `f`: measured, or estimated; never above `.maxnreg`.
pub fn registers(f: &parse::Function) -> (u32, Source) {
    let (r, s) = match measured(&f.name, f.fingerprint) {
        Some(r) => (r, Source::Measured),
        None => (estimate(f), Source::Estimated),
    };
    (f.maxnreg.map_or(r, |m| r.min(m)), s)
}

/// Opcodes without a destination operand.
fn writes_nothing(base: &str) -> bool {
    matches!(
        base,
        "st" | "red"
            | "bar"
            | "barrier"
            | "bra"
            | "ret"
            | "exit"
            | "trap"
            | "membar"
            | "fence"
            | "prefetch"
            | "prefetchu"
            | "nanosleep"
            | "pmevent"
            | "call"
    )
}

struct Regs {
    ids: HashMap<String, usize>,
    weight: Vec<u32>,
    /// `%r<N>` ranges: prefix -> weight.
    ranges: HashMap<String, u32>,
    exact: HashMap<String, u32>,
}

impl Regs {
    fn id(&mut self, name: &str) -> Option<usize> {
        if let Some(&i) = self.ids.get(name) {
            return Some(i);
        }
        let w = match self.exact.get(name) {
            Some(&w) => w,
            None => {
                let prefix = name.trim_end_matches(|c: char| c.is_ascii_digit());
                *self.ranges.get(prefix)?
            }
        };
        let i = self.weight.len();
        self.ids.insert(name.to_owned(), i);
        self.weight.push(w);
        Some(i)
    }
}

fn width(ty: &str) -> u32 {
    match ty {
        "pred" => 0,
        "b64" | "u64" | "s64" | "f64" => 2,
        "b128" => 4,
        _ => 1,
    }
}

fn operand_regs(regs: &mut Regs, o: &Operand, out: &mut Vec<usize>) {
    match o {
        Operand::Name(n) | Operand::Not(n) => out.extend(regs.id(n)),
        Operand::Addr(AddrBase::Reg(n), _) => out.extend(regs.id(n)),
        Operand::Vector(v) => v.iter().for_each(|o| operand_regs(regs, o, out)),
        Operand::Pair(a, b) => {
            out.extend(regs.id(a));
            out.extend(regs.id(b));
        }
        _ => {}
    }
}

/// The JIT-like estimate for `f`: `ESTIMATE_BASE + ESTIMATE_SLOPE x`
/// [`max_live`], rounded.
pub fn estimate(f: &parse::Function) -> u32 {
    let (num, den) = ESTIMATE_SLOPE;
    ESTIMATE_BASE + (max_live(f) * num + den / 2) / den
}

/// The most 32-bit registers live at once in `f`'s PTX.
pub fn max_live(f: &parse::Function) -> u32 {
    let mut regs = Regs {
        ids: HashMap::new(),
        weight: Vec::new(),
        ranges: HashMap::new(),
        exact: HashMap::new(),
    };
    for (_, b) in &f.body {
        if let Body::Reg { ty, names } = b {
            for (name, count) in names {
                let w = width(ty);
                match count {
                    Some(_) => regs.ranges.insert(name.clone(), w),
                    None => regs.exact.insert(name.clone(), w),
                };
            }
        }
    }
    // Instructions with their uses, definitions (killing ones apart) and
    // successors.
    let mut labels = HashMap::new();
    let mut insts = Vec::new();
    for (_, b) in &f.body {
        match b {
            Body::Label(l) => {
                labels.insert(l.clone(), insts.len());
            }
            Body::Inst(i) => insts.push(i),
            _ => {}
        }
    }
    let n = insts.len();
    let mut uses = vec![Vec::new(); n];
    let mut defs = vec![Vec::new(); n];
    let mut kills = vec![false; n];
    let mut succ = vec![Vec::new(); n];
    for (k, i) in insts.iter().enumerate() {
        let base = i.opcode.split('.').next().unwrap_or("");
        if let Some((_, p)) = &i.guard {
            uses[k].extend(regs.id(p));
        }
        let (dst, srcs) = if writes_nothing(base) || i.operands.is_empty() {
            (&[][..], &i.operands[..])
        } else {
            (&i.operands[..1], &i.operands[1..])
        };
        for o in dst {
            operand_regs(&mut regs, o, &mut defs[k]);
        }
        for o in srcs {
            operand_regs(&mut regs, o, &mut uses[k]);
        }
        kills[k] = i.guard.is_none();
        let ends = matches!(base, "ret" | "exit" | "trap");
        if base == "bra" {
            if let Some(Operand::Name(l)) = i.operands.first()
                && let Some(&t) = labels.get(l)
            {
                succ[k].push(t);
            }
            if i.guard.is_some() && k + 1 < n {
                succ[k].push(k + 1);
            }
        } else if !ends && k + 1 < n {
            succ[k].push(k + 1);
        }
    }
    let words = regs.weight.len().div_ceil(64).max(1);
    let mut live_in = vec![0u64; n * words];
    let mut live_out = vec![0u64; n * words];
    let mut changed = true;
    while changed {
        changed = false;
        for k in (0..n).rev() {
            let mut out = vec![0u64; words];
            for &s in &succ[k] {
                for w in 0..words {
                    out[w] |= live_in[s * words + w];
                }
            }
            let mut inn = out.clone();
            if kills[k] {
                for &d in &defs[k] {
                    inn[d / 64] &= !(1 << (d % 64));
                }
            }
            for &u in &uses[k] {
                inn[u / 64] |= 1 << (u % 64);
            }
            if inn[..] != live_in[k * words..(k + 1) * words] {
                live_in[k * words..(k + 1) * words].copy_from_slice(&inn);
                changed = true;
            }
            live_out[k * words..(k + 1) * words].copy_from_slice(&out);
        }
    }
    let pressure = |bits: &[u64], extra: &[usize]| -> u32 {
        let mut set = bits.to_vec();
        for &d in extra {
            set[d / 64] |= 1 << (d % 64);
        }
        let mut total = 0;
        for (w, &word) in set.iter().enumerate() {
            let mut b = word;
            while b != 0 {
                let r = w * 64 + b.trailing_zeros() as usize;
                total += regs.weight[r];
                b &= b - 1;
            }
        }
        total
    };
    let mut most = 0;
    for k in 0..n {
        let inn = pressure(&live_in[k * words..(k + 1) * words], &[]);
        let out = pressure(&live_out[k * words..(k + 1) * words], &defs[k]);
        most = most.max(inn).max(out);
    }
    most
}
