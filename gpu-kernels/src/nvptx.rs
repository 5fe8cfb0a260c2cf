//! The GPU implementation of [`Exec`]: PTX special registers, barriers, shared
//! memory, `red.add.f32` and the `u32` atomics. Compiled for `nvptx64` only.

use core::arch::asm;
use core::arch::nvptx;
use core::intrinsics::gpu::gpu_launch_sized_workgroup_mem;

use crate::exec::{Exec, Global, Word};

/// The GPU execution model; zero-sized, so generic kernel bodies monomorphise
/// to plain PTX.
pub(crate) struct Gpu;

impl Exec for Gpu {
    #[inline(always)]
    fn thread_idx(&self) -> u32 {
        // SAFETY: reading a special register has no preconditions.
        unsafe { nvptx::_thread_idx_x() }
    }

    #[inline(always)]
    fn block_idx(&self) -> u32 {
        // SAFETY: reading a special register has no preconditions.
        unsafe { nvptx::_block_idx_x() }
    }

    #[inline(always)]
    fn block_dim(&self) -> u32 {
        // SAFETY: reading a special register has no preconditions.
        unsafe { nvptx::_block_dim_x() }
    }

    #[inline(always)]
    fn grid_dim(&self) -> u32 {
        // SAFETY: reading a special register has no preconditions.
        unsafe { nvptx::_grid_dim_x() }
    }

    #[inline(always)]
    fn sync_threads(&self) {
        // SAFETY: `bar.sync 0`; the kernels reach it with every thread of
        // the block (the `Exec::sync_threads` contract), so it cannot hang.
        unsafe { nvptx::_syncthreads() }
    }

    #[inline(always)]
    fn sync_warp(&self) {
        // `__syncwarp(0xffffffff)`: converges the warp and orders its memory accesses.
        // SAFETY: touches no memory; the kernels call it with all 32 lanes
        // of the warp (the `Exec::sync_warp` contract).
        unsafe { asm!("bar.warp.sync -1;", options(nostack)) }
    }

    #[inline(always)]
    unsafe fn load<T: Word>(&self, buf: Global<T>, i: u32) -> T {
        // SAFETY: `i` is in bounds of the device buffer (`Exec::load`'s contract).
        unsafe { buf.as_ptr().add(i as usize).read() }
    }

    #[inline(always)]
    unsafe fn store<T: Word>(&self, buf: Global<T>, i: u32, value: T) {
        // SAFETY: `i` is in bounds and no other thread accesses element `i`
        // unordered (`Exec::store`'s contract).
        unsafe { buf.as_ptr().add(i as usize).write(value) }
    }

    #[inline(always)]
    unsafe fn atomic_add(&self, buf: Global<f32>, i: u32, value: f32) {
        // SAFETY: `i` is in bounds (`Exec::atomic_add`'s contract).
        let p = unsafe { buf.as_ptr().add(i as usize) };
        // Device-scope reduction, result unused: RED.E.ADD.F32.FTZ.RN in SASS.
        // SAFETY: `p` points at an f32 of a global buffer; `red` is atomic.
        unsafe {
            asm!(
                "{{ .reg .u64 %gp; cvta.to.global.u64 %gp, {p}; red.global.add.f32 [%gp], {v}; }}",
                p = in(reg64) p,
                v = in(reg32) value,
                options(nostack)
            )
        }
    }

    #[inline(always)]
    unsafe fn atomic_add_u32(&self, buf: Global<u32>, i: u32, value: u32) -> u32 {
        // SAFETY: `i` is in bounds (`Exec::atomic_add_u32`'s contract).
        let p = unsafe { buf.as_ptr().add(i as usize) };
        let old: u32;
        // SAFETY: `p` points at a u32 of a global buffer; `atom` is atomic.
        unsafe {
            asm!(
                "{{ .reg .u64 %gp; cvta.to.global.u64 %gp, {p}; atom.global.add.u32 {o}, [%gp], {v}; }}",
                p = in(reg64) p,
                v = in(reg32) value,
                o = out(reg32) old,
                options(nostack)
            )
        }
        old
    }

    #[inline(always)]
    unsafe fn atomic_max_u32(&self, buf: Global<u32>, i: u32, value: u32) {
        // SAFETY: `i` is in bounds (`Exec::atomic_max_u32`'s contract).
        let p = unsafe { buf.as_ptr().add(i as usize) };
        // SAFETY: `p` points at a u32 of a global buffer; `red` is atomic.
        unsafe {
            asm!(
                "{{ .reg .u64 %gp; cvta.to.global.u64 %gp, {p}; red.global.max.u32 [%gp], {v}; }}",
                p = in(reg64) p,
                v = in(reg32) value,
                options(nostack)
            )
        }
    }

    #[inline(always)]
    unsafe fn atomic_min_u32(&self, buf: Global<u32>, i: u32, value: u32) {
        // SAFETY: `i` is in bounds (`Exec::atomic_min_u32`'s contract).
        let p = unsafe { buf.as_ptr().add(i as usize) };
        // SAFETY: `p` points at a u32 of a global buffer; `red` is atomic.
        unsafe {
            asm!(
                "{{ .reg .u64 %gp; cvta.to.global.u64 %gp, {p}; red.global.min.u32 [%gp], {v}; }}",
                p = in(reg64) p,
                v = in(reg32) value,
                options(nostack)
            )
        }
    }

    #[inline(always)]
    unsafe fn shared_load<T: Word>(&self, i: u32) -> T {
        // SAFETY: element `i` lies inside the launch's dynamic shared memory
        // and is not written unordered by another thread (the trait's contract).
        unsafe { gpu_launch_sized_workgroup_mem::<T>().add(i as usize).read() }
    }

    #[inline(always)]
    unsafe fn shared_store<T: Word>(&self, i: u32, value: T) {
        // SAFETY: element `i` lies inside the launch's dynamic shared memory
        // and no other thread accesses it unordered (the trait's contract).
        unsafe {
            gpu_launch_sized_workgroup_mem::<T>()
                .add(i as usize)
                .write(value)
        }
    }

    #[inline(always)]
    unsafe fn shared_atomic_add(&self, i: u32, value: f32) {
        // SAFETY: element `i` lies inside the dynamic shared memory.
        let p = unsafe { gpu_launch_sized_workgroup_mem::<f32>().add(i as usize) };
        // SAFETY: `p` points at an f32 of shared memory; `red` is atomic.
        unsafe {
            asm!(
                "{{ .reg .u64 %sp; cvta.to.shared.u64 %sp, {p}; red.shared.add.f32 [%sp], {v}; }}",
                p = in(reg64) p,
                v = in(reg32) value,
                options(nostack)
            )
        }
    }
}
