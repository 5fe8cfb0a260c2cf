//! The CPU backend's instruction sets: [`Isa`], run-time detection, and the
//! capability tokens that make SIMD code sound by construction.
//!
//! A token ([`HasAvx512`], [`HasAvx2Fma`], [`HasNeon`], [`Supported`]) is a
//! zero-sized proof that this CPU has an instruction set. Safe code gets one
//! only from run-time detection; the only other way is an `unsafe`
//! constructor, used inside `#[target_feature]` functions whose own contract
//! already requires the feature. The SIMD vector types (`super::simd`)
//! cannot be made without their token, so safe code cannot execute AVX-512
//! on a CPU without it.

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

    /// The best instruction set this CPU supports.
    pub fn detect() -> Isa {
        Isa::ALL
            .into_iter()
            .find(|isa| isa.is_available())
            .unwrap_or(Isa::Scalar)
    }

    /// The instruction sets this CPU supports, best first ([`Isa::Scalar`]
    /// always, last).
    pub fn available() -> Vec<Isa> {
        Isa::ALL
            .into_iter()
            .filter(|isa| isa.is_available())
            .collect()
    }

    /// Whether this CPU supports it (detected at run time).
    pub fn is_available(self) -> bool {
        self.supported().is_some()
    }

    /// The proof that this CPU supports it, if it does.
    pub(crate) fn supported(self) -> Option<Supported> {
        let yes = match self {
            Isa::Scalar => true,
            Isa::Avx512 => HasAvx512::detect().is_some(),
            Isa::Avx2Fma => HasAvx2Fma::detect().is_some(),
            Isa::Neon => HasNeon::detect().is_some(),
        };
        yes.then_some(Supported(self))
    }

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
    type Err = crate::Error;

    /// [`Isa::from_name`], with an error listing the names.
    fn from_str(name: &str) -> crate::Result<Isa> {
        Isa::from_name(name).ok_or_else(|| {
            crate::Error::Unsupported(format!(
                "unknown instruction set {name:?}: {}",
                Isa::ALL.map(Isa::name).join(", ")
            ))
        })
    }
}

/// Proof that this CPU supports an [`Isa`]: made only by [`Isa::supported`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Supported(Isa);

impl Supported {
    /// The instruction set proven present.
    pub fn isa(self) -> Isa {
        self.0
    }
}

/// A capability token that can be minted where the feature is known present.
pub(crate) trait Capability: Copy {
    /// The token without detection.
    ///
    /// # Safety
    /// The CPU has the token's instruction set.
    unsafe fn assume() -> Self;
}

/// The scalar fallback needs no capability.
impl Capability for () {
    unsafe fn assume() {}
}

macro_rules! capability {
    ($(#[$doc:meta])* $name:ident, $what:literal, $detect:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name(());

        impl $name {
            /// The token, if this CPU has
            #[doc = $what]
            /// (detected at run time).
            #[inline]
            pub fn detect() -> Option<$name> {
                let present: bool = $detect;
                present.then_some($name(()))
            }

        }

        impl Capability for $name {
            /// The token without detection, for code inside a
            /// `#[target_feature]` function whose contract requires the feature.
            #[inline(always)]
            unsafe fn assume() -> $name {
                $name(())
            }
        }
    };
}

capability!(
    /// Proof that the CPU has AVX-512F.
    HasAvx512,
    "AVX-512F",
    {
        #[cfg(target_arch = "x86_64")]
        let present = std::arch::is_x86_feature_detected!("avx512f");
        #[cfg(not(target_arch = "x86_64"))]
        let present = false;
        present
    }
);

capability!(
    /// Proof that the CPU has AVX2 and FMA.
    HasAvx2Fma,
    "AVX2 and FMA",
    {
        #[cfg(target_arch = "x86_64")]
        let present = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma");
        #[cfg(not(target_arch = "x86_64"))]
        let present = false;
        present
    }
);

capability!(
    /// Proof that the CPU has NEON (always, on aarch64).
    HasNeon,
    "NEON",
    cfg!(target_arch = "aarch64")
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_codes_and_tokens_agree() {
        for isa in Isa::ALL {
            assert_eq!(Isa::from_name(isa.name()), Some(isa));
            assert_eq!(isa.name().parse::<Isa>().unwrap(), isa);
            assert_eq!(Isa::from_code(isa.code()), Some(isa));
            assert_eq!(
                isa.supported().map(Supported::isa),
                isa.is_available().then_some(isa)
            );
        }
        assert_eq!(Isa::from_name("avx2"), Some(Isa::Avx2Fma));
        let e = "sse9".parse::<Isa>().unwrap_err().to_string();
        assert!(
            e.contains("sse9") && e.contains("avx512, avx2+fma, neon, scalar"),
            "{e}"
        );
        assert!(Isa::Scalar.is_available());
        assert_eq!(Isa::detect(), Isa::available()[0]);
    }
}
