//! `nbody-host` used as a library, the smallest useful program: a Sun and
//! two planets from plain arrays, a comet added later, integrated to a
//! time, positions read back, and the run archived for numpy.
//!
//! ```text
//! cargo run --release --example library                 # archive in target/library.nbar
//! cargo run --release --example library -- out.nbar
//! ```
//!
//! Units: `G = 4 pi^2` makes lengths AU, masses solar masses and times years.

use nbody_host::snapshot::{Archive, ArchiveWriter};
use nbody_host::{Backend, Bodies, Body, Integrator, Simulation};

fn main() -> Result<(), nbody_host::Error> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/library.nbar".into());
    let g = 4.0 * std::f64::consts::PI.powi(2);
    // Circular speeds sqrt(G M / r) = 2 pi / sqrt(r) AU/yr.
    let v = |r: f32| 2.0 * std::f32::consts::PI / r.sqrt();
    let bodies = Bodies::from_arrays(
        &[[0.0; 3], [1.0, 0.0, 0.0], [5.2, 0.0, 0.0]], // Sun, Earth, Jupiter
        &[[0.0; 3], [0.0, v(1.0), 0.0], [0.0, v(5.2), 0.0]],
        &[1.0, 3.0e-6, 9.5e-4],
    )?;
    let mut sim = Simulation::builder(bodies)
        .gravitational_constant(g)
        .softening(0.0)
        .dt(1e-3) // years
        .integrator(Integrator::Leapfrog)
        .backend(Backend::cpu())
        .build()?;
    let e0 = sim.energy()?;
    let mut archive = ArchiveWriter::create(&path)?;
    archive.append(&sim)?;
    for year in 1..=12 {
        sim.integrate_to(year as f64)?;
        if year == 2 {
            // A comet on an eccentric orbit joins (its index is 3).
            sim.add(Body::new(1e-12, [0.0, 3.0, 0.0], [-1.5, 0.0, 0.2]))?;
        }
        archive.append(&sim)?;
    }
    let earth = sim.positions()?[1];
    println!(
        "t = {:.3} yr after {} steps: Earth at ({:.3}, {:.3}, {:.3}) AU, {:.4} AU from the Sun",
        sim.time(),
        sim.steps_done(),
        earth.x,
        earth.y,
        earth.z,
        (earth - sim.positions()?[0]).length()
    );
    println!(
        "relative energy change {:.2e} (leapfrog, dt = 1e-3 yr)",
        sim.energy()?.relative_change_from(&e0)
    );
    let archive = Archive::open(&path)?;
    let halfway = archive.at_time(6.5)?;
    println!(
        "{path}: {} records; at t = 6.5 the last one is step {} (t = {:.3}), {} bodies",
        archive.len(),
        halfway.state.step,
        halfway.state.time,
        halfway.state.bodies.len()
    );
    Ok(())
}
