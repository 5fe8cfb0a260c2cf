//! Force+jerk interactions per second through libgrape6's C entry points
//! against nbody-host's `ForceJerk` called directly on the same system, to
//! measure what the API costs (prediction of the j-particles, the checks,
//! the copies): every body active, in blocks of `ni`, best of `repeat`.
//!
//! ```sh
//! cargo run --release -p grape6 --example grape6_pips -- [N] [NI] [REPEAT] [f64|mixed]
//! ```
//!
//! Prints one line: `grape6_pips n=... ni=... precision=... api=... direct=... ratio=...`
//! (interactions/s; ratio = api / direct). Exit status 2 on a bad argument.

use std::process::ExitCode;
use std::ptr::null;
use std::time::Instant;

use grape6::Config;
use grape6::ffi::*;
use nbody_host::Precision;
use nbody_host::hermite::{Field, ForceJerk, Sink, Sources};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |k: usize, d: usize| args.get(k).map_or(Some(d), |a| a.parse().ok());
    let (Some(n), Some(ni), Some(repeat)) = (arg(0, 16384), arg(1, 1024), arg(2, 3)) else {
        eprintln!("usage: grape6_pips [N] [NI] [REPEAT] [f64|mixed]");
        return ExitCode::from(2);
    };
    let Some(precision) = Precision::from_name(args.get(3).map_or("f64", |s| s.as_str())) else {
        eprintln!("precision must be f64 or mixed");
        return ExitCode::from(2);
    };
    if n < 2 || ni == 0 || ni > n || repeat == 0 {
        eprintln!("want N >= 2, 1 <= NI <= N, REPEAT >= 1");
        return ExitCode::from(2);
    }
    // A cube of bodies with small velocities (splitmix64, seed 1).
    let mut s = 1u64;
    let mut r = move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as f64 / u64::MAX as f64 - 0.5
    };
    let x: Vec<[f64; 3]> = (0..n).map(|_| [r(), r(), r()]).collect();
    let v: Vec<[f64; 3]> = (0..n).map(|_| [0.1 * r(), 0.1 * r(), 0.1 * r()]).collect();
    let m = vec![1.0 / n as f64; n];
    let idx: Vec<i32> = (0..n as i32).collect();
    let eps2 = 1e-4;
    let z = [0.0; 3];

    let config = Config {
        npipes: ni,
        precision,
        ..Config::default()
    };
    if open_with(config) != 0 {
        return ExitCode::from(1);
    }
    for k in 0..n {
        // SAFETY: every array is 3 doubles.
        let rc = unsafe {
            g6_set_j_particle(
                0,
                k as i32,
                k as i32,
                0.0,
                0.0,
                m[k],
                null(),
                z.as_ptr(),
                z.as_ptr(),
                v[k].as_ptr(),
                x[k].as_ptr(),
            )
        };
        assert_eq!(rc, 0);
    }
    let (mut acc, mut jerk, mut pot) = (vec![z; ni], vec![z; ni], vec![0.0; ni]);
    let forces = ForceJerk::new(None, precision).expect("the best ISA is available");
    let mut out = vec![Field::default(); ni];
    let (mut api, mut direct) = (f64::INFINITY, f64::INFINITY);
    // Alternately, so that a change in the machine's load hits both.
    for rep in 0..repeat {
        let t = Instant::now();
        // A new ti each time, so the j-particles are predicted again.
        assert_eq!(g6_set_ti(0, 1e-3 * rep as f64), 0);
        for off in (0..n).step_by(ni) {
            let k = ni.min(n - off);
            // SAFETY: the arrays hold k (<= ni) elements from off.
            let rc = unsafe {
                g6calc_firsthalf(
                    0,
                    n as i32,
                    k as i32,
                    idx[off..].as_ptr(),
                    x[off..].as_ptr(),
                    v[off..].as_ptr(),
                    null(),
                    null(),
                    null(),
                    eps2,
                    null(),
                );
                g6calc_lasthalf(
                    0,
                    n as i32,
                    k as i32,
                    null(),
                    null(),
                    null(),
                    eps2,
                    null(),
                    acc.as_mut_ptr(),
                    jerk.as_mut_ptr(),
                    pot.as_mut_ptr(),
                )
            };
            assert_eq!(rc, 0);
        }
        api = api.min(t.elapsed().as_secs_f64());

        let t = Instant::now();
        let sources = Sources::new(&x, &v, &m);
        for off in (0..n).step_by(ni) {
            let k = ni.min(n - off);
            let sinks: Vec<Sink> = (off..off + k)
                .map(|i| Sink {
                    pos: x[i],
                    vel: v[i],
                    slot: Some(i),
                })
                .collect();
            forces.evaluate(&sources, &sinks, eps2, &mut out[..k]);
        }
        direct = direct.min(t.elapsed().as_secs_f64());
    }
    g6_close(0);
    let pairs = (n * n) as f64;
    println!(
        "grape6_pips n={n} ni={ni} precision={precision} isa={:?} api={:.3e} direct={:.3e} ratio={:.3}",
        forces.isa(),
        pairs / api,
        pairs / direct,
        direct / api
    );
    ExitCode::SUCCESS
}
