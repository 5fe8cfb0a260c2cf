//! The Newton's-third-law schedule of the CPU backend: the bodies cut into
//! blocks, the block pairs (tiles) grouped into rounds in which no block
//! occurs twice, so that the tiles of a round run in parallel and each writes
//! its two blocks' accelerations directly, in an order fixed by the schedule.

use rayon::prelude::*;

use super::loops::{AccBlock, ForceLoops, Soa};

/// The fewest blocks the schedule cuts the bodies into (when there are that
/// many register groups): enough tiles per round to keep a few threads busy
/// at small `N`. A constant, not the thread count: the decomposition fixes
/// the order of the sums (see [`triangle_blocks`]).
pub(crate) const MIN_BLOCKS: usize = 4;

/// One block of bodies: where it starts and its accelerations.
#[derive(Debug)]
pub(crate) struct Block<'a> {
    /// Index of the block's first body.
    pub start: usize,
    /// The block's accelerations.
    pub acc: AccBlock<'a>,
}

/// A unit of work of one round.
#[derive(Debug)]
pub(crate) enum Tile<'a> {
    /// The pairs within one block.
    Diagonal(Block<'a>),
    /// The pairs between two blocks (`i` before `j`), once each.
    Pair {
        /// The earlier block.
        i: Block<'a>,
        /// The later block.
        j: Block<'a>,
    },
}

/// Round `r < nb` of a round-robin tournament of `nb` blocks (`nb` rounds): pairs
/// `(a, b)`, `a < b`, and diagonal blocks, no block twice. Over the rounds
/// every pair and every diagonal block occurs exactly once.
///
/// Odd `nb`: the circle method, pairs `{a, b}` with `a + b = 2 r mod nb` and
/// the one block left over takes its diagonal. Even `nb`: the circle method
/// on the first `nb - 1` blocks, with the left-over block paired with the
/// last one, so each of the `nb - 1` rounds has `nb / 2` equal tiles (which
/// split evenly over an even thread count), then one round of all the
/// diagonals.
pub(crate) fn round(nb: usize, r: usize) -> (Vec<(usize, usize)>, Vec<usize>) {
    debug_assert!(r < nb);
    let even = nb.is_multiple_of(2);
    if even && r == nb - 1 {
        return (Vec::new(), (0..nb).collect());
    }
    let t = if even { nb - 1 } else { nb };
    let mut pairs: Vec<(usize, usize)> = (1..=(t - 1) / 2)
        .map(|k| {
            let (a, b) = ((r + k) % t, (r + t - k) % t);
            (a.min(b), a.max(b))
        })
        .collect();
    if even {
        pairs.push((r, nb - 1));
        (pairs, Vec::new())
    } else {
        (pairs, vec![r])
    }
}

/// `v` cut at `bounds` (ascending, from 0 to `v.len()`).
pub(super) fn split_blocks<'a>(mut v: &'a mut [f32], bounds: &[usize]) -> Vec<&'a mut [f32]> {
    bounds
        .windows(2)
        .map(|w| {
            let (block, rest) = std::mem::take(&mut v).split_at_mut(w[1] - w[0]);
            v = rest;
            block
        })
        .collect()
}

/// The block boundaries of the Newton's-third-law schedule for `n` bodies:
/// about `n / i_block` blocks but at least `min_blocks` (even where there
/// are several, so that the rounds of [`round`] are full), whole `group`s
/// each, as equal as whole groups allow; the last boundary is the padded
/// length. A function of its arguments only, never of the thread count, so
/// that the order of every sum, and so every result bit, is the same on any
/// number of threads.
pub(crate) fn triangle_blocks(
    n: usize,
    i_block: usize,
    min_blocks: usize,
    group: usize,
) -> Vec<usize> {
    let groups = n.div_ceil(group).max(1);
    let mut nb = n.div_ceil(i_block.max(1)).max(min_blocks).clamp(1, groups);
    if nb > 1 && nb % 2 == 1 && nb < groups {
        nb += 1;
    }
    let (each, extra) = (groups / nb, groups % nb);
    let mut bounds = Vec::with_capacity(nb + 1);
    let mut at = 0;
    bounds.push(at);
    for k in 0..nb {
        at += (each + usize::from(k < extra)) * group;
        bounds.push(at);
    }
    bounds
}

/// Runs `tile` on every tile of the schedule with block boundaries
/// `bounds`, round by round (rounds in order, the tiles of a round in
/// parallel), on the accelerations `ax`, `ay`, `az` (the padded length).
pub(crate) fn for_each_tile(
    bounds: &[usize],
    ax: &mut [f32],
    ay: &mut [f32],
    az: &mut [f32],
    tile: impl Fn(Tile<'_>) + Sync,
) {
    let nb = bounds.len() - 1;
    for r in 0..nb {
        let mut blocks: Vec<Option<Block<'_>>> = split_blocks(ax, bounds)
            .into_iter()
            .zip(split_blocks(ay, bounds))
            .zip(split_blocks(az, bounds))
            .zip(bounds)
            .map(|(((x, y), z), &start)| {
                Some(Block {
                    start,
                    acc: AccBlock { x, y, z },
                })
            })
            .collect();
        let (pairs, diags) = round(nb, r);
        let mut tiles: Vec<Tile<'_>> = Vec::with_capacity(pairs.len() + diags.len());
        for d in diags {
            tiles.extend(blocks[d].take().map(Tile::Diagonal));
        }
        for (i, j) in pairs {
            if let (Some(i), Some(j)) = (blocks[i].take(), blocks[j].take()) {
                tiles.push(Tile::Pair { i, j });
            }
        }
        tiles.into_par_iter().for_each(&tile);
    }
}

/// Adds to `ax`, `ay`, `az` (the padded length `bounds.last()`) every pair
/// of the first `n` bodies of `soa` once, by Newton's third law: the tiles
/// of the schedule with block boundaries `bounds`, round by round
/// ([`for_each_tile`]), the diagonal tiles against their real bodies only.
#[allow(
    clippy::too_many_arguments,
    reason = "plain data of one hot call: the loops, the bodies, the schedule and the outputs"
)]
pub(crate) fn third_law(
    loops: &ForceLoops,
    soa: &Soa,
    bounds: &[usize],
    n: usize,
    ax: &mut [f32],
    ay: &mut [f32],
    az: &mut [f32],
    eps2: f32,
) {
    for_each_tile(bounds, ax, ay, az, |tile| match tile {
        Tile::Diagonal(mut d) => {
            let nj = n.saturating_sub(d.start);
            loops.tri_diag(soa, d.start, &mut d.acc, nj, eps2);
        }
        Tile::Pair { mut i, mut j } => {
            loops.tri_pair(soa, i.start, &mut i.acc, j.start, &mut j.acc, eps2);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_round_robin_covers_every_pair_once() {
        for nb in 1..=12 {
            let mut seen = vec![vec![0u32; nb]; nb];
            let mut byes = vec![0u32; nb];
            for r in 0..nb {
                let (pairs, diags) = round(nb, r);
                let mut busy = vec![false; nb];
                for &(a, b) in &pairs {
                    assert!(a < b && b < nb, "nb {nb} round {r}: ({a}, {b})");
                    assert!(!busy[a] && !busy[b], "nb {nb} round {r}: block twice");
                    busy[a] = true;
                    busy[b] = true;
                    seen[a][b] += 1;
                }
                for d in diags {
                    assert!(!busy[d], "nb {nb} round {r}: diagonal block {d} also busy");
                    busy[d] = true;
                    byes[d] += 1;
                }
                if nb % 2 == 0 && !pairs.is_empty() {
                    assert_eq!(pairs.len(), nb / 2, "nb {nb} round {r}: a block idles");
                }
            }
            assert!(byes.iter().all(|&b| b == 1), "nb {nb}: diagonals {byes:?}");
            for (a, row) in seen.iter().enumerate() {
                for (b, &count) in row.iter().enumerate().skip(a + 1) {
                    assert_eq!(count, 1, "nb {nb}: pair ({a}, {b})");
                }
            }
        }
    }

    #[test]
    fn triangle_blocks_are_whole_groups_nearly_equal_and_even_in_number() {
        for n in [1, 2, 17, 100, 1000, 4096, 16384, 100_003] {
            for (i_block, min_blocks, group) in
                [(1024, 4, 32), (512, 2, 48), (1, 1, 8), (1 << 20, 8, 16)]
            {
                let b = triangle_blocks(n, i_block, min_blocks, group);
                let sizes: Vec<usize> = b.windows(2).map(|w| w[1] - w[0]).collect();
                let what =
                    format!("n {n} i_block {i_block} min {min_blocks} group {group}: {sizes:?}");
                assert_eq!(b[0], 0, "{what}");
                assert_eq!(*b.last().unwrap(), n.div_ceil(group) * group, "{what}");
                assert!(sizes.iter().all(|&s| s > 0 && s % group == 0), "{what}");
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(hi - lo <= group, "{what}");
                let nb = sizes.len();
                let groups = n.div_ceil(group);
                assert!(nb == 1 || nb.is_multiple_of(2) || nb == groups, "{what}");
                assert!(nb >= min_blocks.min(groups), "{what}");
                assert!(nb >= n.div_ceil(i_block).min(groups), "{what}");
            }
        }
    }
}
