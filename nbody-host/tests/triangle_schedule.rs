//! The triangle kernel's schedule, observed on the real kernel body: a spy
//! execution model wraps the emulator's and records, for every j-body load of
//! a pair step, the block, the thread, the sub-tile (the thread's count of
//! j-body stores), the step (its count of warp barriers) and the j slot. Each
//! load serves the thread's `R` register-held i-bodies `S gx + t + r B` that
//! pass the kernel's documented guard (`i < N`, `j < N`, `j > i` on the
//! diagonal). From that record: every unordered pair `i < j < N` is computed
//! exactly once, never `(i, i)`, never a body past `N`, and no two threads of
//! a block use the same j slot in the same step.

use std::cell::{Cell, RefCell};
use std::sync::Mutex;

use gpu_kernels::Vec4;
use gpu_kernels::exec::{Exec, Global, Word};
use gpu_kernels::shape::{
    self, TRIANGLE_BODIES_PER_THREAD, WARP, triangle_block_coords, triangle_group_size,
};
use nbody_host::emulator::{DeviceMemory, EmuThread, LaunchOptions, launch};

/// One j-body load of a pair step as the spy sees it.
#[derive(Clone, Copy, Debug)]
struct PairStep {
    block: u32,
    thread: u32,
    sub_tile: u32,
    step: u32,
    slot: u32,
    /// The j-body.
    j: u32,
}

/// Forwards to the emulator and records the j-body loads of pair steps.
struct Spy<'a, 'b> {
    inner: &'a EmuThread<'b>,
    log: RefCell<Vec<PairStep>>,
    warp_barriers: Cell<u32>,
    /// j-body stores so far: the sub-tile in progress is this minus one.
    body_stores: Cell<u32>,
    started: Cell<bool>,
}

/// Whether a shared `Vec4` index is a j-body slot (the second half of its
/// warp chunk) rather than a reaction.
fn is_body_slot(idx: u32) -> bool {
    idx % (2 * WARP) >= WARP
}

impl Exec for Spy<'_, '_> {
    fn thread_idx(&self) -> u32 {
        self.inner.thread_idx()
    }
    fn block_idx(&self) -> u32 {
        self.inner.block_idx()
    }
    fn block_dim(&self) -> u32 {
        self.inner.block_dim()
    }
    fn grid_dim(&self) -> u32 {
        self.inner.grid_dim()
    }
    fn sync_threads(&self) {
        // The first block barrier ends the loading of the j bodies.
        self.started.set(true);
        self.inner.sync_threads()
    }
    fn sync_warp(&self) {
        self.warp_barriers.set(self.warp_barriers.get() + 1);
        self.inner.sync_warp()
    }
    unsafe fn load<T: Word>(&self, buf: Global<T>, i: u32) -> T {
        // SAFETY: the caller upholds `Exec`\'s contract, which the emulator checks.
        unsafe { self.inner.load(buf, i) }
    }
    unsafe fn store<T: Word>(&self, buf: Global<T>, i: u32, value: T) {
        // SAFETY: the caller upholds `Exec`\'s contract, which the emulator checks.
        unsafe { self.inner.store(buf, i, value) }
    }
    unsafe fn atomic_add(&self, buf: Global<f32>, i: u32, value: f32) {
        // SAFETY: the caller upholds `Exec`\'s contract, which the emulator checks.
        unsafe { self.inner.atomic_add(buf, i, value) }
    }
    unsafe fn atomic_add_u32(&self, buf: Global<u32>, i: u32, value: u32) -> u32 {
        // SAFETY: the caller upholds `Exec`\'s contract, which the emulator checks.
        unsafe { self.inner.atomic_add_u32(buf, i, value) }
    }
    unsafe fn atomic_max_u32(&self, buf: Global<u32>, i: u32, value: u32) {
        // SAFETY: the caller upholds `Exec`\'s contract, which the emulator checks.
        unsafe { self.inner.atomic_max_u32(buf, i, value) }
    }
    unsafe fn atomic_min_u32(&self, buf: Global<u32>, i: u32, value: u32) {
        // SAFETY: the caller upholds `Exec`\'s contract, which the emulator checks.
        unsafe { self.inner.atomic_min_u32(buf, i, value) }
    }
    unsafe fn shared_load<T: Word>(&self, idx: u32) -> T {
        // Shared memory holds, per warp chunk, 32 reactions then 32 j bodies.
        if self.started.get() && std::mem::size_of::<T>() == 16 && is_body_slot(idx) {
            let b = self.block_dim();
            let (_, gy) = triangle_block_coords(self.block_idx());
            let sub_tile = self.body_stores.get() - 1;
            let slot = idx / (2 * WARP) * WARP + idx % (2 * WARP) - WARP;
            self.log.borrow_mut().push(PairStep {
                block: self.block_idx(),
                thread: self.thread_idx(),
                sub_tile,
                step: self.warp_barriers.get(),
                slot,
                j: triangle_group_size(b) * gy + 1 + sub_tile * b + slot,
            });
        }
        // SAFETY: the caller upholds `Exec`\'s contract, which the emulator checks.
        unsafe { self.inner.shared_load(idx) }
    }
    unsafe fn shared_store<T: Word>(&self, idx: u32, value: T) {
        if std::mem::size_of::<T>() == 16 && is_body_slot(idx) {
            self.body_stores.set(self.body_stores.get() + 1);
        }
        // SAFETY: the caller upholds `Exec`\'s contract, which the emulator checks.
        unsafe { self.inner.shared_store(idx, value) }
    }
    unsafe fn shared_atomic_add(&self, idx: u32, value: f32) {
        // SAFETY: the caller upholds `Exec`\'s contract, which the emulator checks.
        unsafe { self.inner.shared_atomic_add(idx, value) }
    }
}

fn observe(n: u32, block: u32) -> Vec<PairStep> {
    let pos: Vec<Vec4> = (0..n)
        .map(|k| Vec4::new(k as f32, (k * k % 7) as f32, 0.5, 1.0))
        .collect();
    let (pos_mem, acc_mem) = (
        DeviceMemory::from_slice(&pos),
        DeviceMemory::zeroed(4 * n as usize),
    );
    let (p, a) = (pos_mem.global::<Vec4>(n), acc_mem.global::<Vec4>(n));
    let Some(shape) = shape::triangle(n, block) else {
        panic!("no triangle launch for N = {n}, B = {block}");
    };
    let log = Mutex::new(Vec::new());
    let options = LaunchOptions {
        race_detection: false,
        ..LaunchOptions::default()
    };
    launch("triangle", shape, options, &[&pos_mem, &acc_mem], |t| {
        let spy = Spy {
            inner: t,
            log: RefCell::default(),
            warp_barriers: Cell::new(0),
            body_stores: Cell::new(0),
            started: Cell::new(false),
        };
        // SAFETY: `pos_mem` and `acc_mem` hold n bodies, the shape is
        // `shape::triangle(n, block)`; the emulator checks every access anyway.
        unsafe { gpu_kernels::triangle::triangle_accel::<_, false>(&spy, p, a, n, 1.0, 0.01) };
        log.lock().unwrap().extend(spy.log.take());
    })
    .unwrap();
    log.into_inner().unwrap()
}

#[test]
fn every_pair_once_and_no_shared_j_slot_in_a_step() {
    let cases = [1u32, 2, 3, 17, 31, 32, 33, 255, 256, 257, 1000]
        .iter()
        .flat_map(|&n| [32u32, 64, 128, 256].map(move |b| (n, b)))
        .chain([(4096, 512), (2000, 512)]);
    for (n, block) in cases {
        let steps = observe(n, block);
        let mut seen = vec![0u8; (n * n) as usize];
        let mut pairs = 0u64;
        for s in &steps {
            assert!(s.j < n, "N {n} B {block}: {s:?} reaches past N");
            let (gx, gy) = triangle_block_coords(s.block);
            let mut served = 0;
            for r in 0..TRIANGLE_BODIES_PER_THREAD {
                let i = triangle_group_size(block) * gx + s.thread + r * block;
                if i < n && (gx != gy || s.j > i) {
                    assert!(i < s.j, "N {n} B {block}: {s:?} pairs i = {i} below it");
                    seen[(i * n + s.j) as usize] += 1;
                    served += 1;
                }
            }
            assert!(served > 0, "N {n} B {block}: {s:?} serves no pair");
            pairs += served;
        }
        for i in 0..n {
            for j in i + 1..n {
                let times = seen[(i * n + j) as usize];
                assert_eq!(
                    times, 1,
                    "N {n} B {block}: pair ({i}, {j}) computed {times} times"
                );
            }
        }
        assert_eq!(pairs, n as u64 * n.saturating_sub(1) as u64 / 2);

        let mut slots: Vec<([u32; 4], u32)> = steps
            .iter()
            .map(|s| ([s.block, s.sub_tile, s.step, s.slot], s.thread))
            .collect();
        slots.sort_unstable();
        for w in slots.windows(2) {
            let ([block_id, sub_tile, step, slot], t) = w[0];
            assert!(
                w[0].0 != w[1].0,
                "N {n} B {block}: threads {t} and {} of block {block_id} both use j slot {slot} in sub-tile {sub_tile} step {step}",
                w[1].1,
            );
        }
    }
}
