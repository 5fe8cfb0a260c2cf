//! Short-range molecular dynamics (Lennard-Jones, one type and a
//! two-type mixture) on the CPU backend against the `f64` oracle
//! (`oracle::Pair64`: forces, energy and virial, velocity Verlet): every
//! enumeration (all pairs; cell and Verlet lists, half
//! with Newton's third law and full, both rebuild policies) on every
//! instruction set this CPU has, for random and lattice states, `N` from 2
//! to 2500, periodic boxes of 1, 2, 3 and many cells per side, open space,
//! bodies on the box faces and outside the box on input, and a cell side
//! equal to `r_c + skin`.
//!
//! # Tolerances (derived, not fitted)
//! The engines compute in `f32` from the same `f32` positions the oracle
//! widens exactly, so the differences are rounding:
//! - the separation `x_i - x_j` (and its minimum image) is rounded once or
//!   twice, an absolute error `delta <= 2^-23 X` per component, `X` the
//!   largest coordinate magnitude; its relative effect on `r` is at most
//!   `sqrt(3) delta / r`, and on a term of `r^-13` (the force's) 13 times
//!   that, of `r^-12` (the energy's) 12 times;
//! - the rest: the reciprocal (`vrcp14ps` or `vrcpps` and a Newton step,
//!   below `2^-21` after the step, entering `r^-8` four times), about ten
//!   `f32` products and differences, and the sum of at most 128 terms of a
//!   list in `f32`: `4 * 2^-21 + (10 + 128) 2^-24 < 1e-5`, doubled to 2e-5.
//!
//! Both bound each term by its *magnitude* (the law's reference gives them:
//! `Reference::fpair_scale`, `energy_scale`, and `slope`, 13 for LJ's
//! `r^-13`): `M = 48 eps sigma^12 r^-13 + 24 eps sigma^6 r^-7` for the
//! force (the two parts cancel near the potential's minimum, so a relative
//! bound on their difference would not hold), `4 eps sigma^12 r^-12 + 4 eps
//! sigma^6 r^-6` for `u`, `M r` for the virial. Per body, `|a - a_ref| <=
//! sum_j M_ij (slope sqrt(3) delta / r_ij + 2e-5) / m_i`; the potential and
//! the virial likewise over the pairs. The totals are summed in `f64` (error
//! negligible).

use nbody_host::md::{CellList, Lists};
mod common;

use common::pair_bounds;
use nbody_host::oracle::{Pair64, System64};
use nbody_host::{
    Backend, Bodies, Boundary, CpuTuning, Error, ForceLaw, Integrator, Isa, Neighbours,
    PairPotential, PairStyle, Simulation, ic,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CUTOFF: f64 = 2.5;
const SKIN: f64 = 0.3;

fn lj(shift: bool) -> ForceLaw {
    ForceLaw::lennard_jones(1.0, 1.0, CUTOFF, shift).unwrap()
}

/// The oracle of `force` in `boundary`.
fn oracle_of(force: &ForceLaw, boundary: &Boundary) -> Pair64 {
    Pair64::new(force.as_pair().expect("a pair potential"), boundary)
}

/// The enumerations under test: all pairs, and cell lists with half
/// (Newton) and full lists under both rebuild policies, with cells at least
/// `bin` wide.
fn setups(bin: f64) -> Vec<Neighbours> {
    let mut v = vec![Neighbours::AllPairs];
    for lists in [Lists::Half, Lists::Full] {
        let cells = Neighbours::Cells(CellList {
            lists,
            bin_size: bin,
            ..CellList::new(SKIN)
        });
        v.push(cells);
        v.push(cells.every(3));
    }
    v
}

/// `n` bodies uniform in `[lo, hi)^3`, none closer than `min_r` to another
/// (minimum image in a periodic box of `l`), masses in `[0.5, 2)` unless `unit`.
fn gas(
    n: usize,
    lo: f32,
    hi: f32,
    periodic: Option<f32>,
    min_r: f32,
    unit: bool,
    seed: u64,
) -> Bodies {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    let mut pos: Vec<[f32; 3]> = Vec::with_capacity(n);
    while pos.len() < n {
        let p = [0; 3].map(|_| r.random_range(lo..hi));
        let clear = pos.iter().all(|q| {
            let d2: f32 = (0..3)
                .map(|a| {
                    let mut d = p[a] - q[a];
                    if let Some(l) = periodic {
                        d -= l * (d / l).round();
                    }
                    d * d
                })
                .sum();
            d2 >= min_r * min_r
        });
        if clear {
            pos.push(p);
        }
    }
    let vel: Vec<[f32; 3]> = (0..n)
        .map(|_| [0; 3].map(|_| r.random_range(-1.0..1.0)))
        .collect();
    let masses: Vec<f32> = (0..n)
        .map(|_| if unit { 1.0 } else { r.random_range(0.5..2.0) })
        .collect();
    Bodies::from_arrays(&pos, &vel, &masses).unwrap()
}

fn build(
    bodies: &Bodies,
    boundary: Boundary,
    neighbours: Neighbours,
    tuning: CpuTuning,
    shift: bool,
) -> nbody_host::Result<Simulation> {
    build_with(bodies, &[], lj(shift), boundary, neighbours, tuning)
}

fn build_with(
    bodies: &Bodies,
    types: &[u32],
    force: ForceLaw,
    boundary: Boundary,
    neighbours: Neighbours,
    tuning: CpuTuning,
) -> nbody_host::Result<Simulation> {
    Simulation::builder(bodies.clone())
        .force(force)
        .types(types.to_vec())
        .boundary(boundary)
        .neighbours(neighbours)
        .integrator(Integrator::VELOCITY_VERLET)
        .dt(0.002)
        .backend(Backend::Cpu(tuning))
        .build()
}

/// Checks one simulation's accelerations, potential energy and virial
/// against the oracle at its current state; returns the largest error as a
/// fraction of its bound.
fn check(sim: &Simulation, o: &Pair64, what: &str) -> f64 {
    let sys = System64::from_bodies(sim.bodies().unwrap());
    let types = sim.types().unwrap();
    let b = pair_bounds(&sys, &types, o);
    let forces = o.forces(&sys.pos, &types);
    let acc = sim.accelerations().unwrap();
    let mut worst = 0.0f64;
    for (i, (a, f)) in acc.iter().zip(&forces).enumerate() {
        let want = f.map(|x| x / sys.mass[i]);
        let err = ((a.x as f64 - want[0]).powi(2)
            + (a.y as f64 - want[1]).powi(2)
            + (a.z as f64 - want[2]).powi(2))
        .sqrt();
        assert!(
            err <= b.acc[i],
            "{what}: body {i}: a = {a:?}, oracle {want:?}, error {err:e} > bound {:e}",
            b.acc[i]
        );
        worst = worst.max(err / b.acc[i].max(f64::MIN_POSITIVE));
    }
    let (u, w) = o.energy_virial(&sys.pos, &types);
    let t = sim.thermo().unwrap();
    let n = sys.pos.len() as f64;
    let (du, dw) = ((t.potential * n - u).abs(), (t.virial - w).abs());
    assert!(
        du <= b.potential,
        "{what}: U = {} vs oracle {u}: {du:e} > {:e}",
        t.potential * n,
        b.potential
    );
    assert!(
        dw <= b.virial,
        "{what}: W = {} vs oracle {w}: {dw:e} > {:e}",
        t.virial,
        b.virial
    );
    if let (Some(p), Some(v)) = (t.pressure, sim.params().boundary().volume()) {
        let ke: f64 = sys
            .vel
            .iter()
            .zip(&sys.mass)
            .map(|(v, m)| 0.5 * m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))
            .sum();
        let want = (2.0 * ke + w) / (3.0 * v);
        assert!(
            (p - want).abs() <= (b.virial + 1e-9 * ke) / (3.0 * v) * 1.01,
            "{what}: P {p} vs {want}"
        );
    }
    worst
}

/// Runs every enumeration (cells at least `bin` wide) and instruction set
/// on `bodies` in `boundary`, checks the start and, after `steps` steps, the
/// state reached.
fn all_enumerations(bodies: &Bodies, boundary: Boundary, steps: u64, bin: f64, what: &str) {
    all_enumerations_of(lj(false), &[], bodies, boundary, steps, bin, what);
}

/// [`all_enumerations`] under `force`, the bodies of `types`.
fn all_enumerations_of(
    force: ForceLaw,
    types: &[u32],
    bodies: &Bodies,
    boundary: Boundary,
    steps: u64,
    bin: f64,
    what: &str,
) {
    let o = oracle_of(&force, &boundary);
    for isa in Isa::available() {
        for neighbours in setups(bin) {
            let tuning = CpuTuning {
                isa: Some(isa),
                ..CpuTuning::default()
            };
            let what = format!("{what}, {isa}, {neighbours:?}");
            let mut sim =
                build_with(bodies, types, force.clone(), boundary, neighbours, tuning).unwrap();
            let mut worst = check(&sim, &o, &what);
            if steps > 0 {
                sim.step(steps).unwrap();
                worst = worst.max(check(&sim, &o, &format!("{what}, after {steps} steps")));
            }
            eprintln!(
                "{what}: largest force error {:.1}% of its bound",
                100.0 * worst
            );
        }
    }
}

#[test]
fn random_states_in_boxes_of_one_two_three_and_many_cells() {
    // r_list = 2.8: L = 6 gives 2 cells per side, 9 gives 3, 20 gives 7;
    // a bin as long as the box puts every body in one cell.
    for (n, l, bin, seed) in [
        (2, 6.0f32, 0.0, 1),
        (3, 6.0, 0.0, 2),
        (17, 6.0, 6.0, 3),
        (40, 6.0, 0.0, 4),
        (150, 9.0, 0.0, 5),
        (150, 9.0, 9.0, 6),
        (400, 9.0, 4.5, 7),
        (1000, 20.0, 0.0, 8),
        (2500, 20.0, 0.0, 9),
    ] {
        let bodies = gas(n, 0.0, l, Some(l), 0.85, false, seed);
        let what = format!("gas N = {n}, L = {l}, bins of {bin}");
        let steps = if n <= 1000 { 4 } else { 0 };
        all_enumerations(&bodies, Boundary::cubic(l as f64), steps, bin, &what);
    }
}

/// Every pair style with its example coefficients (`PairPotential::example`),
/// one atom type and two (every pair of types its own coefficients and
/// cutoff, shifted; one body in five of type 1: the loops that gather each
/// pair's row by type): random gases in boxes of 2, 3 and 7 cells per side,
/// and an open cluster, through every enumeration and instruction set.
#[test]
fn every_style_with_one_type_and_two_in_boxes_and_open_space() {
    for &style in PairStyle::ALL {
        for types in [1, 2] {
            let force = ForceLaw::Pair(PairPotential::example(style, types, None, true).unwrap());
            for (n, l, seed, periodic) in [
                (40, 6.0f32, 61, true),
                (300, 9.0, 62, true),
                (1000, 20.0, 63, true),
                (300, 9.0, 64, false),
            ] {
                let bodies = gas(n, 0.0, l, periodic.then_some(l), 0.85, false, seed);
                let t: Vec<u32> = (0..n as u32)
                    .map(|i| if i % 5 == 4 { types - 1 } else { 0 })
                    .collect();
                let boundary = if periodic {
                    Boundary::cubic(l as f64)
                } else {
                    Boundary::Open
                };
                let what = format!(
                    "{} x {types} types, N = {n}, L = {l}, periodic {periodic}",
                    style.name()
                );
                all_enumerations_of(force.clone(), &t, &bodies, boundary, 4, 0.0, &what);
            }
        }
    }
}

#[test]
fn lattice_states_and_an_orthorhombic_box() {
    let (mut atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.44, 3).unwrap();
    all_enumerations(&atoms, boundary, 5, 0.0, "fcc 4^3 at T = 1.44");
    // A non-cubic box: 4 x 5 x 6 unit cells, 480 atoms, jiggled off the lattice.
    let a = (4.0f64 / 0.8442).cbrt();
    let mut r = ChaCha8Rng::seed_from_u64(11);
    let (big, _) = ic::fcc_lattice(6, 0.8442, 1.0, 4).unwrap();
    atoms = Bodies::default();
    for k in 0..big.len() {
        let p = big.positions[k];
        if p.x < (4.0 * a) as f32 - 0.1 && p.y < (5.0 * a) as f32 - 0.1 {
            let jiggle = glam::Vec3::new(
                r.random_range(-0.1..0.1),
                r.random_range(-0.1..0.1),
                r.random_range(-0.1..0.1),
            );
            atoms.push(nbody_host::Body::new(1.0, p + jiggle, big.velocities[k]));
        }
    }
    assert_eq!(atoms.len(), 480);
    let boundary = Boundary::Periodic {
        lengths: [4.0 * a, 5.0 * a, 6.0 * a],
    };
    all_enumerations(&atoms, boundary, 5, 0.0, "fcc 4 x 5 x 6, jiggled");
}

#[test]
fn bodies_on_the_faces_and_outside_the_box_are_wrapped() {
    let l = 8.0f32;
    let mut bodies = gas(60, 0.5, l - 0.5, Some(l), 1.0, true, 21);
    // On the faces (0 and the last float below L, and L itself, which is
    // the face at 0 again) and far outside, in both directions.
    let below = f32::from_bits(l.to_bits() - 1);
    let moved = [
        [0.0, 3.1, 4.0],
        [below, 1.2, 6.5],
        [4.0, l, 2.2],
        [-1.5 * l + 2.0, 5.0, 6.0],
        [2.3 * l, 6.5, 0.75],
        [3.0, -3.0 * l + 7.2, 200.0 * l + 3.3],
    ];
    bodies.positions.truncate(54);
    bodies.velocities.truncate(54);
    bodies.masses.truncate(54);
    for p in moved {
        bodies.push(nbody_host::Body::new(1.0, p, [0.5, -0.5, 0.25]));
    }
    // Keep the generated bodies clear of the moved ones (minimum image).
    let keep: Vec<usize> = (0..bodies.len())
        .filter(|&i| {
            i >= 54
                || (54..60).all(|j| {
                    let d2: f32 = (0..3)
                        .map(|a| {
                            let d = bodies.positions[i][a] - bodies.positions[j][a];
                            let d = d - l * (d / l).round();
                            d * d
                        })
                        .sum();
                    d2 > 1.0
                })
        })
        .collect();
    let bodies = Bodies {
        positions: keep.iter().map(|&i| bodies.positions[i]).collect(),
        velocities: keep.iter().map(|&i| bodies.velocities[i]).collect(),
        masses: keep.iter().map(|&i| bodies.masses[i]).collect(),
    };
    let sim = build(
        &bodies,
        Boundary::cubic(l as f64),
        Neighbours::cells(SKIN),
        CpuTuning::default(),
        false,
    )
    .unwrap();
    let state = sim.bodies().unwrap();
    let images = sim.images().unwrap().expect("a periodic box has images");
    for (i, (p, img)) in state.positions.iter().zip(&images).enumerate() {
        assert!(
            p.min_element() >= 0.0 && p.max_element() < l,
            "body {i} at {p} not in [0, {l})"
        );
        for a in 0..3 {
            let unwrapped = p[a] as f64 + img[a] as f64 * l as f64;
            let given = bodies.positions[i][a] as f64;
            assert!(
                (unwrapped - given).abs() <= 2e-7 * given.abs().max(l as f64),
                "body {i} axis {a}: {unwrapped} vs {given}"
            );
        }
    }
    assert_eq!(images[images.len() - 1], [0, -3, 200]);
    all_enumerations(
        &bodies,
        Boundary::cubic(l as f64),
        3,
        0.0,
        "bodies on faces and outside",
    );
}

#[test]
fn cell_sides_equal_to_the_list_range_and_a_cutoff_of_half_the_box() {
    // L = 3 and 4 times r_c + skin exactly: cells of exactly r_list in
    // exact arithmetic; the grid's margin makes them 2 and 3 per side.
    for cells in [3.0, 4.0] {
        let l = (cells * (CUTOFF + SKIN)) as f32;
        let bodies = gas(300, 0.0, l, Some(l), 0.85, true, 31);
        all_enumerations(
            &bodies,
            Boundary::cubic(l as f64),
            3,
            0.0,
            &format!("L = {cells} r_list"),
        );
    }
    // r_c = L / 2 exactly: allowed for all pairs (the minimum image is unique).
    let l = 2.0 * CUTOFF;
    let bodies = gas(30, 0.0, l as f32, Some(l as f32), 0.85, true, 32);
    let boundary = Boundary::cubic(l);
    let sim = build(
        &bodies,
        boundary,
        Neighbours::AllPairs,
        CpuTuning::default(),
        false,
    )
    .unwrap();
    check(&sim, &oracle_of(&lj(false), &boundary), "r_c = L / 2");
    let e = build(
        &bodies,
        boundary,
        Neighbours::cells(0.01),
        CpuTuning::default(),
        false,
    )
    .unwrap_err();
    assert!(matches!(e, Error::InvalidCombination(_)), "{e}");
}

#[test]
fn open_space_clusters_including_one_smaller_than_a_cell() {
    for (n, extent, seed) in [
        (2, 1.2f32, 41),
        (12, 2.0, 42),
        (300, 9.0, 43),
        (1200, 14.0, 44),
    ] {
        let bodies = gas(n, 0.0, extent, None, 0.85, false, seed);
        all_enumerations(
            &bodies,
            Boundary::Open,
            4,
            0.0,
            &format!("open cluster N = {n}, extent {extent}"),
        );
    }
}

#[test]
fn the_shifted_potential_changes_the_energy_not_the_forces() {
    let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.44, 5).unwrap();
    let plain = build(
        &atoms,
        boundary,
        Neighbours::cells(SKIN),
        CpuTuning::default(),
        false,
    )
    .unwrap();
    let shifted = build(
        &atoms,
        boundary,
        Neighbours::cells(SKIN),
        CpuTuning::default(),
        true,
    )
    .unwrap();
    assert_eq!(
        plain.accelerations().unwrap(),
        shifted.accelerations().unwrap()
    );
    let o = oracle_of(&lj(true), &boundary);
    check(&shifted, &o, "shifted");
    // u(r_c) = 4 (2.5^-12 - 2.5^-6) per pair within the cutoff.
    let sys = System64::from_bodies(plain.bodies().unwrap());
    let pairs = (0..sys.pos.len())
        .flat_map(|i| (i + 1..sys.pos.len()).map(move |j| (i, j)))
        .filter(|&(i, j)| {
            let d = o.separation(&sys.pos[i], &sys.pos[j]);
            d.iter().map(|x| x * x).sum::<f64>() < CUTOFF * CUTOFF
        })
        .count() as f64;
    let u_rc = 4.0 * (CUTOFF.powi(-12) - CUTOFF.powi(-6));
    let n = atoms.len() as f64;
    let diff = (shifted.thermo().unwrap().potential - plain.thermo().unwrap().potential) * n;
    assert!(
        (diff + pairs * u_rc).abs() < 1e-4 * pairs * u_rc.abs(),
        "{diff} vs {}",
        -pairs * u_rc
    );
}

/// 20 velocity-Verlet steps of 256 atoms at T = 1.44 against the oracle's
/// trajectory (unwrapped positions `x + image L`). Position rounding in the
/// drift (`2^-24 L`, L = 6.7: 4e-7 per step, 8e-6 over 20) and velocity errors
/// from force errors (`dt |da|`, `|da| <= 2e-3`: 1e-5 per step, 1e-5 in
/// position over 20 steps) stay below 2e-5; chaos amplifies them by
/// `e^(lambda t)` with `lambda <= 10` and `t = 0.1`: below 6e-5. Allowed 2e-4.
#[test]
fn trajectories_follow_the_oracle() {
    let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.44, 6).unwrap();
    let o = oracle_of(&lj(false), &boundary);
    let mut sys = System64::from_bodies(&atoms);
    o.advance(&mut sys, &[], 0.005, 20);
    let l = boundary.lengths().unwrap()[0] as f32 as f64;
    for neighbours in setups(0.0) {
        let mut sim = Simulation::builder(atoms.clone())
            .force(lj(false))
            .boundary(boundary)
            .neighbours(neighbours)
            .integrator(Integrator::VELOCITY_VERLET)
            .dt(0.005)
            .backend(Backend::cpu())
            .build()
            .unwrap();
        sim.step(20).unwrap();
        let images = sim.images().unwrap().unwrap();
        let worst = sim
            .positions()
            .unwrap()
            .iter()
            .zip(&images)
            .zip(&sys.pos)
            .flat_map(|((p, img), want)| {
                (0..3).map(move |a| (p[a] as f64 + img[a] as f64 * l - want[a]).abs())
            })
            .fold(0.0f64, f64::max);
        assert!(worst < 2e-4, "{neighbours:?}: {worst:e}");
    }
}

#[test]
fn overlapping_atoms_are_a_clear_error() {
    let l = 10.0;
    for neighbours in setups(0.0) {
        let tuning = CpuTuning::default();
        for gap in [0.0f32, 1e-4] {
            let bodies = Bodies::from_arrays(
                &[
                    [1.0, 1.0, 1.0],
                    [5.0, 5.0, 5.0],
                    [9.0, 9.0, 9.0],
                    [5.0 + gap, 5.0, 5.0],
                ],
                &[[0.0; 3]; 4],
                &[1.0; 4],
            )
            .unwrap();
            let e = build(&bodies, Boundary::cubic(l), neighbours, tuning, false).unwrap_err();
            assert!(
                matches!(e, Error::Overlapping { a: 1, b: 3, .. }),
                "{neighbours:?}, gap {gap}: {e}"
            );
            assert!(e.to_string().contains("bodies 1 and 3 overlap"), "{e}");
        }
        // Two atoms fired at each other with a time step far too large for
        // the repulsion: the first drift takes them to r = 0.0011, where
        // the force overflows f32, and the run says so.
        let bodies = Bodies::from_arrays(
            &[[4.0, 5.0, 5.0], [6.0, 5.0, 5.0]],
            &[[50.0, 0.0, 0.0], [-50.0, 0.0, 0.0]],
            &[1.0; 2],
        )
        .unwrap();
        let mut sim = Simulation::builder(bodies)
            .force(lj(false))
            .boundary(Boundary::cubic(l))
            .neighbours(neighbours)
            .dt(0.01999)
            .integrator(Integrator::VELOCITY_VERLET)
            .backend(Backend::Cpu(tuning))
            .build()
            .unwrap();
        let e = sim.step(10).unwrap_err();
        assert!(matches!(e, Error::Diverged { .. }), "{neighbours:?}: {e}");
        assert!(e.to_string().contains("overlapping atoms"), "{e}");
    }
}
