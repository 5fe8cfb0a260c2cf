//! [`PairBuilder`]: a potential's coefficients pair by pair, the pairs not
//! given mixed (LAMMPS's `init_one`), everything validated once, and the
//! kernels' table laid out: `types^2` rows, then each pair's tabulated
//! data (the `table` style's), found from its row.

use std::sync::Arc;

use gpu_kernels::pair::{Coeffs, Invalid, MAX_PARAMS, PairSetup, Visitor};

use super::{GetFacts, Mixing, PairCoeff, PairPotential, PairStyle, tri};
use crate::error::{Error, Result};

/// The most words the kernels' table may hold: its indices are `f32`
/// integers in the rows, exact below `2^24`.
const MAX_TABLE_WORDS: usize = 1 << 24;

/// One pair as given.
#[derive(Clone, Debug)]
struct Given {
    i: u32,
    j: u32,
    params: Vec<f64>,
    cutoff: f64,
    data: Arc<[f64]>,
}

/// Coefficients of a [`PairPotential`] given pair by pair
/// ([`PairPotential::builder`]); [`build`](Self::build) checks them all.
#[derive(Clone, Debug)]
pub struct PairBuilder {
    style: PairStyle,
    types: u32,
    shift: bool,
    mixing: Option<Mixing>,
    given: Vec<Given>,
    /// How types are numbered in messages: 0 here, 1 for LAMMPS's
    /// commands (`PairSpec`).
    first_type: u32,
}

/// The law's refusal as this crate's error.
fn invalid(e: Invalid) -> Error {
    Error::InvalidParameter {
        name: e.name,
        value: e.value,
        requirement: e.requirement,
    }
}

/// `L`'s table row and data, for [`PairStyle::visit`].
struct FillRow<'a> {
    c: Coeffs<'a>,
    shift: bool,
    row: &'a mut [f32],
    data: &'a mut [f32],
    base: u32,
}

impl Visitor for FillRow<'_> {
    type Output = std::result::Result<(), Invalid>;
    fn visit<L: PairSetup>(self) -> Self::Output {
        gpu_kernels::pair::fill_row::<L>(&self.c, self.shift, self.row, self.data, self.base)
    }
}

/// `L`'s data words for coefficients.
struct DataWords<'a>(Coeffs<'a>);

impl Visitor for DataWords<'_> {
    type Output = usize;
    fn visit<L: PairSetup>(self) -> usize {
        L::data_words(&self.0)
    }
}

/// `L`'s mixing of two like pairs.
struct Mix<'a> {
    rule: Mixing,
    ii: Coeffs<'a>,
    jj: Coeffs<'a>,
}

impl Visitor for Mix<'_> {
    type Output = Option<([f64; MAX_PARAMS], f64)>;
    fn visit<L: PairSetup>(self) -> Self::Output {
        let mut params = [0.0; MAX_PARAMS];
        L::mix(self.rule, &self.ii, &self.jj, &mut params).map(|rc| (params, rc))
    }
}

impl PairBuilder {
    pub(super) fn new(style: PairStyle, types: u32) -> PairBuilder {
        PairBuilder {
            style,
            types,
            shift: false,
            mixing: None,
            given: Vec::new(),
            first_type: 0,
        }
    }

    /// The coefficients of types `i` and `j` (either order; 0-based), in
    /// `pair_coeff` order, and their cutoff. A pair given twice keeps the
    /// last.
    pub fn coeff(self, i: u32, j: u32, params: &[f64], cutoff: f64) -> PairBuilder {
        self.coeff_data(i, j, params, cutoff, Arc::from([]))
    }

    /// A pair with tabulated data (the `table` style: see
    /// [`tabulated`](Self::tabulated)).
    pub(crate) fn coeff_data(
        mut self,
        i: u32,
        j: u32,
        params: &[f64],
        cutoff: f64,
        data: Arc<[f64]>,
    ) -> PairBuilder {
        self.given.push(Given {
            i: i.min(j),
            j: i.max(j),
            params: params.to_vec(),
            cutoff,
            data,
        });
        self
    }

    /// Types `i` and `j` of the `table` style: LAMMPS's resampled table
    /// ([`LinearTable`](super::LinearTable), from a file section and
    /// `pair_style table linear N`), whose cutoff is the pair's.
    pub fn tabulated(self, i: u32, j: u32, table: &super::LinearTable) -> PairBuilder {
        self.coeff_data(i, j, &[], table.cutoff(), table.data().into())
    }

    /// The Weeks-Chandler-Andersen repulsion between types `i` and `j`:
    /// Lennard-Jones `epsilon`, `sigma` cut at `2^(1/6) sigma` (for
    /// [`PairStyle::LennardJones`], with [`shift`](Self::shift)`(true)`).
    pub fn wca(self, i: u32, j: u32, epsilon: f64, sigma: f64) -> PairBuilder {
        self.coeff(i, j, &[epsilon, sigma], 2f64.powf(1.0 / 6.0) * sigma)
    }

    /// Shift every pair's energy to zero at its cutoff (refused by the
    /// `table` style, as LAMMPS does not shift it).
    pub fn shift(mut self, shift: bool) -> PairBuilder {
        self.shift = shift;
        self
    }

    /// Pairs of unlike types not given follow from the like pairs by this
    /// rule (LAMMPS's `pair_modify mix`), for the styles LAMMPS mixes
    /// (`lj/cut`, `lj/smooth/linear`, `yukawa`, `soft`; the others, as in
    /// LAMMPS, need every pair). Without it every pair must be given.
    pub fn mix(mut self, rule: Mixing) -> PairBuilder {
        self.mixing = Some(rule);
        self
    }

    /// Types in messages numbered from `first` (1: LAMMPS's).
    pub(crate) fn numbered_from(mut self, first: u32) -> PairBuilder {
        self.first_type = first;
        self
    }

    /// Checks one pair's coefficients and cutoff.
    fn check(&self, g: &Given, mixed: bool) -> Result<PairCoeff> {
        let style = self.style;
        let names = style.params();
        let (a, b) = (g.i + self.first_type, g.j + self.first_type);
        if g.params.len() != names.len() {
            return Err(Error::InvalidCombination(format!(
                "pair coefficients for types {a} {b}: pair style {} takes {} coefficients ({}), \
                 not {}",
                style.name(),
                names.len(),
                names.join(" "),
                g.params.len()
            )));
        }
        let c = g.cutoff;
        let c32 = c as f32;
        if !(c.is_finite() && c > 0.0 && c32.is_finite() && c32 >= f32::MIN_POSITIVE) {
            return Err(Error::InvalidParameter {
                name: "pair cutoff",
                value: c,
                requirement: "must be finite and > 0 (a normal f32)",
            });
        }
        let mut coeff = PairCoeff {
            params: [0.0; MAX_PARAMS],
            len: g.params.len(),
            cutoff: c,
            data: g.data.clone(),
            mixed,
        };
        coeff.params[..coeff.len].copy_from_slice(&g.params);
        let mut row = vec![0.0; style.row_words() as usize];
        let words = style.visit(DataWords(coeff.coeffs()));
        let mut data = vec![0.0; words];
        style
            .visit(FillRow {
                c: coeff.coeffs(),
                shift: false,
                row: &mut row,
                data: &mut data,
                base: 0,
            })
            .map_err(invalid)?;
        Ok(coeff)
    }

    /// The potential: every pair of types given or mixed, every value valid
    /// (the first bad one named), `1 <= types <= ` [`MAX_TYPES`](super::MAX_TYPES).
    pub fn build(self) -> Result<PairPotential> {
        let t = self.types;
        let first = self.first_type;
        let name = self.style.name();
        if !(1..=super::MAX_TYPES).contains(&t) {
            return Err(Error::InvalidParameter {
                name: "number of atom types",
                value: t as f64,
                requirement: "must be in 1..=64",
            });
        }
        if self.shift && !self.style.visit(GetFacts).shift {
            return Err(Error::InvalidCombination(format!(
                "pair style {name} takes no shift (LAMMPS ignores pair_modify shift for it): \
                 tabulate the energy you want, and leave the shift off"
            )));
        }
        let pairs = (t * (t + 1) / 2) as usize;
        let mut coeffs: Vec<Option<PairCoeff>> = vec![None; pairs];
        for g in &self.given {
            if g.j >= t {
                return Err(Error::InvalidCombination(format!(
                    "pair coefficients for types {} {}: the potential has {t} atom type{} \
                     ({first} to {})",
                    g.i + first,
                    g.j + first,
                    if t == 1 { "" } else { "s" },
                    t - 1 + first
                )));
            }
            coeffs[tri(t, g.i, g.j)] = Some(self.check(g, false)?);
        }
        // Pairs not given: mixed from the like pairs (LAMMPS's init_one).
        for i in 0..t {
            for j in i + 1..t {
                if coeffs[tri(t, i, j)].is_some() {
                    continue;
                }
                let (a, b) = (i + first, j + first);
                let Some(rule) = self.mixing else {
                    return Err(Error::InvalidCombination(format!(
                        "no pair coefficients for types {a} {b} and no mixing rule ({name}, {t} \
                         types): give every pair i <= j, or a mixing rule (pair_modify mix)"
                    )));
                };
                let (Some(ii), Some(jj)) = (&coeffs[tri(t, i, i)], &coeffs[tri(t, j, j)]) else {
                    let missing = if coeffs[tri(t, i, i)].is_none() { a } else { b };
                    return Err(Error::InvalidCombination(format!(
                        "no pair coefficients for types {missing} {missing}, from which types \
                         {a} {b} would be mixed ({name})"
                    )));
                };
                let mixed = self.style.visit(Mix {
                    rule,
                    ii: ii.coeffs(),
                    jj: jj.coeffs(),
                });
                let Some((params, cutoff)) = mixed else {
                    return Err(Error::InvalidCombination(format!(
                        "no pair coefficients for types {a} {b}: pair style {name} does not mix \
                         (as in LAMMPS: \"All pair coeffs are not set\"), give pair_coeff {a} {b}"
                    )));
                };
                let g = Given {
                    i,
                    j,
                    params: params[..self.style.params().len()].to_vec(),
                    cutoff,
                    data: Arc::from([]),
                };
                coeffs[tri(t, i, j)] = Some(self.check(&g, true)?);
            }
        }
        let mut out = Vec::with_capacity(pairs);
        for i in 0..t {
            for j in i..t {
                let Some(c) = coeffs[tri(t, i, j)].take() else {
                    let (a, b) = (i + first, j + first);
                    return Err(Error::InvalidCombination(format!(
                        "no pair coefficients for types {a} {b} ({name} pair style, {t} types: \
                         every pair of like types needs its coefficients)"
                    )));
                };
                out.push(c);
            }
        }
        let table = self.layout(&out)?;
        Ok(PairPotential {
            style: self.style,
            types: t,
            shift: self.shift,
            mixing: self.mixing,
            coeffs: out.into(),
            table: table.into(),
        })
    }

    /// The kernels' table of the pairs `coeffs` (in `tri` order): rows,
    /// both orders of each pair, then each pair's data once.
    fn layout(&self, coeffs: &[PairCoeff]) -> Result<Vec<f32>> {
        let t = self.types;
        let words = self.style.row_words() as usize;
        let rows = (t * t) as usize * words;
        let sizes: Vec<usize> = coeffs
            .iter()
            .map(|c| self.style.visit(DataWords(c.coeffs())))
            .collect();
        let total = rows + sizes.iter().sum::<usize>();
        if total > MAX_TABLE_WORDS {
            return Err(Error::InvalidParameter {
                name: "words of tabulated data",
                value: total as f64,
                requirement: "must be at most 2^24 (16,777,216) over all pairs of types",
            });
        }
        let mut table = vec![0.0f32; total];
        let (mut base, mut k) = (rows, 0);
        for i in 0..t {
            for j in i..t {
                let c = &coeffs[k];
                let mut row = vec![0.0f32; words];
                let (_, rest) = table.split_at_mut(base);
                self.style
                    .visit(FillRow {
                        c: c.coeffs(),
                        shift: self.shift,
                        row: &mut row,
                        data: &mut rest[..sizes[k]],
                        base: base as u32,
                    })
                    .map_err(invalid)?;
                for (a, b) in [(i, j), (j, i)] {
                    let at = (a * t + b) as usize * words;
                    table[at..at + words].copy_from_slice(&row);
                }
                base += sizes[k];
                k += 1;
            }
        }
        Ok(table)
    }
}
