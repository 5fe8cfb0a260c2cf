//! Happens-before through memory: PTX's release and acquire patterns, for
//! the race detector.
//!
//! Barriers order the threads of a block (the detector's barrier epochs);
//! everything else that orders threads goes through memory. PTX (ISA 8.x,
//! "Memory Consistency Model") calls a *release pattern* on a location a
//! `.release` strong write, or a `fence.sc`/`fence.acq_rel` (`membar`)
//! followed by a strong write; an *acquire pattern* an `.acquire` strong
//! read, or a strong read followed by such a fence. A release pattern
//! synchronises with an acquire pattern that reads what it wrote when the
//! two are *morally strong*: each one's scope includes the other's thread
//! (`.cta`: the same block; `.gpu`, `.sys`: the whole device).
//!
//! Each thread that takes part keeps its [`Knowledge`]: the accesses of
//! other threads known to happen before its own next access, as "thread T of
//! operation O up to its release clock c" and "block B of operation O before
//! its barrier epoch e" (a release covers the releasing block's earlier
//! barrier intervals). A release stores the releasing thread's knowledge,
//! itself included, on the location ([`SyncMap`]); an acquire joins it into
//! the acquiring thread's; a `bar.sync` joins the knowledge of a block's
//! threads. Read-modify-writes continue a release sequence; a plain relaxed
//! or weak store to the location ends it. Threads that never synchronise
//! through memory cost nothing here.

use std::collections::HashMap;

use crate::ir::Scope;

/// Accesses known to happen before a thread's next access.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Knowledge {
    /// `((op, launch thread + 1), clock)`: that thread's accesses with a
    /// release clock at most `clock`.
    threads: Vec<((u32, u32), u32)>,
    /// `((op, block), bepoch)`: that block's accesses in barrier intervals
    /// before `bepoch`.
    blocks: Vec<((u32, u32), u32)>,
}

fn raise(v: &mut Vec<((u32, u32), u32)>, key: (u32, u32), value: u32) {
    match v.iter_mut().find(|(k, _)| *k == key) {
        Some((_, x)) => *x = (*x).max(value),
        None => v.push((key, value)),
    }
}

impl Knowledge {
    /// Whether nothing is known.
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty() && self.blocks.is_empty()
    }

    /// Adds thread `thread` (launch index + 1) of `op` up to `clock`.
    pub fn add_thread(&mut self, op: u32, thread: u32, clock: u32) {
        raise(&mut self.threads, (op, thread), clock);
    }

    /// Adds block `block` of `op` before barrier epoch `bepoch`.
    pub fn add_block(&mut self, op: u32, block: u32, bepoch: u32) {
        raise(&mut self.blocks, (op, block), bepoch);
    }

    /// Everything `other` knows.
    pub fn join(&mut self, other: &Knowledge) {
        for &(k, v) in &other.threads {
            raise(&mut self.threads, k, v);
        }
        for &(k, v) in &other.blocks {
            raise(&mut self.blocks, k, v);
        }
    }

    /// Whether the access by `thread` (launch index + 1) of block `block` of
    /// `op`, at release clock `clock` in barrier epoch `bepoch`, is known.
    pub fn covers(&self, op: u32, thread: u32, block: u32, clock: u32, bepoch: u32) -> bool {
        self.threads
            .iter()
            .any(|&((o, t), c)| o == op && t == thread && clock <= c)
            || self
                .blocks
                .iter()
                .any(|&((o, b), e)| o == op && b == block && bepoch < e)
    }
}

/// Who released a location, and how far the release reaches.
#[derive(Clone, Debug)]
pub struct Release {
    /// What the releasing thread knew, itself included.
    pub know: Knowledge,
    /// The pattern's scope (the narrower of the fence's and the write's).
    pub scope: Scope,
    /// The releasing thread's operation and block.
    pub op: u32,
    /// Its block.
    pub block: u32,
}

/// Whether an operation of `scope` by a thread of `(op, block)` includes a
/// thread of `(op2, block2)`.
pub fn includes(scope: Scope, op: u32, block: u32, op2: u32, block2: u32) -> bool {
    scope != Scope::Cta || (op == op2 && block == block2)
}

/// One thread's synchronisation state.
#[derive(Clone, Debug, Default)]
pub struct ThreadSync {
    /// Acquired so far.
    pub know: Knowledge,
    /// Releases seen by relaxed reads, acquired by the next fence whose
    /// scope includes their writers.
    pub pending: Vec<Release>,
    /// What the last `fence.sc`/`fence.acq_rel` released, and its scope:
    /// published by every later strong write.
    pub fence: Option<(Knowledge, Scope)>,
}

/// The synchronisation state of the threads of one block that synchronise
/// through memory (by thread index within the block).
#[derive(Clone, Debug, Default)]
pub struct BlockSync {
    /// Threads with state.
    pub threads: HashMap<u32, ThreadSync>,
}

impl BlockSync {
    /// Forgets everything (a new block).
    pub fn clear(&mut self) {
        self.threads.clear();
    }

    /// The knowledge of thread `t`, if it has any.
    pub fn knowledge(&self, t: u32) -> Option<&Knowledge> {
        self.threads
            .get(&t)
            .map(|s| &s.know)
            .filter(|k| !k.is_empty())
    }

    /// A `bar.sync`: every thread of the block learns what any knew.
    /// Returns whether anything is known now.
    pub fn barrier(&mut self, threads: u32) -> bool {
        let mut all = Knowledge::default();
        for s in self.threads.values() {
            all.join(&s.know);
        }
        if all.is_empty() {
            return false;
        }
        for t in 0..threads {
            self.threads.entry(t).or_default().know.join(&all);
        }
        true
    }
}

/// The release recorded on each location (shared words by block, global
/// words by address).
#[derive(Debug, Default)]
pub struct SyncMap {
    recs: HashMap<u64, Release>,
}

/// The key of shared-memory word `offset` of the block run `tag`.
pub fn shared_key(tag: u32, offset: u64) -> u64 {
    (1 << 63) | ((tag as u64) << 32) | (offset & !3)
}

/// The key of the global word at `addr`.
pub fn global_key(addr: u64) -> u64 {
    addr & !3
}

impl SyncMap {
    /// Whether no location holds a release.
    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// Forgets every release.
    pub fn clear(&mut self) {
        self.recs.clear();
    }

    /// The release on `key`.
    pub fn get(&self, key: u64) -> Option<&Release> {
        self.recs.get(&key)
    }

    /// Records `rec` on `key`.
    pub fn set(&mut self, key: u64, rec: Release) {
        self.recs.insert(key, rec);
    }

    /// A store that ends the release sequence of `key`.
    pub fn end(&mut self, key: u64) {
        if !self.recs.is_empty() {
            self.recs.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knowledge_joins_and_covers_threads_and_block_epochs() {
        let mut k = Knowledge::default();
        assert!(k.is_empty());
        k.add_thread(1, 5, 2);
        k.add_block(1, 0, 3);
        assert!(k.covers(1, 5, 0, 2, 9));
        assert!(!k.covers(1, 5, 1, 3, 9), "a later clock of the thread");
        assert!(
            k.covers(1, 7, 0, 9, 2),
            "an earlier barrier interval of its block"
        );
        assert!(!k.covers(1, 7, 0, 9, 3));
        assert!(!k.covers(2, 5, 0, 0, 0), "another operation");
        let mut j = Knowledge::default();
        j.add_thread(1, 5, 4);
        j.join(&k);
        assert!(j.covers(1, 5, 0, 4, 9) && j.covers(1, 7, 0, 0, 1));
    }

    #[test]
    fn a_barrier_shares_what_any_thread_knew() {
        let mut b = BlockSync::default();
        assert!(!b.barrier(4));
        b.threads.entry(2).or_default().know.add_thread(9, 1, 0);
        assert!(b.barrier(4));
        assert!((0..4).all(|t| b.knowledge(t).is_some_and(|k| k.covers(9, 1, 0, 0, 0))));
    }

    #[test]
    fn cta_scope_includes_only_its_block() {
        assert!(includes(Scope::Cta, 1, 2, 1, 2));
        assert!(!includes(Scope::Cta, 1, 2, 1, 3));
        assert!(!includes(Scope::Cta, 1, 2, 2, 2));
        assert!(includes(Scope::Gpu, 1, 2, 4, 3) && includes(Scope::Sys, 1, 2, 4, 3));
    }
}
