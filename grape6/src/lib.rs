//! `libgrape6`: the GRAPE-6 / Sapporo2 API that 4th-order Hermite codes
//! (AMUSE's ph4, phiGRAPE, NBODY4-style codes) link against, over
//! nbody-host's Hermite force and jerk loops, f64 or mixed precision: the
//! CPU's ([`nbody_host::hermite::ForceJerk`]) or, with `GRAPE6_BACKEND=cuda`
//! and the `cuda` feature, the GPU kernels
//! ([`Backend::hermite_forces`](nbody_host::Backend::hermite_forces)).
//!
//! The C and Fortran entry points are in [`ffi`] and declared, with their
//! contracts, in `grape6/include/grape6.h`; [`Library`] is the same state as
//! safe Rust. Semantics follow Sapporo2 (`lib/interfaces/sapporoG6lib.cpp`):
//!
//! - `g6_set_j_particle(address, index, tj, dtj, mass, k18, j6, a2, v, x)`
//!   stores a j-particle with GRAPE-6's scaled derivatives `a2 = a / 2`,
//!   `j6 = jerk / 6` (`k18` and `dtj` are not used by a 4th-order predictor);
//! - `g6calc_firsthalf` predicts j-addresses `0..nj` to `ti`
//!   (`x + dt (v + dt (a2 + dt j6))`, `v + dt (2 a2 + 3 dt j6)`) and begins the
//!   i-particles' calculation; `g6calc_lasthalf` returns acceleration, jerk
//!   and potential without `G` (`acc = sum m r / d^3`, `pot = -sum m / d`,
//!   `d^2 = r^2 + eps2`), skipping every j-particle with the i-particle's
//!   *index*; `g6calc_lasthalf2` adds the index of the nearest j-particle
//!   (unsoftened distance);
//! - neighbour lists hold the indices of the j-particles with `r^2 < h2[i]`
//!   (unsoftened), sorted.
//!
//! Extensions: every call checks its input and returns a negative `G6_ERR_*`
//! code with a message ([`g6_last_error`](ffi::g6_last_error)) where GRAPE-6
//! would have crashed or computed garbage ([`error`]); settings come from
//! `GRAPE6_*` environment variables ([`config`]).
//!
//! On a GPU the j-particles are still predicted on the host and sent with
//! each calculation (the device keeps no j-memory of its own yet), and the
//! neighbour searches run on the host. Not yet: 6th-order (`k18`, snap)
//! and per-particle softening (Sapporo2's other interfaces).

pub mod config;
pub mod error;
pub mod ffi;
mod jmem;
mod library;

pub use config::Config;
pub use error::{G6Error, Result};
pub use ffi::{open_with, with_library};
pub use jmem::JParticle;
pub use library::{IBlock, Library, ListInfo, Results};
