//! Force laws: what acts between two bodies, apart from how the pairs are
//! enumerated ([`Kernel`](crate::Kernel) on the GPU, the all-pairs or
//! Newton's-third-law loop on the CPU, [`Neighbours`](crate::Neighbours) for
//! short-range forces) and from the integrator.

use crate::error::{Error, Result};
use crate::pair::{PairPotential, PairStyle};

/// The pairwise force, with its parameters validated in `f32`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ForceLaw {
    /// Newtonian gravity with Plummer softening:
    /// `a_i = G sum_j m_j r_ij / (|r_ij|^2 + eps^2)^(3/2)`.
    Gravity(Gravity),
    /// A short-range pair potential with a cutoff per pair of atom types
    /// (Lennard-Jones, Morse, ...: [`PairStyle`]), optionally shifted to
    /// zero at the cutoff. Short-range molecular dynamics (see
    /// [`crate::md`]).
    Pair(PairPotential),
}

/// Softened gravity's parameters (see [`ForceLaw::Gravity`]).
///
/// Equal when their f32 values are: the f64 values as given matter only to
/// the Hermite integrator, whose checkpoints store them.
#[derive(Clone, Copy, Debug)]
pub struct Gravity {
    g: f32,
    softening: f32,
    /// `G` and `eps` as given, for the f64 integrator (`hermite`).
    g64: f64,
    softening64: f64,
}

impl Gravity {
    /// Validates `G` (finite, `> 0`) and the softening length `eps`
    /// (finite, `>= 0`, `eps^2` finite in `f32`), naming a bad value.
    pub fn new(g: f64, softening: f64) -> Result<Gravity> {
        let g32 = g as f32;
        if !(g.is_finite() && g > 0.0 && g32.is_finite() && g32 > 0.0) {
            return Err(Error::InvalidGravitationalConstant(g));
        }
        let eps32 = softening as f32;
        if !(softening.is_finite() && softening >= 0.0 && (eps32 * eps32).is_finite()) {
            return Err(Error::InvalidSoftening(softening));
        }
        Ok(Gravity {
            g: g32,
            softening: eps32,
            g64: g,
            softening64: softening,
        })
    }

    /// The gravitational constant `G`.
    pub fn g(&self) -> f32 {
        self.g
    }

    /// The Plummer softening length `eps`.
    pub fn softening(&self) -> f32 {
        self.softening
    }

    /// `G` as given (f64), what the Hermite integrator uses.
    pub fn g_f64(&self) -> f64 {
        self.g64
    }

    /// `eps` as given (f64), what the Hermite integrator uses.
    pub fn softening_f64(&self) -> f64 {
        self.softening64
    }

    /// `eps^2`, as the kernels take it.
    pub fn eps2(&self) -> f32 {
        self.softening * self.softening
    }

    /// Whether the force loops need the guarded interaction, for bodies whose
    /// heaviest mass is `max_mass`: always at `eps = 0` (the self pair and
    /// coincident bodies would give `0 * inf`); otherwise only if `m / d^3`
    /// could overflow `f32` at the softening length, which the unguarded
    /// forms would turn into NaN for massless (padding) bodies.
    pub(crate) fn needs_guard(&self, max_mass: f32) -> bool {
        let eps2 = self.eps2() as f64;
        if eps2 < f32::MIN_POSITIVE as f64 {
            return true;
        }
        // 1 / d^3 at d = eps, with room for the rsqrt's error and rounding.
        let inv3 = 1.01 * eps2.powf(-1.5);
        !(inv3 < f32::MAX as f64 && max_mass as f64 * inv3 < f32::MAX as f64)
    }
}

impl PartialEq for Gravity {
    fn eq(&self, other: &Self) -> bool {
        (self.g, self.softening) == (other.g, other.softening)
    }
}

impl Default for Gravity {
    /// `G = 1`, softening `0.1` (NVIDIA Warp's N-body example).
    fn default() -> Self {
        Gravity {
            g: 1.0,
            softening: 0.1,
            g64: 1.0,
            softening64: 0.1,
        }
    }
}

impl ForceLaw {
    /// Softened gravity, validated ([`Gravity::new`]).
    pub fn gravity(g: f64, softening: f64) -> Result<ForceLaw> {
        Gravity::new(g, softening).map(ForceLaw::Gravity)
    }

    /// The Lennard-Jones 12-6 potential of one atom type,
    /// `u(r) = 4 eps ((sigma/r)^12 - (sigma/r)^6)` for `r < r_c` (minus
    /// `u(r_c)` if `shift`), validated: `epsilon`, `sigma` and `r_c` finite
    /// and `> 0`, also in `f32`, with `48 eps sigma^12` a normal `f32`
    /// ([`Error::InvalidParameter`] names a bad one).
    ///
    /// In LJ reduced units (LAMMPS `units lj`) `epsilon = sigma = 1` and
    /// masses are 1; LAMMPS's `pair_style lj/cut 2.5` with `pair_modify
    /// shift no` is `ForceLaw::lennard_jones(1.0, 1.0, 2.5, false)`.
    pub fn lennard_jones(epsilon: f64, sigma: f64, cutoff: f64, shift: bool) -> Result<ForceLaw> {
        ForceLaw::pair(PairStyle::LennardJones, &[epsilon, sigma], cutoff, shift)
    }

    /// Pair style `style` for one atom type: its coefficients in LAMMPS's
    /// `pair_coeff` order, the cutoff and the shift, validated
    /// ([`PairPotential::new`]).
    pub fn pair(style: PairStyle, params: &[f64], cutoff: f64, shift: bool) -> Result<ForceLaw> {
        PairPotential::new(style, params, cutoff, shift).map(ForceLaw::Pair)
    }

    /// The distance beyond which bodies do not interact (the longest over
    /// the pairs of atom types), if there is one.
    pub fn cutoff(&self) -> Option<f32> {
        match self {
            ForceLaw::Gravity(_) => None,
            ForceLaw::Pair(p) => Some(p.max_cutoff()),
        }
    }

    /// The default neighbour skin of a law with a cutoff
    /// ([`PairPotential::default_skin`]); `None` without a cutoff.
    pub fn default_skin(&self) -> Option<f64> {
        self.as_pair().map(PairPotential::default_skin)
    }

    /// Softened gravity's parameters, or `None` for another law.
    pub fn as_gravity(&self) -> Option<&Gravity> {
        match self {
            ForceLaw::Gravity(g) => Some(g),
            _ => None,
        }
    }

    /// The pair potential, or `None` for a long-range law.
    pub fn as_pair(&self) -> Option<&PairPotential> {
        match self {
            ForceLaw::Pair(p) => Some(p),
            _ => None,
        }
    }

    /// `"gravity"`, or the pair style's name (`"lj/cut"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            ForceLaw::Gravity(_) => "gravity",
            ForceLaw::Pair(p) => p.style().name(),
        }
    }
}

impl Default for ForceLaw {
    fn default() -> Self {
        ForceLaw::Gravity(Gravity::default())
    }
}

impl std::fmt::Display for ForceLaw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForceLaw::Gravity(g) => write!(f, "gravity (G {}, softening {})", g.g, g.softening),
            ForceLaw::Pair(p) => p.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gravity_rejects_bad_values_naming_them() {
        for eps in [-0.1, f64::NAN, f64::INFINITY, 1e30] {
            let e = Gravity::new(1.0, eps).unwrap_err();
            assert!(matches!(e, Error::InvalidSoftening(_)), "{eps}: {e}");
        }
        for g in [0.0, -1.0, f64::NAN, 1e300] {
            assert!(matches!(
                Gravity::new(g, 0.1),
                Err(Error::InvalidGravitationalConstant(_))
            ));
        }
        let ok = Gravity::new(2.0, 0.0).unwrap();
        assert_eq!((ok.g(), ok.softening(), ok.eps2()), (2.0, 0.0, 0.0));
    }

    #[test]
    fn lennard_jones_rejects_bad_values_naming_them() {
        for (e, s, c, name) in [
            (0.0, 1.0, 2.5, "epsilon"),
            (-1.0, 1.0, 2.5, "epsilon"),
            (f64::NAN, 1.0, 2.5, "epsilon"),
            (1.0, 0.0, 2.5, "sigma"),
            (1.0, f64::INFINITY, 2.5, "sigma"),
            (1.0, 1.0, -2.5, "cutoff"),
            (1.0, 1.0, 1e-50, "cutoff"),
            (1.0, 1e4, 2.5, "sigma^12"),
        ] {
            let err = ForceLaw::lennard_jones(e, s, c, false).unwrap_err();
            assert!(matches!(err, Error::InvalidParameter { .. }), "{err}");
            assert!(err.to_string().contains(name), "{err}");
        }
        let lj = ForceLaw::lennard_jones(1.0, 1.0, 2.5, true).unwrap();
        assert_eq!(lj.cutoff(), Some(2.5));
        assert!(lj.as_gravity().is_none());
        let p = lj.as_pair().unwrap();
        // The minimum at 2^(1/6) sigma, depth eps.
        let at = p.reference(0, 0, 2f64.powf(1.0 / 3.0));
        assert!((at.energy + 1.0).abs() < 1e-12, "{at:?}");
        assert_eq!(lj.name(), "lj/cut");
    }

    #[test]
    fn the_guard_is_dropped_only_when_every_factor_is_finite() {
        let g = |eps: f64| Gravity::new(1.0, eps).unwrap();
        assert!(g(0.0).needs_guard(1.0));
        assert!(g(1e-20).needs_guard(1.0)); // eps^2 = 1e-40: denormal
        assert!(!g(0.1).needs_guard(1.0));
        // m / eps^3 = 1e30 / 1e-12 overflows f32.
        assert!(g(1e-4).needs_guard(1e30));
        assert!(!g(1.0).needs_guard(1e30));
    }
}
