//! The PTX entry points: stable names and parameter lists.
//!
//! Each `extern "ptx-kernel"` function (compiled for `nvptx64` only, next to
//! its generic body) is listed here with its parameters in order. The host
//! builds every launch from these descriptions, and a test in `nbody-host`
//! checks them against the committed PTX, so a kernel signature cannot drift
//! from what the host passes.

/// The PTX type of one kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// A device pointer (`.param .u64`).
    Ptr,
    /// A 32-bit unsigned integer (`.param .u32`).
    U32,
    /// A 32-bit float (`.param .f32`).
    F32,
}

/// A kernel entry point: its PTX name and parameter list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// The `#[no_mangle]` name in the PTX module.
    pub name: &'static str,
    /// Parameter names, for messages and docs.
    pub param_names: &'static [&'static str],
    /// Parameter types, in order.
    pub params: &'static [Param],
}

use Param::{F32, Ptr, U32};

/// [`simt::simt_euler`](crate::simt::simt_euler).
pub const SIMT_EULER: EntryPoint = EntryPoint {
    name: "nbody_simt_euler",
    param_names: &["pos_in", "pos_out", "vel", "n", "dt", "g", "eps2"],
    params: &[Ptr, Ptr, Ptr, U32, F32, F32, F32],
};
/// [`simt::simt_accel`](crate::simt::simt_accel).
pub const SIMT_ACCEL: EntryPoint = EntryPoint {
    name: "nbody_simt_accel",
    param_names: &["pos", "acc", "n", "g", "eps2"],
    params: &[Ptr, Ptr, U32, F32, F32],
};
/// [`tiled::tiled_euler`](crate::tiled::tiled_euler).
pub const TILED_EULER: EntryPoint = EntryPoint {
    name: "nbody_tiled_euler",
    param_names: &["pos_in", "pos_out", "vel", "n", "dt", "g", "eps2"],
    params: &[Ptr, Ptr, Ptr, U32, F32, F32, F32],
};
/// [`tiled::tiled_accel`](crate::tiled::tiled_accel).
pub const TILED_ACCEL: EntryPoint = EntryPoint {
    name: "nbody_tiled_accel",
    param_names: &["pos", "acc", "n", "g", "eps2"],
    params: &[Ptr, Ptr, U32, F32, F32],
};
/// [`triangle::triangle_accel`](crate::triangle::triangle_accel).
pub const TRIANGLE_ACCEL: EntryPoint = EntryPoint {
    name: "nbody_triangle_accel",
    param_names: &["pos", "acc", "n", "g", "eps2"],
    params: &[Ptr, Ptr, U32, F32, F32],
};
/// [`integrate::euler_from_accel`](crate::integrate::euler_from_accel).
pub const EULER_FROM_ACCEL: EntryPoint = EntryPoint {
    name: "nbody_euler_from_accel",
    param_names: &["pos_in", "pos_out", "vel", "acc", "n", "dt"],
    params: &[Ptr, Ptr, Ptr, Ptr, U32, F32],
};
/// [`integrate::kick`](crate::integrate::kick).
pub const KICK: EntryPoint = EntryPoint {
    name: "nbody_kick",
    param_names: &["vel", "acc", "n", "dt"],
    params: &[Ptr, Ptr, U32, F32],
};
/// [`integrate::drift`](crate::integrate::drift).
pub const DRIFT: EntryPoint = EntryPoint {
    name: "nbody_drift",
    param_names: &["pos_in", "pos_out", "vel", "n", "dt"],
    params: &[Ptr, Ptr, Ptr, U32, F32],
};
/// [`energy::energy_partials`](crate::energy::energy_partials).
pub const ENERGY: EntryPoint = EntryPoint {
    name: "nbody_energy",
    param_names: &["pos", "vel", "n", "eps2", "partials"],
    params: &[Ptr, Ptr, U32, F32, Ptr],
};

/// [`integrate::check_finite`](crate::integrate::check_finite).
pub const CHECK_FINITE: EntryPoint = EntryPoint {
    name: "nbody_check_finite",
    param_names: &["pos", "vel", "n", "step", "flag"],
    params: &[Ptr, Ptr, U32, U32, Ptr],
};

/// Every entry point of the PTX module.
pub const ALL: &[EntryPoint] = &[
    SIMT_EULER,
    SIMT_ACCEL,
    TILED_EULER,
    TILED_ACCEL,
    TRIANGLE_ACCEL,
    EULER_FROM_ACCEL,
    KICK,
    DRIFT,
    ENERGY,
    CHECK_FINITE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lists_consistent() {
        for (k, a) in ALL.iter().enumerate() {
            assert_eq!(a.params.len(), a.param_names.len(), "{}", a.name);
            assert!(a.name.starts_with("nbody_"));
            for b in &ALL[k + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
    }
}
