//! Direct-summation N-body gravity on NVIDIA GPUs (CUDA, PTX compiled from the
//! `gpu-kernels` crate), on a multithreaded SIMD CPU backend, or in a CPU
//! emulator of the CUDA execution model that runs the very kernel code.
//!
//! ```
//! use nbody_host::{Backend, Integrator, Kernel, Simulation, ic};
//!
//! let bodies = ic::uniform_cube(512, 42); // NVIDIA Warp's N-body set-up
//! let mut sim = Simulation::builder(bodies)
//!     .softening(0.1)
//!     .dt(0.01)
//!     .gravitational_constant(1.0)
//!     .kernel(Kernel::Tiled { block: 128 })
//!     .integrator(Integrator::SemiImplicitEuler)
//!     .backend(Backend::cpu())
//!     .build()?;
//! let e0 = sim.energy()?;
//! sim.step(10)?;
//! let state = sim.state()?;
//! assert_eq!((state.step, state.bodies.len()), (10, 512));
//! println!("{}: dE/E = {:.2e}", sim.backend(), sim.energy()?.relative_change_from(&e0));
//! # Ok::<(), nbody_host::Error>(())
//! ```
//!
//! | module | what |
//! | --- | --- |
//! | [`Simulation`] | build, step, read state and diagnostics |
//! | [`ic`] | seeded initial conditions |
//! | [`snapshot`] | `.npy` snapshots, checkpoints to resume from |
//! | [`oracle`] | the `f64` all-pairs reference every backend is tested against |
//! | [`md`] | short-range molecular dynamics: periodic boxes, neighbour lists, thermo |
//! | [`trajectory`] | frames of a periodic run appended to XYZ, DCD or LAMMPS dump files |
//! | [`analysis`] | `g(r)` per type pair and the mean-squared displacement, as LAMMPS computes them |
//! | [`hermite`] | collisional N-body: 4th-order Hermite with block time steps, f64 |
//! | [`pair`] | short-range pair potentials (Lennard-Jones, ...) with coefficients per pair of atom types |
//! | [`emulator`] | run any kernel body on CPU threads, with a race detector |
//! | [`block_pair`] | forces and potential between two blocks of bodies, on every backend |
//! | `distributed` | a run over MPI ranks, forces by a systolic ring (feature `mpi`) |
//! | `render` | frames, animated GIFs and energy plots (feature `render`) |
#![deny(missing_docs)]

pub mod analysis;
mod backend;
pub mod block_pair;
mod config;
mod cpu;
mod cuda;
// Distributed runs over MPI (feature `mpi`); the ring's schedule is
// compiled, and unit-tested, in every build.
#[cfg(feature = "mpi")]
pub mod distributed;
#[cfg(not(feature = "mpi"))]
#[allow(
    dead_code,
    reason = "without `mpi` only the schedule is compiled, for its unit tests"
)]
mod distributed;
pub mod emulator;
mod engine;
mod error;
mod force;
pub mod hermite;
pub mod ic;
mod integrator;
mod isa;
pub mod md;
mod memory;
pub mod oracle;
pub mod pair;
// Launch plans: what the CUDA engine (feature `cuda`) and the emulator execute.
mod plan;
#[cfg(feature = "render")]
pub mod render;
mod simulation;
pub mod snapshot;
mod state;
pub mod trajectory;
pub mod tuning;

pub use backend::Backend;
pub use config::{DEFAULT_BLOCK, Graphs, Kernel, Params};
pub use cpu::CpuTuning;
pub use engine::BackendKind;
pub use error::{Error, Result};
pub use force::{ForceLaw, Gravity};
pub use hermite::{HermiteSettings, HermiteStats, Precision};
pub use integrator::Integrator;
pub use isa::Isa;
pub use md::{Boundary, Ensemble, Neighbours, Rebuild, Thermo};
pub use pair::{PairPotential, PairStyle};
pub use simulation::{Simulation, SimulationBuilder};
pub use snapshot::Checkpoint;
pub use state::{Bodies, Body, Energy, Momentum, State};
pub use tuning::TuningProfile;

/// The PTX module of all kernels, built from `gpu-kernels` by
/// `scripts/build-ptx.sh` (sm_70, PTX ISA 7.0) and checked in CI to match the source.
pub const PTX: &str = include_str!("../ptx/gpu_kernels.ptx");

/// `docs/library.md`, whose examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/library.md")]
pub struct LibraryGuide;

/// `docs/md.md`: any Rust example added to it runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../docs/md.md")]
pub struct MdGuide;

/// `docs/render.md`: any Rust example added to it runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../docs/render.md")]
pub struct RenderGuide;

/// `docs/performance.md`: any Rust example added to it runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../docs/performance.md")]
pub struct PerformanceGuide;

/// `README.md`, whose examples run as doctests: they use only `nbody_host`
/// and its re-exports, as a crate depending on it would.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct Readme;

/// The vector types of the public API (`glam::Vec3`, `glam::DVec3`).
pub use glam;
/// The kernel crate: the execution model ([`gpu_kernels::exec::Exec`]),
/// launch shapes, the body layout ([`gpu_kernels::Vec4`]) and the kernel
/// table, for running kernels in the [`emulator`].
pub use gpu_kernels;
