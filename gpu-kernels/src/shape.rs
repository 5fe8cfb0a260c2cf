//! Launch shapes of every kernel: pure functions shared by the CUDA backend and
//! the emulator, so both launch exactly the same grids.
//!
//! A grid of 0 blocks means "nothing to do" (for example the triangle kernel
//! with fewer than two bodies); launchers skip such launches.

/// Threads per warp.
pub const WARP: u32 = 32;
/// Smallest block size the kernels accept (one warp).
pub const MIN_BLOCK: u32 = 32;
/// Largest block size the kernels accept (the CUDA limit).
pub const MAX_BLOCK: u32 = 1024;
/// Largest body count: every index the kernels compute, including padding
/// (`n + 2 * block`), stays below `2^31`, and byte offsets are 64-bit.
pub const MAX_BODIES: u32 = 1 << 30;
/// Largest grid (`gridDim.x` limit of compute capability 3.0 and newer).
pub const MAX_GRID: u32 = (1 << 31) - 1;
/// Bodies each thread of the tiled kernels carries in registers: two, so one
/// shared-memory load of a `j` body serves two interactions.
pub const TILED_BODIES_PER_THREAD: u32 = 2;
/// Bodies each thread of the triangle kernel holds in registers (register
/// blocking: one shared-memory j-body and reaction serve this many pairs).
pub const TRIANGLE_BODIES_PER_THREAD: u32 = 4;
/// Largest block of the triangle kernel: its registers per thread (more than
/// 64 at four bodies per thread) leave too few for 1024 threads.
pub const TRIANGLE_MAX_BLOCK: u32 = 512;
/// Bytes of one body in memory (`[x, y, z, m]` as `f32`).
pub const BODY_BYTES: u32 = 16;

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Blocks in the grid (`gridDim.x`).
    pub grid: u32,
    /// Threads per block (`blockDim.x`).
    pub block: u32,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
}

/// Whether `block` is a valid block size: a power of two in `32..=1024`.
pub const fn is_valid_block(block: u32) -> bool {
    block.is_power_of_two() && block >= MIN_BLOCK && block <= MAX_BLOCK
}

/// Whether `block` is valid for the triangle kernel: a valid block size of
/// at most [`TRIANGLE_MAX_BLOCK`].
pub const fn is_valid_triangle_block(block: u32) -> bool {
    is_valid_block(block) && block <= TRIANGLE_MAX_BLOCK
}

/// One thread per body (SIMT all-pairs, kick, drift, Euler update).
pub const fn per_body(n: u32, block: u32) -> LaunchShape {
    LaunchShape {
        grid: n.div_ceil(block),
        block,
        shared_bytes: 0,
    }
}

/// The thermostat's pass over the atoms ([`md_ensemble::pass`](crate::md_ensemble::pass)):
/// one thread per atom and two `f64` per thread of shared memory for the
/// block's sums.
pub const fn ensemble_pass(n: u32, block: u32) -> LaunchShape {
    LaunchShape {
        grid: n.div_ceil(block),
        block,
        shared_bytes: 16 * block,
    }
}

/// The end of a thermostatted step ([`md_ensemble::end`](crate::md_ensemble::end)):
/// one block of 256 threads staging the blocks' sums through shared memory
/// (two `f64` per thread), thread 0 adding them in order.
pub const fn ensemble_end() -> LaunchShape {
    LaunchShape {
        grid: 1,
        block: 256,
        shared_bytes: 16 * 256,
    }
}

/// One warp, whose thread 0 works (the thermostat's scalar updates; a
/// block is a whole number of warps).
pub const fn single() -> LaunchShape {
    LaunchShape {
        grid: 1,
        block: 32,
        shared_bytes: 0,
    }
}

/// The tiled all-pairs kernels: [`TILED_BODIES_PER_THREAD`] bodies per thread,
/// one tile of `block` bodies in shared memory.
pub const fn tiled(n: u32, block: u32) -> LaunchShape {
    LaunchShape {
        grid: n.div_ceil(block * TILED_BODIES_PER_THREAD),
        block,
        shared_bytes: block * BODY_BYTES,
    }
}

/// Whether `split` (threads per body of [`split`]) is valid for `block`: a
/// power of two from 1 to `block`.
pub const fn is_valid_split(block: u32, split: u32) -> bool {
    split.is_power_of_two() && split <= block
}

/// The split all-pairs kernels ([`split`](crate::split)): `split` threads
/// per body, so `block / split` bodies per block, and one tile of `block`
/// bodies in shared memory (which also holds the partial sums).
pub const fn split(n: u32, block: u32, split: u32) -> LaunchShape {
    LaunchShape {
        grid: n.div_ceil(block / split),
        block,
        shared_bytes: block * BODY_BYTES,
    }
}

/// The energy reduction: one thread per body, a tile of bodies and then two
/// `f64` partial sums per thread in shared memory (both `16 * block` bytes).
pub const fn energy(n: u32, block: u32) -> LaunchShape {
    LaunchShape {
        grid: n.div_ceil(block),
        block,
        shared_bytes: block * BODY_BYTES,
    }
}

/// Number of `f64` values the energy kernel writes: kinetic and potential
/// partial sums per block.
pub const fn energy_partials(n: u32, block: u32) -> u32 {
    2 * energy(n, block).grid
}

/// Bodies per group of the triangle schedule: `S = R B`, `R` =
/// [`TRIANGLE_BODIES_PER_THREAD`].
pub const fn triangle_group_size(block: u32) -> u32 {
    TRIANGLE_BODIES_PER_THREAD * block
}

/// Groups of the triangle schedule: `G = (N - 2) / S + 1` (0 when `N < 2`),
/// `S` = [`triangle_group_size`].
///
/// Group `g` owns i-bodies `S g .. S g + S` and j-bodies `S g + 1 ..= S g + S`;
/// `S G >= N - 1`, so every pair `i < j < N` falls in exactly one block `(gx, gy)`
/// with `gx <= gy`.
pub const fn triangle_groups(n: u32, block: u32) -> u32 {
    if n < 2 {
        0
    } else {
        (n - 2) / triangle_group_size(block) + 1
    }
}

/// Blocks of the triangle schedule, `G (G + 1) / 2` (may exceed [`MAX_GRID`]).
pub const fn triangle_blocks(n: u32, block: u32) -> u64 {
    let g = triangle_groups(n, block) as u64;
    g * (g + 1) / 2
}

/// The triangle kernel: `G (G + 1) / 2` blocks, and `block` j-bodies plus their
/// accumulated reactions in shared memory. `None` when the grid would exceed
/// [`MAX_GRID`] (more than about `65535 S` bodies).
pub const fn triangle(n: u32, block: u32) -> Option<LaunchShape> {
    let blocks = triangle_blocks(n, block);
    if blocks > MAX_GRID as u64 {
        return None;
    }
    Some(LaunchShape {
        grid: blocks as u32,
        block,
        shared_bytes: 2 * block * BODY_BYTES,
    })
}

/// Bodies a neighbour list has room for: `n` rounded up to a whole warp
/// (the list holds `neighbour_stride(n) * cap` words).
pub const fn neighbour_stride(n: u32) -> u32 {
    n.div_ceil(WARP) * WARP
}

/// Neighbours of one body stored side by side in a neighbour list (one
/// 16-byte load in the force loop); capacities are multiples of it.
pub const NEIGHBOUR_GROUP: u32 = 4;

/// Where neighbour `k` of body `i` sits in a neighbour list of capacity
/// `cap` (a multiple of [`NEIGHBOUR_GROUP`]): the lists of bodies
/// `32 w .. 32 w + 31` form one tile of `32 cap` words; in it, neighbours
/// `4 g .. 4 g + 3` of the 32 bodies fill 512 contiguous bytes, 16 per body
/// (see [`neighbours`](crate::neighbours)).
pub const fn neighbour_slot(i: u32, k: u32, cap: u32) -> u32 {
    let lane = i % WARP;
    (i - lane) * cap
        + (k / NEIGHBOUR_GROUP) * (NEIGHBOUR_GROUP * WARP)
        + lane * NEIGHBOUR_GROUP
        + k % NEIGHBOUR_GROUP
}

/// The scans of [`scan`](crate::scan): one element per thread, two buffers of
/// `block` `u32` in shared memory. [`scan_blocks`](crate::scan::scan_blocks)
/// and [`scan_add`](crate::scan::scan_add) use this shape;
/// [`scan_sums`](crate::scan::scan_sums) gets [`scan_sums`] with as many sums
/// as this grid has blocks.
pub const fn scan(len: u32, block: u32) -> LaunchShape {
    LaunchShape {
        grid: len.div_ceil(block),
        block,
        shared_bytes: 2 * block * 4,
    }
}

/// [`count_entries`](crate::neighbours::count_entries): one thread per
/// body, one `u32` per thread in shared memory.
pub const fn count_entries(n: u32, block: u32) -> LaunchShape {
    LaunchShape {
        grid: n.div_ceil(block),
        block,
        shared_bytes: 4 * block,
    }
}

/// The one block that scans the block sums of [`scan`]: the two buffers
/// and one word for each chunk's total.
pub const fn scan_sums(block: u32) -> LaunchShape {
    LaunchShape {
        grid: 1,
        block,
        shared_bytes: (2 * block + 1) * 4,
    }
}

/// The pair force kernels ([`pair::forces`](crate::pair::forces)): one
/// thread per body; the `thermo` instance reduces three `f64` per thread in
/// shared memory.
pub const fn pair_forces(n: u32, block: u32, thermo: bool) -> LaunchShape {
    LaunchShape {
        grid: n.div_ceil(block),
        block,
        shared_bytes: if thermo { 3 * 8 * block } else { 0 },
    }
}

/// Number of `f64` the thermo instance of the pair force kernels writes:
/// potential, virial and kinetic sums per block.
pub const fn pair_partials(n: u32, block: u32) -> u32 {
    3 * n.div_ceil(block)
}

/// [`block_pair`](crate::block_pair::block_pair) for blocks of `ni` and `nj`
/// bodies: one block per pair of groups of `S =` [`triangle_group_size`]
/// bodies, `ceil(ni / S) ceil(nj / S)` blocks (0 when either block is
/// empty), and `block` j-bodies plus their reactions in shared memory, as
/// the triangle kernel. `None` when the grid would exceed [`MAX_GRID`].
pub const fn block_pair(ni: u32, nj: u32, block: u32) -> Option<LaunchShape> {
    let s = triangle_group_size(block);
    let blocks = ni.div_ceil(s) as u64 * nj.div_ceil(s) as u64;
    if blocks > MAX_GRID as u64 {
        return None;
    }
    Some(LaunchShape {
        grid: blocks as u32,
        block,
        shared_bytes: 2 * block * BODY_BYTES,
    })
}

/// [`block_potential`](crate::block_pair::block_potential): one thread per
/// i-body, a tile of j-bodies (then the block's `f64` sums) in shared memory.
pub const fn block_potential(ni: u32, block: u32) -> LaunchShape {
    LaunchShape {
        grid: ni.div_ceil(block),
        block,
        shared_bytes: block * BODY_BYTES,
    }
}

/// Number of `f64` partial sums [`block_potential`] writes: one per block.
pub const fn block_potential_partials(ni: u32, block: u32) -> u32 {
    block_potential(ni, block).grid
}

/// Block id -> `(gx, gy)`, `gx <= gy`, in closed form.
///
/// Blocks are numbered row by row of the upper triangle:
/// `id = gy (gy + 1) / 2 + gx`, so `gy = floor((sqrt(8 id + 1) - 1) / 2)`.
/// The square root is taken in `f64`, exact for every `id < 2^31`; one integer
/// check guards the floor anyway.
#[inline(always)]
pub fn triangle_block_coords(id: u32) -> (u32, u32) {
    let id = id as u64;
    let root = sqrt_f64((8 * id + 1) as f64);
    let mut gy = ((root - 1.0) * 0.5) as u64;
    if (gy + 1) * (gy + 2) / 2 <= id {
        gy += 1;
    } else if gy * (gy + 1) / 2 > id {
        gy -= 1;
    }
    let gx = id - gy * (gy + 1) / 2;
    (gx as u32, gy as u32)
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn sqrt_f64(x: f64) -> f64 {
    core::intrinsics::sqrtf64(x)
}

#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
fn sqrt_f64(x: f64) -> f64 {
    libm::sqrt(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes() {
        for b in [32, 64, 128, 256, 512, 1024] {
            assert!(is_valid_block(b));
        }
        for b in [0, 1, 16, 31, 33, 48, 96, 2048] {
            assert!(!is_valid_block(b), "{b}");
        }
    }

    #[test]
    fn grids_cover_every_body() {
        for n in [1, 2, 17, 31, 32, 33, 255, 256, 257, 1000, 2048] {
            for b in [32, 64, 128, 256, 1024] {
                let s = per_body(n, b);
                assert!(s.grid * b >= n && (s.grid - 1) * b < n);
                let t = tiled(n, b);
                assert!(t.grid * 2 * b >= n && (t.grid - 1) * 2 * b < n);
                assert_eq!(t.shared_bytes, 16 * b);
                assert_eq!(energy_partials(n, b), 2 * n.div_ceil(b));
            }
        }
    }

    #[test]
    fn split_grids_cover_every_body_with_split_threads_each() {
        assert!(is_valid_split(256, 1) && is_valid_split(256, 256));
        assert!(!is_valid_split(256, 0) && !is_valid_split(256, 3) && !is_valid_split(64, 128));
        for n in [1, 2, 31, 255, 256, 257, 4096, 4097] {
            for (b, s) in [(32, 1), (32, 32), (256, 16), (1024, 8)] {
                let shape = split(n, b, s);
                let bodies = b / s;
                assert!(shape.grid * bodies >= n && (shape.grid - 1) * bodies < n);
                assert_eq!(shape.shared_bytes, 16 * b);
            }
        }
        // Issue 23: N = 4096 with 16 threads per body fills 65,536 threads.
        let s = split(4096, 256, 16);
        assert_eq!(s.grid * s.block, 65_536);
    }

    #[test]
    fn triangle_group_count_covers_every_pair() {
        let s = triangle_group_size(32);
        assert_eq!(s, 32 * TRIANGLE_BODIES_PER_THREAD);
        assert_eq!(triangle_groups(0, 32), 0);
        assert_eq!(triangle_groups(1, 32), 0);
        assert_eq!(triangle_groups(2, 32), 1);
        assert_eq!(triangle_groups(s + 1, 32), 1); // j reaches S*0 + 1 + (S-1) = S = N-1
        assert_eq!(triangle_groups(s + 2, 32), 2);
        for n in 2..3000u32 {
            for b in [32u32, 64, 256] {
                let (g, s) = (triangle_groups(n, b), triangle_group_size(b));
                assert!(s * g >= n - 1, "n={n} b={b}: last j not covered");
                assert!(s * (g - 1) < n - 1, "n={n} b={b}: one group too many");
            }
        }
        assert_eq!(triangle(2, 32).unwrap().grid, 1);
        assert_eq!(triangle(1, 32).unwrap().grid, 0);
        assert_eq!(triangle(100_000, 32).unwrap().shared_bytes, 2 * 32 * 16);
        assert!(triangle(MAX_BODIES, 32).is_none());
        assert!(is_valid_triangle_block(TRIANGLE_MAX_BLOCK));
        assert!(!is_valid_triangle_block(2 * TRIANGLE_MAX_BLOCK));
    }

    #[test]
    fn block_pair_grid_covers_every_group_pair() {
        let s = triangle_group_size(32);
        assert_eq!(block_pair(0, 10, 32).unwrap().grid, 0);
        assert_eq!(block_pair(10, 0, 32).unwrap().grid, 0);
        assert_eq!(block_pair(1, 1, 32).unwrap().grid, 1);
        assert_eq!(block_pair(s, s + 1, 32).unwrap().grid, 2);
        assert_eq!(block_pair(2 * s + 1, 3 * s, 32).unwrap().grid, 9);
        assert_eq!(block_pair(5, 5, 64).unwrap().shared_bytes, 2 * 64 * 16);
        assert!(block_pair(MAX_BODIES, MAX_BODIES, 32).is_none());
        assert_eq!(block_potential(257, 128).grid, 3);
        assert_eq!(block_potential_partials(256, 128), 2);
    }

    #[test]
    fn triangle_coords_invert_the_numbering() {
        let mut id = 0u32;
        for gy in 0..2000u32 {
            for gx in 0..=gy {
                assert_eq!(triangle_block_coords(id), (gx, gy), "id {id}");
                id += 1;
            }
        }
        // Far end of the grid range.
        for gy in [65_534u32, 65_535] {
            for gx in [0, 1, gy / 2, gy - 1, gy] {
                let id = gy * (gy + 1) / 2 + gx;
                assert_eq!(triangle_block_coords(id), (gx, gy));
            }
        }
    }
}
