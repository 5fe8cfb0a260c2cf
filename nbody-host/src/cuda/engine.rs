//! The CUDA engine: the embedded PTX loaded with cust, device buffers, and the
//! launch plans of `plan.rs` executed on one stream.
//!
//! It cannot run on the machines this crate is developed on (no GPU); it is
//! type-checked in CI, and what it launches (entry points, grids, shared
//! bytes, arguments) is the plan the emulator runs and the tests check
//! against the PTX parameter lists.

use std::ffi::c_void;

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
use gpu_kernels::integrate::ALL_FINITE;

use super::budget::{device_bytes, needs_shared_opt_in};
use crate::backend::{Divergence, Engine};
use crate::config::{BackendKind, Params};
use crate::error::{Error, Result};
use crate::plan::{Arg, Buf, Op, Plan};
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
///
/// Fields drop in declaration order: buffers, module, events and stream are
/// released while the context (last) is still alive.
pub struct CudaEngine {
    /// Positions and masses, double-buffered; `pos[current]` is `PosIn`.
    pos: [DeviceBuffer<f32>; 2],
    current: usize,
    vel: DeviceBuffer<f32>,
    acc: DeviceBuffer<f32>,
    partials: DeviceBuffer<f64>,
    flag: DeviceBuffer<u32>,
    module: Module,
    start: Event,
    stop: Event,
    stream: Stream,
    plan: Plan,
    device: u32,
    name: String,
    seconds: f64,
    context: Context,
}

// SAFETY: the driver objects are handles into the device's primary context,
// which any host thread may use once it is made current; every method that
// touches the device first makes it current (`CudaEngine::enter`), and the
// engine is used from one thread at a time (`&mut self`).
unsafe impl Send for CudaEngine {}

impl CudaEngine {
    /// Loads the PTX on `device` and uploads `bodies`. Checks the block's
    /// shared memory and the device memory before allocating anything.
    pub fn new(device: u32, bodies: &Bodies, params: &Params) -> Result<CudaEngine> {
        bodies.validate()?;
        let plan = Plan::new(bodies.len(), *params)?;
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
        driver(
            unsafe {
                sys::cuDeviceGetAttribute(
                    &mut opt_in,
                    sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                    dev.as_raw(),
                )
            },
            "reading the shared-memory limit",
        )?;
        if needed_shared > opt_in as u32 {
            return Err(Error::SharedMemoryExceeded {
                block: params.kernel.block(),
                kernel: params.kernel.name(),
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
        if needs_shared_opt_in(needed_shared) {
            for entry in gpu_kernels::entry::ALL {
                let f = module
                    .get_function(entry.name)
                    .map_err(during("finding a kernel"))?;
                // SAFETY: a valid function handle of the loaded module.
                driver(
                    unsafe {
                        sys::cuFuncSetAttribute(
                            f.to_raw(),
                            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            needed_shared as i32,
                        )
                    },
                    "raising the shared-memory limit",
                )?;
            }
        }

        let (pos, vel) = bodies.to_device_layout();
        let upload = during("uploading the bodies");
        let mut engine = CudaEngine {
            pos: [
                DeviceBuffer::from_slice(&flatten(&pos)).map_err(&upload)?,
                DeviceBuffer::zeroed(4 * pos.len()).map_err(&upload)?,
            ],
            current: 0,
            vel: DeviceBuffer::from_slice(&flatten(&vel)).map_err(&upload)?,
            acc: DeviceBuffer::zeroed(4 * pos.len()).map_err(&upload)?,
            partials: DeviceBuffer::zeroed(plan.energy_partials_len()).map_err(&upload)?,
            flag: DeviceBuffer::from_slice(&[ALL_FINITE, 0]).map_err(&upload)?,
            module,
            start: Event::new(EventFlags::DEFAULT).map_err(during("creating events"))?,
            stop: Event::new(EventFlags::DEFAULT).map_err(during("creating events"))?,
            stream: Stream::new(StreamFlags::NON_BLOCKING, None)
                .map_err(during("creating a stream"))?,
            plan,
            device,
            name,
            seconds: 0.0,
            context,
        };
        let prepare = engine.plan.prepare();
        engine.run(&prepare)?;
        Ok(engine)
    }

    /// Makes this engine's context current on the calling thread.
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

    /// Enqueues `ops` on the stream (asynchronously).
    fn run(&mut self, ops: &[Op]) -> Result<()> {
        for op in ops {
            match op {
                Op::Launch(launch) => {
                    if launch.shape.grid == 0 {
                        continue;
                    }
                    // Each argument in its own 8-byte slot; the driver copies
                    // the parameter's size (4 or 8 bytes) from its address.
                    let mut slots: Vec<[u8; 8]> = launch
                        .args
                        .iter()
                        .map(|arg| {
                            let mut slot = [0u8; 8];
                            match *arg {
                                Arg::Buf(b) => slot = self.device_ptr(b).to_ne_bytes(),
                                Arg::U32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                                Arg::F32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                            }
                            slot
                        })
                        .collect();
                    let args: Vec<*mut c_void> = slots
                        .iter_mut()
                        .map(|s| s.as_mut_ptr() as *mut c_void)
                        .collect();
                    let function = self
                        .module
                        .get_function(launch.entry.name)
                        .map_err(during("finding a kernel"))?;
                    // SAFETY: the argument list matches the entry point's PTX
                    // parameters (checked by the plan tests against the PTX),
                    // every pointer is a live buffer of the size the kernel
                    // expects for `n`, and the shape comes from `launch.rs`.
                    unsafe {
                        self.stream
                            .launch(
                                &function,
                                launch.shape.grid,
                                launch.shape.block,
                                launch.shape.shared_bytes,
                                &args,
                            )
                            .map_err(during("launching a kernel"))?;
                    }
                }
                Op::ZeroAcc => {
                    // SAFETY: the buffer lives as long as the engine and is
                    // only used by this stream.
                    unsafe { self.acc.set_zero_async(&self.stream) }
                        .map_err(during("clearing accelerations"))?;
                }
                Op::SwapPositions => self.current = 1 - self.current,
            }
        }
        Ok(())
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

impl Engine for CudaEngine {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda {
            device: self.device,
            name: self.name.clone(),
        }
    }

    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        self.enter()?;
        let mut done = 0u64;
        while done < steps {
            // The check kernel numbers steps with a u32 within one batch.
            let batch = (steps - done).min(u32::MAX as u64 - 1);
            self.flag
                .copy_from(&[ALL_FINITE, 0][..])
                .map_err(during("resetting the divergence flag"))?;
            self.start
                .record(&self.stream)
                .map_err(during("recording an event"))?;
            let step_ops = self.plan.step();
            for s in 1..=batch as u32 {
                self.run(&step_ops)?;
                let check = self.plan.check(s);
                self.run(&[Op::Launch(check)])?;
            }
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
            let mut flag = [0u32; 2];
            self.flag
                .copy_to(&mut flag[..])
                .map_err(during("reading the divergence flag"))?;
            if flag[0] != ALL_FINITE {
                return Ok(Some(Divergence {
                    after_step: done + flag[0] as u64,
                    body: flag[1] as usize,
                    steps_run: done + batch,
                }));
            }
            done += batch;
        }
        Ok(None)
    }

    fn read_state(&mut self) -> Result<Bodies> {
        self.enter()?;
        self.sync()?;
        let pos = self.download_f32(&self.pos[self.current])?;
        let vel = self.download_f32(&self.vel)?;
        Ok(Bodies::from_device_layout(&pos, &vel))
    }

    fn energy(&mut self) -> Result<Energy> {
        self.enter()?;
        let launch = self.plan.energy();
        self.run(&[Op::Launch(launch)])?;
        self.sync()?;
        let mut partials = vec![0f64; self.partials.len()];
        self.partials
            .copy_to(&mut partials[..])
            .map_err(during("copying energy partial sums back"))?;
        Ok(self.plan.finish_energy(&partials))
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        self.enter()?;
        let ops = self.plan.accelerations();
        self.run(&ops)?;
        self.sync()?;
        let acc = self.download_f32(&self.acc)?;
        Ok(acc.iter().map(|a| Vec3::new(a.x, a.y, a.z)).collect())
    }

    fn device_seconds(&self) -> Option<f64> {
        Some(self.seconds)
    }
}
