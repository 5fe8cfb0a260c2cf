//! Pair potentials (Lennard-Jones, and a two-type mixture) through the GPU
//! MD plan behind `Simulation`: on
//! `Backend::Emulator` (always) and, with the `cuda` feature, on
//! `Backend::Cuda` (module `cuda`, run on the software CUDA device by
//! `scripts/ci-softcuda.sh`: `scripts/with-softcuda.sh cargo test -p
//! nbody-host --features cuda --test md_gpu cuda::`; the `softcuda_*` tests
//! set `SOFTCUDA_*` variables in a child process and need that device;
//! `cuda::the_plan_gives_the_same_bits_on_every_run` also runs on a GPU and
//! compares with the H200's committed bits, `tests/h200_bits/`).
//!
//! Each check runs the GPU backend and the CPU `MdEngine` from the same
//! state: the accelerations, potential energy and virial against the `f64`
//! oracle within the bounds `tests/md_oracle.rs` derives (rounding of the
//! separation, plus `2e-5` of each term's magnitude for the rest of the
//! `f32` arithmetic and the sum of a list), at the start and after steps
//! that include list rebuilds; the trajectory against the CPU's; thermo
//! against the CPU's; a checkpoint resumed on the same backend; the
//! overlapping pair the CPU names; the combinations the GPU plan lacks.

mod common;

use common::pair_bounds;
use nbody_host::md::{CellList, Lists};
use nbody_host::oracle::{Pair64, System64};
use nbody_host::{
    Backend, Bodies, Boundary, Checkpoint, Error, ForceLaw, Integrator, Neighbours, PairPotential,
    PairStyle, Simulation, ic,
};

fn law() -> ForceLaw {
    ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap()
}

/// `style`'s example coefficients for `types` types (shifted), and the
/// types of 256 bodies: one in five of the last type.
fn example(style: PairStyle, types: u32) -> (ForceLaw, Vec<u32>) {
    let pot = PairPotential::example(style, types, None, true).unwrap();
    let t = (0..256)
        .map(|i| if i % 5 == 4 { types - 1 } else { 0 })
        .collect();
    (ForceLaw::Pair(pot), t)
}

/// [`agrees_for`] for every style, with one atom type and two.
fn every_style_agrees(backend: Backend) {
    for &style in PairStyle::ALL {
        for types in [1, 2] {
            let (force, t) = example(style, types);
            agrees_for(backend, force, &t);
        }
    }
}

fn build(
    bodies: &Bodies,
    boundary: Boundary,
    neighbours: Neighbours,
    backend: Backend,
) -> nbody_host::Result<Simulation> {
    build_with(bodies, &[], law(), boundary, neighbours, backend)
}

fn build_with(
    bodies: &Bodies,
    types: &[u32],
    force: ForceLaw,
    boundary: Boundary,
    neighbours: Neighbours,
    backend: Backend,
) -> nbody_host::Result<Simulation> {
    Simulation::builder(bodies.clone())
        .force(force)
        .types(types.to_vec())
        .boundary(boundary)
        .neighbours(neighbours)
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.005)
        .backend(backend)
        .build()
}

/// 256 atoms of in.lj (4^3 fcc unit cells, box 6.72: two cells of
/// `r_c + skin = 2.8` per side) at temperature `t`.
fn melt(t: f64, seed: u64) -> (Bodies, Boundary) {
    ic::fcc_lattice(4, 0.8442, t, seed).unwrap()
}

/// `sim`'s accelerations, potential energy and virial against the oracle at
/// its own state.
fn check_oracle(sim: &Simulation, o: &Pair64, what: &str) {
    let sys = System64::from_bodies(sim.bodies().unwrap());
    let types = sim.types().unwrap();
    let b = pair_bounds(&sys, &types, o);
    let (acc_bound, u_bound, w_bound) = (b.acc, b.potential, b.virial);
    let forces = o.forces(&sys.pos, &types);
    for (i, (a, f)) in sim.accelerations().unwrap().iter().zip(&forces).enumerate() {
        let want = f.map(|x| x / sys.mass[i]);
        let err = ((a.x as f64 - want[0]).powi(2)
            + (a.y as f64 - want[1]).powi(2)
            + (a.z as f64 - want[2]).powi(2))
        .sqrt();
        assert!(
            err <= acc_bound[i],
            "{what}: body {i}: a = {a:?}, oracle {want:?}: {err:e} > {:e}",
            acc_bound[i]
        );
    }
    let (u, w) = o.energy_virial(&sys.pos, &types);
    let t = sim.thermo().unwrap();
    let n = sys.pos.len() as f64;
    let du = (t.potential * n - u).abs();
    assert!(
        du <= u_bound,
        "{what}: U {} vs {u}: {du:e}",
        t.potential * n
    );
    let dw = (t.virial - w).abs();
    assert!(dw <= w_bound, "{what}: W {} vs {w}: {dw:e}", t.virial);
}

/// Largest minimum-image distance between the two runs' positions, and
/// whether their unwrapped positions agree too (images).
fn max_separation(a: &Simulation, b: &Simulation, l: f32) -> f32 {
    let (pa, pb) = (a.positions().unwrap(), b.positions().unwrap());
    let (ia, ib) = (a.images().unwrap().unwrap(), b.images().unwrap().unwrap());
    let mut worst = 0.0f32;
    for k in 0..pa.len() {
        for ax in 0..3 {
            let ua = pa[k][ax] as f64 + ia[k][ax] as f64 * l as f64;
            let ub = pb[k][ax] as f64 + ib[k][ax] as f64 * l as f64;
            worst = worst.max((ua - ub).abs() as f32);
        }
    }
    worst
}

/// Forces, energy and virial against the oracle at the start and after 60
/// steps with several list rebuilds; the trajectory, the image counters and
/// the thermo output against the CPU's.
fn agrees_with_the_cpu_and_the_oracle(backend: Backend) {
    agrees_for(backend, law(), &[]);
}

/// [`agrees_with_the_cpu_and_the_oracle`] under `force`, the bodies of
/// `types`.
fn agrees_for(backend: Backend, force: ForceLaw, types: &[u32]) {
    let (atoms, boundary) = melt(1.44, 87287);
    let types = &types[..types.len().min(atoms.len())];
    let o = Pair64::new(force.as_pair().unwrap(), &boundary);
    let neighbours = Neighbours::cells(0.3);
    let run = |b| build_with(&atoms, types, force.clone(), boundary, neighbours, b).unwrap();
    let (mut gpu, mut cpu) = (run(backend), run(Backend::cpu()));
    assert_eq!(gpu.backend().name(), backend_name(backend));
    let style = force.as_pair().unwrap().style();
    assert_eq!(gpu.method(), style.method(true));
    assert_eq!(cpu.method(), style.method(true));
    assert_eq!(gpu.types().unwrap(), cpu.types().unwrap());
    check_oracle(&gpu, &o, "start");
    // Same positions: the thermo output differs by rounding only, each
    // within the oracle's bounds, so by at most twice them from each other.
    let (tg, tc) = (gpu.thermo().unwrap(), cpu.thermo().unwrap());
    // Same velocities, both summed in f64, each in its own layout's order
    // (the cells differ with the cutoff: `soft`'s 1.5 gives 3 per side).
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs();
    assert!(
        rel(tg.kinetic, tc.kinetic) <= 1e-14,
        "kinetic {} vs {}",
        tg.kinetic,
        tc.kinetic
    );
    assert!(rel(tg.temperature, tc.temperature) <= 1e-14);
    let b = pair_bounds(&System64::from_bodies(&atoms), types, &o);
    let (u_bound, w_bound) = (b.potential, b.virial);
    let (n, volume) = (atoms.len() as f64, boundary.volume().unwrap());
    let du = (tg.potential - tc.potential).abs();
    assert!(du <= 2.0 * u_bound / n, "{du:e}: {tg:?} vs {tc:?}");
    let p = |t: &nbody_host::md::Thermo| t.pressure.unwrap();
    let dp = (p(&tg) - p(&tc)).abs();
    assert!(
        dp <= 2.0 * w_bound / (3.0 * volume),
        "{dp:e}: {tg:?} vs {tc:?}"
    );
    assert!(
        du > 0.0 || dp > 0.0,
        "different summation orders, same bits?"
    );
    let l = boundary.lengths().unwrap()[0] as f32;
    for round in 1..=3 {
        gpu.step(20).unwrap();
        cpu.step(20).unwrap();
        let what = format!("after {} steps", 20 * round);
        check_oracle(&gpu, &o, &what);
        let d = max_separation(&gpu, &cpu, l);
        assert!(d < 1e-3, "{what}: the trajectories differ by {d}");
        let (tg, tc) = (gpu.thermo().unwrap(), cpu.thermo().unwrap());
        for (name, g, c) in [
            ("T", tg.temperature, tc.temperature),
            ("PE", tg.potential, tc.potential),
            ("E", tg.total, tc.total),
            ("P", p(&tg), p(&tc)),
        ] {
            assert!((g - c).abs() < 1e-3, "{what}: {name} {g} vs CPU {c}");
        }
    }
    let stats = gpu.md_stats().unwrap();
    assert!(stats.builds >= 3, "rebuilds: {stats:?}");
    // Full lists on both, built from the same range: entries per atom agree
    // to the few pairs near r_c + skin that the trajectories' rounding moves.
    let cpu_stats = cpu.md_stats().unwrap();
    assert!(
        (stats.neighbours_per_atom - cpu_stats.neighbours_per_atom).abs() < 0.5,
        "{stats:?} vs {cpu_stats:?}"
    );
    assert_eq!(stats.cells, cpu_stats.cells);
    // Energy is conserved (shifted potential) to the CPU run's precision.
    let t0 = cpu.thermo().unwrap();
    assert!((gpu.thermo().unwrap().total - t0.total).abs() < 1e-3);
}

fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Cuda { .. } => "cuda",
        _ => "emulator",
    }
}

/// A checkpoint of a run continues on the same backend: the images carry
/// over and the continuation follows the straight run (the lists are
/// rebuilt at the resume, so to rounding, not bit for bit).
fn checkpoints_resume(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("melt.ckpt");
    let (mut atoms, boundary) = melt(1.44, 5);
    // A fast atom: it crosses faces, and the images count.
    atoms.velocities[0].x = -4.0;
    let neighbours = Neighbours::cells(0.3).every(10);
    let mut straight = build(&atoms, boundary, neighbours, backend).unwrap();
    straight.step(15).unwrap();
    straight.save_checkpoint(&path).unwrap();
    let (ckpt, md) = Checkpoint::load_with_md(&path).unwrap();
    assert_eq!(ckpt.params.neighbours(), neighbours);
    let md = md.expect("the MD state");
    let images = straight.images().unwrap().unwrap();
    assert_eq!(md.images, images);
    assert!(images.iter().flatten().any(|&k| k != 0), "no image moved");
    let mut resumed = Simulation::resume(&path)
        .unwrap()
        .backend(backend)
        .build()
        .unwrap();
    assert_eq!(resumed.steps_done(), 15);
    assert_eq!(resumed.backend().name(), backend_name(backend));
    straight.step(15).unwrap();
    resumed.step(15).unwrap();
    let l = boundary.lengths().unwrap()[0] as f32;
    let d = max_separation(&straight, &resumed, l);
    assert!(d < 1e-4, "the resumed run is {d} away");
    let (a, b) = (straight.thermo().unwrap(), resumed.thermo().unwrap());
    assert!((a.total - b.total).abs() < 1e-5, "{a:?} vs {b:?}");
    assert_eq!(resumed.time(), straight.time());
}

/// A clone (and a run with a body removed) restarts the engine from the
/// current state on the same backend, image counters included.
fn clones_and_removals_continue(backend: Backend) {
    let (mut atoms, boundary) = melt(1.44, 11);
    atoms.velocities[3].z = 4.0;
    let mut sim = build(&atoms, boundary, Neighbours::cells(0.3), backend).unwrap();
    sim.step(12).unwrap();
    let mut clone = sim.try_clone().unwrap();
    assert_eq!(clone.backend().name(), backend_name(backend));
    assert_eq!(clone.images().unwrap(), sim.images().unwrap());
    sim.step(10).unwrap();
    clone.step(10).unwrap();
    let l = boundary.lengths().unwrap()[0] as f32;
    let d = max_separation(&sim, &clone, l);
    assert!(d < 1e-4, "the clone is {d} away");
    let images = sim.images().unwrap().unwrap();
    let removed = sim.remove(5).unwrap();
    assert_eq!(sim.len(), 255);
    let after = sim.images().unwrap().unwrap();
    assert_eq!(after[..5], images[..5]);
    assert_eq!(after[5..], images[6..]);
    assert!(removed.mass > 0.0);
    sim.step(5).unwrap();
}

/// Two atoms on top of each other: the same [`Error::Overlapping`] as the
/// CPU, naming the pair.
fn overlapping_atoms_are_named(backend: Backend) {
    let (mut atoms, boundary) = melt(1.0, 2);
    atoms.positions[40] = atoms.positions[7];
    let neighbours = Neighbours::cells(0.3);
    let gpu = build(&atoms, boundary, neighbours, backend).unwrap_err();
    let cpu = build(&atoms, boundary, neighbours, Backend::cpu()).unwrap_err();
    assert!(
        matches!(gpu, Error::Overlapping { a: 7, b: 40, .. }),
        "{gpu}"
    );
    assert_eq!(gpu.to_string(), cpu.to_string());
}

/// What the GPU MD plan lacks is an `Unsupported` error naming it.
fn unsupported_combinations_are_named(backend: Backend) {
    let (atoms, boundary) = melt(1.0, 3);
    let err = |sim: nbody_host::Result<Simulation>| match sim {
        Ok(_) => panic!("{backend:?}: built"),
        Err(e) => {
            assert!(matches!(e, Error::Unsupported(_)), "{e}");
            e.to_string()
        }
    };
    let open = err(build(
        &atoms,
        Boundary::Open,
        Neighbours::cells(0.3),
        backend,
    ));
    assert!(open.contains("open space"), "{open}");
    let all = err(build(&atoms, boundary, Neighbours::AllPairs, backend));
    assert!(all.contains("all-pairs"), "{all}");
    let half = Neighbours::Cells(CellList {
        lists: Lists::Half,
        ..CellList::new(0.3)
    });
    let half = err(build(&atoms, boundary, half, backend));
    assert!(half.contains("half Verlet lists"), "{half}");
    let euler = err(Simulation::builder(atoms.clone())
        .force(law())
        .boundary(boundary)
        .integrator(Integrator::SemiImplicitEuler)
        .backend(backend)
        .build());
    assert!(euler.contains("integrator euler"), "{euler}");
    // Full lists and a wider bin are what it runs.
    let full = Neighbours::Cells(CellList {
        lists: Lists::Full,
        bin_size: 4.0,
        ..CellList::new(0.3)
    });
    let sim = build(&atoms, boundary, full, backend).unwrap();
    assert_eq!(sim.md_stats().unwrap().cells, [1, 1, 1]);
}

mod emulator {
    use super::*;

    const EMULATOR: Backend = Backend::Emulator {
        race_detection: false,
    };

    #[test]
    fn lj_agrees_with_the_cpu_and_the_oracle_through_rebuilds() {
        agrees_with_the_cpu_and_the_oracle(EMULATOR);
    }

    #[test]
    fn every_style_with_one_type_and_two_agrees_with_the_cpu_and_the_oracle() {
        every_style_agrees(EMULATOR);
    }

    #[test]
    fn lj_checkpoints_resume() {
        checkpoints_resume(EMULATOR);
    }

    #[test]
    fn overlapping_atoms_give_the_cpus_error() {
        overlapping_atoms_are_named(EMULATOR);
    }

    #[test]
    fn lj_clones_and_removals_continue() {
        clones_and_removals_continue(EMULATOR);
    }

    #[test]
    fn the_race_detector_passes_the_md_launches_and_changes_no_bit() {
        let (atoms, boundary) = melt(1.44, 4);
        let neighbours = Neighbours::cells(0.3).every(3);
        let detected = Backend::Emulator {
            race_detection: true,
        };
        let mut runs =
            [detected, EMULATOR].map(|b| build(&atoms, boundary, neighbours, b).unwrap());
        for sim in &mut runs {
            sim.step(4).unwrap();
        }
        assert_eq!(runs[0].bodies().unwrap(), runs[1].bodies().unwrap());
        assert_eq!(runs[0].thermo().unwrap(), runs[1].thermo().unwrap());
        assert_eq!(runs[0].md_stats().unwrap().builds, 2);
    }

    #[test]
    fn what_the_plan_lacks_is_an_error_naming_it_and_auto_stays_on_the_cpu() {
        unsupported_combinations_are_named(EMULATOR);
        let (atoms, boundary) = melt(1.0, 1);
        let auto = build(&atoms, boundary, Neighbours::Auto, Backend::Auto).unwrap();
        assert_eq!(auto.backend().name(), "cpu");
    }
}

#[cfg(feature = "cuda")]
mod cuda_env;

#[cfg(feature = "cuda")]
mod h200_bits;

#[cfg(feature = "cuda")]
mod cuda {
    use super::*;

    const CUDA: Backend = Backend::Cuda { device: 0 };

    #[test]
    fn lj_agrees_with_the_cpu_and_the_oracle_through_rebuilds() {
        agrees_with_the_cpu_and_the_oracle(CUDA);
    }

    #[test]
    fn every_style_with_one_type_and_two_agrees_with_the_cpu_and_the_oracle() {
        every_style_agrees(CUDA);
    }

    #[test]
    fn lj_checkpoints_resume() {
        checkpoints_resume(CUDA);
    }

    #[test]
    fn overlapping_atoms_give_the_cpus_error() {
        overlapping_atoms_are_named(CUDA);
    }

    #[test]
    fn lj_clones_and_removals_continue() {
        clones_and_removals_continue(CUDA);
    }

    #[test]
    fn what_the_plan_lacks_is_an_error_naming_it() {
        unsupported_combinations_are_named(CUDA);
    }

    /// Every bit of a run of the plan: 30 steps of the hot melt from one
    /// state (lists rebuilt 3 times), positions, velocities, images and
    /// thermo.
    fn melt_bits(backend: Backend) -> Vec<u64> {
        let (mut atoms, boundary) = melt(1.44, 21);
        atoms.velocities[9].y = -4.0;
        let neighbours = Neighbours::cells(0.3).every(10);
        let mut sim = build(&atoms, boundary, neighbours, backend).unwrap();
        let mut v = vec![];
        for _ in 0..3 {
            sim.step(10).unwrap();
            let b = sim.bodies().unwrap();
            let t = sim.thermo().unwrap();
            v.extend(
                b.positions
                    .iter()
                    .chain(&b.velocities)
                    .flat_map(|p| p.to_array())
                    .map(|x| x.to_bits() as u64),
            );
            v.extend(
                sim.images()
                    .unwrap()
                    .unwrap()
                    .iter()
                    .flatten()
                    .map(|&k| k as u32 as u64),
            );
            v.extend([t.potential, t.virial, t.kinetic].map(f64::to_bits));
        }
        assert_eq!(sim.md_stats().unwrap().builds, 4);
        v
    }

    /// The plan's launches are deterministic (`gpu_kernels::binning`: no
    /// atomic decides an order, no sum depends on timing): two runs from
    /// one state give the same bits, on a GPU and on the software device
    /// under any schedule (the adversarial one interleaves every launch of
    /// the second run differently). On the software device, whose
    /// `rcp.approx.ftz` is the H200's, they are also the H200's, committed
    /// in `tests/data/h200/md_melt256_30.txt` (recorded by
    /// `scripts/gpu/issue24.sh`; every word matched on 2026-11-27). Formerly `softcuda_gives_the_emulators_bits_on_any_schedule`,
    /// software-device only: on a GPU `MUFU.RCP` rounds differently from
    /// the emulator's host arithmetic, so that comparison moved to the
    /// `SOFTCUDA_MUFU=ieee` test below.
    #[test]
    fn the_plan_gives_the_same_bits_on_every_run() {
        let first = melt_bits(CUDA);
        assert_eq!(first, melt_bits(CUDA));
        h200_bits::check_or_record(
            "md_melt256_30",
            "in.lj 256 atoms (fcc 4^3, T 1.44 seed 21, body 9 vy = -4), cells skin 0.3 every 10, velocity Verlet dt 0.005: after 10, 20, 30 steps positions and velocities (f32 bits), images, potential, virial, kinetic (f64 bits)",
            &first,
        );
    }

    /// With `rcp.approx.ftz` correctly rounded (`SOFTCUDA_MUFU=ieee`, what
    /// the kernels' Rust source computes on the host), the committed PTX on
    /// the software device gives the emulator's bits on any schedule,
    /// through rebuilds, images and thermo: the PTX is its source. Software
    /// device only (hence `softcuda_`).
    #[test]
    fn softcuda_gives_the_emulators_bits_with_correctly_rounded_mufu() {
        if !cuda_env::in_child(
            "cuda::softcuda_gives_the_emulators_bits_with_correctly_rounded_mufu",
            &[("SOFTCUDA_MUFU", "ieee")],
        ) {
            return;
        }
        let emulator = Backend::Emulator {
            race_detection: false,
        };
        assert_eq!(melt_bits(CUDA), melt_bits(emulator));
    }

    /// With the non-blocking stream the device asks for (cust 0.3.2 strips
    /// the flag; the software device can honour it), uploads and memsets on
    /// the legacy stream would race the kernels (issue 15, defect 1):
    /// `scripts/softcuda-mutations.sh md-legacy-uploads` checks that this
    /// catches one.
    #[test]
    fn softcuda_a_non_blocking_stream_keeps_the_md_uploads_in_order() {
        if !cuda_env::in_child(
            "cuda::softcuda_a_non_blocking_stream_keeps_the_md_uploads_in_order",
            &[("SOFTCUDA_STREAMS", "non-blocking")],
        ) {
            return;
        }
        agrees_with_the_cpu_and_the_oracle(CUDA);
        checkpoints_resume(CUDA);
    }
}
