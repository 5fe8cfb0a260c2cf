//! The backends behind [`Simulation`](crate::Simulation): one internal trait,
//! three implementations side by side (`cpu`, `cuda`, `emulator`).

use glam::Vec3;

use crate::config::{Backend, BackendKind, Params};
use crate::error::{Error, Result};
use crate::state::{Bodies, Energy};

/// Where a run went non-finite, as an engine reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// 1-based index, within the batch, of the first step after which a body
    /// was not finite.
    pub after_step: u64,
    /// One such body.
    pub body: usize,
    /// Steps the engine actually ran in this batch (`>= after_step`).
    pub steps_run: u64,
}

/// Options that only some backends read.
#[derive(Clone, Debug, Default)]
pub struct EngineOptions {
    /// CPU blocking parameters.
    pub cpu_tuning: crate::cpu::CpuTuning,
    /// Emulator: record shared-memory accesses and fail on races.
    pub emulator_race_detection: bool,
}

/// What every backend does. Each keeps the state on its device and copies it
/// back only when asked.
pub trait Engine: Send {
    /// The backend in use.
    fn kind(&self) -> BackendKind;

    /// Advances `steps` steps with the configured kernel and integrator.
    /// Returns `Ok(Some(..))` if the state went non-finite (the engine may stop
    /// early), `Ok(None)` otherwise.
    fn step(&mut self, steps: u64) -> Result<Option<Divergence>>;

    /// Copies positions, velocities and masses back.
    fn read_state(&mut self) -> Result<Bodies>;

    /// Kinetic and softened potential energy of the current state.
    fn energy(&mut self) -> Result<Energy>;

    /// Accelerations (`G`-scaled) at the current positions, by the configured kernel.
    fn accelerations(&mut self) -> Result<Vec<Vec3>>;

    /// Seconds the device itself spent in steps so far, where the backend can
    /// time it (CUDA events); `None` otherwise.
    fn device_seconds(&self) -> Option<f64> {
        None
    }
}

/// Creates the engine for `backend`, resolving [`Backend::Auto`] and logging the choice.
pub fn create(
    backend: Backend,
    bodies: &Bodies,
    params: &Params,
    options: &EngineOptions,
) -> Result<Box<dyn Engine>> {
    let engine: Box<dyn Engine> = match backend {
        Backend::Cpu => Box::new(crate::cpu::CpuEngine::new(bodies, params, options)?),
        Backend::Emulator => Box::new(crate::emulator::EmulatorEngine::new(
            bodies, params, options,
        )?),
        Backend::Cuda { device } => Box::new(crate::cuda::CudaEngine::new(device, bodies, params)?),
        Backend::Auto => match crate::cuda::CudaEngine::new(0, bodies, params) {
            Ok(engine) => Box::new(engine),
            Err(reason @ (Error::CudaNotCompiled | Error::CudaUnavailable(_))) => {
                log::info!("backend auto: no CUDA ({reason}); using the CPU");
                Box::new(crate::cpu::CpuEngine::new(bodies, params, options)?)
            }
            Err(other) => return Err(other),
        },
    };
    log::info!(
        "backend {:?} -> {} for N = {}, {}",
        backend,
        engine.kind(),
        bodies.len(),
        params.kernel
    );
    Ok(engine)
}
