//! The keywords of `nbody.MD` and `nbody.LennardJones` as the library's
//! types: LAMMPS's commands as words (for `PairSpec`), atom types from
//! LAMMPS's numbering, the ensemble (by name through `EnsembleFlags`, or an
//! `nbody.ensembles` object), the neighbours, the box; and the build.

use nbody_host::md::{CellList, Ensemble, EnsembleFlags, Rebuild};
use nbody_host::{Boundary, Integrator, Neighbours, Simulation as Sim, SimulationBuilder};
use pyo3::prelude::*;

use crate::errors::{invalid, to_py};
use crate::options;

/// The words of a LAMMPS command given as a string (split at white space)
/// or a sequence (each item as `str()` writes it: Python's shortest
/// round-trip form of a float, so `2.5` reaches the parser as `"2.5"`).
pub(crate) fn words(py: Python<'_>, what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(text) = obj.extract::<String>() {
        return Ok(text.split_whitespace().map(str::to_owned).collect());
    }
    let items = obj.try_iter().map_err(|_| {
        invalid(
            py,
            format!(
                "{what} = {}: must be a string or a tuple of words and numbers",
                obj.repr().map(|r| r.to_string()).unwrap_or_default()
            ),
        )
    })?;
    items
        .map(|item| Ok(item?.str()?.to_string()))
        .collect::<PyResult<Vec<String>>>()
}

/// `types=` (LAMMPS's numbering, from 1) as the library's (from 0), each
/// checked: an integer >= 1, the first bad one named with its atom.
pub(crate) fn types_from(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    let array = py
        .import("numpy")?
        .getattr("asarray")?
        .call1((obj,))?
        .call_method1("ravel", ())?
        .call_method0("tolist")?;
    let values: Vec<Bound<'_, PyAny>> = array.extract()?;
    values
        .iter()
        .enumerate()
        .map(|(i, v)| match v.extract::<i64>() {
            Ok(t) if t >= 1 && t <= i64::from(nbody_host::pair::MAX_TYPES) => Ok((t - 1) as u32),
            _ => Err(invalid(
                py,
                format!(
                    "types[{i}] = {}: atom types are integers from 1 to {} (LAMMPS's numbering)",
                    v.repr()?,
                    nbody_host::pair::MAX_TYPES
                ),
            )),
        })
        .collect()
}

/// The ensemble of `ensemble=`: a name with the keywords (`EnsembleFlags`,
/// its messages in the keywords' spelling), or one of `nbody.ensembles`'
/// objects (the Rust variants' fields; checked when the run is built).
pub(crate) fn ensemble_from(
    py: Python<'_>,
    ensemble: &Bound<'_, PyAny>,
    temp_target: Option<f64>,
    tdamp: Option<f64>,
    press_target: Option<f64>,
    pdamp: Option<f64>,
    seed: Option<u64>,
) -> PyResult<Ensemble> {
    let Ok(name) = ensemble.extract::<String>() else {
        return ensemble_object(
            py,
            ensemble,
            [temp_target, tdamp, press_target, pdamp],
            seed,
        );
    };
    let flags = EnsembleFlags {
        ensemble: Some(name),
        temp_target,
        tdamp,
        press_target,
        pdamp,
        seed: seed.unwrap_or(0),
    };
    flags.ensemble().map_err(|e| {
        let message = e
            .to_string()
            .replace("--ensemble", "ensemble =")
            .replace("--temp-target", "temp_target")
            .replace("--tdamp", "tdamp")
            .replace("--press-target", "press_target")
            .replace("--pdamp", "pdamp");
        invalid(py, message)
    })
}

/// An `nbody.ensembles` object as the library's `Ensemble`; the keywords
/// of the named form must not be given with it.
pub(crate) fn ensemble_object(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    keywords: [Option<f64>; 4],
    seed: Option<u64>,
) -> PyResult<Ensemble> {
    if keywords.iter().any(Option::is_some) || seed.is_some() {
        return Err(invalid(
            py,
            "temp_target, tdamp, press_target, pdamp and seed go with ensemble given by name; \
             an ensemble object (nbody.NVT(...), ...) carries its own values"
                .into(),
        ));
    }
    let module = py.import("nbody.ensembles")?;
    let is = |class: &str| -> PyResult<bool> { obj.is_instance(&module.getattr(class)?) };
    let f = |field: &str| -> PyResult<f64> { obj.getattr(field)?.extract() };
    let u = |field: &str| -> PyResult<u32> { obj.getattr(field)?.extract() };
    Ok(if is("NVE")? {
        Ensemble::Nve
    } else if is("NVT")? {
        Ensemble::Nvt {
            temp: f("temp")?,
            tdamp: f("tdamp")?,
            chain: u("chain")?,
        }
    } else if is("Langevin")? {
        Ensemble::Langevin {
            temp: f("temp")?,
            damp: f("damp")?,
            seed: obj.getattr("seed")?.extract()?,
        }
    } else if is("Rescale")? {
        let t_start = f("t_start")?;
        Ensemble::Rescale {
            every: u("every")?,
            t_start,
            t_stop: obj
                .getattr("t_stop")?
                .extract::<Option<f64>>()?
                .unwrap_or(t_start),
            ramp: obj.getattr("ramp")?.extract()?,
            window: f("window")?,
            fraction: f("fraction")?,
        }
    } else if is("NPT")? {
        Ensemble::Npt {
            temp: f("temp")?,
            tdamp: f("tdamp")?,
            chain: u("chain")?,
            press: f("press")?,
            pdamp: f("pdamp")?,
            pchain: u("pchain")?,
        }
    } else {
        return Err(invalid(
            py,
            format!(
                "ensemble = {}: must be \"nve\", \"nvt\", \"langevin\", \"rescale\", \"npt\" or an \
                 nbody.NVE / NVT / Langevin / Rescale / NPT object",
                obj.repr()?
            ),
        ));
    })
}

/// The neighbour enumeration of the keywords.
pub(crate) fn neighbours_from(
    py: Python<'_>,
    neighbours: &str,
    skin: f64,
    rebuild_every: u32,
    lists: &str,
) -> PyResult<Neighbours> {
    let rebuild = match rebuild_every {
        0 => Rebuild::Auto,
        k => Rebuild::Every(k),
    };
    let cells = Neighbours::Cells(CellList {
        rebuild,
        lists: options::lists(py, lists)?,
        ..CellList::new(skin)
    });
    Ok(match neighbours {
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
    })
}

/// Builds a short-range run: `builder` (bodies, force, types set) with the
/// box, the neighbours, velocity Verlet, `dt` and the backend.
pub(crate) fn build_md(
    py: Python<'_>,
    builder: SimulationBuilder,
    boundary: Boundary,
    neighbours: Neighbours,
    dt: f64,
    backend: &str,
) -> PyResult<Sim> {
    let builder = builder
        .boundary(boundary)
        .neighbours(neighbours)
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(dt)
        .backend(options::backend(py, backend)?);
    py.detach(|| builder.build()).map_err(|e| to_py(py, e))
}

/// `box=` as the library's periodic box.
pub(crate) fn boundary(py: Python<'_>, b: &Bound<'_, PyAny>) -> PyResult<Boundary> {
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
