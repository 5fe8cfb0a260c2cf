//! `nbody.MD`: short-range molecular dynamics in a periodic box (LAMMPS's
//! `units lj`, velocity Verlet): any pair style and atom types (LAMMPS's
//! `pair_style` / `pair_coeff` / `pair_modify` through `PairSpec`), an
//! ensemble (`EnsembleFlags`); and its special case `nbody.LennardJones`
//! (one type, `lj/cut`, NVE), a subclass.

use std::path::PathBuf;

use nbody_host::pair::PairSpec;
use nbody_host::{ForceLaw, Simulation as Sim, Thermo};
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use crate::arrays::bodies_from;
use crate::errors::{err, invalid, to_py};
use crate::md_input::{boundary, build_md, ensemble_from, neighbours_from, types_from, words};
use crate::run::{Run, resume};

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
#[pyclass(extends = MD, module = "nbody")]
pub(crate) struct LennardJones {}

impl LennardJones {
    /// `sim` wrapped for Python.
    pub(crate) fn wrap(py: Python<'_>, sim: Sim) -> PyResult<Py<LennardJones>> {
        Py::new(py, MD::init(sim).add_subclass(LennardJones {}))
    }
}

/// Short-range molecular dynamics in a periodic box (LAMMPS's ``units lj``,
/// velocity Verlet): any pair style, atom types, an ensemble.
///
/// ``bodies``: ``(N, 7)``, columns ``x y z vx vy vz m`` (as ``Simulation``);
/// ``box``: ``L`` (cubic ``[0, L)^3``) or ``(Lx, Ly, Lz)``; ``pair``:
/// LAMMPS's ``pair_style`` arguments, a string (``"lj/cut 2.5"``) or a
/// tuple (``("morse", 2.5)``): ``lj/cut`` (or ``lj``), ``lj/smooth/linear``,
/// ``morse``, ``soft``, ``born``, ``buck``, ``yukawa KAPPA [CUTOFF]``,
/// ``table linear N``, ``wca``; ``pair_coeff``: a list of LAMMPS's
/// ``pair_coeff`` lines, each a tuple ``(I, J, coefficients..., [cutoff])``
/// or a string, type numbers from 1 as in LAMMPS (``*`` ranges too);
/// ``pair_modify``: ``"shift yes"``, ``"mix arithmetic"`` (or a tuple of
/// words); ``types``: each atom's type, an int array numbered from 1 as in
/// LAMMPS (default: all 1; the run has as many types as the highest named
/// here or in ``pair_coeff``); ``ensemble``: ``"nve"`` (default),
/// ``"nvt"`` (``temp_target``, ``tdamp``), ``"langevin"`` (``temp_target``,
/// ``tdamp`` as the damping time, ``seed``), ``"rescale"``
/// (``temp_target``), ``"npt"`` (``temp_target``, ``tdamp``,
/// ``press_target``, ``pdamp``), LAMMPS's fixes with chains of 3; or an
/// object of ``nbody.ensembles`` (``nbody.NVT(temp, tdamp, chain=3)``,
/// ``Langevin``, ``Rescale``, ``NPT``, ``NVE``: the Rust variants' fields);
/// ``skin``, ``dt``, ``rebuild_every``, ``lists``, ``neighbours``,
/// ``backend``: as ``LennardJones``'s. Every bad value (unknown style,
/// type, missing coefficient, ensemble setting) raises
/// ``InvalidInputError`` (a ``ValueError``) with the library's message.
#[pyclass(extends = Run, subclass, module = "nbody")]
pub(crate) struct MD {}

impl MD {
    /// The initializer of an `MD` around `sim`.
    fn init(sim: Sim) -> PyClassInitializer<MD> {
        PyClassInitializer::from(Run::new(sim)).add_subclass(MD {})
    }

    /// `sim` wrapped for Python.
    pub(crate) fn wrap(py: Python<'_>, sim: Sim) -> PyResult<Py<MD>> {
        Py::new(py, MD::init(sim))
    }
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

/// The thermo dict: `step temp pe ke etotal press` (+ `atoms`, `virial`,
/// and the ensemble's `coupling`, `conserved`, `volume`, `density`).
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
    d.set_item("coupling", f(t.coupling))?;
    d.set_item("conserved", f(t.conserved))?;
    d.set_item("volume", t.volume.map(f))?;
    d.set_item("density", t.density.map(f))?;
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
        let neighbours = neighbours_from(py, neighbours, skin, rebuild_every, lists)?;
        let force = ForceLaw::lennard_jones(epsilon, sigma, cutoff, shift).map_err(err)?;
        let builder = Sim::builder(bodies).force(force);
        let sim = build_md(py, builder, boundary, neighbours, dt, backend)?;
        Ok(MD::init(sim).add_subclass(LennardJones {}))
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

    fn __repr__(slf: PyRef<'_, Self>) -> String {
        let sim = &slf.as_super().as_super().sim;
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

#[pymethods]
impl MD {
    #[new]
    #[pyo3(signature = (bodies, r#box, pair, pair_coeff = None, pair_modify = None, types = None, skin = 0.3, dt = 0.005, ensemble = None, temp_target = None, tdamp = None, press_target = None, pdamp = None, seed = None, rebuild_every = 0, lists = "auto", neighbours = "cells", backend = "auto"))]
    #[allow(
        clippy::too_many_arguments,
        reason = "the Python constructor's keywords"
    )]
    fn new(
        py: Python<'_>,
        bodies: &Bound<'_, PyAny>,
        r#box: &Bound<'_, PyAny>,
        pair: &Bound<'_, PyAny>,
        pair_coeff: Option<&Bound<'_, PyAny>>,
        pair_modify: Option<&Bound<'_, PyAny>>,
        types: Option<&Bound<'_, PyAny>>,
        skin: f64,
        dt: f64,
        ensemble: Option<&Bound<'_, PyAny>>,
        temp_target: Option<f64>,
        tdamp: Option<f64>,
        press_target: Option<f64>,
        pdamp: Option<f64>,
        seed: Option<u64>,
        rebuild_every: u32,
        lists: &str,
        neighbours: &str,
        backend: &str,
    ) -> PyResult<PyClassInitializer<MD>> {
        let bodies = bodies_from(py, bodies, "bodies", false)?;
        let boundary = boundary(py, r#box)?;
        let mut spec =
            PairSpec::parse_lammps(&words(py, "pair", pair)?).map_err(|e| to_py(py, e))?;
        if let Some(lines) = pair_coeff {
            let lines: Vec<Bound<'_, PyAny>> = if lines.extract::<String>().is_ok() {
                vec![lines.clone()]
            } else {
                lines
                    .try_iter()
                    .map_err(|_| {
                        invalid(
                            py,
                            "pair_coeff: must be a list of pair_coeff lines (tuples or strings)"
                                .into(),
                        )
                    })?
                    .collect::<PyResult<_>>()?
            };
            for line in &lines {
                spec.pair_coeff(&words(py, "pair_coeff", line)?)
                    .map_err(|e| to_py(py, e))?;
            }
        }
        if let Some(modify) = pair_modify {
            spec.pair_modify(&words(py, "pair_modify", modify)?)
                .map_err(|e| to_py(py, e))?;
        }
        let types = match types {
            Some(t) => types_from(py, t)?,
            None => Vec::new(),
        };
        let count = types
            .iter()
            .map(|t| t + 1)
            .max()
            .unwrap_or(1)
            .max(spec.highest_type())
            .max(1);
        let potential = spec.build(count).map_err(|e| to_py(py, e))?;
        let nve = pyo3::types::PyString::new(py, "nve").into_any();
        let ensemble = ensemble_from(
            py,
            ensemble.unwrap_or(&nve),
            temp_target,
            tdamp,
            press_target,
            pdamp,
            seed,
        )?;
        let neighbours = neighbours_from(py, neighbours, skin, rebuild_every, lists)?;
        let builder = Sim::builder(bodies)
            .force(ForceLaw::Pair(potential))
            .types(types)
            .ensemble(ensemble);
        let sim = build_md(py, builder, boundary, neighbours, dt, backend)?;
        Ok(MD::init(sim))
    }

    /// Continue a short-range run from its checkpoint (pair potential, atom
    /// types, ensemble state, image counters and lists included:
    /// bit-identical on the CPU).
    #[classmethod]
    #[pyo3(signature = (path, backend = "auto"))]
    fn load_checkpoint(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        path: PathBuf,
        backend: &str,
    ) -> PyResult<Py<MD>> {
        let sim = resume(py, &path, backend, true)?;
        MD::wrap(py, sim)
    }

    /// Each atom's type, ``(N,)`` int32 (a new array), numbered from 1 as
    /// in LAMMPS.
    #[getter]
    fn types<'py>(slf: PyRef<'_, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i32>>> {
        let types = slf.as_super().sim.types().map_err(err)?;
        let lammps: Vec<i32> = types.iter().map(|&t| t as i32 + 1).collect();
        Ok(PyArray1::from_vec(py, lammps))
    }

    /// The ensemble's name: ``"nve"``, ``"nvt"``, ``"langevin"``,
    /// ``"rescale"`` or ``"npt"``.
    #[getter]
    fn ensemble(slf: PyRef<'_, Self>) -> &'static str {
        slf.as_super().sim.params().ensemble().name()
    }

    /// The pair potential in words (style, types, coefficients).
    #[getter]
    fn pair(slf: PyRef<'_, Self>) -> String {
        slf.as_super().sim.params().force().to_string()
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
            "nbody.MD(N={}, {}, {}, ensemble={:?}, t={}, steps_done={}, dt={}, backend={:?})",
            sim.len(),
            p.boundary(),
            p.force(),
            p.ensemble().name(),
            sim.time(),
            sim.steps_done(),
            p.dt_f64(),
            sim.backend().to_string()
        )
    }
}
