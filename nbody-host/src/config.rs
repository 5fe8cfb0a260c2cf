//! What a simulation runs: kernel family, integrator, backend and physical parameters.

use gpu_kernels::launch;

use crate::error::{Error, Result};

/// Default block size for every kernel family.
pub const DEFAULT_BLOCK: u32 = 256;

/// The force algorithm (a kernel family of `gpu-kernels`).
///
/// On the CPU backend the same names pick the CPU algorithm: `Simt` and
/// `Tiled` compute all pairs both ways (SIMD, cache-tiled), `Triangle` uses
/// Newton's third law (each pair once); `block` is then only validated, the
/// CPU's own blocking comes from [`CpuTuning`](crate::CpuTuning).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// All pairs, one thread per body, bodies read from global memory.
    Simt {
        /// Threads per block (power of two, 32..=1024).
        block: u32,
    },
    /// All pairs through shared-memory tiles of `block` bodies.
    Tiled {
        /// Threads per block = tile size (power of two, 32..=1024).
        block: u32,
    },
    /// Each pair once (Newton's third law), upper-triangle block schedule.
    Triangle {
        /// Threads per block = group size (power of two, 32..=1024).
        block: u32,
    },
}

impl Kernel {
    /// The family name: `"simt"`, `"tiled"` or `"triangle"`.
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Simt { .. } => "simt",
            Kernel::Tiled { .. } => "tiled",
            Kernel::Triangle { .. } => "triangle",
        }
    }

    /// The block size.
    pub fn block(&self) -> u32 {
        match *self {
            Kernel::Simt { block } | Kernel::Tiled { block } | Kernel::Triangle { block } => block,
        }
    }

    /// Parses `"simt"`, `"tiled"` or `"triangle"` with the given block size.
    pub fn from_name(name: &str, block: u32) -> Option<Kernel> {
        match name {
            "simt" => Some(Kernel::Simt { block }),
            "tiled" => Some(Kernel::Tiled { block }),
            "triangle" => Some(Kernel::Triangle { block }),
            _ => None,
        }
    }

    /// Checks the block size ([`Error::InvalidBlockSize`]).
    pub fn validate(&self) -> Result<()> {
        let block = self.block();
        if launch::is_valid_block(block) {
            Ok(())
        } else {
            Err(Error::InvalidBlockSize {
                block,
                kernel: self.name(),
            })
        }
    }
}

impl Default for Kernel {
    /// `Tiled { block: 256 }`, the seed notebook's kernel.
    fn default() -> Self {
        Kernel::Tiled {
            block: DEFAULT_BLOCK,
        }
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}(block={})", self.name(), self.block())
    }
}

/// The time integrator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Integrator {
    /// The seed notebook's scheme: `v += a dt; x += v dt`. First order,
    /// energy drifts secularly.
    #[default]
    SemiImplicitEuler,
    /// Leapfrog kick-drift-kick (velocity Verlet): second order and
    /// symplectic, so energy errors stay bounded.
    Leapfrog,
}

impl Integrator {
    /// `"euler"` or `"leapfrog"`.
    pub fn name(&self) -> &'static str {
        match self {
            Integrator::SemiImplicitEuler => "euler",
            Integrator::Leapfrog => "leapfrog",
        }
    }

    /// Parses `"euler"` or `"leapfrog"`.
    pub fn from_name(name: &str) -> Option<Integrator> {
        match name {
            "euler" => Some(Integrator::SemiImplicitEuler),
            "leapfrog" => Some(Integrator::Leapfrog),
            _ => None,
        }
    }
}

impl std::fmt::Display for Integrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the simulation runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// CUDA when the crate was built with the `cuda` feature and a device is
    /// present, else the CPU. The choice is logged and reported by
    /// [`Simulation::backend`](crate::Simulation::backend).
    #[default]
    Auto,
    /// The multithreaded SIMD CPU backend.
    Cpu,
    /// An NVIDIA GPU through CUDA (feature `cuda`).
    Cuda {
        /// CUDA device ordinal.
        device: u32,
    },
    /// The CPU emulator of the CUDA execution model: runs the very kernel
    /// bodies that become PTX, on CPU threads. Slow; for testing.
    Emulator,
}

/// The backend a simulation actually runs on (after resolving [`Backend::Auto`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// The CPU backend, with the SIMD level it dispatched to (e.g. `"avx512"`).
    Cpu {
        /// Instruction set in use.
        isa: &'static str,
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

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackendKind::Cpu { isa, threads } => write!(f, "cpu ({isa}, {threads} threads)"),
            BackendKind::Cuda { device, name } => write!(f, "cuda (device {device}: {name})"),
            BackendKind::Emulator => f.write_str("emulator"),
        }
    }
}

/// The physical and numerical parameters of a run, as the kernels see them
/// (`f32`). Validated by [`Params::new`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Time step.
    pub dt: f32,
    /// Plummer softening length `eps` (`0` allowed).
    pub softening: f32,
    /// Gravitational constant.
    pub g: f32,
    /// Force algorithm.
    pub kernel: Kernel,
    /// Time integrator.
    pub integrator: Integrator,
}

impl Params {
    /// Validates and converts to the `f32` the kernels use.
    pub fn new(
        dt: f64,
        softening: f64,
        g: f64,
        kernel: Kernel,
        integrator: Integrator,
    ) -> Result<Params> {
        let dt32 = dt as f32;
        if !(dt.is_finite() && dt > 0.0 && dt32.is_finite() && dt32 > 0.0) {
            return Err(Error::InvalidTimeStep(dt));
        }
        let eps32 = softening as f32;
        if !(softening.is_finite() && softening >= 0.0 && (eps32 * eps32).is_finite()) {
            return Err(Error::InvalidSoftening(softening));
        }
        let g32 = g as f32;
        if !(g.is_finite() && g > 0.0 && g32.is_finite() && g32 > 0.0) {
            return Err(Error::InvalidGravitationalConstant(g));
        }
        kernel.validate()?;
        Ok(Params {
            dt: dt32,
            softening: eps32,
            g: g32,
            kernel,
            integrator,
        })
    }

    /// `eps^2`, as passed to the kernels.
    pub fn eps2(&self) -> f32 {
        self.softening * self.softening
    }
}

impl Default for Params {
    /// The seed notebook's set-up: `dt = 0.01`, `eps = 0.1`, `G = 1`, tiled
    /// kernel with 256 threads, semi-implicit Euler.
    fn default() -> Self {
        Params {
            dt: 0.01,
            softening: 0.1,
            g: 1.0,
            kernel: Kernel::default(),
            integrator: Integrator::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_reject_bad_values_naming_them() {
        let k = Kernel::default();
        let i = Integrator::default();
        for dt in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-50, 1e300] {
            let e = Params::new(dt, 0.1, 1.0, k, i).unwrap_err();
            assert!(matches!(e, Error::InvalidTimeStep(_)), "{dt}: {e}");
            assert!(e.to_string().contains(&dt.to_string()), "{e}");
        }
        for eps in [-0.1, f64::NAN, f64::INFINITY, 1e30] {
            let e = Params::new(0.01, eps, 1.0, k, i).unwrap_err();
            assert!(matches!(e, Error::InvalidSoftening(_)), "{eps}: {e}");
        }
        for g in [0.0, -1.0, f64::NAN] {
            assert!(matches!(
                Params::new(0.01, 0.1, g, k, i),
                Err(Error::InvalidGravitationalConstant(_))
            ));
        }
        for block in [0, 16, 48, 2048] {
            let e = Params::new(0.01, 0.1, 1.0, Kernel::Triangle { block }, i).unwrap_err();
            assert!(
                e.to_string().contains(&format!("block size {block}")),
                "{e}"
            );
            assert!(e.to_string().contains("triangle"), "{e}");
        }
        assert!(
            Params::new(0.01, 0.0, 1.0, k, i).is_ok(),
            "eps = 0 is valid"
        );
    }

    #[test]
    fn names_round_trip() {
        for k in [
            Kernel::Simt { block: 64 },
            Kernel::Tiled { block: 128 },
            Kernel::Triangle { block: 32 },
        ] {
            assert_eq!(Kernel::from_name(k.name(), k.block()), Some(k));
        }
        for i in [Integrator::SemiImplicitEuler, Integrator::Leapfrog] {
            assert_eq!(Integrator::from_name(i.name()), Some(i));
        }
        assert_eq!(Kernel::from_name("warp", 32), None);
    }
}
