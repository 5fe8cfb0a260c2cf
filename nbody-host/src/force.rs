//! Force laws: what acts between two bodies, apart from how the pairs are
//! enumerated ([`Kernel`](crate::Kernel) on the GPU, the all-pairs or
//! Newton's-third-law loop on the CPU, [`Neighbours`](crate::Neighbours) for
//! short-range forces) and from the integrator.

use crate::error::{Error, Result};

/// The pairwise force, with its parameters validated in `f32`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ForceLaw {
    /// Newtonian gravity with Plummer softening:
    /// `a_i = G sum_j m_j r_ij / (|r_ij|^2 + eps^2)^(3/2)`.
    Gravity(Gravity),
    /// The Lennard-Jones 12-6 potential, truncated at a cutoff `r_c` and
    /// optionally shifted to zero there:
    /// `u(r) = 4 eps ((sigma/r)^12 - (sigma/r)^6) - u_shift` for `r < r_c`, 0 beyond.
    /// Short-range molecular dynamics (see [`crate::md`]).
    LennardJones(LennardJones),
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

/// Lennard-Jones parameters (see [`ForceLaw::LennardJones`]), validated in
/// `f32`, the precision of the force loops.
///
/// In LJ reduced units (LAMMPS `units lj`) `epsilon = sigma = 1` and masses
/// are 1; LAMMPS's `pair_style lj/cut 2.5` with `pair_modify shift no` is
/// `LennardJones::new(1.0, 1.0, 2.5, false)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LennardJones {
    epsilon: f32,
    sigma: f32,
    cutoff: f32,
    shift: bool,
}

/// The constants of the force and energy loops, as LAMMPS's `lj/cut`
/// names them: `F(r) r = r^-6 (lj1 r^-6 - lj2) / r^2 * r`, `u(r) = r^-6
/// (lj3 r^-6 - lj4) - offset`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LjCoefficients {
    /// `48 eps sigma^12`.
    pub lj1: f32,
    /// `24 eps sigma^6`.
    pub lj2: f32,
    /// `4 eps sigma^12`.
    pub lj3: f32,
    /// `4 eps sigma^6`.
    pub lj4: f32,
    /// `u(r_c)` when shifted, else 0.
    pub offset: f32,
    /// `r_c^2`.
    pub cutoff2: f32,
}

impl LennardJones {
    /// Validates the well depth `epsilon`, the length `sigma` and the
    /// cutoff `r_c` (each finite and `> 0`, also in `f32`, with
    /// `48 eps sigma^12` a normal `f32`), naming a bad value
    /// ([`Error::InvalidParameter`]). `shift` subtracts `u(r_c)` so the
    /// potential is continuous at the cutoff (LAMMPS `pair_modify shift yes`);
    /// forces are the same either way.
    pub fn new(epsilon: f64, sigma: f64, cutoff: f64, shift: bool) -> Result<LennardJones> {
        let positive = |name: &'static str, v: f64| {
            let v32 = v as f32;
            if v.is_finite() && v > 0.0 && v32.is_finite() && v32 >= f32::MIN_POSITIVE {
                Ok(v32)
            } else {
                Err(Error::InvalidParameter {
                    name,
                    value: v,
                    requirement: "must be finite and > 0 (a normal f32)",
                })
            }
        };
        let lj = LennardJones {
            epsilon: positive("Lennard-Jones epsilon", epsilon)?,
            sigma: positive("Lennard-Jones sigma", sigma)?,
            cutoff: positive("Lennard-Jones cutoff", cutoff)?,
            shift,
        };
        let lj1 = 48.0 * lj.epsilon as f64 * (lj.sigma as f64).powi(12);
        if !(lj1 < f32::MAX as f64 && lj1 > f32::MIN_POSITIVE as f64) {
            return Err(Error::InvalidParameter {
                name: "Lennard-Jones 48 epsilon sigma^12",
                value: lj1,
                requirement: "must be a normal f32 (choose units where epsilon and sigma are near 1)",
            });
        }
        Ok(lj)
    }

    /// The well depth `epsilon`.
    pub fn epsilon(&self) -> f32 {
        self.epsilon
    }

    /// The length scale `sigma` (`u(sigma) = 0`).
    pub fn sigma(&self) -> f32 {
        self.sigma
    }

    /// The cutoff `r_c`: pairs farther apart do not interact.
    pub fn cutoff(&self) -> f32 {
        self.cutoff
    }

    /// Whether the potential is shifted to zero at the cutoff.
    pub fn shift(&self) -> bool {
        self.shift
    }

    /// `u(r)` of the truncated (and, if set, shifted) potential, in `f64`
    /// from the `f32` parameters: 0 at `r >= r_c`.
    pub fn potential(&self, r: f64) -> f64 {
        if r >= self.cutoff as f64 {
            return 0.0;
        }
        let raw = |r: f64| {
            let s6 = (self.sigma as f64 / r).powi(6);
            4.0 * self.epsilon as f64 * (s6 * s6 - s6)
        };
        raw(r)
            - if self.shift {
                raw(self.cutoff as f64)
            } else {
                0.0
            }
    }

    /// The constants of the `f32` loops.
    pub(crate) fn coefficients(&self) -> LjCoefficients {
        let (e, s) = (self.epsilon as f64, self.sigma as f64);
        let (s6, s12) = (s.powi(6), s.powi(12));
        let offset = if self.shift {
            let x = (s / self.cutoff as f64).powi(6);
            4.0 * e * (x * x - x)
        } else {
            0.0
        };
        LjCoefficients {
            lj1: (48.0 * e * s12) as f32,
            lj2: (24.0 * e * s6) as f32,
            lj3: (4.0 * e * s12) as f32,
            lj4: (4.0 * e * s6) as f32,
            offset: offset as f32,
            cutoff2: self.cutoff * self.cutoff,
        }
    }
}

impl ForceLaw {
    /// Softened gravity, validated ([`Gravity::new`]).
    pub fn gravity(g: f64, softening: f64) -> Result<ForceLaw> {
        Gravity::new(g, softening).map(ForceLaw::Gravity)
    }

    /// Lennard-Jones, validated ([`LennardJones::new`]).
    pub fn lennard_jones(epsilon: f64, sigma: f64, cutoff: f64, shift: bool) -> Result<ForceLaw> {
        LennardJones::new(epsilon, sigma, cutoff, shift).map(ForceLaw::LennardJones)
    }

    /// The distance beyond which bodies do not interact, if there is one.
    pub fn cutoff(&self) -> Option<f32> {
        match self {
            ForceLaw::Gravity(_) => None,
            ForceLaw::LennardJones(lj) => Some(lj.cutoff),
        }
    }

    /// `"gravity"` or `"lennard-jones"`.
    pub fn name(&self) -> &'static str {
        match self {
            ForceLaw::Gravity(_) => "gravity",
            ForceLaw::LennardJones(_) => "lennard-jones",
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
            ForceLaw::LennardJones(lj) => write!(
                f,
                "lennard-jones (epsilon {}, sigma {}, cutoff {}, {})",
                lj.epsilon,
                lj.sigma,
                lj.cutoff,
                if lj.shift { "shifted" } else { "not shifted" }
            ),
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
            let err = LennardJones::new(e, s, c, false).unwrap_err();
            assert!(matches!(err, Error::InvalidParameter { .. }), "{err}");
            assert!(err.to_string().contains(name), "{err}");
        }
        let lj = LennardJones::new(1.0, 1.0, 2.5, true).unwrap();
        assert_eq!(lj.potential(2.5), 0.0);
        assert!(lj.potential(2.4999).abs() < 1e-4);
        // The minimum at 2^(1/6) sigma, depth eps, shifted by u(2.5) = -0.016317.
        let u_min = lj.potential(2f64.powf(1.0 / 6.0));
        assert!((u_min - (-1.0 + 0.016316891136)).abs() < 1e-9, "{u_min}");
        let c = lj.coefficients();
        assert_eq!(
            (c.lj1, c.lj2, c.lj3, c.lj4, c.cutoff2),
            (48.0, 24.0, 4.0, 4.0, 6.25)
        );
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
