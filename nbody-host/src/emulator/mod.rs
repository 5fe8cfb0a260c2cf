//! A CPU emulator of the CUDA execution model that runs the kernel bodies of
//! `gpu-kernels` (the very code that becomes PTX) on CPU threads.
//!
//! Each block's threads are real OS threads, so barriers mean something:
//! [`sync_threads`](gpu_kernels::exec::Exec::sync_threads) is a rendezvous of
//! the whole block, [`sync_warp`](gpu_kernels::exec::Exec::sync_warp) one of
//! the 32 threads of a warp. Each block gets fresh, zeroed dynamic shared
//! memory of the launch's size; `f32` atomic adds (global and shared) are
//! compare-and-swap loops on the bit pattern. Blocks run one after another.
//!
//! # What the emulator checks
//! - **Shared-memory races** (with [`LaunchOptions::race_detection`], on by
//!   default): every shared access is recorded with its thread and the block's
//!   barrier epoch. Two accesses to the same word in one epoch by different
//!   threads, at least one a plain write, is a race, unless both are atomic or
//!   both threads are in one warp with a `sync_warp` between the accesses.
//!   The launch fails with the kernel, block, threads, byte address and epoch.
//! - **Out-of-bounds accesses**: a global index past the buffer's length, an
//!   address outside every buffer handed to [`launch`] or not on a 32-bit
//!   word, or a shared index past the launch's shared bytes fails the launch;
//!   nothing is touched.
//! - **Deadlocks**: a thread that finishes while others wait at a barrier fails
//!   the launch at once; a thread that never arrives (it spins, or waits at a
//!   different barrier) fails it after [`LaunchOptions::barrier_timeout`].
//!
//! # Running a kernel
//! ```
//! use gpu_kernels::exec::Exec;
//! use gpu_kernels::shape::LaunchShape;
//! use nbody_host::emulator::{DeviceMemory, LaunchOptions, launch};
//!
//! // out[i] = 2 * in[i], one thread per element.
//! let input = DeviceMemory::from_slice(&[1.0f32, 2.0, 3.0]);
//! let output = DeviceMemory::zeroed(3);
//! let (x, y) = (input.global::<f32>(3), output.global::<f32>(3));
//! let shape = LaunchShape { grid: 1, block: 32, shared_bytes: 0 };
//! launch("double", shape, LaunchOptions::default(), &[&input, &output], |t| {
//!     let i = t.block_idx() * t.block_dim() + t.thread_idx();
//!     if i < 3 {
//!         unsafe { t.store(y, i, 2.0 * t.load(x, i)) };
//!     }
//! })?;
//! assert_eq!(output.read::<f32>(), [2.0, 4.0, 6.0]);
//! # Ok::<(), nbody_host::Error>(())
//! ```
//!
//! The simulation kernels run this way behind
//! [`Backend::Emulator`](crate::Backend::Emulator), through the same launch
//! plans as the CUDA backend.
//!
//! The parts: `launch.rs` (a launch, the emulated thread and its checks),
//! `device_memory.rs` (global buffers, word access), `barrier.rs`
//! (rendezvous and deadlock detection), `race_detector.rs`,
//! `worker_pool.rs` (the OS threads), and `device.rs`: the emulator as the
//! `Device` (`plan/device.rs`) that every launch plan (gravity,
//! short-range MD, block pairs) runs on.

use std::sync::{Mutex, MutexGuard};

mod barrier;
mod device;
mod device_memory;
mod launch;
mod race_detector;
mod worker_pool;

pub(crate) use device::EmulatedDevice;
pub use device_memory::DeviceMemory;
pub use launch::{EmuThread, LaunchOptions, launch};

/// Locks `m`, also if a panicking thread poisoned it: an emulated thread's
/// panic is reported as a launch error, and the state stays usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
