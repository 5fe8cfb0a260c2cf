//! Animated GIFs written a frame at a time: [`GifWriter`].

use std::io::BufWriter;
use std::path::{Path, PathBuf};

use super::{Image, check_size, invalid};
use crate::error::{Error, Result};
use crate::snapshot::AtomicFile;

/// An animated GIF being written: frames go to a temporary file beside the
/// target, renamed onto it by [`GifWriter::finish`] (dropped unfinished, it
/// leaves nothing behind).
pub struct GifWriter {
    path: PathBuf,
    width: u16,
    height: u16,
    delay_centis: u16,
    frames: usize,
    encoder: gif::Encoder<BufWriter<AtomicFile>>,
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
        let file = AtomicFile::create(&path)?;
        let (w, h) = (width as u16, height as u16);
        let gif_error = |e: gif::EncodingError| Error::Io {
            path: path.clone(),
            source: std::io::Error::other(e),
        };
        let mut encoder = gif::Encoder::new(BufWriter::new(file), w, h, &[]).map_err(gif_error)?;
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
        self.encoder
            .into_inner()
            .map_err(|e| io(std::io::Error::other(e)))?
            .into_inner()
            .map_err(|e| io(e.into_error()))?
            .commit()?;
        Ok(self.frames)
    }
}
