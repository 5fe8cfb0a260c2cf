//! NVIDIA Warp's N-body example's validation: the tiled and SIMT kernels, run
//! through the emulator, follow the same trajectories.
//!
//! Both kernels add the pair terms of body `i` in the same order (`j = 0, 1,
//! ..., N - 1`; the tiled kernel only stages them through shared memory) with
//! the same FMA sequence from `interaction`, and the integrators are the same
//! code, so in exact IEEE arithmetic their trajectories are identical
//! bit for bit: the example's L2 error of exactly zero, here after 100 steps.

use nbody_host::{Backend, Integrator, Kernel, Simulation, ic};

fn run(kernel: Kernel, integrator: Integrator) -> Vec<[f32; 6]> {
    let mut sim = Simulation::builder(ic::uniform_cube(300, 5))
        .backend(Backend::emulator())
        .kernel(kernel)
        .integrator(integrator)
        .build()
        .unwrap();
    sim.step(100).unwrap();
    let b = sim.state().unwrap().bodies;
    b.positions
        .iter()
        .zip(&b.velocities)
        .map(|(p, v)| [p.x, p.y, p.z, v.x, v.y, v.z])
        .collect()
}

#[test]
fn tiled_and_simt_trajectories_are_identical_for_100_steps() {
    for integrator in [Integrator::SemiImplicitEuler, Integrator::Leapfrog] {
        let simt = run(Kernel::Simt { block: 64 }, integrator);
        for block in [32, 128] {
            let tiled = run(Kernel::Tiled { block }, integrator);
            let l2: f64 = simt
                .iter()
                .zip(&tiled)
                .flat_map(|(a, b)| {
                    a.iter()
                        .zip(b)
                        .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
                })
                .sum::<f64>()
                .sqrt();
            println!("{integrator:?}, tiled {block} vs SIMT after 100 steps: L2 = {l2:e}");
            assert_eq!(l2, 0.0, "{integrator:?}, tiled block {block}");
            assert_eq!(simt, tiled);
        }
    }
}
