//! Lennard-Jones on the GPU MD plan like on the CPU (issue 23 item 4): the
//! time split per section (Pair, Neigh, Modify, thermo), a checkpoint
//! resumed on the GPU continues bit for bit as the uninterrupted run does,
//! and a system the device's memory cannot hold is an
//! `Error::DeviceMemoryExceeded` found before anything is allocated.
//!
//! On `Backend::Emulator` always; with the `cuda` feature on `Backend::Cuda`
//! (module `cuda`, the software CUDA device by `scripts/ci-softcuda.sh`
//! under every schedule: `scripts/with-softcuda.sh cargo test -p nbody-host
//! --features cuda --test md_gpu_like_cpu cuda::`).

use nbody_host::{Backend, Bodies, Boundary, ForceLaw, Integrator, Neighbours, Simulation, ic};

fn melt(seed: u64) -> (Bodies, Boundary) {
    // 256 atoms of in.lj, hot: bodies cross the faces (both ways) between
    // builds, so some lie below 0 in the frame of the last build when a
    // checkpoint is taken.
    let (mut atoms, boundary) = ic::fcc_lattice(4, 0.8442, 2.5, seed).unwrap();
    for (i, v) in atoms.velocities.iter_mut().enumerate().step_by(17) {
        v.x = if i % 2 == 0 { -3.0 } else { 3.0 };
        v.z = -2.0;
    }
    (atoms, boundary)
}

fn build(
    atoms: &Bodies,
    boundary: Boundary,
    neighbours: Neighbours,
    backend: Backend,
) -> Simulation {
    Simulation::builder(atoms.clone())
        .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap())
        .boundary(boundary)
        .neighbours(neighbours)
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.005)
        .backend(backend)
        .build()
        .unwrap()
}

/// Positions and velocities (f32 bits) and image counters of `sim`.
fn bits(sim: &Simulation) -> Vec<u32> {
    let b = sim.bodies().unwrap();
    let mut v: Vec<u32> = b
        .positions
        .iter()
        .chain(&b.velocities)
        .flat_map(|p| p.to_array())
        .map(f32::to_bits)
        .collect();
    v.extend(
        sim.images()
            .unwrap()
            .unwrap()
            .iter()
            .flatten()
            .map(|&k| k as u32),
    );
    v
}

/// A run of `total` steps, checkpointed after each of `at`; each checkpoint
/// resumed on the same backend and run to `total` gives the uninterrupted
/// run's bits (positions, velocities, images), under the safe rebuild
/// policy and a fixed interval. The GPU keeps positions in the frame of the
/// last build (up to half the skin outside the box); a checkpoint's
/// positions are wrapped, so the frame travels with it (`NFRM`).
fn resume_is_bit_identical(backend: Backend, total: u64, at: &[u64]) {
    let dir = tempfile::tempdir().unwrap();
    for neighbours in [Neighbours::cells(0.3), Neighbours::cells(0.3).every(7)] {
        let (atoms, boundary) = melt(11);
        let mut straight = build(&atoms, boundary, neighbours, backend);
        let mut paths = vec![];
        let mut done = 0;
        for &k in at {
            straight.step(k - done).unwrap();
            done = k;
            let path = dir.path().join(format!("at{k}.ckpt"));
            straight.save_checkpoint(&path).unwrap();
            paths.push((k, path));
        }
        straight.step(total - done).unwrap();
        let want = bits(&straight);
        for (k, path) in paths {
            let mut resumed = Simulation::resume(&path)
                .unwrap()
                .backend(backend)
                .build()
                .unwrap();
            resumed.step(total - k).unwrap();
            let got = bits(&resumed);
            let differ = want.iter().zip(&got).filter(|(a, b)| a != b).count();
            assert_eq!(
                differ, 0,
                "{neighbours:?}: resumed after {k} of {total} steps: {differ} words differ"
            );
        }
    }
}

/// The time split as the CPU engine reports it (`MdStats`): the force
/// kernel (Pair), the device-decided builds (Neigh), the integrator's
/// launches (Modify) and the thermo sums each gain time over a run that
/// builds, and the builds are counted (on CUDA the times are events read
/// with each batch's status: no wait of their own, `tests/round_trips.rs`).
fn sections_are_timed(backend: Backend) {
    let (atoms, boundary) = melt(3);
    let mut sim = build(&atoms, boundary, Neighbours::cells(0.3), backend);
    let before = sim.md_stats().unwrap();
    sim.step(30).unwrap();
    let mid = sim.md_stats().unwrap();
    assert!(mid.builds > before.builds, "{mid:?}");
    for (name, a, b) in [
        ("pair", before.pair_seconds, mid.pair_seconds),
        ("neighbour", before.neighbour_seconds, mid.neighbour_seconds),
        ("integrate", before.integrate_seconds, mid.integrate_seconds),
    ] {
        assert!(b > a && b.is_finite(), "{name}: {a} -> {b} ({mid:?})");
    }
    sim.thermo().unwrap();
    let after = sim.md_stats().unwrap();
    assert!(after.thermo_seconds > mid.thermo_seconds, "{after:?}");
    assert_eq!(after.pair_seconds, mid.pair_seconds, "thermo is not Pair");
}

#[test]
fn emulator_sections_are_timed() {
    sections_are_timed(Backend::Emulator {
        race_detection: false,
    });
}

#[test]
fn emulator_resume_is_bit_identical() {
    let emulator = Backend::Emulator {
        race_detection: false,
    };
    resume_is_bit_identical(emulator, 60, &[23, 31, 44]);
}

#[cfg(feature = "cuda")]
mod cuda_env;

#[cfg(feature = "cuda")]
mod cuda {
    use super::*;
    use nbody_host::Error;

    const CUDA: Backend = Backend::Cuda { device: 0 };

    #[test]
    fn sections_are_timed_by_events() {
        sections_are_timed(CUDA);
    }

    #[test]
    fn resume_is_bit_identical_on_any_schedule() {
        resume_is_bit_identical(CUDA, 40, &[17, 29]);
    }

    /// `SOFTCUDA_MEMORY_BYTES` models a 1 MiB device: 4,000 atoms need
    /// more (positions, velocities, lists, ghosts, a batch's saved start),
    /// an `Error::DeviceMemoryExceeded` naming the bytes needed and free,
    /// before anything is allocated; 256 atoms still run.
    #[test]
    fn softcuda_md_device_memory_exceeded() {
        if !cuda_env::in_child(
            "cuda::softcuda_md_device_memory_exceeded",
            &[("SOFTCUDA_MEMORY_BYTES", "1M")],
        ) {
            return;
        }
        let (atoms, boundary) = ic::fcc_lattice(10, 0.8442, 1.44, 3).unwrap();
        let e = Simulation::builder(atoms)
            .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap())
            .boundary(boundary)
            .neighbours(Neighbours::cells(0.3))
            .integrator(Integrator::VELOCITY_VERLET)
            .dt(0.005)
            .backend(CUDA)
            .build()
            .expect_err("4000 atoms need more than 1 MiB");
        assert!(
            matches!(
                e,
                Error::DeviceMemoryExceeded {
                    n: 4000,
                    needed,
                    available: 1_048_576,
                } if needed > 1_048_576
            ),
            "{e}"
        );
        let text = e.to_string();
        assert!(
            text.contains("N = 4000") && text.contains("1048576 bytes free"),
            "{text}"
        );
        let (atoms, boundary) = melt(5);
        let mut sim = build(&atoms, boundary, Neighbours::cells(0.3), CUDA);
        sim.step(3).unwrap();
    }
}
