//! The Rust side of nbody-py's MD tests (`tests/test_md_styles.py`): a
//! short-range run built with the Rust API alone (`PairSpec` from LAMMPS's
//! commands, atom types, `EnsembleFlags`), printing its thermo at every
//! `--thermo` steps as `thermo key=value ...` lines, each float in Rust's
//! shortest round-trip form, so Python's `float()` reads back the very
//! bits. No Python here: what the module must equal.
//!
//! ```text
//! md_reference --init b.npy --box L --pair "lj/cut 2.5" --pair-coeff "1 1 1.0 1.0" \
//!     [--pair-coeff ...] [--pair-modify "shift yes"] [--types 1,2,1,...] \
//!     [--ensemble nvt --temp-target T --tdamp TAU [--press-target P --pdamp TAU] [--seed S]] \
//!     [--skin 0.3] [--dt 0.005] [--steps 100] [--thermo 25]
//! ```

use std::process::ExitCode;

use nbody_host::md::{EnsembleFlags, Neighbours};
use nbody_host::pair::PairSpec;
use nbody_host::{Backend, Boundary, ForceLaw, Integrator, Simulation, snapshot};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(3)
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut init, mut side, mut pair, mut coeffs, mut modify) = (None, None, None, vec![], None);
    let (mut types, mut flags) = (Vec::new(), EnsembleFlags::default());
    let (mut skin, mut dt, mut steps, mut every) = (0.3, 0.005, 100u64, 25u64);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--init" => init = Some(value()?),
            "--box" => side = Some(value()?.parse::<f64>()?),
            "--pair" => pair = Some(value()?),
            "--pair-coeff" => coeffs.push(value()?),
            "--pair-modify" => modify = Some(value()?),
            "--types" => {
                types = value()?
                    .split(',')
                    .map(|t| t.parse::<f32>())
                    .collect::<Result<Vec<_>, _>>()?
            }
            "--ensemble" => flags.ensemble = Some(value()?),
            "--temp-target" => flags.temp_target = Some(value()?.parse()?),
            "--tdamp" => flags.tdamp = Some(value()?.parse()?),
            "--press-target" => flags.press_target = Some(value()?.parse()?),
            "--pdamp" => flags.pdamp = Some(value()?.parse()?),
            "--seed" => flags.seed = value()?.parse()?,
            "--skin" => skin = value()?.parse()?,
            "--dt" => dt = value()?.parse()?,
            "--steps" => steps = value()?.parse()?,
            "--thermo" => every = value()?.parse()?,
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    let mut spec = PairSpec::parse_lammps(&words(&pair.ok_or("--pair is required")?))?;
    for c in &coeffs {
        spec.pair_coeff(&words(c))?;
    }
    if let Some(m) = &modify {
        spec.pair_modify(&words(m))?;
    }
    // LAMMPS's numbering (from 1) to the library's (from 0).
    let types = nbody_host::pair::types_from_lammps(&types)?;
    let count = types
        .iter()
        .map(|t| t + 1)
        .max()
        .unwrap_or(1)
        .max(spec.highest_type())
        .max(1);
    let atoms = snapshot::load_npy(init.ok_or("--init is required")?)?;
    let mut sim = Simulation::builder(atoms)
        .force(ForceLaw::Pair(spec.build(count)?))
        .types(types)
        .ensemble(flags.ensemble()?)
        .boundary(Boundary::cubic(side.ok_or("--box is required")?))
        .neighbours(Neighbours::cells(skin))
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(dt)
        .backend(Backend::cpu())
        .build()?;
    loop {
        let t = sim.thermo()?;
        println!(
            "thermo step={} temp={:?} pe={:?} ke={:?} etotal={:?} press={:?} coupling={:?} \
             conserved={:?} volume={:?} density={:?}",
            t.step,
            t.temperature,
            t.potential,
            t.kinetic,
            t.total,
            t.pressure.unwrap_or(f64::NAN),
            t.coupling,
            t.conserved,
            t.volume.unwrap_or(f64::NAN),
            t.density.unwrap_or(f64::NAN)
        );
        if t.step >= steps {
            return Ok(());
        }
        sim.step(every.min(steps - t.step))?;
    }
}
