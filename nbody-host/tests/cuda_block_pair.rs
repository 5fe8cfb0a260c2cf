//! The block-pair primitive of `Backend::Cuda` (`PairForces` over
//! `CudaDevice`, `nbody-host/src/plan/block_pair.rs` and `cuda/device.rs`:
//! what the MPI ring runs on a GPU) through whatever
//! `libcuda.so.1` the binary loads: in CI the software CUDA device
//! (`scripts/with-softcuda.sh cargo test -p nbody-host --features cuda
//! --test cuda_block_pair`), on a GPU machine the real driver. Built only
//! with the `cuda` feature.
//!
//! Every operation against the f64 oracle (`block_pair_oracle`, shared with
//! `tests/block_pair.rs`), and the GPU-path defects of issue 15 that the
//! engine fixed, held here for the block-pair primitive too: 1 (stream
//! order: uploads and memsets on the object's own stream, checked with
//! `SOFTCUDA_STREAMS=non-blocking`, where legacy-stream copies complete after
//! the kernels), 4 (the kernels' limits after the JIT and the dynamic
//! shared-memory opt-in, before any launch) and 5 (an object dropped on
//! another thread frees its device memory). As in `tests/cuda_backend.rs`,
//! tests named `softcuda_*` model a device through `SOFTCUDA_*` variables
//! in a child process and fail, rather than pass vacuously, on a real
//! driver.
#![cfg(feature = "cuda")]

mod block_pair_oracle;
mod cuda_env;

use block_pair_oracle::*;
use cuda_env::{in_child, in_child_alone, shared_device};
use nbody_host::block_pair::BlockForces;
use nbody_host::gpu_kernels::Vec4;
use nbody_host::{Backend, Error};

const CUDA: Backend = Backend::Cuda { device: 0 };

/// The adversarial schedule (independent threads, about 20 times slower)
/// runs the smaller block lengths.
fn adversarial() -> bool {
    std::env::var("SOFTCUDA_SCHEDULE").as_deref() == Ok("adversarial")
}

/// Whether the loaded driver is the software device; the `softcuda_*` tests
/// refuse to run on anything else.
fn assert_softcuda() {
    let _context = cust::quick_init().expect("a CUDA device");
    let name = cust::device::Device::get_device(0)
        .and_then(|d| d.name())
        .expect("the device name");
    assert!(
        name.starts_with("softcuda"),
        "this test models a device through SOFTCUDA_* variables and needs the software CUDA device (scripts/with-softcuda.sh), not {name:?}"
    );
}

/// `pull`, `pull_pair` (both halves: Newton's third law), `pull_within`,
/// the diagonal `pull(I, I)`, `potential_within` and `potential_between`
/// against the oracle: blocks of 0, 1, 17, 31, 33, 100, 257, 1000 bodies
/// (not multiples of a warp, a register group or a GPU block), softening 0
/// (the guarded kernels) and 0.1, GPU blocks 32 and 128 (the adversarial
/// schedule: block 32, blocks of at most 257 bodies).
#[test]
fn cuda_block_pairs_match_the_oracle() {
    let _device = shared_device();
    let (blocks, sizes): (&[u32], &[(usize, usize)]) = if adversarial() {
        (&[32], &SIZES[..9])
    } else {
        (&[32, 128], &SIZES)
    };
    for &block in blocks {
        let worst = check_backend(CUDA, block, sizes);
        println!("CUDA block {block}: worst error {worst:.1} u (S + |A0|)");
    }
}

/// The same object reused for blocks whose lengths change and repeat (its
/// buffers reallocated or reused), against the oracle.
#[test]
fn cuda_block_pair_buffers_follow_the_block_lengths() {
    let _device = shared_device();
    let mut f = CUDA.block_forces(&params(0.1, 64), 0.004).unwrap();
    for (ni, nj) in [(40, 70), (40, 70), (70, 40), (1, 1), (40, 70), (0, 3)] {
        let (i, j) = (block_seeded(ni, 7), block_seeded(nj, 8));
        let a0 = start(ni, 9);
        let mut acc = a0.clone();
        f.pull(&i, &j, &mut acc).unwrap();
        check_forces(
            &format!("pull {ni}x{nj}"),
            &acc,
            &a0,
            &oracle_pull(&i, &j, 0.1),
            nj,
        );
        let want = oracle_potential(&[&i, &j], 0.1)
            - oracle_potential(&[&i], 0.1)
            - oracle_potential(&[&j], 0.1);
        let got = f.potential_between(&i, &j).unwrap();
        assert!(
            (got - want).abs() <= 100.0 * U * want.abs() + 1e-15,
            "potential_between {ni}x{nj}: {got} vs oracle {want}"
        );
    }
}

/// Defect 1: every upload and memset is ordered before the kernels on the
/// object's own stream, whatever the stream's flags. With
/// `SOFTCUDA_STREAMS=non-blocking` (the stream the object asks for; cust
/// 0.3.2 silently makes it blocking), synchronous cust copies and memsets
/// run on the legacy stream, which the kernels' stream does not wait for
/// and which completes them late: the kernels would read fresh allocations
/// (poison, a NaN) and a late memset would overwrite the potential's
/// partial sums after the kernel wrote them.
#[test]
fn softcuda_block_pair_stream_order_holds_on_a_non_blocking_stream() {
    if !in_child(
        "softcuda_block_pair_stream_order_holds_on_a_non_blocking_stream",
        &[("SOFTCUDA_STREAMS", "non-blocking")],
    ) {
        return;
    }
    assert_softcuda();
    let sizes = [(1, 17), (31, 33), (33, 31), (100, 57)];
    let worst = check_backend(CUDA, 64, &sizes);
    println!("CUDA block 64, non-blocking stream: worst error {worst:.1} u (S + |A0|)");
}

/// Defect 4: a kernel whose registers (after the driver's JIT) allow fewer
/// threads per block than the object launches it with is
/// `BlockExceedsKernelLimit` from `block_forces`, naming the kernel, the
/// block and the limit, before anything is launched; not a launch failure
/// in the middle of a ring. `SOFTCUDA_REGISTERS` gives the block potential
/// and the guarded block pull 72 registers per thread: 896 threads per
/// block at most.
#[test]
fn softcuda_block_pair_limits_after_the_jit_are_checked_before_any_launch() {
    if !in_child(
        "softcuda_block_pair_limits_after_the_jit_are_checked_before_any_launch",
        &[(
            "SOFTCUDA_REGISTERS",
            "nbody_block_potential=72,nbody_block_pull_guarded=72",
        )],
    ) {
        return;
    }
    assert_softcuda();
    for (eps, kernel) in [
        (0.1, "nbody_block_potential"),
        (0.0, "nbody_block_pull_guarded"),
    ] {
        let e = CUDA.block_forces(&params(eps, 1024), 1.0).err().unwrap();
        assert!(
            matches!(
                e,
                Error::BlockExceedsKernelLimit {
                    kernel: k,
                    block: 1024,
                    max: 896,
                    registers: 72
                } if k == kernel
            ),
            "eps {eps}: {e}"
        );
    }
    // A block the registers allow runs.
    let worst = check_backend(CUDA, 512, &[(33, 70)]);
    println!("CUDA block 512: worst error {worst:.1} u (S + |A0|)");
}

/// Defect 4's other half: launches above a function's dynamic shared memory
/// without the opt-in (`SOFTCUDA_SHARED_DEFAULT_BYTES` lowers it from 48 KiB
/// to 8 KiB, so block 1024's 16 KiB tiles need it) are opted in; without the
/// opt-in they fail with `CUDA_ERROR_INVALID_VALUE`.
#[test]
fn softcuda_block_pair_shared_memory_opt_in_covers_every_launch() {
    if !in_child(
        "softcuda_block_pair_shared_memory_opt_in_covers_every_launch",
        &[("SOFTCUDA_SHARED_DEFAULT_BYTES", "8k")],
    ) {
        return;
    }
    assert_softcuda();
    let worst = check_backend(CUDA, 1024, &[(33, 70), (70, 1)]);
    println!("CUDA block 1024, opted in: worst error {worst:.1} u (S + |A0|)");
}

/// `SharedMemoryExceeded` from `block_forces` when the device's opt-in
/// maximum is below a launch's tiles (`SOFTCUDA_SHARED_BYTES`: 8 KiB; block
/// 1024 needs 16 KiB, block 256 4 KiB for the tiled kernels and 8 KiB for
/// the pair kernels' j-bodies and reactions).
#[test]
fn softcuda_block_pair_shared_memory_exceeded() {
    if !in_child(
        "softcuda_block_pair_shared_memory_exceeded",
        &[("SOFTCUDA_SHARED_BYTES", "8k")],
    ) {
        return;
    }
    assert_softcuda();
    let e = CUDA.block_forces(&params(0.1, 1024), 1.0).err().unwrap();
    assert!(
        matches!(
            e,
            Error::SharedMemoryExceeded {
                block: 1024,
                needed: 16384,
                available: 8192,
                ..
            }
        ),
        "{e}"
    );
    check_backend(CUDA, 256, &[(5, 3)]);
}

/// Defect 5: the object is `Send` (a ring hands it to its own thread), so it
/// may be dropped on a thread that never made its context current; its
/// device memory must be freed anyway. The test holds the primary context
/// itself, so only the object's own frees can bring the free memory back.
/// Runs alone in a child process: other tests allocate meanwhile.
#[test]
fn a_block_pair_dropped_on_another_thread_frees_its_device_memory() {
    if !in_child_alone(
        "a_block_pair_dropped_on_another_thread_frees_its_device_memory",
        &[],
    ) {
        return;
    }
    let _context = cust::quick_init().unwrap();
    let free = || cust::memory::mem_get_info().unwrap().0;
    let before = free();
    let mut f = CUDA.block_forces(&params(0.1, 128), 0.004).unwrap();
    // Two blocks of 100,000 bodies (3.2 MB on the device) and one of 2: the
    // pull of 2 bodies is quick to interpret.
    let n = 100_000;
    let (i, j) = (block(n, 1), block(2, 2));
    let mut acc = vec![Vec4::ZERO; n];
    f.pull(&i, &j, &mut acc).unwrap();
    assert!(acc.iter().all(|a| a.x.is_finite() && a.x != 0.0));
    let used = before.saturating_sub(free());
    assert!(used >= 32 * n, "the block pair allocated {used} bytes");
    std::thread::spawn(move || drop(f)).join().unwrap();
    let leaked = before.saturating_sub(free());
    assert!(
        leaked < used / 4,
        "{leaked} of the block pair's {used} device bytes still allocated after dropping it on another thread"
    );
    if cust::device::Device::get_device(0)
        .and_then(|d| d.name())
        .is_ok_and(|name| name.starts_with("softcuda"))
    {
        assert_eq!(leaked, 0, "exact accounting on the software device");
    }
}

/// The kind names the device, as the engine's does.
#[test]
fn cuda_block_pair_kind_is_cuda() {
    let _device = shared_device();
    let f: Box<dyn BlockForces> = CUDA.block_forces(&params(0.1, 64), 1.0).unwrap();
    assert_eq!(f.kind().name(), "cuda");
}
