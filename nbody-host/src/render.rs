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

use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use glam::Vec3;

use crate::error::{Error, Result};
use crate::simulation::Simulation;

/// Largest image side accepted, in pixels (GIF stores sizes as 16-bit).
pub const MAX_SIDE: u32 = 8192;

fn invalid(what: &'static str, value: impl std::fmt::Display, requirement: &'static str) -> Error {
    Error::InvalidRenderSetting {
        what,
        value: value.to_string(),
        requirement,
    }
}

fn check_size(width: u32, height: u32) -> Result<()> {
    for (what, v) in [("width", width), ("height", height)] {
        if v == 0 || v > MAX_SIDE {
            return Err(invalid(what, v, "must be in 1..=8192 pixels"));
        }
    }
    Ok(())
}

/// How 3-D points map onto the image plane.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Projection {
    /// Parallel projection: sizes do not shrink with distance.
    Orthographic {
        /// Half the width of the view in simulation length units (the height
        /// follows from the image's aspect ratio).
        half_width: f32,
    },
    /// Pin-hole camera at `distance` behind the target, along the view direction.
    Perspective {
        /// Vertical field of view in degrees, in `(0, 180)`.
        fov_y_degrees: f32,
        /// Distance from the eye to the target.
        distance: f32,
    },
}

/// Where the picture is taken from: a target point, a view direction, an up
/// vector and a [`Projection`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    target: Vec3,
    forward: Vec3,
    right: Vec3,
    up: Vec3,
    projection: Projection,
}

impl Camera {
    /// A camera looking along `direction` at `target` with the given
    /// projection; "up" on the image is world `+y` (or `+z` when looking along `y`).
    pub fn new(target: Vec3, direction: Vec3, projection: Projection) -> Result<Camera> {
        if !target.is_finite() {
            return Err(invalid("camera target", target, "must be finite"));
        }
        let forward = direction.normalize_or_zero();
        if forward == Vec3::ZERO || !forward.is_finite() {
            return Err(invalid(
                "camera direction",
                direction,
                "must be finite and non-zero",
            ));
        }
        match projection {
            Projection::Orthographic { half_width } => {
                if !(half_width.is_finite() && half_width > 0.0) {
                    return Err(invalid("half_width", half_width, "must be finite and > 0"));
                }
            }
            Projection::Perspective {
                fov_y_degrees,
                distance,
            } => {
                if !(fov_y_degrees > 0.0 && fov_y_degrees < 180.0) {
                    return Err(invalid(
                        "fov_y_degrees",
                        fov_y_degrees,
                        "must be in (0, 180) degrees",
                    ));
                }
                if !(distance.is_finite() && distance > 0.0) {
                    return Err(invalid(
                        "camera distance",
                        distance,
                        "must be finite and > 0",
                    ));
                }
            }
        }
        let world_up = if forward.cross(Vec3::Y).length() > 1e-3 {
            Vec3::Y
        } else {
            Vec3::Z
        };
        let right = forward.cross(world_up).normalize();
        let up = right.cross(forward);
        Ok(Camera {
            target,
            forward,
            right,
            up,
            projection,
        })
    }

    /// An orthographic camera at `target` looking along `direction`, showing
    /// `half_width` length units either side of the target.
    pub fn orthographic(target: Vec3, direction: Vec3, half_width: f32) -> Result<Camera> {
        Camera::new(target, direction, Projection::Orthographic { half_width })
    }

    /// A perspective camera `distance` behind `target` along `direction`
    /// with a vertical field of view of `fov_y_degrees`.
    pub fn perspective(
        target: Vec3,
        direction: Vec3,
        distance: f32,
        fov_y_degrees: f32,
    ) -> Result<Camera> {
        Camera::new(
            target,
            direction,
            Projection::Perspective {
                fov_y_degrees,
                distance,
            },
        )
    }

    /// An orthographic camera framing `positions` (their centroid, and
    /// `margin` times the largest distance across the view), ignoring non-finite ones.
    pub fn fit(positions: &[Vec3], direction: Vec3, margin: f32) -> Result<Camera> {
        if !(margin.is_finite() && margin > 0.0) {
            return Err(invalid("margin", margin, "must be finite and > 0"));
        }
        let finite = || positions.iter().filter(|p| p.is_finite());
        let count = finite().count();
        if count == 0 {
            return Err(invalid(
                "positions",
                format!("{} points, none finite", positions.len()),
                "must contain a finite point to fit a camera",
            ));
        }
        let centre = finite().fold(Vec3::ZERO, |a, p| a + *p) / count as f32;
        // Orientation first (the extent is measured across the view).
        let probe = Camera::orthographic(centre, direction, 1.0)?;
        let extent = finite()
            .map(|p| {
                let d = *p - centre;
                d.dot(probe.right).abs().max(d.dot(probe.up).abs())
            })
            .fold(0.0f32, f32::max);
        let half_width = (extent * margin).max(f32::MIN_POSITIVE.sqrt());
        Camera::orthographic(centre, direction, half_width)
    }

    /// The projection in use.
    pub fn projection(&self) -> Projection {
        self.projection
    }

    /// Pixel coordinates of `p` on a `width` x `height` image (`x` to the
    /// right, `y` down, pixel `(i, j)` covering `[i, i+1) x [j, j+1)`), or
    /// `None` when `p` is not finite or behind a perspective camera.
    /// The result may lie outside the image.
    pub fn project(&self, p: Vec3, width: u32, height: u32) -> Option<(f32, f32)> {
        if !p.is_finite() {
            return None;
        }
        let d = p - self.target;
        let (x, y) = (d.dot(self.right), d.dot(self.up));
        let (w, h) = (width as f32, height as f32);
        let scale = match self.projection {
            Projection::Orthographic { half_width } => 0.5 * w / half_width,
            Projection::Perspective {
                fov_y_degrees,
                distance,
            } => {
                let depth = distance + d.dot(self.forward);
                if depth.is_nan() || depth <= 1e-6 * distance {
                    return None;
                }
                0.5 * h / (0.5 * fov_y_degrees.to_radians()).tan() / depth
            }
        };
        let (px, py) = (0.5 * w + x * scale, 0.5 * h - y * scale);
        (px.is_finite() && py.is_finite()).then_some((px, py))
    }
}

/// A linear-light RGB accumulation buffer: bodies add light, so dense
/// regions glow; [`Frame::tone_map`] turns it into 8-bit pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    width: u32,
    height: u32,
    light: Vec<[f32; 3]>,
}

impl Frame {
    /// A black `width` x `height` frame (each side 1..=[`MAX_SIDE`]).
    pub fn new(width: u32, height: u32) -> Result<Frame> {
        check_size(width, height)?;
        Ok(Frame {
            width,
            height,
            light: vec![[0.0; 3]; width as usize * height as usize],
        })
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The light accumulated at pixel `(x, y)`, or `None` outside the frame.
    pub fn pixel(&self, x: u32, y: u32) -> Option<[f32; 3]> {
        (x < self.width && y < self.height).then(|| self.light[(y * self.width + x) as usize])
    }

    /// Adds `colour` (an sRGB colour, as light of that hue) for each point
    /// of `positions` as seen by `camera`, spread bilinearly over the four
    /// nearest pixel centres. Points that are not finite, behind the camera
    /// or out of view are skipped; returns how many points landed.
    pub fn splat(&mut self, camera: &Camera, positions: &[Vec3], colour: [u8; 3]) -> usize {
        let light = linear(colour);
        let mut landed = 0;
        for &p in positions {
            if let Some((px, py)) = camera.project(p, self.width, self.height)
                && self.add(px, py, light)
            {
                landed += 1;
            }
        }
        landed
    }

    /// Bilinear splat at pixel coordinates `(px, py)`; `false` if it missed the frame.
    fn add(&mut self, px: f32, py: f32, light: [f32; 3]) -> bool {
        let (fx, fy) = (px - 0.5, py - 0.5);
        let (w, h) = (self.width as f32, self.height as f32);
        if !(fx > -1.0 && fy > -1.0 && fx < w && fy < h) {
            return false;
        }
        let (x0, y0) = (fx.floor(), fy.floor());
        let (tx, ty) = (fx - x0, fy - y0);
        for (dx, dy, weight) in [
            (0, 0, (1.0 - tx) * (1.0 - ty)),
            (1, 0, tx * (1.0 - ty)),
            (0, 1, (1.0 - tx) * ty),
            (1, 1, tx * ty),
        ] {
            let (x, y) = (x0 as i64 + dx, y0 as i64 + dy);
            if weight > 0.0 && x >= 0 && y >= 0 && x < self.width as i64 && y < self.height as i64 {
                let cell = &mut self.light[(y * self.width as i64 + x) as usize];
                for c in 0..3 {
                    cell[c] += weight * light[c];
                }
            }
        }
        true
    }

    /// 8-bit sRGB pixels: `1 - exp(-exposure * light)` per channel (soft
    /// saturation instead of clipping), then gamma-encoded.
    pub fn tone_map(&self, exposure: f32) -> Result<Image> {
        if !(exposure.is_finite() && exposure > 0.0) {
            return Err(invalid("exposure", exposure, "must be finite and > 0"));
        }
        Ok(self.tone_map_valid(exposure))
    }

    /// [`Frame::tone_map`] with an exposure already checked.
    fn tone_map_valid(&self, exposure: f32) -> Image {
        let rgb = self
            .light
            .iter()
            .flat_map(|cell| {
                cell.map(|v| {
                    let lin = 1.0 - (-exposure * v).exp();
                    (lin.clamp(0.0, 1.0).powf(1.0 / 2.2) * 255.0).round() as u8
                })
            })
            .collect();
        Image {
            width: self.width,
            height: self.height,
            rgb,
        }
    }
}

/// sRGB byte colour to linear light.
fn linear(c: [u8; 3]) -> [f32; 3] {
    c.map(|v| (v as f32 / 255.0).powf(2.2))
}

/// An 8-bit RGB image, row-major, 3 bytes per pixel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 3` bytes, top row first.
    pub rgb: Vec<u8>,
}

impl Image {
    /// Writes the image as a PNG, atomically (temporary file, then rename).
    pub fn save_png(&self, path: impl AsRef<Path>) -> Result<()> {
        let expected = self.width as usize * self.height as usize * 3;
        check_size(self.width, self.height)?;
        if self.rgb.len() != expected {
            return Err(invalid(
                "image bytes",
                self.rgb.len(),
                "must be width * height * 3",
            ));
        }
        write_atomically(path.as_ref(), |w| {
            let mut encoder = png::Encoder::new(w, self.width, self.height);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
            writer
                .write_image_data(&self.rgb)
                .map_err(std::io::Error::other)?;
            writer.finish().map_err(std::io::Error::other)
        })
    }
}

/// Writes `path` through a temporary file in the same directory, renamed
/// over `path` only once `write` succeeded: readers never see a partial file.
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&File>) -> std::io::Result<()>,
) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = temp_beside(path)?;
    {
        let mut w = BufWriter::new(tmp.as_file());
        write(&mut w).map_err(io)?;
        w.flush().map_err(io)?;
    }
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

fn temp_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".nbody-render-");
    // Like any new file (0666 less the umask), not the temporary file's 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder.tempfile_in(dir).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            e.kind(),
            format!("cannot create a file in {}: {}", dir.display(), e.kind()),
        ),
    })
}

/// Turns positions into images: a camera, an image size, a colour per
/// group of bodies (index ranges) and an exposure.
#[derive(Clone, Debug, PartialEq)]
pub struct Renderer {
    camera: Camera,
    width: u32,
    height: u32,
    groups: Vec<(Range<usize>, [u8; 3])>,
    exposure: Option<f32>,
}

/// Colour of bodies in no group.
const DEFAULT_COLOUR: [u8; 3] = [255, 255, 255];

impl Renderer {
    /// A renderer of `width` x `height` images through `camera`; all bodies
    /// white until [`Renderer::group`] says otherwise.
    pub fn new(camera: Camera, width: u32, height: u32) -> Result<Renderer> {
        check_size(width, height)?;
        Ok(Renderer {
            camera,
            width,
            height,
            groups: Vec::new(),
            exposure: None,
        })
    }

    /// Draws bodies `range` in `colour` (sRGB). The first group that
    /// contains a body decides its colour; bodies in none are white.
    pub fn group(mut self, range: Range<usize>, colour: [u8; 3]) -> Renderer {
        self.groups.push((range, colour));
        self
    }

    /// Fixes the exposure (see [`Frame::tone_map`]). By default it is
    /// `0.02 * pixels / N`: a lone body shows its colour, dense cores glow
    /// white, and the overall brightness does not depend on N.
    pub fn exposure(mut self, exposure: f32) -> Result<Renderer> {
        if !(exposure.is_finite() && exposure > 0.0) {
            return Err(invalid("exposure", exposure, "must be finite and > 0"));
        }
        self.exposure = Some(exposure);
        Ok(self)
    }

    /// The camera.
    pub fn camera(&self) -> &Camera {
        &self.camera
    }

    /// Image size `(width, height)` in pixels.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// Splats `positions` (non-finite ones skipped) into an accumulation frame.
    pub fn frame(&self, positions: &[Vec3]) -> Frame {
        let mut frame = Frame {
            width: self.width,
            height: self.height,
            light: vec![[0.0; 3]; self.width as usize * self.height as usize],
        };
        let colours: Vec<[f32; 3]> = self.groups.iter().map(|g| linear(g.1)).collect();
        let white = linear(DEFAULT_COLOUR);
        for (i, &p) in positions.iter().enumerate() {
            let light = self
                .groups
                .iter()
                .position(|g| g.0.contains(&i))
                .map_or(white, |k| colours[k]);
            if let Some((px, py)) = self.camera.project(p, self.width, self.height) {
                frame.add(px, py, light);
            }
        }
        frame
    }

    /// Renders `positions` to an 8-bit image.
    pub fn render(&self, positions: &[Vec3]) -> Image {
        let exposure = self.exposure.unwrap_or_else(|| {
            0.02 * (self.width as f32 * self.height as f32) / positions.len().max(1) as f32
        });
        // Finite and > 0: validated, or computed from sizes >= 1.
        self.frame(positions).tone_map_valid(exposure)
    }
}

/// An animated GIF being written: frames go to a temporary file beside the
/// target, renamed onto it by [`GifWriter::finish`] (dropped unfinished, it
/// leaves nothing behind).
pub struct GifWriter {
    path: PathBuf,
    width: u16,
    height: u16,
    delay_centis: u16,
    frames: usize,
    encoder: gif::Encoder<BufWriter<tempfile::NamedTempFile>>,
}

impl std::fmt::Debug for GifWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GifWriter")
            .field("path", &self.path)
            .field("size", &(self.width, self.height))
            .field("frames", &self.frames)
            .finish()
    }
}

impl GifWriter {
    /// Starts a looping GIF of `width` x `height` frames shown
    /// `delay_centis` hundredths of a second each. Fails at once (with
    /// [`Error::Io`]) if the target directory cannot hold a file.
    pub fn create(
        path: impl AsRef<Path>,
        width: u32,
        height: u32,
        delay_centis: u16,
    ) -> Result<GifWriter> {
        let path = path.as_ref().to_path_buf();
        check_size(width, height)?;
        let tmp = temp_beside(&path)?;
        let (w, h) = (width as u16, height as u16);
        let gif_error = |e: gif::EncodingError| Error::Io {
            path: path.clone(),
            source: std::io::Error::other(e),
        };
        let mut encoder = gif::Encoder::new(BufWriter::new(tmp), w, h, &[]).map_err(gif_error)?;
        encoder
            .set_repeat(gif::Repeat::Infinite)
            .map_err(gif_error)?;
        Ok(GifWriter {
            path,
            width: w,
            height: h,
            delay_centis,
            frames: 0,
            encoder,
        })
    }

    /// Appends a frame (colours quantised to a 256-colour palette of its own).
    pub fn push(&mut self, image: &Image) -> Result<()> {
        if (image.width, image.height) != (self.width as u32, self.height as u32)
            || image.rgb.len() != image.width as usize * image.height as usize * 3
        {
            return Err(invalid(
                "frame size",
                format!(
                    "{}x{} ({} bytes)",
                    image.width,
                    image.height,
                    image.rgb.len()
                ),
                "must match the GIF's size, 3 bytes per pixel",
            ));
        }
        let mut frame = gif::Frame::from_rgb_speed(self.width, self.height, &image.rgb, 10);
        frame.delay = self.delay_centis;
        self.encoder.write_frame(&frame).map_err(|e| Error::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Finishes the file and renames it onto the target; returns the frame count.
    pub fn finish(self) -> Result<usize> {
        let path = self.path;
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        if self.frames == 0 {
            return Err(invalid("frames", 0, "a GIF needs at least one frame"));
        }
        let tmp = self
            .encoder
            .into_inner()
            .map_err(|e| io(std::io::Error::other(e)))?
            .into_inner()
            .map_err(|e| io(e.into_error()))?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(&path).map_err(|e| io(e.error))?;
        Ok(self.frames)
    }
}

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
        })
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
        let image = self.renderer.render(&state.bodies.positions);
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

/// The size limits shared by the plots.
fn check_plot_size(width: u32, height: u32) -> Result<()> {
    if !(200..=MAX_SIDE).contains(&width) || !(150..=MAX_SIDE).contains(&height) {
        return Err(invalid(
            "plot size",
            format!("{width}x{height}"),
            "must be at least 200x150 and at most 8192 pixels a side",
        ));
    }
    Ok(())
}

/// Runs `draw` on a white `width` x `height` canvas with the embedded font
/// registered, then writes the PNG atomically; a drawing error becomes
/// [`Error::Io`] naming `path`.
fn draw_png(
    path: &Path,
    (width, height): (u32, u32),
    draw: impl FnOnce(
        &plotters::drawing::DrawingArea<
            plotters::prelude::BitMapBackend<'_>,
            plotters::coord::Shift,
        >,
    ) -> std::result::Result<(), String>,
) -> Result<()> {
    use plotters::prelude::*;

    register_font();
    let plot_error = |e: String| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!("drawing the plot: {e}")),
    };
    let mut rgb = vec![0u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_error(e.to_string()))?;
        draw(&root).map_err(plot_error)?;
        root.present().map_err(|e| plot_error(e.to_string()))?;
    }
    Image { width, height, rgb }.save_png(path)
}

/// One line of an [`energy_plot`]: a label and `(time, relative error)` points.
#[derive(Clone, Debug, PartialEq)]
pub struct EnergySeries {
    /// Legend text.
    pub label: String,
    /// `(t, |E(t) - E0| / |E0|)` pairs.
    pub points: Vec<(f64, f64)>,
}

/// The embedded label font: an ASCII subset of DejaVu Sans (licence in
/// `assets/DejaVuSans-LICENSE.txt`), so plots need no system fonts.
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The embedded font is valid (a test draws labels with it).
        let _ =
            plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, FONT);
    });
}

/// Line colours of successive series (colour-blind safe: blue, orange, green, ...).
const SERIES_COLOURS: [(u8, u8, u8); 5] = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (86, 180, 233),
];

/// Plots relative energy error against time, log `y`, to a PNG of
/// `width` x `height` pixels (written atomically). Points with an error of
/// zero cannot be shown on a log axis and are left out; non-finite points
/// are an error.
pub fn energy_plot(
    path: impl AsRef<Path>,
    title: &str,
    series: &[EnergySeries],
    (width, height): (u32, u32),
) -> Result<()> {
    use plotters::prelude::*;

    let path = path.as_ref();
    check_plot_size(width, height)?;
    if series.is_empty() {
        return Err(invalid("series", 0, "a plot needs at least one series"));
    }
    for s in series {
        if let Some((i, p)) = s
            .points
            .iter()
            .enumerate()
            .find(|(_, (t, e))| !(t.is_finite() && e.is_finite() && *e >= 0.0))
        {
            return Err(invalid(
                "energy series point",
                format!("{:?}[{i}] = {p:?}", s.label),
                "must have finite time and finite error >= 0",
            ));
        }
    }
    let shown = |s: &EnergySeries| -> Vec<(f64, f64)> {
        s.points.iter().copied().filter(|p| p.1 > 0.0).collect()
    };
    let all: Vec<(f64, f64)> = series.iter().flat_map(shown).collect();
    if all.is_empty() {
        return Err(invalid(
            "series",
            format!("{} series", series.len()),
            "need at least one point with error > 0 for a log axis",
        ));
    }
    let t0 = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(f64::INFINITY, f64::min);
    let t1 = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(f64::NEG_INFINITY, f64::max);
    let t1 = if t1 > t0 { t1 } else { t0 + 1.0 };
    let lo = all.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = all.iter().map(|p| p.1).fold(0.0, f64::max);
    // Whole decades around the data.
    let (lo, hi) = (
        10f64.powf(lo.log10().floor()),
        10f64.powf(hi.log10().ceil().max(lo.log10().floor() + 1.0)),
    );

    draw_png(path, (width, height), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 22))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(78)
            .build_cartesian_2d(t0..t1, (lo..hi).log_scale())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("time (N-body units)")
            .y_desc("|E(t) - E0| / |E0|")
            .x_label_formatter(&|v| {
                // Shortest of up to 3 decimals: "2", "0.5", "0.25".
                let text = format!("{v:.3}");
                text.trim_end_matches('0').trim_end_matches('.').to_string()
            })
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 18))
            .draw()
            .map_err(|e| e.to_string())?;
        for (k, s) in series.iter().enumerate() {
            let (r, g, b) = SERIES_COLOURS[k % SERIES_COLOURS.len()];
            let style = RGBColor(r, g, b).stroke_width(2);
            chart
                .draw_series(LineSeries::new(shown(s), style))
                .map_err(|e| e.to_string())?
                .label(s.label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
        }
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 16))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(|e| e.to_string())?;
        Ok(())
    })
}

/// One bar of a [`bar_chart`].
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// Label left of the bar.
    pub label: String,
    /// Height, finite and `>= 0`.
    pub value: f64,
    /// Drawn in the highlight colour (e.g. the best configuration).
    pub highlight: bool,
}

/// A horizontal bar chart (e.g. PIPS per configuration from
/// `examples/autotune.rs`), bars top to bottom in the order given, labels
/// on the left, as a PNG of `width` x `height` pixels, written atomically.
pub fn bar_chart(
    path: impl AsRef<Path>,
    title: &str,
    x_desc: &str,
    bars: &[Bar],
    (width, height): (u32, u32),
) -> Result<()> {
    use plotters::prelude::*;

    let path = path.as_ref();
    check_plot_size(width, height)?;
    if bars.is_empty() {
        return Err(invalid("bars", 0, "a bar chart needs at least one bar"));
    }
    if let Some((i, b)) = bars
        .iter()
        .enumerate()
        .find(|(_, b)| !(b.value.is_finite() && b.value >= 0.0))
    {
        return Err(invalid(
            "bar value",
            format!("{:?}[{i}] = {}", b.label, b.value),
            "must be finite and >= 0",
        ));
    }
    let top = bars.iter().map(|b| b.value).fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    let n = bars.len();
    // Room for the longest label at about 7.5 pixels a character.
    let label_width = 16 + 15 * bars.iter().map(|b| b.label.len()).max().unwrap_or(0) as u32 / 2;

    draw_png(path, (width, height), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 22))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(label_width)
            .build_cartesian_2d(0f64..top, (0..n).into_segmented())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&|v| match v {
                // Bar `i` is drawn `i`-th from the top.
                SegmentValue::CenterOf(k) if *k < n => bars[n - 1 - k].label.clone(),
                _ => String::new(),
            })
            .x_desc(x_desc)
            .x_label_formatter(&|v| format!("{v:.1e}"))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 17))
            .draw()
            .map_err(|e| e.to_string())?;
        let (r, g, b) = SERIES_COLOURS[0];
        let (hr, hg, hb) = SERIES_COLOURS[1];
        chart
            .draw_series(bars.iter().enumerate().map(|(i, bar)| {
                let colour = if bar.highlight {
                    RGBColor(hr, hg, hb)
                } else {
                    RGBColor(r, g, b)
                };
                let k = n - 1 - i;
                let mut rect = Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(k)),
                        (bar.value, SegmentValue::Exact(k + 1)),
                    ],
                    colour.filled(),
                );
                rect.set_margin(3, 3, 0, 0);
                rect
            }))
            .map_err(|e| e.to_string())?;
        Ok(())
    })
}
