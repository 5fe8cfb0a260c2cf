//! Short-range molecular dynamics: what a periodic box, a cutoff force and
//! neighbour lists add to a simulation.
//!
//! The force law (a pair potential, [`ForceLaw::Pair`]),
//! the space ([`Boundary`]), the pair enumeration ([`Neighbours`]) and the
//! integrator ([`Integrator`](crate::Integrator), velocity Verlet =
//! [`Integrator::VELOCITY_VERLET`](crate::Integrator::VELOCITY_VERLET)) are
//! independent choices of the [`SimulationBuilder`](crate::SimulationBuilder);
//! combinations that make no sense are an [`Error::InvalidCombination`].
//! [`Simulation::thermo`](crate::Simulation::thermo) reports LAMMPS's thermo
//! quantities in its definitions ([`Thermo`]); [`crate::ic::fcc_lattice`]
//! makes LAMMPS's `lattice fcc` + `create_atoms` + `velocity create` start.
//!
//! ```
//! use nbody_host::md::{Boundary, Neighbours};
//! use nbody_host::{Backend, ForceLaw, Integrator, Simulation, ic};
//!
//! // LAMMPS's in.lj at 4 x 4 x 4 unit cells (256 atoms): fcc at density 0.8442, T = 1.44.
//! let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.44, 87287)?;
//! let mut sim = Simulation::builder(atoms)
//!     .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, false)?)
//!     .boundary(boundary)
//!     .neighbours(Neighbours::cells(0.3))
//!     .integrator(Integrator::VELOCITY_VERLET)
//!     .dt(0.005)
//!     .backend(Backend::cpu())
//!     .build()?;
//! let t0 = sim.thermo()?;
//! assert!((t0.temperature - 1.44).abs() < 1e-6);
//! assert!((t0.potential + 6.7733).abs() < 1e-3); // per atom, as LAMMPS prints it
//! sim.step(100)?;
//! let t = sim.thermo()?;
//! // Unshifted, the energy jumps by u(r_c) = -0.016 whenever a pair crosses
//! // the cutoff (LAMMPS's run drifts alike); `true` in `lennard_jones` shifts it.
//! assert!((t.total - t0.total).abs() < 2e-2);
//! assert!(matches!(sim.params().boundary(), Boundary::Periodic { .. }));
//! # Ok::<(), nbody_host::Error>(())
//! ```
//!
//! | file | what |
//! | --- | --- |
//! | `mod.rs` | [`Boundary`], [`Neighbours`], [`CellList`], [`Lists`], [`Rebuild`], the validation of combinations |
//! | `state.rs` | [`Thermo`], [`MdStats`], [`MdState`]: what a run reports and carries from one engine to the next |
//! | `ensemble.rs` | [`Ensemble`] (NVE, Nosé–Hoover NVT, Langevin, rescaling, MTK NPT), [`EnsembleFlags`], the state a thermostat carries |
//! | `cells.rs` | the cell grid: geometry, the forward half stencil, the layers the CPU schedule colours |
//!
//! The CPU engine that runs it is `cpu/md/`.

pub(crate) mod cells;
pub(crate) mod ensemble;
mod state;

pub use ensemble::{Ensemble, EnsembleFlags};
pub use state::{MdState, MdStats, Thermo};
pub(crate) use state::{NeighbourOrigin, ThermoSums};

use crate::error::{Error, Result};
use crate::force::ForceLaw;

/// The space the bodies live in.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum Boundary {
    /// Unbounded space (the default; the only choice for gravity).
    #[default]
    Open,
    /// An orthorhombic periodic box `[0, Lx) x [0, Ly) x [0, Lz)`, with the
    /// minimum-image convention. Bodies are wrapped into the box after every
    /// drift, each with an integer image counter per axis, so the unwrapped
    /// position is `x + image * L` ([`Simulation::images`](crate::Simulation::images)).
    /// Bodies given outside the box are wrapped at the start.
    Periodic {
        /// `Lx, Ly, Lz`: finite and `> 0` (validated by the builder).
        lengths: [f64; 3],
    },
}

impl Boundary {
    /// A cubic periodic box of side `l`.
    pub fn cubic(l: f64) -> Boundary {
        Boundary::Periodic { lengths: [l; 3] }
    }

    /// The box lengths, for a periodic box.
    pub fn lengths(&self) -> Option<[f64; 3]> {
        match *self {
            Boundary::Open => None,
            Boundary::Periodic { lengths } => Some(lengths),
        }
    }

    /// The box lengths as the engines use them (`f32`), for a periodic box.
    pub(crate) fn lengths_f32(&self) -> Option<[f32; 3]> {
        self.lengths().map(|l| l.map(|x| x as f32))
    }

    /// The volume (from the `f32` lengths the engines use), for a periodic box.
    pub fn volume(&self) -> Option<f64> {
        self.lengths_f32()
            .map(|l| l.iter().map(|&x| x as f64).product())
    }

    /// Checks the lengths: finite and `> 0`, also as `f32`.
    pub fn validate(&self) -> Result<()> {
        if let Boundary::Periodic { lengths } = self {
            for &l in lengths {
                let l32 = l as f32;
                if !(l.is_finite() && l > 0.0 && l32.is_finite() && l32 >= f32::MIN_POSITIVE) {
                    return Err(Error::InvalidParameter {
                        name: "periodic box length",
                        value: l,
                        requirement: "must be finite and > 0 (a normal f32)",
                    });
                }
            }
        }
        Ok(())
    }

    /// `"open"` or `"periodic"`.
    pub fn name(&self) -> &'static str {
        match self {
            Boundary::Open => "open",
            Boundary::Periodic { .. } => "periodic",
        }
    }
}

impl std::fmt::Display for Boundary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Boundary::Open => f.write_str("open"),
            Boundary::Periodic { lengths: [x, y, z] } => write!(f, "periodic {x} x {y} x {z}"),
        }
    }
}

/// When the Verlet neighbour lists are rebuilt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rebuild {
    /// When any body has moved more than half the skin since the last build
    /// (checked every step): a pair that comes within the cutoff is never
    /// missed (LAMMPS `neigh_modify every 1 delay 0 check yes`).
    #[default]
    Auto,
    /// Every `k` steps, whether needed or not, as LAMMPS's `in.lj` benchmark
    /// does (`neigh_modify every 20 check no`). A pair could be missed if a
    /// body moves more than half the skin in `k` steps; each build counts
    /// whether that happened ([`MdStats::dangerous_builds`], LAMMPS's
    /// "dangerous builds").
    Every(u32),
}

/// How a short-range force enumerates its pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum Neighbours {
    /// [`Cells`](Neighbours::Cells) with a skin of `0.3 sigma`
    /// ([`PairPotential::default_skin`](crate::PairPotential::default_skin)),
    /// [`Rebuild::Auto`] and [`Lists::Auto`] for a pair potential where the
    /// box allows it (`r_c + skin <= L / 2`), [`AllPairs`](Neighbours::AllPairs)
    /// otherwise; all pairs for gravity.
    #[default]
    Auto,
    /// Every pair, `O(N^2)` (with the minimum image and the cutoff): the
    /// reference enumeration, for small systems.
    AllPairs,
    /// `O(N)`: bodies binned into cells of side at least `r_c + skin`, and
    /// a Verlet list per body of the pairs within `r_c + skin` (see [`CellList`]).
    Cells(CellList),
}

/// The settings of cell and Verlet lists ([`Neighbours::Cells`]).
///
/// ```
/// use nbody_host::md::{CellList, Lists, Neighbours, Rebuild};
///
/// // LAMMPS's in.lj: neighbor 0.3 bin, neigh_modify every 20 check no.
/// let lammps = Neighbours::cells(0.3).every(20);
/// let half = Neighbours::Cells(CellList { lists: Lists::Half, ..CellList::new(0.3) });
/// assert_eq!(lammps, Neighbours::Cells(CellList { rebuild: Rebuild::Every(20), ..CellList::new(0.3) }));
/// # let _ = half;
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CellList {
    /// The skin added to the cutoff (`>= 0`, same units as positions).
    pub skin: f64,
    /// When the lists are rebuilt.
    pub rebuild: Rebuild,
    /// Half lists (each pair once, Newton's third law) or full lists.
    pub lists: Lists,
    /// The least side of a cell (LAMMPS's `neigh_modify binsize`); cells
    /// are never narrower than `r_c + skin`, so 0 (the default) means
    /// exactly that. Wider cells are as correct, only slower: a bin as
    /// long as the box puts every body in one cell.
    pub bin_size: f64,
}

impl CellList {
    /// This skin, [`Rebuild::Auto`], [`Lists::Auto`], cells of `r_c + skin`.
    pub fn new(skin: f64) -> CellList {
        CellList {
            skin,
            rebuild: Rebuild::Auto,
            lists: Lists::Auto,
            bin_size: 0.0,
        }
    }
}

/// Which Verlet lists: each pair once, with Newton's third law applying the
/// reaction (half lists, LAMMPS's `newton on`), or each pair from both of
/// its bodies (full lists, no reaction). Same physics; the sums run in a
/// different order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lists {
    /// The backend's faster: full lists on the CPU (`docs/md.md` has the
    /// measurements: the reaction's gather and scatter cost more than the
    /// second evaluation of each pair on an AVX-512 core).
    #[default]
    Auto,
    /// Half lists, Newton's third law.
    Half,
    /// Full lists.
    Full,
}

impl Neighbours {
    /// Cell and Verlet lists with this skin (see [`CellList::new`]).
    pub fn cells(skin: f64) -> Neighbours {
        Neighbours::Cells(CellList::new(skin))
    }

    /// These cell lists rebuilt every `k` steps ([`Rebuild::Every`]); other
    /// enumerations unchanged.
    pub fn every(self, k: u32) -> Neighbours {
        match self {
            Neighbours::Cells(c) => Neighbours::Cells(CellList {
                rebuild: Rebuild::Every(k),
                ..c
            }),
            other => other,
        }
    }

    /// `"auto"`, `"all-pairs"` or `"cells"`.
    pub fn name(&self) -> &'static str {
        match self {
            Neighbours::Auto => "auto",
            Neighbours::AllPairs => "all-pairs",
            Neighbours::Cells { .. } => "cells",
        }
    }
}

/// The default skin of [`Neighbours::Auto`], in units of `sigma` (LAMMPS's
/// default for `units lj`).
pub const DEFAULT_SKIN_SIGMA: f64 = 0.3;

/// What a force law with a space and an enumeration resolves to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Enumeration {
    /// Every pair.
    AllPairs,
    /// Cells and Verlet lists.
    Cells {
        /// The skin, in `f32`.
        skin: f32,
        /// When to rebuild.
        rebuild: Rebuild,
        /// Which lists.
        lists: Lists,
        /// The least cell side (0: `r_c + skin`).
        bin_size: f32,
    },
}

/// Checks that `force`, `boundary` and `neighbours` make sense together and
/// resolves [`Neighbours::Auto`].
pub(crate) fn resolve(
    force: &ForceLaw,
    boundary: &Boundary,
    neighbours: &Neighbours,
) -> Result<Enumeration> {
    boundary.validate()?;
    let Some(cutoff) = force.cutoff() else {
        if let Boundary::Periodic { .. } = boundary {
            return Err(Error::InvalidCombination(format!(
                "{} in a periodic box needs Ewald or particle-mesh summation, which this \
                 library does not have: use Boundary::Open for a force without a cutoff",
                force.name()
            )));
        }
        return match neighbours {
            Neighbours::Auto | Neighbours::AllPairs => Ok(Enumeration::AllPairs),
            _ => Err(Error::InvalidCombination(format!(
                "{} has no cutoff, so cell and neighbour lists cannot enumerate its pairs: use \
                 Neighbours::AllPairs (or Auto)",
                force.name()
            ))),
        };
    };
    let half_box = boundary
        .lengths_f32()
        .map(|l| 0.5 * l.iter().copied().fold(f32::INFINITY, f32::min));
    if let Some(half) = half_box
        && cutoff > half
    {
        return Err(Error::InvalidCombination(format!(
            "cutoff r_c = {cutoff} is longer than half the shortest box length ({half}): the \
             minimum image would miss pairs; use a larger box or a shorter cutoff"
        )));
    }
    let cells = match *neighbours {
        Neighbours::AllPairs => return Ok(Enumeration::AllPairs),
        Neighbours::Auto => {
            let skin = force.default_skin().unwrap_or(DEFAULT_SKIN_SIGMA) as f32;
            match half_box {
                Some(half) if cutoff + skin > half => return Ok(Enumeration::AllPairs),
                _ => CellList::new(skin as f64),
            }
        }
        Neighbours::Cells(cells) => cells,
    };
    let CellList {
        skin,
        rebuild,
        lists,
        bin_size,
    } = cells;
    let bin32 = bin_size as f32;
    if !(bin_size.is_finite() && bin_size >= 0.0 && bin32.is_finite()) {
        return Err(Error::InvalidParameter {
            name: "neighbour bin size",
            value: bin_size,
            requirement: "must be finite and >= 0 (0: r_c + skin)",
        });
    }
    let skin32 = skin as f32;
    if !(skin.is_finite() && skin >= 0.0 && skin32.is_finite()) {
        return Err(Error::InvalidParameter {
            name: "neighbour skin",
            value: skin,
            requirement: "must be finite and >= 0",
        });
    }
    if rebuild == Rebuild::Every(0) {
        return Err(Error::InvalidParameter {
            name: "neighbour rebuild interval",
            value: 0.0,
            requirement: "must be at least 1 step",
        });
    }
    if let Some(half) = half_box
        && cutoff + skin32 > half
    {
        return Err(Error::InvalidCombination(format!(
            "cutoff + skin = {cutoff} + {skin32} is longer than half the shortest box length \
             ({half}): a Verlet list could hold two images of one pair; use a smaller skin, \
             a larger box, or Neighbours::AllPairs"
        )));
    }
    Ok(Enumeration::Cells {
        skin: skin32,
        rebuild,
        lists,
        bin_size: bin32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lj(cutoff: f64) -> ForceLaw {
        ForceLaw::lennard_jones(1.0, 1.0, cutoff, false).unwrap()
    }

    #[test]
    fn nonsense_combinations_are_errors_naming_the_values() {
        let gravity = ForceLaw::default();
        let e = resolve(&gravity, &Boundary::cubic(10.0), &Neighbours::Auto).unwrap_err();
        assert!(matches!(e, Error::InvalidCombination(_)) && e.to_string().contains("Ewald"));
        let e = resolve(&gravity, &Boundary::Open, &Neighbours::cells(0.3)).unwrap_err();
        assert!(e.to_string().contains("no cutoff"), "{e}");
        let e = resolve(&lj(2.5), &Boundary::cubic(5.0), &Neighbours::cells(0.3)).unwrap_err();
        assert!(
            e.to_string().contains("2.5 + 0.3") && e.to_string().contains("2.5)"),
            "{e}"
        );
        let e = resolve(&lj(2.5), &Boundary::cubic(4.0), &Neighbours::AllPairs).unwrap_err();
        assert!(e.to_string().contains("r_c = 2.5"), "{e}");
        for bad in [0.0, -1.0, f64::NAN, 1e300] {
            let e = resolve(&lj(1.0), &Boundary::cubic(bad), &Neighbours::Auto).unwrap_err();
            assert!(matches!(e, Error::InvalidParameter { .. }), "{bad}: {e}");
        }
        let b = Boundary::Periodic {
            lengths: [10.0, 10.0, f64::INFINITY],
        };
        assert!(resolve(&lj(1.0), &b, &Neighbours::Auto).is_err());
        for skin in [-0.1, f64::NAN] {
            let e = resolve(&lj(1.0), &Boundary::Open, &Neighbours::cells(skin)).unwrap_err();
            assert!(e.to_string().contains("skin"), "{e}");
        }
        let every0 = Neighbours::cells(0.3).every(0);
        assert!(resolve(&lj(1.0), &Boundary::Open, &every0).is_err());
        let bin = Neighbours::Cells(CellList {
            bin_size: -1.0,
            ..CellList::new(0.3)
        });
        let e = resolve(&lj(1.0), &Boundary::Open, &bin).unwrap_err();
        assert!(e.to_string().contains("bin size = -1"), "{e}");
    }

    #[test]
    fn auto_picks_cells_where_the_box_allows_and_all_pairs_otherwise() {
        let cells = resolve(&lj(2.5), &Boundary::cubic(6.0), &Neighbours::Auto).unwrap();
        assert_eq!(
            cells,
            Enumeration::Cells {
                skin: 0.3,
                rebuild: Rebuild::Auto,
                lists: Lists::Auto,
                bin_size: 0.0,
            }
        );
        let small = resolve(&lj(2.5), &Boundary::cubic(5.2), &Neighbours::Auto).unwrap();
        assert_eq!(small, Enumeration::AllPairs);
        let open = resolve(&lj(2.5), &Boundary::Open, &Neighbours::Auto).unwrap();
        assert!(matches!(open, Enumeration::Cells { .. }));
        let gravity = resolve(&ForceLaw::default(), &Boundary::Open, &Neighbours::Auto).unwrap();
        assert_eq!(gravity, Enumeration::AllPairs);
    }
}
