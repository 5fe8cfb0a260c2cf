//! Time integrators, each written once as a short sequence of stages.
//!
//! As in REBOUND (`integrator_leapfrog.c`: drift, kick, update
//! accelerations), an integrator is independent of the force: it only says
//! when to compute accelerations and by which fractions of `dt` to kick
//! (`v += a h`) and drift (`x += v h`). Every backend interprets the same
//! sequence: the CPU engine calls its force loops and vector updates, the
//! GPU [`Plan`](crate::plan::Plan) lowers it to kernel launches (fusing a
//! force evaluation with the kick and drift that follow it where a kernel
//! does both). Adding an integrator means adding a variant and its two
//! sequences here.

use crate::hermite::HermiteSettings;

/// The time integrator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Integrator {
    /// Semi-implicit (symplectic) Euler, as in NVIDIA Warp's N-body example:
    /// `v += a dt; x += v dt`. First order; energy errors stay bounded but
    /// are larger than leapfrog's.
    #[default]
    SemiImplicitEuler,
    /// Leapfrog kick-drift-kick, which is velocity Verlet: `v += a dt/2;
    /// x += v dt; a = F(x)/m; v += a dt/2`, i.e. `x += v dt + a dt^2/2` with
    /// the half kicks around one force evaluation (LAMMPS's `fix nve`).
    /// Second order and symplectic, so energy errors stay bounded. Also
    /// named [`Integrator::VELOCITY_VERLET`].
    Leapfrog,
    /// 4th-order Hermite with block time steps (Makino & Aarseth 1992), in
    /// f64, for gravity in open space on the CPU backend: the collisional
    /// integrator of [`crate::hermite`]. It has no stages (its own engine
    /// runs it); `dt` is then the synchronisation interval and longest step.
    Hermite(HermiteSettings),
}

/// One operation of an integrator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Stage {
    /// `a = F(x) / m` at the current positions, by the configured force law
    /// and pair enumeration.
    Accelerations,
    /// `v += a (f dt)` for the fraction `f`.
    Kick(f32),
    /// `x += v (f dt)` for the fraction `f`.
    Drift(f32),
}

use Stage::{Accelerations, Drift, Kick};

impl Integrator {
    /// Every fixed-step (stage) integrator; [`from_name`](Self::from_name)
    /// also accepts `"hermite"` ([`Integrator::Hermite`] with the default
    /// [`HermiteSettings`]).
    pub const ALL: &'static [Integrator] = &[Integrator::SemiImplicitEuler, Integrator::Leapfrog];

    /// Velocity Verlet, the molecular-dynamics name of leapfrog
    /// kick-drift-kick: the same integrator, the same stages.
    pub const VELOCITY_VERLET: Integrator = Integrator::Leapfrog;

    /// What runs once before the first step: leapfrog needs the
    /// accelerations of the initial positions.
    pub(crate) fn prepare(self) -> &'static [Stage] {
        match self {
            Integrator::SemiImplicitEuler | Integrator::Hermite(_) => &[],
            Integrator::Leapfrog => &[Accelerations],
        }
    }

    /// One step. Afterwards the stored accelerations are those the next
    /// step's first kick expects.
    /// [`Integrator::Hermite`] has none: `Simulation` starts its own
    /// engine for it, and the stage interpreters never see it.
    pub(crate) fn step(self) -> &'static [Stage] {
        match self {
            Integrator::SemiImplicitEuler => &[Accelerations, Kick(1.0), Drift(1.0)],
            Integrator::Leapfrog => &[Kick(0.5), Drift(1.0), Accelerations, Kick(0.5)],
            Integrator::Hermite(_) => &[],
        }
    }

    /// `"euler"`, `"leapfrog"` or `"hermite"`.
    pub fn name(self) -> &'static str {
        match self {
            Integrator::SemiImplicitEuler => "euler",
            Integrator::Leapfrog => "leapfrog",
            Integrator::Hermite(_) => "hermite",
        }
    }

    /// Parses a [`name`](Self::name); `"velocity-verlet"` (and `"verlet"`)
    /// is leapfrog, `"hermite"` Hermite with the default settings.
    pub fn from_name(name: &str) -> Option<Integrator> {
        match name {
            "velocity-verlet" | "verlet" => Some(Integrator::VELOCITY_VERLET),
            "hermite" => Some(Integrator::Hermite(HermiteSettings::default())),
            _ => Integrator::ALL.iter().copied().find(|i| i.name() == name),
        }
    }

    /// The Hermite settings, for [`Integrator::Hermite`].
    pub fn hermite(self) -> Option<HermiteSettings> {
        match self {
            Integrator::Hermite(s) => Some(s),
            _ => None,
        }
    }

    /// A stable one-byte code for files (checkpoints); Hermite's settings
    /// go in a section of their own.
    pub(crate) fn code(self) -> u8 {
        match self {
            Integrator::SemiImplicitEuler => 0,
            Integrator::Leapfrog => 1,
            Integrator::Hermite(_) => 2,
        }
    }

    /// The integrator of a [`code`](Self::code) (Hermite with the default settings).
    pub(crate) fn from_code(code: u8) -> Option<Integrator> {
        match code {
            2 => Some(Integrator::Hermite(HermiteSettings::default())),
            _ => Integrator::ALL.iter().copied().find(|i| i.code() == code),
        }
    }
}

impl std::fmt::Display for Integrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for &i in Integrator::ALL {
            assert_eq!(Integrator::from_name(i.name()), Some(i));
            assert_eq!(Integrator::from_code(i.code()), Some(i));
        }
        assert_eq!(Integrator::from_name("rk4"), None);
        assert_eq!(
            Integrator::from_name("velocity-verlet"),
            Some(Integrator::Leapfrog)
        );
        assert_eq!(Integrator::from_code(200), None);
        let h = Integrator::from_name("hermite").unwrap();
        assert_eq!(Integrator::from_code(h.code()), Some(h));
        assert_eq!(h.hermite(), Some(HermiteSettings::default()));
        assert!(h.step().is_empty() && h.prepare().is_empty());
    }

    #[test]
    fn each_step_drifts_by_dt_and_kicks_by_dt() {
        for &i in Integrator::ALL {
            let (mut kick, mut drift) = (0.0, 0.0);
            for stage in i.step() {
                match *stage {
                    Kick(f) => kick += f,
                    Drift(f) => drift += f,
                    Accelerations => {}
                }
            }
            assert_eq!((kick, drift), (1.0, 1.0), "{i}");
            // Every kick uses accelerations computed before it (in this step
            // or, for leapfrog, by `prepare` / the previous step).
            let first_kick = i.step().iter().position(|s| matches!(s, Kick(_)));
            let first_forces = i.step().iter().position(|s| *s == Accelerations);
            if first_kick < first_forces {
                assert!(i.prepare().contains(&Accelerations), "{i}");
                assert_eq!(i.step().last(), Some(&Kick(0.5)), "{i}");
            }
        }
    }
}
