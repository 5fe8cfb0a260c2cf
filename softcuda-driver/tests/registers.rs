//! `SOFTCUDA_REGISTERS`: a register-limited function, as the JIT would make
//! one. Its `CU_FUNC_ATTRIBUTE_NUM_REGS` and `MAX_THREADS_PER_BLOCK` follow
//! the variable, and a launch with more threads per block than its registers
//! allow fails with `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES`, as on hardware.
//! (Its own test binary: the variable is read once, at `cuInit`.)

use std::ffi::{CString, c_void};
use std::ptr::null_mut;

use softcuda_driver::api::*;
use softcuda_driver::errors::*;

/// Calls a driver function that takes pointers.
macro_rules! cu {
    ($e:expr) => {{
        // SAFETY: every pointer this test passes points to a live local or
        // buffer of the type and size the CUDA contract requires, for the
        // duration of the call (and the strings are NUL-terminated).
        unsafe {
            $e
        }
    }};
}

const PTX: &str = concat!(include_str!("../../nbody-host/ptx/gpu_kernels.ptx"), "\0");
const MAX_THREADS_PER_BLOCK: u32 = 0;
const NUM_REGS: u32 = 4;

fn attribute(f: Handle, attrib: u32) -> i32 {
    let mut v = -1;
    assert_eq!(cu!(cuFuncGetAttribute(&mut v, attrib, f)), SUCCESS);
    v
}

#[test]
fn register_counts_limit_the_block() {
    // SAFETY: the only test of this binary, run before anything reads the
    // environment from another thread.
    unsafe { std::env::set_var("SOFTCUDA_REGISTERS", "40,nbody_tiled_euler=72") };
    assert_eq!(cuInit(0), SUCCESS);
    let mut ctx = null_mut();
    assert_eq!(cu!(cuCtxCreate_v2(&mut ctx, 0, 0)), SUCCESS);
    let mut m = null_mut();
    assert_eq!(
        cu!(cuModuleLoadData(&mut m, PTX.as_ptr() as *const c_void)),
        SUCCESS
    );
    let function = |name: &str| {
        let mut f = null_mut();
        let c = CString::new(name).unwrap();
        assert_eq!(cu!(cuModuleGetFunction(&mut f, m, c.as_ptr())), SUCCESS);
        f
    };
    let (euler, accel) = (function("nbody_tiled_euler"), function("nbody_tiled_accel"));
    assert_eq!(attribute(euler, NUM_REGS), 72);
    assert_eq!(attribute(euler, MAX_THREADS_PER_BLOCK), 896);
    assert_eq!(attribute(accel, NUM_REGS), 40);
    assert_eq!(attribute(accel, MAX_THREADS_PER_BLOCK), 1024);

    // The launch is refused at the call, before its arguments are read.
    let mut slots = [[0u8; 8]; 7];
    let mut ptrs: Vec<*mut c_void> = slots
        .iter_mut()
        .map(|s| s.as_mut_ptr() as *mut c_void)
        .collect();
    let launch = |block: u32, ptrs: &mut Vec<*mut c_void>| {
        cu!(cuLaunchKernel(
            euler,
            1,
            1,
            1,
            block,
            1,
            1,
            16 * block,
            null_mut(),
            ptrs.as_mut_ptr(),
            null_mut(),
        ))
    };
    assert_eq!(launch(1024, &mut ptrs), LAUNCH_OUT_OF_RESOURCES);
    // Not sticky: the context is still usable.
    assert_eq!(cuCtxSynchronize(), SUCCESS);
}
