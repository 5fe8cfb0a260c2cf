//! The MD examples' trajectory and analysis outputs (`--dump`, `--rdf`,
//! `--rdf-plot`, `--msd`; `lj_melt` and `md` through `md_run.rs`): checked
//! before the run, fed at each stop of the stepping loop, written at the end.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use nbody_host::Simulation;
use nbody_host::analysis::{Msd, Rdf, RdfTable};
use nbody_host::trajectory::{Format, Frame, TrajectoryWriter, WriterOptions};

use super::md_run::MdOutputFlags;
use super::usage;

/// The trajectory and analysis outputs (`--dump`, `--rdf`, `--msd`), as
/// the command line asks for them, checked before the run.
pub struct Outputs {
    dump: Option<(PathBuf, Format, WriterOptions)>,
    writer: Option<TrajectoryWriter>,
    rdf: Option<(PathBuf, Rdf)>,
    msd: Option<(PathBuf, Option<Msd>)>,
    /// Steps between g(r) and MSD samples.
    every: u64,
    /// `--rdf-plot`, and LAMMPS's `(r, g)` to draw beside ours.
    rdf_plot: Option<PathBuf>,
    lammps_rdf: Vec<(f64, f64)>,
}

/// LAMMPS's g(r): rows of two numbers, `r g`.
fn read_lammps_rdf(path: &Path) -> Result<Vec<(f64, f64)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--lammps-rdf {}", path.display()))?;
    let rows: Vec<(f64, f64)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let w: Vec<f64> = l
                .split_whitespace()
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            (w.len() == 2).then(|| (w[0], w[1]))
        })
        .collect();
    if rows.is_empty() {
        bail!(
            "--lammps-rdf {}: no rows of two numbers (r g)",
            path.display()
        );
    }
    Ok(rows)
}

/// g(r): ours solid, LAMMPS's dashed.
fn plot_rdf(path: &Path, table: &RdfTable, lammps: &[(f64, f64)]) -> Result<()> {
    use nbody_host::render::{EnergySeries, line_plot};
    let mut series = vec![EnergySeries {
        label: "g(r), ours".into(),
        points: table
            .r
            .iter()
            .copied()
            .zip(table.g[0].iter().copied())
            .collect(),
    }];
    if !lammps.is_empty() {
        series.push(EnergySeries {
            label: "g(r), LAMMPS compute rdf on the same frames (dashed)".into(),
            points: lammps.to_vec(),
        });
    }
    line_plot(
        path,
        "radial distribution function",
        ("r (sigma)", "g(r)"),
        &series,
        (900, 560),
    )?;
    Ok(())
}

impl Outputs {
    /// Checks the flags (the format, the bins and cutoff), before any work:
    /// `dt` the time step, `cutoff` g(r)'s without `--rdf-cutoff`, `pairs`
    /// its type pairs (from 0; empty: all atoms).
    pub fn new(cli: &MdOutputFlags, dt: f64, cutoff: f64, pairs: &[(u32, u32)]) -> Result<Outputs> {
        let dump = match &cli.dump {
            Some(path) => {
                let format = Format::from_path(path).map_err(|e| usage(format!("--dump: {e}")))?;
                if format == Format::Dcd && cli.dump_velocities {
                    return Err(usage(format!(
                        "--dump-velocities: {} is a DCD file, which holds positions only: use \
                         .xyz or .lammpstrj",
                        path.display()
                    )));
                }
                let options = WriterOptions {
                    unwrapped: cli.dump_unwrapped,
                    velocities: cli.dump_velocities,
                    every: cli.dump_every,
                    dt,
                };
                Some((path.clone(), format, options))
            }
            None => None,
        };
        let rdf = match &cli.rdf {
            Some(path) => {
                let cutoff = cli.rdf_cutoff.unwrap_or(cutoff);
                let rdf = Rdf::new(cli.rdf_bins, cutoff, pairs).context("--rdf")?;
                Some((path.clone(), rdf))
            }
            None => None,
        };
        Ok(Outputs {
            dump,
            writer: None,
            rdf,
            msd: cli.msd.clone().map(|path| (path, None)),
            every: cli.rdf_every.unwrap_or(cli.dump_every),
            rdf_plot: cli.rdf_plot.clone(),
            lammps_rdf: match &cli.lammps_rdf {
                Some(path) => read_lammps_rdf(path)?,
                None => Vec::new(),
            },
        })
    }

    /// Checks the g(r) cutoff against the box, creates the trajectory and
    /// takes the first frame (the dump's first, the MSD's reference).
    pub fn start(&mut self, sim: &Simulation) -> Result<()> {
        if let Some((_, rdf)) = &self.rdf
            && let Some(lengths) = sim.params().boundary().lengths()
        {
            rdf.check_box(lengths).context("--rdf")?;
        }
        if self.dump.is_none() && self.msd.is_none() {
            return Ok(());
        }
        let frame = Frame::of(sim)?;
        if let Some((path, format, options)) = &self.dump {
            let mut writer = TrajectoryWriter::create(path, *format, *options)?;
            writer.append(&frame)?;
            self.writer = Some(writer);
        }
        if let Some((_, msd)) = &mut self.msd {
            let mut reference = Msd::new(&frame);
            reference.sample(&frame)?;
            *msd = Some(reference);
        }
        Ok(())
    }

    /// The steps at which to stop for them.
    pub fn stops(&self) -> Vec<u64> {
        let mut stops = Vec::new();
        if self.dump.is_some() {
            stops.push(self.dump.as_ref().map_or(1, |d| d.2.every));
        }
        if self.rdf.is_some() || self.msd.is_some() {
            stops.push(self.every);
        }
        stops
    }

    /// At step `step` of a run: a frame, a g(r) sample, an MSD row, as due.
    pub fn at(&mut self, sim: &Simulation, step: u64) -> Result<()> {
        let dump_due = self
            .dump
            .as_ref()
            .is_some_and(|d| step.is_multiple_of(d.2.every));
        let sample_due = step.is_multiple_of(self.every);
        if !(dump_due || sample_due && (self.rdf.is_some() || self.msd.is_some())) {
            return Ok(());
        }
        let frame = Frame::of(sim)?;
        if dump_due && let Some(writer) = &mut self.writer {
            writer.append(&frame)?;
        }
        if sample_due {
            if let Some((_, rdf)) = &mut self.rdf {
                rdf.add(&frame).context("--rdf")?;
            }
            if let Some((_, Some(msd))) = &mut self.msd {
                msd.sample(&frame)?;
            }
        }
        Ok(())
    }

    /// Writes the g(r) table and the MSD rows.
    pub fn finish(&self, out: &mut dyn Write) -> Result<()> {
        if let Some((path, writer)) = self.dump.as_ref().zip(self.writer.as_ref()) {
            writeln!(
                out,
                "wrote {} ({} frames, {})",
                path.0.display(),
                writer.frames(),
                writer.format().name()
            )?;
        }
        if let Some((path, rdf)) = &self.rdf {
            rdf.table().write(path)?;
            writeln!(
                out,
                "wrote {} (g(r), {} frames)",
                path.display(),
                rdf.frames()
            )?;
            if let Some(png) = &self.rdf_plot {
                plot_rdf(png, &rdf.table(), &self.lammps_rdf)?;
                writeln!(out, "wrote {}", png.display())?;
            }
        }
        if let Some((path, Some(msd))) = &self.msd {
            msd.write(path)?;
            writeln!(out, "wrote {} (mean-squared displacement)", path.display())?;
        }
        Ok(())
    }
}
