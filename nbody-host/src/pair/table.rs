//! LAMMPS table files and `pair_style table linear N`: [`TableFile`] (the
//! file's sections, read as `PairTable::read_table` reads them),
//! [`TableSection`] (one keyword's points), [`LinearTable`] (the section
//! resampled on `N` points evenly spaced in `r^2` from its inner radius to
//! the cutoff, through the cubic spline LAMMPS fits unless the file's
//! points are already those, `PairTable::spline_table` and
//! `compute_table`): the `table` style's data, which
//! [`PairBuilder::tabulated`](super::PairBuilder::tabulated) gives a pair
//! of types.
//!
//! A file as LAMMPS reads it: blank lines and `#` comments anywhere between
//! sections; a section is a line starting with its keyword, a parameter
//! line `N n [R rlo rhi | RSQ rlo rhi] [FP fplo fphi]`, a blank line, then
//! `n` lines `index r e f` (`e` the energy, `f = -de/dr` the force). With
//! `R` (`RSQ`) the points' `r` are `rlo..rhi` evenly spaced in `r`
//! (`r^2`) and the file's `r` column is ignored, as LAMMPS does; `BITMAP`
//! sections belong to `pair_style table bitmap`, which is not here (LAMMPS
//! refuses them for `linear` too).
//!
//! ```
//! use nbody_host::pair::{LinearTable, TableFile};
//! use nbody_host::{PairPotential, PairStyle};
//!
//! // Lennard-Jones at 200 points from r = 0.8 to 2.5 (a file you would
//! // read with TableFile::read).
//! let mut text = String::from("# LJ\nLJ\nN 200 R 0.8 2.5\n\n");
//! for i in 0..200 {
//!     let r = 0.8 + 1.7 * i as f64 / 199.0;
//!     let (s6, s12) = (r.powi(-6), r.powi(-12));
//!     text += &format!("{} {r} {} {}\n", i + 1, 4.0 * (s12 - s6), 24.0 * (2.0 * s12 - s6) / r);
//! }
//! let file = TableFile::parse(&text, "lj.table")?;
//! // pair_style table linear 1000; pair_coeff 1 1 lj.table LJ 2.5
//! let table = LinearTable::new(&file.section("LJ")?, 1000, Some(2.5))?;
//! let pair = PairPotential::builder(PairStyle::Table, 1).tabulated(0, 0, &table).build()?;
//! assert_eq!(pair.max_cutoff(), 2.5);
//! // Within the spline's error of the function it samples.
//! let at_1 = pair.reference(0, 0, 1.0);
//! assert!((at_1.energy - 0.0).abs() < 1e-3 && (at_1.fpair - 24.0).abs() < 1e-2);
//! # Ok::<(), nbody_host::Error>(())
//! ```

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// How a section's points are spaced (its parameter line).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spacing {
    /// The file's `r` column.
    Given,
    /// `N` points evenly spaced in `r` from `rlo` to `rhi` (`R rlo rhi`).
    R {
        /// The first point.
        lo: f64,
        /// The last.
        hi: f64,
    },
    /// Evenly spaced in `r^2` (`RSQ rlo rhi`).
    Rsq {
        /// The first point.
        lo: f64,
        /// The last.
        hi: f64,
    },
}

/// One keyword's points: `r` (as LAMMPS computes them for `R` and `RSQ`),
/// the energy `e` and the force `f = -de/dr`.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSection {
    keyword: String,
    spacing: Spacing,
    /// `FP fplo fphi`: the force's derivative at the ends, if given.
    fp: Option<(f64, f64)>,
    r: Vec<f64>,
    e: Vec<f64>,
    f: Vec<f64>,
}

impl TableSection {
    /// The keyword.
    pub fn keyword(&self) -> &str {
        &self.keyword
    }

    /// The points' `r`.
    pub fn r(&self) -> &[f64] {
        &self.r
    }

    /// The energies.
    pub fn e(&self) -> &[f64] {
        &self.e
    }

    /// The forces.
    pub fn f(&self) -> &[f64] {
        &self.f
    }

    /// How the points are spaced.
    pub fn spacing(&self) -> Spacing {
        self.spacing
    }

    /// `(rlo, rhi)`: the parameter line's, else the first and last `r`.
    pub fn range(&self) -> (f64, f64) {
        match self.spacing {
            Spacing::R { lo, hi } | Spacing::Rsq { lo, hi } => (lo, hi),
            Spacing::Given => (self.r[0], self.r[self.r.len() - 1]),
        }
    }
}

/// A LAMMPS table file: its sections by keyword, each parsed when asked
/// for ([`section`](Self::section)), as LAMMPS reads only the one a
/// `pair_coeff` names.
#[derive(Clone, Debug)]
pub struct TableFile {
    path: PathBuf,
    /// Each section: its keyword, the 1-based line of its parameter line,
    /// and its lines from there (parameters, blank, points).
    sections: Vec<(String, usize, Vec<String>)>,
}

/// `InvalidFile` for a table file.
fn bad(path: &Path, reason: String) -> Error {
    Error::InvalidFile {
        path: path.to_path_buf(),
        format: "LAMMPS table",
        reason,
    }
}

/// A line without its `#` comment, trimmed.
fn content(line: &str) -> &str {
    line.split('#').next().unwrap_or("").trim()
}

impl TableFile {
    /// Reads `path` (an [`Error::Io`] if it cannot be read, an
    /// [`Error::InvalidFile`] naming the line if a section's structure is
    /// broken).
    pub fn read(path: impl AsRef<Path>) -> Result<TableFile> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        TableFile::parse(&text, path)
    }

    /// The sections of `text`, a file's contents (`path` names it in
    /// messages). Each section is found as LAMMPS finds it: a keyword line,
    /// then its parameter line, whose `N` says how many point lines follow
    /// the blank line.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<TableFile> {
        let path = path.as_ref().to_path_buf();
        let lines: Vec<&str> = text.lines().collect();
        let mut sections = Vec::new();
        let mut k = 0;
        while k < lines.len() {
            let line = content(lines[k]);
            if line.is_empty() {
                k += 1;
                continue;
            }
            let keyword = line.split_whitespace().next().unwrap_or("").to_owned();
            let Some(params) = lines.get(k + 1) else {
                return Err(bad(
                    &path,
                    format!("line {}: section {keyword} has no parameter line", k + 1),
                ));
            };
            let n = points(&path, k + 2, params)?;
            let end = (k + 3 + n).min(lines.len());
            let body: Vec<String> = lines[k + 1..end].iter().map(|s| s.to_string()).collect();
            sections.push((keyword, k + 2, body));
            k = end;
        }
        Ok(TableFile { path, sections })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The keywords of its sections, in file order.
    pub fn keywords(&self) -> Vec<&str> {
        self.sections.iter().map(|s| s.0.as_str()).collect()
    }

    /// The section `keyword`, parsed and checked: `N >= 2` points, each line
    /// `index r e f` of finite numbers, `r` increasing and `> 0`.
    pub fn section(&self, keyword: &str) -> Result<TableSection> {
        let Some((_, at, body)) = self.sections.iter().find(|s| s.0 == keyword) else {
            return Err(bad(
                &self.path,
                format!(
                    "no section {keyword:?} (sections: {})",
                    self.keywords().join(", ")
                ),
            ));
        };
        parse_section(&self.path, keyword, *at, body)
    }
}

/// `N` of a parameter line (1-based line `at`).
fn points(path: &Path, at: usize, line: &str) -> Result<usize> {
    let words: Vec<&str> = content(line).split_whitespace().collect();
    match words.iter().position(|w| *w == "N") {
        Some(p) => words
            .get(p + 1)
            .and_then(|w| w.parse::<usize>().ok())
            .ok_or_else(|| bad(path, format!("line {at}: N is not a count: {line:?}"))),
        None => Err(bad(
            path,
            format!(
                "line {at}: the parameter line sets no N (\"N n [R|RSQ lo hi] [FP lo hi]\"): {line:?}"
            ),
        )),
    }
}

fn parse_section(path: &Path, keyword: &str, at: usize, body: &[String]) -> Result<TableSection> {
    let err = |line: usize, what: String| bad(path, format!("line {line}: {what}"));
    let words: Vec<&str> = content(&body[0]).split_whitespace().collect();
    let (mut n, mut spacing, mut fp) = (0usize, Spacing::Given, None);
    let number = |w: Option<&&str>, what: &str| -> Result<f64> {
        w.and_then(|w| w.parse::<f64>().ok())
            .filter(|x| x.is_finite())
            .ok_or_else(|| {
                err(
                    at,
                    format!("{what} is not a finite number in {:?}", body[0]),
                )
            })
    };
    let mut w = 0;
    while w < words.len() {
        match words[w] {
            "N" => {
                n = number(words.get(w + 1), "N")? as usize;
                w += 2;
            }
            "R" | "RSQ" => {
                let (lo, hi) = (
                    number(words.get(w + 1), "rlo")?,
                    number(words.get(w + 2), "rhi")?,
                );
                if !(lo > 0.0 && hi > lo) {
                    return Err(err(
                        at,
                        format!("{} {lo} {hi}: needs 0 < rlo < rhi", words[w]),
                    ));
                }
                spacing = if words[w] == "R" {
                    Spacing::R { lo, hi }
                } else {
                    Spacing::Rsq { lo, hi }
                };
                w += 3;
            }
            "FP" => {
                fp = Some((
                    number(words.get(w + 1), "fplo")?,
                    number(words.get(w + 2), "fphi")?,
                ));
                w += 3;
            }
            "BITMAP" => {
                return Err(err(
                    at,
                    "BITMAP tables are for pair_style table bitmap, which this library does \
                     not have (pair_style table linear refuses them too)"
                        .into(),
                ));
            }
            other => return Err(err(at, format!("unknown table parameter {other:?}"))),
        }
    }
    if n < 2 {
        return Err(err(at, format!("N = {n}: a table needs at least 2 points")));
    }
    // LAMMPS skips one line (the blank line) after the parameters.
    match body.get(1) {
        Some(l) if content(l).is_empty() => {}
        Some(l) => {
            return Err(err(
                at + 1,
                format!("expected the blank line after the parameter line, found {l:?}"),
            ));
        }
        None => {
            return Err(err(
                at,
                format!("section {keyword}: no points after N = {n}"),
            ));
        }
    }
    let (mut r, mut e, mut f) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut line = at + 2;
    for raw in &body[2..] {
        line += 1;
        let c = content(raw);
        if c.is_empty() {
            continue;
        }
        let v: Vec<&str> = c.split_whitespace().collect();
        let num = |k: usize| -> Result<f64> {
            v.get(k)
                .and_then(|w| w.parse::<f64>().ok())
                .filter(|x| x.is_finite())
                .ok_or_else(|| err(line - 1, format!("expected \"index r e f\", found {c:?}")))
        };
        let i = r.len();
        let rfile = num(1)?;
        // LAMMPS's r for R and RSQ: computed, the file's ignored.
        let rnew = match spacing {
            Spacing::Given => rfile,
            Spacing::R { lo, hi } => lo + (hi - lo) * i as f64 / (n - 1) as f64,
            Spacing::Rsq { lo, hi } => {
                (lo * lo + (hi * hi - lo * lo) * i as f64 / (n - 1) as f64).sqrt()
            }
        };
        r.push(rnew);
        e.push(num(2)?);
        f.push(num(3)?);
    }
    if r.len() != n {
        return Err(err(
            line,
            format!("section {keyword}: {} point lines, N = {n}", r.len()),
        ));
    }
    if let Some(k) = (0..n).find(|&k| {
        r[k].partial_cmp(&0.0) != Some(core::cmp::Ordering::Greater) || (k > 0 && r[k] <= r[k - 1])
    }) {
        return Err(bad(
            path,
            format!(
                "section {keyword}: point {} has r = {}: r must be > 0 and increasing",
                k + 1,
                r[k]
            ),
        ));
    }
    Ok(TableSection {
        keyword: keyword.to_owned(),
        spacing,
        fp,
        r,
        e,
        f,
    })
}

/// A section resampled as `pair_style table linear N` resamples it for one
/// pair of types: LAMMPS's arrays (see `gpu_kernels::pair::table`).
#[derive(Clone, Debug, PartialEq)]
pub struct LinearTable {
    cutoff: f64,
    /// `innersq, delta, invdelta, N, e[N], f[N]`.
    data: Vec<f64>,
}

impl LinearTable {
    /// `section` on `n` points (`pair_style table linear n`) up to `cutoff`
    /// (`pair_coeff`'s optional cutoff; `None`: the section's `rhi`, or its
    /// last `r`), as LAMMPS's `PairTable::coeff` makes it. The cutoff must
    /// lie in the table, `rlo < r_c <= rhi` (LAMMPS's "Pair table cutoff
    /// is outside of table").
    pub fn new(section: &TableSection, n: usize, cutoff: Option<f64>) -> Result<LinearTable> {
        if n < 2 {
            return Err(Error::InvalidParameter {
                name: "table length N (pair_style table linear N)",
                value: n as f64,
                requirement: "must be at least 2",
            });
        }
        let (rlo, rhi) = section.range();
        let cut = cutoff.unwrap_or(rhi);
        if !(cut > rlo && cut <= rhi) {
            return Err(Error::InvalidCombination(format!(
                "pair table cutoff {cut} is outside the table {} (r from {rlo} to {rhi}): the \
                 table must cover the cutoff (rlo < cutoff <= rhi)",
                section.keyword
            )));
        }
        let ninput = section.r.len();
        let matched = n == ninput && matches!(section.spacing, Spacing::Rsq { .. }) && rhi == cut;
        let (e2, f2) = if matched {
            (Vec::new(), Vec::new())
        } else {
            spline_table(section)
        };
        // compute_table, LINEAR.
        let inner = match section.spacing {
            Spacing::Given => section.r[0],
            _ => rlo,
        };
        let innersq = inner * inner;
        let tlm1 = (n - 1) as f64;
        let delta = (cut * cut - innersq) / tlm1;
        let invdelta = 1.0 / delta;
        let mut data = vec![0.0; 4 + 2 * n];
        data[..4].copy_from_slice(&[innersq, delta, invdelta, n as f64]);
        for i in 0..n {
            let rsq = innersq + i as f64 * delta;
            let r = rsq.sqrt();
            let (e, f) = if matched {
                (section.e[i], section.f[i] / r)
            } else {
                (
                    splint(&section.r, &section.e, &e2, r),
                    splint(&section.r, &section.f, &f2, r) / r,
                )
            };
            data[4 + i] = e;
            data[4 + n + i] = f;
        }
        Ok(LinearTable { cutoff: cut, data })
    }

    /// The cutoff.
    pub fn cutoff(&self) -> f64 {
        self.cutoff
    }

    /// `innersq, delta, invdelta, N, e[N], f[N]`: what the `table` style's
    /// pair holds.
    pub fn data(&self) -> &[f64] {
        &self.data
    }

    /// `N`.
    pub fn points(&self) -> usize {
        (self.data.len() - 4) / 2
    }
}

/// `PairTable::spline_table`: the second derivatives of `e` and `f` at the
/// file's points (`e'` at the ends from `-f`, `f'` from `FP` or the end
/// differences).
fn spline_table(s: &TableSection) -> (Vec<f64>, Vec<f64>) {
    let n = s.r.len();
    let e2 = spline(&s.r, &s.e, -s.f[0], -s.f[n - 1]);
    let (fplo, fphi) = s.fp.unwrap_or((
        (s.f[1] - s.f[0]) / (s.r[1] - s.r[0]),
        (s.f[n - 1] - s.f[n - 2]) / (s.r[n - 1] - s.r[n - 2]),
    ));
    let f2 = spline(&s.r, &s.f, fplo, fphi);
    (e2, f2)
}

/// `PairTable::spline` (Numerical Recipes' cubic spline, LAMMPS's
/// arithmetic in its order).
fn spline(x: &[f64], y: &[f64], yp1: f64, ypn: f64) -> Vec<f64> {
    let n = x.len();
    let mut y2 = vec![0.0; n];
    let mut u = vec![0.0; n];
    if yp1 > 0.99e30 {
        y2[0] = 0.0;
        u[0] = 0.0;
    } else {
        y2[0] = -0.5;
        u[0] = (3.0 / (x[1] - x[0])) * ((y[1] - y[0]) / (x[1] - x[0]) - yp1);
    }
    for i in 1..n - 1 {
        let sig = (x[i] - x[i - 1]) / (x[i + 1] - x[i - 1]);
        let p = sig * y2[i - 1] + 2.0;
        y2[i] = (sig - 1.0) / p;
        u[i] = (y[i + 1] - y[i]) / (x[i + 1] - x[i]) - (y[i] - y[i - 1]) / (x[i] - x[i - 1]);
        u[i] = (6.0 * u[i] / (x[i + 1] - x[i - 1]) - sig * u[i - 1]) / p;
    }
    let (qn, un) = if ypn > 0.99e30 {
        (0.0, 0.0)
    } else {
        (
            0.5,
            (3.0 / (x[n - 1] - x[n - 2])) * (ypn - (y[n - 1] - y[n - 2]) / (x[n - 1] - x[n - 2])),
        )
    };
    y2[n - 1] = (un - qn * u[n - 2]) / (qn * y2[n - 2] + 1.0);
    for k in (0..n - 1).rev() {
        y2[k] = y2[k] * y2[k + 1] + u[k];
    }
    y2
}

/// `PairTable::splint`: the spline through `(xa, ya)` at `x`.
fn splint(xa: &[f64], ya: &[f64], y2a: &[f64], x: f64) -> f64 {
    let (mut klo, mut khi) = (0, xa.len() - 1);
    while khi - klo > 1 {
        let k = (khi + klo) >> 1;
        if xa[k] > x {
            khi = k;
        } else {
            klo = k;
        }
    }
    let h = xa[khi] - xa[klo];
    let a = (xa[khi] - x) / h;
    let b = (x - xa[klo]) / h;
    a * ya[klo]
        + b * ya[khi]
        + ((a * a * a - a) * y2a[klo] + (b * b * b - b) * y2a[khi]) * (h * h) / 6.0
}
