//! Changing the set of bodies of a [`Simulation`]: each change restarts
//! the engine from the current state (nothing else changes), and a clone
//! starts a second one.

use crate::error::{Error, Result};
use crate::md::MdState;
use crate::state::{Bodies, Body};

use super::{Continued, Simulation};

/// A change of the set of bodies, applied alike to every per-body array.
#[derive(Clone, Copy)]
enum Edit {
    /// This many bodies appended.
    Append(usize),
    /// Body `index` removed (checked in bounds beforehand).
    Remove(usize),
}

impl Edit {
    /// `v` edited, new entries `fill`; an empty `v` (nothing recorded) stays empty.
    fn apply<T: Copy>(self, mut v: Vec<T>, fill: T) -> Vec<T> {
        if !v.is_empty() {
            match self {
                Edit::Append(k) => v.resize(v.len() + k, fill),
                Edit::Remove(i) => {
                    v.remove(i);
                }
            }
        }
        v
    }
}

impl Simulation {
    /// Adds a body (REBOUND's `sim.add`). The engine is started again from
    /// the current state with the new body, keeping time, step count,
    /// parameters and backend: O(N) work and, while it runs, memory for two
    /// engines; add many at once with [`extend`](Self::extend). A bad body
    /// is an error naming it (its index is `len()` before the call), and
    /// the simulation is unchanged on any error. For leapfrog, the
    /// accelerations are computed afresh, including the new body's pull.
    ///
    /// ```
    /// use nbody_host::{Backend, Bodies, Body, Simulation};
    ///
    /// let sun = Bodies::from_arrays(&[[0.0; 3]], &[[0.0; 3]], &[1.0])?;
    /// let mut sim = Simulation::builder(sun).softening(0.0).dt(1e-3).backend(Backend::cpu()).build()?;
    /// sim.add(Body::new(1e-3, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]))?;
    /// sim.integrate_to(1.0)?;
    /// assert_eq!(sim.len(), 2);
    /// let planet = sim.remove(1)?;
    /// assert!((planet.position.length() - 1.0).abs() < 1e-2); // a circular orbit
    /// assert!(sim.add(Body::new(-1.0, [0.0; 3], [0.0; 3])).is_err()); // names the mass
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn add(&mut self, body: Body) -> Result<()> {
        let mut bodies = self.live_bodies()?.clone();
        bodies.push(body);
        let md = self.md_for(Edit::Append(1))?;
        let ids = self.ids_with(1);
        self.restart(bodies, md, ids)
    }

    /// Adds all of `more` (see [`add`](Self::add)) with one restart; they
    /// get the next ids, in order.
    pub fn extend(&mut self, more: &Bodies) -> Result<()> {
        let mut bodies = self.live_bodies()?.clone();
        bodies.positions.extend_from_slice(&more.positions);
        bodies.velocities.extend_from_slice(&more.velocities);
        bodies.masses.extend_from_slice(&more.masses);
        let md = self.md_for(Edit::Append(more.len()))?;
        let ids = self.ids_with(more.len());
        self.restart(bodies, md, ids)
    }

    /// The ids with `more` new ones, each above every id the run has had.
    fn ids_with(&self, more: usize) -> Vec<u64> {
        let mut ids = self.ids.clone();
        ids.extend((0..more as u64).map(|k| self.next_id + k));
        ids
    }

    /// The image counters (in a periodic box), the atom types (where
    /// given) and the ensemble's state after `edit` (a body added or
    /// removed: the lists are built afresh). Added bodies are of type 0,
    /// with zero image counters.
    fn md_for(&self, edit: Edit) -> Result<Option<MdState>> {
        let md = self.engine().md_state()?;
        // The thermostat goes on (Langevin's last forces: none for new bodies).
        let ensemble = md.as_ref().and_then(|m| m.ensemble.clone()).map(|mut e| {
            e.kicks = edit.apply(e.kicks, [0.0; 3]);
            e
        });
        let types = match md {
            Some(md) if md.types.iter().any(|&t| t != 0) => md.types,
            _ => Vec::new(),
        };
        let images = self.engine().images()?;
        if images.is_none() && types.is_empty() && ensemble.is_none() {
            return Ok(None);
        }
        Ok(Some(MdState {
            types: edit.apply(types, 0),
            ensemble,
            ..MdState::with_images(edit.apply(images.unwrap_or_default(), [0; 3]))
        }))
    }

    /// Removes body `index` and returns it; the others keep their order
    /// (so indices above `index` move down by one) and their ids
    /// ([`Simulation::ids`], [`remove_by_id`](Self::remove_by_id)). Restarts the engine as
    /// [`add`](Self::add) does. [`Error::NoSuchBody`] past the end,
    /// [`Error::NoBodies`] for the last body.
    pub fn remove(&mut self, index: usize) -> Result<Body> {
        let mut bodies = self.live_bodies()?.clone();
        let body = bodies
            .remove(index)
            .ok_or(Error::NoSuchBody { index, n: self.n })?;
        let md = self.md_for(Edit::Remove(index))?;
        let mut ids = self.ids.clone();
        ids.remove(index);
        self.restart(bodies, md, ids)?;
        Ok(body)
    }

    /// Removes the body with stable id `id` ([`Simulation::ids`]) and
    /// returns it, wherever removals and additions have moved its index;
    /// [`Error::NoSuchId`] if no body has it. As [`remove`](Self::remove)
    /// otherwise.
    pub fn remove_by_id(&mut self, id: u64) -> Result<Body> {
        let index = self.index_of(id).ok_or(Error::NoSuchId { id })?;
        self.remove(index)
    }

    /// A second, independent simulation in the same state (time, step
    /// count, parameters, backend) on an engine of its own, which continues
    /// bit-identically where the backend is deterministic (see
    /// [`Simulation::resume`]). Fails where the second engine cannot start
    /// (CUDA device memory), which is why this is not `Clone`.
    ///
    /// ```
    /// use nbody_host::{Backend, Simulation, ic};
    ///
    /// let mut a = Simulation::builder(ic::plummer(64, 1)).backend(Backend::cpu()).build()?;
    /// a.step(3)?;
    /// let mut b = a.try_clone()?;
    /// a.step(5)?;
    /// b.step(5)?;
    /// assert_eq!(a.state()?, b.state()?);
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn try_clone(&self) -> Result<Simulation> {
        let mut copy = Simulation::start(
            self.bodies()?.clone(),
            self.params.clone(),
            self.backend,
            Continued {
                step: self.step,
                time: self.time,
                md: self.md_state()?,
                hermite: self.hermite_state(),
                ids: Some(self.ids.clone()),
            },
        )?;
        copy.diverged = self.diverged.clone();
        copy.next_id = self.next_id;
        Ok(copy)
    }

    /// The bodies, or [`Error::Diverged`] for a run that diverged (whose
    /// state cannot start an engine).
    fn live_bodies(&self) -> Result<&Bodies> {
        if let Some(stopped) = &self.diverged {
            return Err(stopped.error());
        }
        self.bodies()
    }

    /// Replaces the engine by one started from `bodies`, keeping everything
    /// else; on error nothing changes.
    fn restart(&mut self, bodies: Bodies, md: Option<MdState>, ids: Vec<u64>) -> Result<()> {
        if self.params.integrator().hermite().is_some() {
            // Its f64 state would restart from the f32 bodies: refused.
            return Err(Error::Unsupported(
                "adding or removing bodies in a Hermite run is not supported: start a new \
                 simulation from positions_f64 / velocities_f64 (Simulation::builder_f64)"
                    .into(),
            ));
        }
        // Ids handed out stay handed out, whoever holds them now.
        let next_id = self.next_id.max(ids.iter().max().map_or(0, |&m| m + 1));
        *self = Simulation::start(
            bodies,
            self.params.clone(),
            self.backend,
            Continued {
                step: self.step,
                time: self.time,
                md,
                hermite: None,
                ids: Some(ids),
            },
        )?;
        self.next_id = next_id;
        Ok(())
    }
}
