//! What [`Simulation`] offers the collisional integrator
//! ([`Integrator::Hermite`](crate::Integrator::Hermite), `crate::hermite`):
//! an f64 start, f64 reads, the exact finish of `integrate_to`, and the
//! block-step counters.

use glam::DVec3;

use crate::error::{Error, Result};
use crate::hermite::{HermiteState, HermiteStats};
use crate::state::Bodies;

use super::{Simulation, SimulationBuilder, clock_after};

impl Simulation {
    /// A builder from f64 positions, velocities and masses (equal lengths):
    /// a Hermite run ([`Integrator::Hermite`](crate::Integrator::Hermite))
    /// starts from these very values; the other integrators, which step
    /// f32 state, from their f32 rounding.
    ///
    /// ```
    /// use nbody_host::{Backend, Integrator, Simulation};
    /// use nbody_host::glam::DVec3;
    ///
    /// let pos = vec![DVec3::new(0.1, 0.0, 0.0), DVec3::new(-0.1, 0.0, 0.0)];
    /// let vel = vec![DVec3::new(0.0, 1.0, 0.0), DVec3::new(0.0, -1.0, 0.0)];
    /// let sim = Simulation::builder_f64(&pos, &vel, &[0.2, 0.2])?
    ///     .softening(0.0)
    ///     .integrator(Integrator::from_name("hermite").unwrap())
    ///     .backend(Backend::cpu())
    ///     .build()?;
    /// assert_eq!(sim.positions_f64()?[0].x, 0.1); // not 0.1f32
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn builder_f64(pos: &[DVec3], vel: &[DVec3], mass: &[f64]) -> Result<SimulationBuilder> {
        let narrow = |v: &[DVec3]| v.iter().map(|x| x.as_vec3()).collect::<Vec<_>>();
        let masses: Vec<f32> = mass.iter().map(|&m| m as f32).collect();
        let bodies = Bodies::from_arrays(
            &narrow(pos).iter().map(|v| v.to_array()).collect::<Vec<_>>(),
            &narrow(vel).iter().map(|v| v.to_array()).collect::<Vec<_>>(),
            &masses,
        )?;
        let n = pos.len();
        let state = HermiteState {
            pos: pos.iter().map(|v| v.to_array()).collect(),
            vel: vel.iter().map(|v| v.to_array()).collect(),
            mass: mass.to_vec(),
            acc: Vec::new(),
            jerk: Vec::new(),
            snap: Vec::new(),
            crackle: Vec::new(),
            last_dt: vec![0.0; n],
            stats: HermiteStats::default(),
        };
        let mut builder = Simulation::builder(bodies);
        builder.hermite = Some(state);
        Ok(builder)
    }

    /// Positions in f64: a Hermite run's own state, otherwise the f32
    /// positions widened.
    pub fn positions_f64(&self) -> Result<Vec<DVec3>> {
        if let Some(s) = self.hermite_state() {
            return Ok(s.pos.iter().map(|&x| DVec3::from_array(x)).collect());
        }
        Ok(self.positions()?.iter().map(|x| x.as_dvec3()).collect())
    }

    /// Velocities in f64 (see [`positions_f64`](Self::positions_f64)).
    pub fn velocities_f64(&self) -> Result<Vec<DVec3>> {
        if let Some(s) = self.hermite_state() {
            return Ok(s.vel.iter().map(|&x| DVec3::from_array(x)).collect());
        }
        Ok(self.velocities()?.iter().map(|x| x.as_dvec3()).collect())
    }

    /// Masses in f64 (see [`positions_f64`](Self::positions_f64)).
    pub fn masses_f64(&self) -> Result<Vec<f64>> {
        if let Some(s) = self.hermite_state() {
            return Ok(s.mass.clone());
        }
        Ok(self.masses()?.iter().map(|&m| m as f64).collect())
    }

    /// Block steps, force evaluations and the mean active block of a
    /// Hermite run; `None` for the fixed-step integrators.
    pub fn hermite_stats(&self) -> Option<HermiteStats> {
        self.hermite_state().map(|s| s.stats)
    }

    /// The Hermite engine's whole state (for checkpoints and clones).
    pub(crate) fn hermite_state(&self) -> Option<HermiteState> {
        let mut engine = self.engine();
        engine.collisional().map(|c| c.state().clone())
    }

    /// [`integrate_to`](Self::integrate_to) for Hermite: whole intervals of
    /// `dt`, then one shorter interval that ends at `t` exactly (counted as
    /// a step).
    pub(super) fn integrate_to_exactly(&mut self, t: f64) -> Result<u64> {
        if let Some(stopped) = &self.diverged {
            return Err(stopped.error());
        }
        if !(t.is_finite() && self.time <= t) {
            return Err(Error::InvalidTargetTime {
                target: t,
                now: self.time,
            });
        }
        let dt = self.params.dt_f64();
        let estimate = ((t - self.time) / dt).ceil();
        if estimate >= (u64::MAX - self.step - 1) as f64 {
            return Err(Error::Unsupported(format!(
                "integrating to t = {t} from t = {} in intervals of dt = {dt} needs about \
                 {estimate:e} intervals, more than the step counter holds",
                self.time
            )));
        }
        let (mut whole, mut time) = (0u64, self.time);
        while clock_after(time, dt, 1) <= t && clock_after(time, dt, 1) > time {
            time = clock_after(time, dt, 1);
            whole += 1;
        }
        self.step(whole)?;
        if self.time == t {
            return Ok(whole);
        }
        let result = match self.engine_mut().collisional() {
            Some(c) => c.advance_to(t),
            None => Err(Error::Unsupported("not a Hermite run".into())),
        };
        self.mirror = std::sync::OnceLock::new();
        self.energy = std::sync::OnceLock::new();
        result?;
        self.time = t;
        self.step += 1;
        Ok(whole + 1)
    }
}
