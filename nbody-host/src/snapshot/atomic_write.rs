//! How the library writes files: every file it writes (snapshots,
//! checkpoints, tuning profiles, PNG images and plots, GIFs) goes through an
//! [`AtomicFile`], or [`write_atomically`] for bytes already in memory.
//!
//! The bytes go to a temporary file in the target's directory, which is
//! synced and then renamed over the target: readers see the old file or the
//! new one, never a partial one, and a failed or abandoned write leaves the
//! old file as it was.
//!
//! The target is what the path names once its symlinks are followed: a
//! symlink stays a symlink and the file it points to is replaced (created, if
//! the link dangles into an existing directory). A target that is not a
//! regular file (a directory, FIFO, socket or device) is refused with an
//! [`Error::Io`] naming the path and what it is, before anything is written:
//! a rename would put a regular file in its place.
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

/// Symlinks followed from one path before giving up (Linux's limit).
const MAX_SYMLINKS: usize = 40;

/// A file being written atomically: [`Write`] into it, then
/// [`AtomicFile::commit`] puts it in place. Dropped without a commit, it
/// removes its temporary file and leaves the target untouched.
pub(crate) struct AtomicFile {
    /// The path as the caller gave it, for errors.
    path: PathBuf,
    /// The file it names, symlinks followed: what the rename replaces.
    target: PathBuf,
    temp: tempfile::NamedTempFile,
}

impl AtomicFile {
    /// Starts writing `path`: follows its symlinks, refuses a target that
    /// is not a regular file, and creates the temporary file in the target's
    /// directory (so a directory that cannot hold the file fails here,
    /// before any work).
    pub(crate) fn create(path: &Path) -> Result<AtomicFile> {
        let target = resolve_target(path)?;
        let temp = create_temp(path, &target)?;
        let file = AtomicFile {
            path: path.to_path_buf(),
            target,
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
        let AtomicFile { path, target, temp } = self;
        temp.persist(&target).map_err(|e| Error::Io {
            path,
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

/// The file `path` names once its symlinks are followed (relative links
/// relative to the link's directory), which need not exist; an error if it
/// exists and is not a regular file, or if the links go round in a loop.
fn resolve_target(path: &Path) -> Result<PathBuf> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut target = path.to_path_buf();
    for _ in 0..=MAX_SYMLINKS {
        let metadata = match std::fs::symlink_metadata(&target) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(target),
            Err(e) => return Err(io(e)),
        };
        let file_type = metadata.file_type();
        if file_type.is_file() {
            return Ok(target);
        }
        if !file_type.is_symlink() {
            let through = if target == path {
                String::new()
            } else {
                format!("resolves to {}, which ", target.display())
            };
            let kind = if file_type.is_dir() {
                std::io::ErrorKind::IsADirectory
            } else {
                std::io::ErrorKind::InvalidInput
            };
            return Err(io(std::io::Error::new(
                kind,
                format!(
                    "{through}is {}, not a regular file: refusing to write over it",
                    describe(&file_type)
                ),
            )));
        }
        let link = std::fs::read_link(&target).map_err(io)?;
        target = match target.parent() {
            Some(dir) => dir.join(link),
            None => link,
        };
    }
    Err(io(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("too many levels of symbolic links (more than {MAX_SYMLINKS}): a loop?"),
    )))
}

/// What a file that is neither regular nor a symlink is, with an article.
fn describe(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// The directory holding `target`: where its temporary file goes.
fn directory_of(target: &Path) -> &Path {
    match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// A new temporary file in `target`'s directory; errors name `path`.
fn create_temp(path: &Path, target: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = directory_of(target);
    tempfile::Builder::new()
        .prefix(".nbody-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(
                e.kind(),
                format!("cannot create a temporary file in {}: {e}", dir.display()),
            ),
        })
}
