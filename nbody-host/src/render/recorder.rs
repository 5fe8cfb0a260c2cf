//! The [`Recorder`]: steps a simulation in batches and renders a frame
//! between them, to a GIF and/or numbered PNG files.

use std::path::{Path, PathBuf};

use super::{GifWriter, Image, Renderer, invalid};
use crate::error::{Error, Result};
use crate::simulation::Simulation;

/// Records a simulation: steps it `every` steps at a time, copying the state
/// back and rendering a frame only between batches, into an animated GIF
/// and/or numbered PNG frames.
#[derive(Debug)]
pub struct Recorder {
    renderer: Renderer,
    every: u64,
    gif: Option<GifWriter>,
    frames_dir: Option<PathBuf>,
    frames: usize,
    last: Option<Image>,
    /// The caption of every frame, with the time and a scale bar.
    caption: Option<String>,
}

impl Recorder {
    /// A recorder taking a frame every `every` (>= 1) steps; add outputs
    /// with [`Recorder::gif`] and [`Recorder::png_frames`].
    pub fn new(renderer: Renderer, every: u64) -> Result<Recorder> {
        if every == 0 {
            return Err(invalid("frame interval", every, "must be >= 1 step"));
        }
        Ok(Recorder {
            renderer,
            every,
            gif: None,
            frames_dir: None,
            frames: 0,
            last: None,
            caption: None,
        })
    }

    /// Labels every frame: `caption` at the top left (say, `N` and the
    /// integrator), the simulated time under it, and, for an orthographic
    /// camera, a scale bar of a round length in the simulation's units.
    ///
    /// ```
    /// use nbody_host::render::{Camera, Recorder, Renderer};
    /// use nbody_host::{Backend, Simulation, ic};
    ///
    /// let bodies = ic::plummer(256, 1);
    /// let camera = Camera::fit(&bodies.positions, glam::Vec3::NEG_Z, 1.2)?;
    /// let mut sim = Simulation::builder(bodies).backend(Backend::cpu()).build()?;
    /// let mut plain = Recorder::new(Renderer::new(camera, 160, 120)?, 1)?;
    /// let mut labelled = Recorder::new(Renderer::new(camera, 160, 120)?, 1)?
    ///     .caption("N = 256, semi-implicit Euler");
    /// plain.capture(&mut sim)?;
    /// labelled.capture(&mut sim)?;
    /// assert_ne!(plain.last_image(), labelled.last_image());
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn caption(mut self, caption: impl Into<String>) -> Recorder {
        self.caption = Some(caption.into());
        self
    }

    /// Also writes an animated GIF at `path` (25 frames per second).
    pub fn gif(mut self, path: impl AsRef<Path>) -> Result<Recorder> {
        let (w, h) = self.renderer.size();
        self.gif = Some(GifWriter::create(path, w, h, 4)?);
        Ok(self)
    }

    /// Also writes each frame as `dir/frame_00000.png`, ... (`dir` must exist).
    pub fn png_frames(mut self, dir: impl AsRef<Path>) -> Result<Recorder> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            return Err(Error::Io {
                path: dir.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "not a directory (create it first)",
                ),
            });
        }
        self.frames_dir = Some(dir.to_path_buf());
        Ok(self)
    }

    /// Copies the state back and renders one frame to every output.
    pub fn capture(&mut self, sim: &mut Simulation) -> Result<()> {
        let state = sim.state()?;
        let mut image = self.renderer.render(&state.bodies.positions);
        if let Some(caption) = &self.caption {
            super::annotate::annotate(&mut image, self.renderer.camera(), caption, state.time)?;
        }
        if let Some(gif) = &mut self.gif {
            gif.push(&image)?;
        }
        if let Some(dir) = &self.frames_dir {
            image.save_png(dir.join(format!("frame_{:05}.png", self.frames)))?;
        }
        self.frames += 1;
        self.last = Some(image);
        Ok(())
    }

    /// Runs `steps` steps, capturing a frame before the first batch (if none
    /// was taken yet) and after every batch of `every` steps (the last batch
    /// may be shorter).
    pub fn run(&mut self, sim: &mut Simulation, steps: u64) -> Result<()> {
        if self.frames == 0 {
            self.capture(sim)?;
        }
        let mut left = steps;
        while left > 0 {
            let batch = left.min(self.every);
            sim.step(batch)?;
            left -= batch;
            self.capture(sim)?;
        }
        Ok(())
    }

    /// Frames captured so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The most recent frame (e.g. to save a still).
    pub fn last_image(&self) -> Option<&Image> {
        self.last.as_ref()
    }

    /// Finishes the GIF (renaming it into place); returns the frame count.
    pub fn finish(self) -> Result<usize> {
        if let Some(gif) = self.gif {
            gif.finish()?;
        }
        Ok(self.frames)
    }
}
