//! The vectorised CPU backend against the `f64` oracle, for every instruction
//! set this CPU has (each forced explicitly) and every kernel; determinism;
//! instruction-set selection and errors.

use nbody_host::oracle::{self, System64};
use nbody_host::{
    Backend, BackendKind, Bodies, CpuTuning, Error, Integrator, Isa, Kernel, Simulation, ic,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SIZES: &[usize] = &[1, 2, 3, 17, 31, 32, 33, 255, 257, 1000, 2048];
const SOFTENINGS: &[f64] = &[0.0, 0.1];

/// Largest allowed `|a - a_ref| / max(|a_ref|, mean |a_ref|)`.
const TOLERANCE: f64 = 1e-5;

fn kernels() -> [Kernel; 3] {
    [
        Kernel::Simt { block: 64 },
        Kernel::Tiled { block: 256 },
        Kernel::Triangle { block: 128 },
    ]
}

/// A uniform cube with masses spread over two decades.
fn bodies(n: usize, seed: u64) -> Bodies {
    let mut b = ic::uniform_cube(n, seed);
    let mut r = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    for m in &mut b.masses {
        *m = 10f32.powf(r.random_range(-2.0..=0.0));
    }
    b
}

fn tuning(isa: Isa) -> CpuTuning {
    CpuTuning {
        isa: Some(isa),
        ..CpuTuning::default()
    }
}

fn sim(bodies: &Bodies, kernel: Kernel, eps: f64, tuning: CpuTuning) -> Simulation {
    Simulation::builder(bodies.clone())
        .softening(eps)
        .gravitational_constant(1.0)
        .kernel(kernel)
        .backend(Backend::Cpu(tuning))
        .build()
        .unwrap()
}

/// `max_i |a_i - ref_i| / max(|ref_i|, mean |ref|)`; `inf` on any non-finite value.
fn max_relative_error(acc: &[glam::Vec3], want: &[[f64; 3]]) -> f64 {
    let norm = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let mean = want.iter().map(|&w| norm(w)).sum::<f64>() / want.len() as f64;
    acc.iter()
        .zip(want)
        .map(|(a, w)| {
            if !a.is_finite() {
                return f64::INFINITY;
            }
            let d = [a.x as f64 - w[0], a.y as f64 - w[1], a.z as f64 - w[2]];
            let scale = norm(*w).max(mean);
            if scale == 0.0 {
                // A lone body: exactly zero, or infinitely wrong.
                if norm(d) == 0.0 { 0.0 } else { f64::INFINITY }
            } else {
                norm(d) / scale
            }
        })
        .fold(0.0, f64::max)
}

#[test]
fn every_isa_and_kernel_matches_the_oracle() {
    let isas = Isa::available();
    assert_eq!(isas.last(), Some(&Isa::Scalar));
    let mut worst = vec![0.0f64; isas.len()];
    for &n in SIZES {
        let b = bodies(n, n as u64);
        let sys = System64::from_bodies(&b);
        for &eps in SOFTENINGS {
            let want = oracle::accelerations(&sys.pos, &sys.mass, 1.0, eps as f32 as f64);
            for (k, &isa) in isas.iter().enumerate() {
                for kernel in kernels() {
                    let s = sim(&b, kernel, eps, tuning(isa));
                    assert_eq!(
                        s.backend(),
                        BackendKind::Cpu {
                            isa,
                            threads: rayon::current_num_threads()
                        }
                    );
                    let acc = s.accelerations().unwrap();
                    assert_eq!(acc.len(), n);
                    let err = max_relative_error(&acc, &want);
                    assert!(
                        err <= TOLERANCE,
                        "{isa} {kernel} N = {n} eps = {eps}: relative error {err:.3e}"
                    );
                    worst[k] = worst[k].max(err);
                }
            }
        }
    }
    for (isa, err) in isas.iter().zip(worst) {
        eprintln!("{isa}: max relative error {err:.3e} (tolerance {TOLERANCE:e})");
    }
}

#[test]
fn a_lone_body_and_coincident_bodies_give_no_nan() {
    // Two bodies at the same point with eps = 0: each pull is exactly zero
    // (the guard), not NaN, on every path; a third one is pulled normally.
    let b = Bodies::from_arrays(
        &[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [4.0, 2.0, 3.0]],
        &[[0.0; 3]; 3],
        &[2.0, 0.5, 1.0],
    )
    .unwrap();
    for isa in Isa::available() {
        for kernel in kernels() {
            let acc = sim(&b, kernel, 0.0, tuning(isa)).accelerations().unwrap();
            let want = [1.0f32 / 9.0, 1.0 / 9.0, -2.5 / 9.0];
            for (a, w) in acc.iter().zip(want) {
                assert!(
                    (a.x - w).abs() <= 1e-6 && a.y == 0.0 && a.z == 0.0,
                    "{isa} {kernel}: {acc:?}"
                );
            }
        }
        let lone = Bodies::from_arrays(&[[0.5; 3]], &[[0.0; 3]], &[3.0]).unwrap();
        for kernel in kernels() {
            for eps in SOFTENINGS {
                let acc = sim(&lone, kernel, *eps, tuning(isa))
                    .accelerations()
                    .unwrap();
                assert_eq!(acc, vec![glam::Vec3::ZERO], "{isa} {kernel} eps = {eps}");
            }
        }
    }
}

#[test]
fn coincident_bodies_in_different_blocks_give_no_nan() {
    // Bodies 0 and 69 coincide; with the smallest blocks they land in
    // different tiles of the triangle schedule (pairs computed once, both
    // halves guarded) and in different all-pairs tasks.
    let mut b = bodies(70, 11);
    b.positions[69] = b.positions[0];
    let want = {
        let sys = System64::from_bodies(&b);
        // The oracle skips only j == i: its twin term is 0 / 0. Recompute
        // the twins without each other (the guard's exact zero).
        let mut a = oracle::accelerations(&sys.pos, &sys.mass, 1.0, 0.0);
        for (i, j) in [(0, 69), (69, 0)] {
            let without: Vec<usize> = (0..70).filter(|&k| k != j).collect();
            let p: Vec<[f64; 3]> = without.iter().map(|&k| sys.pos[k]).collect();
            let m: Vec<f64> = without.iter().map(|&k| sys.mass[k]).collect();
            let idx = without.iter().position(|&k| k == i).unwrap();
            a[i] = oracle::accelerations(&p, &m, 1.0, 0.0)[idx];
        }
        a
    };
    for isa in Isa::available() {
        for kernel in kernels() {
            let t = CpuTuning {
                i_block: 1,
                j_tile: 1,
                ..tuning(isa)
            };
            let acc = sim(&b, kernel, 0.0, t).accelerations().unwrap();
            let err = max_relative_error(&acc, &want);
            assert!(err <= TOLERANCE, "{isa} {kernel}: {err:.3e}");
        }
    }
}

fn bits(v: &[glam::Vec3]) -> Vec<[u32; 3]> {
    v.iter()
        .map(|a| [a.x.to_bits(), a.y.to_bits(), a.z.to_bits()])
        .collect()
}

#[test]
fn results_are_bit_identical_across_runs_and_thread_counts() {
    let b = bodies(777, 5);
    for isa in Isa::available() {
        for kernel in kernels() {
            let t = CpuTuning {
                i_block: 64,
                ..tuning(isa)
            };
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    let mut s = Simulation::builder(b.clone())
                        .softening(0.05)
                        .kernel(kernel)
                        .integrator(Integrator::Leapfrog)
                        .backend(Backend::Cpu(t))
                        .build()
                        .unwrap();
                    s.step(3).unwrap();
                    let acc = s.accelerations().unwrap();
                    (bits(&acc), s.state().unwrap())
                })
            };
            let first = run(2);
            for threads in [2, 1, 3] {
                let again = run(threads);
                assert!(
                    again.0 == first.0 && again.1 == first.1,
                    "{isa} {kernel}: {threads} threads differ"
                );
            }
        }
    }
}

#[test]
fn all_pairs_results_do_not_depend_on_the_blocking() {
    // Every body sums j = 0..N in order whatever the blocks and tiles.
    let b = bodies(300, 9);
    for isa in Isa::available() {
        let reference = bits(
            &sim(&b, Kernel::Tiled { block: 64 }, 0.0, tuning(isa))
                .accelerations()
                .unwrap(),
        );
        for (i_block, j_tile) in [(1, 1), (17, 7), (100, 299), (4096, 1 << 20)] {
            let t = CpuTuning {
                isa: Some(isa),
                i_block,
                j_tile,
                third_law_min_n: usize::MAX,
            };
            let acc = sim(&b, Kernel::Simt { block: 64 }, 0.0, t)
                .accelerations()
                .unwrap();
            assert_eq!(
                bits(&acc),
                reference,
                "{isa} i_block {i_block} j_tile {j_tile}"
            );
        }
        // The triangle schedule with tiny and huge tiles (odd and even
        // block counts, several j-chunks per tile), guarded (eps = 0) and
        // unguarded: still accurate.
        for eps in [0.0, 0.1] {
            let want = {
                let sys = System64::from_bodies(&b);
                oracle::accelerations(&sys.pos, &sys.mass, 1.0, eps as f32 as f64)
            };
            for i_block in [1, 48, 160, 1 << 20] {
                let t = CpuTuning {
                    i_block,
                    j_tile: 1,
                    ..tuning(isa)
                };
                let acc = sim(&b, Kernel::Triangle { block: 64 }, eps, t)
                    .accelerations()
                    .unwrap();
                let err = max_relative_error(&acc, &want);
                assert!(
                    err <= TOLERANCE,
                    "{isa} triangle i_block {i_block} eps {eps}: {err:.3e}"
                );
            }
        }
    }
}

#[test]
fn simt_and_tiled_switch_to_the_third_law_loop_at_third_law_min_n() {
    let b = bodies(300, 21);
    let want = {
        let sys = System64::from_bodies(&b);
        oracle::accelerations(&sys.pos, &sys.mass, 1.0, 0.1f32 as f64)
    };
    for isa in Isa::available() {
        let run = |kernel: Kernel, third_law_min_n: usize| {
            let t = CpuTuning {
                third_law_min_n,
                ..tuning(isa)
            };
            bits(&sim(&b, kernel, 0.1, t).accelerations().unwrap())
        };
        let triangle = run(Kernel::Triangle { block: 64 }, usize::MAX);
        let all_pairs = run(Kernel::Simt { block: 64 }, usize::MAX);
        assert_ne!(
            triangle, all_pairs,
            "{isa}: the two loops sum in different orders"
        );
        for kernel in [Kernel::Simt { block: 64 }, Kernel::Tiled { block: 128 }] {
            assert_eq!(run(kernel, 300), triangle, "{isa} {kernel}: N = threshold");
            assert_eq!(
                run(kernel, 301),
                all_pairs,
                "{isa} {kernel}: N below threshold"
            );
        }
        let acc = sim(&b, Kernel::Tiled { block: 64 }, 0.1, tuning(isa))
            .accelerations()
            .unwrap();
        let err = max_relative_error(&acc, &want);
        assert!(err <= TOLERANCE, "{isa}: {err:.3e}");
    }
}

#[test]
fn leapfrog_runs_match_the_scalar_path() {
    let b = bodies(512, 3);
    let run = |isa: Isa, kernel: Kernel| {
        let mut s = Simulation::builder(b.clone())
            .softening(0.1)
            .dt(0.005)
            .kernel(kernel)
            .integrator(Integrator::Leapfrog)
            .backend(Backend::Cpu(tuning(isa)))
            .build()
            .unwrap();
        s.step(20).unwrap();
        s.state().unwrap().bodies
    };
    let reference = run(Isa::Scalar, Kernel::Simt { block: 64 });
    let size = reference
        .positions
        .iter()
        .fold(0.0f32, |m, p| m.max(p.abs().max_element()));
    let moved = reference
        .positions
        .iter()
        .zip(&b.positions)
        .fold(0.0f32, |m, (p, q)| m.max((*p - *q).length()));
    assert!(moved > 0.05, "the bodies moved: {moved}");
    for isa in Isa::available() {
        for kernel in kernels() {
            let got = run(isa, kernel);
            let dx = got
                .positions
                .iter()
                .zip(&reference.positions)
                .fold(0.0f32, |m, (p, q)| m.max((*p - *q).length()));
            let dv = got
                .velocities
                .iter()
                .zip(&reference.velocities)
                .fold(0.0f32, |m, (p, q)| m.max((*p - *q).length()));
            assert!(
                dx <= 1e-5 * size && dv <= 1e-4,
                "{isa} {kernel}: position diff {dx:e} (size {size}), velocity diff {dv:e}"
            );
        }
    }
}

#[test]
fn isa_selection_and_errors() {
    let available = Isa::available();
    assert_eq!(available[0], Isa::detect());
    assert!(available.contains(&Isa::Scalar));
    for isa in Isa::ALL {
        assert_eq!(Isa::from_name(isa.name()), Some(isa));
        assert_eq!(isa.is_available(), available.contains(&isa));
    }
    let b = bodies(40, 1);
    // The default picks the best available.
    let s = sim(&b, Kernel::default(), 0.1, CpuTuning::default());
    assert_eq!(
        s.backend(),
        BackendKind::Cpu {
            isa: Isa::detect(),
            threads: rayon::current_num_threads()
        }
    );
    let missing: Vec<Isa> = Isa::ALL
        .into_iter()
        .filter(|isa| !isa.is_available())
        .collect();
    for isa in &missing {
        let e = Simulation::builder(b.clone())
            .backend(Backend::Cpu(tuning(*isa)))
            .build()
            .unwrap_err();
        assert!(
            matches!(&e, Error::Unsupported(m) if m.contains(isa.name())),
            "{isa}: {e}"
        );
    }
    if missing.is_empty() {
        // Every instruction set is here: forcing the scalar one must work.
        let s = sim(&b, Kernel::default(), 0.1, tuning(Isa::Scalar));
        assert!(s.backend().to_string().starts_with("cpu (scalar, "));
    }
    for (i_block, j_tile) in [(0, 1), (1, 0)] {
        let e = Simulation::builder(b.clone())
            .backend(Backend::Cpu(CpuTuning {
                i_block,
                j_tile,
                ..CpuTuning::default()
            }))
            .build()
            .unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
    }
}
