//! How the library writes files: every file it writes (snapshots,
//! checkpoints, tuning profiles, PNG images and plots, GIFs) goes through an
//! [`AtomicFile`], or [`write_atomically`] for bytes already in memory.
//!
//! The bytes go to a temporary file in the target's directory, which is
//! synced and then renamed over the target: readers see the old file or the
//! new one, never a partial one, and a failed or abandoned write leaves the
//! old file as it was.
//!
//! It lives in `snapshot` because that is the crate's module of files (and
//! `render`, a feature, may depend on it, not the other way round).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Permissions of every file written (before the umask is irrelevant: they
/// are set explicitly): an ordinary data file, not a temporary file's 0600.
#[cfg(unix)]
const FILE_MODE: u32 = 0o644;

/// A file being written atomically: [`Write`] into it, then
/// [`AtomicFile::commit`] puts it in place. Dropped without a commit, it
/// removes its temporary file and leaves the target untouched.
pub(crate) struct AtomicFile {
    /// The path as the caller gave it, for errors.
    path: PathBuf,
    temp: tempfile::NamedTempFile,
}

impl AtomicFile {
    /// Starts writing `path`: creates the temporary file beside it (so a
    /// directory that cannot hold the file fails here, before any work).
    pub(crate) fn create(path: &Path) -> Result<AtomicFile> {
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let temp = tempfile::Builder::new()
            .prefix(".nbody-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| Error::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    e.kind(),
                    format!("cannot create a temporary file in {}: {e}", dir.display()),
                ),
            })?;
        let file = AtomicFile {
            path: path.to_path_buf(),
            temp,
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.temp
                .as_file()
                .set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
                .map_err(|e| file.error(e))?;
        }
        Ok(file)
    }

    /// An [`Error::Io`] naming the target path.
    pub(crate) fn error(&self, source: std::io::Error) -> Error {
        Error::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Syncs the temporary file to disk and renames it over the target.
    pub(crate) fn commit(self) -> Result<()> {
        self.temp.as_file().sync_all().map_err(|e| self.error(e))?;
        let path = self.path;
        self.temp.persist(&path).map_err(|e| Error::Io {
            path: path.clone(),
            source: e.error,
        })?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.temp.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.temp.flush()
    }
}

/// Writes `bytes` to `path` atomically (see [`AtomicFile`]).
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes).map_err(|e| file.error(e))?;
    file.commit()
}
