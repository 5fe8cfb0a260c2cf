//! `cargo bench`: pairwise interactions per second (PIPS, `N^2` per step) of
//! every kernel on every backend present.
//!
//! Criterion reports the throughput as "elements/s": each step counts `N^2`
//! elements, so that figure *is* PIPS (NVIDIA Warp's N-body example's
//! definition, also for the Newton's-third-law kernel, which computes each pair
//! once).
//!
//! | group | sizes | what |
//! | --- | --- | --- |
//! | `cpu` | 1k, 4k, 16k | the SIMD CPU backend (best instruction set), semi-implicit Euler, one step per iteration; `simt` and `tiled` held on the all-pairs loop (`third_law_min_n = usize::MAX`; by default they switch to the Newton's-third-law loop from N = 1024), `triangle` the third-law loop |
//! | `emulator-tiny` | 256 | the GPU kernel bodies on CPU threads, race detector off: a check that the emulator path works, **not** a GPU speed |
//! | `lj` | 4,000, 32,000 atoms | short-range MD on the CPU: LAMMPS's `in.lj` (fcc 0.8442, T 1.44, `r_c` 2.5, skin 0.3, lists rebuilt every 20 steps), one velocity-Verlet step per iteration, full and half lists; "elements/s" are **atom-steps/s** |
//! | `cuda` | 1k .. 256k | with `--features cuda` and a device: timed by CUDA events around the launches (`Simulation::device_seconds`), synchronised before the clock is read |
//!
//! ```text
//! cargo bench                                  # everything present, about 3 minutes on 2 cores
//! cargo bench -- cpu/triangle                  # one kernel
//! cargo bench --features cuda -- cuda          # the GPU
//! ```

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use nbody_host::md::{CellList, Lists};
use nbody_host::{Backend, CpuTuning, ForceLaw, Integrator, Kernel, Neighbours, Simulation, ic};

/// The notebook's run: uniform cube, softening 0.1, `dt = 0.01`, Euler.
fn simulation(n: usize, kernel: Kernel, backend: Backend) -> nbody_host::Result<Simulation> {
    Simulation::builder(ic::uniform_cube(n, 42))
        .softening(0.1)
        .dt(0.01)
        .kernel(kernel)
        .integrator(Integrator::SemiImplicitEuler)
        .backend(backend)
        .build()
}

fn kernels(block: u32) -> [Kernel; 3] {
    [
        Kernel::Simt { block },
        Kernel::Tiled { block },
        Kernel::Triangle { block },
    ]
}

fn cpu(c: &mut Criterion) {
    let mut group = c.benchmark_group("cpu");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(10);
    for n in [1024, 4096, 16384] {
        group.throughput(Throughput::Elements((n * n) as u64));
        for kernel in kernels(256) {
            // Each kernel's own CPU loop: all pairs for Simt and Tiled.
            let all_pairs = CpuTuning {
                third_law_min_n: usize::MAX,
                ..CpuTuning::default()
            };
            let mut sim = simulation(n, kernel, Backend::Cpu(all_pairs)).expect("CPU backend");
            group.bench_function(BenchmarkId::new(kernel.name(), n), |b| {
                b.iter(|| sim.step(1).expect("step"))
            });
        }
    }
    group.finish();
}

fn emulator_tiny(c: &mut Criterion) {
    let mut group = c.benchmark_group("emulator-tiny");
    group
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(2))
        .sample_size(10);
    let n = 256;
    group.throughput(Throughput::Elements((n * n) as u64));
    for kernel in kernels(64) {
        let mut sim = simulation(n, kernel, Backend::emulator()).expect("emulator");
        group.bench_function(BenchmarkId::new(kernel.name(), n), |b| {
            b.iter(|| sim.step(1).expect("step"))
        });
    }
    group.finish();
}

/// LAMMPS's in.lj at `cells^3` fcc unit cells (4 cells^3 atoms).
fn lj_melt(cells: usize, lists: Lists) -> nbody_host::Result<Simulation> {
    let (atoms, boundary) = ic::fcc_lattice(cells, 0.8442, 1.44, 87287)?;
    Simulation::builder(atoms)
        .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, false)?)
        .boundary(boundary)
        .neighbours(
            Neighbours::Cells(CellList {
                lists,
                ..CellList::new(0.3)
            })
            .every(20),
        )
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.005)
        .backend(Backend::cpu())
        .build()
}

fn lj(c: &mut Criterion) {
    let mut group = c.benchmark_group("lj");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(10);
    for cells in [10, 20] {
        let n = 4 * cells * cells * cells;
        group.throughput(Throughput::Elements(n as u64));
        for (name, lists) in [("full", Lists::Full), ("half", Lists::Half)] {
            let mut sim = lj_melt(cells, lists).expect("CPU backend");
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| sim.step(1).expect("step"))
            });
        }
    }
    group.finish();
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion) {
    let mut group = c.benchmark_group("cuda");
    group.sample_size(20);
    for n in [1024, 4096, 16384, 65536, 262_144] {
        group.throughput(Throughput::Elements((n * n) as u64));
        for kernel in kernels(256) {
            let mut sim = match simulation(n, kernel, Backend::Cuda { device: 0 }) {
                Ok(sim) => sim,
                Err(e) => {
                    eprintln!("cuda benches skipped: {e}");
                    return;
                }
            };
            if let nbody_host::BackendKind::Cuda { name, .. } = sim.backend()
                && name.starts_with("softcuda")
                && n == 1024
                && matches!(kernel, Kernel::Simt { .. })
            {
                // The software CUDA device (scripts/with-softcuda.sh): its
                // events report a cost model's time, and each modelled
                // microsecond takes the interpreter a few milliseconds, so
                // criterion's default seconds of (modelled) time would take
                // hours. A check that the path runs, not a GPU speed.
                eprintln!("cuda benches on {name}: MODELLED device time, not a measurement");
                group.warm_up_time(Duration::from_micros(200));
                group.measurement_time(Duration::from_millis(1));
                group.sample_size(10);
            }
            group.bench_function(BenchmarkId::new(kernel.name(), n), |b| {
                // Device time of exactly the measured steps: `step` returns
                // after the stream is synchronised, and the engine adds the
                // CUDA-event time of each launch sequence.
                b.iter_custom(|iters| {
                    let before = sim.device_seconds().unwrap_or(0.0);
                    sim.step(iters).expect("step");
                    let after = sim.device_seconds().unwrap_or(0.0);
                    Duration::from_secs_f64(after - before)
                })
            });
        }
    }
    group.finish();
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &mut Criterion) {
    eprintln!("cuda benches: not built (cargo bench --features cuda)");
}

criterion_group!(benches, cpu, emulator_tiny, lj, cuda);
criterion_main!(benches);
