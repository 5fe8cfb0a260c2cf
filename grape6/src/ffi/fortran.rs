//! The Fortran names (Sapporo2 exports these): every argument by reference,
//! as Fortran passes them (see [`super`] for the Safety contract).
#![allow(
    clippy::missing_safety_doc,
    reason = "every function implements a GRAPE-6 entry point; its contract is the Safety section of `ffi` and grape6.h"
)]
#![allow(
    clippy::too_many_arguments,
    reason = "the signatures are GRAPE-6's, fixed by the codes that call them"
)]

use std::ffi::{c_double, c_int};

use super::*;

/// `g6_open_`: [`g6_open`] by reference.
#[unsafe(no_mangle)]
pub extern "C" fn g6_open_(_clusterid: *const c_int) -> c_int {
    call("g6_open_", || open(Config::from_env()))
}

/// `g6_close_`: [`g6_close`] by reference.
#[unsafe(no_mangle)]
pub extern "C" fn g6_close_(_clusterid: *const c_int) -> c_int {
    call("g6_close_", close)
}

/// `g6_npipes_`: [`g6_npipes`].
#[unsafe(no_mangle)]
pub extern "C" fn g6_npipes_() -> c_int {
    call("g6_npipes_", npipes)
}

/// `g6_set_tunit_`: a no-op (the argument is not read).
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_tunit_(_newtunit: *const c_double) -> c_int {
    call("g6_set_tunit_", open_noop)
}

/// `g6_set_xunit_`: a no-op (the argument is not read).
#[unsafe(no_mangle)]
pub extern "C" fn g6_set_xunit_(_newxunit: *const c_double) -> c_int {
    call("g6_set_xunit_", open_noop)
}

/// `g6_set_ti_`: [`g6_set_ti`] by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_set_ti_(_clusterid: *const c_int, ti: *const c_double) -> c_int {
    call("g6_set_ti_", || {
        with_lib(|lib| {
            // SAFETY: the caller's contract: ti is NULL or points to a double.
            let ti = unsafe { value(ti, "ti")? };
            lib.set_ti(ti).map(|()| G6_OK)
        })
    })
}

/// `g6_set_j_particle_`: [`g6_set_j_particle`] by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_set_j_particle_(
    _clusterid: *const c_int,
    address: *const c_int,
    index: *const c_int,
    tj: *const c_double,
    _dtj: *const c_double,
    mass: *const c_double,
    _k18: *const c_double,
    j6: *const c_double,
    a2: *const c_double,
    v: *const c_double,
    x: *const c_double,
) -> c_int {
    call("g6_set_j_particle_", || {
        if lock().is_none() {
            return Err(not_open());
        }
        // SAFETY: the caller's contract (grape6.h).
        unsafe {
            set_j_particle(
                value(address, "address")?,
                value(index, "index")?,
                value(tj, "tj")?,
                value(mass, "mass")?,
                j6,
                a2,
                v,
                x,
            )
        }
    })
}

/// `g6calc_firsthalf_`: [`g6calc_firsthalf`] by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_firsthalf_(
    _clusterid: *const c_int,
    nj: *const c_int,
    ni: *const c_int,
    index: *const c_int,
    xi: *const V3,
    vi: *const V3,
    _aold: *const V3,
    _j6old: *const V3,
    _phiold: *const c_double,
    eps2: *const c_double,
    h2: *const c_double,
) {
    let a = FirstHalf { index, xi, vi, h2 };
    // SAFETY: the caller's contract (grape6.h).
    call("g6calc_firsthalf_", || unsafe {
        firsthalf(nj, ni, eps2, a)
    });
}

/// `g6calc_lasthalf_`: [`g6calc_lasthalf`] by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_lasthalf_(
    _clusterid: *const c_int,
    nj: *const c_int,
    ni: *const c_int,
    _index: *const c_int,
    _xi: *const V3,
    _vi: *const V3,
    _eps2: *const c_double,
    _h2: *const c_double,
    acc: *mut V3,
    jerk: *mut V3,
    pot: *mut c_double,
) -> c_int {
    // SAFETY: the caller's contract (grape6.h).
    call("g6calc_lasthalf_", || unsafe {
        lasthalf(nj, ni, acc, jerk, pot, None)
    })
}

/// `g6calc_lasthalf2_`: [`g6calc_lasthalf2`] by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6calc_lasthalf2_(
    _clusterid: *const c_int,
    nj: *const c_int,
    ni: *const c_int,
    _index: *const c_int,
    _xi: *const V3,
    _vi: *const V3,
    _eps2: *const c_double,
    _h2: *const c_double,
    acc: *mut V3,
    jerk: *mut V3,
    pot: *mut c_double,
    nnbindex: *mut c_int,
) -> c_int {
    // SAFETY: the caller's contract (grape6.h).
    call("g6calc_lasthalf2_", || unsafe {
        lasthalf(nj, ni, acc, jerk, pot, Some(nnbindex))
    })
}

/// `g6_initialize_jp_buffer_`: a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn g6_initialize_jp_buffer_(
    _clusterid: *const c_int,
    _buf_size: *const c_int,
) -> c_int {
    call("g6_initialize_jp_buffer_", open_noop)
}

/// `g6_flush_jp_buffer_`: a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn g6_flush_jp_buffer_(_clusterid: *const c_int) -> c_int {
    call("g6_flush_jp_buffer_", open_noop)
}

/// `g6_reset_`: a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn g6_reset_(_clusterid: *const c_int) -> c_int {
    call("g6_reset_", open_noop)
}

/// `g6_reset_fofpga_`: a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn g6_reset_fofpga_(_clusterid: *const c_int) -> c_int {
    call("g6_reset_fofpga_", open_noop)
}

/// `g6_read_neighbour_list_`: [`g6_read_neighbour_list`].
#[unsafe(no_mangle)]
pub extern "C" fn g6_read_neighbour_list_(_clusterid: *const c_int) -> c_int {
    call("g6_read_neighbour_list_", read_neighbour_list)
}

/// `g6_get_neighbour_list_`: [`g6_get_neighbour_list`] by reference.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn g6_get_neighbour_list_(
    _clusterid: *const c_int,
    ipipe: *const c_int,
    maxlength: *const c_int,
    n_neighbours: *mut c_int,
    neighbour_list: *mut c_int,
) -> c_int {
    // SAFETY: the caller's contract (grape6.h).
    call("g6_get_neighbour_list_", || unsafe {
        get_neighbour_list(ipipe, maxlength, n_neighbours, neighbour_list)
    })
}
