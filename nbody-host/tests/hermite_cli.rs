//! `nbody_tiled --integrator hermite` (issue 26's contract): `--eta`,
//! `--t-end`, `--precision f64|mixed`, `--init FILE.npy` read in f64,
//! `--save` an (N, 7) float64 array, `block_steps=` and `force_evals=` on
//! the result line; bad values and misplaced flags with their exit statuses.

#[allow(dead_code, reason = "the test calls only part of the example")]
#[path = "../../examples/nbody_tiled.rs"]
mod nbody_tiled;

fn run(args: &[&str]) -> (String, Result<(), (u8, String)>) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let argv = std::iter::once("nbody_tiled").chain(args.iter().copied());
    let result = nbody_tiled::cli(argv, &mut out, &mut err, nbody_tiled::Progress::Off);
    (
        String::from_utf8(out).unwrap(),
        result.map_err(|f| (f.code, f.line)),
    )
}

fn field<'a>(out: &'a str, key: &str) -> &'a str {
    let line = out
        .lines()
        .find(|l| l.starts_with("result "))
        .expect("a result line");
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("{key}= in {line}"))
}

#[test]
fn the_plummer_goal_runs_from_the_command_line_and_saves_float64() {
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("end.npy");
    let init = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/plummer512.npy");
    for precision in ["f64", "mixed"] {
        let (out, result) = run(&[
            "--integrator",
            "hermite",
            "--eta",
            "0.02",
            "--t-end",
            "1",
            "--precision",
            precision,
            "--init",
            init,
            "--softening",
            "0.01",
            "--backend",
            "cpu",
            "--save",
            save.to_str().unwrap(),
        ]);
        result.unwrap();
        assert_eq!(field(&out, "integrator"), "hermite");
        let de: f64 = field(&out, "energy_rel_change").parse().unwrap();
        assert!(de <= 1e-7, "{out}");
        let steps: u64 = field(&out, "block_steps").parse().unwrap();
        let evals: u64 = field(&out, "force_evals").parse().unwrap();
        assert!(steps > 100 && evals > steps && evals < 512 * steps, "{out}");
        // The saved state: float64, (512, 7), within 1e-5 of IAS15.
        let bytes = std::fs::read(&save).unwrap();
        assert!(String::from_utf8_lossy(&bytes[..128]).contains("'descr': '<f8'"));
        let (pos, _, mass) = nbody_host::snapshot::load_npy_f64(&save).unwrap();
        let (ias, _, _) = nbody_host::snapshot::load_npy_f64(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/plummer512_ias15_t1.npy"
        ))
        .unwrap();
        assert_eq!(mass.len(), 512);
        let dx = pos
            .iter()
            .zip(&ias)
            .flat_map(|(a, b)| (0..3).map(move |k| (a[k] - b[k]).abs()))
            .fold(0.0, f64::max);
        assert!(dx <= 1e-5, "{precision}: {dx:e}");
    }
}

#[test]
fn bad_hermite_flags_are_named_with_their_exit_status() {
    let hermite = [
        "--integrator",
        "hermite",
        "--n",
        "20",
        "--ic",
        "plummer",
        "--backend",
        "cpu",
    ];
    let with = |more: &[&str]| {
        let mut args = hermite.to_vec();
        args.extend_from_slice(more);
        run(&args).1
    };
    let (code, line) = with(&["--eta", "-1"]).unwrap_err();
    assert!(
        code == nbody_tiled::exit::INPUT && line.contains("eta = -1"),
        "{code} {line}"
    );
    let (code, line) = with(&["--eta-s", "0"]).unwrap_err();
    assert!(
        code == nbody_tiled::exit::INPUT && line.contains("eta_s"),
        "{code} {line}"
    );
    let (code, line) = with(&["--t-end", "-1"]).unwrap_err();
    assert!(
        code == nbody_tiled::exit::INPUT && line.contains("-1"),
        "{code} {line}"
    );
    let (code, line) = with(&["--precision", "f32"]).unwrap_err();
    assert_eq!(code, nbody_tiled::exit::USAGE, "{line}");
    // Hermite's flags without it.
    let (code, line) = run(&["--eta", "0.02", "--n", "20"]).1.unwrap_err();
    assert!(
        code == nbody_tiled::exit::USAGE && line.contains("--integrator hermite"),
        "{line}"
    );
    // And whole intervals with --steps.
    let (out, result) = run(&[&hermite[..], &["--steps", "2", "--dt", "0.0625"]].concat());
    result.unwrap();
    assert_eq!(field(&out, "steps"), "2");
    assert!(out.contains("t = 0.125"), "{out}");
}

/// `--backend emulator` runs the Hermite kernels (docs/collisional.md, "On
/// the GPU"): the same block steps and force evaluations as the CPU, the
/// energy change within rounding of the CPU's, and the emulator named on the
/// result line.
#[test]
fn the_emulator_takes_the_cpus_block_steps_from_the_command_line() {
    let args = |backend| {
        [
            "--integrator",
            "hermite",
            "--n",
            "48",
            "--ic",
            "plummer",
            "--steps",
            "1",
            "--dt",
            "0.0625",
            "--block",
            "32",
            "--backend",
            backend,
        ]
    };
    let (cpu, result) = run(&args("cpu"));
    result.unwrap();
    let (emu, result) = run(&args("emulator"));
    result.unwrap();
    assert_eq!(field(&emu, "backend"), "emulator");
    assert_eq!(field(&emu, "kernel"), "hermite-block");
    for key in ["block_steps", "force_evals"] {
        assert_eq!(field(&emu, key), field(&cpu, key), "{key}");
    }
    let de = |out: &str| -> f64 { field(out, "energy_rel_change").parse().unwrap() };
    assert!((de(&emu) - de(&cpu)).abs() <= 1e-12, "{emu}\n{cpu}");
}
