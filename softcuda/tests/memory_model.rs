//! The memory model (issue 24 item 3), each case with a program that is
//! correct under PTX's rules and one that is not:
//!
//! - message passing between blocks: release/acquire (`st.release` /
//!   `ld.acquire`, or fences around relaxed or volatile accesses) is neither a
//!   race nor a stale read; without the producer's or the consumer's fence it
//!   is a race on the data (detector on) and a stale read on some seeds of
//!   the adversarial schedule (detector off); `.cta` scope across blocks is
//!   not synchronisation;
//! - atomics: `.gpu` (the default) across blocks commute, `.cta` across
//!   blocks is a race, and without the detector loses updates across SMs;
//! - `ld.global.nc` reads the launch's starting memory: data written in the
//!   same launch is stale there, and the detector names the load;
//! - blocks interleave in the adversarial schedule (an inter-block handshake
//!   completes, atomics of different blocks interleave), while a grid
//!   barrier over more blocks than can be resident hangs, as on hardware;
//! - a shuffle from a lane outside the member mask returns poison.

#![allow(clippy::too_many_arguments, reason = "kernel launch helpers")]

mod common;

use common::*;
use softcuda::{Device, ErrorCode, LaunchConfig, LaunchError, LaunchOptions, Module, RaceCheck};
use softcuda::{Schedule, memory};

const HEADER: &str = ".version 7.0\n.target sm_70\n.address_size 64\n";

/// An entry `k(buf, n)` with `%rd1` = buf (global), `%r1` = n, `%r2` = tid.x,
/// `%r3` = ctaid.x, `%r4` = ntid.x, `%r5` = global thread index.
fn kernel_ptx(body: &str) -> String {
    format!(
        "{HEADER}.extern .shared .align 16 .b8 smem[];\n.visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u32 k_param_1\n)\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<32>;\n\t.reg .b64 %rd<16>;\n\tld.param.b64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd1, %rd1;\n\tld.param.b32 %r1, [k_param_1];\n\tmov.u32 %r2, %tid.x;\n\tmov.u32 %r3, %ctaid.x;\n\tmov.u32 %r4, %ntid.x;\n\tmad.lo.s32 %r5, %r3, %r4, %r2;\n{body}\n\tret;\n}}\n"
    )
}

fn run_k(
    dev: &mut Device,
    ptx: &str,
    buf: u64,
    grid: u32,
    block: u32,
    opts: &LaunchOptions,
) -> Result<softcuda::Stats, LaunchError> {
    let m = Module::from_ptx(ptx).unwrap_or_else(|e| panic!("{e}\n{ptx}"));
    let k = m.kernel("k").unwrap();
    let n = grid * block;
    let params = k
        .pack_params(&[&buf.to_le_bytes(), &n.to_le_bytes()])
        .unwrap();
    dev.launch(k, &LaunchConfig::linear(grid, block, 0), &params, opts)
}

fn word(bytes: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap())
}

/// Words of the message-passing buffer: data, the flag and the result each
/// in their own 256-byte line.
const DATA: usize = 0;
const FLAG: usize = 64;
const OUT: usize = 128;
const WORDS: usize = 192;

/// Block 0's thread 0 stores 42 to the data word and then 1 to the flag
/// word with `produce`; block 1's thread 0 reads the word after the data
/// (never written: no race, but its line, data included, may now sit in its
/// SM's L1), spins on the flag with `load` until it is 1, runs `after`, and
/// copies the data to the result word.
fn message_passing(produce: &str, load: &str, after: &str) -> String {
    kernel_ptx(&format!(
        "\tsetp.ne.u32 %p1, %r2, 0;\n\t@%p1 bra END;\n\tadd.s64 %rd2, %rd1, {f};\n\tadd.s64 %rd3, %rd1, {o};\n\tsetp.ne.u32 %p2, %r3, 0;\n\t@%p2 bra CONSUMER;\n\tmov.u32 %r6, 42;\n\tst.global.u32 [%rd1], %r6;\n\tmov.u32 %r9, 1;\n{produce}\n\tbra.uni END;\nCONSUMER:\n\tld.global.u32 %r10, [%rd1+4];\nSPIN:\n\t{load} %r7, [%rd2];\n\tsetp.eq.u32 %p3, %r7, 0;\n\t@%p3 bra SPIN;\n{after}\n\tld.global.u32 %r8, [%rd1];\n\tst.global.u32 [%rd3], %r8;\nEND:",
        f = 4 * FLAG,
        o = 4 * OUT,
    ))
}

/// Runs a message-passing kernel on two blocks: the value the consumer read
/// (races unchecked), or the launch error (races checked).
fn pass(ptx: &str, schedule: Schedule, races: RaceCheck) -> Result<u32, LaunchError> {
    let mut dev = device();
    let buf = upload(&mut dev, &[0u8; 4 * WORDS]);
    let opts = LaunchOptions {
        schedule,
        races,
        max_warp_instructions: 2_000_000,
        ..LaunchOptions::default()
    };
    run_k(&mut dev, ptx, buf, 2, 32, &opts)?;
    Ok(word(&download(&mut dev, buf, 4 * WORDS), OUT))
}

fn adversarial_seeds() -> impl Iterator<Item = Schedule> {
    (0..48).map(|seed| Schedule::Adversarial { seed })
}

/// Producer and consumer halves of the correct message-passing idioms.
const CORRECT: [(&str, &str, &str, &str); 4] = [
    (
        "release/acquire",
        "\tst.release.gpu.global.u32 [%rd2], %r9;",
        "ld.acquire.gpu.global.u32",
        "",
    ),
    (
        "fence + relaxed",
        "\tfence.acq_rel.gpu;\n\tst.relaxed.gpu.global.u32 [%rd2], %r9;",
        "ld.relaxed.gpu.global.u32",
        "\tfence.acq_rel.gpu;",
    ),
    (
        "membar.gl + volatile",
        "\tmembar.gl;\n\tst.volatile.global.u32 [%rd2], %r9;",
        "ld.volatile.global.u32",
        "\tmembar.gl;",
    ),
    (
        "atomic exchange + fence",
        "\tmembar.gl;\n\tatom.global.exch.b32 %r11, [%rd2], %r9;",
        "ld.relaxed.sys.global.u32",
        "\tfence.sc.sys;",
    ),
];

#[test]
fn fenced_message_passing_is_neither_a_race_nor_stale() {
    for (what, produce, load, after) in CORRECT {
        let ptx = message_passing(produce, load, after);
        for schedule in schedules() {
            assert_eq!(
                pass(&ptx, schedule, RaceCheck::All),
                Ok(42),
                "{what}, {schedule:?}"
            );
        }
        for schedule in adversarial_seeds() {
            assert_eq!(
                pass(&ptx, schedule, RaceCheck::Off),
                Ok(42),
                "{what}, {schedule:?}, races unchecked"
            );
        }
    }
}

/// Runs `ptx` with the detector on (every schedule: a race on the data word
/// of the right kind) and off (some adversarial seed reads the stale 0).
fn assert_broken(what: &str, ptx: &str, racy_word: usize) {
    for schedule in schedules() {
        let e = pass(ptx, schedule, RaceCheck::All).unwrap_err();
        assert_eq!(e.code, ErrorCode::LaunchFailed, "{what}, {schedule:?}: {e}");
        assert!(
            e.message.contains("global memory race"),
            "{what}, {schedule:?}: {e}"
        );
        // The word named is the racy one (the message gives its address).
        let at = e.message.split("word at ").nth(1).unwrap_or("");
        let addr = u64::from_str_radix(at[2..].split(':').next().unwrap(), 16).unwrap();
        assert_eq!(
            addr % 1024,
            4 * racy_word as u64,
            "{what}, {schedule:?}: {e}"
        );
    }
    let seen: std::collections::BTreeSet<u32> = adversarial_seeds()
        .map(|s| pass(ptx, s, RaceCheck::Off).unwrap())
        .collect();
    assert!(
        seen.contains(&0),
        "{what}: no adversarial seed read stale data (saw {seen:?})"
    );
}

#[test]
fn message_passing_without_the_producers_fence_is_caught() {
    let ptx = message_passing(
        "\tst.volatile.global.u32 [%rd2], %r9;",
        "ld.volatile.global.u32",
        "\tmembar.gl;",
    );
    assert_broken("no producer fence", &ptx, DATA);
    let ptx = message_passing(
        "\tst.relaxed.gpu.global.u32 [%rd2], %r9;",
        "ld.acquire.gpu.global.u32",
        "",
    );
    assert_broken("relaxed store, acquire load", &ptx, DATA);
}

#[test]
fn message_passing_without_the_consumers_fence_is_caught() {
    let ptx = message_passing(
        "\tmembar.gl;\n\tst.volatile.global.u32 [%rd2], %r9;",
        "ld.volatile.global.u32",
        "",
    );
    assert_broken("no consumer fence", &ptx, DATA);
    let ptx = message_passing(
        "\tst.release.gpu.global.u32 [%rd2], %r9;",
        "ld.relaxed.gpu.global.u32",
        "",
    );
    assert_broken("release store, relaxed load", &ptx, DATA);
}

#[test]
fn cta_scope_does_not_synchronise_blocks() {
    // Release/acquire at .cta scope between two blocks: the flag accesses
    // are not morally strong, a race on the flag itself.
    let ptx = message_passing(
        "\tst.release.cta.global.u32 [%rd2], %r9;",
        "ld.acquire.cta.global.u32",
        "",
    );
    for schedule in schedules() {
        let e = pass(&ptx, schedule, RaceCheck::All).unwrap_err();
        assert!(
            e.message.contains("global memory race"),
            "{schedule:?}: {e}"
        );
        assert!(e.message.contains(".cta"), "{schedule:?}: {e}");
    }
    // Plain (weak) flag accesses are a race as well.
    let ptx = message_passing("\tst.global.u32 [%rd2], %r9;", "ld.global.u32", "");
    for schedule in schedules() {
        let e = pass(&ptx, schedule, RaceCheck::All).unwrap_err();
        assert!(
            e.message.contains("global memory race"),
            "{schedule:?}: {e}"
        );
    }
}

/// Every thread of `grid` blocks of 32 adds 1 to word 0 with `atom`.
fn count(atom: &str, grid: u32, schedule: Schedule, races: RaceCheck) -> Result<u32, LaunchError> {
    let ptx = kernel_ptx(&format!("\tmov.u32 %r6, 1;\n\t{atom} %r7, [%rd1], %r6;"));
    let mut dev = device();
    let buf = upload(&mut dev, &[0u8; 4]);
    let opts = LaunchOptions {
        schedule,
        races,
        ..LaunchOptions::default()
    };
    run_k(&mut dev, &ptx, buf, grid, 32, &opts)?;
    Ok(word(&download(&mut dev, buf, 4), 0))
}

#[test]
fn cta_scoped_atomics_across_blocks_are_caught() {
    for schedule in schedules() {
        // .gpu (the default scope) across blocks, .cta within one block: fine.
        assert_eq!(
            count("atom.global.add.u32", 8, schedule, RaceCheck::All),
            Ok(256)
        );
        assert_eq!(
            count(
                "atom.relaxed.gpu.global.add.u32",
                8,
                schedule,
                RaceCheck::All
            ),
            Ok(256)
        );
        assert_eq!(
            count("atom.cta.global.add.u32", 1, schedule, RaceCheck::All),
            Ok(32)
        );
        // .cta across blocks: a race naming the scope.
        let e = count("atom.cta.global.add.u32", 8, schedule, RaceCheck::All).unwrap_err();
        assert_eq!(e.code, ErrorCode::LaunchFailed, "{schedule:?}: {e}");
        assert!(
            e.message.contains("global memory race") && e.message.contains(".cta"),
            "{schedule:?}: {e}"
        );
    }
    // Undetected, .cta atomics of blocks on different SMs lose updates on
    // some adversarial seed; .gpu ones never do.
    let mut totals = std::collections::BTreeSet::new();
    for schedule in adversarial_seeds() {
        assert_eq!(
            count("atom.global.add.u32", 8, schedule, RaceCheck::Off),
            Ok(256)
        );
        totals.insert(count("atom.cta.global.add.u32", 8, schedule, RaceCheck::Off).unwrap());
    }
    assert!(
        totals.iter().any(|&t| t < 256),
        ".cta atomics never lost an update: {totals:?}"
    );
}

/// Thread 0 stores 7 to word 0 and then reads it back with `load` into
/// word 1; word 2 holds 5 (never written) and is read with `ld.global.nc`
/// into word 3.
fn nc_kernel(load: &str) -> String {
    kernel_ptx(&format!(
        "\tsetp.ne.u32 %p1, %r5, 0;\n\t@%p1 bra END;\n\tmov.u32 %r6, 7;\n\tst.global.u32 [%rd1], %r6;\n\t{load} %r7, [%rd1];\n\tst.global.u32 [%rd1+4], %r7;\n\tld.global.nc.u32 %r8, [%rd1+8];\n\tst.global.u32 [%rd1+12], %r8;\nEND:"
    ))
}

fn nc_run(ptx: &str, schedule: Schedule, races: RaceCheck) -> Result<[u32; 4], LaunchError> {
    let mut dev = device();
    let init: Vec<u8> = [3u32, 0, 5, 0]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let buf = upload(&mut dev, &init);
    let opts = LaunchOptions {
        schedule,
        races,
        ..LaunchOptions::default()
    };
    run_k(&mut dev, ptx, buf, 2, 32, &opts)?;
    let out = download(&mut dev, buf, 16);
    Ok(std::array::from_fn(|i| word(&out, i)))
}

#[test]
fn ld_nc_reads_the_memory_of_the_launch_start() {
    for schedule in schedules() {
        // A plain load sees the store; ld.nc of data nobody writes is exact.
        assert_eq!(
            nc_run(&nc_kernel("ld.global.u32"), schedule, RaceCheck::All),
            Ok([7, 7, 5, 5]),
            "{schedule:?}"
        );
        // ld.nc of the word this launch wrote: the value from before the
        // launch (stale), and the detector names the load.
        assert_eq!(
            nc_run(&nc_kernel("ld.global.nc.u32"), schedule, RaceCheck::Off),
            Ok([7, 3, 5, 5]),
            "{schedule:?}"
        );
        let e = nc_run(&nc_kernel("ld.global.nc.u32"), schedule, RaceCheck::All).unwrap_err();
        assert_eq!(e.code, ErrorCode::LaunchFailed, "{schedule:?}: {e}");
        assert!(e.message.contains("ld.global.nc"), "{schedule:?}: {e}");
        // ldu is the same read-only path.
        assert_eq!(
            nc_run(&nc_kernel("ldu.global.u32"), schedule, RaceCheck::Off),
            Ok([7, 3, 5, 5]),
            "{schedule:?}"
        );
    }
    // The next launch starts from the memory the last one left.
    let mut dev = device();
    let init: Vec<u8> = [3u32, 0, 5, 0]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let buf = upload(&mut dev, &init);
    let opts = LaunchOptions {
        races: RaceCheck::Off,
        ..LaunchOptions::default()
    };
    let ptx = nc_kernel("ld.global.nc.u32");
    run_k(&mut dev, &ptx, buf, 1, 32, &opts).unwrap();
    run_k(&mut dev, &ptx, buf, 1, 32, &opts).unwrap();
    assert_eq!(word(&download(&mut dev, buf, 16), 1), 7);
}

/// Each block's thread 0 takes two tickets from word 0 with atomics and
/// stores them to words `1 + 2 b` and `2 + 2 b`.
const TICKETS: &str = "\tsetp.ne.u32 %p1, %r2, 0;\n\t@%p1 bra END;\n\tmov.u32 %r6, 1;\n\tatom.global.add.u32 %r7, [%rd1], %r6;\n\tatom.global.add.u32 %r8, [%rd1], %r6;\n\tshl.b32 %r9, %r3, 1;\n\tadd.u32 %r9, %r9, 1;\n\tmul.wide.u32 %rd2, %r9, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r7;\n\tst.global.u32 [%rd3+4], %r8;\nEND:";

#[test]
fn blocks_interleave_in_the_adversarial_schedule() {
    let grid = 6;
    let tickets = |schedule| {
        let mut dev = device();
        let buf = upload(&mut dev, &vec![0u8; 4 * (1 + 2 * grid)]);
        let opts = LaunchOptions {
            schedule,
            ..LaunchOptions::default()
        };
        run_k(&mut dev, &kernel_ptx(TICKETS), buf, grid as u32, 64, &opts).unwrap();
        let out = download(&mut dev, buf, 4 * (1 + 2 * grid));
        (0..grid)
            .map(|b| (word(&out, 1 + 2 * b), word(&out, 2 + 2 * b)))
            .collect::<Vec<_>>()
    };
    // Deterministic: blocks one after another, in order.
    let t = tickets(Schedule::Deterministic);
    assert_eq!(
        t,
        (0..grid as u32)
            .map(|b| (2 * b, 2 * b + 1))
            .collect::<Vec<_>>()
    );
    // Adversarial: another block's atomic between a block's two on some seeds.
    let interleaved = adversarial_seeds()
        .filter(|&s| tickets(s).iter().any(|&(a, b)| b != a + 1))
        .count();
    assert!(interleaved > 0, "no seed interleaved two blocks");
}

/// Every block's thread 0 arrives at a grid barrier (an atomic count) and
/// waits until all `nctaid` blocks have arrived; then stores 1 to word
/// `1 + block`.
const GRID_BARRIER: &str = "\tsetp.ne.u32 %p1, %r2, 0;\n\t@%p1 bra END;\n\tmov.u32 %r6, 1;\n\tmov.u32 %r10, %nctaid.x;\n\tatom.global.add.u32 %r7, [%rd1], %r6;\nSPIN:\n\tld.relaxed.gpu.global.u32 %r8, [%rd1];\n\tsetp.lt.u32 %p2, %r8, %r10;\n\t@%p2 bra SPIN;\n\tadd.u32 %r9, %r3, 1;\n\tmul.wide.u32 %rd2, %r9, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r6;\nEND:";

#[test]
fn an_inter_block_handshake_needs_resident_blocks() {
    let run = |grid: u32, schedule| {
        let mut dev = device();
        let buf = upload(&mut dev, &vec![0u8; 4 * (1 + grid as usize)]);
        let opts = LaunchOptions {
            schedule,
            max_warp_instructions: 3_000_000,
            ..LaunchOptions::default()
        };
        run_k(&mut dev, &kernel_ptx(GRID_BARRIER), buf, grid, 64, &opts)
            .map(|_| download(&mut dev, buf, 4 * (1 + grid as usize)))
    };
    // Four blocks are resident together: every seed completes the barrier.
    for schedule in adversarial_seeds().take(8) {
        let out = run(4, schedule).unwrap_or_else(|e| panic!("{schedule:?}: {e}"));
        assert_eq!(
            (0..5).map(|i| word(&out, i)).collect::<Vec<_>>(),
            [4, 1, 1, 1, 1]
        );
    }
    // The deterministic schedule runs blocks to completion one at a time,
    // and 4096 blocks are never resident at once: both spin forever.
    for (grid, schedule) in [
        (4, Schedule::Deterministic),
        (4096, Schedule::Adversarial { seed: 1 }),
    ] {
        let e = run(grid, schedule).unwrap_err();
        assert_eq!(e.code, ErrorCode::LaunchTimeout, "{grid} {schedule:?}: {e}");
    }
}

#[test]
fn a_shuffle_from_a_lane_outside_the_member_mask_is_poison() {
    // Lanes 0..15 shuffle with member mask 0xffff: from lane 3 (a member),
    // from lane 20 (not a member), and up by 2 (lanes 0 and 1 have no
    // source in range: their own value, predicate false).
    let body = "\tsetp.ge.u32 %p1, %r2, 16;\n\t@%p1 bra END;\n\tadd.u32 %r6, %r2, 100;\n\tshfl.sync.idx.b32 %r7, %r6, 3, 31, 0xffff;\n\tshfl.sync.idx.b32 %r8, %r6, 20, 31, 0xffff;\n\tshfl.sync.up.b32 %r9|%p2, %r6, 2, 0, 0xffff;\n\tselp.u32 %r10, 1, 0, %p2;\n\tmul.lo.u32 %r11, %r2, 4;\n\tmul.wide.u32 %rd2, %r11, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r7;\n\tst.global.u32 [%rd3+4], %r8;\n\tst.global.u32 [%rd3+8], %r9;\n\tst.global.u32 [%rd3+12], %r10;\nEND:";
    let ptx = kernel_ptx(body);
    let poison = u32::from_le_bytes(memory::POISON);
    for schedule in schedules() {
        let mut dev = device();
        let buf = upload(&mut dev, &[0u8; 4 * 64]);
        let opts = LaunchOptions {
            schedule,
            ..LaunchOptions::default()
        };
        run_k(&mut dev, &ptx, buf, 1, 32, &opts).unwrap();
        let out = download(&mut dev, buf, 4 * 64);
        for lane in 0..16u32 {
            let o = |k: u32| word(&out, (4 * lane + k) as usize);
            assert_eq!(o(0), 103, "lane {lane}: idx from a member, {schedule:?}");
            assert_eq!(o(1), poison, "lane {lane}: idx from lane 20, {schedule:?}");
            let (want, valid) = if lane < 2 {
                (100 + lane, 0)
            } else {
                (98 + lane, 1)
            };
            assert_eq!(
                (o(2), o(3)),
                (want, valid),
                "lane {lane}: up 2, {schedule:?}"
            );
        }
    }
}
