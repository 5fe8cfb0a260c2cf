//! Every entry point of the committed PTX, run by the interpreter on small
//! inputs and compared with an f64 reference computed here: awkward N (1, 2,
//! 33, 100, 257), several block sizes, softening 0 and 0.1, under the
//! deterministic schedule and three adversarial seeds, with the race
//! detector watching shared and global memory.
//!
//! Tolerances come from f32 rounding (see `common::accel_tolerance`) plus
//! the hardware's 2^-22 for `rsqrt.approx.ftz.f32`, which the interpreter
//! computes as the H200 does (`softcuda::mufu`, within 2 ulp of the
//! correctly rounded value).
//!
//! Kernels without atomics must give bit-identical results under every
//! schedule; the triangle kernel's float atomics may add in any order.
//! (Over 600 lines: every entry point of the committed PTX, sharing one set of helpers.)

#![allow(
    clippy::needless_range_loop,
    clippy::too_many_arguments,
    reason = "component loops read best indexed"
)]

mod common;

use common::*;
use gpu_kernels::{entry::Entry, shape};
use softcuda::{Device, Schedule};

const NS: [usize; 5] = [1, 2, 33, 100, 257];
const EPS2: [f32; 2] = [0.0, 0.01];
const G: f32 = 1.0;
const DT: f32 = 0.01;

fn blocks_for(schedule: Schedule) -> &'static [u32] {
    match schedule {
        Schedule::Deterministic => &[32, 64, 256],
        Schedule::Adversarial { .. } => &[32, 128],
    }
}

/// Checks accelerations against the f64 reference; `terms` bounds the
/// number of roundings in each sum.
fn check_accel(what: &str, a: &[[f32; 4]], p: &[[f32; 4]], eps2: f32, terms: usize) {
    let r = reference_accel(p, G, eps2);
    let tol = accel_tolerance(terms);
    for i in 0..p.len() {
        for k in 0..3 {
            let err = (a[i][k] as f64 - r[i].0[k]).abs();
            assert!(
                err <= tol * r[i].1[k],
                "{what}: body {i} component {k}: {} vs reference {} (error {err:e}, allowed {:e})",
                a[i][k],
                r[i].0[k],
                tol * r[i].1[k]
            );
        }
        assert_eq!(a[i][3], 0.0, "{what}: w of body {i}");
    }
}

/// Checks a semi-implicit Euler step against the f64 reference.
fn check_euler(
    what: &str,
    p: &[[f32; 4]],
    v: &[[f32; 4]],
    p1: &[[f32; 4]],
    v1: &[[f32; 4]],
    eps2: f32,
) {
    let r = reference_accel(p, G, eps2);
    let u = (2.0f64).powi(-24);
    let tol = accel_tolerance(2 * p.len());
    for i in 0..p.len() {
        for k in 0..3 {
            let a = r[i].0[k];
            let vr = v[i][k] as f64 + a * DT as f64;
            let xr = p[i][k] as f64 + vr * DT as f64;
            let tol_v = DT as f64 * tol * r[i].1[k]
                + 2.0 * u * (v[i][k].abs() as f64 + (a * DT as f64).abs());
            let tol_x =
                DT as f64 * tol_v + 2.0 * u * (p[i][k].abs() as f64 + (vr * DT as f64).abs());
            assert!(
                (v1[i][k] as f64 - vr).abs() <= tol_v,
                "{what}: velocity {i}.{k}: {} vs {vr}",
                v1[i][k]
            );
            assert!(
                (p1[i][k] as f64 - xr).abs() <= tol_x,
                "{what}: position {i}.{k}: {} vs {xr}",
                p1[i][k]
            );
        }
        assert_eq!(p1[i][3].to_bits(), p[i][3].to_bits(), "{what}: mass {i}");
        assert_eq!(
            v1[i][3].to_bits(),
            v[i][3].to_bits(),
            "{what}: velocity w {i}"
        );
    }
}

struct Setup {
    dev: Device,
    pos: u64,
    pos_out: u64,
    vel: u64,
    acc: u64,
}

fn setup(p: &[[f32; 4]], v: &[[f32; 4]]) -> Setup {
    let mut dev = device();
    let pos = upload(&mut dev, &to_bytes(p));
    let pos_out = upload(&mut dev, &vec![0u8; 16 * p.len()]);
    let vel = upload(&mut dev, &to_bytes(v));
    let acc = upload(&mut dev, &vec![0u8; 16 * p.len()]);
    Setup {
        dev,
        pos,
        pos_out,
        vel,
        acc,
    }
}

/// Runs `f` for every schedule, N, block and softening; `f` returns the
/// raw output bytes, which must not depend on the schedule when `exact`.
fn sweep(name: &str, exact: bool, f: impl Fn(Schedule, usize, u32, f32) -> Vec<u8>) {
    let m = module();
    assert!(m.kernel(name).is_some());
    for n in NS {
        for eps2 in EPS2 {
            let mut first: Option<(u32, Vec<u8>)> = None;
            for schedule in schedules() {
                for &block in blocks_for(schedule) {
                    let out = f(schedule, n, block, eps2);
                    if exact {
                        match &first {
                            None => first = Some((block, out)),
                            Some((b, o)) if *b == block => assert!(
                                *o == out,
                                "{name}: N {n} block {block} eps2 {eps2}: {schedule:?} differs from the deterministic result"
                            ),
                            Some(_) => {}
                        }
                    }
                }
            }
        }
    }
}

/// Threads per body of the split kernels for a block (`None`: a kernel
/// without the parameter).
type SplitOf = Option<fn(u32) -> u32>;

fn sweep_force(
    name: &str,
    euler: bool,
    grid: fn(usize, u32) -> (u32, u32),
    terms: fn(usize) -> usize,
    exact: bool,
) {
    sweep_force_split(name, euler, grid, terms, exact, None);
}

fn sweep_force_split(
    name: &str,
    euler: bool,
    grid: fn(usize, u32) -> (u32, u32),
    terms: fn(usize) -> usize,
    exact: bool,
    split: SplitOf,
) {
    let m = module();
    sweep(name, exact, |schedule, n, block, eps2| {
        let p = bodies(n, n as u64 * 7 + block as u64);
        let v = velocities(n, n as u64);
        let mut s = setup(&p, &v);
        let (g, shared) = match split {
            Some(split) => {
                let shape = shape::split(n as u32, block, split(block));
                (shape.grid, shape.shared_bytes)
            }
            None => grid(n, block),
        };
        // The split kernels take their threads per body after `n`.
        let with_split = |mut args: Vec<Arg>| {
            if let Some(split) = split {
                let at = args.iter().position(|a| matches!(a, Arg::U32(_))).unwrap() + 1;
                args.insert(at, Arg::U32(split(block)));
            }
            args
        };
        let what = format!("{name} N {n} block {block} eps2 {eps2} {schedule:?}");
        if g == 0 {
            // Nothing to launch (the host skips empty grids).
            assert!(n < 2, "{what}");
        } else if euler {
            launch(
                &mut s.dev,
                &m,
                name,
                g,
                block,
                shared,
                &with_split(vec![
                    Arg::Ptr(s.pos),
                    Arg::Ptr(s.pos_out),
                    Arg::Ptr(s.vel),
                    Arg::U32(n as u32),
                    Arg::F32(DT),
                    Arg::F32(G),
                    Arg::F32(eps2),
                ]),
                schedule,
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        } else {
            launch(
                &mut s.dev,
                &m,
                name,
                g,
                block,
                shared,
                &with_split(vec![
                    Arg::Ptr(s.pos),
                    Arg::Ptr(s.acc),
                    Arg::U32(n as u32),
                    Arg::F32(G),
                    Arg::F32(eps2),
                ]),
                schedule,
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        if euler {
            let p1 = from_bytes(&download(&mut s.dev, s.pos_out, 16 * n));
            let v1 = from_bytes(&download(&mut s.dev, s.vel, 16 * n));
            check_euler(&what, &p, &v, &p1, &v1, eps2);
            // Inputs untouched.
            assert_eq!(
                from_bytes(&download(&mut s.dev, s.pos, 16 * n)),
                p,
                "{what}"
            );
            let mut out = to_bytes(&p1);
            out.extend(to_bytes(&v1));
            out
        } else {
            let a = from_bytes(&download(&mut s.dev, s.acc, 16 * n));
            check_accel(&what, &a, &p, eps2, terms(n));
            assert_eq!(
                from_bytes(&download(&mut s.dev, s.pos, 16 * n)),
                p,
                "{what}"
            );
            to_bytes(&a)
        }
    });
}

// Launch shapes come from the kernel crate (`gpu_kernels::shape`), the same
// functions the host plans use, so a change of thread mapping is tested here
// as shipped.

fn per_body(n: usize, block: u32) -> (u32, u32) {
    let s = shape::per_body(n as u32, block);
    (s.grid, s.shared_bytes)
}

fn tiled(n: usize, block: u32) -> (u32, u32) {
    let s = shape::tiled(n as u32, block);
    (s.grid, s.shared_bytes)
}

fn triangle(n: usize, block: u32) -> (u32, u32) {
    let s = shape::triangle(n as u32, block).expect("a small grid");
    (s.grid, s.shared_bytes)
}

// Each force kernel and its guarded twin (coincident bodies at zero
// softening contribute nothing); on these distinct bodies both must match
// the reference.

#[test]
fn simt_accel() {
    for name in ["nbody_simt_accel", "nbody_simt_accel_guarded"] {
        sweep_force(name, false, per_body, |n| n, true);
    }
}

#[test]
fn simt_euler() {
    for name in ["nbody_simt_euler", "nbody_simt_euler_guarded"] {
        sweep_force(name, true, per_body, |n| n, true);
    }
}

#[test]
fn tiled_accel() {
    for name in ["nbody_tiled_accel", "nbody_tiled_accel_guarded"] {
        sweep_force(name, false, tiled, |n| n, true);
    }
}

#[test]
fn tiled_euler() {
    for name in ["nbody_tiled_euler", "nbody_tiled_euler_guarded"] {
        sweep_force(name, true, tiled, |n| n, true);
    }
}

/// The split kernels (issue 23): `S` threads per body, the partial sums
/// added by part 0 in a fixed order, so every schedule gives the same bits;
/// with 8 parts (or the block's size if smaller) and with one body per
/// block.
#[test]
fn split_accel() {
    for name in ["nbody_split_accel", "nbody_split_accel_guarded"] {
        for split in [|b: u32| b.min(8), |b: u32| b] {
            sweep_force_split(name, false, tiled, |n| n, true, Some(split));
        }
    }
}

#[test]
fn split_euler() {
    for name in ["nbody_split_euler", "nbody_split_euler_guarded"] {
        for split in [|b: u32| b.min(8), |b: u32| b] {
            sweep_force_split(name, true, tiled, |n| n, true, Some(split));
        }
    }
}

#[test]
fn triangle_accel() {
    // Each body's sum is split between its own block rows, the reaction
    // columns and the atomic adds: at most 2N roundings.
    for name in ["nbody_triangle_accel", "nbody_triangle_accel_guarded"] {
        sweep_force(name, false, triangle, |n| 2 * n, false);
    }
}

#[test]
fn energy() {
    let m = module();
    sweep("nbody_energy", true, |schedule, n, block, eps2| {
        let p = bodies(n, 11 + n as u64);
        let v = velocities(n, 3);
        let mut s = setup(&p, &v);
        let launch_shape = shape::energy(n as u32, block);
        let blocks = launch_shape.grid;
        let partials = upload(&mut s.dev, &vec![0u8; 16 * blocks as usize]);
        let what = format!("nbody_energy N {n} block {block} eps2 {eps2} {schedule:?}");
        launch(
            &mut s.dev,
            &m,
            "nbody_energy",
            blocks,
            block,
            launch_shape.shared_bytes,
            &[
                Arg::Ptr(s.pos),
                Arg::Ptr(s.vel),
                Arg::U32(n as u32),
                Arg::F32(eps2),
                Arg::Ptr(partials),
            ],
            schedule,
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let raw = download(&mut s.dev, partials, 16 * blocks as usize);
        let vals: Vec<f64> = raw
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let kinetic: f64 = vals.iter().step_by(2).sum();
        let pair: f64 = vals.iter().skip(1).step_by(2).sum();
        let mut k_ref = 0.0;
        let mut u_ref = 0.0;
        for i in 0..n {
            let vv: f64 = (0..3).map(|k| v[i][k] as f64 * v[i][k] as f64).sum();
            k_ref += 0.5 * p[i][3] as f64 * vv;
            for j in 0..n {
                if i != j {
                    let d2: f64 = (0..3)
                        .map(|k| (p[j][k] as f64 - p[i][k] as f64).powi(2))
                        .sum::<f64>()
                        + eps2 as f64;
                    u_ref += p[i][3] as f64 * p[j][3] as f64 / d2.sqrt();
                }
            }
        }
        assert!(
            (kinetic - k_ref).abs() <= 1e-12 * k_ref.abs(),
            "{what}: kinetic {kinetic} vs {k_ref}"
        );
        // Positive terms; each f32 tile sum of at most `block` terms.
        let tol = (2.0f64).powi(-22) + (block as f64 + 8.0) * (2.0f64).powi(-24);
        assert!(
            (pair - u_ref).abs() <= tol * u_ref.abs(),
            "{what}: potential sum {pair} vs {u_ref}"
        );
        raw
    });
}

/// The elementwise kernels: bit-exact against the same f32 FMAs on the
/// host (PTX `fma.rn.f32` is the correctly rounded fused multiply-add).
#[test]
fn kick_drift_and_fused_kick_drift() {
    let m = module();
    for n in NS {
        for schedule in schedules() {
            for &block in blocks_for(schedule) {
                let p = bodies(n, 5);
                let v = velocities(n, 6);
                let a: Vec<[f32; 4]> = velocities(n, 99)
                    .iter()
                    .map(|x| [x[0], x[1], x[2], 0.0])
                    .collect();
                let fma = |x: f32, y: f32, z: f32| x.mul_add(y, z);
                let grid = (n as u32).div_ceil(block);
                let what = format!("N {n} block {block} {schedule:?}");

                // kick: v += a dt
                let mut s = setup(&p, &v);
                let acc = upload(&mut s.dev, &to_bytes(&a));
                launch(
                    &mut s.dev,
                    &m,
                    "nbody_kick",
                    grid,
                    block,
                    0,
                    &[
                        Arg::Ptr(s.vel),
                        Arg::Ptr(acc),
                        Arg::U32(n as u32),
                        Arg::F32(DT),
                    ],
                    schedule,
                )
                .unwrap_or_else(|e| panic!("kick {what}: {e}"));
                let v1 = from_bytes(&download(&mut s.dev, s.vel, 16 * n));
                for i in 0..n {
                    let want = [
                        fma(a[i][0], DT, v[i][0]),
                        fma(a[i][1], DT, v[i][1]),
                        fma(a[i][2], DT, v[i][2]),
                        v[i][3],
                    ];
                    assert_eq!(
                        v1[i].map(f32::to_bits),
                        want.map(f32::to_bits),
                        "kick {what} body {i}"
                    );
                }

                // drift: pos_out = pos + v dt
                let mut s = setup(&p, &v);
                launch(
                    &mut s.dev,
                    &m,
                    "nbody_drift",
                    grid,
                    block,
                    0,
                    &[
                        Arg::Ptr(s.pos),
                        Arg::Ptr(s.pos_out),
                        Arg::Ptr(s.vel),
                        Arg::U32(n as u32),
                        Arg::F32(DT),
                    ],
                    schedule,
                )
                .unwrap_or_else(|e| panic!("drift {what}: {e}"));
                let p1 = from_bytes(&download(&mut s.dev, s.pos_out, 16 * n));
                for i in 0..n {
                    let want = [
                        fma(v[i][0], DT, p[i][0]),
                        fma(v[i][1], DT, p[i][1]),
                        fma(v[i][2], DT, p[i][2]),
                        p[i][3],
                    ];
                    assert_eq!(
                        p1[i].map(f32::to_bits),
                        want.map(f32::to_bits),
                        "drift {what} body {i}"
                    );
                }

                // kick_drift: v' = v + a dt, x' = x + v' dt, acc untouched.
                let mut s = setup(&p, &v);
                let acc = upload(&mut s.dev, &to_bytes(&a));
                launch(
                    &mut s.dev,
                    &m,
                    "nbody_kick_drift",
                    grid,
                    block,
                    0,
                    &[
                        Arg::Ptr(s.pos),
                        Arg::Ptr(s.pos_out),
                        Arg::Ptr(s.vel),
                        Arg::Ptr(acc),
                        Arg::U32(n as u32),
                        Arg::F32(DT),
                    ],
                    schedule,
                )
                .unwrap_or_else(|e| panic!("kick_drift {what}: {e}"));
                let p1 = from_bytes(&download(&mut s.dev, s.pos_out, 16 * n));
                let v1 = from_bytes(&download(&mut s.dev, s.vel, 16 * n));
                let a1 = from_bytes(&download(&mut s.dev, acc, 16 * n));
                for i in 0..n {
                    let vw: [f32; 4] = [
                        fma(a[i][0], DT, v[i][0]),
                        fma(a[i][1], DT, v[i][1]),
                        fma(a[i][2], DT, v[i][2]),
                        v[i][3],
                    ];
                    let pw = [
                        fma(vw[0], DT, p[i][0]),
                        fma(vw[1], DT, p[i][1]),
                        fma(vw[2], DT, p[i][2]),
                        p[i][3],
                    ];
                    assert_eq!(
                        v1[i].map(f32::to_bits),
                        vw.map(f32::to_bits),
                        "kick_drift {what} v {i}"
                    );
                    assert_eq!(
                        p1[i].map(f32::to_bits),
                        pw.map(f32::to_bits),
                        "kick_drift {what} x {i}"
                    );
                    assert_eq!(
                        a1[i].map(f32::to_bits),
                        a[i].map(f32::to_bits),
                        "kick_drift {what} acc {i}"
                    );
                }
            }
        }
    }
}

#[test]
fn check_finite_flags_the_non_finite_body() {
    let m = module();
    for n in NS {
        for schedule in schedules() {
            for &block in blocks_for(schedule) {
                let mut p = bodies(n, 5);
                let v = velocities(n, 6);
                let grid = (n as u32).div_ceil(block);
                let what = format!("N {n} block {block} {schedule:?}");
                let run = |p: &[[f32; 4]]| {
                    let mut s = setup(p, &v);
                    let flag = upload(&mut s.dev, &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
                    launch(
                        &mut s.dev,
                        &m,
                        "nbody_check_finite",
                        grid,
                        block,
                        0,
                        &[
                            Arg::Ptr(s.pos),
                            Arg::Ptr(s.vel),
                            Arg::U32(n as u32),
                            Arg::U32(7),
                            Arg::Ptr(flag),
                        ],
                        schedule,
                    )
                    .unwrap_or_else(|e| panic!("check_finite {what}: {e}"));
                    let f = download(&mut s.dev, flag, 8);
                    (
                        u32::from_le_bytes(f[..4].try_into().unwrap()),
                        u32::from_le_bytes(f[4..].try_into().unwrap()),
                    )
                };
                assert_eq!(run(&p), (u32::MAX, 0), "all finite: {what}");
                let bad = n / 2;
                p[bad][1] = f32::INFINITY;
                assert_eq!(run(&p), (7, bad as u32), "infinite y: {what}");
                p[bad][1] = f32::NAN;
                assert_eq!(run(&p), (7, bad as u32), "NaN y: {what}");
                // Two bodies going bad in the same step: both threads report
                // it without racing on the flag (plain stores of two threads
                // to one word were a race), and the flag names the
                // higher-numbered one whatever the schedule.
                if n > 1 {
                    p[0][2] = f32::NEG_INFINITY;
                    // Body 0 and body `bad` (>= 0): the higher-numbered is `bad`.
                    assert_eq!(run(&p), (7, bad as u32), "two bad bodies: {what}");
                }
            }
        }
    }
}

/// Every entry point of the kernel table is in the PTX and has a test in
/// this file (the block-pair family in `block_pair.rs`): the table (`gpu_kernels::entry::Entry::ALL`) is the list, so a
/// new kernel fails here until it is tested.
#[test]
fn every_entry_point_is_covered() {
    let m = module();
    let tested = [
        "nbody_simt_accel",
        "nbody_simt_accel_guarded",
        "nbody_simt_euler",
        "nbody_simt_euler_guarded",
        "nbody_tiled_accel",
        "nbody_tiled_accel_guarded",
        "nbody_tiled_euler",
        "nbody_tiled_euler_guarded",
        "nbody_triangle_accel",
        "nbody_triangle_accel_guarded",
        "nbody_split_accel",
        "nbody_split_accel_guarded",
        "nbody_split_euler",
        "nbody_split_euler_guarded",
        "nbody_energy",
        "nbody_kick",
        "nbody_drift",
        "nbody_kick_drift",
        "nbody_check_finite",
        // The short-range MD kernels run on this interpreter through the MD
        // plan itself: nbody-host/src/plan/md/tests/ (every schedule).
        "nbody_md_gate",
        "nbody_md_bin",
        "nbody_scan_blocks",
        "nbody_scan_sums",
        "nbody_scan_add",
        "nbody_md_scatter",
        "nbody_md_reorder",
        "nbody_md_copy_back",
        "nbody_md_ghost_count",
        "nbody_md_ghost_place",
        "nbody_md_ghost_update",
        "nbody_md_neighbours",
        "nbody_md_count_entries",
        "nbody_md_drift",
        // The thermostats' kernels, through the MD plan under each ensemble
        // (nbody-host/src/plan/md/tests/, nbody-host/tests/md_gpu_ensemble.rs).
        "nbody_md_ensemble_begin",
        "nbody_md_ensemble_pass",
        "nbody_md_ensemble_end",
        // In tests/block_pair.rs.
        "nbody_block_pull",
        "nbody_block_pull_guarded",
        "nbody_block_pair",
        "nbody_block_pair_guarded",
        "nbody_block_potential",
        // In tests/hermite.rs.
        "nbody_hermite_predict",
        "nbody_hermite_gather",
        "nbody_hermite_scatter",
        "nbody_hermite_force",
        "nbody_hermite_force_mixed",
        "nbody_hermite_reduce",
    ];
    let mut in_ptx: Vec<&str> = m.kernels.iter().map(|k| k.name.as_str()).collect();
    in_ptx.sort_unstable();
    let mut in_table: Vec<&str> = Entry::ALL.iter().map(|e| e.name()).collect();
    in_table.sort_unstable();
    assert_eq!(in_ptx, in_table, "the committed PTX holds the kernel table");
    let mut want = tested.to_vec();
    // Every pair style's two force kernels, through the MD plan's tests
    // (nbody-host/src/plan/md/tests/, which run every style) and, the
    // thermo one, `checker.rs`'s barrier test.
    want.extend(
        gpu_kernels::pair::Style::ALL
            .iter()
            .flat_map(|s| s.forces_entries())
            .map(|e| e.name()),
    );
    want.sort_unstable();
    assert_eq!(in_table, want, "a new entry point needs a test here");
}
