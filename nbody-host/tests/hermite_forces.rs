//! The collisional force loops (`nbody_host::hermite::forces`): force, jerk
//! and potential of active bodies against the straightforward f64
//! reference, in both precisions, on every instruction set this CPU has;
//! bit-identical on any thread count; the self pair skipped; softening 0.

use nbody_host::hermite::{Field, ForceJerk, Precision, Sink, Sources, reference};
use nbody_host::{Isa, ic};
use rand::{RngExt, SeedableRng};

/// A Plummer sphere in f64 (the f32 one widened, then moved off the f32
/// grid so that f32 coordinates could not represent it), equal masses.
fn system(n: usize, seed: u64) -> (Vec<[f64; 3]>, Vec<[f64; 3]>, Vec<f64>) {
    let b = ic::plummer(n, seed);
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut jitter = |x: f32| x as f64 * (1.0 + 1e-7 * r.random_range(-1.0..1.0));
    let pos = b
        .positions
        .iter()
        .map(|p| [jitter(p.x), jitter(p.y), jitter(p.z)])
        .collect();
    let vel = b
        .velocities
        .iter()
        .map(|v| [jitter(v.x), jitter(v.y), jitter(v.z)])
        .collect();
    (pos, vel, vec![1.0 / n as f64; n])
}

fn sinks(pos: &[[f64; 3]], vel: &[[f64; 3]], active: &[usize]) -> Vec<Sink> {
    active
        .iter()
        .map(|&i| Sink {
            pos: pos[i],
            vel: vel[i],
            slot: Some(i),
        })
        .collect()
}

fn rel(a: [f64; 3], b: [f64; 3]) -> f64 {
    let d = (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f64>().sqrt();
    d / (0..3).map(|k| b[k] * b[k]).sum::<f64>().sqrt()
}

/// Median and largest relative error of force, jerk and potential.
struct Errors {
    force: (f64, f64),
    jerk: (f64, f64),
    pot: f64,
}

fn median_max(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() - 1])
}

fn errors(isa: Isa, precision: Precision, n: usize, eps2: f64, every: usize) -> Errors {
    let (pos, vel, mass) = system(n, 11);
    let active: Vec<usize> = (0..n).step_by(every).collect();
    let loops = ForceJerk::new(Some(isa), precision).unwrap();
    let mut out = vec![Field::default(); active.len()];
    loops.evaluate(
        &Sources::new(&pos, &vel, &mass),
        &sinks(&pos, &vel, &active),
        eps2,
        &mut out,
    );
    let (mut f, mut j, mut p) = (vec![], vec![], 0.0f64);
    for (k, &i) in active.iter().enumerate() {
        let r = reference::field(&pos, &vel, &mass, i, eps2);
        f.push(rel(out[k].acc, r.acc));
        j.push(rel(out[k].jerk, r.jerk));
        p = p.max((out[k].pot - r.pot).abs() / r.pot.abs());
    }
    Errors {
        force: median_max(f),
        jerk: median_max(j),
        pot: p,
    }
}

#[test]
fn f64_matches_the_reference_to_rounding_on_every_isa() {
    for isa in Isa::available() {
        for eps2 in [0.0, 1e-4] {
            let e = errors(isa, Precision::F64, 1000, eps2, 7);
            println!(
                "{isa} f64 eps2={eps2}: force median {:.2e} max {:.2e}, jerk median {:.2e} max {:.2e}, pot max {:.2e}",
                e.force.0, e.force.1, e.jerk.0, e.jerk.1, e.pot
            );
            assert!(e.force.1 < 1e-13, "{isa}: force {:e}", e.force.1);
            assert!(e.jerk.1 < 1e-12, "{isa}: jerk {:e}", e.jerk.1);
            assert!(e.pot < 1e-13, "{isa}: potential {:e}", e.pot);
        }
    }
}

/// The bound for the mixed precision: relative force error
/// <= 1e-10 median, <= 1e-9 max against f64.
#[test]
fn mixed_meets_the_force_error_bound_on_every_isa() {
    for isa in Isa::available() {
        for (n, eps2) in [(1000, 0.0), (1000, 1e-4), (8192, 1e-4)] {
            let e = errors(isa, Precision::Mixed, n, eps2, 61);
            println!(
                "{isa} mixed N={n} eps2={eps2}: force median {:.2e} max {:.2e}, jerk median {:.2e} max {:.2e}, pot max {:.2e}",
                e.force.0, e.force.1, e.jerk.0, e.jerk.1, e.pot
            );
            assert!(
                e.force.0 <= 1e-10 && e.force.1 <= 1e-9,
                "{isa}: force {:?}",
                e.force
            );
            assert!(e.pot <= 1e-9, "{isa}: potential {:e}", e.pot);
            // The jerk is f32 arithmetic with f64 sums.
            assert!(
                e.jerk.0 < 1e-5 && e.jerk.1 < 1e-3,
                "{isa}: jerk {:?}",
                e.jerk
            );
        }
    }
}

#[test]
fn results_are_bit_identical_on_1_2_and_3_threads() {
    let (pos, vel, mass) = system(3000, 5);
    let active: Vec<usize> = (0..3000).step_by(3).collect();
    let sources = Sources::new(&pos, &vel, &mass);
    let s = sinks(&pos, &vel, &active);
    for precision in Precision::ALL {
        let loops = ForceJerk::new(None, precision).unwrap();
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut out = vec![Field::default(); s.len()];
            pool.install(|| loops.evaluate(&sources, &s, 1e-4, &mut out));
            out.iter()
                .flat_map(|f| {
                    f.acc
                        .iter()
                        .chain(&f.jerk)
                        .chain([&f.pot])
                        .map(|x| x.to_bits())
                })
                .collect::<Vec<_>>()
        };
        let one = run(1);
        assert_eq!(run(2), one, "{precision}");
        assert_eq!(run(3), one, "{precision}");
    }
}

/// The self slot is skipped (and only it): a sink at a body's own position
/// with `slot: None` gets an infinite force at softening 0, and with the
/// slot exactly the reference; every lane position of the self slot and
/// the padding are covered by n in 1..=20.
#[test]
fn the_self_slot_and_the_padding_contribute_nothing() {
    for isa in Isa::available() {
        for precision in Precision::ALL {
            let loops = ForceJerk::new(Some(isa), precision).unwrap();
            for n in 1..=20 {
                let (pos, vel, mass) = system(n, n as u64);
                let sources = Sources::new(&pos, &vel, &mass);
                let all: Vec<usize> = (0..n).collect();
                let mut out = vec![Field::default(); n];
                loops.evaluate(&sources, &sinks(&pos, &vel, &all), 0.0, &mut out);
                for (i, got) in out.iter().enumerate() {
                    let r = reference::field(&pos, &vel, &mass, i, 0.0);
                    if n == 1 {
                        assert_eq!(*got, Field::default());
                    } else {
                        assert!(rel(got.acc, r.acc) < 1e-9, "{isa} {precision} n={n} i={i}");
                    }
                }
                let mut lone = [Field::default()];
                let unskipped = Sink {
                    pos: pos[0],
                    vel: vel[0],
                    slot: None,
                };
                loops.evaluate(&sources, &[unskipped], 0.0, &mut lone);
                assert!(!lone[0].pot.is_finite(), "{isa} {precision} n={n}");
            }
        }
    }
}

#[test]
fn an_instruction_set_this_cpu_lacks_is_an_error_naming_it() {
    for isa in Isa::ALL {
        if !isa.is_available() {
            let e = ForceJerk::new(Some(isa), Precision::F64).unwrap_err();
            assert!(e.to_string().contains(isa.name()), "{e}");
        }
    }
    assert_eq!(Precision::from_name("mixed"), Some(Precision::Mixed));
    assert_eq!(Precision::from_name("f32"), None);
}
