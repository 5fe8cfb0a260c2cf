//! Barriers: a [`Rendezvous`] of a block's or a warp's threads, as
//! `sync_threads` and `sync_warp` need, that also notices the two ways a
//! kernel can deadlock at one (a thread that finishes instead of arriving,
//! one that never arrives).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use gpu_kernels::shape::WARP;

use super::lock;

/// Times a thread at a barrier yields its core before it sleeps.
const SPINS_BEFORE_PARKING: u32 = 64;

/// A meeting point of `size` threads (a block or a warp) with a timeout.
pub(super) struct Rendezvous {
    state: Mutex<RendezvousState>,
    /// Bumped each time the whole group has arrived.
    generation: AtomicU64,
    size: u32,
}

#[derive(Default)]
struct RendezvousState {
    /// Threads waiting at a barrier of the kernel, by thread index.
    at_barrier: Vec<u32>,
    /// Threads that finished the current block.
    finished: Vec<u32>,
    /// Waiters that stopped spinning and sleep until the release.
    parked: Vec<std::thread::Thread>,
}

/// Why a thread arrives at a rendezvous.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Arrival {
    /// `sync_threads` / `sync_warp` in the kernel.
    Barrier,
    /// The kernel body returned.
    Finished,
}

/// Why a rendezvous failed.
pub(super) enum Deadlock {
    /// `finished` returned from the kernel while `waiting` wait at the barrier.
    FinishedWhileOthersWait {
        finished: Vec<u32>,
        waiting: Vec<u32>,
    },
    /// `missing` did not arrive within `timeout`.
    TimedOut {
        missing: Vec<u32>,
        timeout: Duration,
    },
}

impl Deadlock {
    /// The launch's error message: a deadlock in `kernel`, block `block`, at
    /// the `what` (block, warp, block-start) barrier.
    pub(super) fn describe(&self, kernel: &str, block: u32, what: &str) -> String {
        match self {
            Deadlock::FinishedWhileOthersWait { finished, waiting } => format!(
                "deadlock in kernel {kernel} block {block}: threads {} finished the kernel without reaching the {what} barrier that threads {} wait at",
                list(finished),
                list(waiting)
            ),
            Deadlock::TimedOut { missing, timeout } => format!(
                "deadlock in kernel {kernel} block {block}: threads {} did not reach the {what} barrier within {timeout:?}",
                list(missing),
            ),
        }
    }
}

impl Rendezvous {
    /// A meeting point of `size` threads.
    pub(super) fn new(size: u32) -> Rendezvous {
        Rendezvous {
            state: Mutex::new(RendezvousState::default()),
            generation: AtomicU64::new(0),
            size,
        }
    }

    /// Arrives as `thread` and waits for the others; every thread must
    /// arrive for the same reason. The last thread to arrive runs
    /// `on_release` before letting the others go, so what it does (start a
    /// new race-detector epoch) happens before any of them moves on. While
    /// it sleeps, a waiter calls `check_abort` (which unwinds if the launch
    /// failed elsewhere) every 20 ms; after `timeout` it gives up.
    pub(super) fn meet(
        &self,
        thread: u32,
        arrival: Arrival,
        timeout: Duration,
        check_abort: impl Fn(),
        on_release: impl FnOnce(),
    ) -> Result<(), Deadlock> {
        let deadline = Instant::now() + timeout;
        let generation = {
            let mut s = lock(&self.state);
            match arrival {
                Arrival::Barrier => s.at_barrier.push(thread),
                Arrival::Finished => s.finished.push(thread),
            }
            if !s.at_barrier.is_empty() && !s.finished.is_empty() {
                let mut waiting = s.at_barrier.clone();
                let mut finished = s.finished.clone();
                drop(s);
                waiting.sort_unstable();
                finished.sort_unstable();
                return Err(Deadlock::FinishedWhileOthersWait { finished, waiting });
            }
            if (s.at_barrier.len() + s.finished.len()) as u32 == self.size {
                s.at_barrier.clear();
                s.finished.clear();
                on_release();
                self.generation.fetch_add(1, Ordering::AcqRel);
                let parked = std::mem::take(&mut s.parked);
                drop(s);
                parked.iter().for_each(std::thread::Thread::unpark);
                return Ok(());
            }
            self.generation.load(Ordering::Acquire)
        };
        // There are far more emulated threads than cores: yield the core a
        // few times (a warp's threads usually arrive together), then sleep
        // until the last thread to arrive wakes us.
        for _ in 0..SPINS_BEFORE_PARKING {
            if self.generation.load(Ordering::Acquire) != generation {
                return Ok(());
            }
            std::thread::yield_now();
        }
        {
            let mut s = lock(&self.state);
            if self.generation.load(Ordering::Acquire) != generation {
                return Ok(());
            }
            s.parked.push(std::thread::current());
        }
        while self.generation.load(Ordering::Acquire) == generation {
            std::thread::park_timeout(Duration::from_millis(20));
            check_abort();
            if Instant::now() >= deadline {
                let s = lock(&self.state);
                if self.generation.load(Ordering::Acquire) != generation {
                    break;
                }
                let arrived: Vec<u32> = s.at_barrier.iter().chain(&s.finished).copied().collect();
                drop(s);
                return Err(Deadlock::TimedOut {
                    missing: self.missing_threads(&arrived, thread),
                    timeout,
                });
            }
        }
        Ok(())
    }

    /// The threads of `me`'s group (the block, or `me`'s warp) not in `arrived`.
    fn missing_threads(&self, arrived: &[u32], me: u32) -> Vec<u32> {
        let base = if self.size == WARP {
            me / WARP * WARP
        } else {
            0
        };
        (base..base + self.size)
            .filter(|t| !arrived.contains(t))
            .collect()
    }
}

/// Thread indices for a message, the first 8 and a count.
fn list(threads: &[u32]) -> String {
    const SHOWN: usize = 8;
    let mut s: Vec<String> = threads.iter().take(SHOWN).map(u32::to_string).collect();
    if threads.len() > SHOWN {
        s.push(format!("... ({} in all)", threads.len()));
    }
    s.join(", ")
}
