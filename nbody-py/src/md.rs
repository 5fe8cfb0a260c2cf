//! `nbody.LennardJones`: short-range molecular dynamics in a periodic box
//! (LAMMPS's `units lj`, `pair_style lj/cut`, velocity Verlet).

use std::path::PathBuf;

use nbody_host::md::{CellList, Rebuild};
use nbody_host::{Boundary, ForceLaw, Integrator, Neighbours, Simulation as Sim, Thermo};
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use crate::errors::{err, invalid, to_py};
use crate::options;
use crate::run::{Run, bodies_from, resume};

/// Lennard-Jones atoms in a periodic box: LAMMPS's ``in.lj`` melt and its kin.
///
/// ``bodies``: ``(N, 7)``, columns ``x y z vx vy vz m`` (as ``Simulation``);
/// ``box``: the side ``L`` of the cubic box ``[0, L)^3``, or ``(Lx, Ly, Lz)``;
/// ``cutoff`` ``r_c``, ``skin``, ``epsilon``, ``sigma`` in LJ units;
/// ``shift``: the potential shifted to 0 at ``r_c`` (LAMMPS ``pair_modify
/// shift yes``); ``rebuild_every``: rebuild the neighbour lists every k steps
/// (``in.lj``: 20), or 0 (default): whenever an atom has moved half the skin;
/// ``lists``: ``"auto"``, ``"half"``, ``"full"``; ``neighbours``:
/// ``"cells"`` (cell and Verlet lists, as ``lj_melt``), ``"all-pairs"``
/// (O(N^2), any box), ``"auto"`` (cells where ``r_c + skin <= L/2``, with
/// the library's default skin and lists); ``backend``: as
/// ``Simulation``'s (``"auto"`` runs Lennard-Jones on the CPU).
#[pyclass(extends = Run, module = "nbody")]
pub(crate) struct LennardJones {}

impl LennardJones {
    /// `sim` wrapped for Python.
    pub(crate) fn wrap(py: Python<'_>, sim: Sim) -> PyResult<Py<LennardJones>> {
        Py::new(
            py,
            PyClassInitializer::from(Run::new(sim)).add_subclass(LennardJones {}),
        )
    }
}

/// `box=` as the library's periodic box.
fn boundary(py: Python<'_>, b: &Bound<'_, PyAny>) -> PyResult<Boundary> {
    if let Ok(l) = b.extract::<f64>() {
        return Ok(Boundary::cubic(l));
    }
    if let Ok(lengths) = b.extract::<[f64; 3]>() {
        return Ok(Boundary::Periodic { lengths });
    }
    Err(invalid(
        py,
        format!(
            "box = {}: must be the side L of a cubic box or three lengths (Lx, Ly, Lz)",
            b.repr()?
        ),
    ))
}

/// `x` as `lj_melt` and LAMMPS print it: ten significant digits (`%.10g`),
/// read back. `format!("{x:.9e}")` rounds to those digits exactly as C's
/// printf does, so `float(printed) == thermo()[key]`.
fn printed(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.9e}").parse().unwrap_or(x)
}

/// The thermo dict: `step temp pe ke etotal press` (+ `atoms`, `virial`).
fn thermo_dict<'py>(py: Python<'py>, t: &Thermo, exact: bool) -> PyResult<Bound<'py, PyDict>> {
    let f = |x: f64| if exact { x } else { printed(x) };
    let d = PyDict::new(py);
    d.set_item("step", t.step)?;
    d.set_item("temp", f(t.temperature))?;
    d.set_item("pe", f(t.potential))?;
    d.set_item("ke", f(t.kinetic))?;
    d.set_item("etotal", f(t.total))?;
    d.set_item("press", t.pressure.map(f))?;
    d.set_item("atoms", t.atoms)?;
    d.set_item("virial", f(t.virial))?;
    Ok(d)
}

#[pymethods]
impl LennardJones {
    #[new]
    #[pyo3(signature = (bodies, r#box, cutoff = 2.5, skin = 0.3, dt = 0.005, shift = false, epsilon = 1.0, sigma = 1.0, rebuild_every = 0, lists = "auto", neighbours = "cells", backend = "auto"))]
    #[allow(
        clippy::too_many_arguments,
        reason = "the Python constructor's keywords"
    )]
    fn new(
        py: Python<'_>,
        bodies: &Bound<'_, PyAny>,
        r#box: &Bound<'_, PyAny>,
        cutoff: f64,
        skin: f64,
        dt: f64,
        shift: bool,
        epsilon: f64,
        sigma: f64,
        rebuild_every: u32,
        lists: &str,
        neighbours: &str,
        backend: &str,
    ) -> PyResult<PyClassInitializer<LennardJones>> {
        let bodies = bodies_from(py, bodies, "bodies", false)?;
        let boundary = boundary(py, r#box)?;
        let rebuild = match rebuild_every {
            0 => Rebuild::Auto,
            k => Rebuild::Every(k),
        };
        let cells = Neighbours::Cells(CellList {
            rebuild,
            lists: options::lists(py, lists)?,
            ..CellList::new(skin)
        });
        let neighbours = match neighbours {
            "cells" => cells,
            "all-pairs" => Neighbours::AllPairs,
            "auto" => Neighbours::Auto,
            _ => {
                return Err(invalid(
                    py,
                    format!(
                        "neighbours = {neighbours:?}: must be \"cells\", \"all-pairs\" or \"auto\""
                    ),
                ));
            }
        };
        let force = ForceLaw::lennard_jones(epsilon, sigma, cutoff, shift).map_err(err)?;
        let builder = Sim::builder(bodies)
            .force(force)
            .boundary(boundary)
            .neighbours(neighbours)
            .integrator(Integrator::VELOCITY_VERLET)
            .dt(dt)
            .backend(options::backend(py, backend)?);
        let sim = py.detach(|| builder.build()).map_err(|e| to_py(py, e))?;
        Ok(PyClassInitializer::from(Run::new(sim)).add_subclass(LennardJones {}))
    }

    /// Continue a Lennard-Jones run from its checkpoint (image counters and
    /// lists included: bit-identical on the CPU).
    #[classmethod]
    #[pyo3(signature = (path, backend = "auto"))]
    fn load_checkpoint(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        path: PathBuf,
        backend: &str,
    ) -> PyResult<Py<LennardJones>> {
        let sim = resume(py, &path, backend, true)?;
        LennardJones::wrap(py, sim)
    }

    /// LAMMPS's thermo output of the current state (``thermo_style custom
    /// step temp pe ke etotal press``, ``units lj``): a dict with ``"step"``,
    /// ``"temp"`` (3N - 3 degrees of freedom), ``"pe"``, ``"ke"``,
    /// ``"etotal"`` (per atom, ``thermo_modify norm yes``), ``"press"`` (from
    /// the virial), and ``"atoms"``, ``"virial"``.
    ///
    /// The floats are the values LAMMPS's log and ``lj_melt`` print, ten
    /// significant digits (``%.10g``), so ``thermo()["pe"]`` equals
    /// ``lj_melt``'s ``pe0`` as a float and as text; ``exact=True`` gives the
    /// library's float64 sums unrounded.
    #[pyo3(signature = (exact = false))]
    fn thermo<'py>(
        slf: PyRef<'_, Self>,
        py: Python<'py>,
        exact: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let sim = &slf.as_super().sim;
        let t = py.detach(|| sim.thermo()).map_err(|e| to_py(py, e))?;
        thermo_dict(py, &t, exact)
    }

    /// The box lengths ``(Lx, Ly, Lz)`` as given, float64 (the library wraps
    /// positions and computes the volume with them rounded to float32).
    #[getter(r#box)]
    fn box_lengths<'py>(slf: PyRef<'_, Self>, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let lengths = slf
            .as_super()
            .sim
            .params()
            .boundary()
            .lengths()
            .unwrap_or([0.0; 3]);
        PyArray1::from_slice(py, &lengths)
    }

    /// Image counters, ``(N, 3)`` int32 (a new array): the unwrapped position
    /// is ``positions + images * box``; positions are wrapped into the box
    /// after every drift.
    #[getter]
    fn images<'py>(slf: PyRef<'_, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i32>>> {
        let images = slf
            .as_super()
            .sim
            .images()
            .map_err(err)?
            .unwrap_or_default();
        let flat: Vec<i32> = images.iter().flatten().copied().collect();
        PyArray1::from_vec(py, flat).reshape([images.len(), 3])
    }

    /// Neighbour-list builds and the time split (seconds) as LAMMPS reports
    /// them: ``builds``, ``dangerous_builds``, ``neighbours_per_atom``,
    /// ``cells``, ``pair_seconds``, ``neighbour_seconds``,
    /// ``integrate_seconds``, ``thermo_seconds``; ``None`` on GPU backends.
    fn stats<'py>(slf: PyRef<'_, Self>, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(s) = slf.as_super().sim.md_stats() else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("builds", s.builds)?;
        d.set_item("dangerous_builds", s.dangerous_builds)?;
        d.set_item("neighbours_per_atom", s.neighbours_per_atom)?;
        d.set_item("cells", s.cells)?;
        d.set_item("pair_seconds", s.pair_seconds)?;
        d.set_item("neighbour_seconds", s.neighbour_seconds)?;
        d.set_item("integrate_seconds", s.integrate_seconds)?;
        d.set_item("thermo_seconds", s.thermo_seconds)?;
        Ok(Some(d))
    }

    fn __repr__(slf: PyRef<'_, Self>) -> String {
        let sim = &slf.as_super().sim;
        let p = sim.params();
        format!(
            "nbody.LennardJones(N={}, {}, {}, t={}, steps_done={}, dt={}, backend={:?})",
            sim.len(),
            p.boundary(),
            p.force(),
            sim.time(),
            sim.steps_done(),
            p.dt_f64(),
            sim.backend().to_string()
        )
    }
}
