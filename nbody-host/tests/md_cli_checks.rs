//! The `lj_melt` example's command line when a run goes wrong or needs
//! checking (see `lj_cli/mod.rs`): the timing table partitions the loop
//! time, runs that explode stop naming the step and the body, positions
//! beyond `f32`'s resolution of the box and melts too large for the memory
//! are refused before the run.

mod lj_cli;
use lj_cli::*;

use nbody_host::snapshot;

/// Issue 22, defect 8: the timing table's sections partition the loop's
/// time: each within 0..=100 %, together 100 % and the loop time (one step
/// printed Pair 170 % and Output 99 %: the engine's counters included the
/// set-up's force evaluation and list build, and the first thermo), and
/// the builds are the loop's (as LAMMPS counts them).
#[test]
fn the_timing_table_partitions_the_loop_time() {
    for (args, want_builds) in [
        (&["--steps", "1"][..], 0),
        (&["--steps", "1", "--rebuild-every", "1"][..], 1),
        (&["--steps", "30", "--thermo", "10"][..], 1),
        (
            &["--steps", "40", "--thermo", "0", "--rebuild-every", "0"][..],
            u64::MAX,
        ),
    ] {
        let out = run_ok(&[&["--cells", "4"][..], args].concat());
        let (sections, loop_time) = timing_table(&out);
        let names: Vec<&str> = sections.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(
            names,
            ["Pair", "Neigh", "Modify", "Output", "Other"],
            "{out}"
        );
        for (name, t, pct) in &sections {
            assert!((0.0..=100.0).contains(pct) && *t >= 0.0, "{name}: {out}");
        }
        let pct: f64 = sections.iter().map(|s| s.2).sum();
        let seconds: f64 = sections.iter().map(|s| s.1).sum();
        // Printed to 2 and 4 decimals: 5 roundings at most.
        assert!((pct - 100.0).abs() <= 0.025 + 1e-9, "{pct} %: {out}");
        assert!(
            (seconds - loop_time).abs() <= 2.5e-4 + 1e-6,
            "{seconds} s: {out}"
        );
        if want_builds != u64::MAX {
            assert_eq!(builds(&out), want_builds, "{args:?}: {out}");
        }
        if builds(&out) == 0 {
            assert_eq!(
                sections[1].1, 0.0,
                "no build, no Neigh time beyond the checks: {out}"
            );
        }
    }
}

/// Issue 22, defect 3: two atoms 0.5 sigma apart blow the run up
/// (temperatures of 1e21 and more) and it ended with status 0 and a normal
/// result line. The run stops with status 5 naming the step and a body:
/// in small boxes within a few steps (a body moved more than half the box
/// in one step), in a large one at the first thermo output (the energy
/// jumped far beyond any integration error).
#[test]
fn an_exploding_melt_is_a_divergence_naming_the_step_and_a_body() {
    let dir = tempfile::tempdir().unwrap();
    for (cells, thermo, how) in [
        (4, "10", "half the box"),
        (8, "10", "half the box"),
        (20, "5", "energy"),
    ] {
        let (init, l) = overlapping_lattice(dir.path(), cells);
        let o = run(&[
            "--init", &init, "--box", &l, "--steps", "40", "--thermo", thermo,
        ]);
        let f = o
            .result
            .expect_err(&format!("cells {cells}: should fail: {}", o.out));
        assert_eq!(f.code, lj_melt::exit::DIVERGED, "{}", f.line);
        assert!(
            f.line.contains("step ") && f.line.contains("body "),
            "{}",
            f.line
        );
        assert!(f.line.contains(how), "cells {cells}: {}", f.line);
        assert!(!o.out.contains("result "), "no result line: {}", o.out);
    }
    // The same lattice without the overlap runs.
    let (atoms, boundary) = nbody_host::ic::fcc_lattice(4, 0.8442, 1.44, 5).unwrap();
    let path = dir.path().join("fine.npy");
    snapshot::save_npy(&path, &atoms).unwrap();
    let l = boundary.lengths().unwrap()[0].to_string();
    run_ok(&[
        "--init",
        path.to_str().unwrap(),
        "--box",
        &l,
        "--steps",
        "40",
        "--thermo",
        "10",
    ]);
}

/// Issue 22, defect 3: a position so far outside the box that `f32` cannot
/// place it within the box (1e7 in a box of 6.7: its spacing there is 1) is
/// refused before the run, naming the body (status 3); it was wrapped
/// silently.
#[test]
fn a_position_beyond_f32_s_resolution_of_the_box_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (mut atoms, boundary) = nbody_host::ic::fcc_lattice(4, 0.8442, 1.44, 5).unwrap();
    atoms.positions[7].y = 1e7;
    let path = dir.path().join("far.npy");
    snapshot::save_npy(&path, &atoms).unwrap();
    let l = boundary.lengths().unwrap()[0].to_string();
    let line = run_err(
        &[
            "--init",
            path.to_str().unwrap(),
            "--box",
            &l,
            "--steps",
            "2",
        ],
        lj_melt::exit::INPUT,
    );
    assert!(line.contains("body 7"), "{line}");
}

/// Issue 22, defect 2: under a 3 GB address-space limit (`ulimit -v
/// 3000000`), `--cells 120` to `150` (6.9 to 13.5 million atoms) passed the
/// memory check, which counted 112 bytes an atom whatever the force law,
/// and aborted allocating the neighbour lists (status 134). The check now
/// counts the lists: an error naming the bytes needed and available
/// (status 3), before anything large is allocated; a melt that fits runs.
/// The test re-runs itself in a child process with the limit set (Linux:
/// `sh` and `ulimit`).
#[cfg(target_os = "linux")]
#[test]
fn a_melt_too_large_for_the_memory_is_refused_naming_the_bytes() {
    if std::env::var_os("NBODY_TEST_CHILD").is_some() {
        for cells in ["120", "135", "150", "12"] {
            let o = run(&["--cells", cells, "--steps", "1", "--thermo", "0"]);
            let result = o.result.map_err(|f| (f.code, f.line));
            println!("CHILD RESULT {cells} {result:?}");
        }
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let name = "a_melt_too_large_for_the_memory_is_refused_naming_the_bytes";
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 3000000 && exec \"$0\" \"$@\"")
        .arg(&exe)
        .args(["--exact", name, "--nocapture", "--test-threads", "1"])
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
    let results: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("CHILD RESULT"))
        .collect();
    assert_eq!(results.len(), 4, "{stdout}");
    for line in &results[..3] {
        assert!(
            line.contains("Err((3,")
                && line.contains("bytes of host memory")
                && line.contains("available"),
            "{line}"
        );
    }
    assert!(
        results[3].contains("CHILD RESULT 12 Ok(())"),
        "{}",
        results[3]
    );
}
