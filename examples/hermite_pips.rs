//! Force + jerk + potential interactions per second of the collisional CPU
//! loops (`nbody_host::hermite::ForceJerk`): all N bodies active against
//! all N, best of REPEATS, the way `scripts/peers/hermite_plummer.py numba`
//! times the Numba peer (`scripts/hermite-goals.sh` runs both).
//!
//! usage: hermite_pips [N] [REPEATS] [f64|mixed]  ->  `result ... pips=`

use nbody_host::hermite::{Field, ForceJerk, Precision, Sink, Sources};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(4096);
    let repeats: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let precision = args
        .get(3)
        .map(|p| Precision::from_name(p).unwrap_or_else(|| panic!("precision f64|mixed, not {p}")))
        .unwrap_or(Precision::F64);
    let b = nbody_host::ic::plummer(n.max(1), 1);
    let widen = |v: &[nbody_host::glam::Vec3]| -> Vec<[f64; 3]> {
        v.iter().map(|x| x.as_dvec3().to_array()).collect()
    };
    let (pos, vel) = (widen(&b.positions), widen(&b.velocities));
    let mass = vec![1.0 / n as f64; n];
    let sources = Sources::new(&pos, &vel, &mass);
    let sinks: Vec<Sink> = (0..n)
        .map(|i| Sink {
            pos: pos[i],
            vel: vel[i],
            slot: Some(i),
        })
        .collect();
    let loops = ForceJerk::new(None, precision).expect("the CPU's loops");
    let mut out = vec![Field::default(); n];
    loops.evaluate(&sources, &sinks, 1e-4, &mut out);
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        let t0 = std::time::Instant::now();
        loops.evaluate(&sources, &sinks, 1e-4, &mut out);
        best = best.min(t0.elapsed().as_secs_f64());
    }
    println!(
        "result kernel=hermite-force-jerk isa={} precision={precision} n={n} threads={} seconds={best:.6} pips={:.4e}",
        loops.isa(),
        rayon::current_num_threads(),
        (n * n) as f64 / best
    );
}
