//! The collisional (Hermite) kernels of the committed PTX
//! (`gpu_kernels::hermite`), run by the interpreter against an f64
//! reference computed here: the predictor bit for bit against the host's
//! (`gpu_kernels::hermite::predict`), gather and scatter, and force + jerk +
//! potential in f64 and mixed precision for awkward sizes (1, 2, 33, 100,
//! 257 j-bodies; active sets of 1, some, all; i-bodies that are not
//! j-bodies), the j-bodies in one part or split into three and reduced,
//! softening 0 and 0.01, under the deterministic schedule and three
//! adversarial seeds (the force kernels: 33 and 257 j-bodies, softened,
//! partial active sets) with the race detector on shared and global memory.
//! No kernel here uses atomics: every schedule must give the same bits.
//!
//! Tolerances, relative to each sum's terms' magnitudes: 1e-13 for the
//! force, the potential and the f64 jerk (f64 arithmetic; the `rsqrt`
//! seed's 2^-22 is refined away), 1e-5 for the mixed jerk (f32).

#![allow(
    clippy::needless_range_loop,
    reason = "component loops read best indexed"
)]

mod common;

use common::*;
use gpu_kernels::hermite::{NO_SLOT, force_shape, predict};
use gpu_kernels::shape;
use softcuda::{Device, Schedule};

const NS: [usize; 5] = [1, 2, 33, 100, 257];

fn blocks_for(schedule: Schedule) -> &'static [u32] {
    match schedule {
        Schedule::Deterministic => &[32, 64, 256],
        Schedule::Adversarial { .. } => &[32, 128],
    }
}

/// `[x, y, z, w]` f64 quadruples as bytes.
fn bytes(v: &[[f64; 4]]) -> Vec<u8> {
    v.iter().flatten().flat_map(|x| x.to_le_bytes()).collect()
}

fn quads(b: &[u8]) -> Vec<[f64; 4]> {
    b.chunks_exact(32)
        .map(|c| {
            std::array::from_fn(|k| f64::from_le_bytes(c[8 * k..8 * k + 8].try_into().unwrap()))
        })
        .collect()
}

fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `n` bodies near (100, 100, 100) moving at about 30: positions and
/// masses, velocities (`w` = a tick), accelerations, jerks.
fn system(n: usize, seed: u64) -> [Vec<[f64; 4]>; 4] {
    let mut g = Gen::new(seed);
    let mut u = |lo: f64, hi: f64| lo + (hi - lo) * (g.next() >> 11) as f64 / (1u64 << 53) as f64;
    let mut out: [Vec<[f64; 4]>; 4] = Default::default();
    for _ in 0..n {
        out[0].push([
            100.0 + u(-1.0, 1.0),
            100.0 + u(-1.0, 1.0),
            100.0 + u(-1.0, 1.0),
            u(0.5, 1.5) / n as f64,
        ]);
        out[1].push([
            30.0 + u(-0.5, 0.5),
            30.0 + u(-0.5, 0.5),
            30.0 + u(-0.5, 0.5),
            (u(0.0, 1.0) * 1e6).floor(),
        ]);
        out[2].push([u(-2.0, 2.0), u(-2.0, 2.0), u(-2.0, 2.0), 0.0]);
        out[3].push([u(-5.0, 5.0), u(-5.0, 5.0), u(-5.0, 5.0), 0.0]);
    }
    out
}

fn xyz(v: [f64; 4]) -> [f64; 3] {
    [v[0], v[1], v[2]]
}

/// The f64 field of i-body `(xi, vi)` from j-bodies `(pos, vel)` but slot
/// `own`: `[ax, ay, az, pot]`, `[jx, jy, jz, 0]`, and the terms'
/// magnitudes per component (force, jerk).
fn reference(
    xi: [f64; 4],
    vi: [f64; 4],
    own: u32,
    pos: &[[f64; 4]],
    vel: &[[f64; 4]],
    eps2: f64,
) -> ([f64; 4], [f64; 4], [f64; 3], [f64; 3]) {
    let (mut a, mut j, mut fa, mut ja) = ([0.0; 4], [0.0; 4], [0.0; 3], [0.0; 3]);
    for s in 0..pos.len() {
        if s as u32 == own {
            continue;
        }
        let r: [f64; 3] = std::array::from_fn(|k| pos[s][k] - xi[k]);
        let v: [f64; 3] = std::array::from_fn(|k| vel[s][k] - vi[k]);
        let d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + eps2;
        let d = d2.sqrt();
        let md3 = pos[s][3] / (d2 * d);
        let rv = r[0] * v[0] + r[1] * v[1] + r[2] * v[2];
        for k in 0..3 {
            a[k] += md3 * r[k];
            j[k] += md3 * (v[k] - 3.0 * rv / d2 * r[k]);
            fa[k] += (md3 * r[k]).abs();
            ja[k] += (md3 * v[k]).abs() + (md3 * 3.0 * rv / d2 * r[k]).abs();
        }
        a[3] -= pos[s][3] / d;
    }
    (a, j, fa, ja)
}

/// Force launches (and the reduction when split) of `ni` i-bodies against
/// `nj` j-bodies on `dev`; the results `2 ni` quadruples.
#[allow(
    clippy::too_many_arguments,
    reason = "the buffers and sizes of one force launch"
)]
fn force(
    dev: &mut Device,
    name: &str,
    mixed: bool,
    j: (u64, u64, usize),
    i: (u64, u64, u64, usize),
    jparts: u32,
    block: u32,
    eps2: f64,
    schedule: Schedule,
) -> Vec<[f64; 4]> {
    let m = module();
    let (jpos, jvel, nj) = j;
    let (ipos, ivel, islot, ni) = i;
    let partials = upload(dev, &vec![0xffu8; 64 * ni * jparts as usize]);
    let s = force_shape(ni as u32, block, jparts, mixed).unwrap();
    let what = format!("{name} ni {ni} nj {nj} block {block} parts {jparts} {schedule:?}");
    launch(
        dev,
        &m,
        name,
        s.grid,
        block,
        s.shared_bytes,
        &[
            Arg::Ptr(jpos),
            Arg::Ptr(jvel),
            Arg::Ptr(ipos),
            Arg::Ptr(ivel),
            Arg::Ptr(islot),
            Arg::Ptr(partials),
            Arg::U32(ni as u32),
            Arg::U32(nj as u32),
            Arg::U32(jparts),
            Arg::F64(eps2),
        ],
        schedule,
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    if jparts == 1 {
        return quads(&download(dev, partials, 64 * ni));
    }
    let out = upload(dev, &vec![0u8; 64 * ni]);
    let s = shape::per_body(ni as u32, 64);
    launch(
        dev,
        &m,
        "nbody_hermite_reduce",
        s.grid,
        64,
        0,
        &[
            Arg::Ptr(partials),
            Arg::Ptr(out),
            Arg::U32(ni as u32),
            Arg::U32(jparts),
        ],
        schedule,
    )
    .unwrap_or_else(|e| panic!("{what} (reduce): {e}"));
    quads(&download(dev, out, 64 * ni))
}

#[test]
fn force_jerk_and_potential_against_the_f64_reference() {
    for (name, mixed) in [
        ("nbody_hermite_force", false),
        ("nbody_hermite_force_mixed", true),
    ] {
        for nj in NS {
            let [pos, vel, _, _] = system(nj, nj as u64);
            // Active sets: the first body, every third, all; and two
            // i-bodies that are not j-bodies (no slot).
            let mut sets: Vec<Vec<u32>> = vec![vec![0], (0..nj as u32).step_by(3).collect()];
            sets.push((0..nj as u32).collect());
            sets.push(vec![NO_SLOT, NO_SLOT]);
            for eps2 in [0.0, 0.01] {
                for set in &sets {
                    let ni = set.len();
                    let (ip, iv): (Vec<[f64; 4]>, Vec<[f64; 4]>) = set
                        .iter()
                        .enumerate()
                        .map(|(k, &s)| match s {
                            NO_SLOT => {
                                let mut p = pos[k % nj];
                                p[1] += 0.25;
                                (p, vel[k % nj])
                            }
                            s => (pos[s as usize], vel[s as usize]),
                        })
                        .unzip();
                    let want: Vec<_> = (0..ni)
                        .map(|k| reference(ip[k], iv[k], set[k], &pos, &vel, eps2))
                        .collect();
                    let mut first: Option<Vec<[f64; 4]>> = None;
                    for schedule in schedules() {
                        // The adversarial seeds on the two largest awkward
                        // sizes, softened, partial sets only (time).
                        let adversarial = schedule != Schedule::Deterministic;
                        if adversarial && (nj < 33 || nj == 100 || eps2 == 0.0 || ni == nj) {
                            continue;
                        }
                        for &block in blocks_for(schedule) {
                            let tiles = nj.div_ceil(block as usize) as u32;
                            for jparts in [1, tiles.clamp(1, 3)] {
                                let mut dev = device();
                                let j = (
                                    upload(&mut dev, &bytes(&pos)),
                                    upload(&mut dev, &bytes(&vel)),
                                    nj,
                                );
                                let i = (
                                    upload(&mut dev, &bytes(&ip)),
                                    upload(&mut dev, &bytes(&iv)),
                                    upload(&mut dev, &u32_bytes(set)),
                                    ni,
                                );
                                let got = force(
                                    &mut dev, name, mixed, j, i, jparts, block, eps2, schedule,
                                );
                                let what = format!(
                                    "{name} nj {nj} ni {ni} eps2 {eps2} block {block} parts {jparts} {schedule:?}"
                                );
                                for k in 0..ni {
                                    let (a, jk, fa, ja) = want[k];
                                    let (ga, gj) = (got[2 * k], got[2 * k + 1]);
                                    let jtol = if mixed { 1e-5 } else { 1e-13 };
                                    for c in 0..3 {
                                        assert!(
                                            (ga[c] - a[c]).abs() <= 1e-13 * fa[c],
                                            "{what}: i {k} acc[{c}] {} vs {}",
                                            ga[c],
                                            a[c]
                                        );
                                        assert!(
                                            (gj[c] - jk[c]).abs() <= jtol * ja[c],
                                            "{what}: i {k} jerk[{c}] {} vs {}",
                                            gj[c],
                                            jk[c]
                                        );
                                    }
                                    assert!(
                                        (ga[3] - a[3]).abs() <= 1e-13 * a[3].abs(),
                                        "{what}: i {k} pot {} vs {}",
                                        ga[3],
                                        a[3]
                                    );
                                    assert_eq!(gj[3], 0.0, "{what}: jerk w");
                                }
                                // One part: every schedule and block of the
                                // deterministic run's grid gives its bits.
                                if jparts == 1 && block == 32 {
                                    match &first {
                                        None => first = Some(got),
                                        Some(f) => assert_eq!(*f, got, "{what}"),
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn the_predictor_is_the_hosts_bit_for_bit() {
    let m = module();
    for n in NS {
        let [pos, vel, acc, jerk] = system(n, 40 + n as u64);
        let (next, per_tick) = (2e6, 1.0 / 1048576.0);
        for schedule in schedules() {
            let mut dev = device();
            let b: Vec<u64> = [&pos, &vel, &acc, &jerk]
                .iter()
                .map(|v| upload(&mut dev, &bytes(v)))
                .collect();
            let ppos = upload(&mut dev, &vec![0u8; 32 * n]);
            let pvel = upload(&mut dev, &vec![0u8; 32 * n]);
            let s = shape::per_body(n as u32, 64);
            launch(
                &mut dev,
                &m,
                "nbody_hermite_predict",
                s.grid,
                64,
                0,
                &[
                    Arg::Ptr(b[0]),
                    Arg::Ptr(b[1]),
                    Arg::Ptr(b[2]),
                    Arg::Ptr(b[3]),
                    Arg::Ptr(ppos),
                    Arg::Ptr(pvel),
                    Arg::U32(n as u32),
                    Arg::F64(next),
                    Arg::F64(per_tick),
                ],
                schedule,
            )
            .unwrap();
            let (gp, gv) = (
                quads(&download(&mut dev, ppos, 32 * n)),
                quads(&download(&mut dev, pvel, 32 * n)),
            );
            for i in 0..n {
                let h = (next - vel[i][3]) * per_tick;
                let (x, v) = predict(xyz(pos[i]), xyz(vel[i]), xyz(acc[i]), xyz(jerk[i]), h);
                assert_eq!(
                    gp[i],
                    [x[0], x[1], x[2], pos[i][3]],
                    "body {i} {schedule:?}"
                );
                assert_eq!(gv[i], [v[0], v[1], v[2], 0.0], "body {i} {schedule:?}");
            }
        }
    }
}

#[test]
fn gather_and_scatter_move_the_active_bodies() {
    let m = module();
    let n = 100;
    let [pos, vel, acc, jerk] = system(n, 9);
    let active: Vec<u32> = vec![99, 0, 57, 3, 42];
    let ni = active.len();
    for schedule in schedules() {
        let mut dev = device();
        let b: Vec<u64> = [&pos, &vel, &acc, &jerk]
            .iter()
            .map(|v| upload(&mut dev, &bytes(v)))
            .collect();
        let act = upload(&mut dev, &u32_bytes(&active));
        let (ip, iv) = (
            upload(&mut dev, &vec![0u8; 32 * ni]),
            upload(&mut dev, &vec![0u8; 32 * ni]),
        );
        let s = shape::per_body(ni as u32, 32);
        let args = [
            Arg::Ptr(b[0]),
            Arg::Ptr(b[1]),
            Arg::Ptr(act),
            Arg::Ptr(ip),
            Arg::Ptr(iv),
            Arg::U32(n as u32),
            Arg::U32(ni as u32),
        ];
        launch(
            &mut dev,
            &m,
            "nbody_hermite_gather",
            s.grid,
            32,
            0,
            &args,
            schedule,
        )
        .unwrap();
        let (gp, gv) = (
            quads(&download(&mut dev, ip, 32 * ni)),
            quads(&download(&mut dev, iv, 32 * ni)),
        );
        for (k, &a) in active.iter().enumerate() {
            assert_eq!((gp[k], gv[k]), (pos[a as usize], vel[a as usize]));
        }
        // Scatter: body active[k] gets update[4k..4k+4]; the others keep theirs.
        let update: Vec<[f64; 4]> = (0..4 * ni)
            .map(|q| [q as f64, -(q as f64), 0.5, 7.0])
            .collect();
        let up = upload(&mut dev, &bytes(&update));
        let args = [
            Arg::Ptr(up),
            Arg::Ptr(act),
            Arg::Ptr(b[0]),
            Arg::Ptr(b[1]),
            Arg::Ptr(b[2]),
            Arg::Ptr(b[3]),
            Arg::U32(n as u32),
            Arg::U32(ni as u32),
        ];
        launch(
            &mut dev,
            &m,
            "nbody_hermite_scatter",
            s.grid,
            32,
            0,
            &args,
            schedule,
        )
        .unwrap();
        let after: Vec<Vec<[f64; 4]>> = b
            .iter()
            .map(|&p| quads(&download(&mut dev, p, 32 * n)))
            .collect();
        let before = [&pos, &vel, &acc, &jerk];
        for i in 0..n {
            for r in 0..4 {
                let want = match active.iter().position(|&a| a as usize == i) {
                    Some(k) => update[4 * k + r],
                    None => before[r][i],
                };
                assert_eq!(after[r][i], want, "body {i} array {r} {schedule:?}");
            }
        }
    }
}
