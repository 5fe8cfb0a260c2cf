//! Energy conservation of the two integrators on a Plummer sphere, plotted.
//!
//! ```text
//! cargo run --release --example plummer_energy -- [--n 1024] [--t 20]
//!     [--dt 0.01] [--softening 0.05] [--seed 7] [--out plummer_energy.png]
//! ```
//!
//! Runs the same Plummer sphere (Hénon units: crossing time about 2.8) with
//! NVIDIA Warp's N-body example's semi-implicit Euler and with leapfrog, samples
//! `|E(t) - E0| / |E0|` (energies summed in f64 on the backend), and writes
//! a PNG plot with a log y axis: first order against second order in `dt`.

use nbody_host::render::{EnergySeries, energy_plot};
use nbody_host::{Backend, Integrator, Simulation, ic};

struct Args {
    n: usize,
    t: f64,
    dt: f64,
    softening: f64,
    seed: u64,
    out: String,
}

fn parse_value<T: std::str::FromStr>(flag: &str, v: String) -> Result<T, String> {
    v.parse().map_err(|_| format!("bad value {v:?} for {flag}"))
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        n: 1024,
        t: 20.0,
        dt: 0.01,
        softening: 0.05,
        seed: 7,
        out: "plummer_energy.png".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--n" => a.n = parse_value(&flag, value()?)?,
            "--t" => a.t = parse_value(&flag, value()?)?,
            "--dt" => a.dt = parse_value(&flag, value()?)?,
            "--softening" => a.softening = parse_value(&flag, value()?)?,
            "--seed" => a.seed = parse_value(&flag, value()?)?,
            "--out" => a.out = value()?,
            "--help" | "-h" => {
                return Err("usage: plummer_energy [--n N] [--t T_END] [--dt DT] \
                     [--softening EPS] [--seed SEED] [--out FILE.png]"
                    .into());
            }
            _ => return Err(format!("unknown argument {flag:?} (try --help)")),
        }
    }
    if !(a.t.is_finite() && a.t > 0.0 && a.dt.is_finite() && a.dt > 0.0) {
        return Err(format!("--t {} and --dt {} must be > 0", a.t, a.dt));
    }
    // Fail before the runs, not after them.
    if let Some(dir) = std::path::Path::new(&a.out).parent()
        && !dir.as_os_str().is_empty()
        && !dir.is_dir()
    {
        return Err(format!("--out {}: no directory {}", a.out, dir.display()));
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

/// Samples the relative energy error `samples` times over `steps` steps.
fn run_one(a: &Args, integrator: Integrator) -> nbody_host::Result<EnergySeries> {
    let mut sim = Simulation::builder(ic::plummer(a.n, a.seed))
        .dt(a.dt)
        .softening(a.softening)
        .integrator(integrator)
        .backend(Backend::cpu())
        .build()?;
    let steps = (a.t / a.dt).round().max(1.0) as u64;
    let samples = steps.min(200);
    let e0 = sim.energy()?;
    let mut points = vec![(0.0, 0.0)];
    let mut done = 0;
    for k in 1..=samples {
        let target = steps * k / samples;
        sim.step(target - done)?;
        done = target;
        points.push((sim.time(), sim.energy()?.relative_change_from(&e0)));
    }
    let last = points.last().map_or(0.0, |p| p.1);
    let max = points.iter().map(|p| p.1).fold(0.0, f64::max);
    println!(
        "{:>9}: {steps} steps, |dE/E| at t = {:.0}: {last:.2e}, max {max:.2e}",
        integrator.name(),
        a.t
    );
    Ok(EnergySeries {
        label: match integrator {
            Integrator::SemiImplicitEuler => "semi-implicit Euler (Warp's example)".into(),
            Integrator::Leapfrog => "leapfrog (KDK)".into(),
            other => other.name().into(),
        },
        points,
    })
}

fn run(a: &Args) -> nbody_host::Result<()> {
    println!(
        "Plummer sphere: N = {}, dt = {}, softening = {}, t = 0..{}",
        a.n, a.dt, a.softening, a.t
    );
    let series = [
        run_one(a, Integrator::SemiImplicitEuler)?,
        run_one(a, Integrator::Leapfrog)?,
    ];
    let title = format!(
        "Plummer sphere, N = {}, dt = {}, eps = {}: energy error",
        a.n, a.dt, a.softening
    );
    energy_plot(&a.out, &title, &series, (800, 500))?;
    println!("wrote {}", a.out);
    Ok(())
}
