//! An 8-bit RGB [`Image`] and its PNG encoding.

use std::path::Path;

use super::{check_size, invalid, write_atomically};
use crate::error::Result;

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
