//! The shared-memory race detector: a shadow log per shared word of the
//! accesses since the block's last barrier, and the rule for when two of
//! them race.

use std::sync::Mutex;

use gpu_kernels::shape::WARP;

use super::lock;

/// A shared-memory access, as the race detector records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    Write,
    Atomic,
}

/// One recorded access to a shared word within the current block epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) thread: u32,
    pub(super) access: Access,
    /// The accessing warp's `sync_warp` count at the time.
    pub(super) warp_epoch: u64,
}

impl Record {
    /// Whether `self` and `other` (both of this block epoch) conflict: two
    /// threads, not both reading, not both atomic, and not ordered by a
    /// `sync_warp` of their common warp.
    fn races_with(&self, other: &Record) -> bool {
        self.thread != other.thread
            && !(self.access == Access::Read && other.access == Access::Read)
            && !(self.access == Access::Atomic && other.access == Access::Atomic)
            && !(self.thread / WARP == other.thread / WARP && self.warp_epoch != other.warp_epoch)
    }
}

/// The race detector's shadow of one shared word, for one block epoch.
///
/// As in FastTrack, the last write stands for all earlier ones: in a run with
/// no race reported so far the writes are ordered, so an access that does not
/// race with the last write does not race with any earlier one; and a write
/// that races with none of the reads since the previous write orders them all
/// before it, so they are forgotten. Reads and atomics are kept otherwise.
#[derive(Default)]
struct WordLog {
    epoch: u64,
    last_write: Option<Record>,
    reads: Vec<Record>,
    atomics: Vec<Record>,
}

impl WordLog {
    /// Records `access` and returns the earlier access it races with, if any.
    fn access(&mut self, epoch: u64, access: Record) -> Option<Record> {
        if self.epoch != epoch {
            self.epoch = epoch;
            self.last_write = None;
            self.reads.clear();
            self.atomics.clear();
        }
        let earlier = self.last_write.iter().chain(match access.access {
            Access::Read => &self.atomics[..],
            Access::Write => &self.reads[..],
            Access::Atomic => &self.reads[..],
        });
        let earlier = earlier.chain(match access.access {
            Access::Write => &self.atomics[..],
            _ => &[][..],
        });
        if let Some(race) = earlier.copied().find(|r| access.races_with(r)) {
            return Some(race);
        }
        match access.access {
            Access::Write => {
                self.last_write = Some(access);
                self.reads.clear();
                self.atomics.clear();
            }
            Access::Read => push_new(&mut self.reads, access),
            Access::Atomic => push_new(&mut self.atomics, access),
        }
        None
    }
}

/// Appends `r` unless it repeats the latest record (a thread reading a word
/// again adds nothing new).
fn push_new(records: &mut Vec<Record>, r: Record) {
    if records.last() != Some(&r) {
        records.push(r);
    }
}

/// A race: `later` conflicts with `earlier` on shared word `word` within
/// block epoch `epoch`.
pub(super) struct Race {
    word: usize,
    epoch: u64,
    earlier: Record,
    later: Record,
}

impl Race {
    /// The launch's error message for this race in `kernel`, block `block`.
    pub(super) fn describe(&self, kernel: &str, block: u32) -> String {
        let (r, me) = (&self.earlier, &self.later);
        format!(
            "shared-memory race in kernel {kernel} block {block}: thread {} {} and thread {} {} byte address {} with no barrier between them (block epoch {}, {})",
            r.thread,
            verb(r.access),
            me.thread,
            verb(me.access),
            4 * self.word,
            self.epoch,
            if r.thread / WARP == me.thread / WARP {
                "same warp, no sync_warp between the accesses"
            } else {
                "different warps: only sync_threads orders them"
            }
        )
    }
}

/// The shadow of one block's shared memory: a [`WordLog`] per word.
pub(super) struct RaceDetector {
    logs: Box<[Mutex<WordLog>]>,
}

impl RaceDetector {
    /// A detector for `words` words of shared memory.
    pub(super) fn new(words: usize) -> RaceDetector {
        RaceDetector {
            logs: (0..words).map(|_| Mutex::default()).collect(),
        }
    }

    /// Records `access` to words `first..first + count` in block epoch
    /// `epoch`; returns the first race it makes with an earlier access (the
    /// words after it are not recorded: the launch fails).
    pub(super) fn record(
        &self,
        epoch: u64,
        first: usize,
        count: usize,
        access: Record,
    ) -> Option<Race> {
        (first..first + count).find_map(|word| {
            let earlier = lock(&self.logs[word]).access(epoch, access)?;
            Some(Race {
                word,
                epoch,
                earlier,
                later: access,
            })
        })
    }
}

/// How an access reads in a message.
fn verb(access: Access) -> &'static str {
    match access {
        Access::Read => "reads",
        Access::Write => "writes",
        Access::Atomic => "atomically adds to",
    }
}
