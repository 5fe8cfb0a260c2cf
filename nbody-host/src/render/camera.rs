//! Where a picture is taken from: the [`Camera`] (target, orientation) and
//! its [`Projection`] (orthographic or perspective) from world to pixel
//! coordinates.

use glam::Vec3;

use super::invalid;
use crate::error::Result;

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
