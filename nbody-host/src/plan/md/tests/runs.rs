//! The step loop: NVE against the reference, the rebuild trigger and the
//! ghosts, the committed PTX bit for bit on every schedule, divergence,
//! bad settings, and the force kernel's memory traffic.

use super::*;
use crate::engine::Divergence;
use crate::error::Error;
use softcuda::mufu;

/// A liquid (in.lj's state point: fcc at density 0.8442 melting at T = 1.44,
/// cutoff 2.5, skin 0.3, dt 0.005, shifted potential), 500 bodies, 300 steps:
/// the total energy stays as close to its start as the f64 reference
/// integrator's does. The two trajectories separate (the liquid is chaotic)
/// but velocity Verlet's energy error is a bounded O(dt^2) oscillation set by
/// the state, the same dynamics in both runs: allowed is twice the
/// reference's largest excursion (the runs sample different instants of the
/// same fluctuation) plus twice the f32 evaluation error of the energy (the
/// thermo bound of `check_forces`, recomputed here at the start). On the
/// way, every 25 steps, no pair within the cutoff is missing from the lists.
#[test]
fn nve_liquid_conserves_energy_like_the_reference() {
    let (pos, l) = states::fcc(5, 0.8442);
    let n = pos.len();
    let mut case = Case::new(
        "liquid N 500",
        pos,
        states::velocities(n, 1.44, 11),
        params([l as f32; 3], 2.5, 0.3, None, 128),
    );
    case.mass = vec![1.0; n];
    case.params.scan_block = 256;
    let o = case.oracle();
    let mut dev = emulator();
    let mut plan = case.start(&mut dev);
    let e0 = plan.thermo(&mut dev).unwrap();
    let start = o.evaluate(&case.pos, &[]);
    let eval_tol = start.potential_scale * (E_PAIR + 2.0 * 100.0 * U) + U * e0.kinetic;
    let (mut rp, mut rv) = (case.pos.clone(), case.vel.clone());
    let reference = verlet(&o, &mut rp, &mut rv, &case.mass, case.params.dt as f64, 300);
    let r0 = start.potential + kinetic(&case.vel, &case.mass);
    let excursion = reference.iter().fold(0.0f64, |m, e| m.max((e - r0).abs()));
    let total0 = e0.kinetic + e0.potential;
    assert!((total0 - r0).abs() <= eval_tol, "start: {total0} vs {r0}");
    let allowed = 2.0 * excursion + 2.0 * eval_tol;
    let mut worst = 0.0f64;
    for round in 0..12 {
        assert_eq!(plan.step(&mut dev, 25).unwrap(), None);
        check_no_missed_pair(
            &mut dev,
            &plan,
            &o,
            &format!("liquid after {} steps", 25 * (round + 1)),
        );
        let t = plan.thermo(&mut dev).unwrap();
        worst = worst.max((t.kinetic + t.potential - total0).abs());
    }
    println!(
        "liquid N {n}, 300 steps: energy excursion {worst:.3e} (reference {excursion:.3e}, allowed {allowed:.3e}), {} builds",
        plan.builds()
    );
    assert!(
        worst <= allowed,
        "energy moved by {worst:e}, the reference by {excursion:e} (allowed {allowed:e})"
    );
    // It is a liquid that moved: the lists were rebuilt many times.
    assert!(plan.builds() > 10, "{} builds", plan.builds());
}

/// A cold crystal (fcc at density 1.0, the LJ nearest-neighbour minimum;
/// T = 0.05; 256 bodies, 2 cells per side), 300 steps: the trajectory stays
/// with the f64 reference's. Near-harmonic dynamics does not amplify errors
/// exponentially; each step adds at most `u |x| <= 1.1 u L` to a position
/// (the rounded drift) and `dt da + 2 u |v|` to a velocity, `da` the force
/// bound of `check_forces` at the start, and a velocity error moves the
/// position on linearly: after k steps `|dx| <= k 1.1 u L + k^2 / 2 dt (dt da + 2 u v_max)`.
#[test]
fn nve_crystal_tracks_the_reference_trajectory() {
    let (pos, l) = states::fcc(4, 1.0);
    let n = pos.len();
    let mut case = Case::new(
        "crystal N 256",
        pos,
        states::velocities(n, 0.05, 12),
        params([l as f32; 3], 2.5, 0.3, None, 64),
    );
    case.mass = vec![1.0; n];
    let o = case.oracle();
    let start = o.evaluate(&case.pos, &[]);
    let da = (0..n)
        .flat_map(|i| (0..3).map(move |k| (i, k)))
        .map(|(i, k)| {
            start.scale[i][k] * (E_PAIR + (start.inside[i] as f64 + 3.0) * U)
                + 4.0 * U * l * start.sensitivity[i]
        })
        .fold(0.0f64, f64::max);
    let v_max = case
        .vel
        .iter()
        .flatten()
        .fold(0.0f64, |m, v| m.max(v.abs()))
        * 2.0;
    let dt = case.params.dt as f64;
    let mut dev = emulator();
    let mut plan = case.start(&mut dev);
    let (mut rp, mut rv) = (case.pos.clone(), case.vel.clone());
    for k in [100usize, 200, 300] {
        plan.step(&mut dev, 100).unwrap();
        verlet(&o, &mut rp, &mut rv, &case.mass, dt, 100);
        let state = plan.read_state(&mut dev).unwrap();
        let got = unwrapped(&state, [l; 3]);
        let kf = k as f64;
        let bound = kf * 1.1 * U * l + kf * kf / 2.0 * dt * (dt * da + 2.0 * U * v_max);
        for i in 0..n {
            for c in 0..3 {
                assert!(
                    (got[i][c] - rp[i][c]).abs() <= bound,
                    "step {k}: body {i} component {c}: {} vs {} (allowed {bound:e})",
                    got[i][c],
                    rp[i][c]
                );
            }
        }
    }
}

/// Bodies on a grid 3 apart and one between the grid's rows (no pair within
/// the cutoff: no forces), that one moving along x at 1 per unit time
/// across the box face: the list is rebuilt exactly when it has moved more
/// than skin / 2 since the last build (0.015 per step, skin / 2 = 0.2: at
/// steps 14, 28, 42), its ghosts follow it between builds, and the build
/// that follows the crossing wraps it with its image counter.
#[test]
fn the_rebuild_trigger_fires_past_half_the_skin_and_ghosts_follow() {
    let mut pos = Vec::new();
    for x in 0..3 {
        for y in 0..3 {
            for z in 0..3 {
                pos.push([
                    0.5 + 3.0 * x as f64,
                    0.5 + 3.0 * y as f64,
                    0.5 + 3.0 * z as f64,
                ]);
            }
        }
    }
    // Body 27, at least 2.1 from every other, crosses x = L = 9 at step 14.
    pos.push([8.8, 2.0, 2.0]);
    let mut vel = vec![[0.0; 3]; 28];
    vel[27] = [1.0, 0.0, 0.0];
    let mut p = params([9.0; 3], 1.5, 0.4, None, 32);
    p.dt = 0.015;
    let case = Case::new("grid N 28", pos, vel, p);
    for schedule in [None, Some(Schedule::Adversarial { seed: 3 })] {
        let mut emu = emulator();
        let mut soft = schedule.map(SoftMd::new);
        let dev: &mut dyn StepDevice = match &mut soft {
            Some(s) => s,
            None => &mut emu,
        };
        let mut plan = dev.start_case(&case);
        let mut builds = vec![];
        for step in 1..=45 {
            assert_eq!(dev.step_plan(&mut plan), None);
            if plan.builds() > 1 + builds.len() as u64 {
                builds.push(step);
            }
            dev.check_ghosts(&plan, &case.name);
        }
        assert_eq!(builds, [14, 28, 42], "{schedule:?}");
        let state = dev.state(&plan);
        let x = 8.8f32 + 45.0 * 0.015;
        assert_eq!(state.images[27], [1, 0, 0]);
        assert!(
            (state.positions[27].x as f64 - (x as f64 - 9.0)).abs() < 1e-5,
            "{:?}",
            state.positions[27]
        );
        assert_eq!(state.positions[0], Vec4::new(0.5, 0.5, 0.5, 1.0));
    }
}

/// What the trigger test needs from either device, object-safe.
trait StepDevice {
    fn start_case(&mut self, case: &Case) -> MdPlan;
    fn step_plan(&mut self, plan: &mut MdPlan) -> Option<Divergence>;
    fn check_ghosts(&mut self, plan: &MdPlan, what: &str);
    fn state(&mut self, plan: &MdPlan) -> MdState;
}

impl<D: Device<MdBuf>> StepDevice for D {
    fn start_case(&mut self, case: &Case) -> MdPlan {
        case.start(self)
    }
    fn step_plan(&mut self, plan: &mut MdPlan) -> Option<Divergence> {
        plan.step(self, 1).unwrap()
    }
    fn check_ghosts(&mut self, plan: &MdPlan, what: &str) {
        check_ghosts(self, plan, what);
    }
    fn state(&mut self, plan: &MdPlan) -> MdState {
        plan.read_state(self).unwrap()
    }
}

/// The same run on the emulator and on the software CUDA device (the
/// committed PTX) under every schedule: with `rcp.approx.ftz` correctly
/// rounded (`SOFTCUDA_MUFU=ieee`, what the Rust source computes on the host)
/// the same bits everywhere, builds included (no atomic decides an order, no
/// sum depends on timing): the PTX is its source, bit for bit. With the
/// H200's `MUFU.RCP` (the default) every schedule still gives one set of
/// bits, and it is not the emulator's (the tables change about 13 % of
/// reciprocals by an ulp).
#[test]
fn the_committed_ptx_runs_the_plan_bit_for_bit_like_the_emulator() {
    let (pos, l) = states::fcc(3, 0.8442);
    let n = pos.len();
    // r_list 2.5 is just under half the box (2.52): 2 cells per side, ghosts everywhere.
    let mut liquid = Case::new(
        "fcc N 108 hot",
        pos,
        states::velocities(n, 1.44, 4),
        params([l as f32; 3], 2.2, 0.3, None, 32),
    );
    liquid.params.scan_block = 32;
    let faces = cases().into_iter().find(|c| c.pos.len() == 33).unwrap();
    // Every style, and a mixture (the kernel's typed loop).
    let mut all = vec![faces];
    for &style in PairStyle::ALL {
        all.extend([1, 2].map(|types| liquid.with_style(style, types, true)));
    }
    for case in all {
        let run = |dev: &mut dyn RunDevice| dev.run(&case, 20);
        let want = run(&mut emulator());
        assert!(want.1 > 1, "{}: the run rebuilt its lists", case.name);
        let mut hardware: Option<RunBits> = None;
        for schedule in schedules() {
            let got = run(&mut SoftMd::with_mufu(
                schedule,
                mufu::Model::CorrectlyRounded,
            ));
            assert!(
                got == want,
                "{}: softcuda {schedule:?} differs from the emulator",
                case.name
            );
            let sm90 = run(&mut SoftMd::new(schedule));
            // The table style interpolates in r^2 with FMAs alone: no MUFU
            // instruction in its run, so the model cannot change its bits.
            let mufu_free = case.name.contains(PairStyle::Table.name());
            assert!(
                (sm90 != want) ^ mufu_free,
                "{}: the sm_90 MUFU changed nothing (or a MUFU-free run changed)",
                case.name
            );
            if let Some(h) = &hardware {
                assert!(
                    *h == sm90,
                    "{}: softcuda {schedule:?} with sm_90's MUFU differs from the deterministic schedule",
                    case.name
                );
            }
            hardware = Some(sm90);
        }
    }
}

/// A run's observable bits: buffers after `steps` steps, builds, thermo.
type RunBits = (Vec<Vec<u32>>, u64, [u64; 4]);

trait RunDevice {
    fn run(&mut self, case: &Case, steps: u64) -> RunBits;
}

impl<D: Device<MdBuf>> RunDevice for D {
    fn run(&mut self, case: &Case, steps: u64) -> RunBits {
        let mut plan = case.start(self);
        assert_eq!(plan.step(self, steps).unwrap(), None);
        let t = plan.thermo(self).unwrap();
        let n = 4 * plan.n() as usize;
        let mut bufs =
            [MdBuf::Pos, MdBuf::Vel, MdBuf::Tag, MdBuf::Acc].map(|b| self.read(b, 0, n).unwrap());
        bufs[2].extend(self.read(MdBuf::Type, 0, n / 4).unwrap());
        (
            bufs.to_vec(),
            plan.builds(),
            [t.kinetic, t.potential, t.virial, t.pressure].map(f64::to_bits),
        )
    }
}

#[test]
fn coincident_bodies_are_a_reported_divergence() {
    let mut pos = states::random_gas(20, [6.0; 3], 1.0, 8);
    pos[7] = pos[3];
    let case = Case::new(
        "coincident",
        pos,
        vec![[0.0; 3]; 20],
        params([6.0; 3], 1.5, 0.3, None, 32),
    );
    let mut dev = emulator();
    let mut plan = case.start(&mut dev);
    let d = plan.step(&mut dev, 5).unwrap().expect("a divergence");
    assert_eq!(d.after_step, 1);
    assert!(d.body == 3 || d.body == 7, "{d:?}");
}

#[test]
fn bad_settings_are_clear_errors() {
    let good = params([6.0; 3], 1.5, 0.3, None, 32);
    let bad = |p: MdParams| MdPlan::new(10, p).unwrap_err().to_string();
    assert!(
        bad(MdParams {
            pair: lj(2.9),
            ..good.clone()
        })
        .contains("cutoff + skin")
    );
    assert!(
        bad(MdParams {
            skin: -0.1,
            ..good.clone()
        })
        .contains("skin = -0.1")
    );
    assert!(
        bad(MdParams {
            lengths: [6.0, 0.0, 6.0],
            ..good.clone()
        })
        .contains("box length y")
    );
    assert!(
        bad(MdParams {
            cells: Some([4, 1, 1]),
            ..good.clone()
        })
        .contains("cells per side")
    );
    assert!(
        bad(MdParams {
            block: 48,
            ..good.clone()
        })
        .contains("block")
    );
    assert!(
        bad(MdParams {
            dt: 0.0,
            ..good.clone()
        })
        .contains("time step")
    );
    assert!(matches!(MdPlan::new(0, good.clone()), Err(Error::NoBodies)));
    let plan = MdPlan::new(2, good).unwrap();
    let start = |pos: [Vec4; 2]| {
        plan.clone()
            .start(&mut emulator(), &pos, &[Vec4::ZERO; 2])
            .unwrap_err()
            .to_string()
    };
    assert!(
        start([Vec4::new(1.0, 1.0, 1.0, 0.0), Vec4::new(3.0, 3.0, 3.0, 1.0)]).contains("mass = 0")
    );
    assert!(
        start([
            Vec4::new(f32::NAN, 1.0, 1.0, 1.0),
            Vec4::new(3.0, 3.0, 3.0, 1.0)
        ])
        .contains("body 0: position")
    );
}

/// The force kernel's global-memory traffic on the software device
/// (deterministic schedule, in.lj's state point, 2048 bodies): per pair, a
/// warp loads 4 bytes of indices per lane in 512-byte groups (1/8 sector) and
/// one 16-byte position in a 32-byte sector, so at most 36 bytes per pair
/// plus the per-body loads and stores. Prints the accounting per pair.
#[test]
fn the_force_kernel_moves_at_most_36_bytes_per_pair() {
    let (pos, l) = states::fcc(8, 0.8442);
    let n = pos.len();
    let case = Case::new(
        "in.lj N 2048",
        pos,
        states::velocities(n, 1.44, 6),
        params([l as f32; 3], 2.5, 0.3, None, 128),
    );
    let mut dev = SoftMd::new(Schedule::Deterministic);
    let mut plan = case.start(&mut dev);
    // Melt it a little so neighbours are not lattice-ordered.
    plan.step(&mut dev, 20).unwrap();
    let pairs: u64 = dev
        .read(MdBuf::NCount, 0, n)
        .unwrap()
        .iter()
        .map(|&c| c as u64)
        .sum();
    dev.stats.clear();
    plan.forces(&mut dev, false).unwrap();
    let s = dev.stats["nbody_lj_forces"];
    let per_pair = |x: u64| x as f64 / pairs as f64;
    let bytes = per_pair(32 * s.global_sectors);
    println!(
        "nbody_lj_forces, N {n}, {pairs} list entries ({:.1} per body), per entry: {:.2} PTX issue slots x 32 lanes (idle lanes included), {:.2} PTX instructions of active lanes, {bytes:.2} bytes ({:.3} sectors) of global traffic",
        pairs as f64 / n as f64,
        per_pair(s.warp_instructions) * 32.0,
        per_pair(s.thread_instructions),
        per_pair(s.global_sectors)
    );
    let per_body = 2.0 * 32.0 * n as f64 / pairs as f64; // position + count in, acceleration out
    assert!(bytes <= 36.0 + per_body, "{bytes} bytes per pair");
}
