//! Direct summation over MPI (feature `mpi`, through rsmpi): a systolic ring
//! of ranks, each owning a contiguous block of about `N / p` bodies.
//!
//! ```text
//! mpirun -n 4 target/release/examples/nbody_mpi --n 65536 --steps 10
//! ```
//!
//! # The ring
//! Rank `r` owns bodies `r N / p .. (r + 1) N / p` (`schedule.rs`) and steps
//! them with its local backend's [block-pair primitive](crate::block_pair)
//! (CPU SIMD loops, CUDA, or the emulator). A force evaluation
//! ([`RingScheme`]):
//!
//! - **all-pairs** (Dorband, Hemsendorf and Merritt 2003): `p - 1` shifts;
//!   at shift `s` rank `r` adds the pull of rank `r - s`'s block to its own
//!   bodies, while that block is already on its way to `r + 1` (non-blocking
//!   send and receive, overlapped with the computation, `ring.rs`);
//! - **Newton's third law**: `floor(p / 2)` shifts; at shift `s` rank `r`
//!   computes each pair of its block with rank `r - s`'s once, keeping both
//!   halves, and the reactions go back to their owner (one message of
//!   `16 |block|` bytes per shift, overlapped with the next shift); at
//!   `s = p / 2` for even `p` the two ranks that meet the same pair of blocks
//!   split it in half. Half the arithmetic and half the shifts of the
//!   all-pairs ring, for about as many bytes (the reactions travel too:
//!   `p / (p - 1)` times the all-pairs ring's for even `p`, as many for odd).
//!
//! Integrators are the library's stage sequences
//! ([`Integrator`](crate::Integrator)): kicks and drifts are local `f32`
//! fused multiply-adds, the same operations as the CPU engine's, and each
//! `Accelerations` stage is one trip around the ring. The energy is reduced
//! in `f64` across ranks (the pair potential over the same half ring).
//! Divergence checks (after each drift and at the end of each step) reduce
//! the lowest non-finite body index over the ranks, so every rank stops at
//! the same step and names the same body.
//!
//! # Files
//! [`DistributedSimulation::save_checkpoint`] gathers the whole state on
//! rank 0, which writes one ordinary [`Checkpoint`](crate::Checkpoint)
//! atomically: it resumes on any number of ranks, or in one process with
//! [`Simulation::resume`](crate::Simulation::resume) (`nbody_tiled
//! --resume`); snapshots (`.npy`) and the archive work the same way. Rank 0
//! needs memory for the whole state while it writes (28 bytes a body).
//!
//! # Accuracy
//! The `p`-rank run computes the same terms as one process, summed in
//! another order: for body `i` its own block first, then the visiting blocks
//! in shift order (third-law ring: the reactions sent back are added last).
//! Any order of an `f32` sum of `N - 1` terms, each within about `8u` of its
//! exact value, is within `(N + 8) u S_i` of the exact sum (`u = 2^-24`,
//! `S_i` the sum of the magnitudes of the terms `G m_j r_ij / (|r_ij|^2 +
//! eps^2)^(3/2)`; Higham, *Accuracy and Stability*, sec. 4.2), so the
//! accelerations of a `p`-rank run and of one process differ by at most
//! `2 (N + 8) u S_i`: the bound `tests/distributed.rs` checks after one
//! evaluation (measured worst case 31 `u S_i` at N = 1001 on 1 to 4 ranks),
//! and through three steps as `tests/correctness.rs` propagates it. For a
//! fixed `p` and backend the run is deterministic (on the CPU: the same
//! bits on every run and thread count).
//!
//! # Errors
//! Every method is collective and returns the same outcome on every rank:
//! a failure on one rank (a file rank 0 cannot write, a device error) is
//! that rank's error there and [`Error::OtherRank`]
//! on the others ([`agree`]), never a rank left waiting.

mod schedule;

#[cfg(feature = "mpi")]
mod header;
#[cfg(feature = "mpi")]
mod ring;
#[cfg(feature = "mpi")]
mod simulation;
#[cfg(feature = "mpi")]
mod transfer;

#[cfg(feature = "mpi")]
pub use ring::RingTimings;
#[cfg(feature = "mpi")]
pub use simulation::DistributedSimulation;

#[cfg(feature = "mpi")]
use mpi::collective::SystemOperation;
#[cfg(feature = "mpi")]
use mpi::traits::*;

#[cfg(feature = "mpi")]
use crate::error::{Error, Result};

/// How the ring enumerates the pairs of blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RingScheme {
    /// Every rank sees every block: `p - 1` shifts, `N^2 / p` interactions
    /// per rank.
    AllPairs,
    /// Each pair of blocks once (Newton's third law), the reactions sent
    /// back: `p / 2` shifts, about `N^2 / 2p` pairs per rank. The default:
    /// it is the faster on the CPU at every size measured (docs/performance.md).
    #[default]
    ThirdLaw,
}

impl RingScheme {
    /// `"all-pairs"` or `"third-law"`.
    pub fn name(self) -> &'static str {
        match self {
            RingScheme::AllPairs => "all-pairs",
            RingScheme::ThirdLaw => "third-law",
        }
    }

    /// Parses a [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<RingScheme> {
        [RingScheme::AllPairs, RingScheme::ThirdLaw]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// Makes a panic on any rank stop the whole job: installs a panic hook that
/// prints the panic as usual, then calls `MPI_Abort` on the world
/// communicator. Without it, a rank that panics finalises MPI while
/// unwinding and waits there for ranks that wait for it in the ring: the
/// job hangs. Call it once, after initialising MPI.
#[cfg(feature = "mpi")]
pub fn abort_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        mpi::topology::SimpleCommunicator::world().abort(101);
    }));
}

/// Makes an outcome collective: `Ok` on every rank of `comm` if it is `Ok`
/// on all of them; otherwise each failed rank keeps its error and the others
/// get [`Error::OtherRank`] naming the lowest failed rank. Every rank must
/// call it (it is one `MPI_Allreduce`).
#[cfg(feature = "mpi")]
pub fn agree<C: Communicator, T>(comm: &C, local: Result<T>) -> Result<T> {
    let mine = if local.is_err() {
        comm.rank() as u64
    } else {
        u64::MAX
    };
    let mut lowest = u64::MAX;
    comm.all_reduce_into(&mine, &mut lowest, SystemOperation::min());
    match local {
        Ok(_) if lowest != u64::MAX => Err(Error::OtherRank {
            rank: lowest as usize,
        }),
        other => other,
    }
}
