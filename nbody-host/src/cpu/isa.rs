//! The CPU backend's instruction sets at run time: detection, and the
//! capability tokens that make SIMD code sound by construction. The name
//! type [`Isa`] itself lives below the backends (`crate::isa`), so that what
//! reports or stores an instruction set imports no backend.
//!
//! A token ([`HasAvx512`], [`HasAvx2Fma`], [`HasNeon`], [`Supported`]) is a
//! zero-sized proof that this CPU has an instruction set. Safe code gets one
//! only from run-time detection; the only other way is an `unsafe`
//! constructor, used inside `#[target_feature]` functions whose own contract
//! already requires the feature. The SIMD vector types (`super::simd`)
//! cannot be made without their token, so safe code cannot execute AVX-512
//! on a CPU without it.

pub use crate::isa::Isa;

impl Isa {
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
    fn detection_and_tokens_agree() {
        for isa in Isa::ALL {
            assert_eq!(
                isa.supported().map(Supported::isa),
                isa.is_available().then_some(isa)
            );
        }
        assert!(Isa::Scalar.is_available());
        assert_eq!(Isa::detect(), Isa::available()[0]);
    }
}
