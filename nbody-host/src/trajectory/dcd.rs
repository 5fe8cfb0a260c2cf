//! DCD, the CHARMM binary trajectory, in the layout LAMMPS's `dump dcd`
//! writes (and MDAnalysis, mdtraj and VMD read): little-endian Fortran
//! records, each framed by its length in bytes (`u32`) before and after.
//!
//! | record | bytes | what |
//! | --- | ---: | --- |
//! | header | 84 | `CORD`; `NSET` frames (offset 8 of the file); `ISTART` first step; `NSAVC` steps between frames; `NSTEP` last step (offset 20); five zeros; `DELTA` (`f32`); 1 (a unit cell per frame); eight zeros; 24 (CHARMM version) |
//! | titles | 164 | 2, then two 80-byte lines |
//! | atoms | 4 | `N` |
//!
//! then per frame: the unit cell (48 bytes: six `f64`, `A cos(gamma) B
//! cos(beta) cos(alpha) C`, the cosines 0 for an orthorhombic box, as
//! LAMMPS writes them), then `x` of every atom, `y`, `z` (each `4 N` bytes
//! of `f32`). Each frame is appended and synced before `NSET` and `NSTEP`
//! are updated, so a killed run leaves a file of whole frames (readers that
//! trust `NSET` see the frames it counts; those that divide the file's size,
//! all of them).

use super::{Frame, WriterOptions};

/// Offset of `NSET` (frames in the file).
const NSET_OFFSET: u64 = 8;
/// Offset of `NSTEP` (the step of the last frame).
const NSTEP_OFFSET: u64 = 20;

/// One Fortran record: its length, the bytes, its length again.
fn record(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = (bytes.len() as u32).to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(bytes);
    out.extend_from_slice(&len);
}

/// A step as DCD's 32-bit field (DCD cannot hold larger ones; they wrap, as
/// in LAMMPS).
fn step32(step: u64) -> [u8; 4] {
    (step as u32).to_le_bytes()
}

/// The file header, for a file whose first frame is `first`.
pub(super) fn header(first: &Frame, options: &WriterOptions) -> Vec<u8> {
    let mut head = Vec::with_capacity(84);
    head.extend_from_slice(b"CORD");
    head.extend_from_slice(&1u32.to_le_bytes()); // NSET: this first frame
    head.extend_from_slice(&step32(first.step)); // ISTART
    head.extend_from_slice(&(options.every.min(u64::from(u32::MAX)) as u32).to_le_bytes()); // NSAVC
    head.extend_from_slice(&step32(first.step)); // NSTEP
    head.extend_from_slice(&[0; 20]);
    head.extend_from_slice(&(options.dt as f32).to_le_bytes()); // DELTA
    head.extend_from_slice(&1u32.to_le_bytes()); // a unit cell per frame
    head.extend_from_slice(&[0; 32]);
    head.extend_from_slice(&24u32.to_le_bytes()); // CHARMM version
    let mut titles = Vec::with_capacity(164);
    titles.extend_from_slice(&2u32.to_le_bytes());
    for line in [
        "Created by nbody-host (LAMMPS dump dcd layout)",
        "REMARKS orthorhombic periodic box, LJ units",
    ] {
        let mut padded = [b' '; 80];
        padded[..line.len()].copy_from_slice(line.as_bytes());
        titles.extend_from_slice(&padded);
    }
    let mut out = Vec::with_capacity(84 + 164 + 4 + 24);
    record(&mut out, &head);
    record(&mut out, &titles);
    record(&mut out, &(first.len() as u32).to_le_bytes());
    out
}

/// One frame: the unit cell, then `x`, `y`, `z`.
pub(super) fn encode(frame: &Frame, options: &WriterOptions) -> Vec<u8> {
    let n = frame.len();
    let mut out = Vec::with_capacity(56 + 3 * (4 * n + 8));
    let [a, b, c] = frame.lengths;
    let cell: Vec<u8> = [a, 0.0, b, 0.0, 0.0, c]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    record(&mut out, &cell);
    let positions: Vec<[f32; 3]> = (0..n)
        .map(|i| super::written_position(frame, i, options.unwrapped))
        .collect();
    for k in 0..3 {
        let axis: Vec<u8> = positions.iter().flat_map(|p| p[k].to_le_bytes()).collect();
        record(&mut out, &axis);
    }
    out
}

/// The header fields a frame after the first updates: `NSET` and `NSTEP`.
pub(super) fn header_patches(frames: usize, step: u64) -> Vec<(u64, Vec<u8>)> {
    vec![
        (NSET_OFFSET, (frames as u32).to_le_bytes().to_vec()),
        (NSTEP_OFFSET, step32(step).to_vec()),
    ]
}
