//! Where a simulation runs: [`Backend`], each variant carrying its own
//! options, and the factory that starts its engine (resolving
//! [`Backend::Auto`] and logging the choice).

use crate::block_pair::{BlockForces, Checked};
use crate::config::Params;
use crate::cpu::{CpuBlockForces, CpuEngine, CpuTuning, MdEngine};
use crate::cuda::CudaDevice;
use crate::emulator::{EmulatedDevice, LaunchOptions};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::hermite::fields::{BlockFields, CpuFields};
use crate::hermite::{ForceJerk, HermiteForces, HermiteSettings, HermiteState, Precision};
use crate::md::MdState;
use crate::plan::block_pair::PairForces;
use crate::plan::engine::PlanEngine;
use crate::plan::hermite::DeviceFields;
use crate::plan::md::MdPlanEngine;
use crate::state::Bodies;

/// The emulator's device for one plan, opened lazily by a driver.
fn emulated<K: crate::plan::device::Role>(race_detection: bool) -> Result<EmulatedDevice<K>> {
    Ok(EmulatedDevice::new(LaunchOptions {
        race_detection,
        ..LaunchOptions::default()
    }))
}

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
        let cpu = |tuning| -> Result<Box<dyn BlockForces>> {
            Ok(Box::new(Checked(CpuBlockForces::new(
                params, tuning, max_mass,
            )?)))
        };
        let cuda = |device| PairForces::new(params, max_mass, || CudaDevice::open(device));
        Ok(match self {
            Backend::Cpu(tuning) => cpu(tuning)?,
            Backend::Emulator { race_detection } => {
                Box::new(Checked(PairForces::new(params, max_mass, || {
                    emulated(race_detection)
                })?))
            }
            Backend::Cuda { device } => Box::new(Checked(cuda(device)?)),
            Backend::Auto => match cuda(0) {
                Ok(forces) => Box::new(Checked(forces)),
                Err(Error::CudaNotCompiled | Error::CudaUnavailable(_)) => {
                    cpu(CpuTuning::default())?
                }
                Err(other) => return Err(other),
            },
        })
    }
}

impl Backend {
    /// This backend's Hermite force loops ([`HermiteForces`]): force, jerk
    /// and potential of i-bodies from j-bodies in `precision`, on the GPU
    /// kernels with blocks of `block` threads (a power of two in
    /// `32..=1024`; the CPU ignores it). [`Backend::Auto`] is the CPU: the
    /// GPU kernels have run on the emulator and the software CUDA device
    /// only. What libgrape6 runs on (`GRAPE6_BACKEND`).
    pub fn hermite_forces(
        self,
        precision: Precision,
        block: u32,
    ) -> Result<Box<dyn HermiteForces>> {
        Ok(match self {
            Backend::Cpu(tuning) => Box::new(ForceJerk::new(tuning.isa, precision)?),
            Backend::Auto => Box::new(ForceJerk::new(None, precision)?),
            Backend::Emulator { race_detection } => {
                Box::new(DeviceFields::new(0, block, precision, || {
                    emulated(race_detection)
                })?)
            }
            Backend::Cuda { device } => Box::new(DeviceFields::new(0, block, precision, || {
                CudaDevice::open(device)
            })?),
        })
    }
}

/// Starts the Hermite engine ([`Integrator::Hermite`](crate::Integrator::Hermite))
/// for `backend`: the block bookkeeping on the host in every case, the
/// predictor and forces on the CPU loops or on the launch device (the
/// emulator, CUDA; force blocks of the run's kernel block size).
/// [`Backend::Auto`] resolves to the CPU (the GPU kernels have run on the
/// emulator and the software CUDA device only). Also returns the backend it
/// resolved to.
pub(crate) fn create_hermite(
    backend: Backend,
    bodies: &Bodies,
    params: &Params,
    settings: HermiteSettings,
    state: Option<HermiteState>,
    time: f64,
) -> Result<(Box<dyn Engine>, Backend)> {
    let precision = settings.precision();
    let block = params.kernel().block();
    let resolved = match backend {
        Backend::Auto => {
            log::info!("backend auto: the Hermite integrator runs on the CPU");
            Backend::Cpu(CpuTuning::default())
        }
        other => other,
    };
    let open = |n: usize| -> Result<Box<dyn BlockFields>> {
        Ok(match resolved {
            Backend::Cpu(tuning) => Box::new(CpuFields::new(tuning.isa, precision)?),
            Backend::Emulator { race_detection } => {
                Box::new(DeviceFields::new(n, block, precision, || {
                    emulated(race_detection)
                })?)
            }
            Backend::Cuda { device } => Box::new(DeviceFields::new(n, block, precision, || {
                CudaDevice::open(device)
            })?),
            Backend::Auto => unreachable!("resolved above"),
        })
    };
    let engine = crate::hermite::engine::create(bodies, params, settings, state, time, open)?;
    log::info!(
        "backend {:?} -> {} (hermite-block, {precision}) for N = {}",
        backend,
        engine.kind(),
        bodies.len(),
    );
    Ok((engine, resolved))
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
        Backend::Emulator { race_detection } if short_range => (
            Box::new(MdPlanEngine::new(
                || emulated(race_detection),
                bodies,
                params,
                md,
            )?),
            backend,
        ),
        Backend::Cuda { device } if short_range => (
            Box::new(MdPlanEngine::new(
                || CudaDevice::open(device),
                bodies,
                params,
                md,
            )?),
            backend,
        ),
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
            Box::new(PlanEngine::new(bodies, params, || {
                emulated(race_detection)
            })?),
            backend,
        ),
        Backend::Cuda { device } => (
            Box::new(PlanEngine::new(bodies, params, || {
                CudaDevice::open(device)
            })?),
            backend,
        ),
        Backend::Auto => match PlanEngine::new(bodies, params, || CudaDevice::open(0)) {
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
