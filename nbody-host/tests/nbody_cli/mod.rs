//! What the `nbody_tiled` command-line tests share (`example_cli.rs`,
//! `example_cli_files.rs`): the example's source compiled in as a module
//! (`main` only prints the error line, turns its status into the exit code
//! and picks the progress display, so the tests need no built binary),
//! runners and the parsing of its `result` line.
#![allow(dead_code, reason = "each test binary uses its own subset")]

#[allow(dead_code, reason = "the tests call only part of the example")]
#[path = "../../../examples/nbody_tiled.rs"]
pub mod nbody_tiled;

use std::path::Path;

use nbody_host::{Bodies, snapshot};

/// What a run of the example printed and how it ended.
pub struct Outcome {
    pub out: String,
    pub err: String,
    pub result: Result<(), nbody_tiled::Failure>,
}

/// Runs the example with `args`, progress shown as `progress`.
pub fn run_with(args: &[&str], progress: nbody_tiled::Progress) -> Outcome {
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
pub fn run(args: &[&str]) -> (String, Result<(), String>) {
    let o = run_with(args, nbody_tiled::Progress::Off);
    (o.out, o.result.map_err(|f| f.line))
}

pub fn run_ok(args: &[&str]) -> String {
    let (out, result) = run(args);
    if let Err(e) = result {
        panic!("{args:?}: {e}");
    }
    out
}

#[track_caller]
pub fn run_err(args: &[&str]) -> String {
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
pub fn result_fields(out: &str) -> Vec<(String, String)> {
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

pub fn final_state(dir: &Path, name: &str, extra: &[&str]) -> Bodies {
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

/// Writes `bodies` as an .npy file in `dir` for `--init`; returns its path.
pub fn init_file(dir: &Path, name: &str, bodies: &Bodies) -> String {
    let path = dir.join(name);
    snapshot::save_npy(&path, bodies).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A body so fast that its first drift (`--dt 10`) overflows `f32`, while
/// the energy is finite in `f64`: a run that diverges at once.
pub fn runaway_pair() -> Bodies {
    Bodies::from_arrays(
        &[[0.0; 3], [1.0, 0.0, 0.0]],
        &[[3e38, 0.0, 0.0], [0.0; 3]],
        &[1.0, 1.0],
    )
    .unwrap()
}

/// An instruction set of another architecture than this one's (NEON on
/// x86-64, AVX-512 elsewhere): one `--cpu-isa` can never use here.
pub fn foreign_isa() -> &'static str {
    if cfg!(target_arch = "x86_64") {
        "neon"
    } else {
        "avx512"
    }
}
