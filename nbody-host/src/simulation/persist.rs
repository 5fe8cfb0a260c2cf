//! What a [`Simulation`] writes and resumes from: `.npy` snapshots,
//! checkpoints and archive records. The file formats (`snapshot/`) know
//! nothing of `Simulation`: what ties a simulation to them is here.

use std::path::Path;

use crate::config::Params;
use crate::error::{Error, Result};
use crate::snapshot::{self, ArchiveWriter, Checkpoint, Snapshot};
use crate::state::State;

use super::{Simulation, SimulationBuilder};

impl Simulation {
    /// Saves the bodies as a numpy `.npy` file of shape `(N, 7)`
    /// ([`snapshot::save_npy`]); refuses a diverged simulation
    /// ([`Error::NonFiniteSnapshot`]).
    ///
    /// A Hermite run ([`Integrator::Hermite`](crate::Integrator::Hermite))
    /// writes its f64 state: float64 (`<f8`), same shape and columns.
    pub fn save_npy(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        self.refuse_if_diverged(path)?;
        if let Some(s) = self.hermite_state() {
            return snapshot::save_npy_f64(path, &s.pos, &s.vel, &s.mass);
        }
        snapshot::save_npy(path, self.bodies()?)
    }

    /// Writes a [`Checkpoint`] (state, step, time, parameters, backend; for
    /// short-range forces also the image counters and where the neighbour
    /// lists were built; for Hermite the f64 state, settings and counters)
    /// atomically, for [`Simulation::resume`]; refuses a diverged
    /// simulation ([`Error::NonFiniteSnapshot`]).
    pub fn save_checkpoint(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        self.refuse_if_diverged(path)?;
        Checkpoint {
            state: self.state()?,
            params: self.params.clone(),
            backend: self.backend(),
        }
        .save_all(
            path,
            self.md_state()?.as_ref(),
            self.hermite_state().as_ref(),
        )
    }

    /// A builder that continues the run saved by [`Simulation::save_checkpoint`]:
    /// same bodies, step count, time and parameters (any of which but the
    /// step count and time the builder can still change; the clock goes on
    /// from the checkpoint's time with the new `dt`). The backend is
    /// [`Backend::Auto`](crate::Backend::Auto) unless set; on the backend it was saved from, the
    /// continued run is bit-identical to one that was never interrupted.
    ///
    /// ```
    /// use nbody_host::{Backend, Simulation, ic};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.ckpt");
    /// let build = || Simulation::builder(ic::plummer(64, 5)).dt(0.01).backend(Backend::cpu()).build();
    /// let mut straight = build()?;
    /// straight.step(10)?;
    /// let mut first = build()?;
    /// first.step(4)?;
    /// first.save_checkpoint(&path)?;
    /// let mut resumed = Simulation::resume(&path)?.backend(Backend::cpu()).build()?;
    /// resumed.step(6)?;
    /// assert_eq!(resumed.state()?, straight.state()?); // bits, step and time
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn resume(path: impl AsRef<Path>) -> Result<SimulationBuilder> {
        let (checkpoint, md, hermite) = Checkpoint::load_all(path)?;
        let mut builder = Simulation::from_checkpoint(checkpoint);
        // A Hermite run continues from its f64 state.
        builder.hermite = hermite;
        Ok(match md {
            Some(md) => builder.md_state(md),
            None => builder,
        })
    }

    /// A builder that continues from a loaded [`Checkpoint`] (see
    /// [`Simulation::resume`]; a short-range run's image counters and lists,
    /// which [`Checkpoint::load_with_md`] reads, go to
    /// [`SimulationBuilder::md_state`]).
    pub fn from_checkpoint(checkpoint: Checkpoint) -> SimulationBuilder {
        Simulation::continue_from(checkpoint.state, &checkpoint.params)
    }

    /// A builder that continues from `state` with `params` (a checkpoint's
    /// or an archive record's): same bodies, step count, time and parameters.
    pub(crate) fn continue_from(state: State, params: &Params) -> SimulationBuilder {
        // f32 -> f64 -> f32 is exact: the continued run gets the very same bits.
        let ids = (!crate::state::are_default_ids(&state.ids)).then_some(state.ids);
        let builder = Simulation::builder(state.bodies);
        let builder = match ids {
            Some(ids) => builder.ids(ids),
            None => builder,
        };
        builder
            .dt(params.dt_f64())
            .force(params.force().clone())
            .boundary(params.boundary())
            .neighbours(params.neighbours())
            .ensemble(params.ensemble())
            .kernel(params.kernel())
            .graphs(params.graphs())
            .integrator(params.integrator())
            .start_at(state.step, state.time)
    }

    fn refuse_if_diverged(&self, path: &Path) -> Result<()> {
        match &self.diverged {
            Some(stopped) => Err(Error::NonFiniteSnapshot {
                path: path.to_path_buf(),
                body: stopped.body(),
            }),
            None => Ok(()),
        }
    }
}

impl Snapshot {
    /// A builder that continues the run from this snapshot, as
    /// [`Simulation::resume`] does from a checkpoint.
    pub fn builder(self) -> SimulationBuilder {
        let builder = Simulation::continue_from(self.state, &self.params);
        match self.md {
            Some(md) => builder.md_state(md),
            None => builder,
        }
    }
}

impl ArchiveWriter {
    /// Appends `sim`'s state and parameters as one record. Refuses a
    /// diverged state ([`Error::NonFiniteSnapshot`]) and a step not after
    /// the last record's ([`Error::Unsupported`]).
    pub fn append(&mut self, sim: &Simulation) -> Result<()> {
        self.append_record(&sim.state()?, sim.params(), sim.md_state()?.as_ref())
    }
}
