//! The Python module `nbody` (its native part, `nbody._nbody`): the
//! `nbody-host` library from numpy.
//!
//! | file | what |
//! | --- | --- |
//! | `run.rs` | `Run`, the base of both simulations: the state as one `(N, 7)` array, stepping in batches with the GIL released and Ctrl-C between batches, checkpoints |
//! | `gravity.rs` | `Simulation`: softened gravity |
//! | `md.rs` | `MD`: short-range molecular dynamics in a periodic box (pair styles, atom types, ensembles); `LennardJones`, its one-type `lj/cut` case |
//! | `md_input.rs` | `MD`'s keywords as the library's types: LAMMPS's words for `PairSpec`, types from 1, ensembles, neighbours, the box |
//! | `arrays.rs` | input rows as `Bodies`, the state array's filling, new arrays of bodies |
//! | `archive.rs` | `Archive`, `Record`, `ArchiveWriter`: the snapshot archive |
//! | `errors.rs` | library errors as the `nbody.Error` hierarchy (defined in `python/nbody/_errors.py`) |
//! | `options.rs` | the names Python passes for backends, kernels, integrators, lists |
//!
//! The Python side (`python/nbody/`) converts input arrays
//! (`_bodies.as_bodies`), defines the exceptions and holds the type stubs.

use nbody_host::ic;
use numpy::PyArray2;
use pyo3::prelude::*;

mod archive;
mod arrays;
mod errors;
mod gravity;
mod md;
mod md_input;
mod options;
mod run;

/// The module `nbody._nbody`; `nbody/__init__.py` re-exports it.
#[pymodule]
fn _nbody(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<run::Run>()?;
    m.add_class::<gravity::Simulation>()?;
    m.add_class::<gravity::Energy>()?;
    m.add_class::<md::MD>()?;
    m.add_class::<md::LennardJones>()?;
    m.add_class::<archive::Archive>()?;
    m.add_class::<archive::Record>()?;
    m.add_class::<archive::ArchiveWriter>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CUDA", cfg!(feature = "cuda"))?;
    m.add("RENDER", cfg!(feature = "render"))?;
    m.add_function(wrap_pyfunction!(cpu_isa, m)?)?;
    m.add_function(wrap_pyfunction!(initial_conditions, m)?)?;
    m.add_function(wrap_pyfunction!(fcc_lattice, m)?)?;
    Ok(())
}

/// `n` bodies of the set-up `name` (`"cube"`, `"plummer"`, `"collision"`,
/// `"disk"`) from `seed`: the library's `ic::Setup::generate`, as an
/// `(N, 7)` float32 array (`nbody.ic` names them).
#[pyfunction]
fn initial_conditions<'py>(
    py: Python<'py>,
    name: &str,
    n: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let setup = ic::Setup::from_name(name).ok_or_else(|| {
        errors::invalid(
            py,
            format!("set-up {name:?}: must be \"cube\", \"plummer\", \"collision\" or \"disk\""),
        )
    })?;
    let bodies = py
        .detach(|| setup.generate(n, seed))
        .map_err(|e| errors::to_py(py, e))?;
    arrays::rows_array(py, &bodies)
}

/// LAMMPS's `lattice fcc` + `velocity create`: `ic::fcc_lattice`, as the
/// `(N, 7)` array and the cubic box's side.
#[pyfunction]
fn fcc_lattice<'py>(
    py: Python<'py>,
    cells: usize,
    density: f64,
    temperature: f64,
    seed: u64,
) -> PyResult<(Bound<'py, PyArray2<f32>>, f64)> {
    let (atoms, boundary) =
        ic::fcc_lattice(cells, density, temperature, seed).map_err(|e| errors::to_py(py, e))?;
    let side = boundary.lengths().map_or(0.0, |l| l[0]);
    Ok((arrays::rows_array(py, &atoms)?, side))
}

/// The instruction set the CPU backend uses on this machine by default
/// (`"avx512"`, `"avx2+fma"`, `"neon"` or `"scalar"`).
#[pyfunction]
fn cpu_isa() -> &'static str {
    nbody_host::Isa::detect().name()
}
