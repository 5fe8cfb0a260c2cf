//! The distributed simulation under `mpirun` (feature `mpi`): its own
//! `main` (one `MPI_Init` per process), every check collective, rank 0
//! printing `test NAME ... ok`. Run by `scripts/ci-mpi.sh` with 1, 2, 3 and
//! 4 ranks, oversubscribed on two cores:
//!
//! ```text
//! CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="mpirun -n 3 --oversubscribe" \
//!   NBODY_MPI_DIR=/tmp/x cargo test --features mpi --test distributed
//! ```
//!
//! A failed check panics, and the panic hook of
//! `distributed::abort_on_panic` stops every rank (`MPI_Abort`): `mpirun`
//! exits non-zero instead of hanging. `NBODY_MPI_DIR`, when set, is a directory shared by the runs
//! with different rank counts: each leaves a checkpoint and the state a
//! straight run reaches, and each resumes the others' checkpoints on its own
//! rank count.
//!
//! # Tolerances
//! From `tests/correctness.rs`: one evaluation's accelerations are within
//! `(N + 8) u S_i` of the f64 oracle in any summation order (`u = 2^-24`,
//! `S_i` the sum of the magnitudes of body `i`'s terms), so a `p`-rank and
//! a one-process evaluation differ by at most `2 (N + 8) u S_i`. After
//! `K` steps each run is within `common::step_bounds` of the oracle (the
//! acceleration bound doubled for the drift of `S_i`), so two runs are
//! within twice that of each other.

#![allow(
    clippy::needless_range_loop,
    reason = "per-body loops over several arrays read best indexed"
)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use mpi::Threading;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use nbody_host::distributed::{DistributedSimulation, RingScheme};
use nbody_host::oracle::{self, System64};
use nbody_host::{Backend, Bodies, Error, Integrator, Simulation, ic, snapshot};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod common;
use common::{U, bits, distance, magnitude_sums, step_bounds};

const G: f64 = 0.7;
const DT: f64 = 1e-3;
const SCHEMES: [RingScheme; 2] = [RingScheme::AllPairs, RingScheme::ThirdLaw];

/// A Plummer sphere with unequal random masses (factor 10 spread).
fn bodies(n: usize, seed: u64) -> Bodies {
    let mut b = ic::plummer(n, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xd157);
    for m in &mut b.masses {
        *m = rng.random_range(0.2f32..2.0) / n as f32;
    }
    b
}

/// What every rank passes: rank 0 the bodies, the others none.
fn builder(
    world: &SimpleCommunicator,
    b: &Bodies,
    eps: f64,
    integrator: Integrator,
) -> nbody_host::SimulationBuilder {
    let mine = if world.rank() == 0 {
        b.clone()
    } else {
        Bodies::default()
    };
    Simulation::builder(mine)
        .dt(DT)
        .softening(eps)
        .gravitational_constant(G)
        .integrator(integrator)
        .backend(Backend::cpu())
}

/// The one-process run of the same system.
fn single(b: &Bodies, eps: f64, integrator: Integrator) -> Simulation {
    Simulation::builder(b.clone())
        .dt(DT)
        .softening(eps)
        .gravitational_constant(G)
        .integrator(integrator)
        .backend(Backend::cpu())
        .build()
        .unwrap()
}

fn print(world: &SimpleCommunicator, line: String) {
    if world.rank() == 0 {
        println!("{line}");
    }
}

/// One evaluation of the accelerations, for N not divisible by 2, 3 or 4
/// and N smaller than the number of ranks, both schemes, eps 0 and 0.1:
/// within `(N + 8) u S_i` of the oracle and `2 (N + 8) u S_i` of one process.
fn accelerations_match_the_oracle_and_one_process(world: &SimpleCommunicator) {
    let p = world.size() as usize;
    for n in [1001, 3, p.saturating_sub(1).max(1)] {
        let b = bodies(n, 40 + n as u64);
        let sys = System64::from_bodies(&b);
        for eps in [0.0, 0.1] {
            let reference = oracle::accelerations(&sys.pos, &sys.mass, G, eps);
            let scale = magnitude_sums(&sys, G, eps);
            let one = single(&b, eps, Integrator::SemiImplicitEuler)
                .accelerations()
                .unwrap();
            for scheme in SCHEMES {
                let b0 = builder(world, &b, eps, Integrator::SemiImplicitEuler);
                let mut sim = DistributedSimulation::build(world, b0, scheme).unwrap();
                let Some(acc) = sim.accelerations().unwrap() else {
                    continue;
                };
                let (mut worst_oracle, mut worst_one) = (0.0f64, 0.0f64);
                for i in 0..n {
                    let bound = (n as f64 + 8.0) * U * scale[i];
                    let e_oracle = distance(acc[i], reference[i]);
                    let d = acc[i] - one[i];
                    let e_one = d.length() as f64;
                    assert!(
                        e_oracle <= bound && e_one <= 2.0 * bound,
                        "{scheme:?} on {p} ranks, N = {n}, eps = {eps}, body {i}: {} vs oracle {:?} (error {e_oracle:e}) and one process {} (difference {e_one:e}); bound {bound:e}",
                        acc[i],
                        reference[i],
                        one[i]
                    );
                    if scale[i] > 0.0 {
                        worst_oracle = worst_oracle.max(e_oracle / (U * scale[i]));
                        worst_one = worst_one.max(e_one / (U * scale[i]));
                    }
                }
                if n == 1001 {
                    println!(
                        "  {} ranks, {}, eps {eps}: worst error {worst_oracle:.1} u S_i against the oracle, {worst_one:.1} u S_i against one process (bounds {} and {})",
                        p,
                        scheme.name(),
                        n + 8,
                        2 * (n + 8)
                    );
                }
            }
        }
    }
}

/// Three steps of both integrators and both schemes against the oracle and
/// one process (propagated bounds), and the energy against the oracle's.
fn steps_match_the_oracle_and_one_process(world: &SimpleCommunicator) {
    const STEPS: u64 = 3;
    let n = 601;
    let b = bodies(n, 7);
    let eps = 0.05;
    let sys0 = System64::from_bodies(&b);
    let scale = magnitude_sums(&sys0, G, eps);
    for integrator in [Integrator::SemiImplicitEuler, Integrator::Leapfrog] {
        let mut sys = sys0.clone();
        oracle::advance(&mut sys, integrator, DT, G, eps, STEPS as usize);
        let e_ref = oracle::energy(&sys, G, eps);
        let mut one = single(&b, eps, integrator);
        one.step(STEPS).unwrap();
        let one = one.state().unwrap();
        for scheme in SCHEMES {
            let mut sim =
                DistributedSimulation::build(world, builder(world, &b, eps, integrator), scheme)
                    .unwrap();
            sim.step(STEPS).unwrap();
            let e = sim.energy().unwrap();
            assert_eq!((sim.steps_done(), sim.time()), (one.step, one.time));
            let Some(state) = sim.gather_state() else {
                continue;
            };
            assert_eq!((state.step, state.time), (one.step, one.time));
            let k = STEPS as f64;
            for i in 0..n {
                let acc_err = 2.0 * (n as f64 + 8.0) * U * scale[i];
                let (vb, xb) = step_bounds(k, DT, acc_err, sys.pos[i], sys.vel[i]);
                let (v, x) = (state.bodies.velocities[i], state.bodies.positions[i]);
                assert!(
                    distance(v, sys.vel[i]) <= vb && distance(x, sys.pos[i]) <= xb,
                    "{scheme:?} {integrator:?}, body {i}: against the oracle"
                );
                let dv = (v - one.bodies.velocities[i]).length() as f64;
                let dx = (x - one.bodies.positions[i]).length() as f64;
                assert!(
                    dv <= 2.0 * vb && dx <= 2.0 * xb,
                    "{scheme:?} {integrator:?}, body {i}: against one process ({dv:e}, {dx:e})"
                );
            }
            // Energy: pair terms within about (block + 8) u relative, summed
            // in f64; the kinetic part exactly from the state.
            let u_bound = 1e-5 * e_ref.potential.abs();
            assert!(
                (e.potential - e_ref.potential).abs() <= u_bound,
                "{scheme:?} {integrator:?}: potential {} vs oracle {}",
                e.potential,
                e_ref.potential
            );
            let kinetic = oracle::energy(&System64::from_bodies(&state.bodies), G, eps).kinetic;
            assert!((e.kinetic - kinetic).abs() <= 1e-12 * kinetic);
        }
    }
}

/// A run is deterministic for a given rank count (same bits twice), and a
/// checkpoint written mid-run resumes bit-identically on the same ranks.
fn runs_repeat_and_checkpoints_resume_bit_identically(world: &SimpleCommunicator, dir: &Path) {
    let n = 500;
    let b = bodies(n, 11);
    let path = dir.join(format!("same-{}.ckpt", world.size()));
    for scheme in SCHEMES {
        let mut finals = Vec::new();
        for _ in 0..2 {
            let mut sim = DistributedSimulation::build(
                world,
                builder(world, &b, 0.02, Integrator::Leapfrog),
                scheme,
            )
            .unwrap();
            sim.step(3).unwrap();
            sim.save_checkpoint(&path).unwrap();
            sim.step(3).unwrap();
            finals.push(sim.gather_state());
        }
        assert_eq!(finals[0], finals[1], "{scheme:?}: two runs differ");
        let resumed = Simulation::resume(&path).unwrap().backend(Backend::cpu());
        let resumed = if world.rank() == 0 {
            resumed
        } else {
            Simulation::builder(Bodies::default()).backend(Backend::cpu())
        };
        let mut sim = DistributedSimulation::build(world, resumed, scheme).unwrap();
        assert_eq!(sim.steps_done(), 3);
        sim.step(3).unwrap();
        let state = sim.gather_state();
        if let (Some(a), Some(b)) = (&state, &finals[0]) {
            assert_eq!(
                bits(&a.bodies),
                bits(&b.bodies),
                "{scheme:?}: resumed run differs"
            );
            assert_eq!((a.step, a.time), (b.step, b.time));
        }
    }
}

/// The bodies' stable ids (issue 22): a run resumed over the ranks from a
/// checkpoint whose bodies were renumbered by a removal keeps their ids in
/// its state and its own checkpoint.
fn ids_survive_a_distributed_run(world: &SimpleCommunicator, dir: &Path) {
    let p = world.size();
    let (start, end) = (
        dir.join(format!("ids-{p}.ckpt")),
        dir.join(format!("ids-{p}-end.ckpt")),
    );
    if world.rank() == 0 {
        let mut one = single(&bodies(40, 5), 0.05, Integrator::Leapfrog);
        one.remove_by_id(7).unwrap();
        one.save_checkpoint(&start).unwrap();
    }
    world.barrier();
    let builder = if world.rank() == 0 {
        Simulation::resume(&start).unwrap().backend(Backend::cpu())
    } else {
        Simulation::builder(Bodies::default()).backend(Backend::cpu())
    };
    let mut sim = DistributedSimulation::build(world, builder, RingScheme::ThirdLaw).unwrap();
    sim.step(2).unwrap();
    sim.save_checkpoint(&end).unwrap();
    let want: Vec<u64> = (0..40).filter(|&i| i != 7).collect();
    if let Some(state) = sim.gather_state() {
        assert_eq!(state.ids, want);
        let back = nbody_host::Checkpoint::load(&end).unwrap();
        assert_eq!(back.state.ids, want);
    }
}

/// Leaves a checkpoint at step 3 and the straight run's state at step 6 for
/// the runs on other rank counts, and resumes theirs: within twice the
/// three-step bound of their straight run.
fn checkpoints_resume_on_another_rank_count(world: &SimpleCommunicator, dir: &Path) {
    let p = world.size();
    let n = 777; // divisible by none of 2, 4
    let b = bodies(n, 13);
    let eps = 0.05;
    let mut sim = DistributedSimulation::build(
        world,
        builder(world, &b, eps, Integrator::Leapfrog),
        RingScheme::ThirdLaw,
    )
    .unwrap();
    sim.step(3).unwrap();
    sim.save_checkpoint(dir.join(format!("p{p}.ckpt.tmp")))
        .unwrap();
    sim.step(3).unwrap();
    sim.save_npy(dir.join(format!("p{p}.final.npy.tmp")))
        .unwrap();
    let mut resumed_from = Vec::new();
    for q in 1..=8 {
        let (ckpt, fin) = (
            dir.join(format!("p{q}.ckpt")),
            dir.join(format!("p{q}.final.npy")),
        );
        if q == p || !(ckpt.exists() && fin.exists()) {
            continue;
        }
        let mine = if world.rank() == 0 {
            Simulation::resume(&ckpt).unwrap()
        } else {
            Simulation::builder(Bodies::default())
        };
        let mut sim =
            DistributedSimulation::build(world, mine.backend(Backend::cpu()), RingScheme::ThirdLaw)
                .unwrap();
        assert_eq!(sim.steps_done(), 3);
        sim.step(3).unwrap();
        if let Some(state) = sim.gather_state() {
            let straight = snapshot::load_npy(&fin).unwrap();
            let start = nbody_host::Checkpoint::load(&ckpt).unwrap().state.bodies;
            let sys = System64::from_bodies(&start);
            let scale = magnitude_sums(&sys, G, eps);
            let mut worst = 0.0f64;
            for i in 0..n {
                let acc_err = 2.0 * (n as f64 + 8.0) * U * scale[i];
                let (vb, xb) = step_bounds(3.0, DT, acc_err, sys.pos[i], sys.vel[i]);
                let dv = (state.bodies.velocities[i] - straight.velocities[i]).length() as f64;
                let dx = (state.bodies.positions[i] - straight.positions[i]).length() as f64;
                assert!(
                    dv <= 2.0 * vb && dx <= 2.0 * xb,
                    "resumed from {q} ranks on {p}: body {i}: {dv:e} > {:e} or {dx:e} > {:e}",
                    2.0 * vb,
                    2.0 * xb
                );
                worst = worst.max(dx / (2.0 * xb));
            }
            println!(
                "  checkpoint of {q} ranks resumed on {p}: worst position difference {worst:.3} of the bound"
            );
        }
        resumed_from.push(q);
    }
    if world.rank() == 0 {
        for name in ["ckpt", "final.npy"] {
            let from = dir.join(format!("p{p}.{name}.tmp"));
            std::fs::rename(&from, dir.join(format!("p{p}.{name}"))).unwrap();
        }
    }
    world.barrier();
    print(
        world,
        format!("  {p} ranks resumed the checkpoints of {resumed_from:?} ranks"),
    );
}

/// Snapshots and the archive go through rank 0 and hold the whole system
/// exactly (the gathered state's bits), step by step.
fn snapshots_and_the_archive_hold_the_whole_system(world: &SimpleCommunicator, dir: &Path) {
    let p = world.size();
    let b = bodies(333, 31);
    let b0 = builder(world, &b, 0.05, Integrator::Leapfrog);
    let mut sim = DistributedSimulation::build(world, b0, RingScheme::ThirdLaw).unwrap();
    let path = dir.join(format!("run-{p}.nbar"));
    let mut archive = (world.rank() == 0).then(|| snapshot::ArchiveWriter::create(&path).unwrap());
    let mut states = Vec::new();
    for _ in 0..3 {
        sim.append_to(archive.as_mut()).unwrap();
        states.push(sim.gather_state());
        sim.step(2).unwrap();
    }
    let npy = dir.join(format!("state-{p}.npy"));
    sim.save_npy(&npy).unwrap();
    let last = sim.gather_state();
    if world.rank() == 0 {
        drop(archive);
        let archive = snapshot::Archive::open(&path).unwrap();
        assert_eq!(archive.len(), 3);
        for (k, state) in states.iter().enumerate() {
            let record = archive.get(k).unwrap();
            let state = state.as_ref().unwrap();
            assert_eq!(
                (record.state.step, record.state.time),
                (state.step, state.time)
            );
            assert_eq!(bits(&record.state.bodies), bits(&state.bodies));
            assert_eq!(record.params, *sim.params());
        }
        assert_eq!(
            bits(&snapshot::load_npy(&npy).unwrap()),
            bits(&last.unwrap().bodies)
        );
    }
}

/// A body that runs away is reported by every rank, with its index in the
/// whole system, at the step a single process reports; files are refused.
fn divergence_is_reported_alike_by_every_rank(world: &SimpleCommunicator, dir: &Path) {
    let mut b = bodies(97, 17);
    b.velocities[95].x = 3e38; // in the last rank's block
    let mut one = Simulation::builder(b.clone())
        .dt(10.0)
        .softening(0.1)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let expected = one.step(5).unwrap_err();
    assert!(
        matches!(expected, Error::Diverged { step: 1, body: 95 }),
        "{expected}"
    );
    let b0 = builder(world, &b, 0.1, Integrator::SemiImplicitEuler).dt(10.0);
    let mut sim = DistributedSimulation::build(world, b0, RingScheme::ThirdLaw).unwrap();
    let e = sim.step(5).unwrap_err();
    assert!(
        matches!(e, Error::Diverged { step: 1, body: 95 }),
        "{e} (one process: {expected})"
    );
    assert_eq!(sim.steps_done(), 1);
    assert!(matches!(sim.step(1), Err(Error::Diverged { .. })));
    let e = sim.save_checkpoint(dir.join("diverged.ckpt")).unwrap_err();
    assert!(
        matches!(e, Error::NonFiniteSnapshot { body: 95, .. }),
        "{e}"
    );
}

/// A failure on one rank is an error on every rank: rank 0's bad bodies,
/// a checkpoint rank 0 cannot write.
fn errors_are_collective(world: &SimpleCommunicator, dir: &Path) {
    let rank = world.rank();
    let mut b = bodies(50, 19);
    b.masses[7] = -1.0;
    let e = DistributedSimulation::build(
        world,
        builder(world, &b, 0.1, Integrator::Leapfrog),
        RingScheme::AllPairs,
    )
    .err()
    .unwrap();
    match (rank, &e) {
        (0, Error::InvalidMass { index: 7, .. }) | (1.., Error::OtherRank { rank: 0 }) => {}
        _ => panic!("rank {rank}: {e}"),
    }
    let b = bodies(50, 19);
    let sim = DistributedSimulation::build(
        world,
        builder(world, &b, 0.1, Integrator::Leapfrog),
        RingScheme::AllPairs,
    )
    .unwrap();
    let e = sim.save_checkpoint(dir).unwrap_err(); // a directory
    match (rank, &e) {
        (0, Error::OtherRank { .. }) => panic!("rank 0: {e}"),
        (0, _) | (1.., Error::OtherRank { rank: 0 }) => {}
        _ => panic!("rank {rank}: {e}"),
    }
}

/// The emulator (the GPU kernel bodies, race detector on) as every rank's
/// backend, both schemes, against the oracle.
fn emulated_ring_matches_the_oracle(world: &SimpleCommunicator) {
    let n = 203;
    let b = bodies(n, 23);
    let sys = System64::from_bodies(&b);
    for eps in [0.0, 0.1] {
        let reference = oracle::accelerations(&sys.pos, &sys.mass, G, eps);
        let scale = magnitude_sums(&sys, G, eps);
        for scheme in SCHEMES {
            let emulator = Backend::Emulator {
                race_detection: true,
            };
            let b0 = builder(world, &b, eps, Integrator::Leapfrog)
                .backend(emulator)
                .kernel(nbody_host::Kernel::Tiled { block: 64 });
            let mut sim = DistributedSimulation::build(world, b0, scheme).unwrap();
            assert_eq!(sim.backend().name(), "emulator");
            if let Some(acc) = sim.accelerations().unwrap() {
                for i in 0..n {
                    let bound = (n as f64 + 8.0) * U * scale[i];
                    assert!(
                        distance(acc[i], reference[i]) <= bound,
                        "{scheme:?} eps {eps}: body {i}"
                    );
                }
            }
        }
    }
}

fn main() -> ExitCode {
    let Some((universe, _)) = mpi::initialize_with_threading(Threading::Funneled) else {
        eprintln!("MPI was already initialised");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    // A failed check on one rank stops every rank (no hang in CI).
    nbody_host::distributed::abort_on_panic();
    let dir = match std::env::var_os("NBODY_MPI_DIR") {
        Some(d) => PathBuf::from(d),
        None => std::env::temp_dir().join(format!("nbody-mpi-test-{}", std::process::id())),
    };
    if world.rank() == 0 {
        std::fs::create_dir_all(&dir).unwrap();
    }
    world.barrier();
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let tests: [(&str, &dyn Fn()); 9] = [
        ("accelerations_match_the_oracle_and_one_process", &|| {
            accelerations_match_the_oracle_and_one_process(&world)
        }),
        ("steps_match_the_oracle_and_one_process", &|| {
            steps_match_the_oracle_and_one_process(&world)
        }),
        (
            "runs_repeat_and_checkpoints_resume_bit_identically",
            &|| runs_repeat_and_checkpoints_resume_bit_identically(&world, &dir),
        ),
        ("checkpoints_resume_on_another_rank_count", &|| {
            checkpoints_resume_on_another_rank_count(&world, &dir)
        }),
        ("ids_survive_a_distributed_run", &|| {
            ids_survive_a_distributed_run(&world, &dir)
        }),
        ("snapshots_and_the_archive_hold_the_whole_system", &|| {
            snapshots_and_the_archive_hold_the_whole_system(&world, &dir)
        }),
        ("divergence_is_reported_alike_by_every_rank", &|| {
            divergence_is_reported_alike_by_every_rank(&world, &dir)
        }),
        ("errors_are_collective", &|| {
            errors_are_collective(&world, &dir)
        }),
        ("emulated_ring_matches_the_oracle", &|| {
            emulated_ring_matches_the_oracle(&world)
        }),
    ];
    let mut ran = 0;
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let t = std::time::Instant::now();
        test();
        world.barrier();
        print(
            &world,
            format!(
                "test {name} on {} ranks ... ok ({:.1} s)",
                world.size(),
                t.elapsed().as_secs_f64()
            ),
        );
        ran += 1;
    }
    print(
        &world,
        format!("test result: ok. {ran} passed on {} ranks", world.size()),
    );
    ExitCode::SUCCESS
}
