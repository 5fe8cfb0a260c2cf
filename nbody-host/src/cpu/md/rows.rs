//! Where the CPU's pair loops find each pair's coefficients: the
//! [`Setup`] (the box and the pair table), and the two ways of reading a
//! row for a vector of pairs: [`Uniform`] (one atom type: the row splatted
//! once per loop, no type loads; the loop of a single-type run) and
//! [`Typed`] (the row of each lane's type pair gathered from the table's
//! columns: one gather of `j`'s type per vector, one per word the law
//! reads). Either reads a law's tabulated data (the `table` style's) with
//! one gather per word from the whole table.

use gpu_kernels::pair::{MAX_ROW, Row};

use super::super::lanes::Lanes;
use crate::pair::PairPotential;

/// The box and the pair table, as the loops take them (`f32`).
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    /// Box lengths (unused in open space).
    pub lengths: [f32; 3],
    /// `1 / L` per axis.
    pub inv_lengths: [f32; 3],
    /// Atom types: the table has `types^2` rows.
    pub types: u32,
    /// Row 0 (types 0 and 0): what a single-type run splats.
    pub row0: [f32; MAX_ROW],
    /// The table by column: `cols[k][t_i * types + t_j]` is word `k` of the
    /// row of types `t_i` and `t_j` (empty past the law's words).
    pub cols: [Vec<f32>; MAX_ROW],
    /// The whole table, rows then tabulated data: what [`Row::data`] reads.
    pub table: Vec<f32>,
}

impl Setup {
    /// The box `lengths` (`None`: open space) and `pair`'s table.
    pub(crate) fn new(lengths: Option<[f32; 3]>, pair: &PairPotential) -> Setup {
        let l = lengths.unwrap_or([1.0; 3]);
        let words = pair.style().row_words() as usize;
        let table = pair.table();
        let rows = &table[..(pair.types() * pair.types()) as usize * words];
        let mut row0 = [0.0; MAX_ROW];
        row0[..words].copy_from_slice(&table[..words]);
        Setup {
            lengths: l,
            inv_lengths: l.map(|x| 1.0 / x),
            types: pair.types(),
            row0,
            cols: std::array::from_fn(|k| {
                if k < words {
                    rows.chunks_exact(words).map(|row| row[k]).collect()
                } else {
                    Vec::new()
                }
            }),
            table: table.to_vec(),
        }
    }
}

/// A loop's source of rows: made once per loop, narrowed to each i-body,
/// then asked for the row of a vector of its neighbours.
pub(crate) trait Rows<V: Lanes>: Copy {
    /// The row of a vector of pairs.
    type Row: Row<V>;
    /// The rows of body `i` (an index of the loop's positions).
    fn for_body(self, i: usize) -> Self;
    /// The rows of body `i` with the bodies `idx`.
    fn row(&self, idx: V::Idx) -> Self::Row;
}

/// One type: row 0 in every lane.
#[derive(Clone, Copy)]
pub(crate) struct Uniform<'a, V: Lanes> {
    row: UniformRow<'a, V>,
}

/// Row 0, splatted, and the table for tabulated data.
#[derive(Clone, Copy)]
pub(crate) struct UniformRow<'a, V: Lanes> {
    cap: V::Cap,
    words: [V; MAX_ROW],
    table: &'a [f32],
}

impl<'a, V: Lanes> Uniform<'a, V> {
    #[inline(always)]
    pub(crate) fn new(cap: V::Cap, s: &'a Setup) -> Uniform<'a, V> {
        Uniform {
            row: UniformRow {
                cap,
                words: s.row0.map(|w| V::splat(cap, w)),
                table: &s.table,
            },
        }
    }
}

impl<'a, V: Lanes> Rows<V> for Uniform<'a, V> {
    type Row = UniformRow<'a, V>;

    #[inline(always)]
    fn for_body(self, _: usize) -> Self {
        self
    }

    #[inline(always)]
    fn row(&self, _: V::Idx) -> UniformRow<'a, V> {
        self.row
    }
}

impl<V: Lanes> Row<V> for UniformRow<'_, V> {
    #[inline(always)]
    fn word(&self, k: usize) -> V {
        self.words[k]
    }

    #[inline(always)]
    fn data(&self, at: V) -> V {
        V::gather(self.cap, self.table, at.to_idx(self.table.len() as u32))
    }

    #[inline(always)]
    fn data_pair(&self, at: V) -> (V, V) {
        V::gather_pair(self.cap, self.table, at)
    }
}

/// Several types: per body its block of each column, per vector of pairs
/// the neighbours' types gathered.
#[derive(Clone, Copy)]
pub(crate) struct Typed<'a, V: Lanes> {
    cap: V::Cap,
    /// The types of the loop's positions.
    t: &'a [u32],
    setup: &'a Setup,
    /// Column `k` restricted to the i-body's rows (`types` words each).
    body: [&'a [f32]; MAX_ROW],
}

impl<'a, V: Lanes> Typed<'a, V> {
    /// Rows for the positions whose types are `t`.
    #[inline(always)]
    pub(crate) fn new(cap: V::Cap, setup: &'a Setup, t: &'a [u32]) -> Typed<'a, V> {
        Typed {
            cap,
            t,
            setup,
            body: [&[]; MAX_ROW],
        }
    }
}

/// The row of a vector of pairs: the neighbours' types and the i-body's
/// columns.
pub(crate) struct TypedRow<'a, V: Lanes> {
    cap: V::Cap,
    tj: V::Idx,
    body: [&'a [f32]; MAX_ROW],
    table: &'a [f32],
}

impl<'a, V: Lanes> Rows<V> for Typed<'a, V> {
    type Row = TypedRow<'a, V>;

    #[inline(always)]
    fn for_body(self, i: usize) -> Self {
        let n = self.setup.types as usize;
        let first = self.t[i].min(self.setup.types - 1) as usize * n;
        let cols = &self.setup.cols;
        Typed {
            body: std::array::from_fn(|k| cols[k].get(first..first + n).unwrap_or(&[])),
            ..self
        }
    }

    #[inline(always)]
    fn row(&self, idx: V::Idx) -> TypedRow<'a, V> {
        TypedRow {
            cap: self.cap,
            tj: V::gather_idx(self.cap, self.t, idx, self.setup.types),
            body: self.body,
            table: &self.setup.table,
        }
    }
}

impl<V: Lanes> Row<V> for TypedRow<'_, V> {
    #[inline(always)]
    fn word(&self, k: usize) -> V {
        V::gather(self.cap, self.body[k], self.tj)
    }

    #[inline(always)]
    fn data(&self, at: V) -> V {
        V::gather(self.cap, self.table, at.to_idx(self.table.len() as u32))
    }

    #[inline(always)]
    fn data_pair(&self, at: V) -> (V, V) {
        V::gather_pair(self.cap, self.table, at)
    }
}
