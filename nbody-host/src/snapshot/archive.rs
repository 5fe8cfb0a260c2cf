//! The snapshot archive: an append-only file of snapshots (REBOUND's
//! SimulationArchive), each record with its step, time, parameters and a
//! CRC32, read back by index or by time.
//!
//! One file because it is one format: the reader ([`Archive`]), the writer
//! ([`ArchiveWriter`]) and the record encoder and decoder at the end share
//! the layout below, the scan that finds the last whole record and the
//! constants; kept together, neither half can change without the other.
//!
//! # Format (version 2, little-endian)
//!
//! | bytes | what |
//! | --- | --- |
//! | 8 | magic `NBODYARC` |
//! | 4 | format version, `u32` (2; version 1 files, which hold gravity runs only, are read too) |
//! | 4 | header length `H`, `u32`: the first record starts at byte `H` (32 now) |
//! | `H - 20` | reserved, zero |
//! | 4 | CRC32 of the header's first `H - 4` bytes |
//!
//! then records, one after the other:
//!
//! | offset | bytes | what |
//! | ---: | ---: | --- |
//! | 0 | 4 | tag `SNAP` |
//! | 4 | 4 | reserved, zero, `u32` |
//! | 8 | 8 | record length `L` in bytes, everything included, `u64` |
//! | 16 | 8 | `N`, `u64` |
//! | 24 | 8 | step, `u64` |
//! | 32 | 8 | time, `f64` |
//! | 40 | 8 | `dt` as given, `f64` |
//! | 48 | 4 | softening, `f32` |
//! | 52 | 4 | `G`, `f32` |
//! | 56 | 1 | kernel code (0 simt, 1 tiled, 2 triangle) |
//! | 57 | 1 | integrator code (0 semi-implicit Euler, 1 leapfrog) |
//! | 58 | 2 | reserved, zero |
//! | 60 | 4 | block size, `u32` |
//! | 64 | `28 N` | the bodies: `N` rows of `x y z vx vy vz m`, `f32` (the `.npy` snapshot's columns) |
//! | `64 + 28 N` | | optional sections, each a 4-byte tag, a `u32` payload length and the payload |
//! | `L - 4` | 4 | CRC32 (IEEE, as zlib's `crc32`) of the record's first `L - 4` bytes |
//!
//! Sections are how a record grows without breaking old readers, which skip
//! tags they do not know. Version 2 writes, for short-range runs, the pair
//! potential, the atom types, the periodic box, the enumeration, the image
//! counters and where the neighbour lists were built (tags `PAIR`, `TYPE`,
//! `PBOX`, `NBRS`, `IMGS`, `NREF`: `super::sections`; records written before
//! `PAIR` hold Lennard-Jones as `LJ12`, still read); gravity records have
//! none, and are what version 1 wrote. Readers skip tags they do not know.
//!
//! `N` may change from record to record ([`Simulation::add`](crate::Simulation::add)).
//! Steps strictly increase along the file. A record cut short (a run killed
//! while appending) is ignored by readers and cut off by the next writer.
//!
//! # From numpy
//!
//! `docs/library.md` has a dozen lines of Python that read an archive with
//! numpy (the bodies of a record are one `np.frombuffer` call);
//! `tests/archive.rs` runs them against files this module writes.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use glam::Vec3;
use gpu_kernels::shape::MAX_BODIES;

use super::atomic_write::resolve_target;
use super::reader::Reader;
use super::sections;
use super::{check_writable_state, invalid, push_rows, write_atomically};
use crate::config::{Kernel, Params};
use crate::error::{Error, Result};
use crate::force::ForceLaw;
use crate::integrator::Integrator;
use crate::md::MdState;
use crate::state::{Bodies, State};

const MAGIC: &[u8; 8] = b"NBODYARC";
const VERSION: u32 = 2;
/// Bytes of the file header this version writes.
const HEADER_LEN: u32 = 32;
/// The longest file header a reader accepts (later versions may write
/// longer ones).
const MAX_HEADER_LEN: u64 = 4096;
const RECORD_TAG: &[u8; 4] = b"SNAP";
/// Bytes of a record before its bodies.
const RECORD_HEAD: u64 = 64;
/// Bytes of one body in a record.
const BODY_BYTES: u64 = 28;
const FORMAT: &str = "archive";

/// How close to `t`, in time steps of the record, a record's time must be
/// for [`Archive::at_time`] to count it as at `t`: far above the clock's
/// rounding (about `k^2 / 2` units of `2^-53` of a step after `k` steps at
/// worst, `5e-5` after a million) and far below the step between records.
pub const TIME_TOLERANCE: f64 = 1e-3;

/// Where one record lies and what it holds, from its header.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecordInfo {
    /// Steps taken when the snapshot was made.
    pub step: u64,
    /// Simulated time of the snapshot.
    pub time: f64,
    /// Number of bodies.
    pub n: usize,
    /// The time step of the run at the snapshot (what a lookup by time
    /// measures its tolerance in).
    dt: f64,
    /// Byte offset of the record in the file.
    offset: u64,
    /// Bytes of the record.
    len: u64,
}

/// One record of an archive: the state and the parameters it was made with.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// Bodies (exact bits), time and step count.
    pub state: State,
    /// Time step (`f64` as given), force law, kernel, integrator, box and
    /// enumeration.
    pub params: Params,
    /// A short-range run's image counters and neighbour-list origin.
    pub md: Option<MdState>,
}

// `Snapshot::builder` (a builder continuing the run from a record) and
// `ArchiveWriter::append` (a simulation's state as a record) are defined by
// the simulation (`simulation/persist.rs`): the file format knows nothing of
// `Simulation`.

/// An archive opened for reading: its records' headers, indexed; each
/// record's bodies are read (and their CRC32 checked) when asked for.
///
/// ```
/// use nbody_host::snapshot::{Archive, ArchiveWriter};
/// use nbody_host::{Backend, Simulation, ic};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("run.nbar");
/// let mut sim = Simulation::builder(ic::plummer(100, 1)).dt(0.01).backend(Backend::cpu()).build()?;
/// let mut archive = ArchiveWriter::create(&path)?;
/// for _ in 0..5 {
///     archive.append(&sim)?;
///     sim.step(10)?;
/// }
/// let archive = Archive::open(&path)?;
/// assert_eq!(archive.len(), 5);
/// assert_eq!(archive.get(2)?.state.step, 20);
/// assert_eq!(archive.at_time(0.25)?.state.step, 20); // the last one at or before t
/// let mut again = archive.get(4)?.builder().backend(Backend::cpu()).build()?;
/// again.step(10)?;
/// assert_eq!(again.state()?, sim.state()?); // bit-identical, time included
/// # Ok::<(), nbody_host::Error>(())
/// ```
#[derive(Debug)]
pub struct Archive {
    path: PathBuf,
    file: std::sync::Mutex<File>,
    records: Vec<RecordInfo>,
    tail: u64,
}

impl Archive {
    /// Opens `path` and reads every record's header (not the bodies): an
    /// [`Error::InvalidFile`] names the first defect (magic, version, a
    /// record header, steps out of order). A last record cut short is left
    /// out ([`incomplete_tail_bytes`](Self::incomplete_tail_bytes)).
    pub fn open(path: impl AsRef<Path>) -> Result<Archive> {
        let path = path.as_ref();
        let mut file = File::open(path).map_err(|source| io(path, source))?;
        let (records, tail) = scan(path, &mut file)?;
        Ok(Archive {
            path: path.to_path_buf(),
            file: std::sync::Mutex::new(file),
            records,
            tail,
        })
    }

    /// Number of complete records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are no complete records.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records' steps, times and sizes, in file order.
    pub fn records(&self) -> &[RecordInfo] {
        &self.records
    }

    /// Bytes after the last complete record: a record cut short by a run
    /// killed while appending (0 normally).
    pub fn incomplete_tail_bytes(&self) -> u64 {
        self.tail
    }

    /// Record `index`, read, CRC-checked and validated.
    pub fn get(&self, index: usize) -> Result<Snapshot> {
        let info = *self.records.get(index).ok_or_else(|| {
            invalid(
                &self.path,
                FORMAT,
                format!("no record {index}: the archive has {}", self.records.len()),
            )
        })?;
        let mut bytes = vec![0u8; info.len as usize];
        {
            let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
            file.seek(SeekFrom::Start(info.offset))
                .and_then(|_| file.read_exact(&mut bytes))
                .map_err(|source| io(&self.path, source))?;
        }
        decode_record(&bytes)
            .map_err(|reason| invalid(&self.path, FORMAT, format!("record {index}: {reason}")))
    }

    /// The index of the last record at or before time `t`, if any: a
    /// record within [`TIME_TOLERANCE`] of its time step of `t` counts as
    /// at `t`. The clock adds `dt` once a step, so a run stepped to `t`
    /// ([`Simulation::integrate_to`](crate::Simulation::integrate_to)) lands a rounding away from it (ten
    /// steps of 0.01 after 0.1 end at 0.20000000000000004), and without
    /// the tolerance a lookup at `t` would miss its record by one.
    pub fn index_at_time(&self, t: f64) -> Option<usize> {
        // Steps increase along the file, and so do times.
        self.records
            .partition_point(|r| r.time <= t + TIME_TOLERANCE * r.dt.abs())
            .checked_sub(1)
    }

    /// The last record at or before time `t` (REBOUND's archive lookup;
    /// within a thousandth of a step, see [`index_at_time`](Self::index_at_time);
    /// to land on `t` itself, continue from it with [`Snapshot::builder`]
    /// and [`Simulation::integrate_to`](crate::Simulation::integrate_to)).
    ///
    /// ```
    /// use nbody_host::snapshot::{Archive, ArchiveWriter};
    /// use nbody_host::{Backend, Simulation, ic};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.nbar");
    /// let mut sim = Simulation::builder(ic::plummer(16, 1)).dt(0.01).backend(Backend::cpu()).build()?;
    /// let mut archive = ArchiveWriter::create(&path)?;
    /// for t in [0.1, 0.2, 0.3] {
    ///     sim.integrate_to(t)?;
    ///     archive.append(&sim)?;
    /// }
    /// let archive = Archive::open(&path)?;
    /// assert_ne!(archive.records()[1].time, 0.2); // 0.20000000000000004
    /// assert_eq!(archive.at_time(0.2)?.state.step, 20);
    /// assert_eq!(archive.at_time(0.25)?.state.step, 20);
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn at_time(&self, t: f64) -> Result<Snapshot> {
        let index = self.index_at_time(t).ok_or_else(|| {
            let first = self.records.first().map(|r| r.time);
            invalid(
                &self.path,
                FORMAT,
                match first {
                    Some(first) => {
                        format!("no record at or before t = {t}: the first is at t = {first}")
                    }
                    None => format!("no record at or before t = {t}: the archive is empty"),
                },
            )
        })?;
        self.get(index)
    }
}

/// Appends snapshots to an archive. Each [`append`](Self::append) writes one
/// record and syncs it to disk; a failed append cuts the file back to where
/// it was.
#[derive(Debug)]
pub struct ArchiveWriter {
    path: PathBuf,
    file: File,
    /// Length of the file: where the next record goes.
    end: u64,
    /// Step and time of the last record.
    last: Option<(u64, f64)>,
    records: usize,
}

impl ArchiveWriter {
    /// Creates an empty archive at `path`, replacing a file there (written
    /// as every file of the library is: through symlinks, never over a
    /// directory, pipe or device; see [`snapshot`](super)).
    pub fn create(path: impl AsRef<Path>) -> Result<ArchiveWriter> {
        let path = path.as_ref();
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&HEADER_LEN.to_le_bytes());
        header.resize(HEADER_LEN as usize - 4, 0);
        let crc = crc32fast::hash(&header);
        header.extend_from_slice(&crc.to_le_bytes());
        write_atomically(path, &header)?;
        let file = open_for_append(path)?;
        Ok(ArchiveWriter {
            path: path.to_path_buf(),
            file,
            end: HEADER_LEN as u64,
            last: None,
            records: 0,
        })
    }

    /// Opens the archive at `path` to go on appending after its last
    /// complete record (an incomplete one, from a killed run, is cut off).
    pub fn open(path: impl AsRef<Path>) -> Result<ArchiveWriter> {
        ArchiveWriter::continue_at(path, u64::MAX)
    }

    /// Opens the archive at `path` for a run resumed at `step` (from a
    /// checkpoint): records after `step`, which a run killed after that
    /// checkpoint wrote and the resumed run will write again, are cut off,
    /// as is an incomplete last record. The archive then reads as if the
    /// run had never been interrupted.
    ///
    /// ```
    /// use nbody_host::snapshot::ArchiveWriter;
    /// use nbody_host::{Backend, Simulation, ic};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let (ckpt, path) = (dir.path().join("run.ckpt"), dir.path().join("run.nbar"));
    /// let mut sim = Simulation::builder(ic::plummer(32, 1)).backend(Backend::cpu()).build()?;
    /// let mut archive = ArchiveWriter::create(&path)?;
    /// for k in 0..4 {
    ///     if k == 2 { sim.save_checkpoint(&ckpt)?; } // step 20
    ///     archive.append(&sim)?;                     // steps 0, 10, 20, 30
    ///     sim.step(10)?;
    /// }
    /// drop((sim, archive)); // killed
    /// let sim = Simulation::resume(&ckpt)?.backend(Backend::cpu()).build()?;
    /// let archive = ArchiveWriter::continue_at(&path, sim.steps_done())?;
    /// assert_eq!((archive.len(), archive.last_step()), (3, Some(20)));
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn continue_at(path: impl AsRef<Path>, step: u64) -> Result<ArchiveWriter> {
        let path = path.as_ref();
        let mut file = open_for_append(path)?;
        let (records, _) = scan(path, &mut file)?;
        let keep = records.partition_point(|r| r.step <= step);
        let end = records[..keep]
            .last()
            .map_or(HEADER_LEN as u64, |r| r.offset + r.len);
        let file_len = file.metadata().map_err(|e| io(path, e))?.len();
        if file_len != end {
            file.set_len(end)
                .and_then(|_| file.sync_data())
                .map_err(|e| io(path, e))?;
        }
        Ok(ArchiveWriter {
            path: path.to_path_buf(),
            file,
            end,
            last: records[..keep].last().map(|r| (r.step, r.time)),
            records: keep,
        })
    }

    /// Records in the archive.
    pub fn len(&self) -> usize {
        self.records
    }

    /// The step of the last record, if there is one.
    pub fn last_step(&self) -> Option<u64> {
        self.last.map(|(step, _)| step)
    }

    /// Whether the archive has no records.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Appends a state with its parameters (see [`append`](Self::append)).
    pub fn append_state(&mut self, state: &State, params: &Params) -> Result<()> {
        self.append_record(state, params, None)
    }

    /// Appends a state with its parameters and a short-range run's state
    /// (what [`append`](Self::append) takes from a simulation).
    pub(crate) fn append_record(
        &mut self,
        state: &State,
        params: &Params,
        md: Option<&MdState>,
    ) -> Result<()> {
        check_writable_state(&self.path, &state.bodies)?;
        if let Some((step, _)) = self.last
            && state.step <= step
        {
            return Err(Error::Unsupported(format!(
                "{}: cannot append step {} after step {step}: an archive's steps increase",
                self.path.display(),
                state.step
            )));
        }
        let record = encode_record(state, params, md);
        let written = self
            .file
            .write_all(&record)
            .and_then(|_| self.file.sync_data());
        if let Err(source) = written {
            // Leave no partial record behind (best effort: it is what the
            // next reader would skip anyway).
            let _ = self.file.set_len(self.end);
            return Err(io(&self.path, source));
        }
        self.end += record.len() as u64;
        self.last = Some((state.step, state.time));
        self.records += 1;
        Ok(())
    }
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens an existing archive file to append, refusing what is not a regular
/// file once symlinks are followed.
fn open_for_append(path: &Path) -> Result<File> {
    let target = resolve_target(path)?;
    std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(&target)
        .map_err(|source| io(path, source))
}

/// The records of an open archive, by their headers, and the bytes of an
/// incomplete last record.
fn scan(path: &Path, file: &mut File) -> Result<(Vec<RecordInfo>, u64)> {
    let bad = |reason: String| invalid(path, FORMAT, reason);
    let len = file.metadata().map_err(|e| io(path, e))?.len();
    let mut head = [0u8; 16];
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_exact(&mut head))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => bad(format!("truncated: {len} bytes, no header")),
            _ => io(path, e),
        })?;
    if &head[..8] != MAGIC {
        return Err(bad(format!(
            "missing the magic string NBODYARC (first bytes {:02x?})",
            &head[..8]
        )));
    }
    let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
    if !(1..=VERSION).contains(&version) {
        return Err(bad(format!(
            "version {version} is not supported (this build reads versions 1 to {VERSION})"
        )));
    }
    let header_len = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes")) as u64;
    if !(20..=MAX_HEADER_LEN.min(len)).contains(&header_len) {
        return Err(bad(format!(
            "header length {header_len} is outside 20..={} (corrupt header)",
            MAX_HEADER_LEN.min(len)
        )));
    }
    let mut header = vec![0u8; header_len as usize];
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_exact(&mut header))
        .map_err(|e| io(path, e))?;
    let (covered, stored) = header.split_at(header.len() - 4);
    let stored = u32::from_le_bytes(stored.try_into().expect("4 bytes"));
    let computed = crc32fast::hash(covered);
    if stored != computed {
        return Err(bad(format!(
            "header checksum mismatch: stored CRC32 {stored:#010x}, computed {computed:#010x} (corrupt file)"
        )));
    }
    let mut records: Vec<RecordInfo> = Vec::new();
    let mut at = header_len;
    let mut buf = [0u8; RECORD_HEAD as usize];
    while at < len {
        if len - at < RECORD_HEAD {
            break; // a header cut short
        }
        file.seek(SeekFrom::Start(at))
            .and_then(|_| file.read_exact(&mut buf))
            .map_err(|e| io(path, e))?;
        let head = decode_head(&buf)
            .map_err(|reason| bad(format!("record {} at byte {at}: {reason}", records.len())))?;
        if head.len > len - at {
            break; // a record cut short
        }
        if let Some(last) = records.last()
            && head.step <= last.step
        {
            return Err(bad(format!(
                "record {} at byte {at}: step {} is not after the previous record's {}",
                records.len(),
                head.step,
                last.step
            )));
        }
        records.push(RecordInfo {
            step: head.step,
            time: head.time,
            n: head.n,
            dt: head.dt,
            offset: at,
            len: head.len,
        });
        at += head.len;
    }
    Ok((records, len - at))
}

/// A record header's fields.
struct Head {
    len: u64,
    n: usize,
    step: u64,
    time: f64,
    dt: f64,
}

/// Checks the tag, `N` and the length of a record header.
fn decode_head(bytes: &[u8]) -> std::result::Result<Head, String> {
    if &bytes[..4] != RECORD_TAG {
        return Err(format!(
            "tag {:02x?} is not SNAP (corrupt file)",
            &bytes[..4]
        ));
    }
    let mut r = Reader::new(bytes, 8);
    let len = r.u64();
    let n = r.u64();
    let step = r.u64();
    let time = f64::from_bits(r.u64());
    let dt = f64::from_bits(r.u64());
    if n == 0 || n > MAX_BODIES as u64 {
        return Err(format!("N = {n} is outside 1..={MAX_BODIES}"));
    }
    let least = RECORD_HEAD + n * BODY_BYTES + 4;
    if len < least {
        return Err(format!(
            "length {len} is less than the {least} bytes N = {n} bodies need"
        ));
    }
    Ok(Head {
        len,
        n: n as usize,
        step,
        time,
        dt,
    })
}

fn encode_record(state: &State, params: &Params, md: Option<&MdState>) -> Vec<u8> {
    let bodies = &state.bodies;
    let n = bodies.len() as u64;
    let md = md.filter(|md| {
        (md.images.is_empty() || md.images.len() == bodies.len())
            && (md.types.is_empty() || md.types.len() == bodies.len())
    });
    let extra = sections::encode(
        params,
        md,
        None,
        super::checkpoint::ids_for(state, bodies.len()),
    );
    let len = RECORD_HEAD + n * BODY_BYTES + extra.len() as u64 + 4;
    // A pair potential's record stores gravity's defaults here (its law is the PAIR section).
    let gravity = params.gravity().unwrap_or_default();
    let mut b = Vec::with_capacity(len as usize);
    b.extend_from_slice(RECORD_TAG);
    b.extend_from_slice(&0u32.to_le_bytes());
    for x in [
        len,
        n,
        state.step,
        state.time.to_bits(),
        params.dt_f64().to_bits(),
    ] {
        b.extend_from_slice(&x.to_le_bytes());
    }
    b.extend_from_slice(&gravity.softening().to_le_bytes());
    b.extend_from_slice(&gravity.g().to_le_bytes());
    b.push(params.kernel().code());
    b.push(params.integrator().code());
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(&params.kernel().block_word().to_le_bytes());
    debug_assert_eq!(b.len() as u64, RECORD_HEAD);
    push_rows(&mut b, bodies);
    b.extend_from_slice(&extra);
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// A whole record (its length from [`decode_head`]) back to a snapshot.
fn decode_record(bytes: &[u8]) -> std::result::Result<Snapshot, String> {
    let head = decode_head(bytes)?;
    if head.len != bytes.len() as u64 {
        return Err(format!(
            "length {} differs from the {} bytes indexed (the file changed?)",
            head.len,
            bytes.len()
        ));
    }
    let (body, stored) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(stored.try_into().expect("4 bytes"));
    let computed = crc32fast::hash(body);
    if stored != computed {
        return Err(format!(
            "checksum mismatch: stored CRC32 {stored:#010x}, computed {computed:#010x} (corrupt file)"
        ));
    }
    let mut r = Reader::new(bytes, 40);
    let dt = f64::from_bits(r.u64());
    let (softening, g) = (r.f32(), r.f32());
    let (kernel_code, integrator_code) = (r.u8(), r.u8());
    r.take(2);
    let block = r.u32();
    let kernel = Kernel::from_code(kernel_code, block)
        .ok_or_else(|| format!("unknown kernel code {kernel_code}"))?;
    let integrator = Integrator::from_code(integrator_code)
        .ok_or_else(|| format!("unknown integrator code {integrator_code}"))?;
    let header = ForceLaw::gravity(g as f64, softening as f64)
        .and_then(|force| Params::new(dt, force, kernel, integrator))
        .map_err(|e| e.to_string())?;
    let n = head.n;
    let mut bodies = Bodies {
        positions: Vec::with_capacity(n),
        velocities: Vec::with_capacity(n),
        masses: Vec::with_capacity(n),
    };
    for _ in 0..n {
        let row: [f32; 7] = std::array::from_fn(|_| r.f32());
        bodies.positions.push(Vec3::new(row[0], row[1], row[2]));
        bodies.velocities.push(Vec3::new(row[3], row[4], row[5]));
        bodies.masses.push(row[6]);
    }
    // The sections: what this version knows is read, the rest skipped.
    let at = RECORD_HEAD as usize + n * BODY_BYTES as usize;
    let mut extra = sections::decode(&body[at..], n)?;
    let params = extra.params(header).map_err(|e| e.to_string())?;
    let ids = extra.ids(n);
    bodies
        .validate()
        .map_err(|e| format!("{e} (row = body index)"))?;
    Ok(Snapshot {
        state: State {
            bodies,
            time: head.time,
            step: head.step,
            ids,
        },
        params,
        md: extra.md_state()?,
    })
}
