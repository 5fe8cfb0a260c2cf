//! Labels drawn on a frame ([`Recorder::caption`](super::Recorder::caption)):
//! a caption, the simulated time and, for an orthographic camera, a scale
//! bar of a round length, in the embedded font, white on the dark frame.

use plotters::prelude::*;

use super::plot::register_font;
use super::{Camera, Image, Projection};
use crate::error::{Error, Result};

/// Draws `caption` (top left), `t = time` under it and a scale bar (bottom
/// left) on `image`, rendered through `camera`.
pub(super) fn annotate(image: &mut Image, camera: &Camera, caption: &str, time: f64) -> Result<()> {
    register_font();
    let (w, h) = (image.width, image.height);
    let fail = |e: String| Error::InvalidRenderSetting {
        what: "frame labels",
        value: e,
        requirement: "must draw",
    };
    let root = BitMapBackend::with_buffer(&mut image.rgb, (w, h)).into_drawing_area();
    let size = (h / 24).clamp(10, 28) as i32;
    let style = TextStyle::from(("sans-serif", size).into_font()).color(&WHITE);
    let draw = |root: &DrawingArea<BitMapBackend<'_>, _>| -> std::result::Result<(), String> {
        let text = |s: String, at: (i32, i32)| Text::new(s, at, style.clone());
        root.draw(&text(caption.to_owned(), (size / 2, size / 3)))
            .map_err(|e| e.to_string())?;
        root.draw(&text(
            format!("t = {}", round_time(time)),
            (size / 2, size / 3 + size + 2),
        ))
        .map_err(|e| e.to_string())?;
        if let Projection::Orthographic { half_width } = camera.projection() {
            // Pixels per length unit, and a round length near a fifth of the width.
            let per_unit = 0.5 * w as f64 / half_width as f64;
            let length = round_length(0.2 * w as f64 / per_unit);
            let pixels = (length * per_unit).round() as i32;
            let (x, y) = (size / 2, h as i32 - size / 2 - 2);
            root.draw(&PathElement::new(
                vec![(x, y), (x + pixels, y)],
                WHITE.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?;
            for end in [x, x + pixels] {
                root.draw(&PathElement::new(
                    vec![(end, y - size / 3), (end, y)],
                    WHITE.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?;
            }
            let unit = if length == 1.0 {
                "length unit"
            } else {
                "length units"
            };
            root.draw(&text(format!("{length} {unit}"), (x, y - size - 4)))
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())
    };
    draw(&root).map_err(fail)
}

/// `t` to 6 significant digits, as the shortest decimal that reads back as
/// that (the clock adds `dt` once a step: 0.30000000000000004 is `0.3`).
fn round_time(t: f64) -> String {
    match format!("{t:.5e}").parse::<f64>() {
        Ok(r) => format!("{r}"),
        Err(_) => format!("{t}"),
    }
}

/// The largest of 1, 2 and 5 times a power of ten not above `x` (`x > 0`).
fn round_length(x: f64) -> f64 {
    let power = 10f64.powf(x.log10().floor());
    let step = [5.0, 2.0, 1.0]
        .into_iter()
        .find(|&m| m * power <= x)
        .unwrap_or(1.0);
    // `format!("{}")` of 0.1 * 2 would print 0.2 exactly this way.
    format!("{:.6e}", step * power)
        .parse()
        .unwrap_or(step * power)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_lengths_and_times() {
        assert_eq!(round_length(7.3), 5.0);
        assert_eq!(round_length(0.23), 0.2);
        assert_eq!(round_length(1.0), 1.0);
        assert_eq!(round_length(199.0), 100.0);
        assert_eq!(round_time(0.30000000000000004), "0.3");
        assert_eq!(round_time(16.0), "16");
    }

    #[test]
    fn labels_change_the_frame_and_the_scale_bar_is_white() {
        let camera = Camera::orthographic(glam::Vec3::ZERO, glam::Vec3::NEG_Z, 5.0).unwrap();
        let (w, h) = (200u32, 120u32);
        let mut image = Image {
            width: w,
            height: h,
            rgb: vec![0; (w * h * 3) as usize],
        };
        annotate(&mut image, &camera, "N = 100, leapfrog", 1.5).unwrap();
        let lit = image
            .rgb
            .chunks(3)
            .filter(|p| p.iter().any(|&c| c > 0))
            .count();
        assert!(lit > 100, "{lit} pixels lit");
        // The bar: 20 pixels per unit here, a bar of 2 units = 40 pixels,
        // white at its middle.
        let (x, y) = (5 + 20, h as usize - 5 - 2);
        let at = (y * w as usize + x) * 3;
        assert_eq!(&image.rgb[at..at + 3], &[255, 255, 255]);
    }
}
