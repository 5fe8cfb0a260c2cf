//! The device's stream and timing events, owned here rather than cust's:
//! cust 0.3.2's `Stream::new` silently drops `StreamFlags::NON_BLOCKING`
//! (Rust-GPU/Rust-CUDA#15), and a blocking stream joins the legacy stream,
//! so while it captured a graph any legacy-stream call in the shared
//! context (another thread's synchronous read back) was refused with
//! `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` and invalidated the capture (the
//! H200, 2026-11-27). cust's `Event` records only on a cust `Stream`, so
//! the events are here too. The API mirrors cust's.

use std::fmt;
use std::ptr;

use cust::event::EventFlags;
use cust::stream::StreamFlags;
use cust::sys;

/// A failed driver call's status; displayed by its name, as
/// `status::driver` reports a raw call.
#[derive(Debug)]
pub(super) struct Status(sys::CUresult);

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

fn check(status: sys::CUresult) -> Result<(), Status> {
    if status == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Status(status))
    }
}

/// A stream of the current context with the flags asked for (cust's
/// `Stream::new` without the stripping), destroyed on drop.
pub(super) struct Stream(sys::CUstream);

impl Stream {
    /// Creates a stream in the current context with `flags` (kept as given:
    /// `NON_BLOCKING` is not ordered with the legacy stream) and `priority`.
    pub(super) fn new(flags: StreamFlags, priority: Option<i32>) -> Result<Stream, Status> {
        let mut stream: sys::CUstream = ptr::null_mut();
        // SAFETY: `stream` receives a new stream handle of the current
        // context; the flags are cust's, which are the driver's bits.
        check(unsafe {
            sys::cuStreamCreateWithPriority(&mut stream, flags.bits(), priority.unwrap_or(0))
        })?;
        Ok(Stream(stream))
    }

    /// The raw handle, for the driver calls that queue on the stream.
    pub(super) fn as_inner(&self) -> sys::CUstream {
        self.0
    }

    /// Waits until everything queued on the stream has completed.
    pub(super) fn synchronize(&self) -> Result<(), Status> {
        // SAFETY: a live stream of this object's context.
        check(unsafe { sys::cuStreamSynchronize(self.0) })
    }
}

impl Drop for Stream {
    /// Destroys the stream (queued work still completes: CUDA releases it
    /// afterwards). The owner makes the stream's context current first.
    fn drop(&mut self) {
        // SAFETY: the handle is live and destroyed once, here.
        let _ = unsafe { sys::cuStreamDestroy_v2(self.0) };
    }
}

/// An event of the current context, destroyed on drop.
pub(super) struct Event(sys::CUevent);

impl Event {
    /// Creates an event in the current context.
    pub(super) fn new(flags: EventFlags) -> Result<Event, Status> {
        let mut event: sys::CUevent = ptr::null_mut();
        // SAFETY: `event` receives a new event handle of the current context.
        check(unsafe { sys::cuEventCreate(&mut event, flags.bits()) })?;
        Ok(Event(event))
    }

    /// Records the event at the current end of `stream`.
    pub(super) fn record(&self, stream: &Stream) -> Result<(), Status> {
        // SAFETY: a live event and a live stream of the same context.
        check(unsafe { sys::cuEventRecord(self.0, stream.0) })
    }

    /// Waits until the work before the event's last record has completed.
    pub(super) fn synchronize(&self) -> Result<(), Status> {
        // SAFETY: a live event.
        check(unsafe { sys::cuEventSynchronize(self.0) })
    }

    /// Milliseconds from `start` to this event, both completed.
    pub(super) fn elapsed_time_f32(&self, start: &Event) -> Result<f32, Status> {
        let mut ms = 0.0f32;
        // SAFETY: two live events; `ms` receives the time.
        check(unsafe { sys::cuEventElapsedTime(&mut ms, start.0, self.0) })?;
        Ok(ms)
    }
}

impl Drop for Event {
    /// Destroys the event; the owner makes its context current first.
    fn drop(&mut self) {
        // SAFETY: the handle is live and destroyed once, here.
        let _ = unsafe { sys::cuEventDestroy_v2(self.0) };
    }
}
