//! The kernels' limits after the driver's JIT, checked against a plan's
//! launches before anything is allocated or launched (issue 15, defect 4;
//! `CudaDevice::check_launches` and its check before each new launch).
//!
//! The JIT decides the registers per thread, and with them the largest block
//! a function can run (`MAX_THREADS_PER_BLOCK`); a larger launch would fail
//! with `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES` in the middle of a run. A
//! function may use `MAX_DYNAMIC_SHARED_SIZE_BYTES` of dynamic shared memory
//! (48 KiB less its static shared memory) unless raised; the caller has
//! checked the device's opt-in maximum.

use cust::sys;
use gpu_kernels::entry::Entry;

use super::status::driver;
use crate::error::{Error, Result};

/// A function attribute of a loaded kernel.
fn function_attribute(f: sys::CUfunction, attribute: sys::CUfunction_attribute) -> Result<u32> {
    let mut value = 0i32;
    // SAFETY: a valid function handle of the loaded module and an out-pointer
    // to an i32.
    let status = unsafe { sys::cuFuncGetAttribute(&mut value, attribute, f) };
    driver(status, "reading a kernel's attributes")?;
    Ok(value.max(0) as u32)
}

/// Checks the function `f` of `entry` against a launch of `block` threads
/// with `shared` bytes of dynamic shared memory after the driver's JIT, and
/// raises its dynamic shared-memory limit if the launch needs more (the
/// caller has checked the device's opt-in maximum).
pub(super) fn check_launch(
    f: sys::CUfunction,
    entry: Entry,
    block: u32,
    shared: u32,
) -> Result<()> {
    use sys::CUfunction_attribute::*;
    let max = function_attribute(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
    if block > max {
        return Err(Error::BlockExceedsKernelLimit {
            kernel: entry.name(),
            block,
            max,
            registers: function_attribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS)?,
        });
    }
    if shared > function_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)? {
        // SAFETY: a valid function handle of the loaded module.
        let status = unsafe {
            sys::cuFuncSetAttribute(
                f,
                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared as i32,
            )
        };
        driver(status, "raising the shared-memory limit")?;
    }
    Ok(())
}

/// The largest dynamic shared memory a block may use on `device` with the
/// opt-in (`MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`).
pub(super) fn shared_opt_in_bytes(device: &cust::device::Device) -> Result<u32> {
    let mut opt_in = 0i32;
    // SAFETY: a valid device handle and an out-pointer to an i32.
    let status = unsafe {
        sys::cuDeviceGetAttribute(
            &mut opt_in,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            device.as_raw(),
        )
    };
    driver(status, "reading the shared-memory limit")?;
    Ok(opt_in.max(0) as u32)
}

/// The device's multiprocessor count (what `Kernel::Auto` chooses by).
pub(super) fn multiprocessors(device: &cust::device::Device) -> Result<u32> {
    let mut count = 0i32;
    // SAFETY: a valid device handle and an out-pointer to an i32.
    let status = unsafe {
        sys::cuDeviceGetAttribute(
            &mut count,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            device.as_raw(),
        )
    };
    driver(status, "reading the multiprocessor count")?;
    Ok(count.max(1) as u32)
}
