//! A capture on one thread and a legacy-stream call on another, in one
//! context: what the H200 did when two threads of one process shared the
//! CUDA context (`correctness cuda::`, 2026-11-27). Thread A begins the
//! capture, thread B makes one call and is joined, then A goes on, so every
//! interleaving is fixed.
//!
//! CUDA: while a *blocking* stream captures, the legacy stream is unusable
//! (it would wait for the capture): B's call returns
//! `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` and invalidates the capture, in
//! every capture mode (the H200's was relaxed), so A's next enqueue and
//! `cuStreamEndCapture` return `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`. A
//! non-blocking stream's capture is not involved. `cuCtxSynchronize` waits
//! for every stream, the capturing one included: refused in every mode.

mod common;

use std::ffi::c_void;
use std::ptr::null_mut;

use common::*;
use softcuda_driver::api::*;
use softcuda_driver::errors::*;
use softcuda_driver::graph::*;

const MODES: [i32; 3] = [
    CAPTURE_MODE_GLOBAL,
    CAPTURE_MODE_THREAD_LOCAL,
    CAPTURE_MODE_RELAXED,
];

fn err(r: u32, want: u32, what: &str) {
    assert_eq!(r, want, "{what}: {} instead of {}", name(r), name(want));
}

/// The legacy-stream calls thread B makes, by number.
const LEGACY_CALLS: [&str; 5] = [
    "cuMemcpyDtoH (synchronous)",
    "cuMemsetD32 (synchronous)",
    "cuLaunchKernel on stream 0",
    "cuMemsetD32Async on stream 0",
    "cuStreamSynchronize(0)",
];

/// Thread B: makes context `ctx` current and makes legacy-stream call
/// `call`, which reads or writes `q` only.
fn on_another_thread(ctx: Handle, call: usize, q: u64, kick: Handle) -> u32 {
    let (ctx, kick) = (ctx as usize, kick as usize);
    std::thread::spawn(move || {
        ok(cuCtxSetCurrent(ctx as Handle));
        let mut host = [0u32; 4];
        match call {
            0 => cu!(cuMemcpyDtoH_v2(host.as_mut_ptr() as *mut c_void, q, 16)),
            1 => cuMemsetD32_v2(q, 5, 4),
            2 => launch_kick(kick as Handle, q, q, 4, 1.0, null_mut()),
            3 => cuMemsetD32Async(q, 5, 4, null_mut()),
            _ => cuStreamSynchronize(null_mut()),
        }
    })
    .join()
    .unwrap()
}

/// A blocking stream captures (every mode); another thread's legacy-stream
/// call is refused as an implicit dependency and invalidates the capture:
/// the capturer's next enqueue and its end capture fail as invalidated, the
/// capture then ends, nothing captured ran, and the legacy stream works
/// again.
#[test]
fn another_threads_legacy_stream_call_breaks_a_blocking_capture_in_every_mode() {
    let ctx = context();
    let kick = kick(module());
    let (p, q) = (alloc(64), alloc(64));
    ok(cuMemsetD32_v2(p, 0, 16));
    ok(cuMemsetD32_v2(q, 0, 16));
    for mode in MODES {
        for (call, what) in LEGACY_CALLS.iter().enumerate() {
            let what = format!("mode {mode}, {what}");
            let s = stream(0);
            ok(cu!(cuStreamBeginCapture_v2(s, mode)));
            ok(cuMemsetD32Async(p, 3, 4, s));
            err(
                on_another_thread(ctx, call, q, kick),
                STREAM_CAPTURE_IMPLICIT,
                &what,
            );
            assert_eq!(status(s), CAPTURE_STATUS[2], "{what}");
            err(
                launch_kick(kick, p, q, 4, 1.0, s),
                STREAM_CAPTURE_INVALIDATED,
                &format!("{what}: the capturer's next launch"),
            );
            err(
                cuMemsetD32Async(p, 4, 4, s),
                STREAM_CAPTURE_INVALIDATED,
                &format!("{what}: the capturer's next memset"),
            );
            err(
                end(s).unwrap_err(),
                STREAM_CAPTURE_INVALIDATED,
                &format!("{what}: cuStreamEndCapture"),
            );
            assert_eq!(status(s), CAPTURE_STATUS[0], "{what}");
            ok(on_another_thread(ctx, call, q, kick));
            ok(cuCtxSynchronize());
            assert_eq!(words(p, 1), [0], "{what}: captured work ran");
            ok(cuStreamDestroy_v2(s));
        }
    }
}

/// The same calls while a NON-BLOCKING stream captures: no implicit
/// dependency, every call succeeds on both threads and the graph runs the
/// captured work.
#[test]
fn another_threads_legacy_stream_call_leaves_a_non_blocking_capture_alone() {
    let ctx = context();
    let kick = kick(module());
    let (p, q) = (alloc(64), alloc(64));
    for mode in MODES {
        for (call, what) in LEGACY_CALLS.iter().enumerate() {
            let what = format!("mode {mode}, {what}");
            ok(cuMemsetD32_v2(p, 0, 16));
            // The reset (legacy stream) before the graph (non-blocking).
            ok(cuCtxSynchronize());
            let s = stream(NON_BLOCKING);
            ok(cu!(cuStreamBeginCapture_v2(s, mode)));
            ok(cuMemsetD32Async(p, 3, 4, s));
            ok(on_another_thread(ctx, call, q, kick));
            ok(cuMemsetD32Async(p, 4, 2, s));
            assert_eq!(status(s), CAPTURE_STATUS[1], "{what}");
            let g = end(s).unwrap_or_else(|e| panic!("{what}: {}", name(e)));
            let mut e = null_mut();
            ok(cu!(cuGraphInstantiateWithFlags(&mut e, g, 0)));
            ok(cuGraphLaunch(e, s));
            ok(cuStreamSynchronize(s));
            assert_eq!(words(p, 4), [4, 4, 3, 3], "{what}");
            ok(cuGraphExecDestroy(e));
            ok(cuGraphDestroy(g));
            ok(cuStreamDestroy_v2(s));
        }
    }
}

/// `cuStreamIsCapturing` of the legacy stream while a blocking stream
/// captures: CUDA's documentation says IMPLICIT, and the capture is not
/// invalidated (a query, not work).
#[test]
fn asking_the_legacy_stream_whether_it_captures_is_implicit_but_harmless() {
    context();
    let s = stream(0);
    ok(cu!(cuStreamBeginCapture_v2(s, CAPTURE_MODE_RELAXED)));
    let mut st = -1;
    err(
        cu!(cuStreamIsCapturing(null_mut(), &mut st)),
        STREAM_CAPTURE_IMPLICIT,
        "cuStreamIsCapturing(0)",
    );
    assert_eq!(status(s), CAPTURE_STATUS[1]);
    assert!(end(s).is_ok());
    ok(cu!(cuStreamIsCapturing(null_mut(), &mut st)));
    assert_eq!(st, CAPTURE_STATUS[0]);
}

/// `cuCtxSynchronize` on another thread waits for every stream of the
/// context, the capturing one included: refused and the capture
/// invalidated in every mode, blocking stream or not (relaxed mode lifts
/// only the "potentially unsafe" calls: allocate, free).
#[test]
fn another_threads_context_synchronize_breaks_a_capture_in_every_mode() {
    let ctx = context();
    let p = alloc(16);
    for mode in MODES {
        for flags in [0, NON_BLOCKING] {
            let what = format!("mode {mode}, stream flags {flags}");
            let s = stream(flags);
            ok(cu!(cuStreamBeginCapture_v2(s, mode)));
            ok(cuMemsetD32Async(p, 3, 4, s));
            let handle = ctx as usize;
            let r = std::thread::spawn(move || {
                ok(cuCtxSetCurrent(handle as Handle));
                cuCtxSynchronize()
            })
            .join()
            .unwrap();
            err(r, STREAM_CAPTURE_UNSUPPORTED, &what);
            err(
                end(s).unwrap_err(),
                STREAM_CAPTURE_INVALIDATED,
                &format!("{what}: cuStreamEndCapture"),
            );
            ok(cuStreamDestroy_v2(s));
        }
    }
}
