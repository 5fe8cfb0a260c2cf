//! Point splatting: bodies add light to a linear-light [`Frame`] through a
//! camera; a [`Renderer`] colours them by index range and tone-maps the frame
//! to an 8-bit [`Image`].

use std::ops::Range;

use glam::Vec3;

use super::{Camera, Image, check_size, invalid};
use crate::error::Result;

/// A linear-light RGB accumulation buffer: bodies add light, so dense
/// regions glow; [`Frame::tone_map`] turns it into 8-bit pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    width: u32,
    height: u32,
    light: Vec<[f32; 3]>,
}

impl Frame {
    /// A black `width` x `height` frame (each side 1..=[`MAX_SIDE`](super::MAX_SIDE)).
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
