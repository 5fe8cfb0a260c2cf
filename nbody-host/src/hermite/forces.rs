//! Force, jerk and potential of a set of i-bodies (the active block) from
//! every j-body (the predicted system), on the CPU: SIMD over the j-bodies,
//! rayon over the i-bodies, in f64 or in mixed precision.
//!
//! Each i-body's sums run over `j = 0..n` in one fixed order (lane `l` of
//! the vector accumulators takes `j = l, l + L, ...`, the lanes are added in
//! order at the end), whatever the thread count: rayon only decides which
//! thread computes which i-body, so the results are bit-identical on any
//! number of threads. Different instruction sets (lane counts) sum in
//! different orders and differ in the last bits.
//!
//! The vectors are fixed-size arrays (`[f64; L]`) operated on lane by lane
//! inside `#[target_feature]` entry points, which LLVM compiles to the
//! instruction set's vectors (checked by the speed: `scripts/peers/`); the
//! one operation that has no portable form, the AVX-512 estimate of
//! `1 / sqrt` (`vrsqrt14pd`), is an intrinsic.
//!
//! # The two precisions ([`Precision`])
//! - **f64**: every operation in f64. `1 / sqrt(r^2)` is `1.0 / sqrt` (IEEE)
//!   on AVX2 and scalar, and the 14-bit AVX-512 estimate refined by two
//!   Newton–Raphson steps (56 bits, a few ulp) on AVX-512.
//! - **mixed**: the force and potential as in f64 (the separation, `r^2`
//!   and the sums in f64), but `1 / sqrt` from an f32 seed refined by one
//!   f64 Newton step (48 bits); the jerk from the separation, relative
//!   velocity, `1 / r^2` and `m / r^3` rounded to f32, in f32, summed in
//!   f32 over 64 j-vectors at a time and then in f64. A per-pair relative
//!   error near 1e-7 in the jerk only: the jerk enters the Hermite corrector
//!   multiplied by `dt^2 / 12`. The force error measured against f64 is in
//!   `docs/collisional.md`.
//!
//! A relative force error of 1e-10 needs the separation to about 37 bits:
//! an f32 separation alone (24 bits) gives 1e-7, which is why neither
//! precision computes the force from f32 coordinates.

use std::ops::Range;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::isa::Isa;

/// The arithmetic of the force, jerk and potential sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Precision {
    /// f64 throughout.
    #[default]
    F64,
    /// Force and potential in f64 with an f32-seeded reciprocal square
    /// root, jerk in f32 (module documentation of `hermite`).
    Mixed,
}

impl Precision {
    /// Both precisions.
    pub const ALL: [Precision; 2] = [Precision::F64, Precision::Mixed];

    /// `"f64"` or `"mixed"`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::Mixed => "mixed",
        }
    }

    /// Parses a [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Precision> {
        Precision::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What one i-body feels (without `G`): `acc = sum_j m_j r_ij / d^3`,
/// `jerk = sum_j m_j (v_ij / d^3 - 3 (r_ij . v_ij) r_ij / d^5)`,
/// `pot = -sum_j m_j / d`, with `r_ij = x_j - x_i`, `v_ij = v_j - v_i`,
/// `d^2 = |r_ij|^2 + eps^2`, over every `j` but the i-body's own slot.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Field {
    /// Acceleration.
    pub acc: [f64; 3],
    /// Jerk, the acceleration's time derivative.
    pub jerk: [f64; 3],
    /// Potential (negative).
    pub pot: f64,
}

/// The j-bodies (sources): positions, velocities and masses in a structure
/// of arrays padded with massless bodies to a multiple of the widest vector.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    n: usize,
    x: [Vec<f64>; 3],
    v: [Vec<f64>; 3],
    m: Vec<f64>,
}

/// Lanes of the widest vector: the padding of [`Sources`].
const PAD: usize = 16;

impl Sources {
    /// Sources from positions, velocities and masses (equal lengths).
    pub fn new(pos: &[[f64; 3]], vel: &[[f64; 3]], mass: &[f64]) -> Sources {
        let mut s = Sources::default();
        s.set(pos, vel, mass);
        s
    }

    /// Replaces the contents, reusing the storage.
    pub fn set(&mut self, pos: &[[f64; 3]], vel: &[[f64; 3]], mass: &[f64]) {
        assert!(pos.len() == vel.len() && pos.len() == mass.len());
        let n = pos.len();
        let padded = n.div_ceil(PAD) * PAD;
        self.n = n;
        for k in 0..3 {
            self.x[k].clear();
            self.x[k].extend(pos.iter().map(|p| p[k]));
            self.x[k].resize(padded, 0.0);
            self.v[k].clear();
            self.v[k].extend(vel.iter().map(|v| v[k]));
            self.v[k].resize(padded, 0.0);
        }
        self.m.clear();
        self.m.extend_from_slice(mass);
        self.m.resize(padded, 0.0);
    }

    /// Number of bodies.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Position of body `j`.
    pub fn position(&self, j: usize) -> [f64; 3] {
        [self.x[0][j], self.x[1][j], self.x[2][j]]
    }

    /// Velocity of body `j`.
    pub fn velocity(&self, j: usize) -> [f64; 3] {
        [self.v[0][j], self.v[1][j], self.v[2][j]]
    }

    /// Mass of body `j`.
    pub fn mass(&self, j: usize) -> f64 {
        self.m[j]
    }
}

/// One i-body: where it is, how fast, and which source slot is itself
/// (`None` if it is not among the sources).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sink {
    /// Position (predicted).
    pub pos: [f64; 3],
    /// Velocity (predicted).
    pub vel: [f64; 3],
    /// Its own slot among the sources, skipped.
    pub slot: Option<usize>,
}

/// The force loops of one instruction set and precision.
#[derive(Clone, Copy)]
pub struct ForceJerk {
    isa: Isa,
    precision: Precision,
    body: BodyFn,
}

/// One i-body's field from sources `js` (a multiple of the lanes, or up to
/// the padded end).
type BodyFn = unsafe fn(&Sources, &Sink, f64) -> Field;

impl std::fmt::Debug for ForceJerk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForceJerk")
            .field("isa", &self.isa)
            .field("precision", &self.precision)
            .finish()
    }
}

/// i-bodies below which a block runs on the calling thread: fewer pairs than
/// this is cheaper than waking the pool (the results are the same).
const PARALLEL_PAIRS: usize = 1 << 15;

impl ForceJerk {
    /// The loops of `isa` (`None`: the best this CPU has) in `precision`;
    /// an [`Error::Unsupported`] naming an instruction set this CPU lacks.
    pub fn new(isa: Option<Isa>, precision: Precision) -> Result<ForceJerk> {
        let isa = isa.unwrap_or_else(Isa::detect);
        let support = isa.supported().ok_or_else(|| {
            Error::Unsupported(format!(
                "instruction set {isa} is not available on this CPU (available: {})",
                Isa::available()
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let body: BodyFn = match (support.isa(), precision) {
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx512, Precision::F64) => avx512::f64_body,
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx512, Precision::Mixed) => avx512::mixed_body,
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2Fma, Precision::F64) => avx2::f64_body,
            #[cfg(target_arch = "x86_64")]
            (Isa::Avx2Fma, Precision::Mixed) => avx2::mixed_body,
            // NEON and plain f64: the portable loops, no target features.
            (_, Precision::F64) => portable::f64_body,
            (_, Precision::Mixed) => portable::mixed_body,
        };
        Ok(ForceJerk {
            isa: support.isa(),
            precision,
            body,
        })
    }

    /// The instruction set in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// The precision in use.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The field of each sink from every source, softening `eps2`, into
    /// `out` (same length as `sinks`), on the rayon pool.
    pub fn evaluate(&self, sources: &Sources, sinks: &[Sink], eps2: f64, out: &mut [Field]) {
        assert_eq!(sinks.len(), out.len());
        let one = |(sink, field): (&Sink, &mut Field)| {
            // SAFETY: `body` was chosen in `new` from a `Supported` proof
            // that this CPU has its instruction set.
            *field = unsafe { (self.body)(sources, sink, eps2) };
        };
        if sinks.len() * sources.len() < PARALLEL_PAIRS || sinks.len() == 1 {
            sinks.iter().zip(out.iter_mut()).for_each(one);
        } else {
            sinks.par_iter().zip(out.par_iter_mut()).for_each(one);
        }
    }
}

/// Lanes of the vectors of an instruction set's loops.
#[inline(always)]
fn chunks(n: usize, lanes: usize) -> Range<usize> {
    0..n.div_ceil(lanes)
}

/// `1 / sqrt(x)` in each lane, per instruction set.
trait Rsqrt<const L: usize> {
    /// Close to f64 accuracy (a few ulp at most).
    fn rsqrt_f64(x: [f64; L]) -> [f64; L];
}

/// `1 / sqrt` as IEEE square root and division.
struct Exact;

impl<const L: usize> Rsqrt<L> for Exact {
    #[inline(always)]
    fn rsqrt_f64(x: [f64; L]) -> [f64; L] {
        x.map(|x| 1.0 / x.sqrt())
    }
}

/// The AVX-512 estimate (14 bits) and two Newton–Raphson steps.
#[cfg(target_arch = "x86_64")]
struct Avx512Estimate;

#[cfg(target_arch = "x86_64")]
impl Rsqrt<8> for Avx512Estimate {
    #[inline(always)]
    fn rsqrt_f64(x: [f64; 8]) -> [f64; 8] {
        use std::arch::x86_64::{_mm512_loadu_pd, _mm512_rsqrt14_pd, _mm512_storeu_pd};
        let mut y = [0.0f64; 8];
        // SAFETY: only compiled into the `avx512f` entry points (`avx512`
        // below), which run only where AVX-512F is present; the pointers are
        // to 8 f64 each.
        unsafe {
            _mm512_storeu_pd(
                y.as_mut_ptr(),
                _mm512_rsqrt14_pd(_mm512_loadu_pd(x.as_ptr())),
            )
        };
        let y = newton(x, y);
        newton(x, y)
    }
}

/// One Newton–Raphson step for `1 / sqrt(x)`: `y (3/2 - x/2 y^2)`.
#[inline(always)]
fn newton<const L: usize>(x: [f64; L], y: [f64; L]) -> [f64; L] {
    std::array::from_fn(|l| {
        let h = 0.5 * x[l];
        y[l] * (-h * y[l]).mul_add(y[l], 1.5)
    })
}

/// The i-body's field in f64, `L` lanes.
#[inline(always)]
fn f64_field<const L: usize, R: Rsqrt<L>>(s: &Sources, sink: &Sink, eps2: f64) -> Field {
    let [xi, yi, zi] = sink.pos;
    let [ui, vi, wi] = sink.vel;
    let skip = sink.slot.unwrap_or(usize::MAX);
    let n = s.n;
    let zero = [0.0f64; L];
    let (mut ax, mut ay, mut az, mut jx, mut jy, mut jz, mut pot) =
        (zero, zero, zero, zero, zero, zero, zero);
    for c in chunks(n, L) {
        let j0 = c * L;
        let at = |a: &Vec<f64>| -> [f64; L] { a[j0..j0 + L].try_into().expect("L lanes") };
        let (xj, yj, zj, mj) = (at(&s.x[0]), at(&s.x[1]), at(&s.x[2]), at(&s.m));
        let (uj, vj, wj) = (at(&s.v[0]), at(&s.v[1]), at(&s.v[2]));
        let mut r2 = [0.0; L];
        let (mut dx, mut dy, mut dz) = (zero, zero, zero);
        for l in 0..L {
            dx[l] = xj[l] - xi;
            dy[l] = yj[l] - yi;
            dz[l] = zj[l] - zi;
            r2[l] = dx[l].mul_add(dx[l], dy[l].mul_add(dy[l], dz[l].mul_add(dz[l], eps2)));
        }
        let rinv = R::rsqrt_f64(r2);
        for l in 0..L {
            let j = j0 + l;
            let rinv = if j < n && j != skip { rinv[l] } else { 0.0 };
            let (du, dv, dw) = (uj[l] - ui, vj[l] - vi, wj[l] - wi);
            let rinv2 = rinv * rinv;
            let mr = mj[l] * rinv;
            let mr3 = mr * rinv2;
            let rv = 3.0 * dx[l].mul_add(du, dy[l].mul_add(dv, dz[l] * dw)) * rinv2;
            ax[l] = mr3.mul_add(dx[l], ax[l]);
            ay[l] = mr3.mul_add(dy[l], ay[l]);
            az[l] = mr3.mul_add(dz[l], az[l]);
            jx[l] = mr3.mul_add((-rv).mul_add(dx[l], du), jx[l]);
            jy[l] = mr3.mul_add((-rv).mul_add(dy[l], dv), jy[l]);
            jz[l] = mr3.mul_add((-rv).mul_add(dz[l], dw), jz[l]);
            pot[l] -= mr;
        }
    }
    let sum = |a: [f64; L]| a.iter().fold(0.0, |s, x| s + x);
    Field {
        acc: [sum(ax), sum(ay), sum(az)],
        jerk: [sum(jx), sum(jy), sum(jz)],
        pot: sum(pot),
    }
}

/// j-vectors whose f32 jerk terms are summed before going into the f64 sums.
const JERK_FLUSH: usize = 64;

/// The i-body's field in mixed precision, `L` lanes.
#[inline(always)]
fn mixed_field<const L: usize>(s: &Sources, sink: &Sink, eps2: f64) -> Field {
    let [xi, yi, zi] = sink.pos;
    let [ui, vi, wi] = sink.vel;
    let skip = sink.slot.unwrap_or(usize::MAX);
    let n = s.n;
    let zero = [0.0f64; L];
    let zero32 = [0.0f32; L];
    let (mut ax, mut ay, mut az, mut pot) = (zero, zero, zero, zero);
    let (mut jx, mut jy, mut jz) = (zero, zero, zero);
    let (mut kx, mut ky, mut kz) = (zero32, zero32, zero32);
    for c in chunks(n, L) {
        let j0 = c * L;
        let at = |a: &Vec<f64>| -> [f64; L] { a[j0..j0 + L].try_into().expect("L lanes") };
        let (xj, yj, zj, mj) = (at(&s.x[0]), at(&s.x[1]), at(&s.x[2]), at(&s.m));
        let (uj, vj, wj) = (at(&s.v[0]), at(&s.v[1]), at(&s.v[2]));
        for l in 0..L {
            let j = j0 + l;
            let (dx, dy, dz) = (xj[l] - xi, yj[l] - yi, zj[l] - zi);
            let r2 = dx.mul_add(dx, dy.mul_add(dy, dz.mul_add(dz, eps2)));
            let seed = 1.0 / (r2 as f32).sqrt();
            let h = 0.5 * r2;
            let y = seed as f64;
            let rinv = y * (-h * y).mul_add(y, 1.5);
            let rinv = if j < n && j != skip { rinv } else { 0.0 };
            let rinv2 = rinv * rinv;
            let mr = mj[l] * rinv;
            let mr3 = mr * rinv2;
            ax[l] = mr3.mul_add(dx, ax[l]);
            ay[l] = mr3.mul_add(dy, ay[l]);
            az[l] = mr3.mul_add(dz, az[l]);
            pot[l] -= mr;
            // The jerk in f32.
            let (du, dv, dw) = (
                (uj[l] - ui) as f32,
                (vj[l] - vi) as f32,
                (wj[l] - wi) as f32,
            );
            let (fx, fy, fz) = (dx as f32, dy as f32, dz as f32);
            let (q2, q3) = (rinv2 as f32, mr3 as f32);
            let rv = 3.0 * fx.mul_add(du, fy.mul_add(dv, fz * dw)) * q2;
            kx[l] = q3.mul_add((-rv).mul_add(fx, du), kx[l]);
            ky[l] = q3.mul_add((-rv).mul_add(fy, dv), ky[l]);
            kz[l] = q3.mul_add((-rv).mul_add(fz, dw), kz[l]);
        }
        if (c + 1) % JERK_FLUSH == 0 {
            for l in 0..L {
                jx[l] += kx[l] as f64;
                jy[l] += ky[l] as f64;
                jz[l] += kz[l] as f64;
            }
            (kx, ky, kz) = (zero32, zero32, zero32);
        }
    }
    for l in 0..L {
        jx[l] += kx[l] as f64;
        jy[l] += ky[l] as f64;
        jz[l] += kz[l] as f64;
    }
    let sum = |a: [f64; L]| a.iter().fold(0.0, |s, x| s + x);
    Field {
        acc: [sum(ax), sum(ay), sum(az)],
        jerk: [sum(jx), sum(jy), sum(jz)],
        pot: sum(pot),
    }
}

/// The loops with AVX-512F enabled: 8 f64 lanes.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::*;

    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn f64_body(s: &Sources, sink: &Sink, eps2: f64) -> Field {
        f64_field::<8, Avx512Estimate>(s, sink, eps2)
    }

    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn mixed_body(s: &Sources, sink: &Sink, eps2: f64) -> Field {
        mixed_field::<8>(s, sink, eps2)
    }
}

/// The loops with AVX2 and FMA enabled: 4 f64 lanes.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;

    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn f64_body(s: &Sources, sink: &Sink, eps2: f64) -> Field {
        f64_field::<4, Exact>(s, sink, eps2)
    }

    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn mixed_body(s: &Sources, sink: &Sink, eps2: f64) -> Field {
        mixed_field::<4>(s, sink, eps2)
    }
}

/// The loops without target features: 2 lanes (NEON's width; plain f64
/// elsewhere, where `mul_add` is a library call: slow but exact).
mod portable {
    use super::*;

    /// # Safety
    /// None (`unsafe` for the common signature).
    pub(super) unsafe fn f64_body(s: &Sources, sink: &Sink, eps2: f64) -> Field {
        f64_field::<2, Exact>(s, sink, eps2)
    }

    /// # Safety
    /// None (`unsafe` for the common signature).
    pub(super) unsafe fn mixed_body(s: &Sources, sink: &Sink, eps2: f64) -> Field {
        mixed_field::<2>(s, sink, eps2)
    }
}
