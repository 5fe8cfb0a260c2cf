//! Deliberately broken kernels and launches, and the checks that catch
//! them: a `bar.sync` deleted from the shipped PTX (a race naming the
//! kernel, threads, lines and address), out-of-bounds and misaligned
//! accesses (CUDA_ERROR_ILLEGAL_ADDRESS / MISALIGNED_ADDRESS, sticky), an
//! unknown instruction (named with its line), parameter-list mismatches,
//! swapped arguments, warp-synchronous assumptions, barrier misuse and
//! infinite loops.
//! (Over 600 lines: one broken kernel or launch per check, sharing the
//! launch recipes of every shipped kernel.)

#![allow(
    clippy::needless_range_loop,
    clippy::too_many_arguments,
    reason = "component loops read best indexed"
)]

mod common;

use common::*;
use gpu_kernels::pair::{Coeffs, PairSetup, Style, Visitor, fill_row, row_words};
use gpu_kernels::periodic::{STATUS_DUE, STATUS_WORDS};
use gpu_kernels::shape;
use softcuda::{
    Device, ErrorCode, LaunchConfig, LaunchOptions, Module, ModuleError, RaceCheck, Schedule, arch,
};

/// Runs the shipped kernel `name` (a force kernel, guarded or not, a
/// Hermite force kernel, the energy kernel, a scan, or a pair style's thermo
/// kernel on a made-up neighbour list) at N = 300, or N = 1100 for the
/// triangle kernels, where they have interior and edge blocks for blocks of 64 and 128 (groups of
/// 256 and 512 bodies). Launch shapes come from `gpu_kernels::shape`, as the
/// host's.
fn run_force(
    m: &Module,
    name: &str,
    block: u32,
    schedule: Schedule,
) -> Result<(), softcuda::LaunchError> {
    let n = if name.contains("triangle") || name.contains("block_pair") {
        1100
    } else {
        300
    };
    let p = bodies(n, 3);
    let v = velocities(n, 4);
    let mut dev = device();
    let pos = upload(&mut dev, &to_bytes(&p));
    let out = upload(&mut dev, &vec![0u8; 16 * n]);
    let vel = upload(&mut dev, &to_bytes(&v));
    let acc = upload(&mut dev, &vec![0u8; 16 * n]);
    let nn = n as u32;
    let accel_args = vec![
        Arg::Ptr(pos),
        Arg::Ptr(acc),
        Arg::U32(nn),
        Arg::F32(1.0),
        Arg::F32(0.01),
    ];
    let euler_args = vec![
        Arg::Ptr(pos),
        Arg::Ptr(out),
        Arg::Ptr(vel),
        Arg::U32(nn),
        Arg::F32(0.01),
        Arg::F32(1.0),
        Arg::F32(0.01),
    ];
    let (launch_shape, args) = match name.trim_end_matches("_guarded") {
        "nbody_simt_accel" => (shape::per_body(nn, block), accel_args),
        "nbody_simt_euler" => (shape::per_body(nn, block), euler_args),
        "nbody_tiled_accel" => (shape::tiled(nn, block), accel_args),
        "nbody_tiled_euler" => (shape::tiled(nn, block), euler_args),
        "nbody_triangle_accel" => (shape::triangle(nn, block).expect("small"), accel_args),
        // Four threads per body (partial sums added in shared memory).
        "nbody_split_accel" => (
            shape::split(nn, block, 4),
            vec![
                Arg::Ptr(pos),
                Arg::Ptr(acc),
                Arg::U32(nn),
                Arg::U32(4),
                Arg::F32(1.0),
                Arg::F32(0.01),
            ],
        ),
        "nbody_split_euler" => (
            shape::split(nn, block, 4),
            vec![
                Arg::Ptr(pos),
                Arg::Ptr(out),
                Arg::Ptr(vel),
                Arg::U32(nn),
                Arg::U32(4),
                Arg::F32(0.01),
                Arg::F32(1.0),
                Arg::F32(0.01),
            ],
        ),
        // The block-pair family: I = the bodies above, J = another set of N.
        "nbody_block_pull" => (
            shape::tiled(nn, block),
            vec![
                Arg::Ptr(pos),
                Arg::Ptr(upload(&mut dev, &to_bytes(&bodies(n, 5)))),
                Arg::Ptr(acc),
                Arg::U32(nn),
                Arg::U32(nn),
                Arg::F32(0.01),
            ],
        ),
        "nbody_block_pair" => (
            shape::block_pair(nn, nn, block).expect("small"),
            vec![
                Arg::Ptr(pos),
                Arg::Ptr(upload(&mut dev, &to_bytes(&bodies(n, 5)))),
                Arg::Ptr(acc),
                Arg::Ptr(out),
                Arg::U32(nn),
                Arg::U32(nn),
                Arg::F32(0.01),
            ],
        ),
        "nbody_block_potential" => {
            let partials = shape::block_potential_partials(nn, block) as usize;
            let partials = upload(&mut dev, &vec![0u8; 8 * partials]);
            (
                shape::block_potential(nn, block),
                vec![
                    Arg::Ptr(pos),
                    Arg::Ptr(upload(&mut dev, &to_bytes(&bodies(n, 5)))),
                    Arg::U32(nn),
                    Arg::U32(nn),
                    Arg::F32(0.01),
                    Arg::Ptr(partials),
                ],
            )
        }
        "nbody_energy" => {
            let partials = shape::energy_partials(nn, block) as usize;
            let partials = upload(&mut dev, &vec![0u8; 8 * partials]);
            (
                shape::energy(nn, block),
                vec![
                    Arg::Ptr(pos),
                    Arg::Ptr(vel),
                    Arg::U32(nn),
                    Arg::F32(0.01),
                    Arg::Ptr(partials),
                ],
            )
        }
        "nbody_scan_blocks" | "nbody_scan_sums" | "nbody_md_count_entries" => {
            let data: Vec<u8> = (0..n as u32).flat_map(|k| (k % 7).to_le_bytes()).collect();
            let data = upload(&mut dev, &data);
            let sums = upload(&mut dev, &vec![0u8; 4 * n]);
            // The status words of a step that builds the lists (the scans
            // and the entry count return at once otherwise).
            let mut due = [0u32; STATUS_WORDS as usize];
            due[STATUS_DUE as usize] = 1;
            let status = upload(&mut dev, &due.map(u32::to_le_bytes).concat());
            if name == "nbody_md_count_entries" {
                (
                    shape::count_entries(nn, block),
                    vec![Arg::Ptr(data), Arg::Ptr(status), Arg::U32(nn)],
                )
            } else if name == "nbody_scan_blocks" {
                let s = shape::scan(nn, block);
                (
                    s,
                    vec![
                        Arg::Ptr(data),
                        Arg::Ptr(data),
                        Arg::Ptr(sums),
                        Arg::Ptr(status),
                        Arg::U32(nn),
                    ],
                )
            } else {
                // One block over all 300 values: several chunks.
                let s = shape::scan_sums(block);
                (
                    s,
                    vec![Arg::Ptr(data), Arg::U32(nn), Arg::Ptr(status), Arg::U32(4)],
                )
            }
        }
        thermo if thermo_style(thermo).is_some() => {
            // Every pair style's thermo kernel: eight neighbours per body,
            // i + 1 ..= i + 8, in the list layout; one atom type, the law's
            // example coefficients.
            let style = thermo_style(thermo).expect("matched");
            let cap = 8;
            let mut list = vec![0u32; (shape::neighbour_stride(nn) * cap) as usize];
            for i in 0..nn {
                for k in 0..cap {
                    list[shape::neighbour_slot(i, k, cap) as usize] = (i + 1 + k) % nn;
                }
            }
            let list: Vec<u8> = list.iter().flat_map(|w| w.to_le_bytes()).collect();
            let nlist = upload(&mut dev, &list);
            let ncount = upload(&mut dev, &[8u32; 300].map(|c| c.to_le_bytes()).concat());
            let types = upload(&mut dev, &vec![0u8; 4 * n]);
            let row: Vec<u8> = style
                .visit(ExampleRow)
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect();
            let table = upload(&mut dev, &row);
            let partials = shape::pair_partials(nn, block) as usize;
            let partials = upload(&mut dev, &vec![0u8; 8 * partials]);
            let s = shape::pair_forces(nn, block, true);
            let mut args = vec![
                Arg::Ptr(pos),
                Arg::Ptr(types),
                Arg::Ptr(nlist),
                Arg::Ptr(ncount),
            ];
            args.extend([
                Arg::Ptr(acc),
                Arg::Ptr(vel),
                Arg::Ptr(partials),
                Arg::Ptr(table),
            ]);
            let words = (row.len() / 4) as u32;
            args.extend([
                Arg::U32(nn),
                Arg::U32(nn),
                Arg::U32(cap),
                Arg::U32(1),
                Arg::U32(words),
            ]);
            (s, args)
        }
        "nbody_hermite_force" | "nbody_hermite_force_mixed" => {
            // Every body active against every body, in f64 quadruples.
            let wide = |b: &[[f32; 4]]| -> Vec<u8> {
                b.iter()
                    .flatten()
                    .flat_map(|&x| (x as f64).to_le_bytes())
                    .collect()
            };
            let (jpos, jvel) = (upload(&mut dev, &wide(&p)), upload(&mut dev, &wide(&v)));
            let slots: Vec<u8> = (0..nn).flat_map(|k| k.to_le_bytes()).collect();
            let islot = upload(&mut dev, &slots);
            let partials = upload(&mut dev, &vec![0u8; 64 * n]);
            let mixed = name.ends_with("mixed");
            (
                gpu_kernels::hermite::force_shape(nn, block, 1, mixed).expect("small"),
                vec![
                    Arg::Ptr(jpos),
                    Arg::Ptr(jvel),
                    Arg::Ptr(jpos),
                    Arg::Ptr(jvel),
                    Arg::Ptr(islot),
                    Arg::Ptr(partials),
                    Arg::U32(nn),
                    Arg::U32(nn),
                    Arg::U32(1),
                    Arg::F64(0.01),
                ],
            )
        }
        "nbody_md_ensemble_pass" => {
            // A kick with the block sums of m v^2 (the shared-memory tree);
            // ids 0..n, no Langevin numbers (lang_len 0), a zero state.
            use gpu_kernels::md_ensemble::{CFG_WORDS, ENS_WORDS, PASS_KICK, PASS_SUMS};
            let tags: Vec<u8> = (0..nn)
                .flat_map(|k| [0u32, 0, 0, k].map(u32::to_le_bytes).concat())
                .collect();
            let tag = upload(&mut dev, &tags);
            let state = upload(&mut dev, &vec![0u8; 8 * ENS_WORDS as usize]);
            let cfg = upload(&mut dev, &vec![0u8; 8 * CFG_WORDS as usize]);
            let s = shape::ensemble_pass(nn, block);
            let partials = upload(&mut dev, &vec![0u8; 16 * s.grid as usize]);
            (
                s,
                vec![
                    Arg::Ptr(pos),
                    Arg::Ptr(vel),
                    Arg::Ptr(acc),
                    Arg::Ptr(tag),
                    Arg::Ptr(acc),
                    Arg::Ptr(state),
                    Arg::Ptr(cfg),
                    Arg::Ptr(partials),
                    Arg::U32(nn),
                    Arg::F32(0.005),
                    Arg::U32(PASS_KICK | PASS_SUMS),
                    Arg::U32(0),
                    Arg::U32(0),
                ],
            )
        }
        "nbody_md_ensemble_end" => {
            // The blocks' sums added in block order from shared memory staged
            // by the whole block (`reduce::ordered_sums`): `n` groups, several
            // chunks of the block, so both barriers of a chunk matter; a zero
            // state (NVE).
            use gpu_kernels::md_ensemble::{CFG_WORDS, ENS_WORDS};
            let state = upload(&mut dev, &vec![0u8; 8 * ENS_WORDS as usize]);
            let cfg = upload(&mut dev, &vec![0u8; 8 * CFG_WORDS as usize]);
            let sums: Vec<u8> = (0..2 * nn)
                .flat_map(|k| f64::from(k).to_le_bytes())
                .collect();
            let partials = upload(&mut dev, &sums);
            (
                shape::ensemble_end(),
                vec![
                    Arg::Ptr(state),
                    Arg::Ptr(cfg),
                    Arg::Ptr(partials),
                    Arg::U32(nn),
                ],
            )
        }
        other => panic!("no launch recipe for {other}"),
    };
    let (grid, shared) = (launch_shape.grid, launch_shape.shared_bytes);
    launch(&mut dev, m, name, grid, block, shared, &args, schedule).map(|_| ())
}

/// The pair style whose thermo kernel is `name`, if one is.
fn thermo_style(name: &str) -> Option<Style> {
    Style::ALL
        .iter()
        .copied()
        .find(|s| s.forces_entries()[1].name() == name)
}

/// A law's table for its example coefficients (shifted where the law takes
/// the shift): the row, then its tabulated data (the `table` style's).
struct ExampleRow;

impl Visitor for ExampleRow {
    type Output = Vec<f32>;
    fn visit<L: PairSetup>(self) -> Vec<f32> {
        let n = L::PARAMS.len();
        let params: Vec<f64> = L::EXAMPLE[..n].iter().map(|&x| x as f64).collect();
        let cutoff = L::EXAMPLE[n] as f64;
        let mut data = vec![0.0; L::EXAMPLE_DATA];
        L::example_data(cutoff, &mut data);
        let c = Coeffs {
            params: &params,
            cutoff,
            data: &data,
        };
        let words = row_words::<L>() as usize;
        let mut table = vec![0.0; words + L::data_words(&c)];
        let (row, rest) = table.split_at_mut(words);
        fill_row::<L>(&c, L::SHIFT, row, rest, words as u32).expect("a valid example");
        table
    }
}

/// The kernel whose body contains PTX line `line`.
fn kernel_at(m: &Module, line: u32) -> String {
    m.kernels
        .iter()
        .filter(|k| k.line <= line)
        .max_by_key(|k| k.line)
        .expect("a kernel")
        .name
        .clone()
}

/// Deletes each `bar.sync` of the shipped PTX in turn and runs its kernel
/// with two and four warps per block, deterministically and adversarially:
/// every deletion must be reported as a shared-memory race naming the
/// kernel, the PTX line and the address.
///
/// Except one per triangle kernel: its first barrier, after each thread
/// stores its j body and zeroes its reaction, is redundant, because in
/// super-step 0 every warp works on the chunk its own lanes stored, ordered
/// by the `bar.warp.sync` after each step. The detector agrees, and this
/// test pins that finding (if the kernel drops the barrier, this fails:
/// update it).
#[test]
fn deleting_any_bar_sync_from_the_shipped_ptx_is_caught() {
    let lines: Vec<&str> = PTX.lines().collect();
    let barriers: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim().starts_with("bar.sync"))
        .map(|(i, _)| i)
        .collect();
    assert!(
        barriers.len() >= 8,
        "the shipped PTX has {} bar.sync",
        barriers.len()
    );
    let original = module();
    // The block-pair kernel runs the triangle kernel's rotation on a
    // rectangle: the same first barrier.
    let redundant: Vec<(usize, String)> = [
        "nbody_triangle_accel",
        "nbody_triangle_accel_guarded",
        "nbody_block_pair",
        "nbody_block_pair_guarded",
    ]
    .iter()
    .map(|name| {
        let start = original.kernel(name).unwrap().line as usize;
        let first = barriers.iter().find(|&&i| i + 1 > start).unwrap();
        (first + 1, name.to_string())
    })
    .collect();
    let mut redundant = redundant;
    redundant.sort(); // in PTX line order, as found
    let mut uncaught = Vec::new();
    for &i in &barriers {
        // Blank the line, keeping every other line number.
        let mutated: String = lines
            .iter()
            .enumerate()
            .map(|(k, l)| if k == i { "" } else { *l })
            .collect::<Vec<_>>()
            .join("\n");
        let m = Module::from_ptx(&mutated).unwrap();
        let name = kernel_at(&original, i as u32 + 1);
        for schedule in [Schedule::Deterministic, Schedule::Adversarial { seed: 5 }] {
            for block in [64, 128] {
                if let Err(e) = run_force(&original, &name, block, schedule) {
                    panic!("{name}, block {block}: the unmutated kernel fails: {e}");
                }
                let Err(e) = run_force(&m, &name, block, schedule) else {
                    uncaught.push((i + 1, name.clone()));
                    continue;
                };
                assert_eq!(e.code, ErrorCode::LaunchFailed, "{e}");
                assert!(e.message.contains(&name), "{e}");
                assert!(e.message.contains("shared memory race"), "{e}");
                assert!(e.message.contains("PTX line"), "{e}");
                assert!(e.message.contains(" at 0x"), "names the address: {e}");
            }
        }
    }
    uncaught.dedup();
    assert_eq!(
        uncaught, redundant,
        "deleted bar.sync not caught (PTX line, kernel), against the pinned redundant ones"
    );
}

const HEADER: &str = ".version 7.0\n.target sm_70\n.address_size 64\n";

fn kernel_ptx(body: &str) -> String {
    format!(
        "{HEADER}.extern .shared .align 16 .b8 smem[];\n.visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u32 k_param_1\n)\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<32>;\n\t.reg .b64 %rd<16>;\n\t.reg .f32 %f<16>;\n\tld.param.b64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd1, %rd1;\n\tld.param.b32 %r1, [k_param_1];\n\tmov.u32 %r2, %tid.x;\n\tmov.u32 %r3, %ctaid.x;\n\tmov.u32 %r4, %ntid.x;\n\tmad.lo.s32 %r5, %r3, %r4, %r2;\n{body}\n\tret;\n}}\n"
    )
}

fn run_k(
    dev: &mut Device,
    ptx: &str,
    buf: u64,
    n: u32,
    grid: u32,
    block: u32,
    shared: u32,
    opts: &LaunchOptions,
) -> Result<softcuda::Stats, softcuda::LaunchError> {
    let m = Module::from_ptx(ptx).unwrap_or_else(|e| panic!("{e}"));
    let k = m.kernel("k").unwrap();
    let params = k
        .pack_params(&[&buf.to_le_bytes(), &n.to_le_bytes()])
        .unwrap();
    dev.launch(k, &LaunchConfig::linear(grid, block, shared), &params, opts)
}

/// `buf[i] = i` for `i = global thread index`, without a bounds check.
const STORE_INDEX: &str =
    "\tmul.wide.u32 %rd2, %r5, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r5;";

#[test]
fn out_of_bounds_global_access_is_an_illegal_address_and_sticky() {
    let mut dev = device();
    let buf = dev.memory.alloc(4 * 40).unwrap();
    let ptx = kernel_ptx(STORE_INDEX);
    let opts = LaunchOptions::default();
    // 40 threads fit.
    run_k(&mut dev, &ptx, buf, 40, 1, 40, 0, &opts).unwrap();
    // 64 threads write 24 words past the end.
    let e = run_k(&mut dev, &ptx, buf, 64, 1, 64, 0, &opts).unwrap_err();
    assert_eq!(e.code, ErrorCode::IllegalAddress);
    assert_eq!(e.code.cu_result(), 700);
    assert!(e.message.contains("illegal address"), "{e}");
    assert!(e.message.contains("kernel k"), "{e}");
    assert!(
        e.message.contains(&format!("{:#x}", buf + 160)),
        "names the address: {e}"
    );
    assert!(e.message.contains("thread 40"), "names the thread: {e}");
    assert!(
        e.message.contains("st.global.u32"),
        "names the instruction: {e}"
    );
    // Sticky: the next, valid, launch fails the same way.
    let again = run_k(&mut dev, &ptx, buf, 40, 1, 40, 0, &opts).unwrap_err();
    assert_eq!(again, e);
    assert_eq!(dev.sticky_error(), Some(&e));
    // The shipped kernels fail too.
    let m = module();
    let n = 64u32;
    let p = upload(&mut dev, &to_bytes(&bodies(32, 1)));
    let acc = upload(&mut dev, &vec![0u8; 16 * 32]);
    let r = launch(
        &mut dev,
        &m,
        "nbody_simt_accel",
        1,
        64,
        0,
        &[
            Arg::Ptr(p),
            Arg::Ptr(acc),
            Arg::U32(n),
            Arg::F32(1.0),
            Arg::F32(0.0),
        ],
        Schedule::Deterministic,
    );
    assert_eq!(r.unwrap_err(), e);
}

#[test]
fn a_shipped_kernel_reading_past_its_buffer_is_an_illegal_address() {
    // n = 64 bodies claimed, 32 allocated.
    let m = module();
    let mut dev = device();
    let p = upload(&mut dev, &to_bytes(&bodies(32, 1)));
    let acc = upload(&mut dev, &vec![0u8; 16 * 64]);
    let e = launch(
        &mut dev,
        &m,
        "nbody_tiled_accel",
        1,
        32,
        512,
        &[
            Arg::Ptr(p),
            Arg::Ptr(acc),
            Arg::U32(64),
            Arg::F32(1.0),
            Arg::F32(0.01),
        ],
        Schedule::Deterministic,
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::IllegalAddress, "{e}");
    assert!(e.message.contains("ld.global.v4.b32"), "{e}");
}

#[test]
fn misaligned_and_shared_out_of_bounds_accesses() {
    let mut dev = device();
    let buf = dev.memory.alloc(64).unwrap();
    let ptx = kernel_ptx("\tld.global.u32 %r6, [%rd1+2];");
    let e = run_k(&mut dev, &ptx, buf, 1, 1, 1, 0, &LaunchOptions::default()).unwrap_err();
    assert_eq!(e.code, ErrorCode::MisalignedAddress, "{e}");
    let mut dev = device();
    let ptx = kernel_ptx(
        "\tmov.u64 %rd4, smem;\n\tmul.wide.u32 %rd2, %r2, 4;\n\tadd.s64 %rd4, %rd4, %rd2;\n\tst.shared.u32 [%rd4], %r2;",
    );
    run_k(
        &mut dev,
        &ptx,
        buf,
        1,
        1,
        32,
        128,
        &LaunchOptions::default(),
    )
    .unwrap();
    let e = run_k(
        &mut dev,
        &ptx,
        buf,
        1,
        1,
        33,
        128,
        &LaunchOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::IllegalAddress, "{e}");
    assert!(e.message.contains("shared"), "{e}");
    // A shared-window offset used as a global address is illegal as well.
    let mut dev = device();
    let ptx = kernel_ptx("\tmov.u64 %rd4, smem;\n\tst.global.u32 [%rd4], %r2;");
    let e = run_k(&mut dev, &ptx, buf, 1, 1, 1, 16, &LaunchOptions::default()).unwrap_err();
    assert_eq!(e.code, ErrorCode::IllegalAddress, "{e}");
}

#[test]
fn an_unknown_instruction_is_named_with_its_line() {
    // A made-up opcode in the shipped PTX.
    let target = "\tfma.rn.f32 \t%r15, %r11, %r2, %r7;";
    assert!(PTX.contains(target));
    let line = PTX.lines().position(|l| l == target).unwrap() as u32 + 1;
    let bad = PTX.replacen(target, "\tfmx.rn.f32 \t%r15, %r11, %r2, %r7;", 1);
    match Module::from_ptx(&bad) {
        Err(ModuleError::Decode(e)) => {
            assert_eq!(e.line, line);
            assert_eq!(e.opcode, "fmx.rn.f32");
            assert_eq!(e.kernel, "nbody_drift");
            let text = e.to_string();
            assert!(
                text.contains(&format!("PTX line {line}")) && text.contains("fmx.rn.f32"),
                "{text}"
            );
            assert!(text.contains("unsupported instruction"), "{text}");
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
    // Real PTX the interpreter does not implement: also named, never skipped.
    for (inst, what) in [
        ("\tmad24.lo.u32 %r6, %r2, %r2, %r2;", "mad24.lo.u32"),
        ("\tadd.cc.u32 %r6, %r2, %r2;", "add.cc.u32"),
        ("\tbar.arrive 0, 64;", "bar.arrive"),
        ("\tcall foo, (%r2);", "call"),
    ] {
        let ptx = kernel_ptx(inst);
        match Module::from_ptx(&ptx) {
            Err(ModuleError::Decode(e)) => {
                assert_eq!(e.opcode, what);
                assert_eq!(
                    e.line,
                    ptx.lines().position(|l| l == inst).unwrap() as u32 + 1
                );
            }
            other => panic!("{inst}: expected a decode error, got {other:?}"),
        }
    }
}

#[test]
fn parameter_list_mismatches_are_invalid_values_naming_the_entry() {
    let m = module();
    let k = m.kernel("nbody_tiled_accel").unwrap();
    let p = 0u64.to_le_bytes();
    let u = 0u32.to_le_bytes();
    // One argument short.
    let e = k.pack_params(&[&p, &p, &u, &u]).unwrap_err();
    assert!(
        e.contains("nbody_tiled_accel") && e.contains("5 parameters") && e.contains("passes 4"),
        "{e}"
    );
    // A u32 passed as 8 bytes.
    let e = k.pack_params(&[&p, &p, &p, &u, &u]).unwrap_err();
    assert!(e.contains("parameter 2") && e.contains(".u32"), "{e}");
    // A raw buffer of the wrong size: CUDA_ERROR_INVALID_VALUE, not sticky.
    let mut dev = device();
    let e = dev
        .launch(
            k,
            &LaunchConfig::linear(1, 32, 512),
            &[0u8; 24],
            &LaunchOptions::default(),
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(e.code.cu_result(), 1);
    assert!(e.message.contains("nbody_tiled_accel"), "{e}");
    assert!(dev.sticky_error().is_none());
    // Launch shapes: 1025 threads, or more shared memory than the limit.
    let params = k.pack_params(&[&p, &p, &u, &u, &u]).unwrap();
    for cfg in [
        LaunchConfig::linear(1, 1025, 0),
        LaunchConfig::linear(0, 32, 0),
    ] {
        let e = dev
            .launch(k, &cfg, &params, &LaunchOptions::default())
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidValue, "{cfg:?}");
    }
    let opts = LaunchOptions {
        shared_limit: arch::SM70.shared_optin,
        ..LaunchOptions::default()
    };
    let e = dev
        .launch(k, &LaunchConfig::linear(1, 32, 100_000), &params, &opts)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
}

/// The tiled force kernel with its five arguments in the given order.
/// What `tiled_with` returns: the launch result, the bodies, the accelerations.
type Outcome = (
    Result<softcuda::Stats, softcuda::LaunchError>,
    Vec<[f32; 4]>,
    Vec<[f32; 4]>,
);

fn tiled_with(order: [usize; 5]) -> Outcome {
    let m = module();
    let n = 100usize;
    let p = bodies(n, 9);
    let mut dev = device();
    let pos = upload(&mut dev, &to_bytes(&p));
    let acc = dev.memory.alloc(16 * n as u64).unwrap(); // never written: poison
    let args = [
        Arg::Ptr(pos),
        Arg::Ptr(acc),
        Arg::U32(n as u32),
        Arg::F32(1.0),
        Arg::F32(0.01),
    ];
    let k = m.kernel("nbody_tiled_accel").unwrap();
    // Marshal by size, as a host would when it trusts its own argument list.
    let bytes: Vec<Vec<u8>> = order.iter().map(|&i| args[i].bytes()).collect();
    let mut params = vec![0u8; k.param_bytes as usize];
    let mut off = 0;
    for b in &bytes {
        let end = (off + b.len()).min(params.len());
        params[off..end].copy_from_slice(&b[..end - off]);
        off = end;
    }
    let r = dev.launch(
        k,
        &LaunchConfig::linear(2, 32, 512),
        &params,
        &LaunchOptions::default(),
    );
    let a = if r.is_ok() {
        from_bytes(&download(&mut dev, acc, 16 * n))
    } else {
        Vec::new()
    };
    (r, p, a)
}

#[test]
fn swapped_arguments_are_caught() {
    // Correct order: passes the reference check.
    let (r, p, a) = tiled_with([0, 1, 2, 3, 4]);
    r.unwrap();
    let reference = reference_accel(&p, 1.0, 0.01);
    let close = |a: &[[f32; 4]], g: f64| {
        a.iter().zip(&reference).all(|(x, (r, s))| {
            (0..3).all(|k| (x[k] as f64 - g * r[k]).abs() <= accel_tolerance(p.len()) * g * s[k])
        })
    };
    assert!(close(&a, 1.0));
    // n and G swapped: n becomes 0x3f800000 bodies, reads leave the buffer.
    let (r, _, _) = tiled_with([0, 1, 3, 2, 4]);
    assert_eq!(r.unwrap_err().code, ErrorCode::IllegalAddress);
    // G and eps^2 swapped: runs, but the forces are wrong.
    let (r, _, a) = tiled_with([0, 1, 2, 4, 3]);
    r.unwrap();
    assert!(!close(&a, 1.0));
    // pos and acc swapped: the kernel reads the never-written acc buffer
    // (poison, NaN as f32) and overwrites the positions.
    let (r, _, a) = tiled_with([1, 0, 2, 3, 4]);
    r.unwrap();
    assert!(!close(&a, 1.0));
}

#[test]
fn warp_synchronous_code_without_bar_warp_sync_races() {
    // Each lane writes smem[lane] and reads its neighbour's word: correct
    // only with bar.warp.sync between (Volta's independent scheduling).
    let body = |sync: &str| {
        format!(
            "\tmov.u64 %rd4, smem;\n\tmul.wide.u32 %rd2, %r2, 4;\n\tadd.s64 %rd5, %rd4, %rd2;\n\tst.shared.u32 [%rd5], %r2;\n{sync}\n\txor.b32 %r6, %r2, 1;\n\tmul.wide.u32 %rd6, %r6, 4;\n\tadd.s64 %rd7, %rd4, %rd6;\n\tld.shared.u32 %r7, [%rd7];\n\tmul.wide.u32 %rd8, %r2, 4;\n\tadd.s64 %rd9, %rd1, %rd8;\n\tst.global.u32 [%rd9], %r7;"
        )
    };
    for schedule in schedules() {
        let opts = LaunchOptions {
            schedule,
            ..LaunchOptions::default()
        };
        let mut dev = device();
        let buf = dev.memory.alloc(4 * 32).unwrap();
        let e = run_k(&mut dev, &kernel_ptx(&body("")), buf, 32, 1, 32, 128, &opts).unwrap_err();
        assert_eq!(e.code, ErrorCode::LaunchFailed, "{schedule:?}");
        assert!(e.message.contains("shared memory race"), "{e}");
        let mut dev = device();
        let buf = dev.memory.alloc(4 * 32).unwrap();
        run_k(
            &mut dev,
            &kernel_ptx(&body("\tbar.warp.sync -1;")),
            buf,
            32,
            1,
            32,
            128,
            &opts,
        )
        .unwrap_or_else(|e| panic!("{schedule:?}: {e}"));
        let out = download(&mut dev, buf, 128);
        for l in 0..32u32 {
            assert_eq!(
                u32::from_le_bytes(out[4 * l as usize..][..4].try_into().unwrap()),
                l ^ 1
            );
        }
    }
}

#[test]
fn the_adversarial_schedule_interleaves_threads() {
    // Lane 0 stores 1 to buf[0]; lane 31 copies buf[0] to buf[1]. No
    // synchronisation (races unchecked): lockstep always copies the value
    // from before the store; independent threads sometimes after it.
    let body = "\tsetp.ne.u32 %p1, %r2, 0;\n\t@%p1 bra L1;\n\tmov.u32 %r6, 1;\n\tst.global.u32 [%rd1], %r6;\nL1:\n\tsetp.ne.u32 %p2, %r2, 31;\n\t@%p2 bra L2;\n\tld.global.u32 %r7, [%rd1];\n\tst.global.u32 [%rd1+4], %r7;\nL2:";
    let ptx = kernel_ptx(body);
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let mut dev = device();
        let buf = upload(&mut dev, &[0u8; 8]);
        let opts = LaunchOptions {
            schedule: Schedule::Adversarial { seed },
            races: RaceCheck::Off,
            ..LaunchOptions::default()
        };
        run_k(&mut dev, &ptx, buf, 32, 1, 32, 0, &opts).unwrap();
        seen.insert(download(&mut dev, buf, 8)[4]);
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![0, 1]);
    // And the race detector reports it.
    let mut dev = device();
    let buf = upload(&mut dev, &[0u8; 8]);
    let e = run_k(&mut dev, &ptx, buf, 32, 1, 32, 0, &LaunchOptions::default()).unwrap_err();
    assert!(e.message.contains("global memory race"), "{e}");
}

#[test]
fn barrier_misuse_and_infinite_loops() {
    // Threads past n exit, the others reach bar.sync.
    let early_exit = "\tsetp.ge.u32 %p1, %r5, %r1;\n\t@%p1 bra END;\n\tbar.sync 0;\nEND:";
    // bar.sync inside a branch only some lanes take.
    let divergent = "\tsetp.ge.u32 %p1, %r2, 16;\n\t@%p1 bra SKIP;\n\tbar.sync 0;\nSKIP:";
    for body in [early_exit, divergent] {
        for schedule in schedules() {
            let mut dev = device();
            let buf = dev.memory.alloc(64).unwrap();
            let opts = LaunchOptions {
                schedule,
                ..LaunchOptions::default()
            };
            let e = run_k(&mut dev, &kernel_ptx(body), buf, 20, 1, 64, 0, &opts).unwrap_err();
            assert_eq!(e.code, ErrorCode::LaunchFailed, "{e}");
            assert!(e.message.contains("bar.sync"), "{e}");
        }
    }
    let spin = "LOOP:\n\tadd.s32 %r6, %r6, 1;\n\tbra.uni LOOP;";
    let mut dev = device();
    let buf = dev.memory.alloc(64).unwrap();
    let opts = LaunchOptions {
        max_warp_instructions: 100_000,
        ..LaunchOptions::default()
    };
    let e = run_k(&mut dev, &kernel_ptx(spin), buf, 1, 1, 32, 0, &opts).unwrap_err();
    assert_eq!(e.code, ErrorCode::LaunchTimeout, "{e}");
}

#[test]
fn two_diverging_bodies_in_one_step_do_not_race_on_the_flag() {
    // nbody_check_finite used to let every non-finite body's thread write the
    // flag with plain stores: with two of them, two plain writes to one word
    // in one launch, which this checker reported. It now reads and writes the
    // flag only with atomics, so the launch is clean under every schedule and
    // the flag names the step and the higher-numbered bad body.
    let m = module();
    let mut p = bodies(64, 1);
    p[3][0] = f32::NAN;
    p[40][0] = f32::NAN;
    for schedule in [
        Schedule::Deterministic,
        Schedule::Adversarial { seed: 1 },
        Schedule::Adversarial { seed: 2 },
    ] {
        let mut dev = device();
        let pos = upload(&mut dev, &to_bytes(&p));
        let vel = upload(&mut dev, &to_bytes(&velocities(64, 1)));
        let flag = upload(&mut dev, &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        launch(
            &mut dev,
            &m,
            "nbody_check_finite",
            2,
            32,
            0,
            &[
                Arg::Ptr(pos),
                Arg::Ptr(vel),
                Arg::U32(64),
                Arg::U32(1),
                Arg::Ptr(flag),
            ],
            schedule,
        )
        .unwrap_or_else(|e| panic!("{schedule:?}: {e}"));
        let f = download(&mut dev, flag, 8);
        assert_eq!(&f[..], &[1, 0, 0, 0, 40, 0, 0, 0], "{schedule:?}");
    }
}
