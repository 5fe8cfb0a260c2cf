//! The issue-26 goal on the committed f64 Plummer sphere
//! (`tests/data/plummer512.npy`, made by `scripts/peers/hermite_plummer.py
//! make`): N = 512, softening 0.01, to t = 1 with eta = 0.02 in f64,
//! |dE/E| <= 1e-7 and every position within 1e-5 of REBOUND's IAS15 run on
//! the same state (`tests/data/plummer512_ias15_t1.npy`, `... rebound`;
//! `scripts/hermite-goals.sh` regenerates both and reruns this test).

use nbody_host::glam::DVec3;
use nbody_host::{Backend, HermiteSettings, Integrator, Precision, Simulation, snapshot};

fn data(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn run(precision: Precision, dt: f64) -> (f64, f64, f64) {
    let (pos, vel, mass) = snapshot::load_npy_f64(data("plummer512.npy")).unwrap();
    let (ref_pos, _, _) = snapshot::load_npy_f64(data("plummer512_ias15_t1.npy")).unwrap();
    let d = |v: &[[f64; 3]]| v.iter().map(|&x| DVec3::from_array(x)).collect::<Vec<_>>();
    let settings = HermiteSettings::new(0.02)
        .unwrap()
        .with_precision(precision);
    let mut sim = Simulation::builder_f64(&d(&pos), &d(&vel), &mass)
        .unwrap()
        .softening(0.01)
        .dt(dt)
        .integrator(Integrator::Hermite(settings))
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let e0 = sim.energy().unwrap();
    sim.integrate_to(1.0).unwrap();
    assert_eq!(sim.time(), 1.0);
    let de = sim.energy().unwrap().relative_change_from(&e0);
    let x = sim.positions_f64().unwrap();
    let dx = x
        .iter()
        .zip(d(&ref_pos))
        .map(|(a, b)| (*a - b).abs().max_element())
        .fold(0.0, f64::max);
    let stats = sim.hermite_stats().unwrap();
    let mut errs: Vec<(f64, usize)> = x
        .iter()
        .zip(d(&ref_pos))
        .enumerate()
        .map(|(i, (a, b))| ((*a - b).length(), i))
        .collect();
    errs.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!(
        "largest position differences (distance, body): {:?}",
        &errs[..3]
    );
    println!(
        "plummer512 {precision} eta 0.02 dt {dt} t = 1: |dE/E| = {de:.2e}, max |x - x_ias15| = {dx:.2e}, \
         {} block steps, {} force evaluations, mean block {:.2}",
        stats.block_steps,
        stats.force_evals,
        stats.mean_block()
    );
    (de, dx, stats.mean_block())
}

#[test]
fn plummer_512_in_f64_meets_the_energy_and_rebound_goals() {
    let (de, dx, _) = run(Precision::F64, 1.0 / 8.0);

    assert!(de <= 1e-7, "|dE/E| = {de:e}");
    assert!(dx <= 1e-5, "max position difference to IAS15 {dx:e}");
}

#[test]
fn plummer_512_in_mixed_precision_stays_with_f64() {
    let (de, dx, _) = run(Precision::Mixed, 1.0 / 8.0);
    assert!(de <= 1e-7, "|dE/E| = {de:e}");
    assert!(dx <= 1e-5, "max position difference to IAS15 {dx:e}");
}
