//! Files: `.npy` snapshots of the bodies, and checkpoints of a whole simulation.
//!
//! Both are written atomically (a temporary file in the target's directory,
//! synced, then renamed over the target), so a crash never leaves a partial
//! file, and both refuse non-finite states ([`Error::NonFiniteSnapshot`]).
//! Loading validates everything before returning: a truncated, corrupt or
//! malformed file is an [`Error::InvalidFile`], never a partial load.
//!
//! ```
//! use nbody_host::{Backend, Simulation, ic, snapshot};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let mut sim = Simulation::builder(ic::plummer(64, 1)).backend(Backend::cpu()).build()?;
//! sim.step(5)?;
//! sim.save_npy(dir.path().join("state.npy"))?; // numpy: np.load -> (64, 7) float32
//! sim.save_checkpoint(dir.path().join("run.ckpt"))?;
//! let bodies = snapshot::load_npy(dir.path().join("state.npy"))?;
//! let mut resumed = Simulation::resume(dir.path().join("run.ckpt"))?.backend(Backend::cpu()).build()?;
//! assert_eq!((bodies.len(), resumed.steps_done()), (64, 5));
//! resumed.step(5)?;
//! # Ok::<(), nbody_host::Error>(())
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

use glam::Vec3;
use gpu_kernels::shape::MAX_BODIES;

use crate::config::{Kernel, Params};
use crate::cpu::Isa;
use crate::engine::BackendKind;
use crate::error::{Error, Result};
use crate::force::ForceLaw;
use crate::integrator::Integrator;
use crate::state::{Bodies, State};

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
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({n}, 7), }}");
    // Pad with spaces so that the data starts at a multiple of 64 bytes, as numpy does.
    let unpadded = NPY_MAGIC.len() + 2 + 2 + header.len() + 1;
    header.extend(std::iter::repeat_n(
        ' ',
        unpadded.next_multiple_of(64) - unpadded,
    ));
    header.push('\n');
    let header_len = u16::try_from(header.len()).expect("the header is under 200 bytes");
    let mut bytes = Vec::with_capacity(10 + header.len() + n * COLUMNS * 4);
    bytes.extend_from_slice(NPY_MAGIC);
    bytes.extend_from_slice(&[1, 0]);
    bytes.extend_from_slice(&header_len.to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for ((p, v), m) in bodies
        .positions
        .iter()
        .zip(&bodies.velocities)
        .zip(&bodies.masses)
    {
        for x in [p.x, p.y, p.z, v.x, v.y, v.z, *m] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    write_atomically(path, &bytes)
}

/// Loads bodies from a `.npy` file of shape `(N, 7)` (`x y z vx vy vz m`),
/// dtype `<f4` or `<f8` (converted to `f32`), C or Fortran order, format 1.0,
/// 2.0 or 3.0.
///
/// Every field of the header, the data size and every value are checked
/// ([`Bodies::validate`]) before anything is returned: [`Error::InvalidFile`]
/// says what is wrong, [`Error::TooManyBodies`] if `N` exceeds the kernels'
/// limit, [`Error::Io`] if the file cannot be read.
pub fn load_npy(path: impl AsRef<Path>) -> Result<Bodies> {
    let path = path.as_ref();
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
    let itemsize = match header.descr.as_str() {
        "<f4" => 4,
        "<f8" => 8,
        other => {
            return Err(bad(format!(
                "dtype '{other}' is not supported: expected '<f4' (little-endian float32) or '<f8'"
            )));
        }
    };
    let n = match header.shape[..] {
        [n, COLUMNS] => n,
        _ => {
            return Err(bad(format!(
                "shape {} is not (N, 7) with columns x y z vx vy vz m",
                shape_string(&header.shape)
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
    let needed = n as u64 * COLUMNS as u64 * itemsize as u64;
    if data.len() as u64 != needed {
        let what = if (data.len() as u64) < needed {
            "truncated"
        } else {
            "trailing bytes"
        };
        return Err(bad(format!(
            "{what}: shape ({n}, 7) of {} needs {needed} data bytes, the file has {}",
            header.descr,
            data.len()
        )));
    }
    let value = |k: usize| -> f32 {
        let at = k * itemsize;
        if itemsize == 4 {
            f32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes"))
        } else {
            f64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes")) as f32
        }
    };
    let get = |row: usize, col: usize| {
        if header.fortran_order {
            value(col * n + row)
        } else {
            value(row * COLUMNS + col)
        }
    };
    let bodies = Bodies {
        positions: (0..n)
            .map(|i| Vec3::new(get(i, 0), get(i, 1), get(i, 2)))
            .collect(),
        velocities: (0..n)
            .map(|i| Vec3::new(get(i, 3), get(i, 4), get(i, 5)))
            .collect(),
        masses: (0..n).map(|i| get(i, 6)).collect(),
    };
    bodies
        .validate()
        .map_err(|e| bad(format!("{e} (row = body index)")))?;
    Ok(bodies)
}

/// Everything needed to continue a simulation exactly where it stopped: the
/// state (exact `f32` bits), the parameters, and the backend it ran on.
///
/// A binary file (magic `NBODYCKP`, version, little-endian fields, CRC32 of
/// everything before it). Resuming on the same backend with the same
/// parameters continues bit-identically to an uninterrupted run
/// ([`Simulation::resume`](crate::Simulation::resume)).
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// Bodies, time and step count.
    pub state: State,
    /// Time step, softening, `G`, kernel and integrator.
    pub params: Params,
    /// The backend the run was on: for the record only, a checkpoint resumes
    /// on any backend.
    pub backend: BackendKind,
}

const CKPT_MAGIC: &[u8; 8] = b"NBODYCKP";
/// Version 2 stores the backend as data ([`encode_backend`]); version 1,
/// still read, stored its display form.
const CKPT_VERSION: u32 = 2;
/// Bytes before the backend record: magic, version, n, step, time, dt,
/// softening, G, kernel, block, integrator, record length.
const CKPT_FIXED: usize = 8 + 4 + 8 + 8 + 8 + 4 + 4 + 4 + 1 + 4 + 1 + 1;

/// The backend as at most 255 bytes: a tag (0 CPU, 1 CUDA, 2 emulator), then
/// the CPU's instruction set code and thread count (`u32`), or the CUDA
/// device ordinal (`u32`) and name (UTF-8, cut at a character boundary).
fn encode_backend(kind: &BackendKind) -> Vec<u8> {
    let mut b = Vec::new();
    match kind {
        BackendKind::Cpu { isa, threads } => {
            b.push(0);
            b.push(isa.code());
            b.extend_from_slice(&u32::try_from(*threads).unwrap_or(u32::MAX).to_le_bytes());
        }
        BackendKind::Cuda { device, name } => {
            b.push(1);
            b.extend_from_slice(&device.to_le_bytes());
            b.extend_from_slice(&name.as_bytes()[..name.floor_char_boundary(250)]);
        }
        BackendKind::Emulator => b.push(2),
    }
    b
}

/// [`encode_backend`] inverted (version 2), or the display form parsed
/// (version 1).
fn decode_backend(version: u32, bytes: &[u8]) -> std::result::Result<BackendKind, String> {
    let bad = || format!("backend record {bytes:02x?} is not valid");
    if version == 1 {
        let text = String::from_utf8_lossy(bytes);
        return BackendKind::parse(&text).ok_or_else(|| format!("backend {text:?} is not known"));
    }
    let u32_at = |k: usize| {
        bytes
            .get(k..k + 4)
            .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
    };
    match bytes.first() {
        Some(0) if bytes.len() == 6 => Ok(BackendKind::Cpu {
            isa: Isa::from_code(bytes[1]).ok_or_else(bad)?,
            threads: u32_at(2).ok_or_else(bad)? as usize,
        }),
        Some(1) if bytes.len() >= 5 => Ok(BackendKind::Cuda {
            device: u32_at(1).ok_or_else(bad)?,
            name: String::from_utf8(bytes[5..].to_vec()).map_err(|_| bad())?,
        }),
        Some(2) if bytes.len() == 1 => Ok(BackendKind::Emulator),
        _ => Err(bad()),
    }
}

impl Checkpoint {
    /// Writes the checkpoint atomically. Refuses a non-finite state
    /// ([`Error::NonFiniteSnapshot`]), invalid bodies or parameters.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let bodies = &self.state.bodies;
        check_writable_state(path, bodies)?;
        let p = &self.params;
        let gravity = p.gravity();
        let name = encode_backend(&self.backend);
        let n = bodies.len();
        let mut b = Vec::with_capacity(CKPT_FIXED + name.len() + n * 28 + 4);
        b.extend_from_slice(CKPT_MAGIC);
        b.extend_from_slice(&CKPT_VERSION.to_le_bytes());
        b.extend_from_slice(&(n as u64).to_le_bytes());
        b.extend_from_slice(&self.state.step.to_le_bytes());
        b.extend_from_slice(&self.state.time.to_le_bytes());
        for x in [p.dt(), gravity.softening(), gravity.g()] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b.push(p.kernel().code());
        b.extend_from_slice(&p.kernel().block().to_le_bytes());
        b.push(p.integrator().code());
        b.push(name.len() as u8);
        b.extend_from_slice(&name);
        for v in bodies.positions.iter().chain(&bodies.velocities) {
            for x in v.to_array() {
                b.extend_from_slice(&x.to_le_bytes());
            }
        }
        for m in &bodies.masses {
            b.extend_from_slice(&m.to_le_bytes());
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        write_atomically(path, &b)
    }

    /// Reads and fully validates a checkpoint: magic, version, size, CRC32,
    /// parameters and bodies. Any defect is an [`Error::InvalidFile`].
    pub fn load(path: impl AsRef<Path>) -> Result<Checkpoint> {
        let path = path.as_ref();
        let bytes = read_file(path)?;
        let bad = |reason: String| invalid(path, "checkpoint", reason);
        if bytes.len() < CKPT_MAGIC.len() || &bytes[..8] != CKPT_MAGIC {
            return Err(bad(format!(
                "missing the magic string NBODYCKP (first bytes {:02x?})",
                &bytes[..bytes.len().min(8)]
            )));
        }
        if bytes.len() < CKPT_FIXED {
            return Err(bad(format!(
                "truncated: {} bytes, shorter than the {CKPT_FIXED}-byte header",
                bytes.len()
            )));
        }
        let mut r = Reader {
            bytes: &bytes,
            at: 8,
        };
        let version = r.u32();
        if !(1..=CKPT_VERSION).contains(&version) {
            return Err(bad(format!(
                "version {version} is not supported (this build reads versions 1 to {CKPT_VERSION})"
            )));
        }
        let n = r.u64();
        if n == 0 || n > MAX_BODIES as u64 {
            return Err(bad(format!(
                "N = {n} bodies is outside 1..={MAX_BODIES} (corrupt header)"
            )));
        }
        let n = n as usize;
        let name_len = bytes[CKPT_FIXED - 1] as usize;
        // In u64: no overflow for any n <= 2^30, whatever the pointer width.
        let expected = (CKPT_FIXED + name_len + 4) as u64 + n as u64 * 28;
        if bytes.len() as u64 != expected {
            let what = if (bytes.len() as u64) < expected {
                "truncated"
            } else {
                "trailing bytes"
            };
            return Err(bad(format!(
                "{what}: {} bytes, N = {n} bodies needs {expected}",
                bytes.len()
            )));
        }
        let (body, stored) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_le_bytes(stored.try_into().expect("4 bytes"));
        let computed = crc32fast::hash(body);
        if stored != computed {
            return Err(bad(format!(
                "checksum mismatch: stored CRC32 {stored:#010x}, computed {computed:#010x} (corrupt file)"
            )));
        }
        let step = r.u64();
        let time = f64::from_bits(r.u64());
        let (dt, softening, g) = (r.f32(), r.f32(), r.f32());
        let kernel_code = r.u8();
        let block = r.u32();
        let kernel = Kernel::from_code(kernel_code, block)
            .ok_or_else(|| bad(format!("unknown kernel code {kernel_code}")))?;
        let integrator_code = r.u8();
        let integrator = Integrator::from_code(integrator_code)
            .ok_or_else(|| bad(format!("unknown integrator code {integrator_code}")))?;
        r.u8(); // name length, read above
        let backend = decode_backend(version, r.take(name_len)).map_err(bad)?;
        let params = ForceLaw::gravity(g as f64, softening as f64)
            .and_then(|force| Params::new(dt as f64, force, kernel, integrator))
            .map_err(|e| bad(e.to_string()))?;
        let mut vec3s = |count: usize| -> Vec<Vec3> {
            (0..count)
                .map(|_| Vec3::new(r.f32(), r.f32(), r.f32()))
                .collect()
        };
        let positions = vec3s(n);
        let velocities = vec3s(n);
        let masses = (0..n).map(|_| r.f32()).collect();
        let bodies = Bodies {
            positions,
            velocities,
            masses,
        };
        bodies.validate().map_err(|e| bad(e.to_string()))?;
        Ok(Checkpoint {
            state: State { bodies, time, step },
            params,
            backend,
        })
    }
}

/// Little-endian reads from a buffer whose length was checked beforehand.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, k: usize) -> &'a [u8] {
        let s = &self.bytes[self.at..self.at + k];
        self.at += k;
        s
    }
    fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().expect("4 bytes"))
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().expect("8 bytes"))
    }
    fn f32(&mut self) -> f32 {
        f32::from_bits(self.u32())
    }
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

fn invalid(path: &Path, format: &'static str, reason: String) -> Error {
    Error::InvalidFile {
        path: path.to_path_buf(),
        format,
        reason,
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Non-finite bodies are [`Error::NonFiniteSnapshot`]; other defects the
/// [`Bodies::validate`] error.
pub(crate) fn check_writable_state(path: &Path, bodies: &Bodies) -> Result<()> {
    if let Some(body) = bodies.first_non_finite() {
        return Err(Error::NonFiniteSnapshot {
            path: path.to_path_buf(),
            body,
        });
    }
    bodies.validate()
}

/// Writes `bytes` to a temporary file next to `path`, syncs it and renames it
/// over `path`: readers see the old file or the new one, never a partial one.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |source: std::io::Error| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir: PathBuf = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".nbody-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(io)?;
    tmp.write_all(bytes).map_err(io)?;
    #[cfg(unix)]
    {
        // NamedTempFile is created 0600; a snapshot is an ordinary data file.
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(io)?;
    }
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
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
