//! [`CudaBlockForces`]: the block-pair primitive on one CUDA device: the
//! launches of `plan/block_pair.rs` on a stream of its own, with device
//! buffers kept between calls (reallocated only when a block's length
//! changes). One object per device, so several GPUs of one machine can each
//! take blocks.
//!
//! Like the engine, it cannot run here (no GPU): it is type-checked by
//! `scripts/cuda-check.sh`, and what it launches is what the emulator runs.

use std::ffi::c_void;
use std::ptr;

use cust::context::{Context, CurrentContext};
use cust::device::Device;
use cust::error::CudaError;
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::sys;
use gpu_kernels::Vec4;
use gpu_kernels::entry::{Arg, Entry, MAX_PARAMS};

use crate::block_pair::{BlockForces, check_block, check_len};
use crate::config::Params;
use crate::engine::BackendKind;
use crate::error::{Error, Result};
use crate::plan::block_pair::{PairBuf, PairLaunch, PairPlan};

fn during(what: &'static str) -> impl Fn(CudaError) -> Error {
    move |e| Error::Cuda {
        during: what.to_owned(),
        message: e.to_string(),
    }
}

fn flatten(v: &[Vec4]) -> Vec<f32> {
    v.iter().flat_map(|p| p.to_array()).collect()
}

/// The block-pair primitive on one CUDA device.
///
/// Fields drop in declaration order: buffers, module and stream go while
/// the context (last) is alive.
pub(crate) struct CudaBlockForces {
    /// `PosI`, `PosJ`, `AccI`, `ReactJ` as `f32` words.
    buffers: [DeviceBuffer<f32>; 4],
    partials: DeviceBuffer<f64>,
    functions: Vec<sys::CUfunction>,
    _module: Module,
    stream: Stream,
    plan: PairPlan,
    ordinal: u32,
    name: String,
    context: Context,
}

// SAFETY: as for the CUDA engine: the handles belong to this object's
// context, made current by every method before use (`enter`), and the
// object is used from one thread at a time (`&mut self`).
unsafe impl Send for CudaBlockForces {}

impl CudaBlockForces {
    /// Loads the PTX on `device`.
    pub(crate) fn new(device: u32, params: &Params, max_mass: f32) -> Result<CudaBlockForces> {
        let plan = PairPlan::new(params, max_mass)?;
        let unavailable = |e: CudaError| Error::CudaUnavailable(e.to_string());
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
        let empty = || DeviceBuffer::from_slice(&[0f32]).map_err(during("allocating"));
        Ok(CudaBlockForces {
            buffers: [empty()?, empty()?, empty()?, empty()?],
            partials: DeviceBuffer::from_slice(&[0f64]).map_err(during("allocating"))?,
            functions,
            _module: module,
            stream: Stream::new(StreamFlags::NON_BLOCKING, None)
                .map_err(during("creating a stream"))?,
            plan,
            ordinal: device,
            name,
            context,
        })
    }

    fn enter(&self) -> Result<()> {
        CurrentContext::set_current(&self.context).map_err(during("making the context current"))
    }

    /// Copies `data` (not empty: the plan launches nothing for an empty
    /// block) into buffer `k`, reallocating it if its length differs.
    fn upload(&mut self, k: usize, data: &[Vec4]) -> Result<()> {
        let words = flatten(data);
        if self.buffers[k].len() != words.len() {
            self.buffers[k] = DeviceBuffer::from_slice(&words).map_err(during("allocating"))?;
        } else {
            self.buffers[k]
                .copy_from(&words[..])
                .map_err(during("uploading a block"))?;
        }
        Ok(())
    }

    /// Copies buffer `k` back into `out`.
    fn download(&self, k: usize, out: &mut [Vec4]) -> Result<()> {
        let mut words = vec![0f32; 4 * out.len()];
        self.buffers[k]
            .copy_to(&mut words[..])
            .map_err(during("copying a block back"))?;
        for (o, w) in out.iter_mut().zip(words.chunks_exact(4)) {
            *o = Vec4::new(w[0], w[1], w[2], w[3]);
        }
        Ok(())
    }

    fn device_ptr(&self, role: PairBuf) -> u64 {
        match role {
            PairBuf::PosI => self.buffers[0].as_device_ptr().as_raw(),
            PairBuf::PosJ => self.buffers[1].as_device_ptr().as_raw(),
            PairBuf::AccI => self.buffers[2].as_device_ptr().as_raw(),
            PairBuf::ReactJ => self.buffers[3].as_device_ptr().as_raw(),
            PairBuf::Partials => self.partials.as_device_ptr().as_raw(),
        }
    }

    /// Launches `op` on the stream and waits for it.
    fn run(&self, (launch, shape): PairLaunch) -> Result<()> {
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
        // SAFETY: the argument list is the entry point's declared parameter
        // list (the kernel table), every pointer is a live buffer sized for
        // the block lengths of the launch (`upload`, `partial_sums`), the
        // shape comes from `gpu_kernels::shape` through the plan, and `slots`
        // outlives the call (the driver copies the arguments).
        let status = unsafe {
            sys::cuLaunchKernel(
                self.functions[launch.entry() as usize],
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
        if status != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Cuda {
                during: "launching a block-pair kernel".to_owned(),
                message: format!("{status:?}"),
            });
        }
        self.stream
            .synchronize()
            .map_err(during("running the block-pair kernels"))
    }

    /// Runs a potential launch and returns the sum of its `count` partial sums.
    fn partial_sums(&mut self, op: PairLaunch, count: usize) -> Result<Vec<f64>> {
        if self.partials.len() != count.max(1) {
            self.partials = DeviceBuffer::zeroed(count.max(1)).map_err(during("allocating"))?;
        }
        self.run(op)?;
        let mut host = vec![0f64; self.partials.len()];
        self.partials
            .copy_to(&mut host[..])
            .map_err(during("copying partial sums back"))?;
        host.truncate(count);
        Ok(host)
    }
}

impl BlockForces for CudaBlockForces {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda {
            device: self.ordinal,
            name: self.name.clone(),
        }
    }

    fn pull(&mut self, i: &[Vec4], j: &[Vec4], acc_i: &mut [Vec4]) -> Result<()> {
        check_block("I", i, acc_i)?;
        check_len(j)?;
        let Some(op) = self.plan.pull(i.len() as u32, j.len() as u32) else {
            return Ok(());
        };
        self.enter()?;
        self.upload(0, i)?;
        self.upload(1, j)?;
        self.upload(2, acc_i)?;
        self.run(op)?;
        self.download(2, acc_i)
    }

    fn pull_pair(
        &mut self,
        i: &[Vec4],
        j: &[Vec4],
        acc_i: &mut [Vec4],
        react_j: &mut [Vec4],
    ) -> Result<()> {
        check_block("I", i, acc_i)?;
        check_block("J", j, react_j)?;
        let Some(op) = self.plan.pull_pair(i.len() as u32, j.len() as u32)? else {
            return Ok(());
        };
        self.enter()?;
        self.upload(0, i)?;
        self.upload(1, j)?;
        self.upload(2, acc_i)?;
        self.upload(3, react_j)?;
        self.run(op)?;
        self.download(2, acc_i)?;
        self.download(3, react_j)
    }

    fn pull_within(&mut self, i: &[Vec4], acc_i: &mut [Vec4]) -> Result<()> {
        check_block("I", i, acc_i)?;
        let Some(op) = self.plan.pull_within(i.len() as u32)? else {
            return Ok(());
        };
        self.enter()?;
        self.upload(0, i)?;
        self.upload(2, acc_i)?;
        self.run(op)?;
        self.download(2, acc_i)
    }

    fn potential_within(&mut self, i: &[Vec4]) -> Result<f64> {
        check_len(i)?;
        let n = i.len() as u32;
        let Some(op) = self.plan.potential_within(n) else {
            return Ok(0.0);
        };
        self.enter()?;
        self.upload(0, i)?;
        self.upload(2, &vec![Vec4::ZERO; i.len()])?;
        let partials = self.partial_sums(op, self.plan.within_partials(n))?;
        Ok(PairPlan::finish_within(&partials))
    }

    fn potential_between(&mut self, i: &[Vec4], j: &[Vec4]) -> Result<f64> {
        check_len(i)?;
        check_len(j)?;
        let (ni, nj) = (i.len() as u32, j.len() as u32);
        let Some(op) = self.plan.potential_between(ni, nj) else {
            return Ok(0.0);
        };
        self.enter()?;
        self.upload(0, i)?;
        self.upload(1, j)?;
        let partials = self.partial_sums(op, self.plan.between_partials(ni))?;
        Ok(partials.iter().sum())
    }
}
