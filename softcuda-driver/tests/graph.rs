//! CUDA graphs by stream capture through the driver's C functions (issue
//! 23): each test pins one piece of the most hostile semantics CUDA allows
//! (`softcuda_driver::graph`): captured work does not run, a graph runs only
//! when launched and forced, its parameters are fixed at the capture, the
//! calls a capture forbids fail and invalidate it, captured events, threads,
//! freed memory and unloaded modules.
//!
//! Each test makes its own context current on its own thread, so sticky
//! errors stay in their test.

mod common;

use std::ffi::c_void;
use std::ptr::null_mut;

use common::*;
use softcuda_driver::api::*;
use softcuda_driver::errors::*;
use softcuda_driver::graph::*;

/// `CU_STREAM_CAPTURE_MODE_GLOBAL`
const GLOBAL: i32 = 0;
/// `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`
const THREAD_LOCAL: i32 = 1;

fn err(r: u32, want: u32) {
    assert_eq!(r, want, "{} instead of {}", name(r), name(want));
}

fn fill(p: u64, value: u32, n: usize, s: Handle) -> u32 {
    cuMemsetD32Async(p, value, n, s)
}

fn begin(s: Handle, mode: i32) -> u32 {
    cuStreamBeginCapture_v2(s, mode)
}

fn instantiate(g: Handle) -> Handle {
    let mut e = null_mut();
    ok(cu!(cuGraphInstantiateWithFlags(&mut e, g, 0)));
    e
}

/// Captured work does not run; the graph runs when launched and forced,
/// and again at each launch (four vectors kicked by 1 twice: 2).
#[test]
fn captured_work_runs_only_when_the_graph_is_launched_and_each_launch_runs_it() {
    context();
    let m = module();
    let f = kick(m);
    let s = stream(NON_BLOCKING);
    let (vel, acc) = (alloc(64), alloc(64));
    ok(fill(vel, 0, 16, s));
    ok(fill(acc, 1.0f32.to_bits(), 16, s));
    ok(cuStreamSynchronize(s));
    ok(begin(s, GLOBAL));
    assert_eq!(status(s), CAPTURE_STATUS[1]);
    ok(launch_kick(f, vel, acc, 4, 1.0, s));
    let g = end(s).unwrap();
    assert_eq!(status(s), CAPTURE_STATUS[0]);
    ok(cuStreamSynchronize(s));
    assert_eq!(words(vel, 16), vec![0; 16], "a captured kernel ran");
    let e = instantiate(g);
    ok(cuGraphLaunch(e, s));
    // Queued, not run: the first query says so (the hostile ordering).
    err(cuStreamQuery(s), NOT_READY);
    ok(cuGraphLaunch(e, s));
    ok(cuStreamSynchronize(s));
    let two = 2.0f32.to_bits();
    assert_eq!(words(vel, 16), [[two, two, two, 0]; 4].concat());
}

/// A node's device addresses and values are fixed at the capture, but it
/// reads device memory when it runs: a copy captured from `a` copies what
/// `a` holds at the launch.
#[test]
fn nodes_fix_their_arguments_at_the_capture_and_read_memory_when_they_run() {
    context();
    let s = stream(NON_BLOCKING);
    let (a, b) = (alloc(16), alloc(16));
    ok(fill(a, 1, 4, s));
    ok(cuStreamSynchronize(s));
    ok(begin(s, GLOBAL));
    ok(cuMemcpyDtoDAsync_v2(b, a, 16, s));
    ok(fill(a, 5, 2, s));
    let g = end(s).unwrap();
    ok(fill(a, 9, 4, s));
    let e = instantiate(g);
    // The graph and its executable copy may go before the launch runs.
    ok(cuGraphLaunch(e, s));
    ok(cuGraphExecDestroy(e));
    ok(cuGraphDestroy(g));
    ok(cuStreamSynchronize(s));
    assert_eq!(words(b, 4), [9, 9, 9, 9]);
    assert_eq!(words(a, 4), [5, 5, 9, 9]);
    err(cuGraphLaunch(e, s), INVALID_VALUE);
}

/// Synchronising on the capturing stream, or context-wide in global mode
/// (synchronise, allocate, free), fails and invalidates the capture;
/// relaxed mode allows the context-wide ones.
#[test]
fn synchronising_calls_during_a_capture_fail_and_invalidate_it() {
    context();
    let p = alloc(16);
    for call in 0..5 {
        let s = stream(NON_BLOCKING);
        ok(begin(s, GLOBAL));
        ok(fill(p, 3, 4, s));
        let r = match call {
            0 => cuStreamSynchronize(s),
            1 => cuStreamQuery(s),
            2 => cuCtxSynchronize(),
            3 => cu!(cuMemAlloc_v2(&mut 0, 16)),
            _ => cuMemFree_v2(p),
        };
        err(r, STREAM_CAPTURE_UNSUPPORTED);
        assert_eq!(status(s), CAPTURE_STATUS[2], "call {call}");
        err(end(s).unwrap_err(), STREAM_CAPTURE_INVALIDATED);
        // The capture is over; the stream works again, and nothing captured ran.
        assert_eq!(status(s), CAPTURE_STATUS[0]);
        ok(cuStreamSynchronize(s));
        assert_ne!(words(p, 1), [3], "call {call}: captured work ran");
    }
    let s = stream(NON_BLOCKING);
    ok(begin(s, CAPTURE_MODE_RELAXED));
    let mut q = 0;
    ok(cu!(cuMemAlloc_v2(&mut q, 16)));
    ok(cuMemFree_v2(q));
    assert_eq!(status(s), CAPTURE_STATUS[1]);
    assert!(end(s).is_ok());
}

/// A context-wide call (allocate) made on ANOTHER thread: a global-mode
/// capture forbids it there too (refused, the capture invalidated); a
/// thread-local one ignores other threads (the call succeeds, the capture
/// goes on and ends with a graph).
#[test]
fn other_threads_calls_break_a_global_capture_but_not_a_thread_local_one() {
    let ctx = context();
    for (mode, refused) in [(GLOBAL, true), (THREAD_LOCAL, false)] {
        let s = stream(NON_BLOCKING);
        ok(begin(s, mode));
        let handle = ctx as usize;
        let r = std::thread::spawn(move || {
            ok(cuCtxSetCurrent(handle as Handle));
            let mut q = 0;
            let r = cu!(cuMemAlloc_v2(&mut q, 16));
            if r == SUCCESS {
                ok(cuMemFree_v2(q));
            }
            r
        })
        .join()
        .unwrap();
        if refused {
            err(r, STREAM_CAPTURE_UNSUPPORTED);
            assert_eq!(status(s), CAPTURE_STATUS[2], "mode {mode}");
            err(end(s).unwrap_err(), STREAM_CAPTURE_INVALIDATED);
        } else {
            ok(r);
            assert_eq!(status(s), CAPTURE_STATUS[1], "mode {mode}");
            assert!(end(s).is_ok(), "mode {mode}");
        }
    }
}

/// Legacy-stream work while a blocking stream captures would make the
/// legacy stream wait for the capture: refused, the capture invalidated. A
/// non-blocking stream's capture is not involved.
#[test]
fn legacy_stream_work_during_a_blocking_capture_is_an_implicit_dependency() {
    context();
    let p = alloc(16);
    let blocking = stream(0);
    ok(begin(blocking, GLOBAL));
    err(cuMemsetD32_v2(p, 1, 4), STREAM_CAPTURE_IMPLICIT);
    err(end(blocking).unwrap_err(), STREAM_CAPTURE_INVALIDATED);
    let free = stream(NON_BLOCKING);
    ok(begin(free, GLOBAL));
    ok(cuMemsetD32_v2(p, 1, 4));
    assert_eq!(status(free), CAPTURE_STATUS[1]);
    assert!(end(free).is_ok());
    assert_eq!(words(p, 4), [1; 4]);
}

/// A copy from pageable host memory in a capture is refused (the graph
/// would read host memory the caller may have freed by the time it runs);
/// from pinned memory it is a node that reads it when it runs.
#[test]
fn pageable_copies_are_refused_and_pinned_ones_read_at_the_launch() {
    context();
    let p = alloc(16);
    let s = stream(NON_BLOCKING);
    let pageable = [7u32; 4];
    ok(begin(s, GLOBAL));
    err(
        cu!(cuMemcpyHtoDAsync_v2(
            p,
            pageable.as_ptr() as *const c_void,
            16,
            s
        )),
        STREAM_CAPTURE_UNSUPPORTED,
    );
    err(end(s).unwrap_err(), STREAM_CAPTURE_INVALIDATED);
    let mut host: *mut c_void = null_mut();
    ok(cu!(cuMemAllocHost_v2(&mut host, 16)));
    let pinned = host as *mut u32;
    // SAFETY: `pinned` is a 16-byte pinned allocation of the driver.
    let set = |v: u32| unsafe { std::slice::from_raw_parts_mut(pinned, 4).fill(v) };
    set(1);
    ok(begin(s, GLOBAL));
    ok(cu!(cuMemcpyHtoDAsync_v2(p, host, 16, s)));
    let g = end(s).unwrap();
    set(2);
    let e = instantiate(g);
    ok(cuGraphLaunch(e, s));
    ok(cuStreamSynchronize(s));
    assert_eq!(words(p, 4), [2; 4]);
    ok(cu!(cuMemFreeHost(host)));
}

/// An event recorded in a capture is a captured event: no query,
/// synchronisation or timing until recorded outside one; another stream
/// waiting on it (a multi-stream capture) is not modelled; the capturing
/// stream waiting on an event recorded outside the capture is an isolation
/// error.
#[test]
fn events_in_a_capture() {
    context();
    let s = stream(NON_BLOCKING);
    let other = stream(NON_BLOCKING);
    let (mut inside, mut outside) = (null_mut(), null_mut());
    ok(cu!(cuEventCreate(&mut inside, 0)));
    ok(cu!(cuEventCreate(&mut outside, 0)));
    ok(cuEventRecord(outside, other));
    ok(begin(s, GLOBAL));
    ok(cuEventRecord(inside, s));
    err(cuEventQuery(inside), CAPTURED_EVENT);
    err(cuEventSynchronize(inside), CAPTURED_EVENT);
    err(
        cu!(cuEventElapsedTime(&mut 0.0, outside, inside)),
        CAPTURED_EVENT,
    );
    ok(cuStreamWaitEvent(s, inside, 0));
    err(cuStreamWaitEvent(other, inside, 0), NOT_SUPPORTED);
    err(cuStreamWaitEvent(s, outside, 0), STREAM_CAPTURE_ISOLATION);
    err(end(s).unwrap_err(), STREAM_CAPTURE_INVALIDATED);
    // Recorded again outside a capture: an ordinary event.
    ok(cuEventRecord(inside, other));
    ok(cuEventSynchronize(inside));
}

/// In global (and thread-local) mode the capture ends on the thread that
/// began it; another thread is refused and the capture goes on.
#[test]
fn a_capture_ends_on_the_thread_that_began_it() {
    let ctx = context();
    let s = stream(NON_BLOCKING);
    ok(begin(s, GLOBAL));
    let handles = (ctx as usize, s as usize);
    let from_elsewhere = std::thread::spawn(move || {
        ok(cuCtxSetCurrent(handles.0 as Handle));
        end(handles.1 as Handle).unwrap_err()
    })
    .join()
    .unwrap();
    err(from_elsewhere, STREAM_CAPTURE_WRONG_THREAD);
    assert_eq!(status(s), CAPTURE_STATUS[1]);
    assert!(end(s).is_ok());
}

/// The capture's own errors of state: the legacy stream cannot capture, a
/// stream cannot capture twice, nothing ends a capture never begun; a
/// graph cannot be launched into a capture (child graphs: not modelled);
/// unknown instantiate flags are refused.
#[test]
fn capture_state_errors() {
    context();
    err(begin(null_mut(), GLOBAL), STREAM_CAPTURE_UNSUPPORTED);
    let s = stream(NON_BLOCKING);
    err(end(s).unwrap_err(), ILLEGAL_STATE);
    ok(begin(s, GLOBAL));
    err(begin(s, GLOBAL), ILLEGAL_STATE);
    let g = end(s).unwrap();
    let e = instantiate(g);
    let t = stream(NON_BLOCKING);
    ok(begin(t, GLOBAL));
    err(cuGraphLaunch(e, t), NOT_SUPPORTED);
    assert!(end(t).is_ok());
    let mut e2 = null_mut();
    err(
        cu!(cuGraphInstantiateWithFlags(&mut e2, g, 8)),
        INVALID_VALUE,
    );
    err(begin(s, 7), INVALID_VALUE);
}

/// Memory freed after the capture faults when the node runs (sticky, as on
/// hardware); a kernel whose module was unloaded is refused at the launch.
#[test]
fn freed_memory_faults_when_the_graph_runs_and_unloaded_kernels_are_refused() {
    context();
    let m = module();
    let f = kick(m);
    let s = stream(NON_BLOCKING);
    let (vel, acc) = (alloc(64), alloc(64));
    ok(begin(s, GLOBAL));
    ok(launch_kick(f, vel, acc, 4, 1.0, s));
    let g = end(s).unwrap();
    let e = instantiate(g);
    ok(cuModuleUnload(m));
    err(cuGraphLaunch(e, s), INVALID_HANDLE);

    let p = alloc(16);
    ok(begin(s, GLOBAL));
    ok(fill(p, 4, 4, s));
    let g = end(s).unwrap();
    let e = instantiate(g);
    ok(cuMemFree_v2(p));
    ok(cuGraphLaunch(e, s));
    err(cuStreamSynchronize(s), ILLEGAL_ADDRESS);
    err(cuCtxSynchronize(), ILLEGAL_ADDRESS);
}
