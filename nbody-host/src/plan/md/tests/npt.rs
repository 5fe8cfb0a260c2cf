//! NPT between builds (`npt.rs`): the lists are kept while every body
//! stays within the margin the box's scale since the build leaves, so a
//! box a barostat squeezes never hides a pair, with far fewer builds than
//! steps.

use super::ensemble::EnsPlan;
use super::*;
use crate::md::{Boundary, Ensemble};

/// 256 bodies of in.lj's lattice (box 6.72, cutoff 2.2, skin 0.3: the run
/// stops below `2 r_list = 5`) under a pressure of 20, 100 times the
/// melt's: the box shrinks by about 1 % in 30 steps. After every step
/// every pair within the cutoff of the positions and the box now is in
/// both bodies' lists, and fewer builds than steps ran. An unscaled gate
/// (`skin / 2` from the unscaled build positions) misses a pair here.
#[test]
fn a_squeezed_box_keeps_every_pair_listed_between_builds() {
    let (pos, l) = states::fcc(4, 0.8442);
    let n = pos.len();
    let case = Case::new(
        "fcc N 256 NPT squeezed",
        pos,
        states::velocities(n, 1.44, 4),
        params([l as f32; 3], 2.2, 0.3, None, 32),
    );
    let mut dev = emulator();
    let mut plan = case.start(&mut dev);
    let ens = EnsPlan::new(Ensemble::npt(1.44, 0.5, 20.0, 0.2), n, 0.005).unwrap();
    let vel = Case::vec4(&case.vel, &vec![0.0; n]);
    let masses: Vec<f32> = case.mass.iter().map(|&m| m as f32).collect();
    plan.start_ensemble(
        &mut dev,
        ens,
        &vel,
        &masses,
        [l as f32 as f64; 3],
        None,
        2.5,
    )
    .unwrap();
    let builds = plan.builds();
    let mut steps = 0;
    while steps < 120 && plan.step(&mut dev, 1).unwrap().is_none() {
        steps += 1;
        let lengths = plan.npt_lengths().unwrap().map(|x| x as f32 as f64);
        let o = Pair64::new(&case.params.pair, &Boundary::Periodic { lengths });
        check_no_missed_pair(
            &mut dev,
            &plan,
            &o,
            &format!("step {steps}, box {lengths:?}"),
        );
    }
    let shrunk = 1.0 - plan.npt_lengths().unwrap()[0] / l;
    let built = plan.builds() - builds;
    println!("{steps} steps, {built} builds, box shrunk by {shrunk:.3}");
    assert!(shrunk > 0.05, "the box shrank by {shrunk} only");
    assert!(
        built > 0 && built < steps,
        "{built} builds in {steps} steps"
    );
}
