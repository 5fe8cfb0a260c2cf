//! [`PairPotential`]: a short-range pair law ([`PairStyle`], one file per
//! law in `gpu-kernels/src/pair/`) with its coefficients per pair of atom
//! types, validated once; what [`ForceLaw::Pair`](crate::ForceLaw::Pair)
//! holds.
//!
//! Atom types are numbered from 0 here (LAMMPS numbers them from 1); a
//! body's type is in [`MdState::types`](crate::md::MdState::types) (set by
//! [`SimulationBuilder::types`](crate::SimulationBuilder::types)), 0 for
//! every body unless given. Coefficients are per unordered pair `i <= j`
//! (LAMMPS's `pair_coeff I J`), each with its cutoff; the shift (LAMMPS's
//! `pair_modify shift yes`) applies to all of them.
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

use std::sync::Arc;

use gpu_kernels::pair::{Invalid, MAX_PARAMS, PairSetup, Visitor};
pub use gpu_kernels::pair::{Reference, Style as PairStyle};

use crate::error::{Error, Result};

/// The most atom types a potential may have (its table has `types^2` rows).
pub const MAX_TYPES: u32 = 64;

/// One pair of types' coefficients: the law's, in `pair_coeff` order, and
/// the cutoff; validated, and rounded to `f32` (the precision the engines
/// compute in, and what files store).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairCoeff {
    params: [f32; MAX_PARAMS],
    len: usize,
    cutoff: f32,
}

impl PairCoeff {
    /// The law's coefficients ([`PairStyle::params`] names them).
    pub fn params(&self) -> &[f32] {
        &self.params[..self.len]
    }

    /// The cutoff `r_c`: pairs farther apart do not interact.
    pub fn cutoff(&self) -> f32 {
        self.cutoff
    }

    /// The coefficients widened to `f64` (exactly).
    pub(crate) fn params_f64(&self) -> Vec<f64> {
        self.params().iter().map(|&x| x as f64).collect()
    }
}

/// A pair law with its coefficients per pair of atom types (see the module
/// documentation). Cheap to clone: the tables are shared.
#[derive(Clone, Debug, PartialEq)]
pub struct PairPotential {
    style: PairStyle,
    types: u32,
    shift: bool,
    /// Per pair `i <= j`, row by row (`tri(i, j)`).
    coeffs: Arc<[PairCoeff]>,
    /// The kernels' table: `types^2` rows of `style.row_words()` words,
    /// symmetric.
    table: Arc<[f32]>,
}

/// The index of the unordered pair `(i, j)` among `types`' pairs `i <= j`.
fn tri(types: u32, i: u32, j: u32) -> usize {
    let (i, j) = (i.min(j) as usize, i.max(j) as usize);
    i * types as usize - i * (i + 1) / 2 + j
}

/// The law's refusal as this crate's error.
fn invalid(e: Invalid) -> Error {
    Error::InvalidParameter {
        name: e.name,
        value: e.value,
        requirement: e.requirement,
    }
}

/// `L`'s table row from coefficients, for [`PairStyle::visit`].
struct FillRow<'a> {
    params: &'a [f64],
    cutoff: f64,
    shift: bool,
    row: &'a mut [f32],
}

impl Visitor for FillRow<'_> {
    type Output = std::result::Result<(), Invalid>;
    fn visit<L: PairSetup>(self) -> Self::Output {
        gpu_kernels::pair::fill_row::<L>(self.params, self.cutoff, self.shift, self.row)
    }
}

/// `L`'s `f64` reference, for [`PairStyle::visit`].
struct Evaluate<'a> {
    params: &'a [f64],
    r2: f64,
}

impl Visitor for Evaluate<'_> {
    type Output = Reference;
    fn visit<L: PairSetup>(self) -> Reference {
        L::reference(self.params, self.r2)
    }
}

/// `L`'s length scale coefficient and example, for [`PairStyle::visit`].
struct Facts;

impl Visitor for Facts {
    type Output = (Option<usize>, &'static [f32]);
    fn visit<L: PairSetup>(self) -> Self::Output {
        (L::LENGTH, L::EXAMPLE)
    }
}

/// Checks `params` (as many as the style has) and the cutoff, and returns
/// the coefficients rounded to `f32` and their table row.
fn check(
    style: PairStyle,
    params: &[f64],
    cutoff: f64,
    shift: bool,
) -> Result<(PairCoeff, Vec<f32>)> {
    let names = style.params();
    if params.len() != names.len() {
        return Err(Error::InvalidCombination(format!(
            "pair style {} takes {} coefficients ({}), not {}",
            style.name(),
            names.len(),
            names.join(" "),
            params.len()
        )));
    }
    let c32 = cutoff as f32;
    if !(cutoff.is_finite() && cutoff > 0.0 && c32.is_finite() && c32 >= f32::MIN_POSITIVE) {
        return Err(Error::InvalidParameter {
            name: "pair cutoff",
            value: cutoff,
            requirement: "must be finite and > 0 (a normal f32)",
        });
    }
    let mut row = vec![0.0; style.row_words() as usize];
    // The values as given first (an error names them), then as the engines see them.
    style
        .visit(FillRow {
            params,
            cutoff,
            shift,
            row: &mut row,
        })
        .map_err(invalid)?;
    let mut coeff = PairCoeff {
        params: [0.0; MAX_PARAMS],
        len: params.len(),
        cutoff: c32,
    };
    for (c, &p) in coeff.params.iter_mut().zip(params) {
        *c = p as f32;
    }
    style
        .visit(FillRow {
            params: &coeff.params_f64(),
            cutoff: c32 as f64,
            shift,
            row: &mut row,
        })
        .map_err(invalid)?;
    Ok((coeff, row))
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

    /// `types` atom types, their coefficients to be given pair by pair.
    pub fn builder(style: PairStyle, types: u32) -> PairBuilder {
        PairBuilder {
            style,
            types,
            shift: false,
            given: Vec::new(),
        }
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

    /// The longest cutoff: what the neighbour lists must reach.
    pub fn max_cutoff(&self) -> f32 {
        self.coeffs.iter().fold(0.0, |m, c| m.max(c.cutoff))
    }

    /// The default neighbour skin: 0.3 of the law's length scale (LJ's
    /// `sigma`, largest over the type pairs), LAMMPS's `0.3 sigma` in
    /// `units lj`; 0.3 for a law without one.
    pub fn default_skin(&self) -> f64 {
        match self.style.visit(Facts).0 {
            Some(k) => {
                let scale = self
                    .coeffs
                    .iter()
                    .fold(0.0f64, |m, c| m.max(c.params[k] as f64));
                (0.3 * scale) as f32 as f64
            }
            None => 0.3,
        }
    }

    /// The kernels' coefficient table: `types^2` rows of
    /// `style().row_words()` words.
    pub(crate) fn table(&self) -> &[f32] {
        &self.table
    }

    /// `u(r)` (unshifted), `F / r` and their term magnitudes of types `i`
    /// and `j` at `r^2`, in `f64` from the `f32` coefficients: the law's
    /// textbook formula (the oracle's).
    pub fn reference(&self, i: u32, j: u32, r2: f64) -> Reference {
        let c = self.coeff(i, j);
        self.style.visit(Evaluate {
            params: &c.params_f64(),
            r2,
        })
    }

    /// `u(r_c)` of types `i` and `j` when shifted (what each pair within the
    /// cutoff subtracts), else 0, in `f64`.
    pub fn offset(&self, i: u32, j: u32) -> f64 {
        if !self.shift {
            return 0.0;
        }
        let rc = self.coeff(i, j).cutoff as f64;
        self.reference(i, j, rc * rc).energy
    }

    /// Checks that `types` (one per body, empty: all 0) are below
    /// [`types`](Self::types), naming the first body that is not.
    pub(crate) fn check_types(&self, types: &[u32]) -> Result<()> {
        match types.iter().position(|&t| t >= self.types) {
            None => Ok(()),
            Some(i) => Err(Error::InvalidParameter {
                name: "atom type",
                value: types[i] as f64,
                requirement: if self.types == 1 {
                    "must be 0: the pair potential has one atom type"
                } else {
                    "must be below the pair potential's number of types"
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
    /// times the same length factor.
    pub fn example(
        style: PairStyle,
        types: u32,
        cutoff: Option<f64>,
        shift: bool,
    ) -> Result<PairPotential> {
        let (length, typical) = style.visit(Facts);
        let n = style.params().len();
        let rc = cutoff.unwrap_or(typical[n] as f64);
        let mut b = PairPotential::builder(style, types).shift(shift);
        for i in 0..types {
            for j in i..types {
                let scale = (1.0 - 0.1 * (i + j) as f64).max(0.5);
                let energy = if i == j {
                    1.0 / (1.0 + i as f64 / 2.0)
                } else {
                    1.5
                };
                let mut params: Vec<f64> = typical[..n].iter().map(|&x| x as f64).collect();
                if let Some(k) = length {
                    params[k] *= scale;
                }
                if length != Some(0) {
                    params[0] *= energy;
                }
                b = b.coeff(i, j, &params, rc * scale);
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
            write!(f, "cutoff {}, ", c.cutoff)?;
        } else {
            write!(f, " ({} types, ", self.types)?;
        }
        f.write_str(if self.shift {
            "shifted)"
        } else {
            "not shifted)"
        })
    }
}

/// Coefficients of a [`PairPotential`] given pair by pair
/// ([`PairPotential::builder`]); [`build`](Self::build) checks them all.
#[derive(Clone, Debug)]
pub struct PairBuilder {
    style: PairStyle,
    types: u32,
    shift: bool,
    given: Vec<(u32, u32, Vec<f64>, f64)>,
}

impl PairBuilder {
    /// The coefficients of types `i` and `j` (either order; 0-based), in
    /// `pair_coeff` order, and their cutoff. A pair given twice keeps the
    /// last.
    pub fn coeff(mut self, i: u32, j: u32, params: &[f64], cutoff: f64) -> PairBuilder {
        self.given
            .push((i.min(j), i.max(j), params.to_vec(), cutoff));
        self
    }

    /// Shift every pair's energy to zero at its cutoff.
    pub fn shift(mut self, shift: bool) -> PairBuilder {
        self.shift = shift;
        self
    }

    /// The potential: every pair of types given, every value valid (the
    /// first bad one named), `1 <= types <= ` [`MAX_TYPES`].
    pub fn build(self) -> Result<PairPotential> {
        let t = self.types;
        if !(1..=MAX_TYPES).contains(&t) {
            return Err(Error::InvalidParameter {
                name: "number of atom types",
                value: t as f64,
                requirement: "must be in 1..=64",
            });
        }
        let pairs = (t * (t + 1) / 2) as usize;
        let mut coeffs: Vec<Option<(PairCoeff, Vec<f32>)>> = vec![None; pairs];
        for (i, j, params, cutoff) in &self.given {
            if *j >= t {
                return Err(Error::InvalidCombination(format!(
                    "pair coefficients for types {i} {j}: the potential has {t} types (0 to {})",
                    t - 1
                )));
            }
            coeffs[tri(t, *i, *j)] = Some(check(self.style, params, *cutoff, self.shift)?);
        }
        let words = self.style.row_words() as usize;
        let mut table = vec![0.0f32; (t * t) as usize * words];
        let mut out = Vec::with_capacity(pairs);
        for i in 0..t {
            for j in i..t {
                let Some((coeff, row)) = &coeffs[tri(t, i, j)] else {
                    return Err(Error::InvalidCombination(format!(
                        "no pair coefficients for types {i} {j} ({} pair style, {t} types: \
                         every pair i <= j needs its coefficients)",
                        self.style.name()
                    )));
                };
                out.push(*coeff);
                for (a, b) in [(i, j), (j, i)] {
                    let at = (a * t + b) as usize * words;
                    table[at..at + words].copy_from_slice(row);
                }
            }
        }
        Ok(PairPotential {
            style: self.style,
            types: t,
            shift: self.shift,
            coeffs: out.into(),
            table: table.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_symmetric_and_every_pair_is_needed() {
        let lj = PairStyle::LennardJones;
        let p = PairPotential::builder(lj, 3)
            .coeff(0, 0, &[1.0, 1.0], 2.5)
            .coeff(2, 0, &[1.5, 0.8], 2.0)
            .coeff(0, 1, &[1.2, 0.9], 2.2)
            .coeff(1, 1, &[0.5, 0.88], 2.2)
            .coeff(1, 2, &[0.7, 1.1], 2.4)
            .coeff(2, 2, &[0.9, 0.95], 2.3)
            .build()
            .unwrap();
        let w = lj.row_words() as usize;
        for i in 0..3u32 {
            for j in 0..3u32 {
                let (a, b) = ((i * 3 + j) as usize * w, (j * 3 + i) as usize * w);
                assert_eq!(p.table()[a..a + w], p.table()[b..b + w]);
                assert_eq!(p.coeff(i, j), p.coeff(j, i));
            }
        }
        assert_eq!(p.coeff(0, 2).params(), &[1.5, 0.8]);
        assert_eq!(p.max_cutoff(), 2.5);
        let missing = PairPotential::builder(lj, 2)
            .coeff(0, 0, &[1.0, 1.0], 2.5)
            .coeff(1, 1, &[1.0, 1.0], 2.5)
            .build()
            .unwrap_err();
        assert!(missing.to_string().contains("types 0 1"), "{missing}");
        let e = PairPotential::builder(lj, 2)
            .coeff(0, 2, &[1.0, 1.0], 2.5)
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("types 0 2"), "{e}");
        let e = PairPotential::new(lj, &[1.0], 2.5, false).unwrap_err();
        assert!(e.to_string().contains("epsilon sigma"), "{e}");
        for bad in [0.0, -1.0, f64::NAN, 1e-50, 1e300] {
            let e = PairPotential::new(lj, &[1.0, 1.0], bad, false).unwrap_err();
            assert!(e.to_string().contains("cutoff"), "{e}");
        }
        assert!(PairPotential::builder(lj, 0).build().is_err());
        assert!(p.check_types(&[0, 2, 1]).is_ok());
        let e = p.check_types(&[0, 3]).unwrap_err();
        assert!(e.to_string().contains("atom type = 3"), "{e}");
    }

    #[test]
    fn examples_give_every_pair_of_types_its_own_coefficients() {
        for &style in PairStyle::ALL {
            let one = PairPotential::example(style, 1, None, false).unwrap();
            assert_eq!(one.coeff(0, 0).params().len(), style.params().len());
            let three = PairPotential::example(style, 3, Some(2.0), true).unwrap();
            let c: Vec<&PairCoeff> = [(0, 0), (0, 1), (1, 1), (0, 2), (2, 2)]
                .iter()
                .map(|&(i, j)| three.coeff(i, j))
                .collect();
            for (k, a) in c.iter().enumerate() {
                for b in &c[k + 1..] {
                    assert_ne!(a, b, "{}", style.name());
                }
            }
            assert_eq!(three.max_cutoff(), 2.0);
        }
    }

    #[test]
    fn the_offset_is_the_energy_at_the_cutoff() {
        let p = PairPotential::new(PairStyle::LennardJones, &[1.0, 1.0], 2.5, true).unwrap();
        assert!((p.offset(0, 0) + 0.016316891136).abs() < 1e-12);
        assert_eq!(p.default_skin(), 0.3f32 as f64);
        assert_eq!(
            p.to_string(),
            "lj/cut (epsilon 1, sigma 1, cutoff 2.5, shifted)"
        );
    }
}
