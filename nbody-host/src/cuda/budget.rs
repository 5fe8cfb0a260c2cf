//! What a simulation needs from a device, computed before anything is
//! allocated or launched: pure functions, tested without a GPU.

use crate::plan::Plan;

/// Dynamic shared memory a kernel may use without opting in
/// (`cudaFuncAttributeMaxDynamicSharedMemorySize`): 48 KiB on every GPU.
pub const DEFAULT_DYNAMIC_SHARED_BYTES: u32 = 48 * 1024;

/// Whether a launch asking for `shared_bytes` must first raise the kernel's
/// `MaxDynamicSharedSizeBytes` attribute.
pub fn needs_shared_opt_in(shared_bytes: u32) -> bool {
    shared_bytes > DEFAULT_DYNAMIC_SHARED_BYTES
}

/// Device bytes of every buffer the engine allocates for `plan`: two
/// position buffers, velocities and accelerations (16 bytes per body each),
/// the energy partial sums (`f64`) and the two-word divergence flag.
pub fn device_bytes(plan: &Plan) -> u64 {
    let n = plan.n() as u64;
    4 * 16 * n + 8 * plan.energy_partials_len() as u64 + 8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Kernel, Params};
    use crate::force::ForceLaw;
    use crate::integrator::Integrator;

    #[test]
    fn opt_in_starts_past_48_kib() {
        assert!(!needs_shared_opt_in(0));
        assert!(!needs_shared_opt_in(48 * 1024));
        assert!(needs_shared_opt_in(48 * 1024 + 1));
        // The largest tile (1024 bodies x 16 bytes) fits without opting in;
        // the triangle kernel's 32 bytes per thread at its largest block does too.
        let largest = gpu_kernels::shape::TRIANGLE_MAX_BLOCK;
        let triangle = gpu_kernels::shape::triangle(5000, largest).unwrap();
        assert!(!needs_shared_opt_in(triangle.shared_bytes));
    }

    #[test]
    fn device_bytes_counts_every_buffer() {
        let params = Params::new(
            0.01,
            ForceLaw::gravity(1.0, 0.1).unwrap(),
            Kernel::Tiled { block: 256 },
            Integrator::SemiImplicitEuler,
        )
        .unwrap();
        let plan = Plan::new(1000, params).unwrap();
        let partials = plan.energy_partials_len() as u64;
        assert!(partials >= 2);
        assert_eq!(device_bytes(&plan), 4 * 16 * 1000 + 8 * partials + 8);
        // 2^30 bodies need 64 GiB of state: more than many GPUs have.
        let big = Plan::new(1 << 30, params).unwrap();
        assert!(device_bytes(&big) > 64 << 30);
    }
}
