//! Ensembles as data: what a short-range run samples ([`Ensemble`]) and
//! its checks (here), the command-line spelling ([`EnsembleFlags`],
//! `flags.rs`) and what a run carries from step to step and into
//! checkpoints (`EnsembleState`, `state.rs`).
//!
//! Each is LAMMPS's, in its `lj` units (`k_B = 1`):
//!
//! | here | LAMMPS |
//! | --- | --- |
//! | [`Ensemble::Nve`] | `fix nve` |
//! | [`Ensemble::Nvt`] | `fix nvt temp T T Tdamp tchain M` (Nosé–Hoover chain, MTK splitting) |
//! | [`Ensemble::Langevin`] | `fix langevin T T damp seed tally yes` + `fix nve` |
//! | [`Ensemble::Rescale`] | `fix temp/rescale N Tstart Tstop window fraction` + `fix nve` |
//! | [`Ensemble::Npt`] | `fix npt temp T T Tdamp iso P P Pdamp tchain M pchain K` |
//!
//! The thermostat and barostat arithmetic is `gpu_kernels::ensemble`
//! (scalar `f64`, the same bits on the host and the GPU); the CPU engine
//! applies it between its passes over the atoms (`cpu/md/ensemble.rs`).

mod flags;
mod state;

pub use flags::EnsembleFlags;
pub(crate) use state::{EnsembleState, nh_from_words, nh_words};

use gpu_kernels::ensemble::{MAX_CHAIN, NoseHoover};

use super::Boundary;
use crate::error::{Error, Result};

/// The statistical ensemble of a short-range run: plain velocity Verlet
/// (NVE), or velocity Verlet with a thermostat, or with a thermostat and
/// the isotropic barostat. Set with
/// [`SimulationBuilder::ensemble`](crate::SimulationBuilder::ensemble);
/// every ensemble but NVE needs a pair potential and
/// [`Integrator::VELOCITY_VERLET`](crate::Integrator::VELOCITY_VERLET).
///
/// ```
/// use nbody_host::md::{Ensemble, Neighbours};
/// use nbody_host::{Backend, ForceLaw, Integrator, Simulation, ic};
///
/// let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.44, 87287)?;
/// let mut sim = Simulation::builder(atoms)
///     .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, true)?)
///     .boundary(boundary)
///     .neighbours(Neighbours::cells(0.3))
///     .integrator(Integrator::VELOCITY_VERLET)
///     .ensemble(Ensemble::nvt(1.0, 0.5))
///     .dt(0.005)
///     .backend(Backend::cpu())
///     .build()?;
/// let t0 = sim.thermo()?;
/// sim.step(400)?;
/// let t = sim.thermo()?;
/// // Heading for T = 1; the extended system's energy is conserved.
/// assert!((t.temperature - 1.0).abs() < (t0.temperature - 1.0).abs());
/// assert!((t.conserved - t0.conserved).abs() < 2e-3);
/// # Ok::<(), nbody_host::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum Ensemble {
    /// Constant energy: velocity Verlet alone (LAMMPS's `fix nve`).
    #[default]
    Nve,
    /// Constant temperature by a Nosé–Hoover chain (LAMMPS's `fix nvt temp
    /// T T Tdamp`, chain of `chain`, its Trotter splitting of `fix_nh.cpp`):
    /// deterministic, time-reversible, with a conserved energy.
    Nvt {
        /// Target temperature `T` (`> 0`).
        temp: f64,
        /// Damping time `Tdamp` (`> 0`; LAMMPS suggests 100 time steps).
        tdamp: f64,
        /// Thermostats in the chain (`1..=8`; LAMMPS's default 3).
        chain: u32,
    },
    /// Langevin dynamics (LAMMPS's `fix langevin T T damp seed` with `fix
    /// nve`): after every force evaluation each atom feels `-m v / damp`
    /// plus a random force `sqrt(24 k T m / (dt damp)) u`, `u` uniform in
    /// `[-1/2, 1/2)` per component (variance `2 k T m / (dt damp)`, as the
    /// fluctuation–dissipation theorem asks). LAMMPS's uniform numbers, not
    /// Gaussian ones: the same distribution as the peer it is checked
    /// against, and over the many steps a velocity integrates they sum to a
    /// Gaussian (Dünweg and Paul, 1991). They come from a counter-based
    /// generator (Philox4x32-10) of `(seed, step, atom)`, so a run gives
    /// the same bits on any number of threads and resumes bit-identically.
    Langevin {
        /// Target temperature (`> 0`).
        temp: f64,
        /// Damping time (`> 0`): the friction's relaxation time.
        damp: f64,
        /// Seed of the random forces.
        seed: u64,
    },
    /// Velocity rescaling for equilibration (LAMMPS's `fix temp/rescale N
    /// Tstart Tstop window fraction` with `fix nve`): every `every` steps,
    /// if the temperature is further than `window` from the target, the
    /// velocities are scaled to move it `fraction` of the way there. The
    /// target goes from `t_start` to `t_stop` over the first `ramp` steps
    /// (LAMMPS: over the `run`), then stays at `t_stop`. Not an ensemble
    /// of statistical mechanics: for equilibration only.
    Rescale {
        /// Steps between checks (`>= 1`); LAMMPS checks when the step
        /// number is a multiple of it.
        every: u32,
        /// Target at the start (`> 0`).
        t_start: f64,
        /// Target after `ramp` steps (`> 0`).
        t_stop: f64,
        /// Steps over which the target moves (0: `t_stop` from the start).
        ramp: u64,
        /// Half-width of the band left alone (`>= 0`).
        window: f64,
        /// How far towards the target each rescaling goes (`0 < fraction <= 1`).
        fraction: f64,
    },
    /// Constant temperature and pressure, isotropic (LAMMPS's `fix npt temp
    /// T T Tdamp iso P P Pdamp`): the Martyna–Tobias–Klein barostat with
    /// its own Nosé–Hoover chain, every box length scaled alike (an
    /// orthorhombic box keeps its shape).
    Npt {
        /// Target temperature (`> 0`).
        temp: f64,
        /// Thermostat damping time (`> 0`).
        tdamp: f64,
        /// Thermostats in the particles' chain (`1..=8`; LAMMPS's 3).
        chain: u32,
        /// Target pressure (finite).
        press: f64,
        /// Barostat damping time (`> 0`; LAMMPS suggests 1000 time steps).
        pdamp: f64,
        /// Thermostats in the barostat's chain (`0..=8`; LAMMPS's 3).
        pchain: u32,
    },
}

impl Ensemble {
    /// [`Ensemble::Nvt`] with LAMMPS's chain of 3.
    pub fn nvt(temp: f64, tdamp: f64) -> Ensemble {
        Ensemble::Nvt {
            temp,
            tdamp,
            chain: 3,
        }
    }

    /// [`Ensemble::Npt`] with LAMMPS's chains of 3.
    pub fn npt(temp: f64, tdamp: f64, press: f64, pdamp: f64) -> Ensemble {
        Ensemble::Npt {
            temp,
            tdamp,
            chain: 3,
            press,
            pdamp,
            pchain: 3,
        }
    }

    /// [`Ensemble::Langevin`].
    pub fn langevin(temp: f64, damp: f64, seed: u64) -> Ensemble {
        Ensemble::Langevin { temp, damp, seed }
    }

    /// [`Ensemble::Rescale`] to a fixed target `temp`, every `every` steps.
    pub fn rescale(every: u32, temp: f64, window: f64, fraction: f64) -> Ensemble {
        Ensemble::Rescale {
            every,
            t_start: temp,
            t_stop: temp,
            ramp: 0,
            window,
            fraction,
        }
    }

    /// `"nve"`, `"nvt"`, `"langevin"`, `"rescale"` or `"npt"`.
    pub fn name(&self) -> &'static str {
        match self {
            Ensemble::Nve => "nve",
            Ensemble::Nvt { .. } => "nvt",
            Ensemble::Langevin { .. } => "langevin",
            Ensemble::Rescale { .. } => "rescale",
            Ensemble::Npt { .. } => "npt",
        }
    }

    /// The target temperature (the ramp's end for [`Ensemble::Rescale`]).
    pub fn temperature(&self) -> Option<f64> {
        match *self {
            Ensemble::Nve => None,
            Ensemble::Nvt { temp, .. }
            | Ensemble::Langevin { temp, .. }
            | Ensemble::Npt { temp, .. } => Some(temp),
            Ensemble::Rescale { t_stop, .. } => Some(t_stop),
        }
    }

    /// Whether the box changes ([`Ensemble::Npt`]).
    pub fn changes_box(&self) -> bool {
        matches!(self, Ensemble::Npt { .. })
    }

    /// Checks every value (an [`Error::InvalidParameter`] naming the first
    /// bad one) and the box: the barostat needs a periodic one
    /// ([`Error::InvalidCombination`]).
    pub fn validate(&self, boundary: &Boundary) -> Result<()> {
        let positive = |name: &'static str, value: f64| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(Error::InvalidParameter {
                    name,
                    value,
                    requirement: "must be finite and > 0",
                })
            }
        };
        let chain = |name: &'static str, value: u32, least: u32| {
            if (least..=MAX_CHAIN as u32).contains(&value) {
                Ok(())
            } else {
                Err(Error::InvalidParameter {
                    name,
                    value: value as f64,
                    requirement: if least == 0 {
                        "must be in 0..=8"
                    } else {
                        "must be in 1..=8"
                    },
                })
            }
        };
        match *self {
            Ensemble::Nve => Ok(()),
            Ensemble::Nvt {
                temp,
                tdamp,
                chain: m,
            } => {
                positive("target temperature", temp)?;
                positive("thermostat damping time Tdamp", tdamp)?;
                chain("thermostat chain length", m, 1)
            }
            Ensemble::Langevin { temp, damp, .. } => {
                positive("target temperature", temp)?;
                positive("Langevin damping time", damp)
            }
            Ensemble::Rescale {
                every,
                t_start,
                t_stop,
                window,
                fraction,
                ..
            } => {
                if every == 0 {
                    return Err(Error::InvalidParameter {
                        name: "rescaling interval",
                        value: 0.0,
                        requirement: "must be at least 1 step",
                    });
                }
                positive("starting target temperature", t_start)?;
                positive("final target temperature", t_stop)?;
                if !(window.is_finite() && window >= 0.0) {
                    return Err(Error::InvalidParameter {
                        name: "rescaling window",
                        value: window,
                        requirement: "must be finite and >= 0",
                    });
                }
                if !(fraction > 0.0 && fraction <= 1.0) {
                    return Err(Error::InvalidParameter {
                        name: "rescaling fraction",
                        value: fraction,
                        requirement: "must be in (0, 1]",
                    });
                }
                Ok(())
            }
            Ensemble::Npt {
                temp,
                tdamp,
                chain: m,
                press,
                pdamp,
                pchain,
            } => {
                positive("target temperature", temp)?;
                positive("thermostat damping time Tdamp", tdamp)?;
                chain("thermostat chain length", m, 1)?;
                if !press.is_finite() {
                    return Err(Error::InvalidParameter {
                        name: "target pressure",
                        value: press,
                        requirement: "must be finite",
                    });
                }
                positive("barostat damping time Pdamp", pdamp)?;
                chain("barostat chain length", pchain, 0)?;
                if !matches!(boundary, Boundary::Periodic { .. }) {
                    return Err(Error::InvalidCombination(format!(
                        "a target pressure (P = {press}) needs a periodic box whose volume can \
                         change; the boundary is {boundary}: use Boundary::Periodic"
                    )));
                }
                Ok(())
            }
        }
    }

    /// The Nosé–Hoover constants for `n` atoms and time step `dt`.
    pub(crate) fn nose_hoover(&self, n: usize, dt: f64) -> Option<NoseHoover> {
        let base = |temp: f64, tdamp: f64, chain: u32| NoseHoover {
            t_target: temp,
            t_freq: 1.0 / tdamp,
            tchain: chain as usize,
            dof: degrees_of_freedom(n),
            natoms: n as f64,
            dt,
            barostat: None,
        };
        match *self {
            Ensemble::Nvt { temp, tdamp, chain } => Some(base(temp, tdamp, chain)),
            Ensemble::Npt {
                temp,
                tdamp,
                chain,
                press,
                pdamp,
                pchain,
            } => Some(NoseHoover {
                barostat: Some((press, 1.0 / pdamp, pchain as usize)),
                ..base(temp, tdamp, chain)
            }),
            _ => None,
        }
    }

    /// A stable code and the values, for files (the `ENSM` section).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut p = Vec::new();
        let f = |p: &mut Vec<u8>, x: f64| p.extend_from_slice(&x.to_le_bytes());
        match *self {
            Ensemble::Nve => p.push(0),
            Ensemble::Nvt { temp, tdamp, chain } => {
                p.push(1);
                f(&mut p, temp);
                f(&mut p, tdamp);
                p.extend_from_slice(&chain.to_le_bytes());
            }
            Ensemble::Langevin { temp, damp, seed } => {
                p.push(2);
                f(&mut p, temp);
                f(&mut p, damp);
                p.extend_from_slice(&seed.to_le_bytes());
            }
            Ensemble::Rescale {
                every,
                t_start,
                t_stop,
                ramp,
                window,
                fraction,
            } => {
                p.push(3);
                p.extend_from_slice(&every.to_le_bytes());
                for x in [t_start, t_stop] {
                    f(&mut p, x);
                }
                p.extend_from_slice(&ramp.to_le_bytes());
                for x in [window, fraction] {
                    f(&mut p, x);
                }
            }
            Ensemble::Npt {
                temp,
                tdamp,
                chain,
                press,
                pdamp,
                pchain,
            } => {
                p.push(4);
                f(&mut p, temp);
                f(&mut p, tdamp);
                p.extend_from_slice(&chain.to_le_bytes());
                f(&mut p, press);
                f(&mut p, pdamp);
                p.extend_from_slice(&pchain.to_le_bytes());
            }
        }
        p
    }

    /// [`encode`](Self::encode) inverted (not validated: the caller does).
    pub(crate) fn decode(p: &[u8]) -> std::result::Result<Ensemble, String> {
        let f = |at: usize| f64::from_le_bytes(p[at..at + 8].try_into().expect("8 bytes"));
        let u = |at: usize| u32::from_le_bytes(p[at..at + 4].try_into().expect("4 bytes"));
        let q = |at: usize| u64::from_le_bytes(p[at..at + 8].try_into().expect("8 bytes"));
        let want = |size: usize| {
            if p.len() == size {
                Ok(())
            } else {
                Err(format!(
                    "section ENSM: {} bytes for code {}, expected {size}",
                    p.len(),
                    p[0]
                ))
            }
        };
        match p.first() {
            Some(0) => want(1).map(|_| Ensemble::Nve),
            Some(1) => want(21).map(|_| Ensemble::Nvt {
                temp: f(1),
                tdamp: f(9),
                chain: u(17),
            }),
            Some(2) => want(25).map(|_| Ensemble::Langevin {
                temp: f(1),
                damp: f(9),
                seed: q(17),
            }),
            Some(3) => want(45).map(|_| Ensemble::Rescale {
                every: u(1),
                t_start: f(5),
                t_stop: f(13),
                ramp: q(21),
                window: f(29),
                fraction: f(37),
            }),
            Some(4) => want(41).map(|_| Ensemble::Npt {
                temp: f(1),
                tdamp: f(9),
                chain: u(17),
                press: f(21),
                pdamp: f(29),
                pchain: u(37),
            }),
            Some(other) => Err(format!("section ENSM: unknown ensemble code {other}")),
            None => Err("section ENSM: empty".into()),
        }
    }
}

impl std::fmt::Display for Ensemble {
    /// LAMMPS's fix, e.g. `nvt temp 1.5 1.5 0.5 tchain 3`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Ensemble::Nve => f.write_str("nve"),
            Ensemble::Nvt { temp, tdamp, chain } => {
                write!(f, "nvt temp {temp} {temp} {tdamp} tchain {chain}")
            }
            Ensemble::Langevin { temp, damp, seed } => {
                write!(f, "langevin {temp} {temp} {damp} {seed}")
            }
            Ensemble::Rescale {
                every,
                t_start,
                t_stop,
                ramp,
                window,
                fraction,
            } => write!(
                f,
                "temp/rescale {every} {t_start} {t_stop} {window} {fraction} (ramp {ramp} steps)"
            ),
            Ensemble::Npt {
                temp,
                tdamp,
                chain,
                press,
                pdamp,
                pchain,
            } => write!(
                f,
                "npt temp {temp} {temp} {tdamp} iso {press} {press} {pdamp} tchain {chain} \
                 pchain {pchain}"
            ),
        }
    }
}

/// The temperature's degrees of freedom: `3N - 3` (LAMMPS's `compute
/// temp`, the total momentum removed).
pub(crate) fn degrees_of_freedom(n: usize) -> f64 {
    (3.0 * n as f64 - 3.0).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_are_errors_naming_them() {
        let b = Boundary::cubic(10.0);
        for (e, what) in [
            (Ensemble::nvt(-1.0, 0.5), "target temperature = -1"),
            (Ensemble::nvt(1.0, 0.0), "Tdamp = 0"),
            (Ensemble::nvt(0.0, 0.5), "temperature = 0"),
            (
                Ensemble::Nvt {
                    temp: 1.0,
                    tdamp: 0.5,
                    chain: 0,
                },
                "chain length = 0",
            ),
            (Ensemble::langevin(1.0, -2.0, 1), "damping time = -2"),
            (Ensemble::langevin(f64::NAN, 1.0, 1), "temperature = NaN"),
            (Ensemble::npt(1.0, 0.5, 1.0, -3.0), "Pdamp = -3"),
            (
                Ensemble::npt(1.0, 0.5, f64::INFINITY, 1.0),
                "pressure = inf",
            ),
            (Ensemble::rescale(0, 1.0, 0.0, 1.0), "interval = 0"),
            (Ensemble::rescale(1, 1.0, -0.1, 1.0), "window = -0.1"),
            (Ensemble::rescale(1, 1.0, 0.0, 1.5), "fraction = 1.5"),
        ] {
            let err = e.validate(&b).unwrap_err().to_string();
            assert!(err.contains(what), "{e}: {err}");
        }
        let open = Ensemble::npt(1.0, 0.5, 2.0, 5.0).validate(&Boundary::Open);
        let err = open.unwrap_err().to_string();
        assert!(err.contains("P = 2") && err.contains("periodic"), "{err}");
        for good in [
            Ensemble::Nve,
            Ensemble::nvt(1.0, 0.5),
            Ensemble::langevin(1.0, 1.0, 7),
            Ensemble::rescale(10, 1.0, 0.05, 0.5),
            Ensemble::npt(1.0, 0.5, -0.5, 5.0),
        ] {
            good.validate(&b).unwrap();
        }
    }

    #[test]
    fn ensembles_round_trip_through_their_bytes() {
        for e in [
            Ensemble::Nve,
            Ensemble::nvt(1.5, 0.5),
            Ensemble::langevin(1.0, 2.0, u64::MAX - 3),
            Ensemble::Rescale {
                every: 7,
                t_start: 2.0,
                t_stop: 1.0,
                ramp: 1000,
                window: 0.1,
                fraction: 0.5,
            },
            Ensemble::Npt {
                temp: 1.0,
                tdamp: 0.5,
                chain: 4,
                press: -0.25,
                pdamp: 5.0,
                pchain: 0,
            },
        ] {
            assert_eq!(Ensemble::decode(&e.encode()), Ok(e));
        }
        assert!(Ensemble::decode(&[9]).is_err());
        assert!(Ensemble::decode(&[1, 0, 0]).is_err());
    }
}
