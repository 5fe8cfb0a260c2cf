//! An 8-bit RGB [`Image`] and its PNG encoding.

use std::io::{BufWriter, Write};
use std::path::Path;

use super::{check_size, invalid};
use crate::error::Result;
use crate::snapshot::AtomicFile;

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
        let mut file = AtomicFile::create(path.as_ref())?;
        let encoded = {
            let mut w = BufWriter::new(&mut file);
            self.encode_png(&mut w).and_then(|()| w.flush())
        };
        encoded.map_err(|e| file.error(e))?;
        file.commit()
    }

    /// The PNG encoding of a checked image.
    fn encode_png(&self, w: impl Write) -> std::io::Result<()> {
        let mut encoder = png::Encoder::new(w, self.width, self.height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
        writer
            .write_image_data(&self.rgb)
            .map_err(std::io::Error::other)?;
        writer.finish().map_err(std::io::Error::other)
    }
}
