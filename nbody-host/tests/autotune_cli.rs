//! The `autotune` example, run in-process on tiny sweeps: the chart and the
//! profile are written, and the profile applies to a new simulation.

#[allow(dead_code, reason = "the test calls only part of the example")]
#[path = "../../examples/autotune.rs"]
mod autotune;

use clap::Parser;
use nbody_host::{Kernel, Simulation, TuningProfile, ic};

fn sweep(backend: &str, n: &str) -> (TuningProfile, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let (plot, profile) = (dir.path().join("sweep.png"), dir.path().join("best.json"));
    let args = [
        "autotune",
        "--backend",
        backend,
        "--n",
        n,
        "--steps",
        "1",
        "--repeat",
        "1",
        "--plot",
        plot.to_str().unwrap(),
        "--save-profile",
        profile.to_str().unwrap(),
    ];
    autotune::run(autotune::Cli::parse_from(args)).unwrap();
    let png = std::fs::read(&plot).unwrap();
    (TuningProfile::load(&profile).unwrap(), png)
}

#[test]
fn cpu_sweep_saves_a_profile_that_tuned_for_applies() {
    let (profile, png) = sweep("cpu", "300");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(profile.backend.name(), "cpu");
    assert_eq!(profile.n, 300);
    assert!(profile.pips > 0.0 && profile.pips.is_finite());
    let tuning = profile.cpu_tuning.expect("a CPU profile has CPU blocking");
    assert!([128, 256, 512, 1024, 2048].contains(&tuning.i_block));
    let mut sim = Simulation::builder(ic::plummer(200, 3))
        .tuned_for(&profile)
        .build()
        .unwrap();
    assert_eq!(sim.params().kernel(), profile.kernel);
    // A CPU profile picks the CPU backend with its blocking.
    assert_eq!(sim.backend().name(), "cpu");
    sim.step(3).unwrap();
}

#[test]
fn emulator_sweep_covers_every_kernel_and_block() {
    let (profile, _) = sweep("emulator", "40");
    assert_eq!(profile.backend, nbody_host::BackendKind::Emulator);
    assert!(profile.cpu_tuning.is_none());
    assert!(matches!(
        profile.kernel,
        Kernel::Simt { .. } | Kernel::Tiled { .. } | Kernel::Triangle { .. }
    ));
    assert!([32, 64, 128, 256, 512, 1024].contains(&profile.kernel.block()));
}

#[test]
fn bad_arguments_are_errors_not_panics() {
    let run = |args: &[&str]| autotune::run(autotune::Cli::parse_from(args));
    let e = run(&["autotune", "--backend", "tpu"]).unwrap_err();
    assert!(e.to_string().contains("tpu"), "{e}");
    let e = run(&["autotune", "--n", "0"]).unwrap_err();
    assert!(e.to_string().contains("--n 0"), "{e}");
}
