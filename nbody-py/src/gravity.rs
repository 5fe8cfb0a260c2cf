//! `nbody.Simulation`: direct-summation softened gravity.

use std::path::PathBuf;

use nbody_host::glam::DVec3;
use nbody_host::{HermiteSettings, Integrator, Precision, Simulation as Sim};
use numpy::{PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use crate::arrays::bodies_from;
use crate::errors::{invalid, to_py};
use crate::options;
use crate::run::{Run, resume, warn_if_cpu};

/// A direct-summation N-body simulation with softened gravity.
///
/// ``bodies``: an ``(N, 7)`` array, columns ``x y z vx vy vz m`` (float32;
/// float64 and integers are converted, with a ``PrecisionWarning`` if a value
/// changes). ``softening`` (Plummer length), ``dt``, ``G``: as the Rust
/// library's defaults, NVIDIA Warp's N-body example's. ``kernel``: ``"simt"``,
/// ``"tiled"`` or ``"triangle"`` (``block`` threads per block on a GPU);
/// ``integrator``: ``"euler"`` (semi-implicit), ``"leapfrog"`` or
/// ``"hermite"`` (4th-order Hermite with block time steps, collisional
/// runs: ``eta`` (Aarseth's accuracy parameter, default 0.02), ``eta_s``
/// (the starting criterion's, default ``eta / 20``), ``precision``
/// (``"f64"`` or ``"mixed"``, the force's); its state is float64: the
/// bodies taken as float64 exactly, ``bodies`` a float64 array, ``dt`` the
/// synchronisation interval, default 0.125; ``stats()`` its block steps);
/// ``dt`` defaults to 0.01 otherwise; ``backend``: ``"auto"`` (CUDA if built in and present, else the CPU, which
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
    #[pyo3(signature = (bodies, softening = 0.1, dt = None, G = 1.0, kernel = "tiled", integrator = "euler", backend = "auto", block = None, eta = None, eta_s = None, precision = None))]
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
        dt: Option<f64>,
        G: f64,
        kernel: &str,
        integrator: &str,
        backend: &str,
        block: Option<u32>,
        eta: Option<f64>,
        eta_s: Option<f64>,
        precision: Option<&str>,
    ) -> PyResult<PyClassInitializer<Simulation>> {
        let integrator = match options::integrator(py, integrator)? {
            Integrator::Hermite(_) => {
                Integrator::Hermite(hermite_settings(py, eta, eta_s, precision)?)
            }
            fixed => {
                for (name, given) in [
                    ("eta", eta.is_some()),
                    ("eta_s", eta_s.is_some()),
                    ("precision", precision.is_some()),
                ] {
                    if given {
                        return Err(invalid(
                            py,
                            format!(
                                "{name} is a setting of integrator=\"hermite\" (this run integrates with {:?})",
                                fixed.name()
                            ),
                        ));
                    }
                }
                fixed
            }
        };
        let hermite = integrator.hermite().is_some();
        let builder = if hermite {
            let array = py
                .import("nbody._bodies")?
                .getattr("as_bodies64")?
                .call1((bodies, "bodies"))?;
            let array: PyReadonlyArray2<'_, f64> = array.extract()?;
            let n = array.shape()[0];
            let rows = array
                .as_slice()
                .map_err(|e| invalid(py, format!("bodies: {e}")))?;
            let (mut pos, mut vel, mut mass) = (
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
            );
            for r in rows.chunks_exact(7) {
                pos.push(DVec3::new(r[0], r[1], r[2]));
                vel.push(DVec3::new(r[3], r[4], r[5]));
                mass.push(r[6]);
            }
            Sim::builder_f64(&pos, &vel, &mass).map_err(|e| to_py(py, e))?
        } else {
            Sim::builder(bodies_from(py, bodies, "bodies", false)?)
        };
        let asked = options::backend(py, backend)?;
        let builder = builder
            .softening(softening)
            .dt(dt.unwrap_or(if hermite { 0.125 } else { 0.01 }))
            .gravitational_constant(G)
            .kernel(options::kernel(py, kernel, block)?)
            .integrator(integrator)
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

    /// ``"euler"``, ``"leapfrog"`` or ``"hermite"``.
    #[getter]
    fn integrator(slf: PyRef<'_, Self>) -> &'static str {
        slf.as_super().sim.params().integrator().name()
    }

    /// Hermite's accuracy parameter ``eta`` (``None`` for the other integrators).
    #[getter]
    fn eta(slf: PyRef<'_, Self>) -> Option<f64> {
        let h = slf.as_super().sim.params().integrator().hermite();
        h.map(|h| h.eta())
    }

    /// Hermite's starting criterion's ``eta_s`` (``None`` for the other integrators).
    #[getter]
    fn eta_s(slf: PyRef<'_, Self>) -> Option<f64> {
        let h = slf.as_super().sim.params().integrator().hermite();
        h.map(|h| h.eta_s())
    }

    /// Hermite's force precision, ``"f64"`` or ``"mixed"`` (``None`` for the
    /// other integrators).
    #[getter]
    fn precision(slf: PyRef<'_, Self>) -> Option<&'static str> {
        let h = slf.as_super().sim.params().integrator().hermite();
        h.map(|h| h.precision().name())
    }

    /// A Hermite run's work so far: ``block_steps`` (force evaluations of
    /// an active block), ``force_evals`` (bodies evaluated, summed over the
    /// block steps), ``mean_block`` (their ratio, 0 before the first);
    /// ``None`` for the fixed-step integrators.
    fn stats<'py>(slf: PyRef<'_, Self>, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(s) = slf.as_super().sim.hermite_stats() else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("block_steps", s.block_steps)?;
        d.set_item("force_evals", s.force_evals)?;
        d.set_item("mean_block", s.mean_block())?;
        Ok(Some(d))
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

/// Hermite's settings from the keywords: `eta` (default 0.02), `eta_s`
/// (default `eta / 20`), `precision` (default f64), each checked by the
/// library (its error names the value).
fn hermite_settings(
    py: Python<'_>,
    eta: Option<f64>,
    eta_s: Option<f64>,
    precision: Option<&str>,
) -> PyResult<HermiteSettings> {
    let mut settings = match eta {
        Some(eta) => HermiteSettings::new(eta).map_err(|e| to_py(py, e))?,
        None => HermiteSettings::default(),
    };
    if let Some(eta_s) = eta_s {
        settings = settings.with_eta_s(eta_s).map_err(|e| to_py(py, e))?;
    }
    if let Some(name) = precision {
        let p = Precision::from_name(name).ok_or_else(|| {
            invalid(
                py,
                format!("precision = {name:?}: must be \"f64\" or \"mixed\""),
            )
        })?;
        settings = settings.with_precision(p);
    }
    Ok(settings)
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
