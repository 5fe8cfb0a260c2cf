//! [`SimulationBuilder`]: the settings of a [`Simulation`], validated
//! together when it is built.

use crate::backend::Backend;
use crate::config::{Kernel, Params};
use crate::error::{Error, Result};
use crate::force::{ForceLaw, Gravity};
use crate::hermite::HermiteState;
use crate::integrator::Integrator;
use crate::md::{Boundary, Ensemble, MdState, Neighbours};
use crate::state::Bodies;

use super::{Continued, Simulation};

/// Configures and builds a [`Simulation`]; every setter has a default (those
/// of NVIDIA Warp's N-body example: `dt = 0.01`, softening `0.1`, `G = 1`,
/// semi-implicit Euler; [`Backend::Auto`]; and [`Kernel::Auto`]: on a GPU
/// the kernel, block and split chosen from N and the device, on the CPU
/// the tiled kernel with 256 threads, Warp's).
#[derive(Clone, Debug)]
pub struct SimulationBuilder {
    pub(crate) bodies: Bodies,
    pub(crate) dt: f64,
    pub(crate) softening: f64,
    pub(crate) g: f64,
    /// A force law other than gravity, set by [`force`](Self::force).
    pub(crate) force: Option<ForceLaw>,
    /// Whether softening or `G` was set after such a force law.
    pub(crate) gravity_after_force: bool,
    pub(crate) boundary: Boundary,
    pub(crate) neighbours: Neighbours,
    pub(crate) ensemble: Ensemble,
    pub(crate) md: Option<MdState>,
    /// The f64 start of a Hermite run (`Simulation::builder_f64`, a checkpoint).
    pub(crate) hermite: Option<HermiteState>,
    pub(crate) kernel: Kernel,
    pub(crate) graphs: crate::Graphs,
    pub(crate) integrator: Integrator,
    pub(crate) backend: Backend,
    pub(crate) start_step: u64,
    pub(crate) start_time: f64,
    /// The bodies' stable ids, if not `0..N`.
    pub(crate) ids: Option<Vec<u64>>,
}

impl SimulationBuilder {
    /// Time step (finite, `> 0`).
    pub fn dt(mut self, dt: f64) -> Self {
        self.dt = dt;
        self
    }

    /// Plummer softening length `eps` (finite, `>= 0`) of gravity.
    pub fn softening(mut self, eps: f64) -> Self {
        self.softening = eps;
        self.gravity_after_force = self.force.is_some();
        self
    }

    /// Gravitational constant `G` (finite, `> 0`).
    pub fn gravitational_constant(mut self, g: f64) -> Self {
        self.g = g;
        self.gravity_after_force = self.force.is_some();
        self
    }

    /// The force law, replacing gravity's softening and `G` set before
    /// (the default is softened gravity; see [`ForceLaw`]). Setting the
    /// softening or `G` after a force law other than gravity makes
    /// [`build`](Self::build) fail ([`Error::InvalidCombination`]).
    pub fn force(mut self, force: ForceLaw) -> Self {
        match force {
            ForceLaw::Gravity(g) => {
                self.softening = g.softening_f64();
                self.g = g.g_f64();
                self.force = None;
            }
            other => self.force = Some(other),
        }
        self.gravity_after_force = false;
        self
    }

    /// The space: [`Boundary::Open`] (the default) or a periodic box.
    pub fn boundary(mut self, boundary: Boundary) -> Self {
        self.boundary = boundary;
        self
    }

    /// How a short-range force enumerates its pairs (default
    /// [`Neighbours::Auto`]).
    pub fn neighbours(mut self, neighbours: Neighbours) -> Self {
        self.neighbours = neighbours;
        self
    }

    /// The statistical ensemble of a short-range run (default
    /// [`Ensemble::Nve`]): a thermostat, or a thermostat and a barostat,
    /// as LAMMPS's fixes integrate them (see [`Ensemble`]). Checked at
    /// [`build`](Self::build), before any work.
    pub fn ensemble(mut self, ensemble: Ensemble) -> Self {
        self.ensemble = ensemble;
        self
    }

    /// Continues a short-range run: its image counters (one per body) and,
    /// if recorded, where its neighbour lists were built, for a
    /// bit-identical continuation (from [`Simulation::md_state`]; set by
    /// [`Simulation::resume`] and [`Snapshot::builder`](crate::snapshot::Snapshot::builder)).
    pub fn md_state(mut self, state: MdState) -> Self {
        self.md = Some(state);
        self
    }

    /// The bodies' atom types (one each, numbered from 0), which pick
    /// their coefficients of a pair potential with several types
    /// ([`PairPotential`](crate::PairPotential)); without them every body
    /// is of type 0. Replaces the types of an [`md_state`](Self::md_state)
    /// set before.
    pub fn types(mut self, types: Vec<u32>) -> Self {
        self.md.get_or_insert_with(MdState::default).types = types;
        self
    }

    /// Force algorithm and block size.
    pub fn kernel(mut self, kernel: Kernel) -> Self {
        self.kernel = kernel;
        self
    }

    /// Whether the gravity plan on CUDA queues its steps as CUDA graphs
    /// ([`Graphs::Auto`](crate::Graphs::Auto): by N).
    pub fn graphs(mut self, graphs: crate::Graphs) -> Self {
        self.graphs = graphs;
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

    /// The bodies' stable ids ([`Simulation::ids`]), one per body and
    /// distinct (checked by [`build`](Self::build)); `0..N` by default.
    pub fn ids(mut self, ids: Vec<u64>) -> Self {
        self.ids = Some(ids);
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

    /// The step count and time to start from (what [`Simulation::steps_done`]
    /// and [`Simulation::time`] count on from); set by [`Simulation::resume`].
    pub(crate) fn start_at(mut self, step: u64, time: f64) -> Self {
        self.start_step = step;
        self.start_time = time;
        self
    }

    /// The validated parameters of the settings (what [`build`](Self::build)
    /// and a distributed run start with).
    pub(crate) fn params(&self) -> Result<Params> {
        let force = match &self.force {
            Some(force) if self.gravity_after_force => {
                return Err(Error::InvalidCombination(format!(
                    "softening and G are parameters of gravity, but the force law is {force}"
                )));
            }
            Some(force) => force.clone(),
            None => ForceLaw::gravity(self.g, self.softening)?,
        };
        Params::new(self.dt, force, self.kernel, self.integrator)?
            .with_boundary(self.boundary, self.neighbours)?
            .with_ensemble(self.ensemble)
            .map(|p| p.with_graphs(self.graphs))
    }

    /// Validates everything, checks the host memory the engine needs
    /// ([`Error::HostMemoryExceeded`]), and starts the backend.
    pub fn build(self) -> Result<Simulation> {
        let params = self.params()?;
        Simulation::start(
            self.bodies,
            params,
            self.backend,
            Continued {
                step: self.start_step,
                time: self.start_time,
                md: self.md,
                hermite: self.hermite,
                ids: self.ids,
            },
        )
    }
}

impl Simulation {
    /// Starts configuring a simulation of `bodies` (e.g. from [`crate::ic`],
    /// [`Bodies::from_arrays`] or [`snapshot::load_npy`](crate::snapshot::load_npy)).
    pub fn builder(bodies: Bodies) -> SimulationBuilder {
        let d = Params::default();
        let gravity = Gravity::default();
        SimulationBuilder {
            bodies,
            dt: d.dt_f64(),
            softening: gravity.softening_f64(),
            g: gravity.g_f64(),
            force: None,
            gravity_after_force: false,
            boundary: d.boundary(),
            neighbours: d.neighbours(),
            ensemble: d.ensemble(),
            md: None,
            hermite: None,
            // Chosen from N and the device when built (`Kernel::Auto`).
            kernel: Kernel::default(),
            graphs: d.graphs(),
            integrator: d.integrator(),
            backend: Backend::Auto,
            start_step: 0,
            start_time: 0.0,
            ids: None,
        }
    }
}
