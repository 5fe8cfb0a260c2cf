//! The plans' tests: lowering, the guarded kernels, grid limits, and every
//! launch against the parameter lists of the committed PTX.

use super::*;
use crate::ForceLaw;
use crate::integrator::Integrator;
use gpu_kernels::entry::Param;

fn all_plans(n: usize) -> Vec<Plan> {
    let mut plans = Vec::new();
    for kernel in [
        Kernel::Simt { block: 64 },
        Kernel::Tiled { block: 128 },
        Kernel::Triangle { block: 32 },
    ] {
        for &integrator in Integrator::ALL {
            let force = ForceLaw::gravity(1.0, 0.1).unwrap();
            let params = Params::new(0.01, force.clone(), kernel, integrator).unwrap();
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
                .position(|o| matches!(o, Op::Launch(l, _) if l.entry() == Entry::TriangleAccel))
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
                let params = Params::new(0.01, force.clone(), kernel, integrator).unwrap();
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
            force.clone(),
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
/// parsed from the text (`.u64` pointers, `.u32`, `.f32`, `.f64`); an unknown
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
                ".f64" => Param::F64,
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
                    let kinds: Vec<Param> = l.args().as_slice().iter().map(|a| a.param()).collect();
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

#[test]
fn largest_launches_fit_without_opting_in() {
    // The largest tile (1024 bodies x 16 bytes) and the triangle kernel's
    // 32 bytes per thread at its largest block stay below the 48 KiB a
    // function may use without raising its limit: the CUDA device's opt-in
    // (`check_launches`) is exercised on the software CUDA device with a
    // lower default (SOFTCUDA_SHARED_DEFAULT_BYTES).
    let largest = gpu_kernels::shape::TRIANGLE_MAX_BLOCK;
    let triangle = gpu_kernels::shape::triangle(5000, largest).unwrap();
    let tiled = gpu_kernels::shape::tiled(5000, 1024);
    assert_eq!((triangle.shared_bytes, tiled.shared_bytes), (16384, 16384));
    assert!(triangle.shared_bytes.max(tiled.shared_bytes) <= 48 * 1024);
}

#[test]
fn device_bytes_counts_every_buffer() {
    let params = Params::new(
        0.01,
        ForceLaw::gravity(1.0, 0.1).unwrap(),
        Kernel::Tiled { block: 256 },
        Integrator::SemiImplicitEuler,
    )
    .unwrap();
    let plan = Plan::new(1000, params.clone()).unwrap();
    let partials = plan.energy_partials_len() as u64;
    assert!(partials >= 2);
    assert_eq!(plan.device_bytes(), 4 * 16 * 1000 + 8 * partials + 8);
    // 2^30 bodies need 64 GiB of state: more than many GPUs have.
    let big = Plan::new(1 << 30, params).unwrap();
    assert!(big.device_bytes() > 64 << 30);
}

#[test]
fn every_launch_is_every_op_that_launches() {
    for plan in all_plans(1000) {
        let launches = plan.every_launch();
        let ops = plan
            .every_op()
            .filter(|op| matches!(op, Op::Launch(..)))
            .count();
        assert_eq!(launches.len(), ops);
        let most = launches.iter().map(|(_, s)| s.shared_bytes).max();
        assert_eq!(plan.max_shared_bytes(), most.unwrap_or(0));
    }
}
