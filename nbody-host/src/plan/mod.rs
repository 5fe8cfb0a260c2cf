//! Launch plans: an integrator's stages lowered to kernel launches, as data.
//!
//! The CUDA backend and the emulator both execute these plans (one engine,
//! [`engine::PlanEngine`], through the one step loop of [`run`], over the
//! one device model of [`device`]), so they launch exactly the same kernels
//! with the same grids, shared memory and arguments: what the emulator
//! verifies on the CPU is what the GPU runs. The plan is made once per
//! simulation; stepping allocates nothing.
//!
//! Lowering ([`Plan::lower`]): the integrator's stages
//! ([`Stage`](crate::integrator::Stage)) become launches of the kernels of
//! the [`entry`](gpu_kernels::entry) table. A force evaluation followed by a
//! kick and a drift by the same `dt` becomes one fused kernel where the
//! kernel family has one (SIMT and tiled); a kick followed by a drift by the
//! same `dt` becomes one fused per-body kernel.

pub(crate) mod block_pair;
pub(crate) mod device;
pub(crate) mod engine;
pub(crate) mod hermite;
pub(crate) mod md;
pub(crate) mod run;

use gpu_kernels::entry::{Entry, Launch};
use gpu_kernels::shape::{self, LaunchShape};

use crate::config::{Kernel, Params};
use crate::error::{Error, Result};
use crate::force::Gravity;
use crate::integrator::Stage;

/// Block size of the one-thread-per-body kernels (kick, drift, kick-drift, check).
pub const ELEMENTWISE_BLOCK: u32 = 256;

/// A device buffer, by role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Buf {
    /// Current positions and masses (`n` × `Vec4`).
    PosIn,
    /// The other position buffer, written by a step (`n` × `Vec4`).
    PosOut,
    /// Velocities (`n` × `Vec4`).
    Vel,
    /// Accelerations (`n` × `Vec4`).
    Acc,
    /// Energy partial sums ([`shape::energy_partials`] × `f64`).
    Partials,
    /// Divergence flag (2 × `u32`, see [`gpu_kernels::integrate::check_finite`]).
    Flag,
}

/// One operation of a plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// Launch a kernel with this shape (skipped when the grid is empty).
    Launch(Launch<Buf>, LaunchShape),
    /// Set every acceleration to zero (before the triangle kernel accumulates).
    ZeroAcc,
    /// Swap the roles of [`Buf::PosIn`] and [`Buf::PosOut`].
    SwapPositions,
}

/// The operations of one simulation, made once from `(N, Params)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    n: u32,
    params: Params,
    /// The force law's parameters (the plan runs gravity only).
    gravity: Gravity,
    /// Whether the force kernels use the guarded interaction (zero softening).
    guard: bool,
    prepare: Vec<Op>,
    step: Vec<Op>,
    accelerations: Vec<Op>,
    energy: Op,
}

impl Plan {
    /// The plan for `bodies`: the guarded force kernels where the force law
    /// needs them for these masses (zero softening), the others otherwise.
    pub fn for_bodies(bodies: &crate::state::Bodies, params: Params) -> Result<Plan> {
        let max_mass = bodies.masses.iter().fold(0.0f32, |m, &w| m.max(w));
        let guard = params.gravity().is_some_and(|g| g.needs_guard(max_mass));
        Plan::build(bodies.len(), params, guard)
    }

    /// A plan with the unguarded force kernels (for shape checks and tests),
    /// or an error if the kernel cannot schedule `n` bodies.
    pub fn new(n: usize, params: Params) -> Result<Plan> {
        Plan::build(n, params, false)
    }

    fn build(n: usize, params: Params, guard: bool) -> Result<Plan> {
        if n == 0 {
            return Err(Error::NoBodies);
        }
        // A device that knows its multiprocessors chose already
        // (`PlanEngine::new`); here, for a nominal GPU.
        let params = match params.kernel() {
            Kernel::Auto => params.with_kernel(Kernel::choose(n, None)),
            _ => params,
        };
        // The force side of a plan: gravity's kernel families. Short-range
        // force laws run on their own plan (`md::MdPlan`, through
        // `md::MdPlanEngine`), which `backend::create` starts instead.
        let gravity = params.gravity_for(
            "the all-pairs GPU plan (pair potentials run on the MD plan: cells, Verlet lists, \
             velocity Verlet, which Simulation starts for them)",
        )?;
        if n > shape::MAX_BODIES as usize {
            return Err(Error::TooManyBodies {
                n,
                max: shape::MAX_BODIES as usize,
            });
        }
        if let Kernel::Triangle { block } = params.kernel() {
            let blocks = shape::triangle_blocks(n as u32, block);
            if blocks > shape::MAX_GRID as u64 {
                return Err(Error::GridTooLarge {
                    kernel: "triangle",
                    n,
                    block,
                    blocks,
                    max: shape::MAX_GRID,
                });
            }
        }
        let integrator = params.integrator();
        let mut plan = Plan {
            n: n as u32,
            params,
            gravity,
            guard,
            prepare: Vec::new(),
            step: Vec::new(),
            accelerations: Vec::new(),
            energy: Op::ZeroAcc,
        };
        plan.accelerations = plan.force_ops();
        plan.prepare = plan.lower(integrator.prepare());
        plan.step = plan.lower(integrator.step());
        plan.energy = plan.energy_op();
        Ok(plan)
    }

    /// Number of bodies.
    pub fn n(&self) -> u32 {
        self.n
    }

    /// The kernel family that enumerates the pairs (`"simt"`, ...).
    pub fn kernel_name(&self) -> &'static str {
        self.params.kernel().name()
    }

    /// Whether a device with graphs queues the steps as CUDA graphs
    /// ([`Graphs`](crate::Graphs), resolved by N).
    pub fn graphs(&self) -> bool {
        self.params.graphs().enabled(self.n as usize)
    }

    /// The kernel the plan launches (never [`Kernel::Auto`]).
    pub fn kernel(&self) -> Kernel {
        self.params.kernel()
    }

    /// What runs once before the first step (leapfrog's first accelerations).
    pub fn prepare(&self) -> &[Op] {
        &self.prepare
    }

    /// One step. Afterwards [`Buf::PosIn`] holds the new positions.
    pub fn step(&self) -> &[Op] {
        &self.step
    }

    /// `acc = a(PosIn)` (`G`-scaled), by the configured kernel.
    pub fn accelerations(&self) -> &[Op] {
        &self.accelerations
    }

    /// Energy partial sums of the `PosIn` positions into [`Buf::Partials`];
    /// the host adds them up ([`Plan::finish_energy`]).
    pub fn energy(&self) -> &Op {
        &self.energy
    }

    /// Every op any method of the plan returns (the check with step 1).
    pub fn every_op(&self) -> impl Iterator<Item = Op> + '_ {
        self.prepare
            .iter()
            .chain(&self.step)
            .chain(&self.accelerations)
            .copied()
            .chain([self.energy, self.check(1)])
    }

    /// Every launch of [`every_op`](Self::every_op), as entry point and
    /// shape: what a device checks before anything is allocated.
    pub fn every_launch(&self) -> Vec<(Entry, LaunchShape)> {
        self.every_op()
            .filter_map(|op| match op {
                Op::Launch(launch, shape) => Some((launch.entry(), shape)),
                _ => None,
            })
            .collect()
    }

    /// Largest dynamic shared memory any launch of this plan asks for.
    pub fn max_shared_bytes(&self) -> u32 {
        self.every_launch()
            .iter()
            .map(|(_, shape)| shape.shared_bytes)
            .max()
            .unwrap_or(0)
    }

    /// Device bytes of every buffer the plan's engine allocates: two
    /// position buffers, velocities and accelerations (16 bytes per body
    /// each), the energy partial sums (`f64`) and the two-word divergence
    /// flag; checked against a device's free memory before allocating.
    pub fn device_bytes(&self) -> u64 {
        4 * 16 * self.n as u64 + 8 * self.energy_partials_len() as u64 + 8
    }

    /// The integrator's stages as operations (see the module documentation).
    fn lower(&self, stages: &[Stage]) -> Vec<Op> {
        let mut ops = Vec::new();
        let mut rest = stages;
        while !rest.is_empty() {
            let taken = match *rest {
                [Stage::Accelerations, Stage::Kick(a), Stage::Drift(b), ..]
                    if a == b && self.fused_euler(a * self.params.dt()).is_some() =>
                {
                    let launch = self.fused_euler(a * self.params.dt());
                    ops.extend(launch.map(|(l, s)| Op::Launch(l, s)));
                    ops.push(Op::SwapPositions);
                    3
                }
                [Stage::Kick(a), Stage::Drift(b), ..] if a == b => {
                    let h = a * self.params.dt();
                    ops.push(self.per_body(Launch::KickDrift {
                        pos_in: Buf::PosIn,
                        pos_out: Buf::PosOut,
                        vel: Buf::Vel,
                        acc: Buf::Acc,
                        n: self.n,
                        dt: h,
                    }));
                    ops.push(Op::SwapPositions);
                    2
                }
                [Stage::Accelerations, ..] => {
                    ops.extend_from_slice(&self.accelerations);
                    1
                }
                [Stage::Kick(f), ..] => {
                    ops.push(self.per_body(Launch::Kick {
                        vel: Buf::Vel,
                        acc: Buf::Acc,
                        n: self.n,
                        dt: f * self.params.dt(),
                    }));
                    1
                }
                [Stage::Drift(f), ..] => {
                    ops.push(self.per_body(Launch::Drift {
                        pos_in: Buf::PosIn,
                        pos_out: Buf::PosOut,
                        vel: Buf::Vel,
                        n: self.n,
                        dt: f * self.params.dt(),
                    }));
                    ops.push(Op::SwapPositions);
                    1
                }
                [] => unreachable!("the loop stops at the end"),
            };
            rest = &rest[taken..];
        }
        ops
    }

    fn per_body(&self, launch: Launch<Buf>) -> Op {
        Op::Launch(launch, shape::per_body(self.n, ELEMENTWISE_BLOCK))
    }

    /// The force law through the kernel family: `acc = a(PosIn)`.
    fn force_ops(&self) -> Vec<Op> {
        let n = self.n;
        let gravity = self.gravity;
        let (pos, acc, g, eps2) = (Buf::PosIn, Buf::Acc, gravity.g(), gravity.eps2());
        match (self.params.kernel(), self.guard) {
            (Kernel::Simt { block }, guard) => {
                let launch = if guard {
                    Launch::SimtAccelGuarded {
                        pos,
                        acc,
                        n,
                        g,
                        eps2,
                    }
                } else {
                    Launch::SimtAccel {
                        pos,
                        acc,
                        n,
                        g,
                        eps2,
                    }
                };
                vec![Op::Launch(launch, shape::per_body(n, block))]
            }
            (Kernel::Tiled { block }, guard) => {
                let launch = if guard {
                    Launch::TiledAccelGuarded {
                        pos,
                        acc,
                        n,
                        g,
                        eps2,
                    }
                } else {
                    Launch::TiledAccel {
                        pos,
                        acc,
                        n,
                        g,
                        eps2,
                    }
                };
                vec![Op::Launch(launch, shape::tiled(n, block))]
            }
            (Kernel::Triangle { block }, guard) => {
                let launch = triangle_launch(guard, pos, acc, n, g, eps2);
                let shape = shape::triangle(n, block).expect("grid checked in Plan::new");
                vec![Op::ZeroAcc, Op::Launch(launch, shape)]
            }
            (Kernel::Split { block, split }, guard) => {
                let launch = if guard {
                    Launch::SplitAccelGuarded {
                        pos,
                        acc,
                        n,
                        split,
                        g,
                        eps2,
                    }
                } else {
                    Launch::SplitAccel {
                        pos,
                        acc,
                        n,
                        split,
                        g,
                        eps2,
                    }
                };
                vec![Op::Launch(launch, shape::split(n, block, split))]
            }
            (Kernel::Auto, _) => unreachable!("resolved in Plan::build"),
        }
    }

    /// The kernel that computes the forces and moves the bodies by `dt` in
    /// one launch (semi-implicit Euler), where the kernel family has one.
    fn fused_euler(&self, dt: f32) -> Option<(Launch<Buf>, LaunchShape)> {
        let n = self.n;
        let gravity = self.gravity;
        let (pos_in, pos_out, vel) = (Buf::PosIn, Buf::PosOut, Buf::Vel);
        let (g, eps2) = (gravity.g(), gravity.eps2());
        let (launch, shape) = match (self.params.kernel(), self.guard) {
            (Kernel::Simt { block }, false) => (
                Launch::SimtEuler {
                    pos_in,
                    pos_out,
                    vel,
                    n,
                    dt,
                    g,
                    eps2,
                },
                shape::per_body(n, block),
            ),
            (Kernel::Simt { block }, true) => (
                Launch::SimtEulerGuarded {
                    pos_in,
                    pos_out,
                    vel,
                    n,
                    dt,
                    g,
                    eps2,
                },
                shape::per_body(n, block),
            ),
            (Kernel::Tiled { block }, false) => (
                Launch::TiledEuler {
                    pos_in,
                    pos_out,
                    vel,
                    n,
                    dt,
                    g,
                    eps2,
                },
                shape::tiled(n, block),
            ),
            (Kernel::Tiled { block }, true) => (
                Launch::TiledEulerGuarded {
                    pos_in,
                    pos_out,
                    vel,
                    n,
                    dt,
                    g,
                    eps2,
                },
                shape::tiled(n, block),
            ),
            (Kernel::Split { block, split }, false) => (
                Launch::SplitEuler {
                    pos_in,
                    pos_out,
                    vel,
                    n,
                    split,
                    dt,
                    g,
                    eps2,
                },
                shape::split(n, block, split),
            ),
            (Kernel::Split { block, split }, true) => (
                Launch::SplitEulerGuarded {
                    pos_in,
                    pos_out,
                    vel,
                    n,
                    split,
                    dt,
                    g,
                    eps2,
                },
                shape::split(n, block, split),
            ),
            (Kernel::Triangle { .. } | Kernel::Auto, _) => return None,
        };
        Some((launch, shape))
    }

    /// Block size of the energy reduction (the kernel's own block size).
    fn energy_block(&self) -> u32 {
        self.params.kernel().block()
    }

    fn energy_op(&self) -> Op {
        let gravity = self.gravity;
        Op::Launch(
            Launch::Energy {
                pos: Buf::PosIn,
                vel: Buf::Vel,
                n: self.n,
                eps2: gravity.eps2(),
                partials: Buf::Partials,
            },
            shape::energy(self.n, self.energy_block()),
        )
    }

    /// Number of `f64` in [`Buf::Partials`].
    pub fn energy_partials_len(&self) -> usize {
        shape::energy_partials(self.n, self.energy_block()) as usize
    }

    /// Kinetic and potential energy from the partial sums, in `f64`.
    pub fn finish_energy(&self, partials: &[f64]) -> crate::state::Energy {
        let kinetic = partials.iter().step_by(2).sum::<f64>();
        let pair_sum = partials.iter().skip(1).step_by(2).sum::<f64>();
        crate::state::Energy {
            kinetic,
            potential: -0.5 * self.gravity.g() as f64 * pair_sum,
        }
    }

    /// The divergence check after local step `step` of a batch.
    pub fn check(&self, step: u32) -> Op {
        self.per_body(Launch::CheckFinite {
            pos: Buf::PosIn,
            vel: Buf::Vel,
            n: self.n,
            step,
            flag: Buf::Flag,
        })
    }
}

/// The triangle kernel's launch (`acc += G a(pos)`), guarded or not.
pub(crate) fn triangle_launch<B>(
    guard: bool,
    pos: B,
    acc: B,
    n: u32,
    g: f32,
    eps2: f32,
) -> Launch<B> {
    if guard {
        Launch::TriangleAccelGuarded {
            pos,
            acc,
            n,
            g,
            eps2,
        }
    } else {
        Launch::TriangleAccel {
            pos,
            acc,
            n,
            g,
            eps2,
        }
    }
}

#[cfg(test)]
mod tests;
