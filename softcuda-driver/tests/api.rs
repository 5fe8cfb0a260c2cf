//! The driver through its C functions, as cust calls them: the engine's
//! call sequence under the hostile ordering, the 48 KiB opt-in, parameter
//! checks, sticky faults, a `bar.sync` deleted from the shipped PTX,
//! swapped arguments, events, queries, unsupported functions, and threads.
//!
//! Each test makes its own context current on its own thread (libtest runs
//! tests on separate threads), so sticky errors stay in their test.

use std::ffi::{CStr, c_void};
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

fn ok(r: u32) {
    assert_eq!(r, SUCCESS, "{}", name(r));
}

/// Initialises the driver and makes a fresh context current on this thread.
fn context() -> Handle {
    ok(cuInit(0));
    let mut ctx = null_mut();
    ok(cu!(cuCtxCreate_v2(&mut ctx, 0, 0)));
    ctx
}

fn load(text: &str) -> Result<Handle, u32> {
    let mut m = null_mut();
    let owned;
    let t = if text.ends_with('\0') {
        text
    } else {
        owned = format!("{text}\0");
        &owned
    };
    match cu!(cuModuleLoadData(&mut m, t.as_ptr() as *const c_void)) {
        SUCCESS => Ok(m),
        e => Err(e),
    }
}

fn function(m: Handle, name: &str) -> Handle {
    let mut f = null_mut();
    let c = std::ffi::CString::new(name).unwrap();
    ok(cu!(cuModuleGetFunction(&mut f, m, c.as_ptr())));
    f
}

fn alloc(bytes: usize) -> u64 {
    let mut p = 0;
    ok(cu!(cuMemAlloc_v2(&mut p, bytes)));
    p
}

fn upload(data: &[u8]) -> u64 {
    let p = alloc(data.len());
    ok(cu!(cuMemcpyHtoD_v2(
        p,
        data.as_ptr() as *const c_void,
        data.len(),
    )));
    p
}

fn download(p: u64, len: usize) -> Result<Vec<u8>, u32> {
    let mut out = vec![0u8; len];
    match cu!(cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, p, len)) {
        SUCCESS => Ok(out),
        e => Err(e),
    }
}

fn bodies(n: usize) -> Vec<u8> {
    let mut s = 12345u32;
    let mut r = || {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        (s >> 8) as f32 / (1 << 24) as f32 * 2.0 - 1.0
    };
    (0..n)
        .flat_map(|_| [r(), r(), r(), 1.0 / n as f32])
        .flat_map(f32::to_le_bytes)
        .collect()
}

/// Launches with each argument's bytes in its own slot, like the engine.
fn launch(f: Handle, grid: u32, block: u32, shared: u32, stream: Handle, args: &[Vec<u8>]) -> u32 {
    let mut slots: Vec<[u8; 8]> = args
        .iter()
        .map(|a| {
            let mut s = [0u8; 8];
            s[..a.len()].copy_from_slice(a);
            s
        })
        .collect();
    let mut ptrs: Vec<*mut c_void> = slots
        .iter_mut()
        .map(|s| s.as_mut_ptr() as *mut c_void)
        .collect();
    cu!(cuLaunchKernel(
        f,
        grid,
        1,
        1,
        block,
        1,
        1,
        shared,
        stream,
        ptrs.as_mut_ptr(),
        null_mut(),
    ))
}

fn ptr(p: u64) -> Vec<u8> {
    p.to_le_bytes().to_vec()
}
fn u(v: u32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}
fn fl(v: f32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

/// The engine's opening sequence: uploads with the synchronous legacy
/// copies and a memset, a stream, the energy kernel on it, a stream sync,
/// then the partial sums read back with the synchronous copy. Returns the
/// potential partial sum, or the error of the read.
fn engine_sequence(stream_flags: u32) -> Result<f64, u32> {
    context();
    let m = load(PTX).unwrap();
    let n = 256usize;
    let pos = upload(&bodies(n));
    let vel = upload(&vec![0u8; 16 * n]);
    let partials = alloc(16);
    ok(cuMemsetD8_v2(partials, 0, 16));
    let mut stream = null_mut();
    ok(cu!(cuStreamCreateWithPriority(
        &mut stream,
        stream_flags,
        0
    )));
    let f = function(m, "nbody_energy");
    ok(launch(
        f,
        1,
        256,
        4096,
        stream,
        &[ptr(pos), ptr(vel), u(n as u32), fl(0.01), ptr(partials)],
    ));
    ok(cuStreamSynchronize(stream));
    let out = download(partials, 16)?;
    Ok(f64::from_le_bytes(out[8..].try_into().unwrap()))
}

#[test]
fn legacy_uploads_are_not_ordered_before_a_non_blocking_stream() {
    // A blocking stream (what cust 0.3.2 actually creates, whatever flags it
    // is given) waits for the legacy stream: the energy is right.
    let blocking = engine_sequence(0).unwrap();
    assert!(blocking > 0.0 && blocking.is_finite(), "{blocking}");
    // A non-blocking stream does not: the kernel runs first and reads
    // positions that still hold the poison pattern, then the read-back
    // forces the legacy copies, whose writes race with the kernel's reads
    // (CUDA_ERROR_LAUNCH_FAILED, naming both operations).
    assert_eq!(engine_sequence(1), Err(719));
}

#[test]
fn dynamic_shared_memory_above_48_kib_needs_the_attribute() {
    context();
    let m = load(PTX).unwrap();
    let f = function(m, "nbody_tiled_accel");
    let n = 64u32;
    let pos = upload(&bodies(n as usize));
    let acc = alloc(16 * n as usize);
    let args = [ptr(pos), ptr(acc), u(n), fl(1.0), fl(0.01)];
    let mut v = 0;
    ok(cu!(cuFuncGetAttribute(&mut v, 8, f)));
    assert_eq!(v, 48 * 1024);
    assert_eq!(
        launch(f, 1, 32, 64 * 1024, null_mut(), &args),
        INVALID_VALUE
    );
    ok(cuFuncSetAttribute(f, 8, 64 * 1024));
    ok(launch(f, 1, 32, 64 * 1024, null_mut(), &args));
    ok(cuCtxSynchronize());
    // Past the device's opt-in maximum (227 KiB on sm_90): refused.
    assert_eq!(cuFuncSetAttribute(f, 8, 300 * 1024), INVALID_VALUE);
    let mut optin = 0;
    ok(cu!(cuDeviceGetAttribute(&mut optin, 97, 0)));
    assert_eq!(optin, 232_448);
}

#[test]
fn parameter_buffers_must_match_the_ptx_param_list() {
    context();
    let m = load(PTX).unwrap();
    let f = function(m, "nbody_tiled_accel");
    let n = 64u32;
    let pos = upload(&bodies(n as usize));
    let acc = alloc(16 * n as usize);
    let mut buf: Vec<u8> = [ptr(pos), ptr(acc), u(n), fl(1.0), fl(0.01)].concat();
    let try_size = |buf: &mut Vec<u8>, size: usize| {
        let mut size = size;
        let mut extra: [*mut c_void; 5] = [
            std::ptr::without_provenance_mut(1), // CU_LAUNCH_PARAM_BUFFER_POINTER
            buf.as_mut_ptr() as *mut c_void,
            std::ptr::without_provenance_mut(2), // CU_LAUNCH_PARAM_BUFFER_SIZE
            &mut size as *mut usize as *mut c_void,
            null_mut(),
        ];
        cu!(cuLaunchKernel(
            f,
            1,
            1,
            1,
            32,
            1,
            1,
            512,
            null_mut(),
            null_mut(),
            extra.as_mut_ptr(),
        ))
    };
    assert_eq!(try_size(&mut buf, 24), INVALID_VALUE);
    ok(try_size(&mut buf, 28));
    // No parameters at all.
    assert_eq!(
        cu!(cuLaunchKernel(
            f,
            1,
            1,
            1,
            32,
            1,
            1,
            512,
            null_mut(),
            null_mut(),
            null_mut()
        )),
        INVALID_VALUE
    );
    // Bad shapes.
    let args = [ptr(pos), ptr(acc), u(n), fl(1.0), fl(0.01)];
    assert_eq!(launch(f, 1, 2048, 512, null_mut(), &args), INVALID_VALUE);
    assert_eq!(launch(f, 0, 32, 512, null_mut(), &args), INVALID_VALUE);
    ok(cuCtxSynchronize());
}

#[test]
fn an_illegal_address_surfaces_at_the_sync_and_is_sticky() {
    context();
    let m = load(PTX).unwrap();
    let f = function(m, "nbody_simt_accel");
    let pos = upload(&bodies(32));
    let acc = alloc(16 * 32);
    // n = 64 bodies claimed, 32 allocated: the launch itself is accepted.
    ok(launch(
        f,
        1,
        64,
        0,
        null_mut(),
        &[ptr(pos), ptr(acc), u(64), fl(1.0), fl(0.0)],
    ));
    assert_eq!(cuCtxSynchronize(), ILLEGAL_ADDRESS);
    // Sticky: every later call in the context fails the same way.
    let mut p = 0;
    assert_eq!(cu!(cuMemAlloc_v2(&mut p, 16)), ILLEGAL_ADDRESS);
    assert_eq!(download(pos, 16), Err(ILLEGAL_ADDRESS));
    assert_eq!(cuCtxSynchronize(), ILLEGAL_ADDRESS);
    let mut s: *const std::ffi::c_char = std::ptr::null();
    ok(cu!(cuGetErrorName(ILLEGAL_ADDRESS, &mut s)));
    // SAFETY: cuGetErrorName returns a static NUL-terminated string.
    let name = unsafe { CStr::from_ptr(s) };
    assert_eq!(name.to_str().unwrap(), "CUDA_ERROR_ILLEGAL_ADDRESS");
    ok(cu!(cuGetErrorString(ILLEGAL_ADDRESS, &mut s)));
    // SAFETY: cuGetErrorString returns a static NUL-terminated string.
    let text = unsafe { CStr::from_ptr(s) };
    assert_eq!(
        text.to_str().unwrap(),
        "an illegal memory access was encountered"
    );
}

#[test]
fn swapping_n_and_g_in_the_marshalling_is_an_illegal_address() {
    context();
    let m = load(PTX).unwrap();
    let f = function(m, "nbody_tiled_accel");
    let n = 100u32;
    let pos = upload(&bodies(n as usize));
    let acc = alloc(16 * n as usize);
    ok(launch(
        f,
        2,
        32,
        512,
        null_mut(),
        &[ptr(pos), ptr(acc), fl(1.0), u(n), fl(0.01)],
    ));
    assert_eq!(cuCtxSynchronize(), ILLEGAL_ADDRESS);
}

#[test]
fn a_deleted_bar_sync_fails_the_launch() {
    context();
    // The first bar.sync of nbody_energy deleted.
    let at = PTX.find(".entry nbody_energy(").unwrap();
    let (head, tail) = PTX.split_at(at);
    let text = format!("{head}{}", tail.replacen("\tbar.sync \t0;\n", "\n", 1));
    assert_ne!(text, PTX);
    let m = load(&text).unwrap();
    let f = function(m, "nbody_energy");
    let n = 100u32;
    let pos = upload(&bodies(n as usize));
    let vel = upload(&vec![0u8; 16 * n as usize]);
    let partials = alloc(32);
    ok(launch(
        f,
        2,
        64,
        1024,
        null_mut(),
        &[ptr(pos), ptr(vel), u(n), fl(0.01), ptr(partials)],
    ));
    assert_eq!(cuCtxSynchronize(), 719);
}

#[test]
fn an_unknown_instruction_fails_the_module_load() {
    context();
    let bad = PTX.replacen("rsqrt.approx.ftz.f32", "rsqrt.approx.fast.f32", 1);
    assert_eq!(load(&bad).err(), Some(INVALID_PTX));
    assert_eq!(load("not ptx at all").err(), Some(INVALID_PTX));
    let newer = PTX.replacen(".target sm_70", ".target sm_100", 1);
    assert_eq!(load(&newer).err(), Some(INVALID_PTX));
    // A well-formed module still loads, and a missing entry is NOT_FOUND.
    let m = load(PTX).unwrap();
    let mut f = null_mut();
    assert_eq!(
        cu!(cuModuleGetFunction(&mut f, m, c"nbody_missing".as_ptr())),
        NOT_FOUND
    );
    ok(cuModuleUnload(m));
}

#[test]
fn events_report_modelled_time_and_queries_make_progress() {
    context();
    let m = load(PTX).unwrap();
    let f = function(m, "nbody_tiled_accel");
    let n = 512u32;
    let pos = upload(&bodies(n as usize));
    let acc = alloc(16 * n as usize);
    let mut stream = null_mut();
    ok(cu!(cuStreamCreate(&mut stream, 1)));
    let (mut start, mut stop) = (null_mut(), null_mut());
    ok(cu!(cuEventCreate(&mut start, 0)));
    ok(cu!(cuEventCreate(&mut stop, 0)));
    ok(cuEventRecord(start, stream));
    ok(launch(
        f,
        2,
        128,
        2048,
        stream,
        &[ptr(pos), ptr(acc), u(n), fl(1.0), fl(0.01)],
    ));
    ok(cuEventRecord(stop, stream));
    let mut ms = 0f32;
    assert_eq!(cu!(cuEventElapsedTime(&mut ms, start, stop)), NOT_READY);
    assert_eq!(cuEventQuery(stop), NOT_READY);
    ok(cuEventQuery(stop));
    ok(cu!(cuEventElapsedTime(&mut ms, start, stop)));
    // The time model: at least the launch overhead of 3 us.
    assert!(ms > 0.003 && ms < 1.0, "{ms}");
    ok(cuStreamQuery(stream));
    ok(cuEventDestroy_v2(start));
    ok(cuEventDestroy_v2(stop));
    ok(cuStreamDestroy_v2(stream));
}

#[test]
fn unsupported_functions_say_so() {
    assert_eq!(cuGraphCreate(), NOT_SUPPORTED);
    assert_eq!(cuMemAllocManaged(), NOT_SUPPORTED);
    assert!(NOT_SUPPORTED_FUNCTIONS.contains(&"cuTexObjectCreate"));
}

#[test]
fn device_queries_follow_the_modelled_device() {
    ok(cuInit(0));
    let mut n = 0;
    ok(cu!(cuDeviceGetCount(&mut n)));
    assert_eq!(n, 1);
    let mut dev = 0;
    ok(cu!(cuDeviceGet(&mut dev, 0)));
    assert_eq!(cu!(cuDeviceGet(&mut dev, 1)), INVALID_DEVICE);
    let mut name_buf = [0 as std::ffi::c_char; 128];
    ok(cu!(cuDeviceGetName(name_buf.as_mut_ptr(), 128, 0)));
    // SAFETY: cuDeviceGetName wrote a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(name_buf.as_ptr()) }
        .to_str()
        .unwrap();
    assert!(name.contains("sm_90"), "{name}");
    let attr = |a: u32| {
        let mut v = 0;
        ok(cu!(cuDeviceGetAttribute(&mut v, a, 0)));
        v
    };
    assert_eq!((attr(75), attr(76)), (9, 0));
    assert_eq!(attr(16), 132);
    assert_eq!(attr(10), 32);
    assert_eq!(attr(8), 48 * 1024);
    let mut v = 0;
    assert_eq!(cu!(cuDeviceGetAttribute(&mut v, 22, 0)), NOT_SUPPORTED);
    let mut ver = 0;
    ok(cu!(cuDriverGetVersion(&mut ver)));
    // Primary contexts are shared and reference-counted.
    let (mut a, mut b) = (null_mut(), null_mut());
    ok(cu!(cuDevicePrimaryCtxRetain(&mut a, 0)));
    ok(cu!(cuDevicePrimaryCtxRetain(&mut b, 0)));
    assert_eq!(a, b);
    ok(cuCtxSetCurrent(a));
    let mut cur = null_mut();
    ok(cu!(cuCtxGetCurrent(&mut cur)));
    assert_eq!(cur, a);
    let (mut free, mut total) = (0, 0);
    ok(cu!(cuMemGetInfo_v2(&mut free, &mut total)));
    assert_eq!(total, 80 << 30);
    ok(cuDevicePrimaryCtxRelease_v2(0));
    ok(cuDevicePrimaryCtxRelease_v2(0));
    assert_eq!(cu!(cuMemGetInfo_v2(&mut free, &mut total)), INVALID_CONTEXT);
}

#[test]
fn threads_use_their_own_current_contexts() {
    ok(cuInit(0));
    let handles: Vec<_> = (0..3)
        .map(|t| {
            std::thread::spawn(move || {
                context();
                let m = load(PTX).unwrap();
                let f = function(m, "nbody_kick");
                let n = 64 + t as u32;
                let vel = upload(&vec![0u8; 16 * n as usize]);
                let acc = upload(
                    &(0..4 * n)
                        .flat_map(|_| 2.0f32.to_le_bytes())
                        .collect::<Vec<u8>>(),
                );
                ok(launch(
                    f,
                    1,
                    128,
                    0,
                    null_mut(),
                    &[ptr(vel), ptr(acc), u(n), fl(0.5)],
                ));
                let out = download(vel, 16 * n as usize).unwrap();
                let v: Vec<f32> = out
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                for i in 0..n as usize {
                    assert_eq!(&v[4 * i..4 * i + 4], &[1.0, 1.0, 1.0, 0.0]);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
