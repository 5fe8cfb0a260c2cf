//! The MD plan and its kernels against the `f64` oracle (`oracle::Pair64`),
//! on the emulator (race detector on) and on the software CUDA device (the
//! committed PTX; deterministic and adversarial schedules, races checked in
//! shared and global memory).
//!
//! # Tolerances (derived, u = 2^-24)
//! Force on body i, component k: each pair term is computed from f32
//! positions: `d` (1 rounding), `r^2` (3), `1 / r^2` (the hardware's
//! `rcp.approx.ftz` is within 1 ulp = 2u, and so are softcuda's tables of
//! the H200's; the emulator rounds exactly, as softcuda does with
//! `mufu::Model::CorrectlyRounded`), `r^-6` and `r^-8` (up to 7 factors of `1 / r^2`, each carrying
//! the 5u of `r^2` and `rcp`, plus 4 products), the FMA for `1 - 2 s6 r^-6`
//! and the final `c6 / m` scaling (3): under `E = 64 u` relative to the
//! pair's magnitude `fs |d_k|` with `fs = 24 eps r^-2 (2 (s/r)^12 + (s/r)^6)`
//! (the two terms' absolute values, so cancellation near the minimum is
//! covered). A ghost's position is `x_j + shift`, rounded once: an absolute
//! error `delta <= 4 u L_max`, to which the force term is at most
//! `15 fs` sensitive (`d / r^8` and `d / r^14`: derivative below
//! `(1 + 14) r^-8...`). The f32 sum of `m` terms adds `m u` times their
//! magnitudes. So `|a - a_ref| <= (scale_k (E + (m + 3) u) + 15 delta
//! magnitude) / m_i` (`oracle::Evaluation`: `scale` and `sensitivity`, whose
//! `slope + 2` is the 15 here, for any law).
//!
//! Potential energy and virial: the same per-pair bound, summed over pairs,
//! with the f32 sum per body (`m_max u`), and `|du/dr| <= slope |u|_mag / r`
//! for the ghost rounding (`potential_sensitivity`, `virial_sensitivity`).
//!
//! NVE: see the two tests' comments (`runs.rs`).
//!
//! `kernels.rs`: scans, binning, lists, overflow, forces; `runs.rs`: the
//! step loop (NVE, the trigger, softcuda bit for bit, divergence, errors,
//! the force kernel's traffic). This file: the states and the checks.

#![allow(
    clippy::needless_range_loop,
    reason = "component loops read best indexed"
)]

use gpu_kernels::Vec4;
use gpu_kernels::periodic::{
    Grid, STATUS_DUE, STATUS_GHOSTS, STATUS_LOST, STATUS_NEIGHBOURS, STATUS_WORDS, Tag,
};
use gpu_kernels::shape::{self, neighbour_slot};
use softcuda::Schedule;

use super::softcuda_device::SoftMd;
use super::*;
use crate::emulator::{EmulatedDevice, LaunchOptions};
use crate::plan::device::{Device, words_vec4};

use crate::oracle::Pair64;
use crate::pair::{PairPotential, PairStyle};

mod batches;
mod kernels;
mod npt;
mod runs;
mod states;

use states::kinetic;

const U: f64 = 1.0 / 16_777_216.0;
const E_PAIR: f64 = 64.0 * U;

fn emulator() -> EmulatedDevice<MdBuf> {
    EmulatedDevice::new(LaunchOptions::default())
}

fn schedules() -> [Schedule; 4] {
    [
        Schedule::Deterministic,
        Schedule::Adversarial { seed: 1 },
        Schedule::Adversarial { seed: 0xdead_beef },
        Schedule::Adversarial { seed: 42 },
    ]
}

/// A test state: positions, velocities, masses (f64, exactly the f32 values
/// uploaded) and the plan's parameters.
#[derive(Clone)]
struct Case {
    name: String,
    pos: Vec<[f64; 3]>,
    vel: Vec<[f64; 3]>,
    mass: Vec<f64>,
    /// Atom types (empty: all 0).
    types: Vec<u32>,
    params: MdParams,
}

fn to_f32_exact(v: &[[f64; 3]]) -> Vec<[f64; 3]> {
    v.iter().map(|p| p.map(|c| c as f32 as f64)).collect()
}

impl Case {
    fn new(name: &str, pos: Vec<[f64; 3]>, vel: Vec<[f64; 3]>, params: MdParams) -> Case {
        let n = pos.len();
        Case {
            name: name.to_owned(),
            pos: to_f32_exact(&pos),
            vel: to_f32_exact(&vel),
            mass: (0..n).map(|k| [1.0, 2.0, 0.5][k % 3]).collect(),
            types: Vec::new(),
            params,
        }
    }

    /// The case under `style`'s example coefficients for `types` types
    /// (the case's cutoff; one body in five of type 1 with two types).
    fn with_style(&self, style: PairStyle, types: u32, shift: bool) -> Case {
        let mut case = self.clone();
        let cutoff = self.params.cutoff() as f64;
        case.params.pair = PairPotential::example(style, types, Some(cutoff), shift).unwrap();
        let n = self.pos.len();
        case.types = (0..n as u32)
            .map(|i| if i % 5 == 4 { types - 1 } else { 0 })
            .collect();
        case.name = format!(
            "{}, {} x {types} types, shift {shift}",
            self.name,
            style.name()
        );
        case
    }

    /// The oracle of the case's potential and box.
    fn oracle(&self) -> Pair64 {
        let l = self.params.lengths.map(|l| l as f64);
        Pair64::new(
            &self.params.pair,
            &crate::md::Boundary::Periodic { lengths: l },
        )
    }

    fn vec4(v: &[[f64; 3]], w: &[f64]) -> Vec<Vec4> {
        v.iter()
            .zip(w)
            .map(|(p, &m)| Vec4::new(p[0] as f32, p[1] as f32, p[2] as f32, m as f32))
            .collect()
    }

    fn start<D: Device<MdBuf>>(&self, dev: &mut D) -> MdPlan {
        let mut plan = MdPlan::new(self.pos.len(), self.params.clone()).unwrap();
        let zeros = vec![0.0; self.pos.len()];
        plan.start_with(
            dev,
            &Case::vec4(&self.pos, &self.mass),
            &Case::vec4(&self.vel, &zeros),
            &[],
            &self.types,
            None,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        plan
    }
}

/// Lennard-Jones (`epsilon = sigma = 1`, shifted) with this cutoff.
fn lj(cutoff: f32) -> PairPotential {
    PairPotential::new(PairStyle::LennardJones, &[1.0, 1.0], cutoff as f64, true).unwrap()
}

fn params(l: [f32; 3], cutoff: f32, skin: f32, cells: Option<[u32; 3]>, block: u32) -> MdParams {
    MdParams {
        cells,
        scan_block: 32,
        block,
        ..MdParams::new(l, lj(cutoff), skin, 0.005)
    }
}

/// Bodies on the faces, edges and corners of the box and just outside it,
/// then a random gas around them.
fn on_faces(n: usize, l: f64, seed: u64) -> Vec<[f64; 3]> {
    let below = f32::from_bits((l as f32).to_bits() - 1) as f64;
    let mut pos = vec![
        [0.0, 0.5 * l, 0.5 * l],
        [l, 0.25 * l, 0.75 * l],
        [-0.0, -0.0, 0.2 * l],
        [below, below, below],
        [0.5 * l, l, 0.0],
        [-0.05, 0.6 * l, l + 0.05],
        [0.8 * l, -0.02, 0.3 * l],
        [0.3 * l, 0.8 * l, l],
    ];
    pos.truncate(n);
    states::add_gas(pos, n, [l; 3], 0.9, seed)
}

/// The state matrix: awkward N, boxes of 1, 2, 3 and many cells per side,
/// bodies on faces, lattices and random gases.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let v = |n: usize, seed: u64| states::velocities(n, 1.0, seed);
    // cutoff 1.5, skin 0.3: r_list 1.8, boxes >= 3.6.
    for (n, l, cells) in [
        (2usize, 4.0f64, Some([1, 1, 1])),
        (2, 4.0, Some([2, 2, 2])),
        (31, 4.0, Some([1, 2, 1])),
        (32, 5.5, Some([3, 3, 3])),
        (33, 5.5, Some([2, 3, 1])),
        (1000, 13.0, None),
    ] {
        let pos = if n == 2 {
            vec![[0.1, 0.2, 0.3], [3.2, 0.3, 0.1]]
        } else {
            on_faces(n, l, n as u64)
        };
        let p = params(
            [l as f32; 3],
            1.5,
            0.3,
            cells,
            if n > 100 { 64 } else { 32 },
        );
        out.push(Case::new(
            &format!("faces N {n} L {l} cells {cells:?}"),
            pos,
            v(n, 7),
            p,
        ));
    }
    // An orthorhombic gas with a different cell count per side.
    let l = [4.0, 7.5, 11.0];
    let pos = states::random_gas(150, l, 0.9, 3);
    out.push(Case::new(
        "gas N 150 box 4 x 7.5 x 11",
        pos,
        v(150, 9),
        params(l.map(|x| x as f32), 1.5, 0.3, None, 32),
    ));
    // fcc lattices at the in.lj density: 32 bodies (box 3.36, 2 cells per
    // side at r_list 1.4), and 4000 (10^3 unit cells, 6 cells per side at
    // the in.lj cutoff 2.5 and skin 0.3) shaken by up to 0.05 per component.
    let (pos, l) = states::fcc(2, 0.8442);
    out.push(Case::new(
        "fcc N 32",
        pos,
        v(32, 1),
        params([l as f32; 3], 1.2, 0.2, None, 32),
    ));
    let (pos, l) = states::fcc(10, 0.8442);
    let shaken = pos
        .iter()
        .zip(v(4000, 3))
        .map(|(p, d)| std::array::from_fn(|k| (p[k] + 0.05 * d[k].clamp(-1.0, 1.0)).rem_euclid(l)))
        .collect();
    out.push(Case::new(
        "shaken fcc N 4000",
        shaken,
        v(4000, 2),
        params([l as f32; 3], 2.5, 0.3, None, 128),
    ));
    out
}

fn read_vec4<D: Device<MdBuf>>(dev: &mut D, buf: MdBuf, count: usize) -> Vec<Vec4> {
    words_vec4(&dev.read(buf, 0, 4 * count).unwrap())
}

fn read_tags<D: Device<MdBuf>>(dev: &mut D, n: usize) -> Vec<Tag> {
    words_tag(&dev.read(MdBuf::Tag, 0, 4 * n).unwrap())
}

fn f64s(v: &[Vec4]) -> Vec<[f64; 3]> {
    v.iter()
        .map(|p| [p.x as f64, p.y as f64, p.z as f64])
        .collect()
}

/// Checks the sorted arrays after a build: every body once, wrapped into
/// the box with its image counters, sorted by cell, stable within a cell.
fn check_binning<D: Device<MdBuf>>(dev: &mut D, plan: &MdPlan, case: &Case, first_build: bool) {
    let n = case.pos.len();
    let what = &case.name;
    let pos = read_vec4(dev, MdBuf::Pos, n);
    let tags = read_tags(dev, n);
    let starts = dev
        .read(MdBuf::Starts, 0, plan.cell_count() as usize + 1)
        .unwrap();
    let grid = Grid {
        l: case.params.lengths,
        n: plan.cells(),
    };
    let mut seen = vec![false; n];
    let mut last = (0u32, 0u32);
    for (slot, (p, t)) in pos.iter().zip(&tags).enumerate() {
        let id = t.id as usize;
        assert!(!seen[id], "{what}: body {id} twice");
        seen[id] = true;
        let x = [p.x, p.y, p.z];
        let image = [t.ix, t.iy, t.iz];
        for k in 0..3 {
            let l = case.params.lengths[k];
            assert!(
                (0.0..l).contains(&x[k]),
                "{what}: body {id} at {x:?} outside [0, {l})"
            );
            if first_build {
                // One rounding of x - k L.
                let unwrapped = x[k] as f64 + image[k] as f64 * l as f64;
                let err = (unwrapped - case.pos[id][k]).abs();
                assert!(
                    err <= U * (case.pos[id][k].abs() + l as f64),
                    "{what}: body {id} wrapped to {x:?} image {image:?}"
                );
            }
        }
        let cell = grid.cell_index(grid.cell_coords(*p));
        assert!(
            starts[cell as usize] as usize <= slot && slot < starts[cell as usize + 1] as usize,
            "{what}: slot {slot} outside cell {cell}"
        );
        // Cells ascend; within a cell the first build keeps the callers' order.
        if slot > 0 {
            assert!(cell >= last.0, "{what}: cells out of order at slot {slot}");
            if first_build && cell == last.0 {
                assert!(t.id > last.1, "{what}: unstable order in cell {cell}");
            }
        }
        last = (cell, t.id);
    }
    assert_eq!(
        starts[plan.cell_count() as usize] as usize,
        n,
        "{what}: cell starts end at n"
    );
}

/// Ghosts sit at their body plus their shift, exactly as the kernel rounds it.
fn check_ghosts<D: Device<MdBuf>>(dev: &mut D, plan: &MdPlan, what: &str) {
    let n = plan.n() as usize;
    let ghosts = plan.ghosts() as usize;
    let all = read_vec4(dev, MdBuf::Pos, n + ghosts);
    let src = dev.read(MdBuf::GhostSrc, 0, ghosts).unwrap();
    let shift = read_vec4(dev, MdBuf::GhostShift, ghosts);
    for g in 0..ghosts {
        let (b, s) = (all[src[g] as usize], shift[g]);
        let want = Vec4::new(b.x + s.x, b.y + s.y, b.z + s.z, b.w);
        assert_eq!(all[n + g], want, "{what}: ghost {g}");
    }
}

/// The neighbour counts and the whole list buffer.
fn read_lists<D: Device<MdBuf>>(dev: &mut D, plan: &MdPlan) -> (Vec<u32>, Vec<u32>) {
    let words = shape::neighbour_stride(plan.n()) as usize * plan.capacity() as usize;
    let count = dev.read(MdBuf::NCount, 0, plan.n() as usize).unwrap();
    (count, dev.read(MdBuf::NList, 0, words).unwrap())
}

/// Checks the neighbour lists against the reference pairs within
/// `r_list` (pairs within 1e-5 of `r_list` may go either way).
fn check_lists<D: Device<MdBuf>>(dev: &mut D, plan: &MdPlan, case: &Case) {
    let n = case.pos.len();
    let what = &case.name;
    let ghosts = plan.ghosts() as usize;
    let all = read_vec4(dev, MdBuf::Pos, n + ghosts);
    let tags = read_tags(dev, n);
    let src = dev.read(MdBuf::GhostSrc, 0, ghosts).unwrap();
    let (count, nlist) = read_lists(dev, plan);
    let status = dev.read(MdBuf::Status, 0, STATUS_WORDS as usize).unwrap();
    assert_eq!(status[STATUS_LOST as usize], 0, "{what}: lost ghost");
    assert_eq!(
        status[STATUS_NEIGHBOURS as usize], 0,
        "{what}: overflow left"
    );
    check_ghosts(dev, plan, what);
    let o = case.oracle();
    let l = o.lengths().expect("a box");
    let sorted = f64s(&all[..n]);
    let rlist = case.params.cutoff() as f64 + case.params.skin as f64;
    let mut want = vec![Vec::new(); n];
    for (i, j, r) in o.pairs_within(&sorted, rlist * (1.0 + 1e-5)) {
        let sure = r < rlist * (1.0 - 1e-5);
        want[i].push((j, sure));
        want[j].push((i, sure));
    }
    for i in 0..n {
        let mut got = Vec::new();
        for k in 0..count[i] {
            let e = nlist[neighbour_slot(i as u32, k, plan.capacity()) as usize] as usize;
            let j = if e < n { e } else { src[e - n] as usize };
            assert_ne!(j, i, "{what}: body {i} in its own list");
            // The entry's position is the minimum image of j seen from i.
            let d: [f64; 3] = std::array::from_fn(|c| all[e].to_array()[c] as f64 - sorted[i][c]);
            let m = o.separation(&sorted[i], &sorted[j]);
            for c in 0..3 {
                assert!(
                    (d[c] - m[c]).abs() <= 8.0 * U * l[c],
                    "{what}: entry {k} of body {i} is not the nearest image"
                );
            }
            got.push(j);
        }
        got.sort_unstable();
        let before = got.len();
        got.dedup();
        assert_eq!(
            got.len(),
            before,
            "{what}: body {} (slot {i}) lists a neighbour twice",
            tags[i].id
        );
        for &(j, sure) in &want[i] {
            assert!(
                !sure || got.binary_search(&j).is_ok(),
                "{what}: pair {i}-{j} missing"
            );
        }
        for &j in &got {
            assert!(
                want[i].iter().any(|&(w, _)| w == j),
                "{what}: {i}-{j} listed but farther than r_list"
            );
        }
    }
}

/// Checks accelerations (and with `thermo` the energies) of the current
/// state against the reference.
fn check_forces<D: Device<MdBuf>>(dev: &mut D, plan: &MdPlan, case: &Case) {
    let n = case.pos.len();
    let what = &case.name;
    let pos = read_vec4(dev, MdBuf::Pos, n);
    let acc = read_vec4(dev, MdBuf::Acc, n);
    // The types as the device sorted them with the bodies.
    let types = dev.read(MdBuf::Type, 0, n).unwrap();
    let tags = read_tags(dev, n);
    for (t, tag) in types.iter().zip(&tags) {
        let given = case.types.get(tag.id as usize).copied().unwrap_or(0);
        assert_eq!(*t, given, "{what}: the type of body {}", tag.id);
    }
    let o = case.oracle();
    let r = o.evaluate(&f64s(&pos), &types);
    let l_max = o
        .lengths()
        .expect("a box")
        .iter()
        .fold(0.0f64, |m, &l| m.max(l));
    let delta = 4.0 * U * l_max;
    for i in 0..n {
        let m = pos[i].w as f64;
        let a = [acc[i].x, acc[i].y, acc[i].z];
        let terms = r.inside[i] as f64;
        for k in 0..3 {
            let want = r.force[i][k] / m;
            let tol = (r.scale[i][k] * (E_PAIR + (terms + 3.0) * U) + delta * r.sensitivity[i]) / m;
            assert!(
                (a[k] as f64 - want).abs() <= tol,
                "{what}: body {i} component {k}: {} vs {want} (allowed {tol:e})",
                a[k]
            );
        }
    }
    let t = plan.thermo(dev).unwrap();
    let m_max = r.inside.iter().copied().max().unwrap_or(0) as f64;
    let rel = E_PAIR + 2.0 * m_max * U;
    let pe_tol =
        r.potential_scale * rel + delta * r.potential_sensitivity + U * r.offset * m_max * n as f64;
    assert!(
        (t.potential - r.potential).abs() <= pe_tol,
        "{what}: potential {} vs {} (allowed {pe_tol:e})",
        t.potential,
        r.potential
    );
    let vir_tol = r.virial_scale * rel + delta * r.virial_sensitivity;
    assert!(
        (t.virial - r.virial).abs() <= vir_tol,
        "{what}: virial {} vs {} (allowed {vir_tol:e})",
        t.virial,
        r.virial
    );
    let vel = f64s(&read_vec4(dev, MdBuf::Vel, n));
    let masses: Vec<f64> = pos.iter().map(|p| p.w as f64).collect();
    let ke = states::kinetic(&vel, &masses);
    assert!(
        (t.kinetic - ke).abs() <= 1e-12 * ke.max(1e-300),
        "{what}: kinetic {} vs {ke}",
        t.kinetic
    );
    let volume: f64 = o.lengths().expect("a box").iter().product();
    assert!(
        (t.pressure - (2.0 * t.kinetic + t.virial) / (3.0 * volume)).abs()
            <= 1e-12 * t.pressure.abs().max(1.0)
    );
}

/// The bodies of `list`'s entries for each slot (ghosts mapped to their
/// body), from the device.
fn listed<D: Device<MdBuf>>(dev: &mut D, plan: &MdPlan) -> Vec<Vec<usize>> {
    let n = plan.n() as usize;
    let src = dev
        .read(MdBuf::GhostSrc, 0, plan.ghosts() as usize)
        .unwrap();
    let (count, nlist) = read_lists(dev, plan);
    (0..n)
        .map(|i| {
            (0..count[i])
                .map(|k| nlist[neighbour_slot(i as u32, k, plan.capacity()) as usize] as usize)
                .map(|e| if e < n { e } else { src[e - n] as usize })
                .collect()
        })
        .collect()
}

/// Every pair closer than the cutoff now (the bodies have moved since the
/// build) is in both bodies' lists: the rebuild trigger missed nothing.
fn check_no_missed_pair<D: Device<MdBuf>>(dev: &mut D, plan: &MdPlan, o: &Pair64, what: &str) {
    let n = plan.n() as usize;
    let pos = f64s(&read_vec4(dev, MdBuf::Pos, n));
    let lists = listed(dev, plan);
    let cutoff = o.potential().max_cutoff() as f64;
    for (i, j, _) in o.pairs_within(&pos, cutoff * (1.0 - 1e-5)) {
        assert!(
            lists[i].contains(&j) && lists[j].contains(&i),
            "{what}: pair {i}-{j} within the cutoff is not listed"
        );
    }
}

/// `steps` velocity-Verlet steps of the oracle from `pos`, `vel` (masses
/// `m`), in place; the total energy after each step.
fn verlet(
    o: &Pair64,
    pos: &mut Vec<[f64; 3]>,
    vel: &mut Vec<[f64; 3]>,
    m: &[f64],
    dt: f64,
    steps: usize,
) -> Vec<f64> {
    let mut sys = crate::oracle::System64 {
        pos: std::mem::take(pos),
        vel: std::mem::take(vel),
        mass: m.to_vec(),
    };
    let energies = o.advance(&mut sys, &[], dt, steps);
    (*pos, *vel) = (sys.pos, sys.vel);
    energies
}

/// Positions with their images added back, in the callers' order.
fn unwrapped(state: &MdState, l: [f64; 3]) -> Vec<[f64; 3]> {
    state
        .positions
        .iter()
        .zip(&state.images)
        .map(|(p, im)| std::array::from_fn(|k| p.to_array()[k] as f64 + im[k] as f64 * l[k]))
        .collect()
}
