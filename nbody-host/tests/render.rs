//! The `render` feature: projection, splatting, GIF/PNG output, atomic
//! writes and determinism.

use std::path::Path;

use glam::Vec3;
use nbody_host::render::{
    Bar, Camera, EnergySeries, Frame, GifWriter, Image, Projection, Recorder, Renderer, bar_chart,
    energy_plot,
};
use nbody_host::{Backend, Error, Integrator, Simulation, ic};

fn close(a: Option<(f32, f32)>, b: (f32, f32)) -> bool {
    a.is_some_and(|a| (a.0 - b.0).abs() < 1e-4 && (a.1 - b.1).abs() < 1e-4)
}

fn linear(c: u8) -> f32 {
    (c as f32 / 255.0).powf(2.2)
}

#[test]
fn orthographic_projection_of_known_points() {
    // Looking down -z at the origin: +x is right, +y is up (image y grows down).
    let cam = Camera::orthographic(Vec3::ZERO, Vec3::NEG_Z, 1.0).unwrap();
    assert!(close(cam.project(Vec3::ZERO, 100, 100), (50.0, 50.0)));
    assert!(close(cam.project(Vec3::X, 100, 100), (100.0, 50.0)));
    assert!(close(
        cam.project(Vec3::new(0.0, 0.5, 0.0), 100, 100),
        (50.0, 25.0)
    ));
    // Depth does not matter.
    assert!(close(
        cam.project(Vec3::new(-0.5, -0.5, 7.0), 100, 100),
        (25.0, 75.0)
    ));
    // Non-square: half_width sets the horizontal scale, pixels stay square.
    assert!(close(
        cam.project(Vec3::new(0.0, 0.5, 0.0), 200, 100),
        (100.0, 0.0)
    ));
    // Off-centre target, looking along +x: right is forward x up = +z.
    let side = Camera::orthographic(Vec3::new(1.0, 2.0, 3.0), Vec3::X, 2.0).unwrap();
    let p = Vec3::new(1.0, 2.0, 3.0) + Vec3::Z * 1.0 + Vec3::Y * 1.0;
    assert!(close(side.project(p, 40, 40), (30.0, 10.0)));
    // Looking along y: up becomes +z instead of degenerating.
    let top = Camera::orthographic(Vec3::ZERO, Vec3::NEG_Y, 1.0).unwrap();
    assert!(close(top.project(Vec3::Z, 10, 10), (5.0, 0.0)));
}

#[test]
fn perspective_projection_of_known_points() {
    // Eye at z = 10 looking down -z, 90 degrees vertical: at the target
    // (depth 10) the image half-height covers 10 units.
    let cam = Camera::perspective(Vec3::ZERO, Vec3::NEG_Z, 10.0, 90.0).unwrap();
    assert!(close(cam.project(Vec3::ZERO, 100, 100), (50.0, 50.0)));
    assert!(close(
        cam.project(Vec3::new(10.0, 0.0, 0.0), 100, 100),
        (100.0, 50.0)
    ));
    // Halfway to the eye, things look twice as far off-centre.
    assert!(close(
        cam.project(Vec3::new(1.0, 2.0, 5.0), 100, 100),
        (60.0, 30.0)
    ));
    // Behind the eye, or not finite: nothing.
    assert_eq!(cam.project(Vec3::new(0.0, 0.0, 11.0), 100, 100), None);
    assert_eq!(cam.project(Vec3::new(0.0, 0.0, 10.0), 100, 100), None);
    assert_eq!(cam.project(Vec3::new(f32::NAN, 0.0, 0.0), 100, 100), None);
    assert_eq!(
        cam.projection(),
        Projection::Perspective {
            fov_y_degrees: 90.0,
            distance: 10.0
        }
    );
}

#[test]
fn bad_settings_are_errors_naming_the_value() {
    let msg = |e: Error| e.to_string();
    assert!(msg(Frame::new(0, 10).unwrap_err()).contains("width = 0"));
    assert!(msg(Frame::new(10, 9000).unwrap_err()).contains("height = 9000"));
    assert!(
        msg(Camera::orthographic(Vec3::ZERO, Vec3::ZERO, 1.0).unwrap_err()).contains("direction")
    );
    assert!(msg(Camera::orthographic(Vec3::ZERO, Vec3::X, -2.0).unwrap_err()).contains("-2"));
    assert!(msg(Camera::perspective(Vec3::ZERO, Vec3::X, 1.0, 180.0).unwrap_err()).contains("180"));
    assert!(
        msg(Camera::perspective(Vec3::ZERO, Vec3::X, f32::NAN, 60.0).unwrap_err()).contains("NaN")
    );
    assert!(msg(Camera::fit(&[Vec3::NAN], Vec3::X, 1.0).unwrap_err()).contains("none finite"));
    let cam = Camera::orthographic(Vec3::ZERO, Vec3::NEG_Z, 1.0).unwrap();
    let r = Renderer::new(cam, 8, 8).unwrap();
    assert!(msg(r.clone().exposure(0.0).unwrap_err()).contains("exposure = 0"));
    assert!(msg(Recorder::new(r, 0).unwrap_err()).contains("interval = 0"));
    assert!(
        msg(Frame::new(4, 4)
            .unwrap()
            .tone_map(f32::INFINITY)
            .unwrap_err())
        .contains("inf")
    );
}

#[test]
fn fit_frames_all_points() {
    let pts = [
        Vec3::new(-2.0, 0.0, 0.0),
        Vec3::new(4.0, 1.0, 9.0),
        Vec3::NAN,
    ];
    let cam = Camera::fit(&pts, Vec3::NEG_Z, 1.0).unwrap();
    // Centroid of the finite points (1, 0.5, 4.5); widest offset 3 along x.
    assert!(close(
        cam.project(Vec3::new(1.0, 0.5, 0.0), 60, 60),
        (30.0, 30.0)
    ));
    assert!(close(cam.project(pts[1], 60, 60), (60.0, 25.0)));
    assert!(close(cam.project(pts[0], 60, 60), (0.0, 35.0)));
}

#[test]
fn splatting_adds_the_colour_at_the_right_pixel() {
    let cam = Camera::orthographic(Vec3::ZERO, Vec3::NEG_Z, 5.0).unwrap();
    let mut f = Frame::new(10, 10).unwrap();
    // (1, 2, 0) -> pixel coordinates (6, 3): corner between pixels; move it to
    // the centre of pixel (6, 3), i.e. (6.5, 3.5) -> world (1.5, 1.5).
    let colour = [255, 128, 0];
    let landed = f.splat(&cam, &[Vec3::new(1.5, 1.5, -3.0)], colour);
    assert_eq!(landed, 1);
    let want = colour.map(linear);
    for y in 0..10 {
        for x in 0..10 {
            let got = f.pixel(x, y).unwrap();
            if (x, y) == (6, 3) {
                for c in 0..3 {
                    assert!((got[c] - want[c]).abs() < 1e-6, "{got:?} vs {want:?}");
                }
            } else {
                assert_eq!(got, [0.0; 3], "pixel ({x}, {y})");
            }
        }
    }
    // Adds up: a second body doubles the light.
    f.splat(&cam, &[Vec3::new(1.5, 1.5, 2.0)], colour);
    assert!((f.pixel(6, 3).unwrap()[0] - 2.0 * want[0]).abs() < 1e-6);
    // Between four pixel centres: a quarter each, the total conserved.
    let mut g = Frame::new(10, 10).unwrap();
    g.splat(&cam, &[Vec3::new(-1.0, 0.0, 0.0)], [255, 255, 255]);
    for (x, y) in [(3, 4), (4, 4), (3, 5), (4, 5)] {
        assert!((g.pixel(x, y).unwrap()[1] - 0.25).abs() < 1e-6);
    }
    assert_eq!(g.pixel(10, 0), None);
    // Tone mapping: black stays black, light saturates softly towards white.
    let img = f.tone_map(1.0).unwrap();
    assert_eq!((img.width, img.height, img.rgb.len()), (10, 10, 300));
    assert_eq!(&img.rgb[0..3], &[0, 0, 0]);
    let px = &img.rgb[(3 * 10 + 6) * 3..][..3];
    assert!(px[0] > px[1] && px[1] > px[2] && px[2] == 0, "{px:?}");
}

#[test]
fn out_of_view_and_non_finite_points_are_skipped() {
    let ortho = Camera::orthographic(Vec3::ZERO, Vec3::NEG_Z, 1.0).unwrap();
    let persp = Camera::perspective(Vec3::ZERO, Vec3::NEG_Z, 2.0, 60.0).unwrap();
    let bad = [
        Vec3::new(1e30, 0.0, 0.0),
        Vec3::new(-3.0, 0.0, 0.0),
        Vec3::new(0.0, 3.0, 0.0),
        Vec3::new(f32::MAX, f32::MAX, 0.0),
        Vec3::new(f32::NAN, 0.0, 0.0),
        Vec3::new(0.0, f32::INFINITY, 0.0),
        Vec3::new(0.0, 0.0, f32::NEG_INFINITY),
    ];
    for cam in [ortho, persp] {
        let mut f = Frame::new(16, 16).unwrap();
        assert_eq!(f.splat(&cam, &bad, [255, 255, 255]), 0);
        assert!(f == Frame::new(16, 16).unwrap(), "nothing drawn");
    }
    // Behind the perspective camera (an orthographic one ignores depth).
    let mut f = Frame::new(16, 16).unwrap();
    assert_eq!(f.splat(&persp, &[Vec3::new(0.0, 0.0, 50.0)], [255; 3]), 0);
    assert_eq!(f.splat(&ortho, &[Vec3::new(0.0, 0.0, 50.0)], [255; 3]), 1);
    // A point half a pixel off the edge still lands (partly).
    let mut f = Frame::new(16, 16).unwrap();
    assert_eq!(f.splat(&ortho, &[Vec3::new(1.0, 0.0, 0.0)], [255, 0, 0]), 1);
    assert!(f.pixel(15, 7).unwrap()[0] > 0.0);
    // A renderer skips non-finite bodies: same image as without them.
    let r = Renderer::new(ortho, 16, 16)
        .unwrap()
        .exposure(1.0)
        .unwrap()
        .group(0..2, [0, 255, 0]);
    let good = [Vec3::new(0.1, 0.2, 0.0), Vec3::new(-0.3, 0.0, 0.0)];
    let mut with_bad = good.to_vec();
    with_bad.extend_from_slice(&bad);
    let img = r.render(&good);
    assert_ne!(img, r.render(&[]), "the good points are drawn");
    assert_eq!(img, r.render(&with_bad));
}

#[test]
fn groups_colour_bodies_by_index() {
    let cam = Camera::orthographic(Vec3::ZERO, Vec3::NEG_Z, 1.0).unwrap();
    let r = Renderer::new(cam, 2, 1)
        .unwrap()
        .exposure(1.0)
        .unwrap()
        .group(0..1, [255, 0, 0])
        .group(1..2, [0, 0, 255]);
    // Body 0 at the centre of pixel (0, 0), body 1 of pixel (1, 0), body 2 (no group) too.
    let pts = [
        Vec3::new(-0.5, 0.0, 0.0),
        Vec3::new(0.5, 0.0, 0.0),
        Vec3::new(0.5, 0.0, 0.0),
    ];
    let f = r.frame(&pts);
    assert_eq!(f.pixel(0, 0).unwrap(), [1.0, 0.0, 0.0]);
    let right = f.pixel(1, 0).unwrap();
    assert_eq!(right, [1.0, 1.0, 2.0], "blue body plus a white one");
}

fn decode_gif(path: &Path) -> (u16, u16, usize) {
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::RGBA);
    let mut d = opts.read_info(std::fs::File::open(path).unwrap()).unwrap();
    let (w, h) = (d.width(), d.height());
    let mut frames = 0;
    while let Some(f) = d.read_next_frame().unwrap() {
        assert_eq!((f.width, f.height), (w, h));
        frames += 1;
    }
    (w, h, frames)
}

fn gradient(width: u32, height: u32, k: u8) -> Image {
    let rgb = (0..width * height)
        .flat_map(|i| [(i % 256) as u8, k, 255 - k])
        .collect();
    Image { width, height, rgb }
}

#[test]
fn gif_writer_output_decodes_with_the_right_frames_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.gif");
    let mut w = GifWriter::create(&path, 40, 30, 4).unwrap();
    for k in 0..7 {
        w.push(&gradient(40, 30, k * 30)).unwrap();
    }
    assert!(!path.exists(), "nothing at the target before finish");
    assert_eq!(w.frames(), 7);
    let e = w.push(&gradient(30, 40, 0)).unwrap_err();
    assert!(e.to_string().contains("30x40"), "{e}");
    assert_eq!(w.finish().unwrap(), 7);
    assert_eq!(decode_gif(&path), (40, 30, 7));
    // Only the GIF is left in the directory (no temporary files).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn failed_or_abandoned_writes_leave_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("out.gif");
    let e = GifWriter::create(&missing, 8, 8, 4).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert!(e.to_string().contains("no-such-dir"), "{e}");
    let png = dir.path().join("no-such-dir").join("x.png");
    assert!(matches!(
        gradient(8, 8, 0).save_png(&png),
        Err(Error::Io { .. })
    ));
    let series = [EnergySeries {
        label: "a".into(),
        points: vec![(0.0, 0.0), (1.0, 1e-3)],
    }];
    assert!(matches!(
        energy_plot(&png, "t", &series, (400, 300)),
        Err(Error::Io { .. })
    ));
    // Abandoned GIF: dropped without finish.
    let path = dir.path().join("abandoned.gif");
    let mut w = GifWriter::create(&path, 8, 8, 4).unwrap();
    w.push(&gradient(8, 8, 1)).unwrap();
    drop(w);
    // No frames: an error, not an empty file.
    let empty = dir.path().join("empty.gif");
    let e = GifWriter::create(&empty, 8, 8, 4)
        .unwrap()
        .finish()
        .unwrap_err();
    assert!(e.to_string().contains("frames = 0"), "{e}");
    // Bad plot data: an error naming the point, no file.
    let bad = [EnergySeries {
        label: "euler".into(),
        points: vec![(0.0, 0.0), (1.0, f64::NAN)],
    }];
    let plot = dir.path().join("plot.png");
    let e = energy_plot(&plot, "t", &bad, (400, 300)).unwrap_err();
    assert!(e.to_string().contains("\"euler\"[1]"), "{e}");
    let zero = [EnergySeries {
        label: "flat".into(),
        points: vec![(0.0, 0.0)],
    }];
    assert!(energy_plot(&plot, "t", &zero, (400, 300)).is_err());
    assert!(energy_plot(&plot, "t", &[], (400, 300)).is_err());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

fn decode_png(path: &Path) -> Image {
    let bytes = std::fs::read(path).unwrap();
    let mut r = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    Image {
        width: info.width,
        height: info.height,
        rgb: buf,
    }
}

#[test]
fn png_round_trips_and_energy_plot_draws_lines_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let img = gradient(33, 17, 200);
    let p = dir.path().join("g.png");
    img.save_png(&p).unwrap();
    assert_eq!(decode_png(&p), img);

    let plot = dir.path().join("energy.png");
    let series = [
        EnergySeries {
            label: "euler".into(),
            points: (0..50).map(|i| (i as f64 * 0.1, 1e-4 * i as f64)).collect(),
        },
        EnergySeries {
            label: "leapfrog".into(),
            points: (0..50)
                .map(|i| (i as f64 * 0.1, 1e-7 * (1.0 + (i % 5) as f64)))
                .collect(),
        },
    ];
    energy_plot(&plot, "energy", &series, (640, 400)).unwrap();
    let img = decode_png(&plot);
    assert_eq!((img.width, img.height), (640, 400));
    let px = |x: u32, y: u32| {
        let i = ((y * img.width + x) * 3) as usize;
        [img.rgb[i], img.rgb[i + 1], img.rgb[i + 2]]
    };
    let count = |f: &dyn Fn([u8; 3]) -> bool, rows: std::ops::Range<u32>| {
        rows.flat_map(|y| (0..img.width).map(move |x| (x, y)))
            .filter(|&(x, y)| f(px(x, y)))
            .count()
    };
    // Both series' colours appear (blue, orange).
    assert!(count(&|p| p == [0, 114, 178], 0..400) > 100);
    assert!(count(&|p| p == [213, 94, 0], 0..400) > 100);
    // The x-axis description in the bottom rows is text drawn with the
    // embedded font: dark anti-aliased pixels, several hundred of them.
    let dark = count(&|p| p.iter().all(|&c| c < 100), 380..400);
    assert!(dark > 50, "{dark} dark pixels in the x label");
}

#[test]
fn bar_chart_draws_bars_in_proportion_and_rejects_bad_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bars.png");
    let bars = [
        Bar {
            label: "block 64".into(),
            value: 2.0e9,
            highlight: false,
        },
        Bar {
            label: "block 128".into(),
            value: 4.0e9,
            highlight: true,
        },
    ];
    bar_chart(&path, "PIPS", "interactions / s", &bars, (400, 300)).unwrap();
    let img = decode_png(&path);
    let column = |rgb: [u8; 3]| -> Vec<u32> {
        // Lengths of the (horizontal) bars: `rgb` pixels per row.
        (0..img.height)
            .map(|y| {
                (0..img.width)
                    .filter(|&x| {
                        let i = ((y * img.width + x) * 3) as usize;
                        img.rgb[i..i + 3] == rgb
                    })
                    .count() as u32
            })
            .collect()
    };
    let plain = column([0, 114, 178]).into_iter().max().unwrap();
    let best = column([213, 94, 0]).into_iter().max().unwrap();
    assert!(plain > 20 && best > 20, "{plain} {best}");
    let ratio = best as f64 / plain as f64;
    assert!((ratio - 2.0).abs() < 0.05, "bar lengths {best} / {plain}");
    let bad = [Bar {
        label: "x".into(),
        value: f64::NAN,
        highlight: false,
    }];
    let e = bar_chart(&path, "t", "y", &bad, (400, 300)).unwrap_err();
    assert!(e.to_string().contains("NaN"), "{e}");
    assert!(bar_chart(&path, "t", "y", &[], (400, 300)).is_err());
    // The failed calls left the good chart in place.
    assert_eq!(decode_png(&path), img);
}

fn record(path: &Path, seed: u64) -> usize {
    let bodies = ic::collision(300, seed);
    let cam = Camera::fit(&bodies.positions, Vec3::NEG_Z, 1.1).unwrap();
    let renderer = Renderer::new(cam, 64, 48)
        .unwrap()
        .group(0..150, [255, 150, 50])
        .group(150..300, [60, 140, 255]);
    let mut sim = Simulation::builder(bodies)
        .dt(0.02)
        .softening(0.05)
        .integrator(Integrator::Leapfrog)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let mut rec = Recorder::new(renderer, 4).unwrap().gif(path).unwrap();
    rec.run(&mut sim, 10).unwrap();
    assert_eq!(sim.steps_done(), 10);
    rec.finish().unwrap()
}

#[test]
fn recording_is_deterministic_and_frames_every_k_steps() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a.gif"),
        dir.path().join("b.gif"),
        dir.path().join("c.gif"),
    );
    // Initial frame, then after steps 4, 8 and 10.
    assert_eq!(record(&a, 3), 4);
    assert_eq!(record(&b, 3), 4);
    record(&c, 4);
    assert_eq!(decode_gif(&a), (64, 48, 4));
    let (a, b, c) = (
        std::fs::read(a).unwrap(),
        std::fs::read(b).unwrap(),
        std::fs::read(c).unwrap(),
    );
    assert_eq!(a, b, "same seed, same bytes");
    assert_ne!(a, c, "another seed, another picture");
}

#[test]
fn png_frames_are_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let bodies = ic::plummer(64, 1);
    let cam = Camera::fit(&bodies.positions, Vec3::NEG_Z, 1.0).unwrap();
    let mut sim = Simulation::builder(bodies)
        .backend(Backend::cpu())
        .build()
        .unwrap();
    let mut rec = Recorder::new(Renderer::new(cam, 20, 10).unwrap(), 2)
        .unwrap()
        .png_frames(dir.path())
        .unwrap();
    rec.run(&mut sim, 3).unwrap();
    assert_eq!(rec.frames(), 3);
    let last = rec.last_image().unwrap().clone();
    assert_eq!(rec.finish().unwrap(), 3);
    for k in 0..3 {
        let img = decode_png(&dir.path().join(format!("frame_{k:05}.png")));
        assert_eq!((img.width, img.height), (20, 10));
        if k == 2 {
            assert_eq!(img, last);
        }
    }
    assert!(
        Recorder::new(Renderer::new(cam, 4, 4).unwrap(), 1)
            .unwrap()
            .png_frames(dir.path().join("missing"))
            .is_err()
    );
}
