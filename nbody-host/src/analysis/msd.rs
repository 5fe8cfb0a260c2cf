//! The mean-squared displacement, LAMMPS's `compute msd` (`com no`).

use rayon::prelude::*;

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Error, Result};
use crate::snapshot::write_atomically;
use crate::trajectory::Frame;

/// Atoms per task of the sums: a fixed decomposition, so the sums' order,
/// and their bits, do not depend on the thread count.
const CHUNK: usize = 4096;

/// The mean-squared displacement of every atom from where it was in a
/// reference frame, unwrapped with the image counters (`x + image * L`):
/// LAMMPS's `compute msd` with `com no`, whose reference is the positions
/// when the compute is defined.
///
/// ```
/// use nbody_host::analysis::Msd;
/// use nbody_host::trajectory::Frame;
///
/// let mut frame = Frame { step: 0, time: 0.0, lengths: [10.0; 3], positions: vec![[9.5, 1.0, 1.0], [2.0, 2.0, 2.0]],
///     images: vec![[0; 3]; 2], velocities: vec![], types: vec![] };
/// let msd = Msd::new(&frame);
/// // Atom 0 crosses the boundary at x = 10: wrapped to 0.5, image 1; moved by 1.
/// frame.positions[0][0] = 0.5;
/// frame.images[0][0] = 1;
/// frame.step = 10;
/// assert_eq!(msd.at(&frame)?, [0.5, 0.0, 0.0, 0.5]);
/// # Ok::<(), nbody_host::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Msd {
    /// Unwrapped positions of the reference frame.
    reference: Vec<[f64; 3]>,
    /// The samples taken ([`sample`](Self::sample)): step and value.
    samples: Vec<(u64, [f64; 4])>,
}

impl Msd {
    /// The reference: this frame's unwrapped positions.
    pub fn new(frame: &Frame) -> Msd {
        Msd {
            reference: (0..frame.len()).map(|i| frame.unwrapped(i)).collect(),
            samples: Vec::new(),
        }
    }

    /// Atoms of the reference.
    pub fn len(&self) -> usize {
        self.reference.len()
    }

    /// Whether the reference has no atoms.
    pub fn is_empty(&self) -> bool {
        self.reference.is_empty()
    }

    /// `[<dx^2>, <dy^2>, <dz^2>, <dx^2 + dy^2 + dz^2>]` over the atoms, from
    /// the reference to `frame` (LAMMPS's `c_msd[1]` to `c_msd[4]`); an
    /// error if the atom counts differ.
    pub fn at(&self, frame: &Frame) -> Result<[f64; 4]> {
        if frame.len() != self.reference.len() {
            return Err(Error::InvalidCombination(format!(
                "mean-squared displacement: the frame at step {} has {} atoms, the reference {}",
                frame.step,
                frame.len(),
                self.reference.len()
            )));
        }
        frame.validate()?;
        let n = self.reference.len();
        if n == 0 {
            return Ok([0.0; 4]);
        }
        let partial: Vec<[f64; 4]> = self
            .reference
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(c, chunk)| {
                let mut sum = [0.0; 4];
                for (k, r) in chunk.iter().enumerate() {
                    let u = frame.unwrapped(c * CHUNK + k);
                    let d: [f64; 3] = std::array::from_fn(|a| u[a] - r[a]);
                    for a in 0..3 {
                        sum[a] += d[a] * d[a];
                    }
                    sum[3] += d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                }
                sum
            })
            .collect();
        let mut total = [0.0; 4];
        for p in &partial {
            for a in 0..4 {
                total[a] += p[a];
            }
        }
        Ok(total.map(|s| s / n as f64))
    }

    /// [`at`](Self::at), kept as a row of [`to_text`](Self::to_text).
    pub fn sample(&mut self, frame: &Frame) -> Result<[f64; 4]> {
        let value = self.at(frame)?;
        self.samples.push((frame.step, value));
        Ok(value)
    }

    /// The samples taken: step and `[<dx^2>, <dy^2>, <dz^2>, total]`.
    pub fn samples(&self) -> &[(u64, [f64; 4])] {
        &self.samples
    }

    /// The samples as text: a comment line, then `step dx2 dy2 dz2 total`
    /// per sample (the columns of LAMMPS's `fix ave/time ... c_msd[*]`).
    pub fn to_text(&self) -> String {
        let mut text = String::from("# step dx2 dy2 dz2 total (LAMMPS compute msd, com no)\n");
        for (step, [x, y, z, t]) in &self.samples {
            // Writing to a String cannot fail.
            let _ = writeln!(text, "{step} {x} {y} {z} {t}");
        }
        text
    }

    /// Writes [`to_text`](Self::to_text) to `path`, atomically.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        write_atomically(path.as_ref(), self.to_text().as_bytes())
    }
}
