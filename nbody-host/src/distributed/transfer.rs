//! Whole-state transfers between rank 0 and the others (at start-up, and
//! for checkpoints and snapshots): blocking point-to-point messages in
//! chunks that fit MPI's `int` counts, rank by rank.

use gpu_kernels::Vec4;
use mpi::Tag;
use mpi::topology::{Process, SimpleCommunicator};
use mpi::traits::*;

use super::schedule::Partition;

/// Tag of whole-state transfers.
const STATE_TAG: Tag = 21;
/// Largest message, in bodies (`4` words each: 2^26 bodies, 1 GiB).
const CHUNK: usize = 1 << 26;

/// The `f32` components of bodies, as MPI sends them.
fn flat(v: &[Vec4]) -> Vec<f32> {
    v.iter().flat_map(|b| b.to_array()).collect()
}

/// Rank 0's `all` (every body, on rank 0 only) cut by `part`: each rank's
/// own block.
pub(crate) fn scatter(comm: &SimpleCommunicator, part: &Partition, all: &[Vec4]) -> Vec<Vec4> {
    let rank = comm.rank() as usize;
    if rank == 0 {
        for r in 1..part.ranks() {
            let to = comm.process_at_rank(r as i32);
            for chunk in all[part.range(r)].chunks(CHUNK) {
                to.send_with_tag(&flat(chunk)[..], STATE_TAG);
            }
        }
        return all[part.range(0)].to_vec();
    }
    let mut mine = Vec::with_capacity(part.len(rank));
    receive(&comm.process_at_rank(0), part.len(rank), &mut mine);
    mine
}

/// Every rank's block `mine`, concatenated in rank order on rank 0 (`None`
/// on the others).
pub(crate) fn gather(
    comm: &SimpleCommunicator,
    part: &Partition,
    mine: &[Vec4],
) -> Option<Vec<Vec4>> {
    let rank = comm.rank() as usize;
    if rank != 0 {
        let to = comm.process_at_rank(0);
        for chunk in mine.chunks(CHUNK) {
            to.send_with_tag(&flat(chunk)[..], STATE_TAG);
        }
        return None;
    }
    let mut all = Vec::with_capacity(part.range(part.ranks() - 1).end);
    all.extend_from_slice(mine);
    for r in 1..part.ranks() {
        receive(&comm.process_at_rank(r as i32), part.len(r), &mut all);
    }
    Some(all)
}

/// Receives `count` bodies from `from` (chunked as the sender cuts them)
/// onto the end of `out`.
fn receive(from: &Process<'_>, count: usize, out: &mut Vec<Vec4>) {
    let mut left = count;
    while left > 0 {
        let k = left.min(CHUNK);
        let mut words = vec![0f32; 4 * k];
        from.receive_into_with_tag(&mut words[..], STATE_TAG);
        out.extend(
            words
                .chunks_exact(4)
                .map(|w| Vec4::new(w[0], w[1], w[2], w[3])),
        );
        left -= k;
    }
}
