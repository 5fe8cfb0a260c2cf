//! Bits recorded on an H200 and committed (`tests/data/h200/NAME.txt`), so
//! the software CUDA device is checked against the hardware in CI.
//!
//! A test computes its words (every bit of a run's state), then
//! [`check_or_record`]: with `NBODY_RECORD_GPU_BITS=DIR` (set by
//! `scripts/gpu/issue24.sh` on a GPU) it writes them to `DIR/NAME.txt`, and
//! the committed file must match word for word. Every file is committed
//! (2026-11-27), so a missing one fails, unless the run is recording
//! (`NBODY_RECORD_GPU_BITS`, e.g. a new run's first file).
#![allow(dead_code, reason = "each test binary uses its own subset")]

use std::path::PathBuf;

/// Where the committed GPU bits live.
pub fn committed(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/h200")
        .join(format!("{name}.txt"))
}

/// Records `words` under `NBODY_RECORD_GPU_BITS`, then compares them with
/// the committed H200 bits if there are any.
pub fn check_or_record(name: &str, what: &str, words: &[u64]) {
    let text = |words: &[u64]| {
        let mut s = format!("# {what}\n# {} words, hex, one per line\n", words.len());
        for w in words {
            s += &format!("{w:x}\n");
        }
        s
    };
    if let Ok(dir) = std::env::var("NBODY_RECORD_GPU_BITS") {
        let path = PathBuf::from(dir).join(format!("{name}.txt"));
        std::fs::write(&path, text(words)).unwrap();
        println!(
            "recorded {} words of {name} to {}",
            words.len(),
            path.display()
        );
    }
    let path = committed(name);
    let Ok(want) = std::fs::read_to_string(&path) else {
        assert!(
            std::env::var_os("NBODY_RECORD_GPU_BITS").is_some(),
            "{} is missing: the H200's bits are committed there (scripts/gpu/issue24.sh records them on a GPU)",
            path.display()
        );
        println!("{} is not committed: recorded only", path.display());
        return;
    };
    let want: Vec<u64> = want
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| u64::from_str_radix(l.trim(), 16).expect("a hex word"))
        .collect();
    assert_eq!(words.len(), want.len(), "{name}: word count");
    let differ: Vec<usize> = (0..words.len()).filter(|&i| words[i] != want[i]).collect();
    assert!(
        differ.is_empty(),
        "{name}: {} of {} words differ from the H200's ({}), the first at {}: {:x} here, {:x} there",
        differ.len(),
        words.len(),
        path.display(),
        differ[0],
        words[differ[0]],
        want[differ[0]]
    );
    println!("{name}: all {} words are the H200's", words.len());
}
