//! How snapshots, checkpoints and tuning profiles reach the disk:
//! [`write_atomically`], a temporary file renamed over the target.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

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
