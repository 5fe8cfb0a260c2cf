//! What a simulation computes: the validated [`Params`] (time step, force law,
//! kernel family, integrator, space and pair enumeration) and the GPU
//! [`Kernel`] families.

use gpu_kernels::shape;

use crate::error::{Error, Result};
use crate::force::{ForceLaw, Gravity};
use crate::integrator::Integrator;
use crate::md::{self, Boundary, Ensemble, Enumeration, Neighbours};

/// Default block size for every kernel family.
pub const DEFAULT_BLOCK: u32 = 256;

/// How the GPU backends enumerate the pairs: a kernel family of `gpu-kernels`
/// and its block size.
///
/// The CPU backend has its own two loops and reports which one ran
/// ([`Simulation::method`](crate::Simulation::method)): `Triangle` always
/// runs its Newton's-third-law loop (each pair once); `Simt` and `Tiled`
/// run the all-pairs loop below [`CpuTuning::third_law_min_n`](crate::CpuTuning::third_law_min_n)
/// bodies and the third-law loop from there on, where it is faster. `block`
/// is validated but the CPU's blocking comes from [`CpuTuning`](crate::CpuTuning).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
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
        /// Threads per block (power of two, 32..=512: each thread holds four
        /// bodies in registers, too many for 1024 threads).
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

    /// A stable one-byte code of the family, for files (checkpoints).
    pub(crate) fn code(&self) -> u8 {
        match self {
            Kernel::Simt { .. } => 0,
            Kernel::Tiled { .. } => 1,
            Kernel::Triangle { .. } => 2,
        }
    }

    /// The kernel of a [`code`](Self::code) with the given block size.
    pub(crate) fn from_code(code: u8, block: u32) -> Option<Kernel> {
        ["simt", "tiled", "triangle"]
            .get(code as usize)
            .and_then(|name| Kernel::from_name(name, block))
    }

    /// The largest block size the kernel family accepts.
    pub fn max_block(&self) -> u32 {
        match self {
            Kernel::Triangle { .. } => shape::TRIANGLE_MAX_BLOCK,
            _ => shape::MAX_BLOCK,
        }
    }

    /// Checks the block size: a power of two in `32..=`[`max_block`](Self::max_block)
    /// ([`Error::InvalidBlockSize`]).
    pub fn validate(&self) -> Result<()> {
        let (block, max) = (self.block(), self.max_block());
        if shape::is_valid_block(block) && block <= max {
            Ok(())
        } else {
            Err(Error::InvalidBlockSize {
                block,
                kernel: self.name(),
                max,
            })
        }
    }
}

impl Default for Kernel {
    /// `Tiled { block: 256 }`, the kernel of NVIDIA Warp's N-body example.
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

/// The physical and numerical parameters of a run, as the kernels see them
/// (`f32`), validated once by [`Params::new`]: a `Params` value is always valid.
/// `Clone`, not `Copy`: a pair potential's coefficient tables are shared
/// behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    dt: f32,
    /// `dt` as given: what the simulated time advances by.
    dt64: f64,
    force: ForceLaw,
    kernel: Kernel,
    integrator: Integrator,
    boundary: Boundary,
    neighbours: Neighbours,
    ensemble: Ensemble,
}

impl Params {
    /// Validates `dt` (finite and `> 0`, also in `f32`) and the kernel's
    /// block size; the force law is validated by its own constructor. Open
    /// space and [`Neighbours::Auto`]; [`with_boundary`](Self::with_boundary)
    /// sets a box.
    pub fn new(dt: f64, force: ForceLaw, kernel: Kernel, integrator: Integrator) -> Result<Params> {
        let dt32 = dt as f32;
        if !(dt.is_finite() && dt > 0.0 && dt32.is_finite() && dt32 > 0.0) {
            return Err(Error::InvalidTimeStep(dt));
        }
        kernel.validate()?;
        Ok(Params {
            dt: dt32,
            dt64: dt,
            force,
            kernel,
            integrator,
            boundary: Boundary::Open,
            neighbours: Neighbours::Auto,
            ensemble: Ensemble::Nve,
        })
    }

    /// These parameters in `boundary`, with pairs enumerated by
    /// `neighbours`: validated together with the force law
    /// ([`Error::InvalidCombination`] for gravity in a periodic box, a cell
    /// list without a cutoff, `r_c + skin` over half the box;
    /// [`Error::InvalidParameter`] for a bad length or skin).
    pub fn with_boundary(self, boundary: Boundary, neighbours: Neighbours) -> Result<Params> {
        md::resolve(&self.force, &boundary, &neighbours)?;
        Ok(Params {
            boundary,
            neighbours,
            ..self
        })
    }

    /// These parameters sampling `ensemble` (set after the box, which a
    /// barostat needs periodic): its values checked
    /// ([`Error::InvalidParameter`] naming the first bad one), and any
    /// ensemble but NVE only for a pair potential under
    /// [`Integrator::VELOCITY_VERLET`] ([`Error::InvalidCombination`]).
    pub fn with_ensemble(self, ensemble: Ensemble) -> Result<Params> {
        ensemble.validate(&self.boundary)?;
        if ensemble != Ensemble::Nve {
            if self.force.as_pair().is_none() {
                return Err(Error::InvalidCombination(format!(
                    "the {} ensemble thermostats short-range molecular dynamics (a pair \
                     potential); the force law is {}",
                    ensemble.name(),
                    self.force
                )));
            }
            if self.integrator != Integrator::VELOCITY_VERLET {
                return Err(Error::InvalidCombination(format!(
                    "the {} ensemble integrates with velocity Verlet (as LAMMPS's fixes do); \
                     the integrator is {}: use Integrator::VELOCITY_VERLET",
                    ensemble.name(),
                    self.integrator.name()
                )));
            }
        }
        Ok(Params { ensemble, ..self })
    }

    /// These parameters in a periodic box of `lengths` (what a barostat
    /// changed; the engine keeps it valid for the cutoff).
    pub(crate) fn with_lengths(self, lengths: [f64; 3]) -> Params {
        Params {
            boundary: Boundary::Periodic { lengths },
            ..self
        }
    }

    /// The ensemble (NVE unless set).
    pub fn ensemble(&self) -> Ensemble {
        self.ensemble
    }

    /// Time step, as the kernels use it (`f32`).
    pub fn dt(&self) -> f32 {
        self.dt
    }

    /// Time step as given to [`Params::new`], in `f64`: what the simulated
    /// time advances by each step, so that 2000 steps of `1e-3` make `t = 2`
    /// and not `2000 * f32(1e-3) = 2.0000000949949026`. The kernels step
    /// with its `f32` rounding [`dt`](Self::dt), a relative difference below
    /// `2^-24`, under the resolution of the `f32` state.
    pub fn dt_f64(&self) -> f64 {
        self.dt64
    }

    /// The force law.
    pub fn force(&self) -> &ForceLaw {
        &self.force
    }

    /// The GPU kernel family (and block size) that enumerates the pairs.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Time integrator.
    pub fn integrator(&self) -> Integrator {
        self.integrator
    }

    /// Softened gravity's parameters, or `None` when the force law is not
    /// gravity (see [`force`](Self::force)).
    pub fn gravity(&self) -> Option<Gravity> {
        self.force.as_gravity().copied()
    }

    /// Softened gravity's parameters, or [`Error::Unsupported`] naming
    /// `what` (the engine or primitive that evaluates gravity only) and the
    /// force law it was given.
    pub(crate) fn gravity_for(&self, what: &str) -> Result<Gravity> {
        self.gravity().ok_or_else(|| {
            Error::Unsupported(format!(
                "{what} computes softened gravity only, not {}",
                self.force
            ))
        })
    }

    /// The space: open (the default) or a periodic box.
    pub fn boundary(&self) -> Boundary {
        self.boundary
    }

    /// How a short-range force enumerates its pairs, as configured (see
    /// [`Neighbours::Auto`] for what `Auto` becomes).
    pub fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    /// The enumeration `neighbours` resolves to (checked valid when made).
    pub(crate) fn enumeration(&self) -> Enumeration {
        md::resolve(&self.force, &self.boundary, &self.neighbours)
            .expect("validated by Params::with_boundary")
    }
}

impl Default for Params {
    /// NVIDIA Warp's N-body example: `dt = 0.01`, softening `0.1`, `G = 1`,
    /// tiled kernel with 256 threads, semi-implicit Euler.
    fn default() -> Self {
        Params {
            dt: 0.01,
            dt64: 0.01,
            force: ForceLaw::default(),
            kernel: Kernel::default(),
            integrator: Integrator::default(),
            boundary: Boundary::Open,
            neighbours: Neighbours::Auto,
            ensemble: Ensemble::Nve,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Params` from the builder's raw values, as `SimulationBuilder::build` makes them.
    fn params(dt: f64, eps: f64, g: f64, k: Kernel, i: Integrator) -> Result<Params> {
        Params::new(dt, ForceLaw::gravity(g, eps)?, k, i)
    }

    #[test]
    fn params_reject_bad_values_naming_them() {
        let k = Kernel::default();
        let i = Integrator::default();
        for dt in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-50, 1e300] {
            let e = params(dt, 0.1, 1.0, k, i).unwrap_err();
            assert!(matches!(e, Error::InvalidTimeStep(_)), "{dt}: {e}");
            assert!(e.to_string().contains(&dt.to_string()), "{e}");
        }
        for eps in [-0.1, f64::NAN, f64::INFINITY, 1e30] {
            let e = params(0.01, eps, 1.0, k, i).unwrap_err();
            assert!(matches!(e, Error::InvalidSoftening(_)), "{eps}: {e}");
        }
        for g in [0.0, -1.0, f64::NAN] {
            assert!(matches!(
                params(0.01, 0.1, g, k, i),
                Err(Error::InvalidGravitationalConstant(_))
            ));
        }
        for block in [0, 16, 48, 2048] {
            let e = params(0.01, 0.1, 1.0, Kernel::Triangle { block }, i).unwrap_err();
            assert!(
                e.to_string().contains(&format!("block size {block}")),
                "{e}"
            );
            assert!(e.to_string().contains("triangle"), "{e}");
        }
        assert!(params(0.01, 0.0, 1.0, k, i).is_ok(), "eps = 0 is valid");
    }

    #[test]
    fn names_round_trip() {
        for k in [
            Kernel::Simt { block: 64 },
            Kernel::Tiled { block: 128 },
            Kernel::Triangle { block: 32 },
        ] {
            assert_eq!(Kernel::from_name(k.name(), k.block()), Some(k));
            assert_eq!(Kernel::from_code(k.code(), k.block()), Some(k));
        }
        for i in [Integrator::SemiImplicitEuler, Integrator::Leapfrog] {
            assert_eq!(Integrator::from_name(i.name()), Some(i));
        }
        assert_eq!(Kernel::from_name("warp", 32), None);
    }
}
