//! The short-range (Lennard-Jones) side of the public API: the builder's
//! combinations and their errors, image counters, checkpoints and archives
//! that carry the box, the image counters and the neighbour settings (and
//! resume bit-identically), files of the previous formats, clones and added or removed bodies. The GPU
//! backends' Lennard-Jones runs are `tests/md_gpu.rs`.

use nbody_host::md::{CellList, Lists, Rebuild};
use nbody_host::snapshot::{Archive, ArchiveWriter};
use nbody_host::{
    Backend, Bodies, Body, Boundary, Checkpoint, Error, ForceLaw, Integrator, Neighbours,
    Simulation, ic,
};

mod common;
use common::bits;

fn lj() -> ForceLaw {
    ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap()
}

/// 256 atoms of in.lj (4^3 unit cells) with `neighbours`.
fn melt(neighbours: Neighbours) -> Simulation {
    let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.44, 9).unwrap();
    Simulation::builder(atoms)
        .force(lj())
        .boundary(boundary)
        .neighbours(neighbours)
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.005)
        .backend(Backend::cpu())
        .build()
        .unwrap()
}

/// Every enumeration whose results must continue bit-identically.
fn enumerations() -> Vec<Neighbours> {
    let mut v = vec![Neighbours::AllPairs];
    for lists in [Lists::Half, Lists::Full] {
        let cells = Neighbours::Cells(CellList {
            lists,
            ..CellList::new(0.3)
        });
        v.extend([cells, cells.every(7)]);
    }
    v
}

/// Positions, velocities, images and the thermo output, as bits.
fn fingerprint(sim: &Simulation) -> Vec<u64> {
    let t = sim.thermo().unwrap();
    bits(sim.bodies().unwrap())
        .into_iter()
        .map(u64::from)
        .chain(
            sim.images()
                .unwrap()
                .unwrap()
                .iter()
                .flatten()
                .map(|&i| i as u64),
        )
        .chain([
            t.potential.to_bits(),
            t.virial.to_bits(),
            t.kinetic.to_bits(),
        ])
        .collect()
}

#[test]
fn nonsense_combinations_and_bad_values_are_clear_errors() {
    let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.0, 1).unwrap();
    let builder = || Simulation::builder(atoms.clone()).backend(Backend::cpu());
    let e = builder().boundary(boundary).build().unwrap_err();
    assert!(
        matches!(e, Error::InvalidCombination(_)) && e.to_string().contains("Ewald"),
        "{e}"
    );
    let e = builder().force(lj()).softening(0.1).build().unwrap_err();
    assert!(
        e.to_string()
            .contains("softening and G are parameters of gravity"),
        "{e}"
    );
    let e = builder()
        .force(lj())
        .boundary(Boundary::cubic(5.0))
        .neighbours(Neighbours::cells(0.3))
        .build()
        .unwrap_err();
    assert!(
        e.to_string().contains("half the shortest box length"),
        "{e}"
    );
    let e = builder()
        .force(lj())
        .boundary(Boundary::cubic(-1.0))
        .build()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParameter {
                name: "periodic box length",
                ..
            }
        ),
        "{e}"
    );
    let e = ForceLaw::lennard_jones(1.0, -2.0, 2.5, false).unwrap_err();
    assert!(e.to_string().contains("sigma = -2"), "{e}");
    let mut massless = atoms.clone();
    massless.masses[7] = 0.0;
    let e = Simulation::builder(massless)
        .force(lj())
        .boundary(boundary)
        .backend(Backend::cpu())
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("body 7: mass 0"), "{e}");
    // Gravity has no thermo output; its energy is energy().
    let gravity = Simulation::builder(ic::plummer(8, 1))
        .backend(Backend::cpu())
        .build()
        .unwrap();
    assert!(matches!(gravity.thermo(), Err(Error::Unsupported(_))));
    assert_eq!(gravity.images().unwrap(), None);
    // A force law given as gravity keeps the builder's gravity setters.
    let g = builder()
        .force(ForceLaw::gravity(2.0, 0.5).unwrap())
        .softening(0.25)
        .build()
        .unwrap();
    let gp = g.params().gravity().unwrap();
    assert_eq!((gp.g(), gp.softening()), (2.0, 0.25));
    // A pair potential's parameters have no gravity to report.
    let lj_sim = builder().force(lj()).build().unwrap();
    assert_eq!(lj_sim.params().gravity(), None);
    assert_eq!(
        Integrator::from_name("velocity-verlet"),
        Some(Integrator::Leapfrog)
    );
}

#[test]
fn image_counters_unwrap_a_trajectory_across_many_box_lengths() {
    // Two atoms far apart drifting fast along -x and +y: they cross the
    // box faces many times; x + image L is the straight line.
    let l = 6.0f32;
    let bodies = Bodies::from_arrays(
        &[[1.0, 1.0, 1.0], [4.0, 4.0, 4.0]],
        &[[-36.7, 0.0, 0.0], [0.0, 53.0, 0.0]],
        &[1.0, 2.0],
    )
    .unwrap();
    let mut sim = Simulation::builder(bodies)
        .force(lj())
        .boundary(Boundary::cubic(l as f64))
        .neighbours(Neighbours::cells(0.2))
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.01)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    sim.step(100).unwrap();
    let (p, img) = (sim.positions().unwrap(), sim.images().unwrap().unwrap());
    assert!(
        p.iter()
            .all(|p| p.min_element() >= 0.0 && p.max_element() < l)
    );
    let unwrapped = |k: usize, a: usize| p[k][a] as f64 + img[k][a] as f64 * l as f64;
    // 100 steps of 0.01: x = 1 - 36.7 = -35.7, y = 4 + 53 = 57 (the atoms
    // never come within the cutoff of each other or of an image).
    assert_eq!(img[0][0], -6);
    assert!((unwrapped(0, 0) + 35.7).abs() < 1e-3, "{}", unwrapped(0, 0));
    assert_eq!(img[1][1], 9);
    assert!((unwrapped(1, 1) - 57.0).abs() < 1e-3, "{}", unwrapped(1, 1));
}

#[test]
fn checkpoints_carry_the_box_images_and_neighbour_settings_and_resume_bit_identically() {
    let dir = tempfile::tempdir().unwrap();
    for neighbours in enumerations() {
        let path = dir.path().join("melt.ckpt");
        let mut straight = melt(neighbours);
        straight.step(23).unwrap();
        let mut first = melt(neighbours);
        first.step(11).unwrap();
        first.save_checkpoint(&path).unwrap();
        let (ckpt, md) = Checkpoint::load_with_md(&path).unwrap();
        assert_eq!(ckpt.params, *first.params(), "{neighbours:?}");
        assert_eq!(ckpt.params.neighbours(), neighbours);
        assert!(matches!(ckpt.params.boundary(), Boundary::Periodic { .. }));
        let md = md.expect("a short-range checkpoint holds its MD state");
        assert_eq!(Some(md.images.clone()), first.images().unwrap());
        assert_eq!(
            md.has_neighbour_origin(),
            neighbours != Neighbours::AllPairs
        );
        let mut resumed = Simulation::resume(&path)
            .unwrap()
            .backend(Backend::cpu())
            .build()
            .unwrap();
        resumed.step(12).unwrap();
        assert_eq!(
            fingerprint(&resumed),
            fingerprint(&straight),
            "{neighbours:?}"
        );
        assert_eq!(resumed.time(), straight.time());
    }
}

#[test]
fn version_3_checkpoints_still_load() {
    // A gravity checkpoint in this version's layout without sections is the
    // version 3 layout plus the 4-byte sections length after the f64 time
    // step (versions 4 and 5 differ only in the sections they hold):
    // rewrite it as version 3 and resume from it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.ckpt");
    let mut sim = Simulation::builder(ic::plummer(50, 3))
        .dt(0.01)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    sim.step(3).unwrap();
    sim.save_checkpoint(&path).unwrap();
    let v4 = std::fs::read(&path).unwrap();
    assert_eq!(u32::from_le_bytes(v4[8..12].try_into().unwrap()), 5);
    let name_len = v4[8 + 4 + 8 + 8 + 8 + 4 + 4 + 4 + 1 + 4 + 1] as usize;
    let dt64_end = 55 + name_len + 8;
    assert_eq!(&v4[dt64_end..dt64_end + 4], &[0; 4], "no sections");
    let mut v3 = [&v4[..dt64_end], &v4[dt64_end + 4..v4.len() - 4]].concat();
    v3[8..12].copy_from_slice(&3u32.to_le_bytes());
    let crc = crc32fast::hash(&v3);
    v3.extend_from_slice(&crc.to_le_bytes());
    let old = dir.path().join("v3.ckpt");
    std::fs::write(&old, &v3).unwrap();
    let a = Checkpoint::load(&path).unwrap();
    let b = Checkpoint::load(&old).unwrap();
    assert_eq!(a, b);
    let mut from_old = Simulation::resume(&old)
        .unwrap()
        .backend(Backend::cpu())
        .build()
        .unwrap();
    from_old.step(4).unwrap();
    sim.step(4).unwrap();
    assert_eq!(from_old.state().unwrap(), sim.state().unwrap());
}

#[test]
fn archives_carry_them_too_and_version_1_files_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("melt.nbar");
    let neighbours = Neighbours::Cells(CellList {
        rebuild: Rebuild::Every(5),
        lists: Lists::Half,
        ..CellList::new(0.3)
    });
    let mut sim = melt(neighbours);
    let mut writer = ArchiveWriter::create(&path).unwrap();
    for _ in 0..3 {
        writer.append(&sim).unwrap();
        sim.step(9).unwrap();
    }
    let archive = Archive::open(&path).unwrap();
    let record = archive.get(2).unwrap();
    assert_eq!(record.params, *sim.params());
    assert_eq!(record.params.neighbours(), neighbours);
    assert!(record.md.as_ref().unwrap().has_neighbour_origin());
    let mut again = record.builder().backend(Backend::cpu()).build().unwrap();
    again.step(9).unwrap();
    assert_eq!(fingerprint(&again), fingerprint(&sim));
    // A version 1 archive (gravity, no sections) is this layout with version 1.
    let gpath = dir.path().join("g.nbar");
    let mut g = Simulation::builder(ic::plummer(20, 1))
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let mut w = ArchiveWriter::create(&gpath).unwrap();
    w.append(&g).unwrap();
    g.step(2).unwrap();
    w.append(&g).unwrap();
    let mut bytes = std::fs::read(&gpath).unwrap();
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    let crc = crc32fast::hash(&bytes[..28]);
    bytes[28..32].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&gpath, &bytes).unwrap();
    let old = Archive::open(&gpath).unwrap();
    assert_eq!(old.get(1).unwrap().state, g.state().unwrap());
    assert_eq!(old.get(1).unwrap().md, None);
}

#[test]
fn clones_continue_bit_identically_and_added_bodies_keep_the_images() {
    for neighbours in enumerations() {
        let mut a = melt(neighbours);
        a.step(13).unwrap();
        let mut b = a.try_clone().unwrap();
        a.step(9).unwrap();
        b.step(9).unwrap();
        assert_eq!(fingerprint(&a), fingerprint(&b), "{neighbours:?}");
    }
    let mut sim = melt(Neighbours::cells(0.3));
    sim.step(40).unwrap();
    let images = sim.images().unwrap().unwrap();
    assert!(
        images.iter().any(|i| *i != [0; 3]),
        "some atom crossed a face"
    );
    // The emptiest point of the melt (of a grid of candidates, the one
    // farthest from every atom, minimum image), 15 boxes away. (An
    // octahedral hole of the starting lattice, used before, had been
    // filled by step 40: the added atom overlapped one, and the run
    // exploded unnoticed until moves of half the box were caught.)
    let l = sim.params().boundary().lengths().unwrap()[0] as f32;
    let atoms = sim.positions().unwrap().to_vec();
    let gap = |p: [f32; 3]| {
        atoms
            .iter()
            .map(|a| {
                let d = [0, 1, 2].map(|k| {
                    let d = (p[k] - a[k]).rem_euclid(l);
                    d.min(l - d)
                });
                d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
            })
            .fold(f32::INFINITY, f32::min)
    };
    let grid =
        (0..1000).map(|g| [g % 10, g / 10 % 10, g / 100].map(|k| (k as f32 + 0.5) * l / 10.0));
    let hole = grid.max_by(|a, b| gap(*a).total_cmp(&gap(*b))).unwrap();
    let far = Body::new(1.0, [hole[0] + 15.0 * l, hole[1], hole[2]], [0.0; 3]);
    sim.add(far).unwrap();
    let after = sim.images().unwrap().unwrap();
    assert_eq!(&after[..256], &images[..]);
    assert_eq!(after[256], [15, 0, 0]);
    sim.remove(3).unwrap();
    let removed = sim.images().unwrap().unwrap();
    assert_eq!(removed.len(), 256);
    assert_eq!(&removed[3..255], &images[4..256]);
    sim.step(5).unwrap();
}

/// The builder's default integrator (semi-implicit Euler) with short-range
/// forces: each step computes the forces first and drifts last, so reads
/// after a step find lists that may be stale; they are rebuilt for the read
/// (a copy), never for the run, and the accelerations are the oracle's.
#[test]
fn semi_implicit_euler_and_reads_between_rebuilds() {
    use nbody_host::oracle::{Pair64, System64};
    let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.44, 4).unwrap();
    let run = || {
        Simulation::builder(atoms.clone())
            .force(lj())
            .boundary(boundary)
            .neighbours(Neighbours::cells(0.05))
            .dt(0.005)
            .backend(Backend::cpu())
            .build()
            .unwrap()
    };
    let (mut a, mut b) = (run(), run());
    assert_eq!(a.params().integrator(), Integrator::SemiImplicitEuler);
    a.step(30).unwrap();
    let acc = a.accelerations().unwrap();
    let law = lj();
    let sys = System64::from_bodies(a.bodies().unwrap());
    let want = Pair64::new(law.as_pair().unwrap(), &boundary).forces(&sys.pos, &[]);
    for (g, w) in acc.iter().zip(&want) {
        let scale = w.iter().map(|x| x.abs()).fold(1.0, f64::max);
        assert!((g.x as f64 - w[0]).abs() < 1e-4 * scale, "{g} vs {w:?}");
    }
    // The reads changed nothing: b, never read, ends with the same bits.
    a.thermo().unwrap();
    a.step(10).unwrap();
    b.step(40).unwrap();
    assert_eq!(fingerprint(&a), fingerprint(&b));
}

/// `Rebuild::Auto` rebuilds the lists at the first force evaluation after
/// some atom has moved more than half the skin since the last build, never
/// earlier and never later. Two atoms beyond the cutoff (no forces): one
/// moves 0.0199 per step along x, through the box's face, so it is 0.199
/// (just under half the skin, 0.2) from where the lists were built after 10
/// steps and 0.2189 (just over) after 11.
#[test]
fn auto_rebuild_happens_exactly_when_an_atom_moved_half_the_skin() {
    let bodies = Bodies::from_arrays(
        &[[19.9, 2.0, 2.0], [10.0, 10.0, 10.0]],
        &[[1.99, 0.0, 0.0], [0.0; 3]],
        &[1.0, 1.0],
    )
    .unwrap();
    let mut sim = Simulation::builder(bodies)
        .force(lj())
        .boundary(Boundary::cubic(20.0))
        .neighbours(Neighbours::Cells(CellList {
            rebuild: Rebuild::Auto,
            ..CellList::new(0.4)
        }))
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.01)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let builds = |sim: &Simulation| sim.md_stats().unwrap().builds;
    let first = builds(&sim);
    for step in 1..=33u64 {
        sim.step(1).unwrap();
        assert_eq!(
            builds(&sim) - first,
            step / 11,
            "after step {step}: x = {}",
            sim.positions().unwrap()[0].x
        );
    }
    // The moving atom crossed the face (its image counter says so), and the
    // rebuilds measured its displacement through it.
    assert_eq!(sim.images().unwrap().unwrap()[0], [1, 0, 0]);
    assert_eq!(sim.md_stats().unwrap().dangerous_builds, 0);
}
