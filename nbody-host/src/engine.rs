//! What every backend implements: the [`Engine`] trait that
//! [`Simulation`](crate::Simulation) drives, and what an engine reports
//! ([`BackendKind`], [`Divergence`]). The engines live side by side in `cpu/`,
//! `cuda/` and `emulator/`; [`backend`](crate::backend) picks one.

use glam::Vec3;

use crate::error::{Error, Result};
use crate::hermite::HermiteState;
use crate::isa::Isa;
use crate::md::{MdState, MdStats, ThermoSums};
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

/// What every backend does. Each keeps the state on its device and copies it
/// back only when asked.
pub trait Engine: Send {
    /// The backend in use.
    fn kind(&self) -> BackendKind;

    /// What enumerates the pairs, named as it actually runs: the GPU kernel
    /// family (`"simt"`, `"tiled"`, `"triangle"`), or on the CPU
    /// `"all-pairs"` or `"third-law"`.
    fn method(&self) -> &'static str;

    /// Advances `steps` steps with the configured integrator. Returns
    /// `Ok(Some(..))` if the state went non-finite (the engine may stop
    /// early), `Ok(None)` otherwise.
    fn step(&mut self, steps: u64) -> Result<Option<Divergence>>;

    /// Copies positions, velocities and masses back.
    fn read_state(&mut self) -> Result<Bodies>;

    /// Kinetic and potential energy of the current state.
    fn energy(&mut self) -> Result<Energy>;

    /// Accelerations (`G`-scaled) at the current positions.
    fn accelerations(&mut self) -> Result<Vec<Vec3>>;

    /// The kernel the engine runs, where it chose one itself for
    /// [`Kernel::Auto`](crate::Kernel::Auto) (the GPU plans); `None`
    /// where the kernel family does not apply.
    fn kernel(&self) -> Option<crate::Kernel> {
        None
    }

    /// Seconds the device itself spent in steps so far, where the backend can
    /// time it (CUDA events); `None` otherwise.
    fn device_seconds(&self) -> Option<f64> {
        None
    }

    /// Kinetic and potential energy and the virial, for thermo output
    /// (short-range force laws).
    fn thermo_sums(&mut self) -> Result<ThermoSums> {
        Err(Error::Unsupported(
            "thermo output (temperature, pressure) is computed for short-range force laws \
             (Lennard-Jones); use energy() for gravity"
                .into(),
        ))
    }

    /// Per-body image counters (user order), in a periodic box.
    fn images(&mut self) -> Result<Option<Vec<[i32; 3]>>> {
        Ok(None)
    }

    /// Counters and the time split of a short-range run.
    fn md_stats(&self) -> Option<MdStats> {
        None
    }

    /// What a continuation of a short-range run needs (images, where the
    /// lists were built).
    fn md_state(&mut self) -> Result<Option<MdState>> {
        Ok(None)
    }

    /// The periodic box now, where the engine changes it (a barostat);
    /// `None` where it stays the parameters'.
    fn box_lengths(&self) -> Option<[f64; 3]> {
        None
    }

    /// Why the last [`step`](Self::step) that reported a [`Divergence`]
    /// stopped, where it was not a non-finite body (a barostat's box grown
    /// too small for the cutoff); taken once.
    fn stop_reason(&mut self) -> Option<Error> {
        None
    }

    /// The collisional (Hermite) engine's own interface; `None` for the
    /// fixed-step engines.
    fn collisional(&mut self) -> Option<&mut dyn Collisional> {
        None
    }
}

/// What the collisional engine (individual time steps, f64 state,
/// `crate::hermite`) adds to [`Engine`].
pub(crate) trait Collisional {
    /// Integrates from the current synchronisation time to `t`, exactly.
    fn advance_to(&mut self, t: f64) -> Result<()>;
    /// The f64 state (at the current synchronisation time) and counters.
    fn state(&self) -> &HermiteState;
}

/// The backend a simulation actually runs on (after resolving
/// [`Backend::Auto`](crate::Backend::Auto)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendKind {
    /// The CPU backend, with the instruction set it dispatched to.
    Cpu {
        /// Instruction set in use.
        isa: Isa,
        /// Worker threads.
        threads: usize,
    },
    /// A CUDA device.
    Cuda {
        /// Device ordinal.
        device: u32,
        /// Device name.
        name: String,
    },
    /// The emulator.
    Emulator,
}

impl BackendKind {
    /// `"cpu"`, `"cuda"` or `"emulator"`.
    pub fn name(&self) -> &'static str {
        match self {
            BackendKind::Cpu { .. } => "cpu",
            BackendKind::Cuda { .. } => "cuda",
            BackendKind::Emulator => "emulator",
        }
    }
}

impl BackendKind {
    /// Parses the [`Display`](std::fmt::Display) form back (what files
    /// written before the backend was stored as data hold), e.g.
    /// `"cpu (avx2+fma, 2 threads)"`, `"cuda (device 0: NVIDIA H100)"`,
    /// `"emulator"`.
    pub(crate) fn parse(text: &str) -> Option<BackendKind> {
        if text == "emulator" {
            return Some(BackendKind::Emulator);
        }
        if let Some(rest) = text
            .strip_prefix("cpu (")
            .and_then(|r| r.strip_suffix(" threads)"))
        {
            let (isa, threads) = rest.split_once(", ")?;
            return Some(BackendKind::Cpu {
                isa: Isa::from_name(isa)?,
                threads: threads.parse().ok()?,
            });
        }
        let rest = text.strip_prefix("cuda (device ")?.strip_suffix(')')?;
        let (device, name) = rest.split_once(": ")?;
        Some(BackendKind::Cuda {
            device: device.parse().ok()?,
            name: name.to_owned(),
        })
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackendKind::Cpu { isa, threads } => write!(f, "cpu ({isa}, {threads} threads)"),
            BackendKind::Cuda { device, name } => write!(f, "cuda (device {device}: {name})"),
            BackendKind::Emulator => f.write_str("emulator"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_display_form_parses_back() {
        for kind in [
            BackendKind::Cpu {
                isa: Isa::Avx2Fma,
                threads: 2,
            },
            BackendKind::Cuda {
                device: 3,
                name: "NVIDIA H100 80GB HBM3".into(),
            },
            BackendKind::Emulator,
        ] {
            assert_eq!(BackendKind::parse(&kind.to_string()), Some(kind));
        }
        for bad in [
            "",
            "cpu",
            "cpu (sse, 2 threads)",
            "cuda (device x: y)",
            "gpu",
        ] {
            assert_eq!(BackendKind::parse(bad), None, "{bad}");
        }
    }
}
