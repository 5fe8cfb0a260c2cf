//! The command line's spelling of an ensemble ([`EnsembleFlags`]).

use super::Ensemble;
use crate::error::{Error, Result};
use crate::md::Boundary;

/// The command line's spelling of an ensemble (`--ensemble nve|nvt|langevin|
/// rescale|npt --temp-target T --tdamp TAU --press-target P --pdamp TAU
/// --seed S`), turned into an [`Ensemble`] by [`EnsembleFlags::ensemble`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EnsembleFlags {
    /// `--ensemble` (`None`: NVE).
    pub ensemble: Option<String>,
    /// `--temp-target`.
    pub temp_target: Option<f64>,
    /// `--tdamp` (the Langevin damping time for `langevin`).
    pub tdamp: Option<f64>,
    /// `--press-target`.
    pub press_target: Option<f64>,
    /// `--pdamp`.
    pub pdamp: Option<f64>,
    /// `--seed` (the Langevin random forces').
    pub seed: u64,
}

impl EnsembleFlags {
    /// The ensemble the flags name: `nve` (the default), `nvt` (needs
    /// `--temp-target`, `--tdamp`; chain 3), `langevin` (`--temp-target`,
    /// `--tdamp` as the damping time, `--seed`), `rescale` (`--temp-target`;
    /// every step, no window, all the way: LAMMPS's `temp/rescale 1 T T 0
    /// 1`), `npt` (`--temp-target`, `--tdamp`, `--press-target`, `--pdamp`;
    /// chains 3, isotropic). A flag the ensemble does not use, a missing
    /// one, an unknown name or a bad value is an error naming it, before
    /// any work.
    ///
    /// ```
    /// use nbody_host::md::{Ensemble, EnsembleFlags};
    ///
    /// let flags = EnsembleFlags {
    ///     ensemble: Some("nvt".into()),
    ///     temp_target: Some(1.5),
    ///     tdamp: Some(0.5),
    ///     ..EnsembleFlags::default()
    /// };
    /// assert_eq!(flags.ensemble()?, Ensemble::nvt(1.5, 0.5));
    /// let bad = EnsembleFlags { tdamp: Some(-1.0), ..flags };
    /// assert!(bad.ensemble().unwrap_err().to_string().contains("-1"));
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn ensemble(&self) -> Result<Ensemble> {
        let name = self.ensemble.as_deref().unwrap_or("nve");
        let uses: &[&str] = match name {
            "nve" => &[],
            "nvt" | "langevin" => &["--temp-target", "--tdamp"],
            "rescale" => &["--temp-target"],
            "npt" => &["--temp-target", "--tdamp", "--press-target", "--pdamp"],
            other => {
                return Err(Error::InvalidCombination(format!(
                    "--ensemble {other:?} is not known: use nve, nvt, langevin, rescale or npt"
                )));
            }
        };
        let given = [
            ("--temp-target", self.temp_target),
            ("--tdamp", self.tdamp),
            ("--press-target", self.press_target),
            ("--pdamp", self.pdamp),
        ];
        for (flag, value) in given {
            match (value, uses.contains(&flag)) {
                (Some(v), false) => {
                    return Err(Error::InvalidCombination(format!(
                        "{flag} {v} means nothing to --ensemble {name}{}",
                        match flag {
                            "--press-target" | "--pdamp" => " (only npt has a pressure)",
                            _ => " (nve has no thermostat)",
                        }
                    )));
                }
                (None, true) => {
                    return Err(Error::InvalidCombination(format!(
                        "--ensemble {name} needs {flag}"
                    )));
                }
                _ => {}
            }
        }
        let (t, tau) = (self.temp_target.unwrap_or(0.0), self.tdamp.unwrap_or(0.0));
        let ensemble = match name {
            "nvt" => Ensemble::nvt(t, tau),
            "langevin" => Ensemble::langevin(t, tau, self.seed),
            "rescale" => Ensemble::rescale(1, t, 0.0, 1.0),
            "npt" => Ensemble::npt(
                t,
                tau,
                self.press_target.unwrap_or(0.0),
                self.pdamp.unwrap_or(0.0),
            ),
            _ => Ensemble::Nve,
        };
        // The box is checked with the run's (a pressure needs a periodic one).
        ensemble.validate(&Boundary::cubic(1.0))?;
        Ok(ensemble)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_name_what_is_wrong() {
        let f = |e: &str| EnsembleFlags {
            ensemble: Some(e.into()),
            ..EnsembleFlags::default()
        };
        assert_eq!(EnsembleFlags::default().ensemble().unwrap(), Ensemble::Nve);
        let npt = EnsembleFlags {
            temp_target: Some(1.2),
            tdamp: Some(0.5),
            press_target: Some(2.0),
            pdamp: Some(5.0),
            ..f("npt")
        };
        assert_eq!(npt.ensemble().unwrap(), Ensemble::npt(1.2, 0.5, 2.0, 5.0));
        let langevin = EnsembleFlags {
            temp_target: Some(1.2),
            tdamp: Some(2.0),
            seed: 9,
            ..f("langevin")
        };
        assert_eq!(
            langevin.ensemble().unwrap(),
            Ensemble::langevin(1.2, 2.0, 9)
        );
        let rescale = EnsembleFlags {
            temp_target: Some(1.2),
            ..f("rescale")
        };
        assert_eq!(
            rescale.ensemble().unwrap(),
            Ensemble::rescale(1, 1.2, 0.0, 1.0)
        );
        for (flags, what) in [
            (f("nvx"), "\"nvx\" is not known"),
            (f("nvt"), "needs --temp-target"),
            (
                EnsembleFlags {
                    temp_target: Some(1.0),
                    ..f("nvt")
                },
                "needs --tdamp",
            ),
            (
                EnsembleFlags {
                    press_target: Some(1.0),
                    ..npt.clone()
                }
                .with_name("nvt"),
                "--press-target 1 means nothing to --ensemble nvt",
            ),
            (
                EnsembleFlags {
                    tdamp: Some(1.0),
                    ..f("nve")
                },
                "--tdamp 1 means nothing",
            ),
            (
                EnsembleFlags {
                    tdamp: Some(-0.5),
                    ..npt.clone()
                },
                "Tdamp = -0.5",
            ),
            (
                EnsembleFlags {
                    temp_target: Some(0.0),
                    ..npt.clone()
                },
                "target temperature = 0",
            ),
        ] {
            let err = flags.ensemble().unwrap_err().to_string();
            assert!(err.contains(what), "{flags:?}: {err}");
        }
    }

    impl EnsembleFlags {
        fn with_name(self, name: &str) -> EnsembleFlags {
            EnsembleFlags {
                ensemble: Some(name.into()),
                ..self
            }
        }
    }
}
