//! Host memory: what `N` bodies need and what this process can still get,
//! compared before anything is allocated, so that a too-large `N` is an
//! [`Error::HostMemoryExceeded`] naming the bytes instead of an allocation
//! abort (issue 14, defect 4).

use gpu_kernels::shape::MAX_BODIES;

use crate::error::{Error, Result};

/// Bytes of one body in [`Bodies`](crate::Bodies): position, velocity, mass.
pub(crate) const BODY_BYTES: u64 = 28;

/// Host bytes per body of a running simulation beyond the builder's
/// bodies: the CPU engine's positions, velocities and accelerations (16
/// bytes each), its structure of arrays (16) and acceleration lanes (12),
/// and the host mirror of the state (28); the emulator's and the CUDA
/// engine's host copies are smaller. An upper estimate, rounded up.
pub(crate) const ENGINE_BYTES_PER_BODY: u64 = 112;

/// Checks `n` against `1..=`[`MAX_BODIES`] ([`Error::NoBodies`],
/// [`Error::TooManyBodies`]), then `n * bytes_per_body` against the memory
/// available ([`Error::HostMemoryExceeded`], naming `what` needs it).
pub(crate) fn check(n: usize, bytes_per_body: u64, what: &'static str) -> Result<()> {
    if n == 0 {
        return Err(Error::NoBodies);
    }
    if n > MAX_BODIES as usize {
        return Err(Error::TooManyBodies {
            n,
            max: MAX_BODIES as usize,
        });
    }
    let needed = (n as u64).saturating_mul(bytes_per_body);
    match available_bytes() {
        Some(available) if needed > available => Err(Error::HostMemoryExceeded {
            n,
            what,
            needed,
            available,
        }),
        _ => Ok(()),
    }
}

/// What this process can still allocate, where the system says: the
/// smaller of the memory the kernel reports available (RAM plus free swap)
/// and the room left under the address-space limit (`ulimit -v`). `None`
/// where that is unknown (not Linux, or `/proc` unreadable): then nothing
/// is refused in advance.
pub(crate) fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let limits = std::fs::read_to_string("/proc/self/limits").ok();
    let status = std::fs::read_to_string("/proc/self/status").ok();
    available_from(meminfo.as_deref(), limits.as_deref(), status.as_deref())
}

/// [`available_bytes`] from the texts of `/proc/meminfo`,
/// `/proc/self/limits` and `/proc/self/status`.
fn available_from(
    meminfo: Option<&str>,
    limits: Option<&str>,
    status: Option<&str>,
) -> Option<u64> {
    let kib = |text: &str, key: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        let value = line[key.len()..].trim().strip_suffix("kB")?.trim();
        value.parse::<u64>().ok().map(|k| k * 1024)
    };
    let ram =
        meminfo.and_then(|m| Some(kib(m, "MemAvailable:")? + kib(m, "SwapFree:").unwrap_or(0)));
    // "Max address space   <soft>   <hard>   bytes"; the soft limit applies.
    let address_space = limits.and_then(|l| {
        let line = l.lines().find(|l| l.starts_with("Max address space"))?;
        let soft = line["Max address space".len()..]
            .split_whitespace()
            .next()?;
        let limit = soft.parse::<u64>().ok()?; // "unlimited": no limit
        let used = status.and_then(|s| kib(s, "VmSize:")).unwrap_or(0);
        Some(limit.saturating_sub(used))
    });
    match (ram, address_space) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "MemTotal:       16000000 kB\nMemFree:   100 kB\nMemAvailable:    8000000 kB\nSwapTotal: 0 kB\nSwapFree:        1000000 kB\n";

    #[test]
    fn the_smaller_of_memory_and_address_space_limit() {
        let limits = |soft: &str| {
            format!(
                "Limit                     Soft Limit           Hard Limit           Units\n\
                 Max stack size            8388608              unlimited            bytes\n\
                 Max address space         {soft:<20} unlimited            bytes\n"
            )
        };
        let status = "Name:\tx\nVmPeak:\t  9999 kB\nVmSize:\t  100000 kB\n";
        assert_eq!(
            available_from(Some(MEMINFO), Some(&limits("unlimited")), Some(status)),
            Some(9_000_000 * 1024)
        );
        // ulimit -v 3000000 (KiB): 3072000000 bytes less the 100000 KiB in use.
        assert_eq!(
            available_from(Some(MEMINFO), Some(&limits("3072000000")), Some(status)),
            Some(3_072_000_000 - 100_000 * 1024)
        );
        assert_eq!(available_from(None, None, None), None);
        assert_eq!(
            available_from(None, Some(&limits("1000")), None),
            Some(1000)
        );
    }

    #[test]
    fn check_names_n_and_the_bytes() {
        assert!(matches!(check(0, 1, "x"), Err(Error::NoBodies)));
        let e = check(MAX_BODIES as usize + 1, 1, "x").unwrap_err();
        assert!(matches!(e, Error::TooManyBodies { .. }), "{e}");
        let e = check(usize::MAX, 1, "x").unwrap_err();
        assert!(e.to_string().contains(&usize::MAX.to_string()), "{e}");
        check(1, 1, "x").unwrap();
        // 2^30 bodies of 2^30 bytes each: more than any machine has.
        let big = check(MAX_BODIES as usize, 1 << 30, "the test");
        if available_bytes().is_none() {
            assert!(
                big.is_ok(),
                "nothing is refused where the memory is unknown"
            );
        } else {
            let e = big.unwrap_err();
            assert!(
                matches!(e, Error::HostMemoryExceeded { needed, .. } if needed == (MAX_BODIES as u64) << 30),
                "{e}"
            );
            assert!(e.to_string().contains("the test"), "{e}");
        }
    }
}
