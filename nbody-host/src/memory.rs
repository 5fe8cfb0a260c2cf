//! Host memory: what `N` bodies need and what this process can still get,
//! compared before anything is allocated, so that a too-large `N` is an
//! [`Error::HostMemoryExceeded`] naming the bytes instead of an allocation
//! abort (issue 14, defect 4), with what a short-range engine's neighbour
//! lists need counted per force law and enumeration (issue 22, defect 2).

use gpu_kernels::shape::MAX_BODIES;

use crate::backend::Backend;
use crate::config::Params;
use crate::error::{Error, Result};
use crate::md::{Enumeration, Lists, Rebuild};
use crate::state::Bodies;

/// Bytes of one body in [`Bodies`](crate::Bodies): position, velocity, mass.
pub(crate) const BODY_BYTES: u64 = 28;

/// Host bytes per body of a running simulation beyond the builder's
/// bodies: the CPU engine's positions, velocities and accelerations (16
/// bytes each), its structure of arrays (16) and acceleration lanes (12),
/// and the host mirror of the state (28); the emulator's and the CUDA
/// engine's host copies are smaller. An upper estimate, rounded up.
pub(crate) const ENGINE_BYTES_PER_BODY: u64 = 112;

/// Host bytes per body of the Hermite integrator's engine (`crate::hermite`,
/// f64 throughout): its state (position, velocity, mass, acceleration,
/// jerk, snap, crackle, last step: 160), the copy each step call keeps to
/// restore on failure (160) and a read's copy (checkpoints: 160), the
/// predicted positions and velocities (48), the padded sources (56), a
/// block's ticks, steps and active list (32), its fields and sinks (120),
/// the builder's f64 start (64) and the f32 bodies with their mirror (56).
/// An upper estimate, rounded up.
pub(crate) const HERMITE_BYTES_PER_BODY: u64 = 896;

/// Host bytes per atom of the short-range CPU engine beyond its lists:
/// positions, velocities and accelerations (36), masses and their inverses
/// (8), atom types (4, and 4 each in the builder's and a read's copy),
/// image counters (12), the slot maps (8), the positions at the last build
/// (12), a build's sort keys, order and the one array it permutes at a
/// time (12), the builder's bodies while the engine starts (28), and a
/// read's host mirror with its columns (52).
const MD_STATE_BYTES: f64 = 180.0;

/// The widest vector of the CPU's list loops (AVX-512: 16 lanes), to which
/// every list is padded.
const MAX_LANES: f64 = 16.0;

/// Host bytes per body of a running simulation of `bodies` with `params`
/// on `backend`: [`ENGINE_BYTES_PER_BODY`] for gravity with a fixed step,
/// [`HERMITE_BYTES_PER_BODY`] with the Hermite integrator; for a pair
/// potential (any style and number of atom types: the longest cutoff over
/// the pairs of types counts), the engine's state and its neighbour lists, which dominate: per
/// atom the pairs within `r_c + skin` at the bodies' density (half of them
/// with half lists), padded to whole vectors, in a list that starts with
/// room for 96 entries (48 half) and doubles when it runs out; twice the
/// engine where automatic rebuilds make a read build a copy; on the
/// emulator, the GPU plan's buffers (positions with ghosts, velocities,
/// tags and their next copies, lists with a quarter's headroom) in host
/// memory. An upper estimate: what [`check`] compares with what is
/// available before anything large is allocated.
pub(crate) fn engine_bytes_per_body(bodies: &Bodies, params: &Params, backend: Backend) -> u64 {
    let Some(cutoff) = params.force().cutoff() else {
        return match params.integrator().hermite() {
            Some(_) => HERMITE_BYTES_PER_BODY,
            None => ENGINE_BYTES_PER_BODY,
        };
    };
    let n = bodies.len() as f64;
    let Enumeration::Cells {
        skin,
        rebuild,
        lists,
        ..
    } = params.enumeration()
    else {
        // All pairs: the state, positions padded to whole vectors.
        return MD_STATE_BYTES as u64 + 4 * MAX_LANES as u64;
    };
    let r = cutoff as f64 + skin as f64;
    let volume = params
        .boundary()
        .volume()
        .unwrap_or_else(|| bounding_volume(bodies));
    // Neighbours within r of an atom, at most the others.
    let within =
        (n / volume.max(f64::MIN_POSITIVE) * 4.0 / 3.0 * std::f64::consts::PI * r.powi(3)).min(n);
    let bytes = match backend {
        Backend::Emulator { .. } => {
            let lengths = params
                .boundary()
                .lengths_f32()
                .unwrap_or([f32::INFINITY; 3]);
            let ghosts = (lengths
                .iter()
                .map(|&l| 1.0 + 2.0 * (r / l as f64).min(0.5))
                .product::<f64>()
                - 1.0)
                .min(7.0);
            // Words: positions and their next copy with ghosts (8 (1 + g)),
            // atom types and their next copy with ghosts (2 (1 + g)),
            // velocities, tags, their next copies, reference, accelerations
            // (24), cell, slot, order, ghost offsets, counts (5), ghost
            // sources and shifts (5 g, with a quarter's headroom), lists.
            let words = 10.0 * (1.0 + ghosts) + 24.0 + 5.0 + 6.25 * ghosts + 1.25 * within + 64.0;
            // The upload's copies and a read's mirror.
            4.0 * words + 32.0 + 52.0
        }
        Backend::Cuda { .. } => ENGINE_BYTES_PER_BODY as f64,
        Backend::Cpu(_) | Backend::Auto => {
            let (entries, initial) = match lists {
                Lists::Half => (0.5 * within, 48.0),
                _ => (within, 96.0),
            };
            let padded = entries + MAX_LANES;
            // Room for `initial` entries first, doubled as it runs out.
            let list = if padded <= initial {
                initial
            } else {
                2.0 * padded
            };
            // Offsets, and with half lists the reaction buffers (two
            // windows of three floats per atom).
            let extra = 4.0 + if lists == Lists::Half { 24.0 } else { 0.0 };
            let engine = 4.0 * list + extra + MD_STATE_BYTES;
            match rebuild {
                Rebuild::Auto => 2.0 * engine,
                Rebuild::Every(_) => engine,
            }
        }
    };
    bytes.ceil() as u64
}

/// The volume of the bodies' bounding box (open space), at least 1.
fn bounding_volume(bodies: &Bodies) -> f64 {
    let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    for p in &bodies.positions {
        for a in 0..3 {
            lo[a] = lo[a].min(p[a] as f64);
            hi[a] = hi[a].max(p[a] as f64);
        }
    }
    (0..3).map(|a| (hi[a] - lo[a]).max(1.0)).product()
}

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
    fn short_range_engines_count_their_lists() {
        use crate::md::{CellList, Neighbours};
        use crate::{ForceLaw, Integrator, Kernel};
        let (atoms, boundary) = crate::ic::fcc_lattice(6, 0.8442, 1.44, 1).unwrap();
        let params = |cutoff: f64, rebuild: Rebuild| {
            let lj = ForceLaw::lennard_jones(1.0, 1.0, cutoff, false).unwrap();
            let cells = Neighbours::Cells(CellList {
                rebuild,
                ..CellList::new(0.3)
            });
            Params::new(0.005, lj, Kernel::default(), Integrator::Leapfrog)
                .unwrap()
                .with_boundary(boundary, cells)
                .unwrap()
        };
        let bytes = |p: Params, b: Backend| engine_bytes_per_body(&atoms, &p, b);
        // in.lj: 75 list entries an atom, in a list of 96 entries: 556 bytes.
        let inlj = bytes(params(2.5, Rebuild::Every(20)), Backend::cpu());
        assert_eq!(inlj, 4 * 96 + 4 + MD_STATE_BYTES as u64);
        // A longer cutoff: more entries than the first room, doubled.
        let long = bytes(params(3.5, Rebuild::Every(20)), Backend::cpu());
        let within = 0.8442 * 4.0 / 3.0 * std::f64::consts::PI * 3.8f64.powi(3);
        assert!(long as f64 >= 8.0 * within, "{long} for {within} entries");
        // Automatic rebuilds: a read's copy of the engine.
        assert_eq!(bytes(params(2.5, Rebuild::Auto), Backend::cpu()), 2 * inlj);
        let emulator = bytes(params(2.5, Rebuild::Every(20)), Backend::emulator());
        assert!(emulator > 4 * 75, "{emulator}");
        // Gravity: as before.
        let gravity = Params::default();
        assert_eq!(
            engine_bytes_per_body(&atoms, &gravity, Backend::cpu()),
            ENGINE_BYTES_PER_BODY
        );
        // Hermite: its f64 state and work space, several times a fixed step's.
        let hermite = Params::new(
            0.125,
            ForceLaw::default(),
            Kernel::default(),
            Integrator::Hermite(crate::HermiteSettings::default()),
        )
        .unwrap();
        assert_eq!(
            engine_bytes_per_body(&atoms, &hermite, Backend::cpu()),
            HERMITE_BYTES_PER_BODY
        );
        const { assert!(HERMITE_BYTES_PER_BODY >= 4 * ENGINE_BYTES_PER_BODY) };
    }

    #[test]
    fn pair_potentials_count_the_longest_cutoff_of_their_types() {
        use crate::md::{CellList, Neighbours};
        use crate::pair::{PairPotential, PairStyle};
        use crate::{ForceLaw, Integrator, Kernel};
        let (atoms, boundary) = crate::ic::fcc_lattice(6, 0.8442, 1.44, 1).unwrap();
        let params = |force: ForceLaw| {
            let cells = Neighbours::Cells(CellList {
                rebuild: Rebuild::Every(20),
                ..CellList::new(0.3)
            });
            Params::new(0.005, force, Kernel::default(), Integrator::Leapfrog)
                .unwrap()
                .with_boundary(boundary, cells)
                .unwrap()
        };
        let bytes = |f: ForceLaw| engine_bytes_per_body(&atoms, &params(f), Backend::cpu());
        let one = bytes(ForceLaw::lennard_jones(1.0, 1.0, 2.5, false).unwrap());
        // Two types: the 1-1 pair reaches 3.5 sigma, so every atom's list
        // is counted at 3.5 (an upper estimate for the 0-0 atoms).
        let mixture = PairPotential::builder(PairStyle::LennardJones, 2)
            .coeff(0, 0, &[1.0, 1.0], 2.5)
            .coeff(0, 1, &[1.0, 1.0], 2.5)
            .coeff(1, 1, &[1.0, 1.0], 3.5)
            .build()
            .unwrap();
        let typed = bytes(ForceLaw::Pair(mixture));
        let long = bytes(ForceLaw::lennard_jones(1.0, 1.0, 3.5, false).unwrap());
        assert_eq!(typed, long);
        assert!(typed > 2 * one, "{typed} vs {one}");
        // Another style: its own cutoff.
        let morse = ForceLaw::pair(PairStyle::Morse, &[1.0, 2.0, 1.1], 2.5, false).unwrap();
        assert_eq!(bytes(morse), one);
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
