//! The block-pair kernels of the committed PTX (`gpu_kernels::block_pair`:
//! what a ring of MPI ranks launches per visiting block), run by the
//! interpreter on blocks of awkward sizes (1, 2, 33, 100, 257, and one block
//! shorter than a group), against an f64 reference computed here, under the
//! deterministic schedule and three adversarial ones, race detector on.
//!
//! Tolerances as in `kernels.rs` (`common::accel_tolerance`): a sum of
//! `terms` pair terms, each with the hardware `rsqrt` error. `block_pull` and
//! `block_potential` use no atomics and must give the same bits under every
//! schedule; `block_pair`'s float atomics may add in any order.

#![allow(
    clippy::needless_range_loop,
    reason = "component loops read best indexed"
)]

mod common;

use common::*;
use gpu_kernels::shape;
use softcuda::{Device, Schedule};

/// `(ni, nj)`: single bodies, a block shorter than a warp against one
/// longer than a group of the pair kernel (128 bodies at block 32), and the
/// reverse.
const SIZES: [(usize, usize); 5] = [(1, 1), (2, 33), (33, 2), (100, 257), (257, 100)];
const EPS2: [f32; 2] = [0.0, 0.01];

fn blocks_for(schedule: Schedule) -> &'static [u32] {
    match schedule {
        Schedule::Deterministic => &[32, 64, 256],
        Schedule::Adversarial { .. } => &[32, 128],
    }
}

/// f64 `sum_{j in J} m_j r_ij / (|r_ij|^2 + eps2)^(3/2)` for every `i` of
/// `I`, and per component the sum of the terms' magnitudes.
fn reference_cross(pi: &[[f32; 4]], pj: &[[f32; 4]], eps2: f32) -> Vec<([f64; 3], [f64; 3])> {
    pi.iter()
        .map(|p| {
            let (mut a, mut s) = ([0f64; 3], [0f64; 3]);
            for q in pj {
                let r: [f64; 3] = std::array::from_fn(|k| q[k] as f64 - p[k] as f64);
                let d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + eps2 as f64;
                if d2 == 0.0 {
                    continue; // the self-pair of a diagonal block: exactly zero
                }
                let f = q[3] as f64 / (d2 * d2.sqrt());
                for k in 0..3 {
                    a[k] += f * r[k];
                    s[k] += (f * r[k]).abs();
                }
            }
            (a, s)
        })
        .collect()
}

/// `got - start` against the reference with `terms` roundings (plus the one
/// addition to `start`, relative to `|start|`).
fn check_added(
    what: &str,
    got: &[[f32; 4]],
    start: &[[f32; 4]],
    reference: &[([f64; 3], [f64; 3])],
    terms: usize,
) {
    let u = (2.0f64).powi(-24);
    let tol = accel_tolerance(terms);
    for i in 0..got.len() {
        for k in 0..3 {
            let want = start[i][k] as f64 + reference[i].0[k];
            let allowed = tol * reference[i].1[k] + u * (start[i][k].abs() as f64 + want.abs());
            let err = (got[i][k] as f64 - want).abs();
            assert!(
                err <= allowed,
                "{what}: body {i} component {k}: {} vs {want} (error {err:e}, allowed {allowed:e})",
                got[i][k]
            );
        }
        assert_eq!(
            got[i][3].to_bits(),
            start[i][3].to_bits(),
            "{what}: w of {i}"
        );
    }
}

/// Starting values of an accumulator (a running sum from earlier blocks).
fn start_values(n: usize, seed: u64) -> Vec<[f32; 4]> {
    velocities(n, seed)
        .iter()
        .map(|v| [v[0], v[1], v[2], 0.25])
        .collect()
}

fn upload_all(dev: &mut Device, arrays: &[&[[f32; 4]]]) -> Vec<u64> {
    arrays.iter().map(|a| upload(dev, &to_bytes(a))).collect()
}

#[test]
fn block_pull_adds_the_pull_of_the_other_block() {
    let m = module();
    for name in ["nbody_block_pull", "nbody_block_pull_guarded"] {
        for (ni, nj) in SIZES {
            for eps2 in EPS2 {
                let pi = bodies(ni, 3 + ni as u64);
                let pj = bodies(nj, 5 + nj as u64);
                let a0 = start_values(ni, 7);
                let reference = reference_cross(&pi, &pj, eps2);
                let mut first: Option<(u32, Vec<[f32; 4]>)> = None;
                for schedule in schedules() {
                    for &block in blocks_for(schedule) {
                        let what =
                            format!("{name} {ni}x{nj} block {block} eps2 {eps2} {schedule:?}");
                        let mut dev = device();
                        let b = upload_all(&mut dev, &[&pi, &pj, &a0]);
                        let s = shape::tiled(ni as u32, block);
                        launch(
                            &mut dev,
                            &m,
                            name,
                            s.grid,
                            block,
                            s.shared_bytes,
                            &[
                                Arg::Ptr(b[0]),
                                Arg::Ptr(b[1]),
                                Arg::Ptr(b[2]),
                                Arg::U32(ni as u32),
                                Arg::U32(nj as u32),
                                Arg::F32(eps2),
                            ],
                            schedule,
                        )
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                        let got = from_bytes(&download(&mut dev, b[2], 16 * ni));
                        check_added(&what, &got, &a0, &reference, nj);
                        assert_eq!(from_bytes(&download(&mut dev, b[0], 16 * ni)), pi);
                        assert_eq!(from_bytes(&download(&mut dev, b[1], 16 * nj)), pj);
                        match &first {
                            None => first = Some((block, got)),
                            Some((fb, f)) if *fb == block => {
                                assert_eq!(*f, got, "{what}: differs from the deterministic run")
                            }
                            Some(_) => {}
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn block_pull_of_a_block_on_itself_skips_the_self_pair() {
    // The diagonal of an all-pairs ring: the same buffer as I and J. At zero
    // softening only the guarded twin is launched (the self-pair would be
    // 0 * inf); with softening both give exactly zero for it.
    let m = module();
    for (name, eps2) in [
        ("nbody_block_pull_guarded", 0.0),
        ("nbody_block_pull_guarded", 0.01),
        ("nbody_block_pull", 0.01),
    ] {
        for n in [1usize, 33, 257] {
            let p = bodies(n, 11 + n as u64);
            let zero = vec![[0f32; 4]; n];
            let reference = reference_cross(&p, &p, eps2);
            let block = 64;
            let mut dev = device();
            let b = upload_all(&mut dev, &[&p, &zero]);
            let s = shape::tiled(n as u32, block);
            let what = format!("{name} diagonal N {n} eps2 {eps2}");
            launch(
                &mut dev,
                &m,
                name,
                s.grid,
                block,
                s.shared_bytes,
                &[
                    Arg::Ptr(b[0]),
                    Arg::Ptr(b[0]),
                    Arg::Ptr(b[1]),
                    Arg::U32(n as u32),
                    Arg::U32(n as u32),
                    Arg::F32(eps2),
                ],
                Schedule::Deterministic,
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
            let got = from_bytes(&download(&mut dev, b[1], 16 * n));
            check_added(&what, &got, &zero, &reference, n);
        }
    }
}

#[test]
fn block_pair_adds_both_halves_of_every_cross_pair() {
    let m = module();
    for name in ["nbody_block_pair", "nbody_block_pair_guarded"] {
        for (ni, nj) in SIZES {
            for eps2 in EPS2 {
                let pi = bodies(ni, 13 + ni as u64);
                let pj = bodies(nj, 17 + nj as u64);
                let (ai0, rj0) = (start_values(ni, 19), start_values(nj, 23));
                let on_i = reference_cross(&pi, &pj, eps2);
                let on_j = reference_cross(&pj, &pi, eps2);
                for schedule in schedules() {
                    for &block in blocks_for(schedule) {
                        let what =
                            format!("{name} {ni}x{nj} block {block} eps2 {eps2} {schedule:?}");
                        let mut dev = device();
                        let b = upload_all(&mut dev, &[&pi, &pj, &ai0, &rj0]);
                        let s = shape::block_pair(ni as u32, nj as u32, block).unwrap();
                        launch(
                            &mut dev,
                            &m,
                            name,
                            s.grid,
                            block,
                            s.shared_bytes,
                            &[
                                Arg::Ptr(b[0]),
                                Arg::Ptr(b[1]),
                                Arg::Ptr(b[2]),
                                Arg::Ptr(b[3]),
                                Arg::U32(ni as u32),
                                Arg::U32(nj as u32),
                                Arg::F32(eps2),
                            ],
                            schedule,
                        )
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                        // Each body's sum is split between register rows,
                        // shared-memory reactions and atomic adds: at most
                        // twice its terms in roundings.
                        let ai = from_bytes(&download(&mut dev, b[2], 16 * ni));
                        check_added(&format!("{what} (I)"), &ai, &ai0, &on_i, 2 * nj);
                        let rj = from_bytes(&download(&mut dev, b[3], 16 * nj));
                        check_added(&format!("{what} (J)"), &rj, &rj0, &on_j, 2 * ni);
                    }
                }
            }
        }
    }
}

#[test]
fn block_potential_sums_the_cross_pairs_once() {
    let m = module();
    for (ni, nj) in SIZES {
        for eps2 in EPS2 {
            let pi = bodies(ni, 29 + ni as u64);
            let pj = bodies(nj, 31 + nj as u64);
            let mut reference = 0.0f64;
            for p in &pi {
                for q in &pj {
                    let d2: f64 = (0..3)
                        .map(|k| (q[k] as f64 - p[k] as f64).powi(2))
                        .sum::<f64>()
                        + eps2 as f64;
                    reference += p[3] as f64 * q[3] as f64 / d2.sqrt();
                }
            }
            let mut first: Option<(u32, Vec<u8>)> = None;
            for schedule in schedules() {
                for &block in blocks_for(schedule) {
                    let what =
                        format!("block_potential {ni}x{nj} block {block} eps2 {eps2} {schedule:?}");
                    let mut dev = device();
                    let b = upload_all(&mut dev, &[&pi, &pj]);
                    let s = shape::block_potential(ni as u32, block);
                    let count = shape::block_potential_partials(ni as u32, block) as usize;
                    let partials = upload(&mut dev, &vec![0u8; 8 * count]);
                    launch(
                        &mut dev,
                        &m,
                        "nbody_block_potential",
                        s.grid,
                        block,
                        s.shared_bytes,
                        &[
                            Arg::Ptr(b[0]),
                            Arg::Ptr(b[1]),
                            Arg::U32(ni as u32),
                            Arg::U32(nj as u32),
                            Arg::F32(eps2),
                            Arg::Ptr(partials),
                        ],
                        schedule,
                    )
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                    let raw = download(&mut dev, partials, 8 * count);
                    let sum: f64 = raw
                        .chunks_exact(8)
                        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                        .sum();
                    // Positive terms; each f32 tile sum of at most `block` terms.
                    let tol = (2.0f64).powi(-22) + (block as f64 + 8.0) * (2.0f64).powi(-24);
                    assert!(
                        (sum - reference).abs() <= tol * reference,
                        "{what}: {sum} vs {reference}"
                    );
                    match &first {
                        None => first = Some((block, raw)),
                        Some((fb, f)) if *fb == block => {
                            assert_eq!(*f, raw, "{what}: differs from the deterministic run")
                        }
                        Some(_) => {}
                    }
                }
            }
        }
    }
}
