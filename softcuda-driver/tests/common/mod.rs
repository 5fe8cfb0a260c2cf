//! The harness the driver's graph and capture tests share: the unsafe-call
//! macro, the shipped PTX, and small wrappers of the driver's C functions
//! that assert success.

use std::ffi::c_void;
use std::ptr::null_mut;

use softcuda_driver::api::*;
use softcuda_driver::errors::*;
use softcuda_driver::graph::*;

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

pub(crate) use cu;

pub const PTX: &str = concat!(
    include_str!("../../../nbody-host/ptx/gpu_kernels.ptx"),
    "\0"
);

/// `CU_STREAM_NON_BLOCKING`
pub const NON_BLOCKING: u32 = 1;

pub fn ok(r: u32) {
    assert_eq!(r, SUCCESS, "{}", name(r));
}

/// Initialises the driver and makes a fresh context current on this thread.
pub fn context() -> Handle {
    ok(cuInit(0));
    let mut ctx = null_mut();
    ok(cu!(cuCtxCreate_v2(&mut ctx, 0, 0)));
    ctx
}

pub fn stream(flags: u32) -> Handle {
    let mut s = null_mut();
    ok(cu!(cuStreamCreateWithPriority(&mut s, flags, 0)));
    s
}

pub fn alloc(bytes: usize) -> u64 {
    let mut p = 0;
    ok(cu!(cuMemAlloc_v2(&mut p, bytes)));
    p
}

pub fn words(p: u64, n: usize) -> Vec<u32> {
    let mut out = vec![0u32; n];
    ok(cu!(cuMemcpyDtoH_v2(
        out.as_mut_ptr() as *mut c_void,
        p,
        4 * n
    )));
    out
}

/// Ends the capture on `s`: its graph, or the error (an invalidated
/// capture must not hand out a graph).
pub fn end(s: Handle) -> Result<Handle, u32> {
    let mut g = std::ptr::without_provenance_mut(1);
    match cu!(cuStreamEndCapture(s, &mut g)) {
        SUCCESS => Ok(g),
        e => {
            if e == STREAM_CAPTURE_INVALIDATED {
                assert!(g.is_null(), "no graph from an invalidated capture");
            }
            Err(e)
        }
    }
}

pub fn status(s: Handle) -> i32 {
    let mut st = -1;
    ok(cu!(cuStreamIsCapturing(s, &mut st)));
    st
}

pub fn module() -> Handle {
    let mut m = null_mut();
    ok(cu!(cuModuleLoadData(&mut m, PTX.as_ptr() as *const c_void)));
    m
}

pub fn kick(m: Handle) -> Handle {
    let mut f = null_mut();
    ok(cu!(cuModuleGetFunction(&mut f, m, c"nbody_kick".as_ptr())));
    f
}

/// `nbody_kick` (`vel += acc dt`) of `n` vectors on `s`.
pub fn launch_kick(f: Handle, vel: u64, acc: u64, n: u32, dt: f32, s: Handle) -> u32 {
    let mut slots = [[0u8; 8]; 4];
    slots[0] = vel.to_le_bytes();
    slots[1] = acc.to_le_bytes();
    slots[2][..4].copy_from_slice(&n.to_le_bytes());
    slots[3][..4].copy_from_slice(&dt.to_le_bytes());
    let mut ptrs: Vec<*mut c_void> = slots
        .iter_mut()
        .map(|x| x.as_mut_ptr() as *mut c_void)
        .collect();
    cu!(cuLaunchKernel(
        f,
        1,
        1,
        1,
        64,
        1,
        1,
        0,
        s,
        ptrs.as_mut_ptr(),
        null_mut()
    ))
}
