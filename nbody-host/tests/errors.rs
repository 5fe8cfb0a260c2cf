//! One test per error reachable from the public API: the variant, and a
//! message that names the offending value.

use glam::Vec3;
use nbody_host::{
    Backend, Bodies, Checkpoint, Error, Integrator, Kernel, Params, Simulation, State, ic, snapshot,
};

fn two() -> Bodies {
    Bodies::from_arrays(
        &[[0.0; 3], [1.0, 0.0, 0.0]],
        &[[0.0; 3], [0.0, 1.0, 0.0]],
        &[1.0, 1.0],
    )
    .unwrap()
}

fn build(bodies: Bodies) -> Result<Simulation, Error> {
    Simulation::builder(bodies).backend(Backend::cpu()).build()
}

#[track_caller]
fn assert_message(e: &Error, needles: &[&str]) {
    let msg = e.to_string();
    for needle in needles {
        assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
    }
    assert!(!msg.contains('\n'), "one line: {msg:?}");
}

#[test]
fn no_bodies() {
    let e = build(Bodies::default()).unwrap_err();
    assert!(matches!(e, Error::NoBodies), "{e}");
    assert_message(&e, &["N = 0"]);
    let e = Bodies::from_arrays(&[], &[], &[]).unwrap_err();
    assert!(matches!(e, Error::NoBodies), "{e}");
}

#[test]
fn too_many_bodies_is_found_from_the_header_alone() {
    // A 2^30 + 1 body file would be 30 GB; the header alone is refused, before
    // any data is read or allocated.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("huge.npy");
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1073741825, 7), }\n";
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(header.len() as u16).to_le_bytes());
    b.extend_from_slice(header.as_bytes());
    std::fs::write(&f, b).unwrap();
    let e = snapshot::load_npy(&f).unwrap_err();
    assert!(
        matches!(
            e,
            Error::TooManyBodies {
                n: 1_073_741_825,
                ..
            }
        ),
        "{e}"
    );
    assert_message(&e, &["N = 1073741825", "1073741824"]);
}

#[test]
fn length_mismatch() {
    let e = Bodies::from_arrays(&[[0.0; 3]; 3], &[[0.0; 3]; 2], &[1.0; 3]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                positions: 3,
                velocities: 2,
                masses: 3
            }
        ),
        "{e}"
    );
    assert_message(&e, &["3 positions, 2 velocities, 3 masses"]);
    // The same through the builder, with the public fields edited directly.
    let mut b = two();
    b.masses.push(1.0);
    let e = build(b).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { masses: 3, .. }), "{e}");
}

#[test]
fn invalid_mass() {
    for (mass, shown) in [(-0.5f32, "-0.5"), (f32::NAN, "NaN"), (f32::INFINITY, "inf")] {
        let mut b = two();
        b.masses[1] = mass;
        let e = build(b).unwrap_err();
        assert!(matches!(e, Error::InvalidMass { index: 1, .. }), "{e}");
        assert_message(&e, &["body 1", &format!("mass {shown}")]);
    }
    // Zero-mass test particles are valid.
    let mut b = two();
    b.masses[0] = 0.0;
    build(b).unwrap();
}

#[test]
fn non_finite_position_or_velocity() {
    let mut b = two();
    b.positions[1] = Vec3::new(1.0, f32::NAN, 0.0);
    let e = build(b).unwrap_err();
    assert!(
        matches!(
            e,
            Error::NonFiniteInput {
                index: 1,
                quantity: "position",
                ..
            }
        ),
        "{e}"
    );
    assert_message(&e, &["body 1: position", "NaN"]);
    let e = Bodies::from_arrays(
        &[[0.0; 3]; 2],
        &[[0.0; 3], [0.0, 0.0, f32::NEG_INFINITY]],
        &[1.0; 2],
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::NonFiniteInput {
                quantity: "velocity",
                ..
            }
        ),
        "{e}"
    );
    assert_message(&e, &["body 1: velocity", "-inf"]);
}

#[test]
fn invalid_time_step() {
    // 1e-50 is positive in f64 but 0 in f32; 1e300 is inf in f32.
    for dt in [0.0, -0.01, f64::NAN, f64::INFINITY, 1e-50, 1e300] {
        let e = Simulation::builder(two())
            .dt(dt)
            .backend(Backend::cpu())
            .build()
            .unwrap_err();
        assert!(matches!(e, Error::InvalidTimeStep(_)), "{dt}: {e}");
        assert_message(&e, &[&format!("dt = {dt}")]);
    }
}

#[test]
fn invalid_softening() {
    for eps in [-0.1, f64::NAN, f64::NEG_INFINITY, 1e30] {
        let e = Simulation::builder(two())
            .softening(eps)
            .backend(Backend::cpu())
            .build()
            .unwrap_err();
        assert!(matches!(e, Error::InvalidSoftening(_)), "{eps}: {e}");
        assert_message(&e, &[&format!("eps = {eps}")]);
    }
}

#[test]
fn invalid_gravitational_constant() {
    for g in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e39] {
        let e = Simulation::builder(two())
            .gravitational_constant(g)
            .backend(Backend::cpu())
            .build()
            .unwrap_err();
        assert!(
            matches!(e, Error::InvalidGravitationalConstant(_)),
            "{g}: {e}"
        );
        assert_message(&e, &[&format!("G = {g}")]);
    }
}

#[test]
fn invalid_block_size() {
    for block in [0, 16, 48, 100, 2048] {
        for kernel in [
            Kernel::Simt { block },
            Kernel::Tiled { block },
            Kernel::Triangle { block },
        ] {
            let e = Simulation::builder(two())
                .kernel(kernel)
                .backend(Backend::cpu())
                .build()
                .unwrap_err();
            assert!(matches!(e, Error::InvalidBlockSize { .. }), "{kernel}: {e}");
            assert_message(&e, &[&format!("block size {block}"), kernel.name()]);
        }
    }
}

#[test]
fn grid_too_large_is_found_before_the_backend_starts() {
    // Groups of 4 x 32 bodies: (N - 2) / 128 + 1 = 65_625 groups, 2.15e9
    // blocks > 2^31 - 1.
    let n = 8_400_000;
    let bodies = Bodies {
        positions: vec![Vec3::ZERO; n],
        velocities: vec![Vec3::ZERO; n],
        masses: vec![1.0; n],
    };
    let e = Simulation::builder(bodies)
        .kernel(Kernel::Triangle { block: 32 })
        .backend(Backend::cpu())
        .build()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::GridTooLarge {
                n: 8_400_000,
                block: 32,
                ..
            }
        ),
        "{e}"
    );
    assert_message(&e, &["N = 8400000", "block size 32", "triangle"]);
}

#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_not_compiled() {
    let e = Simulation::builder(two())
        .backend(Backend::Cuda { device: 0 })
        .build()
        .unwrap_err();
    assert!(matches!(e, Error::CudaNotCompiled), "{e}");
    assert_message(&e, &["--features cuda"]);
    // Auto falls back to the CPU instead.
    let sim = Simulation::builder(two()).build().unwrap();
    assert_eq!(sim.backend().name(), "cpu");
}

/// Body 1 (massless) sits at distance 1 from body 0 with `G = 2e38`, `eps =
/// 0`, `dt = 1`: its first kick is -2e38 (finite), it then moves to x = -2e38,
/// where the pull underflows to 0, and its next drift overflows to -inf. Euler
/// diverges at step 2; leapfrog (half kicks) at step 4.
fn runaway(integrator: Integrator) -> Simulation {
    Simulation::builder(
        Bodies::from_arrays(&[[0.0; 3], [1.0, 0.0, 0.0]], &[[0.0; 3]; 2], &[1.0, 0.0]).unwrap(),
    )
    .gravitational_constant(2e38)
    .softening(0.0)
    .dt(1.0)
    .integrator(integrator)
    .backend(Backend::cpu())
    .build()
    .unwrap()
}

#[test]
fn diverged_reports_the_step_and_body() {
    for (integrator, step) in [
        (Integrator::SemiImplicitEuler, 2),
        (Integrator::Leapfrog, 4),
    ] {
        let mut sim = runaway(integrator);
        let e = sim.step(10).unwrap_err();
        assert!(
            matches!(e, Error::Diverged { step: s, body: 1 } if s == step),
            "{integrator}: {e}"
        );
        assert_message(&e, &[&format!("at step {step}"), "body 1"]);
        assert_eq!(sim.steps_done(), step, "stopped where it went bad");
        let state = sim.state().unwrap();
        assert!(!state.bodies.positions[1].is_finite(), "{:?}", state.bodies);
        // It refuses to go on, with the same report.
        let again = sim.step(1).unwrap_err();
        assert!(matches!(again, Error::Diverged { step: s, body: 1 } if s == step));
    }
    // The step is counted from the start of the run, across a resume.
    let start = runaway(Integrator::SemiImplicitEuler);
    let checkpoint = Checkpoint {
        state: State {
            bodies: start.state().unwrap().bodies,
            time: 7.0,
            step: 7,
            ids: Vec::new(),
        },
        params: start.params().clone(),
        backend: nbody_host::BackendKind::Emulator,
    };
    let mut resumed = Simulation::from_checkpoint(checkpoint)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    resumed.step(1).unwrap();
    let e = resumed.step(5).unwrap_err();
    assert!(matches!(e, Error::Diverged { step: 9, body: 1 }), "{e}");
}

#[test]
fn non_finite_snapshot_is_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("bad.npy");
    let ckpt = dir.path().join("bad.ckpt");
    let mut sim = runaway(Integrator::SemiImplicitEuler);
    sim.step(1).unwrap();
    sim.save_checkpoint(&ckpt).unwrap();
    let before = std::fs::read(&ckpt).unwrap();
    assert!(sim.step(5).is_err());
    for e in [
        sim.save_npy(&npy).unwrap_err(),
        sim.save_checkpoint(&ckpt).unwrap_err(),
        snapshot::save_npy(&npy, &sim.state().unwrap().bodies).unwrap_err(),
    ] {
        assert!(matches!(e, Error::NonFiniteSnapshot { body: 1, .. }), "{e}");
        assert_message(&e, &["bad.", "body 1", "not finite"]);
    }
    assert!(!npy.exists());
    assert_eq!(std::fs::read(&ckpt).unwrap(), before, "old checkpoint kept");
    // The checkpoint from before the divergence still resumes.
    let mut resumed = Simulation::resume(&ckpt)
        .unwrap()
        .backend(Backend::cpu())
        .build()
        .unwrap();
    assert_eq!(resumed.steps_done(), 1);
    assert!(matches!(
        resumed.step(1),
        Err(Error::Diverged { step: 2, body: 1 })
    ));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporaries"
    );
}

#[test]
fn invalid_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("corrupt.bin");
    std::fs::write(&f, b"\x93NUMPY\x01\x00\x10\x00{'descr': 'x'}").unwrap();
    let e = snapshot::load_npy(&f).unwrap_err();
    assert!(matches!(e, Error::InvalidFile { format: "npy", .. }), "{e}");
    assert_message(&e, &["corrupt.bin", "not a valid npy file", "truncated"]);
    std::fs::write(&f, b"NBODYCKP\x01\x00\x00\x00").unwrap();
    let e = Simulation::resume(&f).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidFile {
                format: "checkpoint",
                ..
            }
        ),
        "{e}"
    );
    assert_message(
        &e,
        &["corrupt.bin", "not a valid checkpoint file", "truncated"],
    );
    // No invalid file can be written: a checkpoint's `Params` are valid by
    // construction (private fields, validated by `Params::new`).
    let sim = build(ic::plummer(8, 1)).unwrap();
    let p = sim.params();
    let e = Params::new(-1.0, p.force().clone(), p.kernel(), p.integrator()).unwrap_err();
    assert!(matches!(e, Error::InvalidTimeStep(-1.0)), "{e}");
    assert!(!f.exists() || Checkpoint::load(&f).is_err());
}

#[test]
fn io_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing_dir = dir.path().join("no/such/dir/out.npy");
    let sim = build(two()).unwrap();
    for e in [
        sim.save_npy(&missing_dir).unwrap_err(),
        sim.save_checkpoint(&missing_dir).unwrap_err(),
        snapshot::load_npy(dir.path().join("absent.npy")).unwrap_err(),
        Simulation::resume(dir.path().join("absent.ckpt")).unwrap_err(),
    ] {
        assert!(matches!(e, Error::Io { .. }), "{e}");
        assert!(
            e.to_string().contains("out.npy") || e.to_string().contains("absent."),
            "{e}"
        );
    }
    // A directory is not a file to overwrite.
    let e = sim.save_npy(dir.path()).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert!(!dir.path().join("no").exists());
}

#[test]
fn step_counter_overflow_is_an_error_not_a_panic() {
    let sim = build(two()).unwrap();
    let checkpoint = Checkpoint {
        state: State {
            bodies: sim.state().unwrap().bodies,
            time: 0.0,
            step: u64::MAX - 1,
            ids: Vec::new(),
        },
        params: sim.params().clone(),
        backend: nbody_host::BackendKind::Emulator,
    };
    let mut sim = Simulation::from_checkpoint(checkpoint)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let e = sim.step(5).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    assert_message(&e, &["5 more steps", "18446744073709551614"]);
    assert_eq!(sim.steps_done(), u64::MAX - 1);
    sim.step(1).unwrap();
    assert_eq!(sim.steps_done(), u64::MAX);
}
