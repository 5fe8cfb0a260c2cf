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
