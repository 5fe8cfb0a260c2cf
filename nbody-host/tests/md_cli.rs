//! The `lj_melt` example's command line, run in-process (see
//! `lj_cli/mod.rs`): the LAMMPS-style thermo table and result line,
//! `--init` with `--box`, checkpoints and archives with a bit-identical
//! resume, the plot, the emulator, progress, the flags shared with
//! `nbody_tiled` and one-line errors with their exit statuses. The checks
//! of runs that go wrong (memory, explosions, the timing table) are in
//! `md_cli_checks.rs`.

mod lj_cli;
use lj_cli::*;

use nbody_host::snapshot::{self, Archive};

#[test]
fn a_small_melt_prints_the_thermo_table_the_time_split_and_the_result_line() {
    let out = run_ok(&[
        "--cells",
        "4",
        "--steps",
        "30",
        "--thermo",
        "10",
        "--backend",
        "cpu",
    ]);
    assert!(
        out.contains(
            "Step           Temp         PotEng         KinEng         TotEng          Press"
        ),
        "{out}"
    );
    let rows = thermo(&out);
    assert_eq!(
        rows.iter().map(|r| r[0]).collect::<Vec<_>>(),
        [0.0, 10.0, 20.0, 30.0]
    );
    assert!((rows[0][1] - 1.44).abs() < 1e-6, "T0 = {}", rows[0][1]);
    for section in [
        "Loop time of",
        "Pair    |",
        "Neigh   |",
        "Modify  |",
        // The loop's builds, as LAMMPS counts them: at step 20 (the
        // set-up's build before the loop is not one).
        "Neighbor list builds = 1,",
    ] {
        assert!(out.contains(section), "{section}: {out}");
    }
    let f = result_fields(&out);
    assert_eq!((field(&f, "atoms"), field(&f, "steps")), (256.0, 30.0));
    assert_eq!(f[0].1, "cpu");
    assert_eq!(field(&f, "pe0"), rows[0][2]);
    assert_eq!(
        (field(&f, "etotal0"), field(&f, "etotal")),
        (rows[0][4], rows[3][4])
    );
    assert!(field(&f, "atom_steps_per_s") > 0.0);
    // Energy is conserved to dt^2 over 30 steps.
    assert!((rows[3][4] - rows[0][4]).abs() < 1e-2, "{rows:?}");
}

#[test]
fn init_and_box_start_from_a_given_state_and_a_resume_is_bit_identical() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (atoms, boundary) = nbody_host::ic::fcc_lattice(4, 0.8442, 1.2, 5).unwrap();
    snapshot::save_npy(p("init.npy"), &atoms).unwrap();
    let l = boundary.lengths().unwrap()[0].to_string();
    let common = [
        "--init",
        &p("init.npy"),
        "--box",
        &l,
        "--thermo",
        "0",
        "--shift",
    ];
    let straight = run_ok(
        &[
            &common[..],
            &["--steps", "40", "--save", &p("straight.npy")],
        ]
        .concat(),
    );
    run_ok(
        &[
            &common[..],
            &[
                "--steps",
                "25",
                "--checkpoint",
                &p("run.ckpt"),
                "--archive",
                &p("run.nbar"),
                "--every",
                "10",
            ],
        ]
        .concat(),
    );
    let resumed = run_ok(&[
        "--resume",
        &p("run.ckpt"),
        "--steps",
        "40",
        "--checkpoint",
        &p("run.ckpt"),
        "--archive",
        &p("run.nbar"),
        "--every",
        "10",
        "--thermo",
        "0",
        "--save",
        &p("resumed.npy"),
    ]);
    let (a, b) = (result_fields(&straight), result_fields(&resumed));
    assert_eq!(field(&b, "steps"), 15.0);
    assert_eq!(field(&a, "etotal"), field(&b, "etotal"));
    assert_eq!(
        snapshot::load_npy(p("straight.npy")).unwrap(),
        snapshot::load_npy(p("resumed.npy")).unwrap()
    );
    let archive = Archive::open(p("run.nbar")).unwrap();
    let steps: Vec<u64> = archive.records().iter().map(|r| r.step).collect();
    assert_eq!(steps, [0, 10, 20, 25, 30, 40]);
    let last = archive.get(archive.len() - 1).unwrap();
    assert!(last.md.is_some() && last.params.force().cutoff() == Some(2.5));
}

#[test]
fn the_plot_shows_lammps_s_thermo_beside_ours() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("lammps.txt");
    std::fs::write(
        &table,
        "   Step          Temp          PotEng         KinEng         TotEng         Press     \n\
         0  1.44 -6.773368053 2.15568 -4.617688053 -5.022100566\n\
         20  0.628165228 -5.562494532 0.9403633463 -4.622131186 1.018625206\n\
         lammps atoms=500 steps=20\n",
    )
    .unwrap();
    let png = dir.path().join("energy.png");
    let out = run_ok(&[
        "--cells",
        "5",
        "--steps",
        "20",
        "--thermo",
        "5",
        "--plot",
        png.to_str().unwrap(),
        "--lammps-thermo",
        table.to_str().unwrap(),
    ]);
    assert!(out.contains("wrote"), "{out}");
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let info = decoder.read_info().unwrap();
    // Two panels: the energies, and the drift of the total below.
    assert_eq!((info.info().width, info.info().height), (900, 800));
    // The plot samples the run densely, the table keeps to --thermo.
    assert_eq!(
        thermo(&out).iter().map(|r| r[0]).collect::<Vec<_>>(),
        [0.0, 5.0, 10.0, 15.0, 20.0]
    );
    std::fs::write(&table, "no numbers here\n").unwrap();
    let line = run_err(
        &[
            "--cells",
            "4",
            "--steps",
            "1",
            "--plot",
            png.to_str().unwrap(),
            "--lammps-thermo",
            table.to_str().unwrap(),
        ],
        1,
    );
    assert!(line.contains("no thermo rows"), "{line}");
}

#[test]
fn the_emulator_runs_the_melt_like_the_cpu() {
    let args = |backend| {
        [
            "--cells",
            "4",
            "--steps",
            "20",
            "--thermo",
            "10",
            "--backend",
            backend,
        ]
    };
    let (emu, cpu) = (run_ok(&args("emulator")), run_ok(&args("cpu")));
    assert_eq!(result_fields(&emu)[0].1, "emulator");
    let (e, c) = (thermo(&emu), thermo(&cpu));
    assert_eq!(e.len(), 3);
    for (re, rc) in e.iter().zip(&c) {
        for (x, y) in re.iter().zip(rc) {
            assert!((x - y).abs() <= 1e-4 * y.abs().max(1.0), "{re:?} vs {rc:?}");
        }
    }
}

#[test]
fn bad_command_lines_and_inputs_are_one_line_errors_with_their_status() {
    use lj_melt::exit;
    let line = run_err(&["--init", "x.npy"], exit::USAGE);
    assert!(line.contains("--box"), "{line}");
    run_err(&["--cells", "4", "--bogus"], exit::USAGE);
    let line = run_err(&["--cells", "0"], exit::INPUT);
    assert!(line.contains("unit cells per side = 0"), "{line}");
    let line = run_err(&["--cells", "2"], exit::INPUT);
    assert!(line.contains("half the shortest box length"), "{line}");
    let line = run_err(&["--cells", "4", "--cutoff", "-1"], exit::INPUT);
    assert!(line.contains("cutoff = -1"), "{line}");
    let line = run_err(
        &["--cells", "4", "--backend", "emulator", "--lists", "half"],
        exit::OTHER,
    );
    assert!(line.contains("Lennard-Jones on the GPU backends"), "{line}");
    assert!(line.contains("half Verlet lists"), "{line}");
    let line = run_err(&["--init", "/nonexistent/x.npy", "--box", "10"], exit::IO);
    assert!(line.contains("/nonexistent/x.npy"), "{line}");
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("a.ckpt");
    std::fs::write(&ckpt, b"x").unwrap();
    let line = run_err(
        &["--cells", "4", "--checkpoint", ckpt.to_str().unwrap()],
        exit::USAGE,
    );
    assert!(line.contains("--force"), "{line}");
    let help = run_ok(&["--help"]);
    for flag in [
        "--cells",
        "--density",
        "--temp",
        "--cutoff",
        "--skin",
        "--dt",
        "--steps",
        "--thermo",
        "--seed",
        "--shift",
        "--init",
        "--box",
        "--backend",
        "--checkpoint",
        "--archive",
        "--every",
        "--resume",
        "3N - 3",
    ] {
        assert!(help.contains(flag), "{flag}");
    }
}

/// Issue 22, defect 1: `lj_melt --cpu-isa` without `--backend cpu` runs
/// that instruction set (`--backend auto` runs Lennard-Jones on the CPU);
/// with the emulator it is refused.
#[test]
fn cpu_isa_applies_with_the_default_backend() {
    let out = run_ok(&["--cells", "4", "--steps", "2", "--cpu-isa", "scalar"]);
    assert!(out.contains("backend     cpu (scalar, "), "{out}");
    let line = run_err(
        &[
            "--cells",
            "4",
            "--steps",
            "2",
            "--backend",
            "emulator",
            "--cpu-isa",
            "scalar",
        ],
        lj_melt::exit::USAGE,
    );
    assert!(line.contains("--cpu-isa"), "{line}");
}

/// Issue 22, defect 5: `lj_melt` refuses one path for two outputs too.
#[test]
fn one_path_for_two_outputs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let same = dir.path().join("same.out");
    let same = same.to_str().unwrap();
    for (a, b) in [
        ("--save", "--checkpoint"),
        ("--checkpoint", "--archive"),
        ("--archive", "--plot"),
        ("--save", "--plot"),
    ] {
        let line = run_err(
            &["--cells", "4", "--steps", "2", a, same, b, same],
            lj_melt::exit::USAGE,
        );
        assert!(line.contains(a) && line.contains(b), "{line}");
        assert!(!std::path::Path::new(same).exists());
    }
}

/// Issue 22, defect 7: a gravity checkpoint given to `lj_melt --resume` is
/// invalid input (status 3, it was 2) that says what it is and what runs it.
#[test]
fn a_gravity_checkpoint_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("gravity.ckpt");
    nbody_host::Simulation::builder(nbody_host::ic::plummer(32, 1))
        .backend(nbody_host::Backend::cpu())
        .build()
        .unwrap()
        .save_checkpoint(&ckpt)
        .unwrap();
    let line = run_err(
        &["--resume", ckpt.to_str().unwrap(), "--steps", "2"],
        lj_melt::exit::INPUT,
    );
    assert!(
        line.contains("this is a gravity checkpoint: use nbody_tiled"),
        "{line}"
    );
}

/// Issue 22, usability: the neighbour settings are words (they were a Rust
/// debug dump, `Cells(CellList { .. bin_size: 0.0 })`), and dangerous builds
/// are explained with what to do.
#[test]
fn neighbour_settings_and_dangerous_builds_are_explained() {
    let out = run_ok(&["--cells", "5", "--steps", "40", "--thermo", "0"]);
    let line = out.lines().find(|l| l.starts_with("neighbours ")).unwrap();
    assert!(!line.contains("CellList") && !line.contains('{'), "{line}");
    for words in [
        "cell lists, skin 0.3",
        "r_c + skin = 2.8",
        "full Verlet lists",
        "every 20 steps",
    ] {
        assert!(line.contains(words), "{words}: {line}");
    }
    // At T = 1.44 atoms move more than half the skin in 20 steps.
    let builds = out
        .lines()
        .find(|l| l.starts_with("Neighbor list builds"))
        .unwrap();
    assert!(!builds.contains("dangerous builds = 0"), "{builds}");
    assert!(out.contains("--rebuild-every 0"), "{out}");
    let out = run_ok(&[
        "--cells",
        "5",
        "--steps",
        "40",
        "--thermo",
        "0",
        "--rebuild-every",
        "0",
    ]);
    assert!(
        out.contains("dangerous builds = 0") && !out.contains("note "),
        "{out}"
    );
    assert!(
        out.contains("whenever an atom has moved half the skin"),
        "{out}"
    );
}

/// Issue 22, usability: `lj_melt` shows progress lines without a terminal
/// (the step, the rate), none with `--quiet`.
#[test]
fn progress_lines_and_quiet() {
    let args = ["lj_melt", "--cells", "4", "--steps", "4", "--thermo", "0"];
    let lines = lj_melt::Progress::Lines(std::time::Duration::ZERO);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    lj_melt::cli(args, &mut out, &mut err, lines).unwrap();
    let err = String::from_utf8(err).unwrap();
    assert!(
        err.contains("progress: step 4/4 (100%)") && err.contains("steps/s"),
        "{err}"
    );
    let (mut out, mut err) = (Vec::new(), Vec::new());
    lj_melt::cli(
        [&args[..], &["--quiet"]].concat(),
        &mut out,
        &mut err,
        lines,
    )
    .unwrap();
    assert!(err.is_empty(), "{}", String::from_utf8_lossy(&err));
    assert!(String::from_utf8(out).unwrap().contains("result "));
}
