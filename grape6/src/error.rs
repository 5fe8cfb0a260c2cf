//! The library's return codes (the `G6_*` constants of `grape6.h`) and
//! [`G6Error`], a code with the message that names the bad value.
//!
//! GRAPE-6 and Sapporo2 return `0` for success and `1` from the neighbour
//! list calls when a list overflowed; everything else here is an extension:
//! negative codes for calls the hardware library would have crashed or
//! silently computed garbage on.

use std::fmt;

/// Success.
pub const G6_OK: i32 = 0;
/// A neighbour list did not fit (GRAPE-6's own overflow return): the list
/// is truncated, the count is the full one.
pub const G6_OVERFLOW: i32 = 1;
/// Called before `g6_open` (or after `g6_close`).
pub const G6_ERR_NOT_OPEN: i32 = -1;
/// `g6_open` while the library is open.
pub const G6_ERR_ALREADY_OPEN: i32 = -2;
/// A pointer the call must read or write is NULL.
pub const G6_ERR_NULL_POINTER: i32 = -3;
/// A j-particle address below 0 or beyond the j-memory (`GRAPE6_JMEM`).
pub const G6_ERR_ADDRESS: i32 = -4;
/// An active block (`ni`) of 0 or more than `g6_npipes()`.
pub const G6_ERR_PIPES: i32 = -5;
/// `nj` below 0, or including j-addresses never set by `g6_set_j_particle`.
pub const G6_ERR_NJ: i32 = -6;
/// A NaN or infinite input (position, velocity, mass, time, `eps2`, `h2`),
/// or a non-finite force (coincident bodies at `eps2 = 0`).
pub const G6_ERR_NOT_FINITE: i32 = -7;
/// A call out of order: `g6calc_lasthalf` without its `g6calc_firsthalf`
/// (or with another `ni`/`nj`), neighbour lists without a calculation, or
/// the results of a `g6calc_firsthalf` that failed.
pub const G6_ERR_SEQUENCE: i32 = -8;
/// Another bad argument: negative `eps2`, a neighbour-list pipe out of
/// range, a negative `maxlength`, an i-particle whose index is carried by
/// two j-particles.
pub const G6_ERR_ARGUMENT: i32 = -9;
/// A bad `GRAPE6_*` environment variable at `g6_open`.
pub const G6_ERR_CONFIG: i32 = -10;
/// A bug in the library (a Rust panic, caught at the C boundary).
pub const G6_ERR_INTERNAL: i32 = -11;
/// The GPU failed (`GRAPE6_BACKEND=cuda`): no device at `g6_open`, or a
/// driver error during a calculation.
pub const G6_ERR_DEVICE: i32 = -12;

/// What a call returns instead of success: a `G6_*` code and a message
/// naming the bad value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct G6Error {
    /// One of the `G6_ERR_*` codes, or [`G6_OVERFLOW`].
    pub code: i32,
    /// What was wrong, with the value.
    pub message: String,
}

impl G6Error {
    /// An error with `code` and `message`.
    pub fn new(code: i32, message: impl Into<String>) -> G6Error {
        G6Error {
            code,
            message: message.into(),
        }
    }

    /// The name of the code (`"G6_ERR_PIPES"`, ...).
    pub fn code_name(&self) -> &'static str {
        code_name(self.code)
    }
}

/// The name of a `G6_*` code, `"unknown"` for others.
pub fn code_name(code: i32) -> &'static str {
    match code {
        G6_OK => "G6_OK",
        G6_OVERFLOW => "G6_OVERFLOW",
        G6_ERR_NOT_OPEN => "G6_ERR_NOT_OPEN",
        G6_ERR_ALREADY_OPEN => "G6_ERR_ALREADY_OPEN",
        G6_ERR_NULL_POINTER => "G6_ERR_NULL_POINTER",
        G6_ERR_ADDRESS => "G6_ERR_ADDRESS",
        G6_ERR_PIPES => "G6_ERR_PIPES",
        G6_ERR_NJ => "G6_ERR_NJ",
        G6_ERR_NOT_FINITE => "G6_ERR_NOT_FINITE",
        G6_ERR_SEQUENCE => "G6_ERR_SEQUENCE",
        G6_ERR_ARGUMENT => "G6_ERR_ARGUMENT",
        G6_ERR_CONFIG => "G6_ERR_CONFIG",
        G6_ERR_INTERNAL => "G6_ERR_INTERNAL",
        G6_ERR_DEVICE => "G6_ERR_DEVICE",
        _ => "unknown",
    }
}

impl fmt::Display for G6Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code_name())
    }
}

impl std::error::Error for G6Error {}

/// The library's results.
pub type Result<T> = std::result::Result<T, G6Error>;
