//! [`CudaDevice`]: one CUDA device as the [`Device`] of every launch plan
//! (gravity, short-range MD, block pairs), and the backend's one holder of
//! a CUDA context: the embedded PTX loaded with cust, one device buffer per
//! role of the plan, the plan's launches on the device's own stream.
//!
//! No machine this crate is developed on has a GPU: CI runs it, through
//! cust, on the software CUDA device (`softcuda`, `scripts/ci-softcuda.sh`),
//! whose driver takes every liberty CUDA allows (late legacy-stream copies,
//! non-blocking streams, register-limited kernels); what it launches
//! (entry points, grids, shared bytes, arguments) is the plan the emulator
//! runs and the tests check against the PTX parameter lists.
//!
//! Ordering (issue 15):
//! - every memory operation that a kernel reads (uploads, memsets, the
//!   divergence flag's reset) is an asynchronous operation on the device's
//!   own `NON_BLOCKING` stream, so stream order puts it before the kernels
//!   whatever the stream's flags; synchronous copies, which run on the
//!   legacy stream (which a non-blocking stream does not wait for, and
//!   whose pageable copies and memsets may complete after the call
//!   returns), are used only to read results back after the stream has
//!   been synchronised;
//! - the host words of an upload are kept (`pending`) until the stream has
//!   been synchronised, since the copy may read them late;
//! - a buffer replaced by another is freed only after the stream has
//!   drained (queued kernels and the copy of kept words may still read it);
//! - each kernel is checked against its limits after the JIT (`limits.rs`),
//!   with its dynamic shared-memory limit raised where needed, before its
//!   first launch with a larger block or more shared memory: all of a
//!   plan's launches at once before anything is allocated
//!   ([`Device::check_launches`]), any other before it is queued;
//! - the context is made current on every call, and pushed in `Drop`, so
//!   the device (`Send`) may be dropped on any thread;
//! - timing is by CUDA events around a batch ([`Device::timer_start`]);
//! - the stream really is `NON_BLOCKING` (`stream.rs`: cust 0.3.2's
//!   `Stream::new` drops the flag): a blocking stream joins the legacy
//!   stream, so while it captured, another thread's synchronous read back
//!   in the shared context was refused (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`)
//!   and broke the capture (`..._INVALIDATED`), on the H200 (2026-11-27);
//! - graphs ([`Device::begin_capture`]) are captured in relaxed mode (other
//!   threads share the primary context) from the device's stream and kept
//!   with the buffer addresses they were captured for: one is replayed only
//!   with the same buffers in the same roles, and all are dropped when a
//!   buffer is reallocated.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::mem::ManuallyDrop;

use cust::context::Context;
use cust::event::EventFlags;
use cust::memory::DeviceBuffer;
use cust::module::Module;
use cust::stream::StreamFlags;
use cust::sys;
use gpu_kernels::entry::{Entry, Launch};
use gpu_kernels::shape::LaunchShape;

use super::launch::{Current, enqueue, load_kernels, open};
use super::limits::{check_launch, multiprocessors, shared_opt_in_bytes};
use super::status::{driver, during};
use super::stream::{Event, Stream};
use crate::engine::BackendKind;
use crate::error::{Error, Result};
use crate::plan::device::{Device, Role, SECTIONS, Section};

/// One CUDA device, holding the buffers of one plan keyed by its roles `K`.
pub(crate) struct CudaDevice<K> {
    /// Dropped by `Drop for CudaDevice`, with the context current.
    state: ManuallyDrop<State<K>>,
    /// Device ordinal and name.
    ordinal: u32,
    name: String,
    /// The context everything in `state` belongs to, released after `state`
    /// (fields drop after `Drop::drop`).
    context: Context,
}

/// Buffers, functions, events and the stream, all of the device's context.
///
/// Fields drop in declaration order: buffers, the kept host words, the
/// module, the events, then the stream the buffers' operations were queued
/// on.
struct State<K> {
    buffers: BTreeMap<K, DeviceBuffer<u32>>,
    /// Host words of uploads queued since the last synchronisation.
    pending: Vec<Vec<u32>>,
    /// The function of every entry point, by `Entry as usize`.
    functions: Vec<sys::CUfunction>,
    /// The largest block and dynamic shared memory each entry point has
    /// been checked for (`limits::check_launch`), by `Entry as usize`.
    checked: Vec<(u32, u32)>,
    /// The device's opt-in maximum of dynamic shared memory per block.
    shared_opt_in: u32,
    /// The device's multiprocessor count.
    multiprocessors: u32,
    /// The loaded PTX, kept alive for `functions` (never read).
    _module: Module,
    start: Event,
    stop: Event,
    /// Device seconds of the timed batches.
    seconds: f64,
    /// `stop` is recorded after `start` and not yet added to `seconds`:
    /// the next synchronisation adds it (no wait of its own).
    timing: bool,
    /// Section marks recorded since the last synchronisation, each event
    /// opening the section it names (`Device::mark`); the last one stays
    /// (its section is still open).
    marks: Vec<(Event, Option<Section>)>,
    /// Events of folded marks, recorded again by later marks.
    spare: Vec<Event>,
    /// Device seconds per section, folded at each synchronisation.
    sections: [f64; SECTIONS],
    /// Executable graphs captured from `stream`, newest last.
    graphs: Vec<Graph<K>>,
    /// The roles' addresses when the capture in progress began.
    capture_start: Option<Vec<(K, u64)>>,
    stream: Stream,
    /// `CudaDevice::context`, raw, for making it current.
    context: sys::CUcontext,
}

/// The most graphs a device keeps (the oldest goes): a run uses one per
/// batch length, two at most (a full batch and the last, shorter one).
const KEPT_GRAPHS: usize = 4;

/// An executable graph and the buffers it names.
struct Graph<K> {
    tag: u64,
    /// Each role's buffer address when the capture began: the graph is
    /// replayed only with these.
    start: Vec<(K, u64)>,
    /// ... and when it ended: the roles after a replay.
    end: Vec<(K, u64)>,
    exec: sys::CUgraphExec,
}

// SAFETY: the driver objects are handles into the device's context, which
// any host thread may use once it is made current: every method that touches
// the device makes it current first (`State::enter`), `Drop` pushes it before
// freeing anything, and the device is used from one thread at a time
// (`&mut self`). The one `Send` of the CUDA backend.
unsafe impl<K: Send> Send for CudaDevice<K> {}

impl<K> Drop for CudaDevice<K> {
    /// Waits for the stream and frees everything with the context current on
    /// *this* thread, then restores the thread's previous context: dropped
    /// on a thread that never used CUDA, `cuMemFree` would fail there (no
    /// current context) and leak.
    fn drop(&mut self) {
        let _current = Current::push(self.context.as_raw());
        // Queued work may still use the buffers and the kept host words;
        // errors were reported by the calls that queued it.
        let _ = self.state.stream.synchronize();
        self.state.drop_graphs();
        // SAFETY: `state` is dropped exactly once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.state) };
    }
}

impl<K: Role> CudaDevice<K> {
    /// Opens device `ordinal` (no device, or an ordinal past the last, is
    /// `Error::CudaUnavailable`), loads the PTX and makes the stream and the
    /// timing events; no buffers yet.
    pub(crate) fn open(ordinal: u32) -> Result<CudaDevice<K>> {
        let (dev, context, name) = open(ordinal)?;
        let shared_opt_in = shared_opt_in_bytes(&dev)?;
        let multiprocessors = multiprocessors(&dev)?;
        let (module, functions) = load_kernels()?;
        let event = || Event::new(EventFlags::DEFAULT).map_err(during("creating events"));
        let state = State {
            buffers: BTreeMap::new(),
            pending: Vec::new(),
            checked: vec![(0, 0); functions.len()],
            functions,
            shared_opt_in,
            multiprocessors,
            _module: module,
            start: event()?,
            stop: event()?,
            seconds: 0.0,
            timing: false,
            marks: Vec::new(),
            spare: Vec::new(),
            sections: [0.0; SECTIONS],
            graphs: Vec::new(),
            capture_start: None,
            stream: Stream::new(StreamFlags::NON_BLOCKING, None)
                .map_err(during("creating a stream"))?,
            context: context.as_raw(),
        };
        Ok(CudaDevice {
            state: ManuallyDrop::new(state),
            ordinal,
            name,
            context,
        })
    }
}

impl<K> State<K> {
    /// Destroys every executable graph (a replay already queued still runs:
    /// CUDA keeps what a launch needs until it completes).
    fn drop_graphs(&mut self) {
        for g in self.graphs.drain(..) {
            // SAFETY: an executable graph of this context, destroyed once.
            let _ = unsafe { sys::cuGraphExecDestroy(g.exec) };
        }
    }
}

impl<K: Role> State<K> {
    /// Makes this device's context current on the calling thread.
    fn enter(&self) -> Result<()> {
        // SAFETY: the device's context, alive as long as the device.
        let status = unsafe { sys::cuCtxSetCurrent(self.context) };
        driver(status, "making the context current")
    }

    /// Waits for the stream; the host words of the uploads can go, and a
    /// timed batch that ended is added to the device seconds.
    fn sync(&mut self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(during("running the kernels"))?;
        self.pending.clear();
        self.fold_timing(true)?;
        self.fold_sections()
    }

    /// Adds the time between each pair of consecutive marks to the first
    /// one's section (the stream has drained: every event completed), and
    /// keeps the last mark open.
    fn fold_sections(&mut self) -> Result<()> {
        let Some(last) = self.marks.pop() else {
            return Ok(());
        };
        let mut next = &last.0;
        for (event, section) in self.marks.iter().rev() {
            if let Some(s) = section {
                let ms = next
                    .elapsed_time_f32(event)
                    .map_err(during("timing the sections"))?;
                self.sections[*s as usize] += ms as f64 / 1e3;
            }
            next = event;
        }
        self.spare.extend(self.marks.drain(..).map(|(e, _)| e));
        self.marks.push(last);
        Ok(())
    }

    /// Adds the batch between `start` and `stop` to `seconds`, if one ended
    /// since the last time, waiting for `stop` unless the stream has just
    /// been synchronised (`drained`).
    fn fold_timing(&mut self, drained: bool) -> Result<()> {
        if self.timing {
            if !drained {
                self.stop
                    .synchronize()
                    .map_err(during("running the kernels"))?;
            }
            let ms = self
                .stop
                .elapsed_time_f32(&self.start)
                .map_err(during("timing the steps"))?;
            self.seconds += ms as f64 / 1e3;
            self.timing = false;
        }
        Ok(())
    }

    /// Every role with its buffer's address, in role order.
    fn roles(&self) -> Vec<(K, u64)> {
        self.buffers
            .iter()
            .map(|(k, b)| (*k, b.as_device_ptr().as_raw()))
            .collect()
    }

    /// Gives the buffers the roles of `roles` (the same buffers, by
    /// address, as [`roles`](Self::roles) lists now, permuted); `false`, and
    /// nothing changed, if they are not.
    fn set_roles(&mut self, roles: &[(K, u64)]) -> bool {
        let mut now: Vec<u64> = self.roles().iter().map(|r| r.1).collect();
        let mut want: Vec<u64> = roles.iter().map(|r| r.1).collect();
        now.sort_unstable();
        want.sort_unstable();
        if now != want || roles.len() != self.buffers.len() {
            return false;
        }
        let mut by_addr: BTreeMap<u64, DeviceBuffer<u32>> = std::mem::take(&mut self.buffers)
            .into_values()
            .map(|b| (b.as_device_ptr().as_raw(), b))
            .collect();
        for &(k, addr) in roles {
            if let Some(b) = by_addr.remove(&addr) {
                self.buffers.insert(k, b);
            }
        }
        true
    }

    /// `buf`'s device address and its length in words.
    fn buffer(&self, buf: K) -> Result<(u64, usize)> {
        self.buffers
            .get(&buf)
            .map(|b| (b.as_device_ptr().as_raw(), b.len()))
            .ok_or_else(|| Error::Cuda {
                during: "a launch".into(),
                message: format!("buffer {buf:?} was never allocated"),
            })
    }

    /// `len` words from word `offset` of `buf`, or an error naming the overrun.
    fn range(&self, buf: K, offset: usize, len: usize) -> Result<u64> {
        let (addr, words) = self.buffer(buf)?;
        if offset.checked_add(len).is_none_or(|end| end > words) {
            return Err(Error::Cuda {
                during: "a copy".into(),
                message: format!("{len} words at {offset} past the {words} words of {buf:?}"),
            });
        }
        Ok(addr + 4 * offset as u64)
    }

    /// Checks `entry`'s function for a launch of `block` threads with
    /// `shared` bytes of dynamic shared memory, unless a launch at least as
    /// large has been checked: the device's opt-in maximum, then the
    /// function's limits after the JIT (raising its shared-memory limit).
    fn admit(&mut self, entry: Entry, block: u32, shared: u32) -> Result<()> {
        let (checked_block, checked_shared) = self.checked[entry as usize];
        if block <= checked_block && shared <= checked_shared {
            return Ok(());
        }
        if shared > self.shared_opt_in {
            return Err(Error::SharedMemoryExceeded {
                block,
                kernel: entry.name(),
                needed: shared,
                available: self.shared_opt_in,
            });
        }
        let (block, shared) = (block.max(checked_block), shared.max(checked_shared));
        check_launch(self.functions[entry as usize], entry, block, shared)?;
        self.checked[entry as usize] = (block, shared);
        Ok(())
    }
}

impl<K: Role> Device<K> for CudaDevice<K> {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda {
            device: self.ordinal,
            name: self.name.clone(),
        }
    }

    fn shared_opt_in(&self) -> u32 {
        self.state.shared_opt_in
    }

    fn multiprocessors(&self) -> Option<u32> {
        Some(self.state.multiprocessors)
    }

    fn free_bytes(&mut self) -> Result<Option<u64>> {
        self.state.enter()?;
        let (free, _total) =
            cust::memory::mem_get_info().map_err(during("querying free device memory"))?;
        Ok(Some(free as u64))
    }

    fn check_launches(&mut self, launches: &[(Entry, LaunchShape)]) -> Result<()> {
        let d = &mut *self.state;
        d.enter()?;
        for &(entry, shape) in launches {
            d.admit(entry, shape.block, shape.shared_bytes)?;
        }
        Ok(())
    }

    fn alloc(&mut self, buf: K, words: usize, keep: bool) -> Result<()> {
        let d = &mut *self.state;
        d.enter()?;
        // SAFETY: `u32` is valid for any bit pattern, and the memset queued
        // below on the stream writes every word before any kernel reads it.
        let fresh = unsafe { DeviceBuffer::<u32>::uninitialized(words.max(1)) }
            .map_err(during("allocating device memory"))?;
        let dst = fresh.as_device_ptr().as_raw();
        // SAFETY: `dst` points to `words.max(1)` words of the new buffer,
        // which only this stream uses.
        let status = unsafe { sys::cuMemsetD32Async(dst, 0, words.max(1), d.stream.as_inner()) };
        driver(status, "clearing device memory")?;
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
            driver(status, "copying device memory")?;
        }
        if let Some(old) = d.buffers.insert(buf, fresh) {
            // Kernels queued before, and the copy above, may read it.
            d.sync()?;
            drop(old);
            // A graph names the old buffer (and a new one may get its address).
            d.drop_graphs();
        }
        Ok(())
    }

    fn write(&mut self, buf: K, offset: usize, data: &[u32]) -> Result<()> {
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
        driver(status, "uploading data")
    }

    fn copy(&mut self, from: K, to: K, words: usize) -> Result<()> {
        let d = &mut *self.state;
        d.enter()?;
        let src = d.range(from, 0, words)?;
        let dst = d.range(to, 0, words)?;
        if words == 0 {
            return Ok(());
        }
        // SAFETY: both ranges hold `words` words of buffers of this device
        // (checked by `range`), which only this stream uses; the copy is
        // ordered on it after the work that writes `from`.
        let status = unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, 4 * words, d.stream.as_inner()) };
        driver(status, "copying device memory")
    }

    fn fill(&mut self, buf: K, value: u32) -> Result<()> {
        let d = &mut *self.state;
        d.enter()?;
        let (dst, words) = d.buffer(buf)?;
        // SAFETY: `dst` points to the `words` words of a buffer of this
        // device, which only this stream uses.
        let status = unsafe { sys::cuMemsetD32Async(dst, value, words, d.stream.as_inner()) };
        driver(status, "filling device memory")
    }

    fn read(&mut self, buf: K, offset: usize, len: usize) -> Result<Vec<u32>> {
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
            driver(status, "reading data back")?;
        }
        Ok(host)
    }

    fn launch(&mut self, launch: Launch<K>, shape: LaunchShape) -> Result<()> {
        if shape.grid == 0 {
            return Ok(());
        }
        let d = &mut *self.state;
        d.enter()?;
        let entry = launch.entry();
        d.admit(entry, shape.block, shape.shared_bytes)?;
        // SAFETY: the argument list is the entry point's declared parameter
        // list (the kernel table; the plan tests check it against the PTX),
        // every pointer is a live buffer of this device, sized by the plan
        // as the table's length expressions say and used only by this
        // stream; the shape comes from `gpu_kernels::shape` and was checked
        // against the function's limits above (`admit`).
        unsafe {
            enqueue(
                d.functions[entry as usize],
                launch.args().as_slice(),
                shape,
                &d.stream,
                |b| Ok(d.buffer(b)?.0),
                "launching a kernel",
            )
        }
    }

    fn swap(&mut self, a: K, b: K) {
        let buffers = &mut self.state.buffers;
        let (x, y) = (buffers.remove(&a), buffers.remove(&b));
        if let Some(y) = y {
            buffers.insert(a, y);
        }
        if let Some(x) = x {
            buffers.insert(b, x);
        }
    }

    fn synchronize(&mut self) -> Result<()> {
        let d = &mut *self.state;
        d.enter()?;
        d.sync()
    }

    /// One flag read per call: the GPU runs the whole batch unattended.
    fn steps_per_flag_read(&self) -> u64 {
        u64::MAX
    }

    fn begin_capture(&mut self) -> Result<bool> {
        let d = &mut *self.state;
        d.enter()?;
        // SAFETY: the device's own stream. Relaxed mode: every device of
        // the process shares the device's primary context (cust's
        // `Context::new`), and another thread allocating or freeing in it
        // must neither fail nor break this capture (global mode fails it;
        // the software device also invalidates thread-local captures then).
        // No mode lifts the legacy stream's implicit join of a *blocking*
        // capturing stream (another thread's synchronous copy: IMPLICIT to
        // it, INVALIDATED here, as the H200 showed), hence the stream's
        // `NON_BLOCKING` (`stream.rs`); `cuCtxSynchronize` anywhere in the
        // process would still break the capture (nothing here calls it).
        // The plan only queues during a capture; synchronising the
        // capturing stream stays an error in every mode.
        let status = unsafe {
            sys::cuStreamBeginCapture_v2(
                d.stream.as_inner(),
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
            )
        };
        driver(status, "beginning a stream capture")?;
        d.capture_start = Some(d.roles());
        Ok(true)
    }

    fn end_capture(&mut self, tag: Option<u64>) -> Result<()> {
        let d = &mut *self.state;
        d.enter()?;
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: ends the capture `begin_capture` began on this stream, on
        // this thread; `graph` receives the captured graph (or stays null).
        let status = unsafe { sys::cuStreamEndCapture(d.stream.as_inner(), &mut graph) };
        let start = d.capture_start.take().unwrap_or_default();
        let end = d.roles();
        // The captured swaps have not run yet: the roles go back.
        d.set_roles(&start);
        driver(status, "ending a stream capture")?;
        let Some(tag) = tag else {
            // SAFETY: the graph just captured, not kept.
            unsafe { sys::cuGraphDestroy(graph) };
            return Ok(());
        };
        let mut exec: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: `graph` is the graph just captured, instantiated once and
        // destroyed after (the executable graph is a copy).
        let status = unsafe {
            let status = sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0);
            sys::cuGraphDestroy(graph);
            status
        };
        driver(status, "instantiating a CUDA graph")?;
        if d.graphs.len() == KEPT_GRAPHS {
            let old = d.graphs.remove(0);
            // SAFETY: an executable graph of this context, destroyed once.
            unsafe { sys::cuGraphExecDestroy(old.exec) };
        }
        d.graphs.push(Graph {
            tag,
            start,
            end,
            exec,
        });
        Ok(())
    }

    fn replay(&mut self, tag: u64) -> Result<bool> {
        let d = &mut *self.state;
        d.enter()?;
        let roles = d.roles();
        let Some(g) = d.graphs.iter().find(|g| g.tag == tag && g.start == roles) else {
            return Ok(false);
        };
        let (exec, end) = (g.exec, g.end.clone());
        // SAFETY: an executable graph of this context whose nodes name the
        // buffers of `roles`, live and in the roles they had at the capture
        // (checked above); it queues on the device's stream after the work
        // before it.
        let status = unsafe { sys::cuGraphLaunch(exec, d.stream.as_inner()) };
        driver(status, "launching a CUDA graph")?;
        d.set_roles(&end);
        Ok(true)
    }

    fn timer_start(&mut self) -> Result<()> {
        let d = &mut *self.state;
        d.enter()?;
        // A batch not yet added would be lost when `start` is recorded again.
        d.fold_timing(false)?;
        d.start
            .record(&d.stream)
            .map_err(during("recording an event"))
    }

    /// Records the end of the batch without waiting for it: the batch's
    /// time is added at the next synchronisation (the flag read that ends
    /// every batch), so timing costs no round trip of its own.
    fn timer_stop(&mut self) -> Result<()> {
        let d = &mut *self.state;
        d.enter()?;
        d.stop
            .record(&d.stream)
            .map_err(during("recording an event"))?;
        d.timing = true;
        Ok(())
    }

    fn seconds(&self) -> Option<f64> {
        Some(self.state.seconds)
    }

    /// Records an event unless the open section is `section` already.
    fn mark(&mut self, section: Option<Section>) -> Result<()> {
        let d = &mut *self.state;
        if d.marks.last().is_some_and(|(_, open)| *open == section)
            || (d.marks.is_empty() && section.is_none())
        {
            return Ok(());
        }
        d.enter()?;
        let event = match d.spare.pop() {
            Some(e) => e,
            None => Event::new(EventFlags::DEFAULT).map_err(during("creating events"))?,
        };
        event
            .record(&d.stream)
            .map_err(during("recording an event"))?;
        d.marks.push((event, section));
        Ok(())
    }

    fn section_seconds(&self) -> Option<[f64; SECTIONS]> {
        Some(self.state.sections)
    }
}
