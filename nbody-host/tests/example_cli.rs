//! The `nbody_tiled` example's command line, run in-process: its source is
//! compiled into this test as a module, so `cargo test --test example_cli`
//! needs no separately built binary. `main` only prints the error line,
//! turns its status into the exit code and picks the progress display.

#[allow(dead_code, reason = "the test calls only part of the example")]
#[path = "../../examples/nbody_tiled.rs"]
mod nbody_tiled;

use std::path::Path;

use nbody_host::{Bodies, snapshot};

mod common;
use common::bits;

/// What a run of the example printed and how it ended.
struct Outcome {
    out: String,
    err: String,
    result: Result<(), nbody_tiled::Failure>,
}

/// Runs the example with `args`, progress shown as `progress`.
fn run_with(args: &[&str], progress: nbody_tiled::Progress) -> Outcome {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let argv = std::iter::once("nbody_tiled").chain(args.iter().copied());
    let result = nbody_tiled::cli(argv, &mut out, &mut err, progress);
    Outcome {
        out: String::from_utf8(out).unwrap(),
        err: String::from_utf8(err).unwrap(),
        result,
    }
}

/// Runs the example with `args`; stdout and the `Err` line.
fn run(args: &[&str]) -> (String, Result<(), String>) {
    let o = run_with(args, nbody_tiled::Progress::Off);
    (o.out, o.result.map_err(|f| f.line))
}

fn run_ok(args: &[&str]) -> String {
    let (out, result) = run(args);
    if let Err(e) = result {
        panic!("{args:?}: {e}");
    }
    out
}

#[track_caller]
fn run_err(args: &[&str]) -> String {
    let (out, result) = run(args);
    let line = result.expect_err("should fail");
    assert!(line.starts_with("error: "), "{line:?}");
    assert!(!line.contains('\n'), "one line: {line:?}");
    assert!(!line.contains("panicked"), "{line:?}");
    assert!(out.is_empty(), "no report on error: {out}");
    line
}

/// The `key=value` fields of the `result` line, checked for exactly the
/// documented keys in order.
fn result_fields(out: &str) -> Vec<(String, String)> {
    let last = out.lines().last().unwrap();
    let rest = last.strip_prefix("result ").expect(last);
    let fields: Vec<(String, String)> = rest
        .split(' ')
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect(kv);
            (k.to_owned(), v.to_owned())
        })
        .collect();
    let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "backend",
            "kernel",
            "integrator",
            "n",
            "steps",
            "seconds",
            "pips",
            "energy_rel_change"
        ],
        "{last}"
    );
    fields
}

#[test]
fn a_tiny_run_prints_the_result_line() {
    let out = run_ok(&[
        "--n",
        "100",
        "--steps",
        "3",
        "--kernel",
        "triangle",
        "--block",
        "64",
        "--integrator",
        "leapfrog",
        "--backend",
        "cpu",
        "--ic",
        "plummer",
        "--dt",
        "0.001",
    ]);
    let f = result_fields(&out);
    let get = |k: &str| f.iter().find(|(key, _)| key == k).unwrap().1.as_str();
    assert_eq!(get("backend"), "cpu");
    // What ran: on the CPU, `--kernel triangle` is the Newton's-third-law loop.
    assert_eq!(get("kernel"), "third-law");
    assert_eq!(get("integrator"), "leapfrog");
    assert_eq!(get("n"), "100");
    assert_eq!(get("steps"), "3");
    let seconds: f64 = get("seconds").parse().unwrap();
    let pips: f64 = get("pips").parse().unwrap();
    let de: f64 = get("energy_rel_change").parse().unwrap();
    assert!(seconds >= 0.0 && pips >= 0.0);
    if seconds > 0.0 {
        let expect = 100.0 * 100.0 * 3.0 / seconds;
        // `seconds` is printed exactly (shortest round-trip), `pips` to 7 digits.
        assert!((pips / expect - 1.0).abs() < 1e-6, "{pips} vs {expect}");
    }
    // Leapfrog on a Plummer sphere with a small step conserves energy well.
    assert!(de > 0.0 && de < 1e-4, "{de}");
    assert!(out.contains("triangle(block=64)"), "{out}");
}

/// Issue 14 defect 8, "name what ran": on the CPU, `--kernel tiled` runs the
/// all-pairs loop below `CpuTuning::third_law_min_n` (1024) bodies and the
/// Newton's-third-law loop from there on; the result line says which.
#[test]
fn the_result_line_names_the_cpu_loop_that_ran() {
    for (n, want) in [("1023", "all-pairs"), ("1024", "third-law")] {
        let out = run_ok(&[
            "--n",
            n,
            "--steps",
            "1",
            "--kernel",
            "tiled",
            "--backend",
            "cpu",
            "--no-energy",
        ]);
        let f = result_fields(&out);
        let get = |k: &str| f.iter().find(|(key, _)| key == k).unwrap().1.as_str();
        assert_eq!(get("n"), n, "{out}");
        assert_eq!(get("kernel"), want, "--kernel tiled --n {n}: {out}");
    }
}

#[test]
fn bad_flags_and_files_give_one_error_line() {
    assert!(run_err(&["--bogus"]).contains("--bogus"));
    assert!(run_err(&["--kernel", "warp"]).contains("warp"));
    assert!(run_err(&["--cpu-isa", "avx9"]).contains("avx9"));
    assert!(run_err(&["--n", "many"]).contains("many"));
    assert!(run_err(&["--every", "3"]).contains("--checkpoint"));
    assert!(run_err(&["--checkpoint", "c", "--every", "0"]).contains('0'));
    assert!(run_err(&["--n", "8", "--init", "x.npy"]).contains("--init"));
    // Library errors keep their message.
    let e = run_err(&["--n", "64", "--block", "48", "--backend", "cpu"]);
    assert!(e.contains("block size 48"), "{e}");
    let e = run_err(&["--n", "0", "--backend", "cpu"]);
    assert!(e.contains("N = 0"), "{e}");
    let e = run_err(&["--n", "8", "--dt", "-1", "--backend", "cpu"]);
    assert!(e.contains("dt = -1"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.npy");
    let e = run_err(&["--init", missing.to_str().unwrap()]);
    assert!(
        e.contains("missing.npy") && e.contains("No such file"),
        "{e}"
    );
    let e = run_err(&["--resume", missing.to_str().unwrap()]);
    assert!(e.contains("missing.npy"), "{e}");
    let junk = dir.path().join("junk.npy");
    std::fs::write(&junk, b"not an array").unwrap();
    let e = run_err(&["--init", junk.to_str().unwrap()]);
    assert!(e.contains("junk.npy: not a valid npy file"), "{e}");
    #[cfg(not(feature = "cuda"))]
    assert!(run_err(&["--backend", "cuda", "--n", "8"]).contains("--features cuda"));
    // A known instruction set this CPU lacks: the library's error.
    let missing_isa = nbody_host::Isa::ALL
        .into_iter()
        .find(|isa| !isa.is_available())
        .expect("no CPU has every instruction set");
    let e = run_err(&[
        "--n",
        "8",
        "--backend",
        "cpu",
        "--cpu-isa",
        missing_isa.name(),
    ]);
    assert!(
        e.contains(missing_isa.name()) && e.contains("not available"),
        "{e}"
    );
    // One it has runs.
    let out = run_ok(&[
        "--n",
        "40",
        "--steps",
        "2",
        "--backend",
        "cpu",
        "--cpu-isa",
        "scalar",
    ]);
    assert!(out.contains("result backend=cpu"), "{out}");
    // --help is not an error.
    let (out, result) = run(&["--help"]);
    assert!(result.is_ok() && out.contains("--checkpoint"), "{out}");
}

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

fn final_state(dir: &Path, name: &str, extra: &[&str]) -> Bodies {
    let save = dir.join(name);
    let mut args = vec![
        "--n",
        "64",
        "--ic",
        "collision",
        "--seed",
        "9",
        "--integrator",
        "leapfrog",
        "--dt",
        "0.02",
        "--backend",
        "cpu",
        "--save",
        save.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run_ok(&args);
    snapshot::load_npy(&save).unwrap()
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

/// Issue 14's repro of defect 2: `RAYON_NUM_THREADS=1` and `=2` runs of
/// `--n 2048 --steps 1 --kernel triangle --save` wrote different files. A
/// rayon pool of that many threads around the command line is what the
/// variable sets up for the binary.
#[test]
fn saved_state_is_the_same_on_1_and_2_threads() {
    let dir = tempfile::tempdir().unwrap();
    let saved: Vec<Vec<u8>> = [1, 2]
        .into_iter()
        .map(|threads| {
            let path = dir.path().join(format!("t{threads}.npy"));
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                run_ok(&[
                    "--n",
                    "2048",
                    "--steps",
                    "1",
                    "--kernel",
                    "triangle",
                    "--backend",
                    "cpu",
                    "--save",
                    path.to_str().unwrap(),
                ])
            });
            std::fs::read(&path).unwrap()
        })
        .collect();
    assert!(saved[0] == saved[1], "t1.npy and t2.npy differ");
}

/// Writes `bodies` as an .npy file in `dir` for `--init`; returns its path.
fn init_file(dir: &Path, name: &str, bodies: &Bodies) -> String {
    let path = dir.join(name);
    snapshot::save_npy(&path, bodies).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A body so fast that its first drift (`--dt 10`) overflows `f32`, while
/// the energy is finite in `f64`: a run that diverges at once.
fn runaway_pair() -> Bodies {
    Bodies::from_arrays(
        &[[0.0; 3], [1.0, 0.0, 0.0]],
        &[[3e38, 0.0, 0.0], [0.0; 3]],
        &[1.0, 1.0],
    )
    .unwrap()
}

/// Issue 14, defect 4: an N too large to index or to allocate is an error
/// before anything is allocated (it was a capacity-overflow panic, or an
/// allocation abort).
#[test]
fn huge_n_is_refused_before_allocating() {
    let e = run_err(&["--n", "18446744073709551615", "--backend", "cpu"]);
    assert!(
        e.contains("N = 18446744073709551615") && e.contains("1073741824"),
        "{e}"
    );
    let e = run_err(&["--n", "1073741825", "--backend", "cpu"]);
    assert!(e.contains("N = 1073741825"), "{e}");
}

/// Under `ulimit -v 3000000` (3 GB of address space), `--n 2^30` fits the
/// kernels' indexing but not the memory: an error naming the bytes (it
/// was an allocation abort, exit 134). The test re-runs itself in a child
/// process with the limit set (Linux: `sh` and `ulimit`).
#[cfg(target_os = "linux")]
#[test]
fn huge_n_under_a_memory_limit_is_an_error_naming_the_bytes() {
    if std::env::var_os("NBODY_TEST_CHILD").is_some() {
        let (_, result) = run(&["--n", "1073741824", "--backend", "cpu", "--steps", "1"]);
        println!("CHILD RESULT {result:?}");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 3000000 && exec \"$0\" \"$@\"")
        .arg(&exe)
        .args([
            "--exact",
            "huge_n_under_a_memory_limit_is_an_error_naming_the_bytes",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("NBODY_TEST_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the child failed ({:?}): {stdout} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.contains("CHILD RESULT"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.contains("N = 1073741824") && line.contains("bytes of host memory"),
        "{line}"
    );
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

/// Issue 14, defect 6: `--no-energy` skips both energy sums; the result
/// line says `energy_rel_change=skipped`. Coincident bodies at softening 0
/// have an infinite energy, which stops a run that computes it.
#[test]
fn no_energy_skips_the_energy() {
    let dir = tempfile::tempdir().unwrap();
    let coincident =
        Bodies::from_arrays(&[[0.5; 3], [0.5; 3]], &[[0.0; 3]; 2], &[1.0, 1.0]).unwrap();
    let init = init_file(dir.path(), "same.npy", &coincident);
    let common = [
        "--init",
        &init,
        "--softening",
        "0",
        "--steps",
        "2",
        "--backend",
        "cpu",
    ];
    let e = run_err(&common);
    assert!(e.contains("energy") && e.contains("not finite"), "{e}");
    let out = run_ok(&[&common[..], &["--no-energy"]].concat());
    let f = result_fields(&out);
    assert_eq!(
        f[7],
        ("energy_rel_change".into(), "skipped".into()),
        "{out}"
    );
    assert!(out.contains("energy      skipped (--no-energy)"), "{out}");
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

/// `--version`, and the help states the units and the exit statuses.
#[test]
fn version_units_and_exit_statuses_are_documented() {
    let (out, result) = run(&["--version"]);
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(
        out.trim(),
        format!("nbody_tiled {}", env!("CARGO_PKG_VERSION"))
    );
    let (help, _) = run(&["--help"]);
    for needle in [
        "Units:",
        "G = 1",
        "Exit status:",
        "--no-energy",
        "--archive",
        "--force",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
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

/// Issue 14, defect 8: one exit status per kind of failure (every failure
/// was status 2), as `--help` documents.
#[test]
fn exit_statuses_are_distinct() {
    use nbody_tiled::exit;
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let junk = p("junk.npy");
    std::fs::write(&junk, b"not an array").unwrap();
    let runaway = init_file(dir.path(), "runaway.npy", &runaway_pair());
    let coincident =
        Bodies::from_arrays(&[[0.5; 3], [0.5; 3]], &[[0.0; 3]; 2], &[1.0, 1.0]).unwrap();
    let coincident = init_file(dir.path(), "same.npy", &coincident);
    let taken = p("taken.ckpt");
    std::fs::write(&taken, b"x").unwrap();
    let missing = p("missing.npy");
    let cpu = ["--backend", "cpu", "--steps", "2"];
    let cases: Vec<(Vec<&str>, u8)> = vec![
        (vec!["--bogus"], exit::USAGE),
        (vec!["--every", "3"], exit::USAGE),
        (vec!["--n", "8", "--checkpoint", &taken], exit::USAGE),
        (vec!["--n", "0"], exit::INPUT),
        (vec!["--n", "8", "--dt", "-1"], exit::INPUT),
        (vec!["--n", "18446744073709551615"], exit::INPUT),
        (vec!["--init", &junk], exit::INPUT),
        (vec!["--init", &missing], exit::IO),
        (
            vec!["--n", "8", "--save", "/nonexistent_dir/x.npy"],
            exit::IO,
        ),
        (vec!["--init", &runaway, "--dt", "10"], exit::DIVERGED),
        (
            vec!["--init", &coincident, "--softening", "0"],
            exit::DIVERGED,
        ),
    ];
    for (args, code) in cases {
        let args = [&args[..], &cpu[..]].concat();
        let o = run_with(&args, nbody_tiled::Progress::Off);
        let failure = o.result.expect_err("should fail");
        assert_eq!(failure.code, code, "{args:?}: {}", failure.line);
    }
    #[cfg(not(feature = "cuda"))]
    {
        let o = run_with(
            &["--backend", "cuda", "--n", "8"],
            nbody_tiled::Progress::Off,
        );
        assert_eq!(o.result.unwrap_err().code, exit::OTHER);
    }
    let codes = [
        exit::OTHER,
        exit::USAGE,
        exit::INPUT,
        exit::IO,
        exit::DIVERGED,
    ];
    assert!(codes.windows(2).all(|w| w[0] < w[1]), "distinct");
    for (code, what) in codes.iter().zip([
        "1 backend",
        "2 usage",
        "3 invalid input",
        "4 file I/O",
        "5 divergence",
    ]) {
        assert!(nbody_tiled::AFTER_HELP.contains(what), "{code}: {what}");
    }
}

/// Issue 14, defect 8: without a terminal the run prints plain progress
/// lines (here every chunk: interval 0), and a resume with nothing to run
/// says so.
#[test]
fn progress_lines_and_notes_go_to_stderr() {
    let args = ["--n", "32", "--steps", "5", "--backend", "cpu"];
    let o = run_with(
        &args,
        nbody_tiled::Progress::Lines(std::time::Duration::ZERO),
    );
    assert!(o.result.is_ok());
    assert!(o.err.contains("progress: step 1/5 (20%)"), "{}", o.err);
    assert!(o.err.contains("progress: step 5/5 (100%)"), "{}", o.err);
    assert_eq!(o.err.lines().count(), 5, "{}", o.err);
    let o = run_with(&args, nbody_tiled::Progress::Off);
    assert!(o.err.is_empty() && o.out.contains("result "), "{}", o.err);

    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("run.ckpt");
    let ckpt = ckpt.to_str().unwrap();
    run_ok(&[&args[..], &["--checkpoint", ckpt]].concat());
    let o = run_with(
        &["--resume", ckpt, "--steps", "5", "--backend", "cpu"],
        nbody_tiled::Progress::Off,
    );
    assert!(o.result.is_ok());
    assert!(
        o.err.contains("already at step 5: nothing to run"),
        "{}",
        o.err
    );
}

/// An instruction set of another architecture than this one's (NEON on
/// x86-64, AVX-512 elsewhere): one `--cpu-isa` can never use here.
fn foreign_isa() -> &'static str {
    if cfg!(target_arch = "x86_64") {
        "neon"
    } else {
        "avx512"
    }
}

/// Issue 22, defect 1: `--cpu-isa` is honoured whenever the CPU backend
/// runs, also when `--backend auto` chose it (it was ignored unless
/// `--backend cpu`), and refused (status 2) where it cannot apply: another
/// backend, or another architecture's instruction set.
#[test]
fn cpu_isa_applies_whenever_the_cpu_runs_and_is_refused_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let common = ["--n", "300", "--steps", "2", "--kernel", "triangle"];
    let auto = run_ok(
        &[
            &common[..],
            &["--cpu-isa", "scalar", "--save", &p("auto.npy")],
        ]
        .concat(),
    );
    assert!(auto.contains("backend     cpu (scalar, "), "{auto}");
    run_ok(
        &[
            &common[..],
            &[
                "--backend",
                "cpu",
                "--cpu-isa",
                "scalar",
                "--save",
                &p("cpu.npy"),
            ],
        ]
        .concat(),
    );
    run_ok(&[&common[..], &["--backend", "cpu", "--save", &p("best.npy")]].concat());
    let bytes = |name: &str| std::fs::read(p(name)).unwrap();
    assert!(
        bytes("auto.npy") == bytes("cpu.npy"),
        "auto + scalar is the scalar loop"
    );
    if nbody_host::Isa::detect() != nbody_host::Isa::Scalar {
        assert!(
            bytes("auto.npy") != bytes("best.npy"),
            "and not the best one's"
        );
    }
    use nbody_tiled::exit;
    for (args, needle) in [
        (
            vec!["--backend", "emulator", "--cpu-isa", "avx2"],
            "--backend emulator",
        ),
        (vec!["--cpu-isa", foreign_isa()], foreign_isa()),
        (
            vec!["--backend", "cpu", "--cpu-isa", foreign_isa()],
            foreign_isa(),
        ),
    ] {
        let args = [&common[..], &args[..]].concat();
        let o = run_with(&args, nbody_tiled::Progress::Off);
        let f = o.result.expect_err("should fail");
        assert_eq!(f.code, exit::USAGE, "{args:?}: {}", f.line);
        assert!(
            f.line.contains("--cpu-isa") && f.line.contains(needle),
            "{}",
            f.line
        );
    }
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

/// Issue 22, defect 4: the report prints the time rounded (the clock adds
/// `dt` once a step: ten steps of 0.01 are 0.09999999999999999).
#[test]
fn the_report_prints_the_time_rounded() {
    let out = run_ok(&[
        "--n",
        "16",
        "--steps",
        "10",
        "--dt",
        "0.01",
        "--backend",
        "cpu",
    ]);
    let line = out.lines().find(|l| l.starts_with("bodies ")).unwrap();
    assert!(line.ends_with("t = 0.1"), "{line}");
}

/// Issue 22, defect 3: a body so far out (1e20) that squared distances
/// overflow `f32` made every acceleration NaN, reported as "a close
/// encounter" of body 0. The error names that body and why (status 5).
#[test]
fn a_body_too_far_out_for_f32_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let far = Bodies::from_arrays(
        &[[0.0; 3], [1.0, 0.0, 0.0], [1e20, 0.0, 0.0], [0.0, 1.0, 0.0]],
        &[[0.0; 3]; 4],
        &[1.0; 4],
    )
    .unwrap();
    let init = init_file(dir.path(), "far.npy", &far);
    for kernel in ["tiled", "triangle"] {
        let args = [
            "--init",
            &init,
            "--steps",
            "2",
            "--backend",
            "cpu",
            "--kernel",
            kernel,
        ];
        let o = run_with(&args, nbody_tiled::Progress::Off);
        let f = o.result.expect_err("should fail");
        assert_eq!(f.code, nbody_tiled::exit::DIVERGED, "{}", f.line);
        assert!(
            f.line.contains("body 2") && f.line.contains("1e20"),
            "{}",
            f.line
        );
        assert!(!f.line.contains("close encounter"), "{}", f.line);
    }
}

/// Issue 22, usability: progress on long work. Without a terminal, plain
/// lines at most every interval, also while one phase (the initial
/// conditions, an energy sum, a step) lasts, with the rate; nothing with
/// `--quiet`; the report on stdout is the same either way.
#[test]
fn progress_shows_long_phases_and_quiet_silences_it() {
    let args = [
        "--n",
        "1024",
        "--steps",
        "3",
        "--backend",
        "emulator",
        "--dt",
        "0.001",
    ];
    let every = std::time::Duration::from_millis(10);
    let o = run_with(&args, nbody_tiled::Progress::Lines(every));
    assert!(o.result.is_ok(), "{:?}", o.result.err());
    let lines: Vec<&str> = o.err.lines().collect();
    assert!(
        lines.iter().all(|l| l.starts_with("progress: ")),
        "{}",
        o.err
    );
    assert!(
        lines.iter().any(|l| l.contains("energy")),
        "a line while an energy sum runs: {}",
        o.err
    );
    assert!(
        lines.iter().any(|l| l.contains("steps/s")),
        "the stepping rate: {}",
        o.err
    );
    let quiet = [&args[..], &["--quiet"]].concat();
    let q = run_with(&quiet, nbody_tiled::Progress::Lines(every));
    assert!(q.result.is_ok() && q.err.is_empty(), "{}", q.err);
    let report = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| !l.starts_with("wall time") && !l.starts_with("result "))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(report(&o.out), report(&q.out));
    assert_eq!(result_fields(&q.out).len(), 8);
}
