//! The `md` example's command line, run in-process (the example's source
//! compiled in as a module, as `lj_cli` does for `lj_melt`): its flags give
//! the run the library API gives (the thermo table bit for bit, against a
//! `Simulation` built here from `PairPotential::builder`, not from the
//! flags' parser), each bad input fails with its status and one line
//! before any work, a resumed run continues bit for bit, and `--dump`
//! writes the frames of the run.

#[allow(dead_code, reason = "the tests call only part of the example")]
#[path = "../../examples/md.rs"]
mod md;

use std::path::Path;

use nbody_host::md::{CellList, Ensemble, Lists, Rebuild};
use nbody_host::{
    Backend, Boundary, ForceLaw, Integrator, Neighbours, PairPotential, PairStyle, Simulation, ic,
};

struct Outcome {
    out: String,
    result: Result<(), md::Failure>,
}

fn run(args: &[&str]) -> Outcome {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let argv = std::iter::once("md").chain(args.iter().copied());
    let result = md::cli(argv, &mut out, &mut err, md::Progress::Off);
    Outcome {
        out: String::from_utf8(out).unwrap(),
        result,
    }
}

fn run_ok(args: &[&str]) -> String {
    let o = run(args);
    if let Err(f) = o.result {
        panic!("{args:?}: {}", f.line);
    }
    o.out
}

/// Fails with `code`, one line naming `what`, and nothing on stdout (no
/// work done).
#[track_caller]
fn run_err(args: &[&str], code: u8, what: &str) {
    let o = run(args);
    let f = o.result.expect_err("should fail");
    assert!(
        f.line.starts_with("error: ") && !f.line.contains('\n'),
        "{:?}",
        f.line
    );
    assert_eq!(f.code, code, "{}", f.line);
    assert!(f.line.contains(what), "{what:?} not in {:?}", f.line);
    assert!(o.out.is_empty(), "work was done: {}", o.out);
}

/// `base`'s flags and `extra`'s.
fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    [base, extra].concat()
}

/// The thermo rows as printed (six numbers each).
fn thermo_lines(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() == 6 && w.iter().all(|x| x.parse::<f64>().is_ok())
        })
        .map(str::to_string)
        .collect()
}

/// Writes an `(N, 8)` float32 `.npy` (`x y z vx vy vz m type`).
fn save_npy8(path: &Path, rows: &[[f32; 8]]) {
    let dict = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, 8), }}",
        rows.len()
    );
    let mut header = dict.into_bytes();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(&header);
    for r in rows {
        for x in r {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::write(path, bytes).unwrap();
}

/// An 80:20 two-type fcc state (every fifth atom type 2) at density 1.2,
/// T = 1: its rows and box length.
fn mixture(cells: usize) -> (Vec<[f32; 8]>, f64) {
    let (atoms, boundary) = ic::fcc_lattice(cells, 1.2, 1.0, 7).unwrap();
    let l = boundary.lengths().unwrap()[0];
    let rows = (0..atoms.len())
        .map(|i| {
            let (p, v) = (atoms.positions[i], atoms.velocities[i]);
            let t = if i % 5 == 4 { 2.0 } else { 1.0 };
            [p.x, p.y, p.z, v.x, v.y, v.z, atoms.masses[i], t]
        })
        .collect();
    (rows, l)
}

/// The Kob-Andersen coefficients as flags.
const KA: [&str; 16] = [
    "--pair-coeff",
    "1",
    "1",
    "1.0",
    "1.0",
    "--pair-coeff",
    "1",
    "2",
    "1.5",
    "0.8",
    "2.0",
    "--pair-coeff",
    "2",
    "2",
    "0.5",
    "0.88",
];

#[test]
fn flags_give_the_library_api_run_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let init = dir.path().join("ka.npy");
    let (rows, l) = mixture(4);
    save_npy8(&init, &rows);
    let (init_s, l_s) = (init.to_str().unwrap(), format!("{l}"));
    let mut args = vec![
        "--init", init_s, "--box", &l_s, "--pair", "lj", "2.5", "--shift",
    ];
    args.extend(KA);
    args.extend([
        "2.2",
        "--dt",
        "0.004",
        "--steps",
        "60",
        "--thermo",
        "20",
        "--ensemble",
        "nvt",
        "--temp-target",
        "0.8",
        "--tdamp",
        "0.4",
        "--backend",
        "cpu",
        "--quiet",
    ]);
    let out = run_ok(&args);
    let printed = thermo_lines(&out);
    assert_eq!(printed.len(), 4, "{out}");

    // The same run from the library's API.
    let potential = PairPotential::builder(PairStyle::LennardJones, 2)
        .coeff(0, 0, &[1.0, 1.0], 2.5)
        .coeff(0, 1, &[1.5, 0.8], 2.0)
        .coeff(1, 1, &[0.5, 0.88], 2.2)
        .shift(true)
        .build()
        .unwrap();
    let bodies = nbody_host::Bodies::from_arrays(
        &rows.iter().map(|r| [r[0], r[1], r[2]]).collect::<Vec<_>>(),
        &rows.iter().map(|r| [r[3], r[4], r[5]]).collect::<Vec<_>>(),
        &rows.iter().map(|r| r[6]).collect::<Vec<_>>(),
    )
    .unwrap();
    let mut sim = Simulation::builder(bodies)
        .force(ForceLaw::Pair(potential))
        .boundary(Boundary::cubic(l))
        .neighbours(Neighbours::Cells(CellList {
            rebuild: Rebuild::Auto,
            lists: Lists::Auto,
            ..CellList::new(0.3)
        }))
        .ensemble(Ensemble::nvt(0.8, 0.4))
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.004)
        .types(rows.iter().map(|r| r[7] as u32 - 1).collect())
        .backend(Backend::Cpu(Default::default()))
        .build()
        .unwrap();
    let mut ours = vec![md::thermo_row(&sim.thermo().unwrap())];
    for _ in 0..3 {
        sim.step(20).unwrap();
        ours.push(md::thermo_row(&sim.thermo().unwrap()));
    }
    assert_eq!(printed, ours);
    // The thermostat acted: not the NVE run.
    let nve = run_ok(&[&args[..args.len() - 9], &["--backend", "cpu", "--quiet"]].concat());
    assert_ne!(thermo_lines(&nve)[3], printed[3]);
}

#[test]
fn each_bad_input_is_one_line_and_its_status_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let init = dir.path().join("ka.npy");
    let (mut rows, l) = mixture(4);
    save_npy8(&init, &rows);
    let dump = dir.path().join("never.xyz");
    let (init_s, l_s, dump_s) = (
        init.to_str().unwrap(),
        format!("{l}"),
        dump.to_str().unwrap(),
    );
    let base = ["--init", init_s, "--box", &l_s, "--dump", dump_s, "--quiet"];
    // An unknown type: pair_coeff names type 3 of a two-type state.
    run_err(
        &with(
            &base,
            &["--pair", "lj", "2.5", "--pair-coeff", "1", "3", "1", "1"],
        ),
        md::exit::INPUT,
        "type 3 is beyond the 2 atom types",
    );
    // A missing coefficient with no mixing rule (morse does not mix).
    run_err(
        &with(
            &base,
            &[
                "--pair",
                "morse",
                "2.5",
                "--pair-coeff",
                "1",
                "1",
                "1",
                "2",
                "1",
                "--pair-coeff",
                "2",
                "2",
                "1",
                "2",
                "1",
            ],
        ),
        md::exit::INPUT,
        "no pair coefficients for types 1 2: pair style morse does not mix",
    );
    // A cutoff over half the box.
    let mut long = with(&base, &["--pair", "lj", "3.0"]);
    long.extend(KA);
    run_err(
        &long,
        md::exit::INPUT,
        "longer than half the shortest box length",
    );
    // A negative damping time.
    let mut nvt = with(
        &base,
        &["--ensemble", "nvt", "--temp-target", "1", "--tdamp", "-0.5"],
    );
    nvt.extend(KA);
    run_err(&nvt, md::exit::INPUT, "-0.5");
    // A table file that stops short of its cutoff.
    let table = dir.path().join("short.table");
    let mut text = String::from("# short\n\nSHORT\nN 50 R 0.8 2.0\n\n");
    for i in 1..=50 {
        let r = 0.8 + 1.2 * (i - 1) as f64 / 49.0;
        let (e, f) = (
            4.0 * (r.powi(-12) - r.powi(-6)),
            24.0 * (2.0 * r.powi(-13) - r.powi(-7)),
        );
        text += &format!("{i} {r} {e} {f}\n");
    }
    std::fs::write(&table, text).unwrap();
    let table_s = table.to_str().unwrap();
    run_err(
        &with(
            &base,
            &[
                "--pair",
                "table",
                "linear",
                "100",
                "--pair-coeff",
                "*",
                "*",
                table_s,
                "SHORT",
                "2.5",
            ],
        ),
        md::exit::INPUT,
        "2.5",
    );
    // (N, 8) types that are not integers >= 1.
    for (bad, shown) in [(1.5f32, "1.5"), (0.0, "atom type 0")] {
        rows[3][7] = bad;
        let typed = dir.path().join("bad-types.npy");
        save_npy8(&typed, &rows);
        run_err(
            &[
                "--init",
                typed.to_str().unwrap(),
                "--box",
                &l_s,
                "--dump",
                dump_s,
            ],
            md::exit::INPUT,
            shown,
        );
    }
    // --box with two lengths.
    run_err(
        &["--init", init_s, "--box", "9", "9"],
        md::exit::USAGE,
        "--box",
    );
    assert!(!dump.exists(), "a refused run wrote its dump");
}

#[test]
fn a_resumed_run_continues_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let init = dir.path().join("ka.npy");
    let (rows, l) = mixture(4);
    save_npy8(&init, &rows);
    let ckpt = dir.path().join("run.ckpt");
    let (init_s, l_s, ckpt_s) = (
        init.to_str().unwrap(),
        format!("{l}"),
        ckpt.to_str().unwrap(),
    );
    let mut args = vec!["--init", init_s, "--box", &l_s, "--pair", "lj", "2.5"];
    args.extend(KA);
    args.extend([
        "2.2",
        "--ensemble",
        "nvt",
        "--temp-target",
        "0.9",
        "--tdamp",
        "0.5",
        "--thermo",
        "20",
        "--quiet",
    ]);
    let straight = run_ok(&[&args[..], &["--steps", "60"]].concat());
    let first = run_ok(&[&args[..], &["--steps", "20", "--checkpoint", ckpt_s]].concat());
    let resumed = run_ok(&[
        "--resume", ckpt_s, "--steps", "60", "--thermo", "20", "--quiet",
    ]);
    let (straight, first, resumed) = (
        thermo_lines(&straight),
        thermo_lines(&first),
        thermo_lines(&resumed),
    );
    assert_eq!(first[..], straight[..2]);
    assert_eq!(resumed[..], straight[1..]);
}

#[test]
fn dump_holds_the_frames_of_the_run_with_their_types() {
    let dir = tempfile::tempdir().unwrap();
    let init = dir.path().join("ka.npy");
    let (rows, l) = mixture(4);
    save_npy8(&init, &rows);
    let dump = dir.path().join("run.lammpstrj");
    let save = dir.path().join("end.npy");
    let (init_s, l_s, dump_s, save_s) = (
        init.to_str().unwrap(),
        format!("{l}"),
        dump.to_str().unwrap(),
        save.to_str().unwrap(),
    );
    let mut args = vec!["--init", init_s, "--box", &l_s, "--pair", "lj", "2.5"];
    args.extend(KA);
    args.extend([
        "2.2",
        "--steps",
        "20",
        "--dump",
        dump_s,
        "--dump-every",
        "10",
        "--save",
        save_s,
        "--quiet",
    ]);
    run_ok(&args);
    let text = std::fs::read_to_string(&dump).unwrap();
    let frames: Vec<&str> = text.split("ITEM: TIMESTEP\n").skip(1).collect();
    assert_eq!(frames.len(), 3);
    let end = nbody_host::snapshot::load_npy(&save).unwrap();
    for (k, frame) in frames.iter().enumerate() {
        let lines: Vec<&str> = frame.lines().collect();
        assert_eq!(lines[0], (10 * k).to_string());
        assert_eq!(lines[2], rows.len().to_string());
        let atoms = &lines[8..];
        assert_eq!(atoms.len(), rows.len());
        for (i, a) in atoms.iter().enumerate() {
            let w: Vec<f64> = a.split_whitespace().map(|x| x.parse().unwrap()).collect();
            assert_eq!(w[0] as usize, i + 1);
            assert_eq!(w[1] as f32, rows[i][7], "type of atom {}", i + 1);
            let p = if k == 0 {
                [rows[i][0], rows[i][1], rows[i][2]]
            } else {
                end.positions[i].to_array()
            };
            if k != 1 {
                for d in 0..3 {
                    let wrapped = p[d].rem_euclid(l as f32);
                    assert!(
                        (w[2 + d] as f32 - wrapped).abs() < 1e-5,
                        "frame {k} atom {i}: {a} against {p:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn box_takes_three_lengths_for_an_orthorhombic_box() {
    let dir = tempfile::tempdir().unwrap();
    let init = dir.path().join("ka.npy");
    let (rows, l) = mixture(4);
    save_npy8(&init, &rows);
    let (lx, ly, lz) = (
        format!("{l}"),
        format!("{}", l * 1.05),
        format!("{}", l * 1.1),
    );
    let mut args = vec!["--init", init.to_str().unwrap(), "--box", &lx, &ly, &lz];
    args.extend(["--pair", "lj", "2.5", "--steps", "10", "--quiet"]);
    args.extend(KA);
    let out = run_ok(&args);
    let system = out.lines().find(|l| l.starts_with("system")).unwrap();
    assert!(
        system.contains(&format!("periodic {lx} x {ly} x {lz}")),
        "{system}"
    );
    // The same state in the cubic box is another system.
    let cubic = run_ok(&[&args[..4], &args[6..]].concat());
    assert_ne!(thermo_lines(&cubic)[0], thermo_lines(&out)[0]);
}

#[test]
fn backend_emulator_runs_the_mixture_as_the_cpu_does() {
    let dir = tempfile::tempdir().unwrap();
    let init = dir.path().join("ka.npy");
    let (rows, l) = mixture(4);
    save_npy8(&init, &rows);
    let l = format!("{l}");
    let mut args = vec!["--init", init.to_str().unwrap(), "--box", &l];
    args.extend([
        "--pair", "lj", "2.5", "--shift", "--steps", "10", "--thermo", "5",
    ]);
    args.extend(KA);
    args.extend(["--quiet", "--backend"]);
    let numbers = |backend: &str| -> Vec<Vec<f64>> {
        let out = run_ok(&[&args[..], &[backend]].concat());
        assert!(out.contains(&format!("result backend={backend} ")), "{out}");
        thermo_lines(&out)
            .iter()
            .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
            .collect()
    };
    let (cpu, emulator) = (numbers("cpu"), numbers("emulator"));
    assert_eq!(cpu.len(), 3);
    for (c, e) in cpu.iter().zip(&emulator) {
        for (a, b) in c.iter().zip(e) {
            assert!(
                (a - b).abs() <= 1e-5 * a.abs().max(1.0),
                "{c:?} against {e:?}"
            );
        }
    }
}

/// The Kob-Andersen data: scripts/peers/lammps_ka.py's state and LAMMPS's
/// thermo tables from it.
const KA_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/lammps/ka");

/// Rows of six numbers of a LAMMPS table (`#` lines skipped).
fn lammps_rows(name: &str) -> Vec<[f64; 6]> {
    std::fs::read_to_string(format!("{KA_DIR}/{name}"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let v: Vec<f64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            v.try_into().unwrap()
        })
        .collect()
}

/// `md` on the KA state with `extra` flags: its thermo rows.
fn ka_run(extra: &[&str]) -> Vec<[f64; 6]> {
    let init = format!("{KA_DIR}/ka-state.npy");
    let l = std::fs::read_to_string(format!("{KA_DIR}/ka-box.txt")).unwrap();
    let mut args = vec!["--init", &init, "--box", l.trim(), "--pair", "lj", "2.5"];
    args.extend(KA);
    args.extend(["2.2", "--shift", "--dt", "0.005", "--skin", "0.3"]);
    args.extend(extra);
    args.extend(["--thermo", "10", "--backend", "cpu", "--quiet"]);
    thermo_lines(&run_ok(&args))
        .iter()
        .map(|l| {
            let v: Vec<f64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            v.try_into().unwrap()
        })
        .collect()
}

/// Mean and standard error of the mean of column `k` over blocks of
/// `per` rows after step `after`.
fn block_mean(rows: &[[f64; 6]], k: usize, after: f64, per: usize) -> (f64, f64) {
    let sample: Vec<f64> = rows.iter().filter(|r| r[0] > after).map(|r| r[k]).collect();
    let means: Vec<f64> = sample
        .chunks_exact(per)
        .map(|c| c.iter().sum::<f64>() / per as f64)
        .collect();
    let n = means.len() as f64;
    let m = means.iter().sum::<f64>() / n;
    let var = means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

#[test]
fn kob_andersen_nve_and_nvt_agree_with_lammps() {
    // NVE, 2000 steps from LAMMPS's state.
    let lammps = lammps_rows("ka-nve.txt");
    let ours = ka_run(&["--steps", "2000"]);
    assert_eq!(ours.len(), lammps.len());
    for (k, name) in [(2, "pe"), (3, "ke"), (4, "etotal")] {
        let (o, l) = (ours[0][k], lammps[0][k]);
        eprintln!(
            "KA step 0 {name}: md {o} LAMMPS {l} (relative {:.2e})",
            (o - l) / l
        );
        assert!(
            (o - l).abs() <= 1e-5 * l.abs(),
            "step 0 {name}: {o} against {l}"
        );
    }
    let drift = |rows: &[[f64; 6]]| {
        rows.iter()
            .map(|r| (r[4] - rows[0][4]).abs())
            .fold(0.0, f64::max)
    };
    let (d_ours, d_lammps) = (drift(&ours), drift(&lammps));
    eprintln!(
        "KA NVE max |E(t) - E(0)| per atom over 2000 steps: md {d_ours:.3e} LAMMPS {d_lammps:.3e}"
    );
    assert!(
        d_ours <= 5.0 * d_lammps && d_ours >= d_lammps / 5.0,
        "drift {d_ours:.3e} against LAMMPS's {d_lammps:.3e}"
    );
    // NVT at T = 0.8: block means after 2000 steps, blocks of 1000 steps.
    let lammps = lammps_rows("ka-nvt.txt");
    let ours = ka_run(&[
        "--steps",
        "10000",
        "--ensemble",
        "nvt",
        "--temp-target",
        "0.8",
        "--tdamp",
        "0.5",
    ]);
    assert_eq!(ours.len(), lammps.len());
    for (k, name) in [(1, "temp"), (2, "pe")] {
        let (mo, so) = block_mean(&ours, k, 2000.0, 100);
        let (ml, sl) = block_mean(&lammps, k, 2000.0, 100);
        let error = (so * so + sl * sl).sqrt();
        eprintln!(
            "KA NVT mean {name}: md {mo:.5} +- {so:.5}, LAMMPS {ml:.5} +- {sl:.5} ({:.2} standard errors)",
            (mo - ml).abs() / error
        );
        assert!(
            (mo - ml).abs() <= 3.0 * error,
            "{name}: {mo} +- {so} against LAMMPS's {ml} +- {sl}"
        );
    }
}
