//! A launch: [`launch`] runs a kernel over a grid, each block's threads at
//! once on the worker pool; [`EmuThread`] is what one emulated thread's
//! kernel body sees as its [`Exec`], and every access it makes is checked
//! here (bounds, the buffers of the launch, races) before it touches memory.
//! The parts live beside it: `device_memory.rs`, `barrier.rs`,
//! `race_detector.rs`, `worker_pool.rs`.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use gpu_kernels::exec::{Exec, Global, Word};
use gpu_kernels::shape::{LaunchShape, WARP};

use super::barrier::{Arrival, Rendezvous};
use super::device_memory::{atomic_add_f32, load_words, store_words, words_of};
use super::lock;
use super::race_detector::{Access, RaceDetector, Record};
use super::worker_pool::run_on_pool;
use crate::error::{Error, Result};

// The buffers of a launch; device.rs imports it from here with the rest.
use super::device_memory::DeviceMemory;

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

/// What an emulated thread unwinds with when the launch must stop.
struct Fault;

/// State of the block being run, shared by all its emulated threads.
struct BlockState {
    shared: Box<[AtomicU32]>,
    races: Option<RaceDetector>,
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

    /// Arrives at `r` (the block's or a warp's rendezvous, `what` in
    /// messages) and waits for the others (see [`Rendezvous::meet`]); a
    /// deadlock fails the launch.
    fn meet(
        &self,
        r: &Rendezvous,
        what: &str,
        thread: u32,
        arrival: Arrival,
        on_release: impl FnOnce(),
    ) {
        let timeout = self.options.barrier_timeout;
        if let Err(deadlock) = r.meet(thread, arrival, timeout, || self.check_abort(), on_release) {
            self.fail(deadlock.describe(self.kernel, self.block_idx(), what));
        }
    }

    /// Fails the launch unless `bytes` bytes at `addr` are element `i < len`
    /// of a buffer, lie inside one of the launch's [`DeviceMemory`] buffers
    /// and start on a word: what makes them `bytes / 4` valid `AtomicU32`s.
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
            addr >= start && addr.checked_add(bytes).is_some_and(|last| last <= end)
        });
        if !inside {
            self.fail(format!(
                "{what} in kernel {} block {} at {addr:#x} is outside every device buffer",
                self.kernel,
                self.block_idx()
            ));
        }
        if !addr.is_multiple_of(4) {
            self.fail(format!(
                "{what} in kernel {} block {} at {addr:#x} is not 4-byte aligned (a buffer pointer offset by part of a word)",
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
        let Some(races) = &self.state.races else {
            return;
        };
        let epoch = self.state.epoch.load(Ordering::Acquire);
        let warp_epoch = self.state.warp_epochs[(thread / WARP) as usize].load(Ordering::Acquire);
        let me = Record {
            thread,
            access,
            warp_epoch,
        };
        if let Some(race) = races.record(epoch, first, count, me) {
            self.fail(race.describe(self.kernel, self.block_idx()));
        }
    }
}

/// One emulated thread: what a kernel body sees as its `Exec`.
pub struct EmuThread<'a> {
    launch: &'a Launch<'a>,
    thread: u32,
}

impl EmuThread<'_> {
    /// Element `i` of a `u32` device buffer as an atomic word, after the
    /// checks of [`Launch::check_global`] (`what` names the access).
    ///
    /// # Safety
    /// As for [`Exec::atomic_add`]: `buf` is a view the launch was given.
    unsafe fn global_word(&self, buf: Global<u32>, i: u32, what: &str) -> &AtomicU32 {
        let l = self.launch;
        l.check_abort();
        let addr = (buf.as_ptr() as usize).wrapping_add(4 * i as usize);
        l.check_global(addr, 4, what, i, buf.len());
        // SAFETY: as in `load`: `check_global` found the 4 bytes at `addr`
        // 4-aligned inside a `DeviceMemory` this launch borrows, one
        // `AtomicU32`.
        unsafe { &*(addr as *const AtomicU32) }
    }
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
        // SAFETY: `check_global` returned, so the `size_of::<T>()` bytes at
        // `addr` are 4-aligned and inside a `DeviceMemory` of this launch,
        // which `self.launch` borrows for the whole launch: `words_of::<T>()`
        // initialised `AtomicU32`s, only ever accessed atomically.
        let words =
            unsafe { std::slice::from_raw_parts(addr as *const AtomicU32, words_of::<T>()) };
        load_words(words)
    }
    unsafe fn store<T: Word>(&self, buf: Global<T>, i: u32, value: T) {
        let l = self.launch;
        l.check_abort();
        let addr = (buf.as_ptr() as usize).wrapping_add(i as usize * std::mem::size_of::<T>());
        l.check_global(addr, std::mem::size_of::<T>(), "store", i, buf.len());
        // SAFETY: `check_global` returned, so the `size_of::<T>()` bytes at
        // `addr` are 4-aligned and inside a `DeviceMemory` of this launch,
        // which `self.launch` borrows for the whole launch: `words_of::<T>()`
        // initialised `AtomicU32`s, only ever accessed atomically.
        let words =
            unsafe { std::slice::from_raw_parts(addr as *const AtomicU32, words_of::<T>()) };
        store_words(words, value)
    }
    unsafe fn atomic_add(&self, buf: Global<f32>, i: u32, value: f32) {
        let l = self.launch;
        l.check_abort();
        let addr = (buf.as_ptr() as usize).wrapping_add(4 * i as usize);
        l.check_global(addr, 4, "atomic add", i, buf.len());
        // SAFETY: as in `load`: `check_global` found the 4 bytes at `addr`
        // 4-aligned inside a `DeviceMemory` this launch borrows, one
        // `AtomicU32`.
        atomic_add_f32(unsafe { &*(addr as *const AtomicU32) }, value)
    }
    unsafe fn atomic_add_u32(&self, buf: Global<u32>, i: u32, value: u32) -> u32 {
        // SAFETY: the same contract as `atomic_add`'s, which checks everything.
        unsafe { self.global_word(buf, i, "atomic add") }.fetch_add(value, Ordering::AcqRel)
    }
    unsafe fn atomic_max_u32(&self, buf: Global<u32>, i: u32, value: u32) {
        // SAFETY: the same contract as `atomic_add`'s, which checks everything.
        unsafe { self.global_word(buf, i, "atomic max") }.fetch_max(value, Ordering::AcqRel);
    }
    unsafe fn atomic_min_u32(&self, buf: Global<u32>, i: u32, value: u32) {
        // SAFETY: the same contract as `atomic_add`'s, which checks everything.
        unsafe { self.global_word(buf, i, "atomic min") }.fetch_min(value, Ordering::AcqRel);
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
            races: options
                .race_detection
                .then(|| RaceDetector::new(shared_words)),
            epoch: AtomicU64::new(0),
            warp_epochs: (0..warps).map(|_| AtomicU64::new(0)).collect(),
            block: Rendezvous::new(shape.block),
            warps: (0..warps).map(|_| Rendezvous::new(WARP)).collect(),
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
