//! The systolic ring on MPI: blocks of positions passed from rank `r` to
//! `r + 1` with non-blocking sends and receives while the block that just
//! arrived is computed with, and (third-law ring) the reactions on a visiting
//! block sent back to its owner.
//!
//! Overlap: the computation of a shift runs on a helper thread while the
//! calling thread drives MPI (`MPI_Test` every [`POLL`]), so that a
//! transfer progresses during the computation even where the MPI library
//! moves large messages only inside MPI calls (OpenMPI's rendezvous
//! protocol, shared-memory single copy). Only the calling thread ever calls
//! MPI (`MPI_THREAD_FUNNELED`); with `MPI_THREAD_SINGLE` the computation runs
//! on the calling thread and the transfer completes in the wait after it.

use std::time::{Duration, Instant};

use gpu_kernels::Vec4;
use mpi::Tag;
use mpi::environment::{Threading, threading_support};
use mpi::request::{LocalScope, Request, scope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use super::schedule::{Partition, visitor};
use crate::error::Result;

/// Tag of position blocks.
const POS_TAG: Tag = 11;
/// Tag of reactions sent back to a block's owner.
const REACT_TAG: Tag = 12;
/// Largest message, in `f32` words (1 GiB): MPI counts are `int`.
const CHUNK: usize = 1 << 28;
/// How often the calling thread tests the pending transfers while the
/// helper thread computes.
const POLL: Duration = Duration::from_micros(200);

/// Where the time of the ring went, on this rank.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RingTimings {
    /// Force (or potential) evaluations over the ring.
    pub evaluations: u64,
    /// Seconds computing block pairs.
    pub compute: f64,
    /// Seconds waiting for transfers after the computation of a shift was
    /// done: the communication that was not hidden.
    pub wait: f64,
    /// Bytes sent.
    pub bytes_sent: u64,
}

/// The words of a body buffer, for MPI.
fn words(v: &[Vec4]) -> &[f32] {
    // SAFETY: `Vec4` is `repr(C, align(16))` of four `f32` with no padding,
    // so `v` is `4 v.len()` initialised, properly aligned `f32`s, borrowed
    // for the same lifetime.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<f32>(), 4 * v.len()) }
}

/// The words of a body buffer, writable, for MPI.
fn words_mut(v: &mut [Vec4]) -> &mut [f32] {
    // SAFETY: as in `words`; every bit pattern is a valid `f32`, and the
    // borrow is exclusive for the same lifetime.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<f32>(), 4 * v.len()) }
}

type Req<'a, 's> = Request<'a, [f32], &'s LocalScope<'a>>;

/// The ring of one communicator.
pub(crate) struct Ring<'c> {
    comm: &'c SimpleCommunicator,
    rank: usize,
    size: usize,
    /// Whether a helper thread may compute while this one calls MPI.
    threaded: bool,
}

/// What the compute closure of a shift gets: the shift, the visiting block,
/// and the reactions on it (empty unless the ring carries reactions and
/// `shift >= 1`), zeroed.
pub(crate) type Shift<'v> = (usize, &'v [Vec4], &'v mut [Vec4]);

impl<'c> Ring<'c> {
    pub(crate) fn new(comm: &'c SimpleCommunicator) -> Ring<'c> {
        Ring {
            comm,
            rank: comm.rank() as usize,
            size: comm.size() as usize,
            threaded: threading_support() >= Threading::Funneled,
        }
    }

    /// Runs `shifts + 1` shifts: at shift `s`, `compute` gets the block of
    /// rank `r - s` (shift 0: `own`), and the next block travels meanwhile.
    /// With `reactions`, each shift's reactions (`s >= 1`) go back to the
    /// visitor's owner, and the reactions on `own` that come back are summed
    /// in shift order and returned (`own.len()` long; empty otherwise).
    ///
    /// Every rank must call it with the same `shifts` and `reactions`. An
    /// error of `compute` does not stop the ring (the other ranks would wait
    /// for this one): the first is returned once the ring is done, for the
    /// caller to [`agree`](super::agree) on.
    pub(crate) fn run<F>(
        &self,
        part: &Partition,
        own: &[Vec4],
        shifts: usize,
        reactions: bool,
        timings: &mut RingTimings,
        mut compute: F,
    ) -> (Result<()>, Vec<Vec4>)
    where
        F: FnMut(Shift<'_>) -> Result<()> + Send,
    {
        let (r, p) = (self.rank, self.size);
        let next_rank = self.comm.process_at_rank(((r + 1) % p) as i32);
        let prev_rank = self.comm.process_at_rank(((r + p - 1) % p) as i32);
        let mut outcome = Ok(());
        let mut cur = own.to_vec();
        let mut next: Vec<Vec4> = Vec::new();
        let (mut react_cur, mut react_prev, mut react_in) = (Vec::new(), Vec::new(), Vec::new());
        let mut react_sum = vec![Vec4::ZERO; if reactions { own.len() } else { 0 }];
        timings.evaluations += 1;
        for s in 0..=shifts {
            if s < shifts {
                next.clear();
                next.resize(part.len(visitor(p, r, s + 1)), Vec4::ZERO);
            }
            let carries = reactions && s >= 1;
            react_cur.clear();
            react_cur.resize(if carries { cur.len() } else { 0 }, Vec4::ZERO);
            let returns = reactions && s >= 2;
            react_in.clear();
            react_in.resize(if returns { own.len() } else { 0 }, Vec4::ZERO);
            let result = scope(|sc| {
                let mut pending: Vec<Req<'_, '_>> = Vec::new();
                if s < shifts {
                    pending.extend(recv(sc, &prev_rank, &mut next, POS_TAG));
                    pending.extend(send(sc, &next_rank, &cur, POS_TAG));
                    timings.bytes_sent += 16 * cur.len() as u64;
                }
                if returns {
                    // The reactions of shift s - 1 go to the owner of that
                    // shift's visitor; ours come from the rank we visited.
                    let owner = self.comm.process_at_rank(visitor(p, r, s - 1) as i32);
                    let visited = self.comm.process_at_rank(((r + s - 1) % p) as i32);
                    pending.extend(recv(sc, &visited, &mut react_in, REACT_TAG));
                    pending.extend(send(sc, &owner, &react_prev, REACT_TAG));
                    timings.bytes_sent += 16 * react_prev.len() as u64;
                }
                self.overlap(pending, timings, || compute((s, &cur, &mut react_cur)))
            });
            if outcome.is_ok() {
                outcome = result;
            }
            if returns {
                add(&mut react_sum, &react_in);
            }
            std::mem::swap(&mut cur, &mut next);
            std::mem::swap(&mut react_prev, &mut react_cur);
        }
        if reactions && shifts >= 1 {
            // The last shift's reactions (now in `react_prev`).
            react_in.clear();
            react_in.resize(own.len(), Vec4::ZERO);
            let owner = self.comm.process_at_rank(visitor(p, r, shifts) as i32);
            let visited = self.comm.process_at_rank(((r + shifts) % p) as i32);
            let last = scope(|sc| {
                let mut pending: Vec<Req<'_, '_>> = Vec::new();
                pending.extend(recv(sc, &visited, &mut react_in, REACT_TAG));
                pending.extend(send(sc, &owner, &react_prev, REACT_TAG));
                timings.bytes_sent += 16 * react_prev.len() as u64;
                self.overlap(pending, timings, || Ok(()))
            });
            outcome = outcome.and(last);
            add(&mut react_sum, &react_in);
        }
        (outcome, react_sum)
    }

    /// Runs `compute` while the transfers `pending` progress, then waits for
    /// them; adds the computing and the waiting time to `timings`.
    fn overlap<'a, 's>(
        &self,
        mut pending: Vec<Req<'a, 's>>,
        timings: &mut RingTimings,
        compute: impl FnOnce() -> Result<()> + Send,
    ) -> Result<()> {
        let (result, computing) = if self.threaded && !pending.is_empty() {
            let polled = &mut pending;
            std::thread::scope(|threads| {
                let worker = threads.spawn(|| {
                    let t = Instant::now();
                    (compute(), t.elapsed())
                });
                while !worker.is_finished() {
                    // Requests stay on this thread; `test` completes the
                    // finished ones and drives the rest.
                    *polled = std::mem::take(polled)
                        .into_iter()
                        .filter_map(|req| req.test().err())
                        .collect();
                    std::thread::sleep(POLL);
                }
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        } else {
            let t = Instant::now();
            (compute(), t.elapsed())
        };
        let t = Instant::now();
        for req in pending {
            req.wait_without_status();
        }
        timings.compute += computing.as_secs_f64();
        timings.wait += t.elapsed().as_secs_f64();
        result
    }
}

/// Non-blocking sends of `buf` to `to`, in chunks of at most [`CHUNK`] words.
fn send<'a, 's>(
    sc: &'s LocalScope<'a>,
    to: &mpi::topology::Process<'_>,
    buf: &'a [Vec4],
    tag: Tag,
) -> Vec<Req<'a, 's>> {
    words(buf)
        .chunks(CHUNK)
        .map(|c| to.immediate_send_with_tag(sc, c, tag))
        .collect()
}

/// Non-blocking receives into `buf` from `from`, chunked as [`send`] cuts.
fn recv<'a, 's>(
    sc: &'s LocalScope<'a>,
    from: &mpi::topology::Process<'_>,
    buf: &'a mut [Vec4],
    tag: Tag,
) -> Vec<Req<'a, 's>> {
    words_mut(buf)
        .chunks_mut(CHUNK)
        .map(|c| from.immediate_receive_into_with_tag(sc, c, tag))
        .collect()
}

/// `sum.xyz += more.xyz`, in order.
fn add(sum: &mut [Vec4], more: &[Vec4]) {
    for (s, m) in sum.iter_mut().zip(more) {
        (s.x, s.y, s.z) = (s.x + m.x, s.y + m.y, s.z + m.z);
    }
}
