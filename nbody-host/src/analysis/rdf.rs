//! The radial distribution function, LAMMPS's `compute rdf`.

use std::fmt::Write as _;
use std::path::Path;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::snapshot::write_atomically;
use crate::trajectory::Frame;

/// The most bins a histogram may have.
const MAX_BINS: usize = 1 << 24;

/// `g(r)` per pair of atom types, accumulated over frames, in the
/// definitions of LAMMPS's `compute rdf Nbin itype jtype ... cutoff Rc`
/// (its output averaged over frames by `fix ave/time`):
///
/// - bins of width `dr = Rc / Nbin`; a pair at distance `r` (minimum image,
///   `r < Rc`) falls in bin `floor(r / dr)`;
/// - for the type pair `(I, J)`, the histogram counts ordered pairs of
///   distinct atoms `(a, b)` with `a` of type `I` and `b` of type `J`;
/// - `g = hist / (V_shell / V * normfac * N_I)`, `V_shell = 4 pi / 3 (r_hi^3 - r_lo^3)`,
///   `normfac = N_J - dup / N_I` where `dup` counts the atoms in both sets
///   (`N_J - 1` for `I = J`, `N_J` otherwise); the coordination number is the
///   running sum of `g V_shell / V * normfac`;
/// - each frame's `g` uses that frame's volume (an NPT run's box changes);
///   [`table`](Self::table) is their mean over frames.
///
/// The cutoff must be at most half the shortest box length (one image per
/// pair, as the minimum image takes it). Each frame costs `O(N)`: atoms are
/// binned into cells at least `Rc` wide and each cell is compared with
/// itself and the forward half (13) of the 26 around it, each pair once
/// (all pairs, `O(N^2)`, when a box is under three cells wide). Counts are integers, so the result is the same on any
/// thread count.
///
/// ```
/// use nbody_host::analysis::Rdf;
/// use nbody_host::ic;
/// use nbody_host::trajectory::Frame;
///
/// // An fcc crystal: 12 nearest neighbours at a / sqrt(2).
/// let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 0.0, 1)?;
/// let l = boundary.lengths().unwrap();
/// let frame = Frame { step: 0, time: 0.0, lengths: l,
///     positions: atoms.positions.iter().map(|p| p.to_array()).collect(),
///     images: vec![], velocities: vec![], types: vec![] };
/// let mut rdf = Rdf::new(100, 2.5, &[])?; // all atoms, LAMMPS's `compute rdf 100`
/// rdf.add(&frame)?;
/// let table = rdf.table();
/// let first_shell = table.coordination[0].iter().copied().find(|&c| c > 0.0).unwrap();
/// assert!((first_shell - 12.0).abs() < 1e-9);
/// # Ok::<(), nbody_host::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Rdf {
    bins: usize,
    cutoff: f64,
    /// `(I, J)` per histogram, `None` for every type (LAMMPS's `*`).
    pairs: Vec<(Option<u32>, Option<u32>)>,
    /// Per histogram, per bin: the sum over frames of `g` and of the
    /// coordination number.
    g_sum: Vec<Vec<f64>>,
    coordination_sum: Vec<Vec<f64>>,
    frames: usize,
}

/// [`Rdf::table`]: the mean over frames.
#[derive(Clone, Debug, PartialEq)]
pub struct RdfTable {
    /// The bins' centres, `(k + 1/2) dr`.
    pub r: Vec<f64>,
    /// Per histogram, the type pair (numbered from 0; `None`: every type).
    pub pairs: Vec<(Option<u32>, Option<u32>)>,
    /// Per histogram, per bin, `g(r)`.
    pub g: Vec<Vec<f64>>,
    /// Per histogram, per bin, the coordination number up to the bin's outer edge.
    pub coordination: Vec<Vec<f64>>,
    /// Frames averaged.
    pub frames: usize,
}

impl Rdf {
    /// `bins` bins up to `cutoff`, one histogram per type pair of `pairs`
    /// (types numbered from 0, LAMMPS's `itype - 1`), or one of all atoms
    /// if `pairs` is empty (LAMMPS's `compute rdf Nbin` with no types).
    pub fn new(bins: usize, cutoff: f64, pairs: &[(u32, u32)]) -> Result<Rdf> {
        if bins == 0 || bins > MAX_BINS {
            return Err(Error::InvalidParameter {
                name: "g(r) bins",
                value: bins as f64,
                requirement: "must be at least 1 and at most 2^24",
            });
        }
        if !(cutoff.is_finite() && cutoff > 0.0) {
            return Err(Error::InvalidParameter {
                name: "g(r) cutoff",
                value: cutoff,
                requirement: "must be finite and > 0",
            });
        }
        let pairs: Vec<_> = if pairs.is_empty() {
            vec![(None, None)]
        } else {
            pairs.iter().map(|&(i, j)| (Some(i), Some(j))).collect()
        };
        let zeros = vec![vec![0.0; bins]; pairs.len()];
        Ok(Rdf {
            bins,
            cutoff,
            pairs,
            g_sum: zeros.clone(),
            coordination_sum: zeros,
            frames: 0,
        })
    }

    /// Frames added so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The cutoff `Rc`.
    pub fn cutoff(&self) -> f64 {
        self.cutoff
    }

    /// Checks that the cutoff is at most half the shortest of these box
    /// lengths (a clear error naming both otherwise): what [`add`](Self::add)
    /// requires of every frame, for a driver to check before a run.
    pub fn check_box(&self, lengths: [f64; 3]) -> Result<()> {
        let shortest = lengths.iter().copied().fold(f64::INFINITY, f64::min);
        if self.cutoff > 0.5 * shortest {
            return Err(Error::InvalidCombination(format!(
                "g(r) cutoff {} is longer than half the box (shortest side {shortest}): each pair \
                 must have one image within the cutoff",
                self.cutoff
            )));
        }
        Ok(())
    }

    /// Adds one frame: its histograms, normalised by its own volume and
    /// atom counts. An error (and nothing added) if the cutoff exceeds half
    /// the frame's shortest box length.
    pub fn add(&mut self, frame: &Frame) -> Result<()> {
        frame.validate()?;
        self.check_box(frame.lengths)?;
        let counts = self.histograms(frame);
        let [lx, ly, lz] = frame.lengths;
        let constant = 4.0 * std::f64::consts::PI / (3.0 * lx * ly * lz);
        let delr = self.cutoff / self.bins as f64;
        let ntypes = (0..frame.len())
            .map(|i| frame.type_of(i))
            .max()
            .unwrap_or(0) as usize
            + 1;
        let mut per_type = vec![0u64; ntypes];
        for i in 0..frame.len() {
            per_type[frame.type_of(i) as usize] += 1;
        }
        let count = |sel: Option<u32>| match sel {
            None => frame.len() as u64,
            Some(t) => per_type.get(t as usize).copied().unwrap_or(0),
        };
        for (m, &(si, sj)) in self.pairs.iter().enumerate() {
            let icount = count(si) as f64;
            let jcount = count(sj) as f64;
            let duplicates = match (si, sj) {
                (None, None) => count(None),
                (None, Some(t)) | (Some(t), None) => count(Some(t)),
                (Some(a), Some(b)) if a == b => count(Some(a)),
                _ => 0,
            } as f64;
            let normfac = if icount > 0.0 {
                jcount - duplicates / icount
            } else {
                0.0
            };
            let mut ncoord = 0.0;
            for bin in 0..self.bins {
                let rlower = bin as f64 * delr;
                let rupper = (bin + 1) as f64 * delr;
                let vfrac = constant * (rupper * rupper * rupper - rlower * rlower * rlower);
                let hist = counts[m * self.bins + bin] as f64;
                let gr = if vfrac * normfac != 0.0 {
                    hist / (vfrac * normfac * icount)
                } else {
                    0.0
                };
                if icount != 0.0 {
                    ncoord += gr * vfrac * normfac;
                }
                self.g_sum[m][bin] += gr;
                self.coordination_sum[m][bin] += ncoord;
            }
        }
        self.frames += 1;
        Ok(())
    }

    /// Histogram counts, `[pair][bin]` flattened: ordered pairs `(a, b)`,
    /// `a != b`, within the cutoff, whose types match the pair (each
    /// unordered pair visited once, through the forward half of the cells).
    fn histograms(&self, frame: &Frame) -> Vec<u64> {
        let n = frame.len();
        let l = frame.lengths;
        let half = l.map(|x| 0.5 * x);
        // Wrapped into [0, L) in f64 (exact for positions already inside).
        let pos: Vec<[f64; 3]> = frame
            .positions
            .iter()
            .map(|p| {
                std::array::from_fn(|k| f64::from(p[k]) - l[k] * (f64::from(p[k]) / l[k]).floor())
            })
            .collect();
        let types: Vec<u32> = (0..n).map(|i| frame.type_of(i)).collect();
        let cutsq = self.cutoff * self.cutoff;
        let delrinv = 1.0 / (self.cutoff / self.bins as f64);
        let (bins, pairs) = (self.bins, &self.pairs);
        let matches = |sel: Option<u32>, t: u32| sel.is_none_or(|s| s == t);
        // One unordered pair {a, b}: counted for (a, b) and for (b, a),
        // in each histogram whose types match that order.
        let tally = |hist: &mut [u64], pa: &[f64; 3], ta: u32, pb: &[f64; 3], tb: u32| {
            let mut rsq = 0.0;
            for k in 0..3 {
                let mut d = pa[k] - pb[k];
                if d > half[k] {
                    d -= l[k];
                } else if d < -half[k] {
                    d += l[k];
                }
                rsq += d * d;
            }
            if rsq >= cutsq {
                return;
            }
            let bin = (rsq.sqrt() * delrinv) as usize;
            if bin >= bins {
                return;
            }
            for (m, &(si, sj)) in pairs.iter().enumerate() {
                let ordered = u64::from(matches(si, ta) && matches(sj, tb))
                    + u64::from(matches(si, tb) && matches(sj, ta));
                hist[m * bins + bin] += ordered;
            }
        };
        let empty = || vec![0u64; pairs.len() * bins];
        let add = |mut a: Vec<u64>, b: Vec<u64>| {
            a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
            a
        };
        let cells: [usize; 3] =
            std::array::from_fn(|k| ((l[k] / self.cutoff).floor() as usize).max(1));
        if cells.iter().any(|&c| c < 3) {
            // Small box: every pair once.
            return (0..n)
                .into_par_iter()
                .fold(empty, |mut hist, a| {
                    for b in a + 1..n {
                        tally(&mut hist, &pos[a], types[a], &pos[b], types[b]);
                    }
                    hist
                })
                .reduce(empty, add);
        }
        // A counting sort of the atoms by cell, positions and types copied
        // into cell order.
        let width: [f64; 3] = std::array::from_fn(|k| l[k] / cells[k] as f64);
        let cell_of = |p: &[f64; 3]| -> [usize; 3] {
            std::array::from_fn(|k| ((p[k] / width[k]) as usize).min(cells[k] - 1))
        };
        let index = |c: [usize; 3]| (c[2] * cells[1] + c[1]) * cells[0] + c[0];
        let total = cells.iter().product::<usize>();
        let keys: Vec<usize> = pos.iter().map(|p| index(cell_of(p))).collect();
        let mut start = vec![0usize; total + 1];
        for &k in &keys {
            start[k + 1] += 1;
        }
        for c in 0..total {
            start[c + 1] += start[c];
        }
        let mut fill = start.clone();
        let mut sorted = vec![([0.0; 3], 0u32); n];
        for (a, &k) in keys.iter().enumerate() {
            sorted[fill[k]] = (pos[a], types[a]);
            fill[k] += 1;
        }
        // The forward half of the 27 cells around one: each pair of
        // distinct cells once (three or more cells per side: all distinct).
        let forward: Vec<[usize; 3]> = (0..27)
            .map(|k| [k % 3, (k / 3) % 3, k / 9])
            .filter(|d| {
                let d = d.map(|x| x as i32 - 1);
                d[2] > 0 || (d[2] == 0 && (d[1] > 0 || (d[1] == 0 && d[0] > 0)))
            })
            .collect();
        (0..total)
            .into_par_iter()
            .fold(empty, |mut hist, c| {
                let here = [
                    c % cells[0],
                    (c / cells[0]) % cells[1],
                    c / (cells[0] * cells[1]),
                ];
                let own = &sorted[start[c]..start[c + 1]];
                for (k, (pa, ta)) in own.iter().enumerate() {
                    for (pb, tb) in &own[k + 1..] {
                        tally(&mut hist, pa, *ta, pb, *tb);
                    }
                }
                for d in &forward {
                    let other: [usize; 3] =
                        std::array::from_fn(|k| (here[k] + cells[k] + d[k] - 1) % cells[k]);
                    let o = index(other);
                    for (pa, ta) in own {
                        for (pb, tb) in &sorted[start[o]..start[o + 1]] {
                            tally(&mut hist, pa, *ta, pb, *tb);
                        }
                    }
                }
                hist
            })
            .reduce(empty, add)
    }

    /// The mean over the frames added (zeros before any).
    pub fn table(&self) -> RdfTable {
        let delr = self.cutoff / self.bins as f64;
        let frames = self.frames.max(1) as f64;
        let mean = |sums: &Vec<Vec<f64>>| -> Vec<Vec<f64>> {
            sums.iter()
                .map(|row| row.iter().map(|s| s / frames).collect())
                .collect()
        };
        RdfTable {
            r: (0..self.bins).map(|k| (k as f64 + 0.5) * delr).collect(),
            pairs: self.pairs.clone(),
            g: mean(&self.g_sum),
            coordination: mean(&self.coordination_sum),
            frames: self.frames,
        }
    }
}

impl RdfTable {
    /// The table as text: comment lines, then per bin its number (from 1),
    /// `r`, and `g` and the coordination number per pair: the columns of
    /// LAMMPS's `fix ave/time ... c_rdf[*] mode vector` file. Types are
    /// LAMMPS's (`1, 2, ..`; `*` for every type).
    pub fn to_text(&self) -> String {
        let name = |s: Option<u32>| s.map_or("*".to_string(), |t| (t + 1).to_string());
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = writeln!(
            text,
            "# g(r) and coordination number, the mean of {} frames (LAMMPS compute rdf columns)",
            self.frames
        );
        let mut header = String::from("# bin r");
        for &(i, j) in &self.pairs {
            let (i, j) = (name(i), name(j));
            let _ = write!(header, " g_{i}_{j} coord_{i}_{j}");
        }
        let _ = writeln!(text, "{header}");
        for (k, r) in self.r.iter().enumerate() {
            let _ = write!(text, "{} {r}", k + 1);
            for m in 0..self.pairs.len() {
                let _ = write!(text, " {} {}", self.g[m][k], self.coordination[m][k]);
            }
            text.push('\n');
        }
        text
    }

    /// Writes [`to_text`](Self::to_text) to `path`, atomically.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        write_atomically(path.as_ref(), self.to_text().as_bytes())
    }
}
