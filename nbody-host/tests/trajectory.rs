//! The trajectory writers (`nbody_host::trajectory`), read back by parsers
//! written here from the formats' specifications: every frame's positions
//! (wrapped, or unwrapped with the image counters), box, types and
//! velocities exactly; DCD's header counts after every append; a failed
//! append leaves the frames before it intact. MDAnalysis reads the same
//! files in `trajectory_peer.rs` (scripts/ci-trajectory.sh).

use std::path::Path;

use nbody_host::trajectory::{Format, Frame, TrajectoryWriter, WriterOptions};
use nbody_host::{
    Backend, Error, ForceLaw, Integrator, Neighbours, PairPotential, PairStyle, Simulation, ic,
};

/// Three frames of two atom types in an orthorhombic box that changes from
/// frame to frame (as NPT's does), with atoms across the boundaries.
fn frames() -> Vec<Frame> {
    (0..3)
        .map(|k| {
            let s = 1.0 + 0.01 * k as f64;
            let lengths = [
                (7.5f32 * s as f32) as f64,
                (9.25f32 * s as f32) as f64,
                (11.0f32 * s as f32) as f64,
            ];
            let n = 37;
            let positions = (0..n)
                .map(|i| {
                    std::array::from_fn(|a| {
                        let x = ((i * 7 + a * 3 + k) % 19) as f64 / 19.0 * lengths[a];
                        x as f32
                    })
                })
                .collect();
            let images = (0..n)
                .map(|i| [(i as i32 % 3) - 1, k as i32 - (i as i32 % 2), 2 * k as i32])
                .collect();
            let velocities = (0..n)
                .map(|i| [0.1 * i as f32, -0.25, 1.0 / (1.0 + i as f32)])
                .collect();
            Frame {
                step: 100 * k as u64,
                time: 0.5 * k as f64,
                lengths,
                positions,
                images,
                velocities,
                types: (0..n).map(|i| (i % 5 == 4) as u32).collect(),
            }
        })
        .collect()
}

fn expected_position(f: &Frame, i: usize, unwrapped: bool) -> [f32; 3] {
    if unwrapped {
        std::array::from_fn(|a| {
            (f.positions[i][a] as f64 + f.images[i][a] as f64 * f.lengths[a]) as f32
        })
    } else {
        f.positions[i]
    }
}

fn write(path: &Path, options: WriterOptions, frames: &[Frame]) -> TrajectoryWriter {
    let mut w = TrajectoryWriter::create(path, Format::from_path(path).unwrap(), options).unwrap();
    for f in frames {
        w.append(f).unwrap();
    }
    w
}

/// A DCD file, parsed from its Fortran records.
struct Dcd {
    nset: u32,
    istart: u32,
    nsavc: u32,
    nstep: u32,
    delta: f32,
    unit_cell: u32,
    atoms: usize,
    /// Per frame: the unit cell and the positions.
    frames: Vec<([f64; 6], Vec<[f32; 3]>)>,
}

/// Fortran records, one after the other.
struct Records {
    bytes: Vec<u8>,
    at: usize,
}

impl Records {
    fn next(&mut self) -> Vec<u8> {
        let at = self.at;
        let word = |k: usize| u32::from_le_bytes(self.bytes[k..k + 4].try_into().unwrap()) as usize;
        let len = word(at);
        assert_eq!(
            len,
            word(at + 4 + len),
            "a record's lengths differ at byte {at}"
        );
        self.at += 8 + len;
        self.bytes[at + 4..at + 4 + len].to_vec()
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }
}

fn read_dcd(path: &Path) -> Dcd {
    let mut records = Records {
        bytes: std::fs::read(path).unwrap(),
        at: 0,
    };
    let u32_at = |b: &[u8], k: usize| u32::from_le_bytes(b[k..k + 4].try_into().unwrap());
    let head = records.next();
    assert_eq!((head.len(), &head[..4]), (84, &b"CORD"[..]));
    assert_eq!(u32_at(&head, 80), 24, "CHARMM version");
    let titles = records.next();
    assert_eq!((titles.len(), u32_at(&titles, 0)), (164, 2));
    let atoms = records.next();
    let n = u32_at(&atoms, 0) as usize;
    let mut frames = Vec::new();
    while !records.done() {
        let cell = records.next();
        assert_eq!(cell.len(), 48);
        let cell: [f64; 6] =
            std::array::from_fn(|k| f64::from_le_bytes(cell[8 * k..8 * k + 8].try_into().unwrap()));
        let axes: Vec<Vec<f32>> = (0..3)
            .map(|_| {
                let b = records.next();
                assert_eq!(b.len(), 4 * n);
                b.chunks(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect()
            })
            .collect();
        frames.push((
            cell,
            (0..n)
                .map(|i| [axes[0][i], axes[1][i], axes[2][i]])
                .collect(),
        ));
    }
    Dcd {
        nset: u32_at(&head, 4),
        istart: u32_at(&head, 8),
        nsavc: u32_at(&head, 12),
        nstep: u32_at(&head, 16),
        delta: f32::from_le_bytes(head[40..44].try_into().unwrap()),
        unit_cell: u32_at(&head, 44),
        atoms: n,
        frames,
    }
}

#[test]
fn dcd_holds_every_frame_with_its_box_in_lammps_s_layout() {
    let dir = tempfile::tempdir().unwrap();
    let frames = frames();
    for unwrapped in [false, true] {
        let path = dir.path().join(format!("t{unwrapped}.dcd"));
        let options = WriterOptions {
            unwrapped,
            every: 100,
            dt: 0.005,
            ..WriterOptions::default()
        };
        let mut w = TrajectoryWriter::create(&path, Format::Dcd, options).unwrap();
        for (k, f) in frames.iter().enumerate() {
            w.append(f).unwrap();
            // The header counts the frames after every append.
            let d = read_dcd(&path);
            assert_eq!((d.nset as usize, d.frames.len()), (k + 1, k + 1));
            assert_eq!(d.nstep as u64, f.step);
        }
        let d = read_dcd(&path);
        assert_eq!(
            (d.istart, d.nsavc, d.delta, d.unit_cell, d.atoms),
            (0, 100, 0.005, 1, 37)
        );
        for (f, (cell, pos)) in frames.iter().zip(&d.frames) {
            assert_eq!(
                *cell,
                [f.lengths[0], 0.0, f.lengths[1], 0.0, 0.0, f.lengths[2]]
            );
            for (i, p) in pos.iter().enumerate() {
                assert_eq!(*p, expected_position(f, i, unwrapped), "atom {i}");
            }
        }
    }
}

/// Extended XYZ frames: the comment line's fields and the atom lines.
fn read_xyz(path: &Path) -> Vec<(String, Vec<Vec<String>>)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let mut frames = Vec::new();
    while let Some(count) = lines.next() {
        let n: usize = count.trim().parse().unwrap();
        let comment = lines.next().unwrap().to_string();
        let atoms = (0..n)
            .map(|_| {
                lines
                    .next()
                    .unwrap()
                    .split_whitespace()
                    .map(str::to_string)
                    .collect()
            })
            .collect();
        frames.push((comment, atoms));
    }
    frames
}

#[test]
fn extended_xyz_has_the_lattice_the_types_and_exact_f32_positions() {
    let dir = tempfile::tempdir().unwrap();
    let frames = frames();
    for (unwrapped, velocities) in [(false, false), (true, true)] {
        let path = dir.path().join(format!("t{unwrapped}.xyz"));
        write(
            &path,
            WriterOptions {
                unwrapped,
                velocities,
                ..WriterOptions::default()
            },
            &frames,
        );
        let read = read_xyz(&path);
        assert_eq!(read.len(), 3);
        for (f, (comment, atoms)) in frames.iter().zip(&read) {
            let [lx, ly, lz] = f.lengths;
            assert!(
                comment.contains(&format!("Lattice=\"{lx} 0 0 0 {ly} 0 0 0 {lz}\"")),
                "{comment}"
            );
            let props = if velocities {
                "species:S:1:pos:R:3:vel:R:3"
            } else {
                "species:S:1:pos:R:3"
            };
            assert!(
                comment.contains(&format!("Properties={props} ")),
                "{comment}"
            );
            assert!(
                comment.contains(&format!("Step={}", f.step)) && comment.contains("pbc=\"T T T\"")
            );
            for (i, a) in atoms.iter().enumerate() {
                assert_eq!(a.len(), if velocities { 7 } else { 4 });
                assert_eq!(a[0], (f.types[i] + 1).to_string(), "LAMMPS's type numbers");
                let p: Vec<f32> = a[1..4].iter().map(|x| x.parse().unwrap()).collect();
                assert_eq!(p, expected_position(f, i, unwrapped).to_vec(), "atom {i}");
                if velocities {
                    let v: Vec<f32> = a[4..7].iter().map(|x| x.parse().unwrap()).collect();
                    assert_eq!(v, f.velocities[i].to_vec());
                }
            }
        }
    }
}

#[test]
fn the_lammps_dump_carries_wrapped_positions_and_image_counters_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let frames = frames();
    let path = dir.path().join("t.lammpstrj");
    write(
        &path,
        WriterOptions {
            velocities: true,
            ..WriterOptions::default()
        },
        &frames,
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let blocks: Vec<&str> = text.split("ITEM: TIMESTEP\n").skip(1).collect();
    assert_eq!(blocks.len(), 3);
    for (f, block) in frames.iter().zip(blocks) {
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(lines[0], f.step.to_string());
        assert_eq!(
            (lines[1], lines[2]),
            ("ITEM: NUMBER OF ATOMS", &*f.len().to_string())
        );
        assert_eq!(lines[3], "ITEM: BOX BOUNDS pp pp pp");
        for a in 0..3 {
            assert_eq!(lines[4 + a], format!("0 {}", f.lengths[a]));
        }
        assert_eq!(lines[7], "ITEM: ATOMS id type x y z ix iy iz vx vy vz");
        for (i, line) in lines[8..].iter().enumerate() {
            let w: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(
                (w[0], w[1]),
                (&*(i + 1).to_string(), &*(f.types[i] + 1).to_string())
            );
            let p: Vec<f32> = w[2..5].iter().map(|x| x.parse().unwrap()).collect();
            let m: Vec<i32> = w[5..8].iter().map(|x| x.parse().unwrap()).collect();
            let v: Vec<f32> = w[8..11].iter().map(|x| x.parse().unwrap()).collect();
            assert_eq!(
                (p, m, v),
                (
                    f.positions[i].to_vec(),
                    f.images[i].to_vec(),
                    f.velocities[i].to_vec()
                )
            );
        }
    }
}

#[test]
fn a_refused_frame_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let frames = frames();
    for name in ["t.dcd", "t.xyz", "t.lammpstrj"] {
        let path = dir.path().join(name);
        let mut w = write(&path, WriterOptions::default(), &frames[..2]);
        let before = std::fs::read(&path).unwrap();
        // A step that does not increase, a non-finite position, a vector
        // of the wrong length, a DCD frame of another N.
        let mut bad = frames[2].clone();
        bad.step = frames[1].step;
        assert!(
            w.append(&bad)
                .unwrap_err()
                .to_string()
                .contains("cannot append step 100 after step 100")
        );
        let mut bad = frames[2].clone();
        bad.positions[3][1] = f32::NAN;
        assert!(matches!(
            w.append(&bad),
            Err(Error::NonFiniteInput { index: 3, .. })
        ));
        let mut bad = frames[2].clone();
        bad.types.pop();
        assert!(w.append(&bad).unwrap_err().to_string().contains("36 types"));
        if name.ends_with("dcd") {
            let mut bad = frames[2].clone();
            for v in [&mut bad.positions, &mut bad.velocities] {
                v.pop();
            }
            bad.images.pop();
            bad.types.pop();
            assert!(
                w.append(&bad)
                    .unwrap_err()
                    .to_string()
                    .contains("holds 37 atoms per frame")
            );
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "{name}");
        assert_eq!(w.frames(), 2);
        // And the next good frame goes on from there.
        w.append(&frames[2]).unwrap();
        assert_eq!(w.frames(), 3);
    }
    let dcd = read_dcd(&dir.path().join("t.dcd"));
    assert_eq!((dcd.nset, dcd.frames.len()), (3, 3));
}

#[test]
fn formats_follow_the_file_name_and_bad_requests_are_errors() {
    assert_eq!(Format::from_path("a/run.XYZ").unwrap(), Format::Xyz);
    assert_eq!(Format::from_path("run.dcd").unwrap(), Format::Dcd);
    assert_eq!(
        Format::from_path("run.lammpstrj").unwrap(),
        Format::LammpsDump
    );
    let e = Format::from_path("run.trr").unwrap_err().to_string();
    assert!(e.contains("run.trr") && e.contains(".dcd"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let velocities = WriterOptions {
        velocities: true,
        ..WriterOptions::default()
    };
    let e =
        TrajectoryWriter::create(dir.path().join("v.dcd"), Format::Dcd, velocities).unwrap_err();
    assert!(e.to_string().contains("positions only"), "{e}");
    // A directory is not a trajectory file.
    assert!(matches!(
        TrajectoryWriter::create(dir.path(), Format::Xyz, WriterOptions::default()),
        Err(Error::Io { .. })
    ));
    // Open space has no box.
    let sim = Simulation::builder(ic::plummer(8, 1))
        .backend(Backend::cpu())
        .build()
        .unwrap();
    assert!(
        Frame::of(&sim)
            .unwrap_err()
            .to_string()
            .contains("periodic box")
    );
}

#[test]
fn a_simulation_s_frames_unwrap_with_its_image_counters() {
    let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 3.0, 7).unwrap();
    let mut sim = Simulation::builder(atoms)
        .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap())
        .boundary(boundary)
        .neighbours(Neighbours::cells(0.3))
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.005)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let first = Frame::of(&sim).unwrap();
    sim.step(400).unwrap();
    let f = Frame::of(&sim).unwrap();
    assert_eq!((f.step, f.len()), (400, 256));
    assert!(
        f.images.iter().any(|m| m != &[0; 3]),
        "at T = 3 some atom crossed a boundary in 400 steps"
    );
    let l = boundary.lengths().unwrap();
    for i in 0..f.len() {
        let u = f.unwrapped(i);
        for a in 0..3 {
            assert!((0.0..l[a] as f32).contains(&f.positions[i][a]));
            // An atom moves far less than a box length in 400 steps: the
            // unwrapped path is continuous, the wrapped one jumps.
            assert!(
                (u[a] - first.unwrapped(i)[a]).abs() < 0.5 * l[a],
                "atom {i} axis {a}"
            );
        }
    }
}

#[test]
fn the_gpu_plan_s_frames_on_the_emulator_match_the_cpu_s() {
    // The MD plan keeps atoms in cell order on the device: a frame is still
    // in the user's order, with the same image counters.
    let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 3.0, 7).unwrap();
    let two_types = PairPotential::builder(PairStyle::LennardJones, 2)
        .coeff(0, 0, &[1.0, 1.0], 2.5)
        .coeff(0, 1, &[1.2, 0.9], 2.5)
        .coeff(1, 1, &[0.8, 1.1], 2.5)
        .shift(true)
        .build()
        .unwrap();
    let frame_after = |backend: Backend| {
        let mut sim = Simulation::builder(atoms.clone())
            .force(ForceLaw::Pair(two_types.clone()))
            .types((0..256).map(|i| u32::from(i % 5 == 4)).collect())
            .boundary(boundary)
            .neighbours(Neighbours::cells(0.3))
            .integrator(Integrator::VELOCITY_VERLET)
            .dt(0.005)
            .backend(backend)
            .build()
            .unwrap();
        sim.step(60).unwrap();
        Frame::of(&sim).unwrap()
    };
    let (cpu, emulated) = (
        frame_after(Backend::cpu()),
        frame_after(Backend::emulator()),
    );
    assert_eq!((emulated.step, emulated.lengths), (cpu.step, cpu.lengths));
    assert_eq!(
        (&emulated.images, &emulated.types),
        (&cpu.images, &cpu.types)
    );
    assert!(cpu.images.iter().any(|m| m != &[0; 3]));
    for (a, b) in emulated.positions.iter().zip(&cpu.positions) {
        for k in 0..3 {
            assert!((a[k] - b[k]).abs() < 1e-4, "{a:?} vs {b:?}");
        }
    }
}
