//! The public `Simulation` API against the `f64` oracle: set-up from plain
//! arrays, defaults, step and time accounting, diagnostics.

use nbody_host::oracle::{self, System64};
use nbody_host::{Backend, Bodies, Integrator, Kernel, Params, Simulation, ic};

/// Largest distance between `f32` positions and the oracle's, relative to
/// the system's size.
fn max_position_error(b: &Bodies, sys: &System64) -> f64 {
    let size = sys.pos.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
    b.positions
        .iter()
        .zip(&sys.pos)
        .map(|(p, q)| {
            let d = [p.x as f64 - q[0], p.y as f64 - q[1], p.z as f64 - q[2]];
            (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
        })
        .fold(0.0, f64::max)
        / size
}

#[test]
fn defaults_are_the_notebooks() {
    let sim = Simulation::builder(ic::uniform_cube(64, 1))
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let p = sim.params();
    assert_eq!(*p, Params::default());
    assert_eq!(
        (p.dt(), p.gravity().softening(), p.gravity().g()),
        (0.01, 0.1, 1.0)
    );
    assert_eq!(p.kernel(), Kernel::Tiled { block: 256 });
    assert_eq!(p.integrator(), Integrator::SemiImplicitEuler);
    assert_eq!(
        (sim.len(), sim.is_empty(), sim.steps_done()),
        (64, false, 0)
    );
    assert_eq!(sim.backend().name(), "cpu");
}

#[test]
fn a_run_from_plain_arrays_follows_the_oracle() {
    // A user's own arrays, as from numpy or a file.
    let src = ic::plummer(96, 21);
    let positions: Vec<[f32; 3]> = src.positions.iter().map(|p| p.to_array()).collect();
    let velocities: Vec<[f32; 3]> = src.velocities.iter().map(|v| v.to_array()).collect();
    let bodies = Bodies::from_arrays(&positions, &velocities, &src.masses).unwrap();
    assert_eq!(bodies, src);
    for integrator in [Integrator::SemiImplicitEuler, Integrator::Leapfrog] {
        let (dt, eps, g) = (0.005, 0.05, 1.3);
        let mut sim = Simulation::builder(bodies.clone())
            .dt(dt)
            .softening(eps)
            .gravitational_constant(g)
            .integrator(integrator)
            .kernel(Kernel::Simt { block: 64 })
            .backend(Backend::cpu())
            .build()
            .unwrap();
        sim.step(20).unwrap();
        let mut sys = System64::from_bodies(&bodies);
        let params = *sim.params();
        oracle::advance(
            &mut sys,
            integrator,
            params.dt() as f64,
            params.gravity().g() as f64,
            params.gravity().softening() as f64,
            20,
        );
        let state = sim.state().unwrap();
        let err = max_position_error(&state.bodies, &sys);
        assert!(err < 1e-4, "{integrator}: relative position error {err}");
        // It moved by far more than that.
        let moved = max_position_error(&bodies, &sys);
        assert!(moved > 100.0 * err.max(1e-6), "{integrator}: moved {moved}");
        assert_eq!(state.bodies.masses, bodies.masses);
    }
}

#[test]
fn steps_and_time_add_up() {
    let mut sim = Simulation::builder(ic::uniform_cube(32, 2))
        .dt(0.25)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    sim.step(0).unwrap();
    assert_eq!(sim.steps_done(), 0);
    sim.step(3).unwrap();
    sim.step(4).unwrap();
    assert_eq!(sim.steps_done(), 7);
    assert_eq!(sim.time(), 1.75);
    let state = sim.state().unwrap();
    assert_eq!((state.step, state.time), (7, 1.75));
    // Batches do not change the result: 3 + 4 steps equal 7 at once.
    let mut once = Simulation::builder(ic::uniform_cube(32, 2))
        .dt(0.25)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    once.step(7).unwrap();
    assert_eq!(once.state().unwrap(), state);
}

#[test]
fn diagnostics_match_the_oracle() {
    let bodies = ic::cold_disk(128, 4);
    let (eps, g) = (0.02, 0.9);
    let mut sim = Simulation::builder(bodies.clone())
        .softening(eps)
        .gravitational_constant(g)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let params = *sim.params();
    let sys = System64::from_bodies(&bodies);
    let want = oracle::energy(
        &sys,
        params.gravity().g() as f64,
        params.gravity().softening() as f64,
    );
    let got = sim.energy().unwrap();
    assert!((got.kinetic - want.kinetic).abs() < 1e-6 * want.kinetic.abs());
    assert!((got.potential - want.potential).abs() < 1e-5 * want.potential.abs());
    assert!(got.relative_change_from(&want) < 1e-5);

    let acc = sim.accelerations().unwrap();
    let want = oracle::accelerations(
        &sys.pos,
        &sys.mass,
        params.gravity().g() as f64,
        params.gravity().softening() as f64,
    );
    let scale = want.iter().flatten().fold(0.0f64, |m, a| m.max(a.abs()));
    for (a, w) in acc.iter().zip(&want) {
        for k in 0..3 {
            assert!((a[k] as f64 - w[k]).abs() < 1e-4 * scale, "{a:?} vs {w:?}");
        }
    }

    let m = sim.momentum().unwrap();
    assert_eq!(m, bodies.momentum());
    assert!((m.total_mass - 1.0).abs() < 1e-5);
    assert!(
        m.angular.z > 0.1,
        "the disk rotates about +z: {:?}",
        m.angular
    );
}
