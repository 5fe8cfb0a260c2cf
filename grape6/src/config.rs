//! What `g6_open` reads from the environment: the pipe count, the size of
//! the j-memory and of each neighbour list, the force precision and where
//! the forces run.
//!
//! | variable | meaning | default |
//! | --- | --- | --- |
//! | `GRAPE6_NPIPES` | i-particles per `g6calc_firsthalf` (what `g6_npipes` returns), 1 to 1048576 | 16384 (Sapporo2's) |
//! | `GRAPE6_JMEM` | j-particle addresses, 1 to 2^28 (storage grows with the highest address set) | 4194304 |
//! | `GRAPE6_NB_MAX` | neighbours kept per i-particle, 1 to 2^20 (more: overflow, `G6_OVERFLOW`) | 256 (Sapporo2's) |
//! | `GRAPE6_PRECISION` | `f64` or `mixed` (nbody-host's two Hermite force loops) | `f64` |
//! | `GRAPE6_BACKEND` | `cpu`, `cuda` (device 0), `cuda:N`, or `emulator` (nbody-host's CPU emulator of the GPU kernels: slow, for tests) | `cpu` |
//! | `GRAPE6_BLOCK` | threads per block of the GPU force kernel, a power of two from 32 to 1024 | 128 |
//! | `GRAPE6_QUIET` | set and not `0`: error messages are stored, not printed to stderr | unset |
//!
//! Threads: on the CPU the force loops run on rayon's global pool
//! (`RAYON_NUM_THREADS`); results are bit-identical on any thread count.
//! `cuda` needs a libgrape6 built with the `cuda` feature (`cargo build
//! --release -p grape6 --features cuda`) and NVIDIA's driver.

use nbody_host::{Backend, Precision};

use crate::error::{G6_ERR_CONFIG, G6Error, Result};

/// The library's settings, fixed at `g6_open`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// i-particles per calculation: what `g6_npipes` returns.
    pub npipes: usize,
    /// j-particle addresses the library accepts (`0..jmem`).
    pub jmem: usize,
    /// Neighbours kept per i-particle.
    pub nb_max: usize,
    /// The force loops' precision.
    pub precision: Precision,
    /// Where the forces run (never `Backend::Auto`).
    pub backend: Backend,
    /// Threads per block of the GPU force kernel.
    pub block: u32,
}

impl Default for Config {
    /// Sapporo2's pipes (16384) and neighbour lists (256), 4M addresses, f64.
    fn default() -> Self {
        Config {
            npipes: 16384,
            jmem: 1 << 22,
            nb_max: 256,
            precision: Precision::F64,
            backend: Backend::cpu(),
            block: 128,
        }
    }
}

/// The largest `GRAPE6_NPIPES`.
pub const MAX_NPIPES: usize = 1 << 20;
/// The largest `GRAPE6_JMEM`: addresses must fit a C `int`, and 2^28 bodies'
/// state is 30 GB.
pub const MAX_JMEM: usize = 1 << 28;
/// The largest `GRAPE6_NB_MAX`.
pub const MAX_NB: usize = 1 << 20;

impl Config {
    /// From the `GRAPE6_*` environment variables (module documentation).
    pub fn from_env() -> Result<Config> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// From variables looked up by `get` (the environment in
    /// [`from_env`](Self::from_env)); an error names the variable and value.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config> {
        let d = Config::default();
        let count = |name: &str, default: usize, max: usize| -> Result<usize> {
            match get(name) {
                None => Ok(default),
                Some(v) => match v.trim().parse::<usize>() {
                    Ok(n) if (1..=max).contains(&n) => Ok(n),
                    _ => Err(G6Error::new(
                        G6_ERR_CONFIG,
                        format!("{name}={v:?}: must be a whole number from 1 to {max}"),
                    )),
                },
            }
        };
        let precision = match get("GRAPE6_PRECISION") {
            None => d.precision,
            Some(v) => Precision::from_name(v.trim()).ok_or_else(|| {
                G6Error::new(
                    G6_ERR_CONFIG,
                    format!("GRAPE6_PRECISION={v:?}: must be f64 or mixed"),
                )
            })?,
        };
        let backend = match get("GRAPE6_BACKEND") {
            None => d.backend,
            Some(v) => parse_backend(v.trim()).ok_or_else(|| {
                G6Error::new(
                    G6_ERR_CONFIG,
                    format!("GRAPE6_BACKEND={v:?}: must be cpu, cuda, cuda:N or emulator"),
                )
            })?,
        };
        let block = match get("GRAPE6_BLOCK") {
            None => d.block,
            Some(v) => match v.trim().parse::<u32>() {
                Ok(b) if b.is_power_of_two() && (32..=1024).contains(&b) => b,
                _ => {
                    return Err(G6Error::new(
                        G6_ERR_CONFIG,
                        format!("GRAPE6_BLOCK={v:?}: must be a power of two from 32 to 1024"),
                    ));
                }
            },
        };
        Ok(Config {
            npipes: count("GRAPE6_NPIPES", d.npipes, MAX_NPIPES)?,
            jmem: count("GRAPE6_JMEM", d.jmem, MAX_JMEM)?,
            nb_max: count("GRAPE6_NB_MAX", d.nb_max, MAX_NB)?,
            precision,
            backend,
            block,
        })
    }
}

/// `cpu`, `cuda`, `cuda:N` or `emulator`.
fn parse_backend(v: &str) -> Option<Backend> {
    match v {
        "cpu" => Some(Backend::cpu()),
        "cuda" => Some(Backend::Cuda { device: 0 }),
        "emulator" => Some(Backend::emulator()),
        _ => v
            .strip_prefix("cuda:")
            .and_then(|d| d.parse().ok())
            .map(|device| Backend::Cuda { device }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<Config> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(with(&[]).unwrap(), Config::default());
        let c = with(&[
            ("GRAPE6_NPIPES", "48"),
            ("GRAPE6_JMEM", "1000"),
            ("GRAPE6_NB_MAX", " 7 "),
            ("GRAPE6_PRECISION", "mixed"),
            ("GRAPE6_BACKEND", "cuda:1"),
            ("GRAPE6_BLOCK", "256"),
        ])
        .unwrap();
        assert_eq!((c.npipes, c.jmem, c.nb_max), (48, 1000, 7));
        assert_eq!(c.precision, Precision::Mixed);
        assert_eq!((c.backend, c.block), (Backend::Cuda { device: 1 }, 256));
        for (v, b) in [
            ("cpu", Backend::cpu()),
            ("cuda", Backend::Cuda { device: 0 }),
            (" emulator", Backend::emulator()),
        ] {
            assert_eq!(with(&[("GRAPE6_BACKEND", v)]).unwrap().backend, b);
        }
    }

    #[test]
    fn bad_values_name_the_variable_and_value() {
        for (k, v) in [
            ("GRAPE6_NPIPES", "0"),
            ("GRAPE6_NPIPES", "2000000"),
            ("GRAPE6_NPIPES", "many"),
            ("GRAPE6_JMEM", "-5"),
            ("GRAPE6_NB_MAX", ""),
            ("GRAPE6_PRECISION", "f32"),
            ("GRAPE6_BACKEND", "gpu"),
            ("GRAPE6_BACKEND", "cuda:x"),
            ("GRAPE6_BLOCK", "100"),
            ("GRAPE6_BLOCK", "2048"),
        ] {
            let e = with(&[(k, v)]).unwrap_err();
            assert_eq!(e.code, G6_ERR_CONFIG);
            assert!(
                e.message.contains(k) && e.message.contains(&format!("{v:?}")),
                "{e}"
            );
        }
    }
}
