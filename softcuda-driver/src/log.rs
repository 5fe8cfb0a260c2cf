//! Where the driver says what it does: notices (errors, unsupported calls,
//! the first modelled timing) always, every call when asked
//! (`SOFTCUDA_LOG=stderr` or a file), and per-launch JSON lines to
//! `SOFTCUDA_STATS`.

use std::fs::{File, OpenOptions};
use std::io::Write;

use crate::config::LogTarget;

/// The driver's log and stats sinks.
pub struct Log {
    target: LogTarget,
    file: Option<File>,
    stats: Option<File>,
}

fn open(path: &str) -> Option<File> {
    match OpenOptions::new().create(true).append(true).open(path) {
        Ok(f) => Some(f),
        Err(e) => {
            eprintln!("softcuda: cannot open {path}: {e}");
            None
        }
    }
}

impl Log {
    /// Opens the sinks of a configuration.
    pub fn new(target: LogTarget, stats: Option<&str>) -> Log {
        let file = match &target {
            LogTarget::File(p) => open(p),
            _ => None,
        };
        Log {
            target,
            file,
            stats: stats.and_then(open),
        }
    }

    /// A log that writes nowhere (before `cuInit`).
    pub fn off() -> Log {
        Log {
            target: LogTarget::Off,
            file: None,
            stats: None,
        }
    }

    fn write(&mut self, line: &str, notice: bool) {
        match &self.target {
            LogTarget::Off => {}
            LogTarget::Notices => {
                if notice {
                    eprintln!("softcuda: {line}");
                }
            }
            LogTarget::Stderr => eprintln!("softcuda: {line}"),
            LogTarget::File(_) => {
                if let Some(f) = self.file.as_mut() {
                    let _ = writeln!(f, "softcuda: {line}");
                }
                if notice {
                    eprintln!("softcuda: {line}");
                }
            }
        }
    }

    /// Something the user must see: errors, unsupported calls.
    pub fn notice(&mut self, line: &str) {
        self.write(line, true);
    }

    /// A trace line: only with `SOFTCUDA_LOG=stderr` or a file.
    pub fn trace(&mut self, line: impl FnOnce() -> String) {
        if matches!(self.target, LogTarget::Stderr | LogTarget::File(_)) {
            self.write(&line(), false);
        }
    }

    /// One JSON line to `SOFTCUDA_STATS`.
    pub fn stats(&mut self, json: &str) {
        if let Some(f) = self.stats.as_mut() {
            let _ = writeln!(f, "{json}");
        }
    }
}
