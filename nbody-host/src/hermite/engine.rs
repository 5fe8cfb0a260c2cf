//! The [`Engine`] of [`Integrator::Hermite`](crate::Integrator::Hermite):
//! a [`BlockHermite`], stepped in synchronisation intervals of the
//! builder's `dt`, its forces where the backend puts them
//! ([`BlockFields`]: the CPU loops, or a launch device, which `backend.rs`
//! opens).

use glam::Vec3;

use super::HermiteSettings;
use super::block::{BlockHermite, HermiteState};
use super::fields::BlockFields;
use crate::config::Params;
use crate::engine::{BackendKind, Collisional, Divergence, Engine};
use crate::error::{Error, Result};
use crate::force::ForceLaw;
use crate::md::Boundary;
use crate::state::{Bodies, Energy};

/// Checks that `params` describe what the Hermite integrator integrates
/// (gravity in open space): what `backend.rs` asks before opening a device.
pub(crate) fn check(params: &Params) -> Result<()> {
    match params.force() {
        ForceLaw::Gravity(_) => {}
        other => {
            return Err(Error::InvalidCombination(format!(
                "the Hermite integrator integrates gravity, not {other}"
            )));
        }
    }
    if params.boundary() != Boundary::Open {
        return Err(Error::InvalidCombination(
            "the Hermite integrator runs in open space, not in a periodic box".into(),
        ));
    }
    Ok(())
}

/// Starts the Hermite engine for `bodies` (or, where given, the f64
/// `state`, which then wins) at time `time`, its forces from `open`
/// (called with the body count once the input is known good).
pub(crate) fn create(
    bodies: &Bodies,
    params: &Params,
    settings: HermiteSettings,
    state: Option<HermiteState>,
    time: f64,
    open: impl FnOnce(usize) -> Result<Box<dyn BlockFields>>,
) -> Result<Box<dyn Engine>> {
    check(params)?;
    let gravity = match params.force() {
        ForceLaw::Gravity(g) => g,
        other => {
            return Err(Error::InvalidCombination(format!(
                "the Hermite integrator integrates gravity, not {other}"
            )));
        }
    };
    let (g, eps) = (gravity.g_f64(), gravity.softening_f64());
    let h = match state {
        Some(state) if state.acc.len() == state.pos.len() => {
            let n = state.pos.len();
            BlockHermite::resume_with(state, g, eps, settings, || open(n))?
        }
        // An f64 start without derivatives (`Simulation::builder_f64`).
        Some(state) => {
            let n = state.pos.len();
            BlockHermite::start(state.pos, state.vel, state.mass, g, eps, settings, || {
                open(n)
            })?
        }
        None => {
            let widen = |v: &[Vec3]| -> Vec<[f64; 3]> {
                v.iter().map(|x| x.to_array().map(f64::from)).collect()
            };
            BlockHermite::start(
                widen(&bodies.positions),
                widen(&bodies.velocities),
                bodies.masses.iter().map(|&m| m as f64).collect(),
                g,
                eps,
                settings,
                || open(bodies.len()),
            )?
        }
    };
    let engine = HermiteEngine {
        h,
        time,
        dt: params.dt_f64(),
    };
    Ok(Box::new(engine))
}

/// The Hermite integrator behind [`Engine`].
struct HermiteEngine {
    h: BlockHermite,
    /// The synchronisation time the state is at.
    time: f64,
    /// The interval [`Engine::step`] advances by.
    dt: f64,
}

impl Engine for HermiteEngine {
    fn kind(&self) -> BackendKind {
        self.h.kind()
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
