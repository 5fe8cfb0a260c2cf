//! The snapshot archive (REBOUND's SimulationArchive): `Archive` reads it,
//! records as arrays, by index, step or time; `ArchiveWriter` appends.

use std::path::PathBuf;

use nbody_host::snapshot::{self, ArchiveWriter as Writer, Snapshot};
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;

use crate::arrays::rows_array;
use crate::errors::{err, invalid, raise, to_py};
use crate::options;
use crate::run::{Run, is_short_range};

/// An archive opened for reading (``nbody_tiled --archive``, ``lj_melt
/// --archive``, ``ArchiveWriter``): ``len(a)``, ``a[i]`` (negative from the
/// end), iteration, ``a.steps``, ``a.times``, ``a.at_step(s)``,
/// ``a.at_time(t)``. Each record is read, and its CRC32 checked, when asked
/// for; a last record cut short by a killed run is left out.
#[pyclass(frozen, module = "nbody")]
pub(crate) struct Archive {
    archive: snapshot::Archive,
    path: PathBuf,
}

impl Archive {
    fn record(&self, py: Python<'_>, index: usize) -> PyResult<Record> {
        let archive = &self.archive;
        let snapshot = py.detach(|| archive.get(index)).map_err(|e| to_py(py, e))?;
        Record::new(py, snapshot)
    }
}

#[pymethods]
impl Archive {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Archive> {
        let archive = py
            .detach(|| snapshot::Archive::open(&path))
            .map_err(|e| to_py(py, e))?;
        Ok(Archive { archive, path })
    }

    fn __len__(&self) -> usize {
        self.archive.len()
    }

    fn __getitem__(&self, py: Python<'_>, index: i64) -> PyResult<Record> {
        let n = self.archive.len();
        let at = if index < 0 { index + n as i64 } else { index };
        match usize::try_from(at) {
            Ok(at) if at < n => self.record(py, at),
            _ => Err(raise(
                py,
                "OutOfRangeError",
                (format!(
                    "{}: no record {index}: the archive has {n}",
                    self.path.display()
                ),),
            )),
        }
    }

    /// Each record's step, ``(len,)`` uint64 (from the headers; nothing else is read).
    #[getter]
    fn steps<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        let steps: Vec<u64> = self.archive.records().iter().map(|r| r.step).collect();
        PyArray1::from_vec(py, steps)
    }

    /// Each record's time, ``(len,)`` float64.
    #[getter]
    fn times<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let times: Vec<f64> = self.archive.records().iter().map(|r| r.time).collect();
        PyArray1::from_vec(py, times)
    }

    /// The record made at step ``step`` exactly; ``InvalidInputError`` if none was.
    fn at_step(&self, py: Python<'_>, step: u64) -> PyResult<Record> {
        let records = self.archive.records();
        // Steps increase along the file.
        let index = records.partition_point(|r| r.step < step);
        match records.get(index) {
            Some(r) if r.step == step => self.record(py, index),
            _ => Err(invalid(
                py,
                format!(
                    "{}: no record at step {step}: the archive's steps run {}",
                    self.path.display(),
                    match (records.first(), records.last()) {
                        (Some(a), Some(b)) =>
                            format!("from {} to {} ({} records)", a.step, b.step, records.len()),
                        _ => "nowhere (it is empty)".into(),
                    }
                ),
            )),
        }
    }

    /// The last record at or before time ``t`` (REBOUND's lookup; continue
    /// from it with ``record.simulation()`` and ``integrate_to(t)`` to land on ``t``).
    fn at_time(&self, py: Python<'_>, t: f64) -> PyResult<Record> {
        let archive = &self.archive;
        let snapshot = py.detach(|| archive.at_time(t)).map_err(|e| to_py(py, e))?;
        Record::new(py, snapshot)
    }

    /// The index of the last record at or before time ``t``, or ``None``.
    fn index_at_time(&self, t: f64) -> Option<usize> {
        self.archive.index_at_time(t)
    }

    /// Bytes after the last complete record (a record cut short; 0 normally).
    #[getter]
    fn incomplete_tail_bytes(&self) -> u64 {
        self.archive.incomplete_tail_bytes()
    }

    fn __repr__(&self) -> String {
        format!(
            "nbody.Archive({:?}, records={})",
            self.path.display().to_string(),
            self.archive.len()
        )
    }
}

/// One archive record: ``step``, ``time``, ``bodies`` (``(N, 7)`` float32,
/// exact bits), the parameters it was made with (``dt``, ``force``,
/// ``kernel``, ``integrator``, ``box``), ``images`` (short-range runs), and
/// ``simulation()`` to continue the run from it.
#[pyclass(frozen, module = "nbody")]
pub(crate) struct Record {
    snapshot: Snapshot,
    bodies: Py<PyArray2<f32>>,
}

impl Record {
    fn new(py: Python<'_>, snapshot: Snapshot) -> PyResult<Record> {
        let bodies = rows_array(py, &snapshot.state.bodies)?.unbind();
        Ok(Record { snapshot, bodies })
    }
}

#[pymethods]
impl Record {
    /// Steps taken when the record was made.
    #[getter]
    fn step(&self) -> u64 {
        self.snapshot.state.step
    }

    /// Simulated time of the record.
    #[getter]
    fn time(&self) -> f64 {
        self.snapshot.state.time
    }

    /// The bodies, ``(N, 7)`` float32, ``x y z vx vy vz m`` (the record's own array).
    #[getter]
    fn bodies(&self, py: Python<'_>) -> Py<PyArray2<f32>> {
        self.bodies.clone_ref(py)
    }

    /// The time step of the run.
    #[getter]
    fn dt(&self) -> f64 {
        self.snapshot.params.dt_f64()
    }

    /// The force law in words, e.g. ``"gravity (G = 1, eps = 0.1)"``.
    #[getter]
    fn force(&self) -> String {
        self.snapshot.params.force().to_string()
    }

    /// ``"simt"``, ``"tiled"`` or ``"triangle"`` (gravity).
    #[getter]
    fn kernel(&self) -> &'static str {
        self.snapshot.params.kernel().name()
    }

    /// ``"euler"`` or ``"leapfrog"``.
    #[getter]
    fn integrator(&self) -> &'static str {
        self.snapshot.params.integrator().name()
    }

    /// The periodic box lengths, or ``None`` in open space.
    #[getter(r#box)]
    fn box_lengths(&self) -> Option<(f64, f64, f64)> {
        self.snapshot
            .params
            .boundary()
            .lengths()
            .map(|[x, y, z]| (x, y, z))
    }

    /// Image counters ``(N, 3)`` int32 of a run in a box, else ``None``.
    #[getter]
    fn images<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray2<i32>>>> {
        let Some(md) = &self.snapshot.md else {
            return Ok(None);
        };
        let flat: Vec<i32> = md.images.iter().flatten().copied().collect();
        Ok(Some(
            PyArray1::from_vec(py, flat).reshape([md.images.len(), 3])?,
        ))
    }

    /// Continue the run from this record: an ``nbody.Simulation`` (gravity),
    /// ``nbody.LennardJones`` (one type of ``lj/cut``) or ``nbody.MD`` (the
    /// other pair laws), at this step and time, bit-identical to the
    /// run that wrote it on the same (deterministic) backend.
    #[pyo3(signature = (backend = "auto"))]
    fn simulation(&self, py: Python<'_>, backend: &str) -> PyResult<Py<PyAny>> {
        let asked = options::backend(py, backend)?;
        let builder = self.snapshot.clone().builder().backend(asked);
        let sim = py.detach(|| builder.build()).map_err(|e| to_py(py, e))?;
        if !is_short_range(sim.params().force()) {
            crate::run::warn_if_cpu(py, asked, &sim)?;
        }
        wrap_any(py, sim)
    }

    fn __repr__(&self) -> String {
        format!(
            "nbody.Record(step={}, time={}, N={}, {})",
            self.snapshot.state.step,
            self.snapshot.state.time,
            self.snapshot.state.bodies.len(),
            self.snapshot.params.force()
        )
    }
}

/// Appends snapshots of a running simulation to an archive, one synced
/// record per ``append(sim)``.
///
/// ``ArchiveWriter(path)`` creates the file (an existing one is replaced
/// only with ``overwrite=True``); ``continue_at=step`` continues an
/// existing archive after a resume from a checkpoint at ``step``, cutting
/// the records after it.
#[pyclass(module = "nbody")]
pub(crate) struct ArchiveWriter {
    writer: Writer,
}

#[pymethods]
impl ArchiveWriter {
    #[new]
    #[pyo3(signature = (path, *, continue_at = None, overwrite = false))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        continue_at: Option<u64>,
        overwrite: bool,
    ) -> PyResult<ArchiveWriter> {
        if continue_at.is_none() && !overwrite && path.exists() {
            return Err(raise(
                py,
                "FileError",
                (format!(
                    "{}: the file exists (another run's archive?); pass overwrite=True to replace \
                     it, or continue_at=step to continue it",
                    path.display()
                ),),
            ));
        }
        let writer = py
            .detach(|| match continue_at {
                Some(step) => Writer::continue_at(&path, step),
                None => Writer::create(&path),
            })
            .map_err(|e| to_py(py, e))?;
        Ok(ArchiveWriter { writer })
    }

    /// Append the simulation's current state (``nbody.Simulation``,
    /// ``nbody.MD`` or ``nbody.LennardJones``).
    fn append(&mut self, py: Python<'_>, sim: PyRef<'_, Run>) -> PyResult<()> {
        let (writer, sim) = (&mut self.writer, &sim.sim);
        py.detach(|| writer.append(sim)).map_err(err)
    }

    fn __len__(&self) -> usize {
        self.writer.len()
    }

    /// The step of the last record, or ``None``.
    #[getter]
    fn last_step(&self) -> Option<u64> {
        self.writer.last_step()
    }
}

/// `sim` as the Python class of its force law.
fn wrap_any(py: Python<'_>, sim: nbody_host::Simulation) -> PyResult<Py<PyAny>> {
    Ok(match crate::run::class_name(sim.params().force()) {
        "Simulation" => crate::gravity::Simulation::wrap(py, sim)?.into_any(),
        "LennardJones" => crate::md::LennardJones::wrap(py, sim)?.into_any(),
        _ => crate::md::MD::wrap(py, sim)?.into_any(),
    })
}
