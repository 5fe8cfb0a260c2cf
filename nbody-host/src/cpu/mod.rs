//! The CPU backend: multithreaded (rayon) and vectorised (AVX-512, AVX2 +
//! FMA or NEON, chosen at run time, with a scalar fallback), same physics as
//! the kernels.
//!
//! | file | what |
//! | --- | --- |
//! | `mod.rs` | [`CpuTuning`], the backend's options |
//! | `isa.rs` | run-time detection of an [`Isa`] (the name type is `crate::isa`), the capability tokens |
//! | `simd.rs` | the vector types (implementing [`Real`](gpu_kernels::interaction::Real)), made only from a token; `simd/x86.rs`, `simd/arm.rs` the types of each architecture |
//! | `loops.rs` | the force and potential loops, generic over the vector type, and their per-ISA entry points |
//! | `schedule.rs` | the Newton's-third-law schedule: blocks, tiles, rounds |
//! | `engine.rs` | `CpuEngine`: state, integrator stages, which loop runs |
//! | `block_pair.rs` | `CpuBlockForces`: the block-pair primitive on the same loops |
//! | `lanes.rs` | index vectors, gathers, scatters and masks for the neighbour-list loops |
//! | `md/` | `MdEngine`: short-range forces (Lennard-Jones) through cell and Verlet lists |
//!
//! Two loops compute the forces, and [`Simulation::method`](crate::Simulation::method)
//! says which ran: the **all-pairs** loop (i-bodies in SIMD lanes, j-bodies
//! broadcast, several i-vectors per broadcast, j in cache tiles), and the
//! **third-law** loop (each pair once, on a round-robin schedule of block
//! tiles). [`Kernel::Triangle`](crate::Kernel::Triangle) always runs the
//! third-law loop; `Simt` and `Tiled` run all-pairs below
//! [`CpuTuning::third_law_min_n`] bodies and the third-law loop from there
//! on, where it is faster. Both are deterministic: the same input gives
//! bit-identical output on every run and every thread count (the
//! decomposition depends on `N`, the tuning and the instruction set only).
//! Different instruction sets sum in different orders, so their results
//! differ in the last bits.
//!
//! # Accuracy
//! Measured against the `f64` [`oracle`](crate::oracle) by `tests/cpu_simd.rs`
//! (unequal random masses, uniform cube, `eps` in {0, 0.1}, every loop and
//! every instruction set, N up to 2048): the largest relative error
//! `|a - a_ref| / max(|a_ref|, mean |a_ref|)` was 2.9e-6 (AVX2 + FMA; the test
//! allows 1e-5). The vector `rsqrt` is the hardware estimate plus one
//! Newton–Raphson step (a few 1e-7 relative); the rest is f32 summation.

mod block_pair;
mod engine;
mod isa;
mod lanes;
mod loops;
mod md;
mod schedule;
mod simd;

pub(crate) use block_pair::CpuBlockForces;
pub(crate) use engine::CpuEngine;
use isa::Isa;
pub(crate) use md::MdEngine;

/// Instruction set and blocking of the CPU backend.
///
/// ```
/// use nbody_host::{Backend, CpuTuning, Isa, Simulation, ic};
///
/// let tuning = CpuTuning { isa: Some(Isa::Scalar), ..CpuTuning::default() };
/// let sim = Simulation::builder(ic::plummer(64, 1))
///     .backend(Backend::Cpu(tuning))
///     .build()?;
/// assert!(sim.backend().to_string().starts_with("cpu (scalar, "));
/// # Ok::<(), nbody_host::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTuning {
    /// The instruction set; `None` (the default) picks [`Isa::detect`]. One
    /// this CPU lacks makes [`build`](crate::SimulationBuilder::build) fail
    /// with [`Error::Unsupported`](crate::Error::Unsupported).
    pub isa: Option<Isa>,
    /// Bodies per rayon task in the all-pairs loop, and the tile edge of the
    /// Newton's-third-law schedule, in whole register groups (32 bodies with
    /// AVX-512; 16, and 8 for the triangle, with AVX2), the triangle's blocks
    /// made equal up to one group. At least 1; default 2048. The all-pairs
    /// tasks are capped so that every rayon thread gets at least two; the
    /// triangle's blocks are at least 4 (a constant, not the thread count,
    /// so that its sums, and so its results, are the same on any number of
    /// threads).
    pub i_block: usize,
    /// j-bodies per cache tile of the all-pairs loop (16 bytes each). At
    /// least 1; default 2048 (32 KiB, an L1 data cache).
    pub j_tile: usize,
    /// From this many bodies on, [`Kernel::Simt`](crate::Kernel::Simt) and [`Kernel::Tiled`](crate::Kernel::Tiled) also
    /// run the Newton's-third-law loop (each pair once), which is then the
    /// faster one: same physics, sums in a different (but still fixed)
    /// order. [`Kernel::Triangle`](crate::Kernel::Triangle) always runs it. `usize::MAX` keeps Simt
    /// and Tiled on the all-pairs loop, whose sum for each body runs over
    /// `j = 0..N` in order whatever the blocking. Default 1024 (from there on
    /// the third-law loop is 1.2x faster or more with AVX-512 and with AVX2
    /// on the machine of `docs/performance.md`; at 512 they tie).
    pub third_law_min_n: usize,
}

impl CpuTuning {
    /// The default: the best instruction set detected, `i_block` and
    /// `j_tile` 2048, `third_law_min_n` 1024.
    pub const DEFAULT: CpuTuning = CpuTuning {
        isa: None,
        i_block: 2048,
        j_tile: 2048,
        third_law_min_n: 1024,
    };
}

impl Default for CpuTuning {
    fn default() -> Self {
        CpuTuning::DEFAULT
    }
}
