//! Force + jerk + potential interactions per second of the Hermite force
//! kernels (`Backend::hermite_forces`: `nbody_hermite_force` and
//! `nbody_hermite_force_mixed`) on a backend: `ni` active bodies of a
//! Plummer sphere of `n` against all `n`, best of `repeats` wall-clock
//! calls after a warm-up (each call uploads the `n` j-bodies and the
//! i-bodies and reads the fields back: at n = 2^18 the 16 MiB upload is
//! about a millisecond of a call that computes 6.9e10 interactions).
//! Issue 26's GPU goal: >= 3e11 interactions/s in mixed precision at
//! n >= 2^18 on an H200 (`scripts/gpu-bundle-run.sh` section 8 runs it).
//!
//! usage: hermite_gpu_pips [--backend cuda|emulator|cpu] [--n N] [--ni NI]
//!        [--precision f64|mixed] [--block B] [--repeats R]
//!   -> `result kernel=hermite-force ... interactions_per_s=`
//! Exit status 1 backend, 2 usage.

use nbody_host::hermite::{Field, Sink, Sources};
use nbody_host::{Backend, Precision};

struct Args {
    backend: Backend,
    n: usize,
    ni: usize,
    precision: Precision,
    block: u32,
    repeats: usize,
}

fn usage(why: &str) -> ! {
    eprintln!(
        "hermite_gpu_pips: {why}\nusage: hermite_gpu_pips [--backend cuda|emulator|cpu] [--n N] \
         [--ni NI] [--precision f64|mixed] [--block B] [--repeats R]"
    );
    std::process::exit(2)
}

fn parse() -> Args {
    let mut a = Args {
        backend: Backend::Cuda { device: 0 },
        n: 1 << 18,
        ni: 1 << 18,
        precision: Precision::Mixed,
        block: 128,
        repeats: 3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        let number = |v: &str| -> usize {
            v.parse()
                .ok()
                .filter(|&x| x > 0)
                .unwrap_or_else(|| usage(&format!("{flag} {v}: a whole number > 0")))
        };
        match flag.as_str() {
            "--backend" => {
                a.backend = match value.as_str() {
                    "cuda" => Backend::Cuda { device: 0 },
                    "emulator" => Backend::emulator(),
                    "cpu" => Backend::cpu(),
                    other => usage(&format!("--backend {other}: cuda, emulator or cpu")),
                }
            }
            "--n" => a.n = number(&value),
            "--ni" => a.ni = number(&value),
            "--precision" => {
                a.precision = Precision::from_name(&value)
                    .unwrap_or_else(|| usage(&format!("--precision {value}: f64 or mixed")))
            }
            "--block" => a.block = number(&value) as u32,
            "--repeats" => a.repeats = number(&value),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    if a.ni > a.n {
        usage(&format!("--ni {} is more than --n {}", a.ni, a.n));
    }
    a
}

fn main() {
    let a = parse();
    let mut forces = a
        .backend
        .hermite_forces(a.precision, a.block)
        .unwrap_or_else(|e| {
            eprintln!("hermite_gpu_pips: {e}");
            std::process::exit(1)
        });
    let b = nbody_host::ic::plummer(a.n, 1);
    let widen = |v: &[nbody_host::glam::Vec3]| -> Vec<[f64; 3]> {
        v.iter().map(|x| x.as_dvec3().to_array()).collect()
    };
    let (pos, vel) = (widen(&b.positions), widen(&b.velocities));
    let mass = vec![1.0 / a.n as f64; a.n];
    let sources = Sources::new(&pos, &vel, &mass);
    // Every (n / ni)-th body active.
    let sinks: Vec<Sink> = (0..a.ni)
        .map(|k| {
            let i = k * (a.n / a.ni);
            Sink {
                pos: pos[i],
                vel: vel[i],
                slot: Some(i),
            }
        })
        .collect();
    let mut out = vec![Field::default(); a.ni];
    let mut call = |out: &mut [Field]| {
        forces
            .evaluate(&sources, &sinks, 1e-8, out)
            .unwrap_or_else(|e| {
                eprintln!("hermite_gpu_pips: {e}");
                std::process::exit(1)
            })
    };
    call(&mut out); // warm-up: module load, JIT, allocations
    let mut best = f64::INFINITY;
    for _ in 0..a.repeats {
        let t0 = std::time::Instant::now();
        call(&mut out);
        best = best.min(t0.elapsed().as_secs_f64());
    }
    let interactions = a.ni as f64 * a.n as f64;
    println!(
        "result kernel=hermite-force backend={} precision={} n={} ni={} block={} seconds={best:.6} \
         interactions_per_s={:.4e}",
        forces.kind(),
        a.precision,
        a.n,
        a.ni,
        a.block,
        interactions / best
    );
}
