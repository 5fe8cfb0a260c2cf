//! What the `lj_melt` command-line tests share (`md_cli.rs`,
//! `md_cli_checks.rs`): the example's source compiled in as a module,
//! runners, and the parsing of its thermo table, timing table and `result`
//! line.
#![allow(dead_code, reason = "each test binary uses its own subset")]

#[allow(dead_code, reason = "the tests call only part of the example")]
#[path = "../../../examples/lj_melt.rs"]
pub mod lj_melt;

use nbody_host::snapshot;

pub struct Outcome {
    pub out: String,
    pub result: Result<(), lj_melt::Failure>,
}

pub fn run(args: &[&str]) -> Outcome {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let argv = std::iter::once("lj_melt").chain(args.iter().copied());
    let result = lj_melt::cli(argv, &mut out, &mut err, lj_melt::Progress::Off);
    Outcome {
        out: String::from_utf8(out).unwrap(),
        result,
    }
}

pub fn run_ok(args: &[&str]) -> String {
    let o = run(args);
    if let Err(f) = o.result {
        panic!("{args:?}: {}", f.line);
    }
    o.out
}

#[track_caller]
pub fn run_err(args: &[&str], code: u8) -> String {
    let o = run(args);
    let f = o.result.expect_err("should fail");
    assert!(
        f.line.starts_with("error: ") && !f.line.contains('\n'),
        "{:?}",
        f.line
    );
    assert_eq!(f.code, code, "{}", f.line);
    f.line
}

/// The `key=value` fields of the `result` line, checked for exactly the
/// documented keys in order.
pub fn result_fields(out: &str) -> Vec<(String, String)> {
    let last = out.lines().last().unwrap();
    let fields: Vec<(String, String)> = last
        .strip_prefix("result ")
        .expect(last)
        .split(' ')
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect(kv);
            (k.to_owned(), v.to_owned())
        })
        .collect();
    let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "backend",
            "atoms",
            "steps",
            "seconds",
            "atom_steps_per_s",
            "pe0",
            "etotal0",
            "etotal",
            "temp"
        ]
    );
    fields
}

pub fn field(fields: &[(String, String)], key: &str) -> f64 {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .unwrap()
        .1
        .parse()
        .unwrap()
}

/// The thermo rows (six numbers each).
pub fn thermo(out: &str) -> Vec<[f64; 6]> {
    out.lines()
        .filter_map(|l| {
            let v: Vec<f64> = l
                .split_whitespace()
                .map(|w| w.parse().ok())
                .collect::<Option<_>>()?;
            v.try_into().ok()
        })
        .collect()
}

/// The timing table's sections: (name, seconds, percent), and the loop time.
pub fn timing_table(out: &str) -> (Vec<(String, f64, f64)>, f64) {
    let loop_time: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("Loop time of "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect(out)
        .parse()
        .unwrap();
    let sections = out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').map(str::trim).collect();
            match f[..] {
                [name, t, pct] => Some((name.to_owned(), t.parse().ok()?, pct.parse().ok()?)),
                _ => None,
            }
        })
        .collect();
    (sections, loop_time)
}

/// The number after `Neighbor list builds = `.
pub fn builds(out: &str) -> u64 {
    let rest = out.split("Neighbor list builds = ").nth(1).expect(out);
    rest.split(',').next().unwrap().parse().unwrap()
}

/// An fcc lattice of `cells`^3 unit cells with atom 1 moved to 0.5 sigma
/// from atom 0, as an --init file in `dir`; returns its path and the box.
pub fn overlapping_lattice(dir: &std::path::Path, cells: usize) -> (String, String) {
    let (mut atoms, boundary) = nbody_host::ic::fcc_lattice(cells, 0.8442, 1.44, 5).unwrap();
    atoms.positions[1] = atoms.positions[0] + nbody_host::glam::Vec3::new(0.5, 0.0, 0.0);
    let path = dir.join(format!("close{cells}.npy"));
    snapshot::save_npy(&path, &atoms).unwrap();
    let l = boundary.lengths().unwrap()[0].to_string();
    (path.to_str().unwrap().to_owned(), l)
}
