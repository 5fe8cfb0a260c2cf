//! The library's semantics against independent references: force, jerk
//! and potential against nbody-host's straightforward f64 field
//! (`hermite::reference::field`) on an independently predicted system,
//! neighbour lists and nearest neighbours against a brute-force search,
//! self-exclusion by index (not address), the calculation as a snapshot,
//! and the same bits on any thread count; the same on the GPU kernels
//! (`GRAPE6_BACKEND=emulator` here, `cuda` on the software CUDA device:
//! `scripts/ci-softcuda.sh`).

mod common;

use common::{Rng, predict, predict_as_library, rel, system};
use grape6::error::{G6_ERR_ARGUMENT, G6_ERR_CONFIG, G6_ERR_DEVICE, G6_OVERFLOW};
use grape6::{Config, IBlock, JParticle, Library, Results};
use nbody_host::hermite::reference;
use nbody_host::{Backend, Precision};

const TI: f64 = 0.15;
const EPS2: f64 = 1e-4;

fn open(config: Config, p: &[JParticle], address: &[usize]) -> Library {
    let mut lib = Library::open(config).unwrap();
    for (k, q) in p.iter().enumerate() {
        lib.set_j_particle(address[k] as i32, *q).unwrap();
    }
    lib.set_ti(TI).unwrap();
    lib
}

/// Runs one calculation of the i-particles `(index, x, v)`.
fn calc(
    lib: &mut Library,
    nj: usize,
    i: &[(i32, [f64; 3], [f64; 3])],
    h2: Option<&[f64]>,
) -> (Vec<Results>, Vec<i32>) {
    let index: Vec<i32> = i.iter().map(|q| q.0).collect();
    let x: Vec<[f64; 3]> = i.iter().map(|q| q.1).collect();
    let v: Vec<[f64; 3]> = i.iter().map(|q| q.2).collect();
    lib.firsthalf(
        nj as i32,
        IBlock {
            index: &index,
            x: &x,
            v: &v,
            eps2: EPS2,
            h2,
        },
    )
    .unwrap();
    let mut out = vec![Results::default(); i.len()];
    let mut nn = vec![0; i.len()];
    lib.lasthalf(nj as i32, i.len() as i32, &mut out, Some(&mut nn))
        .unwrap();
    (out, nn)
}

/// Largest relative errors (force, jerk, potential) of `precision` against
/// the reference, for a block of members (their own predicted state) and
/// two outside i-particles.
fn errors_against_reference(precision: Precision) -> (f64, f64, f64) {
    errors_on(precision, Backend::cpu())
}

/// [`errors_against_reference`] with the forces on `backend`.
fn errors_on(precision: Precision, backend: Backend) -> (f64, f64, f64) {
    let n = 300;
    let (p, address) = system(n, 11);
    let config = Config {
        precision,
        backend,
        block: 64,
        ..Config::default()
    };
    let mut lib = open(config, &p, &address);
    let (mut pos, mut vel): (Vec<_>, Vec<_>) = p.iter().map(|q| predict(q, TI)).unzip();
    let mut mass: Vec<f64> = p.iter().map(|q| q.mass).collect();
    // Members 0, 5, 10, ... and two bodies that are not j-particles (mass 0
    // in the reference, which then skips them by position in the arrays).
    let mut block: Vec<(i32, [f64; 3], [f64; 3])> = (0..n)
        .step_by(5)
        .map(|k| (p[k].index, pos[k], vel[k]))
        .collect();
    let mut refs: Vec<usize> = (0..n).step_by(5).collect();
    let mut r = Rng::new(5);
    for index in [-1, 99999] {
        let (x, v) = (r.v3(0.5), r.v3(0.5));
        block.push((index, x, v));
        refs.push(pos.len());
        pos.push(x);
        vel.push(v);
        mass.push(0.0);
    }
    let (out, _) = calc(&mut lib, n, &block, None);
    let (mut ea, mut ej, mut ep) = (0.0f64, 0.0f64, 0.0f64);
    for (k, &i) in refs.iter().enumerate() {
        let want = reference::field(&pos, &vel, &mass, i, EPS2);
        ea = ea.max(rel(out[k].acc, want.acc));
        ej = ej.max(rel(out[k].jerk, want.jerk));
        ep = ep.max(((out[k].pot - want.pot) / want.pot).abs());
    }
    (ea, ej, ep)
}

#[test]
fn f64_force_jerk_and_potential_match_the_f64_reference() {
    let (ea, ej, ep) = errors_against_reference(Precision::F64);
    println!("f64: max relative error force {ea:.1e}, jerk {ej:.1e}, potential {ep:.1e}");
    assert!(
        ea < 1e-13 && ej < 1e-12 && ep < 1e-13,
        "{ea:e} {ej:e} {ep:e}"
    );
}

#[test]
fn mixed_precision_meets_its_documented_bounds() {
    let (ea, ej, ep) = errors_against_reference(Precision::Mixed);
    println!("mixed: max relative error force {ea:.1e}, jerk {ej:.1e}, potential {ep:.1e}");
    assert!(
        ea < 1e-12 && ej < 1e-5 && ep < 1e-12,
        "{ea:e} {ej:e} {ep:e}"
    );
}

/// The GPU kernels (on the emulator, and on CUDA when built with it and a
/// device, real or software, is there) within the same bounds as the CPU.
#[test]
fn the_gpu_kernels_meet_the_same_bounds() {
    let mut backends = vec![Backend::emulator()];
    if cfg!(feature = "cuda") && std::env::var_os("GRAPE6_TEST_CUDA").is_some() {
        backends.push(Backend::Cuda { device: 0 });
    }
    for backend in backends {
        for (precision, tol_jerk) in [(Precision::F64, 1e-12), (Precision::Mixed, 1e-5)] {
            let (ea, ej, ep) = errors_on(precision, backend);
            println!(
                "{backend:?} {precision}: max relative error force {ea:.1e}, jerk {ej:.1e}, \
                 potential {ep:.1e}"
            );
            assert!(
                ea < 1e-13 && ej < tol_jerk && ep < 1e-13,
                "{backend:?} {precision}: {ea:e} {ej:e} {ep:e}"
            );
        }
    }
}

#[test]
fn a_backend_that_cannot_open_is_an_error_code() {
    let bad_block = Config {
        backend: Backend::emulator(),
        block: 48,
        ..Config::default()
    };
    assert_eq!(Library::open(bad_block).unwrap_err().code, G6_ERR_CONFIG);
    if !cfg!(feature = "cuda") {
        let cuda = Config {
            backend: Backend::Cuda { device: 0 },
            ..Config::default()
        };
        let e = Library::open(cuda).unwrap_err();
        assert_eq!(e.code, G6_ERR_DEVICE, "{e}");
        assert!(e.message.contains("cuda"), "{e}");
    }
}

#[test]
fn neighbour_lists_and_nearest_neighbours_match_a_brute_force_search() {
    let n = 400;
    let (p, address) = system(n, 23);
    let nb_max = 6;
    let config = Config {
        nb_max,
        ..Config::default()
    };
    let mut lib = open(config, &p, &address);
    // Positions by address, predicted with the library's formula.
    let mut by_addr = vec![([0.0; 3], 0); n];
    for (k, q) in p.iter().enumerate() {
        by_addr[address[k]] = (predict_as_library(q, TI), q.index);
    }
    let mut r = Rng::new(9);
    let block: Vec<(i32, [f64; 3], [f64; 3])> = (0..n)
        .step_by(3)
        .map(|k| (p[k].index, predict_as_library(&p[k], TI), r.v3(0.1)))
        .collect();
    // Radii from 0 to 0.35: from no neighbour to a dozen or more.
    let h2: Vec<f64> = (0..block.len())
        .map(|k| (0.35 * k as f64 / block.len() as f64).powi(2))
        .collect();
    let (_, nearest) = calc(&mut lib, n, &block, Some(&h2));
    let overflow = lib.read_neighbour_lists();
    let (mut empty, mut full, mut over) = (0, 0, 0);
    for (k, &(own, x, _)) in block.iter().enumerate() {
        let r2 = |y: [f64; 3]| {
            let d = [y[0] - x[0], y[1] - x[1], y[2] - x[2]];
            d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
        };
        let others = by_addr.iter().filter(|(_, id)| *id != own);
        let mut want: Vec<i32> = others
            .clone()
            .filter(|(y, _)| r2(*y) < h2[k])
            .map(|(_, id)| *id)
            .collect();
        want.sort_unstable();
        let (dmin, idmin) = others
            .map(|(y, id)| (r2(*y), *id))
            .fold((f64::INFINITY, -1), |a, b| if b.0 < a.0 { b } else { a });
        assert_eq!(nearest[k], idmin, "i-particle {k}: nearest at r^2 {dmin}");
        let mut got = vec![0; 100];
        let (info, err) = lib.neighbour_list(k as i32, &mut got).unwrap();
        assert_eq!(info.count, want.len(), "i-particle {k}");
        if want.len() <= nb_max {
            assert!(err.is_none());
            assert_eq!(&got[..info.written], &want[..], "i-particle {k}");
        } else {
            // The first nb_max by address, sorted: a sorted subset.
            over += 1;
            assert_eq!(err.unwrap().code, G6_OVERFLOW);
            assert_eq!(info.written, nb_max);
            let kept = &got[..nb_max];
            assert!(kept.windows(2).all(|w| w[0] < w[1]));
            assert!(kept.iter().all(|id| want.contains(id)));
        }
        // A maxlength below the count: truncated, overflow, full count.
        if want.len() >= 2 {
            full += 1;
            let mut two = [0; 1];
            let (info, err) = lib.neighbour_list(k as i32, &mut two).unwrap();
            assert_eq!((info.count, info.written), (want.len(), 1));
            assert_eq!(err.unwrap().code, G6_OVERFLOW);
        }
        empty += want.is_empty() as usize;
    }
    assert!(empty > 0 && full > 10 && over > 0, "{empty} {full} {over}");
    assert_eq!(overflow.unwrap_err().code, G6_OVERFLOW);
}

#[test]
fn a_calculation_is_a_snapshot_of_the_j_particles_at_its_firsthalf() {
    let n = 50;
    let (p, address) = system(n, 3);
    let mut lib = open(Config::default(), &p, &address);
    let block = [(p[0].index, p[0].x, p[0].v), (p[1].index, p[1].x, p[1].v)];
    let (before, _) = calc(&mut lib, n, &block, None);
    // Begin the same calculation, then move a j-particle and ti before
    // finishing it: the results are still the first ones, twice.
    let index = [block[0].0, block[1].0];
    let x = [block[0].1, block[1].1];
    let v = [block[0].2, block[1].2];
    let i = IBlock {
        index: &index,
        x: &x,
        v: &v,
        eps2: EPS2,
        h2: None,
    };
    lib.firsthalf(n as i32, i).unwrap();
    let moved = JParticle {
        x: [0.01, 0.0, 0.0],
        ..p[7]
    };
    lib.set_j_particle(address[7] as i32, moved).unwrap();
    lib.set_ti(0.2).unwrap();
    let mut out = [Results::default(); 2];
    lib.lasthalf(n as i32, 2, &mut out, None).unwrap();
    assert_eq!(out.to_vec(), before);
    lib.lasthalf(n as i32, 2, &mut out, None).unwrap();
    assert_eq!(out.to_vec(), before);
    // The next calculation sees both changes.
    lib.firsthalf(n as i32, i).unwrap();
    lib.lasthalf(n as i32, 2, &mut out, None).unwrap();
    assert_ne!(out[0].acc, before[0].acc);
    // A calculation over fewer j-particles than stored uses addresses 0..nj.
    let (few, nn) = calc(&mut lib, 0, &block, None);
    assert_eq!(few[0], Results::default());
    assert_eq!(nn, vec![-1, -1]);
}

#[test]
fn an_index_carried_by_two_j_particles_below_nj_is_an_error_not_a_wrong_force() {
    let n = 20;
    let (mut p, address) = system(n, 4);
    p[5].index = p[6].index;
    let mut lib = open(Config::default(), &p, &address);
    let block = [(p[6].index, p[6].x, p[6].v)];
    let index = [block[0].0];
    let i = IBlock {
        index: &index,
        x: &[block[0].1],
        v: &[block[0].2],
        eps2: EPS2,
        h2: None,
    };
    let e = lib.firsthalf(n as i32, i).unwrap_err();
    assert_eq!(e.code, G6_ERR_ARGUMENT);
    assert!(e.message.contains(&format!("index {}", p[6].index)), "{e}");
    // Below an nj that holds only one of them, it is fine.
    let below = address[5].min(address[6]) + 1;
    lib.firsthalf(below as i32, i).unwrap();
}

#[test]
fn results_are_the_same_bits_on_one_two_and_three_threads() {
    let n = 2000;
    let (p, address) = system(n, 8);
    for precision in [Precision::F64, Precision::Mixed] {
        let config = Config {
            precision,
            ..Config::default()
        };
        let block: Vec<_> = (0..n)
            .step_by(20)
            .map(|k| (p[k].index, p[k].x, p[k].v))
            .collect();
        let h2 = vec![0.04; block.len()];
        let runs: Vec<_> = [1, 2, 3]
            .into_iter()
            .map(|threads| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    let mut lib = open(config, &p, &address);
                    let (out, nn) = calc(&mut lib, n, &block, Some(&h2));
                    let bits: Vec<u64> = out
                        .iter()
                        .flat_map(|f| f.acc.into_iter().chain(f.jerk).chain([f.pot]))
                        .map(f64::to_bits)
                        .collect();
                    (bits, nn)
                })
            })
            .collect();
        assert!(runs.windows(2).all(|w| w[0] == w[1]), "{precision}");
    }
}
