//! The CUDA engine: the embedded PTX loaded with cust, device buffers, and the
//! launch plans of `plan/` executed on one stream by the shared step loop.
//!
//! No machine this crate is developed on has a GPU: CI runs it, through
//! cust, on the software CUDA device (`softcuda`, `scripts/ci-softcuda.sh`),
//! whose driver takes every liberty CUDA allows (late legacy-stream copies,
//! non-blocking streams, register-limited kernels); what it launches
//! (entry points, grids, shared bytes, arguments) is the plan the emulator
//! runs and the tests check against the PTX parameter lists.
//!
//! Ordering: every memory operation that a kernel reads (uploads, memsets,
//! the divergence flag's reset) is an asynchronous operation on the engine's
//! own stream, so stream order puts it before the kernels whatever the
//! stream's flags. The synchronous cust calls run on the legacy stream,
//! which a `NON_BLOCKING` stream does not wait for (and pageable copies and
//! memsets may complete after the call returns): they are used only to read
//! results back after the stream has been synchronised.

use std::mem::ManuallyDrop;

use cust::context::Context;
use cust::error::CudaError;
use cust::event::{Event, EventFlags};
use cust::memory::{AsyncCopyDestination, CopyDestination, DeviceBuffer};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::sys;
use glam::Vec3;
use gpu_kernels::Vec4;
use gpu_kernels::integrate::ALL_FINITE;

use super::budget::device_bytes;
use super::launch::{Current, enqueue, load_kernels, open};
use super::limits::{configure_functions, shared_opt_in_bytes};
use crate::config::Params;
use crate::engine::{BackendKind, Divergence, Engine};
use crate::error::{Error, Result};
use crate::plan::run::{PlanDevice, execute_all, run_steps};
use crate::plan::{Buf, Op, Plan};
use crate::state::{Bodies, Energy};

/// Maps a driver error to [`Error::Cuda`], naming what was being done.
pub(super) fn during(what: &'static str) -> impl Fn(CudaError) -> Error {
    move |e| Error::Cuda {
        during: what.to_owned(),
        message: e.to_string(),
    }
}

/// A raw driver call's status as an [`Error::Cuda`].
pub(super) fn driver(status: sys::CUresult, what: &'static str) -> Result<()> {
    if status == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Cuda {
            during: what.to_owned(),
            message: format!("{status:?}"),
        })
    }
}

fn flatten(v: &[Vec4]) -> Vec<f32> {
    v.iter().flat_map(|p| [p.x, p.y, p.z, p.w]).collect()
}

fn unflatten(v: &[f32]) -> Vec<Vec4> {
    v.chunks_exact(4)
        .map(|c| Vec4::new(c[0], c[1], c[2], c[3]))
        .collect()
}

/// Runs the kernels on one CUDA device.
pub(crate) struct CudaEngine {
    /// Dropped by [`CudaEngine`]'s `Drop`, with the context current.
    device: ManuallyDrop<GpuState>,
    plan: Plan,
    /// Device ordinal and name.
    ordinal: u32,
    name: String,
    /// The device's primary context, retained by this engine and released
    /// after `device` (fields drop after `Drop::drop`).
    context: Context,
}

/// The device side: buffers, the module's functions, the stream and the
/// timing events. Every one of them belongs to `context` and must be freed
/// with it current (see `Drop for CudaEngine`).
///
/// Fields drop in declaration order: buffers, module, events, then the
/// stream the buffers' operations were queued on.
struct GpuState {
    /// Positions and masses, double-buffered; `pos[current]` is `PosIn`.
    pos: [DeviceBuffer<f32>; 2],
    current: usize,
    vel: DeviceBuffer<f32>,
    acc: DeviceBuffer<f32>,
    partials: DeviceBuffer<f64>,
    flag: DeviceBuffer<u32>,
    /// The function of every entry point, by `Entry as usize`, resolved once.
    functions: Vec<sys::CUfunction>,
    /// The loaded PTX, kept alive for `functions` (never read).
    _module: Module,
    start: Event,
    stop: Event,
    stream: Stream,
    seconds: f64,
    /// The context everything above belongs to (owned by the engine).
    context: sys::CUcontext,
}

// SAFETY: the driver objects are handles into the device's primary context,
// which any host thread may use once it is made current: every method that
// touches the device first makes it current (`GpuState::enter`), `Drop`
// pushes it before freeing anything, and the engine is used from one thread
// at a time (`&mut self`).
unsafe impl Send for CudaEngine {}

impl Drop for CudaEngine {
    /// Frees the buffers, module, events and stream with the engine's
    /// context current on *this* thread, then restores the thread's previous
    /// context. The engine is `Send`: dropped on a thread that never used
    /// CUDA, `cuMemFree` would fail there (no current context) and leak.
    fn drop(&mut self) {
        let _current = Current::push(self.context.as_raw());
        // SAFETY: `device` is dropped exactly once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.device) };
    }
}

impl CudaEngine {
    /// Loads the PTX on `device` and uploads `bodies`. Checks the block's
    /// shared memory and the device memory before allocating anything.
    pub(crate) fn new(device: u32, bodies: &Bodies, params: &Params) -> Result<CudaEngine> {
        bodies.validate()?;
        let plan = Plan::for_bodies(bodies, params.clone())?;
        let (dev, context, name) = open(device)?;

        let needed_shared = plan.max_shared_bytes();
        let opt_in = shared_opt_in_bytes(&dev)?;
        if needed_shared > opt_in {
            return Err(Error::SharedMemoryExceeded {
                block: params.kernel().block(),
                kernel: params.kernel().name(),
                needed: needed_shared,
                available: opt_in,
            });
        }
        let needed = device_bytes(&plan);
        let (free, _total) =
            cust::memory::mem_get_info().map_err(during("querying free device memory"))?;
        if needed > free as u64 {
            return Err(Error::DeviceMemoryExceeded {
                n: bodies.len(),
                needed,
                available: free as u64,
            });
        }

        let (module, functions) = load_kernels()?;
        configure_functions(&functions, &plan)?;

        // Everything below is queued on `stream`, in order (see the module
        // documentation); the host vectors must outlive the copies, which
        // may read them when the stream runs: the stream is synchronised
        // before they are dropped.
        let stream =
            Stream::new(StreamFlags::NON_BLOCKING, None).map_err(during("creating a stream"))?;
        let (pos, vel) = bodies.to_device_layout();
        let (pos, vel) = (flatten(&pos), flatten(&vel));
        let upload = during("uploading the bodies");
        let mut state = GpuState {
            pos: [uninitialized(pos.len())?, uninitialized(pos.len())?],
            current: 0,
            vel: uninitialized(vel.len())?,
            acc: uninitialized(pos.len())?,
            partials: uninitialized(plan.energy_partials_len())?,
            flag: uninitialized(2)?,
            functions,
            _module: module,
            start: Event::new(EventFlags::DEFAULT).map_err(during("creating events"))?,
            stop: Event::new(EventFlags::DEFAULT).map_err(during("creating events"))?,
            stream,
            seconds: 0.0,
            context: context.as_raw(),
        };
        // SAFETY: the five operations write buffers of the engine, of the
        // host slices' lengths, that only this stream uses; the host vectors
        // live until the synchronisation below.
        unsafe {
            let s = &state.stream;
            state.pos[0].async_copy_from(&pos[..], s).map_err(&upload)?;
            state.pos[1].set_zero_async(s).map_err(&upload)?;
            state.vel.async_copy_from(&vel[..], s).map_err(&upload)?;
            state.acc.set_zero_async(s).map_err(&upload)?;
            state.partials.set_zero_async(s).map_err(&upload)?;
        }
        state.reset_flag()?;
        execute_all(&mut state, plan.prepare())?;
        state.sync()?;
        drop((pos, vel));
        Ok(CudaEngine {
            device: ManuallyDrop::new(state),
            plan,
            ordinal: device,
            name,
            context,
        })
    }
}

/// A device buffer of `len` elements, written by the engine's stream before
/// any kernel reads it.
fn uninitialized<T: cust::memory::DeviceCopy>(len: usize) -> Result<DeviceBuffer<T>> {
    // SAFETY: `f32`, `f64` and `u32` are valid for any bit pattern; every
    // buffer is filled by an operation on the engine's stream (`new`) or
    // written by a kernel before it is read.
    unsafe { DeviceBuffer::uninitialized(len) }.map_err(during("allocating device memory"))
}

impl GpuState {
    /// Makes this device's context current on the calling thread.
    fn enter(&self) -> Result<()> {
        // SAFETY: the engine's context, alive as long as the engine.
        let status = unsafe { sys::cuCtxSetCurrent(self.context) };
        driver(status, "making the context current")
    }

    /// Queues `words` 32-bit words of `value` at `dst` on the engine's stream.
    fn memset32(&self, dst: u64, value: u32, words: usize) -> Result<()> {
        // SAFETY: `dst` points to `words` words of a buffer of the engine,
        // which only this stream writes.
        let status = unsafe { sys::cuMemsetD32Async(dst, value, words, self.stream.as_inner()) };
        driver(status, "resetting the divergence flag")
    }

    fn device_ptr(&self, buf: Buf) -> u64 {
        match buf {
            Buf::PosIn => self.pos[self.current].as_device_ptr().as_raw(),
            Buf::PosOut => self.pos[1 - self.current].as_device_ptr().as_raw(),
            Buf::Vel => self.vel.as_device_ptr().as_raw(),
            Buf::Acc => self.acc.as_device_ptr().as_raw(),
            Buf::Partials => self.partials.as_device_ptr().as_raw(),
            Buf::Flag => self.flag.as_device_ptr().as_raw(),
        }
    }

    fn sync(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(during("running the kernels"))
    }

    fn download_f32(&self, buf: &DeviceBuffer<f32>) -> Result<Vec<Vec4>> {
        let mut host = vec![0f32; buf.len()];
        buf.copy_to(&mut host[..])
            .map_err(during("copying state back"))?;
        Ok(unflatten(&host))
    }
}

impl PlanDevice for GpuState {
    /// Enqueues one op on the stream (asynchronously).
    fn execute(&mut self, op: &Op) -> Result<()> {
        match *op {
            Op::Launch(launch, shape) => {
                if shape.grid == 0 {
                    return Ok(());
                }
                // SAFETY: the arguments are the entry point's declared
                // parameter list (the kernel table; the plan tests check it
                // against the PTX), every address is a live buffer of the
                // engine of the size the kernel expects for `n`, used only
                // by this stream, and the shape comes from
                // `gpu_kernels::shape`, checked against the function's
                // limits when the engine was made (`configure_functions`).
                unsafe {
                    enqueue(
                        self.functions[launch.entry() as usize],
                        launch.args().as_slice(),
                        shape,
                        &self.stream,
                        |b| Ok(self.device_ptr(b)),
                        "launching a kernel",
                    )
                }
            }
            Op::ZeroAcc => {
                // SAFETY: the buffer lives as long as the engine and is
                // only used by this stream.
                unsafe { self.acc.set_zero_async(&self.stream) }
                    .map_err(during("clearing accelerations"))
            }
            Op::SwapPositions => {
                self.current = 1 - self.current;
                Ok(())
            }
        }
    }

    /// Two memsets on the stream (no host buffer to keep alive, unlike an
    /// asynchronous copy of `[ALL_FINITE, 0]`).
    fn reset_flag(&mut self) -> Result<()> {
        let flag = self.flag.as_device_ptr().as_raw();
        self.memset32(flag, ALL_FINITE, 1)?;
        self.memset32(flag + 4, 0, 1)
    }

    fn read_flag(&mut self) -> Result<[u32; 2]> {
        let mut flag = [0u32; 2];
        self.flag
            .copy_to(&mut flag[..])
            .map_err(during("reading the divergence flag"))?;
        Ok(flag)
    }

    /// One flag read per call: the GPU runs the whole batch unattended.
    fn steps_per_flag_read(&self) -> u64 {
        u64::MAX
    }

    fn batch_started(&mut self) -> Result<()> {
        self.start
            .record(&self.stream)
            .map_err(during("recording an event"))
    }

    fn batch_queued(&mut self) -> Result<()> {
        self.stop
            .record(&self.stream)
            .map_err(during("recording an event"))?;
        self.stop
            .synchronize()
            .map_err(during("running the kernels"))?;
        let ms = self
            .stop
            .elapsed_time_f32(&self.start)
            .map_err(during("timing the steps"))?;
        self.seconds += ms as f64 / 1e3;
        Ok(())
    }
}

impl Engine for CudaEngine {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda {
            device: self.ordinal,
            name: self.name.clone(),
        }
    }

    fn method(&self) -> &'static str {
        self.plan.kernel_name()
    }

    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        self.device.enter()?;
        run_steps(&mut *self.device, &self.plan, steps)
    }

    fn read_state(&mut self) -> Result<Bodies> {
        let d = &self.device;
        d.enter()?;
        d.sync()?;
        let pos = d.download_f32(&d.pos[d.current])?;
        let vel = d.download_f32(&d.vel)?;
        Ok(Bodies::from_device_layout(&pos, &vel))
    }

    fn energy(&mut self) -> Result<Energy> {
        self.device.enter()?;
        self.device.execute(self.plan.energy())?;
        let d = &self.device;
        d.sync()?;
        let mut partials = vec![0f64; d.partials.len()];
        d.partials
            .copy_to(&mut partials[..])
            .map_err(during("copying energy partial sums back"))?;
        Ok(self.plan.finish_energy(&partials))
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        self.device.enter()?;
        execute_all(&mut *self.device, self.plan.accelerations())?;
        let d = &self.device;
        d.sync()?;
        let acc = d.download_f32(&d.acc)?;
        Ok(acc.iter().map(|a| Vec3::new(a.x, a.y, a.z)).collect())
    }

    fn device_seconds(&self) -> Option<f64> {
        Some(self.device.seconds)
    }
}
