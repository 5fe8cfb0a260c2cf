//! CUDA graphs by stream capture: `cuStreamBeginCapture_v2`,
//! `cuStreamEndCapture`, `cuStreamIsCapturing`, `cuGraphInstantiateWithFlags`,
//! `cuGraphLaunch`, `cuGraphExecDestroy`, `cuGraphDestroy`, with the most
//! hostile semantics CUDA allows.
//!
//! # Capture
//! Between `cuStreamBeginCapture_v2` and `cuStreamEndCapture`, work queued
//! on the capturing stream does not run: it becomes a node of the graph,
//! with everything it will use fixed at the call (a kernel's parameter
//! bytes, so the device addresses it was given; a memset's value; a pinned
//! copy's host address, read when the node runs).
//!
//! | during a capture (global or thread-local mode) | here |
//! | --- | --- |
//! | `cuStreamSynchronize`, `cuStreamQuery` on the capturing stream | `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`; the capture is invalidated |
//! | `cuMemAlloc`, `cuMemFree` in its context | `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`; every such capture is invalidated (a thread-local capture only when the call is made on the thread that began it; a global one from any thread) |
//! | `cuCtxSynchronize` in its context, any thread, **any mode** (it waits for the capturing stream too) | `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`; every capture of the context is invalidated |
//! | work on the legacy stream (a synchronous `cuMemcpy*`/`cuMemset*`, a launch or async call on stream 0), `cuStreamSynchronize`/`cuStreamQuery` of it, while a *blocking* stream captures: any thread, **any mode** (the H200, relaxed mode, 2026-11-27) | `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` to the caller; that capture is invalidated |
//! | `cuStreamIsCapturing` of the legacy stream while a blocking stream captures | `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`; not invalidated (CUDA's documentation) |
//! | work queued on (or an event recorded on) a capturing stream whose capture was invalidated | `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` (the H200: "launching a kernel") |
//! | a copy from or to pageable host memory on the capturing stream | `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` (a graph here never reads host memory that the caller may have freed by the time it runs); invalidated |
//! | `cuEventRecord` on the capturing stream | the event becomes a captured event: `cuEventSynchronize`, `cuEventQuery`, `cuEventElapsedTime` on it return `CUDA_ERROR_CAPTURED_EVENT` until it is recorded outside a capture |
//! | `cuStreamWaitEvent` of the capturing stream on an event recorded outside the capture | `CUDA_ERROR_STREAM_CAPTURE_ISOLATION`; invalidated |
//! | another stream waiting on a captured event (joining the capture) | `CUDA_ERROR_NOT_SUPPORTED`: multi-stream capture is not modelled |
//! | `cuStreamEndCapture` from another thread (global or thread-local mode) | `CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD`, the capture goes on |
//! | `cuStreamEndCapture` of an invalidated capture | `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`, no graph; the capture ends |
//!
//! Relaxed mode (`CU_STREAM_CAPTURE_MODE_RELAXED`) lifts the row on the
//! "potentially unsafe" calls (allocate, free) and the thread check, never
//! the rows that necessarily conflict with a capture: the legacy stream's
//! implicit join of a blocking capturing stream, and `cuCtxSynchronize`
//! (inferred, not documented: reports of hardware runs, ROCm
//! rocm-systems#4508 and llama.cpp#14033, whose relaxed captures broke on
//! another thread's device synchronisation; the most hostile reading).
//!
//! # Launch
//! `cuGraphLaunch` queues the graph's nodes on the stream in capture order,
//! ordered after the stream's earlier work and after the previous launch
//! of the same executable graph (CUDA serialises launches of one graph),
//! and like any queued work they run only when something forces them
//! (`state`'s hostile ordering). The executable graph is a copy: destroying
//! the graph, or the executable graph while a launch is pending, changes
//! nothing that was queued. What a node names must still exist when it
//! runs: a kernel whose module was unloaded is refused at the launch
//! (`CUDA_ERROR_INVALID_HANDLE`), and memory freed since the capture faults
//! (`CUDA_ERROR_ILLEGAL_ADDRESS`, sticky) when the node runs.

#![allow(
    clippy::missing_safety_doc,
    reason = "every exported function implements a CUDA Driver API entry point; its contract is CUDA's documentation (see api.rs)"
)]

use std::collections::{BTreeSet, HashMap};
use std::ffi::{c_int, c_ulonglong};
use std::thread::ThreadId;

use crate::api::{
    Handle, TAG_GRAPH, TAG_GRAPH_EXEC, ctx_of, handle, live_ctx, out, peek, stream_of, unhandle,
    with,
};
use crate::errors::*;
use crate::state::{Driver, HostSrc, R, StreamRef, Work};

/// `CU_STREAM_CAPTURE_MODE_GLOBAL`
pub const CAPTURE_MODE_GLOBAL: i32 = 0;
/// `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`
pub const CAPTURE_MODE_THREAD_LOCAL: i32 = 1;
/// `CU_STREAM_CAPTURE_MODE_RELAXED`
pub const CAPTURE_MODE_RELAXED: i32 = 2;
/// `CU_STREAM_CAPTURE_STATUS_*`: none, active, invalidated.
pub const CAPTURE_STATUS: [i32; 3] = [0, 1, 2];
/// `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`, the one flag accepted
/// (nothing here allocates inside a graph).
pub const INSTANTIATE_AUTO_FREE_ON_LAUNCH: u64 = 1;

/// One stream's capture in progress.
struct Capture {
    ctx: u32,
    mode: i32,
    thread: ThreadId,
    nodes: Vec<Work>,
    /// Set by a forbidden call: `cuStreamEndCapture` then fails.
    invalidated: bool,
    /// Another thread has made a legacy-stream call in the capture's
    /// context since it began (`SOFTCUDA_CAPTURE_HOLD_MS` waits for it).
    legacy_from_another_thread: bool,
}

impl Capture {
    /// Whether this capture forbids the calling thread's context-wide
    /// unsafe calls (synchronise, allocate, free): a global-mode capture
    /// forbids them on every thread, a thread-local one only on the thread
    /// that began it (CUDA ignores other threads' thread-local captures),
    /// a relaxed one on none.
    fn forbids_unsafe_calls_on_this_thread(&self) -> bool {
        match self.mode {
            CAPTURE_MODE_GLOBAL => true,
            CAPTURE_MODE_THREAD_LOCAL => self.thread == std::thread::current().id(),
            _ => false,
        }
    }
}

/// A captured graph or an executable one: its context and nodes in order.
#[derive(Clone)]
struct Nodes {
    ctx: u32,
    nodes: Vec<Work>,
}

/// Captures, graphs and executable graphs, by id.
#[derive(Default)]
pub struct Graphs {
    captures: HashMap<u32, Capture>,
    graphs: HashMap<u32, Nodes>,
    execs: HashMap<u32, Nodes>,
    /// The last operation of each executable graph's latest launch.
    last_launch: HashMap<u32, u64>,
    /// Events last recorded on a capturing stream, by the capturing stream.
    captured_events: HashMap<u32, u32>,
}

impl Graphs {
    /// Whether stream `s` is capturing (validly or not).
    pub fn capturing(&self, s: u32) -> bool {
        self.captures.contains_key(&s)
    }

    /// `cuStreamIsCapturing`'s status of stream `s`.
    pub fn status(&self, s: StreamRef) -> i32 {
        match s {
            StreamRef::Id(id) => match self.captures.get(&id) {
                None => CAPTURE_STATUS[0],
                Some(c) if c.invalidated => CAPTURE_STATUS[2],
                Some(_) => CAPTURE_STATUS[1],
            },
            StreamRef::Legacy => CAPTURE_STATUS[0],
        }
    }

    /// Whether `event` was last recorded on a capturing stream.
    pub fn is_captured_event(&self, event: u32) -> bool {
        self.captured_events.contains_key(&event)
    }

    /// Forgets whatever belonged to context `ctx` (being destroyed).
    pub fn forget_context(&mut self, ctx: u32) {
        self.captures.retain(|_, c| c.ctx != ctx);
        self.graphs.retain(|_, g| g.ctx != ctx);
        self.execs.retain(|_, g| g.ctx != ctx);
    }
}

impl Driver {
    fn invalidate(&mut self, stream: u32, why: &str) {
        if let Some(c) = self.graphs.captures.get_mut(&stream) {
            c.invalidated = true;
        }
        self.log.notice(&format!(
            "stream {stream}: {why}: the capture is invalidated (cuStreamEndCapture will return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)"
        ));
    }

    /// Called by `state`'s enqueue before anything is queued: `Ok(None)`
    /// when `work` became a node of a capture, `Ok(Some(work))` to queue it,
    /// or the error a capture makes of it.
    pub(crate) fn capture_hook(
        &mut self,
        ctx: u32,
        stream: StreamRef,
        work: Work,
    ) -> R<Option<Work>> {
        let id = match stream {
            StreamRef::Id(id) if self.graphs.capturing(id) => id,
            StreamRef::Id(_) => return Ok(Some(work)),
            StreamRef::Legacy => {
                self.legacy_implicit(ctx, true)?;
                return Ok(Some(work));
            }
        };
        if self.graphs.captures.get(&id).is_some_and(|c| c.invalidated) {
            return Err(STREAM_CAPTURE_INVALIDATED);
        }
        let pageable = match &work {
            Work::HtoD {
                src: HostSrc::Staged(_),
                ..
            } => true,
            Work::DtoH { dst, len, .. } => !self.is_pinned(*dst, *len),
            _ => false,
        };
        if pageable {
            self.invalidate(id, "a copy from or to pageable host memory");
            return Err(STREAM_CAPTURE_UNSUPPORTED);
        }
        if let Some(c) = self.graphs.captures.get_mut(&id) {
            c.nodes.push(work);
        }
        self.log
            .trace(|| format!("stream {id}: captured a node (not run)"));
        Ok(None)
    }

    /// Refuses a synchronising call while a capture forbids it: on stream
    /// `stream` (its own capture), or with `None` a context-wide call
    /// (every non-relaxed capture of `ctx`).
    pub(crate) fn capture_forbids(&mut self, ctx: u32, stream: Option<StreamRef>) -> R<()> {
        let hit: Vec<u32> = match stream {
            Some(StreamRef::Id(s)) if self.graphs.capturing(s) => vec![s],
            Some(StreamRef::Legacy) => return self.legacy_implicit(ctx, true),
            Some(_) => Vec::new(),
            None => self
                .graphs
                .captures
                .iter()
                .filter(|(_, c)| c.ctx == ctx && c.forbids_unsafe_calls_on_this_thread())
                .map(|(s, _)| *s)
                .collect(),
        };
        if hit.is_empty() {
            return Ok(());
        }
        for s in hit {
            self.invalidate(s, "a synchronising call during the capture");
        }
        Err(STREAM_CAPTURE_UNSUPPORTED)
    }

    /// Legacy-stream work (or a synchronisation or capture query of the
    /// legacy stream) in context `ctx`: while a *blocking* stream of `ctx`
    /// captures, in any mode and from any thread, the legacy stream would
    /// wait for the capture, so CUDA refuses it with
    /// `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` ("the legacy stream is in an
    /// unusable state until the blocking stream capture is terminated");
    /// `invalidate`: the call also invalidates those captures (work and
    /// synchronisation do; `cuStreamIsCapturing` does not).
    pub(crate) fn legacy_implicit(&mut self, ctx: u32, invalidate: bool) -> R<()> {
        let me = std::thread::current().id();
        for c in self.graphs.captures.values_mut() {
            if c.ctx == ctx && c.thread != me {
                c.legacy_from_another_thread = true;
            }
        }
        let implicit: Vec<u32> = self
            .graphs
            .captures
            .iter()
            .filter(|(s, c)| {
                c.ctx == ctx
                    && self
                        .streams
                        .get(s)
                        .is_some_and(|e| e.flags & crate::state::STREAM_NON_BLOCKING == 0)
            })
            .map(|(s, _)| *s)
            .collect();
        if implicit.is_empty() {
            return Ok(());
        }
        if invalidate {
            for s in implicit {
                self.invalidate(
                    s,
                    "legacy-stream work (any thread, any capture mode) while this blocking stream captures",
                );
            }
        }
        Err(STREAM_CAPTURE_IMPLICIT)
    }

    /// `cuCtxSynchronize` waits for every stream of `ctx`, a capturing one
    /// included: refused during any capture of the context, in every mode
    /// and from any thread (relaxed mode lifts the "potentially unsafe"
    /// calls, not one that necessarily conflicts with a capture), and every
    /// such capture is invalidated.
    pub(crate) fn capture_forbids_context_sync(&mut self, ctx: u32) -> R<()> {
        let hit: Vec<u32> = self
            .graphs
            .captures
            .iter()
            .filter(|(_, c)| c.ctx == ctx)
            .map(|(s, _)| *s)
            .collect();
        if hit.is_empty() {
            return Ok(());
        }
        for s in hit {
            self.invalidate(s, "cuCtxSynchronize during the capture");
        }
        Err(STREAM_CAPTURE_UNSUPPORTED)
    }

    /// `cuEventRecord` on a capturing stream: the event becomes a captured
    /// event (no node); `None` when `stream` is not capturing.
    pub(crate) fn capture_record(&mut self, event: u32, stream: StreamRef) -> Option<R<()>> {
        match stream {
            StreamRef::Id(s) if self.graphs.capturing(s) => {
                if self.graphs.captures.get(&s).is_some_and(|c| c.invalidated) {
                    return Some(Err(STREAM_CAPTURE_INVALIDATED));
                }
                self.graphs.captured_events.insert(event, s);
                Some(Ok(()))
            }
            _ => {
                self.graphs.captured_events.remove(&event);
                None
            }
        }
    }

    /// `cuStreamWaitEvent` where a capture is involved; `None` otherwise.
    pub(crate) fn capture_wait(&mut self, stream: StreamRef, event: u32) -> Option<R<()>> {
        let captured_on = self.graphs.captured_events.get(&event).copied();
        let capturing = match stream {
            StreamRef::Id(s) if self.graphs.capturing(s) => Some(s),
            _ => None,
        };
        match (capturing, captured_on) {
            (None, None) => None,
            // Recorded earlier in this very capture: already ordered.
            (Some(s), Some(on)) if s == on => Some(Ok(())),
            (Some(s), None) => {
                self.invalidate(s, "a wait on an event recorded outside the capture");
                Some(Err(STREAM_CAPTURE_ISOLATION))
            }
            (_, Some(_)) => {
                self.log.notice(
                    "cuStreamWaitEvent on an event of another stream's capture (a fork or join of a multi-stream capture): not modelled by softcuda: CUDA_ERROR_NOT_SUPPORTED",
                );
                Some(Err(NOT_SUPPORTED))
            }
        }
    }

    /// `cuStreamBeginCapture_v2`.
    pub fn begin_capture(&mut self, ctx: u32, stream: StreamRef, mode: i32) -> R<()> {
        self.ctx(ctx)?;
        if !(0..=CAPTURE_MODE_RELAXED).contains(&mode) {
            return Err(INVALID_VALUE);
        }
        let StreamRef::Id(s) = stream else {
            self.log.notice(
                "cuStreamBeginCapture on the legacy default stream: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
            );
            return Err(STREAM_CAPTURE_UNSUPPORTED);
        };
        if self.graphs.capturing(s) {
            return Err(ILLEGAL_STATE);
        }
        self.graphs.captures.insert(
            s,
            Capture {
                ctx,
                mode,
                thread: std::thread::current().id(),
                nodes: Vec::new(),
                invalidated: false,
                legacy_from_another_thread: false,
            },
        );
        self.log
            .trace(|| format!("stream {s}: capture begun (mode {mode})"));
        Ok(())
    }

    /// `cuStreamEndCapture`: the new graph's id.
    pub fn end_capture(&mut self, stream: StreamRef) -> R<u32> {
        let StreamRef::Id(s) = stream else {
            return Err(ILLEGAL_STATE);
        };
        let c = self.graphs.captures.get(&s).ok_or(ILLEGAL_STATE)?;
        if c.mode != CAPTURE_MODE_RELAXED && c.thread != std::thread::current().id() {
            return Err(STREAM_CAPTURE_WRONG_THREAD);
        }
        let c = self.graphs.captures.remove(&s).expect("checked");
        self.graphs.captured_events.retain(|_, on| *on != s);
        if c.invalidated {
            return Err(STREAM_CAPTURE_INVALIDATED);
        }
        let id = self.id();
        let count = c.nodes.len();
        self.graphs.graphs.insert(
            id,
            Nodes {
                ctx: c.ctx,
                nodes: c.nodes,
            },
        );
        self.log
            .trace(|| format!("stream {s}: capture ended: graph {id} of {count} nodes"));
        Ok(id)
    }

    /// `cuGraphInstantiateWithFlags`: an executable copy of graph `graph`.
    pub fn instantiate(&mut self, graph: u32, flags: u64) -> R<u32> {
        if flags & !INSTANTIATE_AUTO_FREE_ON_LAUNCH != 0 {
            return Err(INVALID_VALUE);
        }
        let g = self.graphs.graphs.get(&graph).ok_or(INVALID_VALUE)?.clone();
        self.ctx(g.ctx)?;
        let id = self.id();
        self.graphs.execs.insert(id, g);
        Ok(id)
    }

    /// `cuGraphLaunch`: the executable graph's nodes queued on `stream`.
    pub fn launch_graph(&mut self, ctx: u32, exec: u32, stream: StreamRef) -> R<()> {
        let g = self.graphs.execs.get(&exec).ok_or(INVALID_VALUE)?;
        if g.ctx != ctx {
            return Err(INVALID_CONTEXT);
        }
        if let StreamRef::Id(s) = stream
            && self.graphs.capturing(s)
        {
            self.log.notice(
                "cuGraphLaunch into a capturing stream (a child graph): not modelled by softcuda: CUDA_ERROR_NOT_SUPPORTED",
            );
            return Err(NOT_SUPPORTED);
        }
        let nodes = g.nodes.clone();
        for w in &nodes {
            if let Work::Launch { function, .. } = w
                && !self.functions.contains_key(function)
            {
                self.log.notice(
                    "cuGraphLaunch: a kernel node's function was unloaded since the capture: CUDA_ERROR_INVALID_HANDLE",
                );
                return Err(INVALID_HANDLE);
            }
        }
        // Ordered after this graph's previous launch (when still queued).
        let mut after = self
            .graphs
            .last_launch
            .get(&exec)
            .map(|&op| (Some(op), self.op_clock(ctx, op)));
        let mut last = None;
        for w in nodes {
            let op = self.enqueue(ctx, stream, w, after.take())?;
            last = Some(op);
        }
        if let Some(op) = last {
            self.graphs.last_launch.insert(exec, op);
        }
        self.log
            .trace(|| format!("graph exec {exec} launched on {stream:?}"));
        Ok(())
    }

    /// `cuGraphExecDestroy`: queued launches still run.
    pub fn destroy_exec(&mut self, exec: u32) -> R<()> {
        self.graphs.execs.remove(&exec).ok_or(INVALID_VALUE)?;
        self.graphs.last_launch.remove(&exec);
        Ok(())
    }

    /// `cuGraphDestroy`: executable graphs made from it stay valid.
    pub fn destroy_graph(&mut self, graph: u32) -> R<()> {
        self.graphs.graphs.remove(&graph).ok_or(INVALID_VALUE)?;
        Ok(())
    }

    /// Ids of the live graphs and executable graphs (tests).
    pub fn graph_ids(&self) -> (BTreeSet<u32>, BTreeSet<u32>) {
        (
            self.graphs.graphs.keys().copied().collect(),
            self.graphs.execs.keys().copied().collect(),
        )
    }
}

// The exported entry points (see `api.rs` for the conventions: one lock,
// per-thread current context, out-pointers checked for null).

/// `cuStreamBeginCapture_v2`
#[unsafe(no_mangle)]
pub extern "C" fn cuStreamBeginCapture_v2(stream: Handle, mode: c_int) -> CUresult {
    with("cuStreamBeginCapture_v2", |d| {
        let c = live_ctx(d)?;
        let s = stream_of(d, c, stream)?;
        d.begin_capture(c, s, mode)
    })
}

/// `SOFTCUDA_CAPTURE_HOLD_MS`: waits, the driver unlocked so that other
/// threads go on, until another thread has made a legacy-stream call during
/// `stream`'s capture, or the configured time has passed (then a notice).
fn hold_capture_open(stream: Handle) {
    let Some(ms) = peek(|d| d.config.capture_hold_ms).filter(|&ms| ms > 0) else {
        return;
    };
    let start = std::time::Instant::now();
    let waiting = || {
        peek(|d| {
            let c = ctx_of(d).ok()?;
            match stream_of(d, c, stream).ok()? {
                StreamRef::Id(s) => d
                    .graphs
                    .captures
                    .get(&s)
                    .map(|c| !c.legacy_from_another_thread),
                StreamRef::Legacy => None,
            }
        })
        .flatten()
        .unwrap_or(false)
    };
    while waiting() {
        if start.elapsed() >= std::time::Duration::from_millis(ms) {
            peek(|d| {
                d.log.notice(&format!(
                    "SOFTCUDA_CAPTURE_HOLD_MS={ms}: no other thread used the legacy stream during the capture; ending it"
                ))
            });
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// `cuStreamEndCapture`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamEndCapture(stream: Handle, graph: *mut Handle) -> CUresult {
    hold_capture_open(stream);
    with("cuStreamEndCapture", |d| {
        if graph.is_null() {
            return Err(INVALID_VALUE);
        }
        let c = ctx_of(d)?;
        let s = stream_of(d, c, stream)?;
        match d.end_capture(s) {
            Ok(g) => out(graph, handle(TAG_GRAPH, g)),
            Err(e) => {
                if e == STREAM_CAPTURE_INVALIDATED {
                    out(graph, std::ptr::null_mut())?;
                }
                Err(e)
            }
        }
    })
}

/// `cuStreamIsCapturing`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamIsCapturing(stream: Handle, status: *mut c_int) -> CUresult {
    with("cuStreamIsCapturing", |d| {
        let c = ctx_of(d)?;
        let s = stream_of(d, c, stream)?;
        if s == StreamRef::Legacy {
            d.legacy_implicit(c, false)?;
        }
        out(status, d.graphs.status(s))
    })
}

/// `cuGraphInstantiateWithFlags`
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGraphInstantiateWithFlags(
    exec: *mut Handle,
    graph: Handle,
    flags: c_ulonglong,
) -> CUresult {
    with("cuGraphInstantiateWithFlags", |d| {
        if exec.is_null() {
            return Err(INVALID_VALUE);
        }
        let g = unhandle(graph, TAG_GRAPH)?;
        let e = d.instantiate(g, flags)?;
        out(exec, handle(TAG_GRAPH_EXEC, e))
    })
}

/// `cuGraphLaunch`
#[unsafe(no_mangle)]
pub extern "C" fn cuGraphLaunch(exec: Handle, stream: Handle) -> CUresult {
    with("cuGraphLaunch", |d| {
        let e = unhandle(exec, TAG_GRAPH_EXEC)?;
        let c = live_ctx(d)?;
        let s = stream_of(d, c, stream)?;
        d.launch_graph(c, e, s)
    })
}

/// `cuGraphExecDestroy`
#[unsafe(no_mangle)]
pub extern "C" fn cuGraphExecDestroy(exec: Handle) -> CUresult {
    with("cuGraphExecDestroy", |d| {
        let e = unhandle(exec, TAG_GRAPH_EXEC)?;
        d.destroy_exec(e)
    })
}

/// `cuGraphDestroy`
#[unsafe(no_mangle)]
pub extern "C" fn cuGraphDestroy(graph: Handle) -> CUresult {
    with("cuGraphDestroy", |d| {
        let g = unhandle(graph, TAG_GRAPH)?;
        d.destroy_graph(g)
    })
}
