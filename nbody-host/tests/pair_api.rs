//! Pair potentials and atom types through the public API: the builder's
//! types and their errors, types kept through clones, additions and
//! removals, and both file formats: every style with several types
//! round-trips through checkpoints and archives, and files written before
//! the `PAIR` section (Lennard-Jones as `LJ12`, `tests/data/`) still load
//! and continue the run they hold.

use nbody_host::snapshot::{Archive, ArchiveWriter};
use nbody_host::{
    Backend, Body, Checkpoint, Error, ForceLaw, Integrator, Neighbours, PairPotential, PairStyle,
    Simulation, ic,
};

/// 256 atoms of in.lj under `force`, one in five of the last type.
fn melt(force: &ForceLaw) -> Simulation {
    let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.44, 9).unwrap();
    let types = force.as_pair().unwrap().types();
    Simulation::builder(atoms)
        .force(force.clone())
        .types(
            (0..256)
                .map(|i| if i % 5 == 4 { types - 1 } else { 0 })
                .collect(),
        )
        .boundary(boundary)
        .neighbours(Neighbours::cells(0.3).every(5))
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.005)
        .backend(Backend::cpu())
        .build()
        .unwrap()
}

/// Every style's example with three types.
fn mixtures() -> Vec<ForceLaw> {
    PairStyle::ALL
        .iter()
        .map(|&s| ForceLaw::Pair(PairPotential::example(s, 3, None, true).unwrap()))
        .collect()
}

#[test]
fn types_are_checked_before_any_work_and_travel_with_their_bodies() {
    let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.0, 1).unwrap();
    let two =
        ForceLaw::Pair(PairPotential::example(PairStyle::LennardJones, 2, None, true).unwrap());
    let builder = |types: Vec<u32>, force: ForceLaw| {
        Simulation::builder(atoms.clone())
            .force(force)
            .types(types)
            .boundary(boundary)
            .backend(Backend::cpu())
            .build()
    };
    let e = builder(vec![0; 255], two.clone()).unwrap_err();
    assert!(
        e.to_string().contains("255 atom types for 256 bodies"),
        "{e}"
    );
    let mut bad = vec![0; 256];
    bad[17] = 2;
    let e = builder(bad, two.clone()).unwrap_err();
    assert!(matches!(e, Error::InvalidParameter { .. }), "{e}");
    assert!(e.to_string().contains("atom type = 2"), "{e}");
    let e = Simulation::builder(ic::plummer(8, 1))
        .types(vec![0; 8])
        .backend(Backend::cpu())
        .build()
        .unwrap_err();
    assert!(
        e.to_string().contains("atom types pick a pair potential"),
        "{e}"
    );
    // Without types every body is of type 0.
    let plain = builder(Vec::new(), two.clone()).unwrap();
    assert_eq!(plain.types().unwrap(), vec![0; 256]);
    // Clones, additions and removals keep each body's type.
    let mut sim = melt(&two);
    let types = sim.types().unwrap();
    assert_eq!(types.iter().filter(|&&t| t == 1).count(), 51);
    sim.step(6).unwrap();
    assert_eq!(sim.try_clone().unwrap().types().unwrap(), types);
    sim.remove(4).unwrap();
    let mut want = types.clone();
    want.remove(4);
    assert_eq!(sim.types().unwrap(), want);
    // In the octahedral hole at the first cell's centre (a / 2 = 0.84 each
    // way), not on top of a lattice atom (that run explodes: Error::Exploded).
    sim.add(Body::new(1.0, [0.84, 0.84, 0.84], [0.0; 3]))
        .unwrap();
    want.push(0);
    assert_eq!(sim.types().unwrap(), want);
    sim.step(3).unwrap();
}

#[test]
fn every_style_with_several_types_round_trips_through_both_file_formats() {
    let dir = tempfile::tempdir().unwrap();
    for force in mixtures() {
        let mut sim = melt(&force);
        sim.step(7).unwrap();
        let ckpt = dir.path().join("m.ckpt");
        sim.save_checkpoint(&ckpt).unwrap();
        let (c, md) = Checkpoint::load_with_md(&ckpt).unwrap();
        assert_eq!(c.params.force(), &force);
        assert_eq!(md.unwrap().types, sim.types().unwrap());
        let arc = dir.path().join("m.nbar");
        let mut w = ArchiveWriter::create(&arc).unwrap();
        w.append(&sim).unwrap();
        let record = Archive::open(&arc).unwrap().get(0).unwrap();
        assert_eq!(record.params.force(), &force);
        assert_eq!(record.md.as_ref().unwrap().types, sim.types().unwrap());
        // Both continue the run: bit for bit from the checkpoint (it holds
        // the lists' origin), and the archive's too.
        let mut resumed = Simulation::resume(&ckpt)
            .unwrap()
            .backend(Backend::cpu())
            .build()
            .unwrap();
        let mut again = record.builder().backend(Backend::cpu()).build().unwrap();
        sim.step(5).unwrap();
        resumed.step(5).unwrap();
        again.step(5).unwrap();
        assert_eq!(resumed.state().unwrap(), sim.state().unwrap(), "{force}");
        assert_eq!(again.state().unwrap(), sim.state().unwrap(), "{force}");
    }
}

/// `tests/data/lj-v4.ckpt` (a version 4 checkpoint at step 7) and
/// `tests/data/lj-v2.nbar` (a version 2 archive, records at steps 7 and
/// 10) were written by the build before the `PAIR` section (main at
/// 4e1249b), from `ic::fcc_lattice(3, 0.8442, 1.44, 7)` under
/// `ForceLaw::lennard_jones(1.0, 1.0, 1.2, true)`, `Neighbours::cells(0.2)
/// .every(5)`, velocity Verlet, `dt = 0.005`, on the CPU (AVX-512): their
/// Lennard-Jones is an `LJ12` section. This build reads both, and the run
/// resumed from the checkpoint reaches the archive's step-10 state (to the
/// rounding of another instruction set, where this CPU differs).
#[test]
fn files_from_before_the_pair_section_still_load_and_continue() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let want = ForceLaw::lennard_jones(1.0, 1.0, 1.2, true).unwrap();
    let (c, md) = Checkpoint::load_with_md(data.join("lj-v4.ckpt")).unwrap();
    assert_eq!(c.params.force(), &want);
    assert_eq!(c.state.step, 7);
    assert!(md.unwrap().has_neighbour_origin());
    let archive = Archive::open(data.join("lj-v2.nbar")).unwrap();
    assert_eq!(archive.len(), 2);
    let at10 = archive.get(1).unwrap();
    assert_eq!(at10.params.force(), &want);
    assert_eq!(at10.state.step, 10);
    let mut sim = Simulation::resume(data.join("lj-v4.ckpt"))
        .unwrap()
        .backend(Backend::cpu())
        .build()
        .unwrap();
    sim.step(3).unwrap();
    let got = sim.state().unwrap();
    let l = at10.params.boundary().lengths().unwrap()[0] as f32;
    for (a, b) in got
        .bodies
        .positions
        .iter()
        .zip(&at10.state.bodies.positions)
    {
        let d = *a - *b;
        let d = d - (d / l).round() * l;
        assert!(d.abs().max_element() < 1e-5, "{a} vs {b}");
    }
}
