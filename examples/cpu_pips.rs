//! Interactions per second (PIPS, `N^2 steps / seconds`) of the CPU backend
//! for every instruction set this CPU has and every kernel.
//!
//! ```text
//! cargo run --release --example cpu_pips                     # N = 16384, 3 steps
//! cargo run --release --example cpu_pips -- --n 65536 --steps 1 --isa avx2+fma --kernel triangle
//! ```
//!
//! One line per run, then a table. The run is NVIDIA Warp's N-body example's: a uniform
//! cube, softening 0.1, `dt = 0.01`, semi-implicit Euler (one force
//! evaluation per step); one untimed warm-up step first, and with
//! `--repeat R` the fastest of `R` timed runs.

use std::time::Instant;

use anyhow::{Result, bail};
use clap::Parser;
use nbody_host::{Backend, CpuTuning, Integrator, Isa, Kernel, Simulation, ic};

/// PIPS of the CPU backend per instruction set and kernel.
#[derive(Parser, Debug)]
#[command(name = "cpu_pips")]
struct Cli {
    /// Number of bodies
    #[arg(long, default_value_t = 16384)]
    n: usize,
    /// Timed steps per run
    #[arg(long, default_value_t = 3)]
    steps: u64,
    /// Only this instruction set (avx512, avx2+fma, neon, scalar) [default: all available]
    #[arg(long)]
    isa: Option<String>,
    /// Only this kernel (simt, tiled, triangle) [default: all]
    #[arg(long)]
    kernel: Option<String>,
    /// Bodies per rayon task / triangle tile edge
    #[arg(long)]
    i_block: Option<usize>,
    /// j-bodies per cache tile
    #[arg(long)]
    j_tile: Option<usize>,
    /// Timed repetitions per run; the fastest counts
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Seed of the initial conditions
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Also measure this machine's peak vector-FMA rate and report each run as a fraction of it
    #[arg(long)]
    peak: bool,
}

/// Vector operations ("slots") per interaction of the CPU loops: all-pairs
/// 3 sub + 3 FMA (r^2) + rsqrt + 3 (Newton step) + 3 mul (m / r^3) + 3 FMA
/// = 16, of which 13 (FMA, mul, rsqrt) issue on the two FMA pipes of current
/// x86 cores and 3 subs on the adders; Newton's third law (per pair, two
/// interactions): 3 sub + 3 FMA + rsqrt + 3 + 4 mul + 6 FMA, 17 on the FMA
/// pipes. `fma_pipe_ops(kernel)` is those FMA-pipe operations per interaction.
fn fma_pipe_ops(kernel: &str) -> f64 {
    if kernel == "triangle" {
        17.0 / 2.0
    } else {
        13.0
    }
}

/// The peak rate of lane operations on the FMA pipes ("lane-ops": one
/// lane of one FMA, multiply or add) of all cores at `isa`'s width: every
/// rayon thread runs 12 independent chains (enough to cover the 4-cycle
/// latency on two pipes) for ~0.3 s. The vector instruction sets chain
/// FMAs (one lane-op per lane each); the scalar loops are compiled without
/// FMA, so the scalar probe chains hardware scalar multiplies and adds (one
/// lane-op each), what scalar code issues. (It used to time `f32::mul_add`,
/// which without the FMA feature is a call into libm's software FMA: a
/// tenth of the hardware's rate, below what the scalar loops themselves
/// reached.) Returns (instructions/s, lane-ops/s).
fn probe_peak(isa: Isa) -> (f64, f64) {
    use rayon::prelude::*;
    const ITERS: u64 = 50_000_000;
    let threads = rayon::current_num_threads();
    let start = Instant::now();
    (0..threads)
        .into_par_iter()
        .for_each(|_| fma_chains(isa, ITERS));
    let seconds = start.elapsed().as_secs_f64();
    let chains = (threads as u64 * ITERS * 12) as f64 / seconds;
    match isa {
        // A multiply and an add per link of a chain.
        Isa::Scalar => (2.0 * chains, 2.0 * chains),
        _ => (chains, chains * isa.lanes() as f64),
    }
}

fn fma_chains(isa: Isa, iters: u64) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `isa` is one this CPU has (from `Isa::available`).
        Isa::Avx512 => unsafe { x86::fma_chains_avx512(iters) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2Fma => unsafe { x86::fma_chains_avx2(iters) },
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => fma_chains_neon(iters),
        #[cfg(target_arch = "x86_64")]
        _ => x86::mul_add_chains_scalar(iters),
        #[cfg(not(target_arch = "x86_64"))]
        _ => mul_add_chains_scalar(iters),
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx512f")]
    pub unsafe fn fma_chains_avx512(iters: u64) {
        // Distinct starting values, so the compiler cannot merge the chains.
        let mut acc: [__m512; 12] = std::array::from_fn(|k| _mm512_set1_ps(1.0 + k as f32));
        let (a, b) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-7));
        for _ in 0..std::hint::black_box(iters) {
            for x in &mut acc {
                *x = _mm512_fmadd_ps(*x, a, b);
            }
        }
        std::hint::black_box(acc);
    }

    /// Scalar SSE multiplies and adds (`mulss`, `addss`: SSE is part of
    /// x86-64), one lane each: written as intrinsics so that the compiler
    /// neither vectorises the chains nor calls libm.
    pub fn mul_add_chains_scalar(iters: u64) {
        // SAFETY: SSE is part of the x86-64 base architecture.
        unsafe {
            let mut acc: [__m128; 12] = std::array::from_fn(|k| _mm_set_ss(1.0 + k as f32));
            let (a, b) = (_mm_set_ss(0.999_999), _mm_set_ss(1e-7));
            for _ in 0..std::hint::black_box(iters) {
                for x in &mut acc {
                    *x = _mm_add_ss(_mm_mul_ss(*x, a), b);
                }
            }
            std::hint::black_box(acc);
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fma_chains_avx2(iters: u64) {
        let mut acc: [__m256; 12] = std::array::from_fn(|k| _mm256_set1_ps(1.0 + k as f32));
        let (a, b) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(1e-7));
        for _ in 0..std::hint::black_box(iters) {
            for x in &mut acc {
                *x = _mm256_fmadd_ps(*x, a, b);
            }
        }
        std::hint::black_box(acc);
    }
}

#[cfg(target_arch = "aarch64")]
fn fma_chains_neon(iters: u64) {
    use std::arch::aarch64::*;
    // SAFETY: NEON is part of the aarch64 base architecture.
    unsafe {
        let mut acc: [float32x4_t; 12] = std::array::from_fn(|k| vdupq_n_f32(1.0 + k as f32));
        let (a, b) = (vdupq_n_f32(0.999_999), vdupq_n_f32(1e-7));
        for _ in 0..std::hint::black_box(iters) {
            for x in &mut acc {
                *x = vfmaq_f32(b, *x, a);
            }
        }
        std::hint::black_box(acc);
    }
}

/// Scalar multiplies and adds (see the x86-64 version).
#[cfg(not(target_arch = "x86_64"))]
fn mul_add_chains_scalar(iters: u64) {
    let mut acc: [f32; 12] = std::array::from_fn(|k| 1.0 + k as f32);
    for _ in 0..std::hint::black_box(iters) {
        for x in &mut acc {
            *x = *x * 0.999_999 + 1e-7;
        }
        acc = std::hint::black_box(acc);
    }
}

fn main() -> Result<()> {
    cli(std::env::args_os(), &mut std::io::stdout().lock())
}

/// Parses `args` (program name first) and runs, writing to `out`.
pub fn cli(
    args: impl IntoIterator<Item = impl Into<std::ffi::OsString> + Clone>,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let cli = Cli::try_parse_from(args)?;
    let isas = match &cli.isa {
        None => Isa::available(),
        Some(name) => match Isa::from_name(name) {
            Some(isa) => vec![isa],
            None => bail!("unknown instruction set {name:?}: avx512, avx2+fma, neon or scalar"),
        },
    };
    let kernels: Vec<Kernel> = match &cli.kernel {
        None => ["simt", "tiled", "triangle"]
            .iter()
            .filter_map(|k| Kernel::from_name(k, 256))
            .collect(),
        Some(name) => match Kernel::from_name(name, 256) {
            Some(k) => vec![k],
            None => bail!("unknown kernel {name:?}: simt, tiled or triangle"),
        },
    };
    // The probe's peak rate of lane-ops per instruction set.
    let mut probes = Vec::new();
    if cli.peak {
        for &isa in &isas {
            let (instructions, lane_ops) = probe_peak(isa);
            let what = match isa {
                Isa::Scalar => "scalar multiply and add instructions/s",
                _ => "FMA instructions/s",
            };
            writeln!(
                out,
                "peak {isa}: {instructions:.3e} {what} ({} lanes each) on {} threads",
                isa.lanes(),
                rayon_threads()
            )?;
            probes.push((isa, lane_ops));
        }
    }
    let defaults = CpuTuning::default();
    let bodies = ic::uniform_cube(cli.n, cli.seed);
    writeln!(
        out,
        "N = {}, {} steps, {} rayon threads, detected {}",
        cli.n,
        cli.steps,
        rayon_threads(),
        Isa::detect()
    )?;
    let mut rows = Vec::new();
    for &isa in &isas {
        let mut runs = Vec::new();
        for &kernel in &kernels {
            let tuning = CpuTuning {
                isa: Some(isa),
                i_block: cli.i_block.unwrap_or(defaults.i_block),
                j_tile: cli.j_tile.unwrap_or(defaults.j_tile),
                // Simt and Tiled measured on their own (all-pairs) loop.
                third_law_min_n: usize::MAX,
            };
            let mut sim = Simulation::builder(bodies.clone())
                .softening(0.1)
                .dt(0.01)
                .kernel(kernel)
                .integrator(Integrator::SemiImplicitEuler)
                .backend(Backend::Cpu(tuning))
                .build()?;
            sim.step(1)?;
            let mut seconds = f64::INFINITY;
            for _ in 0..cli.repeat.max(1) {
                let start = Instant::now();
                sim.step(cli.steps)?;
                seconds = seconds.min(start.elapsed().as_secs_f64());
            }
            let pips = (cli.n as f64).powi(2) * cli.steps as f64 / seconds;
            runs.push((kernel.name(), seconds, pips));
        }
        // Fraction of the FMA pipes' peak: the loop's lane-ops/s
        // (interactions/s x FMA-pipe ops per interaction) over the peak,
        // the largest rate measured: the probe's, or a loop's own where it
        // went faster (the probe then missed what this CPU issues). A
        // fraction above 1 cannot happen by construction.
        let probe = probes.iter().find(|(i, _)| *i == isa).map(|&(_, r)| r);
        let rate = |kernel: &str, pips: f64| pips * fma_pipe_ops(kernel);
        let peak = probe.map(|probe| {
            let fastest = runs
                .iter()
                .map(|&(k, _, pips)| (k, rate(k, pips)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match fastest {
                Some((kernel, r)) if r > probe => {
                    writeln!(
                        out,
                        "peak {isa}: the {kernel} loop issued {r:.3e} lane-ops/s, more than the \
                         probe's {probe:.3e}: the peak is the loop's"
                    )?;
                    Ok::<f64, anyhow::Error>(r)
                }
                _ => Ok(probe),
            }
        });
        let peak = peak.transpose()?;
        for (kernel, seconds, pips) in runs {
            let of_peak = peak.map(|peak| rate(kernel, pips) / peak);
            let peak_text =
                of_peak.map_or(String::new(), |f| format!(" of_peak={:.0}%", 100.0 * f));
            writeln!(
                out,
                "isa={} kernel={} n={} steps={} seconds={seconds:.4} pips={pips:.3e}{peak_text}",
                isa, kernel, cli.n, cli.steps
            )?;
            rows.push((isa, kernel, pips, of_peak));
        }
    }
    writeln!(out)?;
    writeln!(out, "| isa | kernel | PIPS | of FMA peak |")?;
    writeln!(out, "| --- | --- | --- | --- |")?;
    for (isa, kernel, pips, of_peak) in rows {
        let f = of_peak.map_or("-".to_string(), |f| format!("{:.0}%", 100.0 * f));
        writeln!(out, "| {isa} | {kernel} | {pips:.3e} | {f} |")?;
    }
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
