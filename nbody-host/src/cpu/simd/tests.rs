//! The vector types against the scalar path: `rsqrt` and its special
//! inputs, lane sums, negation, the self pair.

use super::*;
use gpu_kernels::interaction::{PointMass, Vec3, interaction};

/// What the tests ask of one vector type, run inside a function with its
/// target features enabled.
struct Probe {
    rsqrt: Vec<f32>,
    min_finite: Vec<f32>,
    neg: Vec<f32>,
    /// Lane sums of `1, 2, .., LANES` and of `1, 1/2, .., 2^(1 - LANES)`.
    sums: [f32; 2],
    self_pair: [Vec<f32>; 3],
}

#[inline(always)]
fn probe<V: Simd>(cap: V::Cap, x: &[f32]) -> Probe {
    let lanes = V::LANES;
    let mut out = vec![0.0; lanes];
    let each = |f: &dyn Fn(V) -> V, out: &mut Vec<f32>| {
        let mut all = Vec::new();
        for c in x.chunks(lanes) {
            f(V::load(cap, c)).store(out);
            all.extend_from_slice(out);
        }
        all
    };
    let rsqrt = each(&|v: V| v.rsqrt(), &mut out);
    let min_finite = each(&|v: V| v.min_finite(), &mut out);
    let neg = each(&|v: V| -v, &mut out);
    let iota: Vec<f32> = (1..=lanes).map(|i| i as f32).collect();
    let halves: Vec<f32> = (0..lanes).map(|i| 0.5f32.powi(i as i32)).collect();
    let sums = [V::load(cap, &iota).sum(), V::load(cap, &halves).sum()];
    // Body i against itself, lane by lane, at eps = 0: exactly zero
    // (positions from the finite inputs).
    let finite: Vec<f32> = x.iter().copied().filter(|v| v.is_finite()).collect();
    let p = PointMass {
        x: V::load(cap, &finite),
        y: V::splat(cap, -2.5),
        z: V::splat(cap, 7.0),
        m: V::splat(cap, 3.0),
    };
    let zero = V::splat(cap, 0.0);
    let a = interaction(Vec3::splat(zero), &p, &p, zero);
    let mut self_pair = [vec![0.0; lanes], vec![0.0; lanes], vec![0.0; lanes]];
    a.x.store(&mut self_pair[0]);
    a.y.store(&mut self_pair[1]);
    a.z.store(&mut self_pair[2]);
    Probe {
        rsqrt,
        min_finite,
        neg,
        sums,
        self_pair,
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn probe_avx2(cap: HasAvx2Fma, x: &[f32]) -> Probe {
    probe::<F32x8>(cap, x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn probe_avx512(cap: HasAvx512, x: &[f32]) -> Probe {
    probe::<F32x16>(cap, x)
}

/// 64 inputs: special values first, then normal numbers over the whole range.
fn inputs() -> Vec<f32> {
    let mut x = vec![
        0.0,
        1e-40,
        f32::MIN_POSITIVE,
        f32::INFINITY,
        f32::MAX,
        1.0,
        0.25,
        2.0,
    ];
    let mut v = 1.3e-37f32;
    while x.len() < 64 {
        x.push(v);
        v *= 3.7e1;
        if v > 1e37 {
            v = 0.77 * v.sqrt().sqrt();
        }
    }
    x
}

fn check(name: &str, p: Probe, lanes: usize, tol: f64) {
    let x = inputs();
    for (&xi, &r) in x.iter().zip(&p.rsqrt) {
        match xi {
            0.0 => assert_eq!(r, f32::INFINITY, "{name}: rsqrt(0)"),
            f32::INFINITY => assert_eq!(r, 0.0, "{name}: rsqrt(inf)"),
            _ if xi < f32::MIN_POSITIVE => {
                // Denormal: +inf (treated as 0, like the GPU's .ftz) or close.
                let want = 1.0 / (xi as f64).sqrt();
                assert!(
                    r == f32::INFINITY || ((r as f64) - want).abs() <= tol * want,
                    "{name}: rsqrt({xi:e}) = {r:e}"
                );
            }
            _ => {
                let want = 1.0 / (xi as f64).sqrt();
                let err = ((r as f64) - want).abs() / want;
                assert!(err <= tol, "{name}: rsqrt({xi:e}) = {r:e}, error {err:e}");
            }
        }
    }
    for (&xi, &m) in x.iter().zip(&p.min_finite) {
        assert_eq!(m, xi.min(f32::MAX), "{name}: min_finite({xi:e})");
    }
    for (&xi, &n) in x.iter().zip(&p.neg) {
        assert_eq!(n.to_bits(), (-xi).to_bits(), "{name}: -{xi:e}");
    }
    // Both sums are exact in f32.
    let want = [
        (lanes * (lanes + 1) / 2) as f32,
        2.0 - 0.5f32.powi(lanes as i32 - 1),
    ];
    assert_eq!(p.sums, want, "{name}: lane sums");
    for c in &p.self_pair {
        assert!(
            c.iter().all(|v| v.to_bits() == 0),
            "{name}: self pair {c:?}"
        );
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_vectors_match_the_scalar_semantics() {
    let Some(cap) = HasAvx2Fma::detect() else {
        eprintln!("no AVX2 + FMA on this CPU: skipped");
        return;
    };
    // SAFETY: `cap` proves the CPU has AVX2 and FMA.
    let p = unsafe { probe_avx2(cap, &inputs()) };
    // One Newton step from 1.5 * 2^-12: ~1.5 * e^2 plus rounding.
    check("avx2", p, 8, 4e-7);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn avx512_vectors_match_the_scalar_semantics() {
    let Some(cap) = HasAvx512::detect() else {
        eprintln!("no AVX-512F on this CPU: skipped");
        return;
    };
    // SAFETY: `cap` proves the CPU has AVX-512F.
    let p = unsafe { probe_avx512(cap, &inputs()) };
    check("avx512", p, 16, 2e-7);
}

#[cfg(target_arch = "aarch64")]
#[test]
fn neon_vectors_match_the_scalar_semantics() {
    // Two Newton steps from an 8-bit estimate.
    let cap = HasNeon::detect().expect("NEON is part of aarch64");
    check("neon", probe::<F32x4>(cap, &inputs()), 4, 4e-7);
}
