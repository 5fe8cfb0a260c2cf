//! The block-pair primitive: forces and potential between two blocks of
//! bodies, in every backend ([`BlockForces`], made by
//! [`Backend::block_forces`](crate::Backend::block_forces)).
//!
//! A simulation split over several processes (the `distributed` module,
//! feature `mpi`: a ring of MPI ranks) or over several GPUs of one machine
//! splits the N^2 interactions into pairs of blocks `(I, J)`: each worker
//! owns a block `I` and is handed blocks `J` in turn. This is that unit of
//! work, as one object per device: the CPU backend runs it on its SIMD
//! loops (all-pairs, and the Newton's-third-law tiles on a rectangle of
//! block pairs), the emulator and CUDA launch the `block_pair` kernel family
//! of `gpu-kernels` through the plan (`plan/block_pair.rs`), the triangle
//! kernel for the pairs within one block and the energy kernel for its
//! potential.
//!
//! Bodies are [`Vec4`] `[x, y, z, m]` (the kernels' layout); accelerations
//! are [`Vec4`] whose `w` is left as it is. Nothing is scaled by `G`: the
//! caller multiplies the finished sums once (as every engine does), so sums
//! over many blocks need no rescaling.
//!
//! ```
//! use nbody_host::gpu_kernels::Vec4;
//! use nbody_host::{Backend, ForceLaw, Integrator, Kernel, Params};
//!
//! let params = Params::new(0.01, ForceLaw::gravity(1.0, 0.1)?, Kernel::default(), Integrator::Leapfrog)?;
//! let mut forces = Backend::cpu().block_forces(&params, 1.0)?;
//! let i = [Vec4::new(0.0, 0.0, 0.0, 1.0)];
//! let j = [Vec4::new(2.0, 0.0, 0.0, 3.0), Vec4::new(-2.0, 0.0, 0.0, 1.0)];
//! let (mut acc_i, mut react_j) = ([Vec4::ZERO; 1], [Vec4::ZERO; 2]);
//! forces.pull_pair(&i, &j, &mut acc_i, &mut react_j)?;
//! // 3 * 2 / (4 + 0.01)^1.5 towards +x, 1 * 2 / ... towards -x.
//! assert!((acc_i[0].x - 4.0 / 4.01f32.powf(1.5)).abs() < 1e-6);
//! assert!((react_j[0].x + 2.0 / 4.01f32.powf(1.5)).abs() < 1e-6);
//! # Ok::<(), nbody_host::Error>(())
//! ```

use gpu_kernels::Vec4;
use gpu_kernels::shape::MAX_BODIES;

use crate::config::Params;
use crate::engine::BackendKind;
use crate::error::{Error, Result};
use crate::force::Gravity;

/// Forces and potential between blocks of bodies on one device, without
/// `G`. Sums are in `f32` (forces) and `f64` (potentials), each in an order
/// fixed by the block sizes and the backend's tuning, so the same calls give
/// the same bits (on the emulator and CUDA, the third-law forms add with
/// float atomics: see [`pull_pair`](Self::pull_pair)).
///
/// Every slice pair must have equal lengths (`acc_i` as `i`, `react_j` as
/// `j`), else [`Error::Unsupported`] names them; empty blocks are allowed
/// and change nothing.
pub trait BlockForces: Send {
    /// The device the blocks run on.
    fn kind(&self) -> BackendKind;

    /// Adds to `acc_i[k]` the pull of every body of `j` on body `i[k]`:
    /// `sum_j m_j r / (|r|^2 + eps^2)^(3/2)`. `i` and `j` may be the same
    /// bodies (the diagonal of an all-pairs ring): a body's pull on itself
    /// is exactly zero.
    fn pull(&mut self, i: &[Vec4], j: &[Vec4], acc_i: &mut [Vec4]) -> Result<()>;

    /// Newton's third law across two blocks of different bodies: each pair
    /// once, adding the pull of `j` on `i` to `acc_i` and the pull of `i`
    /// on `j` to `react_j`. About half the arithmetic of two [`pull`](Self::pull)s.
    /// On the emulator and CUDA the partial sums are added with float
    /// atomics, whose order (and so the last bits) may vary between runs.
    fn pull_pair(
        &mut self,
        i: &[Vec4],
        j: &[Vec4],
        acc_i: &mut [Vec4],
        react_j: &mut [Vec4],
    ) -> Result<()>;

    /// Adds to `acc_i` the pull of the other bodies of `i`, each pair
    /// computed once (Newton's third law).
    fn pull_within(&mut self, i: &[Vec4], acc_i: &mut [Vec4]) -> Result<()>;

    /// `sum_{a < b} m_a m_b / sqrt(|r_ab|^2 + eps^2)` over the pairs within
    /// `i`, in `f64` (the potential energy is `-G` times it).
    fn potential_within(&mut self, i: &[Vec4]) -> Result<f64>;

    /// `sum_{a in i, b in j} m_a m_b / sqrt(|r_ab|^2 + eps^2)` over the pairs
    /// between two blocks of different bodies, in `f64`.
    fn potential_between(&mut self, i: &[Vec4], j: &[Vec4]) -> Result<f64>;
}

/// What a backend implements for [`BlockForces`]: the same operations on
/// blocks that [`Checked`] has already checked, once for every backend (the
/// CPU's loops, and the launch devices' [`PairForces`](crate::plan::block_pair::PairForces)):
/// every slice pair has equal lengths, no block has more than
/// [`MAX_BODIES`] bodies, and none is empty (an empty block changes
/// nothing, so `Checked` answers those calls itself).
pub(crate) trait BlockPairs: Send {
    /// [`BlockForces::kind`].
    fn kind(&self) -> BackendKind;
    /// [`BlockForces::pull`].
    fn pull(&mut self, i: &[Vec4], j: &[Vec4], acc_i: &mut [Vec4]) -> Result<()>;
    /// [`BlockForces::pull_pair`].
    fn pull_pair(
        &mut self,
        i: &[Vec4],
        j: &[Vec4],
        acc_i: &mut [Vec4],
        react_j: &mut [Vec4],
    ) -> Result<()>;
    /// [`BlockForces::pull_within`].
    fn pull_within(&mut self, i: &[Vec4], acc_i: &mut [Vec4]) -> Result<()>;
    /// [`BlockForces::potential_within`].
    fn potential_within(&mut self, i: &[Vec4]) -> Result<f64>;
    /// [`BlockForces::potential_between`].
    fn potential_between(&mut self, i: &[Vec4], j: &[Vec4]) -> Result<f64>;
}

/// [`BlockForces`] for any backend's [`BlockPairs`]: the blocks' checks,
/// written once, before the backend sees them.
pub(crate) struct Checked<B>(pub(crate) B);

impl<B: BlockPairs> BlockForces for Checked<B> {
    fn kind(&self) -> BackendKind {
        self.0.kind()
    }

    fn pull(&mut self, i: &[Vec4], j: &[Vec4], acc_i: &mut [Vec4]) -> Result<()> {
        check_block("I", i, acc_i)?;
        check_len(j)?;
        if i.is_empty() || j.is_empty() {
            return Ok(());
        }
        self.0.pull(i, j, acc_i)
    }

    fn pull_pair(
        &mut self,
        i: &[Vec4],
        j: &[Vec4],
        acc_i: &mut [Vec4],
        react_j: &mut [Vec4],
    ) -> Result<()> {
        check_block("I", i, acc_i)?;
        check_block("J", j, react_j)?;
        if i.is_empty() || j.is_empty() {
            return Ok(());
        }
        self.0.pull_pair(i, j, acc_i, react_j)
    }

    fn pull_within(&mut self, i: &[Vec4], acc_i: &mut [Vec4]) -> Result<()> {
        check_block("I", i, acc_i)?;
        if i.is_empty() {
            return Ok(());
        }
        self.0.pull_within(i, acc_i)
    }

    fn potential_within(&mut self, i: &[Vec4]) -> Result<f64> {
        check_len(i)?;
        if i.is_empty() {
            return Ok(0.0);
        }
        self.0.potential_within(i)
    }

    fn potential_between(&mut self, i: &[Vec4], j: &[Vec4]) -> Result<f64> {
        check_len(i)?;
        check_len(j)?;
        if i.is_empty() || j.is_empty() {
            return Ok(0.0);
        }
        self.0.potential_between(i, j)
    }
}

/// Softened gravity's parameters, or [`Error::Unsupported`] for a force
/// law the block-pair kernels do not evaluate.
pub(crate) fn gravity_of(params: &Params) -> Result<Gravity> {
    params.gravity_for("the block-pair primitive")
}

/// Checks that `acc` matches `bodies` in length (`what` names them) and that
/// the block fits the kernels' 32-bit indices.
fn check_block(what: &str, bodies: &[Vec4], acc: &[Vec4]) -> Result<()> {
    if bodies.len() != acc.len() {
        return Err(Error::Unsupported(format!(
            "block pair: {what} has {} bodies but {} accelerations",
            bodies.len(),
            acc.len()
        )));
    }
    check_len(bodies)
}

/// A block of at most [`MAX_BODIES`] bodies ([`Error::TooManyBodies`]).
fn check_len(bodies: &[Vec4]) -> Result<()> {
    if bodies.len() > MAX_BODIES as usize {
        return Err(Error::TooManyBodies {
            n: bodies.len(),
            max: MAX_BODIES as usize,
        });
    }
    Ok(())
}

/// The guard decision for a run whose heaviest body (over all blocks, of
/// every rank) is `max_mass`; [`Error::Unsupported`] for a mass that is not
/// finite and `>= 0`.
pub(crate) fn needs_guard(params: &Params, max_mass: f32) -> Result<bool> {
    if !(max_mass.is_finite() && max_mass >= 0.0) {
        return Err(Error::Unsupported(format!(
            "block pair: the largest mass {max_mass} must be finite and >= 0"
        )));
    }
    Ok(gravity_of(params)?.needs_guard(max_mass))
}
