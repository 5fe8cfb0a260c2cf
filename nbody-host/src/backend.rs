//! Where a simulation runs: [`Backend`], each variant carrying its own
//! options, and the factory that starts its engine (resolving
//! [`Backend::Auto`] and logging the choice).

use crate::block_pair::BlockForces;
use crate::config::Params;
use crate::cpu::{CpuBlockForces, CpuEngine, CpuTuning, MdEngine};
use crate::cuda::{CudaBlockForces, CudaEngine};
use crate::emulator::{EmulatedMd, EmulatorBlockForces, EmulatorEngine, LaunchOptions};
use crate::engine::{BackendKind, Engine};
use crate::error::{Error, Result};
use crate::md::MdState;
use crate::plan::md::MdPlanEngine;
use crate::state::Bodies;

/// Where the simulation runs, with that backend's options.
///
/// ```
/// use nbody_host::{Backend, CpuTuning, Isa};
///
/// let cpu = Backend::Cpu(CpuTuning { isa: Some(Isa::Scalar), ..CpuTuning::default() });
/// assert_eq!(Backend::cpu(), Backend::Cpu(CpuTuning::default()));
/// assert_eq!(Backend::emulator(), Backend::Emulator { race_detection: false });
/// # let _ = cpu;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// CUDA device 0 when the crate was built with the `cuda` feature and a
    /// device is present, else the CPU with its default tuning. The choice is
    /// logged and reported by [`Simulation::backend`](crate::Simulation::backend).
    /// Short-range force laws (Lennard-Jones) run on the CPU: their GPU plan
    /// has been checked on the emulator and the software CUDA device only.
    #[default]
    Auto,
    /// The multithreaded SIMD CPU backend, with its instruction set and blocking.
    Cpu(CpuTuning),
    /// An NVIDIA GPU through CUDA (feature `cuda`).
    Cuda {
        /// CUDA device ordinal.
        device: u32,
    },
    /// The CPU emulator of the CUDA execution model: runs the very kernel
    /// bodies that become PTX, on CPU threads. Slow; for testing.
    Emulator {
        /// Record every shared-memory access and fail a launch on a race
        /// (slower).
        race_detection: bool,
    },
}

impl Backend {
    /// The CPU backend with the default tuning.
    pub const fn cpu() -> Backend {
        Backend::Cpu(CpuTuning::DEFAULT)
    }

    /// The emulator without race detection.
    pub const fn emulator() -> Backend {
        Backend::Emulator {
            race_detection: false,
        }
    }
}

impl Backend {
    /// This backend's [block-pair primitive](crate::block_pair): forces and
    /// potential between blocks of bodies, for a run with `params` (softened
    /// gravity only, else [`Error::Unsupported`]) whose heaviest body, over
    /// all blocks, is `max_mass` (which decides, with the softening, whether
    /// the guarded interaction is needed). [`Backend::Auto`] is CUDA device 0
    /// where there is one, else the CPU.
    pub fn block_forces(self, params: &Params, max_mass: f32) -> Result<Box<dyn BlockForces>> {
        Ok(match self {
            Backend::Cpu(tuning) => Box::new(CpuBlockForces::new(params, tuning, max_mass)?),
            Backend::Emulator { race_detection } => {
                Box::new(EmulatorBlockForces::new(params, max_mass, race_detection)?)
            }
            Backend::Cuda { device } => Box::new(CudaBlockForces::new(device, params, max_mass)?),
            Backend::Auto => match CudaBlockForces::new(0, params, max_mass) {
                Ok(forces) => Box::new(forces),
                Err(Error::CudaNotCompiled | Error::CudaUnavailable(_)) => {
                    Box::new(CpuBlockForces::new(params, CpuTuning::default(), max_mass)?)
                }
                Err(other) => return Err(other),
            },
        })
    }
}

/// Starts the engine for `backend`, resolving [`Backend::Auto`] and logging
/// the choice; also returns the backend it resolved to (never `Auto`), from
/// which the same engine can be started again. `md` continues a short-range
/// run (image counters, where its lists were built).
pub(crate) fn create(
    backend: Backend,
    bodies: &Bodies,
    params: &Params,
    md: Option<&MdState>,
) -> Result<(Box<dyn Engine>, Backend)> {
    let short_range = params.force().cutoff().is_some();
    let (engine, resolved): (Box<dyn Engine>, Backend) = match backend {
        Backend::Cpu(tuning) if short_range => (
            Box::new(MdEngine::new(bodies, params, tuning, md)?),
            backend,
        ),
        // The GPU MD plan; what it lacks (open space, all pairs, half lists,
        // another integrator) is an error naming it.
        Backend::Emulator { race_detection } if short_range => {
            let device = EmulatedMd::new(LaunchOptions {
                race_detection,
                ..LaunchOptions::default()
            });
            (
                Box::new(MdPlanEngine::new(
                    device,
                    BackendKind::Emulator,
                    bodies,
                    params,
                    md,
                )?),
                backend,
            )
        }
        Backend::Cuda { device } if short_range => {
            (CudaEngine::md(device, bodies, params, md)?, backend)
        }
        Backend::Auto if short_range => {
            // The GPU MD plan is checked on the emulator and the software
            // CUDA device only, never yet on a GPU: Auto keeps to the CPU.
            log::info!("backend auto: short-range forces run on the CPU");
            let tuning = CpuTuning::default();
            (
                Box::new(MdEngine::new(bodies, params, tuning, md)?),
                Backend::Cpu(tuning),
            )
        }
        Backend::Cpu(tuning) => (Box::new(CpuEngine::new(bodies, params, tuning)?), backend),
        Backend::Emulator { race_detection } => (
            Box::new(EmulatorEngine::new(bodies, params, race_detection)?),
            backend,
        ),
        Backend::Cuda { device } => (Box::new(CudaEngine::new(device, bodies, params)?), backend),
        Backend::Auto => match CudaEngine::new(0, bodies, params) {
            Ok(engine) => (Box::new(engine), Backend::Cuda { device: 0 }),
            Err(reason @ (Error::CudaNotCompiled | Error::CudaUnavailable(_))) => {
                log::info!("backend auto: no CUDA ({reason}); using the CPU");
                let tuning = CpuTuning::default();
                (
                    Box::new(CpuEngine::new(bodies, params, tuning)?),
                    Backend::Cpu(tuning),
                )
            }
            Err(other) => return Err(other),
        },
    };
    log::info!(
        "backend {:?} -> {} ({}) for N = {}, {}",
        backend,
        engine.kind(),
        engine.method(),
        bodies.len(),
        params.kernel()
    );
    Ok((engine, resolved))
}
