//! numpy `.npy` snapshots of the bodies: [`save_npy`], [`load_npy`], and the
//! parser of the Python-dict header numpy writes (kept here, not in a
//! dependency: it is 150 lines and the only Python syntax the crate reads).

use std::path::Path;

use glam::Vec3;
use gpu_kernels::shape::MAX_BODIES;

use super::{check_writable_state, invalid, push_rows, read_file, write_atomically};
use crate::error::{Error, Result};
use crate::state::Bodies;

const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Columns of a snapshot row: `x y z vx vy vz m`.
const COLUMNS: usize = 7;

/// Saves `bodies` as a numpy `.npy` file (format 1.0): `<f4`, C order, shape
/// `(N, 7)`, columns `x y z vx vy vz m`; `np.load(path)` reads it.
///
/// Refuses non-finite bodies ([`Error::NonFiniteSnapshot`]) and invalid ones
/// (the [`Bodies::validate`] error); writes atomically ([`Error::Io`] on failure).
pub fn save_npy(path: impl AsRef<Path>, bodies: &Bodies) -> Result<()> {
    let path = path.as_ref();
    check_writable_state(path, bodies)?;
    let n = bodies.len();
    let mut bytes = npy_header("<f4", n);
    push_rows(&mut bytes, bodies);
    write_atomically(path, &bytes)
}

/// Loads bodies from a `.npy` file of shape `(N, 7)` (`x y z vx vy vz m`),
/// dtype float32 or float64 (converted to `f32`), little- or big-endian, C
/// or Fortran order, format 1.0, 2.0 or 3.0.
///
/// Every field of the header, the data size and every value are checked
/// before anything is returned: [`Error::InvalidFile`] says what is wrong
/// with the file, [`Error::TooManyBodies`] if `N` exceeds the kernels'
/// limit, [`Error::Io`] if the file cannot be read; bad values are the
/// errors of [`Bodies::from_arrays`] ([`Error::InvalidMass`],
/// [`Error::NonFiniteInput`], [`Error::NoBodies`]), the row being the body
/// index.
///
/// ```
/// use nbody_host::{ic, snapshot};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("bodies.npy"); // np.load(path).shape == (100, 7)
/// let bodies = ic::cold_disk(100, 3);
/// snapshot::save_npy(&path, &bodies)?;
/// assert_eq!(snapshot::load_npy(&path)?, bodies);
/// # Ok::<(), nbody_host::Error>(())
/// ```
pub fn load_npy(path: impl AsRef<Path>) -> Result<Bodies> {
    let rows = load_rows(path.as_ref())?;
    bodies_of(&rows)
}

/// Loads bodies and, for an `(N, 8)` file, their atom types: shape `(N, 7)`
/// (`x y z vx vy vz m`, every body of type 0) or `(N, 8)` (`... m type`,
/// types numbered as LAMMPS numbers them, 1, 2, ..., returned from 0),
/// otherwise read and checked as [`load_npy`] does. A type that is not an
/// integer `>= 1` is [`Error::InvalidCombination`] naming the body.
///
/// ```
/// use nbody_host::{ic, snapshot};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("bodies.npy");
/// let bodies = ic::cold_disk(10, 3);
/// snapshot::save_npy(&path, &bodies)?;
/// assert_eq!(snapshot::load_npy_typed(&path)?, (bodies, None));
/// # Ok::<(), nbody_host::Error>(())
/// ```
pub fn load_npy_typed(path: impl AsRef<Path>) -> Result<(Bodies, Option<Vec<u32>>)> {
    let (columns, flat) = load_table(path.as_ref(), &[COLUMNS, COLUMNS + 1])?;
    let rows: Vec<[f64; COLUMNS]> = flat
        .chunks_exact(columns)
        .map(|r| std::array::from_fn(|c| r[c]))
        .collect();
    let bodies = bodies_of(&rows)?;
    if columns == COLUMNS {
        return Ok((bodies, None));
    }
    let types: Vec<f32> = flat
        .chunks_exact(columns)
        .map(|r| r[COLUMNS] as f32)
        .collect();
    // A type is exact in f32 up to 2^24, far beyond the types a run has.
    for (i, r) in flat.chunks_exact(columns).enumerate() {
        if r[COLUMNS] != types[i] as f64 {
            return Err(Error::InvalidCombination(format!(
                "body {i}: atom type {} is not a LAMMPS type number (an integer from 1)",
                r[COLUMNS]
            )));
        }
    }
    Ok((bodies, Some(crate::pair::types_from_lammps(&types)?)))
}

/// Bodies of `(N, 7)` rows, checked.
fn bodies_of(rows: &[[f64; COLUMNS]]) -> Result<Bodies> {
    let column = |c: usize| rows.iter().map(move |r| r[c] as f32);
    let (x, y, z) = (column(0), column(1), column(2));
    let bodies = Bodies {
        positions: x
            .zip(y)
            .zip(z)
            .map(|((x, y), z)| Vec3::new(x, y, z))
            .collect(),
        velocities: (column(3).zip(column(4)).zip(column(5)))
            .map(|((x, y), z)| Vec3::new(x, y, z))
            .collect(),
        masses: column(6).collect(),
    };
    // The errors of `Bodies::from_arrays` (row = body index), so callers
    // match on `InvalidMass` or `NonFiniteInput` whatever the source.
    bodies.validate()?;
    Ok(bodies)
}

/// Positions, velocities and masses in f64.
pub type Columns64 = (Vec<[f64; 3]>, Vec<[f64; 3]>, Vec<f64>);

/// Loads an `(N, 7)` file as [`load_npy`] does, keeping float64 values
/// exact: positions, velocities and masses in f64 (float32 files widened),
/// for [`Simulation::builder_f64`](crate::Simulation::builder_f64) (the
/// Hermite integrator). The same checks and errors as [`load_npy`].
pub fn load_npy_f64(path: impl AsRef<Path>) -> Result<Columns64> {
    let rows = load_rows(path.as_ref())?;
    let (pos, vel): (Vec<[f64; 3]>, Vec<[f64; 3]>) = rows
        .iter()
        .map(|r| ([r[0], r[1], r[2]], [r[3], r[4], r[5]]))
        .unzip();
    let mass: Vec<f64> = rows.iter().map(|r| r[6]).collect();
    for (index, r) in rows.iter().enumerate() {
        for (quantity, v) in [
            ("position", [r[0], r[1], r[2]]),
            ("velocity", [r[3], r[4], r[5]]),
        ] {
            if !v.iter().all(|x| x.is_finite()) {
                let value = v.map(|x| x as f32);
                return Err(Error::NonFiniteInput {
                    index,
                    quantity,
                    value,
                });
            }
        }
        if !(r[6].is_finite() && r[6] >= 0.0) {
            return Err(Error::InvalidMass {
                index,
                mass: r[6] as f32,
            });
        }
    }
    if rows.is_empty() {
        return Err(Error::NoBodies);
    }
    Ok((pos, vel, mass))
}

/// Saves f64 positions, velocities and masses as an `(N, 7)` float64
/// `.npy` file (`<f8`, C order), atomically; refuses non-finite values
/// ([`Error::NonFiniteSnapshot`]) and unequal lengths.
pub fn save_npy_f64(
    path: impl AsRef<Path>,
    pos: &[[f64; 3]],
    vel: &[[f64; 3]],
    mass: &[f64],
) -> Result<()> {
    let path = path.as_ref();
    let n = pos.len();
    if vel.len() != n || mass.len() != n {
        return Err(Error::Unsupported(format!(
            "{n} positions, {} velocities and {} masses: one of each per body",
            vel.len(),
            mass.len()
        )));
    }
    let mut bytes = npy_header("<f8", n);
    for i in 0..n {
        let row = pos[i].iter().chain(&vel[i]).chain([&mass[i]]);
        for x in row {
            if !x.is_finite() {
                return Err(Error::NonFiniteSnapshot {
                    path: path.to_path_buf(),
                    body: i,
                });
            }
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    write_atomically(path, &bytes)
}

/// The magic, version 1.0 and the padded header of an `(n, 7)` array of `descr`.
fn npy_header(descr: &str, n: usize) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n}, 7), }}");
    // Pad with spaces so that the data starts at a multiple of 64 bytes, as numpy does.
    let unpadded = NPY_MAGIC.len() + 2 + 2 + header.len() + 1;
    header.extend(std::iter::repeat_n(
        ' ',
        unpadded.next_multiple_of(64) - unpadded,
    ));
    header.push('\n');
    let header_len = u16::try_from(header.len()).expect("the header is under 200 bytes");
    let mut bytes = Vec::with_capacity(10 + header.len() + n * COLUMNS * 8);
    bytes.extend_from_slice(NPY_MAGIC);
    bytes.extend_from_slice(&[1, 0]);
    bytes.extend_from_slice(&header_len.to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes
}

/// The rows of an `(N, 7)` float32 or float64 file, in f64, header and
/// size checked (not the values).
fn load_rows(path: &Path) -> Result<Vec<[f64; COLUMNS]>> {
    let (_, flat) = load_table(path, &[COLUMNS])?;
    Ok(flat
        .chunks_exact(COLUMNS)
        .map(|r| std::array::from_fn(|c| r[c]))
        .collect())
}

/// The values of an `(N, C)` float32 or float64 file, `C` one of
/// `allowed`, in f64 row by row, header and size checked (not the values).
fn load_table(path: &Path, allowed: &[usize]) -> Result<(usize, Vec<f64>)> {
    let bytes = read_file(path)?;
    let bad = |reason: String| invalid(path, "npy", reason);
    if bytes.len() < 10 || &bytes[..6] != NPY_MAGIC {
        return Err(bad(format!(
            "missing the magic string \\x93NUMPY (first bytes {:02x?})",
            &bytes[..bytes.len().min(8)]
        )));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (header_len, header_start): (usize, usize) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        2 | 3 => return Err(bad("truncated in the header length".into())),
        _ => {
            return Err(bad(format!(
                "format version {major}.{minor} is not supported (1.0, 2.0 or 3.0)"
            )));
        }
    };
    let data_start = header_start
        .checked_add(header_len)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| {
            bad(format!(
                "truncated: the header claims {header_len} bytes, the file has {}",
                bytes.len()
            ))
        })?;
    let header = std::str::from_utf8(&bytes[header_start..data_start])
        .map_err(|_| bad("the header is not ASCII text".into()))?;
    let header = NpyHeader::parse(header).map_err(bad)?;
    let (itemsize, big_endian) = match header.descr.as_str() {
        "<f4" => (4, false),
        "<f8" => (8, false),
        ">f4" => (4, true),
        ">f8" => (8, true),
        other => {
            return Err(bad(format!(
                "dtype '{other}' is not supported: expected float32 or float64, \
                 little-endian ('<f4', '<f8') or big-endian ('>f4', '>f8')"
            )));
        }
    };
    let (n, columns) = match header.shape[..] {
        [n, c] if allowed.contains(&c) => (n, c),
        _ => {
            return Err(bad(format!(
                "shape {} is not (N, 7) with columns x y z vx vy vz m{}",
                shape_string(&header.shape),
                if allowed.len() > 1 {
                    " or (N, 8) with a type column"
                } else {
                    ""
                }
            )));
        }
    };
    if n > MAX_BODIES as usize {
        return Err(Error::TooManyBodies {
            n,
            max: MAX_BODIES as usize,
        });
    }
    let data = &bytes[data_start..];
    // In u64: no overflow for any n <= 2^30, whatever the pointer width.
    let needed = n as u64 * columns as u64 * itemsize as u64;
    if data.len() as u64 != needed {
        let what = if (data.len() as u64) < needed {
            "truncated"
        } else {
            "trailing bytes"
        };
        return Err(bad(format!(
            "{what}: shape ({n}, {columns}) of {} needs {needed} data bytes, the file has {}",
            header.descr,
            data.len()
        )));
    }
    let value = |k: usize| -> f64 {
        let at = k * itemsize;
        match (itemsize, big_endian) {
            (4, false) => f32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes")) as f64,
            (4, true) => f32::from_be_bytes(data[at..at + 4].try_into().expect("4 bytes")) as f64,
            (_, false) => f64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes")),
            (_, true) => f64::from_be_bytes(data[at..at + 8].try_into().expect("8 bytes")),
        }
    };
    let get = |row: usize, col: usize| {
        if header.fortran_order {
            value(col * n + row)
        } else {
            value(row * columns + col)
        }
    };
    Ok((
        columns,
        (0..n)
            .flat_map(|i| (0..columns).map(move |c| (i, c)))
            .map(|(i, c)| get(i, c))
            .collect(),
    ))
}

/// The parsed header dictionary of a `.npy` file.
#[derive(Debug, PartialEq)]
struct NpyHeader {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

impl NpyHeader {
    /// Parses the Python dict literal numpy writes, e.g.
    /// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 7), }`.
    fn parse(text: &str) -> std::result::Result<NpyHeader, String> {
        let mut p = Parser {
            s: text.trim_end_matches(['\n', ' ', '\0']).as_bytes(),
            at: 0,
        };
        let (mut descr, mut fortran_order, mut shape) = (None, None, None);
        p.expect(b'{')?;
        loop {
            p.skip_ws();
            if p.eat(b'}') {
                break;
            }
            let key = p.string()?;
            p.skip_ws();
            p.expect(b':')?;
            p.skip_ws();
            match key.as_str() {
                "descr" => descr = Some(p.string()?),
                "fortran_order" => fortran_order = Some(p.boolean()?),
                "shape" => shape = Some(p.tuple()?),
                other => return Err(format!("unexpected header key '{other}'")),
            }
            p.skip_ws();
            if !p.eat(b',') {
                p.skip_ws();
                p.expect(b'}')?;
                break;
            }
        }
        p.skip_ws();
        if p.at != p.s.len() {
            return Err(format!(
                "unexpected text after the header dict at byte {}",
                p.at
            ));
        }
        let missing = |k: &str| format!("the header has no '{k}' key");
        Ok(NpyHeader {
            descr: descr.ok_or_else(|| missing("descr"))?,
            fortran_order: fortran_order.ok_or_else(|| missing("fortran_order"))?,
            shape: shape.ok_or_else(|| missing("shape"))?,
        })
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        let hit = self.s.get(self.at) == Some(&c);
        self.at += hit as usize;
        hit
    }
    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!(
                "malformed header: expected '{}' at byte {}",
                c as char, self.at
            ))
        }
    }
    fn string(&mut self) -> std::result::Result<String, String> {
        let quote = match self.s.get(self.at) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => {
                return Err(format!(
                    "malformed header: expected a quoted string at byte {}",
                    self.at
                ));
            }
        };
        let start = self.at + 1;
        let len = self.s[start..]
            .iter()
            .position(|&c| c == quote)
            .ok_or("malformed header: unterminated string")?;
        self.at = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }
    fn boolean(&mut self) -> std::result::Result<bool, String> {
        for (word, value) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.at..].starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(format!(
            "fortran_order must be True or False (at byte {})",
            self.at
        ))
    }
    fn tuple(&mut self) -> std::result::Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            let start = self.at;
            while self.s.get(self.at).is_some_and(u8::is_ascii_digit) {
                self.at += 1;
            }
            let digits = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
            let dim = digits.parse::<usize>().map_err(|_| {
                format!(
                    "malformed shape: expected a non-negative integer at byte {start}, found {:?}",
                    String::from_utf8_lossy(&self.s[start..(start + 12).min(self.s.len())])
                )
            })?;
            dims.push(dim);
            self.skip_ws();
            if !self.eat(b',') {
                self.skip_ws();
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

fn shape_string(shape: &[usize]) -> String {
    match shape {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_parser_accepts_numpy_variants_and_rejects_junk() {
        let h =
            NpyHeader::parse("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 7), }   \n")
                .unwrap();
        assert_eq!(
            h,
            NpyHeader {
                descr: "<f4".into(),
                fortran_order: false,
                shape: vec![3, 7]
            }
        );
        let h = NpyHeader::parse("{\"shape\":(12,7),\"fortran_order\":True,\"descr\":\"<f8\"}")
            .unwrap();
        assert_eq!((h.shape, h.fortran_order), (vec![12, 7], true));
        assert_eq!(
            NpyHeader::parse("{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }")
                .unwrap()
                .shape,
            vec![7]
        );
        for (text, needle) in [
            ("{'descr': '<f4', 'shape': (3, 7)}", "no 'fortran_order'"),
            (
                "{'descr': '<f4', 'fortran_order': 0, 'shape': (3, 7)}",
                "True or False",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3, -7)}",
                "\"-7)",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 7), 'x': 1}",
                "'x'",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 7)} junk",
                "after",
            ),
            ("['descr']", "expected '{'"),
            ("{'descr: '<f4'}", "expected ':'"),
        ] {
            let e = NpyHeader::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn header_parser_never_panics_on_corrupt_bytes() {
        let good = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 7), }    \n";
        for at in 0..good.len() {
            for byte in 0..=255u8 {
                let mut h = good.to_vec();
                h[at] = byte;
                let text = String::from_utf8_lossy(&h);
                let _ = NpyHeader::parse(&text);
                let _ = NpyHeader::parse(text.get(..at).unwrap_or(""));
            }
        }
    }

    #[test]
    fn shapes_print_like_python() {
        assert_eq!(shape_string(&[7]), "(7,)");
        assert_eq!(shape_string(&[3, 6]), "(3, 6)");
        assert_eq!(shape_string(&[]), "()");
    }
}
