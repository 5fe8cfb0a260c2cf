//! How the library writes files: every file it writes (snapshots,
//! checkpoints, tuning profiles, PNG images and plots, GIFs) goes through an
//! [`AtomicFile`], or [`write_atomically`] for bytes already in memory.
//!
//! The bytes go to a temporary file in the target's directory, which is
//! synced and then renamed over the target, and the directory is synced:
//! readers see the old file or the new one, never a partial one, a failed or
//! abandoned write leaves the old file as it was, and once a write returns
//! `Ok` the new file survives a crash. Files are created 0644 (on Unix).
//!
//! The target is what the path names once its symlinks are followed: a
//! symlink stays a symlink and the file it points to is replaced (created, if
//! the link dangles into an existing directory). A target that is not a
//! regular file (a directory, FIFO, socket or device) is refused with an
//! [`Error::Io`] naming the path and what it is, before anything is written:
//! a rename would put a regular file in its place.
//!
//! A temporary file is named `.<target's name>.nbody-<pid>-<6 random
//! characters>.tmp` and its writer holds an advisory lock on it until the
//! rename. A run killed mid-write (SIGKILL, power loss) leaves it behind, so
//! every write first removes, from the directory it writes in, the files of
//! that pattern whose writer is gone: its pid is not a running process (as
//! `/proc` shows) or the file's lock is free, and neither says otherwise.
//! Temporary files of live writers, and anything not of the pattern, are
//! left alone.
//!
//! [`check_output_path`] runs the same checks without writing, for a CLI to
//! call before a long run.
//!
//! It lives in `snapshot` because that is the crate's module of files (and
//! `render`, a feature, may depend on it, not the other way round).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Permissions of every file written, set explicitly (the umask does not
/// apply): an ordinary data file, not a temporary file's 0600.
#[cfg(unix)]
const FILE_MODE: u32 = 0o644;

/// Symlinks followed from one path before giving up (Linux's limit).
const MAX_SYMLINKS: usize = 40;

/// Between the target's name and the writer's pid in a temporary file's name.
const TEMP_MARK: &str = ".nbody-";
const TEMP_SUFFIX: &str = ".tmp";
/// Random characters at the end of a temporary file's name (tempfile's).
const TEMP_RANDOM_CHARS: usize = 6;
/// Bytes of the target's name kept in its temporary file's name, which must
/// stay under the usual 255-byte limit on file names.
const TARGET_NAME_IN_TEMP: usize = 200;

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
        remove_stale_temps(directory_of(&target));
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

    /// An [`Error::Io`] naming the path as the caller gave it.
    pub(crate) fn error(&self, source: std::io::Error) -> Error {
        Error::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Syncs the temporary file to disk, renames it over the target and
    /// syncs the directory (so that the rename, too, survives a crash).
    pub(crate) fn commit(self) -> Result<()> {
        self.temp.as_file().sync_all().map_err(|e| self.error(e))?;
        let AtomicFile { path, target, temp } = self;
        temp.persist(&target).map_err(|e| Error::Io {
            path,
            source: e.error,
        })?;
        // The new name survives a crash once its directory is synced too.
        // Best effort: not every platform or file system syncs directories.
        #[cfg(unix)]
        if let Ok(dir) = std::fs::File::open(directory_of(&target)) {
            let _ = dir.sync_all();
        }
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

/// Checks, before a long run, that a file can be written at `path` as the
/// library writes files ([`save_npy`](super::save_npy),
/// [`Checkpoint::save`](super::Checkpoint::save), the `render` outputs):
///
/// - `path`, its symlinks followed, is a regular file or nothing yet: not a
///   directory, named pipe, socket or device, and not a loop of symlinks;
/// - the directory the file goes in exists, and a file can be created there
///   (tried: a temporary file is created and removed again).
///
/// Nothing at `path` is created or changed. An [`Error::Io`] names `path`
/// and what is wrong. The write itself can still fail (a full disk, a
/// change in between) and reports its own error.
pub fn check_output_path(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let target = resolve_target(path)?;
    let dir = directory_of(&target);
    let problem = match std::fs::metadata(dir) {
        Ok(metadata) if metadata.is_dir() => None,
        Ok(_) => Some(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("{} is not a directory", dir.display()),
        )),
        Err(e) => Some(std::io::Error::new(
            e.kind(),
            format!("the directory {}: {e}", dir.display()),
        )),
    };
    if let Some(source) = problem {
        return Err(Error::Io {
            path: path.to_path_buf(),
            source,
        });
    }
    create_temp(path, &target)?; // removed again when dropped
    Ok(())
}

/// The file `path` names once its symlinks are followed (relative links
/// relative to the link's directory), which need not exist; an error if it
/// exists and is not a regular file, or if the links go round in a loop.
pub(crate) fn resolve_target(path: &Path) -> Result<PathBuf> {
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

/// A new temporary file in `target`'s directory, locked while it lives;
/// errors name `path`.
fn create_temp(path: &Path, target: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = directory_of(target);
    let name = target
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default();
    let name = &name[..name.floor_char_boundary(TARGET_NAME_IN_TEMP)];
    let temp = tempfile::Builder::new()
        .prefix(&format!(".{name}{TEMP_MARK}{}-", std::process::id()))
        .suffix(TEMP_SUFFIX)
        .rand_bytes(TEMP_RANDOM_CHARS)
        .tempfile_in(dir)
        .map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(
                e.kind(),
                format!("cannot create a temporary file in {}: {e}", dir.display()),
            ),
        })?;
    // Tells other processes this file has a live writer (see
    // `remove_stale_temps`). A file system without locks makes this fail;
    // the pid in the name still tells.
    let _ = temp.as_file().try_lock();
    Ok(temp)
}

/// The writer's pid, if `name` is the name of one of our temporary files.
fn temp_file_writer(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(TEMP_SUFFIX)?;
    let (rest, random) = rest.rsplit_once('-')?;
    let (_target, pid) = rest.rsplit_once(TEMP_MARK)?;
    let random_ok =
        random.len() == TEMP_RANDOM_CHARS && random.bytes().all(|b| b.is_ascii_alphanumeric());
    let pid_ok = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    if random_ok && pid_ok {
        pid.parse().ok()
    } else {
        None
    }
}

/// Whether process `pid` runs: `None` where this cannot be told (no `/proc`).
fn process_runs(pid: u32) -> Option<bool> {
    if pid == std::process::id() {
        return Some(true);
    }
    let proc = Path::new("/proc");
    proc.join("self")
        .exists()
        .then(|| proc.join(pid.to_string()).exists())
}

/// Whether a writer holds `file`'s lock: `None` where the file system
/// cannot tell.
fn locked_by_a_writer(file: &Path) -> Option<bool> {
    let Ok(file) = std::fs::File::open(file) else {
        return Some(true); // cannot look: leave it alone
    };
    match file.try_lock() {
        Ok(()) => Some(false),
        Err(std::fs::TryLockError::WouldBlock) => Some(true),
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

/// Removes the temporary files that killed writers left in `dir`: files of
/// our pattern whose writer is gone, as far as its pid and the file's lock
/// tell (one of them must say gone, neither may say running). Best effort:
/// what cannot be read or removed stays.
fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_file_writer) else {
            continue;
        };
        // Regular files only: opening a FIFO to test its lock would block.
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let (runs, locked) = (process_runs(pid), locked_by_a_writer(&path));
        let gone = runs != Some(true)
            && locked != Some(true)
            && (runs == Some(false) || locked == Some(false));
        if gone {
            match std::fs::remove_file(&path) {
                Ok(()) => log::info!(
                    "removed {}, left by a killed run (process {pid})",
                    path.display()
                ),
                Err(e) => log::debug!("cannot remove {}: {e}", path.display()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_file_names_are_recognised_exactly() {
        assert_eq!(
            temp_file_writer(".run.ckpt.nbody-4321-aB3xY9.tmp"),
            Some(4321)
        );
        assert_eq!(temp_file_writer("..nbody-7-aB3xY9.tmp"), Some(7));
        assert_eq!(temp_file_writer(".a.nbody-b.nbody-12-aB3xY9.tmp"), Some(12));
        for other in [
            "run.ckpt.nbody-4321-aB3xY9.tmp",
            ".run.ckpt.nbody-4321-aB3xY9.tmp.bak",
            ".run.ckpt.nbody-4321-aB3x.tmp",
            ".run.ckpt.nbody-4321-aB3xY-.tmp",
            ".run.ckpt.nbody--aB3xY9.tmp",
            ".run.ckpt.nbody-43x1-aB3xY9.tmp",
            ".run.ckpt.nbody-99999999999-aB3xY9.tmp",
            ".nbody-aB3xY9.tmp",
        ] {
            assert_eq!(temp_file_writer(other), None, "{other}");
        }
    }

    #[test]
    fn temp_files_carry_the_target_name_and_pid_and_stay_short() {
        let dir = tempfile::tempdir().unwrap();
        let long = "x".repeat(250);
        for name in ["run.ckpt", long.as_str()] {
            let target = dir.path().join(name);
            let temp = create_temp(&target, &target).unwrap();
            let temp_name = temp.path().file_name().unwrap().to_str().unwrap();
            assert_eq!(temp_file_writer(temp_name), Some(std::process::id()));
            assert!(temp_name.starts_with(&format!(".{}", &name[..name.len().min(200)])));
            assert!(temp_name.len() < 255, "{}", temp_name.len());
        }
    }
}
