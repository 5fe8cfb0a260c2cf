//! Instructions the shipped kernels do not use yet but the next ones will
//! (neighbour lists, scans, Lennard-Jones): integer atomics on global and
//! shared memory, `shfl.sync`, `vote.sync`, `rcp.approx.ftz`, `div.rn`,
//! `cvt.rni`, bit manipulation, f64, 16-bit arithmetic, generic addressing
//! of shared and local memory. Each kernel writes per-thread results that
//! the test recomputes on the host, under every schedule.

#![allow(
    clippy::needless_range_loop,
    clippy::too_many_arguments,
    reason = "component loops read best indexed"
)]

mod common;

use common::*;
use softcuda::{LaunchConfig, LaunchOptions, Module, Schedule};

const HEAD: &str =
    ".version 7.0\n.target sm_70\n.address_size 64\n.extern .shared .align 16 .b8 smem[];\n";

/// An entry `k(out, n)` with `%r5` = global thread index, `%r2` = tid.x,
/// `%rd1` = out (global), `%r1` = n, followed by `body`.
fn kernel(body: &str, extra_decls: &str) -> String {
    format!(
        "{HEAD}.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)\n{{\n\t.reg .pred %p<16>;\n\t.reg .b16 %rs<16>;\n\t.reg .b32 %r<64>;\n\t.reg .f32 %f<32>;\n\t.reg .b64 %rd<32>;\n\t.reg .f64 %fd<16>;\n{extra_decls}\tld.param.u64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd1, %rd1;\n\tld.param.u32 %r1, [k_param_1];\n\tmov.u32 %r2, %tid.x;\n\tmov.u32 %r3, %ctaid.x;\n\tmov.u32 %r4, %ntid.x;\n\tmad.lo.s32 %r5, %r3, %r4, %r2;\n{body}\n\tret;\n}}\n"
    )
}

/// Runs `k` with `grid x block` threads and `words` output words per
/// launch, under every schedule; returns the output of each schedule.
fn run(ptx: &str, grid: u32, block: u32, shared: u32, words: usize) -> Vec<Vec<u32>> {
    let m = Module::from_ptx(ptx).unwrap_or_else(|e| panic!("{e}"));
    let k = m.kernel("k").unwrap();
    schedules()
        .into_iter()
        .map(|schedule| {
            let mut dev = device();
            let out = upload(&mut dev, &vec![0u8; 4 * words]);
            let n = grid * block;
            let params = k
                .pack_params(&[&out.to_le_bytes(), &n.to_le_bytes()])
                .unwrap();
            let opts = LaunchOptions {
                schedule,
                ..LaunchOptions::default()
            };
            dev.launch(
                k,
                &LaunchConfig::linear(grid, block, shared),
                &params,
                &opts,
            )
            .unwrap_or_else(|e| panic!("{schedule:?}: {e}"));
            download(&mut dev, out, 4 * words)
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        })
        .collect()
}

/// Stores `%r{reg}` to `out[i * stride + slot]`.
fn store(reg: &str, slot: u32, stride: u32) -> String {
    format!(
        "\tmul.lo.u32 %r60, %r5, {stride};\n\tadd.u32 %r60, %r60, {slot};\n\tmul.wide.u32 %rd30, %r60, 4;\n\tadd.s64 %rd31, %rd1, %rd30;\n\tst.global.b32 [%rd31], {reg};\n"
    )
}

#[test]
fn arithmetic_conversion_and_bit_operations() {
    const S: u32 = 16;
    let mut body = String::new();
    body += "\tcvt.rn.f32.u32 %f1, %r5;\n\tadd.f32 %f1, %f1, 0f3F000000;\n"; // f = i + 0.5
    body += "\trcp.approx.ftz.f32 %f2, %f1;\n";
    body += &store("%f2", 0, S);
    body += "\tdiv.rn.f32 %f3, 0f40400000, %f1;\n";
    body += &store("%f3", 1, S);
    body += "\tsqrt.rn.f32 %f4, %f1;\n";
    body += &store("%f4", 2, S);
    body += "\tcvt.rni.s32.f32 %r6, %f1;\n";
    body += &store("%r6", 3, S);
    body += "\tneg.f32 %f5, %f1;\n\tcvt.rzi.s32.f32 %r7, %f5;\n";
    body += &store("%r7", 4, S);
    body += "\tmul.hi.u32 %r8, %r5, -1640531527;\n\tmul.lo.u32 %r8, %r8, 2654435769;\n\txor.b32 %r8, %r8, %r5;\n";
    body += &store("%r8", 5, S);
    body += "\tpopc.b32 %r9, %r8;\n";
    body += &store("%r9", 6, S);
    body += "\tclz.b32 %r10, %r8;\n";
    body += &store("%r10", 7, S);
    body += "\tbrev.b32 %r11, %r8;\n";
    body += &store("%r11", 8, S);
    body += "\tbfe.u32 %r12, %r8, 4, 8;\n";
    body += &store("%r12", 9, S);
    body += "\tneg.s32 %r13, %r5;\n\tshr.s32 %r13, %r13, 2;\n";
    body += &store("%r13", 10, S);
    body += "\tsub.s32 %r14, %r5, 40;\n\tmax.s32 %r14, %r14, -7;\n\tmin.u32 %r15, %r5, 50;\n\tadd.s32 %r14, %r14, %r15;\n";
    body += &store("%r14", 11, S);
    body += "\tsetp.lt.u32 %p1, %r5, 20;\n\tsetp.gt.and.u32 %p2|%p3, %r5, 10, %p1;\n\tselp.u32 %r16, 1, 0, %p2;\n\tselp.u32 %r17, 2, 0, %p3;\n\tadd.u32 %r16, %r16, %r17;\n";
    body += &store("%r16", 12, S);
    body += "\trem.u32 %r18, %r8, 7;\n\tdiv.s32 %r19, %r13, 3;\n\tadd.u32 %r18, %r18, %r19;\n";
    body += &store("%r18", 13, S);
    body += "\tprmt.b32 %r20, %r8, %r5, 0x7531;\n";
    body += &store("%r20", 14, S);
    body += "\tmin.f32 %f6, %f1, 0f41200000;\n\tmax.f32 %f6, %f6, 0f40000000;\n\tabs.f32 %f7, %f5;\n\tfma.rn.f32 %f6, %f6, %f7, %f5;\n";
    body += &store("%f6", 15, S);
    let n = 70u32;
    let outs = run(&kernel(&body, ""), 3, 32, 0, (96 * S) as usize);
    for out in &outs {
        for i in 0..96u32 {
            let o = |k: u32| out[(i * S + k) as usize];
            let f = i as f32 + 0.5;
            // rcp.approx.ftz.f32: the H200's bits (the tables themselves are
            // checked in tests/mufu.rs), within an ulp of 1/f.
            assert_eq!(o(0), softcuda::mufu::rcp(f).to_bits(), "rcp {i}");
            assert!(o(0).abs_diff((1.0 / f).to_bits()) <= 1, "rcp {i}");
            assert_eq!(o(1), (3.0 / f).to_bits(), "div {i}");
            assert_eq!(o(2), f.sqrt().to_bits(), "sqrt {i}");
            assert_eq!(o(3) as i32, f.round_ties_even() as i32, "cvt.rni {i}");
            assert_eq!(o(4) as i32, (-f).trunc() as i32, "cvt.rzi {i}");
            let h = ((i as u64 * 2654435769u64) >> 32) as u32;
            let x = h.wrapping_mul(2654435769) ^ i;
            assert_eq!(o(5), x, "mul.hi {i}");
            assert_eq!(o(6), x.count_ones(), "popc {i}");
            assert_eq!(o(7), x.leading_zeros(), "clz {i}");
            assert_eq!(o(8), x.reverse_bits(), "brev {i}");
            assert_eq!(o(9), (x >> 4) & 0xff, "bfe {i}");
            let sh = (-(i as i32)) >> 2;
            assert_eq!(o(10) as i32, sh, "shr.s32 {i}");
            assert_eq!(
                o(11) as i32,
                (i as i32 - 40).max(-7) + i.min(50) as i32,
                "min/max {i}"
            );
            let p1 = i < 20;
            let want = if i > 10 && p1 { 1 } else { 0 } + if i <= 10 && p1 { 2 } else { 0 };
            assert_eq!(o(12), want, "setp.and pair {i}");
            assert_eq!(o(13), (x % 7).wrapping_add((sh / 3) as u32), "rem/div {i}");
            let bytes = (x as u64) | ((i as u64) << 32);
            let sel = [1u32, 3, 5, 7];
            let prmt = sel.iter().enumerate().fold(0u32, |r, (k, &s)| {
                r | ((((bytes >> (8 * s)) & 0xff) as u32) << (8 * k))
            });
            assert_eq!(o(14), prmt, "prmt {i}");
            let m = f.clamp(2.0, 10.0);
            assert_eq!(o(15), m.mul_add(f, -f).to_bits(), "min/max/fma {i}");
        }
    }
    let _ = n;
}

/// Every f32 operation whose result is NaN gives sm_90's canonical NaN
/// `0x7fffffff`, whatever the operands' payloads (0 * inf, inf - inf,
/// fma(0, inf, 0), sqrt(-1), 0 / 0, NaN operands with payloads, min of two
/// NaNs, the MUFU instructions, the f32 atomic add), in the vectorised
/// (`.rn`) and the flush-to-zero paths alike; neg/abs stay sign-bit
/// operations (PTX leaves their NaN unspecified). Before the fix the host's
/// NaNs came through: 0xffc00000 for 0 * inf, the payload for a NaN operand.
#[test]
fn every_f32_nan_is_the_canonical_nan() {
    // 0fFFC01234: a negative NaN with a payload; 0f7FA00001: a signalling NaN.
    let cases: [(&str, u32); 15] = [
        ("mul.rn.f32 %f1, 0f00000000, 0f7F800000;", 0x7fff_ffff),
        ("mul.ftz.f32 %f1, 0f00000000, 0f7F800000;", 0x7fff_ffff),
        ("sub.rn.f32 %f1, 0f7F800000, 0f7F800000;", 0x7fff_ffff),
        ("add.ftz.f32 %f1, 0f7F800000, 0fFF800000;", 0x7fff_ffff),
        (
            "fma.rn.f32 %f1, 0f00000000, 0f7F800000, 0f00000000;",
            0x7fff_ffff,
        ),
        ("sqrt.rn.f32 %f1, 0fBF800000;", 0x7fff_ffff),
        ("div.rn.f32 %f1, 0f00000000, 0f00000000;", 0x7fff_ffff),
        ("add.rn.f32 %f1, 0fFFC01234, 0f3F800000;", 0x7fff_ffff),
        ("mul.rn.f32 %f1, 0f7FA00001, 0f3F800000;", 0x7fff_ffff),
        ("min.f32 %f1, 0fFFC01234, 0f7FC00001;", 0x7fff_ffff),
        ("rcp.rn.f32 %f1, 0fFFC01234;", 0x7fff_ffff),
        ("rsqrt.approx.ftz.f32 %f1, 0fFFC01234;", 0x7fff_ffff),
        ("rcp.approx.ftz.f32 %f1, 0fFFC01234;", 0x7fff_ffff),
        ("rsqrt.approx.ftz.f32 %f1, 0fBF800000;", 0x7fff_ffff),
        ("neg.f32 %f1, 0f7FFFFFFF;", 0xffff_ffff),
    ];
    let mut body = String::new();
    for (k, (inst, _)) in cases.iter().enumerate() {
        body += &format!(
            "	{inst}
"
        );
        body += &store("%f1", k as u32, 16);
    }
    // atom.add.f32 of +inf and -inf in global memory: slot 15.
    body += "	mul.wide.u32 %rd30, %r5, 64;
	add.s64 %rd31, %rd1, %rd30;
	st.global.b32 [%rd31+60], 0f7F800000;
	atom.global.add.f32 %f2, [%rd31+60], 0fFF800000;
";
    for out in run(&kernel(&body, ""), 1, 32, 0, 32 * 16) {
        for t in 0..32usize {
            for (k, (inst, want)) in cases.iter().enumerate() {
                assert_eq!(out[t * 16 + k], *want, "{inst} (thread {t})");
            }
            assert_eq!(out[t * 16 + 15], 0x7fff_ffff, "atom.add.f32 inf + -inf");
        }
    }
}

/// `cvt.rn.f32.f64` of a NaN is not an f32 operation's canonical NaN: the
/// H200 gave 0xffc00000 for 0xfff8000012345678
/// (softcuda-driver/tests/data/h200_jit_probe.json), the sign and the
/// payload's top bits kept as its f64 path keeps payloads (`cvt.f64.f32`,
/// `add.rn.f64` there). Before the fix softcuda gave 0x7fffffff.
#[test]
fn f64_to_f32_nan_keeps_the_sign_as_the_h200_does() {
    let body = format!(
        "\tcvt.rn.f32.f64 %f1, 0dFFF8000012345678;\n{}",
        store("%f1", 0, 1)
    );
    for out in run(&kernel(&body, ""), 1, 32, 0, 32) {
        for (t, &w) in out.iter().enumerate() {
            assert_eq!(w, 0xffc0_0000, "cvt.rn.f32.f64 NaN (thread {t})");
        }
    }
}

#[test]
fn integer_atomics_on_global_and_shared_memory() {
    let body = "\
\tand.b32 %r6, %r5, 3;\n\tmul.wide.u32 %rd2, %r6, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tatom.global.add.u32 %r7, [%rd3], 1;\n\
\tsub.s32 %r8, %r5, 50;\n\tatom.global.max.s32 %r9, [%rd1+16], %r8;\n\
\tatom.global.min.u32 %r9, [%rd1+20], %r5;\n\
\tadd.u32 %r10, %r5, 1;\n\tatom.global.cas.b32 %r11, [%rd1+24], 0, %r10;\n\
\tsetp.eq.u32 %p1, %r11, 0;\n\t@%p1 red.global.add.u32 [%rd1+28], 1;\n\
\tatom.global.exch.b32 %r12, [%rd1+32], %r10;\n\
\tatom.global.inc.u32 %r13, [%rd1+36], 9;\n\
\tmov.u64 %rd4, smem;\n\tsetp.eq.u32 %p2, %r2, 0;\n\t@%p2 st.shared.u32 [%rd4], 0;\n\tbar.sync 0;\n\
\tatom.shared.add.u32 %r14, [%rd4], %r2;\n\tbar.sync 0;\n\
\t@%p2 ld.shared.u32 %r15, [%rd4];\n\t@%p2 red.global.add.u32 [%rd1+40], %r15;\n\
\tatom.global.add.u64 %rd5, [%rd1+48], 3;\n";
    // Word 11 holds the u64's high half. 3 blocks of 64 threads.
    let ptx = kernel(body, "");
    let init_min = true;
    let m = Module::from_ptx(&ptx).unwrap();
    let k = m.kernel("k").unwrap();
    for schedule in schedules() {
        let mut dev = device();
        let mut init = [0u32; 14];
        if init_min {
            init[5] = u32::MAX;
        }
        init[4] = i32::MIN as u32;
        let bytes: Vec<u8> = init.iter().flat_map(|w| w.to_le_bytes()).collect();
        let out = upload(&mut dev, &bytes);
        let params = k
            .pack_params(&[&out.to_le_bytes(), &192u32.to_le_bytes()])
            .unwrap();
        let opts = LaunchOptions {
            schedule,
            ..LaunchOptions::default()
        };
        dev.launch(k, &LaunchConfig::linear(3, 64, 16), &params, &opts)
            .unwrap_or_else(|e| panic!("{schedule:?}: {e}"));
        let w: Vec<u32> = download(&mut dev, out, 56)
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(&w[0..4], &[48, 48, 48, 48], "histogram {schedule:?}");
        assert_eq!(w[4] as i32, 191 - 50, "max.s32 {schedule:?}");
        assert_eq!(w[5], 0, "min.u32 {schedule:?}");
        assert!((1..=192).contains(&w[6]), "cas winner {schedule:?}");
        assert_eq!(w[7], 1, "exactly one cas succeeds {schedule:?}");
        assert!((1..=192).contains(&w[8]), "exch {schedule:?}");
        // inc wraps at 9: 192 increments from 0 end at 192 mod 10.
        assert_eq!(w[9], 192 % 10, "inc {schedule:?}");
        assert_eq!(
            w[10],
            3 * (0..64).sum::<u32>(),
            "shared atomics {schedule:?}"
        );
        assert_eq!(
            w[12] as u64 | ((w[13] as u64) << 32),
            3 * 192,
            "add.u64 {schedule:?}"
        );
    }
}

#[test]
fn shuffles_votes_and_activemask() {
    const S: u32 = 10;
    let mut body = String::new();
    // Butterfly sum of the lane ids: 496 in every lane.
    body += "\tmov.u32 %r6, %laneid;\n\tmov.u32 %r7, %r6;\n";
    for d in [16, 8, 4, 2, 1] {
        body += &format!("\tshfl.sync.bfly.b32 %r8, %r7, {d}, 31, -1;\n\tadd.u32 %r7, %r7, %r8;\n");
    }
    body += &store("%r7", 0, S);
    body += "\tshfl.sync.idx.b32 %r9, %r5, 3, 31, -1;\n";
    body += &store("%r9", 1, S);
    body += "\tshfl.sync.up.b32 %r10|%p1, %r5, 2, 0, -1;\n\tselp.u32 %r11, 1, 0, %p1;\n";
    body += &store("%r10", 2, S);
    body += &store("%r11", 3, S);
    body += "\tshfl.sync.down.b32 %r12, %r5, 5, 31, -1;\n";
    body += &store("%r12", 4, S);
    body += "\tand.b32 %r13, %r6, 1;\n\tsetp.eq.u32 %p2, %r13, 1;\n\tvote.sync.ballot.b32 %r14, %p2, -1;\n";
    body += &store("%r14", 5, S);
    body += "\tsetp.lt.u32 %p3, %r6, 40;\n\tvote.sync.all.pred %p4, %p3, -1;\n\tvote.sync.any.pred %p5, %p2, -1;\n\tvote.sync.uni.pred %p6, %p2, -1;\n\tselp.u32 %r15, 1, 0, %p4;\n\tselp.u32 %r16, 2, 0, %p5;\n\tselp.u32 %r17, 4, 0, %p6;\n\tor.b32 %r15, %r15, %r16;\n\tor.b32 %r15, %r15, %r17;\n";
    body += &store("%r15", 6, S);
    // In a branch taken by the even lanes only.
    body += "\tmov.u32 %r18, 0;\n\t@%p2 bra ODD;\n\tactivemask.b32 %r18;\nODD:\n";
    body += &store("%r18", 7, S);
    // A 16-lane shuffle segment: c = 0x101f with seg mask 0x10.
    body += "\tshfl.sync.idx.b32 %r19, %r6, 0, 0x101f, -1;\n";
    body += &store("%r19", 8, S);
    body += "\tbar.warp.sync -1;\n";
    let outs = run(&kernel(&body, ""), 2, 64, 0, (128 * S) as usize);
    for (s, out) in outs.iter().enumerate() {
        for i in 0..128u32 {
            let o = |k: u32| out[(i * S + k) as usize];
            let lane = i % 32;
            let base = i - lane;
            assert_eq!(o(0), 496, "bfly sum {i} schedule {s}");
            assert_eq!(o(1), base + 3, "idx {i}");
            if lane >= 2 {
                assert_eq!((o(2), o(3)), (i - 2, 1), "up {i}");
            } else {
                assert_eq!((o(2), o(3)), (i, 0), "up clamp {i}");
            }
            assert_eq!(o(4), if lane + 5 <= 31 { i + 5 } else { i }, "down {i}");
            assert_eq!(o(5), 0xAAAA_AAAA, "ballot {i}");
            assert_eq!(o(6), 1 | 2, "all/any/uni {i}");
            if lane % 2 == 0 {
                // Deterministic: the branch's lanes; independent threads:
                // at least this lane, and only even lanes.
                let m = o(7);
                assert!(
                    m >> lane & 1 == 1 && m & 0xAAAA_AAAA == 0,
                    "activemask {m:#x} lane {lane}"
                );
                if s == 0 {
                    assert_eq!(m, 0x5555_5555);
                }
            }
            assert_eq!(o(8), lane & 0x10, "segmented shfl {i}");
        }
    }
}

#[test]
fn generic_addressing_of_shared_and_local_memory() {
    // red.shared.add.f32 through a generic pointer, as gpu-kernels' inline
    // assembly does; a generic load of shared memory; local memory.
    let decls = "\t.local .align 8 .b8 __local_depot0[16];\n\t.reg .b64 %SP;\n\t.reg .b64 %SPL;\n";
    let body = "\
\tmov.u64 %rd2, smem;\n\tcvta.shared.u64 %rd3, %rd2;\n\
\tsetp.eq.u32 %p1, %r2, 0;\n\t@%p1 st.shared.f32 [%rd2], 0f00000000;\n\tbar.sync 0;\n\
\t{ .reg .u64 %sp; cvta.to.shared.u64 %sp, %rd3; red.shared.add.f32 [%sp], 0f3F800000; }\n\
\tbar.sync 0;\n\tld.f32 %f1, [%rd3];\n\
\tmov.u64 %SPL, __local_depot0;\n\tcvta.local.u64 %SP, %SPL;\n\
\tst.u32 [%SP+4], %r5;\n\tst.local.u32 [%SPL+8], %r2;\n\tld.local.u32 %r6, [%SPL+4];\n\tld.u32 %r7, [%SP+8];\n\tadd.u32 %r6, %r6, %r7;\n";
    let mut body = body.to_owned();
    body += &store("%f1", 0, 2);
    body += &store("%r6", 1, 2);
    let outs = run(&kernel(&body, decls), 2, 96, 16, 2 * 192);
    for out in outs {
        for i in 0..192u32 {
            assert_eq!(
                out[2 * i as usize],
                96.0f32.to_bits(),
                "shared sum via generic pointer"
            );
            assert_eq!(out[2 * i as usize + 1], i + i % 96, "local memory");
        }
    }
}

#[test]
fn double_precision_and_sixteen_bit_arithmetic() {
    const S: u32 = 6;
    let mut body = String::new();
    body += "\tcvt.rn.f64.u32 %fd1, %r5;\n\tadd.f64 %fd1, %fd1, 0d3FF0000000000000;\n\tdiv.rn.f64 %fd2, 0d4000000000000000, %fd1;\n\tsqrt.rn.f64 %fd3, %fd1;\n\tfma.rn.f64 %fd4, %fd2, %fd3, %fd1;\n\tcvt.rn.f32.f64 %f1, %fd4;\n";
    body += &store("%f1", 0, S);
    body += "\tmov.b64 {%r20, %r21}, %fd2;\n";
    body += &store("%r20", 1, S);
    body += &store("%r21", 2, S);
    body += "\tmov.b64 %fd5, {%r21, %r20};\n\tsetp.gt.f64 %p1, %fd5, %fd2;\n\tselp.u32 %r22, 1, 0, %p1;\n";
    body += &store("%r22", 3, S);
    body += "\tcvt.u16.u32 %rs1, %r5;\n\tmul.lo.u16 %rs2, %rs1, 1000;\n\tadd.u16 %rs2, %rs2, 60000;\n\tcvt.u32.u16 %r23, %rs2;\n";
    body += &store("%r23", 4, S);
    body += "\tcvt.s16.s32 %rs3, %r5;\n\tsub.s16 %rs3, 0, %rs3;\n\tsetp.lt.s16 %p2, %rs3, -10;\n\tselp.u32 %r24, 1, 0, %p2;\n";
    body += &store("%r24", 5, S);
    let outs = run(&kernel(&body, ""), 1, 64, 0, (64 * S) as usize);
    for out in outs {
        for i in 0..64u32 {
            let o = |k: u32| out[(i * S + k) as usize];
            let x = i as f64 + 1.0;
            let q = 2.0 / x;
            assert_eq!(o(0), (q.mul_add(x.sqrt(), x) as f32).to_bits(), "f64 {i}");
            assert_eq!(
                (o(1), o(2)),
                (q.to_bits() as u32, (q.to_bits() >> 32) as u32),
                "unpack {i}"
            );
            let swapped = f64::from_bits(((q.to_bits() as u32 as u64) << 32) | (q.to_bits() >> 32));
            assert_eq!(o(3), (swapped > q) as u32, "pack {i}");
            assert_eq!(
                o(4),
                ((i as u16).wrapping_mul(1000)).wrapping_add(60000) as u32,
                "u16 {i}"
            );
            assert_eq!(o(5), ((-(i as i16)) < -10) as u32, "s16 {i}");
        }
    }
}

#[test]
fn a_collective_in_divergent_code_runs_per_thread_in_the_deterministic_schedule() {
    // Odd and even lanes reach two different bar.warp.sync instructions:
    // legal since sm_70; the lockstep schedule falls back to per-thread mode.
    let body = "\tmov.u32 %r6, %laneid;\n\tand.b32 %r7, %r6, 1;\n\tsetp.eq.u32 %p1, %r7, 1;\n\t@%p1 bra ODD;\n\tbar.warp.sync -1;\n\tbra.uni JOIN;\nODD:\n\tbar.warp.sync -1;\nJOIN:\n\tshfl.sync.bfly.b32 %r8, %r6, 1, 31, -1;\n";
    let mut body = body.to_owned();
    body += &store("%r8", 0, 1);
    let outs = run(&kernel(&body, ""), 1, 64, 0, 64);
    for out in outs {
        for i in 0..64u32 {
            assert_eq!(out[i as usize], (i % 32) ^ 1);
        }
    }
    let _ = Schedule::Deterministic;
}

/// `mov.pred %p, 0`, `1` and `-1` (LLVM's `true`): rustc's nvptx backend
/// emits them for a `bool` set to a constant on a path into a loop (the MD
/// neighbour build's "lost ghost" flag).
#[test]
fn predicate_moves_from_immediates() {
    let body = "\tmov.pred %p1, 0;\n\tmov.pred %p2, 1;\n\tmov.pred %p3, -1;\n\tselp.u32 %r10, 7, 9, %p1;\n\tselp.u32 %r11, 7, 9, %p2;\n\tselp.u32 %r12, 7, 9, %p3;\n"
        .to_owned()
        + &store("%r10", 0, 3)
        + &store("%r11", 1, 3)
        + &store("%r12", 2, 3);
    for out in run(&kernel(&body, ""), 1, 32, 0, 96) {
        for i in 0..32 {
            assert_eq!(&out[3 * i..3 * i + 3], [9, 7, 7], "lane {i}");
        }
    }
}
