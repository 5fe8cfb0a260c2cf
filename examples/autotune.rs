//! The tile/block sweep of the NVIDIA Warp N-body example: PIPS of every kernel and block
//! size (on the CPU backend: every blocking of its loops) for one problem,
//! as a table with the best marked, a bar chart PNG, and optionally a JSON
//! profile of the winner that `Simulation::builder(..).tuned_for(&profile)`
//! applies.
//!
//! ```text
//! cargo run --release --example autotune                                  # CPU, N = 16384
//! cargo run --release --example autotune -- --save-profile cpu.json
//! cargo run --release --example autotune -- --backend emulator --n 256    # kernel bodies on CPU threads (not GPU speed)
//! cargo run --release --features cuda --example autotune -- --backend cuda --n 65536
//! ```
//!
//! The problem is Warp's example's (uniform cube, softening 0.1, `dt = 0.01`,
//! semi-implicit Euler). Each configuration runs one untimed warm-up step,
//! then the fastest of `--repeat` timed runs of `--steps` steps counts
//! (on CUDA, timed with CUDA events). The last line is machine-readable:
//! `best backend=<b> kernel=<k> block=<B> i_block=<i> j_tile=<j> pips=<p> split=<S>`
//! (the split kernel's threads per body; 1 for the others). On the GPU
//! backends the sweep includes `auto`, saved as the kernel it chose.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use nbody_host::render::{Bar, bar_chart};
use nbody_host::{Backend, CpuTuning, Integrator, Kernel, Simulation, TuningProfile, ic};

/// Sweep kernels and block sizes; print, plot and save the best.
#[derive(Parser, Debug)]
#[command(name = "autotune")]
pub struct Cli {
    /// Backend to tune: cpu, emulator or cuda
    #[arg(long, default_value = "cpu")]
    backend: String,
    /// Number of bodies [default: 16384 on the CPU, 256 on the emulator, 65536 on CUDA]
    #[arg(long)]
    n: Option<usize>,
    /// Timed steps per run
    #[arg(long, default_value_t = 2)]
    steps: u64,
    /// Timed runs per configuration; the fastest counts
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// Bar chart of the sweep
    #[arg(long, default_value = "target/autotune.png")]
    plot: PathBuf,
    /// Save the winner as a JSON tuning profile
    #[arg(long)]
    save_profile: Option<PathBuf>,
    /// Seed of the initial conditions
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// One point of the sweep.
struct Config {
    label: String,
    kernel: Kernel,
    cpu: Option<CpuTuning>,
}

fn configs(backend: &str) -> Vec<Config> {
    let mut out = Vec::new();
    if backend == "cpu" {
        // On the CPU, SIMT and tiled run the same all-pairs loop (block size
        // unused; held there, not switched to the third-law loop); its knobs
        // are the i-block per task and the j cache tile.
        for i_block in [128, 512, 1024] {
            for j_tile in [1024, 4096, 16384] {
                out.push(Config {
                    label: format!("all-pairs i{i_block} j{j_tile}"),
                    kernel: Kernel::Tiled { block: 256 },
                    cpu: Some(CpuTuning {
                        i_block,
                        j_tile,
                        third_law_min_n: usize::MAX,
                        ..CpuTuning::default()
                    }),
                });
            }
        }
        for i_block in [256, 512, 1024, 2048] {
            out.push(Config {
                label: format!("triangle i{i_block}"),
                kernel: Kernel::Triangle { block: 256 },
                cpu: Some(CpuTuning {
                    i_block,
                    ..CpuTuning::default()
                }),
            });
        }
    } else {
        // What `Kernel::Auto` would choose here, beside the sweep.
        out.push(Config {
            label: "auto".into(),
            kernel: Kernel::Auto,
            cpu: None,
        });
        // The split kernel: threads per body, at least 8 bodies per block.
        for block in [128, 256, 512, 1024] {
            for split in [4, 16, 64] {
                if split <= block / 8 {
                    out.push(Config {
                        label: format!("split {block}/{split}"),
                        kernel: Kernel::Split { block, split },
                        cpu: None,
                    });
                }
            }
        }
        for name in ["simt", "tiled", "triangle"] {
            for block in [32, 64, 128, 256, 512, 1024] {
                let kernel = Kernel::from_name(name, block).expect("known kernel");
                if block > kernel.max_block() {
                    continue; // the register-blocked triangle kernel stops at 512
                }
                out.push(Config {
                    label: format!("{name} {block}"),
                    kernel,
                    cpu: None,
                });
            }
        }
    }
    out
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The sweep (everything but the exit status).
pub fn run(cli: Cli) -> Result<()> {
    let (backend, default_n) = match cli.backend.as_str() {
        "cpu" => (Backend::cpu(), 16384),
        "emulator" => (Backend::emulator(), 256),
        "cuda" => (Backend::Cuda { device: 0 }, 65536),
        other => bail!("unknown backend {other:?}: cpu, emulator or cuda"),
    };
    let n = cli.n.unwrap_or(default_n);
    if n == 0 || cli.steps == 0 || cli.repeat == 0 {
        bail!(
            "--n {n}, --steps {} and --repeat {} must all be at least 1",
            cli.steps,
            cli.repeat
        );
    }
    let bodies = ic::uniform_cube(n, cli.seed);
    let mut rows: Vec<(Config, f64)> = Vec::new();
    let mut device = None;
    for config in configs(&cli.backend) {
        let builder = Simulation::builder(bodies.clone())
            .softening(0.1)
            .dt(0.01)
            .integrator(Integrator::SemiImplicitEuler)
            .kernel(config.kernel)
            .backend(match config.cpu {
                Some(tuning) => Backend::Cpu(tuning),
                None => backend,
            });
        let mut sim = match builder.build() {
            Ok(sim) => sim,
            // A block too large for this device's shared memory is a
            // configuration to skip, not a failed sweep.
            Err(e @ nbody_host::Error::SharedMemoryExceeded { .. }) => {
                eprintln!("{}: skipped ({e})", config.label);
                continue;
            }
            Err(e) => return Err(e).context(format!("building {}", config.label)),
        };
        device = Some(sim.backend());
        // `auto` is saved as what it chose on this device.
        let config = Config {
            kernel: sim.params().kernel(),
            label: match config.kernel {
                Kernel::Auto => format!("auto = {}", sim.params().kernel()),
                _ => config.label,
            },
            ..config
        };
        sim.step(1)?;
        let mut best = f64::INFINITY;
        for _ in 0..cli.repeat {
            let (wall, dev) = (Instant::now(), sim.device_seconds());
            sim.step(cli.steps)?;
            let seconds = match (dev, sim.device_seconds()) {
                (Some(before), Some(after)) => after - before,
                _ => wall.elapsed().as_secs_f64(),
            };
            best = best.min(seconds);
        }
        let pips = (n as f64).powi(2) * cli.steps as f64 / best;
        eprintln!("{:<26} {pips:.3e} PIPS", config.label);
        rows.push((config, pips));
    }
    let (Some(best), Some(device)) = (
        (0..rows.len()).max_by(|&a, &b| rows[a].1.total_cmp(&rows[b].1)),
        device,
    ) else {
        bail!("no configuration could run on the {} backend", cli.backend);
    };

    println!(
        "autotune on {device}, N = {n}, best of {} x {} steps",
        cli.repeat, cli.steps
    );
    println!();
    println!("| configuration | PIPS | of best |");
    println!("| --- | ---: | ---: |");
    for (i, (config, pips)) in rows.iter().enumerate() {
        let mark = if i == best { " **best**" } else { "" };
        println!(
            "| {}{mark} | {pips:.3e} | {:.0}% |",
            config.label,
            100.0 * pips / rows[best].1
        );
    }
    let bars: Vec<Bar> = rows
        .iter()
        .enumerate()
        .map(|(i, (config, pips))| Bar {
            label: config.label.clone(),
            value: *pips,
            highlight: i == best,
        })
        .collect();
    let title = format!("{} N = {n}: PIPS per configuration", cli.backend);
    if let Some(dir) = cli.plot.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    bar_chart(&cli.plot, &title, "interactions / s", &bars, (960, 560))?;
    println!();
    println!("chart: {}", cli.plot.display());

    let (config, pips) = &rows[best];
    let profile = TuningProfile {
        backend: device,
        n,
        kernel: config.kernel,
        cpu_tuning: config.cpu,
        pips: *pips,
    };
    if let Some(path) = &cli.save_profile {
        profile.save(path)?;
        println!(
            "profile: {} (apply with SimulationBuilder::tuned_for)",
            path.display()
        );
    }
    let tuning = profile.cpu_tuning.unwrap_or_default();
    println!(
        "best backend={} kernel={} block={} i_block={} j_tile={} pips={:.6e} split={}",
        profile.backend.name(),
        profile.kernel.name(),
        profile.kernel.block(),
        tuning.i_block,
        tuning.j_tile,
        profile.pips,
        profile.kernel.split()
    );
    Ok(())
}
