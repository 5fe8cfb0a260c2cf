//! [`PairPotential`]: a short-range pair law ([`PairStyle`], one file per
//! law in `gpu-kernels/src/pair/`) with its coefficients per pair of atom
//! types, validated once; what [`ForceLaw::Pair`](crate::ForceLaw::Pair)
//! holds.
//!
//! | file | what |
//! | --- | --- |
//! | `mod.rs` | [`PairPotential`], [`PairCoeff`]: the validated coefficients and the kernels' table |
//! | `builder.rs` | [`PairBuilder`]: coefficients pair by pair, mixing rules, WCA, the table's layout |
//! | `spec.rs` | [`PairSpec`]: LAMMPS's `pair_style` / `pair_coeff` / `pair_modify` / `mass` commands as text |
//! | `table.rs` | [`TableFile`], [`LinearTable`]: LAMMPS table files and `pair_style table linear N` |
//!
//! Atom types are numbered from 0 here (LAMMPS numbers them from 1; so does
//! [`PairSpec`], which takes LAMMPS's commands); a body's type is in
//! [`MdState::types`](crate::md::MdState::types) (set by
//! [`SimulationBuilder::types`](crate::SimulationBuilder::types)), 0 for
//! every body unless given. Coefficients are per unordered pair `i <= j`
//! (LAMMPS's `pair_coeff I J`), each with its cutoff; pairs of unlike types
//! not given follow from the like pairs by a mixing rule
//! ([`PairBuilder::mix`], LAMMPS's `pair_modify mix`) for the styles LAMMPS
//! mixes (`lj/cut`, `lj/smooth/linear`, `yukawa`, `soft`); the shift
//! (LAMMPS's `pair_modify shift yes`) applies to all of them.
//!
//! ```
//! use nbody_host::{PairPotential, PairStyle};
//!
//! // The Kob-Andersen mixture: A-A, A-B, B-B (epsilon, sigma), r_c = 2.5 sigma.
//! let ka = PairPotential::builder(PairStyle::LennardJones, 2)
//!     .coeff(0, 0, &[1.0, 1.0], 2.5)
//!     .coeff(0, 1, &[1.5, 0.8], 2.0)
//!     .coeff(1, 1, &[0.5, 0.88], 2.2)
//!     .shift(true)
//!     .build()?;
//! assert_eq!(ka.types(), 2);
//! assert_eq!(ka.max_cutoff(), 2.5);
//! assert_eq!(ka.coeff(1, 0).params(), &[1.5, 0.8]);
//! # Ok::<(), nbody_host::Error>(())
//! ```
//!
//! A run of Morse (LAMMPS's `pair_style morse`, coefficients `D0 alpha
//! r0`), with one type and with two (the same example is in `docs/md.md`):
//!
//! ```
//! use nbody_host::md::Neighbours;
//! use nbody_host::{Backend, ForceLaw, Integrator, PairPotential, PairStyle, Simulation, ic};
//!
//! let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.0, 5)?;
//! // Morse, one type: D0 = 1, alpha = 3, r0 = 1.1, r_c = 2.5, shifted.
//! let morse = ForceLaw::pair(PairStyle::Morse, &[1.0, 3.0, 1.1], 2.5, true)?;
//! // Two types (numbered from 0 here, from 1 in LAMMPS): one atom in five of type 1.
//! let two = PairPotential::builder(PairStyle::Morse, 2)
//!     .coeff(0, 0, &[1.0, 3.0, 1.1], 2.5)
//!     .coeff(0, 1, &[1.5, 2.5, 1.0], 2.2)
//!     .coeff(1, 1, &[0.5, 4.0, 1.2], 2.4)
//!     .shift(true)
//!     .build()?;
//! let one_in_five = (0..256).map(|i| u32::from(i % 5 == 4)).collect();
//! for (force, types) in [(morse, vec![]), (ForceLaw::Pair(two), one_in_five)] {
//!     let mut sim = Simulation::builder(atoms.clone())
//!         .force(force)
//!         .types(types)
//!         .boundary(boundary)
//!         .neighbours(Neighbours::cells(0.3))
//!         .integrator(Integrator::VELOCITY_VERLET)
//!         .dt(0.002)
//!         .backend(Backend::cpu())
//!         .build()?;
//!     let e0 = sim.thermo()?.total;
//!     sim.step(50)?;
//!     assert!((sim.thermo()?.total - e0).abs() < 1e-2);
//! }
//! # Ok::<(), nbody_host::Error>(())
//! ```

mod builder;
mod spec;
mod table;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use gpu_kernels::pair::{Coeffs, MAX_PARAMS, PairSetup, Visitor};
pub use gpu_kernels::pair::{Mixing, Reference, Style as PairStyle};

pub use builder::PairBuilder;
pub use spec::{PairSpec, types_from_lammps};
pub use table::{LinearTable, TableFile, TableSection};

use crate::error::{Error, Result};

/// The most atom types a potential may have (its table has `types^2` rows).
pub const MAX_TYPES: u32 = 64;

/// One pair of types' coefficients: the law's, in `pair_coeff` order, the
/// cutoff, and a tabulated law's data; validated.
#[derive(Clone, Debug, PartialEq)]
pub struct PairCoeff {
    params: [f64; MAX_PARAMS],
    len: usize,
    cutoff: f64,
    /// The law's tabulated values (`table`: LAMMPS's arrays, see
    /// `gpu_kernels::pair::table`), empty for the analytic laws.
    data: Arc<[f64]>,
    /// Made by the mixing rule, not given.
    mixed: bool,
}

impl PairCoeff {
    /// The law's coefficients ([`PairStyle::params`] names them), as
    /// given or mixed (`f64`; the kernels' words are rounded to `f32` from
    /// them).
    pub fn params(&self) -> &[f64] {
        &self.params[..self.len]
    }

    /// The cutoff `r_c`, rounded to `f32`: pairs farther apart do not interact.
    pub fn cutoff(&self) -> f32 {
        self.cutoff as f32
    }

    /// The cutoff as given (or mixed), in `f64`.
    pub fn cutoff_f64(&self) -> f64 {
        self.cutoff
    }

    /// A tabulated law's data (the `table` style's: `innersq, delta,
    /// invdelta, N, e[N], f[N]`, LAMMPS's arrays), empty otherwise.
    pub fn data(&self) -> &[f64] {
        &self.data
    }

    /// Whether a mixing rule made these coefficients (LAMMPS's pairs of
    /// unlike types without a `pair_coeff`).
    pub fn is_mixed(&self) -> bool {
        self.mixed
    }

    /// What the law's setup reads.
    pub(crate) fn coeffs(&self) -> Coeffs<'_> {
        Coeffs {
            params: self.params(),
            cutoff: self.cutoff,
            data: &self.data,
        }
    }
}

/// A pair law with its coefficients per pair of atom types (see the module
/// documentation). Cheap to clone: the tables are shared.
#[derive(Clone, Debug, PartialEq)]
pub struct PairPotential {
    style: PairStyle,
    types: u32,
    shift: bool,
    mixing: Option<Mixing>,
    /// Per pair `i <= j`, row by row (`tri(i, j)`).
    coeffs: Arc<[PairCoeff]>,
    /// The kernels' table: `types^2` rows of `style.row_words()` words,
    /// symmetric, then the pairs' tabulated data (none for analytic laws).
    table: Arc<[f32]>,
}

/// The index of the unordered pair `(i, j)` among `types`' pairs `i <= j`.
fn tri(types: u32, i: u32, j: u32) -> usize {
    let (i, j) = (i.min(j) as usize, i.max(j) as usize);
    i * types as usize - i * (i + 1) / 2 + j
}

/// `L`'s `f64` reference, for [`PairStyle::visit`].
struct Evaluate<'a> {
    c: Coeffs<'a>,
    r2: f64,
}

impl Visitor for Evaluate<'_> {
    type Output = Reference;
    fn visit<L: PairSetup>(self) -> Reference {
        L::reference(&self.c, self.r2)
    }
}

/// What a law is, beyond its name: for [`PairStyle::visit`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Facts {
    /// The length-scale coefficient.
    pub length: Option<usize>,
    /// Example coefficients and cutoff.
    pub example: &'static [f32],
    /// Whether it takes the shift.
    pub shift: bool,
    /// Values of its example data (tabulated laws).
    pub example_data: usize,
}

/// [`Facts`] of a law.
pub(crate) struct GetFacts;

impl Visitor for GetFacts {
    type Output = Facts;
    fn visit<L: PairSetup>(self) -> Facts {
        Facts {
            length: L::LENGTH,
            example: L::EXAMPLE,
            shift: L::SHIFT,
            example_data: L::EXAMPLE_DATA,
        }
    }
}

/// A law's example data for a cutoff.
struct ExampleData(f64);

impl Visitor for ExampleData {
    type Output = Vec<f64>;
    fn visit<L: PairSetup>(self) -> Vec<f64> {
        let mut out = vec![0.0; L::EXAMPLE_DATA];
        L::example_data(self.0, &mut out);
        out
    }
}

impl PairPotential {
    /// One atom type: `style` with `params` (in `pair_coeff` order), the
    /// cutoff `r_c` and the shift; each value checked, a bad one named
    /// ([`Error::InvalidParameter`]).
    pub fn new(
        style: PairStyle,
        params: &[f64],
        cutoff: f64,
        shift: bool,
    ) -> Result<PairPotential> {
        PairPotential::builder(style, 1)
            .coeff(0, 0, params, cutoff)
            .shift(shift)
            .build()
    }

    /// The Weeks-Chandler-Andersen repulsion, one atom type: `lj/cut` with
    /// `epsilon`, `sigma`, cut at the minimum `2^(1/6) sigma` and shifted
    /// (LAMMPS: `pair_style lj/cut 1.122462`, `pair_coeff 1 1 eps sigma`,
    /// `pair_modify shift yes`). Several types: [`PairBuilder::wca`].
    pub fn wca(epsilon: f64, sigma: f64) -> Result<PairPotential> {
        PairPotential::builder(PairStyle::LennardJones, 1)
            .wca(0, 0, epsilon, sigma)
            .shift(true)
            .build()
    }

    /// `types` atom types, their coefficients to be given pair by pair.
    pub fn builder(style: PairStyle, types: u32) -> PairBuilder {
        PairBuilder::new(style, types)
    }

    /// The law.
    pub fn style(&self) -> PairStyle {
        self.style
    }

    /// The number of atom types.
    pub fn types(&self) -> u32 {
        self.types
    }

    /// Whether the energy is shifted to zero at each pair's cutoff.
    pub fn shift(&self) -> bool {
        self.shift
    }

    /// The mixing rule that made the pairs not given, if any was set.
    pub fn mixing(&self) -> Option<Mixing> {
        self.mixing
    }

    /// The coefficients of types `i` and `j` (either order; panics past
    /// [`types`](Self::types)).
    pub fn coeff(&self, i: u32, j: u32) -> &PairCoeff {
        assert!(
            i < self.types && j < self.types,
            "types {i}, {j} of {}",
            self.types
        );
        &self.coeffs[tri(self.types, i, j)]
    }

    /// The longest cutoff, rounded to `f32`: what the neighbour lists must
    /// reach.
    pub fn max_cutoff(&self) -> f32 {
        self.coeffs.iter().fold(0.0, |m, c| m.max(c.cutoff()))
    }

    /// The default neighbour skin: 0.3 of the law's length scale (LJ's
    /// `sigma`, largest over the type pairs), LAMMPS's `0.3 sigma` in
    /// `units lj`; 0.3 for a law without one.
    pub fn default_skin(&self) -> f64 {
        match self.style.visit(GetFacts).length {
            Some(k) => {
                let scale = self.coeffs.iter().fold(0.0f64, |m, c| m.max(c.params[k]));
                (0.3 * scale) as f32 as f64
            }
            None => 0.3,
        }
    }

    /// The kernels' coefficient table: `types^2` rows of
    /// `style().row_words()` words, then the tabulated data.
    pub(crate) fn table(&self) -> &[f32] {
        &self.table
    }

    /// `u(r)` (unshifted), `F / r` and their term magnitudes of types `i`
    /// and `j` at `r^2`, in `f64` from the coefficients: the law's textbook
    /// formula (the oracle's).
    pub fn reference(&self, i: u32, j: u32, r2: f64) -> Reference {
        let c = self.coeff(i, j);
        self.style.visit(Evaluate { c: c.coeffs(), r2 })
    }

    /// `u(r_c)` of types `i` and `j` when shifted (what each pair within the
    /// cutoff subtracts), else 0, in `f64`.
    pub fn offset(&self, i: u32, j: u32) -> f64 {
        if !self.shift {
            return 0.0;
        }
        let rc = self.coeff(i, j).cutoff;
        self.reference(i, j, rc * rc).energy
    }

    /// Checks that `types` (one per body, empty: all 0) are below
    /// [`types`](Self::types), naming the first type that is not.
    pub(crate) fn check_types(&self, types: &[u32]) -> Result<()> {
        match types.iter().position(|&t| t >= self.types) {
            None => Ok(()),
            // The variant and text of before the mixtures (`atom type = N`):
            // exit status 3 (invalid input) in the examples.
            Some(i) => Err(Error::InvalidParameter {
                name: "atom type",
                value: types[i] as f64,
                requirement: if self.types == 1 {
                    "must be 0: the pair potential has one atom type (types numbered from 0 here, \
                     from 1 in LAMMPS)"
                } else {
                    "must be below the pair potential's number of types (types numbered from 0 \
                     here, from 1 in LAMMPS): give every type its coefficients"
                },
            }),
        }
    }

    /// The law's typical coefficients (its tests' and examples'), for
    /// `types` atom types, each pair of types its own: pair `(i, j)` has
    /// the law's length scale times `1 - 0.1 (i + j)` (at least 0.5), and
    /// its first coefficient (the energy scale of the styles here) times
    /// 1.5 between different types and `1 / (1 + i / 2)` between type `i`
    /// and itself: with two Lennard-Jones types, close to the Kob-Andersen
    /// mixture. The cutoff is `cutoff` (`None`: the law's typical one)
    /// times the same length factor. The `table` style tabulates
    /// Lennard-Jones (its example data) for each pair's cutoff, times the
    /// energy factor.
    pub fn example(
        style: PairStyle,
        types: u32,
        cutoff: Option<f64>,
        shift: bool,
    ) -> Result<PairPotential> {
        let facts = style.visit(GetFacts);
        let n = style.params().len();
        let typical = facts.example;
        let rc = cutoff.unwrap_or(typical[n] as f64);
        let mut b = PairPotential::builder(style, types).shift(shift && facts.shift);
        for i in 0..types {
            for j in i..types {
                let scale = (1.0 - 0.1 * (i + j) as f64).max(0.5);
                let energy = if i == j {
                    1.0 / (1.0 + i as f64 / 2.0)
                } else {
                    1.5
                };
                let mut params: Vec<f64> = typical[..n].iter().map(|&x| x as f64).collect();
                if let Some(k) = facts.length {
                    params[k] *= scale;
                }
                if n > 0 && facts.length != Some(0) {
                    params[0] *= energy;
                }
                b = if facts.example_data > 0 {
                    // The tabulated energies and forces times the energy factor.
                    let mut data = style.visit(ExampleData(rc * scale));
                    for x in &mut data[4..] {
                        *x *= energy;
                    }
                    b.coeff_data(i, j, &params, rc * scale, data.into())
                } else {
                    b.coeff(i, j, &params, rc * scale)
                };
            }
        }
        b.build()
    }
}

impl std::fmt::Display for PairPotential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = self.style.params();
        write!(f, "{}", self.style.name())?;
        if self.types == 1 {
            let c = &self.coeffs[0];
            f.write_str(" (")?;
            for (name, v) in names.iter().zip(c.params()) {
                write!(f, "{name} {v}, ")?;
            }
            if !c.data.is_empty() {
                write!(f, "{} points, ", c.data.len().saturating_sub(4) / 2)?;
            }
            write!(f, "cutoff {}, ", c.cutoff)?;
        } else {
            write!(f, " ({} types, ", self.types)?;
            if let Some(m) = self.mixing {
                write!(f, "mixed {}, ", m.name())?;
            }
        }
        f.write_str(if self.shift {
            "shifted)"
        } else {
            "not shifted)"
        })
    }
}
