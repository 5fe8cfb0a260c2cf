//! The block-time-step Hermite integrator through `Simulation`
//! (`Integrator::Hermite`): a Kepler orbit against the analytic one, a
//! Plummer sphere against the shared-step f64 reference and in energy, the
//! exact finish, checkpoints that resume bit for bit, thread counts,
//! coincident bodies at softening 0, and what it refuses. On the GPU
//! backends: `tests/hermite_gpu.rs`.

use nbody_host::glam::DVec3;
use nbody_host::hermite::reference;
use nbody_host::oracle::{self, System64};
use nbody_host::{
    Backend, Error, HermiteSettings, Integrator, Precision, Simulation, SimulationBuilder, ic,
};

fn hermite(eta: f64) -> Integrator {
    Integrator::Hermite(HermiteSettings::new(eta).unwrap())
}

/// Two equal masses on a circular orbit of separation 1 (G = 1, M = 1):
/// period `2 pi`.
fn binary() -> SimulationBuilder {
    let v = 0.5; // each body: v^2 / 0.5 = 0.5 / 1^2
    let pos = [DVec3::new(0.5, 0.0, 0.0), DVec3::new(-0.5, 0.0, 0.0)];
    let vel = [DVec3::new(0.0, v, 0.0), DVec3::new(0.0, -v, 0.0)];
    Simulation::builder_f64(&pos, &vel, &[0.5, 0.5])
        .unwrap()
        .softening(0.0)
        .backend(Backend::cpu())
}

/// After one period, the error of a 4th-order integrator falls 16-fold
/// when the step halves (Aarseth's `dt` goes as `sqrt(eta)`: `eta / 4`).
#[test]
fn a_circular_binary_returns_after_one_period_with_4th_order_errors() {
    let period = 2.0 * std::f64::consts::PI;
    let run = |eta: f64| {
        let mut sim = binary().dt(1.0).integrator(hermite(eta)).build().unwrap();
        let e0 = sim.energy().unwrap();
        sim.integrate_to(period).unwrap();
        assert_eq!(sim.time(), period);
        let x = sim.positions_f64().unwrap();
        let err = (x[0] - DVec3::new(0.5, 0.0, 0.0)).length();
        let de = sim.energy().unwrap().relative_change_from(&e0);
        let stats = sim.hermite_stats().unwrap();
        // Equal circular orbits: both bodies always in one block.
        assert_eq!(stats.mean_block(), 2.0);
        assert_eq!(stats.force_evals, 2 * stats.block_steps);
        println!(
            "binary, eta {eta}: position error {err:.2e}, dE/E {de:.2e}, {} block steps",
            stats.block_steps
        );
        (err, de, stats.block_steps)
    };
    let (coarse, fine) = (run(0.004), run(0.001));
    assert!(fine.0 < 1e-6, "{fine:?}");
    assert!(fine.2 > coarse.2);
    let order = (coarse.0 / fine.0).log2() / (fine.2 as f64 / coarse.2 as f64).log2();
    println!("order of convergence of the position error: {order:.2}");
    assert!((3.5..4.5).contains(&order), "{order}");
}

fn plummer(n: usize) -> SimulationBuilder {
    Simulation::builder(ic::plummer(n, 3))
        .softening(0.01)
        .dt(0.125)
        .backend(Backend::cpu())
}

#[test]
fn a_plummer_sphere_conserves_energy_and_follows_the_shared_step_reference() {
    let n = 128;
    let mut sim = plummer(n).integrator(hermite(0.01)).build().unwrap();
    let e0 = sim.energy().unwrap();
    sim.integrate_to(0.25).unwrap();
    let de = sim.energy().unwrap().relative_change_from(&e0);
    let stats = sim.hermite_stats().unwrap();
    // The reference: shared steps of 2^-12 (below the smallest block step).
    let mut sys = System64::from_bodies(&ic::plummer(n, 3));
    for _ in 0..1024 {
        oracle::advance(&mut sys, hermite(0.01), 0.25 / 1024.0, 1.0, 0.01, 1);
    }
    let x = sim.positions_f64().unwrap();
    let err = (0..n)
        .map(|i| (x[i] - DVec3::from_array(sys.pos[i])).length())
        .fold(0.0, f64::max);
    println!(
        "plummer N={n}: dE/E {de:.2e}, largest position difference to the shared-step reference \
         {err:.2e}; {} block steps, mean block {:.1}",
        stats.block_steps,
        stats.mean_block()
    );
    assert!(de < 1e-8, "{de:e}");
    assert!(err < 1e-7, "{err:e}");
    assert!(stats.mean_block() > 1.0 && stats.mean_block() < n as f64);
}

#[test]
fn integrate_to_ends_exactly_and_step_advances_whole_intervals() {
    let mut sim = plummer(64).integrator(hermite(0.02)).build().unwrap();
    assert_eq!(sim.integrate_to(0.3).unwrap(), 3); // 0.125, 0.25, then 0.3
    assert_eq!(sim.time(), 0.3);
    sim.step(2).unwrap();
    assert_eq!(sim.time(), 0.3 + 0.125 + 0.125);
    assert_eq!(sim.steps_done(), 5);
    assert_eq!(sim.integrate_to(sim.time()).unwrap(), 0);
    assert!(matches!(
        sim.integrate_to(0.1),
        Err(Error::InvalidTargetTime { .. })
    ));
}

#[test]
fn a_checkpoint_resumes_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.ckpt");
    for precision in Precision::ALL {
        let integrator = Integrator::Hermite(
            HermiteSettings::new(0.02)
                .unwrap()
                .with_eta_s(0.005)
                .unwrap()
                .with_precision(precision),
        );
        let mut straight = plummer(100).integrator(integrator).build().unwrap();
        straight.step(4).unwrap();
        let mut first = plummer(100).integrator(integrator).build().unwrap();
        first.step(2).unwrap();
        first.save_checkpoint(&path).unwrap();
        let mut resumed = Simulation::resume(&path)
            .unwrap()
            .backend(Backend::cpu())
            .build()
            .unwrap();
        assert_eq!(resumed.params(), first.params());
        resumed.step(2).unwrap();
        let bits = |s: &Simulation| {
            let mut b: Vec<u64> = s
                .positions_f64()
                .unwrap()
                .iter()
                .chain(&s.velocities_f64().unwrap())
                .flat_map(|v| v.to_array())
                .map(f64::to_bits)
                .collect();
            b.push(s.time().to_bits());
            b
        };
        assert_eq!(bits(&resumed), bits(&straight), "{precision}");
        assert_eq!(resumed.hermite_stats(), straight.hermite_stats());
        let clone = straight.try_clone().unwrap();
        assert_eq!(bits(&clone), bits(&straight));
    }
}

#[test]
fn results_are_bit_identical_on_1_2_and_3_threads() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            // Large enough for the force loops to use the pool.
            let mut sim = plummer(400)
                .dt(1.0 / 64.0)
                .integrator(hermite(0.02))
                .build()
                .unwrap();
            sim.step(1).unwrap();
            let e = sim.energy().unwrap();
            let mut b: Vec<u64> = sim
                .positions_f64()
                .unwrap()
                .iter()
                .flat_map(|v| v.to_array())
                .map(f64::to_bits)
                .collect();
            b.extend([e.kinetic.to_bits(), e.potential.to_bits()]);
            b
        })
    };
    let one = run(1);
    assert_eq!(run(2), one);
    assert_eq!(run(3), one);
}

#[test]
fn coincident_bodies_at_softening_0_are_an_error_naming_them() {
    let pos = [DVec3::ZERO, DVec3::X, DVec3::new(0.5, 0.5, 0.0), DVec3::X];
    let vel = [DVec3::ZERO; 4];
    let build = |eps: f64| {
        Simulation::builder_f64(&pos, &vel, &[1.0; 4])
            .unwrap()
            .softening(eps)
            .integrator(hermite(0.02))
            .backend(Backend::cpu())
            .build()
    };
    match build(0.0) {
        Err(Error::CoincidentBodies { a: 1, b: 3, .. }) => {}
        other => panic!("{other:?}"),
    }
    let e = build(0.0).unwrap_err().to_string();
    assert!(
        e.contains("bodies 1 and 3") && e.contains("softening 0"),
        "{e}"
    );
    assert!(build(0.01).is_ok());
}

#[test]
fn what_the_hermite_engine_refuses_is_named() {
    // (The emulator and CUDA run it since issue 26's GPU half:
    // tests/hermite_gpu.rs.) Only gravity, on any backend.
    let lj = nbody_host::ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap();
    for backend in [Backend::cpu(), Backend::emulator()] {
        let e = plummer(16)
            .integrator(hermite(0.02))
            .force(lj.clone())
            .backend(backend)
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("integrates gravity"), "{e}");
    }
    for bad in [0.0, -1.0, f64::NAN] {
        let e = HermiteSettings::new(bad).unwrap_err().to_string();
        assert!(e.contains("eta"), "{e}");
    }
    let mut sim = plummer(16).integrator(hermite(0.02)).build().unwrap();
    let body = nbody_host::Body::new(1.0, [9.0; 3], [0.0; 3]);
    assert!(sim.add(body).unwrap_err().to_string().contains("Hermite"));
}

/// The f32 integrators do not see the f64 start: they start from its f32
/// rounding, and their f64 reads are widened f32.
#[test]
fn f64_reads_of_an_f32_run_are_its_f32_state_widened() {
    let sim = Simulation::builder(ic::plummer(8, 1))
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let x32 = sim.positions().unwrap()[3];
    assert_eq!(sim.positions_f64().unwrap()[3], x32.as_dvec3());
    assert!(sim.hermite_stats().is_none());
    // And the reference energy agrees with the engine's for Hermite.
    let mut h = plummer(50).integrator(hermite(0.02)).build().unwrap();
    h.step(1).unwrap();
    let (p, v, m) = (
        h.positions_f64().unwrap(),
        h.velocities_f64().unwrap(),
        h.masses_f64().unwrap(),
    );
    let arr = |x: &[DVec3]| x.iter().map(|v| v.to_array()).collect::<Vec<_>>();
    let (k, u) = reference::energy(&arr(&p), &arr(&v), &m, 1.0, 1e-4);
    let e = h.energy().unwrap();
    assert!((e.kinetic - k).abs() < 1e-13 * k.abs());
    assert!(
        (e.potential - u).abs() < 1e-12 * u.abs(),
        "{} {u}",
        e.potential
    );
}
