//! `lj_melt --dump FILE --dump-every K --rdf FILE --msd FILE`, run
//! in-process as `md_cli.rs` does: the frames, samples and files it
//! writes, a thermo table and result line unchanged by them, and its
//! refusals before any work (an unknown format, one path for two outputs,
//! an existing file without --force, a g(r) cutoff over half the box).

mod lj_cli;
use lj_cli::lj_melt::{self, exit};

use nbody_host::analysis::Msd;
use nbody_host::trajectory::Frame;

/// Runs `lj_melt` in-process (`lj_cli::run`): its report, or its failure.
fn run(args: &[&str]) -> Result<String, lj_melt::Failure> {
    let outcome = lj_cli::run(args);
    outcome.result.map(|()| outcome.out)
}

/// The thermo rows (six numbers).
fn thermo(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() == 6 && w.iter().all(|x| x.parse::<f64>().is_ok())
        })
        .map(str::to_string)
        .collect()
}

/// The result line without its timing fields.
fn result(out: &str) -> String {
    out.lines()
        .last()
        .unwrap()
        .split(' ')
        .filter(|kv| !kv.starts_with("seconds=") && !kv.starts_with("atom_steps_per_s="))
        .collect::<Vec<_>>()
        .join(" ")
}

const MELT: [&str; 10] = [
    "--cells",
    "4",
    "--steps",
    "40",
    "--thermo",
    "20",
    "--backend",
    "cpu",
    "--rebuild-every",
    "0",
];

#[test]
fn dumps_and_samples_leave_the_thermo_table_and_the_result_line_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let plain = run(&MELT).unwrap();
    let (traj, rdf, msd) = (p("run.lammpstrj"), p("g.txt"), p("msd.txt"));
    let mut args = MELT.to_vec();
    args.extend([
        "--dump",
        &traj,
        "--dump-every",
        "10",
        "--rdf",
        &rdf,
        "--msd",
        &msd,
        "--rdf-bins",
        "50",
    ]);
    let out = run(&args).unwrap();
    assert_eq!(thermo(&out), thermo(&plain));
    assert_eq!(thermo(&out).len(), 3, "steps 0, 20, 40 only:\n{out}");
    assert_eq!(result(&out), result(&plain));
    assert!(
        out.contains(&format!("wrote {traj} (5 frames, lammpstrj)")),
        "{out}"
    );
    assert!(
        out.contains(&format!("wrote {rdf} (g(r), 4 frames)")),
        "{out}"
    );
    // The trajectory's frames: steps 0 to 40 every 10.
    let text = std::fs::read_to_string(&traj).unwrap();
    let steps: Vec<u64> = text
        .split("ITEM: TIMESTEP\n")
        .skip(1)
        .map(|b| b.lines().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(steps, [0, 10, 20, 30, 40]);
    // The MSD file: one row per sample, from the dumped frames' positions.
    let rows: Vec<Vec<f64>> = std::fs::read_to_string(&msd)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.iter().map(|r| r[0] as u64).collect::<Vec<_>>(), steps);
    assert_eq!(&rows[0][1..], [0.0; 4]);
    let frames: Vec<Frame> = text
        .split("ITEM: TIMESTEP\n")
        .skip(1)
        .map(parse_frame)
        .collect();
    let reference = Msd::new(&frames[0]);
    for (row, f) in rows.iter().zip(&frames) {
        assert_eq!(
            row[1..].to_vec(),
            reference.at(f).unwrap().to_vec(),
            "step {}",
            f.step
        );
    }
    assert!(
        rows[4][4] > 0.0 && rows[4][4] < 1.0,
        "a melt moves atoms by a fraction of sigma in 0.2 tau"
    );
    // g(r): 50 bins, the liquid's first peak above 1.5, nothing below 0.8 sigma.
    let g: Vec<Vec<f64>> = std::fs::read_to_string(&rdf)
        .unwrap()
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(g.len(), 50);
    assert!(g.iter().any(|r| r[2] > 1.5));
    assert!(g.iter().filter(|r| r[1] < 0.8).all(|r| r[2] == 0.0));
    // The picture, with a g(r) given as LAMMPS's beside ours.
    let (png, lammps) = (p("g.png"), p("lammps-rdf.txt"));
    let rows: String = g.iter().map(|r| format!("{} {}\n", r[1], r[2])).collect();
    std::fs::write(&lammps, format!("# r g\n{rows}")).unwrap();
    let mut args = MELT.to_vec();
    let rdf2 = p("g2.txt");
    args.extend(["--rdf", &rdf2, "--rdf-plot", &png, "--lammps-rdf", &lammps]);
    let out = run(&args).unwrap();
    assert!(out.contains(&format!("wrote {png}")), "{out}");
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    std::fs::write(&lammps, "no numbers\n").unwrap();
    let e = run(&args).expect_err("rows of two numbers").line;
    assert!(e.contains("--lammps-rdf") && e.contains("no rows"), "{e}");
}

/// One frame of a LAMMPS dump (`id type x y z ix iy iz`).
fn parse_frame(block: &str) -> Frame {
    let lines: Vec<&str> = block.lines().collect();
    let lengths = [4, 5, 6].map(|k| lines[k].split_whitespace().nth(1).unwrap().parse().unwrap());
    let atoms: Vec<Vec<&str>> = lines[8..]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    Frame {
        step: lines[0].parse().unwrap(),
        time: 0.0,
        lengths,
        positions: atoms
            .iter()
            .map(|w| std::array::from_fn(|a| w[2 + a].parse().unwrap()))
            .collect(),
        images: atoms
            .iter()
            .map(|w| std::array::from_fn(|a| w[5 + a].parse().unwrap()))
            .collect(),
        velocities: vec![],
        types: vec![],
    }
}

#[test]
fn bad_outputs_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let fail = |extra: &[&str], code: u8, words: &str| {
        let mut args = MELT.to_vec();
        args.extend(extra);
        let f = run(&args).expect_err("should fail");
        assert_eq!(f.code, code, "{}", f.line);
        assert!(
            f.line.starts_with("error: ") && f.line.contains(words),
            "{}",
            f.line
        );
    };
    fail(
        &["--dump", &p("run.trr")],
        exit::USAGE,
        "unknown trajectory format",
    );
    fail(
        &["--dump", &p("a.dcd"), "--dump-velocities"],
        exit::USAGE,
        "positions only",
    );
    fail(
        &["--rdf", &p("same.txt"), "--msd", &p("same.txt")],
        exit::USAGE,
        "name the same file",
    );
    fail(
        &["--dump", &p("x.xyz"), "--save", &p("./x.xyz")],
        exit::USAGE,
        "name the same file",
    );
    // The box of 4 cells is 6.7 sigma: a cutoff of 3.4 is over half of it.
    fail(
        &["--rdf", &p("g.txt"), "--rdf-cutoff", "3.4"],
        exit::INPUT,
        "longer than half the box",
    );
    fail(
        &["--rdf", &p("g.txt"), "--rdf-bins", "0"],
        exit::INPUT,
        "bins = 0",
    );
    fail(&["--dump-unwrapped"], exit::USAGE, "--dump");
    fail(
        &["--dump", dir.path().to_str().unwrap()],
        exit::IO,
        "is a directory",
    );
    let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(before.is_empty(), "nothing written: {before:?}");
    // An existing trajectory is replaced only with --force.
    std::fs::write(p("old.xyz"), "keep").unwrap();
    fail(&["--dump", &p("old.xyz")], exit::USAGE, "--force");
    assert_eq!(std::fs::read_to_string(p("old.xyz")).unwrap(), "keep");
    let mut args = MELT.to_vec();
    let old = p("old.xyz");
    args.extend(["--dump", &old, "--force", "--dump-every", "20"]);
    run(&args).unwrap();
    assert_eq!(
        std::fs::read_to_string(&old)
            .unwrap()
            .matches("Lattice=")
            .count(),
        3
    );
}
