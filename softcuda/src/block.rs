//! Running one block: the two schedules. (Over 600 lines by a little: the
//! SIMT stack and per-thread mode share the barrier and collective rules.)
//!
//! **Deterministic**: warps run one after another in index order, each in
//! lockstep with a SIMT reconvergence stack (a divergent branch runs the
//! taken lanes, then the others, and they continue together at the branch's
//! immediate post-dominator), each until it reaches `bar.sync` or exits;
//! when every warp waits, the barrier opens. Counts of instructions,
//! wavefronts and sectors are those of lockstep warps.
//!
//! **Adversarial** (seeded): every thread has its own program counter
//! (Volta's independent thread scheduling); a random ready thread runs
//! alone for a random number of instructions, so threads of one warp drift
//! arbitrarily far apart between synchronisation points. Warp collectives
//! (`bar.warp.sync`, `shfl.sync`, `vote.sync`) wait for their member lanes.
//! Blocks are resident together and interleave (`sched.rs` picks the
//! block of each time slice; `lanes_step` runs it).
//!
//! A deterministic block whose warp meets a collective in divergent code
//! continues in per-thread mode with a fixed order (lowest warp, lowest
//! program counter first).
//!
//! Both reject barrier misuse: `bar.sync` reached in divergent code or
//! after some threads of the block exited, or reached by threads of one warp
//! at different instructions.

use crate::cfg::NO_PC;
use crate::exec::{self, Env, Fault, FaultKind, Stop, Warp};
use crate::ir::Op;

pub use crate::rng::Rng;

/// How threads of a block are interleaved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Lockstep warps in order; reproducible and exactly accounted.
    Deterministic,
    /// Independent threads in a seeded random interleaving; blocks in a
    /// seeded random order.
    Adversarial {
        /// The seed.
        seed: u64,
    },
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    pc: u32,
    mask: u32,
    rpc: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Ready,
    Barrier,
    Collective,
    Exited,
}

/// Per-thread state of a warp in per-thread mode.
struct LaneState {
    pc: [u32; 32],
    st: [Status; 32],
}

/// A warp in SIMT mode: its reconvergence stack, and the barrier it waits at.
struct WarpState {
    stack: Vec<Entry>,
    at_barrier: Option<u32>,
}

fn sync_fault<T>(msg: String, pc: u32, thread: Option<u32>) -> Result<T, Fault> {
    Err(Fault {
        kind: FaultKind::Sync(msg),
        pc,
        thread,
    })
}

fn lanes_of(mut m: u32) -> impl Iterator<Item = usize> {
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

/// Runs a warp in SIMT mode until it waits at a barrier, exits, or needs
/// per-thread mode (returns `false` then).
fn run_simt(
    env: &mut Env,
    warp: &mut Warp,
    stack: &mut Vec<Entry>,
    at_barrier: &mut Option<u32>,
    budget: &mut u64,
) -> Result<bool, Fault> {
    let kernel = env.kernel;
    loop {
        let Some(top) = stack.last_mut() else {
            return Ok(true);
        };
        top.mask &= !warp.exited;
        if top.mask == 0 || top.pc == top.rpc {
            stack.pop();
            continue;
        }
        let before = env.stats.warp_instructions;
        let stop = exec::run(env, warp, top.pc, top.mask, top.rpc, *budget, true)?;
        *budget = budget.saturating_sub(env.stats.warp_instructions - before);
        let top = stack.last_mut().expect("the entry that ran");
        match stop {
            Stop::Reconverge => {
                stack.pop();
            }
            Stop::Diverge { pc, taken, target } => {
                env.stats.divergent_branches += 1;
                let r = kernel.reconverge[pc as usize];
                let mask = top.mask;
                top.pc = r;
                stack.push(Entry {
                    pc: pc + 1,
                    mask: mask & !taken,
                    rpc: r,
                });
                stack.push(Entry {
                    pc: target,
                    mask: taken,
                    rpc: r,
                });
            }
            Stop::Barrier { pc } => {
                let live = warp.valid & !warp.exited;
                if top.mask != live {
                    return sync_fault(
                        format!(
                            "bar.sync reached in divergent code: lanes {:#010x} of warp {} arrive, lanes {:#010x} are elsewhere",
                            top.mask,
                            warp.index,
                            live & !top.mask
                        ),
                        pc,
                        None,
                    );
                }
                top.pc = pc;
                *at_barrier = Some(pc);
                return Ok(true);
            }
            Stop::Collective { pc } => {
                top.pc = pc;
                return Ok(false);
            }
            Stop::Exit { pc, lanes } => {
                warp.exited |= lanes;
                if lanes != top.mask {
                    top.pc = pc + 1;
                }
                for e in stack.iter_mut() {
                    e.mask &= !lanes;
                }
            }
            Stop::Budget { pc } => {
                return Err(Fault {
                    kind: FaultKind::InstructionLimit(env.stats.warp_instructions),
                    pc,
                    thread: None,
                });
            }
        }
    }
}

/// The per-lane state of a warp in SIMT mode: each lane continues at the pc
/// of the deepest stack entry holding it.
fn to_lanes(warp: &Warp, stack: &[Entry], at_barrier: Option<u32>) -> LaneState {
    let mut s = LaneState {
        pc: [0; 32],
        st: [Status::Exited; 32],
    };
    let mut assigned = 0u32;
    for e in stack.iter().rev() {
        for l in lanes_of(e.mask & !assigned & !warp.exited) {
            s.pc[l] = e.pc;
            s.st[l] = if at_barrier.is_some() {
                Status::Barrier
            } else {
                Status::Ready
            };
        }
        assigned |= e.mask;
    }
    s
}

/// Tries to complete the collective lane `l` of warp `w` waits at.
fn try_collective(
    env: &mut Env,
    warp: &mut Warp,
    ls: &mut LaneState,
    l: usize,
    ready: &mut Vec<(u32, u8)>,
) -> Result<(), Fault> {
    let pc = ls.pc[l];
    let inst = &env.kernel.insts[pc as usize];
    let live = warp.valid & !warp.exited;
    let members = exec::member_mask(env, warp, inst, l) & live;
    if members >> l & 1 == 0 {
        return sync_fault(
            format!(
                "{} with a member mask {members:#010x} that does not include the executing lane {l}",
                env.kernel.opcode_of(pc)
            ),
            pc,
            Some(warp.thread[l]),
        );
    }
    let is_sync = matches!(inst.op, Op::WarpSync { .. });
    for m in lanes_of(members) {
        if ls.st[m] != Status::Collective {
            return Ok(());
        }
        let other = &env.kernel.insts[ls.pc[m] as usize];
        let same = if is_sync {
            matches!(other.op, Op::WarpSync { .. })
                && exec::member_mask(env, warp, other, m) & live == members
        } else {
            ls.pc[m] == pc
        };
        if !same {
            return Ok(());
        }
    }
    if is_sync {
        if members == live {
            warp.wepoch += 1;
            env.stats.warp_barriers += 1;
            env.warp_synced(warp);
        }
    } else {
        exec::exec_collective(env, warp, inst, members);
    }
    for m in lanes_of(members) {
        ls.pc[m] += 1;
        ls.st[m] = Status::Ready;
        ready.push((warp.index, m as u8));
    }
    Ok(())
}

/// A `bar.sync` opened: the block's threads learn what any of them
/// acquired through memory.
fn block_synced(env: &mut Env, warps: &mut [Warp]) {
    let threads = env.consts.ntid.iter().product();
    if !env.sync.threads.is_empty() && env.sync.barrier(threads) {
        for w in warps {
            w.know = w.valid;
        }
    }
}

/// Opens the block barrier if every live thread waits at it.
fn release_barrier(
    env: &mut Env,
    warps: &mut [Warp],
    states: &mut [LaneState],
    ready: &mut Vec<(u32, u8)>,
) -> Result<bool, Fault> {
    let mut any_barrier = None;
    let mut exited_any = None;
    for (w, ls) in warps.iter().zip(states.iter()) {
        let mut warp_pc = None;
        for l in lanes_of(w.valid) {
            match ls.st[l] {
                Status::Barrier => {
                    any_barrier = Some(ls.pc[l]);
                    if let Some(p) = warp_pc
                        && p != ls.pc[l]
                    {
                        {
                            return sync_fault(
                                format!(
                                    "threads of warp {} wait at different bar.sync instructions (lines {} and {})",
                                    w.index,
                                    env.kernel.line_of(p),
                                    env.kernel.line_of(ls.pc[l])
                                ),
                                ls.pc[l],
                                Some(w.thread[l]),
                            );
                        }
                    }
                    warp_pc = Some(ls.pc[l]);
                }
                Status::Exited => exited_any = Some(w.thread[l]),
                Status::Ready => return Ok(false),
                Status::Collective => {}
            }
        }
    }
    let Some(pc) = any_barrier else {
        return Ok(false);
    };
    // Anyone still at a collective while the others wait at bar.sync: deadlock.
    for (w, ls) in warps.iter().zip(states.iter()) {
        for l in lanes_of(w.valid) {
            if ls.st[l] == Status::Collective {
                return sync_fault(
                    format!(
                        "deadlock: thread {} waits at {} (line {}) while others wait at bar.sync (line {})",
                        w.thread[l],
                        env.kernel.opcode_of(ls.pc[l]),
                        env.kernel.line_of(ls.pc[l]),
                        env.kernel.line_of(pc)
                    ),
                    ls.pc[l],
                    Some(w.thread[l]),
                );
            }
        }
    }
    if let Some(t) = exited_any {
        return sync_fault(
            format!(
                "bar.sync (line {}) reached after thread {t} of the block exited: every thread of the block must reach every barrier",
                env.kernel.line_of(pc)
            ),
            pc,
            Some(t),
        );
    }
    env.bepoch += 1;
    env.stats.barriers += 1;
    block_synced(env, warps);
    for (w, ls) in warps.iter().zip(states.iter_mut()) {
        for l in lanes_of(w.valid) {
            ls.pc[l] += 1;
            ls.st[l] = Status::Ready;
            ready.push((w.index, l as u8));
        }
    }
    Ok(true)
}

/// The per-thread state of a block: each lane's pc and status, and the
/// lanes ready to run.
pub(crate) struct Lanes {
    states: Vec<LaneState>,
    ready: Vec<(u32, u8)>,
}

impl Lanes {
    /// Every valid lane ready at the first instruction.
    pub(crate) fn start(warps: &[Warp]) -> Lanes {
        let states = warps
            .iter()
            .map(|w| {
                let mut s = LaneState {
                    pc: [0; 32],
                    st: [Status::Exited; 32],
                };
                for l in lanes_of(w.valid) {
                    s.st[l] = Status::Ready;
                }
                s
            })
            .collect();
        Lanes::from_states(warps, states)
    }

    fn from_states(warps: &[Warp], states: Vec<LaneState>) -> Lanes {
        let mut ready: Vec<(u32, u8)> = Vec::new();
        for (w, ls) in warps.iter().zip(states.iter()) {
            for l in lanes_of(w.valid) {
                if ls.st[l] == Status::Ready {
                    ready.push((w.index, l as u8));
                }
            }
        }
        Lanes { states, ready }
    }
}

/// Per-thread mode for the whole block, `rng` choosing the interleaving
/// (`None`: lowest warp, lowest pc first, lanes at one pc together).
fn run_lanes(
    env: &mut Env,
    warps: &mut [Warp],
    states: Vec<LaneState>,
    mut rng: Option<&mut Rng>,
    budget: &mut u64,
) -> Result<(), Fault> {
    let mut lanes = Lanes::from_states(warps, states);
    while !lanes_step(env, warps, &mut lanes, rng.as_deref_mut(), budget)? {}
    Ok(())
}

/// One step of per-thread mode: runs a group of ready lanes (one random
/// thread for a random number of instructions, or, without `rng`, the
/// lowest ready warp's lanes at its lowest pc until they stop), or opens a
/// barrier. Returns whether the block has completed.
pub(crate) fn lanes_step(
    env: &mut Env,
    warps: &mut [Warp],
    lanes: &mut Lanes,
    rng: Option<&mut Rng>,
    budget: &mut u64,
) -> Result<bool, Fault> {
    let Lanes { states, ready } = lanes;
    if ready.is_empty() {
        if release_barrier(env, warps, states, ready)? {
            return Ok(false);
        }
        // Nothing ready and no barrier to open: done or deadlocked.
        for (w, ls) in warps.iter().zip(states.iter()) {
            for l in lanes_of(w.valid) {
                if ls.st[l] != Status::Exited {
                    let pc = ls.pc[l];
                    return sync_fault(
                        format!(
                            "deadlock: thread {} waits at {} (line {}) for lanes that exited or wait elsewhere",
                            w.thread[l],
                            env.kernel.opcode_of(pc),
                            env.kernel.line_of(pc)
                        ),
                        pc,
                        Some(w.thread[l]),
                    );
                }
            }
        }
        return Ok(true);
    }
    // Pick a group: one random thread, or the lowest ready warp's lanes
    // at its lowest pc.
    let (wi, group, slice) = match rng {
        Some(r) => {
            let k = r.below(ready.len() as u64) as usize;
            let (w, l) = ready.swap_remove(k);
            // Short slices most of the time, long ones sometimes.
            let slice = if r.below(4) == 0 {
                1 + r.below(2000)
            } else {
                1 + r.below(12)
            };
            (w as usize, 1u32 << l, slice)
        }
        None => {
            let w = ready.iter().map(|&(w, _)| w).min().expect("ready") as usize;
            let ls = &states[w];
            let pc = ready
                .iter()
                .filter(|&&(x, _)| x as usize == w)
                .map(|&(_, l)| ls.pc[l as usize])
                .min()
                .expect("ready lane");
            let mut group = 0u32;
            ready.retain(|&(x, l)| {
                if x as usize == w && ls.pc[l as usize] == pc {
                    group |= 1 << l;
                    false
                } else {
                    true
                }
            });
            (w, group, u64::MAX)
        }
    };
    let warp = &mut warps[wi];
    let ls = &mut states[wi];
    let l0 = group.trailing_zeros() as usize;
    let before = env.stats.warp_instructions;
    let stop = exec::run(
        env,
        warp,
        ls.pc[l0],
        group,
        NO_PC,
        slice.min(*budget),
        false,
    )?;
    let used = env.stats.warp_instructions - before;
    *budget = budget.saturating_sub(used);
    match stop {
        Stop::Reconverge => unreachable!("no reconvergence point in per-thread mode"),
        Stop::Budget { pc } => {
            if *budget == 0 {
                return Err(Fault {
                    kind: FaultKind::InstructionLimit(env.stats.warp_instructions),
                    pc,
                    thread: None,
                });
            }
            for l in lanes_of(group) {
                ls.pc[l] = pc;
                ready.push((wi as u32, l as u8));
            }
        }
        Stop::Diverge { pc, taken, target } => {
            env.stats.divergent_branches += 1;
            for l in lanes_of(group) {
                ls.pc[l] = if taken >> l & 1 != 0 { target } else { pc + 1 };
                ready.push((wi as u32, l as u8));
            }
        }
        Stop::Barrier { pc } => {
            for l in lanes_of(group) {
                ls.pc[l] = pc;
                ls.st[l] = Status::Barrier;
            }
        }
        Stop::Exit { pc, lanes } => {
            warp.exited |= lanes;
            for l in lanes_of(group) {
                if lanes >> l & 1 != 0 {
                    ls.st[l] = Status::Exited;
                } else {
                    ls.pc[l] = pc + 1;
                    ready.push((wi as u32, l as u8));
                }
            }
        }
        Stop::Collective { pc } => {
            for l in lanes_of(group) {
                ls.pc[l] = pc;
                ls.st[l] = Status::Collective;
            }
            try_collective(env, warp, ls, l0, ready)?;
        }
    }
    Ok(false)
}

/// Runs one block to completion.
pub(crate) fn run_block(env: &mut Env, warps: &mut [Warp], budget: &mut u64) -> Result<(), Fault> {
    let mut states: Vec<WarpState> = warps
        .iter()
        .map(|w| WarpState {
            stack: vec![Entry {
                pc: 0,
                mask: w.valid,
                rpc: NO_PC,
            }],
            at_barrier: None,
        })
        .collect();
    loop {
        let mut fallback = false;
        for (warp, s) in warps.iter_mut().zip(states.iter_mut()) {
            if s.at_barrier.is_some() || s.stack.is_empty() {
                continue;
            }
            if !run_simt(env, warp, &mut s.stack, &mut s.at_barrier, budget)? {
                fallback = true;
                break;
            }
        }
        if fallback {
            let lanes = warps
                .iter()
                .zip(states.iter())
                .map(|(w, s)| to_lanes(w, &s.stack, s.at_barrier))
                .collect();
            return run_lanes(env, warps, lanes, None, budget);
        }
        // Every warp waits at a barrier or is done.
        let Some(pc) = states.iter().find_map(|s| s.at_barrier) else {
            return Ok(());
        };
        if let Some(w) = warps.iter().find(|w| w.exited != 0) {
            let t = w.thread[w.exited.trailing_zeros() as usize];
            return sync_fault(
                format!(
                    "bar.sync (line {}) reached after thread {t} of the block exited: every thread of the block must reach every barrier",
                    env.kernel.line_of(pc)
                ),
                pc,
                Some(t),
            );
        }
        env.bepoch += 1;
        env.stats.barriers += 1;
        block_synced(env, warps);
        for s in states.iter_mut() {
            if let Some(p) = s.at_barrier.take()
                && let Some(top) = s.stack.last_mut()
            {
                top.pc = p + 1;
            }
        }
    }
}
