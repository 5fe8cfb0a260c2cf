//! The launch machinery: emulated threads, barriers, shared memory, device
//! memory and the race detector.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use gpu_kernels::exec::{Exec, Global, Word};
use gpu_kernels::shape::{LaunchShape, WARP};

use crate::error::{Error, Result};

/// How a launch runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchOptions {
    /// Record every shared-memory access and fail the launch on a race.
    pub race_detection: bool,
    /// How long a barrier waits for the rest of its block before the launch
    /// fails as deadlocked.
    pub barrier_timeout: Duration,
}

impl Default for LaunchOptions {
    /// Race detection on, 5 s barrier timeout.
    fn default() -> Self {
        LaunchOptions {
            race_detection: true,
            barrier_timeout: Duration::from_secs(5),
        }
    }
}

/// Device memory of the emulator: 32-bit words, accessed through relaxed
/// atomics so that even a racy kernel is reported, never undefined behaviour.
pub struct DeviceMemory {
    words: Box<[AtomicU32]>,
}

impl DeviceMemory {
    /// `words` zeroed 32-bit words.
    pub fn zeroed(words: usize) -> DeviceMemory {
        DeviceMemory {
            words: (0..words).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// A copy of `data`.
    pub fn from_slice<T: Word>(data: &[T]) -> DeviceMemory {
        let mem = DeviceMemory::zeroed(data.len() * words_of::<T>());
        mem.write(data);
        mem
    }

    /// Overwrites the start of the buffer with `data` (must fit).
    pub fn write<T: Word>(&self, data: &[T]) {
        let w = words_of::<T>();
        assert!(data.len() * w <= self.words.len(), "write past the buffer");
        for (i, v) in data.iter().enumerate() {
            store_words(&self.words[i * w..(i + 1) * w], *v);
        }
    }

    /// The buffer as `T`s.
    pub fn read<T: Word>(&self) -> Vec<T> {
        let w = words_of::<T>();
        self.words
            .chunks_exact(w)
            .map(|c| load_words::<T>(c))
            .collect()
    }

    /// Sets every word to zero.
    pub fn clear(&self) {
        self.words
            .iter()
            .for_each(|w| w.store(0, Ordering::Relaxed));
    }

    /// A kernel's view of the buffer as `len` elements of `T`.
    pub fn global<T: Word>(&self, len: u32) -> Global<T> {
        Global::new(self.words.as_ptr() as *mut T, len)
    }

    fn range(&self) -> (usize, usize) {
        let start = self.words.as_ptr() as usize;
        (start, start + 4 * self.words.len())
    }
}

fn words_of<T: Word>() -> usize {
    std::mem::size_of::<T>() / 4
}

fn load_words<T: Word>(words: &[AtomicU32]) -> T {
    let mut value = std::mem::MaybeUninit::<T>::uninit();
    let out = value.as_mut_ptr() as *mut u32;
    for (k, w) in words.iter().enumerate() {
        // SAFETY: `T: Word` is `words.len()` padding-free u32 words.
        unsafe { out.add(k).write_unaligned(w.load(Ordering::Relaxed)) };
    }
    // SAFETY: every word written; `Word` accepts every bit pattern.
    unsafe { value.assume_init() }
}

fn store_words<T: Word>(words: &[AtomicU32], value: T) {
    let src = &value as *const T as *const u32;
    for (k, w) in words.iter().enumerate() {
        // SAFETY: `T: Word` is `words.len()` padding-free u32 words.
        w.store(unsafe { src.add(k).read_unaligned() }, Ordering::Relaxed);
    }
}

fn atomic_add_f32(word: &AtomicU32, value: f32) {
    let _ = word.fetch_update(Ordering::AcqRel, Ordering::Acquire, |bits| {
        Some((f32::from_bits(bits) + value).to_bits())
    });
}

/// Times a thread at a barrier yields its core before it sleeps.
const SPINS_BEFORE_PARKING: u32 = 64;

/// What an emulated thread unwinds with when the launch must stop.
struct Fault;

/// A shared-memory access, as the race detector records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Read,
    Write,
    Atomic,
}

/// One recorded access to a shared word within the current block epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Record {
    thread: u32,
    access: Access,
    /// The accessing warp's `sync_warp` count at the time.
    warp_epoch: u64,
}

impl Record {
    /// Whether `self` and `other` (both of this block epoch) conflict: two
    /// threads, not both reading, not both atomic, and not ordered by a
    /// `sync_warp` of their common warp.
    fn races_with(&self, other: &Record) -> bool {
        self.thread != other.thread
            && !(self.access == Access::Read && other.access == Access::Read)
            && !(self.access == Access::Atomic && other.access == Access::Atomic)
            && !(self.thread / WARP == other.thread / WARP && self.warp_epoch != other.warp_epoch)
    }
}

/// The race detector's shadow of one shared word, for one block epoch.
///
/// As in FastTrack, the last write stands for all earlier ones: in a run with
/// no race reported so far the writes are ordered, so an access that does not
/// race with the last write does not race with any earlier one; and a write
/// that races with none of the reads since the previous write orders them all
/// before it, so they are forgotten. Reads and atomics are kept otherwise.
#[derive(Default)]
struct WordLog {
    epoch: u64,
    last_write: Option<Record>,
    reads: Vec<Record>,
    atomics: Vec<Record>,
}

impl WordLog {
    /// Records `access` and returns the earlier access it races with, if any.
    fn access(&mut self, epoch: u64, access: Record) -> Option<Record> {
        if self.epoch != epoch {
            self.epoch = epoch;
            self.last_write = None;
            self.reads.clear();
            self.atomics.clear();
        }
        let earlier = self.last_write.iter().chain(match access.access {
            Access::Read => &self.atomics[..],
            Access::Write => &self.reads[..],
            Access::Atomic => &self.reads[..],
        });
        let earlier = earlier.chain(match access.access {
            Access::Write => &self.atomics[..],
            _ => &[][..],
        });
        if let Some(race) = earlier.copied().find(|r| access.races_with(r)) {
            return Some(race);
        }
        match access.access {
            Access::Write => {
                self.last_write = Some(access);
                self.reads.clear();
                self.atomics.clear();
            }
            Access::Read => push_new(&mut self.reads, access),
            Access::Atomic => push_new(&mut self.atomics, access),
        }
        None
    }
}

/// Appends `r` unless it repeats the latest record (a thread reading a word
/// again adds nothing new).
fn push_new(records: &mut Vec<Record>, r: Record) {
    if records.last() != Some(&r) {
        records.push(r);
    }
}

/// A meeting point of `size` threads (a block or a warp) with a timeout.
struct Rendezvous {
    state: Mutex<RendezvousState>,
    /// Bumped each time the whole group has arrived.
    generation: AtomicU64,
    size: u32,
}

#[derive(Default)]
struct RendezvousState {
    /// Threads waiting at a barrier of the kernel, by thread index.
    at_barrier: Vec<u32>,
    /// Threads that finished the current block.
    finished: Vec<u32>,
    /// Waiters that stopped spinning and sleep until the release.
    parked: Vec<std::thread::Thread>,
}

/// Why a thread arrives at a rendezvous.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arrival {
    /// `sync_threads` / `sync_warp` in the kernel.
    Barrier,
    /// The kernel body returned.
    Finished,
}

/// State of the block being run, shared by all its emulated threads.
struct BlockState {
    shared: Box<[AtomicU32]>,
    logs: Option<Box<[Mutex<WordLog>]>>,
    epoch: AtomicU64,
    warp_epochs: Box<[AtomicU64]>,
    block: Rendezvous,
    warps: Box<[Rendezvous]>,
}

/// Everything the threads of one launch share.
pub(crate) struct Launch<'a> {
    kernel: &'a str,
    shape: LaunchShape,
    options: LaunchOptions,
    memory: &'a [&'a DeviceMemory],
    abort: AtomicBool,
    error: Mutex<Option<String>>,
    current_block: AtomicU32,
    state: BlockState,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Launch<'_> {
    /// Records the first error and makes every thread unwind.
    fn fail(&self, message: String) -> ! {
        {
            let mut slot = lock(&self.error);
            if slot.is_none() {
                *slot = Some(message);
            }
        }
        self.abort.store(true, Ordering::SeqCst);
        resume_unwind(Box::new(Fault))
    }

    fn check_abort(&self) {
        if self.abort.load(Ordering::Relaxed) {
            resume_unwind(Box::new(Fault))
        }
    }

    fn block_idx(&self) -> u32 {
        self.current_block.load(Ordering::Acquire)
    }

    /// Arrives at `r` (the block's or a warp's rendezvous) and waits for the
    /// others; every thread must arrive for the same reason. The last thread
    /// to arrive runs `on_release` before letting the others go, so what it
    /// does (start a new race-detector epoch) happens before any of them moves on.
    fn meet(
        &self,
        r: &Rendezvous,
        what: &str,
        thread: u32,
        arrival: Arrival,
        on_release: impl FnOnce(),
    ) {
        let deadline = Instant::now() + self.options.barrier_timeout;
        let generation = {
            let mut s = lock(&r.state);
            match arrival {
                Arrival::Barrier => s.at_barrier.push(thread),
                Arrival::Finished => s.finished.push(thread),
            }
            if !s.at_barrier.is_empty() && !s.finished.is_empty() {
                let mut waiting = s.at_barrier.clone();
                let mut finished = s.finished.clone();
                drop(s);
                waiting.sort_unstable();
                finished.sort_unstable();
                self.fail(format!(
                    "deadlock in kernel {} block {}: threads {} finished the kernel without reaching the {what} barrier that threads {} wait at",
                    self.kernel,
                    self.block_idx(),
                    list(&finished),
                    list(&waiting)
                ));
            }
            if (s.at_barrier.len() + s.finished.len()) as u32 == r.size {
                s.at_barrier.clear();
                s.finished.clear();
                on_release();
                r.generation.fetch_add(1, Ordering::AcqRel);
                let parked = std::mem::take(&mut s.parked);
                drop(s);
                parked.iter().for_each(std::thread::Thread::unpark);
                return;
            }
            r.generation.load(Ordering::Acquire)
        };
        // There are far more emulated threads than cores: yield the core a
        // few times (a warp's threads usually arrive together), then sleep
        // until the last thread to arrive wakes us.
        for _ in 0..SPINS_BEFORE_PARKING {
            if r.generation.load(Ordering::Acquire) != generation {
                return;
            }
            std::thread::yield_now();
        }
        {
            let mut s = lock(&r.state);
            if r.generation.load(Ordering::Acquire) != generation {
                return;
            }
            s.parked.push(std::thread::current());
        }
        while r.generation.load(Ordering::Acquire) == generation {
            std::thread::park_timeout(Duration::from_millis(20));
            self.check_abort();
            if Instant::now() >= deadline {
                let s = lock(&r.state);
                if r.generation.load(Ordering::Acquire) != generation {
                    break;
                }
                let arrived: Vec<u32> = s.at_barrier.iter().chain(&s.finished).copied().collect();
                drop(s);
                let missing = missing_threads(r, &arrived, thread);
                self.fail(format!(
                    "deadlock in kernel {} block {}: threads {} did not reach the {what} barrier within {:?}",
                    self.kernel,
                    self.block_idx(),
                    list(&missing),
                    self.options.barrier_timeout
                ));
            }
        }
    }

    /// Finds the emulator allocation holding `bytes` bytes at `addr`.
    fn check_global(&self, addr: usize, bytes: usize, what: &str, i: u32, len: u32) {
        if i >= len {
            self.fail(format!(
                "out-of-bounds {what} in kernel {} block {}: element {i} of a buffer of {len}",
                self.kernel,
                self.block_idx()
            ));
        }
        let inside = self.memory.iter().any(|m| {
            let (start, end) = m.range();
            addr >= start && addr + bytes <= end
        });
        if !inside {
            self.fail(format!(
                "{what} in kernel {} block {} at {addr:#x} is outside every device buffer",
                self.kernel,
                self.block_idx()
            ));
        }
    }

    fn shared_words<T: Word>(&self, thread: u32, i: u32, what: &str) -> &[AtomicU32] {
        let w = words_of::<T>();
        let start = i as usize * w;
        match self.state.shared.get(start..start + w) {
            Some(words) => words,
            None => self.fail(format!(
                "out-of-bounds shared-memory {what} in kernel {} block {} thread {thread}: element {i} of {} bytes per element, {} bytes of shared memory",
                self.kernel,
                self.block_idx(),
                4 * w,
                self.shape.shared_bytes
            )),
        }
    }

    /// Records an access to shared words `first..first + count` and fails on
    /// a race with an earlier access of this block epoch.
    fn record(&self, thread: u32, first: usize, count: usize, access: Access) {
        let Some(logs) = &self.state.logs else {
            return;
        };
        let epoch = self.state.epoch.load(Ordering::Acquire);
        let warp = thread / WARP;
        let warp_epoch = self.state.warp_epochs[warp as usize].load(Ordering::Acquire);
        let me = Record {
            thread,
            access,
            warp_epoch,
        };
        for word in first..first + count {
            let race = lock(&logs[word]).access(epoch, me);
            if let Some(r) = race {
                self.fail(format!(
                    "shared-memory race in kernel {} block {}: thread {} {} and thread {thread} {} byte address {} with no barrier between them (block epoch {epoch}, {})",
                    self.kernel,
                    self.block_idx(),
                    r.thread,
                    verb(r.access),
                    verb(access),
                    4 * word,
                    if r.thread / WARP == warp {
                        "same warp, no sync_warp between the accesses"
                    } else {
                        "different warps: only sync_threads orders them"
                    }
                ));
            }
        }
    }
}

fn verb(access: Access) -> &'static str {
    match access {
        Access::Read => "reads",
        Access::Write => "writes",
        Access::Atomic => "atomically adds to",
    }
}

fn list(threads: &[u32]) -> String {
    const SHOWN: usize = 8;
    let mut s: Vec<String> = threads.iter().take(SHOWN).map(u32::to_string).collect();
    if threads.len() > SHOWN {
        s.push(format!("... ({} in all)", threads.len()));
    }
    s.join(", ")
}

fn missing_threads(r: &Rendezvous, arrived: &[u32], me: u32) -> Vec<u32> {
    let base = if r.size == WARP { me / WARP * WARP } else { 0 };
    (base..base + r.size)
        .filter(|t| !arrived.contains(t))
        .collect()
}

/// One emulated thread: what a kernel body sees as its `Exec`.
pub struct EmuThread<'a> {
    launch: &'a Launch<'a>,
    thread: u32,
}

impl Exec for EmuThread<'_> {
    fn thread_idx(&self) -> u32 {
        self.launch.check_abort();
        self.thread
    }
    fn block_idx(&self) -> u32 {
        self.launch.check_abort();
        self.launch.block_idx()
    }
    fn block_dim(&self) -> u32 {
        self.launch.shape.block
    }
    fn grid_dim(&self) -> u32 {
        self.launch.shape.grid
    }
    fn sync_threads(&self) {
        let l = self.launch;
        l.check_abort();
        // The last thread to arrive starts the next race-detector epoch.
        l.meet(
            &l.state.block,
            "block",
            self.thread,
            Arrival::Barrier,
            || {
                l.state.epoch.fetch_add(1, Ordering::AcqRel);
            },
        );
    }
    fn sync_warp(&self) {
        let l = self.launch;
        l.check_abort();
        let warp = (self.thread / WARP) as usize;
        l.meet(
            &l.state.warps[warp],
            "warp",
            self.thread,
            Arrival::Barrier,
            || {
                l.state.warp_epochs[warp].fetch_add(1, Ordering::AcqRel);
            },
        );
    }
    unsafe fn load<T: Word>(&self, buf: Global<T>, i: u32) -> T {
        let l = self.launch;
        l.check_abort();
        let addr = (buf.as_ptr() as usize).wrapping_add(i as usize * std::mem::size_of::<T>());
        l.check_global(addr, std::mem::size_of::<T>(), "load", i, buf.len());
        // SAFETY: checked to lie inside an emulator allocation of atomics.
        let words =
            unsafe { std::slice::from_raw_parts(addr as *const AtomicU32, words_of::<T>()) };
        load_words(words)
    }
    unsafe fn store<T: Word>(&self, buf: Global<T>, i: u32, value: T) {
        let l = self.launch;
        l.check_abort();
        let addr = (buf.as_ptr() as usize).wrapping_add(i as usize * std::mem::size_of::<T>());
        l.check_global(addr, std::mem::size_of::<T>(), "store", i, buf.len());
        // SAFETY: checked to lie inside an emulator allocation of atomics.
        let words =
            unsafe { std::slice::from_raw_parts(addr as *const AtomicU32, words_of::<T>()) };
        store_words(words, value)
    }
    unsafe fn atomic_add(&self, buf: Global<f32>, i: u32, value: f32) {
        let l = self.launch;
        l.check_abort();
        let addr = (buf.as_ptr() as usize).wrapping_add(4 * i as usize);
        l.check_global(addr, 4, "atomic add", i, buf.len());
        // SAFETY: checked to lie inside an emulator allocation of atomics.
        atomic_add_f32(unsafe { &*(addr as *const AtomicU32) }, value)
    }
    unsafe fn shared_load<T: Word>(&self, i: u32) -> T {
        let l = self.launch;
        l.check_abort();
        let words = l.shared_words::<T>(self.thread, i, "load");
        l.record(
            self.thread,
            i as usize * words_of::<T>(),
            words.len(),
            Access::Read,
        );
        load_words(words)
    }
    unsafe fn shared_store<T: Word>(&self, i: u32, value: T) {
        let l = self.launch;
        l.check_abort();
        let words = l.shared_words::<T>(self.thread, i, "store");
        l.record(
            self.thread,
            i as usize * words_of::<T>(),
            words.len(),
            Access::Write,
        );
        store_words(words, value)
    }
    unsafe fn shared_atomic_add(&self, i: u32, value: f32) {
        let l = self.launch;
        l.check_abort();
        let words = l.shared_words::<f32>(self.thread, i, "atomic add");
        l.record(self.thread, i as usize, 1, Access::Atomic);
        atomic_add_f32(&words[0], value)
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic".to_owned()
    }
}

/// A job for a pool thread, its borrows erased (see [`run_on_pool`]).
type Job = Box<dyn FnOnce() + Send + 'static>;

/// A parked OS thread that runs the emulated threads of launches, one at a time.
struct Worker {
    job: Mutex<Option<Job>>,
    thread: std::thread::Thread,
}

/// Counts the jobs of one launch still running.
struct Latch {
    left: Mutex<usize>,
    done: std::sync::Condvar,
}

/// Idle workers. Starting an OS thread costs tens of microseconds and a
/// launch needs up to 1024 of them, so they are started once and reused.
fn idle_workers() -> &'static Mutex<Vec<Arc<Worker>>> {
    static IDLE: OnceLock<Mutex<Vec<Arc<Worker>>>> = OnceLock::new();
    IDLE.get_or_init(Mutex::default)
}

fn spawn_worker() -> std::io::Result<Arc<Worker>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("emulated-thread".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let worker = Arc::new(Worker {
                job: Mutex::new(None),
                thread: std::thread::current(),
            });
            if tx.send(Arc::clone(&worker)).is_err() {
                return;
            }
            loop {
                let job = lock(&worker.job).take();
                match job {
                    Some(job) => {
                        // Jobs catch their own panics; this only keeps the
                        // worker alive whatever happens.
                        let _ = catch_unwind(AssertUnwindSafe(job));
                    }
                    None => std::thread::park(),
                }
            }
        })?;
    rx.recv()
        .map_err(|_| std::io::Error::other("an emulator thread died at start"))
}

/// Runs `job(t)` for `t` in `0..count`, each on its own OS thread, all at
/// once, and returns when all have returned.
fn run_on_pool<F>(count: u32, job: F) -> std::io::Result<()>
where
    F: Fn(u32) + Sync,
{
    let mut workers = {
        let mut idle = lock(idle_workers());
        let keep = idle.len().saturating_sub(count as usize);
        idle.split_off(keep)
    };
    while workers.len() < count as usize {
        match spawn_worker() {
            Ok(w) => workers.push(w),
            Err(e) => {
                lock(idle_workers()).extend(workers);
                return Err(e);
            }
        }
    }
    let latch = Arc::new(Latch {
        left: Mutex::new(count as usize),
        done: std::sync::Condvar::new(),
    });
    let job = &job;
    for (t, worker) in workers.iter().enumerate() {
        let latch = Arc::clone(&latch);
        let task: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
            struct CountDown(Arc<Latch>);
            impl Drop for CountDown {
                fn drop(&mut self) {
                    let mut left = lock(&self.0.left);
                    *left -= 1;
                    if *left == 0 {
                        self.0.done.notify_all();
                    }
                }
            }
            let _count_down = CountDown(latch);
            job(t as u32);
        });
        // SAFETY: the task borrows `job` (and through it the launch) only
        // until it returns, and this function does not return before every
        // task has counted the latch down (the count-down runs even if the
        // task unwinds), so no borrow outlives what it borrows.
        let task: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(task) };
        *lock(&worker.job) = Some(task);
        worker.thread.unpark();
    }
    let mut left = lock(&latch.left);
    while *left > 0 {
        left = latch.done.wait(left).unwrap_or_else(|e| e.into_inner());
    }
    drop(left);
    lock(idle_workers()).extend(workers);
    Ok(())
}

/// Runs `kernel` for every thread of every block of `shape`: the block's
/// threads are real OS threads (so barriers mean something), blocks run one
/// after the other with fresh, zeroed shared memory. `memory` lists every
/// device buffer the kernel may touch; any other address is an error.
pub fn launch<F>(
    name: &str,
    shape: LaunchShape,
    options: LaunchOptions,
    memory: &[&DeviceMemory],
    kernel: F,
) -> Result<()>
where
    F: Fn(&EmuThread<'_>) + Sync,
{
    if shape.grid == 0 {
        return Ok(());
    }
    if !(1..=1024).contains(&shape.block) || !shape.block.is_multiple_of(WARP) {
        return Err(Error::Emulator(format!(
            "kernel {name}: block size {} must be a multiple of {WARP} in {WARP}..=1024",
            shape.block
        )));
    }
    if !shape.shared_bytes.is_multiple_of(4) {
        return Err(Error::Emulator(format!(
            "kernel {name}: {} bytes of shared memory is not a whole number of 32-bit words",
            shape.shared_bytes
        )));
    }
    let shared_words = shape.shared_bytes as usize / 4;
    let warps = shape.block / WARP;
    let rendezvous = |size| Rendezvous {
        state: Mutex::new(RendezvousState::default()),
        generation: AtomicU64::new(0),
        size,
    };
    let launch = Launch {
        kernel: name,
        shape,
        options,
        memory,
        abort: AtomicBool::new(false),
        error: Mutex::new(None),
        current_block: AtomicU32::new(0),
        state: BlockState {
            shared: (0..shared_words).map(|_| AtomicU32::new(0)).collect(),
            logs: options
                .race_detection
                .then(|| (0..shared_words).map(|_| Mutex::default()).collect()),
            epoch: AtomicU64::new(0),
            warp_epochs: (0..warps).map(|_| AtomicU64::new(0)).collect(),
            block: rendezvous(shape.block),
            warps: (0..warps).map(|_| rendezvous(WARP)).collect(),
        },
    };
    let launch = &launch;
    let kernel = &kernel;
    let run_thread = move |thread: u32| {
        let result = catch_unwind(AssertUnwindSafe(|| {
            let me = EmuThread { launch, thread };
            for block in 0..shape.grid {
                // The last thread to arrive sets up the block (fresh shared
                // memory, a new epoch) for all.
                launch.meet(
                    &launch.state.block,
                    "block-start",
                    thread,
                    Arrival::Barrier,
                    || {
                        launch
                            .state
                            .shared
                            .iter()
                            .for_each(|w| w.store(0, Ordering::Relaxed));
                        launch.state.epoch.fetch_add(1, Ordering::AcqRel);
                        launch.current_block.store(block, Ordering::Release);
                    },
                );
                kernel(&me);
                launch.meet(
                    &launch.state.block,
                    "block",
                    thread,
                    Arrival::Finished,
                    || {},
                );
            }
        }));
        if let Err(payload) = result
            && !payload.is::<Fault>()
        {
            let message = panic_message(&*payload);
            let mut slot = lock(&launch.error);
            if slot.is_none() {
                *slot = Some(format!(
                    "kernel {name} block {} thread {thread} panicked: {message}",
                    launch.block_idx()
                ));
            }
            launch.abort.store(true, Ordering::SeqCst);
        }
    };
    if let Err(e) = run_on_pool(shape.block, run_thread) {
        return Err(Error::Emulator(format!(
            "kernel {name}: cannot start the emulator's threads: {e}"
        )));
    }
    match lock(&launch.error).take() {
        Some(message) => Err(Error::Emulator(message)),
        None => Ok(()),
    }
}
