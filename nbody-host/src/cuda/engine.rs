//! The CUDA engine: the embedded PTX loaded with cust, device buffers, and the
//! launch plans of `plan/` executed on one stream by the shared step loop.
//!
//! It cannot run on the machines this crate is developed on (no GPU); it is
//! type-checked in CI, and what it launches (entry points, grids, shared
//! bytes, arguments) is the plan the emulator runs and the tests check
//! against the PTX parameter lists.

use std::ffi::c_void;
use std::ptr;

use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::error::CudaError;
use cust::event::{Event, EventFlags};
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::sys;
use glam::Vec3;
use gpu_kernels::Vec4;
use gpu_kernels::entry::{Arg, Entry, MAX_PARAMS};
use gpu_kernels::integrate::ALL_FINITE;

use super::budget::{device_bytes, needs_shared_opt_in};
use crate::config::Params;
use crate::engine::{BackendKind, Divergence, Engine};
use crate::error::{Error, Result};
use crate::plan::run::{PlanDevice, execute_all, run_steps};
use crate::plan::{Buf, Op, Plan};
use crate::state::{Bodies, Energy};

/// Maps a driver error to [`Error::Cuda`], naming what was being done.
fn during(what: &'static str) -> impl Fn(CudaError) -> Error {
    move |e| Error::Cuda {
        during: what.to_owned(),
        message: e.to_string(),
    }
}

/// A raw driver call's status as an [`Error::Cuda`].
fn driver(status: sys::CUresult, what: &'static str) -> Result<()> {
    if status == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Cuda {
            during: what.to_owned(),
            message: format!("{status:?}"),
        })
    }
}

fn unavailable(e: CudaError) -> Error {
    Error::CudaUnavailable(e.to_string())
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
    device: GpuState,
    plan: Plan,
    /// Device ordinal and name.
    ordinal: u32,
    name: String,
}

/// The device side: buffers, the module's functions, the stream and the
/// timing events.
///
/// Fields drop in declaration order: buffers, module, events and stream are
/// released while the context (last) is still alive.
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
    context: Context,
}

// SAFETY: the driver objects are handles into the device's primary context,
// which any host thread may use once it is made current; every method that
// touches the device first makes it current (`GpuState::enter`), and the
// engine is used from one thread at a time (`&mut self`).
unsafe impl Send for CudaEngine {}

impl CudaEngine {
    /// Loads the PTX on `device` and uploads `bodies`. Checks the block's
    /// shared memory and the device memory before allocating anything.
    pub(crate) fn new(device: u32, bodies: &Bodies, params: &Params) -> Result<CudaEngine> {
        bodies.validate()?;
        let plan = Plan::for_bodies(bodies, *params)?;
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

        let needed_shared = plan.max_shared_bytes();
        let mut opt_in = 0i32;
        // SAFETY: a valid device handle and an out-pointer to an i32.
        let status = unsafe {
            sys::cuDeviceGetAttribute(
                &mut opt_in,
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                dev.as_raw(),
            )
        };
        driver(status, "reading the shared-memory limit")?;
        if needed_shared > opt_in as u32 {
            return Err(Error::SharedMemoryExceeded {
                block: params.kernel().block(),
                kernel: params.kernel().name(),
                needed: needed_shared,
                available: opt_in as u32,
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
        if needs_shared_opt_in(needed_shared) {
            for &f in &functions {
                // SAFETY: a valid function handle of the loaded module.
                let status = unsafe {
                    sys::cuFuncSetAttribute(
                        f,
                        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        needed_shared as i32,
                    )
                };
                driver(status, "raising the shared-memory limit")?;
            }
        }

        let (pos, vel) = bodies.to_device_layout();
        let upload = during("uploading the bodies");
        let mut state = GpuState {
            pos: [
                DeviceBuffer::from_slice(&flatten(&pos)).map_err(&upload)?,
                DeviceBuffer::zeroed(4 * pos.len()).map_err(&upload)?,
            ],
            current: 0,
            vel: DeviceBuffer::from_slice(&flatten(&vel)).map_err(&upload)?,
            acc: DeviceBuffer::zeroed(4 * pos.len()).map_err(&upload)?,
            partials: DeviceBuffer::zeroed(plan.energy_partials_len()).map_err(&upload)?,
            flag: DeviceBuffer::from_slice(&[ALL_FINITE, 0]).map_err(&upload)?,
            functions,
            _module: module,
            start: Event::new(EventFlags::DEFAULT).map_err(during("creating events"))?,
            stop: Event::new(EventFlags::DEFAULT).map_err(during("creating events"))?,
            stream: Stream::new(StreamFlags::NON_BLOCKING, None)
                .map_err(during("creating a stream"))?,
            seconds: 0.0,
            context,
        };
        execute_all(&mut state, plan.prepare())?;
        Ok(CudaEngine {
            device: state,
            plan,
            ordinal: device,
            name,
        })
    }
}

impl GpuState {
    /// Makes this device's context current on the calling thread.
    fn enter(&self) -> Result<()> {
        CurrentContext::set_current(&self.context).map_err(during("making the context current"))
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
                // Each argument in its own 8-byte slot; the driver copies the
                // parameter's size (4 or 8 bytes) from its address.
                let args = launch.args();
                let mut slots = [[0u8; 8]; MAX_PARAMS];
                for (slot, arg) in slots.iter_mut().zip(args.as_slice()) {
                    match *arg {
                        Arg::Ptr(b) => *slot = self.device_ptr(b).to_ne_bytes(),
                        Arg::U32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                        Arg::F32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                    }
                }
                let mut pointers = [ptr::null_mut::<c_void>(); MAX_PARAMS];
                for (p, slot) in pointers.iter_mut().zip(slots.iter_mut()) {
                    *p = slot.as_mut_ptr() as *mut c_void;
                }
                let function = self.functions[launch.entry() as usize];
                // SAFETY: the argument list is the entry point's declared
                // parameter list (the kernel table; the plan tests check it
                // against the PTX), every pointer is a live buffer of the size
                // the kernel expects for `n`, the shape comes from
                // `gpu_kernels::shape`, and `slots` outlives the call (the
                // driver copies the arguments before returning).
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
                        self.stream.as_inner(),
                        pointers.as_mut_ptr(),
                        ptr::null_mut(),
                    )
                };
                driver(status, "launching a kernel")
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

    fn reset_flag(&mut self) -> Result<()> {
        self.flag
            .copy_from(&[ALL_FINITE, 0][..])
            .map_err(during("resetting the divergence flag"))
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
        run_steps(&mut self.device, &self.plan, steps)
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
        execute_all(&mut self.device, self.plan.accelerations())?;
        let d = &self.device;
        d.sync()?;
        let acc = d.download_f32(&d.acc)?;
        Ok(acc.iter().map(|a| Vec3::new(a.x, a.y, a.z)).collect())
    }

    fn device_seconds(&self) -> Option<f64> {
        Some(self.device.seconds)
    }
}
