//! The GRAPE-6 C names: arguments by value (see [`super`] for the Safety
//! contract and `grape6.h` for each function).
#![allow(
    clippy::missing_safety_doc,
    reason = "every function implements a GRAPE-6 entry point; its contract is the Safety section of `ffi` and grape6.h"
)]
#![allow(
    clippy::too_many_arguments,
    reason = "the signatures are GRAPE-6's, fixed by the codes that call them"
)]

use std::ffi::{c_char, c_double, c_int};

use super::*;

/// `g6_open`: opens the library with the `GRAPE6_*` environment's settings.
#[unsafe(no_mangle)]
pub extern "C" fn g6_open(_clusterid: c_int) -> c_int {
    call("g6_open", || open(Config::from_env()))
}

/// `g6_close`: frees the j-memory; the library may be opened again.
#[unsafe(no_mangle)]
pub extern "C" fn g6_close(_clusterid: c_int) -> c_int {
    call("g6_close", close)
}

/// `g6_npipes`: i-particles per calculation (before `g6_open`: what it
/// will use).
#[unsafe(no_mangle)]
pub extern "C" fn g6_npipes() -> c_int {
    call("g6_npipes", npipes)
}

/// `g6_set_tunit`: GRAPE-6's fixed-point time scale; a no-op here (the
/// argument is not read).
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_tunit(_newtunit: c_double) -> c_int {
    call("g6_set_tunit", open_noop)
}

/// `g6_set_xunit`: GRAPE-6's fixed-point position scale; a no-op here.
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_xunit(_newxunit: c_double) -> c_int {
    call("g6_set_xunit", open_noop)
}

/// `g6_set_ti`: the time the next calculation predicts the j-particles to.
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_ti(_clusterid: c_int, ti: c_double) -> c_int {
    call("g6_set_ti", || {
        with_lib(|lib| lib.set_ti(ti).map(|()| G6_OK))
    })
}

/// `g6_set_j_particle`: stores a j-particle (`a2 = a/2`, `j6 = jerk/6`;
/// `k18` and `dtj` are not used).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_set_j_particle(
    _clusterid: c_int,
    address: c_int,
    index: c_int,
    tj: c_double,
    _dtj: c_double,
    mass: c_double,
    _k18: *const c_double,
    j6: *const c_double,
    a2: *const c_double,
    v: *const c_double,
    x: *const c_double,
) -> c_int {
    // SAFETY: the caller's contract (grape6.h).
    call("g6_set_j_particle", || unsafe {
        set_j_particle(address, index, tj, mass, j6, a2, v, x)
    })
}

/// `g6calc_firsthalf`: begins the calculation of `ni` i-particles' force
/// from j-addresses `0..nj` predicted to `ti`; errors are reported by
/// `g6_last_error` and by the `g6calc_lasthalf` that follows.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_firsthalf(
    _clusterid: c_int,
    nj: c_int,
    ni: c_int,
    index: *const c_int,
    xi: *const V3,
    vi: *const V3,
    _aold: *const V3,
    _j6old: *const V3,
    _phiold: *const c_double,
    eps2: c_double,
    h2: *const c_double,
) {
    let a = FirstHalf { index, xi, vi, h2 };
    // SAFETY: the caller's contract (grape6.h); the scalars are locals.
    call("g6calc_firsthalf", || unsafe {
        firsthalf(&nj, &ni, &eps2, a)
    });
}

/// `g6calc_lasthalf`: force, jerk and potential of the calculation begun.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_lasthalf(
    _clusterid: c_int,
    nj: c_int,
    ni: c_int,
    _index: *const c_int,
    _xi: *const V3,
    _vi: *const V3,
    _eps2: c_double,
    _h2: *const c_double,
    acc: *mut V3,
    jerk: *mut V3,
    pot: *mut c_double,
) -> c_int {
    // SAFETY: the caller's contract (grape6.h); the scalars are locals.
    call("g6calc_lasthalf", || unsafe {
        lasthalf(&nj, &ni, acc, jerk, pot, None)
    })
}

/// `g6calc_lasthalf2`: `g6calc_lasthalf` and each i-particle's nearest
/// neighbour's index.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_lasthalf2(
    _clusterid: c_int,
    nj: c_int,
    ni: c_int,
    _index: *const c_int,
    _xi: *const V3,
    _vi: *const V3,
    _eps2: c_double,
    _h2: *const c_double,
    acc: *mut V3,
    jerk: *mut V3,
    pot: *mut c_double,
    nnbindex: *mut c_int,
) -> c_int {
    // SAFETY: the caller's contract (grape6.h); the scalars are locals.
    call("g6calc_lasthalf2", || unsafe {
        lasthalf(&nj, &ni, acc, jerk, pot, Some(nnbindex))
    })
}

/// `g6_initialize_jp_buffer`: GRAPE-6's DMA buffer; a no-op here.
#[unsafe(no_mangle)]
pub extern "C" fn g6_initialize_jp_buffer(_clusterid: c_int, _buf_size: c_int) -> c_int {
    call("g6_initialize_jp_buffer", open_noop)
}

/// `g6_flush_jp_buffer`: a no-op here (j-particles are stored at once).
#[unsafe(no_mangle)]
pub extern "C" fn g6_flush_jp_buffer(_clusterid: c_int) -> c_int {
    call("g6_flush_jp_buffer", open_noop)
}

/// `g6_reset`: a hardware reset on GRAPE-6; a no-op here.
#[unsafe(no_mangle)]
pub extern "C" fn g6_reset(_clusterid: c_int) -> c_int {
    call("g6_reset", open_noop)
}

/// `g6_reset_fofpga`: a hardware reset on GRAPE-6; a no-op here.
#[unsafe(no_mangle)]
pub extern "C" fn g6_reset_fofpga(_clusterid: c_int) -> c_int {
    call("g6_reset_fofpga", open_noop)
}

/// `g6_read_neighbour_list`: finds the last calculation's neighbour lists;
/// 1 if one overflowed `GRAPE6_NB_MAX`.
#[unsafe(no_mangle)]
pub extern "C" fn g6_read_neighbour_list(_clusterid: c_int) -> c_int {
    call("g6_read_neighbour_list", read_neighbour_list)
}

/// `g6_get_neighbour_list`: i-particle `ipipe`'s neighbours, sorted; 1 if
/// they did not all fit (`*n_neighbours` is the full count).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_get_neighbour_list(
    _clusterid: c_int,
    ipipe: c_int,
    maxlength: c_int,
    n_neighbours: *mut c_int,
    neighbour_list: *mut c_int,
) -> c_int {
    // SAFETY: the caller's contract (grape6.h); the scalars are locals.
    call("g6_get_neighbour_list", || unsafe {
        get_neighbour_list(&ipipe, &maxlength, n_neighbours, neighbour_list)
    })
}

/// The message of this thread's last call (empty if it succeeded); valid
/// until this thread's next call into the library.
#[unsafe(no_mangle)]
pub extern "C" fn g6_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|e| e.try_borrow().map(|e| e.as_ptr()).ok())
        .ok()
        .flatten()
        .unwrap_or(c"".as_ptr())
}
