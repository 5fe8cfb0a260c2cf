//! Helpers shared by the integration tests (each test file is its own
//! crate: `mod common;` includes this file, and uses some of it).
#![allow(dead_code)]

use nbody_host::{Backend, Bodies, Integrator, Simulation};

/// Every bit of the bodies: positions, velocities, then masses, for
/// comparisons that must be exact.
pub fn bits(b: &Bodies) -> Vec<u32> {
    b.positions
        .iter()
        .chain(&b.velocities)
        .flat_map(|v| v.to_array())
        .chain(b.masses.iter().copied())
        .map(f32::to_bits)
        .collect()
}

/// A leapfrog run on the CPU backend: `dt = 0.01`, softening 0.05.
pub fn leapfrog_cpu(bodies: Bodies) -> Simulation {
    Simulation::builder(bodies)
        .dt(0.01)
        .softening(0.05)
        .integrator(Integrator::Leapfrog)
        .backend(Backend::cpu())
        .build()
        .unwrap()
}
