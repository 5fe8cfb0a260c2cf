//! Launch plans: the kernel launches of one step, as data.
//!
//! The CUDA backend and the emulator both execute these plans, so they launch
//! exactly the same kernels with the same grids, shared memory and arguments;
//! what the emulator verifies on the CPU is what the GPU runs. A test checks
//! every launch of every plan against the parameter lists in the committed PTX.

use gpu_kernels::entry::{self, EntryPoint, Param};
use gpu_kernels::launch::{self, LaunchShape};

use crate::config::{Integrator, Kernel, Params};
use crate::error::{Error, Result};

/// Block size of the one-thread-per-body kernels (kick, drift, Euler update, check).
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
    /// Energy partial sums ([`launch::energy_partials`] × `f64`).
    Partials,
    /// Divergence flag (2 × `u32`, see [`gpu_kernels::integrate::check_finite`]).
    Flag,
}

/// One kernel argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A device buffer.
    Buf(Buf),
    /// A `u32` scalar.
    U32(u32),
    /// An `f32` scalar.
    F32(f32),
}

impl Arg {
    /// The PTX parameter type this argument is passed as (the tests compare
    /// every launch's arguments with the PTX parameter lists through it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn param(&self) -> Param {
        match self {
            Arg::Buf(_) => Param::Ptr,
            Arg::U32(_) => Param::U32,
            Arg::F32(_) => Param::F32,
        }
    }
}

/// One kernel launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The entry point.
    pub entry: EntryPoint,
    /// Grid, block and dynamic shared memory.
    pub shape: LaunchShape,
    /// Arguments, in the entry point's parameter order.
    pub args: Vec<Arg>,
}

/// One operation of a plan.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Launch a kernel (skipped when its grid is empty).
    Launch(Launch),
    /// Set every acceleration to zero (before the triangle kernel accumulates).
    ZeroAcc,
    /// Swap the roles of [`Buf::PosIn`] and [`Buf::PosOut`].
    SwapPositions,
}

/// The launches for `n` bodies with given parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    n: u32,
    params: Params,
}

impl Plan {
    /// A plan, or an error if the kernel cannot schedule `n` bodies.
    pub fn new(n: usize, params: Params) -> Result<Plan> {
        if n == 0 {
            return Err(Error::NoBodies);
        }
        if n > launch::MAX_BODIES as usize {
            return Err(Error::TooManyBodies {
                n,
                max: launch::MAX_BODIES as usize,
            });
        }
        params.kernel.validate()?;
        if let Kernel::Triangle { block } = params.kernel {
            let blocks = launch::triangle_blocks(n as u32, block);
            if blocks > launch::MAX_GRID as u64 {
                return Err(Error::GridTooLarge {
                    kernel: "triangle",
                    n,
                    block,
                    blocks,
                    max: launch::MAX_GRID,
                });
            }
        }
        Ok(Plan {
            n: n as u32,
            params,
        })
    }

    /// Number of bodies.
    pub fn n(&self) -> u32 {
        self.n
    }

    /// Largest dynamic shared memory any launch of this plan asks for.
    pub fn max_shared_bytes(&self) -> u32 {
        let mut ops = self.step();
        ops.extend(self.accelerations());
        ops.push(Op::Launch(self.energy()));
        ops.iter()
            .filter_map(|op| match op {
                Op::Launch(l) => Some(l.shape.shared_bytes),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    fn per_body(&self, entry: EntryPoint, args: Vec<Arg>) -> Op {
        Op::Launch(Launch {
            entry,
            shape: launch::per_body(self.n, ELEMENTWISE_BLOCK),
            args,
        })
    }

    /// `acc = a(PosIn)` (G-scaled), by the chosen kernel family.
    pub fn accelerations(&self) -> Vec<Op> {
        let p = &self.params;
        let force_args = vec![
            Arg::Buf(Buf::PosIn),
            Arg::Buf(Buf::Acc),
            Arg::U32(self.n),
            Arg::F32(p.g),
            Arg::F32(p.eps2()),
        ];
        match p.kernel {
            Kernel::Simt { block } => vec![Op::Launch(Launch {
                entry: entry::SIMT_ACCEL,
                shape: launch::per_body(self.n, block),
                args: force_args,
            })],
            Kernel::Tiled { block } => {
                vec![Op::Launch(Launch {
                    entry: entry::TILED_ACCEL,
                    shape: launch::tiled(self.n, block),
                    args: force_args,
                })]
            }
            Kernel::Triangle { block } => vec![
                Op::ZeroAcc,
                Op::Launch(Launch {
                    entry: entry::TRIANGLE_ACCEL,
                    // Checked in `Plan::new`.
                    shape: launch::triangle(self.n, block).expect("grid checked in Plan::new"),
                    args: force_args,
                }),
            ],
        }
    }

    /// What must run once before the first step: leapfrog needs the
    /// accelerations of the initial positions; Euler needs nothing.
    pub fn prepare(&self) -> Vec<Op> {
        match self.params.integrator {
            Integrator::SemiImplicitEuler => Vec::new(),
            Integrator::Leapfrog => self.accelerations(),
        }
    }

    /// One step. Afterwards [`Buf::PosIn`] holds the new positions.
    pub fn step(&self) -> Vec<Op> {
        let p = &self.params;
        let n = self.n;
        match (p.integrator, p.kernel) {
            (Integrator::SemiImplicitEuler, Kernel::Simt { block }) => vec![
                Op::Launch(Launch {
                    entry: entry::SIMT_EULER,
                    shape: launch::per_body(n, block),
                    args: self.fused_euler_args(),
                }),
                Op::SwapPositions,
            ],
            (Integrator::SemiImplicitEuler, Kernel::Tiled { block }) => vec![
                Op::Launch(Launch {
                    entry: entry::TILED_EULER,
                    shape: launch::tiled(n, block),
                    args: self.fused_euler_args(),
                }),
                Op::SwapPositions,
            ],
            (Integrator::SemiImplicitEuler, Kernel::Triangle { .. }) => {
                let mut ops = self.accelerations();
                ops.push(self.per_body(
                    entry::EULER_FROM_ACCEL,
                    vec![
                        Arg::Buf(Buf::PosIn),
                        Arg::Buf(Buf::PosOut),
                        Arg::Buf(Buf::Vel),
                        Arg::Buf(Buf::Acc),
                        Arg::U32(n),
                        Arg::F32(p.dt),
                    ],
                ));
                ops.push(Op::SwapPositions);
                ops
            }
            (Integrator::Leapfrog, _) => {
                let half = 0.5 * p.dt;
                let kick = self.per_body(
                    entry::KICK,
                    vec![
                        Arg::Buf(Buf::Vel),
                        Arg::Buf(Buf::Acc),
                        Arg::U32(n),
                        Arg::F32(half),
                    ],
                );
                let mut ops = vec![
                    kick.clone(),
                    self.per_body(
                        entry::DRIFT,
                        vec![
                            Arg::Buf(Buf::PosIn),
                            Arg::Buf(Buf::PosOut),
                            Arg::Buf(Buf::Vel),
                            Arg::U32(n),
                            Arg::F32(p.dt),
                        ],
                    ),
                    Op::SwapPositions,
                ];
                ops.extend(self.accelerations());
                ops.push(kick);
                ops
            }
        }
    }

    fn fused_euler_args(&self) -> Vec<Arg> {
        let p = &self.params;
        vec![
            Arg::Buf(Buf::PosIn),
            Arg::Buf(Buf::PosOut),
            Arg::Buf(Buf::Vel),
            Arg::U32(self.n),
            Arg::F32(p.dt),
            Arg::F32(p.g),
            Arg::F32(p.eps2()),
        ]
    }

    /// Block size of the energy reduction (the kernel's own block size).
    pub fn energy_block(&self) -> u32 {
        self.params.kernel.block()
    }

    /// Energy partial sums of the `PosIn` positions into [`Buf::Partials`];
    /// the host adds them up ([`Plan::finish_energy`]).
    pub fn energy(&self) -> Launch {
        Launch {
            entry: entry::ENERGY,
            shape: launch::energy(self.n, self.energy_block()),
            args: vec![
                Arg::Buf(Buf::PosIn),
                Arg::Buf(Buf::Vel),
                Arg::U32(self.n),
                Arg::F32(self.params.eps2()),
                Arg::Buf(Buf::Partials),
            ],
        }
    }

    /// Number of `f64` in [`Buf::Partials`].
    pub fn energy_partials_len(&self) -> usize {
        launch::energy_partials(self.n, self.energy_block()) as usize
    }

    /// Kinetic and potential energy from the partial sums, in `f64`.
    pub fn finish_energy(&self, partials: &[f64]) -> crate::state::Energy {
        let kinetic = partials.iter().step_by(2).sum::<f64>();
        let pair_sum = partials.iter().skip(1).step_by(2).sum::<f64>();
        crate::state::Energy {
            kinetic,
            potential: -0.5 * self.params.g as f64 * pair_sum,
        }
    }

    /// The divergence check after local step `step` of a batch.
    pub fn check(&self, step: u32) -> Launch {
        Launch {
            entry: entry::CHECK_FINITE,
            shape: launch::per_body(self.n, ELEMENTWISE_BLOCK),
            args: vec![
                Arg::Buf(Buf::PosIn),
                Arg::Buf(Buf::Vel),
                Arg::U32(self.n),
                Arg::U32(step),
                Arg::Buf(Buf::Flag),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_plans(n: usize) -> Vec<Plan> {
        let mut plans = Vec::new();
        for kernel in [
            Kernel::Simt { block: 64 },
            Kernel::Tiled { block: 128 },
            Kernel::Triangle { block: 32 },
        ] {
            for integrator in [Integrator::SemiImplicitEuler, Integrator::Leapfrog] {
                let params = Params::new(0.01, 0.1, 1.0, kernel, integrator).unwrap();
                plans.push(Plan::new(n, params).unwrap());
            }
        }
        plans
    }

    /// Every op a plan can issue: step, prepare, accelerations, energy, check.
    fn every_op(plan: &Plan) -> Vec<Op> {
        let mut ops = plan.step();
        ops.extend(plan.prepare());
        ops.extend(plan.accelerations());
        ops.push(Op::Launch(plan.energy()));
        ops.push(Op::Launch(plan.check(7)));
        ops
    }

    pub(crate) fn launches(ops: &[Op]) -> Vec<&Launch> {
        ops.iter()
            .filter_map(|op| match op {
                Op::Launch(l) => Some(l),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_launch_matches_its_entry_point() {
        for plan in all_plans(1000) {
            let ops = every_op(&plan);
            for l in launches(&ops) {
                let kinds: Vec<Param> = l.args.iter().map(Arg::param).collect();
                assert_eq!(kinds, l.entry.params, "{}", l.entry.name);
                assert!(gpu_kernels::entry::ALL.contains(&l.entry));
                assert!(l.shape.grid >= 1);
            }
        }
    }

    #[test]
    fn each_step_swaps_positions_once_and_leapfrog_kicks_twice() {
        for plan in all_plans(17) {
            let ops = plan.step();
            assert_eq!(ops.iter().filter(|o| **o == Op::SwapPositions).count(), 1);
            let kicks = launches(&ops)
                .iter()
                .filter(|l| l.entry == entry::KICK)
                .count();
            let expect = if plan.params.integrator == Integrator::Leapfrog {
                2
            } else {
                0
            };
            assert_eq!(kicks, expect);
            // The triangle kernel accumulates, so accelerations are zeroed first.
            if let Kernel::Triangle { .. } = plan.params.kernel {
                let zero = ops.iter().position(|o| *o == Op::ZeroAcc).unwrap();
                let tri = ops
                    .iter()
                    .position(|o| matches!(o, Op::Launch(l) if l.entry == entry::TRIANGLE_ACCEL))
                    .unwrap();
                assert!(zero < tri);
            }
        }
    }

    #[test]
    fn triangle_grid_limit_is_an_error() {
        let params = Params::new(
            0.01,
            0.1,
            1.0,
            Kernel::Triangle { block: 32 },
            Integrator::SemiImplicitEuler,
        )
        .unwrap();
        let e = Plan::new(5_000_000, params).unwrap_err();
        assert!(
            matches!(
                e,
                Error::GridTooLarge {
                    n: 5_000_000,
                    block: 32,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            Plan::new(
                5_000_000,
                Params {
                    kernel: Kernel::Triangle { block: 1024 },
                    ..params
                }
            )
            .is_ok()
        );
    }

    #[test]
    fn energy_sums_partials() {
        let plan = all_plans(10)[0];
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

    /// Every entry point the host launches, checked against `ptx`.
    fn check_against_ptx(ptx: &str) -> std::result::Result<usize, String> {
        let entries = ptx_entries(ptx)?;
        let mut wanted: Vec<EntryPoint> = entry::ALL.to_vec();
        for n in [1, 17, 1000] {
            for plan in all_plans(n) {
                let ops = every_op(&plan);
                for l in launches(&ops) {
                    let kinds: Vec<Param> = l.args.iter().map(Arg::param).collect();
                    if kinds != l.entry.params {
                        return Err(format!("{}: host passes {kinds:?}", l.entry.name));
                    }
                    wanted.push(l.entry);
                }
            }
        }
        for e in &wanted {
            let Some((_, params)) = entries.iter().find(|(name, _)| name == e.name) else {
                return Err(format!("{} is not in the PTX", e.name));
            };
            if params.as_slice() != e.params {
                return Err(format!(
                    "{}: PTX has {params:?}, the host passes {:?}",
                    e.name, e.params
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
            entry::ALL.len(),
            "every PTX kernel is listed in entry::ALL"
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
