//! NPT (Nosé–Hoover chains and the isotropic MTK barostat, issue 25 item
//! 3) on the GPU MD plan behind `Simulation`: on `Backend::Emulator`
//! (always) and, with the `cuda` feature, on `Backend::Cuda` (module
//! `cuda`, on the software CUDA device: `scripts/with-softcuda.sh cargo
//! test -p nbody-host --features cuda --test md_gpu_npt cuda::`).
//!
//! 500 atoms of in.lj's lattice (not a multiple of the kernels' block of
//! 128: the last block is partly empty) at `T = 1.44` under a target
//! pressure of 0.5 (the lattice starts at -5: the box shrinks by 3 % as it
//! melts, from 3 cells per side to 2, then grows back), run on the GPU plan and on the
//! CPU engine from the same state: box length, temperature, potential
//! energy, pressure and conserved quantity of every 20th step agree to
//! `f32` rounding; the conserved quantity stays put; two runs give the
//! same bits; a checkpoint resumes bit for bit, box and barostat with it;
//! a box squeezed below `2 (r_c + skin)` stops the run as on the CPU.

use nbody_host::md::{Ensemble, Neighbours};
use nbody_host::{Backend, Error, ForceLaw, Integrator, Simulation, ic};

/// `cells` fcc unit cells per side of in.lj's lattice (4: 256 atoms, 5: 500), the
/// melt's temperature, shifted LJ, lists rebuilt when needed, `dt = 0.005`.
fn build(e: Ensemble, cells: usize, backend: Backend) -> nbody_host::Result<Simulation> {
    let (atoms, boundary) = ic::fcc_lattice(cells, 0.8442, 1.44, 87287).unwrap();
    Simulation::builder(atoms)
        .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap())
        .boundary(boundary)
        .neighbours(Neighbours::cells(0.3))
        .integrator(Integrator::VELOCITY_VERLET)
        .ensemble(e)
        .dt(0.005)
        .backend(backend)
        .build()
}

/// `fix npt temp 1.44 1.44 0.5 iso 0.5 0.5 0.2`: the box moves measurably
/// within 200 steps.
fn npt() -> Ensemble {
    Ensemble::npt(1.44, 0.5, 0.5, 0.2)
}

/// The box length x, then `(T, PE, P, conserved)` per atom.
fn sample(sim: &Simulation) -> [f64; 5] {
    let t = sim.thermo().unwrap();
    let l = sim.params().boundary().lengths().unwrap()[0];
    [
        l,
        t.temperature,
        t.potential,
        t.pressure.unwrap(),
        t.conserved,
    ]
}

/// [`sample`] after every 20th of 200 steps.
fn trajectory(sim: &mut Simulation) -> Vec<[f64; 5]> {
    (0..10)
        .map(|_| {
            sim.step(20).unwrap();
            sample(sim)
        })
        .collect()
}

/// The GPU plan's NPT run follows the CPU engine's: the box, temperature,
/// potential energy, pressure and conserved quantity every 20 steps
/// within `2e-4` (relative to the value or 1; measured: at most `4.4e-5`.
/// The same `f64` scalar updates from the same sums: only the order of the
/// `f32` force sums differs, `1e-7` at first, grown by the chaos of the
/// melt; a missed dilation, a stale virial or a kinetic sum of the wrong
/// velocities moves them by `1e-3` or more); the box moved by more than
/// 2 % (measured: it shrinks by 3 % as the lattice melts, then grows
/// back); the conserved quantity per atom (LAMMPS's `ecouple` of `fix npt`
/// included) stays within `2e-3` of its value at step 20 (measured:
/// `5e-4`; the melt's first 20 steps under `Pdamp = 0.2` move it by
/// `1.5e-2`, the CPU's own value, which the GPU's follows).
fn follows_the_cpu(backend: Backend) {
    let mut gpu = build(npt(), 5, backend).unwrap();
    let mut cpu = build(npt(), 5, Backend::cpu()).unwrap();
    let (g0, c0) = (sample(&gpu), sample(&cpu));
    for q in 0..5 {
        assert!((g0[q] - c0[q]).abs() < 1e-5, "{g0:?} vs {c0:?}");
    }
    let (g, c) = (trajectory(&mut gpu), trajectory(&mut cpu));
    let mut worst = 0.0f64;
    for (k, (a, b)) in g.iter().zip(&c).enumerate() {
        for (q, name) in ["L", "T", "PE", "P", "conserved"].iter().enumerate() {
            let d = (a[q] - b[q]).abs() / b[q].abs().max(1.0);
            worst = worst.max(d);
            assert!(
                d < 2e-4,
                "step {}: {name} {} vs CPU {}",
                20 * (k + 1),
                a[q],
                b[q]
            );
        }
    }
    println!("NPT: largest difference from the CPU {worst:.2e}");
    let moved = g
        .iter()
        .fold(0.0f64, |m, s| m.max((s[0] / g0[0] - 1.0).abs()));
    assert!(moved > 0.02, "the box moved by {moved} at most");
    for s in &g[1..] {
        let drift = (s[4] - g[0][4]).abs();
        assert!(drift < 2e-3, "conserved {} from {}", s[4], g[0][4]);
    }
}

/// The bits of a run of `steps` steps: positions, velocities, the box and
/// the thermo sums.
fn bits(sim: &mut Simulation, steps: u64) -> Vec<u64> {
    sim.step(steps).unwrap();
    let b = sim.bodies().unwrap();
    let t = sim.thermo().unwrap();
    let mut v: Vec<u64> = b
        .positions
        .iter()
        .chain(&b.velocities)
        .flat_map(|p| p.to_array())
        .map(|x| x.to_bits() as u64)
        .collect();
    v.extend(sim.params().boundary().lengths().unwrap().map(f64::to_bits));
    v.extend([t.kinetic, t.potential, t.virial, t.conserved].map(f64::to_bits));
    v
}

/// Two runs give the same bits (fixed-order sums, no float atomics).
fn same_bits_on_every_run(backend: Backend) {
    let run = || bits(&mut build(npt(), 5, backend).unwrap(), 30);
    assert_eq!(run(), run());
}

/// A checkpoint at step 20 resumes bit for bit: the box and the
/// barostat's state travel in it (without them the resumed run would
/// restart the chains and the barostat in the first box, and differ).
fn checkpoints_resume_bit_for_bit(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("npt.ckpt");
    let mut straight = build(npt(), 5, backend).unwrap();
    straight.step(20).unwrap();
    straight.save_checkpoint(&path).unwrap();
    let mut resumed = Simulation::resume(&path)
        .unwrap()
        .backend(backend)
        .build()
        .unwrap();
    assert_eq!(resumed.params().ensemble(), npt());
    assert_eq!(
        resumed.thermo().unwrap().conserved.to_bits(),
        straight.thermo().unwrap().conserved.to_bits(),
        "the barostat's energy did not carry over"
    );
    assert_eq!(bits(&mut straight, 30), bits(&mut resumed, 30));
}

/// 256 atoms (box 6.72; the cells need `2 (2.5 + 0.3) = 5.6`) under a
/// crushing pressure: the run stops after the same step as the CPU's, with
/// the same least length, naming the box.
fn a_squeezed_box_stops_as_on_the_cpu(backend: Backend) {
    let crush = Ensemble::npt(1.0, 0.5, 500.0, 0.2);
    let stop = |backend| {
        let mut sim = build(crush, 4, backend).unwrap();
        let e = sim.step(2000).unwrap_err();
        let Error::BoxTooSmall {
            step,
            length,
            needed,
        } = e
        else {
            panic!("{backend:?}: {e}");
        };
        assert_eq!(sim.steps_done(), step);
        assert!(sim.step(1).is_err());
        (step, length, needed, e.to_string())
    };
    let (g, c) = (stop(backend), stop(Backend::cpu()));
    assert_eq!((g.0, g.2), (c.0, c.2), "{} vs CPU {}", g.3, c.3);
    assert!(
        (g.1 - c.1).abs() < 1e-4 && g.1 < g.2,
        "{} vs CPU {}",
        g.3,
        c.3
    );
    assert!(g.3.contains(&format!("{}", g.1)), "{}", g.3);
}

mod emulator {
    use super::*;

    const EMULATOR: Backend = Backend::Emulator {
        race_detection: false,
    };

    #[test]
    fn npt_follows_the_cpu() {
        follows_the_cpu(EMULATOR);
    }

    #[test]
    fn npt_gives_the_same_bits_on_every_run() {
        same_bits_on_every_run(EMULATOR);
    }

    #[test]
    fn npt_checkpoints_resume_bit_for_bit() {
        checkpoints_resume_bit_for_bit(EMULATOR);
    }

    #[test]
    fn a_squeezed_box_stops_the_run_as_on_the_cpu() {
        a_squeezed_box_stops_as_on_the_cpu(EMULATOR);
    }

    #[test]
    fn the_race_detector_passes_the_barostats_launches() {
        let detected = Backend::Emulator {
            race_detection: true,
        };
        let [a, b] = [detected, EMULATOR].map(|k| bits(&mut build(npt(), 5, k).unwrap(), 3));
        assert_eq!(a, b);
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use super::*;

    const CUDA: Backend = Backend::Cuda { device: 0 };

    #[test]
    fn npt_follows_the_cpu() {
        follows_the_cpu(CUDA);
    }

    #[test]
    fn npt_gives_the_same_bits_on_every_run() {
        same_bits_on_every_run(CUDA);
    }

    #[test]
    fn npt_checkpoints_resume_bit_for_bit() {
        checkpoints_resume_bit_for_bit(CUDA);
    }

    #[test]
    fn a_squeezed_box_stops_the_run_as_on_the_cpu() {
        a_squeezed_box_stops_as_on_the_cpu(CUDA);
    }
}
