//! The cell grid of a neighbour-list build: its geometry, the forward half
//! stencil that visits every pair of neighbouring cells once, and the
//! z-layers that the CPU engine hands out as tasks.
//!
//! Cells have a side of at least `r_list = r_c + skin` (times `1 + 1e-5`,
//! so that rounding in the cell index can never put two bodies closer than
//! `r_list` two cells apart), so every pair within `r_list` lies in the same
//! or neighbouring cells. Along an axis with `n` cells, the neighbours of
//! layer `l` are `l - 1, l, l + 1` (mod `n` in a periodic box) when
//! `n >= 3`; with `n = 2` the other layer (once, not twice), with `n = 1`
//! only `l` itself; with open boundaries only the layers that exist. Each
//! neighbour carries an offset `-1, 0, +1`, antisymmetric between two
//! layers (with `n = 2`: `+1` towards the higher index), and a pair of cells
//! is visited from the one whose offset to the other is lexicographically
//! positive in `(z, y, x)`: each pair of cells once, whatever `n`.

/// The grid: cells per axis, where it starts and how wide cells are.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Grid {
    /// Cells along x, y, z.
    pub dims: [usize; 3],
    /// The lower corner (0 in a periodic box; the bodies' bounding box otherwise).
    origin: [f64; 3],
    /// Cells per unit length along each axis.
    inv_width: [f64; 3],
    /// Whether the axes wrap.
    pub periodic: bool,
}

/// The relative margin on the cell side (see the module documentation).
const MARGIN: f64 = 1e-5;

impl Grid {
    /// The grid of a periodic box of `lengths` with cells at least `side`
    /// wide (`r_list` or more), at most about `max_cells` in all (fewer,
    /// larger cells are as correct, only slower).
    pub fn periodic(lengths: [f32; 3], side: f32, max_cells: usize) -> Grid {
        let side = side as f64 * (1.0 + MARGIN);
        let dims = fit(
            lengths.map(|l| ((l as f64 / side).floor() as usize).max(1)),
            max_cells,
        );
        Grid {
            dims,
            origin: [0.0; 3],
            inv_width: [0, 1, 2].map(|d| dims[d] as f64 / lengths[d] as f64),
            periodic: true,
        }
    }

    /// The grid over the bounding box `lo..=hi` of bodies in open space (a
    /// bounding box that is not finite gets one cell).
    pub fn open(lo: [f32; 3], hi: [f32; 3], side: f32, max_cells: usize) -> Grid {
        let side = side as f64 * (1.0 + MARGIN);
        let extent: [f64; 3] = [0, 1, 2].map(|d| hi[d] as f64 - lo[d] as f64);
        let finite = extent.iter().all(|e| e.is_finite() && *e >= 0.0);
        let raw = extent.map(|e| {
            if finite && side > 0.0 {
                ((e / side).floor() as usize).max(1)
            } else {
                1
            }
        });
        let dims = fit(raw, max_cells);
        Grid {
            dims,
            origin: if finite {
                lo.map(|x| x as f64)
            } else {
                [0.0; 3]
            },
            // A cell of side extent / n >= side; a zero extent gets any width.
            inv_width: [0, 1, 2].map(|d| {
                if finite && extent[d] > 0.0 {
                    dims[d] as f64 / extent[d]
                } else {
                    0.0
                }
            }),
            periodic: false,
        }
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// Cells per z-layer.
    pub fn layer_len(&self) -> usize {
        self.dims[0] * self.dims[1]
    }

    /// The cell of a position (clamped into the grid; positions outside a
    /// periodic box are wrapped before they get here).
    #[inline]
    pub fn cell_of(&self, p: [f32; 3]) -> usize {
        let c = [0, 1, 2].map(|d| {
            let k = ((p[d] as f64 - self.origin[d]) * self.inv_width[d]).floor();
            // NaN and negatives go to 0 (`as` saturates), too large to the last.
            (k as usize).min(self.dims[d] - 1)
        });
        (c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]
    }

    /// `(x, y, z)` of a cell.
    pub fn coords(&self, cell: usize) -> [usize; 3] {
        let [nx, ny, _] = self.dims;
        [cell % nx, (cell / nx) % ny, cell / (nx * ny)]
    }

    /// The distinct neighbours of layer `l` along axis `d`, each with its
    /// offset (see the module documentation), in increasing offset; no
    /// allocation (the list build asks once per cell, and a `Vec` each cost
    /// more than listing a short-range cell's bodies).
    /// (No division: the list build asks per cell, and a division costs
    /// tens of cycles.) Each carries its wrap too: with 3 or more periodic
    /// layers, `-1` for the layer below layer 0 (the last: its bodies are
    /// a box length too high, seen from layer 0), `+1` for the layer above
    /// the last (layer 0), else 0.
    fn axis(&self, d: usize, l: usize) -> Axis {
        let n = self.dims[d];
        let mut a = Axis::default();
        match (self.periodic, n) {
            (_, 1) => a.push(l, 0, 0),
            (true, 2) => {
                let other = 1 - l;
                if other > l {
                    a.push(l, 0, 0);
                    a.push(other, 1, 0);
                } else {
                    a.push(other, -1, 0);
                    a.push(l, 0, 0);
                }
            }
            (true, _) => {
                if l == 0 {
                    a.push(n - 1, -1, -1);
                } else {
                    a.push(l - 1, -1, 0);
                }
                a.push(l, 0, 0);
                if l + 1 == n {
                    a.push(0, 1, 1);
                } else {
                    a.push(l + 1, 1, 0);
                }
            }
            (false, _) => {
                if l > 0 {
                    a.push(l - 1, -1, 0);
                }
                a.push(l, 0, 0);
                if l + 1 < n {
                    a.push(l + 1, 1, 0);
                }
            }
        }
        a
    }

    /// The cells after `cell` in the forward half stencil: every
    /// neighbouring cell whose offset `(z, y, x)` is lexicographically
    /// positive, in a fixed order (the cell itself is not included).
    #[cfg(test)]
    pub fn forward_cells(&self, cell: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(13);
        self.stencil_into(cell, true, &mut out);
        out
    }

    /// The cells of `cell`'s stencil into `out` (cleared first), allocating
    /// nothing once it has room: with `forward` the forward half stencil,
    /// every neighbouring cell whose offset `(z, y, x)` is lexicographically
    /// positive (not the cell itself); else every neighbouring cell, itself
    /// included (the full stencil of full lists); each once, in a fixed order.
    #[cfg(test)]
    pub fn stencil_into(&self, cell: usize, forward: bool, out: &mut Vec<usize>) {
        out.clear();
        self.stencil_at(self.coords(cell), forward, |c, _| out.push(c));
    }

    /// `visit(cell, wrap)` for each cell of the stencil of the cell at
    /// `here` (its coordinates), in [`Grid::stencil_into`]'s order; `wrap`
    /// per axis as [`Grid::axis`] gives it.
    #[inline]
    fn stencil_at(&self, here: [usize; 3], forward: bool, mut visit: impl FnMut(usize, [i8; 3])) {
        let [cx, cy, cz] = here;
        let (ax, ay, az) = (self.axis(0, cx), self.axis(1, cy), self.axis(2, cz));
        for &(lz, oz, wz) in az.as_slice() {
            for &(ly, oy, wy) in ay.as_slice() {
                for &(lx, ox, wx) in ax.as_slice() {
                    if !forward || (oz, oy, ox) > (0, 0, 0) {
                        visit((lz * self.dims[1] + ly) * self.dims[0] + lx, [wx, wy, wz]);
                    }
                }
            }
        }
    }

    /// The stencil of the cell at `here` (its coordinates, which the list
    /// build steps through without dividing) as runs `(first, last, wrap)`
    /// of consecutive cells, as [`Grid::runs_into`] makes them, into `out`
    /// (cleared first); `wrap` is the run's first cell's, per axis: `-1`
    /// where its bodies' near images are a box length lower, `+1` higher
    /// (a periodic axis of 3 or more cells, across the wrap), else 0.
    pub fn stencil_runs_into(
        &self,
        here: [usize; 3],
        forward: bool,
        out: &mut Vec<(usize, usize, [i8; 3])>,
    ) {
        out.clear();
        self.stencil_at(here, forward, |c, wrap| match out.last_mut() {
            Some((_, last, _)) if *last + 1 == c => *last = c,
            _ => out.push((c, c, wrap)),
        });
    }

    /// The coordinates after `here` in cell order (x fastest).
    #[inline]
    pub fn step_coords(&self, here: [usize; 3]) -> [usize; 3] {
        let [mut x, mut y, mut z] = here;
        x += 1;
        if x == self.dims[0] {
            x = 0;
            y += 1;
            if y == self.dims[1] {
                y = 0;
                z += 1;
            }
        }
        [x, y, z]
    }

    /// `cells` (a stencil, in its order) as runs of consecutive cells
    /// `(first, last)` into `runs` (cleared first): cells next to each other
    /// along x are next to each other in memory, so a stencil of 27 cells
    /// is about 9 runs.
    #[cfg(test)]
    pub fn runs_into(cells: &[usize], runs: &mut Vec<(usize, usize)>) {
        runs.clear();
        for &c in cells {
            match runs.last_mut() {
                Some((_, last)) if *last + 1 == c => *last = c,
                _ => runs.push((c, c)),
            }
        }
    }

    /// The z-layer after `l` that layer `l`'s forward stencil reaches, if
    /// any (`l + 1`, wrapping in a periodic box with 3 or more layers).
    pub fn next_layer(&self, l: usize) -> Option<usize> {
        self.axis(2, l)
            .as_slice()
            .iter()
            .find(|&&(_, o, _)| o > 0)
            .map(|&(m, _, _)| m)
    }
}

/// Up to three neighbouring layers along an axis, with their offsets.
#[derive(Clone, Copy, Default)]
struct Axis {
    /// Layer, offset, wrap.
    items: [(usize, i8, i8); 3],
    len: usize,
}

impl Axis {
    fn push(&mut self, layer: usize, offset: i8, wrap: i8) {
        self.items[self.len] = (layer, offset, wrap);
        self.len += 1;
    }

    fn as_slice(&self) -> &[(usize, i8, i8)] {
        &self.items[..self.len]
    }
}

/// Shrinks `dims` to about `max_cells` in all, keeping their proportions.
fn fit(mut dims: [usize; 3], max_cells: usize) -> [usize; 3] {
    let total = |d: &[usize; 3]| d.iter().map(|&x| x as f64).product::<f64>();
    let cap = max_cells.max(1) as f64;
    if total(&dims) > cap {
        let f = (total(&dims) / cap).cbrt();
        for d in &mut dims {
            *d = ((*d as f64 / f).floor() as usize).max(1);
        }
    }
    dims
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every unordered pair of distinct neighbouring cells is visited
    /// exactly once by the forward stencils, for every cell count from 1
    /// to 5 per axis, periodic or not.
    #[test]
    fn forward_stencils_visit_each_neighbouring_pair_once() {
        for periodic in [true, false] {
            for nx in 1..=5 {
                for ny in 1..=4 {
                    for nz in 1..=5 {
                        let g = Grid {
                            dims: [nx, ny, nz],
                            origin: [0.0; 3],
                            inv_width: [1.0; 3],
                            periodic,
                        };
                        let n = g.len();
                        let mut seen = vec![0u32; n * n];
                        for c in 0..n {
                            for d in g.forward_cells(c) {
                                assert_ne!(c, d);
                                seen[c.min(d) * n + c.max(d)] += 1;
                            }
                        }
                        for a in 0..n {
                            for b in a + 1..n {
                                let (pa, pb) = (g.coords(a), g.coords(b));
                                let near = (0..3).all(|k| {
                                    let diff = pa[k].abs_diff(pb[k]);
                                    diff <= 1 || (periodic && diff == g.dims[k] - 1)
                                });
                                let what = format!("{:?} periodic {periodic}: {a} {b}", g.dims);
                                assert_eq!(seen[a * n + b], u32::from(near), "{what}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn cells_are_at_least_the_list_range_and_indices_stay_in_the_grid() {
        let g = Grid::periodic([10.0, 10.0, 7.5], 2.5, usize::MAX);
        // 10 / 2.5 = 4 exactly: the margin makes it 3, so no rounding can cut a cell short.
        assert_eq!(g.dims, [3, 3, 2]);
        assert_eq!(g.cell_of([0.0, 0.0, 0.0]), 0);
        assert_eq!(g.cell_of([9.999999, 9.999999, 7.4999995]), g.len() - 1);
        assert_eq!(
            g.cell_of([f32::NAN, -1.0, 1e30]),
            g.cell_of([0.0, 0.0, 7.0])
        );
        let wide = Grid::periodic([100.0; 3], 24.0, usize::MAX);
        assert_eq!(wide.dims, [4, 4, 4]);
        let sparse = Grid::periodic([1e6; 3], 1.0, 1000);
        assert!(sparse.len() <= 1000, "{:?}", sparse.dims);
        let open = Grid::open([0.0; 3], [f32::INFINITY, 1.0, 1.0], 1.0, 1000);
        assert_eq!(open.dims, [1, 1, 1]);
        let open = Grid::open([-5.0, 0.0, 0.0], [5.0, 0.5, 3.1], 1.0, 1000);
        assert_eq!(open.dims, [9, 1, 3]);
        assert_eq!(open.cell_of([5.0, 0.5, 3.1]), open.len() - 1);
    }

    /// The runs the list build takes ([`Grid::stencil_runs_into`], with
    /// coordinates stepped, not divided) are the stencil's runs, and each
    /// run's wrap is the sign of the box length between its first cell and
    /// the centre cell (what the build computed from their coordinates
    /// before), for every cell of grids of 1 to 5 cells per axis.
    #[test]
    fn stencil_runs_are_the_stencils_runs_with_their_wraps() {
        for periodic in [true, false] {
            for dims in
                (1..=5).flat_map(|x| (1..=4).flat_map(move |y| (1..=5).map(move |z| [x, y, z])))
            {
                let g = Grid {
                    dims,
                    origin: [0.0; 3],
                    inv_width: [1.0; 3],
                    periodic,
                };
                let (mut cells, mut runs, mut got) = (Vec::new(), Vec::new(), Vec::new());
                let mut here = g.coords(0);
                for cell in 0..g.len() {
                    assert_eq!(here, g.coords(cell));
                    for forward in [true, false] {
                        g.stencil_into(cell, forward, &mut cells);
                        Grid::runs_into(&cells, &mut runs);
                        g.stencil_runs_into(here, forward, &mut got);
                        let want: Vec<_> = runs
                            .iter()
                            .map(|&(a, b)| {
                                let there = g.coords(a);
                                let wrap =
                                    [0, 1, 2].map(|k| match there[k] as i64 - here[k] as i64 {
                                        d if d > 1 => -1,
                                        d if d < -1 => 1,
                                        _ => 0,
                                    });
                                (a, b, wrap)
                            })
                            .collect();
                        assert_eq!(got, want, "{dims:?} periodic {periodic} cell {cell}");
                    }
                    here = g.step_coords(here);
                }
            }
        }
    }

    #[test]
    fn next_layers() {
        let g = |nz, periodic| Grid {
            dims: [1, 1, nz],
            origin: [0.0; 3],
            inv_width: [1.0; 3],
            periodic,
        };
        assert_eq!(g(1, true).next_layer(0), None);
        assert_eq!(
            (g(2, true).next_layer(0), g(2, true).next_layer(1)),
            (Some(1), None)
        );
        assert_eq!(g(4, true).next_layer(3), Some(0));
        assert_eq!(g(4, false).next_layer(3), None);
        assert_eq!(g(4, false).next_layer(2), Some(3));
    }
}
