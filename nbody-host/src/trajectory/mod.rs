//! Trajectories: frames of a periodic short-range run appended to a file
//! that the usual analysis tools read, one file per format:
//!
//! | format | file | read by | what |
//! | --- | --- | --- | --- |
//! | [`Format::Xyz`] | `xyz.rs` | ASE, OVITO, MDAnalysis (positions) | extended XYZ: text, `Lattice=` and `Properties=` per frame, types `1, 2, ..` as LAMMPS's `dump xyz` |
//! | [`Format::Dcd`] | `dcd.rs` | MDAnalysis, mdtraj, VMD | CHARMM/LAMMPS binary, as LAMMPS's `dump dcd` writes it: `f32` coordinates, the unit cell per frame |
//! | [`Format::LammpsDump`] | `lammps_dump.rs` | LAMMPS `rerun`/`read_dump`, OVITO, MDAnalysis | LAMMPS's text `dump custom`: `id type x y z ix iy iz [vx vy vz]`, exact `f32` positions with the image counters |
//!
//! A [`Frame`] is what a driver takes from a [`Simulation`] at a dump step
//! ([`Frame::of`]): the box of that step (an NPT run changes it), wrapped
//! positions, image counters, velocities and types in the user's order.
//! The analysis of [`crate::analysis`] reads the same frames.
//!
//! Every append writes one whole frame, syncs it, then (DCD) updates the
//! header's frame count: a failed append cuts the file back to the last
//! whole frame, and a run that fails between appends leaves a valid file of
//! the frames written so far. (A run killed in the middle of an append
//! leaves those frames whole, then a partial one; DCD's header counts only
//! the whole ones.) The file is created as every file of the
//! library (`snapshot`: through symlinks, never over a directory or device);
//! [`crate::snapshot::check_output_path`] checks a path before a run.
//!
//! ```
//! use nbody_host::trajectory::{Format, Frame, TrajectoryWriter, WriterOptions};
//! use nbody_host::{Backend, ForceLaw, Neighbours, Simulation, ic, Integrator};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let (atoms, boundary) = ic::fcc_lattice(4, 0.8442, 1.44, 1)?;
//! let mut sim = Simulation::builder(atoms)
//!     .force(ForceLaw::lennard_jones(1.0, 1.0, 2.5, false)?)
//!     .boundary(boundary)
//!     .neighbours(Neighbours::cells(0.3))
//!     .integrator(Integrator::VELOCITY_VERLET)
//!     .dt(0.005)
//!     .backend(Backend::cpu())
//!     .build()?;
//! let path = dir.path().join("run.dcd");
//! let mut dcd = TrajectoryWriter::create(&path, Format::from_path(&path)?, WriterOptions::default())?;
//! for _ in 0..3 {
//!     dcd.append(&Frame::of(&sim)?)?; // steps 0, 10, 20
//!     sim.step(10)?;
//! }
//! assert_eq!(dcd.frames(), 3);
//! # Ok::<(), nbody_host::Error>(())
//! ```

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::md::Boundary;
use crate::simulation::Simulation;
use crate::snapshot::{resolve_target, write_atomically};

mod dcd;
mod lammps_dump;
mod xyz;

/// One frame of a periodic run: what a trajectory file and the analysis
/// ([`crate::analysis`]) read. Per-atom vectors are in the user's order;
/// `images`, `velocities` and `types` may be empty (all zero, none, all
/// type 0).
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Steps taken.
    pub step: u64,
    /// Simulated time.
    pub time: f64,
    /// The box `[0, Lx) x [0, Ly) x [0, Lz)` of this frame, as the engine
    /// uses it (the `f32` lengths, widened).
    pub lengths: [f64; 3],
    /// Wrapped positions, in the box.
    pub positions: Vec<[f32; 3]>,
    /// Image counters: the unwrapped position is `x + image * L`.
    pub images: Vec<[i32; 3]>,
    /// Velocities (empty: not recorded).
    pub velocities: Vec<[f32; 3]>,
    /// Atom types numbered from 0 (LAMMPS's `type - 1`).
    pub types: Vec<u32>,
}

impl Frame {
    /// The frame of `sim` now: its step, time, box, wrapped positions,
    /// image counters, velocities and types. An error for a run in open
    /// space (a trajectory here is of a periodic box).
    pub fn of(sim: &Simulation) -> Result<Frame> {
        let boundary = sim.params().boundary();
        let Some(lengths) = boundary.lengths_f32() else {
            return Err(Error::InvalidCombination(
                "a trajectory frame needs a periodic box (Boundary::Periodic); this run is in \
                 open space"
                    .into(),
            ));
        };
        let bodies = sim.bodies()?;
        let frame = Frame {
            step: sim.steps_done(),
            time: sim.time(),
            lengths: lengths.map(f64::from),
            positions: bodies.positions.iter().map(|p| p.to_array()).collect(),
            images: sim.images()?.unwrap_or_default(),
            velocities: bodies.velocities.iter().map(|v| v.to_array()).collect(),
            types: sim.types()?,
        };
        frame.validate()?;
        Ok(frame)
    }

    /// Number of atoms.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether the frame has no atoms.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Atom `i`'s type (0 where none are given).
    pub fn type_of(&self, i: usize) -> u32 {
        self.types.get(i).copied().unwrap_or(0)
    }

    /// Atom `i`'s image counters (zero where none are given).
    pub fn image(&self, i: usize) -> [i32; 3] {
        self.images.get(i).copied().unwrap_or([0; 3])
    }

    /// Atom `i`'s unwrapped position `x + image * L`, in `f64` (LAMMPS's
    /// `domain->unmap`).
    pub fn unwrapped(&self, i: usize) -> [f64; 3] {
        let (p, m) = (self.positions[i], self.image(i));
        std::array::from_fn(|k| f64::from(p[k]) + f64::from(m[k]) * self.lengths[k])
    }

    /// Checks the frame: a box of finite lengths `> 0`, finite positions,
    /// and per-atom vectors of the positions' length (or empty).
    pub fn validate(&self) -> Result<()> {
        Boundary::Periodic {
            lengths: self.lengths,
        }
        .validate()?;
        let n = self.positions.len();
        for (what, len) in [
            ("image counters", self.images.len()),
            ("velocities", self.velocities.len()),
            ("types", self.types.len()),
        ] {
            if len != 0 && len != n {
                return Err(Error::InvalidCombination(format!(
                    "a trajectory frame of {n} atoms has {len} {what} (0 or {n} expected)"
                )));
            }
        }
        let bad = |index, quantity, value| Error::NonFiniteInput {
            index,
            quantity,
            value,
        };
        for (i, p) in self.positions.iter().enumerate() {
            if !p.iter().all(|x| x.is_finite()) {
                return Err(bad(i, "position", *p));
            }
        }
        for (i, v) in self.velocities.iter().enumerate() {
            if !v.iter().all(|x| x.is_finite()) {
                return Err(bad(i, "velocity", *v));
            }
        }
        Ok(())
    }
}

/// A trajectory file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Extended XYZ (text).
    Xyz,
    /// CHARMM/LAMMPS DCD (binary, `f32`).
    Dcd,
    /// LAMMPS's text dump (`dump custom`).
    LammpsDump,
}

impl Format {
    /// The format a file name asks for: `.xyz`, `.dcd`, or `.lammpstrj`
    /// (also `.dump`, `.lammps`); anything else is an error naming the path.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Format> {
        let path = path.as_ref();
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("xyz") => Ok(Format::Xyz),
            Some("dcd") => Ok(Format::Dcd),
            Some("lammpstrj" | "dump" | "lammps") => Ok(Format::LammpsDump),
            _ => Err(Error::InvalidCombination(format!(
                "{}: unknown trajectory format: name the file .xyz (extended XYZ), .dcd (DCD) or \
                 .lammpstrj (LAMMPS dump)",
                path.display()
            ))),
        }
    }

    /// `"xyz"`, `"dcd"` or `"lammpstrj"`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Xyz => "xyz",
            Format::Dcd => "dcd",
            Format::LammpsDump => "lammpstrj",
        }
    }
}

/// How frames are written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WriterOptions {
    /// Unwrapped positions `x + image * L` (LAMMPS's `dump_modify unwrap
    /// yes`, `xu yu zu`) instead of the wrapped ones. The LAMMPS dump always
    /// writes both views exactly (`x y z ix iy iz`) and ignores it.
    pub unwrapped: bool,
    /// Velocities too (XYZ: `vel:R:3`; LAMMPS dump: `vx vy vz`); DCD has none.
    pub velocities: bool,
    /// Steps between frames, for DCD's header (`NSAVC`; readers take the
    /// frames' times from it).
    pub every: u64,
    /// The time step, for DCD's header (`DELTA`).
    pub dt: f64,
}

impl Default for WriterOptions {
    /// Wrapped positions, no velocities, a frame every step, `dt = 0`.
    fn default() -> WriterOptions {
        WriterOptions {
            unwrapped: false,
            velocities: false,
            every: 1,
            dt: 0.0,
        }
    }
}

/// Appends frames to a trajectory file ([`Format`]).
#[derive(Debug)]
pub struct TrajectoryWriter {
    format: Format,
    options: WriterOptions,
    file: AppendFile,
    frames: usize,
    /// Atoms per frame (DCD: fixed by its header).
    atoms: Option<usize>,
    last_step: Option<u64>,
}

impl TrajectoryWriter {
    /// Creates an empty trajectory at `path`, replacing a file there (a DCD
    /// file gets its header with the first frame, which fixes `N`).
    pub fn create(
        path: impl AsRef<Path>,
        format: Format,
        options: WriterOptions,
    ) -> Result<TrajectoryWriter> {
        if format == Format::Dcd && options.velocities {
            return Err(Error::InvalidCombination(
                "a DCD trajectory holds positions only: velocities need .xyz or .lammpstrj".into(),
            ));
        }
        Ok(TrajectoryWriter {
            format,
            options,
            file: AppendFile::create(path.as_ref())?,
            frames: 0,
            atoms: None,
            last_step: None,
        })
    }

    /// The file's format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Frames written.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The step of the last frame written.
    pub fn last_step(&self) -> Option<u64> {
        self.last_step
    }

    /// Appends one frame (checked first: [`Frame::validate`], steps
    /// increasing, a DCD's `N` fixed, velocities present if asked for).
    /// On an error nothing of the frame stays in the file.
    pub fn append(&mut self, frame: &Frame) -> Result<()> {
        let path = &self.file.path;
        frame.validate()?;
        if let Some(last) = self.last_step
            && frame.step <= last
        {
            return Err(Error::InvalidCombination(format!(
                "{}: cannot append step {} after step {last}: a trajectory's steps increase",
                path.display(),
                frame.step
            )));
        }
        if self.options.velocities && frame.velocities.len() != frame.len() {
            return Err(Error::InvalidCombination(format!(
                "{}: velocities asked for, but the frame at step {} has none",
                path.display(),
                frame.step
            )));
        }
        if self.format == Format::Dcd
            && let Some(n) = self.atoms
            && n != frame.len()
        {
            return Err(Error::InvalidCombination(format!(
                "{}: a DCD file holds {n} atoms per frame; the frame at step {} has {}",
                path.display(),
                frame.step,
                frame.len()
            )));
        }
        let (bytes, patches) = match self.format {
            Format::Xyz => (xyz::encode(frame, &self.options), Vec::new()),
            Format::LammpsDump => (lammps_dump::encode(frame, &self.options), Vec::new()),
            Format::Dcd => {
                let mut bytes = Vec::new();
                if self.frames == 0 {
                    bytes = dcd::header(frame, &self.options);
                }
                bytes.extend(dcd::encode(frame, &self.options));
                let patches = if self.frames == 0 {
                    Vec::new()
                } else {
                    dcd::header_patches(self.frames + 1, frame.step)
                };
                (bytes, patches)
            }
        };
        self.file.append(&bytes, &patches)?;
        self.frames += 1;
        self.atoms = Some(frame.len());
        self.last_step = Some(frame.step);
        Ok(())
    }
}

/// A file written by whole appends: each append writes its bytes at the
/// end and syncs them, then overwrites fields of the header (`patches`:
/// offset, new bytes) and syncs again; a failure cuts the file back to its
/// previous end and restores the header fields.
#[derive(Debug)]
struct AppendFile {
    path: PathBuf,
    file: File,
    end: u64,
}

impl AppendFile {
    /// An empty file at `path`, created atomically (see `snapshot`), then
    /// opened to write.
    fn create(path: &Path) -> Result<AppendFile> {
        write_atomically(path, &[])?;
        let target = resolve_target(path)?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&target)
            .map_err(|source| Error::Io {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(AppendFile {
            path: path.to_path_buf(),
            file,
            end: 0,
        })
    }

    fn append(&mut self, bytes: &[u8], patches: &[(u64, Vec<u8>)]) -> Result<()> {
        let mut old = Vec::with_capacity(patches.len());
        let written = (|| -> std::io::Result<()> {
            self.file.seek(SeekFrom::Start(self.end))?;
            self.file.write_all(bytes)?;
            self.file.sync_data()?;
            for (offset, new) in patches {
                let mut was = vec![0; new.len()];
                self.file.seek(SeekFrom::Start(*offset))?;
                std::io::Read::read_exact(&mut self.file, &mut was)?;
                old.push((*offset, was));
                self.file.seek(SeekFrom::Start(*offset))?;
                self.file.write_all(new)?;
            }
            if !patches.is_empty() {
                self.file.sync_data()?;
            }
            Ok(())
        })();
        if let Err(source) = written {
            // Best effort: leave the file as it was before this append.
            for (offset, was) in &old {
                let _ = self
                    .file
                    .seek(SeekFrom::Start(*offset))
                    .and_then(|_| self.file.write_all(was));
            }
            let _ = self.file.set_len(self.end);
            let _ = self.file.sync_data();
            return Err(Error::Io {
                path: self.path.clone(),
                source,
            });
        }
        self.end += bytes.len() as u64;
        Ok(())
    }
}

/// `x` as the shortest decimal that reads back as the same `f64` (of
/// which the `f32` is one): a reader parsing it as `f32` or as `f64` (LAMMPS
/// does) gets exactly `x`, where `x`'s own shortest `f32` decimal would read
/// as a different `f64`.
fn f32_text(x: f32) -> String {
    format!("{}", f64::from(x))
}

/// Appends ` x` for each value (as [`f32_text`]) to a text frame's line.
fn push_f32s(text: &mut String, values: &[f32]) {
    for &x in values {
        text.push(' ');
        text.push_str(&f32_text(x));
    }
}

/// Atom `i`'s position as a file stores it: wrapped (exact), or unwrapped
/// (`x + image * L` in `f64`, rounded to `f32`, as LAMMPS's DCD does).
fn written_position(frame: &Frame, i: usize, unwrapped: bool) -> [f32; 3] {
    if unwrapped {
        frame.unwrapped(i).map(|x| x as f32)
    } else {
        frame.positions[i]
    }
}
