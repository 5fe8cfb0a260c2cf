//! [`CudaBlockForces`]: the block-pair primitive on one CUDA device: the
//! launches of `plan/block_pair.rs` on a stream of its own, with device
//! buffers kept between calls (reallocated only when a block's length
//! changes). One object per device, so several GPUs of one machine can each
//! take blocks.
//!
//! Run in CI, through cust, on the software CUDA device
//! (`tests/cuda_block_pair.rs`, `scripts/ci-softcuda.sh`), with the engine's
//! fixes for issue 15 (`engine.rs`):
//!
//! - ordering: every upload and memset a kernel reads is an asynchronous
//!   operation on the object's own stream, so stream order puts it before
//!   the kernels whatever the stream's flags; the synchronous cust calls
//!   (legacy stream) only read results back after the stream is synchronised;
//! - limits: the kernels' limits after the JIT are checked, and the dynamic
//!   shared memory opted into, when the object is made, before any launch
//!   (`limits.rs`);
//! - the object is `Send`, and its `Drop` makes its context current before
//!   freeing anything, so it can be dropped on any thread.

use std::mem::ManuallyDrop;

use cust::context::{Context, CurrentContext};
use cust::memory::{AsyncCopyDestination, CopyDestination, DeviceBuffer, DeviceCopy};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use cust::sys;
use gpu_kernels::Vec4;

use super::launch::{Current, enqueue, load_kernels, open};
use super::limits::{configure_launches, shared_opt_in_bytes};
use super::status::during;
use crate::block_pair::{BlockForces, check_block, check_len};
use crate::config::Params;
use crate::engine::BackendKind;
use crate::error::{Error, Result};
use crate::plan::block_pair::{PairBuf, PairLaunch, PairPlan};

fn flatten(v: &[Vec4]) -> Vec<f32> {
    v.iter().flat_map(|p| p.to_array()).collect()
}

/// The `f32` buffer of `role`: `PosI`, `PosJ`, `AccI`, `ReactJ` (the
/// partial sums are `f64`, a buffer of their own).
fn index(role: PairBuf) -> usize {
    match role {
        PairBuf::PosI => 0,
        PairBuf::PosJ => 1,
        PairBuf::AccI => 2,
        PairBuf::ReactJ => 3,
        PairBuf::Partials => unreachable!("the partial sums are f64"),
    }
}

/// The block-pair primitive on one CUDA device.
pub(crate) struct CudaBlockForces {
    /// Dropped by [`CudaBlockForces`]'s `Drop`, with the context current.
    device: ManuallyDrop<PairState>,
    plan: PairPlan,
    ordinal: u32,
    name: String,
    /// The device's primary context, retained by this object and released
    /// after `device` (fields drop after `Drop::drop`).
    context: Context,
}

/// The device side: buffers, the module's functions and the stream, all of
/// `CudaBlockForces::context`.
///
/// Fields drop in declaration order: buffers, module, then the stream the
/// buffers' operations were queued on.
struct PairState {
    /// `PosI`, `PosJ`, `AccI`, `ReactJ` as `f32` words.
    buffers: [DeviceBuffer<f32>; 4],
    partials: DeviceBuffer<f64>,
    /// The function of every entry point, by `Entry as usize`.
    functions: Vec<sys::CUfunction>,
    /// The loaded PTX, kept alive for `functions` (never read).
    _module: Module,
    stream: Stream,
}

// SAFETY: the driver objects are handles into the device's primary context,
// which any host thread may use once it is made current: every method that
// touches the device first makes it current (`enter`), `Drop` pushes it
// before freeing anything, and the object is used from one thread at a time
// (`&mut self`).
unsafe impl Send for CudaBlockForces {}

impl Drop for CudaBlockForces {
    /// Frees the buffers, module and stream with the object's context
    /// current on *this* thread, then restores the thread's previous
    /// context: dropped on a thread that never used CUDA, `cuMemFree` would
    /// fail there (no current context) and leak.
    fn drop(&mut self) {
        let _current = Current::push(self.context.as_raw());
        // SAFETY: `device` is dropped exactly once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.device) };
    }
}

/// A device buffer of `len` elements (none for 0), written on the object's
/// stream before any kernel reads it.
fn uninitialized<T: DeviceCopy>(len: usize) -> Result<DeviceBuffer<T>> {
    // SAFETY: `f32` and `f64` are valid for any bit pattern; every buffer is
    // filled by an operation on the object's stream, or written by the
    // kernel, before it is read (`PairState::queue`).
    unsafe { DeviceBuffer::uninitialized(len) }.map_err(during("allocating device memory"))
}

impl CudaBlockForces {
    /// Loads the PTX on `device` and checks every kernel the plan launches
    /// against the device's shared memory and its limits after the JIT.
    pub(crate) fn new(device: u32, params: &Params, max_mass: f32) -> Result<CudaBlockForces> {
        let plan = PairPlan::new(params, max_mass)?;
        let (dev, context, name) = open(device)?;

        let launches = plan.every_launch()?;
        let needed = launches.iter().map(|(_, s)| s.shared_bytes).max();
        let available = shared_opt_in_bytes(&dev)?;
        if let Some(needed) = needed.filter(|&n| n > available) {
            return Err(Error::SharedMemoryExceeded {
                block: params.kernel().block(),
                kernel: params.kernel().name(),
                needed,
                available,
            });
        }

        let (module, functions) = load_kernels()?;
        configure_launches(&functions, launches.iter().map(|(l, s)| (l.entry(), *s)))?;
        let stream =
            Stream::new(StreamFlags::NON_BLOCKING, None).map_err(during("creating a stream"))?;
        // Empty until the first call: buffers are (re)allocated to the
        // lengths of the blocks they are given.
        let state = PairState {
            buffers: [
                uninitialized(0)?,
                uninitialized(0)?,
                uninitialized(0)?,
                uninitialized(0)?,
            ],
            partials: uninitialized(0)?,
            functions,
            _module: module,
            stream,
        };
        Ok(CudaBlockForces {
            device: ManuallyDrop::new(state),
            plan,
            ordinal: device,
            name,
            context,
        })
    }

    fn enter(&self) -> Result<()> {
        CurrentContext::set_current(&self.context).map_err(during("making the context current"))
    }

    /// Runs `op` on blocks `inputs` (`(buffer, bodies)`; `None` for zeros),
    /// with `partials` `f64` partial sums if it writes any, on the object's
    /// stream, and waits for it. Results are read back with
    /// [`PairState::download`].
    fn launch(
        &mut self,
        inputs: &[(PairBuf, Option<&[Vec4]>, usize)],
        partials: usize,
        op: PairLaunch,
    ) -> Result<()> {
        self.enter()?;
        let staged: Vec<Option<Vec<f32>>> = inputs.iter().map(|(_, b, _)| b.map(flatten)).collect();
        let queued = self.device.queue(inputs, &staged, partials, op);
        // Whatever was queued, nothing may read `staged` after it is dropped:
        // the stream is synchronised first, also after an error.
        let ran = self.device.sync();
        drop(staged);
        queued.and(ran)
    }
}

impl PairState {
    fn device_ptr(&self, role: PairBuf) -> u64 {
        match role {
            PairBuf::Partials => self.partials.as_device_ptr().as_raw(),
            role => self.buffers[index(role)].as_device_ptr().as_raw(),
        }
    }

    /// Queues the uploads (`staged[k]` into `inputs[k]`'s buffer, or zeros
    /// where it is `None`; `inputs[k].2` bodies), the partial sums' reset
    /// and the launch, in that order, on the stream. The caller keeps
    /// `staged` alive until the stream is synchronised.
    fn queue(
        &mut self,
        inputs: &[(PairBuf, Option<&[Vec4]>, usize)],
        staged: &[Option<Vec<f32>>],
        partials: usize,
        (launch, shape): PairLaunch,
    ) -> Result<()> {
        let upload = during("uploading a block");
        for (&(role, _, len), words) in inputs.iter().zip(staged) {
            let buffer = &mut self.buffers[index(role)];
            if buffer.len() != 4 * len {
                // The old buffer is freed here (cuMemFree waits for the
                // device); the new one is written below before any kernel.
                *buffer = uninitialized(4 * len)?;
            }
            let stream = &self.stream;
            match words {
                // SAFETY: a buffer of this object, of the host slice's
                // length, used only by this stream; the caller keeps
                // `words` alive until the stream is synchronised.
                Some(words) => unsafe { buffer.async_copy_from(&words[..], stream) },
                // SAFETY: a buffer of this object, used only by this stream.
                None => unsafe { buffer.set_zero_async(stream) },
            }
            .map_err(&upload)?;
        }
        if partials > 0 {
            if self.partials.len() != partials {
                self.partials = uninitialized(partials)?;
            }
            // SAFETY: a buffer of this object, used only by this stream.
            unsafe { self.partials.set_zero_async(&self.stream) }.map_err(&upload)?;
        }

        let args = launch.args();
        // SAFETY: the argument list is the entry point's declared parameter
        // list (the kernel table), every pointer is a live buffer sized for
        // the block lengths of the launch (uploaded above), the shape comes
        // from `gpu_kernels::shape` through the plan and was checked against
        // the function's limits when the object was made.
        unsafe {
            enqueue(
                self.functions[launch.entry() as usize],
                args.as_slice(),
                shape,
                &self.stream,
                |b| Ok(self.device_ptr(b)),
                "launching a block-pair kernel",
            )
        }
    }

    fn sync(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(during("running the block-pair kernels"))
    }

    /// Copies buffer `role` back into `out`, after the stream was
    /// synchronised (a synchronous copy, on the legacy stream).
    fn download(&self, role: PairBuf, out: &mut [Vec4]) -> Result<()> {
        let mut words = vec![0f32; 4 * out.len()];
        self.buffers[index(role)]
            .copy_to(&mut words[..])
            .map_err(during("copying a block back"))?;
        for (o, w) in out.iter_mut().zip(words.chunks_exact(4)) {
            *o = Vec4::new(w[0], w[1], w[2], w[3]);
        }
        Ok(())
    }

    /// The first `count` partial sums, after the stream was synchronised.
    fn partial_sums(&self, count: usize) -> Result<Vec<f64>> {
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
        let inputs = [
            (PairBuf::PosI, Some(i), i.len()),
            (PairBuf::PosJ, Some(j), j.len()),
            (PairBuf::AccI, Some(&*acc_i), acc_i.len()),
        ];
        self.launch(&inputs, 0, op)?;
        self.device.download(PairBuf::AccI, acc_i)
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
        let inputs = [
            (PairBuf::PosI, Some(i), i.len()),
            (PairBuf::PosJ, Some(j), j.len()),
            (PairBuf::AccI, Some(&*acc_i), acc_i.len()),
            (PairBuf::ReactJ, Some(&*react_j), react_j.len()),
        ];
        self.launch(&inputs, 0, op)?;
        self.device.download(PairBuf::AccI, acc_i)?;
        self.device.download(PairBuf::ReactJ, react_j)
    }

    fn pull_within(&mut self, i: &[Vec4], acc_i: &mut [Vec4]) -> Result<()> {
        check_block("I", i, acc_i)?;
        let Some(op) = self.plan.pull_within(i.len() as u32)? else {
            return Ok(());
        };
        let inputs = [
            (PairBuf::PosI, Some(i), i.len()),
            (PairBuf::AccI, Some(&*acc_i), acc_i.len()),
        ];
        self.launch(&inputs, 0, op)?;
        self.device.download(PairBuf::AccI, acc_i)
    }

    fn potential_within(&mut self, i: &[Vec4]) -> Result<f64> {
        check_len(i)?;
        let n = i.len() as u32;
        let Some(op) = self.plan.potential_within(n) else {
            return Ok(0.0);
        };
        // The energy kernel's velocities: zeros (its kinetic sums are not used).
        let inputs = [
            (PairBuf::PosI, Some(i), i.len()),
            (PairBuf::AccI, None, i.len()),
        ];
        let count = self.plan.within_partials(n);
        self.launch(&inputs, count, op)?;
        Ok(PairPlan::finish_within(&self.device.partial_sums(count)?))
    }

    fn potential_between(&mut self, i: &[Vec4], j: &[Vec4]) -> Result<f64> {
        check_len(i)?;
        check_len(j)?;
        let (ni, nj) = (i.len() as u32, j.len() as u32);
        let Some(op) = self.plan.potential_between(ni, nj) else {
            return Ok(0.0);
        };
        let inputs = [
            (PairBuf::PosI, Some(i), i.len()),
            (PairBuf::PosJ, Some(j), j.len()),
        ];
        let count = self.plan.between_partials(ni);
        self.launch(&inputs, count, op)?;
        Ok(self.device.partial_sums(count)?.iter().sum())
    }
}
