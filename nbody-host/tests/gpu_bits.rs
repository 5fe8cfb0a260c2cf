//! The SIMT and tiled kernels on `Backend::Cuda`, 100 semi-implicit Euler
//! steps of a fixed 1,024-body Plummer sphere: every bit of the final
//! state. On the software device (`scripts/ci-softcuda.sh`, deterministic
//! schedule) the bits must be the H200's, committed in `tests/data/h200/`
//! by `scripts/gpu/issue24.sh` (which runs this binary on a GPU with
//! `NBODY_RECORD_GPU_BITS`): softcuda computes `rsqrt.approx.ftz.f32` with
//! the H200's tables, so the kernels without float atomics give the
//! hardware's bits (every word matched on 2026-11-27); the kernels must also
//! agree with the f64 oracle and with each other, bit for bit.
#![cfg(feature = "cuda")]

mod common;
mod h200_bits;

use nbody_host::oracle::System64;
use nbody_host::{Backend, Integrator, Kernel, Simulation, ic};

const N: usize = 1024;
const STEPS: u64 = 100;

fn run(kernel: Kernel) -> Simulation {
    let mut sim = Simulation::builder(ic::plummer(N, 7))
        .backend(Backend::Cuda { device: 0 })
        .kernel(kernel)
        .integrator(Integrator::SemiImplicitEuler)
        .softening(0.05)
        .dt(0.001)
        .build()
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    sim.step(STEPS).unwrap();
    sim
}

#[test]
fn simt_and_tiled_after_100_euler_steps_are_the_h200s() {
    let mut states = vec![];
    for (kernel, name) in [
        (Kernel::Simt { block: 256 }, "simt_euler_plummer1024_100"),
        (Kernel::Tiled { block: 256 }, "tiled_euler_plummer1024_100"),
    ] {
        let sim = run(kernel);
        let bodies = sim.bodies().unwrap();
        let words: Vec<u64> = common::bits(bodies).into_iter().map(u64::from).collect();
        // Always: the accelerations at the end are within the bound of
        // tests/correctness.rs ((N + 8) u S_i) of the f64 oracle's.
        let acc = sim.accelerations().unwrap();
        let sys = System64::from_bodies(bodies);
        let reference = nbody_host::oracle::accelerations(&sys.pos, &sys.mass, 1.0, 0.05);
        let scale = common::magnitude_sums(&sys, 1.0, 0.05);
        for i in 0..N {
            let d = (0..3)
                .map(|k| (acc[i].to_array()[k] as f64 - reference[i][k]).powi(2))
                .sum::<f64>()
                .sqrt();
            let bound = (N as f64 + 8.0) * common::U * scale[i];
            assert!(
                d <= bound,
                "{kernel}: body {i}: {} vs {:?}",
                acc[i],
                reference[i]
            );
        }
        h200_bits::check_or_record(
            name,
            &format!(
                "{kernel}, Euler, Plummer N = {N} seed 7, softening 0.05, dt 0.001, {STEPS} steps: positions, velocities, masses (f32 bits)"
            ),
            &words,
        );
        states.push(words);
    }
    // Both kernels sum every body's terms in index order with the same
    // arithmetic: the same bits (on the H200 too: 0 of 7,168 words differed
    // from the software device with the tables, ../shared/data/sm90-mufu).
    let differ = (0..states[0].len())
        .filter(|&i| states[0][i] != states[1][i])
        .count();
    assert_eq!(
        differ,
        0,
        "SIMT and tiled differ in {differ} of {} words",
        states[0].len()
    );
}
