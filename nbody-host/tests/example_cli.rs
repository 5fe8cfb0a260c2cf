//! The `nbody_tiled` example's command line, run in-process: its source is
//! compiled into this test as a module, so `cargo test --test example_cli`
//! needs no separately built binary. `main` only adds the exit status (2 on
//! error) and the terminal check for the progress bar.

#[allow(dead_code)]
#[path = "../../examples/nbody_tiled.rs"]
mod nbody_tiled;

use std::path::Path;

use nbody_host::{Bodies, snapshot};

/// Runs the example with `args`; stdout and the `Err` line.
fn run(args: &[&str]) -> (String, Result<(), String>) {
    let mut out = Vec::new();
    let argv = std::iter::once("nbody_tiled").chain(args.iter().copied());
    let result = nbody_tiled::cli(argv, &mut out, false);
    (String::from_utf8(out).unwrap(), result)
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

fn bits(b: &Bodies) -> Vec<u32> {
    b.positions
        .iter()
        .chain(&b.velocities)
        .flat_map(|v| v.to_array())
        .chain(b.masses.iter().copied())
        .map(f32::to_bits)
        .collect()
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
