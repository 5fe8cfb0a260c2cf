//! What a simulation needs from a device, computed before anything is
//! allocated or launched: pure functions, tested without a GPU.

use crate::plan::Plan;

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
    fn largest_launches_fit_without_opting_in() {
        // The largest tile (1024 bodies x 16 bytes) and the triangle kernel's
        // 32 bytes per thread at its largest block stay below the 48 KiB a
        // function may use without raising its limit: the engine's opt-in
        // (`configure_functions`) is exercised on the software CUDA device
        // with a lower default (SOFTCUDA_SHARED_DEFAULT_BYTES).
        let largest = gpu_kernels::shape::TRIANGLE_MAX_BLOCK;
        let triangle = gpu_kernels::shape::triangle(5000, largest).unwrap();
        let tiled = gpu_kernels::shape::tiled(5000, 1024);
        assert_eq!((triangle.shared_bytes, tiled.shared_bytes), (16384, 16384));
        assert!(triangle.shared_bytes.max(tiled.shared_bytes) <= 48 * 1024);
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
        let plan = Plan::new(1000, params.clone()).unwrap();
        let partials = plan.energy_partials_len() as u64;
        assert!(partials >= 2);
        assert_eq!(device_bytes(&plan), 4 * 16 * 1000 + 8 * partials + 8);
        // 2^30 bodies need 64 GiB of state: more than many GPUs have.
        let big = Plan::new(1 << 30, params).unwrap();
        assert!(device_bytes(&big) > 64 << 30);
    }
}
