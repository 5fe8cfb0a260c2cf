//! The emulator itself: barriers, the race detector, bounds checks and the
//! deadlock guard, each shown to catch a kernel written to have that bug, and
//! to pass the same kernel once fixed.

use std::time::{Duration, Instant};

use gpu_kernels::exec::{Exec, Global};
use gpu_kernels::shape::LaunchShape;
use nbody_host::Error;
use nbody_host::emulator::{DeviceMemory, LaunchOptions, launch};

fn shape(grid: u32, block: u32, shared_bytes: u32) -> LaunchShape {
    LaunchShape {
        grid,
        block,
        shared_bytes,
    }
}

fn emulator_message(result: nbody_host::Result<()>) -> String {
    match result {
        Err(Error::Emulator(message)) => message,
        other => panic!("expected an emulator error, got {other:?}"),
    }
}

/// Each thread writes its slot of shared memory, then reads its neighbour's
/// (`t + shift`), optionally with a barrier in between.
fn neighbour_exchange(
    block: u32,
    shift: u32,
    barrier: fn(&nbody_host::emulator::EmuThread<'_>),
    options: LaunchOptions,
) -> (nbody_host::Result<()>, Vec<f32>) {
    let out = DeviceMemory::zeroed(block as usize);
    let y = out.global::<f32>(block);
    let result = launch(
        "exchange",
        shape(1, block, 4 * block),
        options,
        &[&out],
        // SAFETY: the emulator checks every access and reports this kernel's
        // deliberate bug (or its absence) as the test expects; no real memory is at risk.
        |t| unsafe {
            let i = t.thread_idx();
            t.shared_store(i, i as f32);
            barrier(t);
            let v: f32 = t.shared_load((i + shift) % t.block_dim());
            t.store(y, i, v);
        },
    );
    (result, out.read())
}

#[test]
fn a_missing_barrier_is_a_race() {
    let (result, _) = neighbour_exchange(64, 1, |_| {}, LaunchOptions::default());
    let message = emulator_message(result);
    assert!(message.contains("shared-memory race"), "{message}");
    assert!(message.contains("kernel exchange block 0"), "{message}");
    assert!(message.contains("byte address"), "{message}");
    assert!(message.contains("block epoch"), "{message}");
}

#[test]
fn sync_threads_orders_the_block() {
    let (result, out) = neighbour_exchange(64, 1, |t| t.sync_threads(), LaunchOptions::default());
    result.unwrap();
    let expected: Vec<f32> = (0..64).map(|i| ((i + 1) % 64) as f32).collect();
    assert_eq!(out, expected);
}

#[test]
fn sync_warp_orders_only_its_own_warp() {
    // Neighbour inside the warp (lane 31 reads lane 0 of the same warp): fine.
    let out = DeviceMemory::zeroed(64);
    let y = out.global::<f32>(64);
    launch(
        "in-warp",
        shape(1, 64, 256),
        LaunchOptions::default(),
        &[&out],
        // SAFETY: the emulator checks every access and reports this kernel's
        // deliberate bug (or its absence) as the test expects; no real memory is at risk.
        |t| unsafe {
            let i = t.thread_idx();
            t.shared_store(i, i as f32);
            t.sync_warp();
            let v: f32 = t.shared_load(i / 32 * 32 + (i + 1) % 32);
            t.store(y, i, v);
        },
    )
    .unwrap();
    assert_eq!(out.read::<f32>()[31], 0.0);
    assert_eq!(out.read::<f32>()[63], 32.0);

    // Reading the other warp's slot after only a warp barrier is a race.
    let (result, _) = neighbour_exchange(64, 32, |t| t.sync_warp(), LaunchOptions::default());
    let message = emulator_message(result);
    assert!(message.contains("different warps"), "{message}");
}

#[test]
fn a_missing_sync_warp_inside_a_warp_is_a_race() {
    let (result, _) = neighbour_exchange(32, 5, |_| {}, LaunchOptions::default());
    let message = emulator_message(result);
    assert!(message.contains("same warp, no sync_warp"), "{message}");
}

#[test]
fn race_detection_can_be_switched_off() {
    let options = LaunchOptions {
        race_detection: false,
        ..LaunchOptions::default()
    };
    let (result, _) = neighbour_exchange(64, 1, |_| {}, options);
    result.unwrap();
}

#[test]
fn atomics_do_not_race_with_atomics_but_do_with_plain_accesses() {
    let out = DeviceMemory::zeroed(1);
    let y = out.global::<f32>(1);
    launch(
        "count",
        shape(2, 128, 4),
        LaunchOptions::default(),
        &[&out],
        // SAFETY: the emulator checks every access and reports this kernel's
        // deliberate bug (or its absence) as the test expects; no real memory is at risk.
        |t| unsafe {
            t.shared_atomic_add(0, 1.0);
            t.sync_threads();
            if t.thread_idx() == 0 {
                let count: f32 = t.shared_load(0);
                t.atomic_add(y, 0, count);
            }
        },
    )
    .unwrap();
    // Two blocks of 128, fresh shared memory per block.
    assert_eq!(out.read::<f32>(), [256.0]);

    let result = launch(
        "peek",
        shape(1, 64, 4),
        LaunchOptions::default(),
        &[],
        // SAFETY: the emulator checks every access and reports this kernel's
        // deliberate bug (or its absence) as the test expects; no real memory is at risk.
        |t| unsafe {
            if t.thread_idx() == 40 {
                let _: f32 = t.shared_load(0);
            } else {
                t.shared_atomic_add(0, 1.0);
            }
        },
    );
    let message = emulator_message(result);
    assert!(message.contains("atomically adds to"), "{message}");
    assert!(message.contains("reads"), "{message}");
}

#[test]
fn out_of_bounds_accesses_are_reported() {
    let data = DeviceMemory::from_slice(&[1.0f32; 8]);
    let x = data.global::<f32>(8);

    let global = launch(
        "past-the-end",
        shape(1, 32, 0),
        LaunchOptions::default(),
        &[&data],
        // SAFETY: the emulator checks every access and reports this kernel's
        // deliberate bug (or its absence) as the test expects; no real memory is at risk.
        |t| unsafe {
            let _ = t.load(x, t.thread_idx());
        },
    );
    let message = emulator_message(global);
    assert!(message.contains("out-of-bounds load"), "{message}");
    assert!(message.contains("of a buffer of 8"), "{message}");

    let shared = launch(
        "shared-overflow",
        shape(1, 32, 64),
        LaunchOptions::default(),
        &[],
        // SAFETY: the emulator checks every access and reports this kernel's
        // deliberate bug (or its absence) as the test expects; no real memory is at risk.
        |t| unsafe {
            t.shared_store(t.thread_idx(), 1.0f32);
        },
    );
    let message = emulator_message(shared);
    assert!(
        message.contains("out-of-bounds shared-memory store"),
        "{message}"
    );
    assert!(message.contains("64 bytes of shared memory"), "{message}");

    // A pointer the launch was not given: no touching host memory.
    let mut host = vec![0.0f32; 32];
    let stray = Global::new(host.as_mut_ptr(), 32);
    let foreign = launch(
        "stray-pointer",
        shape(1, 32, 0),
        LaunchOptions::default(),
        &[&data],
        // SAFETY: the emulator checks every access and reports this kernel's
        // deliberate bug (or its absence) as the test expects; no real memory is at risk.
        |t| unsafe {
            t.store(stray, t.thread_idx(), 1.0);
        },
    );
    let message = emulator_message(foreign);
    assert!(message.contains("outside every device buffer"), "{message}");
    assert!(host.iter().all(|&v| v == 0.0));
}

#[test]
fn misaligned_and_wrapping_global_addresses_are_reported() {
    let data = DeviceMemory::from_slice(&[1.0f32; 8]);
    let base = data.global::<f32>(8).as_ptr() as usize;
    // Inside the buffer but not on a word boundary: nothing is touched.
    let misaligned = Global::new((base + 2) as *mut f32, 4);
    let run = |name: &str, access: fn(&nbody_host::emulator::EmuThread<'_>, Global<f32>)| {
        launch(
            name,
            shape(1, 32, 0),
            LaunchOptions::default(),
            &[&data],
            |t| access(t, misaligned),
        )
    };
    for (name, result) in [
        (
            "misaligned-load",
            // SAFETY: the emulator checks every access and reports this kernel's
            // deliberate bug (or its absence) as the test expects; no real memory is at risk.
            run("misaligned-load", |t, g| unsafe {
                let _ = t.load(g, 0);
            }),
        ),
        (
            "misaligned-store",
            // SAFETY: the emulator checks every access and reports this kernel's
            // deliberate bug (or its absence) as the test expects; no real memory is at risk.
            run("misaligned-store", |t, g| unsafe { t.store(g, 0, 2.0) }),
        ),
        (
            "misaligned-atomic",
            // SAFETY: the emulator checks every access and reports this kernel's
            // deliberate bug (or its absence) as the test expects; no real memory is at risk.
            run("misaligned-atomic", |t, g| unsafe {
                t.atomic_add(g, 0, 2.0)
            }),
        ),
    ] {
        let message = emulator_message(result);
        assert!(message.contains("not 4-byte aligned"), "{name}: {message}");
    }
    assert_eq!(data.read::<f32>(), [1.0; 8]);

    // An address whose last byte would wrap past the end of the address space.
    let wrapping = Global::new((usize::MAX - 1) as *mut f32, 1);
    let result = launch(
        "wrapping",
        shape(1, 32, 0),
        LaunchOptions::default(),
        &[&data],
        // SAFETY: the emulator checks every access and reports this kernel's
        // deliberate bug (or its absence) as the test expects; no real memory is at risk.
        |t| unsafe {
            let _ = t.load(wrapping, 0);
        },
    );
    let message = emulator_message(result);
    assert!(message.contains("outside every device buffer"), "{message}");
}

#[test]
fn a_thread_that_skips_a_barrier_is_a_deadlock_reported_at_once() {
    let start = Instant::now();
    let result = launch(
        "early-exit",
        shape(1, 64, 0),
        LaunchOptions::default(),
        &[],
        |t| {
            if t.thread_idx() != 0 {
                t.sync_threads();
            }
        },
    );
    let message = emulator_message(result);
    assert!(
        message.contains("deadlock in kernel early-exit block 0"),
        "{message}"
    );
    assert!(
        message.contains("threads 0 finished the kernel"),
        "{message}"
    );
    // Found from the arrivals, not by waiting for the timeout.
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_spinning_thread_is_a_deadlock_reported_within_the_timeout() {
    let flag = DeviceMemory::zeroed(1);
    let f = flag.global::<u32>(1);
    let options = LaunchOptions {
        barrier_timeout: Duration::from_millis(300),
        ..LaunchOptions::default()
    };
    let start = Instant::now();
    // SAFETY: the emulator checks every access and reports this kernel's
    // deliberate bug (or its absence) as the test expects; no real memory is at risk.
    let result = launch("spin", shape(1, 64, 0), options, &[&flag], |t| unsafe {
        if t.thread_idx() == 7 {
            // Waits for a flag nobody sets.
            while t.load(f, 0) == 0 {}
        }
        t.sync_threads();
    });
    let message = emulator_message(result);
    assert!(
        message.contains("threads 7 did not reach the block barrier"),
        "{message}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_panicking_thread_fails_the_launch_with_its_message() {
    let result = launch(
        "panics",
        shape(3, 32, 0),
        LaunchOptions::default(),
        &[],
        |t| {
            if t.block_idx() == 2 && t.thread_idx() == 5 {
                panic!("kernel assertion");
            }
            t.sync_threads();
        },
    );
    let message = emulator_message(result);
    assert!(
        message.contains("kernel panics block 2 thread 5 panicked: kernel assertion"),
        "{message}"
    );
}

#[test]
fn bad_launch_shapes_are_errors() {
    for block in [0, 16, 1056] {
        let message = emulator_message(launch(
            "k",
            shape(1, block, 0),
            LaunchOptions::default(),
            &[],
            |_| {},
        ));
        assert!(
            message.contains(&format!("block size {block}")),
            "{message}"
        );
    }
}

#[test]
fn every_block_of_the_grid_runs_once() {
    let out = DeviceMemory::zeroed(5 * 96);
    let y = out.global::<f32>(5 * 96);
    launch(
        "index",
        shape(5, 96, 0),
        LaunchOptions::default(),
        &[&out],
        // SAFETY: the emulator checks every access and reports this kernel's
        // deliberate bug (or its absence) as the test expects; no real memory is at risk.
        |t| unsafe {
            let i = t.block_idx() * t.block_dim() + t.thread_idx();
            t.atomic_add(y, i, (i + 1) as f32);
            assert_eq!(t.grid_dim(), 5);
        },
    )
    .unwrap();
    let expected: Vec<f32> = (1..=5 * 96).map(|i| i as f32).collect();
    assert_eq!(out.read::<f32>(), expected);
}

/// The emulator's `rsqrt` (the host's `f32` `Real::rsqrt`, which the kernel
/// bodies call) is the software CUDA device's `rsqrt.approx.ftz.f32`: the
/// correctly rounded `1/sqrt(x)`. Checked for every `f32` in `[1, 4)`
/// (scaling by powers of 4 carries it to every normal input) and at the
/// ends of the normal range, so a kernel that takes a square root through
/// it (gravity; a pair law's `math::sqrt`) gives the same bits on both.
#[test]
fn the_emulators_rsqrt_is_the_software_devices() {
    use nbody_host::gpu_kernels::Real;
    let (lo, hi) = (1.0f32.to_bits(), 4.0f32.to_bits());
    let ends = [f32::MIN_POSITIVE, 3.0e-30, 7.0e25, f32::MAX];
    let mut wrong = 0u32;
    for x in (lo..hi).map(f32::from_bits).chain(ends) {
        if Real::rsqrt(x) != softcuda::fmath::rsqrt_f32(x) {
            wrong += 1;
        }
    }
    assert_eq!(wrong, 0, "{wrong} of {} inputs differ", hi - lo + 4);
}
