//! Launch plans: an integrator's stages lowered to kernel launches, as data.
//!
//! The CUDA backend and the emulator both execute these plans (through the
//! one step loop of [`run`]), so they launch exactly the same kernels with
//! the same grids, shared memory and arguments: what the emulator verifies
//! on the CPU is what the GPU runs. The plan is made once per simulation;
//! stepping allocates nothing.
//!
//! Lowering ([`Plan::lower`]): the integrator's stages
//! ([`Stage`](crate::integrator::Stage)) become launches of the kernels of
//! the [`entry`](gpu_kernels::entry) table. A force evaluation followed by a
//! kick and a drift by the same `dt` becomes one fused kernel where the
//! kernel family has one (SIMT and tiled); a kick followed by a drift by the
//! same `dt` becomes one fused per-body kernel.

pub(crate) mod run;

use gpu_kernels::entry::Launch;
use gpu_kernels::shape::{self, LaunchShape};

use crate::config::{Kernel, Params};
use crate::error::{Error, Result};
use crate::force::ForceLaw;
use crate::integrator::Stage;

/// Block size of the one-thread-per-body kernels (kick, drift, kick-drift, check).
pub const ELEMENTWISE_BLOCK: u32 = 256;

/// A device buffer, by role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
        Plan::build(bodies.len(), params, params.gravity().needs_guard(max_mass))
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
        let mut plan = Plan {
            n: n as u32,
            params,
            guard,
            prepare: Vec::new(),
            step: Vec::new(),
            accelerations: Vec::new(),
            energy: Op::ZeroAcc,
        };
        plan.accelerations = plan.force_ops();
        plan.prepare = plan.lower(params.integrator().prepare());
        plan.step = plan.lower(params.integrator().step());
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

    /// Largest dynamic shared memory any launch of this plan asks for.
    pub fn max_shared_bytes(&self) -> u32 {
        self.every_op()
            .filter_map(|op| match op {
                Op::Launch(_, shape) => Some(shape.shared_bytes),
                _ => None,
            })
            .max()
            .unwrap_or(0)
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
        let ForceLaw::Gravity(gravity) = self.params.force();
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
                let launch = if guard {
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
                };
                let shape = shape::triangle(n, block).expect("grid checked in Plan::new");
                vec![Op::ZeroAcc, Op::Launch(launch, shape)]
            }
        }
    }

    /// The kernel that computes the forces and moves the bodies by `dt` in
    /// one launch (semi-implicit Euler), where the kernel family has one.
    fn fused_euler(&self, dt: f32) -> Option<(Launch<Buf>, LaunchShape)> {
        let n = self.n;
        let ForceLaw::Gravity(gravity) = self.params.force();
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
            (Kernel::Triangle { .. }, _) => return None,
        };
        Some((launch, shape))
    }

    /// Block size of the energy reduction (the kernel's own block size).
    fn energy_block(&self) -> u32 {
        self.params.kernel().block()
    }

    fn energy_op(&self) -> Op {
        let ForceLaw::Gravity(gravity) = self.params.force();
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
            potential: -0.5 * self.params.gravity().g() as f64 * pair_sum,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrator::Integrator;
    use gpu_kernels::entry::{Entry, Param};

    fn all_plans(n: usize) -> Vec<Plan> {
        let mut plans = Vec::new();
        for kernel in [
            Kernel::Simt { block: 64 },
            Kernel::Tiled { block: 128 },
            Kernel::Triangle { block: 32 },
        ] {
            for &integrator in Integrator::ALL {
                let force = ForceLaw::gravity(1.0, 0.1).unwrap();
                let params = Params::new(0.01, force, kernel, integrator).unwrap();
                plans.push(Plan::new(n, params).unwrap());
            }
        }
        plans
    }

    pub(crate) fn launches(ops: &[Op]) -> Vec<Launch<Buf>> {
        ops.iter()
            .filter_map(|op| match op {
                Op::Launch(l, _) => Some(*l),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_launch_has_a_grid() {
        for plan in all_plans(1000) {
            for op in plan.every_op() {
                if let Op::Launch(l, shape) = op {
                    assert!(shape.grid >= 1, "{l:?}");
                    assert!(Entry::ALL.contains(&l.entry()));
                }
            }
        }
    }

    #[test]
    fn each_step_swaps_positions_once_and_leapfrog_kicks_twice() {
        for plan in all_plans(17) {
            let ops = plan.step();
            assert_eq!(ops.iter().filter(|o| **o == Op::SwapPositions).count(), 1);
            let kicks = launches(ops)
                .iter()
                .filter(|l| l.entry() == Entry::Kick)
                .count();
            let expect = if plan.params.integrator() == Integrator::Leapfrog {
                2
            } else {
                0
            };
            assert_eq!(kicks, expect);
            // The triangle kernel accumulates, so accelerations are zeroed
            // first, once.
            if let Kernel::Triangle { .. } = plan.params.kernel() {
                let zero = ops.iter().position(|o| *o == Op::ZeroAcc).unwrap();
                let tri = ops
                    .iter()
                    .position(
                        |o| matches!(o, Op::Launch(l, _) if l.entry() == Entry::TriangleAccel),
                    )
                    .unwrap();
                assert!(zero < tri);
                assert_eq!(ops.iter().filter(|o| **o == Op::ZeroAcc).count(), 1);
            }
        }
    }

    #[test]
    fn euler_fuses_forces_kick_and_drift_where_the_kernel_can() {
        let plans = all_plans(100);
        let euler = |k: Kernel| {
            plans
                .iter()
                .find(|p| {
                    p.params.kernel() == k && p.params.integrator() == Integrator::SemiImplicitEuler
                })
                .unwrap()
        };
        let entries = |p: &Plan| {
            launches(p.step())
                .iter()
                .map(|l| l.entry())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            entries(euler(Kernel::Simt { block: 64 })),
            [Entry::SimtEuler]
        );
        assert_eq!(
            entries(euler(Kernel::Tiled { block: 128 })),
            [Entry::TiledEuler]
        );
        assert_eq!(
            entries(euler(Kernel::Triangle { block: 32 })),
            [Entry::TriangleAccel, Entry::KickDrift]
        );
        // The fused kernel gets the whole dt.
        let Launch::TiledEuler { dt, .. } = launches(euler(Kernel::Tiled { block: 128 }).step())[0]
        else {
            unreachable!()
        };
        assert_eq!(dt, 0.01);
    }

    #[test]
    fn zero_softening_takes_the_guarded_kernels() {
        let bodies = crate::ic::plummer(50, 1);
        for kernel in [
            Kernel::Simt { block: 64 },
            Kernel::Tiled { block: 128 },
            Kernel::Triangle { block: 32 },
        ] {
            for &integrator in Integrator::ALL {
                let plan = |eps| {
                    let force = ForceLaw::gravity(1.0, eps).unwrap();
                    let params = Params::new(0.01, force, kernel, integrator).unwrap();
                    Plan::for_bodies(&bodies, params).unwrap()
                };
                let force_entries = |p: &Plan| -> Vec<Entry> {
                    p.every_op()
                        .filter_map(|op| match op {
                            Op::Launch(l, _) => Some(l.entry()),
                            _ => None,
                        })
                        .filter(|e| e.name().contains("accel") || e.name().contains("euler"))
                        .collect()
                };
                let (guarded, plain) = (force_entries(&plan(0.0)), force_entries(&plan(0.1)));
                assert!(!guarded.is_empty());
                assert!(
                    guarded.iter().all(|e| e.name().ends_with("_guarded")),
                    "{guarded:?}"
                );
                assert!(
                    plain.iter().all(|e| !e.name().ends_with("_guarded")),
                    "{plain:?}"
                );
            }
        }
    }

    #[test]
    fn triangle_grid_limit_is_an_error() {
        let force = ForceLaw::gravity(1.0, 0.1).unwrap();
        let params = |block| {
            Params::new(
                0.01,
                force,
                Kernel::Triangle { block },
                Integrator::SemiImplicitEuler,
            )
            .unwrap()
        };
        // Groups of 4 x 32 bodies: 65_625 of them, 2.15e9 blocks > 2^31 - 1.
        let e = Plan::new(8_400_000, params(32)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::GridTooLarge {
                    n: 8_400_000,
                    block: 32,
                    ..
                }
            ),
            "{e}"
        );
        assert!(Plan::new(8_400_000, params(512)).is_ok());
    }

    #[test]
    fn energy_sums_partials() {
        let plan = &all_plans(10)[0];
        let e = plan.finish_energy(&[1.0, 4.0, 2.0, 6.0]);
        assert_eq!(e.kinetic, 3.0);
        assert_eq!(e.potential, -5.0); // -G/2 * (4 + 6): each pair counted twice
    }

    /// The `.visible .entry` kernels of a PTX module and their parameter types,
    /// parsed from the text (`.u64` pointers, `.u32`, `.f32`); an unknown
    /// parameter type is an error, never silently skipped.
    fn ptx_entries(ptx: &str) -> std::result::Result<Vec<(String, Vec<Param>)>, String> {
        let mut entries = Vec::new();
        let mut lines = ptx.lines();
        while let Some(line) = lines.next() {
            let Some(rest) = line.trim().strip_prefix(".visible .entry ") else {
                continue;
            };
            let name = rest.trim_end_matches('(').trim().to_owned();
            let mut params = Vec::new();
            for line in lines.by_ref() {
                let line = line.trim();
                if line.starts_with(')') {
                    break;
                }
                let ty = line
                    .strip_prefix(".param ")
                    .and_then(|t| t.split_whitespace().next())
                    .ok_or_else(|| format!("{name}: unexpected line {line:?}"))?;
                params.push(match ty {
                    ".u64" => Param::Ptr,
                    ".u32" => Param::U32,
                    ".f32" => Param::F32,
                    other => return Err(format!("{name}: unknown parameter type {other}")),
                });
            }
            entries.push((name, params));
        }
        Ok(entries)
    }

    /// Every entry point of the table, and every launch of every plan,
    /// checked against `ptx`.
    fn check_against_ptx(ptx: &str) -> std::result::Result<usize, String> {
        let entries = ptx_entries(ptx)?;
        let mut wanted: Vec<Entry> = Entry::ALL.to_vec();
        for n in [1, 17, 1000] {
            for plan in all_plans(n) {
                for op in plan.every_op() {
                    if let Op::Launch(l, _) = op {
                        let kinds: Vec<Param> =
                            l.args().as_slice().iter().map(|a| a.param()).collect();
                        if kinds != l.entry().params() {
                            return Err(format!("{}: host passes {kinds:?}", l.entry().name()));
                        }
                        wanted.push(l.entry());
                    }
                }
            }
        }
        for e in &wanted {
            let Some((_, params)) = entries.iter().find(|(name, _)| name == e.name()) else {
                return Err(format!("{} is not in the PTX", e.name()));
            };
            if params.as_slice() != e.params() {
                return Err(format!(
                    "{}: PTX has {params:?}, the host passes {:?}",
                    e.name(),
                    e.params()
                ));
            }
        }
        Ok(entries.len())
    }

    #[test]
    fn committed_ptx_has_every_launched_entry_point_with_its_parameters() {
        let kernels = check_against_ptx(crate::PTX).unwrap();
        assert_eq!(
            kernels,
            Entry::ALL.len(),
            "every PTX kernel is declared in the entry table"
        );
    }

    #[test]
    fn the_ptx_check_catches_a_changed_signature_or_a_missing_kernel() {
        // One parameter of the tiled kernel turned from f32 into u32.
        let head = ".visible .entry nbody_tiled_euler(";
        let at = crate::PTX.find(head).unwrap();
        let body = &crate::PTX[at..];
        let last_f32 = body[..body.find(')').unwrap()]
            .rfind(".param .f32")
            .unwrap();
        let mut tampered = crate::PTX.to_owned();
        tampered.replace_range(at + last_f32..at + last_f32 + 11, ".param .u32");
        let e = check_against_ptx(&tampered).unwrap_err();
        assert!(e.contains("nbody_tiled_euler"), "{e}");
        // A kernel renamed away.
        let renamed = crate::PTX.replace("entry nbody_kick(", "entry nbody_kick2(");
        let e = check_against_ptx(&renamed).unwrap_err();
        assert!(e.contains("nbody_kick is not in the PTX"), "{e}");
    }
}
