//! Shared by the grape6 tests: a seeded random system of j-particles as a
//! Hermite code would hold it (positions, velocities, a/2, jerk/6 at their
//! own times), and its prediction written independently of the library's.
#![allow(dead_code, reason = "each test file uses part of it")]

use grape6::JParticle;

/// splitmix64: a few lines, no dependency, the same numbers everywhere.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn sym(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    pub fn v3(&mut self, scale: f64) -> [f64; 3] {
        [scale * self.sym(), scale * self.sym(), scale * self.sym()]
    }
}

/// `n` j-particles with indices `1000 + k`, times in [0, 0.1], and the
/// address of particle `k` (a permutation: addresses are not indices).
pub fn system(n: usize, seed: u64) -> (Vec<JParticle>, Vec<usize>) {
    let mut r = Rng::new(seed);
    let p = (0..n)
        .map(|k| JParticle {
            index: 1000 + k as i32,
            tj: 0.05 + 0.05 * r.sym(),
            mass: (1.0 + 0.5 * r.sym()) / n as f64,
            a2: r.v3(0.5),
            j6: r.v3(0.3),
            v: r.v3(0.5),
            x: r.v3(1.0),
        })
        .collect();
    // A fixed permutation: address = (7 k + 3) mod n for n not a multiple of 7.
    assert!(!n.is_multiple_of(7));
    let address = (0..n).map(|k| (7 * k + 3) % n).collect();
    (p, address)
}

/// The Taylor polynomial to `ti`, written as the textbook sum (not the
/// library's nested form): equal to its prediction to a few ulp.
pub fn predict(p: &JParticle, ti: f64) -> ([f64; 3], [f64; 3]) {
    let dt = ti - p.tj;
    let a: [f64; 3] = p.a2.map(|c| 2.0 * c);
    let j: [f64; 3] = p.j6.map(|c| 6.0 * c);
    let x = std::array::from_fn(|k| {
        p.x[k] + p.v[k] * dt + a[k] * dt * dt / 2.0 + j[k] * dt * dt * dt / 6.0
    });
    let v = std::array::from_fn(|k| p.v[k] + a[k] * dt + j[k] * dt * dt / 2.0);
    (x, v)
}

/// The library's own prediction formula (grape6.h), for the neighbour
/// tests, where positions must agree to the bit at the h2 boundary.
pub fn predict_as_library(p: &JParticle, ti: f64) -> [f64; 3] {
    let dt = ti - p.tj;
    std::array::from_fn(|k| p.x[k] + dt * (p.v[k] + dt * (p.a2[k] + dt * p.j6[k])))
}

/// `|a - b| / |b|` of two vectors.
pub fn rel(a: [f64; 3], b: [f64; 3]) -> f64 {
    let n = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    n([a[0] - b[0], a[1] - b[1], a[2] - b[2]]) / n(b)
}
