//! Arrays between numpy and the library: input rows as `Bodies` (float32,
//! through `nbody._bodies.as_bodies`), the state array's filling, bodies
//! and rows as new arrays.

use nbody_host::glam::Vec3;
use nbody_host::{Bodies, Body};
use numpy::{Element, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::errors::invalid;

/// The float64 dtype.
pub(crate) fn f64_dtype(py: Python<'_>) -> Bound<'_, numpy::PyArrayDescr> {
    f64::get_dtype(py)
}

/// Writes `rows` into the state array `buffer`, row by row.
pub(crate) fn fill<T: Element + Copy>(
    buffer: &Bound<'_, PyArray2<T>>,
    rows: impl Iterator<Item = [T; 7]>,
) {
    let out = buffer.data();
    let n = buffer.shape()[0];
    for (i, row) in rows.take(n).enumerate() {
        for (j, x) in row.into_iter().enumerate() {
            // SAFETY: `buffer` is the C-contiguous (n, 7) array `Run::state`
            // made (its length checked by `moved` after every change of n,
            // and `take(n)` bounds i), so 7 i + j < 7 n is in bounds; it is
            // ours and read-only to Python, no Rust reference to its data
            // exists, and we hold the GIL (numpy code that reads it with the
            // GIL released in another thread sees the update as it would an
            // in-place numpy operation).
            unsafe { out.add(7 * i + j).write(x) };
        }
    }
}

/// `obj` as bodies: an `(N, 7)` array-like (a `(7,)` row if `row` is
/// allowed), converted by `nbody._bodies.as_bodies` (dtype checks and
/// warnings) and validated by the library where it is used.
pub(crate) fn bodies_from(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    what: &str,
    row: bool,
) -> PyResult<Bodies> {
    let array = py
        .import("nbody._bodies")?
        .getattr("as_bodies")?
        .call1((obj, what, row))?;
    let array: PyReadonlyArray2<'_, f32> = array.extract()?;
    let rows = array
        .as_slice()
        .map_err(|e| invalid(py, format!("{what}: {e}")))?;
    let mut bodies = Bodies::default();
    for r in rows.chunks_exact(7) {
        bodies.positions.push(Vec3::new(r[0], r[1], r[2]));
        bodies.velocities.push(Vec3::new(r[3], r[4], r[5]));
        bodies.masses.push(r[6]);
    }
    Ok(bodies)
}

/// `bodies` as a new `(N, 7)` float32 array.
pub(crate) fn rows_array<'py>(py: Python<'py>, b: &Bodies) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let mut flat = Vec::with_capacity(7 * b.len());
    for ((p, v), m) in b.positions.iter().zip(&b.velocities).zip(&b.masses) {
        flat.extend_from_slice(&[p.x, p.y, p.z, v.x, v.y, v.z, *m]);
    }
    PyArray1::from_vec(py, flat).reshape([b.len(), 7])
}

/// A body as a `(7,)` float32 array.
pub(crate) fn row<'py>(py: Python<'py>, b: &Body) -> Bound<'py, PyArray1<f32>> {
    let (p, v) = (b.position, b.velocity);
    PyArray1::from_slice(py, &[p.x, p.y, p.z, v.x, v.y, v.z, b.mass])
}
