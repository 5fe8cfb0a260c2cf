//! What [`CudaDevice`](super::CudaDevice) does with the driver beyond
//! memory: open the device, load the kernels, enqueue a kernel-table launch
//! on its stream, and hold its context current on the thread that drops it.

use std::ffi::c_void;
use std::ptr;

use cust::context::Context;
use cust::device::Device;
use cust::module::Module;
use cust::sys;
use gpu_kernels::entry::{Arg, Entry, MAX_PARAMS};
use gpu_kernels::shape::LaunchShape;

use super::status::{driver, during, unavailable};
use super::stream::Stream;
use crate::error::{Error, Result};

/// Device `device`, a new context on it (current on this thread) and the
/// device's name; no device, or an index past the last, is
/// `Error::CudaUnavailable`.
pub(super) fn open(device: u32) -> Result<(Device, Context, String)> {
    cust::init(cust::CudaFlags::empty()).map_err(unavailable)?;
    let count = Device::num_devices().map_err(unavailable)?;
    if device >= count {
        return Err(Error::CudaUnavailable(format!(
            "device {device} requested, {count} present"
        )));
    }
    let dev = Device::get_device(device).map_err(unavailable)?;
    let context = Context::new(dev).map_err(unavailable)?;
    let name = dev.name().map_err(during("reading the device name"))?;
    Ok((dev, context, name))
}

/// The committed PTX loaded in the current context, and the function of
/// every entry point, by `Entry as usize` (the module must outlive them).
pub(super) fn load_kernels() -> Result<(Module, Vec<sys::CUfunction>)> {
    let module = Module::from_ptx(crate::PTX, &[]).map_err(during("loading the PTX"))?;
    let functions = Entry::ALL
        .iter()
        .map(|entry| {
            module
                .get_function(entry.name())
                .map(|f| f.to_raw())
                .map_err(during("finding a kernel"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((module, functions))
}

/// Enqueues `function` on `stream` with `args` (a kernel-table launch's
/// arguments, buffers resolved to device addresses by `address`); `what`
/// names the launch in an error.
///
/// # Safety
/// `function` is the entry point whose declared parameter list `args` is
/// (the kernel table; the plan tests check it against the PTX); every
/// address `address` returns is a live device buffer of the size the kernel
/// reads and writes for this launch, used by no other stream; `shape` comes
/// from `gpu_kernels::shape` and is within the function's limits after the
/// JIT (`limits::check_launch`).
pub(super) unsafe fn enqueue<B: Copy>(
    function: sys::CUfunction,
    args: &[Arg<B>],
    shape: LaunchShape,
    stream: &Stream,
    mut address: impl FnMut(B) -> Result<u64>,
    what: &'static str,
) -> Result<()> {
    // Each argument in its own 8-byte slot; the driver copies the
    // parameter's size (4 or 8 bytes) from its address.
    let mut slots = [[0u8; 8]; MAX_PARAMS];
    for (slot, arg) in slots.iter_mut().zip(args) {
        match *arg {
            Arg::Ptr(b) => *slot = address(b)?.to_ne_bytes(),
            Arg::U32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
            Arg::F32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
            Arg::F64(v) => *slot = v.to_ne_bytes(),
        }
    }
    let mut pointers = [ptr::null_mut::<c_void>(); MAX_PARAMS];
    for (p, slot) in pointers.iter_mut().zip(slots.iter_mut()) {
        *p = slot.as_mut_ptr() as *mut c_void;
    }
    // SAFETY: the caller's contract covers the function, the arguments and
    // the shape; `slots` outlives the call (the driver copies the arguments
    // before returning).
    let status = unsafe {
        sys::cuLaunchKernel(
            function,
            shape.grid,
            1,
            1,
            shape.block,
            1,
            1,
            shape.shared_bytes,
            stream.as_inner(),
            pointers.as_mut_ptr(),
            ptr::null_mut(),
        )
    };
    driver(status, what)
}

/// `context` made current on this thread for the guard's lifetime, the
/// thread's previous context restored after: what a `Send` CUDA object's
/// `Drop` needs, since on a thread that never used CUDA `cuMemFree` would
/// fail (no current context) and leak.
pub(super) struct Current {
    pushed: bool,
}

impl Current {
    /// Pushes `context` (a live context handle) on this thread.
    pub(super) fn push(context: sys::CUcontext) -> Current {
        // SAFETY: the caller's context is live for the guard's lifetime (it
        // is released only after the object that holds it is dropped).
        let pushed = unsafe { sys::cuCtxPushCurrent_v2(context) } == sys::CUresult::CUDA_SUCCESS;
        Current { pushed }
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        if self.pushed {
            let mut popped = ptr::null_mut();
            // SAFETY: pops what `push` pushed into a local out-pointer.
            unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
        }
    }
}
