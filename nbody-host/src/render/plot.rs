//! Plots drawn with plotters into PNG files: [`energy_plot`] (energy error
//! against time), [`line_plot`] (any quantities against time, linear axes;
//! [`line_plot_panels`] several of them stacked) and [`bar_chart`], sharing one canvas-to-PNG helper, the embedded font
//! and the line colours.

use std::path::Path;

use super::{Image, MAX_SIDE, invalid};
use crate::error::{Error, Result};

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

/// One line of an [`energy_plot`] (a label and `(time, relative error)`
/// points) or of a [`line_plot`] (`(x, y)` points).
#[derive(Clone, Debug, PartialEq)]
pub struct EnergySeries {
    /// Legend text.
    pub label: String,
    /// `(t, |E(t) - E0| / |E0|)` pairs.
    pub points: Vec<(f64, f64)>,
}

/// The embedded label font: an ASCII subset of DejaVu Sans (licence in
/// `assets/DejaVuSans-LICENSE.txt`), so plots need no system fonts.
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans-subset.ttf");

pub(super) fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The embedded font is valid (a test draws labels with it).
        let _ =
            plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, FONT);
    });
}

/// Line colours of successive series (colour-blind safe: blue, orange, green, ...).
const SERIES_COLOURS: [(u8, u8, u8); 7] = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (86, 180, 233),
    (230, 159, 0),
    (0, 0, 0),
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

/// Plots `series` (`(x, y)` points, lines in order, colours by
/// position) on linear axes labelled `x_desc` and `y_desc`, to a PNG of
/// `width` x `height` pixels (written atomically); series whose label ends
/// in `" (dashed)"` are drawn dashed, without that suffix in the legend.
/// Non-finite points are an error.
pub fn line_plot(
    path: impl AsRef<Path>,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    series: &[EnergySeries],
    size: (u32, u32),
) -> Result<()> {
    line_plot_panels(path, title, x_desc, &[(y_desc, series)], size)
}

/// Several [`line_plot`]s stacked in one PNG, sharing the title and the
/// `x` axis's description: `panels` top to bottom, each a `y` description
/// and its series (say, energies above and the relative drift of the total
/// below, on a scale where the drift shows).
///
/// ```
/// use nbody_host::render::{EnergySeries, line_plot_panels};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("energy.png");
/// let total = EnergySeries { label: "total".into(), points: vec![(0.0, -4.62), (1.0, -4.62)] };
/// let drift = EnergySeries { label: "drift".into(), points: vec![(0.0, 0.0), (1.0, 1e-6)] };
/// line_plot_panels(&path, "melt", "time", &[("E / N", &[total][..]), ("dE / |E0|", &[drift][..])], (600, 500))?;
/// assert!(path.exists());
/// # Ok::<(), nbody_host::Error>(())
/// ```
pub fn line_plot_panels(
    path: impl AsRef<Path>,
    title: &str,
    x_desc: &str,
    panels: &[(&str, &[EnergySeries])],
    (width, height): (u32, u32),
) -> Result<()> {
    use plotters::prelude::*;

    let path = path.as_ref();
    check_plot_size(width, height)?;
    if panels.is_empty() {
        return Err(invalid("panels", 0, "a plot needs at least one panel"));
    }
    let mut ranges = Vec::new();
    for (_, series) in panels {
        let all: Vec<(f64, f64)> = series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .collect();
        if all.is_empty() {
            return Err(invalid(
                "series",
                series.len(),
                "a plot needs at least one point",
            ));
        }
        if let Some(p) = all.iter().find(|(x, y)| !(x.is_finite() && y.is_finite())) {
            return Err(invalid(
                "line plot point",
                format!("{p:?}"),
                "must be finite",
            ));
        }
        let range = |get: fn(&(f64, f64)) -> f64| {
            let lo = all.iter().map(get).fold(f64::INFINITY, f64::min);
            let hi = all.iter().map(get).fold(f64::NEG_INFINITY, f64::max);
            let pad = 0.05 * (hi - lo).max(1e-12 * hi.abs().max(1.0));
            (lo - pad)..(hi + pad)
        };
        ranges.push((range(|p| p.0), range(|p| p.1)));
    }
    // One x range for all panels, so that they line up.
    let xs = ranges
        .iter()
        .map(|r| r.0.clone())
        .reduce(|a, b| a.start.min(b.start)..a.end.max(b.end))
        .unwrap_or(0.0..1.0);
    draw_png(path, (width, height), |root| {
        let root = root
            .titled(title, ("sans-serif", 22))
            .map_err(|e| e.to_string())?;
        let areas = root.split_evenly((panels.len(), 1));
        for ((area, (y_desc, series)), (_, ys)) in areas.iter().zip(panels).zip(&ranges) {
            let mut chart = ChartBuilder::on(area)
                .margin(14)
                .x_label_area_size(48)
                .y_label_area_size(90)
                .build_cartesian_2d(xs.clone(), ys.clone())
                .map_err(|e| e.to_string())?;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(*y_desc)
                .label_style(("sans-serif", 15))
                .axis_desc_style(("sans-serif", 18))
                .draw()
                .map_err(|e| e.to_string())?;
            for (k, s) in series.iter().enumerate() {
                let (r, g, b) = SERIES_COLOURS[k % SERIES_COLOURS.len()];
                let (label, dashed) = match s.label.strip_suffix(" (dashed)") {
                    Some(label) => (label, true),
                    None => (s.label.as_str(), false),
                };
                let style = RGBColor(r, g, b).stroke_width(2);
                let drawn = if dashed {
                    chart.draw_series(DashedLineSeries::new(s.points.iter().copied(), 6, 4, style))
                } else {
                    chart.draw_series(LineSeries::new(s.points.iter().copied(), style))
                };
                drawn
                    .map_err(|e| e.to_string())?
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
            }
            chart
                .configure_series_labels()
                .label_font(("sans-serif", 16))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::MiddleRight)
                .draw()
                .map_err(|e| e.to_string())?;
        }
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
