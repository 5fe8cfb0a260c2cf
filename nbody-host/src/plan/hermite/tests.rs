//! The Hermite plan's tests: its launches and shapes, and the kernels
//! through [`DeviceFields`] (a block step: predictor, gather, forces and
//! their split, scatter; and the one-shot [`HermiteForces`] call) on the
//! emulator and on the committed PTX in softcuda (in process, race
//! detector on, deterministic and adversarial schedules), against an f64
//! reference computed here with the size of every sum's terms.

use softcuda::Schedule;

use super::*;
use crate::emulator::{EmulatedDevice, LaunchOptions};
use crate::hermite::fields::predict_all;
use crate::plan::md::softcuda_device::SoftMd;
#[test]
fn the_plan_splits_small_blocks_over_the_j_bodies_and_not_large_ones() {
    let p = HermitePlan::new(128, Precision::F64).unwrap();
    // One i-block, 512 tiles: 128 parts of 4 tiles.
    assert_eq!(p.jparts(1, 65536), 128);
    assert_eq!(p.jparts(100, 65536), 128);
    // Few tiles: as many parts as have 4.
    assert_eq!(p.jparts(1, 500), 1);
    assert_eq!(p.jparts(1, 1000), 2);
    assert_eq!(p.jparts(1, 2048), 4);
    // Enough i-blocks to fill the target alone.
    assert_eq!(p.jparts(512 * 128, 65536), 1);
    let l = p.force(1, 65536, 128, 0.01).unwrap();
    assert_eq!(l.len(), 2);
    assert_eq!(
        (l[0].1.grid, l[0].1.block, l[0].1.shared_bytes),
        (128, 128, 128 * 64)
    );
    assert_eq!(l[1].0.entry(), Entry::HermiteReduce);
    let l = p.force(300, 65536, 1, 0.01).unwrap();
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].1.grid, 3);
    let Launch::HermiteForce { partials, eps2, .. } = l[0].0 else {
        panic!("{:?}", l[0].0)
    };
    assert_eq!((partials, eps2), (HermiteBuf::Out, 0.01));
    let m = HermitePlan::new(256, Precision::Mixed).unwrap();
    assert_eq!(m.force_entry(), Entry::HermiteForceMixed);
    assert_eq!(m.shared_bytes(), 256 * 80);
    assert!(matches!(
        HermitePlan::new(96, Precision::F64),
        Err(Error::InvalidBlockSize { block: 96, .. })
    ));
    assert!(matches!(
        p.force(1 << 30, 1 << 30, 1 << 20, 0.0),
        Err(Error::GridTooLarge { .. })
    ));
}

#[test]
fn every_launch_names_every_kernel_of_the_plan() {
    for precision in Precision::ALL {
        let p = HermitePlan::new(64, precision).unwrap();
        let entries: Vec<Entry> = p.every_launch().iter().map(|(e, _)| *e).collect();
        assert_eq!(
            entries,
            [
                Entry::HermitePredict,
                Entry::HermiteGather,
                Entry::HermiteScatter,
                p.force_entry(),
                Entry::HermiteReduce
            ]
        );
    }
}

/// A small xorshift generator for test states.
struct Gen(u64);

impl Gen {
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        lo + (hi - lo) * (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    fn vector(&mut self, scale: f64) -> [f64; 3] {
        std::array::from_fn(|_| self.uniform(-scale, scale))
    }
}

/// `n` bodies in a cube of side 2 centred at 1000, moving at about 300
/// with a spread of 0.5: far enough from the origin that `f32` positions
/// or velocities (without the double-single low parts) would lose the
/// mixed jerk's tolerance (`2^-24 1000` against separations near 1), with
/// derivatives and masses.
fn state(n: usize, seed: u64) -> HermiteState {
    let mut g = Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut s = HermiteState::default();
    for _ in 0..n {
        s.pos.push(g.vector(1.0).map(|x| x + 1000.0));
        s.vel.push(g.vector(0.5).map(|v| v + 300.0));
        s.acc.push(g.vector(2.0));
        s.jerk.push(g.vector(5.0));
        s.mass.push(g.uniform(0.5, 1.5) / n as f64);
    }
    s
}

/// The f64 field of `x[i], v[i]` from bodies `xs, vs, ms` but slot `own`,
/// with, per component, the sum of the terms' magnitudes (force, jerk).
fn reference(
    xi: [f64; 3],
    vi: [f64; 3],
    own: Option<usize>,
    xs: &[[f64; 3]],
    vs: &[[f64; 3]],
    ms: &[f64],
    eps2: f64,
) -> (Field, [f64; 3], [f64; 3]) {
    let (mut f, mut fa, mut ja) = (Field::default(), [0.0; 3], [0.0; 3]);
    for j in 0..xs.len() {
        if Some(j) == own {
            continue;
        }
        let r: [f64; 3] = std::array::from_fn(|k| xs[j][k] - xi[k]);
        let v: [f64; 3] = std::array::from_fn(|k| vs[j][k] - vi[k]);
        let d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + eps2;
        let d = d2.sqrt();
        let md3 = ms[j] / (d2 * d);
        let rv = r[0] * v[0] + r[1] * v[1] + r[2] * v[2];
        for k in 0..3 {
            let (a, jk) = (md3 * r[k], md3 * (v[k] - 3.0 * rv / d2 * r[k]));
            f.acc[k] += a;
            f.jerk[k] += jk;
            fa[k] += a.abs();
            // Each of the two jerk terms may carry the relative error.
            ja[k] += (md3 * v[k]).abs() + (md3 * 3.0 * rv / d2 * r[k]).abs();
        }
        f.pot -= ms[j] / d;
    }
    (f, fa, ja)
}

/// `got` against the reference, relative to the terms' magnitudes: `1e-13`
/// for the force, the potential and the f64 jerk, `1e-5` for the mixed
/// jerk (its `f32` arithmetic).
fn check(what: &str, got: &Field, want: &(Field, [f64; 3], [f64; 3]), precision: Precision) {
    let (f, fa, ja) = want;
    let jtol = match precision {
        Precision::Mixed => 1e-5,
        _ => 1e-13,
    };
    for k in 0..3 {
        let e = (got.acc[k] - f.acc[k]).abs();
        assert!(
            e <= 1e-13 * fa[k] + 1e-300,
            "{what}: acc[{k}] {} vs {} (error {e:e}, scale {:e})",
            got.acc[k],
            f.acc[k],
            fa[k]
        );
        let e = (got.jerk[k] - f.jerk[k]).abs();
        assert!(
            e <= jtol * ja[k] + 1e-300,
            "{what}: jerk[{k}] {} vs {} (error {e:e}, scale {:e})",
            got.jerk[k],
            f.jerk[k],
            ja[k]
        );
    }
    let e = (got.pot - f.pot).abs();
    assert!(
        e <= 1e-13 * f.pot.abs(),
        "{what}: pot {} vs {}",
        got.pot,
        f.pot
    );
}

/// Active sets of `n` bodies: none, the first, the last, every body, and
/// a random subset in random order.
fn active_sets(n: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut g = Gen(seed | 1);
    let mut some: Vec<usize> = (0..n).filter(|_| g.uniform(0.0, 1.0) < 0.3).collect();
    for k in (1..some.len()).rev() {
        some.swap(k, g.uniform(0.0, (k + 1) as f64) as usize);
    }
    vec![vec![], vec![0], vec![n - 1], (0..n).collect(), some]
}

/// A block step's fields on `dev`, before and after a scatter, against the
/// reference on the host's prediction; the device's predicted positions
/// and velocities the host's bit for bit.
fn block_steps<D: Device<HermiteBuf>>(
    dev: D,
    what: &str,
    n: usize,
    block: u32,
    precision: Precision,
    eps2: f64,
) {
    let mut f = DeviceFields::new(n, block, precision, || Ok(dev)).unwrap();
    let mut s = state(n, n as u64 + block as u64);
    let mut g = Gen(7);
    let next = 1u64 << 40;
    let per_tick = 0.01 / (1u64 << 40) as f64;
    f.load(&s).unwrap();
    // Bodies start at tick 0 (load); a first step to random ticks.
    let mut tick = vec![0u64; n];
    for (round, active) in active_sets(n, n as u64).into_iter().enumerate() {
        let got = f.fields(&s, &tick, next, per_tick, &active, eps2).unwrap();
        assert_eq!(got.len(), active.len());
        let (mut xp, mut vp) = (Vec::new(), Vec::new());
        predict_all(&s, &tick, next, per_tick, &mut xp, &mut vp);
        if !active.is_empty() {
            let words = f.dev.read(HermiteBuf::PPos, 0, 8 * n).unwrap();
            let p = words_f64(&words);
            for i in 0..n {
                let want = [xp[i][0], xp[i][1], xp[i][2], s.mass[i]];
                assert_eq!(p[4 * i..4 * i + 4], want, "{what}: predicted body {i}");
            }
            let v = words_f64(&f.dev.read(HermiteBuf::PVel, 0, 8 * n).unwrap());
            for i in 0..n {
                assert_eq!(v[4 * i..4 * i + 3], vp[i], "{what}: predicted velocity {i}");
            }
        }
        for (k, &i) in active.iter().enumerate() {
            let want = reference(xp[i], vp[i], Some(i), &xp, &vp, &s.mass, eps2);
            let what = format!("{what} round {round} active {k} (body {i})");
            check(&what, &got[k], &want, precision);
        }
        // "Correct" the active bodies (new states, later ticks) and write
        // them back: the next round predicts from them.
        for &i in &active {
            s.pos[i] = g.vector(1.0).map(|x| x + 1000.0);
            s.vel[i] = g.vector(0.5);
            s.acc[i] = g.vector(1.0);
            s.jerk[i] = g.vector(1.0);
            tick[i] = g.uniform(0.0, next as f64) as u64;
        }
        f.corrected(&s, &tick, &active).unwrap();
    }
}

fn emulator() -> EmulatedDevice<HermiteBuf> {
    EmulatedDevice::new(LaunchOptions::default())
}

#[test]
fn block_steps_on_the_emulator_match_the_reference() {
    for n in [1, 2, 33, 100, 257] {
        for block in [32, 64, 256] {
            for precision in Precision::ALL {
                for eps2 in [0.0, 1e-4] {
                    let what = format!("emulator n {n} block {block} {precision} eps2 {eps2}");
                    block_steps(emulator(), &what, n, block, precision, eps2);
                }
            }
        }
    }
}

#[test]
fn block_steps_on_the_committed_ptx_match_the_reference() {
    for schedule in [Schedule::Deterministic, Schedule::Adversarial { seed: 3 }] {
        for (n, block) in [(1, 32), (33, 32), (257, 64), (130, 128)] {
            for precision in Precision::ALL {
                let what = format!("softcuda {schedule:?} n {n} block {block} {precision}");
                block_steps(SoftMd::new(schedule), &what, n, block, precision, 1e-4);
            }
        }
    }
}

/// The one-shot call: sinks that are not sources (no slot), the split
/// sum (1000 sources in tiles of 32 give 7 parts), and the empty cases.
fn one_shot<D: Device<HermiteBuf>>(dev: D, what: &str, block: u32, precision: Precision) {
    let mut f = DeviceFields::new(0, block, precision, || Ok(dev)).unwrap();
    let s = state(1000, 5);
    let sources = Sources::new(&s.pos, &s.vel, &s.mass);
    let sinks: Vec<Sink> = (0..40)
        .map(|k| Sink {
            pos: s.pos[25 * k].map(|x| x + 1e-3),
            vel: s.vel[25 * k],
            slot: (k % 2 == 0).then_some(25 * k),
        })
        .collect();
    assert!(f.plan.jparts(40, 1000) > 1 || block > 32);
    let mut out = vec![Field::default(); sinks.len()];
    HermiteForces::evaluate(&mut f, &sources, &sinks, 0.0, &mut out).unwrap();
    for (k, sink) in sinks.iter().enumerate() {
        let want = reference(sink.pos, sink.vel, sink.slot, &s.pos, &s.vel, &s.mass, 0.0);
        check(&format!("{what} sink {k}"), &out[k], &want, precision);
    }
    // No j-bodies: zero fields; no sinks: nothing.
    let mut two = vec![
        Field {
            pot: 1.0,
            ..Field::default()
        };
        2
    ];
    let none = Sources::new(&[], &[], &[]);
    let free = [Sink {
        slot: None,
        ..sinks[1]
    }; 2];
    HermiteForces::evaluate(&mut f, &none, &free, 0.0, &mut two).unwrap();
    assert_eq!(two, [Field::default(); 2]);
    HermiteForces::evaluate(&mut f, &sources, &[], 0.0, &mut []).unwrap();
    // Bad calls are errors before any work.
    let e = HermiteForces::evaluate(&mut f, &sources, &sinks[..2], 0.0, &mut two[..1]);
    assert!(e.unwrap_err().to_string().contains("2 sinks"));
    let far = [Sink {
        slot: Some(1000),
        ..sinks[0]
    }];
    let e = HermiteForces::evaluate(&mut f, &sources, &far, 0.0, &mut two[..1]);
    assert!(e.unwrap_err().to_string().contains("slot 1000 of 1000"));
    let e = HermiteForces::evaluate(&mut f, &sources, &free, f64::NAN, &mut two);
    assert!(e.unwrap_err().to_string().contains("eps2"));
}

#[test]
fn one_shot_fields_on_the_emulator_and_the_committed_ptx() {
    for precision in Precision::ALL {
        for block in [32, 128] {
            one_shot(
                emulator(),
                &format!("emulator {precision} {block}"),
                block,
                precision,
            );
        }
        let soft = SoftMd::new(Schedule::Deterministic);
        one_shot(soft, &format!("softcuda {precision}"), 32, precision);
    }
}

#[test]
fn a_block_larger_than_the_device_shares_is_refused_before_any_launch() {
    // 1024 threads x 80 bytes of the mixed tile: 80 KiB, within Volta's 96.
    assert!(DeviceFields::new(4, 1024, Precision::Mixed, || Ok(emulator())).is_ok());
    let e = DeviceFields::new(4, 96, Precision::F64, || Ok(emulator())).err();
    assert!(
        matches!(e, Some(Error::InvalidBlockSize { block: 96, .. })),
        "{e:?}"
    );
}
