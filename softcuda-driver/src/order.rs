//! Happens-before between queued operations, as CUDA defines it: an
//! operation follows the earlier work of its stream, the legacy stream and
//! the blocking streams follow each other's earlier work, `cuStreamWaitEvent`
//! adds the event's record, and whatever the host waited for (a
//! synchronisation, a blocking copy, a successful query) precedes everything
//! it queues afterwards.
//!
//! Each operation carries a vector clock over streams: for each stream, the
//! latest of its operations that happen before this one. Operation `a` on
//! stream `s` happens before `b` exactly when `b`'s clock has `s` at `a` or
//! later (the operations of one stream are totally ordered). Operations that
//! neither precede nor follow each other may overlap on hardware: the
//! software device runs such launches together in the adversarial schedule,
//! and its race detector checks their accesses against each other's.

use std::collections::BTreeMap;

/// Which stream an operation is queued on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamRef {
    /// The legacy default stream (`0`, `CU_STREAM_LEGACY`).
    Legacy,
    /// A created stream.
    Id(u32),
}

/// The clock key of a stream: 0 for the legacy stream, else its handle id.
pub fn key(s: StreamRef) -> u32 {
    match s {
        StreamRef::Legacy => 0,
        StreamRef::Id(id) => id,
    }
}

/// A vector clock: per stream, the latest operation known to precede.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vc(BTreeMap<u32, u64>);

impl Vc {
    /// Everything `other` knows precedes.
    pub fn join(&mut self, other: &Vc) {
        for (&k, &v) in &other.0 {
            let e = self.0.entry(k).or_insert(v);
            *e = (*e).max(v);
        }
    }

    /// Operation `op` of stream `key` (and its stream's earlier work).
    pub fn add(&mut self, key: u32, op: u64) {
        let e = self.0.entry(key).or_insert(op);
        *e = (*e).max(op);
    }

    /// Whether operation `op`, queued on stream `key`, precedes.
    pub fn covers(&self, key: u32, op: u64) -> bool {
        self.latest(key) >= op
    }

    /// The latest operation of stream `key` that precedes (0: none).
    pub fn latest(&self, key: u32) -> u64 {
        self.0.get(&key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_join_and_cover_earlier_work_of_a_stream() {
        let mut a = Vc::default();
        a.add(0, 3);
        let mut b = Vc::default();
        b.add(5, 7);
        b.join(&a);
        assert!(b.covers(0, 2) && b.covers(0, 3) && b.covers(5, 7));
        assert!(!b.covers(0, 4) && !b.covers(6, 1));
        assert_eq!(key(StreamRef::Legacy), 0);
        assert_eq!(key(StreamRef::Id(9)), 9);
    }
}
