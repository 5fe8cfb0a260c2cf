//! [`Simulation`]: the one type users step.

use std::path::Path;

use glam::Vec3;

use crate::backend::{self, Backend};
use crate::config::{Kernel, Params};
use crate::engine::{BackendKind, Engine};
use crate::error::{Error, Result};
use crate::force::ForceLaw;
use crate::integrator::Integrator;
use crate::snapshot::{self, Checkpoint};
use crate::state::{Bodies, Energy, Momentum, State};

/// A running direct-summation N-body simulation.
///
/// Built with [`Simulation::builder`] (or [`Simulation::resume`] from a
/// checkpoint); the state lives on the backend's device and is copied back
/// only by the methods that need it.
///
/// | to | use |
/// | --- | --- |
/// | advance | [`step`](Simulation::step) (checks every step for divergence) |
/// | read back | [`state`](Simulation::state), [`accelerations`](Simulation::accelerations) |
/// | diagnose | [`energy`](Simulation::energy), [`momentum`](Simulation::momentum), [`steps_done`](Simulation::steps_done), [`time`](Simulation::time) |
/// | save | [`save_npy`](Simulation::save_npy), [`save_checkpoint`](Simulation::save_checkpoint) |
/// | inspect | [`backend`](Simulation::backend), [`method`](Simulation::method), [`params`](Simulation::params), [`len`](Simulation::len) |
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
    pub(crate) engine: Box<dyn Engine>,
    pub(crate) params: Params,
    pub(crate) n: usize,
    pub(crate) step: u64,
    pub(crate) diverged: Option<(u64, usize)>,
}

/// Configures and builds a [`Simulation`]; every setter has a default (those
/// of NVIDIA Warp's N-body example: `dt = 0.01`, softening `0.1`, `G = 1`,
/// tiled kernel with 256 threads, semi-implicit Euler; and [`Backend::Auto`]).
#[derive(Clone, Debug)]
pub struct SimulationBuilder {
    pub(crate) bodies: Bodies,
    pub(crate) dt: f64,
    pub(crate) softening: f64,
    pub(crate) g: f64,
    pub(crate) kernel: Kernel,
    pub(crate) integrator: Integrator,
    pub(crate) backend: Backend,
    pub(crate) start_step: u64,
}

impl SimulationBuilder {
    /// Time step (finite, `> 0`).
    pub fn dt(mut self, dt: f64) -> Self {
        self.dt = dt;
        self
    }

    /// Plummer softening length `eps` (finite, `>= 0`).
    pub fn softening(mut self, eps: f64) -> Self {
        self.softening = eps;
        self
    }

    /// Gravitational constant `G` (finite, `> 0`).
    pub fn gravitational_constant(mut self, g: f64) -> Self {
        self.g = g;
        self
    }

    /// Force algorithm and block size.
    pub fn kernel(mut self, kernel: Kernel) -> Self {
        self.kernel = kernel;
        self
    }

    /// Time integrator.
    pub fn integrator(mut self, integrator: Integrator) -> Self {
        self.integrator = integrator;
        self
    }

    /// Where to run, with that backend's options.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Applies an autotuning result: its kernel (and block size) and, for a
    /// profile measured on the CPU, its CPU blocking, which makes the backend
    /// [`Backend::Cpu`] unless another backend than [`Backend::Auto`] was
    /// chosen. Later calls of [`backend`](Self::backend) override it.
    pub fn tuned_for(mut self, profile: &crate::TuningProfile) -> Self {
        self.kernel = profile.kernel;
        if let (Some(tuning), Backend::Auto | Backend::Cpu(_)) = (profile.cpu_tuning, self.backend)
        {
            self.backend = Backend::Cpu(tuning);
        }
        self
    }

    /// The step count to start from (what [`Simulation::steps_done`] and
    /// [`Simulation::time`] count on from); set by [`Simulation::resume`].
    fn start_step(mut self, step: u64) -> Self {
        self.start_step = step;
        self
    }

    /// Validates everything and starts the backend.
    pub fn build(self) -> Result<Simulation> {
        self.bodies.validate()?;
        let force = ForceLaw::gravity(self.g, self.softening)?;
        let params = Params::new(self.dt, force, self.kernel, self.integrator)?;
        // Launch-shape errors (grid too large) before any device work.
        crate::plan::Plan::new(self.bodies.len(), params)?;
        let engine = backend::create(self.backend, &self.bodies, &params)?;
        Ok(Simulation {
            engine,
            params,
            n: self.bodies.len(),
            step: self.start_step,
            diverged: None,
        })
    }
}

impl Simulation {
    /// Starts configuring a simulation of `bodies` (e.g. from [`crate::ic`],
    /// [`Bodies::from_arrays`] or [`snapshot::load_npy`]).
    pub fn builder(bodies: Bodies) -> SimulationBuilder {
        let d = Params::default();
        SimulationBuilder {
            bodies,
            dt: d.dt() as f64,
            softening: d.gravity().softening() as f64,
            g: d.gravity().g() as f64,
            kernel: d.kernel(),
            integrator: d.integrator(),
            backend: Backend::Auto,
            start_step: 0,
        }
    }

    /// Advances `steps` time steps.
    ///
    /// Every step is checked for non-finite positions and velocities; the
    /// first bad step is reported as [`Error::Diverged`], after which the
    /// simulation refuses to step further (its state can still be read).
    pub fn step(&mut self, steps: u64) -> Result<()> {
        if let Some((step, body)) = self.diverged {
            return Err(Error::Diverged { step, body });
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
        match self.engine.step(steps)? {
            None => {
                self.step += steps;
                Ok(())
            }
            Some(d) => {
                let step = self.step + d.after_step;
                self.step += d.steps_run;
                self.diverged = Some((step, d.body));
                Err(Error::Diverged { step, body: d.body })
            }
        }
    }

    /// Positions, velocities, masses, time and step count (copied back from the device).
    pub fn state(&mut self) -> Result<State> {
        Ok(State {
            bodies: self.engine.read_state()?,
            time: self.time(),
            step: self.step,
        })
    }

    /// Kinetic, softened potential and total energy, computed on the backend
    /// and summed in `f64`.
    pub fn energy(&mut self) -> Result<Energy> {
        self.engine.energy()
    }

    /// Linear and angular momentum and centre of mass.
    pub fn momentum(&mut self) -> Result<Momentum> {
        Ok(self.engine.read_state()?.momentum())
    }

    /// Accelerations (`G`-scaled) at the current positions, by the configured kernel.
    pub fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        self.engine.accelerations()
    }

    /// The backend in use (what [`Backend::Auto`] resolved to).
    pub fn backend(&self) -> BackendKind {
        self.engine.kind()
    }

    /// What enumerates the pairs, named as it runs: the GPU kernel family
    /// (`"simt"`, `"tiled"`, `"triangle"`), or on the CPU `"all-pairs"` or
    /// `"third-law"` (see [`Kernel`]).
    pub fn method(&self) -> &'static str {
        self.engine.method()
    }

    /// The validated parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Number of bodies.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Always `false`: a simulation has at least one body.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Steps taken since the start (including steps before a resumed checkpoint).
    pub fn steps_done(&self) -> u64 {
        self.step
    }

    /// Simulated time, `steps_done * dt`.
    pub fn time(&self) -> f64 {
        self.step as f64 * self.params.dt() as f64
    }

    /// Saves the bodies as a numpy `.npy` file of shape `(N, 7)`
    /// ([`snapshot::save_npy`]); refuses a diverged simulation
    /// ([`Error::NonFiniteSnapshot`]).
    pub fn save_npy(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        self.refuse_if_diverged(path)?;
        snapshot::save_npy(path, &self.engine.read_state()?)
    }

    /// Writes a [`Checkpoint`] (state, step, parameters, backend) atomically,
    /// for [`Simulation::resume`]; refuses a diverged simulation
    /// ([`Error::NonFiniteSnapshot`]).
    pub fn save_checkpoint(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        self.refuse_if_diverged(path)?;
        Checkpoint {
            state: self.state()?,
            params: self.params,
            backend: self.engine.kind(),
        }
        .save(path)
    }

    /// A builder that continues the run saved by [`Simulation::save_checkpoint`]:
    /// same bodies, step count and parameters (any of which the builder can
    /// still change). The backend is [`Backend::Auto`] unless set; on the
    /// backend it was saved from, the continued run is bit-identical to one
    /// that was never interrupted.
    pub fn resume(path: impl AsRef<Path>) -> Result<SimulationBuilder> {
        Ok(Simulation::from_checkpoint(Checkpoint::load(path)?))
    }

    /// A builder that continues from a loaded [`Checkpoint`] (see [`Simulation::resume`]).
    pub fn from_checkpoint(checkpoint: Checkpoint) -> SimulationBuilder {
        let p = checkpoint.params;
        let ForceLaw::Gravity(gravity) = p.force();
        // f32 -> f64 -> f32 is exact: the resumed run gets the very same bits.
        Simulation::builder(checkpoint.state.bodies)
            .dt(p.dt() as f64)
            .softening(gravity.softening() as f64)
            .gravitational_constant(gravity.g() as f64)
            .kernel(p.kernel())
            .integrator(p.integrator())
            .start_step(checkpoint.state.step)
    }

    fn refuse_if_diverged(&self, path: &Path) -> Result<()> {
        match self.diverged {
            Some((_, body)) => Err(Error::NonFiniteSnapshot {
                path: path.to_path_buf(),
                body,
            }),
            None => Ok(()),
        }
    }

    /// Seconds the device spent stepping, where the backend times it itself
    /// (CUDA events); `None` on the CPU backends.
    pub fn device_seconds(&self) -> Option<f64> {
        self.engine.device_seconds()
    }
}

impl std::fmt::Debug for Simulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulation")
            .field("backend", &self.engine.kind())
            .field("n", &self.n)
            .field("params", &self.params)
            .field("step", &self.step)
            .finish()
    }
}
