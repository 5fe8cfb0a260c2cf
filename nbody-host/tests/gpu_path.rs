//! The GPU path's defects found by review (issue "software CUDA device"),
//! each pinned by a test: on the emulator (the kernel bodies that become the
//! PTX) in every build, and on `Backend::Cuda` when the crate is built with
//! the `cuda` feature (in CI against the software CUDA device,
//! `scripts/with-softcuda.sh`).

use nbody_host::oracle::{self, System64};
use nbody_host::{Backend, Bodies, Kernel, Simulation, ic};

/// The backends that run the GPU kernels in this build.
fn gpu_backends() -> Vec<Backend> {
    let mut backends = vec![Backend::Emulator {
        race_detection: true,
    }];
    if cfg!(feature = "cuda") {
        backends.push(Backend::Cuda { device: 0 });
    }
    backends
}

fn build(bodies: &Bodies, eps: f64, kernel: Kernel, backend: Backend) -> Simulation {
    Simulation::builder(bodies.clone())
        .softening(eps)
        .kernel(kernel)
        .backend(backend)
        .build()
        .unwrap_or_else(|e| panic!("{kernel} on {backend:?}: {e}"))
}

/// Energy at zero softening when N is not a multiple of the block: the
/// padding threads of the last block used to compute `0 * inf` (a massless
/// copy of body N - 1 on top of it) and made the total NaN.
#[test]
fn energy_is_finite_at_zero_softening_for_partial_blocks() {
    for n in [33, 100] {
        let bodies = ic::plummer(n, 5);
        let want = oracle::energy(&System64::from_bodies(&bodies), 1.0, 0.0);
        for backend in gpu_backends() {
            for kernel in [Kernel::Tiled { block: 32 }, Kernel::Simt { block: 64 }] {
                let got = build(&bodies, 0.0, kernel, backend).energy().unwrap();
                assert!(
                    got.kinetic.is_finite() && got.potential.is_finite(),
                    "N = {n}, {kernel} on {backend:?}: {got:?}"
                );
                assert!(
                    got.relative_change_from(&want) < 1e-5,
                    "N = {n}, {kernel} on {backend:?}: {got:?} vs {want:?}"
                );
            }
        }
    }
}

/// Two distinct bodies on the same point at zero softening: the CPU backend's
/// guarded loops give their pair exactly zero force; the GPU kernels' hot
/// loops used the unguarded interaction there and produced NaN. Every
/// backend now agrees with the CPU: finite accelerations, the coincident
/// pair contributing nothing, both integrators stepping on.
#[test]
fn coincident_bodies_at_zero_softening_agree_with_the_cpu() {
    let mut bodies = ic::plummer(100, 9);
    bodies.positions[70] = bodies.positions[3];
    bodies.positions[99] = bodies.positions[3];
    let cpu = |kernel| {
        build(&bodies, 0.0, kernel, Backend::cpu())
            .accelerations()
            .unwrap()
    };
    for backend in gpu_backends() {
        for kernel in [
            Kernel::Simt { block: 32 },
            Kernel::Tiled { block: 32 },
            Kernel::Triangle { block: 32 },
            Kernel::Tiled { block: 128 },
        ] {
            let want = cpu(kernel);
            let mut sim = build(&bodies, 0.0, kernel, backend);
            let got = sim.accelerations().unwrap();
            for (i, (a, w)) in got.iter().zip(&want).enumerate() {
                assert!(a.is_finite(), "{kernel} on {backend:?}: body {i} {a:?}");
                let scale = w.length().max(1.0);
                assert!(
                    (*a - *w).length() <= 1e-4 * scale,
                    "{kernel} on {backend:?}: body {i} {a:?} vs the CPU's {w:?}"
                );
            }
            sim.step(2).unwrap();
        }
    }
}
