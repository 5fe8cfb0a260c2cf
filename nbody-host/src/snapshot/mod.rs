//! Files: `.npy` snapshots of the bodies, checkpoints of a whole
//! simulation, and archives of snapshots over a run ([`ArchiveWriter`],
//! [`Archive`]; the format and how numpy reads it are in `archive.rs`'s
//! documentation, repeated in `docs/library.md`).
//!
//! Both are written atomically (a temporary file in the target's directory,
//! synced, then renamed over the target), so a crash never leaves a partial
//! file, and both refuse non-finite states ([`Error::NonFiniteSnapshot`]).
//! Loading validates everything before returning: a truncated, corrupt or
//! malformed file is an [`Error::InvalidFile`], never a partial load.
//! A symlink is written through to the file it points to; a directory, named
//! pipe, socket or device is refused. [`check_output_path`] tells before a
//! long run whether a path can be written at all.
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
//!
//! The parts: `npy.rs` (the `.npy` format), `checkpoint.rs` (the checkpoint
//! format), `archive.rs` (the archive), `sections.rs` (what short-range runs
//! add to checkpoints and archive records), `reader.rs` (the little-endian
//! reader they share) and `atomic_write.rs` (the atomic write every file of
//! the library goes through, the render module's pictures included).

use std::path::Path;

use crate::error::{Error, Result};
use crate::state::Bodies;

mod archive;
mod atomic_write;
mod checkpoint;
mod npy;
mod reader;
mod sections;

pub use archive::{Archive, ArchiveWriter, RecordInfo, Snapshot, TIME_TOLERANCE};
#[cfg(feature = "render")]
pub(crate) use atomic_write::AtomicFile;
pub use atomic_write::check_output_path;
pub(crate) use atomic_write::{resolve_target, write_atomically};
pub use checkpoint::Checkpoint;
pub use npy::{Columns64, load_npy, load_npy_f64, load_npy_typed, save_npy, save_npy_f64};

/// An [`Error::InvalidFile`]: `path` is not a valid `format` file, because `reason`.
fn invalid(path: &Path, format: &'static str, reason: String) -> Error {
    Error::InvalidFile {
        path: path.to_path_buf(),
        format,
        reason,
    }
}

/// The whole file, or an [`Error::Io`] naming `path`.
fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Appends the bodies as rows `x y z vx vy vz m` of little-endian `f32`:
/// the data of a `.npy` snapshot and of an archive record.
fn push_rows(bytes: &mut Vec<u8>, bodies: &Bodies) {
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
