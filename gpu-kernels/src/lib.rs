//! Direct-summation gravity kernels, written once in `no_std` Rust.
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
//! | [`launch`] | grid, block and shared-memory shapes of every kernel (pure functions) |
//! | [`simt`] | all-pairs, one thread per body, bodies read from global memory |
//! | [`tiled`] | all-pairs through shared-memory tiles |
//! | [`triangle`] | Newton's third law: each pair once, upper-triangle block schedule |
//! | [`integrate`] | semi-implicit Euler from accelerations, kick and drift (leapfrog) |
//! | [`energy`] | kinetic and softened potential energy, reduced in f64 |
//!
//! Every kernel has a generic body (`unsafe fn ...<E: Exec>`) and, on the
//! nvptx target only, an `extern "ptx-kernel"` entry point with a stable
//! `#[no_mangle]` name listed in [`entry`].
#![no_std]
#![deny(missing_docs)]
// `seq!` unrolling writes `index + 0` for the first copy of a loop body.
#![allow(clippy::identity_op)]
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
    allow(internal_features)
)]

pub mod energy;
pub mod entry;
pub mod exec;
pub mod integrate;
pub mod interaction;
pub mod launch;
pub mod simt;
pub mod tiled;
pub mod triangle;
pub mod vec4;

#[cfg(target_arch = "nvptx64")]
mod nvptx;

pub use exec::{Exec, Global, Word};
pub use interaction::Real;
pub use vec4::Vec4;
