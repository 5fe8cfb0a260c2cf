//! [`Simulation`]: the one type users step.
//!
//! This file holds the type, its start, its steps and its reads: they share
//! the engine's lock and the per-step caches (host mirror, energy, thermo)
//! that a step clears and a read fills. The rest is in `simulation/`:
//! `builder.rs` ([`SimulationBuilder`]: settings, validated at `build`),
//! `edit.rs` (adding and removing bodies, cloning: engine restarts) and
//! `persist.rs` (`.npy` snapshots, checkpoints and resuming).
//!
//! (Over 600 lines: the type, its start, steps and reads share one lock and the caches a step clears; the rest is split into simulation/.)

mod builder;
mod collisional;
mod diverge;
mod edit;
mod persist;

pub use builder::SimulationBuilder;
use diverge::{Stopped, within_reach_of_box};

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use glam::Vec3;

use crate::backend::{self, Backend};
use crate::config::{Kernel, Params};
use crate::engine::{BackendKind, Engine};
use crate::error::{Error, Result};
use crate::force::ForceLaw;
use crate::hermite::HermiteState;
use crate::md::{Boundary, MdState, MdStats, Thermo};
use crate::memory;
use crate::state::{Bodies, Energy, Momentum, State};

/// A running direct-summation N-body simulation.
///
/// Built with [`Simulation::builder`] (or [`Simulation::resume`] from a
/// checkpoint); the state lives on the backend's device and is copied back
/// only by the methods that need it.
///
/// | to | use |
/// | --- | --- |
/// | advance | [`step`](Simulation::step), [`integrate_to`](Simulation::integrate_to) (both check every step for divergence) |
/// | read | [`positions`](Simulation::positions), [`velocities`](Simulation::velocities), [`masses`](Simulation::masses), [`bodies`](Simulation::bodies) (borrowed), [`state`](Simulation::state) (a copy), [`accelerations`](Simulation::accelerations) |
/// | diagnose | [`energy`](Simulation::energy), [`momentum`](Simulation::momentum), [`steps_done`](Simulation::steps_done), [`time`](Simulation::time), [`thermo`](Simulation::thermo) and [`md_stats`](Simulation::md_stats) (short-range forces), [`images`](Simulation::images) (periodic box) |
/// | change | [`add`](Simulation::add), [`extend`](Simulation::extend), [`remove`](Simulation::remove), [`remove_by_id`](Simulation::remove_by_id), [`try_clone`](Simulation::try_clone) |
/// | identify | [`ids`](Simulation::ids) (stable through removals, files and MPI), [`index_of`](Simulation::index_of) |
/// | save | [`save_npy`](Simulation::save_npy), [`save_checkpoint`](Simulation::save_checkpoint), [`ArchiveWriter::append`](crate::snapshot::ArchiveWriter::append) |
/// | inspect | [`backend`](Simulation::backend), [`method`](Simulation::method), [`params`](Simulation::params), [`len`](Simulation::len) |
///
/// Every read and diagnostic takes `&self`. The engine sits behind a
/// mutex, because the CUDA engine needs exclusive use of its stream for
/// the copies and reductions a read starts; a step takes `&mut self` and no
/// lock. What a read copies back (the host mirror of the bodies) and the
/// energy are kept until the next step, so asking twice costs nothing.
/// There is no `Clone` because starting a second engine can fail (device
/// memory); [`try_clone`](Simulation::try_clone) says why when it does.
///
/// ```
/// use nbody_host::{Backend, Integrator, Kernel, Simulation, ic};
///
/// let mut sim = Simulation::builder(ic::plummer(256, 7))
///     .dt(1e-3)
///     .softening(0.05)
///     .kernel(Kernel::Triangle { block: 64 })
///     .integrator(Integrator::Leapfrog)
///     .backend(Backend::cpu())
///     .build()?;
/// let e0 = sim.energy()?;
/// sim.step(100)?;
/// assert_eq!(sim.steps_done(), 100);
/// assert!(sim.energy()?.relative_change_from(&e0) < 1e-3);
/// # Ok::<(), nbody_host::Error>(())
/// ```
pub struct Simulation {
    /// Locked by the reads on `&self`; steps use `get_mut`.
    engine: Mutex<Box<dyn Engine>>,
    /// What `engine` was started from (never [`Backend::Auto`]): a rebuild
    /// ([`Simulation::add`], [`Simulation::try_clone`]) starts the same one.
    backend: Backend,
    params: Params,
    n: usize,
    step: u64,
    /// Simulated time: advanced by `params.dt_f64()` each step, in `f64`.
    time: f64,
    /// Set when a step diverged: every later step reports it again.
    diverged: Option<Stopped>,
    /// The bodies at `step`, read back on first use after a step.
    mirror: OnceLock<Bodies>,
    /// The energy at `step`, computed on first use after a step.
    energy: OnceLock<Energy>,
    /// The thermo output at `step` (short-range forces), computed on first use.
    thermo: OnceLock<Thermo>,
    /// Each body's stable id, in body order ([`Simulation::ids`]).
    ids: Vec<u64>,
    /// The id the next added body gets: above every id this run has had,
    /// so a removed body's id is never handed out again (after a resume,
    /// above every id in the file).
    next_id: u64,
}

/// What a started engine carries on from before it (a checkpoint, the
/// simulation it rebuilds or clones): its clock, its extra state, its ids.
struct Continued {
    step: u64,
    time: f64,
    md: Option<MdState>,
    hermite: Option<HermiteState>,
    ids: Option<Vec<u64>>,
}

impl Simulation {
    /// Validates `bodies` and the launch shapes, checks the memory, starts
    /// the engine: what [`SimulationBuilder::build`] and every rebuild do.
    fn start(
        bodies: Bodies,
        params: Params,
        backend: Backend,
        from: Continued,
    ) -> Result<Simulation> {
        let Continued {
            step,
            time,
            md,
            hermite,
            ids,
        } = from;
        bodies.validate()?;
        let ids = check_ids(ids, bodies.len())?;
        if let Some(lengths) = params.boundary().lengths_f32() {
            within_reach_of_box(&bodies, lengths)?;
        }
        if let ForceLaw::Gravity(_) = params.force() {
            // Launch-shape errors (grid too large) before any device work.
            crate::plan::Plan::new(bodies.len(), params.clone())?;
        }
        if let Some(md) = &md {
            match params.force().as_pair() {
                Some(pair) => pair.check_types(&md.types)?,
                None if !md.types.is_empty() => {
                    return Err(Error::InvalidCombination(format!(
                        "atom types pick a pair potential's coefficients; the force law is {}",
                        params.force()
                    )));
                }
                None => {}
            }
            if !md.types.is_empty() && md.types.len() != bodies.len() {
                return Err(Error::InvalidCombination(format!(
                    "{} atom types for {} bodies",
                    md.types.len(),
                    bodies.len()
                )));
            }
        }
        memory::check(
            bodies.len(),
            memory::engine_bytes_per_body(&bodies, &params, backend),
            match params.force().cutoff() {
                None => "the simulation's engine",
                Some(_) => "the simulation's engine and its neighbour lists",
            },
        )?;
        let (engine, backend) = match params.integrator().hermite() {
            // The collisional integrator has its own engine (`crate::hermite`).
            Some(settings) => {
                backend::create_hermite(backend, &bodies, &params, settings, hermite, time)?
            }
            None => backend::create(backend, &bodies, &params, md.as_ref())?,
        };
        // A built simulation holds the kernel that runs (what files store):
        // the GPU plan's choice for `Kernel::Auto`, else the CPU's default.
        let params = match (engine.kernel(), params.kernel()) {
            (Some(kernel), _) => params.with_kernel(kernel),
            (None, Kernel::Auto) => params.with_kernel(Kernel::Tiled {
                block: crate::config::DEFAULT_BLOCK,
            }),
            (None, _) => params,
        };
        let boundary = params.boundary();
        Ok(Simulation {
            engine: Mutex::new(engine),
            backend,
            params,
            n: bodies.len(),
            step,
            time,
            diverged: None,
            // The engine holds these very bits (unless it wrapped them into
            // a periodic box): no read-back needed.
            mirror: match boundary {
                Boundary::Open => OnceLock::from(bodies),
                _ => OnceLock::new(),
            },
            energy: OnceLock::new(),
            thermo: OnceLock::new(),
            next_id: ids.iter().max().map_or(0, |&m| m + 1),
            ids,
        })
    }

    /// The engine, for the reads on `&self`.
    fn engine(&self) -> MutexGuard<'_, Box<dyn Engine>> {
        // A panic inside an engine call leaves nothing half-updated that a
        // later call relies on: the lock is taken over as it is.
        self.engine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The engine, for the steps on `&mut self` (no locking).
    fn engine_mut(&mut self) -> &mut Box<dyn Engine> {
        self.engine
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Advances `steps` time steps.
    ///
    /// Every step is checked for non-finite positions and velocities; the
    /// first bad step is reported as [`Error::Diverged`], after which the
    /// simulation refuses to step further (its state can still be read).
    ///
    /// ```
    /// use nbody_host::{Backend, Bodies, Error, Simulation};
    ///
    /// // A body so fast that its first drift overflows f32.
    /// let b = Bodies::from_arrays(&[[0.0; 3]], &[[3e38, 0.0, 0.0]], &[1.0])?;
    /// let mut sim = Simulation::builder(b).dt(10.0).backend(Backend::cpu()).build()?;
    /// assert!(matches!(sim.step(5), Err(Error::Diverged { step: 1, body: 0 })));
    /// assert_eq!(sim.steps_done(), 1);
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn step(&mut self, steps: u64) -> Result<()> {
        if let Some(stopped) = &self.diverged {
            return Err(stopped.error());
        }
        if steps == 0 {
            return Ok(());
        }
        if self.step.checked_add(steps).is_none() {
            return Err(Error::Unsupported(format!(
                "{steps} more steps would overflow the step counter (at step {})",
                self.step
            )));
        }
        let report = self.engine_mut().step(steps);
        // Whatever the engine reports, its state may have moved. The state
        // before, if it was read, can still say who caused a divergence.
        let before = std::mem::take(&mut self.mirror);
        self.energy = OnceLock::new();
        self.thermo = OnceLock::new();
        // A barostat moves the box: the parameters follow it.
        if let Some(lengths) = self.engine_mut().box_lengths() {
            self.params = self.params.clone().with_lengths(lengths);
        }
        match report? {
            None => {
                self.advance(steps);
                Ok(())
            }
            Some(d) => {
                let step = self.step + d.after_step;
                self.advance(d.steps_run);
                // A barostat's stop says why itself; else the state explains.
                let stopped = match self.engine_mut().stop_reason() {
                    Some(Error::BoxTooSmall { length, needed, .. }) => {
                        Stopped::box_too_small(step, d.body, length, needed)
                    }
                    _ => self.explain(step, d.body, before.get()),
                };
                let error = stopped.error();
                self.diverged = Some(stopped);
                Err(error)
            }
        }
    }

    /// Counts `steps` taken: the step counter, and the clock one `dt` at a
    /// time (in `f64`, as REBOUND's `t += dt`: the same additions in a
    /// straight run and in one resumed from a checkpoint, which stores the
    /// clock's exact bits).
    fn advance(&mut self, steps: u64) {
        self.time = clock_after(self.time, self.params.dt_f64(), steps);
        self.step += steps;
    }

    /// Steps until the simulated time reaches `t`; returns the steps taken.
    ///
    /// The time step never changes, so the last step may **overshoot** `t`
    /// by less than one `dt` (what [`time`](Self::time) then says); the
    /// trajectory is the one [`step`](Self::step) gives, and a resumed run
    /// repeats it bit for bit. A time within `1e-6 dt` below `t` counts as
    /// reached, which absorbs the clock's rounding: with `dt = 1e-3`,
    /// `integrate_to(1.0)` takes 1000 steps, not 1001. To land on `t`
    /// exactly, choose a `dt` that divides it. `t` before the current time
    /// (by more than that tolerance), or not finite, is an
    /// [`Error::InvalidTargetTime`]; a `dt` too small to move the clock at
    /// this time (`1e17 + 1e-3 == 1e17`) an [`Error::Unsupported`].
    ///
    /// ```
    /// use nbody_host::{Backend, Simulation, ic};
    ///
    /// let mut sim = Simulation::builder(ic::plummer(64, 1)).dt(1e-3).backend(Backend::cpu()).build()?;
    /// assert_eq!(sim.integrate_to(0.25)?, 250);
    /// assert!((sim.time() - 0.25).abs() < 1e-12);
    /// assert_eq!(sim.integrate_to(0.2505)?, 1); // overshoots to 0.251
    /// assert!(sim.integrate_to(0.1).is_err()); // the past
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn integrate_to(&mut self, t: f64) -> Result<u64> {
        if self.params.integrator().hermite().is_some() {
            return self.integrate_to_exactly(t);
        }
        let dt = self.params.dt_f64();
        let reached = t - 1e-6 * dt;
        // `t` itself may lie a rounding below the clock it was reached at.
        if !(t.is_finite() && self.time - 1e-6 * dt <= t) {
            return Err(Error::InvalidTargetTime {
                target: t,
                now: self.time,
            });
        }
        // Refuse a count the step counter cannot hold before counting it out.
        let estimate = ((t - self.time) / dt).ceil();
        if estimate >= (u64::MAX - self.step) as f64 {
            return Err(Error::Unsupported(format!(
                "integrating to t = {t} from t = {} with dt = {dt} needs about {estimate:e} steps, more than the step counter holds",
                self.time
            )));
        }
        let (mut steps, mut time) = (0u64, self.time);
        while time < reached {
            let next = clock_after(time, dt, 1);
            if next == time {
                return Err(Error::Unsupported(format!(
                    "cannot integrate to t = {t}: at t = {time} a step of dt = {dt} is below the \
                     resolution of the f64 clock, which would stop"
                )));
            }
            time = next;
            steps += 1;
        }
        self.step(steps)?;
        Ok(steps)
    }

    /// Positions, velocities, masses, time and step count: a copy of
    /// [`bodies`](Self::bodies) (copied back from the device if a step came
    /// since the last read).
    pub fn state(&self) -> Result<State> {
        Ok(State {
            bodies: self.bodies()?.clone(),
            time: self.time,
            step: self.step,
            ids: self.ids.clone(),
        })
    }

    /// The bodies now, borrowed from the host mirror: copied back from the
    /// device on the first read after a step, then kept until the next one.
    ///
    /// ```
    /// use nbody_host::{Backend, Simulation, ic};
    ///
    /// let mut sim = Simulation::builder(ic::plummer(64, 1)).backend(Backend::cpu()).build()?;
    /// let x0 = sim.positions()?[0];
    /// sim.step(10)?;
    /// assert_ne!(sim.positions()?[0], x0);
    /// assert_eq!(sim.masses()?.len(), 64);
    /// assert_eq!(sim.bodies()?.velocities, sim.velocities()?);
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn bodies(&self) -> Result<&Bodies> {
        if let Some(bodies) = self.mirror.get() {
            return Ok(bodies);
        }
        let bodies = self.engine().read_state()?;
        Ok(self.mirror.get_or_init(|| bodies))
    }

    /// Positions now (see [`bodies`](Self::bodies)).
    pub fn positions(&self) -> Result<&[Vec3]> {
        Ok(&self.bodies()?.positions)
    }

    /// Velocities now (see [`bodies`](Self::bodies)).
    pub fn velocities(&self) -> Result<&[Vec3]> {
        Ok(&self.bodies()?.velocities)
    }

    /// Masses (see [`bodies`](Self::bodies)).
    pub fn masses(&self) -> Result<&[f32]> {
        Ok(&self.bodies()?.masses)
    }

    /// Kinetic, softened potential and total energy, computed on the backend
    /// and summed in `f64`; kept until the next step, so it changes nothing
    /// and costs one pair sweep per state at most.
    ///
    /// A non-finite energy (bodies that coincide at softening 0) is an
    /// [`Error::NonFiniteEnergy`], not a NaN to compare.
    ///
    /// ```
    /// use nbody_host::{Backend, Simulation, ic};
    ///
    /// let sim = Simulation::builder(ic::plummer(64, 1)).softening(0.01).backend(Backend::cpu()).build()?;
    /// let e = sim.energy()?;
    /// assert!(e.kinetic > 0.0 && e.potential < 0.0);
    /// assert_eq!(sim.energy()?, e); // cached, same bits
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn energy(&self) -> Result<Energy> {
        if let Some(energy) = self.energy.get() {
            return Ok(*energy);
        }
        let energy = self.engine().energy()?;
        if !(energy.kinetic.is_finite() && energy.potential.is_finite()) {
            return Err(Error::NonFiniteEnergy {
                step: self.step,
                kinetic: energy.kinetic,
                potential: energy.potential,
            });
        }
        Ok(*self.energy.get_or_init(|| energy))
    }

    /// Linear and angular momentum and centre of mass (from the host mirror).
    ///
    /// ```
    /// use nbody_host::{Backend, Simulation, ic};
    ///
    /// let mut sim = Simulation::builder(ic::plummer(128, 2)).backend(Backend::cpu()).build()?;
    /// let p0 = sim.momentum()?.linear;
    /// sim.step(20)?;
    /// // Pairwise forces conserve momentum, to f32 rounding.
    /// assert!((sim.momentum()?.linear - p0).length() < 1e-5);
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn momentum(&self) -> Result<Momentum> {
        Ok(self.bodies()?.momentum())
    }

    /// LAMMPS's thermo output of the current state (short-range forces):
    /// temperature, kinetic, potential and total energy per atom, pressure
    /// from the virial, the ensemble's coupling energy and the conserved
    /// quantity, volume and density ([`Thermo`]); kept until the next step. An
    /// [`Error::Unsupported`] for gravity, whose energy is [`energy`](Self::energy).
    ///
    /// ```
    /// use nbody_host::{Backend, ForceLaw, Simulation, ic};
    ///
    /// let (atoms, boundary) = ic::fcc_lattice(3, 0.8442, 1.44, 1)?;
    /// let sim = Simulation::builder(atoms)
    ///     .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, false)?)
    ///     .boundary(boundary)
    ///     .backend(Backend::cpu())
    ///     .build()?;
    /// let t = sim.thermo()?;
    /// assert_eq!(t.atoms, 108);
    /// assert!((t.temperature - 1.44).abs() < 1e-6 && t.pressure.is_some());
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn thermo(&self) -> Result<Thermo> {
        if let Some(thermo) = self.thermo.get() {
            return Ok(*thermo);
        }
        let sums = self.engine().thermo_sums()?;
        if !(sums.kinetic.is_finite() && sums.potential.is_finite() && sums.virial.is_finite()) {
            return Err(Error::NonFiniteEnergy {
                step: self.step,
                kinetic: sums.kinetic,
                potential: sums.potential,
            });
        }
        let thermo = Thermo::from_sums(self.step, self.n, sums, self.params.boundary().volume());
        Ok(*self.thermo.get_or_init(|| thermo))
    }

    /// The image counters in a periodic box, one per body: the unwrapped
    /// position is `x + image * L` ([`Boundary::Periodic`]); `None` in open space.
    pub fn images(&self) -> Result<Option<Vec<[i32; 3]>>> {
        self.engine().images()
    }

    /// What continues this short-range run bit-identically (image counters,
    /// where the neighbour lists were built): for
    /// [`SimulationBuilder::md_state`]; `None` for gravity.
    pub fn md_state(&self) -> Result<Option<MdState>> {
        self.engine().md_state()
    }

    /// Each body's atom type (numbered from 0; see
    /// [`SimulationBuilder::types`]): all 0 unless given.
    pub fn types(&self) -> Result<Vec<u32>> {
        let types = self.md_state()?.map(|m| m.types).unwrap_or_default();
        Ok(if types.is_empty() {
            vec![0; self.n]
        } else {
            types
        })
    }

    /// Neighbour-list builds and the time split of a short-range run on
    /// the CPU (pair, neighbour, integrate, thermo), as LAMMPS reports them.
    pub fn md_stats(&self) -> Option<MdStats> {
        self.engine().md_stats()
    }

    /// Accelerations at the current positions, by the configured kernel or
    /// enumeration: `G`-scaled for gravity, `F / m` for other force laws.
    pub fn accelerations(&self) -> Result<Vec<Vec3>> {
        self.engine().accelerations()
    }

    /// The backend in use (what [`Backend::Auto`] resolved to).
    pub fn backend(&self) -> BackendKind {
        self.engine().kind()
    }

    /// What enumerates the pairs, named as it runs: the GPU kernel family
    /// (`"simt"`, `"tiled"`, `"triangle"`), or on the CPU `"all-pairs"` or
    /// `"third-law"` (see [`Kernel`](crate::Kernel)).
    pub fn method(&self) -> &'static str {
        self.engine().method()
    }

    /// The validated parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Number of bodies.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Each body's stable id, in body order (REBOUND's hashes): `0..N` as
    /// built (or what [`SimulationBuilder::ids`] gave), kept through
    /// [`remove`](Self::remove) of other bodies (which shifts the indices
    /// above, not the ids), checkpoints, archives and MPI runs; a body
    /// [`add`](Self::add)ed gets one above every id the run has had (never a
    /// removed body's; after a resume, above every id in the file).
    ///
    /// ```
    /// use nbody_host::{Backend, Body, Simulation, ic};
    ///
    /// let mut sim = Simulation::builder(ic::plummer(4, 1)).backend(Backend::cpu()).build()?;
    /// assert_eq!(sim.ids(), [0, 1, 2, 3]);
    /// sim.remove(1)?;                                   // indices shift, ids stay
    /// assert_eq!(sim.ids(), [0, 2, 3]);
    /// sim.add(Body::new(1e-3, [3.0, 0.0, 0.0], [0.0; 3]))?;
    /// assert_eq!(sim.ids(), [0, 2, 3, 4]);
    /// let body = sim.remove_by_id(3)?;                  // whatever its index now
    /// assert_eq!((sim.ids(), sim.index_of(4)), (&[0, 2, 4][..], Some(2)));
    /// # let _ = body;
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// The index of the body with stable id `id`, if there is one.
    pub fn index_of(&self, id: u64) -> Option<usize> {
        self.ids.iter().position(|&i| i == id)
    }

    /// Always `false`: a simulation has at least one body.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Steps taken since the start (including steps before a resumed checkpoint).
    pub fn steps_done(&self) -> u64 {
        self.step
    }

    /// Simulated time: the start's (0, or the checkpoint's) plus
    /// [`Params::dt_f64`] for every step since, added in `f64` one step at
    /// a time, whatever the `dt` of the steps before a resume.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Seconds the device spent stepping, where the backend times it itself
    /// (CUDA events); `None` on the CPU backends.
    pub fn device_seconds(&self) -> Option<f64> {
        self.engine().device_seconds()
    }
}

/// `ids` (set by [`SimulationBuilder::ids`] or a file) checked against
/// `n` bodies, distinct; `0..n` without any.
pub(crate) fn check_ids(ids: Option<Vec<u64>>, n: usize) -> Result<Vec<u64>> {
    let Some(ids) = ids else {
        return Ok(crate::state::default_ids(n));
    };
    if ids.len() != n {
        return Err(Error::InvalidCombination(format!(
            "{} ids for {n} bodies: one id per body",
            ids.len()
        )));
    }
    let mut seen = std::collections::HashSet::with_capacity(n);
    if let Some(id) = ids.iter().find(|&&id| !seen.insert(id)) {
        return Err(Error::InvalidCombination(format!(
            "id {id} is given to two bodies: ids must be distinct"
        )));
    }
    Ok(ids)
}

/// `time` advanced by `dt` `steps` times, one addition per step.
pub(crate) fn clock_after(mut time: f64, dt: f64, steps: u64) -> f64 {
    for _ in 0..steps {
        time += dt;
    }
    time
}

impl std::fmt::Debug for Simulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulation")
            .field("backend", &self.backend())
            .field("n", &self.n)
            .field("params", &self.params)
            .field("step", &self.step)
            .field("time", &self.time)
            .finish()
    }
}
