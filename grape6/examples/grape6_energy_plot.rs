//! The energy-error-vs-time plot of the worked Plummer run through
//! libgrape6 (docs/collisional.md): reads the CSV files the C test program
//! writes (`grape6/tests/c/plummer.c --csv`, lines `t,rel_energy_error`)
//! and draws them with nbody-host's plot helper.
//!
//! ```sh
//! scripts/ci-grape6.sh --plot docs/images/grape6_plummer_energy.png
//! # or, from CSV files already written:
//! cargo run --release -p grape6 --example grape6_energy_plot -- OUT.png "f64=a.csv" "mixed=b.csv"
//! ```
//!
//! Exit status: 2 usage, 3 a malformed CSV line, 4 file I/O.

use std::process::ExitCode;

use nbody_host::render::{EnergySeries, energy_plot};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: grape6_energy_plot OUT.png LABEL=FILE.csv [LABEL=FILE.csv ...]");
        return ExitCode::from(2);
    }
    let mut series = Vec::new();
    for arg in &args[1..] {
        let Some((label, path)) = arg.split_once('=') else {
            eprintln!("{arg:?}: want LABEL=FILE.csv");
            return ExitCode::from(2);
        };
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::from(4);
            }
        };
        let mut points = Vec::new();
        for (k, line) in text.lines().enumerate().skip(1) {
            let parsed = line
                .split_once(',')
                .and_then(|(t, e)| Some((t.trim().parse().ok()?, e.trim().parse().ok()?)));
            match parsed {
                Some((t, e)) if f64::is_finite(t) && f64::is_finite(e) => points.push((t, e)),
                _ => {
                    eprintln!(
                        "{path}:{}: want \"t,rel_energy_error\", got {line:?}",
                        k + 1
                    );
                    return ExitCode::from(3);
                }
            }
        }
        series.push(EnergySeries {
            label: label.to_string(),
            points,
        });
    }
    let title = "Plummer N = 512 through libgrape6 (Hermite, eta 0.02, eps 0.01)";
    if let Err(e) = energy_plot(&args[0], title, &series, (900, 540)) {
        eprintln!("{e}");
        return ExitCode::from(4);
    }
    println!("wrote {}", args[0]);
    ExitCode::SUCCESS
}
