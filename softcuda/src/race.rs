//! The race detector: a shadow cell per 4-byte word of shared memory (per
//! block) and of global memory (per device) remembers the last writer and
//! up to two readers: thread, operation (launch or copy), barrier intervals,
//! release clock, and how strong each access was.
//!
//! Two accesses race (a *data race* in PTX's memory model) when they come
//! from different threads, at least one writes, they are not *morally
//! strong*, and nothing orders them:
//!
//! - morally strong: both are strong (`.relaxed`, `.acquire`, `.release`,
//!   `.volatile` (relaxed at `.sys`) or atomic) and each one's scope includes
//!   the other's thread (`.cta`: the same block; `.gpu` and `.sys`: the
//!   device). So atomics of different blocks commute at `.gpu` scope (the
//!   default) and race at `.cta` scope;
//! - threads of one block are ordered by a `bar.sync` between the accesses
//!   (the block's barrier epoch differs), threads of one warp also by a
//!   `bar.warp.sync` with the full mask (the warp's epoch differs);
//! - any threads are ordered by a release pattern observed by an acquire
//!   pattern ([`crate::sync`]): message passing through memory;
//! - operations (launches, copies) are ordered unless the caller names them
//!   concurrent (streams CUDA does not order): then accesses of the two
//!   race like those of two blocks.
//!
//! `ld.global.nc` (and `ldu`) read through the non-coherent path, which
//! requires the data to be read-only for the whole launch: a word that the
//! launch both writes and reads that way is reported, in either order.
//!
//! Lockstep execution orders nothing: two lanes of a warp that touch one word
//! in one instruction, or in two instructions without a `bar.warp.sync`
//! between them, race (Volta's independent thread scheduling may interleave
//! them arbitrarily). Keeping two readers per word can miss a race among many
//! readers; a reported race is always real under these rules.
//! Sub-word (8- and 16-bit) accesses are tracked per containing word.

use std::fmt;

use crate::ir::Scope;
use crate::sync::{Knowledge, includes};

/// Who accessed a word, and when.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    /// Thread index within the operation, plus one (0: no access).
    pub thread: u32,
    /// The operation (launch or copy).
    pub op: u32,
    /// Block barrier epoch.
    pub bepoch: u32,
    /// Warp barrier epoch.
    pub wepoch: u32,
    /// The thread's release clock (see [`crate::sync`]).
    pub clock: u32,
    /// Instruction index.
    pub pc: u32,
}

/// What an access does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A load.
    Read,
    /// A store.
    Write,
    /// An atomic read-modify-write (or reduction).
    Atomic,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Atomic => "atomic",
        })
    }
}

/// An access: its kind, its strength and scope, and whether it reads
/// through the non-coherent path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Read, write or atomic.
    pub kind: Kind,
    /// `None` for a weak (plain) access, else the strong access's scope.
    pub strong: Option<Scope>,
    /// `ld.global.nc` / `ldu`.
    pub nc: bool,
}

impl Access {
    /// A plain access.
    pub const fn weak(kind: Kind) -> Access {
        Access {
            kind,
            strong: None,
            nc: false,
        }
    }

    fn bits(self) -> u32 {
        let scope = match self.strong {
            None => 0,
            Some(Scope::Cta) => 1,
            Some(Scope::Gpu) => 2,
            Some(Scope::Sys) => 3,
        };
        scope | ((self.kind == Kind::Atomic) as u32) << 2 | (self.nc as u32) << 3
    }

    fn from_bits(b: u32, written: bool) -> Access {
        Access {
            kind: if b & 4 != 0 {
                Kind::Atomic
            } else if written {
                Kind::Write
            } else {
                Kind::Read
            },
            strong: match b & 3 {
                0 => None,
                1 => Some(Scope::Cta),
                2 => Some(Scope::Gpu),
                _ => Some(Scope::Sys),
            },
            nc: b & 8 != 0,
        }
    }
}

/// Shadow state of one word.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cell {
    tag: u32,
    /// [`Access::bits`] of the writer (bits 0..8), reader 1 (8..16) and
    /// reader 2 (16..24).
    flags: u32,
    w: Stamp,
    r1: Stamp,
    r2: Stamp,
}

/// Where the accessing block sits.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Threads per block.
    pub block_threads: u32,
    /// The block's linear index in its grid.
    pub block: u32,
    /// The launch's operation id.
    pub op: u32,
}

/// How the current access is ordered against the stamps in a cell.
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    /// Threads per block of the current operation.
    pub block_threads: u32,
    /// The current operation.
    pub op: u32,
    /// Earlier operations not ordered before the current one, with their
    /// threads per block.
    pub concurrent: &'a [(u32, u32)],
    /// What the accessing thread acquired through memory.
    pub know: Option<&'a Knowledge>,
}

impl View<'_> {
    fn threads_per_block(&self, op: u32) -> Option<u32> {
        if op == self.op {
            Some(self.block_threads)
        } else {
            self.concurrent
                .iter()
                .find(|c| c.0 == op)
                .map(|c| c.1.max(1))
        }
    }

    /// Whether the earlier access `a` and the current `b` may happen in
    /// either order.
    fn concurrent(&self, a: &Stamp, b: &Stamp) -> bool {
        if a.thread == 0 {
            return false;
        }
        let Some(bt) = self.threads_per_block(a.op) else {
            return false;
        };
        let block = (a.thread - 1) / bt;
        if a.op == b.op {
            if a.thread == b.thread {
                return false;
            }
            if block == (b.thread - 1) / bt {
                if a.bepoch != b.bepoch {
                    return false;
                }
                let warp = |t: u32| ((t - 1) % bt) / 32;
                if warp(a.thread) == warp(b.thread) && a.wepoch != b.wepoch {
                    return false;
                }
            }
        }
        !self
            .know
            .is_some_and(|k| k.covers(a.op, a.thread, block, a.clock, a.bepoch))
    }

    /// Whether two accesses are morally strong: both strong, each one's
    /// scope including the other's thread.
    fn morally_strong(&self, a: &Stamp, fa: Access, b: &Stamp, fb: Access) -> bool {
        let (Some(sa), Some(sb)) = (fa.strong, fb.strong) else {
            return false;
        };
        let block = |s: &Stamp| (s.thread - 1) / self.threads_per_block(s.op).unwrap_or(1);
        let (ba, bb) = (block(a), block(b));
        includes(sa, a.op, ba, b.op, bb) && includes(sb, b.op, bb, a.op, ba)
    }
}

/// One side of a race.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    /// Thread index within its operation.
    pub thread: u32,
    /// The operation.
    pub op: u32,
    /// Access kind, strength and path.
    pub access: Access,
    /// Instruction index.
    pub pc: u32,
    /// Block barrier epoch.
    pub bepoch: u32,
}

/// A detected race on one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The earlier access.
    pub first: Side,
    /// The access that found it.
    pub second: Side,
    /// A non-coherent read of a word the launch writes (not a race between
    /// unordered accesses: the read-only contract of `ld.global.nc`).
    pub nc: bool,
}

fn side(st: &Stamp, access: Access) -> Side {
    Side {
        thread: st.thread - 1,
        op: st.op,
        access,
        pc: st.pc,
        bepoch: st.bepoch,
    }
}

impl Cell {
    /// Records access `acc` by `s` to this word under `tag` (the operation
    /// for global memory, the block run for shared memory); returns the
    /// first conflicting access, if any. `keep` keeps the stamps of the
    /// view's concurrent operations when the tag changes (global memory).
    #[inline]
    pub fn access(
        &mut self,
        tag: u32,
        s: Stamp,
        acc: Access,
        view: &View,
        keep: bool,
    ) -> Option<Conflict> {
        if self.tag != tag {
            if !keep || view.concurrent.is_empty() {
                *self = Cell {
                    tag,
                    ..Cell::default()
                };
            } else {
                // Stamps of operations ordered before this one are history.
                let stale = |st: &Stamp| {
                    st.thread != 0 && st.op != view.op && view.threads_per_block(st.op).is_none()
                };
                for (st, shift) in [(&mut self.w, 0), (&mut self.r1, 8), (&mut self.r2, 16)] {
                    if stale(st) {
                        *st = Stamp::default();
                        self.flags &= !(0xff << shift);
                    }
                }
                self.tag = tag;
            }
        }
        let fb = acc.bits();
        if acc.nc && self.w.thread != 0 && self.w.op == view.op {
            return Some(Conflict {
                first: side(&self.w, Access::from_bits(self.flags & 0xff, true)),
                second: side(&s, acc),
                nc: true,
            });
        }
        // Any access conflicts with an unordered write, unless both are
        // morally strong.
        if view.concurrent(&self.w, &s) {
            let wf = Access::from_bits(self.flags & 0xff, true);
            if !view.morally_strong(&self.w, wf, &s, acc) {
                return Some(Conflict {
                    first: side(&self.w, wf),
                    second: side(&s, acc),
                    nc: false,
                });
            }
        }
        if acc.kind != Kind::Read {
            for (r, shift) in [(self.r1, 8), (self.r2, 16)] {
                if r.thread == 0 {
                    continue;
                }
                let bits = self.flags >> shift & 0xff;
                if bits & 8 != 0 && r.op == view.op {
                    return Some(Conflict {
                        first: side(&r, Access::from_bits(bits, false)),
                        second: side(&s, acc),
                        nc: true,
                    });
                }
                if view.concurrent(&r, &s) {
                    let rf = Access::from_bits(bits, false);
                    if !view.morally_strong(&r, rf, &s, acc) {
                        return Some(Conflict {
                            first: side(&r, rf),
                            second: side(&s, acc),
                            nc: false,
                        });
                    }
                }
            }
            self.w = s;
            self.flags = (self.flags & !0xff) | fb;
        }
        if acc.kind != Kind::Write {
            // Keep two distinct readers, preferring to replace one that the
            // current access already orders.
            let stale = |r: &Stamp| {
                r.thread == 0 || (r.op == s.op && r.thread == s.thread) || !view.concurrent(r, &s)
            };
            if stale(&self.r1) {
                self.r1 = s;
                self.flags = (self.flags & !0xff00) | fb << 8;
            } else {
                self.r2 = s;
                self.flags = (self.flags & !0xff_0000) | fb << 16;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: View = View {
        block_threads: 64,
        op: 1,
        concurrent: &[],
        know: None,
    };

    fn st(thread: u32, bepoch: u32, wepoch: u32) -> Stamp {
        Stamp {
            thread: thread + 1,
            op: 1,
            bepoch,
            wepoch,
            clock: 0,
            pc: 0,
        }
    }

    const R: Access = Access::weak(Kind::Read);
    const W: Access = Access::weak(Kind::Write);
    const A: Access = Access {
        kind: Kind::Atomic,
        strong: Some(Scope::Gpu),
        nc: false,
    };

    #[test]
    fn write_then_read_in_one_interval_races() {
        let mut c = Cell::default();
        assert!(c.access(1, st(0, 0, 0), W, &V, true).is_none());
        let r = c.access(1, st(40, 0, 0), R, &V, true).unwrap();
        assert_eq!(r.first.thread, 0);
        assert_eq!(r.first.access.kind, Kind::Write);
        assert_eq!(r.second.thread, 40);
    }

    #[test]
    fn barriers_order_and_tags_reset() {
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), W, &V, true);
        assert!(c.access(1, st(40, 1, 0), R, &V, true).is_none());
        // Same warp, different warp epoch: ordered by bar.warp.sync.
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), W, &V, true);
        assert!(c.access(1, st(5, 0, 1), R, &V, true).is_none());
        // Same warp, same epoch: lockstep does not count.
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), W, &V, true);
        assert!(c.access(1, st(5, 0, 0), R, &V, true).is_some());
        // A new tag forgets everything.
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), W, &V, true);
        assert!(c.access(2, st(5, 0, 0), W, &V, true).is_none());
    }

    #[test]
    fn other_blocks_are_never_ordered_and_atomics_commute() {
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), R, &V, true);
        assert!(c.access(1, st(64, 7, 0), W, &V, true).is_some());
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), A, &V, true);
        assert!(c.access(1, st(64, 0, 0), A, &V, true).is_none());
        assert!(c.access(1, st(65, 0, 0), R, &V, true).is_some());
    }

    #[test]
    fn cta_scope_is_morally_strong_only_within_the_block() {
        let cta = Access {
            strong: Some(Scope::Cta),
            ..A
        };
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), cta, &V, true);
        assert!(c.access(1, st(33, 0, 0), cta, &V, true).is_none());
        let r = c.access(1, st(64, 0, 0), cta, &V, true).unwrap();
        assert_eq!(r.first.access.strong, Some(Scope::Cta));
        // A relaxed load at .gpu and an atomic do not race; a plain load does.
        let relaxed = Access {
            kind: Kind::Read,
            strong: Some(Scope::Gpu),
            nc: false,
        };
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), A, &V, true);
        assert!(c.access(1, st(70, 0, 0), relaxed, &V, true).is_none());
        assert!(c.access(1, st(71, 0, 0), R, &V, true).is_some());
    }

    #[test]
    fn knowledge_orders_other_blocks() {
        let mut k = Knowledge::default();
        k.add_thread(1, 1, 0);
        let v = View {
            know: Some(&k),
            ..V
        };
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), W, &V, true);
        assert!(c.access(1, st(64, 0, 0), R, &v, true).is_none());
        // A thread that acquired nothing is not ordered after the write.
        assert!(c.access(1, st(65, 0, 0), R, &V, true).is_some());
        // Thread 0's accesses after its release are not covered.
        let mut c = Cell::default();
        c.access(
            1,
            Stamp {
                clock: 1,
                ..st(0, 0, 0)
            },
            W,
            &V,
            true,
        );
        assert!(c.access(1, st(64, 0, 0), R, &v, true).is_some());
    }

    #[test]
    fn concurrent_operations_keep_their_stamps() {
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), W, &V, true);
        // Operation 2 ordered after 1: history.
        let v2 = View { op: 2, ..V };
        let mut d = c;
        assert!(
            d.access(
                2,
                Stamp {
                    op: 2,
                    ..st(0, 0, 0)
                },
                R,
                &v2,
                true
            )
            .is_none()
        );
        // Operation 3 concurrent with 1: a race, even by "the same" thread.
        let v3 = View {
            op: 3,
            concurrent: &[(1, 64)],
            ..V
        };
        let r = c
            .access(
                3,
                Stamp {
                    op: 3,
                    ..st(0, 0, 0)
                },
                R,
                &v3,
                true,
            )
            .unwrap();
        assert_eq!((r.first.op, r.second.op), (1, 3));
    }

    #[test]
    fn a_non_coherent_read_of_a_written_word_is_reported_either_way() {
        let nc = Access { nc: true, ..R };
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), W, &V, true);
        assert!(c.access(1, st(0, 1, 0), nc, &V, true).unwrap().nc);
        let mut c = Cell::default();
        c.access(1, st(3, 0, 0), nc, &V, true);
        assert!(c.access(1, st(3, 2, 0), W, &V, true).unwrap().nc);
        // Another launch wrote it: fine.
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), W, &V, true);
        let v2 = View { op: 2, ..V };
        assert!(
            c.access(
                2,
                Stamp {
                    op: 2,
                    ..st(0, 0, 0)
                },
                nc,
                &v2,
                true
            )
            .is_none()
        );
    }

    #[test]
    fn read_read_is_fine_and_a_later_writer_meets_either_reader() {
        let mut c = Cell::default();
        assert!(c.access(1, st(1, 0, 0), R, &V, true).is_none());
        assert!(c.access(1, st(2, 0, 0), R, &V, true).is_none());
        assert!(c.access(1, st(3, 0, 0), R, &V, true).is_none());
        let r = c.access(1, st(2, 0, 0), W, &V, true).unwrap();
        assert_ne!(r.first.thread, 2);
    }
}
