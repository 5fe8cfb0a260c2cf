//! Pair styles against LAMMPS on the same state: Morse (one atom type, and
//! a two-type mixture, shifted), a two-type Lennard-Jones mixture
//! (unshifted), and with two types each: `lj/smooth/linear` (1-2 mixed),
//! WCA (`lj/cut` at `2^(1/6)`, shifted), `yukawa`, `soft` (1-2 mixed),
//! `born`, `buck` (shifted) and `table linear 1000` (a file of 400 points,
//! one cutoff per pair); those cases hold LAMMPS's commands as text, which
//! `PairSpec` reads (`scripts/peers/lammps_pair_cases.sh` makes them).
//! `tests/data/lammps/*.json` holds each case and LAMMPS's
//! `run 0` on it (total potential energy, virial, pressure, the force on
//! every atom), made by `scripts/peers/lammps_pair.py` from the `f32`
//! states beside them; `scripts/ci-lammps.sh` reruns LAMMPS and fails unless
//! it gives the committed numbers again.
//!
//! LAMMPS computes in `f64` from the very `f32` positions, so it stands
//! where the `f64` oracle does: ours must be within the bounds
//! `tests/md_oracle.rs` derives for the `f32` evaluation (`common::pair_bounds`),
//! on the CPU (every instruction set, cell lists and all pairs), the
//! emulator and (feature `cuda`, `scripts/with-softcuda.sh`) the software
//! CUDA device. The oracle itself (the law's `f64` reference in
//! `gpu-kernels/src/pair/`) must agree with LAMMPS to `1e-10`: the same
//! formula, the same shift.

mod common;

use common::pair_bounds;
use nbody_host::oracle::{Pair64, System64};
use nbody_host::{
    Backend, Bodies, Boundary, CpuTuning, ForceLaw, Integrator, Isa, Neighbours, PairPotential,
    PairStyle, Simulation, pair::PairSpec,
};
use serde_json::Value;

/// One case: the potential, the bodies and their types (from 0), the box,
/// and LAMMPS's results.
struct Case {
    name: String,
    force: ForceLaw,
    bodies: Bodies,
    types: Vec<u32>,
    boundary: Boundary,
    pe: f64,
    virial: f64,
    press: f64,
    forces: Vec<[f64; 3]>,
}

fn data() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lammps")
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn triples(v: &Value) -> Vec<[f64; 3]> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let p = floats(p);
            [p[0], p[1], p[2]]
        })
        .collect()
}

fn load(name: &str) -> Case {
    let read = |f: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(data().join(f)).unwrap()).unwrap()
    };
    let case = read(name);
    let state = read(case["state"].as_str().unwrap());
    let ntypes = state["types"].as_u64().unwrap() as u32;
    let potential = match case.get("commands") {
        // LAMMPS's own commands, read by `PairSpec` as the `md` example does.
        Some(cmds) => {
            let words = |v: &Value| -> Vec<String> {
                v.as_str()
                    .unwrap()
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect()
            };
            let mut spec = PairSpec::parse_lammps(&words(&cmds["pair_style"]))
                .unwrap()
                .table_dir(data());
            for c in cmds["pair_coeff"].as_array().unwrap() {
                spec.pair_coeff(&words(c)).unwrap();
            }
            for m in cmds["pair_modify"].as_array().unwrap() {
                spec.pair_modify(&words(m)).unwrap();
            }
            spec.build(ntypes).unwrap()
        }
        None => {
            let style = PairStyle::from_name(case["style"].as_str().unwrap()).unwrap();
            let mut b =
                PairPotential::builder(style, ntypes).shift(case["shift"].as_bool().unwrap());
            for c in case["coeffs"].as_array().unwrap() {
                let c = floats(c);
                let (i, j) = (c[0] as u32 - 1, c[1] as u32 - 1);
                b = b.coeff(i, j, &c[2..c.len() - 1], c[c.len() - 1]);
            }
            b.build().unwrap()
        }
    };
    // The state's f32 values are stored as their bits.
    let bits = |v: &Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect()
    };
    let vecs = |v: &Value| -> Vec<[f32; 3]> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let b = bits(p);
                [0, 1, 2].map(|k| f32::from_bits(b[k]))
            })
            .collect()
    };
    let masses: Vec<f32> = bits(&state["masses_f32_bits"])
        .into_iter()
        .map(f32::from_bits)
        .collect();
    let bodies = Bodies::from_arrays(
        &vecs(&state["positions_f32_bits"]),
        &vecs(&state["velocities_f32_bits"]),
        &masses,
    )
    .unwrap();
    let types = floats(&state["atom_types"])
        .iter()
        .map(|&t| t as u32 - 1)
        .collect();
    let lammps = &case["lammps"];
    Case {
        name: name.to_owned(),
        force: ForceLaw::Pair(potential),
        bodies,
        types,
        boundary: Boundary::cubic(state["box"].as_f64().unwrap()),
        pe: lammps["pe"].as_f64().unwrap(),
        virial: lammps["virial"].as_f64().unwrap(),
        press: lammps["press"].as_f64().unwrap(),
        forces: triples(&lammps["forces"]),
    }
}

fn cases() -> Vec<Case> {
    [
        "morse.json",
        "morse-mixture.json",
        "lj-mixture.json",
        "lj-smooth-linear.json",
        "wca.json",
        "yukawa.json",
        "soft.json",
        "born.json",
        "buck.json",
        "table.json",
    ]
    .map(load)
    .into()
}

fn build(case: &Case, neighbours: Neighbours, backend: Backend) -> Simulation {
    Simulation::builder(case.bodies.clone())
        .force(case.force.clone())
        .types(case.types.clone())
        .boundary(case.boundary)
        .neighbours(neighbours)
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.005)
        .backend(backend)
        .build()
        .unwrap()
}

/// `sim` (at the case's state) against LAMMPS: forces, energy, virial and
/// pressure within the `f32` bounds.
fn check(case: &Case, sim: &Simulation, what: &str) {
    let what = format!("{}: {what}", case.name);
    let sys = System64::from_bodies(&case.bodies);
    let o = Pair64::new(case.force.as_pair().unwrap(), &case.boundary);
    let b = pair_bounds(&sys, &case.types, &o);
    let (mut worst, mut largest) = (0.0f64, 0.0f64);
    for (i, a) in sim.accelerations().unwrap().iter().enumerate() {
        let m = sys.mass[i];
        let want = case.forces[i];
        let err = ((a.x as f64 * m - want[0]).powi(2)
            + (a.y as f64 * m - want[1]).powi(2)
            + (a.z as f64 * m - want[2]).powi(2))
        .sqrt();
        assert!(
            err <= b.acc[i] * m,
            "{what}: atom {}: force {:?} vs LAMMPS {want:?}: {err:e} > {:e}",
            i + 1,
            [a.x as f64 * m, a.y as f64 * m, a.z as f64 * m],
            b.acc[i] * m
        );
        worst = worst.max(err / (b.acc[i] * m));
        largest = largest.max(err / want.iter().fold(0.0f64, |s, x| s.max(x.abs())));
    }
    let t = sim.thermo().unwrap();
    let n = case.bodies.len() as f64;
    let volume = case.boundary.volume().unwrap();
    let du = (t.potential * n - case.pe).abs();
    assert!(
        du <= b.potential,
        "{what}: pe {} vs LAMMPS {}: {du:e}",
        t.potential * n,
        case.pe
    );
    let dw = (t.virial - case.virial).abs();
    assert!(
        dw <= b.virial,
        "{what}: virial {} vs LAMMPS {}: {dw:e}",
        t.virial,
        case.virial
    );
    let p = t.pressure.unwrap();
    let dp = (p - case.press).abs();
    let p_bound = b.virial / (3.0 * volume) + 1e-12 * case.press.abs();
    assert!(
        dp <= p_bound,
        "{what}: press {p} vs LAMMPS {}: {dp:e} > {p_bound:e}",
        case.press
    );
    eprintln!(
        "{what}: forces within {:.2}% of their bounds (largest error {largest:.1e} of the \
         atom's largest component); pe {:.1e}, virial {:.1e}, press {:.1e} relative",
        100.0 * worst,
        du / case.pe.abs(),
        dw / case.virial.abs(),
        dp / case.press.abs()
    );
}

#[test]
fn the_oracle_is_lammps_to_1e_10() {
    for case in cases() {
        let sys = System64::from_bodies(&case.bodies);
        let o = Pair64::new(case.force.as_pair().unwrap(), &case.boundary);
        let forces = o.forces(&sys.pos, &case.types);
        let scale = case
            .forces
            .iter()
            .flatten()
            .fold(0.0f64, |m, x| m.max(x.abs()));
        for (i, (f, want)) in forces.iter().zip(&case.forces).enumerate() {
            for k in 0..3 {
                assert!(
                    (f[k] - want[k]).abs() <= 1e-10 * scale,
                    "{}: atom {}: {f:?} vs {want:?}",
                    case.name,
                    i + 1
                );
            }
        }
        let (u, w) = o.energy_virial(&sys.pos, &case.types);
        assert!(
            (u - case.pe).abs() <= 1e-10 * case.pe.abs(),
            "{}: {u} vs {}",
            case.name,
            case.pe
        );
        assert!(
            (w - case.virial).abs() <= 1e-10 * case.virial.abs(),
            "{}: {w} vs {}",
            case.name,
            case.virial
        );
        let t = o.thermo(&sys, &case.types, 0);
        let p = t.pressure.unwrap();
        assert!(
            (p - case.press).abs() <= 1e-10 * case.press.abs(),
            "{}: P {p} vs {}",
            case.name,
            case.press
        );
    }
}

#[test]
fn the_cpu_is_lammps_to_f32_rounding_on_every_instruction_set() {
    for case in cases() {
        for isa in Isa::available() {
            for neighbours in [Neighbours::cells(0.3), Neighbours::AllPairs] {
                let tuning = CpuTuning {
                    isa: Some(isa),
                    ..CpuTuning::default()
                };
                let sim = build(&case, neighbours, Backend::Cpu(tuning));
                check(&case, &sim, &format!("cpu {isa}, {}", neighbours.name()));
            }
        }
    }
}

#[test]
fn the_emulator_is_lammps_to_f32_rounding() {
    for case in cases() {
        let sim = build(&case, Neighbours::cells(0.3), Backend::emulator());
        check(&case, &sim, "emulator");
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use super::*;

    /// The committed PTX on the software CUDA device
    /// (`scripts/with-softcuda.sh`).
    #[test]
    fn the_cuda_backend_is_lammps_to_f32_rounding() {
        for case in cases() {
            let sim = build(&case, Neighbours::cells(0.3), Backend::Cuda { device: 0 });
            check(&case, &sim, "cuda");
        }
    }
}
