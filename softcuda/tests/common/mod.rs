//! Helpers shared by the interpreter's tests: the committed PTX, bodies,
//! launches, and the f64 reference.
#![allow(dead_code, reason = "each test binary uses its own subset")]

use softcuda::{
    Device, LaunchConfig, LaunchError, LaunchOptions, Module, RaceCheck, Schedule, Stats, arch,
};

/// The PTX the project ships.
pub const PTX: &str = include_str!("../../../nbody-host/ptx/gpu_kernels.ptx");

pub fn module() -> Module {
    Module::from_ptx(PTX).expect("the committed PTX loads")
}

/// A tiny deterministic generator for test data.
pub struct Gen(u64);

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }
}

/// `n` bodies `[x, y, z, m]` in the unit cube, masses in [0.5, 1.5) / n.
pub fn bodies(n: usize, seed: u64) -> Vec<[f32; 4]> {
    let mut g = Gen::new(seed);
    (0..n)
        .map(|_| {
            [
                g.uniform(-1.0, 1.0),
                g.uniform(-1.0, 1.0),
                g.uniform(-1.0, 1.0),
                g.uniform(0.5, 1.5) / n as f32,
            ]
        })
        .collect()
}

/// Velocities `[vx, vy, vz, 0]`.
pub fn velocities(n: usize, seed: u64) -> Vec<[f32; 4]> {
    let mut g = Gen::new(seed ^ 0xabcdef);
    (0..n)
        .map(|_| {
            [
                g.uniform(-0.5, 0.5),
                g.uniform(-0.5, 0.5),
                g.uniform(-0.5, 0.5),
                0.0,
            ]
        })
        .collect()
}

pub fn to_bytes(v: &[[f32; 4]]) -> Vec<u8> {
    v.iter().flatten().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn from_bytes(b: &[u8]) -> Vec<[f32; 4]> {
    b.chunks_exact(16)
        .map(|c| {
            std::array::from_fn(|k| f32::from_le_bytes(c[4 * k..4 * k + 4].try_into().unwrap()))
        })
        .collect()
}

/// A kernel argument.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    Ptr(u64),
    U32(u32),
    F32(f32),
    F64(f64),
}

impl Arg {
    pub fn bytes(&self) -> Vec<u8> {
        match *self {
            Arg::Ptr(p) => p.to_le_bytes().to_vec(),
            Arg::U32(v) => v.to_le_bytes().to_vec(),
            Arg::F32(v) => v.to_le_bytes().to_vec(),
            Arg::F64(v) => v.to_le_bytes().to_vec(),
        }
    }
}

/// The schedules every kernel is tested under.
pub fn schedules() -> Vec<Schedule> {
    vec![
        Schedule::Deterministic,
        Schedule::Adversarial { seed: 1 },
        Schedule::Adversarial { seed: 0xdead_beef },
        Schedule::Adversarial { seed: 42 },
    ]
}

pub fn device() -> Device {
    Device::new(arch::SM90, 1 << 30)
}

pub fn upload(dev: &mut Device, data: &[u8]) -> u64 {
    let p = dev.memory.alloc(data.len() as u64).unwrap();
    dev.memory.write(p, data).unwrap();
    p
}

pub fn download(dev: &mut Device, p: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    dev.memory.read(p, &mut out).unwrap();
    out
}

/// Launches `name` with `args` (checked against the entry's parameters).
#[allow(
    clippy::too_many_arguments,
    reason = "mirrors cuLaunchKernel's grid, block and shared-memory arguments"
)]
pub fn launch(
    dev: &mut Device,
    m: &Module,
    name: &str,
    grid: u32,
    block: u32,
    shared: u32,
    args: &[Arg],
    schedule: Schedule,
) -> Result<Stats, LaunchError> {
    let k = m.kernel(name).unwrap_or_else(|| panic!("no kernel {name}"));
    let bytes: Vec<Vec<u8>> = args.iter().map(Arg::bytes).collect();
    let refs: Vec<&[u8]> = bytes.iter().map(|b| &b[..]).collect();
    let params = k.pack_params(&refs).expect("arguments match the PTX");
    let opts = LaunchOptions {
        schedule,
        races: RaceCheck::All,
        ..LaunchOptions::default()
    };
    dev.launch(
        k,
        &LaunchConfig::linear(grid, block, shared),
        &params,
        &opts,
    )
}

/// f64 accelerations `G sum_j m_j r_ij / (|r_ij|^2 + eps2)^(3/2)` and, per
/// component, the sum of the terms' magnitudes (the error scale).
pub fn reference_accel(p: &[[f32; 4]], g: f32, eps2: f32) -> Vec<([f64; 3], [f64; 3])> {
    let n = p.len();
    (0..n)
        .map(|i| {
            let mut a = [0f64; 3];
            let mut s = [0f64; 3];
            for j in 0..n {
                if j == i {
                    continue;
                }
                let r: [f64; 3] = std::array::from_fn(|k| p[j][k] as f64 - p[i][k] as f64);
                let d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + eps2 as f64;
                let f = g as f64 * p[j][3] as f64 / (d2 * d2.sqrt());
                for k in 0..3 {
                    a[k] += f * r[k];
                    s[k] += (f * r[k]).abs();
                }
            }
            (a, s)
        })
        .collect()
}

/// Error allowed for an f32 sum of `terms` pairwise interactions against the
/// f64 reference, relative to the sum of the terms' magnitudes: each term
/// carries the rsqrt error (below 2^-22 on hardware, cubed: 3 x 2^-22) and
/// about 8 roundings of 2^-24 (subtractions, the FMA chain, the products,
/// G), and a sequential f32 sum of `terms` terms adds at most `terms`
/// roundings of the running sum.
pub fn accel_tolerance(terms: usize) -> f64 {
    let u = (2.0f64).powi(-24);
    3.0 * (2.0f64).powi(-22) + (8.0 + terms as f64) * u
}
