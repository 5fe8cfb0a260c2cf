//! The ensembles through the API on the CPU backend: the conserved
//! quantity of each extended system (its excursion second order in `dt`),
//! bit-identical continuation from checkpoints, archives and clones, the
//! same bits on any number of threads, orthorhombic boxes under the
//! barostat, and bad input refused before any work. (Agreement with
//! LAMMPS: `tests/md_ensemble_lammps.rs`.)

mod common;

use common::bits;
use nbody_host::md::{Ensemble, Neighbours};
use nbody_host::snapshot::{Archive, ArchiveWriter};
use nbody_host::{
    Backend, Bodies, Boundary, Error, ForceLaw, Integrator, Simulation, SimulationBuilder, ic,
};

/// 256 atoms of in.lj's lattice at `T = 1.44` (it melts), shifted LJ,
/// cell lists rebuilt when needed, `dt`.
fn builder(e: Ensemble, dt: f64) -> SimulationBuilder {
    let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.44, 87287).unwrap();
    lj(atoms, boundary, e, dt)
}

fn lj(atoms: Bodies, boundary: Boundary, e: Ensemble, dt: f64) -> SimulationBuilder {
    Simulation::builder(atoms)
        .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap())
        .boundary(boundary)
        .neighbours(Neighbours::cells(0.3))
        .integrator(Integrator::VELOCITY_VERLET)
        .ensemble(e)
        .dt(dt)
        .backend(Backend::cpu())
}

fn every() -> [Ensemble; 5] {
    [
        Ensemble::nvt(1.0, 0.5),
        Ensemble::npt(1.0, 0.5, 2.0, 2.0),
        Ensemble::langevin(1.0, 1.0, 42),
        Ensemble::rescale(10, 1.0, 0.02, 0.5),
        Ensemble::Nvt {
            temp: 1.2,
            tdamp: 0.25,
            chain: 1,
        },
    ]
}

/// The largest `|econserve(t) - econserve(0)|` per atom over `time`,
/// sampled every `0.05` time units.
fn excursion(e: Ensemble, dt: f64, time: f64) -> f64 {
    let mut sim = builder(e, dt).build().unwrap();
    let e0 = sim.thermo().unwrap().conserved;
    let per = (0.05 / dt).round() as u64;
    let mut worst: f64 = 0.0;
    for _ in 0..(time / 0.05).round() as u64 {
        sim.step(per).unwrap();
        worst = worst.max((sim.thermo().unwrap().conserved - e0).abs());
    }
    worst
}

#[test]
fn the_extended_systems_conserve_their_energy_to_second_order_in_dt() {
    // The lattice melts from T = 1.44 while the thermostat pulls it to 1:
    // the conserved quantity's excursions are the splitting's, O(dt^2)
    // (below dt = 0.0025 the f32 state's rounding shows). Measured over 2.5
    // time units: NVT 3.3e-3, 8.1e-4, 2.1e-4 and NPT 4.2e-3, 1.0e-3,
    // 2.6e-4 per atom at dt = 0.01, 0.005, 0.0025.
    for e in [Ensemble::nvt(1.0, 0.5), Ensemble::npt(1.0, 0.5, 2.0, 2.0)] {
        let errors = [0.01, 0.005, 0.0025].map(|dt| excursion(e, dt, 2.5));
        println!("{e}: {errors:?}");
        for w in errors.windows(2) {
            let ratio = w[0] / w[1];
            assert!((3.0..5.5).contains(&ratio), "{e}: {errors:?} is not dt^2");
        }
        assert!(errors[0] < 5e-3, "{e}: {errors:?}");
    }
}

#[test]
fn the_thermostats_reach_their_targets() {
    for e in every() {
        let mut sim = builder(e, 0.005).build().unwrap();
        sim.step(1000).unwrap();
        let mut mean = 0.0;
        for _ in 0..100 {
            sim.step(10).unwrap();
            mean += sim.thermo().unwrap().temperature / 100.0;
        }
        let target = e.temperature().unwrap();
        // 256 atoms: the temperature fluctuates by about 6 % per sample.
        assert!((mean - target).abs() < 0.05 * target, "{e}: {mean}");
    }
    // The barostat's pressure: its mean over a longer run.
    let mut sim = builder(Ensemble::npt(1.0, 0.5, 2.0, 1.0), 0.005)
        .build()
        .unwrap();
    sim.step(2000).unwrap();
    let mut mean = 0.0;
    for _ in 0..400 {
        sim.step(10).unwrap();
        mean += sim.thermo().unwrap().pressure.unwrap() / 400.0;
    }
    assert!((mean - 2.0).abs() < 0.15, "{mean}");
}

#[test]
fn rescaling_follows_its_ramp_and_leaves_the_window_alone() {
    let e = Ensemble::Rescale {
        every: 1,
        t_start: 2.0,
        t_stop: 1.0,
        ramp: 100,
        window: 0.0,
        fraction: 1.0,
    };
    let mut sim = builder(e, 0.005).build().unwrap();
    for k in 1..=150u64 {
        sim.step(1).unwrap();
        let want = 2.0 - (k.min(100) as f64 / 100.0);
        let t = sim.thermo().unwrap();
        assert!(
            (t.temperature - want).abs() < 1e-5,
            "step {k}: {}",
            t.temperature
        );
    }
    // A wide window: no rescaling, no exchange.
    let e = Ensemble::rescale(1, 1.44, 10.0, 1.0);
    let (mut a, mut b) = (
        builder(e, 0.005).build().unwrap(),
        builder(Ensemble::Nve, 0.005).build().unwrap(),
    );
    a.step(50).unwrap();
    b.step(50).unwrap();
    assert_eq!(bits(a.bodies().unwrap()), bits(b.bodies().unwrap()));
    assert_eq!(a.thermo().unwrap().coupling, 0.0);
}

/// A fingerprint of everything a continuation must reproduce: a hash of
/// the bodies' and image counters' bits (kept short in a failure's
/// message), the thermo output and the box.
fn state(sim: &Simulation) -> (u64, [f64; 8]) {
    use std::hash::{Hash, Hasher};
    let t = sim.thermo().unwrap();
    let l = sim.params().boundary().lengths().unwrap();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bits(sim.bodies().unwrap()).hash(&mut h);
    sim.images().unwrap().hash(&mut h);
    let numbers = [
        t.temperature,
        t.potential,
        t.coupling,
        t.conserved,
        t.pressure.unwrap(),
        l[0],
        l[1],
        l[2],
    ];
    (h.finish(), numbers)
}

#[test]
fn checkpoints_archives_and_clones_continue_bit_identically() {
    let dir = tempfile::tempdir().unwrap();
    for (k, e) in every().into_iter().enumerate() {
        let mut straight = builder(e, 0.005).build().unwrap();
        straight.step(130).unwrap();
        let mut first = builder(e, 0.005).build().unwrap();
        first.step(57).unwrap();
        let path = dir.path().join(format!("{k}.ckpt"));
        first.save_checkpoint(&path).unwrap();
        let archive = dir.path().join(format!("{k}.nbar"));
        let mut w = ArchiveWriter::create(&archive).unwrap();
        w.append(&first).unwrap();
        drop(w);
        let mut clone = first.try_clone().unwrap();
        first.step(73).unwrap();
        clone.step(73).unwrap();
        let mut resumed = Simulation::resume(&path)
            .unwrap()
            .backend(Backend::cpu())
            .build()
            .unwrap();
        assert_eq!(resumed.params().ensemble(), e);
        resumed.step(73).unwrap();
        let snapshot = Archive::open(&archive).unwrap().get(0).unwrap();
        let mut from_archive = snapshot.builder().backend(Backend::cpu()).build().unwrap();
        from_archive.step(73).unwrap();
        let want = state(&straight);
        assert_eq!(state(&first), want, "{e}: one run, two calls");
        assert_eq!(state(&clone), want, "{e}: clone");
        assert_eq!(state(&resumed), want, "{e}: checkpoint");
        assert_eq!(state(&from_archive), want, "{e}: archive");
        // Version 6 for an ensemble (earlier builds would run it as NVE).
        let version = u32::from_le_bytes(std::fs::read(&path).unwrap()[8..12].try_into().unwrap());
        assert_eq!(version, 6, "{e}");
    }
    // NVE files stay version 5, readable by the builds before ensembles.
    let path = dir.path().join("nve.ckpt");
    builder(Ensemble::Nve, 0.005)
        .build()
        .unwrap()
        .save_checkpoint(&path)
        .unwrap();
    let version = u32::from_le_bytes(std::fs::read(&path).unwrap()[8..12].try_into().unwrap());
    assert_eq!(version, 5);
}

#[test]
fn the_same_bits_on_any_number_of_threads() {
    for e in every() {
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                // 864 atoms: several chunks of the passes.
                let (atoms, boundary) = ic::fcc_lattice(6, 0.8442, 1.44, 3).unwrap();
                let mut sim = lj(atoms, boundary, e, 0.005).build().unwrap();
                sim.step(60).unwrap();
                state(&sim)
            })
        };
        let one = run(1);
        for threads in [2, 3, 5] {
            assert_eq!(run(threads), one, "{e}: {threads} threads");
        }
    }
}

#[test]
fn the_barostat_scales_an_orthorhombic_box_alike_on_every_axis() {
    // 4 x 5 x 6 unit cells, 480 atoms, in a box of 4a x 5a x 6a.
    let a = (4.0f64 / 0.8442).cbrt();
    let (big, _) = ic::fcc_lattice(6, 0.8442, 1.2, 9).unwrap();
    let mut atoms = Bodies::default();
    for k in 0..big.len() {
        let p = big.positions[k];
        if p.x < (4.0 * a) as f32 - 0.1 && p.y < (5.0 * a) as f32 - 0.1 {
            atoms.push(nbody_host::Body::new(1.0, p, big.velocities[k]));
        }
    }
    assert_eq!(atoms.len(), 480);
    let lengths = [4.0 * a, 5.0 * a, 6.0 * a];
    let boundary = Boundary::Periodic { lengths };
    let mut sim = lj(atoms, boundary, Ensemble::npt(1.2, 0.5, 4.0, 1.0), 0.005)
        .build()
        .unwrap();
    let t0 = sim.thermo().unwrap();
    sim.step(300).unwrap();
    let now = sim.params().boundary().lengths().unwrap();
    let scale = now[0] / lengths[0];
    assert!((scale - 1.0).abs() > 1e-3, "the box moved: {now:?}");
    for k in 0..3 {
        assert!((now[k] / lengths[k] - scale).abs() < 1e-12, "{now:?}");
    }
    let t = sim.thermo().unwrap();
    assert_eq!(t.volume.unwrap(), sim.params().boundary().volume().unwrap());
    assert!((t.density.unwrap() - 480.0 / t.volume.unwrap()).abs() < 1e-12);
    assert!(
        (t.conserved - t0.conserved).abs() < 5e-3,
        "{t:?} from {t0:?}"
    );
    // Every body inside the box, and forces that agree with a fresh engine
    // built in the new box (the lists kept every pair within the cutoff).
    let b = sim.bodies().unwrap().clone();
    for p in &b.positions {
        for k in 0..3 {
            assert!(p[k] >= 0.0 && (p[k] as f64) < now[k], "{p} in {now:?}");
        }
    }
    let fresh = lj(b, Boundary::Periodic { lengths: now }, Ensemble::Nve, 0.005)
        .build()
        .unwrap();
    let (x, y) = (sim.accelerations().unwrap(), fresh.accelerations().unwrap());
    for (p, q) in x.iter().zip(&y) {
        assert!(
            (*p - *q).length() <= 1e-4 * (1.0 + q.length()),
            "{p} vs {q}"
        );
    }
}

#[test]
fn a_box_squeezed_below_the_cutoff_stops_the_run_naming_it() {
    // 108 atoms (box 5.04: cells need 2 (2.5 + 0.3) = 5.6; all pairs need
    // 5.0) under a crushing pressure.
    let (atoms, boundary) = ic::fcc_lattice(3, 0.8442, 1.0, 1).unwrap();
    let mut sim = Simulation::builder(atoms)
        .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap())
        .boundary(boundary)
        .neighbours(Neighbours::AllPairs)
        .integrator(Integrator::VELOCITY_VERLET)
        .ensemble(Ensemble::npt(1.0, 0.5, 500.0, 0.2))
        .dt(0.005)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let e = sim.step(2000).unwrap_err();
    let Error::BoxTooSmall {
        step,
        length,
        needed,
    } = e
    else {
        panic!("{e}");
    };
    assert!(length < needed && needed == 5.0, "{e}");
    assert!(e.to_string().contains(&format!("{length}")), "{e}");
    assert_eq!(sim.steps_done(), step);
    assert!(sim.step(1).is_err());
}

#[test]
fn bad_ensembles_are_refused_before_any_work() {
    let err = |b: SimulationBuilder| b.build().unwrap_err().to_string();
    for (e, what) in [
        (Ensemble::nvt(-1.0, 0.5), "target temperature = -1"),
        (Ensemble::nvt(1.0, 0.0), "Tdamp = 0"),
        (Ensemble::langevin(1.0, -3.0, 1), "damping time = -3"),
        (Ensemble::npt(1.0, 0.5, 1.0, f64::NAN), "Pdamp = NaN"),
        (Ensemble::rescale(0, 1.0, 0.0, 1.0), "interval = 0"),
    ] {
        let msg = err(builder(e, 0.005));
        assert!(msg.contains(what), "{e}: {msg}");
    }
    // A pressure needs a periodic box.
    let (atoms, _) = ic::fcc_lattice(3, 0.8442, 1.0, 1).unwrap();
    let msg = err(lj(
        atoms.clone(),
        Boundary::Open,
        Ensemble::npt(1.0, 0.5, 2.0, 1.0),
        0.005,
    ));
    assert!(msg.contains("P = 2") && msg.contains("periodic"), "{msg}");
    // Thermostats are for pair potentials under velocity Verlet.
    let msg = err(Simulation::builder(ic::plummer(64, 1))
        .ensemble(Ensemble::nvt(1.0, 0.5))
        .integrator(Integrator::VELOCITY_VERLET));
    assert!(msg.contains("nvt") && msg.contains("gravity"), "{msg}");
    let msg =
        err(builder(Ensemble::langevin(1.0, 1.0, 1), 0.005)
            .integrator(Integrator::SemiImplicitEuler));
    assert!(msg.contains("langevin") && msg.contains("euler"), "{msg}");
    // The GPU plan refuses a bad barostat alike (it runs NPT:
    // tests/md_gpu_npt.rs).
    let msg =
        err(builder(Ensemble::npt(1.0, 0.5, 1.0, f64::NAN), 0.005).backend(Backend::emulator()));
    assert!(msg.contains("Pdamp = NaN"), "{msg}");
}

#[test]
fn langevin_runs_are_their_seeds() {
    let run = |seed| {
        let mut sim = builder(Ensemble::langevin(1.0, 0.5, seed), 0.005)
            .build()
            .unwrap();
        sim.step(20).unwrap();
        bits(sim.bodies().unwrap())
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn adding_and_removing_bodies_keeps_the_thermostat() {
    for e in every() {
        let mut sim = builder(e, 0.005).build().unwrap();
        sim.step(20).unwrap();
        let before = sim.thermo().unwrap().coupling * 256.0;
        sim.remove(3).unwrap();
        let after = sim.thermo().unwrap().coupling * 255.0;
        // The thermostat goes on: Langevin's and rescaling's exchanged
        // energy is kept; the chains' (NVT, NPT) counts 3N - 3 degrees of
        // freedom, three fewer now.
        assert!(before != 0.0, "{e}");
        assert!(
            (after - before).abs() <= 0.02 * before.abs(),
            "{e}: {before} -> {after}"
        );
        sim.step(20).unwrap();
        assert_eq!(sim.params().ensemble(), e);
    }
}
