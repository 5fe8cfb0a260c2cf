//! Issue 23 on the software CUDA device (feature `cuda`,
//! `scripts/ci-softcuda.sh`), read from its log and launch statistics:
//! - host round trips per run (item 1): every call that makes the host
//!   wait for the device is one, and a run of K steps that asks for no
//!   output on the way must make as many as a run of a few steps, whatever K;
//! - small N fills the GPU (item 2): the default kernel's force launch at
//!   N = 4096 has at least 65,536 threads;
//! - MD steps in batches (item 1): a Lennard-Jones run with the safe
//!   rebuild policy, its builds decided on the device, waits at most once
//!   per 8 steps; so does one under a thermostat (issue 25).
//!
//! Each run happens in a child process (`cuda_env`), since the driver reads
//! `SOFTCUDA_LOG` once, at `cuInit`.
#![cfg(feature = "cuda")]

// The `nbody_tiled` example compiled in (its command line in examples/cli/).
mod nbody_cli;
use nbody_cli::{nbody_tiled, run_with};

mod cuda_env;

use std::path::Path;
use std::time::Duration;

/// Driver calls that make the host wait for queued device work: the
/// synchronisations, the synchronous device-to-host copy, and `cuMemFree`
/// (which synchronises the context).
const WAITS: [&str; 5] = [
    "cuStreamSynchronize ",
    "cuEventSynchronize ",
    "cuCtxSynchronize ",
    "cuMemcpyDtoH_v2 ",
    "cuMemFree_v2 ",
];

/// The calls of the driver's log that waited, by name, in order.
fn waits(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    text.lines()
        .filter_map(|l| l.strip_prefix("softcuda: "))
        .filter(|l| WAITS.iter().any(|w| l.starts_with(w)))
        .map(|l| l.split(' ').next().unwrap_or(l).to_owned())
        .collect()
}

/// Each call's name with its count, for a failure message.
fn tally(waits: &[String]) -> String {
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for w in waits {
        *counts.entry(w).or_default() += 1;
    }
    format!("{} waits {counts:?}", waits.len())
}

/// Runs `nbody_tiled` in the child with the arguments of `NBODY_TEST_ARGS`
/// and progress lines as a script sees them (stderr not a terminal).
fn run_example_in_child() {
    let args = std::env::var("NBODY_TEST_ARGS").expect("set by the parent");
    let argv: Vec<&str> = args.split(' ').collect();
    let progress = nbody_tiled::Progress::Lines(Duration::from_secs(5));
    let o = run_with(&argv, progress);
    assert!(
        o.result.is_ok(),
        "{args}: {:?}\n{}",
        o.result.err().map(|f| f.line),
        o.err
    );
}

/// The waits of `nbody_tiled` run with `args` in a child process.
fn waits_of_run(name: &str, args: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("softcuda.log");
    let log_text = log.to_str().unwrap().to_owned();
    let vars = [
        ("SOFTCUDA_LOG", log_text.as_str()),
        ("NBODY_TEST_ARGS", args),
    ];
    // The child itself runs the example at the top of the test.
    assert!(
        !cuda_env::in_child(name, &vars),
        "only the parent gets here"
    );
    waits(&log)
}

/// A gravity run of K steps with no output requested (no `--every`, no
/// frames, no energy) waits for the device as often for K = 200 as for
/// K = 20, and a handful of times in all. Before the fix the command line
/// stepped in chunks of 1 % of the run, each ending with a read of the
/// divergence flag and an event wait: 20 steps made 20 device-to-host
/// copies, 200 steps 100.
#[test]
fn a_gravity_run_waits_for_the_device_a_fixed_number_of_times() {
    let name = "a_gravity_run_waits_for_the_device_a_fixed_number_of_times";
    if std::env::var("NBODY_TEST_CHILD").as_deref() == Ok(name) {
        run_example_in_child();
        return;
    }
    let run = |steps: u32| {
        let args = format!("--backend cuda --n 64 --block 32 --steps {steps} --no-energy");
        waits_of_run(name, &args)
    };
    let (short, long) = (run(20), run(200));
    assert!(!short.is_empty(), "the log shows no waits at all");
    assert_eq!(
        short.len(),
        long.len(),
        "waits grow with the step count: 20 steps {}, 200 steps {}",
        tally(&short),
        tally(&long)
    );
    // Opening (the module's memory check), the run, and the six buffers
    // freed at the end.
    assert!(short.len() <= 12, "20 steps: {short:?}");
}

/// Issue 23: N = 4096 with the default kernel (`Kernel::Auto`, chosen for
/// the device's 132 modelled SMs) launches at least 65,536 force threads;
/// the tiled kernel's default launched 2,048 (16 blocks of 128 threads,
/// two bodies each). Read from the driver's per-launch statistics.
#[test]
fn n_4096_launches_at_least_65536_force_threads() {
    let name = "n_4096_launches_at_least_65536_force_threads";
    if std::env::var("NBODY_TEST_CHILD").as_deref() == Ok(name) {
        let sim = nbody_host::Simulation::builder(nbody_host::ic::plummer(4096, 1))
            .backend(nbody_host::Backend::Cuda { device: 0 })
            .build()
            .unwrap();
        sim.accelerations().unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let stats = dir.path().join("stats.jsonl");
    let stats_text = stats.to_str().unwrap().to_owned();
    assert!(!cuda_env::in_child(
        name,
        &[("SOFTCUDA_STATS", stats_text.as_str())]
    ));
    let text = std::fs::read_to_string(&stats).unwrap();
    let force: Vec<(String, u64)> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| {
            let k = v["kernel"].as_str().unwrap_or("");
            k.contains("accel") || k.contains("euler")
        })
        .map(|v| {
            let dim = |key: &str| -> u64 { (0..3).map(|a| v[key][a].as_u64().unwrap()).product() };
            (
                v["kernel"].as_str().unwrap().to_owned(),
                dim("grid") * dim("block"),
            )
        })
        .collect();
    assert!(!force.is_empty(), "no force launch in {text}");
    for (kernel, threads) in &force {
        assert!(*threads >= 65_536, "{kernel}: {threads} threads");
    }
}

/// Steps of the MD run of the child (`NBODY_TEST_STEPS`): the 256 atoms of
/// in.lj, hot (T = 1.44), skin 0.3, the safe rebuild policy (the default:
/// a build when a body moved half the skin); the child checks that the
/// device rebuilt the lists several times. Under the ensemble
/// `NBODY_TEST_ENSEMBLE` names (`nvt`, `langevin`, `rescale`; unset: NVE).
fn run_md_in_child() {
    let steps: u64 = std::env::var("NBODY_TEST_STEPS")
        .expect("set by the parent")
        .parse()
        .unwrap();
    use nbody_host::md::Ensemble;
    let ensemble = match std::env::var("NBODY_TEST_ENSEMBLE").as_deref() {
        Ok("nvt") => Ensemble::nvt(1.0, 0.5),
        Ok("langevin") => Ensemble::langevin(1.0, 0.5, 42),
        Ok("rescale") => Ensemble::rescale(10, 1.0, 0.02, 0.5),
        _ => Ensemble::Nve,
    };
    let (atoms, boundary) = nbody_host::ic::fcc_lattice(4, 0.8442, 1.44, 87287).unwrap();
    let mut sim = nbody_host::Simulation::builder(atoms)
        .force(nbody_host::ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap())
        .boundary(boundary)
        .neighbours(nbody_host::Neighbours::cells(0.3))
        .integrator(nbody_host::Integrator::VELOCITY_VERLET)
        .ensemble(ensemble)
        .dt(0.005)
        .backend(nbody_host::Backend::Cuda { device: 0 })
        .build()
        .unwrap();
    sim.step(steps).unwrap();
    let builds = sim.md_stats().unwrap().builds;
    // The start's build, then about one per 10 to 20 steps at this heat.
    assert!(
        builds > steps / 40,
        "{steps} steps: {builds} builds, the safe policy should rebuild"
    );
}

/// Issue 23: a safe-rebuild Lennard-Jones run adds no more than one
/// synchronising call per 8 steps: 256 more steps (with a dozen or more
/// builds, each decided on the device) wait at most 32 more times. Before
/// the batches the plan read the status words after every drift (the
/// trigger and the divergence flag): one device-to-host copy per step.
#[test]
fn a_safe_rebuild_md_run_waits_at_most_once_per_8_steps() {
    md_waits_at_most_once_per_8_steps(
        "a_safe_rebuild_md_run_waits_at_most_once_per_8_steps",
        "nve",
    );
}

/// Issue 25 on the GPU plan: the thermostats keep their state on the
/// device, so a thermostatted run (Nosé–Hoover, Langevin) waits no more
/// often than NVE's: at most once per 8 steps.
#[test]
fn a_thermostatted_md_run_waits_at_most_once_per_8_steps() {
    let name = "a_thermostatted_md_run_waits_at_most_once_per_8_steps";
    if std::env::var("NBODY_TEST_CHILD").as_deref() == Ok(name) {
        run_md_in_child();
        return;
    }
    for ensemble in ["nvt", "langevin"] {
        md_waits_at_most_once_per_8_steps(name, ensemble);
    }
}

/// The check of the two tests above for `ensemble`, the child being test `name`.
fn md_waits_at_most_once_per_8_steps(name: &str, ensemble: &str) {
    if std::env::var("NBODY_TEST_CHILD").as_deref() == Ok(name) {
        run_md_in_child();
        return;
    }
    let run = |steps: u32| {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("softcuda.log");
        let log_text = log.to_str().unwrap().to_owned();
        let steps = steps.to_string();
        let vars = [
            ("SOFTCUDA_LOG", log_text.as_str()),
            ("NBODY_TEST_STEPS", steps.as_str()),
            ("NBODY_TEST_ENSEMBLE", ensemble),
        ];
        assert!(
            !cuda_env::in_child(name, &vars),
            "only the parent gets here"
        );
        waits(&log)
    };
    let (short, long) = (run(16), run(16 + 256));
    assert!(!short.is_empty(), "the log shows no waits at all");
    assert!(
        long.len() <= short.len() + 256 / 8,
        "{ensemble}: 256 more steps waited {} more times: 16 steps {}, 272 steps {}",
        long.len() as i64 - short.len() as i64,
        tally(&short),
        tally(&long)
    );
}
