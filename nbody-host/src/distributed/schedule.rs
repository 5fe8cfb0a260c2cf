//! The ring's arithmetic, apart from MPI (so that it is unit-tested in every
//! build): which bodies a rank owns, which block visits it at each shift,
//! and which part of a block pair it computes in the Newton's-third-law ring.

use std::ops::Range;

/// Contiguous blocks of bodies, one per rank: rank `r` owns bodies
/// `r N / p .. (r + 1) N / p` (sizes differ by at most one; some are empty
/// when `p > N`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Partition {
    bounds: Vec<usize>,
}

impl Partition {
    /// `n` bodies over `ranks` ranks (`ranks >= 1`).
    pub(crate) fn new(n: usize, ranks: usize) -> Partition {
        assert!(ranks >= 1, "at least one rank");
        let bounds = (0..=ranks)
            .map(|r| (r as u128 * n as u128 / ranks as u128) as usize)
            .collect();
        Partition { bounds }
    }

    /// Number of ranks.
    pub(crate) fn ranks(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Rank `r`'s bodies.
    pub(crate) fn range(&self, r: usize) -> Range<usize> {
        self.bounds[r]..self.bounds[r + 1]
    }

    /// Rank `r`'s number of bodies.
    pub(crate) fn len(&self, r: usize) -> usize {
        self.bounds[r + 1] - self.bounds[r]
    }
}

/// The rank whose block visits rank `r` at shift `s` of a ring of `p`
/// (blocks move from rank `q` to `q + 1`): `r - s mod p`.
pub(crate) fn visitor(p: usize, r: usize, s: usize) -> usize {
    (r + p - s % p) % p
}

/// Shifts of the Newton's-third-law ring: `floor(p / 2)`. Each unordered
/// pair of blocks at ring distance `d <= p / 2` is met at shift `d` by the
/// later rank of the pair (and, when `d = p / 2` with `p` even, by both,
/// which split it: [`PairWork`]).
pub(crate) fn third_law_shifts(p: usize) -> usize {
    p / 2
}

/// What rank `r` computes at shift `s >= 1` of the third-law ring, between
/// its block (`own`) and the visitor's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PairWork {
    /// Every pair of the two blocks.
    Full,
    /// Only the pairs of `own[range]` with the whole visitor (the earlier
    /// rank of a pair at distance `p / 2`: the first half of its block).
    Own(Range<usize>),
    /// Only the pairs of the whole `own` block with `visitor[range]` (the
    /// later rank: the second half of the earlier rank's block).
    Visitor(Range<usize>),
}

/// [`PairWork`] of rank `r` at shift `s` (`1 <= s <= p / 2`).
pub(crate) fn third_law_work(part: &Partition, r: usize, s: usize) -> PairWork {
    let p = part.ranks();
    debug_assert!(s >= 1 && s <= third_law_shifts(p));
    if p % 2 == 1 || 2 * s != p {
        return PairWork::Full;
    }
    // Distance p / 2: ranks r and r + p / 2 both meet the pair. The earlier
    // one (r < p / 2) keeps the first half of its own block, the later one
    // the second half of the visiting (earlier) block.
    if r < p / 2 {
        PairWork::Own(0..part.len(r) / 2)
    } else {
        let v = part.len(visitor(p, r, s));
        PairWork::Visitor(v / 2..v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_contiguous_nearly_equal_and_cover_every_body() {
        for n in [0, 1, 2, 3, 7, 100, 1001] {
            for p in 1..=9 {
                let part = Partition::new(n, p);
                assert_eq!(part.ranks(), p);
                assert_eq!(part.range(0).start, 0);
                assert_eq!(part.range(p - 1).end, n);
                for r in 1..p {
                    assert_eq!(part.range(r - 1).end, part.range(r).start);
                }
                let sizes: Vec<usize> = (0..p).map(|r| part.len(r)).collect();
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(hi - lo <= 1, "n {n} p {p}: {sizes:?}");
            }
        }
    }

    #[test]
    fn the_all_pairs_ring_brings_every_block_to_every_rank_once() {
        for p in 1..=9 {
            for r in 0..p {
                let mut seen: Vec<usize> = (0..p).map(|s| visitor(p, r, s)).collect();
                assert_eq!(seen[0], r, "shift 0 is the own block");
                seen.sort_unstable();
                assert_eq!(seen, (0..p).collect::<Vec<_>>(), "p {p} rank {r}");
            }
        }
    }

    /// Every pair of bodies `(a, b)`, `a != b`, is computed exactly once by
    /// the third-law ring: within the own block at shift 0, and at shifts
    /// `1..=p/2` by the [`PairWork`] of each rank.
    #[test]
    fn the_third_law_ring_computes_every_pair_of_bodies_exactly_once() {
        for n in [1, 2, 3, 5, 8, 17, 40] {
            for p in 1..=9 {
                let part = Partition::new(n, p);
                let mut count = vec![vec![0u32; n]; n];
                let mut mark = |a: usize, b: usize| {
                    let (lo, hi) = (a.min(b), a.max(b));
                    count[lo][hi] += 1;
                };
                for r in 0..p {
                    let own = part.range(r);
                    for a in own.clone() {
                        for b in a + 1..own.end {
                            mark(a, b);
                        }
                    }
                    for s in 1..=third_law_shifts(p) {
                        let v = part.range(visitor(p, r, s));
                        let (mine, theirs) = match third_law_work(&part, r, s) {
                            PairWork::Full => (own.clone(), v),
                            PairWork::Own(k) => (own.start + k.start..own.start + k.end, v),
                            PairWork::Visitor(k) => {
                                (own.clone(), v.start + k.start..v.start + k.end)
                            }
                        };
                        for a in mine {
                            for b in theirs.clone() {
                                mark(a, b);
                            }
                        }
                    }
                }
                for (a, row) in count.iter().enumerate() {
                    for (b, &c) in row.iter().enumerate().skip(a + 1) {
                        assert_eq!(c, 1, "n {n} p {p}: pair ({a}, {b})");
                    }
                }
            }
        }
    }
}
