//! The [`Engine`] of [`Integrator::Hermite`](crate::Integrator::Hermite):
//! a [`BlockHermite`] on the CPU force loops, stepped in synchronisation
//! intervals of the builder's `dt`.

use glam::Vec3;

use super::HermiteSettings;
use super::block::{BlockHermite, HermiteState};
use super::forces::ForceJerk;
use crate::backend::Backend;
use crate::config::Params;
use crate::cpu::CpuTuning;
use crate::engine::{BackendKind, Collisional, Divergence, Engine};
use crate::error::{Error, Result};
use crate::force::ForceLaw;
use crate::md::Boundary;
use crate::state::{Bodies, Energy};

/// Starts the Hermite engine for `bodies` (or, where given, the f64
/// `state`, which then wins) at time `time`: the CPU backend
/// (`Backend::Auto` resolves to it); the GPU backends are an
/// [`Error::Unsupported`] saying so.
pub(crate) fn create(
    backend: Backend,
    bodies: &Bodies,
    params: &Params,
    settings: HermiteSettings,
    state: Option<HermiteState>,
    time: f64,
) -> Result<(Box<dyn Engine>, Backend)> {
    let gravity = match params.force() {
        ForceLaw::Gravity(g) => g,
        other => {
            return Err(Error::InvalidCombination(format!(
                "the Hermite integrator integrates gravity, not {other}"
            )));
        }
    };
    if params.boundary() != Boundary::Open {
        return Err(Error::InvalidCombination(
            "the Hermite integrator runs in open space, not in a periodic box".into(),
        ));
    }
    let tuning = match backend {
        Backend::Cpu(tuning) => tuning,
        Backend::Auto => {
            log::info!("backend auto: the Hermite integrator runs on the CPU");
            CpuTuning::default()
        }
        other => {
            return Err(Error::Unsupported(format!(
                "the Hermite integrator runs on the CPU backend for now, not on {other:?}: its GPU \
                 kernels (nbody_hermite_*) are in the kernel table, tested on the emulator, and \
                 a GPU engine for them comes with the device refactor"
            )));
        }
    };
    let forces = ForceJerk::new(tuning.isa, settings.precision())?;
    let (g, eps) = (gravity.g_f64(), gravity.softening_f64());
    let h = match state {
        Some(state) if state.acc.len() == state.pos.len() => {
            BlockHermite::resume(state, g, eps, settings, forces)?
        }
        // An f64 start without derivatives (`Simulation::builder_f64`).
        Some(state) => {
            BlockHermite::new(state.pos, state.vel, state.mass, g, eps, settings, forces)?
        }
        None => {
            let widen = |v: &[Vec3]| -> Vec<[f64; 3]> {
                v.iter().map(|x| x.to_array().map(f64::from)).collect()
            };
            BlockHermite::new(
                widen(&bodies.positions),
                widen(&bodies.velocities),
                bodies.masses.iter().map(|&m| m as f64).collect(),
                g,
                eps,
                settings,
                forces,
            )?
        }
    };
    let engine = HermiteEngine {
        h,
        time,
        dt: params.dt_f64(),
        threads: rayon::current_num_threads(),
    };
    Ok((Box::new(engine), Backend::Cpu(tuning)))
}

/// The Hermite integrator behind [`Engine`].
struct HermiteEngine {
    h: BlockHermite,
    /// The synchronisation time the state is at.
    time: f64,
    /// The interval [`Engine::step`] advances by.
    dt: f64,
    threads: usize,
}

impl Engine for HermiteEngine {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu {
            isa: self.h.forces().isa(),
            threads: self.threads,
        }
    }

    fn method(&self) -> &'static str {
        "hermite-block"
    }

    /// `steps` intervals of `dt`, the clock advanced as `Simulation`'s. A
    /// failure leaves the state where the call began.
    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        let start = (self.h.state().clone(), self.time);
        for _ in 0..steps {
            let end = self.time + self.dt;
            if let Err(e) = self.h.advance_to(self.time, end) {
                self.restore(start);
                return Err(e);
            }
            self.time = end;
        }
        Ok(None)
    }

    fn read_state(&mut self) -> Result<Bodies> {
        let s = self.h.state();
        let narrow = |v: &[[f64; 3]]| -> Vec<Vec3> {
            v.iter()
                .map(|x| Vec3::new(x[0] as f32, x[1] as f32, x[2] as f32))
                .collect()
        };
        Ok(Bodies {
            positions: narrow(&s.pos),
            velocities: narrow(&s.vel),
            masses: s.mass.iter().map(|&m| m as f32).collect(),
        })
    }

    fn energy(&mut self) -> Result<Energy> {
        let (kinetic, potential) = self.h.energy()?;
        Ok(Energy { kinetic, potential })
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        Ok(self
            .h
            .state()
            .acc
            .iter()
            .map(|a| Vec3::new(a[0] as f32, a[1] as f32, a[2] as f32))
            .collect())
    }

    fn collisional(&mut self) -> Option<&mut dyn Collisional> {
        Some(self)
    }
}

impl HermiteEngine {
    fn restore(&mut self, (state, time): (HermiteState, f64)) {
        self.h.restore(state);
        self.time = time;
    }
}

impl Collisional for HermiteEngine {
    fn advance_to(&mut self, t: f64) -> Result<()> {
        let start = self.h.state().clone();
        if let Err(e) = self.h.advance_to(self.time, t) {
            self.restore((start, self.time));
            return Err(e);
        }
        self.time = t;
        Ok(())
    }

    fn state(&self) -> &HermiteState {
        self.h.state()
    }
}
