//! The snapshot archive: round trips, random access by index and time,
//! corruption and truncation, continuing after a kill, forward
//! compatibility, and the numpy recipe of docs/library.md run by numpy.

use std::path::Path;

use nbody_host::snapshot::{Archive, ArchiveWriter};
use nbody_host::{Backend, Body, Error, Simulation, ic};

mod common;
use common::{bits, leapfrog_cpu};

fn sim() -> Simulation {
    leapfrog_cpu(ic::plummer(30, 4))
}

/// An archive of records at steps 0, 5, .., 25, with a body added after
/// step 10 (so N changes); the states written, in order.
fn write_run(path: &Path) -> Vec<nbody_host::State> {
    let mut sim = sim();
    let mut archive = ArchiveWriter::create(path).unwrap();
    let mut states = Vec::new();
    for k in 0..6 {
        if k == 3 {
            sim.add(Body::new(0.01, [2.0, 0.0, 0.0], [0.0, 0.5, 0.0]))
                .unwrap();
        }
        archive.append(&sim).unwrap();
        states.push(sim.state().unwrap());
        sim.step(5).unwrap();
    }
    assert_eq!(archive.len(), 6);
    states
}

#[test]
fn records_round_trip_exactly_by_index_and_by_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.nbar");
    let states = write_run(&path);
    let archive = Archive::open(&path).unwrap();
    assert_eq!((archive.len(), archive.incomplete_tail_bytes()), (6, 0));
    for (i, want) in states.iter().enumerate() {
        let got = archive.get(i).unwrap();
        assert_eq!(bits(&got.state.bodies), bits(&want.bodies), "record {i}");
        assert_eq!((got.state.step, got.state.time), (want.step, want.time));
        assert_eq!(got.params, *sim().params());
        let info = archive.records()[i];
        assert_eq!(
            (info.step, info.time, info.n),
            (want.step, want.time, want.bodies.len())
        );
    }
    assert_eq!(archive.records()[3].n, 31);
    // By time: the last record at or before t.
    let t = |i: usize| states[i].time;
    assert_eq!(archive.index_at_time(t(2)), Some(2));
    assert_eq!(archive.index_at_time((t(2) + t(3)) / 2.0), Some(2));
    assert_eq!(archive.index_at_time(1e9), Some(5));
    assert_eq!(archive.index_at_time(-1.0), None);
    assert_eq!(archive.at_time(t(4) + 1e-9).unwrap().state.step, 20);
    let e = archive.at_time(-1.0).unwrap_err();
    assert!(e.to_string().contains("t = -1"), "{e}");
    let e = archive.get(6).unwrap_err();
    assert!(e.to_string().contains("no record 6"), "{e}");

    // A record continues bit-identically: record 4 (step 20) + 5 steps is record 5.
    let mut again = archive
        .get(4)
        .unwrap()
        .builder()
        .backend(Backend::cpu())
        .build()
        .unwrap();
    again.step(5).unwrap();
    assert_eq!(again.state().unwrap(), archive.get(5).unwrap().state);
}

#[test]
fn corruption_is_an_error_and_truncation_loses_only_the_last_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.nbar");
    write_run(&path);
    let good = std::fs::read(&path).unwrap();
    let offsets: Vec<u64> = Archive::open(&path)
        .unwrap()
        .records()
        .iter()
        .map(|r| r.step)
        .collect();
    assert_eq!(offsets, [0, 5, 10, 15, 20, 25]);
    let bad = dir.path().join("bad.nbar");
    // Every single-byte corruption is found, by open or by reading the records.
    for at in (0..good.len()).step_by(7) {
        let mut b = good.clone();
        b[at] ^= 0x5a;
        std::fs::write(&bad, &b).unwrap();
        let caught = match Archive::open(&bad) {
            Err(Error::InvalidFile { .. }) => true,
            Err(e) => panic!("byte {at}: {e}"),
            Ok(a) => {
                a.len() < 6
                    || (0..a.len()).any(|i| matches!(a.get(i), Err(Error::InvalidFile { .. })))
            }
        };
        assert!(caught, "byte {at}");
    }
    // Every prefix opens to the complete records it holds, or fails on the
    // file header; the records it lists read back.
    let mut last = 0;
    for len in (0..good.len()).step_by(5) {
        std::fs::write(&bad, &good[..len]).unwrap();
        match Archive::open(&bad) {
            Ok(a) => {
                assert!(a.len() >= last, "prefix {len}");
                last = a.len();
                for i in 0..a.len() {
                    a.get(i).unwrap();
                }
                let listed: u64 = a.records().iter().map(|_| 1).sum();
                assert_eq!(listed as usize, a.len());
            }
            Err(e) => {
                assert!(len < 32, "prefix {len}: {e}");
                assert!(matches!(e, Error::InvalidFile { .. }), "{e}");
            }
        }
    }
    assert_eq!(
        last, 5,
        "the longest strict prefix has all but the last record"
    );
    // Not an archive at all.
    nbody_host::snapshot::save_npy(&bad, &ic::plummer(3, 1)).unwrap();
    let e = Archive::open(&bad).unwrap_err();
    assert!(e.to_string().contains("NBODYARC"), "{e}");
}

/// A run killed after its checkpoint at step 10 but while appending step
/// 25: continuing at the checkpoint cuts the records after step 10 and the
/// half-written one, so the resumed run's records follow on as if it had
/// never stopped.
#[test]
fn continuing_after_a_kill_rewrites_the_lost_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.nbar");
    let states = write_run(&path);
    let full = std::fs::read(&path).unwrap();
    std::fs::write(&path, &full[..full.len() - 40]).unwrap();
    assert!(Archive::open(&path).unwrap().incomplete_tail_bytes() > 0);

    let mut writer = ArchiveWriter::continue_at(&path, 10).unwrap();
    assert_eq!(writer.len(), 3);
    let archive = Archive::open(&path).unwrap();
    assert_eq!((archive.len(), archive.incomplete_tail_bytes()), (3, 0));
    // A step at or before the last record's is refused.
    let e = writer.append_state(&states[1], sim().params()).unwrap_err();
    assert!(e.to_string().contains("step 5 after step 10"), "{e}");
    for s in &states[3..] {
        writer.append_state(s, sim().params()).unwrap();
    }
    drop(writer);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        full,
        "the same bytes as the uninterrupted run"
    );
    // Plain open appends after everything.
    let mut writer = ArchiveWriter::open(&path).unwrap();
    assert_eq!(writer.len(), 6);
    let mut later = states[5].clone();
    later.step = 30;
    writer.append_state(&later, sim().params()).unwrap();
    assert_eq!(Archive::open(&path).unwrap().len(), 7);
}

/// A later version's optional section (here an unknown tag with a payload,
/// like a periodic box) is skipped by this reader.
#[test]
fn unknown_sections_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.nbar");
    let states = write_run(&path);
    let bytes = std::fs::read(&path).unwrap();
    let first = Archive::open(&path).unwrap().records()[1];
    // Record 0 spans 32..first_offset; rebuild it with a section.
    let rec0_end = 32 + 64 + 28 * 30 + 4;
    let rec0 = &bytes[32..rec0_end];
    let section = [&b"BOX "[..], &48u32.to_le_bytes(), &[7u8; 48]].concat();
    let mut rec = [&rec0[..rec0.len() - 4], &section[..]].concat();
    let len = (rec.len() + 4) as u64;
    rec[8..16].copy_from_slice(&len.to_le_bytes());
    let crc = crc32(&rec);
    rec.extend_from_slice(&crc.to_le_bytes());
    let grown = [&bytes[..32], &rec[..], &bytes[rec0_end..]].concat();
    std::fs::write(&path, &grown).unwrap();
    let archive = Archive::open(&path).unwrap();
    assert_eq!(archive.len(), 6, "{first:?}");
    assert_eq!(
        bits(&archive.get(0).unwrap().state.bodies),
        bits(&states[0].bodies)
    );
    assert_eq!(
        bits(&archive.get(1).unwrap().state.bodies),
        bits(&states[1].bodies)
    );
}

/// CRC-32 (IEEE), bit by bit: an independent check of the file's checksums.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(unix)]
#[test]
fn non_regular_targets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    for e in [
        ArchiveWriter::create(&fifo).unwrap_err(),
        ArchiveWriter::open(&fifo).unwrap_err(),
    ] {
        assert!(e.to_string().contains("named pipe"), "{e}");
    }
    let e = ArchiveWriter::create(dir.path()).unwrap_err();
    assert!(e.to_string().contains("directory"), "{e}");
    // A symlink is written through.
    let target = dir.path().join("real.nbar");
    let link = dir.path().join("link.nbar");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let mut w = ArchiveWriter::create(&link).unwrap();
    w.append(&sim()).unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(Archive::open(&target).unwrap().len(), 1);
}

/// The numpy recipe of docs/library.md, run by numpy on an archive written
/// here: the same steps, times and body bits. Needs a Python with numpy
/// (`NBODY_PYTHON`, else `python3`); without one it says so and passes.
#[test]
fn the_documented_numpy_recipe_reads_the_archive() {
    let python = std::env::var("NBODY_PYTHON").unwrap_or_else(|_| "python3".into());
    let has_numpy = std::process::Command::new(&python)
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_numpy {
        eprintln!(
            "SKIPPED: no numpy in {python:?} (set NBODY_PYTHON to a Python with numpy to run this)"
        );
        return;
    }
    let guide = include_str!("../../docs/library.md");
    let recipe = guide
        .split("```python\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/library.md has a python block");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.nbar");
    let states = write_run(&path);
    let script = format!(
        "{recipe}\nimport sys\nfor step, time, bodies in read_archive(sys.argv[1]):\n    \
         print(step, repr(time), bodies.shape[0], bodies.astype('<f4').tobytes().hex())\n"
    );
    let out = std::process::Command::new(&python)
        .args(["-c", &script, path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), states.len(), "{text}");
    for (line, want) in lines.iter().zip(&states) {
        let b = &want.bodies;
        let rows: Vec<u8> = (0..b.len())
            .flat_map(|i| {
                let (p, v) = (b.positions[i], b.velocities[i]);
                [p.x, p.y, p.z, v.x, v.y, v.z, b.masses[i]]
            })
            .flat_map(f32::to_le_bytes)
            .collect();
        let hex: String = rows.iter().map(|x| format!("{x:02x}")).collect();
        // Python's repr of a float is the shortest round trip, as Rust's {:?}.
        let expect = format!("{} {:?} {} {hex}", want.step, want.time, b.len());
        assert_eq!(*line, expect);
    }
}

/// Issue 22, defect 4: the clock adds `dt` once a step, so after
/// `integrate_to(0.1)` the time is a rounding away from 0.1 (above it for
/// some `dt`: 0.10000000000000007); a lookup at 0.1 failed and one at 0.2
/// returned the record at 0.1. A record within a small fraction of its
/// step of `t` counts as at `t`; between records, the one before.
#[test]
fn lookup_by_time_is_not_thrown_off_by_the_clock_s_rounding() {
    let dir = tempfile::tempdir().unwrap();
    for (dt, every) in [(0.01, 0.1), (0.001, 0.1), (0.1 / 3.0, 0.1), (0.02, 0.06)] {
        let path = dir.path().join(format!("run{dt}.nbar"));
        let mut sim = Simulation::builder(nbody_host::ic::plummer(16, 1))
            .dt(dt)
            .backend(Backend::cpu())
            .build()
            .unwrap();
        let mut writer = ArchiveWriter::create(&path).unwrap();
        let mut steps = Vec::new();
        for k in 1..=6 {
            sim.integrate_to(every * k as f64).unwrap();
            writer.append(&sim).unwrap();
            steps.push(sim.steps_done());
        }
        let archive = Archive::open(&path).unwrap();
        for (k, &step) in (1..=6).zip(&steps) {
            let t = every * k as f64;
            let at = archive
                .at_time(t)
                .unwrap_or_else(|e| panic!("dt {dt}, t = {t}: {e}"));
            assert_eq!(at.state.step, step, "dt {dt}: at_time({t})");
            // Half-way to the next record: still this one.
            let mid = archive.at_time(t + 0.5 * every).unwrap();
            assert_eq!(
                mid.state.step,
                step,
                "dt {dt}: at_time({})",
                t + 0.5 * every
            );
        }
        assert!(
            archive.at_time(0.5 * every).is_err(),
            "dt {dt}: before the first record"
        );
    }
}
