//! Checkpoints: a whole simulation (state, parameters, backend name) in one
//! checksummed binary file, and the little-endian reader that loads it.

use std::path::Path;

use glam::Vec3;
use gpu_kernels::launch::MAX_BODIES;

use super::{check_writable_state, invalid, read_file, write_atomically};
use crate::config::{Integrator, Kernel, Params};
use crate::error::Result;
use crate::state::{Bodies, State};

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
    /// The backend the run was on (e.g. `"cpu (avx2, 8 threads)"`): for the
    /// record only, a checkpoint resumes on any backend.
    pub backend: String,
}

const CKPT_MAGIC: &[u8; 8] = b"NBODYCKP";
const CKPT_VERSION: u32 = 1;
/// Bytes before the backend name: magic, version, n, step, time, dt,
/// softening, G, kernel, block, integrator, name length.
const CKPT_FIXED: usize = 8 + 4 + 8 + 8 + 8 + 4 + 4 + 4 + 1 + 4 + 1 + 1;

impl Checkpoint {
    /// Writes the checkpoint atomically. Refuses a non-finite state
    /// ([`Error::NonFiniteSnapshot`](crate::Error::NonFiniteSnapshot)), invalid bodies or parameters.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let bodies = &self.state.bodies;
        check_writable_state(path, bodies)?;
        let p = &self.params;
        Params::new(
            p.dt as f64,
            p.softening as f64,
            p.g as f64,
            p.kernel,
            p.integrator,
        )?;
        // At most 255 bytes, cut at a character boundary: the name is informational.
        let name = &self.backend[..self.backend.floor_char_boundary(255)];
        let n = bodies.len();
        let mut b = Vec::with_capacity(CKPT_FIXED + name.len() + n * 28 + 4);
        b.extend_from_slice(CKPT_MAGIC);
        b.extend_from_slice(&CKPT_VERSION.to_le_bytes());
        b.extend_from_slice(&(n as u64).to_le_bytes());
        b.extend_from_slice(&self.state.step.to_le_bytes());
        b.extend_from_slice(&self.state.time.to_le_bytes());
        for x in [p.dt, p.softening, p.g] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b.push(match p.kernel {
            Kernel::Simt { .. } => 0,
            Kernel::Tiled { .. } => 1,
            Kernel::Triangle { .. } => 2,
        });
        b.extend_from_slice(&p.kernel.block().to_le_bytes());
        b.push(match p.integrator {
            Integrator::SemiImplicitEuler => 0,
            Integrator::Leapfrog => 1,
        });
        b.push(name.len() as u8);
        b.extend_from_slice(name.as_bytes());
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
    /// parameters and bodies. Any defect is an [`Error::InvalidFile`](crate::Error::InvalidFile).
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
        if version != CKPT_VERSION {
            return Err(bad(format!(
                "version {version} is not supported (this build reads version {CKPT_VERSION})"
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
        let kernel = match kernel_code {
            0 => Kernel::Simt { block },
            1 => Kernel::Tiled { block },
            2 => Kernel::Triangle { block },
            k => return Err(bad(format!("unknown kernel code {k}"))),
        };
        let integrator = match r.u8() {
            0 => Integrator::SemiImplicitEuler,
            1 => Integrator::Leapfrog,
            k => return Err(bad(format!("unknown integrator code {k}"))),
        };
        r.u8(); // name length, read above
        let backend = String::from_utf8_lossy(r.take(name_len)).into_owned();
        let params = Params::new(dt as f64, softening as f64, g as f64, kernel, integrator)
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
