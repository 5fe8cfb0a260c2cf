//! The module-load path as the driver's JIT takes it, on the default device
//! (sm_90): PTX ISA versions against `.target` (the H200's JIT refused
//! `.version 7.0` with `.target sm_90`: `CUDA_ERROR_INVALID_PTX`, 218),
//! versions newer than the driver (222), instructions the target or version
//! lacks, conflicting directives, approximate instructions whose hardware
//! bits are not captured; `.reqntid`/`.maxntid` at launch; and each entry's
//! registers as the H200's JIT gave them (the triangle kernel: 65 registers,
//! 896 threads per block), without any `SOFTCUDA_REGISTERS`.
//!
//! Its own test binary: the environment is read once, at `cuInit`, and
//! these tests need the defaults.

use std::ffi::{CString, c_void};
use std::ptr::null_mut;

use softcuda_driver::api::*;
use softcuda_driver::errors::*;

/// Calls a driver function that takes pointers.
macro_rules! cu {
    ($e:expr) => {{
        // SAFETY: every pointer a test passes points to a live local or
        // buffer of the type and size the CUDA contract requires, for the
        // duration of the call (and the strings are NUL-terminated).
        #[allow(unused_unsafe, reason = "the macro also wraps safe calls")]
        unsafe {
            $e
        }
    }};
}

const PTX: &str = concat!(include_str!("../../nbody-host/ptx/gpu_kernels.ptx"), "\0");
const MAX_THREADS_PER_BLOCK: u32 = 0;
const NUM_REGS: u32 = 4;
const UNSUPPORTED_PTX_VERSION: u32 = 222;

fn context() {
    assert_eq!(cuInit(0), SUCCESS);
    let mut ctx = null_mut();
    assert_eq!(cu!(cuCtxCreate_v2(&mut ctx, 0, 0)), SUCCESS);
}

fn load(text: &str) -> Result<Handle, u32> {
    let text = format!("{}\0", text.trim_end_matches('\0'));
    let mut m = null_mut();
    match cu!(cuModuleLoadData(&mut m, text.as_ptr() as *const c_void)) {
        SUCCESS => Ok(m),
        e => Err(e),
    }
}

fn function(m: Handle, name: &str) -> Handle {
    let mut f = null_mut();
    let c = CString::new(name).unwrap();
    assert_eq!(cu!(cuModuleGetFunction(&mut f, m, c.as_ptr())), SUCCESS);
    f
}

fn attribute(f: Handle, attrib: u32) -> i32 {
    let mut v = -1;
    assert_eq!(cu!(cuFuncGetAttribute(&mut v, attrib, f)), SUCCESS);
    v
}

/// A module of one entry `k()` with `directives` after its name and `body`.
fn module(version: &str, target: &str, directives: &str, body: &str) -> String {
    format!(
        ".version {version}\n.target {target}\n.address_size 64\n.visible .entry k() {directives}\n{{\n.reg .b32 %r<4>;\n.reg .f32 %f<4>;\n{body}\nret;\n}}\n"
    )
}

fn launch(f: Handle, block: [u32; 3]) -> u32 {
    cu!(cuLaunchKernel(
        f,
        1,
        1,
        1,
        block[0],
        block[1],
        block[2],
        0,
        null_mut(),
        null_mut(),
        null_mut(),
    ))
}

#[test]
fn ptx_versions_and_targets_are_checked_as_the_jit_does() {
    context();
    let plain = |v: &str, t: &str| load(&module(v, t, "", "mov.u32 %r1, %tid.x;"));
    // sm_90 needs PTX ISA 7.8: what the H200's JIT said of 7.0.
    assert_eq!(plain("7.0", "sm_90").err(), Some(INVALID_PTX));
    assert_eq!(plain("7.7", "sm_90").err(), Some(INVALID_PTX));
    assert!(plain("7.8", "sm_90").is_ok());
    assert!(plain("8.0", "sm_90a").is_ok());
    assert_eq!(plain("7.8", "sm_90a").err(), Some(INVALID_PTX));
    // Older targets run on sm_90, each from its own minimum version.
    assert!(plain("6.0", "sm_70").is_ok());
    assert_eq!(plain("5.0", "sm_70").err(), Some(INVALID_PTX));
    assert!(plain("7.0", "sm_80").is_ok());
    assert_eq!(plain("6.5", "sm_80").err(), Some(INVALID_PTX));
    assert!(plain("6.3", "sm_75").is_ok());
    // Newer than this driver's JIT (CUDA 12.4, PTX ISA 8.4).
    assert_eq!(plain("8.5", "sm_90").err(), Some(UNSUPPORTED_PTX_VERSION));
    // Not a target at all, or none.
    assert_eq!(plain("7.8", "sm_91").err(), Some(INVALID_PTX));
    // No .version at all: the H200's driver does not take it for PTX
    // (CUDA_ERROR_INVALID_IMAGE, 200; softcuda-driver/tests/data/h200_jit_probe.json).
    assert_eq!(
        load(".target sm_90\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n").err(),
        Some(INVALID_IMAGE)
    );
    // The committed PTX (.version 7.0, .target sm_70) loads.
    assert!(load(PTX).is_ok());
}

#[test]
fn instructions_the_target_or_version_lacks_are_refused() {
    context();
    // nanosleep: sm_70 and PTX 6.3.
    let nap = "nanosleep.u32 100;";
    assert_eq!(
        load(&module("6.0", "sm_70", "", nap)).err(),
        Some(INVALID_PTX)
    );
    assert!(load(&module("6.3", "sm_70", "", nap)).is_ok());
    // tanh.approx: sm_75, whatever the device.
    let tanh = "mov.f32 %f1, 0f3F000000;\ntanh.approx.f32 %f2, %f1;";
    assert_eq!(
        load(&module("7.0", "sm_70", "", tanh)).err(),
        Some(INVALID_PTX)
    );
    // .maxntid with .reqntid: ptxas refuses the pair.
    let both = module("7.8", "sm_90", ".maxntid 64, 1, 1 .reqntid 64, 1, 1", "");
    assert_eq!(load(&both).err(), Some(INVALID_PTX));
}

/// Approximate instructions whose sm_90 bits are not captured are refused
/// at load (SOFTCUDA_MUFU=ieee would compute them correctly rounded); the
/// captured two load.
#[test]
fn uncaptured_approximate_instructions_are_refused() {
    context();
    for inst in [
        "sqrt.approx.f32 %f2, %f1;",
        "ex2.approx.ftz.f32 %f2, %f1;",
        "lg2.approx.f32 %f2, %f1;",
        "sin.approx.f32 %f2, %f1;",
        "cos.approx.ftz.f32 %f2, %f1;",
        "tanh.approx.f32 %f2, %f1;",
        "div.approx.f32 %f2, %f1, %f1;",
        "div.full.f32 %f2, %f1, %f1;",
        "rsqrt.approx.f32 %f2, %f1;",
        "rcp.approx.f32 %f2, %f1;",
    ] {
        let body = format!("mov.f32 %f1, 0f3F000000;\n{inst}");
        assert_eq!(
            load(&module("7.8", "sm_90", "", &body)).err(),
            Some(INVALID_PTX),
            "{inst}"
        );
    }
    for inst in [
        "rsqrt.approx.ftz.f32 %f2, %f1;",
        "rcp.approx.ftz.f32 %f2, %f1;",
    ] {
        let body = format!("mov.f32 %f1, 0f3F000000;\n{inst}");
        assert!(load(&module("7.8", "sm_90", "", &body)).is_ok(), "{inst}");
    }
}

/// As the H200 answered (softcuda-driver/tests/data/h200_jit_probe.json):
/// `.reqntid` is the exact block shape (anything else:
/// `CUDA_ERROR_INVALID_VALUE`) but leaves `MAX_THREADS_PER_BLOCK` at 1024;
/// `.maxntid` bounds the block's threads (their product: an 8 x 8 block
/// fits `.maxntid 64`), lowers `MAX_THREADS_PER_BLOCK`, and a larger block
/// is `CUDA_ERROR_INVALID_VALUE` (not the register limit's
/// `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES`).
#[test]
fn reqntid_and_maxntid_bound_the_launch() {
    context();
    let req = function(
        load(&module("7.8", "sm_90", ".reqntid 64, 1, 1", "")).unwrap(),
        "k",
    );
    assert_eq!(attribute(req, MAX_THREADS_PER_BLOCK), 1024);
    assert_eq!(launch(req, [64, 1, 1]), SUCCESS);
    assert_eq!(launch(req, [32, 1, 1]), INVALID_VALUE);
    assert_eq!(launch(req, [32, 2, 1]), INVALID_VALUE);
    assert_eq!(launch(req, [128, 1, 1]), INVALID_VALUE);
    let max = function(
        load(&module("7.8", "sm_90", ".maxntid 64, 1, 1", "")).unwrap(),
        "k",
    );
    assert_eq!(attribute(max, MAX_THREADS_PER_BLOCK), 64);
    assert_eq!(launch(max, [64, 1, 1]), SUCCESS);
    assert_eq!(launch(max, [32, 1, 1]), SUCCESS);
    assert_eq!(launch(max, [8, 8, 1]), SUCCESS);
    assert_eq!(launch(max, [128, 1, 1]), INVALID_VALUE);
    assert_eq!(launch(max, [16, 8, 1]), INVALID_VALUE);
    assert_eq!(cuCtxSynchronize(), SUCCESS);
}

/// Without `SOFTCUDA_REGISTERS`, each shipped entry reports the registers
/// the H200's JIT gave it (docs/gpu/2026-11-26-h200-run1.md), so the
/// triangle and block-pair kernels (65 and 66 registers, rounded up to 72
/// per thread, 2,304 per warp, 28 warps in 64 Ki) allow 896 threads per
/// block, as on the hardware, and a launch of 1024 is refused.
#[test]
fn the_jit_gives_each_entry_the_h200s_registers() {
    context();
    let m = load(PTX).unwrap();
    for (name, regs, max) in [
        ("nbody_triangle_accel", 65, 896),
        ("nbody_triangle_accel_guarded", 66, 896),
        ("nbody_block_pair", 65, 896),
        ("nbody_tiled_euler", 40, 1024),
        ("nbody_simt_accel", 32, 1024),
        ("nbody_md_copy_back", 24, 1024),
        ("nbody_check_finite", 18, 1024),
    ] {
        let f = function(m, name);
        assert_eq!(attribute(f, NUM_REGS), regs, "{name}");
        assert_eq!(attribute(f, MAX_THREADS_PER_BLOCK), max, "{name}");
    }
    let tri = function(m, "nbody_triangle_accel");
    let mut slots = [[0u8; 8]; 8];
    let mut ptrs: Vec<*mut c_void> = slots
        .iter_mut()
        .map(|s| s.as_mut_ptr() as *mut c_void)
        .collect();
    let r = cu!(cuLaunchKernel(
        tri,
        1,
        1,
        1,
        1024,
        1,
        1,
        0,
        null_mut(),
        ptrs.as_mut_ptr(),
        null_mut(),
    ));
    assert_eq!(r, LAUNCH_OUT_OF_RESOURCES);
    // Occupancy counts the registers too: 3 blocks of 256 fit an SM's.
    let mut blocks = 0;
    assert_eq!(
        cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut blocks,
            tri,
            256,
            0
        )),
        SUCCESS
    );
    assert_eq!(blocks, 3);
}
