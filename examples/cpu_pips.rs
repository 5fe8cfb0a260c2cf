//! Interactions per second (PIPS, `N^2 steps / seconds`) of the CPU backend
//! for every instruction set this CPU has and every kernel.
//!
//! ```text
//! cargo run --release --example cpu_pips                     # N = 16384, 3 steps
//! cargo run --release --example cpu_pips -- --n 65536 --steps 1 --isa avx2+fma --kernel triangle
//! ```
//!
//! One line per run, then a table. The run is the seed notebook's: a uniform
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
    /// Only this instruction set (avx512, avx2+fma, scalar) [default: all available]
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
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let isas = match &cli.isa {
        None => Isa::available(),
        Some(name) => match Isa::from_name(name) {
            Some(isa) => vec![isa],
            None => bail!("unknown instruction set {name:?}: avx512, avx2+fma or scalar"),
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
    let defaults = CpuTuning::default();
    let bodies = ic::uniform_cube(cli.n, cli.seed);
    println!(
        "N = {}, {} steps, {} rayon threads, detected {}",
        cli.n,
        cli.steps,
        rayon_threads(),
        Isa::detect()
    );
    let mut rows = Vec::new();
    for &isa in &isas {
        for &kernel in &kernels {
            let tuning = CpuTuning {
                isa: Some(isa),
                i_block: cli.i_block.unwrap_or(defaults.i_block),
                j_tile: cli.j_tile.unwrap_or(defaults.j_tile),
            };
            let mut sim = Simulation::builder(bodies.clone())
                .softening(0.1)
                .dt(0.01)
                .kernel(kernel)
                .integrator(Integrator::SemiImplicitEuler)
                .backend(Backend::Cpu)
                .cpu_tuning(tuning)
                .build()?;
            sim.step(1)?;
            let mut seconds = f64::INFINITY;
            for _ in 0..cli.repeat.max(1) {
                let start = Instant::now();
                sim.step(cli.steps)?;
                seconds = seconds.min(start.elapsed().as_secs_f64());
            }
            let pips = (cli.n as f64).powi(2) * cli.steps as f64 / seconds;
            println!(
                "isa={} kernel={} n={} steps={} seconds={seconds:.4} pips={pips:.3e}",
                isa,
                kernel.name(),
                cli.n,
                cli.steps
            );
            rows.push((isa, kernel.name(), pips));
        }
    }
    println!();
    println!("| isa | kernel | PIPS |");
    println!("| --- | --- | --- |");
    for (isa, kernel, pips) in rows {
        println!("| {isa} | {kernel} | {pips:.3e} |");
    }
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
