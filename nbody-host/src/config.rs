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
    /// All pairs through shared-memory tiles of `block` bodies, `split`
    /// threads sharing each body's sum (for small `N`, where one thread per
    /// body leaves most of the GPU idle).
    Split {
        /// Threads per block = tile size (power of two, 32..=1024).
        block: u32,
        /// Threads per body: a power of two from 1 to `block`.
        split: u32,
    },
    /// Chosen per run from `N` and the device's multiprocessor count
    /// ([`Kernel::choose`]) when the simulation is built; a built
    /// [`Simulation`](crate::Simulation)'s parameters hold the kernel it
    /// chose (the CPU backend's: [`Kernel::Tiled`] with [`DEFAULT_BLOCK`]).
    Auto,
}

/// Multiprocessors [`Kernel::choose`] assumes where the device does not
/// say (the emulator): an H100's or H200's 132.
pub const NOMINAL_MULTIPROCESSORS: u32 = 132;

impl Kernel {
    /// The family name: `"simt"`, `"tiled"`, `"triangle"`, `"split"` or
    /// `"auto"`.
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Simt { .. } => "simt",
            Kernel::Tiled { .. } => "tiled",
            Kernel::Triangle { .. } => "triangle",
            Kernel::Split { .. } => "split",
            Kernel::Auto => "auto",
        }
    }

    /// The block size ([`DEFAULT_BLOCK`] for [`Kernel::Auto`], for callers
    /// that need one before the choice: the block-pair primitive).
    pub fn block(&self) -> u32 {
        match *self {
            Kernel::Simt { block }
            | Kernel::Tiled { block }
            | Kernel::Triangle { block }
            | Kernel::Split { block, .. } => block,
            Kernel::Auto => DEFAULT_BLOCK,
        }
    }

    /// Threads per body: `split` for [`Kernel::Split`], 1 otherwise.
    pub fn split(&self) -> u32 {
        match *self {
            Kernel::Split { split, .. } => split,
            _ => 1,
        }
    }

    /// Parses `"simt"`, `"tiled"`, `"triangle"` or `"auto"` with the given
    /// block size, and `"split"` with it and [`Kernel::default_split`].
    pub fn from_name(name: &str, block: u32) -> Option<Kernel> {
        match name {
            "simt" => Some(Kernel::Simt { block }),
            "tiled" => Some(Kernel::Tiled { block }),
            "triangle" => Some(Kernel::Triangle { block }),
            "split" => Some(Kernel::Split {
                block,
                split: Kernel::default_split(block),
            }),
            "auto" => Some(Kernel::Auto),
            _ => None,
        }
    }

    /// The split that `"split"` without one means: 16 threads per body, or
    /// the block's size if smaller.
    pub fn default_split(block: u32) -> u32 {
        block.clamp(1, 16)
    }

    /// A stable one-byte code of the family, for files (checkpoints).
    pub(crate) fn code(&self) -> u8 {
        match self {
            Kernel::Simt { .. } => 0,
            Kernel::Tiled { .. } => 1,
            Kernel::Triangle { .. } => 2,
            Kernel::Split { .. } => 3,
            Kernel::Auto => 4,
        }
    }

    /// The 32-bit word files store beside [`code`](Self::code): the block
    /// size, and for [`Kernel::Split`] the split in the upper half (blocks
    /// and splits are at most 1024), so a file written before the split
    /// kernel existed reads the same.
    pub(crate) fn block_word(&self) -> u32 {
        match *self {
            Kernel::Split { block, split } => block | split << 16,
            _ => self.block(),
        }
    }

    /// The kernel of a [`code`](Self::code) and [`block_word`](Self::block_word).
    pub(crate) fn from_code(code: u8, word: u32) -> Option<Kernel> {
        let block = word & 0xffff;
        match code {
            3 => Some(Kernel::Split {
                block,
                split: word >> 16,
            }),
            4 => Some(Kernel::Auto),
            _ => ["simt", "tiled", "triangle"]
                .get(code as usize)
                .and_then(|name| Kernel::from_name(name, word)),
        }
    }

    /// The largest block size the kernel family accepts.
    pub fn max_block(&self) -> u32 {
        match self {
            Kernel::Triangle { .. } => shape::TRIANGLE_MAX_BLOCK,
            _ => shape::MAX_BLOCK,
        }
    }

    /// Checks the block size: a power of two in `32..=`[`max_block`](Self::max_block)
    /// ([`Error::InvalidBlockSize`]), and a split's threads per body (a
    /// power of two from 1 to the block size, [`Error::InvalidParameter`]).
    pub fn validate(&self) -> Result<()> {
        let (block, max) = (self.block(), self.max_block());
        if !(shape::is_valid_block(block) && block <= max) {
            return Err(Error::InvalidBlockSize {
                block,
                kernel: self.name(),
                max,
            });
        }
        if let Kernel::Split { block, split } = *self
            && !shape::is_valid_split(block, split)
        {
            return Err(Error::InvalidParameter {
                name: "split (threads per body)",
                value: split as f64,
                requirement: "must be a power of two from 1 to the block size",
            });
        }
        Ok(())
    }

    /// The kernel [`Kernel::Auto`] becomes for `n` bodies on a GPU with
    /// `multiprocessors` SMs (`None`: 132, the H100 SXM's and H200's count), from
    /// the H200's measurements (docs/gpu/): the triangle kernel wherever
    /// its grid gives every SM at least 8 blocks (block 128 where it gives
    /// 32, else 64: at N = 16,384 block 64 ran 1.36e12 interactions/s
    /// against 7.8e11 at the old default 256), else the split kernel with
    /// enough threads per body for about 1024 threads per SM (N = 4,096 on
    /// 132 SMs: 32 per body, 131,072 threads, against 2,048 for the tiled
    /// kernel), at least 8 bodies per block.
    pub fn choose(n: usize, multiprocessors: Option<u32>) -> Kernel {
        let sms = multiprocessors.unwrap_or(NOMINAL_MULTIPROCESSORS).max(1) as u64;
        let n32 = n.min(shape::MAX_BODIES as usize) as u32;
        // Larger blocks only where the grid would exceed CUDA's limit.
        for block in [128, 256, 512] {
            if shape::triangle(n32, block).is_some() {
                if shape::triangle_blocks(n32, block) >= 32 * sms {
                    return Kernel::Triangle { block };
                }
                break;
            }
        }
        if shape::triangle_blocks(n32, 64) >= 8 * sms {
            if shape::triangle(n32, 64).is_some() {
                return Kernel::Triangle { block: 64 };
            }
            // Past every triangle grid: the tiled kernel's best block.
            return Kernel::Tiled { block: 1024 };
        }
        let target = 1024 * sms;
        let split = target
            .div_ceil(n.max(1) as u64)
            .next_power_of_two()
            .clamp(1, 64) as u32;
        let block = if split >= 16 { 512 } else { 256 };
        Kernel::Split {
            block,
            split: split.min(block / 8),
        }
    }
}

impl Default for Kernel {
    /// [`Kernel::Auto`]: the kernel, block and split chosen from `N` and the
    /// device when the simulation is built (`Tiled { block: 256 }`, NVIDIA
    /// Warp's N-body example, on the CPU backend).
    fn default() -> Self {
        Kernel::Auto
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kernel::Split { block, split } => write!(f, "split(block={block}, split={split})"),
            Kernel::Auto => write!(f, "auto"),
            _ => write!(f, "{}(block={})", self.name(), self.block()),
        }
    }
}

/// Whether the gravity plan queues a batch of steps as one CUDA graph
/// (captured once, replayed for every batch of the same length) instead of
/// launching each kernel: a graph saves the host's launch calls and the
/// device's per-launch gaps, which matter only where a step is short
/// (docs/gpu/issue-23-whole-step.md, "CUDA graphs"). Same bits either way;
/// devices without graphs (the emulator, the CPU) ignore it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Graphs {
    /// Graphs below [`Graphs::AUTO_MAX_N`] bodies, launches above.
    #[default]
    Auto,
    /// Always graphs.
    On,
    /// Never graphs: one launch per kernel.
    Off,
}

impl Graphs {
    /// The largest N for which [`Graphs::Auto`] uses graphs. Measured on an
    /// H200 (2026-11-27, docs/gpu/2026-11-27-h200-run6.md), 512-step runs
    /// with the default kernel: graphs gave 0.66x the interactions/s of
    /// plain launches at N = 4,096 and 0.87x at N = 16,384 (the capture and
    /// instantiation of a 512-step graph cost more than the launches they
    /// save once a step's kernels run 20 us or longer). Below 4,096, where a
    /// step is launch-bound, graphs are kept (not yet measured there).
    pub const AUTO_MAX_N: usize = 2_048;

    /// Whether a plan of `n` bodies uses graphs.
    pub fn enabled(self, n: usize) -> bool {
        match self {
            Graphs::Auto => n <= Graphs::AUTO_MAX_N,
            Graphs::On => true,
            Graphs::Off => false,
        }
    }

    /// `"auto"`, `"on"`, `"off"`.
    pub fn name(self) -> &'static str {
        match self {
            Graphs::Auto => "auto",
            Graphs::On => "on",
            Graphs::Off => "off",
        }
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
    graphs: Graphs,
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
            graphs: Graphs::Auto,
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

    /// These parameters with `kernel` (a valid one: a resolved
    /// [`Kernel::Auto`], a kernel read back from a run).
    pub(crate) fn with_kernel(self, kernel: Kernel) -> Params {
        debug_assert!(kernel.validate().is_ok(), "{kernel}");
        Params { kernel, ..self }
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

    /// These parameters with CUDA graphs `graphs` for the gravity plan.
    pub fn with_graphs(self, graphs: Graphs) -> Params {
        Params { graphs, ..self }
    }

    /// Whether the gravity plan queues its steps as CUDA graphs
    /// ([`Graphs::Auto`] unless set).
    pub fn graphs(&self) -> Graphs {
        self.graphs
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
    /// tiled kernel with 256 threads, semi-implicit Euler (what a built
    /// simulation of [`Kernel::Auto`] on the CPU holds).
    fn default() -> Self {
        Params {
            dt: 0.01,
            dt64: 0.01,
            force: ForceLaw::default(),
            kernel: Kernel::Tiled {
                block: DEFAULT_BLOCK,
            },
            integrator: Integrator::default(),
            boundary: Boundary::Open,
            neighbours: Neighbours::Auto,
            ensemble: Ensemble::Nve,
            graphs: Graphs::Auto,
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
            Kernel::Split {
                block: 256,
                split: 16,
            },
            Kernel::Auto,
        ] {
            assert_eq!(Kernel::from_name(k.name(), k.block()), Some(k));
            assert_eq!(Kernel::from_code(k.code(), k.block_word()), Some(k));
        }
        // A split's threads per body survive the file word.
        let k = Kernel::Split {
            block: 1024,
            split: 1024,
        };
        assert_eq!(Kernel::from_code(k.code(), k.block_word()), Some(k));
        // Files written before the split kernel read as before.
        assert_eq!(
            Kernel::from_code(1, 256),
            Some(Kernel::Tiled { block: 256 })
        );
        for i in [Integrator::SemiImplicitEuler, Integrator::Leapfrog] {
            assert_eq!(Integrator::from_name(i.name()), Some(i));
        }
        assert_eq!(Kernel::from_name("warp", 32), None);
    }

    #[test]
    fn split_kernels_are_validated() {
        for split in [0, 3, 512] {
            let e = Kernel::Split { block: 256, split }.validate().unwrap_err();
            assert!(e.to_string().contains("split"), "{e}");
            assert!(e.to_string().contains(&split.to_string()), "{e}");
        }
        assert!(
            Kernel::Split {
                block: 64,
                split: 64
            }
            .validate()
            .is_ok()
        );
        assert!(Kernel::Auto.validate().is_ok());
    }

    /// Issue 23: the automatic choice fills a 132-SM GPU at N = 4096 with
    /// at least 65,536 force threads (the tiled kernel launched 2,048), and
    /// moves to the triangle kernel, at the blocks the H200 measured best,
    /// once its grid fills the device.
    #[test]
    fn the_automatic_choice_fills_the_gpu() {
        for n in [1, 2, 100, 1000, 4096, 8000] {
            let k = Kernel::choose(n, Some(132));
            let Kernel::Split { block, split } = k else {
                panic!("N = {n}: {k}");
            };
            k.validate().unwrap();
            let s = shape::split(n as u32, block, split);
            assert!(block / split >= 8, "N = {n}: {k}");
            if n >= 4096 {
                assert!(s.grid * s.block >= 65_536, "N = {n}: {k}: {s:?}");
            }
        }
        assert_eq!(
            Kernel::choose(16_384, Some(132)),
            Kernel::Triangle { block: 64 }
        );
        assert_eq!(
            Kernel::choose(65_536, Some(132)),
            Kernel::Triangle { block: 128 }
        );
        assert_eq!(
            Kernel::choose(1 << 20, Some(132)),
            Kernel::Triangle { block: 128 }
        );
        // Where no triangle grid fits CUDA's limit, the tiled kernel; every
        // choice is a plan that can be made.
        assert_eq!(Kernel::choose(1 << 30, None), Kernel::Tiled { block: 1024 });
        assert_eq!(
            Kernel::choose(1 << 26, None),
            Kernel::Triangle { block: 512 }
        );
        for n in [1usize, 5000, 1 << 25, 1 << 26, 1 << 28, 1 << 30] {
            let p = Params::default().with_kernel(Kernel::choose(n, Some(132)));
            assert!(crate::plan::Plan::new(n, p).is_ok(), "N = {n}");
        }
        // Fewer multiprocessors: the triangle's grid fills them sooner.
        assert_eq!(
            Kernel::choose(8192, Some(16)),
            Kernel::Triangle { block: 64 }
        );
        assert_eq!(Kernel::choose(4096, None), Kernel::choose(4096, Some(132)));
    }
}
