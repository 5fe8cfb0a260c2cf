//! [`Isa`]: the name of an instruction set of the CPU backend, what a run
//! reports ([`BackendKind::Cpu`](crate::BackendKind::Cpu)) and a checkpoint
//! records. Only the names and codes live here, below the engines and the
//! file formats; detecting an instruction set and the capability tokens that
//! make SIMD code sound are the CPU backend's (`cpu/isa.rs`, which adds
//! [`Isa::detect`] and [`Isa::is_available`] to this type).

use crate::error::{Error, Result};

/// The instruction set of the CPU backend's force loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Isa {
    /// AVX-512F: 16 bodies per vector (x86-64).
    Avx512,
    /// AVX2 with FMA: 8 bodies per vector (x86-64).
    Avx2Fma,
    /// NEON (Advanced SIMD): 4 bodies per vector (aarch64, where it is part
    /// of the base architecture).
    Neon,
    /// Plain `f32`, one body at a time: every CPU.
    Scalar,
}

impl Isa {
    /// Every instruction set, best first.
    pub const ALL: [Isa; 4] = [Isa::Avx512, Isa::Avx2Fma, Isa::Neon, Isa::Scalar];

    /// `"avx512"`, `"avx2+fma"`, `"neon"` or `"scalar"` (what
    /// [`BackendKind::Cpu`](crate::BackendKind::Cpu) reports).
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2Fma => "avx2+fma",
            Isa::Neon => "neon",
            Isa::Scalar => "scalar",
        }
    }

    /// Parses a [`name`](Isa::name); `"avx2"` is accepted for [`Isa::Avx2Fma`].
    pub fn from_name(name: &str) -> Option<Isa> {
        match name {
            "avx2" => Some(Isa::Avx2Fma),
            _ => Isa::ALL.into_iter().find(|isa| isa.name() == name),
        }
    }

    /// Bodies per vector: 16, 8, 4 or 1.
    pub fn lanes(self) -> usize {
        match self {
            Isa::Avx512 => 16,
            Isa::Avx2Fma => 8,
            Isa::Neon => 4,
            Isa::Scalar => 1,
        }
    }

    /// A stable one-byte code, for files.
    pub(crate) fn code(self) -> u8 {
        match self {
            Isa::Avx512 => 0,
            Isa::Avx2Fma => 1,
            Isa::Neon => 2,
            Isa::Scalar => 3,
        }
    }

    /// The instruction set of a [`code`](Self::code).
    pub(crate) fn from_code(code: u8) -> Option<Isa> {
        Isa::ALL.into_iter().find(|isa| isa.code() == code)
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Isa {
    type Err = Error;

    /// [`Isa::from_name`], with an error listing the names.
    fn from_str(name: &str) -> Result<Isa> {
        Isa::from_name(name).ok_or_else(|| {
            Error::Unsupported(format!(
                "unknown instruction set {name:?}: {}",
                Isa::ALL.map(Isa::name).join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for isa in Isa::ALL {
            assert_eq!(Isa::from_name(isa.name()), Some(isa));
            assert_eq!(isa.name().parse::<Isa>().unwrap(), isa);
            assert_eq!(Isa::from_code(isa.code()), Some(isa));
        }
        assert_eq!(Isa::from_name("avx2"), Some(Isa::Avx2Fma));
        let e = "sse9".parse::<Isa>().unwrap_err().to_string();
        assert!(
            e.contains("sse9") && e.contains("avx512, avx2+fma, neon, scalar"),
            "{e}"
        );
    }
}
