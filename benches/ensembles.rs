//! The cost of a thermostat or barostat against plain velocity Verlet: a
//! fixed amount of work per run (not criterion's fixed time), so that two
//! runs timed from outside, alternately, give the ratio the issue asks
//! for (NVT and NPT at most 10 % over NVE on the benchmark-sized system).
//!
//! ```text
//! cargo bench --bench ensembles --no-run       # prints the binary's path
//! target/release/deps/ensembles-HASH nvt [CELLS [STEPS]]
//! ```
//!
//! LAMMPS's in.lj at `CELLS^3` fcc unit cells (default 20: 32,000 atoms;
//! `r_c` 2.5, skin 0.3, lists rebuilt every 20 steps) for `STEPS` steps
//! (default 200) under `nve`, `nvt` (T 1.44, Tdamp 0.5), `npt` (T 1.44,
//! Tdamp 0.5, P 5, Pdamp 5), `langevin` (T 1.44, damp 1) or `rescale`
//! (every 10 steps to 1.44); prints `result ensemble= atoms= steps= seconds=
//! atom_steps_per_s=` (the stepping alone, set-up excluded). Under
//! `cargo bench -- FILTER` it runs only when FILTER names an ensemble.

use std::time::Instant;

use nbody_host::md::Ensemble;
use nbody_host::{Backend, ForceLaw, Integrator, Neighbours, Simulation, ic};

/// The ensembles this bench knows by name.
const NAMES: [&str; 5] = ["nve", "nvt", "npt", "langevin", "rescale"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let all: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench -- FILTER` passes `--bench` and the filter to every
    // bench target: a filter naming no ensemble is another bench's.
    let under_cargo = all.iter().any(|a| a == "--bench");
    let args: Vec<String> = all.into_iter().filter(|a| a != "--bench").collect();
    let name = args.first().map(String::as_str).unwrap_or("nve");
    if under_cargo && !NAMES.contains(&name) {
        return Ok(());
    }
    let cells: usize = args.get(1).map_or(Ok(20), |s| s.parse())?;
    let steps: u64 = args.get(2).map_or(Ok(200), |s| s.parse())?;
    let ensemble = match name {
        "nve" => Ensemble::Nve,
        "nvt" => Ensemble::nvt(1.44, 0.5),
        "npt" => Ensemble::npt(1.44, 0.5, 5.0, 5.0),
        "langevin" => Ensemble::langevin(1.44, 1.0, 87287),
        "rescale" => Ensemble::rescale(10, 1.44, 0.0, 1.0),
        other => return Err(format!("unknown ensemble {other:?}").into()),
    };
    let (atoms, boundary) = ic::fcc_lattice(cells, 0.8442, 1.44, 87287)?;
    let n = atoms.len();
    let mut sim = Simulation::builder(atoms)
        .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, false)?)
        .boundary(boundary)
        .neighbours(Neighbours::cells(0.3).every(20))
        .integrator(Integrator::VELOCITY_VERLET)
        .ensemble(ensemble)
        .dt(0.005)
        .backend(Backend::cpu())
        .build()?;
    let t = Instant::now();
    sim.step(steps)?;
    let seconds = t.elapsed().as_secs_f64();
    let th = sim.thermo()?;
    println!(
        "result ensemble={name} atoms={n} steps={steps} seconds={seconds:.4} \
         atom_steps_per_s={:.4e} temp={:.4} conserved={:.6}",
        (n as u64 * steps) as f64 / seconds,
        th.temperature,
        th.conserved
    );
    Ok(())
}
