//! Bodies, simulation state and diagnostics.

use glam::{DVec3, Vec3};
use gpu_kernels::Vec4;
use gpu_kernels::shape::MAX_BODIES;

use crate::error::{Error, Result};

/// Positions, velocities and masses of `N` bodies (structure of arrays).
///
/// The input of [`Simulation::builder`](crate::Simulation::builder) and part of
/// every [`State`]. The fields are public; [`Bodies::validate`] (run by the
/// builder) checks that they make a valid system.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bodies {
    /// Positions.
    pub positions: Vec<Vec3>,
    /// Velocities.
    pub velocities: Vec<Vec3>,
    /// Masses (finite, `>= 0`; zero-mass bodies are test particles).
    pub masses: Vec<f32>,
}

impl Bodies {
    /// Bodies from plain arrays, validated ([`Bodies::validate`]).
    ///
    /// ```
    /// use nbody_host::{Bodies, Error};
    ///
    /// let b = Bodies::from_arrays(&[[0.0; 3], [1.0, 0.0, 0.0]], &[[0.0; 3]; 2], &[1.0, 0.5])?;
    /// assert_eq!(b.len(), 2);
    /// let e = Bodies::from_arrays(&[[0.0; 3]], &[[0.0; 3]], &[-1.0]).unwrap_err();
    /// assert!(matches!(e, Error::InvalidMass { index: 0, .. }));
    /// # Ok::<(), nbody_host::Error>(())
    /// ```
    pub fn from_arrays(
        positions: &[[f32; 3]],
        velocities: &[[f32; 3]],
        masses: &[f32],
    ) -> Result<Bodies> {
        let bodies = Bodies {
            positions: positions.iter().map(|&p| Vec3::from_array(p)).collect(),
            velocities: velocities.iter().map(|&v| Vec3::from_array(v)).collect(),
            masses: masses.to_vec(),
        };
        bodies.validate()?;
        Ok(bodies)
    }

    /// Number of bodies (the length of `positions`).
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether there are no bodies.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Checks array lengths, `N` in `1..=2^30`, masses finite and `>= 0`,
    /// positions and velocities finite; the error names the first bad value.
    pub fn validate(&self) -> Result<()> {
        let (np, nv, nm) = (
            self.positions.len(),
            self.velocities.len(),
            self.masses.len(),
        );
        if np != nv || np != nm {
            return Err(Error::LengthMismatch {
                positions: np,
                velocities: nv,
                masses: nm,
            });
        }
        if np == 0 {
            return Err(Error::NoBodies);
        }
        if np > MAX_BODIES as usize {
            return Err(Error::TooManyBodies {
                n: np,
                max: MAX_BODIES as usize,
            });
        }
        for (index, &mass) in self.masses.iter().enumerate() {
            if !(mass.is_finite() && mass >= 0.0) {
                return Err(Error::InvalidMass { index, mass });
            }
        }
        for (quantity, values) in [
            ("position", &self.positions),
            ("velocity", &self.velocities),
        ] {
            if let Some(index) = values.iter().position(|v| !v.is_finite()) {
                return Err(Error::NonFiniteInput {
                    index,
                    quantity,
                    value: values[index].to_array(),
                });
            }
        }
        Ok(())
    }

    /// The first body whose position or velocity is not finite.
    pub fn first_non_finite(&self) -> Option<usize> {
        self.positions
            .iter()
            .zip(&self.velocities)
            .position(|(p, v)| !(p.is_finite() && v.is_finite()))
    }

    /// Total mass, summed in `f64`.
    pub fn total_mass(&self) -> f64 {
        self.masses.iter().map(|&m| m as f64).sum()
    }

    /// Linear and angular momentum and centre of mass, summed in `f64`.
    pub fn momentum(&self) -> Momentum {
        let mut m_total = 0.0;
        let (mut p, mut l, mut com) = (DVec3::ZERO, DVec3::ZERO, DVec3::ZERO);
        for ((x, v), &m) in self
            .positions
            .iter()
            .zip(&self.velocities)
            .zip(&self.masses)
        {
            let (x, v, m) = (x.as_dvec3(), v.as_dvec3(), m as f64);
            m_total += m;
            p += m * v;
            l += m * x.cross(v);
            com += m * x;
        }
        let inv = if m_total > 0.0 { 1.0 / m_total } else { 0.0 };
        Momentum {
            linear: p,
            angular: l,
            centre_of_mass: com * inv,
            centre_of_mass_velocity: p * inv,
            total_mass: m_total,
        }
    }

    /// The kernels' layout: positions `[x, y, z, m]` and velocities `[vx, vy, vz, 0]`.
    pub fn to_device_layout(&self) -> (Vec<Vec4>, Vec<Vec4>) {
        let pos = self
            .positions
            .iter()
            .zip(&self.masses)
            .map(|(p, &m)| Vec4::new(p.x, p.y, p.z, m))
            .collect();
        let vel = self
            .velocities
            .iter()
            .map(|v| Vec4::new(v.x, v.y, v.z, 0.0))
            .collect();
        (pos, vel)
    }

    /// Back from the kernels' layout (masses from `pos[i].w`).
    pub fn from_device_layout(pos: &[Vec4], vel: &[Vec4]) -> Bodies {
        Bodies {
            positions: pos.iter().map(|p| Vec3::new(p.x, p.y, p.z)).collect(),
            velocities: vel.iter().map(|v| Vec3::new(v.x, v.y, v.z)).collect(),
            masses: pos.iter().map(|p| p.w).collect(),
        }
    }
}

/// Bodies from [`Body`] values, in order (not validated: [`Bodies::validate`],
/// or the builder, does that).
///
/// ```
/// use nbody_host::{Bodies, Body};
///
/// let b: Bodies = (0..3).map(|k| Body::new(1.0, [k as f32, 0.0, 0.0], [0.0; 3])).collect();
/// assert_eq!((b.len(), b.positions[2].x), (3, 2.0));
/// assert_eq!(Bodies::from(vec![Body::new(2.0, [0.0; 3], [0.0; 3])]).masses, [2.0]);
/// ```
impl FromIterator<Body> for Bodies {
    fn from_iter<I: IntoIterator<Item = Body>>(iter: I) -> Bodies {
        let mut bodies = Bodies::default();
        bodies.extend(iter);
        bodies
    }
}

/// Appends [`Body`] values (see [`Bodies::push`]).
impl Extend<Body> for Bodies {
    fn extend<I: IntoIterator<Item = Body>>(&mut self, iter: I) {
        for body in iter {
            self.push(body);
        }
    }
}

/// Bodies from a `Vec` of [`Body`] (see the [`FromIterator`] impl).
impl From<Vec<Body>> for Bodies {
    fn from(bodies: Vec<Body>) -> Bodies {
        bodies.into_iter().collect()
    }
}

/// The first body, in the kernels' layout, whose position or velocity is
/// not finite (the engines' divergence check).
pub(crate) fn first_non_finite(pos: &[Vec4], vel: &[Vec4]) -> Option<usize> {
    pos.iter().zip(vel).position(|(p, v)| {
        !(p.x.is_finite()
            && p.y.is_finite()
            && p.z.is_finite()
            && v.x.is_finite()
            && v.y.is_finite()
            && v.z.is_finite())
    })
}

/// One body: what [`Simulation::add`](crate::Simulation::add) takes and
/// [`Simulation::remove`](crate::Simulation::remove) gives back.
///
/// ```
/// use nbody_host::Body;
///
/// let moon = Body::new(0.0123, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
/// assert_eq!(moon.position.x, 1.0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Body {
    /// Position.
    pub position: Vec3,
    /// Velocity.
    pub velocity: Vec3,
    /// Mass (finite, `>= 0`).
    pub mass: f32,
}

impl Body {
    /// A body of `mass` at `position` moving with `velocity` (arrays or
    /// [`glam::Vec3`]); validated when it joins a simulation.
    pub fn new(mass: f32, position: impl Into<Vec3>, velocity: impl Into<Vec3>) -> Body {
        Body {
            position: position.into(),
            velocity: velocity.into(),
            mass,
        }
    }
}

impl Bodies {
    /// Body `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<Body> {
        Some(Body {
            position: *self.positions.get(index)?,
            velocity: *self.velocities.get(index)?,
            mass: *self.masses.get(index)?,
        })
    }

    /// Appends `body` (not validated here: [`Bodies::validate`] does that).
    pub fn push(&mut self, body: Body) {
        self.positions.push(body.position);
        self.velocities.push(body.velocity);
        self.masses.push(body.mass);
    }

    /// Removes body `index`, keeping the order of the others; `None` if
    /// there is no such body.
    pub fn remove(&mut self, index: usize) -> Option<Body> {
        let body = self.get(index)?;
        self.positions.remove(index);
        self.velocities.remove(index);
        self.masses.remove(index);
        Some(body)
    }
}

/// A snapshot of a running simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    /// Positions, velocities, masses.
    pub bodies: Bodies,
    /// Simulated time, in `f64`: the start's (or the checkpoint's) plus
    /// [`Params::dt_f64`](crate::Params::dt_f64) per step.
    pub time: f64,
    /// Steps taken since the start (across checkpoints).
    pub step: u64,
    /// Each body's stable id (REBOUND's hashes), in body order: `0..N` for
    /// a simulation as built, kept by every body through removals of
    /// others (which renumber the indices, not the ids), checkpoints,
    /// archives and MPI runs; an added body gets one above all others.
    /// Empty in a `State` made by hand: `0..N`.
    pub ids: Vec<u64>,
}

/// The ids of a simulation built from `n` bodies: `0..n`.
pub(crate) fn default_ids(n: usize) -> Vec<u64> {
    (0..n as u64).collect()
}

/// Whether `ids` are the default `0..N`: files then leave them out.
pub(crate) fn are_default_ids(ids: &[u64]) -> bool {
    ids.iter().enumerate().all(|(i, &id)| id == i as u64)
}

/// Total energy, summed in `f64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Energy {
    /// `sum_i m_i |v_i|^2 / 2`.
    pub kinetic: f64,
    /// Softened potential `-G sum_{i<j} m_i m_j / sqrt(|r_ij|^2 + eps^2)`.
    pub potential: f64,
}

impl Energy {
    /// Kinetic plus potential.
    pub fn total(&self) -> f64 {
        self.kinetic + self.potential
    }

    /// `|E - E0| / |E0|`, the usual conservation measure.
    pub fn relative_change_from(&self, e0: &Energy) -> f64 {
        (self.total() - e0.total()).abs() / e0.total().abs().max(f64::MIN_POSITIVE)
    }
}

/// Momentum diagnostics, summed in `f64`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Momentum {
    /// `sum m v`.
    pub linear: DVec3,
    /// `sum m x × v` about the origin.
    pub angular: DVec3,
    /// `sum m x / M`.
    pub centre_of_mass: DVec3,
    /// `sum m v / M`.
    pub centre_of_mass_velocity: DVec3,
    /// `M = sum m`.
    pub total_mass: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Bodies {
        Bodies::from_arrays(
            &[[0.0; 3], [1.0, 0.0, 0.0]],
            &[[0.0; 3], [0.0, 1.0, 0.0]],
            &[1.0, 3.0],
        )
        .unwrap()
    }

    #[test]
    fn validation_names_the_bad_value() {
        let mut b = two();
        b.masses[1] = -2.0;
        let e = b.validate().unwrap_err();
        assert!(
            matches!(e, Error::InvalidMass { index: 1, .. }) && e.to_string().contains("-2"),
            "{e}"
        );
        let mut b = two();
        b.masses[0] = f32::NAN;
        assert!(matches!(
            b.validate(),
            Err(Error::InvalidMass { index: 0, .. })
        ));
        let mut b = two();
        b.velocities[1].y = f32::INFINITY;
        let e = b.validate().unwrap_err();
        assert!(
            e.to_string().contains("body 1: velocity") && e.to_string().contains("inf"),
            "{e}"
        );
        let mut b = two();
        b.positions[0].z = f32::NAN;
        assert!(matches!(
            b.validate(),
            Err(Error::NonFiniteInput {
                index: 0,
                quantity: "position",
                ..
            })
        ));
        let mut b = two();
        b.masses.pop();
        let e = b.validate().unwrap_err();
        assert!(
            e.to_string()
                .contains("2 positions, 2 velocities, 1 masses"),
            "{e}"
        );
        assert!(matches!(Bodies::default().validate(), Err(Error::NoBodies)));
        assert!(matches!(
            Bodies::from_arrays(&[[0.0; 3]], &[], &[1.0]),
            Err(Error::LengthMismatch { .. })
        ));
    }

    #[test]
    fn momentum_and_layout() {
        let b = two();
        let m = b.momentum();
        assert_eq!(m.total_mass, 4.0);
        assert_eq!(m.linear, DVec3::new(0.0, 3.0, 0.0));
        assert_eq!(m.angular, DVec3::new(0.0, 0.0, 3.0));
        assert_eq!(m.centre_of_mass, DVec3::new(0.75, 0.0, 0.0));
        let (p, v) = b.to_device_layout();
        assert_eq!(p[1], Vec4::new(1.0, 0.0, 0.0, 3.0));
        assert_eq!(Bodies::from_device_layout(&p, &v), b);
    }
}
