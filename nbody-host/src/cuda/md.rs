//! The MD plan's device on CUDA ([`CudaMd`]): one device buffer per role,
//! the plan's launches on the engine's own non-blocking stream, run behind
//! `Simulation` by [`MdPlanEngine`] for `Backend::Cuda` with Lennard-Jones.
//!
//! The orderings of `engine.rs` hold here too: every upload and memset a
//! kernel reads is an asynchronous operation on the engine's stream (stream
//! order puts it before the kernels whatever the stream's flags), the host
//! words of an upload are kept until the stream has been synchronised, and
//! results are read back with synchronous copies only after a
//! synchronisation. A buffer replaced by a larger one is freed after the
//! stream has drained (queued kernels and the copy of the kept words may
//! still read it). Each kernel is checked against its limits after the JIT
//! (`limits.rs`) before its first launch with a larger block or more shared
//! memory; the context is made current on every call and in `Drop`.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;

use cust::context::Context;
use cust::memory::DeviceBuffer;
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::sys;
use gpu_kernels::entry::Launch;
use gpu_kernels::shape::LaunchShape;

use super::engine::CudaEngine;
use super::launch::{Current, enqueue, load_kernels, open};
use super::limits::{check_launch, shared_opt_in_bytes};
use super::status::{driver, during};
use crate::config::Params;
use crate::engine::{BackendKind, Engine};
use crate::error::{Error, Result};
use crate::md::MdState;
use crate::plan::md::{MdBuf, MdDevice, MdPlanEngine, md_params};
use crate::state::Bodies;

impl CudaEngine {
    /// A short-range run (Lennard-Jones) on `device`, through the MD plan;
    /// what the plan lacks is an error before the device is touched.
    pub(crate) fn md(
        device: u32,
        bodies: &Bodies,
        params: &Params,
        start: Option<&MdState>,
    ) -> Result<Box<dyn Engine>> {
        md_params(params)?;
        let (md, kind) = CudaMd::new(device)?;
        Ok(Box::new(MdPlanEngine::new(
            md, kind, bodies, params, start,
        )?))
    }
}

/// The MD plan's device on one CUDA device.
pub(crate) struct CudaMd {
    /// Dropped by `Drop for CudaMd`, with the context current.
    state: ManuallyDrop<MdGpu>,
    /// The device's primary context, retained; released after `state`.
    context: Context,
}

/// Buffers, functions and the stream, all of `context`.
///
/// Fields drop in declaration order: buffers, module, then the stream.
struct MdGpu {
    buffers: BTreeMap<MdBuf, DeviceBuffer<u32>>,
    /// Host words of uploads queued since the last synchronisation.
    pending: Vec<Vec<u32>>,
    /// The function of every entry point, by `Entry as usize`.
    functions: Vec<sys::CUfunction>,
    /// The largest block and dynamic shared memory each entry point has
    /// been checked for (`limits::check_launch`), by `Entry as usize`.
    checked: Vec<(u32, u32)>,
    /// The device's opt-in maximum of dynamic shared memory per block.
    shared_opt_in: u32,
    /// The loaded PTX, kept alive for `functions` (never read).
    _module: Module,
    stream: Stream,
    context: sys::CUcontext,
}

// SAFETY: the driver objects are handles into the device's primary context,
// which any host thread may use once it is made current: every method makes
// it current first (`MdGpu::enter`), `Drop` pushes it before freeing
// anything, and the device is used from one thread at a time (`&mut self`).
unsafe impl Send for CudaMd {}

impl Drop for CudaMd {
    /// Frees the buffers, module and stream with the context current on
    /// this thread (the device is `Send`: it may be dropped on a thread that
    /// never used CUDA), then restores the thread's previous context.
    fn drop(&mut self) {
        let _current = Current::push(self.context.as_raw());
        // Queued work may still use the buffers; errors were reported by the
        // calls that queued it.
        let _ = self.state.stream.synchronize();
        // SAFETY: `state` is dropped exactly once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.state) };
    }
}

impl CudaMd {
    /// Loads the PTX on `device`, with no buffers yet; also the backend
    /// kind it reports.
    fn new(device: u32) -> Result<(CudaMd, BackendKind)> {
        let (dev, context, name) = open(device)?;
        let opt_in = shared_opt_in_bytes(&dev)?;
        let (module, functions) = load_kernels()?;
        let stream =
            Stream::new(StreamFlags::NON_BLOCKING, None).map_err(during("creating a stream"))?;
        let state = MdGpu {
            buffers: BTreeMap::new(),
            pending: Vec::new(),
            checked: vec![(0, 0); functions.len()],
            functions,
            shared_opt_in: opt_in,
            _module: module,
            stream,
            context: context.as_raw(),
        };
        let kind = BackendKind::Cuda { device, name };
        Ok((
            CudaMd {
                state: ManuallyDrop::new(state),
                context,
            },
            kind,
        ))
    }
}

impl MdGpu {
    /// Makes this device's context current on the calling thread.
    fn enter(&self) -> Result<()> {
        // SAFETY: the device's context, alive as long as the device.
        let status = unsafe { sys::cuCtxSetCurrent(self.context) };
        driver(status, "making the context current")
    }

    /// Waits for the stream; the host words of the uploads can go.
    fn sync(&mut self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(during("running the MD kernels"))?;
        self.pending.clear();
        Ok(())
    }

    /// `buf`'s device address and its length in words.
    fn buffer(&self, buf: MdBuf) -> Result<(u64, usize)> {
        self.buffers
            .get(&buf)
            .map(|b| (b.as_device_ptr().as_raw(), b.len()))
            .ok_or_else(|| Error::Cuda {
                during: "an MD launch".into(),
                message: format!("buffer {buf:?} was never allocated"),
            })
    }

    /// `len` words from word `offset` of `buf`, or an error naming the overrun.
    fn range(&self, buf: MdBuf, offset: usize, len: usize) -> Result<u64> {
        let (addr, words) = self.buffer(buf)?;
        if offset.checked_add(len).is_none_or(|end| end > words) {
            return Err(Error::Cuda {
                during: "an MD copy".into(),
                message: format!("{len} words at {offset} past the {words} words of {buf:?}"),
            });
        }
        Ok(addr + 4 * offset as u64)
    }
}

impl MdDevice for CudaMd {
    fn alloc(&mut self, buf: MdBuf, words: usize, keep: bool) -> Result<()> {
        let d = &mut *self.state;
        d.enter()?;
        // SAFETY: `u32` is valid for any bit pattern, and the memset queued
        // below on the stream writes every word before any kernel reads it.
        let fresh = unsafe { DeviceBuffer::<u32>::uninitialized(words.max(1)) }
            .map_err(during("allocating MD device memory"))?;
        let dst = fresh.as_device_ptr().as_raw();
        // SAFETY: `dst` points to `words.max(1)` words of the new buffer,
        // which only this stream uses.
        let status = unsafe { sys::cuMemsetD32Async(dst, 0, words.max(1), d.stream.as_inner()) };
        driver(status, "clearing MD device memory")?;
        if keep && let Some(old) = d.buffers.get(&buf) {
            let bytes = 4 * old.len().min(words);
            // SAFETY: both buffers hold at least `bytes` bytes; the copy is
            // queued after the memset and before any later kernel, and the
            // old buffer lives until the stream has drained (below).
            let status = unsafe {
                sys::cuMemcpyDtoDAsync_v2(
                    dst,
                    old.as_device_ptr().as_raw(),
                    bytes,
                    d.stream.as_inner(),
                )
            };
            driver(status, "copying MD device memory")?;
        }
        if let Some(old) = d.buffers.insert(buf, fresh) {
            // Kernels queued before, and the copy above, may read it.
            d.sync()?;
            drop(old);
        }
        Ok(())
    }

    fn write(&mut self, buf: MdBuf, offset: usize, data: &[u32]) -> Result<()> {
        let d = &mut *self.state;
        d.enter()?;
        let dst = d.range(buf, offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let host = data.to_vec();
        // SAFETY: `dst` holds `data.len()` words of a buffer only this
        // stream uses; `host` is kept in `pending` until the stream is
        // synchronised (`sync`, and `Drop`), so the copy may read it late.
        let status = unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                dst,
                host.as_ptr() as *const c_void,
                4 * host.len(),
                d.stream.as_inner(),
            )
        };
        d.pending.push(host);
        driver(status, "uploading MD data")
    }

    fn fill(&mut self, buf: MdBuf, value: u32) -> Result<()> {
        let d = &mut *self.state;
        d.enter()?;
        let (dst, words) = d.buffer(buf)?;
        // SAFETY: `dst` points to the `words` words of a buffer of this
        // device, which only this stream uses.
        let status = unsafe { sys::cuMemsetD32Async(dst, value, words, d.stream.as_inner()) };
        driver(status, "filling MD device memory")
    }

    fn read(&mut self, buf: MdBuf, offset: usize, len: usize) -> Result<Vec<u32>> {
        let d = &mut *self.state;
        d.enter()?;
        let src = d.range(buf, offset, len)?;
        d.sync()?;
        let mut host = vec![0u32; len];
        if len > 0 {
            // SAFETY: `src` holds `len` words (checked by `range`), `host`
            // has room for them, and the stream has drained: nothing queued
            // writes them any more.
            let status =
                unsafe { sys::cuMemcpyDtoH_v2(host.as_mut_ptr() as *mut c_void, src, 4 * len) };
            driver(status, "reading MD data back")?;
        }
        Ok(host)
    }

    fn launch(&mut self, launch: Launch<MdBuf>, shape: LaunchShape) -> Result<()> {
        if shape.grid == 0 {
            return Ok(());
        }
        let d = &mut *self.state;
        d.enter()?;
        let entry = launch.entry();
        let function = d.functions[entry as usize];
        let (block, shared) = d.checked[entry as usize];
        if shape.block > block || shape.shared_bytes > shared {
            if shape.shared_bytes > d.shared_opt_in {
                return Err(Error::SharedMemoryExceeded {
                    block: shape.block,
                    kernel: entry.name(),
                    needed: shape.shared_bytes,
                    available: d.shared_opt_in,
                });
            }
            let (block, shared) = (block.max(shape.block), shared.max(shape.shared_bytes));
            check_launch(function, entry, block, shared)?;
            d.checked[entry as usize] = (block, shared);
        }
        // SAFETY: the argument list is the entry point's declared parameter
        // list (the kernel table; the plan tests check it against the PTX),
        // every pointer is a live buffer the MD plan sized by the table's
        // length expressions, the shape comes from `gpu_kernels::shape` and
        // was checked against the function's limits above.
        unsafe {
            enqueue(
                function,
                launch.args().as_slice(),
                shape,
                &d.stream,
                |b| Ok(d.buffer(b)?.0),
                "launching an MD kernel",
            )
        }
    }

    fn swap(&mut self, a: MdBuf, b: MdBuf) {
        let buffers = &mut self.state.buffers;
        if let (Some(x), Some(y)) = (buffers.remove(&a), buffers.remove(&b)) {
            buffers.insert(a, y);
            buffers.insert(b, x);
        }
    }
}
