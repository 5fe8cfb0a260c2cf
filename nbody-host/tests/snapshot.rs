//! `.npy` snapshots and checkpoints: format, validation, atomic writes, and
//! bit-identical resume.

use std::path::Path;

use nbody_host::{
    Backend, Bodies, Checkpoint, Error, Integrator, Kernel, Simulation, ic, snapshot,
};

/// Backends the resume test runs on: the CPU backend and the emulator, which
/// runs the GPU kernel bodies through the same launch plans as CUDA.
#[cfg(not(feature = "cuda"))]
const BACKENDS: &[Backend] = &[Backend::cpu(), Backend::emulator()];
/// With the `cuda` feature, the CUDA backend too (in CI on the software CUDA
/// device, `scripts/ci-softcuda.sh`).
#[cfg(feature = "cuda")]
const BACKENDS: &[Backend] = &[
    Backend::cpu(),
    Backend::emulator(),
    Backend::Cuda { device: 0 },
];

/// Every position, velocity and mass component, in that order.
fn components(b: &Bodies) -> Vec<f32> {
    b.positions
        .iter()
        .chain(&b.velocities)
        .flat_map(|v| v.to_array())
        .chain(b.masses.iter().copied())
        .collect()
}

/// Largest `|a - b| / (|b| + 1)` over every component.
fn max_relative_difference(a: &Bodies, b: &Bodies) -> f64 {
    components(a)
        .iter()
        .zip(components(b))
        .map(|(&x, y)| (f64::from(x) - f64::from(y)).abs() / (f64::from(y).abs() + 1.0))
        .fold(0.0, f64::max)
}

fn bits(b: &Bodies) -> Vec<u32> {
    components(b).into_iter().map(f32::to_bits).collect()
}

fn two_bodies() -> Bodies {
    Bodies::from_arrays(
        &[[1.0, 2.0, 3.0], [-1.0, 0.0, 1e-3]],
        &[[0.5, -0.25, 0.0], [0.0, 0.0, 1.0]],
        &[2.0, 0.5],
    )
    .unwrap()
}

/// Exactly what numpy 2.x writes for `np.save(f, a)` with `a` = [`two_bodies`]
/// as a `(2, 7)` `<f4` array: magic, version 1.0, header length 118, the
/// header dict padded with spaces to a 64-byte boundary, newline.
const NUMPY_HEADER_2X7_F4: &[u8] = b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 7), }                                                          \n";

/// numpy's `np.save(f, np.asfortranarray(a.astype('<f8')))` for the same bodies.
const NUMPY_F8_FORTRAN_HEX: &str = "934e554d5059010076007b276465736372273a20273c6638272c2027666f727472616e5f6f72646572273a20547275652c20277368617065273a2028322c2037292c207d20202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a000000000000f03f000000000000f0bf000000000000004000000000000000000000000000000840000000e04d62503f000000000000e03f0000000000000000000000000000d0bf00000000000000000000000000000000000000000000f03f0000000000000040000000000000e03f";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn expect_invalid(result: Result<impl std::fmt::Debug, Error>, format: &str, needle: &str) {
    match result {
        Err(e @ Error::InvalidFile { format: f, .. }) if f == format => {
            let msg = e.to_string();
            assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
            assert!(msg.contains("not a valid"), "{msg}");
        }
        other => panic!("expected InvalidFile({format}) with {needle:?}, got {other:?}"),
    }
}

fn leftover_temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect()
}

#[test]
fn npy_is_byte_identical_to_numpy_and_round_trips_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.npy");
    let bodies = two_bodies();
    snapshot::save_npy(&path, &bodies).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..128], NUMPY_HEADER_2X7_F4);
    assert_eq!(bytes.len(), 128 + 2 * 7 * 4);
    // Row 0, column 4 is vy = -0.25.
    assert_eq!(&bytes[128 + 16..128 + 20], &(-0.25f32).to_le_bytes());
    assert_eq!(bits(&snapshot::load_npy(&path).unwrap()), bits(&bodies));

    // A larger, irregular set: every f32 bit survives the round trip.
    let cube = ic::plummer(1000, 3);
    snapshot::save_npy(&path, &cube).unwrap();
    assert_eq!(bits(&snapshot::load_npy(&path).unwrap()), bits(&cube));
    assert!(leftover_temp_files(dir.path()).is_empty());
}

#[test]
fn npy_reads_numpy_f8_fortran_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f8.npy");
    std::fs::write(&path, unhex(NUMPY_F8_FORTRAN_HEX)).unwrap();
    let loaded = snapshot::load_npy(&path).unwrap();
    // 1e-3 went f32 -> f64 -> f32: exact.
    assert_eq!(bits(&loaded), bits(&two_bodies()));
}

#[test]
fn npy_rejects_bad_headers_sizes_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.npy");
    snapshot::save_npy(&good, &two_bodies()).unwrap();
    let good_bytes = std::fs::read(&good).unwrap();
    let header = std::str::from_utf8(&good_bytes[10..128])
        .unwrap()
        .to_owned();
    let with_header = |h: &str, data: &[u8]| {
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend_from_slice(&(h.len() as u16).to_le_bytes());
        b.extend_from_slice(h.as_bytes());
        b.extend_from_slice(data);
        b
    };
    let data = &good_bytes[128..];
    let f = dir.path().join("bad.npy");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"PK\x03\x04 not numpy".to_vec(), "magic"),
        (Vec::new(), "magic"),
        (
            {
                let mut b = good_bytes.clone();
                b[6] = 9;
                b
            },
            "version 9.0",
        ),
        (
            good_bytes[..60].to_vec(),
            "truncated: the header claims 118",
        ),
        (
            with_header(&header.replace("<f4", ">i4"), data),
            "dtype '>i4'",
        ),
        (
            with_header(&header.replace("<f4", "<i4"), data),
            "dtype '<i4'",
        ),
        (
            with_header(&header.replace("(2, 7)", "(2, 6)"), data),
            "shape (2, 6)",
        ),
        (
            with_header(&header.replace("(2, 7)", "(14,)"), data),
            "shape (14,)",
        ),
        (
            with_header(&header.replace("False", "None"), data),
            "True or False",
        ),
        (
            with_header(&header.replace("'shape': (2, 7), ", ""), data),
            "no 'shape'",
        ),
        (
            with_header(&header.replace("(2, 7)", "(3, 7)"), data),
            "truncated: shape (3, 7) of <f4 needs 84 data bytes, the file has 56",
        ),
        (
            good_bytes[..good_bytes.len() - 1].to_vec(),
            "truncated: shape (2, 7)",
        ),
        ([&good_bytes[..], &[0u8; 4]].concat(), "trailing bytes"),
    ];
    for (bytes, needle) in cases {
        std::fs::write(&f, &bytes).unwrap();
        expect_invalid(snapshot::load_npy(&f), "npy", needle);
    }

    // Values: the errors of `Bodies::from_arrays` (issue 14), row = body index.
    for (row, col, value, needle) in [
        (1usize, 6usize, -3.0f32, "body 1: mass -3"),
        (0, 1, f32::NAN, "body 0: position"),
        (1, 5, f32::INFINITY, "body 1: velocity"),
        (0, 6, f32::NAN, "body 0: mass NaN"),
    ] {
        let mut bytes = good_bytes.clone();
        let at = 128 + (row * 7 + col) * 4;
        bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
        std::fs::write(&f, &bytes).unwrap();
        let e = snapshot::load_npy(&f).unwrap_err();
        assert!(e.to_string().contains(needle), "{e}");
        match col {
            6 => assert!(
                matches!(e, Error::InvalidMass { index, .. } if index == row),
                "{e}"
            ),
            _ => assert!(
                matches!(e, Error::NonFiniteInput { index, .. } if index == row),
                "{e}"
            ),
        }
    }
    std::fs::write(&f, with_header(&header.replace("(2, 7)", "(0, 7)"), &[])).unwrap();
    assert!(matches!(snapshot::load_npy(&f), Err(Error::NoBodies)));

    // Every strict prefix of a valid file is an error, never a panic or partial load.
    for len in 0..good_bytes.len() {
        std::fs::write(&f, &good_bytes[..len]).unwrap();
        assert!(
            matches!(snapshot::load_npy(&f), Err(Error::InvalidFile { .. })),
            "prefix of {len} bytes"
        );
    }
}

/// Big-endian arrays (`arr.astype('>f4')`, `'>f8'`) load to the same bodies.
#[test]
fn npy_reads_big_endian() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("be.npy");
    let b = two_bodies();
    let rows: Vec<f32> = (0..b.len())
        .flat_map(|i| {
            let (p, v) = (b.positions[i], b.velocities[i]);
            [p.x, p.y, p.z, v.x, v.y, v.z, b.masses[i]]
        })
        .collect();
    for (descr, data) in [
        (
            ">f4",
            rows.iter()
                .flat_map(|x| x.to_be_bytes())
                .collect::<Vec<u8>>(),
        ),
        (
            ">f8",
            rows.iter()
                .flat_map(|&x| (x as f64).to_be_bytes())
                .collect::<Vec<u8>>(),
        ),
    ] {
        let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2, 7), }}\n");
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&data);
        std::fs::write(&f, &bytes).unwrap();
        let loaded = snapshot::load_npy(&f).unwrap_or_else(|e| panic!("{descr}: {e}"));
        assert_eq!(bits(&loaded), bits(&b), "{descr}");
    }
}

#[test]
fn npy_limits_n_before_reading_data() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("huge.npy");
    let n = (1usize << 30) + 1;
    let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({n}, 7), }}\n");
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(header.len() as u16).to_le_bytes());
    b.extend_from_slice(header.as_bytes());
    std::fs::write(&f, &b).unwrap();
    let e = snapshot::load_npy(&f).unwrap_err();
    assert!(
        matches!(
            e,
            Error::TooManyBodies {
                n: 1_073_741_825,
                max: 1_073_741_824
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("N = 1073741825"), "{e}");
}

#[test]
fn failed_saves_leave_the_old_file_and_no_temporaries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keep.npy");
    snapshot::save_npy(&path, &two_bodies()).unwrap();
    let before = std::fs::read(&path).unwrap();
    let mut bad = two_bodies();
    bad.velocities[1].x = f32::NAN;
    let e = snapshot::save_npy(&path, &bad).unwrap_err();
    assert!(matches!(e, Error::NonFiniteSnapshot { body: 1, .. }), "{e}");
    assert!(e.to_string().contains("keep.npy") && e.to_string().contains("body 1"));
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert!(leftover_temp_files(dir.path()).is_empty());

    // Overwriting replaces the whole file.
    snapshot::save_npy(&path, &ic::uniform_cube(10, 1)).unwrap();
    assert_eq!(snapshot::load_npy(&path).unwrap().len(), 10);
    assert!(leftover_temp_files(dir.path()).is_empty());
}

fn checkpoint_of_run(dir: &Path) -> (std::path::PathBuf, Simulation) {
    let mut sim = Simulation::builder(ic::plummer(50, 11))
        .dt(0.003)
        .softening(0.02)
        .gravitational_constant(0.7)
        .kernel(Kernel::Triangle { block: 64 })
        .integrator(Integrator::Leapfrog)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    sim.step(3).unwrap();
    let path = dir.join("run.ckpt");
    sim.save_checkpoint(&path).unwrap();
    (path, sim)
}

#[test]
fn checkpoint_round_trips_everything() {
    let dir = tempfile::tempdir().unwrap();
    let (path, sim) = checkpoint_of_run(dir.path());
    let cp = Checkpoint::load(&path).unwrap();
    let state = sim.state().unwrap();
    assert_eq!(bits(&cp.state.bodies), bits(&state.bodies));
    assert_eq!((cp.state.step, cp.state.time), (3, state.time));
    assert_eq!(&cp.params, sim.params());
    assert_eq!(cp.params.dt(), 0.003f32);
    assert_eq!(cp.params.kernel(), Kernel::Triangle { block: 64 });
    assert_eq!(cp.backend, sim.backend());
    // Saving a loaded checkpoint gives the same bytes.
    let again = dir.path().join("again.ckpt");
    cp.save(&again).unwrap();
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&path).unwrap()
    );
    // The builder from a checkpoint carries the parameters and the step count.
    let resumed = Simulation::from_checkpoint(cp)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    assert_eq!(resumed.params(), sim.params());
    assert_eq!(resumed.steps_done(), 3);
    assert_eq!(resumed.time(), sim.time());
}

#[test]
fn corrupt_or_truncated_checkpoints_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = checkpoint_of_run(dir.path());
    let good = std::fs::read(&path).unwrap();
    let f = dir.path().join("bad.ckpt");
    // Every single-byte corruption is caught (magic, version, sizes, CRC32).
    for at in 0..good.len() {
        let mut b = good.clone();
        b[at] ^= 0x5a;
        std::fs::write(&f, &b).unwrap();
        assert!(
            matches!(
                Checkpoint::load(&f),
                Err(Error::InvalidFile {
                    format: "checkpoint",
                    ..
                })
            ),
            "byte {at}"
        );
    }
    // Every strict prefix is an error.
    for len in 0..good.len() {
        std::fs::write(&f, &good[..len]).unwrap();
        assert!(
            matches!(Simulation::resume(&f), Err(Error::InvalidFile { .. })),
            "prefix of {len} bytes"
        );
    }
    let mut b = good.clone();
    b[good.len() / 2] ^= 1;
    std::fs::write(&f, &b).unwrap();
    expect_invalid(Checkpoint::load(&f), "checkpoint", "checksum mismatch");
    std::fs::write(&f, &good[..good.len() - 100]).unwrap();
    expect_invalid(Checkpoint::load(&f), "checkpoint", "truncated");
    std::fs::write(&f, [&good[..], b"x"].concat()).unwrap();
    expect_invalid(Checkpoint::load(&f), "checkpoint", "trailing bytes");
    let mut b = good.clone();
    b[8] = 9;
    std::fs::write(&f, &b).unwrap();
    expect_invalid(Checkpoint::load(&f), "checkpoint", "version 9");
    // An npy file is not a checkpoint, and vice versa.
    snapshot::save_npy(&f, &two_bodies()).unwrap();
    expect_invalid(Checkpoint::load(&f), "checkpoint", "magic");
    expect_invalid(snapshot::load_npy(&path), "npy", "magic");
}

/// A run interrupted by a checkpoint (the simulation dropped, as if the
/// process were killed) and resumed ends bit-identical to an uninterrupted one
/// (to rounding for the emulator's triangle kernel, whose atomic sums are
/// order-dependent on any GPU), on the CPU backend, the emulator and (feature
/// `cuda`) the CUDA backend.
#[test]
fn kill_and_resume_matches_an_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resume.ckpt");
    for &backend in BACKENDS {
        for kernel in [
            Kernel::Simt { block: 32 },
            Kernel::Tiled { block: 64 },
            Kernel::Triangle { block: 32 },
        ] {
            for integrator in [Integrator::SemiImplicitEuler, Integrator::Leapfrog] {
                let what = format!("{backend:?} {kernel} {integrator}");
                let build = || {
                    Simulation::builder(ic::plummer(150, 5))
                        .dt(0.01)
                        .softening(0.05)
                        .kernel(kernel)
                        .integrator(integrator)
                        .backend(backend)
                        .build()
                        .unwrap()
                };
                let mut straight = build();
                straight.step(12).unwrap();
                let expect = straight.state().unwrap();

                let mut first = build();
                first.step(5).unwrap();
                first.save_checkpoint(&path).unwrap();
                let saved = first.state().unwrap();
                drop(first);
                let loaded = Checkpoint::load(&path).unwrap();
                assert_eq!(bits(&loaded.state.bodies), bits(&saved.bodies), "{what}");
                assert_eq!(loaded.state.step, 5, "{what}");
                let mut resumed = Simulation::resume(&path)
                    .unwrap()
                    .backend(backend)
                    .build()
                    .unwrap();
                resumed.step(4).unwrap();
                resumed.step(3).unwrap();
                let got = resumed.state().unwrap();
                assert_eq!(got.step, 12, "{what}");
                assert_eq!(got.time, expect.time, "{what}");
                if !matches!(backend, Backend::Cpu(_)) && matches!(kernel, Kernel::Triangle { .. })
                {
                    // The triangle kernel sums forces with f32 atomic adds whose
                    // order depends on thread timing (on a GPU as in the
                    // emulator), so two uninterrupted runs already differ in the
                    // last bits. Resume adds nothing: the checkpoint holds exact
                    // bits (checked below), and the runs agree to rounding.
                    let worst = max_relative_difference(&got.bodies, &expect.bodies);
                    assert!(worst < 1e-5, "{what}: relative difference {worst:e}");
                } else {
                    let (g, e) = (bits(&got.bodies), bits(&expect.bodies));
                    let differing = g.iter().zip(&e).filter(|(a, b)| a != b).count();
                    assert_eq!(
                        differing,
                        0,
                        "{what}: {differing} of {} words differ",
                        g.len()
                    );
                }
                // And the run really moved: not trivially equal to the start.
                assert_ne!(bits(&got.bodies), bits(&ic::plummer(150, 5)), "{what}");
            }
        }
    }
}
