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
