//! `Run`: what `Simulation` (gravity) and `LennardJones` share: stepping
//! with the GIL released, in batches with Ctrl-C checked between them; the
//! state as one `(N, 7)` float32 array kept current in place; adding and
//! removing bodies; checkpoints and snapshots.
//!
//! The state array: the library keeps the bodies on its device (CPU engine,
//! emulator, GPU) in its own layout (`[x y z m]` and `[vx vy vz 0]`), so no
//! numpy array can alias them; `Run` copies them once per step call into
//! one read-only `(N, 7)` array that it owns and hands out (`bodies`, and
//! `positions`, `velocities`, `masses` as views of it). After a step the
//! array is refreshed at once if anybody holds it or a view of it
//! (its reference count says so), else on the next read: a loop of
//! `step(1)` calls that reads nothing copies nothing. A Hermite run keeps
//! its state in f64, and its array is float64 (`Simulation::positions_f64`
//! and kin); every other run's is float32.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nbody_host::snapshot::Checkpoint;
use nbody_host::{Backend, Body, Error, ForceLaw, Simulation};
use numpy::{
    PyArray1, PyArray2, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PySlice};

use crate::arrays::{bodies_from, f64_dtype, fill, row};
use crate::errors::{err, invalid, raise, to_py};
use crate::options;

/// A batch of steps runs about this long (or one step, if longer) before
/// the next check for Ctrl-C.
const BATCH_TIME: Duration = Duration::from_millis(20);

/// What both simulations share (not made from Python: the base class of
/// `Simulation` and `LennardJones`).
#[pyclass(subclass, module = "nbody")]
pub(crate) struct Run {
    pub(crate) sim: Simulation,
    /// The `(N, 7)` state array handed out, once asked for (float64 for a
    /// Hermite run, float32 otherwise).
    buffer: Option<Py<PyUntypedArray>>,
    /// Whether `buffer` holds the current state.
    fresh: bool,
}

impl Run {
    pub(crate) fn new(sim: Simulation) -> Run {
        Run {
            sim,
            buffer: None,
            fresh: false,
        }
    }

    /// `steps` steps in batches of about [`BATCH_TIME`], the GIL released
    /// during each; between batches a pending Ctrl-C (or another signal
    /// whose handler raises) stops the run with the state of the last whole
    /// batch, steps and time counted. Batches give the bits of one
    /// `Simulation::step(steps)` (the engines keep their state between calls).
    pub(crate) fn advance(&mut self, py: Python<'_>, steps: u64) -> PyResult<()> {
        let mut left = steps;
        let mut batch = 1u64;
        let outcome = loop {
            if left == 0 {
                break Ok(());
            }
            let k = batch.min(left);
            let sim = &mut self.sim;
            let started = Instant::now();
            let stepped = py.detach(|| sim.step(k));
            let took = started.elapsed();
            if let Err(e) = stepped {
                break Err(to_py(py, e));
            }
            left -= k;
            if left == 0 {
                break Ok(());
            }
            if let Err(interrupt) = py.check_signals() {
                break Err(interrupt);
            }
            if took < BATCH_TIME {
                batch = batch.saturating_mul(2);
            } else if took > 4 * BATCH_TIME {
                batch = (batch / 2).max(1);
            }
        };
        let refreshed = self.moved(py);
        outcome.and(refreshed)
    }

    /// After the state changed: the array is stale; refreshed now if it
    /// is held outside (a caller's array or a view of it), dropped if the
    /// number of bodies changed (arrays held keep the state before).
    pub(crate) fn moved(&mut self, py: Python<'_>) -> PyResult<()> {
        self.fresh = false;
        let Some(buffer) = &self.buffer else {
            return Ok(());
        };
        let buffer = buffer.bind(py);
        if buffer.shape()[0] != self.sim.len()
            || buffer.dtype().is_equiv_to(&f64_dtype(py)) != self.is_f64()
        {
            self.buffer = None;
        } else {
            // SAFETY: a live object (we hold a strong reference to it), read
            // with the GIL held.
            let references = unsafe { pyo3::ffi::Py_REFCNT(buffer.as_ptr()) };
            if references > 1 {
                self.state(py)?;
            }
        }
        Ok(())
    }

    /// Whether the state is f64 (a Hermite run).
    pub(crate) fn is_f64(&self) -> bool {
        self.sim.params().integrator().hermite().is_some()
    }

    /// The state array, current: float64 for a Hermite run (its own f64
    /// state), float32 otherwise.
    pub(crate) fn state<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyUntypedArray>> {
        let n = self.sim.len();
        let buffer = match &self.buffer {
            Some(buffer) => buffer.bind(py).clone(),
            None => {
                let buffer = if self.is_f64() {
                    PyArray2::<f64>::zeros(py, [n, 7], false)
                        .as_untyped()
                        .clone()
                } else {
                    PyArray2::<f32>::zeros(py, [n, 7], false)
                        .as_untyped()
                        .clone()
                };
                buffer.call_method("setflags", (), Some(&[("write", false)].into_py_dict(py)?))?;
                self.buffer = Some(buffer.clone().unbind());
                self.fresh = false;
                buffer
            }
        };
        if !self.fresh {
            if self.is_f64() {
                let (p, v, m) = (
                    self.sim.positions_f64().map_err(err)?,
                    self.sim.velocities_f64().map_err(err)?,
                    self.sim.masses_f64().map_err(err)?,
                );
                let rows = p
                    .iter()
                    .zip(&v)
                    .zip(&m)
                    .map(|((p, v), m)| [p.x, p.y, p.z, v.x, v.y, v.z, *m]);
                fill(buffer.cast::<PyArray2<f64>>()?, rows);
            } else {
                let bodies = self.sim.bodies().map_err(err)?;
                let rows = bodies
                    .positions
                    .iter()
                    .zip(&bodies.velocities)
                    .zip(&bodies.masses)
                    .map(|((p, v), m)| [p.x, p.y, p.z, v.x, v.y, v.z, *m]);
                fill(buffer.cast::<PyArray2<f32>>()?, rows);
            }
            self.fresh = true;
        }
        Ok(buffer)
    }

    /// Columns `from..to` of the state array, a view.
    fn columns<'py>(
        &mut self,
        py: Python<'py>,
        from: isize,
        to: isize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let state = self.state(py)?;
        state.get_item((PySlice::full(py), PySlice::new(py, from, to, 1)))
    }

    /// Hermite's `integrate_to`: the whole intervals of `dt` before `t`
    /// (the library's count: one f64 addition of `dt` per interval) in
    /// interruptible batches, then the library's `integrate_to(t)` for the
    /// shorter last one, so the run ends at `t` with the library's bits.
    fn integrate_to_exactly(&mut self, py: Python<'_>, t: f64) -> PyResult<u64> {
        let (now, dt) = (self.sim.time(), self.sim.params().dt_f64());
        let mut whole = 0u64;
        if t.is_finite() && now <= t && ((t - now) / dt) < 1e15 {
            let mut time = now;
            while time + dt <= t && time + dt > time {
                time += dt;
                whole += 1;
            }
        }
        self.advance(py, whole)?;
        let sim = &mut self.sim;
        let last = py.detach(|| sim.integrate_to(t));
        let refreshed = self.moved(py);
        let last = last.map_err(|e| to_py(py, e))?;
        refreshed?;
        Ok(whole + last)
    }

    /// The number of steps `Simulation::integrate_to(t)` takes, with its
    /// errors: its clock loop (one `f64` addition of `dt` per step, a time
    /// within `1e-6 dt` of `t` counts as reached), so that the steps can
    /// run in interruptible batches. tests/test_gravity.py holds it to the
    /// library's documented counts and clock.
    fn steps_to(&self, t: f64) -> Result<u64, Error> {
        let (sim, dt) = (&self.sim, self.sim.params().dt_f64());
        let now = sim.time();
        if !(t.is_finite() && now - 1e-6 * dt <= t) {
            return Err(Error::InvalidTargetTime { target: t, now });
        }
        let estimate = ((t - now) / dt).ceil();
        if estimate >= (u64::MAX - sim.steps_done()) as f64 {
            return Err(Error::Unsupported(format!(
                "integrating to t = {t} from t = {now} with dt = {dt} needs about {estimate:e} steps, more than the step counter holds"
            )));
        }
        let (reached, mut steps, mut time) = (t - 1e-6 * dt, 0u64, now);
        while time < reached {
            let next = time + dt;
            if next == time {
                return Err(Error::Unsupported(format!(
                    "cannot integrate to t = {t}: at t = {time} a step of dt = {dt} is below the \
                     resolution of the f64 clock, which would stop"
                )));
            }
            time = next;
            steps += 1;
        }
        Ok(steps)
    }
}

/// The simulation a checkpoint saved, on `backend`; a checkpoint of the
/// other kind (gravity, or a short-range force) is refused, naming the class
/// that loads it.
pub(crate) fn resume(
    py: Python<'_>,
    path: &Path,
    backend: &str,
    short_range: bool,
) -> PyResult<Simulation> {
    let asked = options::backend(py, backend)?;
    let (checkpoint, md) = Checkpoint::load_with_md(path).map_err(|e| to_py(py, e))?;
    let force = checkpoint.params.force();
    if is_short_range(force) != short_range {
        return Err(invalid(
            py,
            format!(
                "{}: a checkpoint of a {force} run: load it with nbody.{}.load_checkpoint",
                path.display(),
                class_name(force)
            ),
        ));
    }
    // A Hermite run goes on from its f64 state, which only
    // `Simulation::resume` reads.
    let resumed = match checkpoint.params.integrator().hermite() {
        Some(_) => Simulation::resume(path).map_err(|e| to_py(py, e))?,
        None => Simulation::from_checkpoint(checkpoint),
    };
    let mut builder = resumed.backend(asked);
    if let Some(md) = md {
        builder = builder.md_state(md);
    }
    let sim = py.detach(|| builder.build()).map_err(|e| to_py(py, e))?;
    if !short_range {
        warn_if_cpu(py, asked, &sim)?;
    }
    Ok(sim)
}

/// Whether `force` is a short-range law (run by `nbody.LennardJones`).
pub(crate) fn is_short_range(force: &ForceLaw) -> bool {
    !matches!(force, ForceLaw::Gravity(_))
}

/// The Python class that runs `force`: `Simulation` for gravity,
/// `LennardJones` for one type of `lj/cut`, `MD` for the other pair laws.
pub(crate) fn class_name(force: &ForceLaw) -> &'static str {
    match force.as_pair() {
        None if !is_short_range(force) => "Simulation",
        Some(p) if p.style() == nbody_host::PairStyle::LennardJones && p.types() == 1 => {
            "LennardJones"
        }
        _ => "MD",
    }
}

/// Says once per process that `backend="auto"` runs on the CPU, and why.
pub(crate) fn warn_if_cpu(py: Python<'_>, asked: Backend, sim: &Simulation) -> PyResult<()> {
    static SAID: AtomicBool = AtomicBool::new(false);
    if asked != Backend::Auto
        || sim.backend().name() == "cuda"
        || SAID.swap(true, Ordering::Relaxed)
    {
        return Ok(());
    }
    let why = if cfg!(feature = "cuda") {
        "no usable CUDA device was found"
    } else {
        "this build of nbody has no CUDA support (pip install ./nbody-py -C maturin.build-args=\"--features cuda\")"
    };
    let category = py.import("nbody._errors")?.getattr("BackendWarning")?;
    let message = format!(
        "nbody: backend=\"auto\" runs on the CPU, {}: {why}",
        sim.backend()
    );
    PyErr::warn(py, &category, &std::ffi::CString::new(message)?, 1)
}

#[pymethods]
impl Run {
    /// Advance ``steps`` time steps (default 1).
    ///
    /// The GIL is released while the library steps; Ctrl-C stops a long
    /// call between batches of about 20 ms with ``KeyboardInterrupt``, the
    /// state intact at a whole step (``steps_done`` and ``time`` say which).
    /// A run that turns non-finite raises ``DivergedError`` (``.step``,
    /// ``.body``) and refuses to step further.
    #[pyo3(signature = (steps = 1))]
    fn step(&mut self, py: Python<'_>, steps: i64) -> PyResult<()> {
        let steps = u64::try_from(steps)
            .map_err(|_| invalid(py, format!("steps = {steps} must be >= 0")))?;
        self.advance(py, steps)
    }

    /// Step until the time reaches ``t``; returns the number of steps taken.
    ///
    /// The time step never changes, so the last step may overshoot ``t`` by
    /// less than one ``dt``; a time within ``1e-6 dt`` below ``t`` counts as
    /// reached (``dt = 1e-3``: ``integrate_to(1.0)`` takes 1000 steps).
    /// Interruptible like ``step``.
    ///
    /// Hermite (``integrator="hermite"``) ends at ``t`` exactly: whole
    /// intervals of ``dt`` (interruptible), then one shorter interval that
    /// ends at ``t``, counted as a step (``Simulation::integrate_to``).
    fn integrate_to(&mut self, py: Python<'_>, t: f64) -> PyResult<u64> {
        if self.is_f64() {
            return self.integrate_to_exactly(py, t);
        }
        let steps = self.steps_to(t).map_err(|e| to_py(py, e))?;
        self.advance(py, steps)?;
        Ok(steps)
    }

    /// The state, an ``(N, 7)`` float32 array, columns ``x y z vx vy vz m``.
    ///
    /// Read-only and owned by the simulation: the same array every time,
    /// updated in place by every step (so arrays and views taken earlier
    /// follow the run), until ``add``/``remove`` change N (arrays taken
    /// before keep the state before). ``.copy()`` it to keep a state.
    #[getter]
    fn bodies<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyUntypedArray>> {
        self.state(py)
    }

    /// Positions, ``(N, 3)`` float32: a view of ``bodies[:, 0:3]`` (no copy).
    #[getter]
    fn positions<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.columns(py, 0, 3)
    }

    /// Velocities, ``(N, 3)`` float32: a view of ``bodies[:, 3:6]`` (no copy).
    #[getter]
    fn velocities<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.columns(py, 3, 6)
    }

    /// Masses, ``(N,)`` float32: a view of ``bodies[:, 6]`` (no copy).
    #[getter]
    fn masses<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let state = self.state(py)?;
        state.get_item((PySlice::full(py), 6))
    }

    /// Simulated time: the start's plus ``dt`` per step, added in float64.
    #[getter]
    fn time(&self) -> f64 {
        self.sim.time()
    }

    /// Steps taken since the start (across checkpoints).
    #[getter]
    fn steps_done(&self) -> u64 {
        self.sim.steps_done()
    }

    /// The time step, as given (float64; the kernels use it rounded to float32).
    #[getter]
    fn dt(&self) -> f64 {
        self.sim.params().dt_f64()
    }

    /// Where it runs: ``"cpu"``, ``"cuda"`` or ``"emulator"`` (what ``"auto"`` chose).
    #[getter]
    fn backend(&self) -> &'static str {
        self.sim.backend().name()
    }

    /// The backend in words, e.g. ``"cpu (avx512, 2 threads)"``.
    #[getter]
    fn device(&self) -> String {
        self.sim.backend().to_string()
    }

    /// What enumerates the pairs as it runs: ``"simt"``, ``"tiled"``,
    /// ``"triangle"`` on a GPU backend; ``"all-pairs"``, ``"third-law"`` or
    /// the neighbour lists on the CPU.
    #[getter]
    fn method(&self) -> &'static str {
        self.sim.method()
    }

    fn __len__(&self) -> usize {
        self.sim.len()
    }

    /// Accelerations at the current positions, ``(N, 3)`` float32 (a new array).
    fn accelerations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let acc = self.sim.accelerations().map_err(err)?;
        let flat: Vec<f32> = acc.iter().flat_map(|a| a.to_array()).collect();
        PyArray1::from_vec(py, flat).reshape([acc.len(), 3])
    }

    /// Add bodies: ``add(row)`` with a ``(7,)`` row ``x y z vx vy vz m`` or
    /// ``add(rows)`` with ``(k, 7)``, or ``add(mass=, position=, velocity=)``.
    ///
    /// The engine restarts from the current state with the new bodies
    /// (time, steps, parameters and backend kept; O(N)); a bad body raises
    /// ``InvalidInputError`` naming it, and the simulation is unchanged.
    #[pyo3(signature = (bodies = None, *, mass = None, position = None, velocity = None))]
    fn add(
        &mut self,
        py: Python<'_>,
        bodies: Option<&Bound<'_, PyAny>>,
        mass: Option<f32>,
        position: Option<[f32; 3]>,
        velocity: Option<[f32; 3]>,
    ) -> PyResult<()> {
        let added = match (bodies, mass, position, velocity) {
            (Some(obj), None, None, None) => {
                let more = bodies_from(py, obj, "bodies", true)?;
                match more.get(0) {
                    Some(body) if more.len() == 1 => self.sim.add(body),
                    _ => self.sim.extend(&more),
                }
            }
            (None, Some(m), Some(x), v) => self.sim.add(Body::new(m, x, v.unwrap_or([0.0; 3]))),
            _ => {
                return Err(invalid(
                    py,
                    "add: give either bodies (a (7,) row or (k, 7) rows) or mass= and position= \
                     (and velocity=, default 0)"
                        .into(),
                ));
            }
        };
        added.map_err(|e| to_py(py, e))?;
        self.moved(py)
    }

    /// Remove body ``index`` (negative counts from the end) and return it as
    /// a ``(7,)`` float32 row; the bodies after it move down one index.
    /// ``OutOfRangeError`` (an ``IndexError``) past the end.
    fn remove<'py>(&mut self, py: Python<'py>, index: i64) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let n = self.sim.len();
        let at = if index < 0 { index + n as i64 } else { index };
        let Ok(at) = usize::try_from(at) else {
            return Err(raise(
                py,
                "OutOfRangeError",
                (format!(
                    "body index {index} is out of range: the simulation has {n} bodies"
                ),),
            ));
        };
        let body = self.sim.remove(at).map_err(|e| to_py(py, e))?;
        self.moved(py)?;
        Ok(row(py, &body))
    }

    /// Write a checkpoint (the whole run: exact bits, step, time, parameters;
    /// for Lennard-Jones also the image counters and lists) atomically, for
    /// ``load_checkpoint``. Refuses a diverged run (``DivergedError``).
    fn save_checkpoint(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let sim = &self.sim;
        py.detach(|| sim.save_checkpoint(&path))
            .map_err(|e| to_py(py, e))
    }

    /// Write the bodies as an ``(N, 7)`` float32 ``.npy`` file (``np.load`` reads it).
    fn save_npy(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let sim = &self.sim;
        py.detach(|| sim.save_npy(&path)).map_err(|e| to_py(py, e))
    }

    /// Step ``steps`` steps, drawing a frame before the first and after every
    /// ``every`` steps into an animated GIF at ``path`` (25 frames per second;
    /// additive point splats, the camera fitted to the bodies now, looking
    /// down the z axis); returns the number of frames. Needs a build with the
    /// ``render`` feature (``nbody.RENDER``), else ``BackendError``. The file
    /// appears whole at the end (none if interrupted).
    #[pyo3(signature = (path, steps, every = 10, size = (480, 480)))]
    fn record_gif(
        &mut self,
        py: Python<'_>,
        path: PathBuf,
        steps: u64,
        every: u64,
        size: (u32, u32),
    ) -> PyResult<usize> {
        #[cfg(feature = "render")]
        {
            use nbody_host::render::{Camera, Recorder, Renderer};
            let positions = self.sim.positions().map_err(err)?;
            let camera = Camera::fit(positions, nbody_host::glam::Vec3::NEG_Z, 1.1).map_err(err)?;
            let renderer = Renderer::new(camera, size.0, size.1).map_err(err)?;
            let mut recorder = Recorder::new(renderer, every)
                .and_then(|r| r.gif(&path))
                .map_err(err)?;
            recorder.capture(&mut self.sim).map_err(err)?;
            let mut left = steps;
            while left > 0 {
                let k = left.min(every);
                self.advance(py, k)?;
                left -= k;
                recorder.capture(&mut self.sim).map_err(err)?;
            }
            recorder.finish().map_err(err)
        }
        #[cfg(not(feature = "render"))]
        {
            let _ = (path, steps, every, size);
            Err(raise(
                py,
                "BackendError",
                (
                    "this build of nbody has no pictures: pip install ./nbody-py -C \
                  maturin.build-args=\"--features render\""
                        .to_string(),
                ),
            ))
        }
    }

    /// The Rust call alone, for measuring the binding's overhead
    /// (docs/python.md): ``calls`` times ``Simulation::step(1)`` in a Rust
    /// loop, GIL released; returns each call's seconds.
    fn _rust_step_seconds(&mut self, py: Python<'_>, calls: usize) -> PyResult<Vec<f64>> {
        let sim = &mut self.sim;
        let timed = py.detach(|| {
            let mut seconds = Vec::with_capacity(calls);
            for _ in 0..calls {
                let t = Instant::now();
                sim.step(1)?;
                seconds.push(t.elapsed().as_secs_f64());
            }
            Ok::<_, Error>(seconds)
        });
        let refreshed = self.moved(py);
        let seconds = timed.map_err(|e| to_py(py, e))?;
        refreshed?;
        Ok(seconds)
    }
}
