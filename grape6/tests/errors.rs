//! Bad input through the exported C and Fortran entry points: every case
//! returns its `G6_*` code and leaves a message naming the bad value in
//! `g6_last_error()`, changes nothing, and the library keeps working.
//!
//! The library is one per process, so the tests take a lock and start from
//! a closed library. (Over 600 lines: one case per error path of 33 entry
//! points, each a few lines of unsafe calls; one file shares the lock.)

mod common;

use std::ffi::CStr;
use std::ptr::{null, null_mut};
use std::sync::{Mutex, MutexGuard};

use common::system;
use grape6::error::*;
use grape6::ffi::*;
use grape6::{Config, open_with, with_library};

static SERIAL: Mutex<()> = Mutex::new(());

/// The test lock, with the library closed.
fn fresh() -> MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    g6_close(0);
    g
}

fn last() -> String {
    // SAFETY: g6_last_error returns a NUL-terminated string valid until
    // this thread's next call into the library; it is copied at once.
    unsafe { CStr::from_ptr(g6_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Asserts `code` is `want` and the message contains each of `words`.
#[track_caller]
fn expect(code: i32, want: i32, words: &[&str]) {
    let msg = last();
    assert_eq!(
        code,
        want,
        "got {} ({msg}), want {}",
        code_name(code),
        code_name(want)
    );
    assert!(msg.contains(code_name(want)), "{msg}");
    for w in words {
        assert!(msg.contains(w), "{msg:?} lacks {w:?}");
    }
}

const Z: [f64; 3] = [0.0; 3];

fn set_j(address: i32, index: i32, mass: f64, x: [f64; 3]) -> i32 {
    // SAFETY: every array is 3 doubles; k18 may be NULL.
    unsafe {
        g6_set_j_particle(
            0,
            address,
            index,
            0.0,
            0.0,
            mass,
            null(),
            Z.as_ptr(),
            Z.as_ptr(),
            Z.as_ptr(),
            x.as_ptr(),
        )
    }
}

fn firsthalf(nj: i32, index: &[i32], x: &[[f64; 3]], eps2: f64, h2: Option<&[f64]>) {
    let v = vec![Z; index.len()];
    // SAFETY: the arrays hold ni = index.len() elements (or ni is what is tested).
    unsafe {
        g6calc_firsthalf(
            0,
            nj,
            index.len() as i32,
            index.as_ptr(),
            x.as_ptr(),
            v.as_ptr(),
            null(),
            null(),
            null(),
            eps2,
            h2.map_or(null(), |h| h.as_ptr()),
        )
    }
}

fn lasthalf(nj: i32, ni: usize) -> (i32, Vec<[f64; 3]>, Vec<i32>) {
    let (mut acc, mut jerk, mut pot, mut nn) =
        (vec![Z; ni], vec![Z; ni], vec![0.0; ni], vec![0; ni]);
    // SAFETY: the outputs hold ni elements; index/xi/vi/h2 are not read.
    let code = unsafe {
        g6calc_lasthalf2(
            0,
            nj,
            ni as i32,
            null(),
            null(),
            null(),
            0.0,
            null(),
            acc.as_mut_ptr(),
            jerk.as_mut_ptr(),
            pot.as_mut_ptr(),
            nn.as_mut_ptr(),
        )
    };
    (code, acc, nn)
}

/// Opens a small library with 4 j-particles on the x axis (indices 10..13).
fn four(config: Config) {
    assert_eq!(open_with(config), G6_OK);
    for a in 0..4 {
        assert_eq!(set_j(a, 10 + a, 0.25, [a as f64, 0.0, 0.0]), G6_OK);
    }
}

#[test]
fn every_call_before_g6_open_is_not_open() {
    let _g = fresh();
    let c = [0.0; 3];
    let mut n = 0;
    let mut list = [0; 4];
    // SAFETY: valid pointers throughout; the calls must fail before reading them.
    let codes = unsafe {
        [
            ("g6_close", g6_close(0)),
            ("g6_set_tunit", g6_set_tunit(1.0)),
            ("g6_set_xunit", g6_set_xunit(1.0)),
            ("g6_set_ti", g6_set_ti(0, 1.0)),
            ("g6_set_j_particle", set_j(0, 0, 1.0, c)),
            ("g6_initialize_jp_buffer", g6_initialize_jp_buffer(0, 10)),
            ("g6_flush_jp_buffer", g6_flush_jp_buffer(0)),
            ("g6_reset", g6_reset(0)),
            ("g6_reset_fofpga", g6_reset_fofpga(0)),
            ("g6_read_neighbour_list", g6_read_neighbour_list(0)),
            (
                "g6_get_neighbour_list",
                g6_get_neighbour_list(0, 0, 4, &mut n, list.as_mut_ptr()),
            ),
            ("g6calc_lasthalf2", lasthalf(1, 1).0),
            ("g6_close_", g6_close_(&0)),
            ("g6_set_ti_", g6_set_ti_(&0, &1.0)),
            ("g6_read_neighbour_list_", g6_read_neighbour_list_(&0)),
        ]
    };
    for (name, code) in codes {
        assert_eq!(code, G6_ERR_NOT_OPEN, "{name}");
    }
    expect(
        codes[14].1,
        G6_ERR_NOT_OPEN,
        &["g6_read_neighbour_list_", "g6_open"],
    );
    firsthalf(1, &[0], &[c], 0.0, None);
    expect(G6_ERR_NOT_OPEN, G6_ERR_NOT_OPEN, &["g6calc_firsthalf"]);
    // g6_npipes works before g6_open: the count g6_open will use.
    assert_eq!(g6_npipes(), Config::from_env().unwrap().npipes as i32);
    assert_eq!(last(), "");
}

#[test]
fn g6_open_twice_is_an_error_and_keeps_the_open_library() {
    let _g = fresh();
    four(Config {
        npipes: 8,
        ..Config::default()
    });
    expect(
        g6_open(0),
        G6_ERR_ALREADY_OPEN,
        &["already open", "8 pipes"],
    );
    expect(g6_open_(&0), G6_ERR_ALREADY_OPEN, &["g6_open_"]);
    assert_eq!(g6_npipes(), 8);
    assert_eq!(with_library(|l| l.unwrap().filled()), 4);
    assert_eq!(g6_close(0), G6_OK);
    expect(g6_close(0), G6_ERR_NOT_OPEN, &["g6_close"]);
    // And it opens again, empty.
    assert_eq!(g6_open(0), G6_OK);
    assert_eq!(with_library(|l| l.unwrap().filled()), 0);
    g6_close(0);
}

#[test]
fn bad_j_particles_are_refused_and_change_nothing() {
    let _g = fresh();
    four(Config {
        jmem: 16,
        ..Config::default()
    });
    let before = with_library(|l| *l.unwrap().j_particle(2).unwrap());
    expect(
        set_j(-1, 1, 1.0, Z),
        G6_ERR_ADDRESS,
        &["address -1", "0 to 15"],
    );
    expect(
        set_j(16, 1, 1.0, Z),
        G6_ERR_ADDRESS,
        &["address 16", "GRAPE6_JMEM"],
    );
    expect(
        set_j(2, 1, 1.0, [f64::NAN, 0.0, 0.0]),
        G6_ERR_NOT_FINITE,
        &["address 2", "position", "NaN"],
    );
    expect(
        set_j(2, 1, f64::INFINITY, Z),
        G6_ERR_NOT_FINITE,
        &["mass", "inf"],
    );
    let nan = [0.0, f64::NAN, 0.0];
    for (what, args) in [
        ("velocity", [Z, Z, nan]),
        ("a2", [Z, nan, Z]),
        ("j6", [nan, Z, Z]),
    ] {
        // SAFETY: 3 doubles each.
        let code = unsafe {
            g6_set_j_particle(
                0,
                2,
                1,
                0.0,
                0.0,
                1.0,
                null(),
                args[0].as_ptr(),
                args[1].as_ptr(),
                args[2].as_ptr(),
                Z.as_ptr(),
            )
        };
        expect(code, G6_ERR_NOT_FINITE, &[what]);
    }
    // SAFETY: 3 doubles each, x NULL.
    let code = unsafe {
        g6_set_j_particle(
            0,
            2,
            1,
            f64::NAN,
            0.0,
            1.0,
            null(),
            Z.as_ptr(),
            Z.as_ptr(),
            Z.as_ptr(),
            Z.as_ptr(),
        )
    };
    expect(code, G6_ERR_NOT_FINITE, &["time tj"]);
    // SAFETY: 3 doubles each, x NULL.
    let code = unsafe {
        g6_set_j_particle(
            0,
            2,
            1,
            0.0,
            0.0,
            1.0,
            null(),
            Z.as_ptr(),
            Z.as_ptr(),
            Z.as_ptr(),
            null(),
        )
    };
    expect(code, G6_ERR_NULL_POINTER, &["x is a NULL pointer"]);
    // SAFETY: address NULL, the rest valid.
    let code = unsafe {
        g6_set_j_particle_(
            &0,
            null(),
            &1,
            &0.0,
            &0.0,
            &1.0,
            null(),
            Z.as_ptr(),
            Z.as_ptr(),
            Z.as_ptr(),
            Z.as_ptr(),
        )
    };
    expect(code, G6_ERR_NULL_POINTER, &["address"]);
    expect(g6_set_ti(0, f64::NAN), G6_ERR_NOT_FINITE, &["ti = NaN"]);
    // SAFETY: ti NULL.
    expect(
        unsafe { g6_set_ti_(&0, null()) },
        G6_ERR_NULL_POINTER,
        &["ti"],
    );
    assert_eq!(with_library(|l| *l.unwrap().j_particle(2).unwrap()), before);
    assert_eq!(with_library(|l| l.unwrap().ti()), 0.0);
    g6_close(0);
}

#[test]
fn bad_blocks_are_refused_and_lasthalf_reports_the_firsthalf_error() {
    let _g = fresh();
    four(Config {
        npipes: 3,
        ..Config::default()
    });
    let x = [[0.5, 0.5, 0.0]; 4];
    // An active block of 0, then of more than the pipes.
    firsthalf(4, &[], &[], 0.01, None);
    expect(
        G6_ERR_PIPES,
        G6_ERR_PIPES,
        &["g6calc_firsthalf", "ni = 0", "g6_npipes() = 3"],
    );
    expect(
        lasthalf(4, 0).0,
        G6_ERR_PIPES,
        &["g6calc_lasthalf2", "firsthalf", "ni = 0"],
    );
    firsthalf(4, &[1, 2, 3, 4], &x, 0.01, None);
    expect(G6_ERR_PIPES, G6_ERR_PIPES, &["ni = 4"]);
    expect(lasthalf(4, 3).0, G6_ERR_PIPES, &["firsthalf"]);
    // More j-particles than were set; a negative nj.
    firsthalf(5, &[1], &x[..1], 0.01, None);
    expect(G6_ERR_NJ, G6_ERR_NJ, &["nj = 5", "address 4 was never set"]);
    firsthalf(-2, &[1], &x[..1], 0.01, None);
    expect(G6_ERR_NJ, G6_ERR_NJ, &["nj = -2"]);
    // NaN positions, bad softening, NaN h2.
    firsthalf(4, &[1, 2], &[x[0], [0.0, f64::INFINITY, 0.0]], 0.01, None);
    expect(
        G6_ERR_NOT_FINITE,
        G6_ERR_NOT_FINITE,
        &["i-particle 1", "position", "inf"],
    );
    firsthalf(4, &[1], &[[f64::NAN; 3]], 0.01, None);
    expect(
        G6_ERR_NOT_FINITE,
        G6_ERR_NOT_FINITE,
        &["i-particle 0", "NaN"],
    );
    expect(lasthalf(4, 1).0, G6_ERR_NOT_FINITE, &["firsthalf", "NaN"]);
    firsthalf(4, &[1], &x[..1], -1.0, None);
    expect(G6_ERR_ARGUMENT, G6_ERR_ARGUMENT, &["eps2 = -1"]);
    firsthalf(4, &[1], &x[..1], f64::NAN, None);
    expect(G6_ERR_NOT_FINITE, G6_ERR_NOT_FINITE, &["eps2 = NaN"]);
    firsthalf(4, &[1], &x[..1], 0.01, Some(&[f64::NAN]));
    expect(G6_ERR_NOT_FINITE, G6_ERR_NOT_FINITE, &["h2 is NaN"]);
    // NULL arrays.
    let v = [Z];
    // SAFETY: xi NULL, the rest valid for ni = 1.
    unsafe {
        g6calc_firsthalf(
            0,
            4,
            1,
            [1].as_ptr(),
            null(),
            v.as_ptr(),
            null(),
            null(),
            null(),
            0.01,
            null(),
        )
    };
    expect(G6_ERR_NULL_POINTER, G6_ERR_NULL_POINTER, &["xi"]);
    // SAFETY: nj NULL (Fortran).
    unsafe {
        g6calc_firsthalf_(
            &0,
            null(),
            &1,
            [1].as_ptr(),
            x.as_ptr(),
            v.as_ptr(),
            null(),
            null(),
            null(),
            &0.01,
            null(),
        )
    };
    expect(
        G6_ERR_NULL_POINTER,
        G6_ERR_NULL_POINTER,
        &["g6calc_firsthalf_", "nj"],
    );
    // A good calculation, then lasthalf with another ni or nj, or NULL acc.
    firsthalf(4, &[10, 99], &x[..2], 0.01, None);
    assert_eq!(last(), "");
    expect(
        lasthalf(4, 1).0,
        G6_ERR_SEQUENCE,
        &["ni = 1", "began nj = 4, ni = 2"],
    );
    expect(lasthalf(3, 2).0, G6_ERR_SEQUENCE, &["nj = 3"]);
    let mut out = [Z; 2];
    let mut pot = [0.0; 2];
    // SAFETY: acc NULL, the rest hold ni = 2.
    let code = unsafe {
        g6calc_lasthalf(
            0,
            4,
            2,
            null(),
            null(),
            null(),
            0.0,
            null(),
            null_mut(),
            out.as_mut_ptr(),
            pot.as_mut_ptr(),
        )
    };
    expect(code, G6_ERR_NULL_POINTER, &["acc"]);
    // The errors changed nothing: the calculation finishes, with the right
    // force on the outside particle 99 at (0.5, 0.5, 0): from the masses on
    // the x axis (a check of the values, not just the code).
    let (code, acc, nn) = lasthalf(4, 2);
    assert_eq!(code, G6_OK, "{}", last());
    let want: f64 = (0..4)
        .map(|a| {
            let (dx, dy) = (a as f64 - 0.5, -0.5f64);
            0.25 * dx / (dx * dx + dy * dy + 0.01).powf(1.5)
        })
        .sum();
    assert!((acc[1][0] - want).abs() < 1e-14, "{} {want}", acc[1][0]);
    assert_eq!(nn, vec![11, 10]);
    g6_close(0);
}

#[test]
fn lasthalf_without_firsthalf_and_coincident_bodies_at_zero_softening() {
    let _g = fresh();
    four(Config::default());
    expect(
        lasthalf(4, 1).0,
        G6_ERR_SEQUENCE,
        &["call g6calc_firsthalf first"],
    );
    // Address 3 moved onto address 1: i-particle 11 (address 1) skips
    // itself but meets address 3 at distance 0.
    assert_eq!(set_j(3, 13, 0.25, [1.0, 0.0, 0.0]), G6_OK);
    firsthalf(4, &[11], &[[1.0, 0.0, 0.0]], 0.0, None);
    assert_eq!(last(), "");
    expect(
        lasthalf(4, 1).0,
        G6_ERR_NOT_FINITE,
        &["index 11", "address 3 (index 13)", "eps2 = 0"],
    );
    // With softening it is finite.
    firsthalf(4, &[11], &[[1.0, 0.0, 0.0]], 1e-6, None);
    assert_eq!(lasthalf(4, 1).0, G6_OK);
    g6_close(0);
}

#[test]
fn neighbour_list_errors_and_overflow() {
    let _g = fresh();
    four(Config {
        nb_max: 2,
        ..Config::default()
    });
    expect(
        g6_read_neighbour_list(0),
        G6_ERR_SEQUENCE,
        &["g6_read_neighbour_list", "g6calc_firsthalf first"],
    );
    // Without h2, no lists.
    firsthalf(4, &[10], &[[0.0; 3]], 0.01, None);
    expect(g6_read_neighbour_list(0), G6_ERR_SEQUENCE, &["h2 (NULL)"]);
    // i-particle 10 at x = 0 has 3 neighbours within r < 3.5, more than 2.
    firsthalf(
        4,
        &[10, 12],
        &[[0.0; 3], [2.0, 0.0, 0.0]],
        0.01,
        Some(&[12.0, 1.5]),
    );
    expect(
        g6_read_neighbour_list(0),
        G6_OVERFLOW,
        &["has 3 neighbours", "more than the 2", "GRAPE6_NB_MAX"],
    );
    let mut list = [-7; 8];
    let mut n = 0;
    // SAFETY: list holds 8, n is writable.
    let code = unsafe { g6_get_neighbour_list(0, 0, 8, &mut n, list.as_mut_ptr()) };
    expect(code, G6_OVERFLOW, &["has 3 neighbours; 2 written"]);
    assert_eq!((n, &list[..3]), (3, &[11, 12, -7][..]));
    // Pipe 1 (index 12 at x = 2): neighbours 11 and 13 at r = 1 < sqrt(1.5).
    // SAFETY: as above.
    let code = unsafe { g6_get_neighbour_list(0, 1, 8, &mut n, list.as_mut_ptr()) };
    assert_eq!((code, n, &list[..2]), (G6_OK, 2, &[11, 13][..]));
    assert_eq!(last(), "");
    // maxlength 1: truncated to the first, sorted.
    // SAFETY: as above (1 written at most).
    let code = unsafe { g6_get_neighbour_list_(&0, &1, &1, &mut n, list.as_mut_ptr()) };
    expect(code, G6_OVERFLOW, &["maxlength 1"]);
    assert_eq!((n, list[0]), (2, 11));
    // Bad pipes, lengths and pointers.
    // SAFETY: as above, or NULL where tested.
    unsafe {
        expect(
            g6_get_neighbour_list(0, 2, 8, &mut n, list.as_mut_ptr()),
            G6_ERR_ARGUMENT,
            &["ipipe = 2", "0 to 1"],
        );
        expect(
            g6_get_neighbour_list(0, -1, 8, &mut n, list.as_mut_ptr()),
            G6_ERR_ARGUMENT,
            &["ipipe = -1"],
        );
        expect(
            g6_get_neighbour_list(0, 0, -3, &mut n, list.as_mut_ptr()),
            G6_ERR_ARGUMENT,
            &["maxlength = -3"],
        );
        expect(
            g6_get_neighbour_list(0, 0, 8, null_mut(), list.as_mut_ptr()),
            G6_ERR_NULL_POINTER,
            &["n_neighbours"],
        );
        expect(
            g6_get_neighbour_list(0, 0, 8, &mut n, null_mut()),
            G6_ERR_NULL_POINTER,
            &["neighbour_list"],
        );
    }
    g6_close(0);
}

#[test]
fn housekeeping_calls_succeed_once_open_and_fortran_results_equal_c() {
    let _g = fresh();
    let (p, address) = system(50, 2);
    assert_eq!(g6_open(0), G6_OK);
    for (k, q) in p.iter().enumerate() {
        // SAFETY: 3 doubles each.
        let code = unsafe {
            g6_set_j_particle_(
                &0,
                &(address[k] as i32),
                &q.index,
                &q.tj,
                &0.0,
                &q.mass,
                null(),
                q.j6.as_ptr(),
                q.a2.as_ptr(),
                q.v.as_ptr(),
                q.x.as_ptr(),
            )
        };
        assert_eq!(code, G6_OK);
    }
    for code in [
        g6_set_tunit(7.0),
        g6_set_xunit(7.0),
        g6_set_tunit_(null()),
        g6_set_xunit_(null()),
        g6_initialize_jp_buffer(0, 100),
        g6_initialize_jp_buffer_(null(), null()),
        g6_flush_jp_buffer(0),
        g6_flush_jp_buffer_(null()),
        g6_reset(0),
        g6_reset_(null()),
        g6_reset_fofpga(0),
        g6_reset_fofpga_(null()),
        g6_npipes_() - g6_npipes(),
    ] {
        assert_eq!(code, G6_OK, "{}", last());
    }
    // SAFETY: ti points to a double.
    assert_eq!(unsafe { g6_set_ti_(&0, &0.12) }, G6_OK);
    let index: Vec<i32> = p[..5].iter().map(|q| q.index).collect();
    let x: Vec<[f64; 3]> = p[..5].iter().map(|q| q.x).collect();
    let v: Vec<[f64; 3]> = p[..5].iter().map(|q| q.v).collect();
    let h2 = [0.3; 5];
    firsthalf(50, &index, &x, 0.001, Some(&h2));
    let (code, c_acc, c_nn) = lasthalf(50, 5);
    assert_eq!(code, G6_OK);
    // The same through the Fortran names.
    let (mut acc, mut jerk, mut pot, mut nn) = ([Z; 5], [Z; 5], [0.0; 5], [0; 5]);
    // SAFETY: every array holds ni = 5.
    let code = unsafe {
        g6calc_firsthalf_(
            &0,
            &50,
            &5,
            index.as_ptr(),
            x.as_ptr(),
            v.as_ptr(),
            null(),
            null(),
            null(),
            &0.001,
            h2.as_ptr(),
        );
        g6calc_lasthalf2_(
            &0,
            &50,
            &5,
            null(),
            null(),
            null(),
            null(),
            null(),
            acc.as_mut_ptr(),
            jerk.as_mut_ptr(),
            pot.as_mut_ptr(),
            nn.as_mut_ptr(),
        )
    };
    assert_eq!(code, G6_OK, "{}", last());
    // Velocities differ (the C helper passes zeros): the force does not.
    assert_eq!((acc.to_vec(), nn.to_vec()), (c_acc, c_nn));
    assert_eq!(g6_read_neighbour_list_(&0), G6_OK);
    assert_eq!(g6_close_(&0), G6_OK);
}

/// `g6_open` with a bad `GRAPE6_*` variable: in a child process (this test
/// binary again), since the environment is the process's.
#[test]
fn g6_open_with_a_bad_environment_variable_is_a_config_error() {
    if std::env::var_os("GRAPE6_ERRORS_CHILD").is_some() {
        let _g = fresh();
        expect(g6_open(0), G6_ERR_CONFIG, &["GRAPE6_NPIPES=\"0\""]);
        expect(g6_npipes(), G6_ERR_CONFIG, &["g6_npipes", "GRAPE6_NPIPES"]);
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "g6_open_with_a_bad_environment_variable_is_a_config_error",
            "--nocapture",
        ])
        .env("GRAPE6_ERRORS_CHILD", "1")
        .env("GRAPE6_NPIPES", "0")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
    // Printed to stderr as well as stored.
    assert!(
        text.contains("grape6: g6_open: GRAPE6_NPIPES=\"0\""),
        "{text}"
    );
}

#[test]
fn calls_from_many_threads_are_serialised_and_errors_stay_on_their_thread() {
    let _g = fresh();
    assert_eq!(open_with(Config::default()), G6_OK);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for k in 0..250 {
                    let a = 4 * k + t;
                    assert_eq!(set_j(a, a, 1.0, [a as f64, t as f64, 0.0]), G6_OK);
                    assert_eq!(g6_set_ti(0, a as f64), G6_OK);
                    assert!(g6_npipes() > 0);
                }
                // An error on this thread is this thread's message only.
                if t == 0 {
                    expect(set_j(-5, 0, 1.0, Z), G6_ERR_ADDRESS, &["address -5"]);
                } else {
                    assert_eq!(g6_npipes(), Config::default().npipes as i32);
                    assert_eq!(last(), "");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    with_library(|l| {
        let l = l.unwrap();
        assert_eq!(l.filled(), 1000);
        for a in 0..1000 {
            let p = l.j_particle(a).unwrap();
            assert_eq!((p.index, p.x), (a as i32, [a as f64, (a % 4) as f64, 0.0]));
        }
    });
    g6_close(0);
}
