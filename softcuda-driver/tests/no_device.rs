//! `SOFTCUDA_DEVICES=0`: cuInit fails as on a machine without a GPU, which
//! cust reports and nbody-host turns into `Error::CudaUnavailable`.

use softcuda_driver::api::*;
use softcuda_driver::errors::*;

/// Calls a driver function that takes pointers.
macro_rules! cu {
    ($e:expr) => {{
        // SAFETY: every pointer a test passes points to a live local or
        // buffer of the type and size the CUDA contract requires, for the
        // duration of the call (and the strings are NUL-terminated).
        #[allow(unused_unsafe, reason = "the macro also wraps safe calls")]
        unsafe {
            $e
        }
    }};
}

#[test]
fn zero_devices_is_no_device() {
    // SAFETY: the only test of this binary, run before anything reads the
    // environment from another thread.
    unsafe { std::env::set_var("SOFTCUDA_DEVICES", "0") };
    assert_eq!(cuInit(0), NO_DEVICE);
    let mut n = -1;
    assert_eq!(cu!(cuDeviceGetCount(&mut n)), SUCCESS);
    assert_eq!(n, 0);
    let mut d = 0;
    assert_eq!(cu!(cuDeviceGet(&mut d, 0)), INVALID_DEVICE);
}
