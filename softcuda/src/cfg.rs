//! Control flow: basic blocks and immediate post-dominators, so a warp whose
//! threads take different sides of a branch runs each side with part of its
//! lanes and reconverges where both sides must meet again (the classic SIMT
//! stack; Volta's compiler places its convergence barriers there too).

use crate::ir::{Inst, Op};

/// "No instruction": the paths of a branch only meet at exit.
pub const NO_PC: u32 = u32::MAX;

/// Successors of instruction `pc`: instruction indices, `None` for exit.
fn successors(insts: &[Inst], pc: usize) -> Vec<Option<usize>> {
    let next = (pc + 1 < insts.len()).then_some(pc + 1);
    let guarded = insts[pc].guard.reg != u32::MAX;
    match insts[pc].op {
        Op::Bra { target, .. } => {
            let t = Some(target as usize).filter(|&t| t < insts.len());
            if guarded { vec![t, next] } else { vec![t] }
        }
        Op::Exit | Op::Trap => {
            if guarded {
                vec![next, None]
            } else {
                vec![None]
            }
        }
        _ => vec![next],
    }
}

/// For every instruction, the reconvergence point of a divergent branch
/// there: the first instruction of the branch block's immediate
/// post-dominator, or [`NO_PC`].
pub fn reconvergence_points(insts: &[Inst]) -> Vec<u32> {
    let n = insts.len();
    if n == 0 {
        return Vec::new();
    }
    // Basic blocks.
    let mut leader = vec![false; n];
    leader[0] = true;
    for pc in 0..n {
        if let Op::Bra { target, .. } = insts[pc].op {
            if (target as usize) < n {
                leader[target as usize] = true;
            }
            if pc + 1 < n {
                leader[pc + 1] = true;
            }
        }
        if matches!(insts[pc].op, Op::Exit | Op::Trap) && pc + 1 < n {
            leader[pc + 1] = true;
        }
    }
    let mut block_of = vec![0usize; n];
    let mut starts = Vec::new();
    for pc in 0..n {
        if leader[pc] {
            starts.push(pc);
        }
        block_of[pc] = starts.len() - 1;
    }
    let nb = starts.len();
    let exit = nb; // virtual exit node
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); nb + 1];
    for b in 0..nb {
        let last = if b + 1 < nb { starts[b + 1] - 1 } else { n - 1 };
        for s in successors(insts, last) {
            let node = s.map_or(exit, |pc| block_of[pc]);
            if !succ[b].contains(&node) {
                succ[b].push(node);
            }
        }
    }
    // Post-dominators: dominators of the reversed graph rooted at exit
    // (Cooper, Harvey & Kennedy's iterative algorithm).
    let mut pred: Vec<Vec<usize>> = vec![Vec::new(); nb + 1];
    for (b, ss) in succ.iter().enumerate() {
        for &s in ss {
            pred[s].push(b);
        }
    }
    // Reverse post-order of the reversed graph from exit.
    let mut order = Vec::with_capacity(nb + 1);
    let mut seen = vec![false; nb + 1];
    let mut stack = vec![(exit, 0usize)];
    seen[exit] = true;
    while let Some(&mut (node, ref mut k)) = stack.last_mut() {
        if *k < pred[node].len() {
            let p = pred[node][*k];
            *k += 1;
            if !seen[p] {
                seen[p] = true;
                stack.push((p, 0));
            }
        } else {
            order.push(node);
            stack.pop();
        }
    }
    order.reverse();
    let mut rank = vec![usize::MAX; nb + 1];
    for (i, &b) in order.iter().enumerate() {
        rank[b] = i;
    }
    const UNDEF: usize = usize::MAX;
    let mut ipdom = vec![UNDEF; nb + 1];
    ipdom[exit] = exit;
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let mut new = UNDEF;
            for &s in &succ[b] {
                if ipdom[s] == UNDEF {
                    continue;
                }
                new = if new == UNDEF {
                    s
                } else {
                    let (mut x, mut y) = (new, s);
                    while x != y {
                        while rank[x] > rank[y] {
                            x = ipdom[x];
                        }
                        while rank[y] > rank[x] {
                            y = ipdom[y];
                        }
                    }
                    x
                };
            }
            if new != UNDEF && ipdom[b] != new {
                ipdom[b] = new;
                changed = true;
            }
        }
    }
    (0..n)
        .map(|pc| {
            let b = block_of[pc];
            match ipdom[b] {
                UNDEF => NO_PC,
                p if p == exit => NO_PC,
                p => starts[p] as u32,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Inst, Op, PredSrc};

    fn inst(op: Op, guarded: bool) -> Inst {
        Inst {
            op,
            guard: if guarded {
                PredSrc { reg: 0, neg: false }
            } else {
                PredSrc::TRUE
            },
            line: 0,
        }
    }

    #[test]
    fn if_else_and_loops_reconverge_at_the_join() {
        // 0: @p bra 3; 1: nop; 2: bra 4; 3: nop; 4: nop; 5: @p bra 4; 6: exit
        let insts = vec![
            inst(
                Op::Bra {
                    target: 3,
                    uni: false,
                },
                true,
            ),
            inst(Op::Nop, false),
            inst(
                Op::Bra {
                    target: 4,
                    uni: false,
                },
                false,
            ),
            inst(Op::Nop, false),
            inst(Op::Nop, false),
            inst(
                Op::Bra {
                    target: 4,
                    uni: false,
                },
                true,
            ),
            inst(Op::Exit, false),
        ];
        let r = reconvergence_points(&insts);
        assert_eq!(r[0], 4);
        assert_eq!(r[5], 6);
    }
}
