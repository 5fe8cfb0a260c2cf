//! The GPU driver of every pair law: forces over the neighbour lists of
//! [`neighbours`](crate::neighbours), one thread per body, and with
//! `THERMO` the per-block potential, virial and kinetic sums.
//!
//! Body `i` gets `a_i = (1 / m_i) sum_j (F / r)(r_ij) (x_i - x_j)` over its
//! list, `F / r` from the law ([`PairLaw::force`]) and zero beyond the type
//! pair's cutoff. Periodic images are ghosts in the position buffer (see
//! [`periodic`](crate::periodic)), so `x_i - x_j` is three subtractions. The
//! coefficients come from a table of `ntypes^2` rows (see [`crate::pair`]):
//! with one type the thread holds its row in registers (no type loads, the
//! loop of a single-type run); with more, each pair loads `types[j]` (the
//! buffer parallel to the positions, ghosts included) and reads its row's
//! words from the table as the law asks for them.
//!
//! Per pair, for Lennard-Jones: the index and position loads, 3
//! subtractions, 3 FMAs for `r^2`, one reciprocal (`rcp.approx.ftz`), 2
//! products for `r^-6`, one FMA and 2 products for `F / r`, the cutoff
//! compare and select and 3 FMAs into the accumulators; the law's own
//! arithmetic is what changes from one style to the next.
//!
//! The `THERMO` instance also sums, per body, the pair energy `u(r) -`
//! [`OFFSET`] and the virial `r^2 F / r` (each pair appears in both
//! bodies' lists: the host halves both), plus `m v^2 / 2`, and reduces
//! them in `f64` per block into `partials[3 b ..]`: potential, virial,
//! kinetic. The plain instance leaves those parameters unread, so its loop
//! stays lean.
//!
//! Two bodies at the same point give a non-finite force (`r^-2 = inf` for
//! Lennard-Jones), which the step's divergence check
//! ([`check_finite`](crate::integrate::check_finite)) reports with the
//! body's index: never a silent NaN.

use super::{CUTOFF2, MAX_ROW, OFFSET, PairLaw, Row, row_words};
use crate::exec::{Exec, Global};
use crate::integrate::global_thread;
use crate::interaction::Real;
use crate::reduce::block_sums;
use crate::shape::{NEIGHBOUR_GROUP, WARP, neighbour_slot};
use crate::vec4::Vec4;

/// Index groups per round of the force loop (the literal in its `seq!`):
/// 16 pairs, so the round's address, count and branch cost under one
/// instruction per pair.
const ROUND_GROUPS: u32 = 4;

/// Values each block of the `THERMO` instance writes to `partials`.
pub const THERMO_PARTIALS: u32 = 3;

/// Accelerations `acc[i]` from the neighbour lists under law `L`, and with
/// `THERMO` the per-block potential, virial and kinetic sums.
///
/// # Safety
/// `pos` and `types` hold the `n` bodies and every ghost an entry of
/// `nlist` names, `nlist` [`neighbour_stride`](crate::shape::neighbour_stride)`(n) * cap` words, `ncount`, `acc` and
/// `vel` `n` elements, `table` `table_len` words: `ntypes^2` rows of
/// [`row_words`]`::<L>()` words (`ntypes >= 1`), then the law's tabulated
/// data, if any (see [`crate::pair::table`]), `partials`
/// [`THERMO_PARTIALS`] `f64` per block (read only by the `THERMO`
/// instance); launched with [`shape::pair_forces`](crate::shape::pair_forces)`(n, block, THERMO)`.
///
/// # Parameters
/// `extent`: bodies plus ghosts in `pos` and `types` (sizes the emulator's
/// bounds checks); `cap`: the lists' capacity; `ntypes`: the number of atom
/// types (1: `types` is not read); `table_len`: the words of `table`.
#[allow(
    clippy::too_many_arguments,
    reason = "one argument per PTX kernel parameter"
)]
pub unsafe fn forces<E: Exec, L: PairLaw, const THERMO: bool>(
    e: &E,
    pos: Global<Vec4>,
    types: Global<u32>,
    nlist: Global<u32>,
    ncount: Global<u32>,
    acc: Global<Vec4>,
    vel: Global<Vec4>,
    partials: Global<f64>,
    table: Global<f32>,
    n: u32,
    extent: u32,
    cap: u32,
    ntypes: u32,
    table_len: u32,
) {
    // `extent` (bodies and ghosts in `pos`) only sizes the host's bounds checks.
    let _ = extent;
    let data = Data {
        e,
        table,
        last: table_len.max(1) - 1,
    };
    let i = global_thread(e);
    let mut sums = [0.0f64; 3];
    if i < n {
        let words = row_words::<L>();
        // SAFETY: i < n; the table holds ntypes^2 >= 1 rows of `words` words; `types` holds
        // every index the lists name (the caller's contract); `list_sums` reads body i's list.
        unsafe {
            let pi = e.load(pos, i);
            let a = if ntypes <= 1 {
                let mut row = [0.0f32; MAX_ROW];
                let mut k = 0;
                while k < words {
                    row[k as usize] = e.load(table, k);
                    k += 1;
                }
                let rows = Uniform { row, data };
                list_sums::<E, L, _, THERMO>(e, pos, nlist, ncount, i, cap, pi, &rows)
            } else {
                let last = ntypes - 1;
                let typed = Typed {
                    e,
                    types,
                    data,
                    base: e.load(types, i).min(last) * ntypes,
                    last,
                    words,
                };
                list_sums::<E, L, _, THERMO>(e, pos, nlist, ncount, i, cap, pi, &typed)
            };
            let scale = 1.0 / pi.w;
            e.store(
                acc,
                i,
                Vec4::new(a.x * scale, a.y * scale, a.z * scale, 0.0),
            );
            if THERMO {
                let v = e.load(vel, i);
                let v2 =
                    v.x as f64 * v.x as f64 + v.y as f64 * v.y as f64 + v.z as f64 * v.z as f64;
                sums = [a.pe as f64, a.virial as f64, 0.5 * pi.w as f64 * v2];
            }
        }
    }
    if THERMO {
        // SAFETY: every thread of the block reaches the reduction; shared memory holds
        // 3 * blockDim f64 (the launch shape) and `partials` 3 per block.
        unsafe { block_sums(e, sums, partials) };
    }
}

/// Where the row of each neighbour's type pair comes from.
trait Rows {
    /// The row.
    type Row<'r>: Row<f32>
    where
        Self: 'r;
    /// The row of body `i` with the body or ghost `j`.
    ///
    /// # Safety
    /// `j` is an index of `pos` (a body or a ghost).
    unsafe fn row(&self, j: u32) -> Self::Row<'_>;
}

/// The table as a law's tabulated data reads it: any index clamped into it.
struct Data<'e, E> {
    e: &'e E,
    table: Global<f32>,
    /// `table_len - 1`.
    last: u32,
}

impl<E: Exec> Data<'_, E> {
    /// Word `at` (an integer-valued `f32`; NaN and negatives read word 0,
    /// the conversion saturating) of the table, clamped into it.
    #[inline(always)]
    fn read(&self, at: f32) -> f32 {
        // SAFETY: the index is clamped to table_len - 1, and the table holds table_len words
        // (the kernel's contract; table_len >= 1, its rows at least).
        unsafe { self.e.load(self.table, (at as u32).min(self.last)) }
    }
}

impl<E> Clone for Data<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for Data<'_, E> {}

/// One type: the one row, in registers.
struct Uniform<'e, E> {
    row: [f32; MAX_ROW],
    data: Data<'e, E>,
}

/// The one row, for every pair.
struct UniformRow<'r, 'e, E>(&'r Uniform<'e, E>);

impl<'e, E: Exec> Rows for Uniform<'e, E> {
    type Row<'r>
        = UniformRow<'r, 'e, E>
    where
        Self: 'r;

    #[inline(always)]
    unsafe fn row(&self, _: u32) -> UniformRow<'_, 'e, E> {
        UniformRow(self)
    }
}

impl<E: Exec> Row<f32> for UniformRow<'_, '_, E> {
    #[inline(always)]
    fn word(&self, k: usize) -> f32 {
        self.0.row[k]
    }

    #[inline(always)]
    fn data(&self, at: f32) -> f32 {
        self.0.data.read(at)
    }
}

/// Several types: `types[j]` per pair, words from the table as the law
/// reads them.
struct Typed<'e, E> {
    e: &'e E,
    types: Global<u32>,
    data: Data<'e, E>,
    /// `type_i * ntypes`: body i's block of rows.
    base: u32,
    /// `ntypes - 1`: types are clamped to it, so every row is in the table.
    last: u32,
    words: u32,
}

/// One row of the table.
struct TableRow<'e, E> {
    data: Data<'e, E>,
    /// The row's first word.
    at: u32,
}

impl<'e, E: Exec> Rows for Typed<'e, E> {
    type Row<'r>
        = TableRow<'e, E>
    where
        Self: 'r;

    #[inline(always)]
    unsafe fn row(&self, j: u32) -> TableRow<'e, E> {
        // SAFETY: j indexes `types` (the caller's contract).
        let tj = unsafe { self.e.load(self.types, j) }.min(self.last);
        TableRow {
            data: self.data,
            at: (self.base + tj) * self.words,
        }
    }
}

impl<E: Exec> Row<f32> for TableRow<'_, E> {
    #[inline(always)]
    fn word(&self, k: usize) -> f32 {
        // SAFETY: `at` starts one of the table's ntypes^2 rows (type_i and type_j clamped below
        // ntypes), and laws read only words below `row_words` (the `PairLaw` contract).
        unsafe { self.data.e.load(self.data.table, self.at + k as u32) }
    }

    #[inline(always)]
    fn data(&self, at: f32) -> f32 {
        self.data.read(at)
    }
}

/// One body's running sums: the force `x, y, z` (times `1 / m_i` at the
/// end); with thermo the pair energies and `r^2 F / r`.
#[derive(Default)]
struct Sums {
    x: f32,
    y: f32,
    z: f32,
    pe: f32,
    virial: f32,
}

/// Body `i`'s sums over its list, rows from `rows`.
///
/// # Safety
/// As for [`forces`]; `i < n`, `pi` is body `i`'s position.
#[inline(always)]
#[allow(
    clippy::too_many_arguments,
    clippy::erasing_op,
    reason = "the kernel's buffers; `U * WARP` with U = 0 from `seq!`"
)]
unsafe fn list_sums<E: Exec, L: PairLaw, S: Rows, const THERMO: bool>(
    e: &E,
    pos: Global<Vec4>,
    nlist: Global<u32>,
    ncount: Global<u32>,
    i: u32,
    cap: u32,
    pi: Vec4,
    rows: &S,
) -> Sums {
    let mut a = Sums::default();
    // SAFETY: entries of the list are indices of bodies or ghosts in `pos` (and `types`); body
    // i's `ncount[i] <= cap` entries lie in its column (`shape::neighbour_slot`: groups of 4,
    // 128 words apart, 16-byte aligned).
    unsafe {
        let count = e.load(ncount, i).min(cap);
        let column = nlist.offset(neighbour_slot(i, 0, cap));
        let groups = column.quads();
        // ROUND pairs per round: 16-byte index loads from one address.
        let rounds = count / (ROUND_GROUPS * NEIGHBOUR_GROUP);
        let mut r = 0;
        while r < rounds {
            let round = groups.offset(r * (ROUND_GROUPS * WARP));
            seq_macro::seq!(G in 0..4 {
                let q = e.load(round, G * WARP).0;
                seq_macro::seq!(U in 0..4 {
                    pair::<L, _, THERMO>(&mut a, pi, e.load(pos, q[U]), &rows.row(q[U]));
                });
            });
            r += 1;
        }
        // Then whole groups of four, then one at a time.
        let mut g = rounds * ROUND_GROUPS;
        while g < count / NEIGHBOUR_GROUP {
            let q = e.load(groups, g * WARP).0;
            seq_macro::seq!(U in 0..4 {
                pair::<L, _, THERMO>(&mut a, pi, e.load(pos, q[U]), &rows.row(q[U]));
            });
            g += 1;
        }
        let mut done = g * NEIGHBOUR_GROUP;
        while done < count {
            let j = e.load(column, neighbour_slot(0, done, cap));
            pair::<L, _, THERMO>(&mut a, pi, e.load(pos, j), &rows.row(j));
            done += 1;
        }
    }
    a
}

/// Adds body `j`'s force on body `i` (zero beyond the cutoff) to `a`, and
/// with `THERMO` the pair's energy and virial.
#[inline(always)]
fn pair<L: PairLaw, W: Row<f32>, const THERMO: bool>(a: &mut Sums, pi: Vec4, pj: Vec4, w: &W) {
    let dx = pi.x - pj.x;
    let dy = pi.y - pj.y;
    let dz = pi.z - pj.z;
    let r2 = Real::mul_add(dz, dz, Real::mul_add(dy, dy, dx * dx));
    let inside = r2 < w.word(CUTOFF2);
    let f = if THERMO {
        let (u, f) = L::energy_force(w, r2);
        a.pe += if inside { u - w.word(OFFSET) } else { 0.0 };
        f
    } else {
        L::force(w, r2)
    };
    let f = if inside { f } else { 0.0 };
    a.x = Real::mul_add(dx, f, a.x);
    a.y = Real::mul_add(dy, f, a.y);
    a.z = Real::mul_add(dz, f, a.z);
    if THERMO {
        a.virial = Real::mul_add(f, r2, a.virial);
    }
}
