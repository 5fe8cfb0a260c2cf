//! The race detector: a shadow cell per 4-byte word of shared memory (per
//! block) and of global memory (per launch) remembers the last writer and up
//! to two readers, each with the barrier intervals it ran in.
//!
//! Two accesses race when they come from different threads, at least one is
//! a write, they are not both atomic, and nothing orders them:
//!
//! - threads of one block are ordered by a `bar.sync` between the accesses
//!   (the block's barrier epoch differs);
//! - threads of one warp are also ordered by a `bar.warp.sync` with the full
//!   mask (the warp's epoch differs);
//! - threads of different blocks are never ordered within a launch; launches
//!   are ordered with each other (the cell's tag is the launch or block).
//!
//! Lockstep execution orders nothing: two lanes of a warp that touch one word
//! in one instruction, or in two instructions without a `bar.warp.sync`
//! between them, race (Volta's independent thread scheduling may interleave
//! them arbitrarily). Keeping two readers per word can miss a race among many
//! readers; a reported race is always real under these rules.
//! Sub-word (8- and 16-bit) accesses are tracked per containing word.

use std::fmt;

/// Who accessed a word, and when.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    /// Thread index within the launch, plus one (0: no access).
    pub thread: u32,
    /// Block barrier epoch.
    pub bepoch: u32,
    /// Warp barrier epoch.
    pub wepoch: u32,
    /// Instruction index.
    pub pc: u32,
}

/// Shadow state of one word.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cell {
    tag: u32,
    /// bit 0: write atomic; bit 1: reader 1 atomic; bit 2: reader 2 atomic.
    flags: u32,
    w: Stamp,
    r1: Stamp,
    r2: Stamp,
}

/// What an access does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A plain load.
    Read,
    /// A plain store.
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

/// The thread layout of a launch, to tell blocks and warps apart.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Threads per block.
    pub block_threads: u32,
}

impl Layout {
    fn block(&self, thread: u32) -> u32 {
        (thread - 1) / self.block_threads
    }

    fn warp(&self, thread: u32) -> u32 {
        ((thread - 1) % self.block_threads) / 32
    }

    /// Whether the two accesses may happen in either order.
    fn concurrent(&self, a: &Stamp, b: &Stamp) -> bool {
        if a.thread == 0 || a.thread == b.thread {
            return false;
        }
        if self.block(a.thread) != self.block(b.thread) {
            return true;
        }
        if a.bepoch != b.bepoch {
            return false;
        }
        !(self.warp(a.thread) == self.warp(b.thread) && a.wepoch != b.wepoch)
    }
}

/// One side of a race.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    /// Thread index within the launch.
    pub thread: u32,
    /// Access kind.
    pub kind: Kind,
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
}

impl Cell {
    /// Records an access by `s` to this word under `tag`; returns the first
    /// unordered conflicting access, if any.
    #[inline]
    pub fn access(&mut self, tag: u32, s: Stamp, kind: Kind, layout: &Layout) -> Option<Conflict> {
        if self.tag != tag {
            *self = Cell {
                tag,
                ..Cell::default()
            };
        }
        let atomic = kind == Kind::Atomic;
        let side = |st: &Stamp, k: Kind| Side {
            thread: st.thread - 1,
            kind: k,
            pc: st.pc,
            bepoch: st.bepoch,
        };
        let me = side(&s, kind);
        let w_atomic = self.flags & 1 != 0;
        // Any access conflicts with an unordered write, unless both atomic.
        if layout.concurrent(&self.w, &s) && !(w_atomic && atomic) {
            let k = if w_atomic { Kind::Atomic } else { Kind::Write };
            return Some(Conflict {
                first: side(&self.w, k),
                second: me,
            });
        }
        if kind != Kind::Read {
            for (r, bit) in [(self.r1, 2), (self.r2, 4)] {
                let r_atomic = self.flags & bit != 0;
                if layout.concurrent(&r, &s) && !(r_atomic && atomic) {
                    let k = if r_atomic { Kind::Atomic } else { Kind::Read };
                    return Some(Conflict {
                        first: side(&r, k),
                        second: me,
                    });
                }
            }
            self.w = s;
            self.flags = (self.flags & !1) | atomic as u32;
        }
        if kind != Kind::Write {
            // Keep two distinct readers, preferring to replace one that the
            // current access's barrier interval already orders.
            let stale = |r: &Stamp| {
                r.thread == 0
                    || r.thread == s.thread
                    || (layout.block(r.thread) == layout.block(s.thread) && r.bepoch != s.bepoch)
            };
            if stale(&self.r1) {
                self.r1 = s;
                self.flags = (self.flags & !2) | ((atomic as u32) << 1);
            } else {
                self.r2 = s;
                self.flags = (self.flags & !4) | ((atomic as u32) << 2);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Layout = Layout { block_threads: 64 };

    fn st(thread: u32, bepoch: u32, wepoch: u32) -> Stamp {
        Stamp {
            thread: thread + 1,
            bepoch,
            wepoch,
            pc: 0,
        }
    }

    #[test]
    fn write_then_read_in_one_interval_races() {
        let mut c = Cell::default();
        assert!(c.access(1, st(0, 0, 0), Kind::Write, &L).is_none());
        let r = c.access(1, st(40, 0, 0), Kind::Read, &L).unwrap();
        assert_eq!(r.first.thread, 0);
        assert_eq!(r.first.kind, Kind::Write);
        assert_eq!(r.second.thread, 40);
    }

    #[test]
    fn barriers_order_and_tags_reset() {
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), Kind::Write, &L);
        assert!(c.access(1, st(40, 1, 0), Kind::Read, &L).is_none());
        // Same warp, different warp epoch: ordered by bar.warp.sync.
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), Kind::Write, &L);
        assert!(c.access(1, st(5, 0, 1), Kind::Read, &L).is_none());
        // Same warp, same epoch: lockstep does not count.
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), Kind::Write, &L);
        assert!(c.access(1, st(5, 0, 0), Kind::Read, &L).is_some());
        // A new tag forgets everything.
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), Kind::Write, &L);
        assert!(c.access(2, st(5, 0, 0), Kind::Write, &L).is_none());
    }

    #[test]
    fn other_blocks_are_never_ordered_and_atomics_commute() {
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), Kind::Read, &L);
        assert!(c.access(1, st(64, 7, 0), Kind::Write, &L).is_some());
        let mut c = Cell::default();
        c.access(1, st(0, 0, 0), Kind::Atomic, &L);
        assert!(c.access(1, st(64, 0, 0), Kind::Atomic, &L).is_none());
        assert!(c.access(1, st(65, 0, 0), Kind::Read, &L).is_some());
    }

    #[test]
    fn read_read_is_fine_and_a_later_writer_meets_either_reader() {
        let mut c = Cell::default();
        assert!(c.access(1, st(1, 0, 0), Kind::Read, &L).is_none());
        assert!(c.access(1, st(2, 0, 0), Kind::Read, &L).is_none());
        assert!(c.access(1, st(3, 0, 0), Kind::Read, &L).is_none());
        let r = c.access(1, st(2, 0, 0), Kind::Write, &L).unwrap();
        assert_ne!(r.first.thread, 2);
    }
}
