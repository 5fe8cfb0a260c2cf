//! Two Plummer-sphere galaxies collide and merge, rendered to an animated GIF.
//!
//! ```text
//! cargo run --release --example galaxy_collision -- [--n 2500] [--steps 1600]
//!     [--dt 0.01] [--every 10] [--softening 0.05] [--seed 1]
//!     [--backend cpu|auto|cuda|emulator] [--size 480x300]
//!     [--out galaxy_collision.gif] [--frames DIR]
//! ```
//!
//! Bodies `0..n/2` (galaxy A, orange) and `n/2..n` (galaxy B, blue) come from
//! `ic::collision`; leapfrog keeps the energy error bounded through the
//! merger. The state is copied back only every `--every` steps, when a frame
//! is taken. Same arguments and backend, same bytes.

use std::time::Instant;

use glam::Vec3;
use nbody_host::render::{Camera, Recorder, Renderer};
use nbody_host::{Backend, Integrator, Kernel, Simulation, ic};

struct Args {
    n: usize,
    steps: u64,
    dt: f64,
    every: u64,
    softening: f64,
    seed: u64,
    backend: Backend,
    size: (u32, u32),
    out: String,
    frames: Option<String>,
}

fn parse_value<T: std::str::FromStr>(flag: &str, v: String) -> Result<T, String> {
    v.parse().map_err(|_| format!("bad value {v:?} for {flag}"))
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        n: 2500,
        steps: 1600,
        dt: 0.01,
        every: 10,
        softening: 0.05,
        seed: 1,
        backend: Backend::cpu(),
        size: (480, 300),
        out: "galaxy_collision.gif".into(),
        frames: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let bad = |v: &str| format!("bad value {v:?} for {flag}");
        match flag.as_str() {
            "--n" => a.n = parse_value(&flag, value()?)?,
            "--steps" => a.steps = parse_value(&flag, value()?)?,
            "--dt" => a.dt = parse_value(&flag, value()?)?,
            "--every" => a.every = parse_value(&flag, value()?)?,
            "--softening" => a.softening = parse_value(&flag, value()?)?,
            "--seed" => a.seed = parse_value(&flag, value()?)?,
            "--backend" => {
                let v = value()?;
                a.backend = match v.as_str() {
                    "cpu" => Backend::cpu(),
                    "auto" => Backend::Auto,
                    "cuda" => Backend::Cuda { device: 0 },
                    "emulator" => Backend::emulator(),
                    _ => return Err(bad(&v)),
                }
            }
            "--size" => {
                let v = value()?;
                let (w, h) = v.split_once('x').ok_or(bad(&v))?;
                a.size = (
                    w.parse().map_err(|_| bad(&v))?,
                    h.parse().map_err(|_| bad(&v))?,
                );
            }
            "--out" => a.out = value()?,
            "--frames" => a.frames = Some(value()?),
            "--help" | "-h" => {
                return Err(
                    "usage: galaxy_collision [--n N] [--steps S] [--dt DT] [--every K] \
                     [--softening EPS] [--seed SEED] [--backend cpu|auto|cuda|emulator] \
                     [--size WxH] [--out FILE.gif] [--frames DIR]"
                        .into(),
                );
            }
            _ => return Err(format!("unknown argument {flag:?} (try --help)")),
        }
    }
    Ok(a)
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(a: &Args) -> nbody_host::Result<()> {
    let bodies = ic::collision(a.n, a.seed);
    let half = a.n / 2;
    // Face-on view of the orbital plane (x-y), a little tilted; fixed so the
    // galaxies move across the picture.
    let camera = Camera::orthographic(Vec3::ZERO, Vec3::new(0.0, 0.35, -1.0), 4.6)?;
    let renderer = Renderer::new(camera, a.size.0, a.size.1)?
        .group(0..half, [255, 150, 60])
        .group(half..a.n, [90, 160, 255]);
    // Outputs first: a bad path fails before any simulation work.
    let mut recorder = Recorder::new(renderer, a.every)?
        .gif(&a.out)?
        .caption(format!("N = {}, leapfrog, dt = {}", a.n, a.dt));
    if let Some(dir) = &a.frames {
        std::fs::create_dir_all(dir).map_err(|source| nbody_host::Error::Io {
            path: dir.into(),
            source,
        })?;
        recorder = recorder.png_frames(dir)?;
    }
    let mut sim = Simulation::builder(bodies)
        .dt(a.dt)
        .softening(a.softening)
        .kernel(Kernel::Tiled { block: 128 })
        .integrator(Integrator::Leapfrog)
        .backend(a.backend)
        .build()?;
    println!(
        "galaxy collision: N = {}, {} steps of dt = {}, a frame every {} steps, on {}",
        a.n,
        a.steps,
        a.dt,
        a.every,
        sim.backend()
    );
    let e0 = sim.energy()?;
    let start = Instant::now();
    recorder.run(&mut sim, a.steps)?;
    let seconds = start.elapsed().as_secs_f64();
    let frames = recorder.finish()?;
    let de = sim.energy()?.relative_change_from(&e0);
    println!(
        "t = {:.1}: {frames} frames in {seconds:.1} s, |dE/E| = {de:.1e}",
        sim.time()
    );
    println!("wrote {}", a.out);
    if let Some(dir) = &a.frames {
        println!("wrote {dir}/frame_00000.png .. frame_{:05}.png", frames - 1);
    }
    Ok(())
}
