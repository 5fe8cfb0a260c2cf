//! The `nbody_tiled` example's command line, run in-process (see
//! `nbody_cli/mod.rs`): the result line, flags and their errors, exit
//! statuses, progress and divergence. Inputs, outputs, checkpoints and
//! archives are in `example_cli_files.rs`.

mod nbody_cli;
use nbody_cli::*;

use nbody_host::Bodies;

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
