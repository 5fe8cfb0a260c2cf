//! The kernels one launch sequence at a time: scans, binning, lists,
//! overflow, forces and thermo (see `mod.rs` for the tolerances).

use super::*;

/// Scans `data` in place on `dev`: the result and the total.
fn scan_on<D: Device<MdBuf>>(
    mut dev: D,
    plan: &MdPlan,
    data: &[u32],
    block: u32,
) -> (Vec<u32>, u32) {
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
    // The scans belong to builds: they run when the step builds.
    dev.write(MdBuf::Status, STATUS_DUE as usize, &[1]).unwrap();
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
            let mut p = MdParams::new([10.0; 3], lj(1.0), 0.1, 0.01);
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

#[test]
fn forces_and_thermo_match_the_reference_on_the_emulator() {
    for case in cases() {
        for &style in PairStyle::ALL {
            for (types, shift) in [(1, false), (1, true), (2, true)] {
                let case = case.with_style(style, types, shift);
                let mut dev = emulator();
                let plan = case.start(&mut dev);
                check_forces(&mut dev, &plan, &case);
            }
        }
    }
}

/// Starts `case` on `dev`, then builds its lists again with room for 4
/// neighbours: the status word and the counts.
fn overflow_on<D: Device<MdBuf>>(mut dev: D, case: &Case) -> (u32, Vec<u32>) {
    let plan = case.start(&mut dev);
    dev.launch(plan.neighbours(4), plan.per_body(plan.n))
        .unwrap();
    let status = dev
        .read(MdBuf::Status, STATUS_NEIGHBOURS as usize, 1)
        .unwrap()[0];
    (status, dev.read(MdBuf::NCount, 0, plan.n as usize).unwrap())
}

#[test]
fn an_overflowing_list_is_flagged_and_the_plan_grows_it() {
    let (pos, l) = states::fcc(3, 0.8442);
    let n = pos.len();
    let case = Case::new(
        "fcc N 108",
        pos,
        states::velocities(n, 1.0, 5),
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
    let mut plan = MdPlan::new(n, case.params.clone()).unwrap();
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

/// The lists as the general loop of `neighbours::build` writes them, entry
/// for entry and in order: for each sorted body its cells `z - 1 .. z + 1`,
/// then `y`, then `x` (each distinct cell once), bodies of a cell in sorted
/// order, every candidate at its minimum image (`min_image` per dimension),
/// a shifted one as its ghost. Written here on the host from the device's
/// sorted positions, cell starts and ghost offsets.
fn general_order_lists<D: Device<MdBuf>>(dev: &mut D, plan: &MdPlan) -> Vec<Vec<u32>> {
    use gpu_kernels::interaction::Real;
    use gpu_kernels::periodic::{ghost_mask, ghost_radius, ghost_rank, min_image};
    let n = plan.n();
    let pos = read_vec4(dev, MdBuf::Pos, n as usize);
    let starts = dev
        .read(MdBuf::Starts, 0, plan.cell_count() as usize + 1)
        .unwrap();
    let goff = dev.read(MdBuf::GhostOff, 0, n as usize).unwrap();
    let grid = plan.grid;
    let (l, cells) = (grid.l, grid.n);
    let rg = ghost_radius(plan.rlist2, l);
    let inv_l = l.map(|x| 1.0 / x);
    // The distinct cells of a dimension around `c`, in the loop's order.
    let around = |c: u32, k: usize| -> Vec<u32> {
        match cells[k] {
            1 => vec![0],
            2 => vec![c, 1 - c],
            m => vec![(c + m - 1) % m, c, (c + 1) % m],
        }
    };
    (0..n)
        .map(|i| {
            let pi = pos[i as usize];
            let c = grid.cell_coords(pi);
            let mut list = Vec::new();
            for cz in around(c[2], 2) {
                for cy in around(c[1], 1) {
                    for cx in around(c[0], 0) {
                        let cell = grid.cell_index([cx, cy, cz]) as usize;
                        for j in starts[cell]..starts[cell + 1] {
                            if j == i {
                                continue;
                            }
                            let pj = pos[j as usize];
                            let (dx, sx) = min_image(pj.x - pi.x, l[0], inv_l[0]);
                            let (dy, sy) = min_image(pj.y - pi.y, l[1], inv_l[1]);
                            let (dz, sz) = min_image(pj.z - pi.z, l[2], inv_l[2]);
                            let r2 = Real::mul_add(dz, dz, Real::mul_add(dy, dy, dx * dx));
                            if r2 < plan.rlist2 {
                                list.push(if sx == 0.0 && sy == 0.0 && sz == 0.0 {
                                    j
                                } else {
                                    let r = ghost_rank(ghost_mask(pj, l, rg), [sx, sy, sz])
                                        .expect("a ghost at every image within r_list");
                                    n + goff[j as usize] + r - 1
                                });
                            }
                        }
                    }
                }
            }
            list
        })
        .collect()
}

/// Checks that the device's lists are [`general_order_lists`] bit for bit.
fn check_list_order<D: Device<MdBuf>>(dev: &mut D, plan: &MdPlan, what: &str) {
    let want = general_order_lists(dev, plan);
    let (count, nlist) = read_lists(dev, plan);
    for (i, want) in want.iter().enumerate() {
        let got: Vec<u32> = (0..count[i])
            .map(|k| nlist[neighbour_slot(i as u32, k, plan.capacity()) as usize])
            .collect();
        assert_eq!(&got, want, "{what}: the list of sorted body {i}");
    }
}

/// The lists' content and order are the general loop's (the force sums,
/// thus every bit of an MD run, follow that order), on the cases above
/// (1, 2, 3 and 6-7 cells per side) and on boxes of 5 to 7 cells per side
/// with bodies on every face, so each row of cells wraps at either end:
/// on the emulator and on the software device (the committed PTX).
#[test]
fn lists_keep_the_general_loops_order() {
    let mut all = cases();
    for (n, l, seed) in [
        (700usize, [9.0f64, 11.0, 13.0], 5u64),
        (450, [9.5, 9.0, 9.2], 6),
    ] {
        let mut pos = states::random_gas(n, l, 0.9, seed);
        // A body on each face and edge of the box (at 0 and just below L).
        for k in 0..pos.len().min(64) {
            let d = k % 3;
            pos[k][d] = if k % 2 == 0 { 0.0 } else { l[d] * (1.0 - 1e-7) };
        }
        all.push(Case::new(
            &format!("gas N {n} box {l:?}"),
            pos,
            states::velocities(n, 1.0, seed),
            params(l.map(|x| x as f32), 1.5, 0.3, None, 64),
        ));
    }
    for case in &all {
        let mut dev = emulator();
        let plan = case.start(&mut dev);
        check_list_order(&mut dev, &plan, &format!("{}, emulator", case.name));
        let mut dev = SoftMd::new(Schedule::Deterministic);
        let plan = case.start(&mut dev);
        check_list_order(&mut dev, &plan, &format!("{}, softcuda", case.name));
    }
}
