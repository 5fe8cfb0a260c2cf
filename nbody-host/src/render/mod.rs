//! Pictures of a simulation (feature `render`): additive point splatting
//! through an orthographic or perspective [`Camera`], animated GIFs, PNG
//! frames and energy-error plots.
//!
//! Rendering runs on the host from a copied-back state, so a [`Recorder`]
//! steps the simulation `every` steps at a time and reads the state only
//! between those batches: the device keeps running at full speed in between.
//! Everything here is deterministic: the same positions give the same bytes.
//!
//! ```
//! use nbody_host::render::{Camera, Recorder, Renderer};
//! use nbody_host::{Backend, Simulation, ic};
//!
//! let bodies = ic::collision(512, 1);
//! let camera = Camera::fit(&bodies.positions, glam::Vec3::NEG_Z, 1.2)?;
//! let renderer = Renderer::new(camera, 96, 64)?
//!     .group(0..256, [255, 140, 60])
//!     .group(256..512, [80, 160, 255]);
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("collision.gif");
//! let mut sim = Simulation::builder(bodies).dt(0.01).backend(Backend::cpu()).build()?;
//! let mut recorder = Recorder::new(renderer, 5)?.gif(&path)?;
//! recorder.run(&mut sim, 20)?; // 4 batches of 5 steps, 5 frames with the first
//! assert_eq!(recorder.finish()?, 5);
//! assert!(path.exists());
//! # Ok::<(), nbody_host::Error>(())
//! ```
//!
//! The parts: `camera.rs` (camera and projection), `splat.rs` (frames,
//! splatting, the renderer), `image.rs` (8-bit images, PNG), `gif_writer.rs`
//! (animated GIFs), `recorder.rs` (frames from a running simulation),
//! `annotate.rs` (a frame's caption, time and scale bar),
//! `plot.rs` (energy plots and bar charts). Files are written through
//! [`snapshot`](crate::snapshot)'s atomic writer, like every file of the crate.

use crate::error::{Error, Result};

mod annotate;
mod camera;
mod gif_writer;
mod image;
mod plot;
mod recorder;
mod splat;

pub use camera::{Camera, Projection};
pub use gif_writer::GifWriter;
pub use image::Image;
pub use plot::{Bar, EnergySeries, bar_chart, energy_plot, line_plot, line_plot_panels};
pub use recorder::Recorder;
pub use splat::{Frame, Renderer};

/// Largest image side accepted, in pixels (GIF stores sizes as 16-bit).
pub const MAX_SIDE: u32 = 8192;

/// An [`Error::InvalidRenderSetting`]: `what` = `value` breaks `requirement`.
fn invalid(what: &'static str, value: impl std::fmt::Display, requirement: &'static str) -> Error {
    Error::InvalidRenderSetting {
        what,
        value: value.to_string(),
        requirement,
    }
}

/// Image sides must be 1..=[`MAX_SIDE`] pixels.
fn check_size(width: u32, height: u32) -> Result<()> {
    for (what, v) in [("width", width), ("height", height)] {
        if v == 0 || v > MAX_SIDE {
            return Err(invalid(what, v, "must be in 1..=8192 pixels"));
        }
    }
    Ok(())
}
