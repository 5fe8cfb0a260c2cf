//! What `g6_open` reads from the environment: the pipe count, the size of
//! the j-memory and of each neighbour list, and the force precision.
//!
//! | variable | meaning | default |
//! | --- | --- | --- |
//! | `GRAPE6_NPIPES` | i-particles per `g6calc_firsthalf` (what `g6_npipes` returns), 1 to 1048576 | 16384 (Sapporo2's) |
//! | `GRAPE6_JMEM` | j-particle addresses, 1 to 2^28 (storage grows with the highest address set) | 4194304 |
//! | `GRAPE6_NB_MAX` | neighbours kept per i-particle, 1 to 2^20 (more: overflow, `G6_OVERFLOW`) | 256 (Sapporo2's) |
//! | `GRAPE6_PRECISION` | `f64` or `mixed` (nbody-host's two Hermite force loops) | `f64` |
//! | `GRAPE6_QUIET` | set and not `0`: error messages are stored, not printed to stderr | unset |
//!
//! Threads: the force loops run on rayon's global pool (`RAYON_NUM_THREADS`);
//! results are bit-identical on any thread count.

use nbody_host::Precision;

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
}

impl Default for Config {
    /// Sapporo2's pipes (16384) and neighbour lists (256), 4M addresses, f64.
    fn default() -> Self {
        Config {
            npipes: 16384,
            jmem: 1 << 22,
            nb_max: 256,
            precision: Precision::F64,
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
        Ok(Config {
            npipes: count("GRAPE6_NPIPES", d.npipes, MAX_NPIPES)?,
            jmem: count("GRAPE6_JMEM", d.jmem, MAX_JMEM)?,
            nb_max: count("GRAPE6_NB_MAX", d.nb_max, MAX_NB)?,
            precision,
        })
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
        ])
        .unwrap();
        assert_eq!((c.npipes, c.jmem, c.nb_max), (48, 1000, 7));
        assert_eq!(c.precision, Precision::Mixed);
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
