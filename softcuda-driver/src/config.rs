//! The device the driver pretends to be, from `SOFTCUDA_*` environment
//! variables read once at `cuInit` (see the crate documentation).

use softcuda::{Arch, RaceCheck, Schedule, arch, mufu};

/// When queued work runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ordering {
    /// The most hostile order CUDA allows: queued work runs only when
    /// something forces it (see [`crate::state`]).
    Hostile,
    /// Everything runs at once, in call order (a well-behaved, fully
    /// synchronous device, to compare against).
    Eager,
}

/// Where log lines go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogTarget {
    /// Only errors and notices, to stderr (the default).
    Notices,
    /// Every call, to stderr.
    Stderr,
    /// Every call, appended to a file.
    File(String),
    /// Nothing.
    Off,
}

/// The driver's configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `SOFTCUDA_ARCH`: the modelled device (default sm_90).
    pub arch: Arch,
    /// `SOFTCUDA_SCHEDULE` and `SOFTCUDA_SEED`.
    pub schedule: Schedule,
    /// `SOFTCUDA_MEMORY_BYTES` (default: the modelled card's memory).
    pub memory_bytes: u64,
    /// `SOFTCUDA_SHARED_BYTES`: shared memory a block may use with the
    /// opt-in (default: the architecture's).
    pub shared_optin: u32,
    /// `SOFTCUDA_SHARED_DEFAULT_BYTES`: dynamic shared memory a function may
    /// use before it opts in with `cuFuncSetAttribute` (48 KiB on every real
    /// GPU; lowering it makes today's small launches exercise a program's
    /// opt-in path).
    pub shared_default: u32,
    /// `SOFTCUDA_DEVICES`: 0 or 1 (default 1).
    pub devices: u32,
    /// `SOFTCUDA_LOG`.
    pub log: LogTarget,
    /// `SOFTCUDA_STATS`: a file for per-launch JSON lines.
    pub stats: Option<String>,
    /// `SOFTCUDA_RACES`: off, shared or all (default all).
    pub races: RaceCheck,
    /// `SOFTCUDA_ORDERING`: hostile (default) or eager.
    pub ordering: Ordering,
    /// `SOFTCUDA_MAX_INSTRUCTIONS`: warp-instructions per launch before it
    /// fails with CUDA_ERROR_LAUNCH_TIMEOUT (default 2^40).
    pub max_instructions: u64,
    /// `SOFTCUDA_STREAMS=non-blocking`: every created stream behaves as
    /// `CU_STREAM_NON_BLOCKING`, whatever its flags. Not CUDA's semantics: a
    /// stress mode, because cust 0.3.2's `Stream::new` silently drops
    /// `StreamFlags::NON_BLOCKING` (Rust-GPU/Rust-CUDA#15), so a program that
    /// asks for a non-blocking stream gets a blocking one; this shows what
    /// it would do with the stream it asked for.
    pub force_non_blocking: bool,
    /// `SOFTCUDA_CAPTURE_HOLD_MS`: `cuStreamEndCapture` first waits, the
    /// driver unlocked, until another thread has made a legacy-stream call
    /// in the capture's context since the capture began, or this many
    /// milliseconds (0, the default: no wait). A test knob that makes
    /// another thread's call land inside a capture deterministically.
    pub capture_hold_ms: u64,
    /// `SOFTCUDA_REGISTERS`: registers per thread the "JIT" gives entry
    /// points, overriding the default (the H200's measured count for code it
    /// was measured on, an estimate otherwise: `softcuda::regalloc`),
    /// reported as `CU_FUNC_ATTRIBUTE_NUM_REGS` and limiting
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
    pub registers: Registers,
    /// `SOFTCUDA_MUFU`: `sm90` (default: the H200's bits for the captured
    /// approximate instructions, the others refused at load) or `ieee`
    /// (every approximate instruction correctly rounded).
    pub mufu: mufu::Model,
}

/// Registers per thread of entry points set by `SOFTCUDA_REGISTERS`: `N`
/// for every entry, or `entry=N,entry=N,...` (the others keep the JIT
/// model's count), or both (`40,nbody_tiled_euler=72`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Registers {
    /// Registers of entries not named; `None`: the JIT model's count.
    pub default: Option<u32>,
    /// `(entry, registers)` pairs.
    pub per_entry: Vec<(String, u32)>,
}

impl Registers {
    /// Registers per thread set for `entry`, if any (else the JIT model's
    /// count applies: `softcuda::decode::Kernel::registers`).
    pub fn of(&self, entry: &str) -> Option<u32> {
        self.per_entry
            .iter()
            .find(|(name, _)| name == entry)
            .map(|&(_, r)| r)
            .or(self.default)
    }

    /// Parses the variable's value; counts must be in 1..=255 (the ISA's
    /// limit per thread).
    pub fn parse(s: &str) -> Result<Registers, String> {
        let mut r = Registers::default();
        let count = |v: &str| -> Result<u32, String> {
            match v.trim().parse::<u32>() {
                Ok(n @ 1..=255) => Ok(n),
                _ => Err(format!(
                    "SOFTCUDA_REGISTERS={s}: {v:?} is not a register count in 1..=255"
                )),
            }
        };
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.split_once('=') {
                Some((name, v)) if !name.trim().is_empty() => {
                    r.per_entry.push((name.trim().to_owned(), count(v)?))
                }
                Some(_) => return Err(format!("SOFTCUDA_REGISTERS={s}: {item:?} names no entry")),
                None => r.default = Some(count(item)?),
            }
        }
        Ok(r)
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            arch: arch::SM90,
            schedule: Schedule::Deterministic,
            memory_bytes: arch::SM90.memory_bytes,
            shared_optin: arch::SM90.shared_optin,
            shared_default: arch::SM90.shared_default,
            devices: 1,
            log: LogTarget::Notices,
            stats: None,
            races: RaceCheck::All,
            ordering: Ordering::Hostile,
            max_instructions: 1 << 40,
            force_non_blocking: false,
            capture_hold_ms: 0,
            registers: Registers::default(),
            mufu: mufu::Model::Sm90,
        }
    }
}

/// Parses `123`, `64k`, `512M`, `16G` (binary multiples).
pub fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1u64 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(mult)
}

impl Config {
    /// Reads the configuration from `var` (the environment, or a test's map).
    /// Unknown values are errors, so a typo never silently picks a default.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
        let mut c = Config::default();
        if let Some(a) = var("SOFTCUDA_ARCH") {
            c.arch =
                Arch::by_name(&a).ok_or(format!("SOFTCUDA_ARCH={a}: use sm_70, sm_80 or sm_90"))?;
        }
        c.memory_bytes = c.arch.memory_bytes;
        c.shared_optin = c.arch.shared_optin;
        c.shared_default = c.arch.shared_default;
        let seed = match var("SOFTCUDA_SEED") {
            Some(s) => s
                .parse::<u64>()
                .map_err(|_| format!("SOFTCUDA_SEED={s}: not an unsigned integer"))?,
            None => 0,
        };
        if let Some(s) = var("SOFTCUDA_SCHEDULE") {
            c.schedule = match s.as_str() {
                "deterministic" => Schedule::Deterministic,
                "adversarial" => Schedule::Adversarial { seed },
                _ => {
                    return Err(format!(
                        "SOFTCUDA_SCHEDULE={s}: use deterministic or adversarial"
                    ));
                }
            };
        }
        if let Some(s) = var("SOFTCUDA_MEMORY_BYTES") {
            c.memory_bytes =
                parse_bytes(&s).ok_or(format!("SOFTCUDA_MEMORY_BYTES={s}: not a size"))?;
        }
        if let Some(s) = var("SOFTCUDA_SHARED_BYTES") {
            let v = parse_bytes(&s).ok_or(format!("SOFTCUDA_SHARED_BYTES={s}: not a size"))?;
            c.shared_optin =
                u32::try_from(v).map_err(|_| format!("SOFTCUDA_SHARED_BYTES={s}: too large"))?;
        }
        // A device whose opt-in maximum is below 48 KiB allows that much
        // without opting in; an explicit default above it is a mistake.
        c.shared_default = c.shared_default.min(c.shared_optin);
        if let Some(s) = var("SOFTCUDA_SHARED_DEFAULT_BYTES") {
            let v =
                parse_bytes(&s).ok_or(format!("SOFTCUDA_SHARED_DEFAULT_BYTES={s}: not a size"))?;
            c.shared_default = u32::try_from(v)
                .map_err(|_| format!("SOFTCUDA_SHARED_DEFAULT_BYTES={s}: too large"))?;
        }
        if c.shared_default > c.shared_optin {
            return Err(format!(
                "SOFTCUDA_SHARED_DEFAULT_BYTES={} is more than the opt-in maximum {} (SOFTCUDA_SHARED_BYTES)",
                c.shared_default, c.shared_optin
            ));
        }
        if let Some(s) = var("SOFTCUDA_DEVICES") {
            c.devices = match s.as_str() {
                "0" => 0,
                "1" => 1,
                _ => return Err(format!("SOFTCUDA_DEVICES={s}: use 0 or 1")),
            };
        }
        if let Some(s) = var("SOFTCUDA_LOG") {
            c.log = match s.as_str() {
                "" | "notices" => LogTarget::Notices,
                "stderr" => LogTarget::Stderr,
                "off" => LogTarget::Off,
                path => LogTarget::File(path.to_owned()),
            };
        }
        c.stats = var("SOFTCUDA_STATS").filter(|s| !s.is_empty());
        if let Some(s) = var("SOFTCUDA_RACES") {
            c.races = match s.as_str() {
                "off" => RaceCheck::Off,
                "shared" => RaceCheck::Shared,
                "all" => RaceCheck::All,
                _ => return Err(format!("SOFTCUDA_RACES={s}: use off, shared or all")),
            };
        }
        if let Some(s) = var("SOFTCUDA_ORDERING") {
            c.ordering = match s.as_str() {
                "hostile" => Ordering::Hostile,
                "eager" => Ordering::Eager,
                _ => return Err(format!("SOFTCUDA_ORDERING={s}: use hostile or eager")),
            };
        }
        if let Some(s) = var("SOFTCUDA_STREAMS") {
            c.force_non_blocking = match s.as_str() {
                "as-created" => false,
                "non-blocking" => true,
                _ => {
                    return Err(format!(
                        "SOFTCUDA_STREAMS={s}: use as-created or non-blocking"
                    ));
                }
            };
        }
        if let Some(s) = var("SOFTCUDA_CAPTURE_HOLD_MS") {
            c.capture_hold_ms = s.parse().map_err(|_| {
                format!("SOFTCUDA_CAPTURE_HOLD_MS={s}: a whole number of milliseconds")
            })?;
        }
        if let Some(s) = var("SOFTCUDA_REGISTERS") {
            c.registers = Registers::parse(&s)?;
        }
        if let Some(s) = var("SOFTCUDA_MUFU") {
            c.mufu = mufu::Model::by_name(&s).ok_or(format!(
                "SOFTCUDA_MUFU={s}: use sm90 (the H200's bits) or ieee (correctly rounded)"
            ))?;
        }
        if let Some(s) = var("SOFTCUDA_MAX_INSTRUCTIONS") {
            c.max_instructions = s
                .parse()
                .map_err(|_| format!("SOFTCUDA_MAX_INSTRUCTIONS={s}: not an unsigned integer"))?;
        }
        Ok(c)
    }

    /// The configuration of this process's environment.
    pub fn from_env() -> Result<Config, String> {
        Config::from_vars(|k| std::env::var(k).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_variable_and_rejects_typos() {
        let vars = [
            ("SOFTCUDA_ARCH", "sm_70"),
            ("SOFTCUDA_SCHEDULE", "adversarial"),
            ("SOFTCUDA_SEED", "7"),
            ("SOFTCUDA_MEMORY_BYTES", "64M"),
            ("SOFTCUDA_SHARED_BYTES", "16k"),
            ("SOFTCUDA_SHARED_DEFAULT_BYTES", "8k"),
            ("SOFTCUDA_DEVICES", "0"),
            ("SOFTCUDA_LOG", "/tmp/x.log"),
            ("SOFTCUDA_STATS", "/tmp/s.jsonl"),
            ("SOFTCUDA_RACES", "shared"),
            ("SOFTCUDA_ORDERING", "eager"),
            ("SOFTCUDA_STREAMS", "non-blocking"),
            ("SOFTCUDA_REGISTERS", "40, nbody_tiled_euler=72"),
            ("SOFTCUDA_MUFU", "ieee"),
        ];
        let get = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        let c = Config::from_vars(get).unwrap();
        assert_eq!(c.arch, arch::SM70);
        assert_eq!(c.schedule, Schedule::Adversarial { seed: 7 });
        assert_eq!(c.memory_bytes, 64 << 20);
        assert_eq!(c.shared_optin, 16 << 10);
        assert_eq!(c.shared_default, 8 << 10);
        assert_eq!(c.devices, 0);
        assert_eq!(c.log, LogTarget::File("/tmp/x.log".into()));
        assert_eq!(c.stats.as_deref(), Some("/tmp/s.jsonl"));
        assert_eq!(c.races, RaceCheck::Shared);
        assert_eq!(c.ordering, Ordering::Eager);
        assert!(c.force_non_blocking);
        assert_eq!(c.registers.of("nbody_tiled_euler"), Some(72));
        assert_eq!(c.registers.of("nbody_kick"), Some(40));
        assert_eq!(c.mufu, mufu::Model::CorrectlyRounded);
        let d = Config::from_vars(|_| None).unwrap();
        assert_eq!(d, Config::default());
        assert!(Config::from_vars(|k| (k == "SOFTCUDA_ARCH").then(|| "sm_75".into())).is_err());
        assert!(
            Config::from_vars(|k| (k == "SOFTCUDA_SCHEDULE").then(|| "random".into())).is_err()
        );
        assert!(Config::from_vars(|k| (k == "SOFTCUDA_DEVICES").then(|| "2".into())).is_err());
        assert!(Config::from_vars(|k| (k == "SOFTCUDA_MUFU").then(|| "exact".into())).is_err());
        for bad in ["0", "256", "x", "k=", "=40", "nbody_kick=300"] {
            assert!(
                Config::from_vars(|k| (k == "SOFTCUDA_REGISTERS").then(|| bad.into())).is_err(),
                "{bad}"
            );
        }
        // The default limit follows a lower opt-in maximum, and cannot be
        // set above it.
        let small = Config::from_vars(|k| (k == "SOFTCUDA_SHARED_BYTES").then(|| "16k".into()));
        assert_eq!(small.unwrap().shared_default, 16 << 10);
        let above = |k: &str| match k {
            "SOFTCUDA_SHARED_BYTES" => Some("16k".into()),
            "SOFTCUDA_SHARED_DEFAULT_BYTES" => Some("32k".into()),
            _ => None,
        };
        assert!(Config::from_vars(above).is_err());
        let only = Registers::parse("nbody_kick=64").unwrap();
        assert_eq!((only.of("nbody_kick"), only.of("x")), (Some(64), None));
    }
}
