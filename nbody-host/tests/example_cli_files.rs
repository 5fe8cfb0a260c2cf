//! The `nbody_tiled` example's command line, run in-process (see
//! `nbody_cli/mod.rs`): initial states from files, snapshots, checkpoints
//! and resume, archives, rendering, and the checks of every output path.

mod nbody_cli;
use nbody_cli::*;

use std::path::Path;

use nbody_host::snapshot;

mod common;
use common::bits;

#[test]
fn init_from_npy_and_save() {
    let dir = tempfile::tempdir().unwrap();
    let init = dir.path().join("init.npy");
    let bodies = nbody_host::ic::cold_disk(40, 2);
    snapshot::save_npy(&init, &bodies).unwrap();
    let saved = dir.path().join("out.npy");
    let out = run_ok(&[
        "--init",
        init.to_str().unwrap(),
        "--steps",
        "0",
        "--backend",
        "cpu",
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(result_fields(&out)[3].1, "40");
    assert_eq!(bits(&snapshot::load_npy(&saved).unwrap()), bits(&bodies));
}

#[test]
fn checkpoint_and_resume_match_a_straight_run() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("run.ckpt");
    let ckpt = ckpt.to_str().unwrap();
    let straight = final_state(dir.path(), "straight.npy", &["--steps", "10"]);
    // "Killed" after 7 of 10 steps, with checkpoints at 3 and 6 (and 7, the end).
    let partial = final_state(
        dir.path(),
        "partial.npy",
        &["--steps", "7", "--checkpoint", ckpt, "--every", "3"],
    );
    let cp = nbody_host::Checkpoint::load(ckpt).unwrap();
    assert_eq!(cp.state.step, 7);
    assert_eq!(bits(&cp.state.bodies), bits(&partial));
    // Resuming continues to the same total step count.
    let resumed_path = dir.path().join("resumed.npy");
    let out = run_ok(&[
        "--resume",
        ckpt,
        "--steps",
        "10",
        "--backend",
        "cpu",
        "--save",
        resumed_path.to_str().unwrap(),
    ]);
    assert_eq!(result_fields(&out)[4].1, "3", "3 more steps: {out}");
    let resumed = snapshot::load_npy(&resumed_path).unwrap();
    assert_eq!(bits(&resumed), bits(&straight));
    assert_ne!(bits(&resumed), bits(&partial));
    // The resumed run was not asked for a checkpoint: the file still holds step 7.
    assert_eq!(nbody_host::Checkpoint::load(ckpt).unwrap().state.step, 7);
}

/// `--render` writes a GIF with one frame at the start and one every
/// `--render-every` steps (the last one at the end of the run), and the
/// rendering does not change the trajectory.
#[test]
fn render_writes_a_gif_with_the_expected_frames() {
    let dir = tempfile::tempdir().unwrap();
    let gif = dir.path().join("run.gif");
    let plain = dir.path().join("plain.npy");
    let drawn = dir.path().join("drawn.npy");
    let common = ["--backend", "cpu", "--n", "64", "--steps", "7"];
    run_ok(&[&common[..], &["--save", plain.to_str().unwrap()]].concat());
    let out = run_ok(
        &[
            &common[..],
            &["--render", gif.to_str().unwrap(), "--render-every", "3"],
            &["--save", drawn.to_str().unwrap()],
        ]
        .concat(),
    );
    // Frames at steps 0, 3, 6 and 7.
    assert!(out.contains("(4 frames)"), "{out}");
    let mut decoder = gif::DecodeOptions::new()
        .read_info(std::fs::File::open(&gif).unwrap())
        .unwrap();
    let mut frames = 0;
    while decoder.read_next_frame().unwrap().is_some() {
        frames += 1;
    }
    assert_eq!(frames, 4);
    assert_eq!(
        bits(&snapshot::load_npy(&plain).unwrap()),
        bits(&snapshot::load_npy(&drawn).unwrap())
    );
    let line = run_err(&[&common[..], &["--render", "/no/such/dir/x.gif"]].concat());
    assert!(line.contains("/no/such/dir"), "{line}");
}

/// Issue 14, defect 5: every output path is checked before the run. The
/// run diverges at its first step, so an error that names the path shows
/// the path was checked first.
#[test]
fn output_paths_are_checked_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let init = init_file(dir.path(), "pair.npy", &runaway_pair());
    let run = [
        "--init",
        &init,
        "--dt",
        "10",
        "--steps",
        "3",
        "--backend",
        "cpu",
    ];
    // The run itself fails with a divergence.
    let e = run_err(&run);
    assert!(e.contains("non-finite at step 1"), "{e}");
    for flag in ["--save", "--checkpoint", "--render", "--archive"] {
        let e = run_err(&[&run[..], &[flag, "/nonexistent_dir/x.out"]].concat());
        assert!(
            e.contains("/nonexistent_dir") && !e.contains("non-finite"),
            "{flag}: {e}"
        );
    }
}

/// Issue 14, defect 8: a fresh run does not overwrite an existing
/// checkpoint or archive unless `--force`.
#[test]
fn existing_outputs_of_another_run_need_force() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("run.ckpt");
    let ckpt = ckpt.to_str().unwrap();
    let archive = dir.path().join("run.nbar");
    let archive = archive.to_str().unwrap();
    for (flag, path) in [("--checkpoint", ckpt), ("--archive", archive)] {
        std::fs::write(path, b"another run's file").unwrap();
        let args = ["--n", "32", "--steps", "2", "--backend", "cpu", flag, path];
        let e = run_err(&args);
        assert!(e.contains(path) && e.contains("--force"), "{e}");
        assert_eq!(std::fs::read(path).unwrap(), b"another run's file");
        run_ok(&[&args[..], &["--force"]].concat());
        assert_ne!(std::fs::read(path).unwrap(), b"another run's file");
    }
}

/// Issue 14, defect 8: on `--resume`, `--steps` below the checkpoint's step
/// is an error; parameters other than the checkpoint's are refused unless
/// `--allow-changes`, which applies them and says so; `--seed` with
/// `--resume` or `--init` is refused.
#[test]
fn resume_refuses_what_it_would_silently_ignore() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("run.ckpt");
    let ckpt = ckpt.to_str().unwrap();
    run_ok(&[
        "--n",
        "32",
        "--steps",
        "7",
        "--dt",
        "0.02",
        "--backend",
        "cpu",
        "--checkpoint",
        ckpt,
    ]);
    let e = run_err(&["--resume", ckpt, "--steps", "5", "--backend", "cpu"]);
    assert!(e.contains("--steps 5") && e.contains("step 7"), "{e}");
    let out = run_ok(&["--resume", ckpt, "--steps", "7", "--backend", "cpu"]);
    assert_eq!(result_fields(&out)[4].1, "0");
    let resume = ["--resume", ckpt, "--steps", "8", "--backend", "cpu"];
    for (flag, value, needle) in [
        ("--dt", "0.05", "dt 0.02 -> 0.05"),
        ("--kernel", "triangle", "kernel tiled -> triangle"),
        ("--integrator", "leapfrog", "integrator euler -> leapfrog"),
        ("--softening", "0.2", "softening 0.1 -> 0.2"),
        ("--block", "64", "block 256 -> 64"),
    ] {
        let args = [&resume[..], &[flag, value]].concat();
        let e = run_err(&args);
        assert!(e.contains(needle) && e.contains("--allow-changes"), "{e}");
        let out = run_ok(&[&args[..], &["--allow-changes"]].concat());
        assert!(out.contains(needle), "{out}");
    }
    // The checkpoint's own values are not changes.
    run_ok(&[&resume[..], &["--dt", "0.02"]].concat());
    let init = init_file(dir.path(), "init.npy", &nbody_host::ic::plummer(8, 1));
    for other in [["--resume", ckpt], ["--init", init.as_str()]] {
        let e = run_err(&[&other[..], &["--seed", "3", "--backend", "cpu"]].concat());
        assert!(e.contains("--seed"), "{e}");
    }
}

/// `--archive FILE --every K` writes a record at the start, every K steps
/// and at the end; a run killed after its checkpoint and resumed continues
/// the archive so that it ends byte-identical to an uninterrupted run's.
#[test]
fn the_archive_of_a_killed_and_resumed_run_equals_a_straight_ones() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let common = [
        "--n",
        "48",
        "--ic",
        "plummer",
        "--dt",
        "0.01",
        "--backend",
        "cpu",
    ];
    let straight = p("straight.nbar");
    run_ok(
        &[
            &common[..],
            &["--steps", "10", "--every", "3", "--archive", &straight],
        ]
        .concat(),
    );
    let archive = nbody_host::snapshot::Archive::open(&straight).unwrap();
    let steps: Vec<u64> = archive.records().iter().map(|r| r.step).collect();
    assert_eq!(steps, [0, 3, 6, 9, 10]);

    let (ckpt, resumed) = (p("run.ckpt"), p("resumed.nbar"));
    run_ok(
        &[
            &common[..],
            &[
                "--steps",
                "6",
                "--every",
                "3",
                "--checkpoint",
                &ckpt,
                "--archive",
                &resumed,
            ],
        ]
        .concat(),
    );
    // The doomed continuation: archived step 8, then killed mid-append.
    run_ok(&[
        "--resume",
        &ckpt,
        "--steps",
        "8",
        "--backend",
        "cpu",
        "--archive",
        &resumed,
    ]);
    let bytes = std::fs::read(&resumed).unwrap();
    std::fs::write(&resumed, &bytes[..bytes.len() - 100]).unwrap();
    run_ok(&[
        "--resume",
        &ckpt,
        "--steps",
        "10",
        "--every",
        "3",
        "--backend",
        "cpu",
        "--checkpoint",
        &ckpt,
        "--archive",
        &resumed,
    ]);
    assert!(std::fs::read(&resumed).unwrap() == std::fs::read(&straight).unwrap());
}

/// Issue 22, defect 5: one path given to two outputs (`--save p
/// --checkpoint p` left an npy where a checkpoint was expected), or an
/// output that is the `--resume` checkpoint other than `--checkpoint`, is
/// refused before the run with status 2, naming both flags; nothing is
/// written. Spellings of one path count as one (`dir/x` and `dir/./x`).
#[test]
fn one_path_for_two_outputs_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let same = p("same.out");
    let spelled = dir.path().join(".").join("same.out");
    let spelled = spelled.to_str().unwrap();
    let outputs = ["--save", "--checkpoint", "--archive", "--render"];
    let common = ["--n", "16", "--steps", "2", "--backend", "cpu"];
    for (i, a) in outputs.iter().enumerate() {
        for b in &outputs[i + 1..] {
            let args = [&common[..], &[a, &same, b, spelled]].concat();
            let o = run_with(&args, nbody_tiled::Progress::Off);
            let f = o.result.expect_err("should fail");
            assert_eq!(f.code, nbody_tiled::exit::USAGE, "{args:?}: {}", f.line);
            assert!(f.line.contains(a) && f.line.contains(b), "{}", f.line);
            assert!(!Path::new(&same).exists(), "{a} {b}: nothing written");
        }
    }
    let ckpt = p("run.ckpt");
    run_ok(&[&common[..], &["--checkpoint", &ckpt]].concat());
    let before = std::fs::read(&ckpt).unwrap();
    for flag in ["--save", "--archive", "--render"] {
        let args = [
            "--resume",
            &ckpt,
            "--steps",
            "3",
            "--backend",
            "cpu",
            flag,
            &ckpt,
        ];
        let o = run_with(&args, nbody_tiled::Progress::Off);
        let f = o.result.expect_err("should fail");
        assert_eq!(f.code, nbody_tiled::exit::USAGE, "{args:?}: {}", f.line);
        assert!(
            f.line.contains(flag) && f.line.contains("--resume"),
            "{}",
            f.line
        );
        assert!(
            std::fs::read(&ckpt).unwrap() == before,
            "{flag}: the checkpoint is untouched"
        );
    }
    // The checkpoint resumed from may be the one written.
    run_ok(&[
        "--resume",
        &ckpt,
        "--steps",
        "3",
        "--backend",
        "cpu",
        "--checkpoint",
        &ckpt,
    ]);
}

/// Issue 22, defect 7: a Lennard-Jones checkpoint given to `nbody_tiled
/// --resume` is invalid input (status 3) that says what it is and what
/// runs it (it was status 1 and "softening and G are parameters of
/// gravity"); `--allow-changes` without `--resume` is refused (status 2).
#[test]
fn a_lennard_jones_checkpoint_is_named_as_such_and_allow_changes_needs_resume() {
    let dir = tempfile::tempdir().unwrap();
    let lj = dir.path().join("lj.ckpt");
    let (atoms, boundary) = nbody_host::ic::fcc_lattice(3, 0.8442, 1.44, 1).unwrap();
    nbody_host::Simulation::builder(atoms)
        .force(nbody_host::ForceLaw::lennard_jones(1.0, 1.0, 2.5, false).unwrap())
        .boundary(boundary)
        .backend(nbody_host::Backend::cpu())
        .build()
        .unwrap()
        .save_checkpoint(&lj)
        .unwrap();
    let lj = lj.to_str().unwrap();
    for extra in [&[][..], &["--dt", "0.001", "--allow-changes"][..]] {
        let args = [
            &["--resume", lj, "--steps", "3", "--backend", "cpu"][..],
            extra,
        ]
        .concat();
        let o = run_with(&args, nbody_tiled::Progress::Off);
        let f = o.result.expect_err("should fail");
        assert_eq!(f.code, nbody_tiled::exit::INPUT, "{}", f.line);
        assert!(
            f.line
                .contains("this is a Lennard-Jones checkpoint: use lj_melt"),
            "{}",
            f.line
        );
    }
    let o = run_with(
        &[
            "--n",
            "16",
            "--steps",
            "1",
            "--backend",
            "cpu",
            "--allow-changes",
        ],
        nbody_tiled::Progress::Off,
    );
    let f = o.result.expect_err("should fail");
    assert_eq!(f.code, nbody_tiled::exit::USAGE, "{}", f.line);
    assert!(
        f.line.contains("--allow-changes") && f.line.contains("--resume"),
        "{}",
        f.line
    );
}
