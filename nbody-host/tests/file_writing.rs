//! How the library writes files (snapshots, checkpoints, PNGs, GIFs: one
//! atomic writer for all): through symlinks to their target, never over a
//! FIFO, socket, device or directory, and without leaving the temporary
//! files of killed runs behind.
#![cfg(unix)]

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nbody_host::render::{GifWriter, Image};
use nbody_host::{Backend, Checkpoint, Error, Simulation, ic, snapshot};

/// A simulation of 2 bodies `steps` steps in, so checkpoints of it can be
/// told apart.
fn sim_after(steps: u64) -> Simulation {
    let mut sim = Simulation::builder(ic::uniform_cube(2, 1))
        .backend(Backend::cpu())
        .build()
        .unwrap();
    sim.step(steps).unwrap();
    sim
}

fn image() -> Image {
    Image {
        width: 8,
        height: 8,
        rgb: vec![100; 8 * 8 * 3],
    }
}

/// Names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path)
        .unwrap()
        .file_type()
        .is_symlink()
}

/// Every way the library writes a file, each writing `path`.
fn every_writer(path: &Path) -> Vec<(&'static str, Result<(), Error>)> {
    vec![
        ("save_npy", sim_after(1).save_npy(path)),
        ("save_checkpoint", sim_after(1).save_checkpoint(path)),
        ("save_png", image().save_png(path)),
        (
            "GifWriter",
            GifWriter::create(path, 8, 8, 4).and_then(|mut gif| {
                gif.push(&image())?;
                gif.finish().map(drop)
            }),
        ),
    ]
}

#[test]
fn writing_through_a_symlink_replaces_the_target_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.ckpt");
    let link = dir.path().join("l.ckpt");
    sim_after(1).save_checkpoint(&real).unwrap();
    symlink("real.ckpt", &link).unwrap();

    sim_after(3).save_checkpoint(&link).unwrap();
    assert!(is_symlink(&link), "the symlink was replaced by a file");
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("real.ckpt"));
    assert_eq!(
        Checkpoint::load(&real).unwrap().state.step,
        3,
        "stale target"
    );

    // A chain of links, one relative to another directory: the file at the
    // end of the chain is written, every link stays.
    let data = dir.path().join("data");
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&runs).unwrap();
    symlink("../data/state.npy", runs.join("middle.npy")).unwrap();
    symlink(runs.join("middle.npy"), dir.path().join("first.npy")).unwrap();
    sim_after(2).save_npy(dir.path().join("first.npy")).unwrap();
    assert!(is_symlink(&dir.path().join("first.npy")));
    assert!(is_symlink(&runs.join("middle.npy")));
    assert_eq!(
        snapshot::load_npy(data.join("state.npy")).unwrap().len(),
        2,
        "the end of the chain holds the snapshot"
    );
    assert_eq!(names(&data), ["state.npy"], "no temporary file left");
    assert_eq!(names(&runs), ["middle.npy"], "no temporary file left");

    // The same for every other writer.
    for (writer, result) in every_writer(&link) {
        result.unwrap_or_else(|e| panic!("{writer}: {e}"));
        assert!(is_symlink(&link), "{writer} replaced the symlink");
    }
}

#[test]
fn a_dangling_symlink_creates_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("l.npy");
    symlink("new.npy", &link).unwrap();
    sim_after(1).save_npy(&link).unwrap();
    assert!(is_symlink(&link));
    assert_eq!(
        snapshot::load_npy(dir.path().join("new.npy"))
            .unwrap()
            .len(),
        2
    );

    // Into a directory that does not exist: an error naming the path, nothing written.
    let nowhere = dir.path().join("nowhere.npy");
    symlink("missing-dir/x.npy", &nowhere).unwrap();
    let e = sim_after(1).save_npy(&nowhere).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert!(e.to_string().contains("nowhere.npy"), "{e}");
    assert_eq!(names(dir.path()), ["l.npy", "new.npy", "nowhere.npy"]);
}

/// A FIFO at `path` (no libc binding needed: coreutils' mkfifo).
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn non_regular_targets_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.ckpt");
    mkfifo(&fifo);
    let socket = dir.path().join("socket.ckpt");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let device = dir.path().join("null.ckpt");
    symlink("/dev/null", &device).unwrap();
    let subdir = dir.path().join("subdir");
    std::fs::create_dir(&subdir).unwrap();
    let dir_link = dir.path().join("dir-link.ckpt");
    symlink("subdir", &dir_link).unwrap();
    let looped = dir.path().join("loop-a.ckpt");
    symlink("loop-b.ckpt", &looped).unwrap();
    symlink("loop-a.ckpt", dir.path().join("loop-b.ckpt")).unwrap();
    let before = names(dir.path());

    for (path, what) in [
        (&fifo, "FIFO"),
        (&socket, "socket"),
        (&device, "character device"),
        (&subdir, "directory"),
        (&dir_link, "directory"),
        (&looped, "symbolic links"),
    ] {
        for (writer, result) in every_writer(path) {
            let e = match result {
                Err(e @ Error::Io { .. }) => e,
                other => panic!("{writer} to {}: {other:?}", path.display()),
            };
            let message = e.to_string();
            assert!(
                message.contains(&*path.to_string_lossy()) && message.contains(what),
                "{writer}: {message:?} should name the path and {what:?}"
            );
        }
    }
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert!(
        std::fs::symlink_metadata(&socket)
            .unwrap()
            .file_type()
            .is_socket()
    );
    assert!(is_symlink(&device) && is_symlink(&dir_link) && is_symlink(&looped));
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    assert_eq!(names(dir.path()), before, "nothing created or removed");
    assert!(names(&subdir).is_empty());
}

/// The pid of a process that has exited (and been reaped).
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn stale_temporaries_are_removed_and_live_ones_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (dead, me) = (dead_pid(), std::process::id());
    let stale = format!(".state.npy.nbody-{dead}-AbC123.tmp");
    let kept = [
        // A live writer of another target: this process.
        format!(".other.npy.nbody-{me}-XyZ789.tmp"),
        // A writer whose pid this process cannot see (another PID
        // namespace) but that holds its file's lock.
        format!(".held.npy.nbody-{dead}-Lck000.tmp"),
        // Not the library's pattern.
        format!("state.npy.nbody-{dead}-AbC123.tmp"),
        format!(".state.npy.nbody-{dead}-AbC123.tmp.bak"),
        format!(".state.npy.nbody-{dead}-AbC.tmp"),
        format!(".state.npy.nbody-x{dead}-AbC123.tmp"),
        ".nbody-AbC123.tmp".to_string(),
    ];
    for name in kept.iter().chain([&stale]) {
        std::fs::write(dir.path().join(name), b"partial").unwrap();
    }
    let held = File::open(dir.path().join(&kept[1])).unwrap();
    held.lock().unwrap();

    sim_after(1).save_npy(dir.path().join("state.npy")).unwrap();
    let mut expected: Vec<String> = kept.to_vec();
    expected.push("state.npy".into());
    expected.sort();
    assert_eq!(names(dir.path()), expected);
    drop(held);
}

/// Set in the child process of the test below: the directory it writes in.
const KILLED_WRITER_DIR: &str = "NBODY_TEST_KILLED_WRITER_DIR";

/// Kills the child when the test ends, however it ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn temporaries_of_a_killed_run_are_removed_by_the_next_write() {
    const NAME: &str = "temporaries_of_a_killed_run_are_removed_by_the_next_write";
    if let Some(dir) = std::env::var_os(KILLED_WRITER_DIR) {
        // The child: a run recording a GIF, killed before it finishes.
        let mut gif = GifWriter::create(PathBuf::from(dir).join("run.gif"), 8, 8, 4).unwrap();
        gif.push(&image()).unwrap();
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--test-threads=1"])
            .env(KILLED_WRITER_DIR, dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let temp = loop {
        if let Some(name) = names(dir.path()).into_iter().find(|n| n.ends_with(".tmp")) {
            break name;
        }
        assert!(
            Instant::now() < deadline,
            "the child made no temporary file"
        );
        assert!(child.0.try_wait().unwrap().is_none(), "the child exited");
        std::thread::sleep(Duration::from_millis(10));
    };
    child.0.kill().unwrap(); // SIGKILL: no destructor runs
    child.0.wait().unwrap();
    assert_eq!(
        names(dir.path()),
        std::slice::from_ref(&temp),
        "what a killed run leaves"
    );

    image().save_png(dir.path().join("next.png")).unwrap();
    assert_eq!(names(dir.path()), ["next.png"], "{temp} was not removed");
}

#[test]
fn check_output_path_accepts_what_a_write_would_and_refuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let existing = d.join("existing.ckpt");
    std::fs::write(&existing, b"old").unwrap();
    symlink("existing.ckpt", d.join("link.ckpt")).unwrap();
    symlink("new.ckpt", d.join("dangling.ckpt")).unwrap();
    std::fs::write(d.join("plain-file"), b"").unwrap();
    mkfifo(&d.join("pipe.ckpt"));
    symlink("/dev/null", d.join("null.ckpt")).unwrap();
    symlink("loop.ckpt", d.join("loop.ckpt")).unwrap();
    symlink("missing-dir/x.ckpt", d.join("dangling-nowhere.ckpt")).unwrap();
    let before = names(d);

    for ok in ["new.ckpt", "existing.ckpt", "link.ckpt", "dangling.ckpt"] {
        snapshot::check_output_path(d.join(ok)).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for (bad, needle) in [
        ("missing-dir/out.ckpt", "missing-dir"),
        ("dangling-nowhere.ckpt", "missing-dir"),
        ("plain-file/out.ckpt", "plain-file"),
        ("pipe.ckpt", "named pipe (FIFO)"),
        ("null.ckpt", "character device"),
        ("loop.ckpt", "symbolic links"),
        (".", "directory"),
    ] {
        let path = d.join(bad);
        match snapshot::check_output_path(&path) {
            Err(e @ Error::Io { .. }) => {
                let message = e.to_string();
                assert!(
                    message.contains(&*path.to_string_lossy()) && message.contains(needle),
                    "{bad}: {message:?} should name the path and {needle:?}"
                );
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
    // Checking changed nothing.
    assert_eq!(names(d), before);
    assert_eq!(std::fs::read(&existing).unwrap(), b"old");

    // A directory no file can be created in. Permissions do not stop root,
    // so sysfs (no new files, even for root) stands in where it exists.
    let read_only = d.join("read-only");
    std::fs::create_dir(&read_only).unwrap();
    let mut permissions = std::fs::metadata(&read_only).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o555);
    std::fs::set_permissions(&read_only, permissions).unwrap();
    let root = File::create(read_only.join("probe")).is_ok();
    let mut unwritable = vec![];
    if !root {
        unwritable.push(read_only.join("out.ckpt"));
    }
    if Path::new("/sys/kernel").is_dir() {
        unwritable.push(PathBuf::from("/sys/nbody-check-output-path.ckpt"));
    }
    for path in unwritable {
        let e = snapshot::check_output_path(&path).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
        assert!(e.to_string().contains("cannot create"), "{e}");
    }
}
