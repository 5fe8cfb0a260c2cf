//! Issue 23 item 1: the gravity plan's CUDA graphs ([`Graphs`]) on the
//! software CUDA device (feature `cuda`, `scripts/ci-softcuda.sh`): a batch
//! of steps captured once and replayed gives the bits of the same steps
//! launched one by one, for every kernel and integrator, and the driver's
//! log shows the graph launches (and no per-step kernel launches outside
//! the captures).
//!
//! The log test (`softcuda_*`: it needs the software device's log; the GPU
//! bundle skips it) runs in a child process (`cuda_env`): the driver reads
//! `SOFTCUDA_LOG` once, at `cuInit`. The bits test holds on any device.
#![cfg(feature = "cuda")]

// The `nbody_tiled` example compiled in (its command line in examples/cli/).
mod nbody_cli;
use nbody_cli::{nbody_tiled, run_with};

mod cuda_env;

use std::time::Duration;

use nbody_host::{Backend, Graphs, Integrator, Kernel, Simulation, ic};

/// Every word of the state: positions, masses, velocities.
fn bits(sim: &Simulation) -> Vec<u32> {
    let b = sim.bodies().unwrap();
    b.positions
        .iter()
        .flat_map(|p| p.to_array())
        .chain(b.velocities.iter().flat_map(|v| v.to_array()))
        .chain(b.masses.iter().copied())
        .map(f32::to_bits)
        .collect()
}

/// 37 bodies (a partial block, an odd count for the triangle's pairs) with
/// `graphs`, stepped in calls of 5, 5 (the first graph replayed), 3 (a
/// second graph) and 5 steps; the state after each call.
fn run(kernel: Kernel, integrator: Integrator, graphs: Graphs) -> Vec<Vec<u32>> {
    let mut sim = Simulation::builder(ic::plummer(37, 5))
        .backend(Backend::Cuda { device: 0 })
        .kernel(kernel)
        .integrator(integrator)
        .graphs(graphs)
        .dt(1e-3)
        .build()
        .unwrap();
    [5, 5, 3, 5]
        .iter()
        .map(|&k| {
            sim.step(k).unwrap();
            bits(&sim)
        })
        .collect()
}

/// Graphs on and off give the same bits after every call, for every kernel
/// family (with blocks smaller than N, so several blocks) and integrator
/// (leapfrog swaps the position buffers inside the graph: a replay must
/// start from the roles its capture started from).
#[test]
fn graphs_give_the_bits_of_launches_for_every_kernel_and_integrator() {
    let kernels = [
        Kernel::Simt { block: 32 },
        Kernel::Tiled { block: 32 },
        Kernel::Triangle { block: 32 },
        Kernel::Split {
            block: 64,
            split: 4,
        },
    ];
    for kernel in kernels {
        for &integrator in Integrator::ALL {
            let on = run(kernel, integrator, Graphs::On);
            let off = run(kernel, integrator, Graphs::Off);
            assert_eq!(on.len(), off.len());
            for (call, (a, b)) in on.iter().zip(&off).enumerate() {
                assert!(
                    a == b,
                    "{kernel} {}: graphs and launches differ after call {call}",
                    integrator.name()
                );
            }
            // The run moved: the comparison is of steps that happened.
            assert_ne!(on[0], on[3], "{kernel} {}", integrator.name());
        }
    }
}

/// The driver calls of `nbody_tiled` run with `args` in a child process,
/// by name, in order.
fn calls_of_run(name: &str, args: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("softcuda.log");
    let log_text = log.to_str().unwrap().to_owned();
    let vars = [
        ("SOFTCUDA_LOG", log_text.as_str()),
        ("NBODY_TEST_ARGS", args),
    ];
    assert!(
        !cuda_env::in_child(name, &vars),
        "only the parent gets here"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("softcuda: "))
        .filter(|l| l.contains(" -> "))
        .map(|l| l.split(' ').next().unwrap_or(l).to_owned())
        .collect()
}

fn count(calls: &[String], name: &str) -> usize {
    calls.iter().filter(|c| *c == name).count()
}

/// 1030 steps with graphs on: batches of 512, 512 and 6 steps, so two
/// captures (512 and 6) and three graph launches, each batch followed by one
/// flag read; with graphs off, no graph call and a kernel launch per kernel
/// per step. Read from the driver's log of the example.
#[test]
fn softcuda_a_graph_run_captures_once_per_batch_length_and_replays() {
    let name = "softcuda_a_graph_run_captures_once_per_batch_length_and_replays";
    if std::env::var("NBODY_TEST_CHILD").as_deref() == Ok(name) {
        let args = std::env::var("NBODY_TEST_ARGS").expect("set by the parent");
        let argv: Vec<&str> = args.split(' ').collect();
        let o = run_with(&argv, nbody_tiled::Progress::Lines(Duration::from_secs(60)));
        assert!(o.result.is_ok(), "{args}: {}", o.err);
        return;
    }
    let base = "--backend cuda --n 64 --kernel tiled --block 32 --steps 1030 --no-energy";
    let on = calls_of_run(name, &format!("{base} --graphs on"));
    let off = calls_of_run(name, &format!("{base} --graphs off"));
    assert_eq!(count(&on, "cuStreamBeginCapture_v2"), 2, "{on:?}");
    assert_eq!(count(&on, "cuStreamEndCapture"), 2);
    assert_eq!(count(&on, "cuGraphInstantiateWithFlags"), 2);
    assert_eq!(count(&on, "cuGraphLaunch"), 3);
    for c in ["cuStreamBeginCapture_v2", "cuGraphLaunch"] {
        assert_eq!(count(&off, c), 0, "{c} with graphs off");
    }
    // Tiled with Euler: the fused force-and-update kernel and the check,
    // two launches per step; with graphs only those captured (518 steps).
    let launches = |calls: &[String]| count(calls, "cuLaunchKernel");
    assert!(
        launches(&off) >= 2 * 1030,
        "{} launches off",
        launches(&off)
    );
    assert!(
        launches(&on) + 2 * 512 <= launches(&off),
        "graphs on launched {} kernels, off {}",
        launches(&on),
        launches(&off)
    );
    // One flag read per batch: three with graphs, one without.
    let reads = |calls: &[String]| count(calls, "cuMemcpyDtoH_v2");
    assert_eq!(reads(&on), reads(&off) + 2, "on {on:?}");
}

/// Two simulations on two threads of one process share the device's
/// context (parameter sweeps; the H200's `correctness cuda::`, 2026-11-27):
/// thread A runs with graphs on, thread B steps and reads its bodies back
/// (a device-to-host copy) until A is done. Both must succeed and give the
/// bits each gives alone. On the H200, with the engine's stream blocking
/// (cust 0.3.2 strips `NON_BLOCKING`), B's read landing in A's capture was
/// refused (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`, "reading data back") and
/// broke A's capture (`CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`).
///
/// Deterministic: the child's software device holds each capture open
/// (`SOFTCUDA_CAPTURE_HOLD_MS`) until another thread has used the legacy
/// stream during it, and B reads without pause until A has finished, so
/// at least one of B's reads lands inside every capture of A (the 20 s
/// bound only keeps a broken B from hanging the test).
#[test]
fn softcuda_a_capture_survives_another_threads_reads() {
    let name = "softcuda_a_capture_survives_another_threads_reads";
    if !cuda_env::in_child(name, &[("SOFTCUDA_CAPTURE_HOLD_MS", "20000")]) {
        return;
    }
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Barrier};
    let build = |n: usize, seed: u64, graphs: Graphs| {
        Simulation::builder(ic::plummer(n, seed))
            .backend(Backend::Cuda { device: 0 })
            .kernel(Kernel::Tiled { block: 32 })
            .integrator(Integrator::Leapfrog)
            .graphs(graphs)
            .dt(1e-3)
            .build()
            .unwrap()
    };
    let calls = [5u64, 5, 3];
    let start = Arc::new(Barrier::new(2));
    let done = Arc::new(AtomicBool::new(false));
    let a = {
        let (start, done) = (start.clone(), done.clone());
        std::thread::spawn(move || {
            let mut sim = build(37, 5, Graphs::On);
            start.wait();
            let r = calls
                .iter()
                .map(|&k| sim.step(k).map(|()| bits(&sim)))
                .collect::<Result<Vec<_>, _>>();
            done.store(true, Ordering::SeqCst);
            r
        })
    };
    let b = std::thread::spawn(move || {
        let mut sim = build(29, 7, Graphs::Off);
        start.wait();
        let mut steps = 0u64;
        while !done.load(Ordering::SeqCst) {
            sim.step(1)?;
            steps += 1;
            // `bodies` reads the device (the state changed since the last read).
            sim.bodies()?;
        }
        Ok::<_, nbody_host::Error>((steps, bits(&sim)))
    });
    let a = a.join().unwrap();
    let b = b.join().unwrap();
    let a = a.unwrap_or_else(|e| panic!("thread A (graphs on): {e:?}"));
    let (steps, b) = b.unwrap_or_else(|e| panic!("thread B (reads): {e:?}"));
    // Each alone, graphs off (same bits as on: the test above).
    let mut alone = build(37, 5, Graphs::Off);
    for (call, (&k, got)) in calls.iter().zip(&a).enumerate() {
        alone.step(k).unwrap();
        assert!(*got == bits(&alone), "thread A's bits after call {call}");
    }
    let mut alone = build(29, 7, Graphs::Off);
    alone.step(steps).unwrap();
    assert!(b == bits(&alone), "thread B's bits after {steps} steps");
    assert!(steps > 0);
}
