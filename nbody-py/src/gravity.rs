//! `nbody.Simulation`: direct-summation softened gravity.

use std::path::PathBuf;

use nbody_host::Simulation as Sim;
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::errors::to_py;
use crate::options;
use crate::run::{Run, bodies_from, resume, warn_if_cpu};

/// A direct-summation N-body simulation with softened gravity.
///
/// ``bodies``: an ``(N, 7)`` array, columns ``x y z vx vy vz m`` (float32;
/// float64 and integers are converted, with a ``PrecisionWarning`` if a value
/// changes). ``softening`` (Plummer length), ``dt``, ``G``: as the Rust
/// library's defaults, NVIDIA Warp's N-body example's. ``kernel``: ``"simt"``,
/// ``"tiled"`` or ``"triangle"`` (``block`` threads per block on a GPU);
/// ``integrator``: ``"euler"`` (semi-implicit) or ``"leapfrog"``;
/// ``backend``: ``"auto"`` (CUDA if built in and present, else the CPU, which
/// a ``BackendWarning`` says once), ``"cpu"``, ``"cpu:ISA"``, ``"cuda"``,
/// ``"cuda:N"`` or ``"emulator"``. Same inputs, same bits as the Rust API.
#[pyclass(extends = Run, module = "nbody")]
pub(crate) struct Simulation {}

impl Simulation {
    /// `sim` wrapped for Python.
    pub(crate) fn wrap(py: Python<'_>, sim: Sim) -> PyResult<Py<Simulation>> {
        Py::new(
            py,
            PyClassInitializer::from(Run::new(sim)).add_subclass(Simulation {}),
        )
    }
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (bodies, softening = 0.1, dt = 0.01, G = 1.0, kernel = "tiled", integrator = "euler", backend = "auto", block = None))]
    #[allow(
        non_snake_case,
        reason = "G is the gravitational constant's name, as in the issue's API"
    )]
    #[allow(
        clippy::too_many_arguments,
        reason = "the Python constructor's keywords"
    )]
    fn new(
        py: Python<'_>,
        bodies: &Bound<'_, PyAny>,
        softening: f64,
        dt: f64,
        G: f64,
        kernel: &str,
        integrator: &str,
        backend: &str,
        block: Option<u32>,
    ) -> PyResult<PyClassInitializer<Simulation>> {
        let bodies = bodies_from(py, bodies, "bodies", false)?;
        let asked = options::backend(py, backend)?;
        let builder = Sim::builder(bodies)
            .softening(softening)
            .dt(dt)
            .gravitational_constant(G)
            .kernel(options::kernel(py, kernel, block)?)
            .integrator(options::integrator(py, integrator)?)
            .backend(asked);
        let sim = py.detach(|| builder.build()).map_err(|e| to_py(py, e))?;
        warn_if_cpu(py, asked, &sim)?;
        Ok(PyClassInitializer::from(Run::new(sim)).add_subclass(Simulation {}))
    }

    /// Continue the run a checkpoint saved (``save_checkpoint``): same
    /// bodies, step count, time and parameters; bit-identical to a run never
    /// interrupted on the backend it was saved from (CPU: always).
    #[classmethod]
    #[pyo3(signature = (path, backend = "auto"))]
    fn load_checkpoint(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        path: PathBuf,
        backend: &str,
    ) -> PyResult<Py<Simulation>> {
        let sim = resume(py, &path, backend, false)?;
        Simulation::wrap(py, sim)
    }

    /// Kinetic, softened potential and total energy, summed in float64 on
    /// the backend (cached until the next step).
    fn energy(slf: PyRef<'_, Self>, py: Python<'_>) -> PyResult<Energy> {
        let sim = &slf.as_super().sim;
        let energy = py.detach(|| sim.energy()).map_err(|e| to_py(py, e))?;
        Ok(Energy(energy))
    }

    /// Plummer softening length.
    #[getter]
    fn softening(slf: PyRef<'_, Self>) -> f32 {
        slf.as_super()
            .sim
            .params()
            .gravity()
            .unwrap_or_default()
            .softening()
    }

    /// Gravitational constant (float32, as the kernels use it).
    #[getter(G)]
    fn g(slf: PyRef<'_, Self>) -> f32 {
        slf.as_super()
            .sim
            .params()
            .gravity()
            .unwrap_or_default()
            .g()
    }

    /// ``"simt"``, ``"tiled"`` or ``"triangle"``.
    #[getter]
    fn kernel(slf: PyRef<'_, Self>) -> &'static str {
        slf.as_super().sim.params().kernel().name()
    }

    /// Threads per block of the kernel (GPU backends).
    #[getter]
    fn block(slf: PyRef<'_, Self>) -> u32 {
        slf.as_super().sim.params().kernel().block()
    }

    /// ``"euler"`` or ``"leapfrog"``.
    #[getter]
    fn integrator(slf: PyRef<'_, Self>) -> &'static str {
        slf.as_super().sim.params().integrator().name()
    }

    /// A second, independent simulation in the same state on an engine of
    /// its own (continues bit-identically on a deterministic backend).
    fn copy(slf: PyRef<'_, Self>, py: Python<'_>) -> PyResult<Py<Simulation>> {
        let sim = &slf.as_super().sim;
        let copy = py.detach(|| sim.try_clone()).map_err(|e| to_py(py, e))?;
        Simulation::wrap(py, copy)
    }

    fn __repr__(slf: PyRef<'_, Self>) -> String {
        let sim = &slf.as_super().sim;
        let p = sim.params();
        format!(
            "nbody.Simulation(N={}, t={}, steps_done={}, dt={}, softening={}, G={}, kernel={:?}, integrator={:?}, backend={:?})",
            sim.len(),
            sim.time(),
            sim.steps_done(),
            p.dt_f64(),
            p.gravity().unwrap_or_default().softening(),
            p.gravity().unwrap_or_default().g(),
            p.kernel().name(),
            p.integrator().name(),
            sim.backend().to_string()
        )
    }
}

/// Kinetic, potential and total energy (float64 sums).
#[pyclass(frozen, module = "nbody")]
pub(crate) struct Energy(nbody_host::Energy);

#[pymethods]
impl Energy {
    /// ``sum m v^2 / 2``.
    #[getter]
    fn kinetic(&self) -> f64 {
        self.0.kinetic
    }

    /// ``-G sum_{i<j} m_i m_j / sqrt(r_ij^2 + eps^2)``.
    #[getter]
    fn potential(&self) -> f64 {
        self.0.potential
    }

    /// ``kinetic + potential``.
    #[getter]
    fn total(&self) -> f64 {
        self.0.total()
    }

    /// ``|E - E0| / |E0|``, the usual conservation measure.
    fn relative_change_from(&self, e0: &Energy) -> f64 {
        self.0.relative_change_from(&e0.0)
    }

    fn __repr__(&self) -> String {
        format!(
            "nbody.Energy(kinetic={}, potential={}, total={})",
            self.0.kinetic,
            self.0.potential,
            self.0.total()
        )
    }
}
