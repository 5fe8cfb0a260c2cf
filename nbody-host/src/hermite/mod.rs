//! Collisional N-body: a 4th-order Hermite integrator with block time
//! steps, in f64, for star clusters and planetary systems, where f32 and a
//! shared time step are not enough.
//!
//! | file | what |
//! | --- | --- |
//! | `forces.rs` | force, jerk and potential of active bodies from all (predicted) bodies: SIMD over j, rayon over i, f64 or [`Precision::Mixed`] |
//! | `reference.rs` | the straightforward f64 reference ([`reference::field`], the shared-step Hermite of [`oracle::advance`](crate::oracle::advance)) |
//! | `block.rs` | [`BlockHermite`]: predictor for all, corrector for the active block, Aarseth's criterion, power-of-two blocks |
//! | `fields.rs` | where a block step's predictor and forces run: the CPU loops, or a launch device (`plan/hermite.rs`: emulator, CUDA) |
//! | `engine.rs` | the `Engine` that [`Simulation`](crate::Simulation) drives for [`Integrator::Hermite`](crate::Integrator::Hermite) |
//!
//! Through [`Simulation`](crate::Simulation): [`Integrator::Hermite`](crate::Integrator::Hermite)
//! with [`HermiteSettings`]; the builder's `dt` is then the interval at
//! whose ends every body is synchronised (and the longest step), so
//! `step(k)` advances `k dt` and [`Simulation::integrate_to`](crate::Simulation::integrate_to)
//! ends exactly at the time asked; [`Simulation::positions_f64`](crate::Simulation::positions_f64)
//! reads the f64 state and [`Simulation::hermite_stats`](crate::Simulation::hermite_stats)
//! the block steps and force evaluations.
//!
//! ```
//! use nbody_host::{Backend, HermiteSettings, Integrator, Simulation, ic};
//!
//! let mut sim = Simulation::builder(ic::plummer(128, 1))
//!     .softening(0.01)
//!     .dt(0.125)
//!     .integrator(Integrator::Hermite(HermiteSettings::new(0.02)?))
//!     .backend(Backend::cpu())
//!     .build()?;
//! let e0 = sim.energy()?;
//! sim.integrate_to(0.3)?; // exactly
//! assert_eq!(sim.time(), 0.3);
//! assert!(sim.energy()?.relative_change_from(&e0) < 1e-6);
//! let stats = sim.hermite_stats().unwrap();
//! assert!(stats.block_steps > 0 && stats.mean_block() >= 1.0);
//! # Ok::<(), nbody_host::Error>(())
//! ```
//!
//! Why not the stage model of [`Integrator`](crate::Integrator)? Its
//! stages (`Accelerations`, `Kick`, `Drift`) act on every body with one
//! shared `dt` in f32, which every backend interprets and the GPU plans
//! fuse into kernels. Hermite needs per-body times and steps, the jerk, a
//! predictor over all bodies and a corrector over a changing subset, and
//! f64 positions: expressing that as stages would change every engine and
//! slow the f32 ones. So the variant selects a separate engine
//! (`engine.rs`) behind the same `Engine` trait;
//! the f32 integrators are untouched.

mod block;
pub(crate) mod engine;
pub(crate) mod fields;
pub mod forces;
pub mod reference;

pub use block::{BlockHermite, HermiteState};
pub use fields::HermiteForces;
pub use forces::{Field, ForceJerk, Precision, Sink, Sources};

use crate::error::{Error, Result};

/// The Hermite integrator's accuracy parameters and force precision,
/// validated: what [`Integrator::Hermite`](crate::Integrator::Hermite) carries.
///
/// Compared (and hashed) by the bits of its values.
#[derive(Clone, Copy, Debug)]
pub struct HermiteSettings {
    eta: f64,
    eta_s: f64,
    precision: Precision,
}

impl HermiteSettings {
    /// Aarseth's accuracy parameter `eta` (finite, `> 0`; 0.01 to 0.02 is
    /// usual), with the starting `eta_s = eta / 20` and f64 forces.
    ///
    /// Why so small a start: a body's first step has no snap or crackle
    /// to judge by, and on the Plummer goal (`tests/hermite_goals.rs`,
    /// N = 512, eta = 0.02, t = 1) `eta_s = 0.01` left first-step errors
    /// of 1.5e-5 in position that `eta_s = 0.001` cuts to 1.6e-6, for 2%
    /// more force evaluations (the steps double back up within a few steps).
    pub fn new(eta: f64) -> Result<HermiteSettings> {
        check("eta", eta)?;
        Ok(HermiteSettings {
            eta,
            eta_s: eta / 20.0,
            precision: Precision::F64,
        })
    }

    /// With the starting criterion's `eta_s` (`dt = eta_s |a| / |j|`;
    /// finite, `> 0`).
    pub fn with_eta_s(self, eta_s: f64) -> Result<HermiteSettings> {
        check("eta_s", eta_s)?;
        Ok(HermiteSettings { eta_s, ..self })
    }

    /// With the force precision.
    pub fn with_precision(self, precision: Precision) -> HermiteSettings {
        HermiteSettings { precision, ..self }
    }

    /// `eta`.
    pub fn eta(&self) -> f64 {
        self.eta
    }

    /// `eta_s`.
    pub fn eta_s(&self) -> f64 {
        self.eta_s
    }

    /// The force precision.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    fn bits(&self) -> (u64, u64, Precision) {
        (self.eta.to_bits(), self.eta_s.to_bits(), self.precision)
    }
}

fn check(name: &'static str, value: f64) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name,
            value,
            requirement: "must be finite and > 0",
        })
    }
}

impl Default for HermiteSettings {
    /// `eta = 0.02`, `eta_s = 0.001`, f64 ([`HermiteSettings::new`]`(0.02)`).
    fn default() -> Self {
        HermiteSettings {
            eta: 0.02,
            eta_s: 0.02 / 20.0,
            precision: Precision::F64,
        }
    }
}

impl PartialEq for HermiteSettings {
    fn eq(&self, other: &Self) -> bool {
        self.bits() == other.bits()
    }
}

impl Eq for HermiteSettings {}

impl std::hash::Hash for HermiteSettings {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bits().hash(state)
    }
}

/// The work of a Hermite run so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HermiteStats {
    /// Block steps: force evaluations of an active block.
    pub block_steps: u64,
    /// Bodies whose force and jerk were evaluated, summed over the block
    /// steps (the start's evaluation of every body is not counted).
    pub force_evals: u64,
}

impl HermiteStats {
    /// The mean active-block size, `force_evals / block_steps` (0 before
    /// the first block step).
    pub fn mean_block(&self) -> f64 {
        if self.block_steps == 0 {
            0.0
        } else {
            self.force_evals as f64 / self.block_steps as f64
        }
    }
}
