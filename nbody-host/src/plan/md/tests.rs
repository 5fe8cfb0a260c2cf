//! The MD plan and its kernels against the `f64` reference (`reference.rs`),
//! on the emulator (race detector on) and on the software CUDA device (the
//! committed PTX; deterministic and adversarial schedules, races checked in
//! shared and global memory).
//!
//! # Tolerances (derived, u = 2^-24)
//! Force on body i, component k: each pair term is computed from f32
//! positions: `d` (1 rounding), `r^2` (3), `1 / r^2` (the hardware's
//! `rcp.approx.ftz` is within 1 ulp = 2u; the emulator and softcuda round
//! exactly), `r^-6` and `r^-8` (up to 7 factors of `1 / r^2`, each carrying
//! the 5u of `r^2` and `rcp`, plus 4 products), the FMA for `1 - 2 s6 r^-6`
//! and the final `c6 / m` scaling (3): under `E = 64 u` relative to the
//! pair's magnitude `fs |d_k|` with `fs = 24 eps r^-2 (2 (s/r)^12 + (s/r)^6)`
//! (the two terms' absolute values, so cancellation near the minimum is
//! covered). A ghost's position is `x_j + shift`, rounded once: an absolute
//! error `delta <= 4 u L_max`, to which the force term is at most
//! `15 fs` sensitive (`d / r^8` and `d / r^14`: derivative below
//! `(1 + 14) r^-8...`). The f32 sum of `m` terms adds `m u` times their
//! magnitudes. So `|a - a_ref| <= (scale_k (E + (m + 3) u) + 15 delta
//! magnitude) / m_i` (`reference::Evaluation`).
//!
//! Potential energy and virial: the same per-pair bound, summed over pairs,
//! with the f32 sum per body (`m_max u`), and `|du/dr| <= 12 |u|_mag / r`
//! for the ghost rounding.
//!
//! NVE: see the two tests' comments.

#![allow(clippy::needless_range_loop)] // component loops read best indexed

use gpu_kernels::periodic::{Grid, Tag};
use gpu_kernels::shape::{self, neighbour_slot};
use softcuda::Schedule;

use super::reference::{self, Lj};
use super::softcuda_device::SoftMd;
use super::*;
use crate::emulator::{EmulatedMd, LaunchOptions};

const U: f64 = 1.0 / 16_777_216.0;
const E_PAIR: f64 = 64.0 * U;

fn emulator() -> EmulatedMd {
    EmulatedMd::new(LaunchOptions::default())
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
            params,
        }
    }

    fn lj(&self) -> Lj {
        Lj {
            l: self.params.lengths.map(|l| l as f64),
            rc: self.params.cutoff as f64,
            eps: self.params.epsilon as f64,
            sigma: self.params.sigma as f64,
            shift: self.params.shift,
        }
    }

    fn vec4(v: &[[f64; 3]], w: &[f64]) -> Vec<Vec4> {
        v.iter()
            .zip(w)
            .map(|(p, &m)| Vec4::new(p[0] as f32, p[1] as f32, p[2] as f32, m as f32))
            .collect()
    }

    fn start<D: MdDevice>(&self, dev: &mut D) -> MdPlan {
        let mut plan = MdPlan::new(self.pos.len(), self.params).unwrap();
        let zeros = vec![0.0; self.pos.len()];
        plan.start(
            dev,
            &Case::vec4(&self.pos, &self.mass),
            &Case::vec4(&self.vel, &zeros),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        plan
    }
}

fn params(l: [f32; 3], cutoff: f32, skin: f32, cells: Option<[u32; 3]>, block: u32) -> MdParams {
    MdParams {
        cells,
        scan_block: 32,
        block,
        ..MdParams::new(l, cutoff, skin, 1.0, 1.0, true, 0.005)
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
    reference::add_gas(pos, n, [l; 3], 0.9, seed)
}

/// The state matrix: awkward N, boxes of 1, 2, 3 and many cells per side,
/// bodies on faces, lattices and random gases.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let v = |n: usize, seed: u64| reference::velocities(n, 1.0, seed);
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
    let pos = reference::random_gas(150, l, 0.9, 3);
    out.push(Case::new(
        "gas N 150 box 4 x 7.5 x 11",
        pos,
        v(150, 9),
        params(l.map(|x| x as f32), 1.5, 0.3, None, 32),
    ));
    // fcc lattices at the in.lj density: 32 bodies (box 3.36, 2 cells per
    // side at r_list 1.4), 2048 (8^3 unit cells, 4 cells per side at the
    // in.lj cutoff 2.5 and skin 0.3).
    let (pos, l) = reference::fcc(2, 0.8442);
    out.push(Case::new(
        "fcc N 32",
        pos,
        v(32, 1),
        params([l as f32; 3], 1.2, 0.2, None, 32),
    ));
    let (pos, l) = reference::fcc(8, 0.8442);
    out.push(Case::new(
        "fcc N 2048",
        pos,
        v(2048, 2),
        params([l as f32; 3], 2.5, 0.3, None, 128),
    ));
    out
}

fn read_vec4<D: MdDevice>(dev: &mut D, buf: MdBuf, count: usize) -> Vec<Vec4> {
    words_vec4(&dev.read(buf, 0, 4 * count).unwrap())
}

fn read_tags<D: MdDevice>(dev: &mut D, n: usize) -> Vec<Tag> {
    words_tag(&dev.read(MdBuf::Tag, 0, 4 * n).unwrap())
}

fn f64s(v: &[Vec4]) -> Vec<[f64; 3]> {
    v.iter()
        .map(|p| [p.x as f64, p.y as f64, p.z as f64])
        .collect()
}

/// Scans `data` in place on `dev`: the result and the total.
fn scan_on<D: MdDevice>(mut dev: D, plan: &MdPlan, data: &[u32], block: u32) -> (Vec<u32>, u32) {
    let len = data.len();
    dev.alloc(MdBuf::GhostOff, len, false).unwrap();
    dev.write(MdBuf::GhostOff, 0, data).unwrap();
    dev.alloc(
        MdBuf::ScanSums,
        shape::scan(len as u32, block).grid as usize,
        false,
    )
    .unwrap();
    dev.alloc(MdBuf::Status, STATUS_WORDS as usize, false)
        .unwrap();
    plan.scan(&mut dev, MdBuf::GhostOff, len as u32, STATUS_GHOSTS)
        .unwrap();
    let out = dev.read(MdBuf::GhostOff, 0, len).unwrap();
    (
        out,
        dev.read(MdBuf::Status, STATUS_GHOSTS as usize, 1).unwrap()[0],
    )
}

#[test]
fn scans_match_a_host_prefix_sum_across_many_blocks() {
    // 4099 elements in blocks of 32: 129 block sums, scanned in 5 chunks.
    for len in [1u32, 2, 31, 32, 33, 1000, 4099] {
        for block in [32u32, 64] {
            let mut p = MdParams::new([10.0; 3], 1.0, 0.1, 1.0, 1.0, false, 0.01);
            p.scan_block = block;
            let plan = MdPlan::new(len as usize, p).unwrap();
            let data: Vec<u32> = (0..len)
                .map(|k| k.wrapping_mul(2_654_435_761) >> 27)
                .collect();
            let mut want = Vec::new();
            let mut sum = 0u32;
            for &d in &data {
                want.push(sum);
                sum += d;
            }
            let got = scan_on(emulator(), &plan, &data, block);
            assert_eq!(got, (want.clone(), sum), "len {len} block {block}");
            for schedule in schedules() {
                let got = scan_on(SoftMd::new(schedule), &plan, &data, block);
                assert_eq!(
                    got,
                    (want.clone(), sum),
                    "softcuda {schedule:?} len {len} block {block}"
                );
            }
        }
    }
}

/// Checks the sorted arrays after a build: every body once, wrapped into
/// the box with its image counters, sorted by cell, stable within a cell.
fn check_binning<D: MdDevice>(dev: &mut D, plan: &MdPlan, case: &Case, first_build: bool) {
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

/// Checks the neighbour lists against the reference pairs within
/// `r_list` (pairs within 1e-5 of `r_list` may go either way).
fn check_lists<D: MdDevice>(dev: &mut D, plan: &MdPlan, case: &Case) {
    let n = case.pos.len();
    let what = &case.name;
    let ghosts = plan.ghosts() as usize;
    let all = read_vec4(dev, MdBuf::Pos, n + ghosts);
    let tags = read_tags(dev, n);
    let src = dev.read(MdBuf::GhostSrc, 0, ghosts).unwrap();
    let shift = read_vec4(dev, MdBuf::GhostShift, ghosts);
    let count = dev.read(MdBuf::NCount, 0, n).unwrap();
    let nlist = dev
        .read(
            MdBuf::NList,
            0,
            shape::neighbour_stride(plan.n()) as usize * plan.capacity() as usize,
        )
        .unwrap();
    let status = dev.read(MdBuf::Status, 0, STATUS_WORDS as usize).unwrap();
    assert_eq!(status[STATUS_LOST as usize], 0, "{what}: lost ghost");
    assert_eq!(
        status[STATUS_NEIGHBOURS as usize], 0,
        "{what}: overflow left"
    );
    // Ghosts sit at their body plus their shift, exactly as the kernel rounds it.
    for g in 0..ghosts {
        let (b, s) = (all[src[g] as usize], shift[g]);
        assert_eq!(
            all[n + g],
            Vec4::new(b.x + s.x, b.y + s.y, b.z + s.z, b.w),
            "{what}: ghost {g}"
        );
    }
    let lj = case.lj();
    let sorted = f64s(&all[..n]);
    let rlist = case.params.cutoff as f64 + case.params.skin as f64;
    let mut want = vec![Vec::new(); n];
    for (i, j, r) in lj.pairs_within(&sorted, rlist * (1.0 + 1e-5)) {
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
            let m = lj.min_image(std::array::from_fn(|c| sorted[j][c] - sorted[i][c]));
            for c in 0..3 {
                assert!(
                    (d[c] - m[c]).abs() <= 8.0 * U * lj.l[c],
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

#[test]
fn binning_and_lists_on_the_emulator() {
    for case in cases() {
        let mut dev = emulator();
        let plan = case.start(&mut dev);
        check_binning(&mut dev, &plan, &case, true);
        check_lists(&mut dev, &plan, &case);
        // Bit for bit the same on a second device (the atomics' order differs).
        let mut again = emulator();
        case.start(&mut again);
        let n = case.pos.len();
        for buf in [MdBuf::Pos, MdBuf::Tag, MdBuf::NCount, MdBuf::Acc] {
            let words = if buf == MdBuf::NCount { n } else { 4 * n };
            assert_eq!(
                dev.read(buf, 0, words).unwrap(),
                again.read(buf, 0, words).unwrap(),
                "{}: {buf:?}",
                case.name
            );
        }
    }
}

/// Checks accelerations (and with `thermo` the energies) of the current
/// state against the reference.
fn check_forces<D: MdDevice>(dev: &mut D, plan: &MdPlan, case: &Case) {
    let n = case.pos.len();
    let what = &case.name;
    let pos = read_vec4(dev, MdBuf::Pos, n);
    let acc = read_vec4(dev, MdBuf::Acc, n);
    let lj = case.lj();
    let r = lj.evaluate(&f64s(&pos));
    let l_max = lj.l.iter().fold(0.0f64, |m, &l| m.max(l));
    let delta = 4.0 * U * l_max;
    for i in 0..n {
        let m = pos[i].w as f64;
        let a = [acc[i].x, acc[i].y, acc[i].z];
        let terms = r.inside[i] as f64;
        for k in 0..3 {
            let want = r.force[i][k] / m;
            let tol =
                (r.scale[i][k] * (E_PAIR + (terms + 3.0) * U) + 15.0 * delta * r.magnitude[i]) / m;
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
    let pe_tol = r.potential_scale * rel
        + 12.0 * delta * r.potential_scale / r.closest
        + U * lj.energy_at(lj.rc * lj.rc).abs() * m_max * n as f64;
    assert!(
        (t.potential - r.potential).abs() <= pe_tol,
        "{what}: potential {} vs {} (allowed {pe_tol:e})",
        t.potential,
        r.potential
    );
    let vir_tol = r.virial_scale * rel + 14.0 * delta * r.virial_scale / r.closest;
    assert!(
        (t.virial - r.virial).abs() <= vir_tol,
        "{what}: virial {} vs {} (allowed {vir_tol:e})",
        t.virial,
        r.virial
    );
    let vel = f64s(&read_vec4(dev, MdBuf::Vel, n));
    let masses: Vec<f64> = pos.iter().map(|p| p.w as f64).collect();
    let ke = reference::kinetic(&vel, &masses);
    assert!(
        (t.kinetic - ke).abs() <= 1e-12 * ke.max(1e-300),
        "{what}: kinetic {} vs {ke}",
        t.kinetic
    );
    let volume: f64 = lj.l.iter().product();
    assert!(
        (t.pressure - (2.0 * t.kinetic + t.virial) / (3.0 * volume)).abs()
            <= 1e-12 * t.pressure.abs().max(1.0)
    );
}

#[test]
fn forces_and_thermo_match_the_reference_on_the_emulator() {
    for mut case in cases() {
        for shift in [false, true] {
            case.params.shift = shift;
            let mut dev = emulator();
            let plan = case.start(&mut dev);
            check_forces(&mut dev, &plan, &case);
        }
    }
}

/// Starts `case` on `dev`, then builds its lists again with room for 4
/// neighbours: the status word and the counts.
fn overflow_on<D: MdDevice>(mut dev: D, case: &Case) -> (u32, Vec<u32>) {
    let plan = case.start(&mut dev);
    let [lx, ly, lz] = plan.grid.l;
    let [nx, ny, nz] = plan.grid.n;
    dev.launch(
        Launch::MdNeighbours {
            pos: MdBuf::Pos,
            start: MdBuf::Starts,
            goff: MdBuf::GhostOff,
            nlist: MdBuf::NList,
            ncount: MdBuf::NCount,
            status: MdBuf::Status,
            n: plan.n,
            cap: 4,
            lx,
            ly,
            lz,
            nx,
            ny,
            nz,
            rlist2: plan.rlist2,
        },
        plan.per_body(plan.n),
    )
    .unwrap();
    let status = dev
        .read(MdBuf::Status, STATUS_NEIGHBOURS as usize, 1)
        .unwrap()[0];
    (status, dev.read(MdBuf::NCount, 0, plan.n as usize).unwrap())
}

#[test]
fn an_overflowing_list_is_flagged_and_the_plan_grows_it() {
    let (pos, l) = reference::fcc(3, 0.8442);
    let n = pos.len();
    let case = Case::new(
        "fcc N 108",
        pos,
        reference::velocities(n, 1.0, 5),
        params([l as f32; 3], 1.5, 0.3, None, 32),
    );
    // The longest list, from a normal start.
    let mut dev = emulator();
    let plan = case.start(&mut dev);
    let most = *dev.read(MdBuf::NCount, 0, n).unwrap().iter().max().unwrap();
    assert!(most > 4 && plan.capacity() >= most);
    // The kernel alone with a capacity of 4: the status word says how long
    // the longest list is, and the counts stop at the capacity.
    let check = |(status, counts): (u32, Vec<u32>), what: &str| {
        assert_eq!(
            status, most,
            "{what}: the status word holds the longest list's length"
        );
        assert!(
            counts.iter().all(|&c| c == 4),
            "{what}: counts stop at the capacity"
        );
    };
    check(overflow_on(emulator(), &case), "emulator");
    for schedule in schedules() {
        check(
            overflow_on(SoftMd::new(schedule), &case),
            &format!("softcuda {schedule:?}"),
        );
    }
    // The plan, started with room for 4, grows the lists and builds them complete.
    let mut dev = emulator();
    let mut plan = MdPlan::new(n, case.params).unwrap();
    plan.set_capacity(4);
    plan.start(
        &mut dev,
        &Case::vec4(&case.pos, &case.mass),
        &Case::vec4(&case.vel, &vec![0.0; n]),
    )
    .unwrap();
    assert!(plan.capacity() >= most);
    check_lists(&mut dev, &plan, &case);
    check_forces(&mut dev, &plan, &case);
}

/// The bodies of `list`'s entries for each slot (ghosts mapped to their
/// body), from the device.
fn listed<D: MdDevice>(dev: &mut D, plan: &MdPlan) -> Vec<Vec<usize>> {
    let n = plan.n() as usize;
    let src = dev
        .read(MdBuf::GhostSrc, 0, plan.ghosts() as usize)
        .unwrap();
    let count = dev.read(MdBuf::NCount, 0, n).unwrap();
    let nlist = dev
        .read(
            MdBuf::NList,
            0,
            shape::neighbour_stride(plan.n()) as usize * plan.capacity() as usize,
        )
        .unwrap();
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
fn check_no_missed_pair<D: MdDevice>(dev: &mut D, plan: &MdPlan, lj: &Lj, what: &str) {
    let n = plan.n() as usize;
    let pos = f64s(&read_vec4(dev, MdBuf::Pos, n));
    let lists = listed(dev, plan);
    for (i, j, _) in lj.pairs_within(&pos, lj.rc * (1.0 - 1e-5)) {
        assert!(
            lists[i].contains(&j) && lists[j].contains(&i),
            "{what}: pair {i}-{j} within the cutoff is not listed"
        );
    }
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
    let (pos, l) = reference::fcc(5, 0.8442);
    let n = pos.len();
    let mut case = Case::new(
        "liquid N 500",
        pos,
        reference::velocities(n, 1.44, 11),
        params([l as f32; 3], 2.5, 0.3, None, 128),
    );
    case.mass = vec![1.0; n];
    case.params.scan_block = 256;
    let lj = case.lj();
    let mut dev = emulator();
    let mut plan = case.start(&mut dev);
    let e0 = plan.thermo(&mut dev).unwrap();
    let start = lj.evaluate(&case.pos);
    let eval_tol = start.potential_scale * (E_PAIR + 2.0 * 100.0 * U) + U * e0.kinetic;
    let (mut rp, mut rv) = (case.pos.clone(), case.vel.clone());
    let reference = lj.verlet(&mut rp, &mut rv, &case.mass, case.params.dt as f64, 300);
    let r0 = start.potential + reference::kinetic(&case.vel, &case.mass);
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
            &lj,
            &format!("liquid after {} steps", 25 * (round + 1)),
        );
        let t = plan.thermo(&mut dev).unwrap();
        worst = worst.max((t.kinetic + t.potential - total0).abs());
    }
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
    let (pos, l) = reference::fcc(4, 1.0);
    let n = pos.len();
    let mut case = Case::new(
        "crystal N 256",
        pos,
        reference::velocities(n, 0.05, 12),
        params([l as f32; 3], 2.5, 0.3, None, 64),
    );
    case.mass = vec![1.0; n];
    let lj = case.lj();
    let start = lj.evaluate(&case.pos);
    let da = (0..n)
        .flat_map(|i| (0..3).map(move |k| (i, k)))
        .map(|(i, k)| {
            start.scale[i][k] * (E_PAIR + (start.inside[i] as f64 + 3.0) * U)
                + 15.0 * 4.0 * U * l * start.magnitude[i]
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
        lj.verlet(&mut rp, &mut rv, &case.mass, dt, 100);
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

impl<D: MdDevice> StepDevice for D {
    fn start_case(&mut self, case: &Case) -> MdPlan {
        case.start(self)
    }
    fn step_plan(&mut self, plan: &mut MdPlan) -> Option<Divergence> {
        plan.step(self, 1).unwrap()
    }
    fn check_ghosts(&mut self, plan: &MdPlan, what: &str) {
        let n = plan.n() as usize;
        let ghosts = plan.ghosts() as usize;
        let all = read_vec4(self, MdBuf::Pos, n + ghosts);
        let src = self.read(MdBuf::GhostSrc, 0, ghosts).unwrap();
        let shift = read_vec4(self, MdBuf::GhostShift, ghosts);
        for g in 0..ghosts {
            let (b, s) = (all[src[g] as usize], shift[g]);
            assert_eq!(
                all[n + g],
                Vec4::new(b.x + s.x, b.y + s.y, b.z + s.z, b.w),
                "{what}: ghost {g}"
            );
        }
    }
    fn state(&mut self, plan: &MdPlan) -> MdState {
        plan.read_state(self).unwrap()
    }
}

/// The same run on the emulator and on the software CUDA device (the
/// committed PTX) under every schedule: the same bits everywhere, builds
/// included (no atomic decides an order, no sum depends on timing).
#[test]
fn the_committed_ptx_runs_the_plan_bit_for_bit_like_the_emulator() {
    let (pos, l) = reference::fcc(3, 0.8442);
    let n = pos.len();
    // r_list 2.5 is just under half the box (2.52): 2 cells per side, ghosts everywhere.
    let mut liquid = Case::new(
        "fcc N 108 hot",
        pos,
        reference::velocities(n, 1.44, 4),
        params([l as f32; 3], 2.2, 0.3, None, 32),
    );
    liquid.params.scan_block = 32;
    let faces = cases().into_iter().find(|c| c.pos.len() == 33).unwrap();
    for case in [liquid, faces] {
        let run = |dev: &mut dyn RunDevice| dev.run(&case, 20);
        let want = run(&mut emulator());
        assert!(want.1 > 1, "{}: the run rebuilt its lists", case.name);
        for schedule in schedules() {
            let got = run(&mut SoftMd::new(schedule));
            assert!(
                got == want,
                "{}: softcuda {schedule:?} differs from the emulator",
                case.name
            );
        }
    }
}

/// A run's observable bits: buffers after `steps` steps, builds, thermo.
type RunBits = (Vec<Vec<u32>>, u64, [u64; 4]);

trait RunDevice {
    fn run(&mut self, case: &Case, steps: u64) -> RunBits;
}

impl<D: MdDevice> RunDevice for D {
    fn run(&mut self, case: &Case, steps: u64) -> RunBits {
        let mut plan = case.start(self);
        assert_eq!(plan.step(self, steps).unwrap(), None);
        let t = plan.thermo(self).unwrap();
        let n = 4 * plan.n() as usize;
        let bufs =
            [MdBuf::Pos, MdBuf::Vel, MdBuf::Tag, MdBuf::Acc].map(|b| self.read(b, 0, n).unwrap());
        (
            bufs.to_vec(),
            plan.builds(),
            [t.kinetic, t.potential, t.virial, t.pressure].map(f64::to_bits),
        )
    }
}

#[test]
fn coincident_bodies_are_a_reported_divergence() {
    let mut pos = reference::random_gas(20, [6.0; 3], 1.0, 8);
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
            cutoff: 2.9,
            ..good
        })
        .contains("cutoff + skin")
    );
    assert!(bad(MdParams { skin: -0.1, ..good }).contains("skin = -0.1"));
    assert!(
        bad(MdParams {
            cutoff: f32::NAN,
            ..good
        })
        .contains("cutoff")
    );
    assert!(
        bad(MdParams {
            epsilon: 0.0,
            ..good
        })
        .contains("epsilon")
    );
    assert!(
        bad(MdParams {
            sigma: -1.0,
            ..good
        })
        .contains("sigma")
    );
    assert!(
        bad(MdParams {
            lengths: [6.0, 0.0, 6.0],
            ..good
        })
        .contains("box length y")
    );
    assert!(
        bad(MdParams {
            cells: Some([4, 1, 1]),
            ..good
        })
        .contains("cells per side")
    );
    assert!(bad(MdParams { block: 48, ..good }).contains("block"));
    assert!(bad(MdParams { dt: 0.0, ..good }).contains("time step"));
    assert!(matches!(MdPlan::new(0, good), Err(Error::NoBodies)));
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
    let (pos, l) = reference::fcc(8, 0.8442);
    let n = pos.len();
    let case = Case::new(
        "in.lj N 2048",
        pos,
        reference::velocities(n, 1.44, 6),
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
        "nbody_lj_forces, N {n}, {pairs} list entries ({:.1} per body): {:.2} warp instructions, {:.2} thread instructions, {bytes:.2} bytes ({:.3} sectors) per pair",
        pairs as f64 / n as f64,
        per_pair(s.warp_instructions) * 32.0,
        per_pair(s.thread_instructions),
        per_pair(s.global_sectors)
    );
    let per_body = 2.0 * 32.0 * n as f64 / pairs as f64; // position + count in, acceleration out
    assert!(bytes <= 36.0 + per_body, "{bytes} bytes per pair");
}
