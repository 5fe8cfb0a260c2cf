//! The driver's state and semantics, behind the C functions of `api.rs`.
//! (Over 600 lines: the queue, its ordering and every operation's
//! execution share the `Driver` and `Context` state; the clocks are in
//! `order.rs`.)
//!
//! # The hostile ordering
//!
//! Every operation that CUDA lets complete asynchronously is queued, and
//! queued work runs only when something forces it:
//!
//! | call | what it does here |
//! | --- | --- |
//! | `cuLaunchKernel`, `cu*Async` | queued on their stream |
//! | `cuMemcpyHtoD` from pageable memory, `cuMemcpyDtoD`, `cuMemsetD*` | queued on the legacy default stream (the host bytes are staged at the call) |
//! | `cuMemcpyHtoD` from pinned memory | runs at once, after the legacy stream's earlier work |
//! | `cuMemcpyDtoH`, `cuMemcpyDtoHAsync` to pageable memory | forces its stream up to the copy |
//! | `cuStreamSynchronize`, `cuEventSynchronize`, `cuCtxSynchronize`, `cuMemFree`, `cuModuleUnload`, context release | force the work they wait for (all of it for the last four) |
//! | `cuStreamQuery`, `cuEventQuery` | `CUDA_ERROR_NOT_READY` the first time pending work is queried, then it runs |
//!
//! Ordering between streams is exactly CUDA's: work on a stream follows the
//! stream's earlier work; the legacy default stream waits for the earlier
//! work of every *blocking* stream and blocking streams wait for the legacy
//! stream; `CU_STREAM_NON_BLOCKING` streams wait for nothing on other
//! streams; `cuStreamWaitEvent` adds an edge. So a program that uploads with
//! the synchronous legacy-stream copies and then launches on a non-blocking
//! stream without synchronising reads memory the uploads have not reached
//! yet (fresh allocations hold the poison pattern `0x7fbadbad`, a NaN).
//!
//! With `SOFTCUDA_ORDERING=eager` everything runs at the call instead.
//!
//! # Overlap and races between operations
//!
//! Operations that CUDA does not order ([`crate::order`]: two created
//! streams, a non-blocking stream and the legacy stream, with no event or
//! host synchronisation between them) may overlap on hardware. The race
//! detector checks each launch and copy against the accesses of the earlier
//! operations it does not follow (its tags no longer reset per launch
//! there), and in the adversarial schedule launches forced together run
//! together, their blocks interleaved.
//!
//! # Errors
//!
//! Kernel faults (illegal or misaligned addresses, races, traps, barrier
//! misuse) surface at the call that forces the launch, are logged with the
//! kernel, block, thread, PTX line and address, and are sticky: every later
//! call in the context returns the same error, as on hardware.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use softcuda::{LaunchConfig, LaunchOptions, Module, OpLaunch, RaceCheck, Schedule};

use crate::config::{Config, Ordering};
use crate::errors::*;
use crate::log::Log;
pub use crate::order::StreamRef;
use crate::order::{self, Vc};

/// `CU_STREAM_NON_BLOCKING`
pub const STREAM_NON_BLOCKING: u32 = 1;
/// `CU_EVENT_DISABLE_TIMING`
pub const EVENT_DISABLE_TIMING: u32 = 2;

/// Concurrent earlier operations a launch or copy is race-checked against,
/// at most (the latest ones).
const CONCURRENT_KEPT: usize = 64;

/// Where a host-to-device copy reads from.
#[derive(Clone, Debug)]
pub enum HostSrc {
    /// Pageable memory: the bytes, copied at the call.
    Staged(Vec<u8>),
    /// Pinned memory: read when the copy runs.
    Pinned(usize, usize),
}

/// An operation queued on a stream (or captured into a graph, `graph.rs`).
#[derive(Clone, Debug)]
pub(crate) enum Work {
    Launch {
        function: u32,
        cfg: LaunchConfig,
        params: Vec<u8>,
    },
    HtoD {
        dst: u64,
        src: HostSrc,
    },
    DtoH {
        dst: usize,
        src: u64,
        len: usize,
    },
    DtoD {
        dst: u64,
        src: u64,
        len: usize,
    },
    Memset {
        dst: u64,
        pattern: Vec<u8>,
        count: u64,
    },
    Record {
        event: u32,
    },
    /// `cuStreamWaitEvent`: only its dependency matters.
    Wait,
}

#[derive(Debug)]
struct Pending {
    stream: StreamRef,
    deps: Vec<u64>,
    work: Work,
    queried: bool,
    /// What happens before it ([`crate::order`]).
    vc: Vc,
}

/// A context: its device memory, queue and sticky error.
pub struct Context {
    /// The device this context runs on.
    pub device: i32,
    /// `cuCtxCreate` flags.
    pub flags: u32,
    /// The interpreter's device (memory, architecture).
    pub dev: softcuda::Device,
    /// The first kernel fault, returned by every later call.
    pub sticky: Option<CUresult>,
    pending: BTreeMap<u64, Pending>,
    next_op: u64,
    legacy_tail: Option<u64>,
    /// The clock of the legacy stream's last operation.
    legacy_vc: Vc,
    /// What the host has waited for.
    host_vc: Vc,
    /// Every operation queued so far.
    all_vc: Vc,
    /// Operations run that later ones may not follow, per stream key (in
    /// the order they ran, which is their stream's order).
    done: BTreeMap<u32, Vec<u64>>,
    /// How many `done` held after it was last pruned.
    done_kept: usize,
    /// The clocks of queued operations and of those in `done`.
    vcs: HashMap<u64, Vc>,
    /// Modelled device time, seconds.
    pub clock: f64,
    /// Kernels run.
    pub launches: u64,
    limits: HashMap<i32, usize>,
    cache_config: i32,
    shared_config: i32,
}

/// A loaded module.
pub struct ModuleEntry {
    /// Owning context.
    pub ctx: u32,
    /// The decoded PTX.
    pub module: Arc<Module>,
    /// Function handles already given out, by name.
    functions: HashMap<String, u32>,
}

/// A kernel handle.
pub struct FunctionEntry {
    /// Owning context.
    pub ctx: u32,
    /// Owning module.
    pub module: u32,
    /// Kernel index in the module.
    pub index: usize,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    pub max_dynamic_shared: u32,
    /// `CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`.
    pub carveout: i32,
    /// `CU_FUNC_ATTRIBUTE_NUM_REGS`: the H200 JIT's count, an estimate, or
    /// `SOFTCUDA_REGISTERS` (`crate::jit`).
    pub registers: u32,
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`: 1024, the entry's
    /// `.maxntid` (not `.reqntid`, as on the H200), or what its registers
    /// allow, whichever is least.
    pub max_threads: u32,
}

/// A created stream.
pub struct StreamEntry {
    /// Owning context.
    pub ctx: u32,
    /// `CU_STREAM_*` flags.
    pub flags: u32,
    /// Priority.
    pub priority: i32,
    tail: Option<u64>,
    /// The clock of its last operation.
    vc: Vc,
}

/// An event.
pub struct EventEntry {
    /// Owning context.
    pub ctx: u32,
    /// `CU_EVENT_*` flags.
    pub flags: u32,
    /// The queued record, while pending.
    op: Option<u64>,
    /// Recorded at least once.
    pub recorded: bool,
    /// Modelled time at which the record ran.
    pub time: Option<f64>,
    queried: bool,
    /// The clock of the last record.
    vc: Vc,
}

/// The whole driver.
pub struct Driver {
    /// The configuration read at `cuInit`.
    pub config: Config,
    /// Log and stats sinks.
    pub log: Log,
    /// Contexts by id.
    pub contexts: HashMap<u32, Context>,
    /// The primary context of device 0 and its reference count.
    pub primary: Option<(u32, u32)>,
    /// Primary context flags.
    pub primary_flags: u32,
    /// Modules by id.
    pub modules: HashMap<u32, ModuleEntry>,
    /// Functions by id.
    pub functions: HashMap<u32, FunctionEntry>,
    /// Streams by id.
    pub streams: HashMap<u32, StreamEntry>,
    /// Events by id.
    pub events: HashMap<u32, EventEntry>,
    /// Pinned host allocations: address -> storage.
    pub pinned: BTreeMap<usize, Box<[u8]>>,
    /// Stream captures, graphs and executable graphs (`graph.rs`).
    pub graphs: crate::graph::Graphs,
    next_id: u32,
    timing_notice: bool,
}

/// `Result` with a `CUresult` error.
pub type R<T> = Result<T, CUresult>;

impl Driver {
    /// A driver with `config`.
    pub fn new(config: Config) -> Driver {
        let log = Log::new(config.log.clone(), config.stats.as_deref());
        Driver {
            config,
            log,
            contexts: HashMap::new(),
            primary: None,
            primary_flags: 0,
            modules: HashMap::new(),
            functions: HashMap::new(),
            streams: HashMap::new(),
            events: HashMap::new(),
            pinned: BTreeMap::new(),
            graphs: Default::default(),
            next_id: 1,
            timing_notice: false,
        }
    }

    pub(crate) fn id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    /// Creates a context on device 0.
    pub fn create_context(&mut self, flags: u32) -> u32 {
        let id = self.id();
        let c = &self.config;
        let mut arch = c.arch;
        arch.shared_optin = c.shared_optin;
        self.contexts.insert(
            id,
            Context {
                device: 0,
                flags,
                dev: softcuda::Device::new(arch, c.memory_bytes),
                sticky: None,
                pending: BTreeMap::new(),
                next_op: 1,
                legacy_tail: None,
                legacy_vc: Vc::default(),
                host_vc: Vc::default(),
                all_vc: Vc::default(),
                done: BTreeMap::new(),
                done_kept: 32,
                vcs: HashMap::new(),
                clock: 0.0,
                launches: 0,
                limits: HashMap::new(),
                cache_config: 0,
                shared_config: 0,
            },
        );
        self.log.trace(|| format!("context {id} created"));
        id
    }

    /// Destroys context `id` after running its queued work.
    pub fn destroy_context(&mut self, id: u32) -> R<()> {
        if !self.contexts.contains_key(&id) {
            return Err(INVALID_CONTEXT);
        }
        let _ = self.synchronize(id);
        self.contexts.remove(&id);
        self.modules.retain(|_, m| m.ctx != id);
        self.functions.retain(|_, f| f.ctx != id);
        self.streams.retain(|_, s| s.ctx != id);
        self.events.retain(|_, e| e.ctx != id);
        self.graphs.forget_context(id);
        self.log.trace(|| format!("context {id} destroyed"));
        Ok(())
    }

    /// The context `id`, if it exists and has no sticky error.
    pub fn ctx(&mut self, id: u32) -> R<&mut Context> {
        match self.contexts.get_mut(&id) {
            None => Err(INVALID_CONTEXT),
            Some(c) => match c.sticky {
                Some(e) => Err(e),
                None => Ok(c),
            },
        }
    }

    /// Resolves a stream handle's id for context `ctx`.
    pub fn stream_ref(&self, ctx: u32, id: Option<u32>) -> R<StreamRef> {
        match id {
            None => Ok(StreamRef::Legacy),
            Some(s) => match self.streams.get(&s) {
                Some(e) if e.ctx == ctx => Ok(StreamRef::Id(s)),
                Some(_) => Err(INVALID_CONTEXT),
                None => Err(INVALID_HANDLE),
            },
        }
    }

    fn blocking(&self, s: StreamRef) -> bool {
        match s {
            StreamRef::Legacy => true,
            StreamRef::Id(id) => self
                .streams
                .get(&id)
                .is_some_and(|e| e.flags & STREAM_NON_BLOCKING == 0),
        }
    }

    /// Queues `work` on `stream` with CUDA's ordering (plus `after`, an
    /// event's record and its clock); runs it at once in eager mode.
    /// Returns the operation's id (0: captured into a graph instead,
    /// `graph.rs`).
    pub(crate) fn enqueue(
        &mut self,
        ctx: u32,
        stream: StreamRef,
        work: Work,
        after: Option<(Option<u64>, Vc)>,
    ) -> R<u64> {
        let Some(work) = self.capture_hook(ctx, stream, work)? else {
            return Ok(0);
        };
        let mut deps: Vec<u64> = Vec::new();
        let blocking = self.blocking(stream);
        let mut vc = Vc::default();
        if let Some((dep, event_vc)) = after {
            deps.extend(dep);
            vc.join(&event_vc);
        }
        let blocking_tails: Vec<(Option<u64>, Vc)> = if stream == StreamRef::Legacy {
            self.streams
                .values()
                .filter(|s| s.ctx == ctx && s.flags & STREAM_NON_BLOCKING == 0)
                .map(|s| (s.tail, s.vc.clone()))
                .collect()
        } else {
            Vec::new()
        };
        let c = self.ctx(ctx)?;
        let id = c.next_op;
        c.next_op += 1;
        vc.join(&c.host_vc);
        match stream {
            StreamRef::Legacy => {
                deps.extend(c.legacy_tail);
                vc.join(&c.legacy_vc);
                for (t, v) in blocking_tails {
                    deps.extend(t);
                    vc.join(&v);
                }
                c.legacy_tail = Some(id);
            }
            StreamRef::Id(_) => {
                if blocking {
                    deps.extend(c.legacy_tail);
                    vc.join(&c.legacy_vc);
                }
            }
        }
        if let StreamRef::Id(s) = stream
            && let Some(e) = self.streams.get_mut(&s)
        {
            deps.extend(e.tail);
            vc.join(&e.vc);
            vc.add(order::key(stream), id);
            e.tail = Some(id);
            e.vc = vc.clone();
        }
        let c = self.contexts.get_mut(&ctx).expect("checked");
        vc.add(order::key(stream), id);
        if stream == StreamRef::Legacy {
            c.legacy_vc = vc.clone();
        }
        c.all_vc.join(&vc);
        c.vcs.insert(id, vc.clone());
        deps.retain(|d| c.pending.contains_key(d));
        c.pending.insert(
            id,
            Pending {
                stream,
                deps,
                work,
                queried: false,
                vc,
            },
        );
        if self.config.ordering == Ordering::Eager {
            self.run_up_to(ctx, id)?;
        }
        Ok(id)
    }

    /// The host waited for operation `op`: everything it queues from now on
    /// follows `op` and what preceded it.
    fn observe(&mut self, ctx: u32, op: u64) {
        if let Some(c) = self.contexts.get_mut(&ctx)
            && let Some(vc) = c.vcs.get(&op).cloned()
        {
            c.host_vc.join(&vc);
        }
    }

    /// Runs operation `op` and everything it depends on, and the host waits
    /// for it.
    pub fn complete(&mut self, ctx: u32, op: u64) -> R<()> {
        let r = self.run_up_to(ctx, op);
        self.observe(ctx, op);
        r
    }

    /// Runs operation `op` and everything it depends on (launches CUDA lets
    /// overlap together, in the adversarial schedule).
    fn run_up_to(&mut self, ctx: u32, op: u64) -> R<()> {
        let c = self.contexts.get_mut(&ctx).ok_or(INVALID_CONTEXT)?;
        let mut need = BTreeSet::new();
        let mut stack = vec![op];
        while let Some(x) = stack.pop() {
            if let Some(p) = c.pending.get(&x)
                && need.insert(x)
            {
                stack.extend(p.deps.iter().copied());
            }
        }
        // Dependencies always have smaller ids: ascending order is a valid
        // execution order.
        for x in need {
            let group = self.overlapping(ctx, x);
            if group.len() > 1 {
                self.execute_launches(ctx, &group)?;
            } else {
                self.execute(ctx, x)?;
            }
        }
        match self.contexts.get(&ctx).and_then(|c| c.sticky) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Runs everything queued in `ctx`.
    pub fn synchronize(&mut self, ctx: u32) -> R<()> {
        let last = self
            .contexts
            .get(&ctx)
            .ok_or(INVALID_CONTEXT)?
            .pending
            .keys()
            .copied()
            .collect::<Vec<_>>();
        for op in last {
            self.run_up_to(ctx, op)?;
        }
        if let Some(c) = self.contexts.get_mut(&ctx) {
            c.host_vc = c.all_vc.clone();
        }
        match self.contexts.get(&ctx).and_then(|c| c.sticky) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Runs everything queued on `stream`.
    pub fn stream_synchronize(&mut self, ctx: u32, stream: StreamRef) -> R<()> {
        self.capture_forbids(ctx, Some(stream))?;
        let tail = match stream {
            StreamRef::Legacy => self.contexts.get(&ctx).ok_or(INVALID_CONTEXT)?.legacy_tail,
            StreamRef::Id(s) => self.streams.get(&s).ok_or(INVALID_HANDLE)?.tail,
        };
        match tail {
            Some(t) => self.complete(ctx, t),
            None => self.ctx(ctx).map(|_| ()),
        }
    }

    /// `cuStreamQuery`: pending work reports NOT_READY once, then runs.
    pub fn stream_query(&mut self, ctx: u32, stream: StreamRef) -> R<()> {
        self.capture_forbids(ctx, Some(stream))?;
        let tail = match stream {
            StreamRef::Legacy => self.ctx(ctx)?.legacy_tail,
            StreamRef::Id(s) => self.streams.get(&s).ok_or(INVALID_HANDLE)?.tail,
        };
        self.query(ctx, tail)
    }

    fn query(&mut self, ctx: u32, op: Option<u64>) -> R<()> {
        let c = self.ctx(ctx)?;
        match op.and_then(|o| c.pending.get_mut(&o)) {
            None => {
                // Done: the host now knows it.
                if let Some(o) = op {
                    self.observe(ctx, o);
                }
                Ok(())
            }
            Some(p) if !p.queried => {
                p.queried = true;
                Err(NOT_READY)
            }
            Some(_) => self.complete(ctx, op.expect("pending")),
        }
    }

    /// The launches queued after launch `x` that may run together with it:
    /// in the adversarial schedule, those whose dependencies have all run
    /// and that follow no member of the group (CUDA lets them overlap; on
    /// hardware they would be running already, forced or not). Otherwise
    /// just `x`.
    fn overlapping(&self, ctx: u32, x: u64) -> Vec<u64> {
        const MOST: usize = 8;
        let mut group = vec![x];
        if !matches!(self.config.schedule, Schedule::Adversarial { .. }) {
            return group;
        }
        let Some(c) = self.contexts.get(&ctx) else {
            return group;
        };
        let launch = |o: &u64| {
            c.pending
                .get(o)
                .filter(|p| matches!(p.work, Work::Launch { .. }))
        };
        if launch(&x).is_none() {
            return group;
        }
        // The next queued operations only (a long queue on one stream would
        // make this quadratic).
        for y in c.pending.range(x + 1..).map(|(y, _)| y).take(256) {
            let Some(py) = launch(y) else {
                continue;
            };
            if py.deps.iter().any(|d| c.pending.contains_key(d))
                || group
                    .iter()
                    .any(|m| py.vc.covers(order::key(c.pending[m].stream), *m))
            {
                continue;
            }
            group.push(*y);
            if group.len() == MOST {
                break;
            }
        }
        group
    }

    /// Earlier operations that the operation with clock `vc` does not
    /// follow (for the race detector): the latest [`CONCURRENT_KEPT`] of
    /// them (an older one left out is taken as ordered: a race with it may
    /// be missed, none is invented).
    fn concurrent_with(c: &Context, vc: &Vc) -> Vec<u32> {
        let mut out: Vec<u64> = Vec::new();
        for (&k, ops) in &c.done {
            let known = vc.latest(k);
            let first = ops.partition_point(|&a| a <= known);
            out.extend(&ops[first..]);
        }
        out.sort_unstable_by(|a, b| b.cmp(a));
        out.truncate(CONCURRENT_KEPT);
        out.into_iter().map(|a| a as u32).collect()
    }

    /// Operation `op` ran: later operations that do not follow it are
    /// checked against it. Forgets those that every queued and every future
    /// operation follows (what the host waited for, when each queued
    /// operation follows it too).
    fn retire(&mut self, ctx: u32, op: u64, key: u32) {
        let Some(c) = self.contexts.get_mut(&ctx) else {
            return;
        };
        c.done.entry(key).or_default().push(op);
        let total: usize = c.done.values().map(Vec::len).sum();
        if total >= 2 * c.done_kept {
            for (&k, ops) in c.done.iter_mut() {
                let floor = c
                    .pending
                    .values()
                    .map(|p| p.vc.latest(k))
                    .fold(c.host_vc.latest(k), u64::min);
                ops.retain(|&a| a > floor);
            }
            c.done.retain(|_, ops| !ops.is_empty());
            c.done_kept = c.done.values().map(Vec::len).sum::<usize>().max(32);
            let done: BTreeSet<u64> = c.done.values().flatten().copied().collect();
            c.vcs
                .retain(|o, _| done.contains(o) || c.pending.contains_key(o));
        }
    }

    /// Runs the launches `ops` together (one, or several CUDA lets overlap).
    fn execute_launches(&mut self, ctx: u32, ops: &[u64]) -> R<()> {
        struct One {
            op: u64,
            stream: String,
            module: Arc<Module>,
            index: usize,
            cfg: LaunchConfig,
            params: Vec<u8>,
            concurrent: Vec<u32>,
        }
        let c = self.contexts.get_mut(&ctx).ok_or(INVALID_CONTEXT)?;
        let mut taken = Vec::new();
        for &o in ops {
            if let Some(p) = c.pending.remove(&o) {
                taken.push((o, p));
            }
        }
        if c.sticky.is_some() {
            return Ok(());
        }
        let c = self.contexts.get(&ctx).expect("checked");
        let mut group = Vec::new();
        let mut retired = Vec::new();
        for (op, p) in taken {
            let key = order::key(p.stream);
            retired.push((op, key));
            let Work::Launch {
                function,
                cfg,
                params,
            } = p.work
            else {
                continue;
            };
            let Some(f) = self.functions.get(&function) else {
                continue;
            };
            let Some(m) = self.modules.get(&f.module) else {
                continue;
            };
            group.push(One {
                op,
                stream: match p.stream {
                    StreamRef::Legacy => "legacy stream".to_owned(),
                    StreamRef::Id(s) => format!("stream {s}"),
                },
                module: Arc::clone(&m.module),
                index: f.index,
                cfg,
                params,
                concurrent: Self::concurrent_with(c, &p.vc),
            });
        }
        let c = self.contexts.get_mut(&ctx).expect("checked");
        c.launches += group.len() as u64;
        let schedule = match self.config.schedule {
            Schedule::Adversarial { seed } => Schedule::Adversarial {
                seed: seed.wrapping_add(c.launches),
            },
            s => s,
        };
        let opts = LaunchOptions {
            schedule,
            races: self.config.races,
            max_warp_instructions: self.config.max_instructions,
            shared_limit: self.config.shared_optin,
        };
        let launches: Vec<OpLaunch> = group
            .iter()
            .map(|g| OpLaunch {
                kernel: &g.module.kernels[g.index],
                cfg: g.cfg,
                params: &g.params,
                op: g.op as u32,
                concurrent: g.concurrent.clone(),
                name: format!(
                    "kernel {} on {} (op {})",
                    g.module.kernels[g.index].name, g.stream, g.op
                ),
            })
            .collect();
        let first_launch = c.launches + 1 - group.len() as u64;
        let result = c.dev.launch_ops(&launches, &opts);
        match result {
            Ok(all) => {
                for (k, (g, stats)) in group.iter().zip(all).enumerate() {
                    let kernel = &g.module.kernels[g.index];
                    let (op, stream, cfg) = (g.op, &g.stream, g.cfg);
                    let secs = c.dev.arch.model_seconds(&stats, cfg.blocks());
                    c.clock += secs;
                    let launch_no = first_launch + k as u64;
                    let json = format!(
                        "{{\"op\":{op},\"launch\":{launch_no},\"kernel\":\"{}\",\"grid\":[{},{},{}],\"block\":[{},{},{}],\"dynamic_shared\":{},\"stream\":\"{stream}\",\"arch\":\"{}\",\"schedule\":\"{}\",{},\"modelled_seconds\":{secs:.9e},\"time_is_modelled\":true}}",
                        kernel.name,
                        cfg.grid[0],
                        cfg.grid[1],
                        cfg.grid[2],
                        cfg.block[0],
                        cfg.block[1],
                        cfg.block[2],
                        cfg.dynamic_shared,
                        c.dev.arch.name,
                        match schedule {
                            Schedule::Deterministic => "deterministic".to_owned(),
                            Schedule::Adversarial { seed } => format!("adversarial:{seed}"),
                        },
                        stats.json_fields()
                    );
                    self.log.stats(&json);
                    self.log.trace(|| {
                        format!(
                            "op {op}: ran {} on {stream}{}: {} warp-instructions, {} shared wavefronts, {} global sectors (modelled {:.3} us)",
                            kernel.name,
                            if group.len() > 1 {
                                format!(" overlapped with {} other launches", group.len() - 1)
                            } else {
                                String::new()
                            },
                            stats.warp_instructions,
                            stats.shared_wavefronts,
                            stats.global_sectors,
                            secs * 1e6
                        )
                    });
                }
            }
            Err((i, e)) => {
                let code = e.code.cu_result();
                if e.code.sticky() {
                    c.sticky = Some(code);
                    c.pending.clear();
                }
                let g = &group[i];
                self.log.notice(&format!(
                    "op {}: launch of {} on {} failed with {}: {} (the error is sticky: every later call in this context returns it)",
                    g.op,
                    g.module.kernels[g.index].name,
                    g.stream,
                    name(code),
                    e.message
                ));
                return Err(code);
            }
        }
        for (op, key) in retired {
            self.retire(ctx, op, key);
        }
        Ok(())
    }

    fn execute(&mut self, ctx: u32, op: u64) -> R<()> {
        let Some(c) = self.contexts.get_mut(&ctx) else {
            return Err(INVALID_CONTEXT);
        };
        match c.pending.get(&op) {
            None => return Ok(()),
            Some(p) if matches!(p.work, Work::Launch { .. }) => {
                return self.execute_launches(ctx, &[op]);
            }
            Some(_) => {}
        }
        let p = c.pending.remove(&op).expect("pending");
        if c.sticky.is_some() {
            return Ok(());
        }
        let stream = match p.stream {
            StreamRef::Legacy => "legacy stream".to_owned(),
            StreamRef::Id(s) => format!("stream {s}"),
        };
        // The race detector: a copy against the operations it does not follow.
        let accesses: Vec<(u64, usize, bool, &str)> = match &p.work {
            Work::HtoD { dst, src } => {
                let len = match src {
                    HostSrc::Staged(v) => v.len(),
                    HostSrc::Pinned(_, len) => *len,
                };
                vec![(*dst, len, true, "host-to-device copy")]
            }
            Work::DtoH { src, len, .. } => vec![(*src, *len, false, "device-to-host copy")],
            Work::DtoD { dst, src, len } => vec![
                (*src, *len, false, "device-to-device copy"),
                (*dst, *len, true, "device-to-device copy"),
            ],
            Work::Memset {
                dst,
                pattern,
                count,
            } => {
                vec![(*dst, *count as usize * pattern.len(), true, "memset")]
            }
            _ => Vec::new(),
        };
        if self.config.races == RaceCheck::All && !accesses.is_empty() {
            let concurrent = Self::concurrent_with(c, &p.vc);
            for (addr, len, write, what) in accesses {
                let name = format!("{what} of {len} bytes on {stream} (op {op})");
                if let Err(e) =
                    c.dev
                        .check_copy(op as u32, &name, &concurrent, addr, len as u64, write)
                {
                    let code = e.code.cu_result();
                    c.sticky = Some(code);
                    c.pending.clear();
                    self.log.notice(&format!(
                        "op {op}: {} (the error is sticky: every later call in this context returns it)",
                        e.message
                    ));
                    return Err(code);
                }
            }
        }
        let key = order::key(p.stream);
        match p.work {
            Work::Launch { .. } => unreachable!("launches run in execute_launches"),
            Work::HtoD { dst, src } => {
                let data: &[u8] = match &src {
                    HostSrc::Staged(v) => v,
                    // SAFETY: `ptr..ptr+len` lies inside a pinned allocation
                    // of this driver (checked when queued), which cuMemFreeHost
                    // only releases after running all queued work.
                    HostSrc::Pinned(ptr, len) => unsafe {
                        std::slice::from_raw_parts(*ptr as *const u8, *len)
                    },
                };
                let len = data.len();
                if let Err(e) = c.dev.memory.write(dst, data) {
                    return self.copy_fault(ctx, op, "host-to-device copy", dst, len, e);
                }
                c.clock += c.dev.arch.model_copy_seconds(len as u64);
                self.log
                    .trace(|| format!("op {op}: copied {len} bytes host -> {dst:#x} on {stream}"));
            }
            Work::DtoH { dst, src, len } => {
                let mut tmp = vec![0u8; len];
                if let Err(e) = c.dev.memory.read(src, &mut tmp) {
                    return self.copy_fault(ctx, op, "device-to-host copy", src, len, e);
                }
                // SAFETY: `dst` is either the caller's buffer of at least
                // `len` bytes, valid for the synchronous call that forces this
                // copy, or a pinned allocation of this driver (kept alive
                // until its queued work has run).
                unsafe { std::ptr::copy_nonoverlapping(tmp.as_ptr(), dst as *mut u8, len) };
                c.clock += c.dev.arch.model_copy_seconds(len as u64);
                self.log
                    .trace(|| format!("op {op}: copied {len} bytes {src:#x} -> host on {stream}"));
            }
            Work::DtoD { dst, src, len } => {
                let mut tmp = vec![0u8; len];
                if let Err(e) = c.dev.memory.read(src, &mut tmp) {
                    return self.copy_fault(ctx, op, "device-to-device copy", src, len, e);
                }
                if let Err(e) = c.dev.memory.write(dst, &tmp) {
                    return self.copy_fault(ctx, op, "device-to-device copy", dst, len, e);
                }
                c.clock += 2.0 * len as f64 / c.dev.arch.bandwidth;
            }
            Work::Memset {
                dst,
                pattern,
                count,
            } => {
                if let Err(e) = c.dev.memory.fill(dst, &pattern, count) {
                    let len = count as usize * pattern.len();
                    return self.copy_fault(ctx, op, "memset", dst, len, e);
                }
                c.clock += count as f64 * pattern.len() as f64 / c.dev.arch.bandwidth;
                self.log.trace(|| {
                    format!(
                        "op {op}: memset {} bytes at {dst:#x} on {stream}",
                        count as usize * pattern.len()
                    )
                });
            }
            Work::Record { event } => {
                let now = c.clock;
                if let Some(e) = self.events.get_mut(&event)
                    && e.op == Some(op)
                {
                    e.op = None;
                    e.time = Some(now);
                }
            }
            Work::Wait => {}
        }
        self.retire(ctx, op, key);
        Ok(())
    }

    fn copy_fault(
        &mut self,
        ctx: u32,
        op: u64,
        what: &str,
        addr: u64,
        len: usize,
        e: softcuda::memory::MemError,
    ) -> R<()> {
        // A queued copy or memset outside every allocation: the real driver
        // checks ranges at the call; here it may only show when the work
        // runs, as an illegal address.
        let c = self.contexts.get_mut(&ctx).expect("checked");
        c.sticky = Some(ILLEGAL_ADDRESS);
        c.pending.clear();
        self.log.notice(&format!(
            "op {op}: {what} of {len} bytes at {addr:#x} is outside every allocation ({e:?}): CUDA_ERROR_ILLEGAL_ADDRESS (sticky)"
        ));
        Err(ILLEGAL_ADDRESS)
    }

    /// Checks that `[addr, addr + len)` lies in one allocation of `ctx`.
    pub fn check_range(&mut self, ctx: u32, addr: u64, len: usize) -> R<()> {
        if len == 0 {
            return Ok(());
        }
        let c = self.ctx(ctx)?;
        match c.dev.memory.allocation_of(addr) {
            Some((base, size)) if addr + len as u64 <= base + size => Ok(()),
            _ => {
                self.log.notice(&format!(
                    "{len} bytes at {addr:#x}: not inside one allocation: CUDA_ERROR_INVALID_VALUE"
                ));
                Err(INVALID_VALUE)
            }
        }
    }

    /// Whether `[ptr, ptr + len)` lies in a pinned host allocation.
    pub fn is_pinned(&self, ptr: usize, len: usize) -> bool {
        self.pinned
            .range(..=ptr)
            .next_back()
            .is_some_and(|(&base, b)| ptr + len <= base + b.len())
    }

    /// `cuMemcpyHtoD` (legacy stream, `stream` None) and `cuMemcpyHtoDAsync`.
    pub fn copy_htod(
        &mut self,
        ctx: u32,
        dst: u64,
        src: &[u8],
        stream: Option<StreamRef>,
    ) -> R<()> {
        self.check_range(ctx, dst, src.len())?;
        let pinned = self.is_pinned(src.as_ptr() as usize, src.len());
        let host = if pinned {
            HostSrc::Pinned(src.as_ptr() as usize, src.len())
        } else {
            HostSrc::Staged(src.to_vec())
        };
        let s = stream.unwrap_or(StreamRef::Legacy);
        let op = self.enqueue(ctx, s, Work::HtoD { dst, src: host }, None)?;
        self.log.trace(|| {
            format!(
                "op {op}: queued host-to-device copy of {} bytes to {dst:#x} ({})",
                src.len(),
                if pinned {
                    "pinned"
                } else {
                    "pageable: staged, completes late"
                }
            )
        });
        if stream.is_none() && pinned {
            // Synchronous with respect to the host from pinned memory.
            self.complete(ctx, op)?;
        }
        Ok(())
    }

    /// `cuMemcpyDtoH` / `cuMemcpyDtoHAsync` into `dst` (`len` bytes).
    ///
    /// # Safety
    /// `dst` must be valid for `len` bytes of writes for the duration of the
    /// call, and, for an asynchronous copy into pinned memory, until the
    /// copy runs.
    pub unsafe fn copy_dtoh(
        &mut self,
        ctx: u32,
        dst: *mut u8,
        src: u64,
        len: usize,
        stream: Option<StreamRef>,
    ) -> R<()> {
        self.check_range(ctx, src, len)?;
        let pinned = self.is_pinned(dst as usize, len);
        let s = stream.unwrap_or(StreamRef::Legacy);
        let op = self.enqueue(
            ctx,
            s,
            Work::DtoH {
                dst: dst as usize,
                src,
                len,
            },
            None,
        )?;
        if stream.is_none() || !pinned {
            // Synchronous copies, and any copy into pageable memory, return
            // only once the copy is done.
            self.complete(ctx, op)?;
        }
        Ok(())
    }

    /// `cuMemcpyDtoD` (legacy) / `cuMemcpyDtoDAsync`.
    pub fn copy_dtod(
        &mut self,
        ctx: u32,
        dst: u64,
        src: u64,
        len: usize,
        stream: Option<StreamRef>,
    ) -> R<()> {
        self.check_range(ctx, src, len)?;
        self.check_range(ctx, dst, len)?;
        self.enqueue(
            ctx,
            stream.unwrap_or(StreamRef::Legacy),
            Work::DtoD { dst, src, len },
            None,
        )?;
        Ok(())
    }

    /// `cuMemsetD8/16/32` (legacy) and their `Async` forms.
    pub fn memset(
        &mut self,
        ctx: u32,
        dst: u64,
        pattern: &[u8],
        count: usize,
        stream: Option<StreamRef>,
    ) -> R<()> {
        self.check_range(ctx, dst, count * pattern.len())?;
        if !dst.is_multiple_of(pattern.len() as u64) {
            return Err(INVALID_VALUE);
        }
        let op = self.enqueue(
            ctx,
            stream.unwrap_or(StreamRef::Legacy),
            Work::Memset {
                dst,
                pattern: pattern.to_vec(),
                count: count as u64,
            },
            None,
        )?;
        self.log.trace(|| {
            format!(
                "op {op}: queued memset of {} bytes at {dst:#x}",
                count * pattern.len()
            )
        });
        Ok(())
    }

    /// Loads PTX text into `ctx`.
    pub fn load_module(&mut self, ctx: u32, image: &[u8]) -> R<u32> {
        self.ctx(ctx)?;
        if image.starts_with(b"\x7fELF") || image.starts_with(&[0x50, 0xed, 0x55, 0xba]) {
            self.log.notice("cuModuleLoadData: a cubin or fatbin image; softcuda runs PTX text only: CUDA_ERROR_NO_BINARY_FOR_GPU");
            return Err(209);
        }
        let Ok(text) = std::str::from_utf8(image) else {
            self.log.notice(
                "cuModuleLoadData: the image is not UTF-8 PTX text: CUDA_ERROR_INVALID_IMAGE",
            );
            return Err(INVALID_IMAGE);
        };
        let module = crate::jit::load(&self.config, text).map_err(|(code, message)| {
            self.log.notice(&format!("cuModuleLoadData: {message}"));
            code
        })?;
        for (name, _) in &self.config.registers.per_entry {
            if !module.kernels.iter().any(|k| &k.name == name) {
                self.log.notice(&format!(
                    "cuModuleLoadData: SOFTCUDA_REGISTERS names {name}, which this module does not have"
                ));
            }
        }
        let id = self.id();
        self.log.trace(|| {
            format!(
                "module {id} loaded: {} entry points ({})",
                module.kernels.len(),
                module
                    .kernels
                    .iter()
                    .map(|k| k.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
        self.modules.insert(
            id,
            ModuleEntry {
                ctx,
                module: Arc::new(module),
                functions: HashMap::new(),
            },
        );
        Ok(id)
    }

    /// `cuModuleGetFunction`: the same handle for the same name.
    pub fn get_function(&mut self, module: u32, name: &str) -> R<u32> {
        let arch_default = self.config.shared_default;
        let m = self.modules.get(&module).ok_or(INVALID_HANDLE)?;
        if let Some(&f) = m.functions.get(name) {
            return Ok(f);
        }
        let Some(index) = m.module.kernels.iter().position(|k| k.name == name) else {
            self.log.notice(&format!(
                "cuModuleGetFunction: no entry point named {name}: CUDA_ERROR_NOT_FOUND"
            ));
            return Err(NOT_FOUND);
        };
        let ctx = m.ctx;
        let kernel = &m.module.kernels[index];
        let stat = kernel.static_shared;
        let registers = self.config.registers.of(name).unwrap_or(kernel.registers);
        // `.maxntid` lowers the attribute; `.reqntid` does not (the H200
        // reported 1024 for `.reqntid 64`: h200_jit_probe.json).
        let directive = match kernel.reqntid {
            Some(_) => 1024,
            None => kernel.max_threads.unwrap_or(1024),
        };
        let max_threads = self
            .config
            .arch
            .max_threads_for_registers(registers)
            .min(directive);
        let id = self.id();
        self.functions.insert(
            id,
            FunctionEntry {
                ctx,
                module,
                index,
                max_dynamic_shared: arch_default.saturating_sub(stat),
                carveout: -1,
                registers,
                max_threads,
            },
        );
        self.modules
            .get_mut(&module)
            .expect("checked")
            .functions
            .insert(name.to_owned(), id);
        Ok(id)
    }

    /// Unloads a module (after running all queued work of its context).
    pub fn unload_module(&mut self, module: u32) -> R<()> {
        let ctx = self.modules.get(&module).ok_or(INVALID_HANDLE)?.ctx;
        let r = self.synchronize(ctx);
        self.modules.remove(&module);
        self.functions.retain(|_, f| f.module != module);
        r
    }

    /// `cuLaunchKernel` after the C layer has gathered the parameter bytes:
    /// checks the shape and the shared memory as the driver does, then queues.
    pub fn launch(
        &mut self,
        ctx: u32,
        function: u32,
        cfg: LaunchConfig,
        params: Vec<u8>,
        stream: StreamRef,
    ) -> R<()> {
        self.ctx(ctx)?;
        let f = self.functions.get(&function).ok_or(INVALID_HANDLE)?;
        if f.ctx != ctx {
            return Err(INVALID_CONTEXT);
        }
        let m = self.modules.get(&f.module).ok_or(INVALID_HANDLE)?;
        let kernel = &m.module.kernels[f.index];
        let name = kernel.name.clone();
        let [bx, by, bz] = cfg.block;
        let [gx, gy, gz] = cfg.grid;
        let mut problem = None;
        if bx == 0
            || by == 0
            || bz == 0
            || bx > 1024
            || by > 1024
            || bz > 64
            || cfg.block_threads() > 1024
        {
            problem = Some(format!(
                "block ({bx}, {by}, {bz}) exceeds the device limits (1024 threads, z <= 64)"
            ));
        } else if gx == 0 || gy == 0 || gz == 0 || gx >= 1 << 31 || gy > 65535 || gz > 65535 {
            problem = Some(format!(
                "grid ({gx}, {gy}, {gz}) is empty or exceeds the device limits"
            ));
        } else if let Some(req) = kernel.reqntid.filter(|&r| r != cfg.block) {
            problem = Some(crate::jit::reqntid_problem(req, cfg.block));
        } else if let Some(max) = kernel
            .max_threads
            .filter(|&m| kernel.reqntid.is_none() && cfg.block_threads() > m as u64)
        {
            // The H200 answered CUDA_ERROR_INVALID_VALUE for a block over
            // `.maxntid`, not the register limit's LAUNCH_OUT_OF_RESOURCES.
            problem = Some(format!(
                "{} threads per block, the entry's .maxntid allows {max}",
                cfg.block_threads()
            ));
        } else if cfg.dynamic_shared > f.max_dynamic_shared {
            problem = Some(format!(
                "{} bytes of dynamic shared memory, the function allows {} (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES): more than {} KiB must be opted into with cuFuncSetAttribute, as on hardware",
                cfg.dynamic_shared,
                f.max_dynamic_shared,
                self.config.shared_default / 1024
            ));
        } else if params.len() != kernel.param_bytes as usize {
            problem = Some(format!(
                "{} bytes of parameters, the entry's .param list ({}) takes {}",
                params.len(),
                kernel.param_signature(),
                kernel.param_bytes
            ));
        }
        if let Some(p) = problem {
            self.log.notice(&format!(
                "cuLaunchKernel {name}: {p}: CUDA_ERROR_INVALID_VALUE"
            ));
            return Err(INVALID_VALUE);
        }
        if cfg.block_threads() > f.max_threads as u64 {
            // What hardware says when the block's registers do not fit
            // (they lower CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK).
            self.log.notice(&format!(
                "cuLaunchKernel {name}: {} threads per block, the function allows {} ({}): CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                cfg.block_threads(),
                f.max_threads,
                crate::jit::limit_reason(kernel, f.registers, f.max_threads)
            ));
            return Err(LAUNCH_OUT_OF_RESOURCES);
        }
        let op = self.enqueue(
            ctx,
            stream,
            Work::Launch {
                function,
                cfg,
                params,
            },
            None,
        )?;
        self.log.trace(|| {
            format!(
                "op {op}: queued {name} grid ({gx}, {gy}, {gz}) block ({bx}, {by}, {bz}) dynamic shared {} on {stream:?}",
                cfg.dynamic_shared
            )
        });
        Ok(())
    }

    /// The clock of queued operation `op` (empty once it ran and was pruned).
    pub(crate) fn op_clock(&self, ctx: u32, op: u64) -> Vc {
        self.contexts
            .get(&ctx)
            .and_then(|c| c.vcs.get(&op))
            .cloned()
            .unwrap_or_default()
    }

    /// `cuEventRecord`.
    pub fn record(&mut self, event: u32, stream: StreamRef) -> R<()> {
        let ctx = self.events.get(&event).ok_or(INVALID_HANDLE)?.ctx;
        if let Some(r) = self.capture_record(event, stream) {
            return r;
        }
        let op = self.enqueue(ctx, stream, Work::Record { event }, None)?;
        let vc = self.contexts[&ctx]
            .vcs
            .get(&op)
            .cloned()
            .unwrap_or_default();
        let e = self.events.get_mut(&event).expect("checked");
        e.op = Some(op);
        e.vc = vc;
        e.time = None;
        e.recorded = true;
        e.queried = false;
        Ok(())
    }

    /// `cuEventSynchronize`.
    pub fn event_synchronize(&mut self, event: u32) -> R<()> {
        let e = self.events.get(&event).ok_or(INVALID_HANDLE)?;
        if self.graphs.is_captured_event(event) {
            return Err(CAPTURED_EVENT);
        }
        let ctx = e.ctx;
        match e.op {
            Some(op) => self.complete(ctx, op),
            None => {
                let vc = e.vc.clone();
                self.ctx(ctx)?.host_vc.join(&vc);
                Ok(())
            }
        }
    }

    /// `cuEventQuery`.
    pub fn event_query(&mut self, event: u32) -> R<()> {
        if self.graphs.is_captured_event(event) {
            return Err(CAPTURED_EVENT);
        }
        let e = self.events.get_mut(&event).ok_or(INVALID_HANDLE)?;
        let ctx = e.ctx;
        match e.op {
            None => {
                let vc = e.vc.clone();
                self.ctx(ctx)?.host_vc.join(&vc);
                Ok(())
            }
            Some(_) if !e.queried => {
                e.queried = true;
                self.ctx(ctx)?;
                Err(NOT_READY)
            }
            Some(op) => self.complete(ctx, op),
        }
    }

    /// `cuStreamWaitEvent`: later work on `stream` waits for the event's record.
    pub fn wait_event(&mut self, ctx: u32, stream: StreamRef, event: u32) -> R<()> {
        let e = self.events.get(&event).ok_or(INVALID_HANDLE)?;
        let after = (e.op, e.vc.clone());
        if let Some(r) = self.capture_wait(stream, event) {
            return r;
        }
        self.enqueue(ctx, stream, Work::Wait, Some(after))?;
        Ok(())
    }

    /// `cuEventElapsedTime`, in milliseconds of *modelled* device time.
    pub fn elapsed(&mut self, start: u32, end: u32) -> R<f32> {
        if self.graphs.is_captured_event(start) || self.graphs.is_captured_event(end) {
            return Err(CAPTURED_EVENT);
        }
        let (s, e) = match (self.events.get(&start), self.events.get(&end)) {
            (Some(s), Some(e)) => (s, e),
            _ => return Err(INVALID_HANDLE),
        };
        if s.flags & EVENT_DISABLE_TIMING != 0
            || e.flags & EVENT_DISABLE_TIMING != 0
            || !s.recorded
            || !e.recorded
        {
            return Err(INVALID_HANDLE);
        }
        let (Some(t0), Some(t1)) = (s.time, e.time) else {
            return Err(NOT_READY);
        };
        let ms = ((t1 - t0) * 1e3) as f32;
        if !self.timing_notice {
            self.timing_notice = true;
            self.log.notice("cuEventElapsedTime reports MODELLED device time (instruction, wavefront and sector counts of the launches between the events on the modelled GPU), not a measurement");
        }
        self.log
            .trace(|| format!("cuEventElapsedTime = {ms:.6} ms (modelled)"));
        Ok(ms)
    }

    /// `cuEventCreate`.
    pub fn create_event(&mut self, ctx: u32, flags: u32) -> R<u32> {
        self.ctx(ctx)?;
        let id = self.id();
        self.events.insert(
            id,
            EventEntry {
                ctx,
                flags,
                op: None,
                recorded: false,
                time: None,
                queried: false,
                vc: Vc::default(),
            },
        );
        Ok(id)
    }

    /// `cuStreamCreate*`.
    pub fn create_stream(&mut self, ctx: u32, flags: u32, priority: i32) -> R<u32> {
        self.ctx(ctx)?;
        if flags & !STREAM_NON_BLOCKING != 0 {
            return Err(INVALID_VALUE);
        }
        let mut flags = flags;
        if self.config.force_non_blocking && flags & STREAM_NON_BLOCKING == 0 {
            flags |= STREAM_NON_BLOCKING;
            self.log.notice("SOFTCUDA_STREAMS=non-blocking: a stream created without CU_STREAM_NON_BLOCKING is made non-blocking (not CUDA's semantics: a stress mode, as if cust 0.3.2 kept the flag it strips)");
        }
        let id = self.id();
        self.streams.insert(
            id,
            StreamEntry {
                ctx,
                flags,
                priority,
                tail: None,
                vc: Vc::default(),
            },
        );
        self.log.trace(|| {
            format!(
                "stream {id} created ({})",
                if flags & STREAM_NON_BLOCKING != 0 {
                    "non-blocking: not ordered with the legacy stream"
                } else {
                    "blocking"
                }
            )
        });
        Ok(id)
    }

    /// `cuStreamDestroy`: its queued work still runs (now).
    pub fn destroy_stream(&mut self, stream: u32) -> R<()> {
        let ctx = self.streams.get(&stream).ok_or(INVALID_HANDLE)?.ctx;
        let r = self.stream_synchronize(ctx, StreamRef::Id(stream));
        self.streams.remove(&stream);
        r
    }

    /// `cuMemFree`: implicitly synchronises the context first.
    pub fn free(&mut self, ctx: u32, ptr: u64) -> R<()> {
        self.synchronize(ctx)?;
        let c = self.ctx(ctx)?;
        c.dev.memory.free(ptr).map_err(|_| INVALID_VALUE)
    }

    /// `cuCtxGetLimit` / `cuCtxSetLimit` storage.
    pub fn limit(&mut self, ctx: u32, limit: i32, set: Option<usize>) -> R<usize> {
        let c = self.ctx(ctx)?;
        if let Some(v) = set {
            c.limits.insert(limit, v);
        }
        Ok(*c.limits.get(&limit).unwrap_or(&match limit {
            0 => 1024,    // stack size
            1 => 1 << 20, // printf FIFO
            2 => 8 << 20, // malloc heap
            _ => 0,
        }))
    }

    /// Cache and shared-memory bank configuration: stored, reported back.
    pub fn cache_config(&mut self, ctx: u32, set: Option<i32>, shared: bool) -> R<i32> {
        let c = self.ctx(ctx)?;
        let slot = if shared {
            &mut c.shared_config
        } else {
            &mut c.cache_config
        };
        if let Some(v) = set {
            *slot = v;
        }
        Ok(*slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn driver(ordering: Ordering) -> (Driver, u32) {
        driver_with(ordering, RaceCheck::All)
    }

    fn driver_with(ordering: Ordering, races: RaceCheck) -> (Driver, u32) {
        let config = Config {
            ordering,
            races,
            log: crate::config::LogTarget::Off,
            ..Config::default()
        };
        let mut d = Driver::new(config);
        let ctx = d.create_context(0);
        (d, ctx)
    }

    fn read(d: &mut Driver, ctx: u32, p: u64, n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n];
        // SAFETY: `out` is valid for `n` bytes during the call.
        unsafe { d.copy_dtoh(ctx, out.as_mut_ptr(), p, n, None).unwrap() };
        out
    }

    #[test]
    fn legacy_copies_complete_late_and_non_blocking_streams_do_not_wait() {
        // The race detector reports the unordered copies.
        let (mut d, ctx) = driver(Ordering::Hostile);
        let p = d.ctx(ctx).unwrap().dev.memory.alloc(8).unwrap();
        d.copy_htod(ctx, p, &[1, 2, 3, 4, 5, 6, 7, 8], None)
            .unwrap();
        let s = d.create_stream(ctx, STREAM_NON_BLOCKING, 0).unwrap();
        let q = d.ctx(ctx).unwrap().dev.memory.alloc(8).unwrap();
        d.copy_dtod(ctx, q, p, 8, Some(StreamRef::Id(s))).unwrap();
        assert_eq!(d.synchronize(ctx), Err(719));
        // Unchecked, the copy on the stream reads what was there before.
        let (mut d, ctx) = driver_with(Ordering::Hostile, RaceCheck::Off);
        let p = d.ctx(ctx).unwrap().dev.memory.alloc(8).unwrap();
        d.copy_htod(ctx, p, &[1, 2, 3, 4, 5, 6, 7, 8], None)
            .unwrap();
        let s = d.create_stream(ctx, STREAM_NON_BLOCKING, 0).unwrap();
        // A copy queued on the non-blocking stream reads before the upload.
        let q = d.ctx(ctx).unwrap().dev.memory.alloc(8).unwrap();
        d.copy_dtod(ctx, q, p, 8, Some(StreamRef::Id(s))).unwrap();
        d.stream_synchronize(ctx, StreamRef::Id(s)).unwrap();
        assert_eq!(read(&mut d, ctx, q, 4), softcuda::memory::POISON);
        // The blocking read on the legacy stream forced the upload.
        assert_eq!(read(&mut d, ctx, p, 8), [1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn blocking_streams_wait_for_the_legacy_stream() {
        let (mut d, ctx) = driver(Ordering::Hostile);
        let p = d.ctx(ctx).unwrap().dev.memory.alloc(4).unwrap();
        let q = d.ctx(ctx).unwrap().dev.memory.alloc(4).unwrap();
        d.memset(ctx, p, &[7], 4, None).unwrap();
        let s = d.create_stream(ctx, 0, 0).unwrap();
        d.copy_dtod(ctx, q, p, 4, Some(StreamRef::Id(s))).unwrap();
        d.stream_synchronize(ctx, StreamRef::Id(s)).unwrap();
        let mut out = [0u8; 4];
        d.ctx(ctx).unwrap().dev.memory.read(q, &mut out).unwrap();
        assert_eq!(out, [7; 4]);
    }

    #[test]
    fn events_time_and_order_streams() {
        let (mut d, ctx) = driver(Ordering::Hostile);
        let a = d.create_event(ctx, 0).unwrap();
        let b = d.create_event(ctx, 0).unwrap();
        let s = d.create_stream(ctx, STREAM_NON_BLOCKING, 0).unwrap();
        let t = d.create_stream(ctx, STREAM_NON_BLOCKING, 0).unwrap();
        let p = d.ctx(ctx).unwrap().dev.memory.alloc(1 << 20).unwrap();
        let q = d.ctx(ctx).unwrap().dev.memory.alloc(1 << 20).unwrap();
        d.record(a, StreamRef::Id(s)).unwrap();
        d.memset(ctx, p, &[9], 1 << 20, Some(StreamRef::Id(s)))
            .unwrap();
        d.record(b, StreamRef::Id(s)).unwrap();
        assert_eq!(d.elapsed(a, b), Err(NOT_READY));
        // t waits for b: the copy sees the memset.
        d.wait_event(ctx, StreamRef::Id(t), b).unwrap();
        d.copy_dtod(ctx, q, p, 16, Some(StreamRef::Id(t))).unwrap();
        assert_eq!(d.event_query(b), Err(NOT_READY));
        d.stream_synchronize(ctx, StreamRef::Id(t)).unwrap();
        assert_eq!(d.event_query(b), Ok(()));
        assert!(d.elapsed(a, b).unwrap() > 0.0);
        let mut out = [0u8; 16];
        d.ctx(ctx).unwrap().dev.memory.read(q, &mut out).unwrap();
        assert_eq!(out, [9; 16]);
    }

    #[test]
    fn the_stress_mode_makes_blocking_streams_non_blocking() {
        let config = Config {
            force_non_blocking: true,
            log: crate::config::LogTarget::Off,
            ..Config::default()
        };
        let mut d = Driver::new(config);
        let ctx = d.create_context(0);
        let p = d.ctx(ctx).unwrap().dev.memory.alloc(4).unwrap();
        let q = d.ctx(ctx).unwrap().dev.memory.alloc(4).unwrap();
        d.memset(ctx, p, &[7], 4, None).unwrap();
        let s = d.create_stream(ctx, 0, 0).unwrap();
        assert_eq!(d.streams[&s].flags, STREAM_NON_BLOCKING);
        d.copy_dtod(ctx, q, p, 4, Some(StreamRef::Id(s))).unwrap();
        d.stream_synchronize(ctx, StreamRef::Id(s)).unwrap();
        let mut out = [0u8; 4];
        d.ctx(ctx).unwrap().dev.memory.read(q, &mut out).unwrap();
        assert_eq!(out, softcuda::memory::POISON);
    }

    #[test]
    fn eager_ordering_runs_everything_at_once() {
        // (The copies are not ordered by CUDA: unchecked here.)
        let (mut d, ctx) = driver_with(Ordering::Eager, RaceCheck::Off);
        let p = d.ctx(ctx).unwrap().dev.memory.alloc(8).unwrap();
        d.copy_htod(ctx, p, &[1; 8], None).unwrap();
        let s = d.create_stream(ctx, STREAM_NON_BLOCKING, 0).unwrap();
        let q = d.ctx(ctx).unwrap().dev.memory.alloc(8).unwrap();
        d.copy_dtod(ctx, q, p, 8, Some(StreamRef::Id(s))).unwrap();
        let mut out = [0u8; 8];
        d.ctx(ctx).unwrap().dev.memory.read(q, &mut out).unwrap();
        assert_eq!(out, [1; 8]);
    }
}
