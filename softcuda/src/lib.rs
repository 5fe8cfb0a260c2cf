//! A software CUDA device: PTX as rustc (or nvcc) emits it, interpreted on
//! the CPU with the GPU's execution model, checked and accounted.
//! (Over 600 lines: the `Device` API, its launch checks and the messages
//! naming faults belong together.)
//!
//! ```text
//! PTX text --parse--> syntax tree --decode--> Kernel (compact instructions)
//!                                                |
//!        Device::launch(kernel, grid, block, params) runs every block:
//!          block.rs  schedules warps (lockstep SIMT) or threads (adversarial)
//!          sched.rs  interleaves resident blocks and overlapping launches (adversarial)
//!          exec.rs   executes instructions for a set of lanes
//!          memory.rs device allocations and the address windows
//!          visibility.rs per-SM L1s, the ld.global.nc snapshot
//!          race.rs   shared/global race detector (sync.rs: release/acquire)
//!          account.rs instructions, wavefronts, sectors
//! ```
//!
//! | module | what lives there |
//! | --- | --- |
//! | [`parse`] | the PTX lexer and parser |
//! | [`decode`] | syntax tree to [`Kernel`]: registers, labels, params, opcodes |
//! | [`ir`] | the decoded instruction set |
//! | [`cfg`](mod@cfg) | basic blocks, post-dominators (reconvergence points) |
//! | [`exec`] | instruction semantics for a group of lanes |
//! | [`block`] | the deterministic and adversarial block schedules |
//! | [`rng`] | the seeded generator of adversarial schedules and evictions |
//! | `sched` | resident blocks of every overlapping launch, interleaved (adversarial) |
//! | [`memory`] | global memory, address windows |
//! | [`visibility`] | what loads see: per-SM L1s (adversarial), the `ld.global.nc` snapshot |
//! | [`race`] | the race detector's shadow cells |
//! | [`sync`] | release/acquire patterns, fences and scopes, for the race detector |
//! | [`account`] | per-launch counts |
//! | [`fmath`] | PTX floating-point semantics (rounding, FTZ, canonical NaN) |
//! | [`mufu`] | sm_90's `rsqrt.approx`/`rcp.approx` bits (captured tables) |
//! | [`jit`] | what the driver's JIT refuses (versions, targets), load options |
//! | [`regalloc`] | registers per entry: measured on an H200, or estimated |
//! | [`arch`] | the modelled sm_70/80/90 devices and the time model |
//!
//! The [`Device`] here is single-threaded and synchronous; the
//! `softcuda-driver` crate builds the CUDA Driver API (streams, events,
//! contexts, the hostile ordering) on top of it.
//!
//! ```
//! use softcuda::{Device, LaunchConfig, LaunchOptions, Module, arch};
//! let ptx = r#"
//! .version 7.0
//! .target sm_70
//! .address_size 64
//! .visible .entry twice(.param .u64 p, .param .u32 n)
//! {
//!     .reg .pred %p<2>; .reg .b32 %r<6>; .reg .b64 %rd<5>;
//!     ld.param.b64 %rd1, [p];
//!     ld.param.b32 %r1, [n];
//!     mov.u32 %r2, %tid.x;
//!     setp.ge.u32 %p1, %r2, %r1;
//!     @%p1 bra DONE;
//!     cvta.to.global.u64 %rd2, %rd1;
//!     mul.wide.u32 %rd3, %r2, 4;
//!     add.s64 %rd4, %rd2, %rd3;
//!     ld.global.u32 %r3, [%rd4];
//!     shl.b32 %r4, %r3, 1;
//!     st.global.u32 [%rd4], %r4;
//! DONE:
//!     ret;
//! }"#;
//! let module = Module::from_ptx(ptx).unwrap();
//! let kernel = module.kernel("twice").unwrap();
//! let mut dev = Device::new(arch::SM90, 1 << 20);
//! let buf = dev.memory.alloc(12).unwrap();
//! dev.memory.write(buf, &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]).unwrap();
//! let params = kernel.pack_params(&[&buf.to_le_bytes(), &3u32.to_le_bytes()]).unwrap();
//! let cfg = LaunchConfig::linear(1, 32, 0);
//! let stats = dev.launch(kernel, &cfg, &params, &LaunchOptions::default()).unwrap();
//! let mut out = [0u8; 12];
//! dev.memory.read(buf, &mut out).unwrap();
//! assert_eq!(out, [2, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 0]);
//! assert_eq!(stats.blocks, 1);
//! ```
#![deny(missing_docs)]

pub mod account;
pub mod arch;
pub mod block;
pub mod cfg;
pub mod decode;
pub mod exec;
pub mod fmath;
pub mod ir;
pub mod jit;
pub mod memory;
pub mod mufu;
pub mod parse;
pub mod race;
pub mod regalloc;
pub mod rng;
mod sched;
pub mod sync;
pub mod visibility;

use std::collections::BTreeMap;
use std::fmt;

pub use account::Stats;
pub use arch::Arch;
pub use block::Schedule;
pub use decode::{DecodeError, Kernel, KernelParam};
pub use memory::GlobalMemory;
pub use parse::ParseError;

use exec::{Check, Consts, Env, Fault, FaultKind, NO_SM, Warp};
use race::{Access, Cell, Kind, Layout, Stamp, View};
use sched::LaunchRun;
use sync::BlockSync;
use visibility::MemModel;

/// A PTX module whose entry points are decoded and ready to launch.
#[derive(Clone, Debug)]
pub struct Module {
    /// `.target`, e.g. `sm_70`.
    pub target: Option<String>,
    /// `.version`.
    pub version: Option<(u32, u32)>,
    /// Every `.entry`, in file order.
    pub kernels: Vec<Kernel>,
}

/// Why a module could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleError {
    /// The text is not valid PTX syntax.
    Parse(ParseError),
    /// An entry uses something the interpreter does not implement.
    Decode(DecodeError),
    /// The driver's JIT would refuse it for the device ([`jit::check`]).
    Incompatible(jit::Incompatible),
}

impl fmt::Display for ModuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModuleError::Parse(e) => e.fmt(f),
            ModuleError::Decode(e) => e.fmt(f),
            ModuleError::Incompatible(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ModuleError {}

impl Module {
    /// Parses and decodes every entry point of `text`, with sm_90's
    /// approximate instructions and no device compatibility checks (see
    /// [`Module::from_ptx_with`]).
    pub fn from_ptx(text: &str) -> Result<Module, ModuleError> {
        Module::from_ptx_with(text, &jit::JitOptions::default())
    }

    /// The entry point `name`.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

impl Kernel {
    /// Lays out `args` (each the bytes of one parameter, in order) as the
    /// parameter buffer, checking the count and every size against the
    /// entry's `.param` list.
    pub fn pack_params(&self, args: &[&[u8]]) -> Result<Vec<u8>, String> {
        if args.len() != self.params.len() {
            return Err(format!(
                "{} takes {} parameters ({}), the launch passes {}",
                self.name,
                self.params.len(),
                self.param_signature(),
                args.len()
            ));
        }
        let mut buf = vec![0u8; self.param_bytes as usize];
        for (k, (p, a)) in self.params.iter().zip(args).enumerate() {
            if a.len() != p.size as usize {
                return Err(format!(
                    "{}: parameter {k} ({} .{}) is {} bytes, the launch passes {}",
                    self.name,
                    p.name,
                    p.ty,
                    p.size,
                    a.len()
                ));
            }
            buf[p.offset as usize..(p.offset + p.size) as usize].copy_from_slice(a);
        }
        Ok(buf)
    }

    /// `.u64, .u32, .f32`: the parameter types, for messages.
    pub fn param_signature(&self) -> String {
        self.params
            .iter()
            .map(|p| format!(".{}", p.ty))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per dimension.
    pub grid: [u32; 3],
    /// Threads per block per dimension.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, bytes.
    pub dynamic_shared: u32,
}

impl LaunchConfig {
    /// A one-dimensional launch.
    pub fn linear(grid: u32, block: u32, dynamic_shared: u32) -> LaunchConfig {
        LaunchConfig {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            dynamic_shared,
        }
    }

    /// Threads per block.
    pub fn block_threads(&self) -> u64 {
        self.block.iter().map(|&d| d as u64).product()
    }

    /// Blocks in the grid.
    pub fn blocks(&self) -> u64 {
        self.grid.iter().map(|&d| d as u64).product()
    }
}

/// Which memories the race detector watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RaceCheck {
    /// None (fastest).
    Off,
    /// Shared memory only.
    Shared,
    /// Shared and global memory.
    All,
}

/// How to run a launch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaunchOptions {
    /// Thread interleaving.
    pub schedule: Schedule,
    /// Race detection.
    pub races: RaceCheck,
    /// Abort after this many warp-instructions (an infinite loop guard).
    pub max_warp_instructions: u64,
    /// Largest static + dynamic shared memory a block may use.
    pub shared_limit: u32,
}

impl Default for LaunchOptions {
    fn default() -> LaunchOptions {
        LaunchOptions {
            schedule: Schedule::Deterministic,
            races: RaceCheck::All,
            max_warp_instructions: 1 << 40,
            shared_limit: arch::SM90.shared_optin,
        }
    }
}

/// The CUDA error a launch failure corresponds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// `CUDA_ERROR_INVALID_VALUE` (1): bad configuration or parameters;
    /// reported at launch, not sticky.
    InvalidValue,
    /// `CUDA_ERROR_ILLEGAL_ADDRESS` (700), sticky.
    IllegalAddress,
    /// `CUDA_ERROR_LAUNCH_TIMEOUT` (702), sticky.
    LaunchTimeout,
    /// `CUDA_ERROR_MISALIGNED_ADDRESS` (716), sticky.
    MisalignedAddress,
    /// `CUDA_ERROR_LAUNCH_FAILED` (719, "unspecified launch failure"),
    /// sticky: traps, races, barrier misuse.
    LaunchFailed,
}

impl ErrorCode {
    /// The `CUresult` value.
    pub fn cu_result(self) -> u32 {
        match self {
            ErrorCode::InvalidValue => 1,
            ErrorCode::IllegalAddress => 700,
            ErrorCode::LaunchTimeout => 702,
            ErrorCode::MisalignedAddress => 716,
            ErrorCode::LaunchFailed => 719,
        }
    }

    /// Whether the error corrupts the context (every later call fails).
    pub fn sticky(self) -> bool {
        self != ErrorCode::InvalidValue
    }
}

/// A failed launch: the CUDA error and a message naming the kernel, block,
/// thread, PTX line and address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchError {
    /// The CUDA error.
    pub code: ErrorCode,
    /// What happened, where.
    pub message: String,
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.code, self.message)
    }
}

impl std::error::Error for LaunchError {}

/// One launch of [`Device::launch_ops`].
#[derive(Clone, Debug)]
pub struct OpLaunch<'a> {
    /// The entry point.
    pub kernel: &'a Kernel,
    /// Grid, block, dynamic shared memory.
    pub cfg: LaunchConfig,
    /// The parameter buffer ([`Kernel::pack_params`]).
    pub params: &'a [u8],
    /// The operation's id: distinct from every other operation of this
    /// device (launches and copies; a driver's stream operations).
    pub op: u32,
    /// Earlier operations CUDA does not order before this one (streams
    /// without an event between them): their accesses and this launch's
    /// race as those of two blocks do.
    pub concurrent: Vec<u32>,
    /// How messages name the launch, e.g. `kernel k on stream 3 (op 7)`.
    pub name: String,
}

/// One software GPU: memory, a model, and the sticky error state.
pub struct Device {
    /// Device memory.
    pub memory: GlobalMemory,
    /// The modelled architecture.
    pub arch: Arch,
    sticky: Option<LaunchError>,
    launches: u32,
    blocks_run: u32,
    shared: Vec<u8>,
    shadow: Vec<Cell>,
    sync: BlockSync,
    mm: MemModel,
    /// Names and threads per block of recent operations, for messages and
    /// for the race detector's view of concurrent ones.
    ops: BTreeMap<u32, (String, u32)>,
    last_op: u32,
    snapshots: u32,
}

/// Operations remembered for messages.
const OPS_KEPT: usize = 4096;

impl Device {
    /// A device of model `arch` with `memory_bytes` of memory.
    pub fn new(arch: Arch, memory_bytes: u64) -> Device {
        Device {
            memory: GlobalMemory::new(memory_bytes),
            arch,
            sticky: None,
            launches: 0,
            blocks_run: 0,
            shared: Vec::new(),
            shadow: Vec::new(),
            sync: BlockSync::default(),
            mm: MemModel::default(),
            ops: BTreeMap::new(),
            last_op: 0,
            snapshots: 0,
        }
    }

    /// The sticky error, once a launch has corrupted the device.
    pub fn sticky_error(&self) -> Option<&LaunchError> {
        self.sticky.as_ref()
    }

    /// Runs `kernel` over the grid with the parameter buffer `params`
    /// (see [`Kernel::pack_params`]), after everything before it. Faults
    /// are sticky: later launches return the same error.
    pub fn launch(
        &mut self,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        params: &[u8],
        opts: &LaunchOptions,
    ) -> Result<Stats, LaunchError> {
        let l = OpLaunch {
            kernel,
            cfg: *cfg,
            params,
            op: self.last_op.wrapping_add(1),
            concurrent: Vec::new(),
            name: format!("kernel {}", kernel.name),
        };
        match self.launch_ops(&[l], opts) {
            Ok(mut stats) => Ok(stats.pop().expect("one launch")),
            Err((_, e)) => Err(e),
        }
    }

    /// Runs launches that CUDA lets overlap (each one's `concurrent` lists
    /// the others): their blocks interleave in the adversarial schedule, and
    /// run one launch after another in the deterministic one; either way
    /// the race detector treats their accesses as unordered. Returns each
    /// launch's counts, or the index of the launch that failed and why.
    pub fn launch_ops(
        &mut self,
        launches: &[OpLaunch],
        opts: &LaunchOptions,
    ) -> Result<Vec<Stats>, (usize, LaunchError)> {
        if let Some(e) = &self.sticky {
            return Err((0, e.clone()));
        }
        for (i, l) in launches.iter().enumerate() {
            check_launch(l.kernel, &l.cfg, l.params, opts).map_err(|e| (i, e))?;
        }
        for l in launches {
            self.name_op(l.op, l.name.clone(), l.cfg.block_threads() as u32);
        }
        let check = Check {
            shared: opts.races != RaceCheck::Off,
            global: opts.races == RaceCheck::All,
        };
        // Releases recorded by operations ordered before these are history.
        if launches.iter().all(|l| l.concurrent.is_empty()) {
            self.mm.sync.clear();
        }
        self.mm.snapshot = if launches.iter().any(|l| reads_non_coherent(l.kernel)) {
            self.snapshots = self.snapshots.wrapping_add(1).max(1);
            self.snapshots
        } else {
            0
        };
        let concurrent: Vec<Vec<(u32, u32)>> = launches
            .iter()
            .map(|l| {
                let mut c: Vec<u32> = l.concurrent.clone();
                c.extend(launches.iter().map(|o| o.op).filter(|&o| o != l.op));
                c.sort_unstable();
                c.dedup();
                c.into_iter()
                    .map(|o| (o, self.ops.get(&o).map_or(1, |x| x.1)))
                    .collect()
            })
            .collect();
        let result = match opts.schedule {
            Schedule::Deterministic => {
                let mut out = Vec::new();
                let mut failed = None;
                for (i, l) in launches.iter().enumerate() {
                    self.launches += 1;
                    match self.run(l, &concurrent[i], opts, check) {
                        Ok(s) => out.push(s),
                        Err(e) => {
                            failed = Some((i, e));
                            break;
                        }
                    }
                }
                match failed {
                    Some(f) => Err(f),
                    None => Ok(out),
                }
            }
            Schedule::Adversarial { seed } => {
                let mut rng = block::Rng::new(seed);
                let mut runs: Vec<LaunchRun> = Vec::new();
                for (l, c) in launches.iter().zip(concurrent) {
                    self.launches += 1;
                    runs.push(LaunchRun::new(
                        l.kernel,
                        l.cfg,
                        l.params,
                        l.op,
                        c,
                        self.launches as u64,
                        shared_total(l.kernel, &l.cfg),
                        opts.max_warp_instructions,
                        &mut rng,
                    ));
                }
                match sched::run_group(
                    &self.arch,
                    &mut self.memory,
                    &mut self.mm,
                    &mut self.blocks_run,
                    &mut runs,
                    check,
                    &mut rng,
                ) {
                    Ok(()) => Ok(runs.into_iter().map(|r| r.stats).collect()),
                    Err((i, ctaid, f)) => {
                        let l = &launches[i];
                        Err((i, self.describe(l.kernel, &l.cfg, l.op, ctaid, &f)))
                    }
                }
            }
        };
        self.mm.drain(&mut self.memory);
        if self.mm.snapshot != 0 {
            self.memory.drop_snapshots();
            self.mm.snapshot = 0;
        }
        if let Err((_, e)) = &result
            && e.code.sticky()
        {
            self.sticky = Some(e.clone());
        }
        result
    }

    /// Race-checks a copy or memset, operation `op` named `name` (e.g.
    /// `host-to-device copy of 64 bytes on stream 2 (op 5)`), that reads
    /// (`write` false) or writes `[addr, addr + len)`, against the accesses
    /// of the earlier operations in `concurrent`, and records it for later
    /// ones. A conflict is a race: `CUDA_ERROR_LAUNCH_FAILED`, sticky.
    pub fn check_copy(
        &mut self,
        op: u32,
        name: &str,
        concurrent: &[u32],
        addr: u64,
        len: u64,
        write: bool,
    ) -> Result<(), LaunchError> {
        if let Some(e) = &self.sticky {
            return Err(e.clone());
        }
        self.name_op(op, name.to_owned(), 1);
        if len == 0 {
            return Ok(());
        }
        let Some(i) = self.memory.locate(addr, len) else {
            return Ok(());
        };
        let conc: Vec<(u32, u32)> = concurrent
            .iter()
            .map(|&o| (o, self.ops.get(&o).map_or(1, |x| x.1)))
            .collect();
        let view = View {
            block_threads: 1,
            op,
            concurrent: &conc,
            know: None,
        };
        let stamp = Stamp {
            thread: 1,
            op,
            ..Stamp::default()
        };
        let acc = Access::weak(if write { Kind::Write } else { Kind::Read });
        let off = (addr - self.memory.base_of(i)) as usize;
        let (first, last) = (off / 4, (off + len as usize - 1) / 4);
        let cells = self.memory.shadow(i);
        let mut conflict = None;
        for (w, cell) in cells.iter_mut().enumerate().take(last + 1).skip(first) {
            if let Some(c) = cell.access(op, stamp, acc, &view, true) {
                conflict = Some((w, c));
                break;
            }
        }
        let Some((w, c)) = conflict else {
            return Ok(());
        };
        let word = addr - (off as u64 % 4) + (w - first) as u64 * 4;
        let e = LaunchError {
            code: ErrorCode::LaunchFailed,
            message: format!(
                "{name}: global memory race on the word at {word:#x}: {} and {}, with no stream order or event ordering them",
                self.side(&c.first, op, 1, None),
                self.side(&c.second, op, 1, None),
            ),
        };
        self.sticky = Some(e.clone());
        Err(e)
    }

    fn name_op(&mut self, op: u32, name: String, block_threads: u32) {
        self.last_op = self.last_op.max(op);
        self.ops.insert(op, (name, block_threads));
        while self.ops.len() > OPS_KEPT {
            self.ops.pop_first();
        }
    }

    fn run(
        &mut self,
        l: &OpLaunch,
        concurrent: &[(u32, u32)],
        opts: &LaunchOptions,
        check: Check,
    ) -> Result<Stats, LaunchError> {
        let (kernel, cfg, params) = (l.kernel, &l.cfg, l.params);
        let shared_total = shared_total(kernel, cfg);
        let threads = cfg.block_threads() as u32;
        let nwarps = threads.div_ceil(32);
        let blocks = cfg.blocks();
        let mut stats = Stats::default();
        self.shared.resize(shared_total, 0);
        if check.shared {
            self.shadow
                .resize(shared_total.div_ceil(4), Cell::default());
        }
        let mut warps: Vec<Warp> = (0..nwarps)
            .map(|w| Warp::new(kernel, w, cfg.block))
            .collect();
        let mut budget = opts.max_warp_instructions;
        for b in 0..blocks {
            let ctaid = ctaid_of(cfg, b);
            for (i, w) in warps.iter_mut().enumerate() {
                w.reset(i as u32, cfg.block, threads);
            }
            // Shared memory starts as garbage on hardware.
            for (i, byte) in self.shared.iter_mut().enumerate() {
                *byte = memory::POISON[i % 4];
            }
            self.sync.clear();
            self.blocks_run = self.blocks_run.wrapping_add(1).max(1);
            let mut env = Env {
                kernel,
                params,
                consts: Consts {
                    ntid: cfg.block,
                    nctaid: cfg.grid,
                    ctaid,
                    nwarps,
                    nsm: self.arch.sms,
                    smid: (b % self.arch.sms.max(1) as u64) as u32,
                    dyn_smem: cfg.dynamic_shared,
                    total_smem: shared_total as u32,
                    grid_id: self.launches as u64,
                },
                shared: &mut self.shared,
                shared_shadow: if check.shared {
                    &mut self.shadow
                } else {
                    &mut []
                },
                shared_tag: self.blocks_run,
                bepoch: 0,
                global: &mut self.memory,
                check,
                layout: Layout {
                    block_threads: threads,
                    block: b as u32,
                    op: l.op,
                },
                concurrent,
                thread_base: (b as u32).wrapping_mul(threads),
                stats: &mut stats,
                sync: &mut self.sync,
                mm: &mut self.mm,
                sm: NO_SM,
            };
            if let Err(f) = block::run_block(&mut env, &mut warps, &mut budget) {
                return Err(self.describe(kernel, cfg, l.op, ctaid, &f));
            }
            stats.blocks += 1;
        }
        Ok(stats)
    }

    /// One side of a race, for messages.
    fn side(&self, s: &race::Side, op: u32, threads: u32, kernel: Option<&Kernel>) -> String {
        let what = access_name(s.access);
        if let Some(k) = kernel.filter(|_| s.op == op) {
            let block = s.thread / threads;
            let t = s.thread % threads;
            return format!(
                "{what} by block {block} thread {t} (warp {}) at PTX line {} (`{}`) in barrier interval {}",
                t / 32,
                k.line_of(s.pc),
                k.opcode_of(s.pc),
                s.bepoch
            );
        }
        match self.ops.get(&s.op) {
            Some((name, bt)) if *bt > 1 => format!(
                "{what} by {name}, block {} thread {}",
                s.thread / bt,
                s.thread % bt
            ),
            Some((name, _)) => format!("{what} by {name}"),
            None => format!("{what} by operation {}", s.op),
        }
    }

    /// A fault as a launch error naming the kernel, block, thread and line.
    fn describe(
        &self,
        kernel: &Kernel,
        cfg: &LaunchConfig,
        op: u32,
        ctaid: [u32; 3],
        f: &Fault,
    ) -> LaunchError {
        let threads = cfg.block_threads() as u32;
        let at = |pc: u32| {
            format!(
                "PTX line {} (`{}`)",
                kernel.line_of(pc),
                kernel.opcode_of(pc)
            )
        };
        let who = match f.thread {
            Some(t) => format!(
                "block ({}, {}, {}) thread {t}",
                ctaid[0], ctaid[1], ctaid[2]
            ),
            None => format!("block ({}, {}, {})", ctaid[0], ctaid[1], ctaid[2]),
        };
        let (code, what) = match &f.kind {
            FaultKind::IllegalAddress { space, addr, bytes } => (
                ErrorCode::IllegalAddress,
                format!(
                    "illegal address: {bytes}-byte {} access at {addr:#x} outside every allocation",
                    space_name(*space)
                ),
            ),
            FaultKind::Misaligned { space, addr, bytes } => (
                ErrorCode::MisalignedAddress,
                format!(
                    "misaligned address: {bytes}-byte {} access at {addr:#x}",
                    space_name(*space)
                ),
            ),
            FaultKind::Race {
                space,
                addr,
                conflict,
            } => {
                let side = |s: &race::Side| self.side(s, op, threads, Some(kernel));
                let text = if conflict.nc {
                    format!(
                        "ld.global.nc of the word at {addr:#x}, which this launch also writes: {} and {}; the non-coherent path requires data read-only for the whole launch",
                        side(&conflict.first),
                        side(&conflict.second)
                    )
                } else {
                    format!(
                        "{} memory race on the word at {addr:#x}: {} and {}, with nothing ordering them (no barrier, release/acquire, stream order or event)",
                        space_name(*space),
                        side(&conflict.first),
                        side(&conflict.second)
                    )
                };
                (ErrorCode::LaunchFailed, text)
            }
            FaultKind::Trap => (ErrorCode::LaunchFailed, "trap".to_owned()),
            FaultKind::Sync(m) => (ErrorCode::LaunchFailed, m.clone()),
            FaultKind::InstructionLimit(n) => (
                ErrorCode::LaunchTimeout,
                format!(
                    "instruction limit reached after {n} warp-instructions (an infinite loop?)"
                ),
            ),
        };
        LaunchError {
            code,
            message: format!("kernel {}: {what}; {who}, {}", kernel.name, at(f.pc)),
        }
    }
}

/// How an access reads in messages: `write`, `atomic (.cta)`,
/// `strong read (.gpu)`, `ld.global.nc read`.
fn access_name(a: Access) -> String {
    let scope = |s: ir::Scope| match s {
        ir::Scope::Cta => ".cta",
        ir::Scope::Gpu => ".gpu",
        ir::Scope::Sys => ".sys",
    };
    match (a.kind, a.strong) {
        (Kind::Atomic, Some(s)) => format!("atomic ({})", scope(s)),
        (k, Some(s)) => format!("strong {k} ({})", scope(s)),
        (Kind::Read, None) if a.nc => "ld.global.nc read".to_owned(),
        (k, None) => k.to_string(),
    }
}

/// Whether `kernel` reads through the non-coherent path.
fn reads_non_coherent(kernel: &Kernel) -> bool {
    kernel.insts.iter().any(|i| {
        matches!(
            i.op,
            ir::Op::Ld { order, .. } if order.sem == ir::Sem::ReadOnly
        )
    })
}

fn shared_total(kernel: &Kernel, cfg: &LaunchConfig) -> usize {
    kernel.dynamic_shared_offset as usize + cfg.dynamic_shared as usize
}

/// The checks CUDA makes at the launch call (`CUDA_ERROR_INVALID_VALUE`).
fn check_launch(
    kernel: &Kernel,
    cfg: &LaunchConfig,
    params: &[u8],
    opts: &LaunchOptions,
) -> Result<(), LaunchError> {
    let invalid = |message: String| LaunchError {
        code: ErrorCode::InvalidValue,
        message,
    };
    if params.len() != kernel.param_bytes as usize {
        return Err(invalid(format!(
            "{}: parameter buffer of {} bytes, the entry's .param list ({}) needs {}",
            kernel.name,
            params.len(),
            kernel.param_signature(),
            kernel.param_bytes
        )));
    }
    let threads = cfg.block_threads();
    if threads == 0 || threads > 1024 || cfg.block[2] > 64 || cfg.blocks() == 0 {
        return Err(invalid(format!(
            "{}: invalid launch shape grid {:?} block {:?}",
            kernel.name, cfg.grid, cfg.block
        )));
    }
    if cfg.grid[0] >= 1 << 31 || cfg.grid[1] > 65535 || cfg.grid[2] > 65535 {
        return Err(invalid(format!(
            "{}: grid {:?} too large",
            kernel.name, cfg.grid
        )));
    }
    kernel.check_reqntid(cfg.block).map_err(invalid)?;
    if let Some(max) = kernel.max_threads
        && threads > max as u64
    {
        return Err(invalid(format!(
            "{}: {threads} threads per block, .maxntid allows {max}",
            kernel.name
        )));
    }
    if kernel.static_shared as u64 + cfg.dynamic_shared as u64 > opts.shared_limit as u64 {
        return Err(invalid(format!(
            "{}: {} bytes of shared memory per block, the limit is {}",
            kernel.name,
            kernel.static_shared as u64 + cfg.dynamic_shared as u64,
            opts.shared_limit
        )));
    }
    Ok(())
}

/// The block order of a launch: in order, or a seeded random permutation
/// (an affine map modulo the block count, so any grid size costs nothing):
/// the `k`-th block run is `(k * mul + add) % blocks`.
pub(crate) fn block_order(blocks: u64, rng: Option<&mut block::Rng>) -> (u64, u64) {
    match rng {
        Some(r) => {
            let mut m = r.below(blocks) | 1;
            while gcd(m, blocks) != 1 {
                m = (m + 2) % blocks.max(2);
            }
            (m, r.below(blocks))
        }
        None => (1, 0),
    }
}

/// The `%ctaid` of linear block `b`.
pub(crate) fn ctaid_of(cfg: &LaunchConfig, b: u64) -> [u32; 3] {
    [
        (b % cfg.grid[0] as u64) as u32,
        ((b / cfg.grid[0] as u64) % cfg.grid[1] as u64) as u32,
        (b / (cfg.grid[0] as u64 * cfg.grid[1] as u64)) as u32,
    ]
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn space_name(s: ir::Space) -> &'static str {
    match s {
        ir::Space::Generic => "generic",
        ir::Space::Global => "global",
        ir::Space::Shared => "shared",
        ir::Space::Local => "local",
        ir::Space::Const => "const",
    }
}
