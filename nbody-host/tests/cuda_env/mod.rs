//! Tests that need their own software CUDA device configuration: the
//! driver (`softcuda-driver`) reads its `SOFTCUDA_*` variables once per
//! process, at `cuInit`, so such a test runs itself again in a child process
//! with the variables set.

use std::process::Command;

/// Set in the child to the name of the test it runs.
const CHILD: &str = "NBODY_TEST_CHILD";

/// Whether this process is the child that runs test `name` (its full path in
/// the test binary, e.g. `cuda::name`) with `vars` set: then the caller runs
/// the test's body. In the parent, runs the child, fails unless it ran and
/// passed exactly that test, and returns `false`.
pub fn in_child(name: &str, vars: &[(&str, &str)]) -> bool {
    if std::env::var(CHILD).as_deref() == Ok(name) {
        for (k, v) in vars {
            assert_eq!(std::env::var(k).as_deref(), Ok(*v), "{k} in the child");
        }
        return true;
    }
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .envs(vars.iter().copied())
        .output()
        .expect("running the test binary again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("test result: ok. 1 passed"),
        "{name} with {vars:?} in a child process failed:\n{text}"
    );
    false
}

/// Held shared by the tests of this process that use the device, and
/// exclusively by [`in_child_alone`] while its child measures the device's
/// free memory: on a GPU `cuMemGetInfo` counts every process's allocations
/// (a context alone holds about 500 MB), so a context made by a test here
/// while the child measures read as a leak (seen on an H200, 2026-11-26).
static DEVICE: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A shared hold on the device for a test that allocates on it (see
/// [`in_child_alone`]).
#[allow(
    dead_code,
    reason = "only the test binaries with a device-memory measurement use it"
)]
pub fn shared_device() -> std::sync::RwLockReadGuard<'static, ()> {
    DEVICE
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// [`in_child`], with no other test of this process using the device while
/// the child runs: for tests that measure the device's free memory.
#[allow(
    dead_code,
    reason = "only the test binaries with a device-memory measurement use it"
)]
pub fn in_child_alone(name: &str, vars: &[(&str, &str)]) -> bool {
    if std::env::var(CHILD).as_deref() == Ok(name) {
        return in_child(name, vars);
    }
    let _alone = DEVICE
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    in_child(name, vars)
}
