//! Direct-summation gravity and short-range (pair potential) kernels, written once in `no_std` Rust.
//!
//! The same kernel bodies compile to PTX (`nvptx64-nvidia-cuda`, see
//! `scripts/build-ptx.sh`) and to host code, where `nbody-host`'s emulator runs
//! them on CPU threads. They are generic over [`exec::Exec`], the CUDA execution
//! model (thread and block indices, barriers, shared memory, atomics), and over
//! [`interaction::Real`], the number type of one lane (an `f32` on the GPU, an
//! `f32` or a SIMD vector on the host).
//!
//! | module | what lives there |
//! | --- | --- |
//! | [`vec4`] | the 16-byte body layout `[x, y, z, m]` |
//! | [`interaction`] | the one pairwise interaction every kernel and the CPU backend use |
//! | [`exec`] | the execution-model trait and the device-buffer handle |
//! | [`shape`] | grid, block and shared-memory shapes of every kernel (pure functions) |
//! | [`simt`] | all-pairs, one thread per body, bodies read from global memory |
//! | [`tiled`] | all-pairs through shared-memory tiles |
//! | [`triangle`] | Newton's third law: each pair once, upper-triangle block schedule |
//! | [`block_pair`] | forces and potential between two separate blocks (a ring of ranks, several GPUs) |
//! | [`integrate`] | kick, drift, the two fused, the divergence check |
//! | [`energy`] | kinetic and softened potential energy, reduced in f64 |
//! | [`ensemble`] | thermostats and the barostat (Nosé–Hoover chains, MTK), Philox random numbers: scalar `f64`, host and GPU alike |
//! | [`hermite`] | collisional gravity: predictor, force + jerk + potential of active bodies (f64, mixed) |
//! | [`periodic`] | short-range MD: the periodic box, ghosts, drift with the rebuild trigger |
//! | [`reduce`] | the fixed-order block tree that sums `f64` per block (energy, thermo, ensemble) |
//! | [`scan`] | exclusive prefix sums over the grid (block scans, block sums) |
//! | [`binning`] | short-range MD: the counting sort of bodies by cell |
//! | [`neighbours`] | short-range MD: full neighbour lists from the cells |
//! | [`pair`] | short-range MD: pair potentials as data (one file per law), their force kernel over the lists |
//! | [`entry`] | the kernel table: every entry point declared once |
//!
//! Every kernel has a generic body (`unsafe fn ...<E: Exec>`) in its family's
//! file and one line in the [`entry`] table, which generates the nvptx
//! `extern "ptx-kernel"` wrapper, the host's typed [`entry::Launch`] and the
//! emulator's dispatch.
#![no_std]
#![deny(missing_docs)]
#![allow(
    clippy::identity_op,
    reason = "`seq!` unrolling writes `index + 0` for the first copy of a loop body"
)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_ptx,
        stdarch_nvptx,
        link_llvm_intrinsics,
        asm_experimental_arch,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        core_intrinsics
    ),
    allow(
        internal_features,
        reason = "`core_intrinsics` (NVVM intrinsics) and the PTX ABI are internal, nightly-only features"
    )
)]

/// A loop unrolled `N` times, the factor written once: the body runs with
/// `$u = 0, 1, .., N - 1`, then `$i += N`.
///
/// `unrolled_while!(i + N <= end, |u| {..})` stops before a partial round;
/// `unrolled_while!(i < end, by N, |u| {..})` is for an `end` that is a
/// multiple of `N`.
macro_rules! unrolled_while {
    ($i:ident + $n:literal <= $end:expr, |$u:ident| { $($body:tt)* }) => {
        while $i + $n <= $end {
            seq_macro::seq!($u in 0..$n { $($body)* });
            $i += $n;
        }
    };
    ($i:ident < $end:expr, by $n:literal, |$u:ident| { $($body:tt)* }) => {
        while $i < $end {
            seq_macro::seq!($u in 0..$n { $($body)* });
            $i += $n;
        }
    };
}

pub mod binning;
pub mod block_pair;
pub mod energy;
pub mod ensemble;
pub mod entry;
pub mod exec;
pub mod hermite;
pub mod integrate;
pub mod interaction;
pub mod md_ensemble;
pub mod neighbours;
pub mod pair;
pub mod periodic;
pub mod reduce;
pub mod scan;
pub mod shape;
pub mod simt;
pub mod split;
pub mod tiled;
pub mod triangle;
pub mod vec4;

#[cfg(target_arch = "nvptx64")]
mod nvptx;

pub use exec::{Exec, Global, Word};
pub use interaction::Real;
pub use vec4::Vec4;
