//! Checkpoints: a whole simulation (state, parameters, backend) in one
//! checksummed binary file, and the little-endian reader that loads it.

use std::path::Path;

use glam::Vec3;
use gpu_kernels::shape::MAX_BODIES;

use super::reader::Reader;
use super::sections;
use super::{check_writable_state, invalid, read_file, write_atomically};
use crate::config::{Kernel, Params};
use crate::engine::BackendKind;
use crate::error::Result;
use crate::force::ForceLaw;
use crate::hermite::HermiteState;
use crate::integrator::Integrator;
use crate::isa::Isa;
use crate::md::MdState;
use crate::state::{Bodies, State};

/// Everything needed to continue a simulation exactly where it stopped: the
/// state (exact `f32` bits), the parameters, and the backend it ran on.
///
/// A binary file (magic `NBODYCKP`, version, little-endian fields, CRC32 of
/// everything before it). Resuming on the same backend with the same
/// parameters continues bit-identically to an uninterrupted run
/// ([`Simulation::resume`](crate::Simulation::resume)).
///
/// A short-range run's file also holds its force law, box and enumeration
/// (in [`params`](Self::params)) and its [`MdState`] (image counters, where
/// the neighbour lists were built), which this struct does not carry:
/// [`Checkpoint::save_with_md`] writes and [`Checkpoint::load_with_md`]
/// reads it; `Simulation::save_checkpoint` and `Simulation::resume` do both.
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
/// Version 6 is version 5 with an ensemble (`ENSM`, `ENST`, `KICK`
/// sections), written only for ensembles other than NVE, whose files stay
/// version 5; version 5 writes a pair potential as the `PAIR` section and the atom
/// types as `TYPE` (builds that skip them refuse the version; `LJ12` is
/// still read); version 4 adds, after the `f64` time step, the byte length of optional
/// sections that follow the bodies (`super::sections`: Lennard-Jones, the
/// periodic box, the enumeration, image counters, the lists' origin);
/// version 3 the time step in `f64` after the backend record (what the
/// simulated time advances by); version 2 stores the backend as data
/// ([`encode_backend`]); version 1 its display form. All five are read.
const CKPT_VERSION: u32 = 6;
/// What a run in the NVE ensemble writes (builds from before the ensembles read it).
const CKPT_VERSION_NVE: u32 = 5;
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
    /// ([`Error::NonFiniteSnapshot`](crate::Error::NonFiniteSnapshot)), invalid bodies or parameters.
    ///
    /// ```
    /// use nbody_host::{Backend, Checkpoint, Simulation, ic};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.ckpt");
    /// let mut sim = Simulation::builder(ic::plummer(32, 1)).backend(Backend::cpu()).build()?;
    /// sim.step(3)?;
    /// let checkpoint = Checkpoint {
    ///     state: sim.state()?,
    ///     params: sim.params().clone(),
    ///     backend: sim.backend(),
    /// };
    /// checkpoint.save(&path)?;
    /// assert_eq!(Checkpoint::load(&path)?, checkpoint); // the same bits, step and time
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        self.save_with_md(path, None)
    }

    /// [`save`](Self::save), with a short-range run's image counters and
    /// neighbour-list origin ([`Simulation::md_state`](crate::Simulation::md_state)).
    pub fn save_with_md(&self, path: impl AsRef<Path>, md: Option<&MdState>) -> Result<()> {
        self.save_all(path, md, None)
    }

    /// [`save_with_md`](Self::save_with_md), with a Hermite run's f64 state.
    pub(crate) fn save_all(
        &self,
        path: impl AsRef<Path>,
        md: Option<&MdState>,
        hermite: Option<&HermiteState>,
    ) -> Result<()> {
        let path = path.as_ref();
        let bodies = &self.state.bodies;
        check_writable_state(path, bodies)?;
        let p = &self.params;
        // A pair potential's file stores gravity's defaults here (its law is the PAIR section).
        let gravity = p.gravity().unwrap_or_default();
        // At most 255 bytes, cut at a character boundary: the name is informational.
        let name = encode_backend(&self.backend);
        let n = bodies.len();
        let extra = sections::encode(
            p,
            md.filter(|md| {
                (md.images.len() == n || md.images.is_empty())
                    && (md.types.len() == n || md.types.is_empty())
            }),
            hermite.filter(|h| h.pos.len() == n),
            ids_for(&self.state, n),
        );
        let mut b = Vec::with_capacity(CKPT_FIXED + name.len() + 12 + n * 28 + extra.len() + 4);
        b.extend_from_slice(CKPT_MAGIC);
        let version = if p.ensemble() == crate::md::Ensemble::Nve {
            CKPT_VERSION_NVE
        } else {
            CKPT_VERSION
        };
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&(n as u64).to_le_bytes());
        b.extend_from_slice(&self.state.step.to_le_bytes());
        b.extend_from_slice(&self.state.time.to_le_bytes());
        for x in [p.dt(), gravity.softening(), gravity.g()] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b.push(p.kernel().code());
        b.extend_from_slice(&p.kernel().block_word().to_le_bytes());
        b.push(p.integrator().code());
        b.push(name.len() as u8);
        b.extend_from_slice(&name);
        b.extend_from_slice(&p.dt_f64().to_le_bytes());
        b.extend_from_slice(&(extra.len() as u32).to_le_bytes());
        for v in bodies.positions.iter().chain(&bodies.velocities) {
            for x in v.to_array() {
                b.extend_from_slice(&x.to_le_bytes());
            }
        }
        for m in &bodies.masses {
            b.extend_from_slice(&m.to_le_bytes());
        }
        b.extend_from_slice(&extra);
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        write_atomically(path, &b)
    }

    /// Reads and fully validates a checkpoint: magic, version, size, CRC32,
    /// parameters and bodies. Any defect is an [`Error::InvalidFile`](crate::Error::InvalidFile).
    ///
    /// ```
    /// use nbody_host::{Backend, Checkpoint, Error, Simulation, ic};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.ckpt");
    /// let sim = Simulation::builder(ic::plummer(32, 1)).backend(Backend::cpu()).build()?;
    /// sim.save_checkpoint(&path)?;
    /// let checkpoint = Checkpoint::load(&path)?;
    /// assert_eq!(checkpoint.state.step, 0);
    /// assert_eq!(checkpoint.params, *sim.params());
    ///
    /// // One flipped bit fails the CRC32.
    /// let mut bytes = std::fs::read(&path).unwrap();
    /// bytes[40] ^= 1;
    /// std::fs::write(&path, &bytes).unwrap();
    /// assert!(matches!(Checkpoint::load(&path), Err(Error::InvalidFile { .. })));
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Checkpoint> {
        Ok(Checkpoint::load_with_md(path)?.0)
    }

    /// [`load`](Self::load), and a short-range run's [`MdState`] if the
    /// file holds one.
    pub fn load_with_md(path: impl AsRef<Path>) -> Result<(Checkpoint, Option<MdState>)> {
        let (checkpoint, md, _) = Checkpoint::load_all(path)?;
        Ok((checkpoint, md))
    }

    /// [`load_with_md`](Self::load_with_md), and a Hermite run's f64 state.
    pub(crate) fn load_all(
        path: impl AsRef<Path>,
    ) -> Result<(Checkpoint, Option<MdState>, Option<HermiteState>)> {
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
        let mut r = Reader::new(&bytes, 8);
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
        let dt64_len = if version >= 3 { 8 } else { 0 };
        // Version 4: the sections' length, right after the f64 time step.
        let sections_len = match version {
            4.. => {
                let at = CKPT_FIXED + name_len + dt64_len;
                bytes
                    .get(at..at + 4)
                    .map(|w| 4 + u32::from_le_bytes(w.try_into().expect("4 bytes")) as u64)
                    .ok_or_else(|| {
                        bad(format!(
                            "truncated: {} bytes, shorter than its header",
                            bytes.len()
                        ))
                    })?
            }
            _ => 0,
        };
        // In u64: no overflow for any n <= 2^30, whatever the pointer width.
        let expected = (CKPT_FIXED + name_len + dt64_len + 4) as u64 + n as u64 * 28 + sections_len;
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
        let dt64 = if version >= 3 {
            let dt64 = f64::from_bits(r.u64());
            if dt64 as f32 != dt {
                return Err(bad(format!(
                    "time step {dt64} (f64) does not round to the stored f32 step {dt}"
                )));
            }
            dt64
        } else {
            dt as f64
        };
        if version >= 4 {
            r.u32(); // the sections' length, read above
        }
        let header = ForceLaw::gravity(g as f64, softening as f64)
            .and_then(|force| Params::new(dt64, force, kernel, integrator))
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
        let mut extra =
            sections::decode(r.take(sections_len.saturating_sub(4) as usize), n).map_err(bad)?;
        let params = extra.params(header).map_err(|e| bad(e.to_string()))?;
        let hermite = extra.hermite.take().map(|(.., h)| h);
        let ids = extra.ids(n);
        let md = extra.md_state().map_err(bad)?;
        Ok((
            Checkpoint {
                state: State {
                    bodies,
                    time,
                    step,
                    ids,
                },
                params,
                backend,
            },
            md,
            hermite,
        ))
    }
}

/// The ids to store for `state`'s `n` bodies: its own, or `0..n` where it
/// has none of the right length (a `State` made by hand).
pub(super) fn ids_for(state: &State, n: usize) -> &[u64] {
    if state.ids.len() == n {
        &state.ids
    } else {
        &[]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_records_round_trip_and_version_1_names_parse() {
        for kind in [
            BackendKind::Cpu {
                isa: Isa::Avx512,
                threads: 64,
            },
            BackendKind::Cuda {
                device: 2,
                name: "NVIDIA H100".into(),
            },
            BackendKind::Emulator,
        ] {
            assert_eq!(decode_backend(2, &encode_backend(&kind)), Ok(kind.clone()));
            assert_eq!(decode_backend(1, kind.to_string().as_bytes()), Ok(kind));
        }
        assert!(decode_backend(2, &[0, 9, 1, 0, 0, 0]).is_err());
        assert!(decode_backend(2, &[7]).is_err());
        assert!(decode_backend(1, b"gpu").unwrap_err().contains("gpu"));
    }
}
