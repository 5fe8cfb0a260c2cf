//! The public `Simulation` API against the `f64` oracle: set-up from plain
//! arrays, defaults, step and time accounting, diagnostics.

use nbody_host::oracle::{self, System64};
use nbody_host::{Backend, Bodies, Integrator, Kernel, Params, Simulation, ic};

mod common;
use common::{bits, leapfrog_cpu};

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
        (
            p.dt(),
            p.gravity().unwrap().softening(),
            p.gravity().unwrap().g()
        ),
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
        let params = sim.params().clone();
        oracle::advance(
            &mut sys,
            integrator,
            params.dt() as f64,
            params.gravity().unwrap().g() as f64,
            params.gravity().unwrap().softening() as f64,
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
    let sim = Simulation::builder(bodies.clone())
        .softening(eps)
        .gravitational_constant(g)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let params = sim.params().clone();
    let sys = System64::from_bodies(&bodies);
    let want = oracle::energy(
        &sys,
        params.gravity().unwrap().g() as f64,
        params.gravity().unwrap().softening() as f64,
    );
    let got = sim.energy().unwrap();
    assert!((got.kinetic - want.kinetic).abs() < 1e-6 * want.kinetic.abs());
    assert!((got.potential - want.potential).abs() < 1e-5 * want.potential.abs());
    assert!(got.relative_change_from(&want) < 1e-5);

    let acc = sim.accelerations().unwrap();
    let want = oracle::accelerations(
        &sys.pos,
        &sys.mass,
        params.gravity().unwrap().g() as f64,
        params.gravity().unwrap().softening() as f64,
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

/// Issue 14, defect 3: the simulated time is state, kept in `f64` from the
/// time step as given (not `steps * dt` with `dt` rounded to `f32`), and a
/// resumed run continues from the checkpoint's time whatever its `dt`.
#[test]
fn time_is_f64_state_that_survives_a_resume_with_another_dt() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("run.ckpt");
    let mut sim = Simulation::builder(ic::plummer(16, 3))
        .dt(1e-3)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    sim.step(2000).unwrap();
    // 2000 * f32(1e-3) would be 2.0000000949949026.
    assert!((sim.time() - 2.0).abs() < 1e-12, "t = {}", sim.time());
    assert_eq!(sim.state().unwrap().time, sim.time());
    sim.save_checkpoint(&ckpt).unwrap();
    assert_eq!(
        nbody_host::Checkpoint::load(&ckpt).unwrap().state.time,
        sim.time()
    );

    // Resumed with half the step: the clock goes on from t = 2.
    let mut resumed = Simulation::resume(&ckpt)
        .unwrap()
        .dt(5e-4)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    assert_eq!((resumed.steps_done(), resumed.time()), (2000, sim.time()));
    resumed.step(1000).unwrap();
    assert!(
        (resumed.time() - 2.5).abs() < 1e-12,
        "t = {}",
        resumed.time()
    );
    resumed.save_checkpoint(&ckpt).unwrap();
    let again = Simulation::resume(&ckpt)
        .unwrap()
        .backend(Backend::cpu())
        .build()
        .unwrap();
    assert_eq!(again.time(), resumed.time());
    // The resumed run keeps the f64 step it was given, not its f32 rounding.
    assert_eq!(again.params().dt_f64(), 5e-4);
}

/// Adding bodies to a running simulation is the same as having built it
/// with them at that moment (the engine restarts from the state), and
/// removing one undoes it.
#[test]
fn add_extend_and_remove_equal_a_fresh_build() {
    let base = ic::plummer(40, 5);
    let extra = ic::plummer(3, 6);
    let mut grown = leapfrog_cpu(base.clone());
    grown.step(4).unwrap();
    let t4 = grown.time();
    for i in 0..2 {
        grown.add(extra.get(i).unwrap()).unwrap();
    }
    let rest = Bodies {
        positions: extra.positions[2..].to_vec(),
        velocities: extra.velocities[2..].to_vec(),
        masses: extra.masses[2..].to_vec(),
    };
    grown.extend(&rest).unwrap();
    assert_eq!((grown.len(), grown.steps_done(), grown.time()), (43, 4, t4));

    // The same bodies at step 4, built afresh.
    let mut at4 = leapfrog_cpu(base.clone());
    at4.step(4).unwrap();
    let mut joined = at4.state().unwrap().bodies;
    for i in 0..3 {
        joined.push(extra.get(i).unwrap());
    }
    let mut fresh = leapfrog_cpu(joined);
    grown.step(5).unwrap();
    fresh.step(5).unwrap();
    assert_eq!(bits(grown.bodies().unwrap()), bits(fresh.bodies().unwrap()));
    assert_eq!(grown.energy().unwrap(), fresh.energy().unwrap());

    // Removing body 40 (the first added) returns it as it is now.
    let now = grown.bodies().unwrap().get(40).unwrap();
    assert_eq!(grown.remove(40).unwrap(), now);
    assert_eq!(grown.len(), 42);
    assert_eq!(grown.masses().unwrap()[40], extra.masses[1]);

    // Errors name the bad value and leave the simulation as it was.
    let before = grown.state().unwrap();
    let e = grown
        .add(nbody_host::Body::new(f32::NAN, [0.0; 3], [0.0; 3]))
        .unwrap_err();
    assert!(
        matches!(e, nbody_host::Error::InvalidMass { index: 42, .. }),
        "{e}"
    );
    let e = grown.remove(42).unwrap_err();
    assert!(
        e.to_string().contains("index 42") && e.to_string().contains("42 bodies"),
        "{e}"
    );
    assert_eq!(grown.state().unwrap(), before);
    let mut one = leapfrog_cpu(ic::plummer(1, 1));
    assert!(matches!(one.remove(0), Err(nbody_host::Error::NoBodies)));
    assert_eq!(one.len(), 1);
}

#[test]
fn a_clone_continues_bit_identically_and_independently() {
    for kernel in [Kernel::Tiled { block: 64 }, Kernel::Triangle { block: 64 }] {
        let mut a = Simulation::builder(ic::collision(300, 2))
            .kernel(kernel)
            .integrator(Integrator::Leapfrog)
            .backend(Backend::cpu())
            .build()
            .unwrap();
        a.step(3).unwrap();
        let mut b = a.try_clone().unwrap();
        assert_eq!((b.steps_done(), b.time()), (3, a.time()));
        a.step(4).unwrap();
        assert_eq!(b.steps_done(), 3, "the clone did not move");
        b.step(4).unwrap();
        assert_eq!(a.state().unwrap(), b.state().unwrap(), "{kernel}");
    }
}

#[test]
fn integrate_to_overshoots_by_less_than_a_step() {
    let mut sim = leapfrog_cpu(ic::plummer(32, 1));
    // dt = 0.01: 0.5 is reached after exactly 50 steps despite rounding.
    assert_eq!(sim.integrate_to(0.5).unwrap(), 50);
    assert!((sim.time() - 0.5).abs() < 1e-12, "{}", sim.time());
    assert_eq!(sim.integrate_to(0.5).unwrap(), 0);
    // 0.503 lies inside the 51st step: it ends at 0.51.
    assert_eq!(sim.integrate_to(0.503).unwrap(), 1);
    assert!((sim.time() - 0.51).abs() < 1e-12);
    for bad in [0.2, f64::NAN, f64::INFINITY] {
        let e = sim.integrate_to(bad).unwrap_err();
        assert!(
            matches!(e, nbody_host::Error::InvalidTargetTime { .. }),
            "{e}"
        );
    }
    let e = sim.integrate_to(1e300).unwrap_err();
    assert!(e.to_string().contains("step counter"), "{e}");
    assert_eq!(sim.steps_done(), 51);
}

/// The reads take `&self`, copy back once per step, and are shared across
/// threads; the energy is kept, and a non-finite one is an error.
#[test]
fn reads_are_shared_and_cached() {
    fn sync<T: Sync + Send>(_: &T) {}
    let mut sim = leapfrog_cpu(ic::plummer(64, 3));
    sync(&sim);
    let p0: *const _ = sim.positions().unwrap().as_ptr();
    let p1: *const _ = sim.positions().unwrap().as_ptr();
    assert_eq!(p0, p1, "the second read borrows the same mirror");
    sim.step(1).unwrap();
    let shared = &sim;
    let (e, m) = std::thread::scope(|s| {
        let e = s.spawn(|| shared.energy().unwrap());
        let m = s.spawn(|| shared.momentum().unwrap());
        (e.join().unwrap(), m.join().unwrap())
    });
    assert_eq!(e, sim.energy().unwrap());
    assert_eq!(m, sim.state().unwrap().bodies.momentum());
    assert_eq!(
        sim.velocities().unwrap(),
        &sim.state().unwrap().bodies.velocities[..]
    );

    // Coincident bodies at softening 0: an infinite potential, reported.
    let pair = Bodies::from_arrays(&[[1.0, 2.0, 3.0]; 2], &[[0.0; 3]; 2], &[1.0, 1.0]).unwrap();
    let sim = Simulation::builder(pair)
        .softening(0.0)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let e = sim.energy().unwrap_err();
    assert!(
        matches!(e, nbody_host::Error::NonFiniteEnergy { step: 0, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("softening"), "{e}");
}

/// Far from t = 0 a small step may not change the `f64` clock at all
/// (`1e17 + 1e-3 == 1e17`): `integrate_to` says so instead of counting steps
/// forever.
#[test]
fn integrate_to_refuses_a_step_below_the_clocks_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("late.ckpt");
    let sim = Simulation::builder(ic::plummer(8, 1))
        .dt(1e-3)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let mut checkpoint = nbody_host::Checkpoint {
        state: sim.state().unwrap(),
        params: sim.params().clone(),
        backend: sim.backend(),
    };
    checkpoint.state.time = 1e17;
    checkpoint.save(&path).unwrap();
    let mut late = Simulation::resume(&path)
        .unwrap()
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let e = late.integrate_to(1e17 + 64.0).unwrap_err();
    assert!(e.to_string().contains("resolution"), "{e}");
    assert_eq!(late.steps_done(), 0);
}
