//! Runs one of the project's N-body entry points in the interpreter on
//! random bodies and prints its accounting per interaction: PTX
//! instructions, shared-memory wavefronts and global sectors, plus the
//! interpreter's own speed.
//!
//! ```text
//! softcuda-stats PTX_FILE --kernel nbody_tiled_accel --n 4096 --block 256 [--arch sm_90]
//!                [--schedule deterministic|adversarial] [--seed S] [--races off|shared|all]
//!                [--eps 0.1] [--mufu sm90|ieee] [--json]
//! softcuda-stats PTX_FILE --table --n 4096 --block 256     # the force kernels as a markdown table
//! softcuda-stats PTX_FILE --registers    # registers per entry: measured (H200 JIT) or estimated
//! ```
//!
//! Interactions are `N (N - 1)` for every force kernel (the triangle
//! kernel computes `N (N - 1) / 2` pairs, two interactions each).
//!
//! The launch shapes are those of `gpu_kernels::shape` (tiled: 2 bodies per
//! thread; triangle: 4 bodies per thread, `G (G + 1) / 2` blocks of groups
//! of `4 B` bodies), written out here because the interpreter depends on
//! nothing; `softcuda/tests/kernels.rs` takes them from the kernel crate.

use std::process::ExitCode;
use std::time::Instant;

use softcuda::{Arch, Device, LaunchConfig, LaunchOptions, Module, RaceCheck, Schedule, Stats};

struct Args {
    ptx: String,
    kernel: Option<String>,
    table: bool,
    registers: bool,
    mufu: softcuda::mufu::Model,
    n: u32,
    block: u32,
    arch: Arch,
    schedule: Schedule,
    races: RaceCheck,
    eps: f32,
    json: bool,
}

fn usage() -> String {
    "usage: softcuda-stats PTX_FILE (--kernel NAME | --table | --registers) [--n N] [--block B] [--arch sm_70|sm_80|sm_90] [--schedule deterministic|adversarial] [--seed S] [--races off|shared|all] [--eps E] [--mufu sm90|ieee] [--json]".to_owned()
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        ptx: String::new(),
        kernel: None,
        table: false,
        registers: false,
        mufu: softcuda::mufu::Model::Sm90,
        n: 4096,
        block: 256,
        arch: softcuda::arch::SM90,
        schedule: Schedule::Deterministic,
        races: RaceCheck::Off,
        eps: 0.1,
        json: false,
    };
    let mut seed = 1u64;
    let mut adversarial = false;
    while let Some(arg) = it.next() {
        let mut val = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--kernel" => a.kernel = Some(val("--kernel")?),
            "--table" => a.table = true,
            "--registers" => a.registers = true,
            "--mufu" => {
                let v = val("--mufu")?;
                a.mufu = softcuda::mufu::Model::by_name(&v)
                    .ok_or_else(|| format!("--mufu {v}: use sm90 or ieee"))?;
            }
            "--n" => a.n = val("--n")?.parse().map_err(|e| format!("--n: {e}"))?,
            "--block" => {
                a.block = val("--block")?
                    .parse()
                    .map_err(|e| format!("--block: {e}"))?
            }
            "--arch" => {
                let v = val("--arch")?;
                a.arch = Arch::by_name(&v).ok_or_else(|| format!("unknown arch {v}"))?;
            }
            "--schedule" => match val("--schedule")?.as_str() {
                "deterministic" => adversarial = false,
                "adversarial" => adversarial = true,
                v => return Err(format!("unknown schedule {v}")),
            },
            "--seed" => seed = val("--seed")?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--races" => {
                a.races = match val("--races")?.as_str() {
                    "off" => RaceCheck::Off,
                    "shared" => RaceCheck::Shared,
                    "all" => RaceCheck::All,
                    v => return Err(format!("unknown race mode {v}")),
                }
            }
            "--eps" => a.eps = val("--eps")?.parse().map_err(|e| format!("--eps: {e}"))?,
            "--json" => a.json = true,
            "-h" | "--help" => return Err(usage()),
            s if s.starts_with('-') => return Err(format!("unknown flag {s}\n{}", usage())),
            s => a.ptx = s.to_owned(),
        }
    }
    if adversarial {
        a.schedule = Schedule::Adversarial { seed };
    }
    if a.ptx.is_empty() || (a.kernel.is_none() && !a.table && !a.registers) {
        return Err(usage());
    }
    Ok(a)
}

/// What one measured launch gives.
struct Run {
    stats: Stats,
    seconds: f64,
    interactions: f64,
}

fn bytes_of(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn run(m: &Module, a: &Args, name: &str) -> Result<Run, String> {
    let k = m
        .kernel(name)
        .ok_or_else(|| format!("no entry point {name} in the PTX"))?;
    let n = a.n;
    let b = a.block;
    let mut dev = Device::new(a.arch, 1 << 34);
    // Bodies: a uniform cube, masses 1/N (a small xorshift; no dependencies).
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32
    };
    let pos: Vec<f32> = (0..n)
        .flat_map(|_| {
            [
                rnd() * 2.0 - 1.0,
                rnd() * 2.0 - 1.0,
                rnd() * 2.0 - 1.0,
                1.0 / n as f32,
            ]
        })
        .collect();
    let vel: Vec<f32> = vec![0.0; 4 * n as usize];
    let mut alloc = |data: &[u8]| -> Result<u64, String> {
        let p = dev
            .memory
            .alloc(data.len() as u64)
            .map_err(|e| format!("{e:?}"))?;
        dev.memory.write(p, data).map_err(|e| format!("{e:?}"))?;
        Ok(p)
    };
    let p_in = alloc(&bytes_of(&pos))?;
    let p_out = alloc(&bytes_of(&pos))?;
    let v = alloc(&bytes_of(&vel))?;
    let acc = alloc(&vec![0u8; 16 * n as usize])?;
    let energy_blocks = n.div_ceil(b);
    let partials = alloc(&vec![0u8; 16 * energy_blocks as usize])?;
    let flag = alloc(&[0xff; 8])?;
    let (eps2, g, dt) = (a.eps * a.eps, 1.0f32, 0.01f32);
    let ptr = |p: u64| p.to_le_bytes().to_vec();
    let u = |x: u32| x.to_le_bytes().to_vec();
    let f = |x: f32| x.to_le_bytes().to_vec();
    let all_pairs = n as f64 * (n as f64 - 1.0);
    let per_body = LaunchConfig::linear(n.div_ceil(b), b, 0);
    let (cfg, args, interactions): (LaunchConfig, Vec<Vec<u8>>, f64) = match name {
        "nbody_simt_accel" | "nbody_simt_accel_guarded" => (
            per_body,
            vec![ptr(p_in), ptr(acc), u(n), f(g), f(eps2)],
            all_pairs,
        ),
        "nbody_simt_euler" | "nbody_simt_euler_guarded" => (
            per_body,
            vec![ptr(p_in), ptr(p_out), ptr(v), u(n), f(dt), f(g), f(eps2)],
            all_pairs,
        ),
        "nbody_tiled_accel" | "nbody_tiled_accel_guarded" => (
            LaunchConfig::linear(n.div_ceil(2 * b), b, 16 * b),
            vec![ptr(p_in), ptr(acc), u(n), f(g), f(eps2)],
            all_pairs,
        ),
        "nbody_tiled_euler" | "nbody_tiled_euler_guarded" => (
            LaunchConfig::linear(n.div_ceil(2 * b), b, 16 * b),
            vec![ptr(p_in), ptr(p_out), ptr(v), u(n), f(dt), f(g), f(eps2)],
            all_pairs,
        ),
        "nbody_triangle_accel" | "nbody_triangle_accel_guarded" => {
            // gpu_kernels::shape::triangle: groups of 4 bodies per thread.
            let groups = if n < 2 { 0 } else { (n - 2) / (4 * b) + 1 };
            (
                LaunchConfig::linear(groups * (groups + 1) / 2, b, 32 * b),
                vec![ptr(p_in), ptr(acc), u(n), f(g), f(eps2)],
                all_pairs,
            )
        }
        "nbody_energy" => (
            LaunchConfig::linear(energy_blocks, b, 16 * b),
            vec![ptr(p_in), ptr(v), u(n), f(eps2), ptr(partials)],
            all_pairs,
        ),
        "nbody_kick" => (per_body, vec![ptr(v), ptr(acc), u(n), f(dt)], n as f64),
        "nbody_drift" => (
            per_body,
            vec![ptr(p_in), ptr(p_out), ptr(v), u(n), f(dt)],
            n as f64,
        ),
        "nbody_kick_drift" => (
            per_body,
            vec![ptr(p_in), ptr(p_out), ptr(v), ptr(acc), u(n), f(dt)],
            n as f64,
        ),
        "nbody_check_finite" => (
            per_body,
            vec![ptr(p_in), ptr(v), u(n), u(1), ptr(flag)],
            n as f64,
        ),
        other => {
            return Err(format!(
                "softcuda-stats does not know how to launch {other}"
            ));
        }
    };
    let refs: Vec<&[u8]> = args.iter().map(|x| &x[..]).collect();
    let params = k.pack_params(&refs)?;
    let opts = LaunchOptions {
        schedule: a.schedule,
        races: a.races,
        shared_limit: a.arch.shared_optin,
        ..LaunchOptions::default()
    };
    let t = Instant::now();
    let stats = dev
        .launch(k, &cfg, &params, &opts)
        .map_err(|e| e.to_string())?;
    Ok(Run {
        stats,
        seconds: t.elapsed().as_secs_f64(),
        interactions,
    })
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(&a.ptx) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {}: {e}", a.ptx);
            return ExitCode::from(2);
        }
    };
    if a.registers {
        return registers(&text);
    }
    let opts = softcuda::jit::JitOptions {
        device: Some(a.arch),
        mufu: a.mufu,
    };
    let m = match Module::from_ptx_with(&text, &opts) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let names: Vec<String> = if a.table {
        [
            "nbody_simt_accel",
            "nbody_simt_euler",
            "nbody_tiled_accel",
            "nbody_tiled_euler",
            "nbody_triangle_accel",
            "nbody_energy",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    } else {
        vec![a.kernel.clone().expect("checked")]
    };
    if a.table {
        println!(
            "softcuda accounting, {} model, N = {}, block {}, deterministic schedule (per interaction; N (N - 1) interactions; the triangle kernel does 2 per pair)\n",
            a.arch.name, a.n, a.block
        );
        println!(
            "| kernel | PTX instr. (thread) | issue slots (warp instr. x 32) | shared wavefronts | global sectors | modelled bound |"
        );
        println!("| --- | ---: | ---: | ---: | ---: | --- |");
    }
    for name in names {
        let r = match run(&m, &a, &name) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {name}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let s = &r.stats;
        let per = |x: u64| x as f64 / r.interactions;
        let sectors = s.global_sectors + s.global_atomic_sectors;
        // Per SM and clock: 4 warp-instructions issue, 1 wavefront is served.
        let issue_cycles = s.warp_instructions as f64 / 4.0;
        let smem_cycles = s.shared_wavefronts as f64;
        let bound = if smem_cycles == 0.0 {
            "issue (no shared memory)".to_owned()
        } else if smem_cycles > issue_cycles {
            format!("shared memory ({:.2}x issue)", smem_cycles / issue_cycles)
        } else {
            format!(
                "issue ({:.2}x shared)",
                issue_cycles / smem_cycles.max(1e-300)
            )
        };
        let blocks = s.blocks;
        let modelled = a.arch.model_seconds(s, blocks);
        if a.json {
            println!(
                "{{\"kernel\":\"{name}\",\"arch\":\"{}\",\"n\":{},\"block\":{},\"interactions\":{},\"thread_instructions_per_interaction\":{:.4},\"issue_slots_per_interaction\":{:.4},\"shared_wavefronts_per_interaction\":{:.6},\"global_sectors_per_interaction\":{:.6},\"modelled_seconds\":{:.6e},\"interpreter_seconds\":{:.4},\"interpreter_thread_instructions_per_second\":{:.4e},{}}}",
                a.arch.name,
                a.n,
                a.block,
                r.interactions,
                per(s.thread_instructions),
                per(s.warp_instructions * 32),
                per(s.shared_wavefronts),
                per(sectors),
                modelled,
                r.seconds,
                s.thread_instructions as f64 / r.seconds,
                s.json_fields()
            );
        } else if a.table {
            println!(
                "| `{name}` | {:.2} | {:.2} | {:.4} | {:.4} | {bound} |",
                per(s.thread_instructions),
                per(s.warp_instructions * 32),
                per(s.shared_wavefronts),
                per(sectors),
            );
        } else {
            println!(
                "kernel {name} on {} (modelled), N = {}, block {}",
                a.arch.name, a.n, a.block
            );
            println!("  interactions                  {:.0}", r.interactions);
            println!(
                "  PTX instructions / interaction {:.3} (thread), {:.3} issue slots (warp x 32)",
                per(s.thread_instructions),
                per(s.warp_instructions * 32)
            );
            println!(
                "  shared wavefronts / interaction {:.5} ({} requests)",
                per(s.shared_wavefronts),
                s.shared_requests
            );
            println!(
                "  global sectors / interaction  {:.5} ({} requests, {} atomic)",
                per(sectors),
                s.global_requests,
                s.global_atomic_requests
            );
            println!("  bound per SM                  {bound}");
            println!(
                "  modelled time                 {:.3} ms (a model, not a measurement)",
                modelled * 1e3
            );
            println!(
                "  interpreter                   {:.3} s, {:.1} M thread-instr/s, {:.2} M warp-instr/s",
                r.seconds,
                s.thread_instructions as f64 / r.seconds / 1e6,
                s.warp_instructions as f64 / r.seconds / 1e6
            );
        }
    }
    ExitCode::SUCCESS
}

/// `--registers`: each entry's registers per thread as the software device's
/// JIT reports them, where they come from, the estimate, and the
/// fingerprint (the columns of `softcuda/data/sm90_jit_registers.tsv`).
fn registers(text: &str) -> ExitCode {
    let m = match softcuda::parse::parse(text) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("# entry\tregisters\tsource\testimate\tfingerprint\tmax threads per block (sm_90)");
    for f in m.functions.iter().filter(|f| f.is_entry) {
        let (r, src) = softcuda::regalloc::registers(f);
        println!(
            "{}\t{r}\t{}\t{}\t{:#018x}\t{}",
            f.name,
            match src {
                softcuda::regalloc::Source::Measured => "measured",
                softcuda::regalloc::Source::Estimated => "estimated",
            },
            softcuda::regalloc::estimate(f),
            f.fingerprint,
            softcuda::arch::SM90.max_threads_for_registers(r)
        );
    }
    ExitCode::SUCCESS
}
