//! Stable body ids (issue 22, usability; REBOUND's hashes): removing a body
//! renumbers the indices of the bodies after it but not their ids, added
//! bodies get new ids, and the ids survive clones, checkpoints (old files:
//! `0..N`) and archives.

use nbody_host::snapshot::{Archive, ArchiveWriter};
use nbody_host::{Backend, Bodies, Body, Error, ForceLaw, Simulation, ic};

mod common;
use common::bits;

fn sim(n: usize) -> Simulation {
    Simulation::builder(ic::plummer(n, 3))
        .dt(0.01)
        .backend(Backend::cpu())
        .build()
        .unwrap()
}

#[test]
fn ids_follow_the_bodies_through_removals_and_additions() {
    let mut s = sim(6);
    assert_eq!(s.ids(), [0, 1, 2, 3, 4, 5]);
    let x4 = s.positions().unwrap()[4];
    s.remove(1).unwrap();
    assert_eq!(s.ids(), [0, 2, 3, 4, 5]);
    // Body 4 is at index 3 now, and still id 4.
    assert_eq!(s.index_of(4), Some(3));
    assert_eq!(s.positions().unwrap()[3], x4);
    s.add(Body::new(1e-3, [3.0, 0.0, 0.0], [0.0; 3])).unwrap();
    let more: Bodies = (0..2)
        .map(|k| Body::new(1e-3, [4.0 + k as f32, 0.0, 0.0], [0.0; 3]))
        .collect();
    s.extend(&more).unwrap();
    assert_eq!(s.ids(), [0, 2, 3, 4, 5, 6, 7, 8]);
    let removed = s.remove_by_id(6).unwrap();
    assert_eq!(removed.position.x, 3.0);
    assert_eq!(s.ids(), [0, 2, 3, 4, 5, 7, 8]);
    assert!(matches!(s.remove_by_id(6), Err(Error::NoSuchId { id: 6 })));
    assert_eq!(s.index_of(1), None);
    // Removing the highest id does not hand it out again.
    s.remove_by_id(8).unwrap();
    s.add(Body::new(1e-3, [5.0, 1.0, 0.0], [0.0; 3])).unwrap();
    assert_eq!(s.ids().last(), Some(&9));
    // A failed edit changes nothing.
    assert!(s.add(Body::new(-1.0, [0.0; 3], [0.0; 3])).is_err());
    assert_eq!(s.ids(), [0, 2, 3, 4, 5, 7, 9]);
    let clone = s.try_clone().unwrap();
    assert_eq!(clone.ids(), s.ids());
    assert_eq!(s.state().unwrap().ids, s.ids());
}

#[test]
fn the_builder_takes_ids_and_checks_them() {
    let b = Simulation::builder(ic::plummer(3, 1)).backend(Backend::cpu());
    assert_eq!(
        b.clone().ids(vec![10, 20, 30]).build().unwrap().ids(),
        [10, 20, 30]
    );
    let e = b.clone().ids(vec![1, 2]).build().unwrap_err();
    assert!(e.to_string().contains("2 ids for 3 bodies"), "{e}");
    let e = b.ids(vec![1, 2, 1]).build().unwrap_err();
    assert!(e.to_string().contains("id 1"), "{e}");
}

#[test]
fn ids_survive_checkpoints_and_archives_and_old_files_get_0_to_n() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    // Default ids are not written: such files read as every earlier version's.
    let mut plain = sim(5);
    plain.save_checkpoint(p("plain.ckpt")).unwrap();
    let bytes = std::fs::read(p("plain.ckpt")).unwrap();
    assert!(!bytes.windows(4).any(|w| w == b"IDS8"));
    let resumed = Simulation::resume(p("plain.ckpt"))
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(resumed.ids(), [0, 1, 2, 3, 4]);
    plain.step(1).unwrap();

    let mut s = sim(5);
    s.remove(0).unwrap();
    s.step(3).unwrap();
    s.save_checkpoint(p("run.ckpt")).unwrap();
    let mut archive = ArchiveWriter::create(p("run.nbar")).unwrap();
    archive.append(&s).unwrap();
    s.remove_by_id(2).unwrap();
    s.step(2).unwrap();
    archive.append(&s).unwrap();
    drop(archive);

    let mut resumed = Simulation::resume(p("run.ckpt"))
        .unwrap()
        .backend(Backend::cpu())
        .build()
        .unwrap();
    assert_eq!(resumed.ids(), [1, 2, 3, 4]);
    resumed.remove_by_id(2).unwrap();
    resumed.step(2).unwrap();
    assert_eq!(resumed.ids(), s.ids());
    assert_eq!(bits(resumed.bodies().unwrap()), bits(s.bodies().unwrap()));

    let archive = Archive::open(p("run.nbar")).unwrap();
    assert_eq!(archive.get(0).unwrap().state.ids, [1, 2, 3, 4]);
    let last = archive.get(1).unwrap();
    assert_eq!(last.state.ids, [1, 3, 4]);
    let again = last.builder().backend(Backend::cpu()).build().unwrap();
    assert_eq!(again.ids(), [1, 3, 4]);
}

#[test]
fn a_short_range_run_keeps_ids_with_its_images() {
    let (atoms, boundary) = ic::fcc_lattice(3, 0.8442, 1.44, 1).unwrap();
    let mut s = Simulation::builder(atoms)
        .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, false).unwrap())
        .boundary(boundary)
        .dt(0.005)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    s.step(10).unwrap();
    let images = s.images().unwrap().unwrap();
    s.remove_by_id(50).unwrap();
    assert_eq!(s.ids().len(), 107);
    assert_eq!(s.index_of(51), Some(50));
    assert_eq!(s.images().unwrap().unwrap()[50], images[51]);
}
