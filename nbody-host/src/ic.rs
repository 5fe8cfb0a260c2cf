//! Initial conditions: seeded and reproducible (ChaCha8 streams, so the same
//! seed gives the same bodies on every platform and release of this crate).

use glam::Vec3;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::state::Bodies;

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// The set-ups of this module by name, generated with `N` checked first:
/// for an `N` that comes from a user. The functions themselves allocate
/// whatever `N` asks for (and abort when the allocation fails).
///
/// ```
/// use nbody_host::{Error, ic::Setup};
///
/// assert_eq!(Setup::Plummer.generate(100, 7)?.len(), 100);
/// assert!(matches!(Setup::UniformCube.generate(usize::MAX, 1), Err(Error::TooManyBodies { .. })));
/// assert_eq!(Setup::from_name("disk"), Some(Setup::ColdDisk));
/// # Ok::<(), nbody_host::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Setup {
    /// [`uniform_cube`], NVIDIA Warp's N-body example's (`"cube"`).
    UniformCube,
    /// [`plummer`] (`"plummer"`).
    Plummer,
    /// [`collision`] (`"collision"`).
    Collision,
    /// [`cold_disk`] (`"disk"`).
    ColdDisk,
}

impl Setup {
    /// Every set-up.
    pub const ALL: [Setup; 4] = [
        Setup::UniformCube,
        Setup::Plummer,
        Setup::Collision,
        Setup::ColdDisk,
    ];

    /// `"cube"`, `"plummer"`, `"collision"` or `"disk"`.
    pub fn name(self) -> &'static str {
        match self {
            Setup::UniformCube => "cube",
            Setup::Plummer => "plummer",
            Setup::Collision => "collision",
            Setup::ColdDisk => "disk",
        }
    }

    /// The set-up of a [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Setup> {
        Setup::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Peak host bytes per body while generating: the result's 28, and the
    /// `f64` work arrays of the sampled set-ups (rounded up).
    fn bytes_per_body(self) -> u64 {
        match self {
            Setup::UniformCube => crate::memory::BODY_BYTES,
            Setup::Plummer | Setup::ColdDisk => 80,
            Setup::Collision => 160,
        }
    }

    /// `n` bodies from `seed`, after checking `n` against `1..=2^30`
    /// ([`Error::NoBodies`](crate::Error::NoBodies),
    /// [`Error::TooManyBodies`](crate::Error::TooManyBodies)) and the memory
    /// generating them needs against what the process can get
    /// ([`Error::HostMemoryExceeded`](crate::Error::HostMemoryExceeded)),
    /// before allocating anything.
    pub fn generate(self, n: usize, seed: u64) -> crate::Result<Bodies> {
        crate::memory::check(n, self.bytes_per_body(), "the initial conditions")?;
        Ok(match self {
            Setup::UniformCube => uniform_cube(n, seed),
            Setup::Plummer => plummer(n, seed),
            Setup::Collision => collision(n, seed),
            Setup::ColdDisk => cold_disk(n, seed),
        })
    }
}

/// The set-up of NVIDIA Warp's N-body example: positions uniform in `[-s, s]^3` with
/// `s = 10 (N / 1024)^(1/3)` (constant density), velocities uniform in
/// `[-1, 1]^3`, unit masses.
pub fn uniform_cube(n: usize, seed: u64) -> Bodies {
    let mut r = rng(seed);
    let s = 10.0 * (n as f64 / 1024.0).cbrt();
    let s = s as f32;
    let mut bodies = Bodies {
        positions: Vec::with_capacity(n),
        velocities: Vec::with_capacity(n),
        masses: vec![1.0; n],
    };
    for _ in 0..n {
        bodies.positions.push(Vec3::new(
            r.random_range(-s..=s),
            r.random_range(-s..=s),
            r.random_range(-s..=s),
        ));
        bodies.velocities.push(Vec3::new(
            r.random_range(-1.0..=1.0),
            r.random_range(-1.0..=1.0),
            r.random_range(-1.0..=1.0),
        ));
    }
    bodies
}

/// A Plummer sphere in virial equilibrium, in Hénon units (`G = 1`, total
/// mass 1, total energy -1/4, virial radius 1; Plummer scale `a = 3 pi / 16`),
/// sampled as in Aarseth, Hénon & Wielen (1974), radii cut at `10 a`, moved to
/// the centre-of-mass frame. Equal masses `1/N`.
pub fn plummer(n: usize, seed: u64) -> Bodies {
    let mut r = rng(seed);
    let a = 3.0 * std::f64::consts::PI / 16.0;
    let mut pos = Vec::with_capacity(n);
    let mut vel = Vec::with_capacity(n);
    for _ in 0..n {
        // Radius from the inverse cumulative mass profile.
        let radius = loop {
            let x: f64 = r.random_range(1e-10..1.0);
            let rad = a / (x.powf(-2.0 / 3.0) - 1.0).sqrt();
            if rad < 10.0 * a {
                break rad;
            }
        };
        // Speed as a fraction q of the local escape speed, q^2 (1 - q^2)^(7/2).
        let q = loop {
            let x: f64 = r.random_range(0.0..1.0);
            let y: f64 = r.random_range(0.0..0.1);
            if y < x * x * (1.0 - x * x).powf(3.5) {
                break x;
            }
        };
        let v_escape = (2.0 / (radius * radius + a * a).sqrt()).sqrt();
        pos.push(isotropic(&mut r) * radius);
        vel.push(isotropic(&mut r) * (q * v_escape));
    }
    let m = 1.0 / n as f64;
    to_centre_of_mass_frame(&mut pos, &mut vel);
    Bodies {
        positions: pos.iter().map(|p| p.as_vec3()).collect(),
        velocities: vel.iter().map(|v| v.as_vec3()).collect(),
        masses: vec![m as f32; n],
    }
}

/// Two Plummer spheres (each of mass 1/2, Hénon-scaled to half size) on a
/// collision course: centres at `(∓3, ∓0.5, 0)`, approaching along `x` at
/// the relative speed of a parabolic encounter. Bodies `0..n/2` belong to the
/// first sphere, `n/2..n` to the second (renderers colour them by that).
/// Centre-of-mass frame.
pub fn collision(n: usize, seed: u64) -> Bodies {
    let halves = [n / 2, n - n / 2];
    let mut r = rng(seed);
    let scale = 0.5; // half the virial radius: same density per unit mass scaling
    let separation = glam::DVec3::new(6.0, 1.0, 0.0);
    // Parabolic: v_rel^2 = 2 G M / d with M = 1.
    let v_rel = (2.0 / separation.length()).sqrt();
    let mut pos = Vec::with_capacity(n);
    let mut vel = Vec::with_capacity(n);
    let mut masses = Vec::with_capacity(n);
    for (k, &count) in halves.iter().enumerate() {
        let sphere = plummer(count, r.random::<u64>());
        let sign = if k == 0 { -0.5 } else { 0.5 };
        let centre = separation * sign;
        let bulk = glam::DVec3::new(-sign * v_rel, 0.0, 0.0);
        // Velocities scale as sqrt(G M / R): M halves, R halves -> unchanged.
        for i in 0..count {
            pos.push(sphere.positions[i].as_dvec3() * scale + centre);
            vel.push(sphere.velocities[i].as_dvec3() + bulk);
            masses.push(0.5 / count as f64);
        }
    }
    to_centre_of_mass_frame_weighted(&mut pos, &mut vel, &masses);
    Bodies {
        positions: pos.iter().map(|p| p.as_vec3()).collect(),
        velocities: vel.iter().map(|v| v.as_vec3()).collect(),
        masses: masses.iter().map(|&m| m as f32).collect(),
    }
}

/// A cold, thin disk of total mass 1 and radius 1: uniform surface density,
/// Gaussian thickness 0.01, every body on the circular orbit of the mass
/// enclosed within its radius (`v = sqrt(G M(<r) / r)`, `M(<r) = r^2`), no
/// velocity dispersion, rotating about `+z`. Cold disks are violently unstable:
/// a test of the integrators, and a pretty one. Equal masses `1/N`.
pub fn cold_disk(n: usize, seed: u64) -> Bodies {
    let mut r = rng(seed);
    let mut pos = Vec::with_capacity(n);
    let mut vel = Vec::with_capacity(n);
    for _ in 0..n {
        let radius: f64 = r.random_range(0.0f64..1.0).sqrt().max(1e-3);
        let phi: f64 = r.random_range(0.0..std::f64::consts::TAU);
        // Box-Muller for the thickness.
        let u: f64 = r.random_range(1e-12..1.0);
        let w: f64 = r.random_range(0.0..std::f64::consts::TAU);
        let z = 0.01 * (-2.0 * u.ln()).sqrt() * w.cos();
        let speed = (radius * radius / radius).sqrt();
        pos.push(glam::DVec3::new(radius * phi.cos(), radius * phi.sin(), z));
        vel.push(glam::DVec3::new(-speed * phi.sin(), speed * phi.cos(), 0.0));
    }
    to_centre_of_mass_frame(&mut pos, &mut vel);
    let m = 1.0 / n.max(1) as f64;
    Bodies {
        positions: pos.iter().map(|p| p.as_vec3()).collect(),
        velocities: vel.iter().map(|v| v.as_vec3()).collect(),
        masses: vec![m as f32; n],
    }
}

/// A uniformly random unit vector.
pub(crate) fn isotropic(r: &mut ChaCha8Rng) -> glam::DVec3 {
    let z: f64 = r.random_range(-1.0..=1.0);
    let phi: f64 = r.random_range(0.0..std::f64::consts::TAU);
    let s = (1.0 - z * z).sqrt();
    glam::DVec3::new(s * phi.cos(), s * phi.sin(), z)
}

/// Subtracts the (equal-mass) centre of mass position and velocity.
pub(crate) fn to_centre_of_mass_frame(pos: &mut [glam::DVec3], vel: &mut [glam::DVec3]) {
    let n = pos.len().max(1) as f64;
    let cp = pos.iter().sum::<glam::DVec3>() / n;
    let cv = vel.iter().sum::<glam::DVec3>() / n;
    pos.iter_mut().for_each(|p| *p -= cp);
    vel.iter_mut().for_each(|v| *v -= cv);
}

/// Subtracts the mass-weighted centre of mass position and velocity.
pub(crate) fn to_centre_of_mass_frame_weighted(
    pos: &mut [glam::DVec3],
    vel: &mut [glam::DVec3],
    masses: &[f64],
) {
    let total: f64 = masses.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let cp = pos
        .iter()
        .zip(masses)
        .map(|(p, m)| *p * *m)
        .sum::<glam::DVec3>()
        / total;
    let cv = vel
        .iter()
        .zip(masses)
        .map(|(v, m)| *v * *m)
        .sum::<glam::DVec3>()
        / total;
    pos.iter_mut().for_each(|p| *p -= cp);
    vel.iter_mut().for_each(|v| *v -= cv);
}

/// LAMMPS's `lattice fcc rho` + `region box block 0 C 0 C 0 C` +
/// `create_atoms` + `velocity all create T seed`, in LJ reduced units: an fcc
/// crystal of `cells^3` unit cells (`4 cells^3` atoms of mass 1) at number
/// density `density`, lattice constant `a = (4 / density)^(1/3)`, in the
/// periodic cubic box `[0, cells a)^3` it fills, and velocities drawn
/// uniformly (seeded), with zero total momentum, scaled to exactly
/// `temperature` with `3N - 3` degrees of freedom (LAMMPS's definition;
/// LAMMPS's own random numbers differ, so the velocities are not LAMMPS's:
/// `lammps-peer init` writes those).
///
/// Errors name a bad value ([`Error::InvalidParameter`](crate::Error::InvalidParameter)):
/// `cells` in `1..=645` (`4 cells^3 <= 2^30`), `density` finite and `> 0`,
/// `temperature` finite and `>= 0`.
///
/// ```
/// use nbody_host::ic;
///
/// let (atoms, boundary) = ic::fcc_lattice(20, 0.8442, 1.44, 87287)?; // in.lj: 32,000 atoms
/// assert_eq!(atoms.len(), 32_000);
/// let l = boundary.lengths().unwrap()[0];
/// assert!((l - 20.0 * (4.0f64 / 0.8442).cbrt()).abs() < 1e-12);
/// # Ok::<(), nbody_host::Error>(())
/// ```
pub fn fcc_lattice(
    cells: usize,
    density: f64,
    temperature: f64,
    seed: u64,
) -> crate::Result<(Bodies, crate::md::Boundary)> {
    use crate::Error;
    if !(1..=645).contains(&cells) {
        return Err(Error::InvalidParameter {
            name: "fcc unit cells per side",
            value: cells as f64,
            requirement: "must be in 1..=645 (4 C^3 atoms, at most 2^30)",
        });
    }
    if !(density.is_finite() && density > 0.0) {
        return Err(Error::InvalidParameter {
            name: "reduced density",
            value: density,
            requirement: "must be finite and > 0",
        });
    }
    if !(temperature.is_finite() && temperature >= 0.0) {
        return Err(Error::InvalidParameter {
            name: "temperature",
            value: temperature,
            requirement: "must be finite and >= 0",
        });
    }
    let n = 4 * cells * cells * cells;
    crate::memory::check(n, 80, "the initial conditions")?;
    let a = (4.0 / density).cbrt();
    const BASIS: [[f64; 3]; 4] = [
        [0.0, 0.0, 0.0],
        [0.5, 0.5, 0.0],
        [0.5, 0.0, 0.5],
        [0.0, 0.5, 0.5],
    ];
    let mut positions = Vec::with_capacity(n);
    for k in 0..cells {
        for j in 0..cells {
            for i in 0..cells {
                for b in BASIS {
                    let cell = [i as f64 + b[0], j as f64 + b[1], k as f64 + b[2]];
                    positions.push(Vec3::from_array(cell.map(|c| (c * a) as f32)));
                }
            }
        }
    }
    let mut r = rng(seed);
    let mut vel: Vec<glam::DVec3> = (0..n)
        .map(|_| {
            glam::DVec3::new(
                r.random_range(-0.5..0.5),
                r.random_range(-0.5..0.5),
                r.random_range(-0.5..0.5),
            )
        })
        .collect();
    let mean = vel.iter().sum::<glam::DVec3>() / n as f64;
    vel.iter_mut().for_each(|v| *v -= mean);
    let dof = 3.0 * n as f64 - 3.0;
    let t_now = vel.iter().map(|v| v.length_squared()).sum::<f64>() / dof.max(1.0);
    let scale = if t_now > 0.0 {
        (temperature / t_now).sqrt()
    } else {
        0.0
    };
    let bodies = Bodies {
        positions,
        velocities: vel.iter().map(|v| (*v * scale).as_vec3()).collect(),
        masses: vec![1.0; n],
    };
    Ok((bodies, crate::md::Boundary::cubic(cells as f64 * a)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fcc_lattice_is_lammps_s_lattice_at_the_temperature() {
        let (b, boundary) = fcc_lattice(3, 0.8442, 1.44, 5).unwrap();
        assert_eq!(b.len(), 108);
        let l = boundary.lengths().unwrap()[0] as f32;
        assert!(
            b.positions
                .iter()
                .all(|p| p.min_element() >= 0.0 && p.max_element() < l)
        );
        // Nearest neighbours at a / sqrt(2): of the origin's 12, the 3 with
        // no negative coordinate lie in the box (no periodic images here).
        let a = (4.0f32 / 0.8442).cbrt();
        let near = b
            .positions
            .iter()
            .filter(|p| (**p - b.positions[0]).length() < 0.75 * a)
            .count();
        assert_eq!(near, 1 + 3, "the origin and its neighbours inside the box");
        let m = b.momentum();
        assert!(m.linear.length() < 1e-5, "{:?}", m.linear);
        let ke: f64 = b
            .velocities
            .iter()
            .map(|v| 0.5 * v.length_squared() as f64)
            .sum();
        assert!((2.0 * ke / (3.0 * 108.0 - 3.0) - 1.44).abs() < 1e-6);
        assert_eq!(fcc_lattice(3, 0.8442, 1.44, 5).unwrap().0, b, "seeded");
        for (c, rho, t) in [
            (0, 0.8, 1.0),
            (1, 0.0, 1.0),
            (1, 0.8, -1.0),
            (1, f64::NAN, 1.0),
        ] {
            let e = fcc_lattice(c, rho, t, 1).unwrap_err();
            assert!(matches!(e, crate::Error::InvalidParameter { .. }), "{e}");
        }
        assert_eq!(
            fcc_lattice(1, 1.0, 0.0, 1).unwrap().0.velocities,
            vec![Vec3::ZERO; 4]
        );
    }

    #[test]
    fn uniform_cube_matches_the_notebook() {
        let b = uniform_cube(8192, 1);
        b.validate().unwrap();
        let s = 10.0 * 2.0f32; // (8192 / 1024)^(1/3) = 2
        assert!(b.positions.iter().all(|p| p.abs().max_element() <= s));
        assert!(b.positions.iter().any(|p| p.abs().max_element() > 0.95 * s));
        assert!(b.velocities.iter().all(|v| v.abs().max_element() <= 1.0));
        assert!(b.masses.iter().all(|&m| m == 1.0));
        assert_eq!(b, uniform_cube(8192, 1), "seeded");
        assert_ne!(b, uniform_cube(8192, 2));
    }

    #[test]
    fn plummer_is_in_virial_equilibrium() {
        let b = plummer(4096, 3);
        b.validate().unwrap();
        let sys = crate::oracle::System64::from_bodies(&b);
        let e = crate::oracle::energy(&sys, 1.0, 0.0);
        // Virial ratio 2K/|U| = 1 and E = -1/4 in Hénon units, up to sampling noise.
        let virial = 2.0 * e.kinetic / e.potential.abs();
        assert!((virial - 1.0).abs() < 0.1, "2K/|U| = {virial}");
        assert!((e.total() + 0.25).abs() < 0.03, "E = {}", e.total());
        let m = b.momentum();
        assert!(m.linear.length() < 1e-6 && m.centre_of_mass.length() < 1e-6);
    }

    #[test]
    fn collision_has_two_separated_halves_at_rest_overall() {
        let b = collision(2001, 5);
        b.validate().unwrap();
        assert_eq!(b.len(), 2001);
        assert!((b.total_mass() - 1.0).abs() < 1e-4);
        let m = b.momentum();
        assert!(m.linear.length() < 1e-5 && m.centre_of_mass.length() < 1e-5);
        let mean = |r: std::ops::Range<usize>| {
            let k = r.len() as f32;
            b.positions[r].iter().copied().sum::<Vec3>() / k
        };
        let (a, c) = (mean(0..1000), mean(1000..2001));
        assert!(a.x < -2.0 && c.x > 2.0, "centres {a} {c}");
        assert_eq!(b, collision(2001, 5));
    }

    #[test]
    fn cold_disk_is_thin_and_rotating() {
        let b = cold_disk(4000, 9);
        b.validate().unwrap();
        assert!(
            b.positions
                .iter()
                .all(|p| p.truncate().length() <= 1.01 && p.z.abs() < 0.1)
        );
        // Every body moves prograde about +z.
        assert!(
            b.positions
                .iter()
                .zip(&b.velocities)
                .all(|(p, v)| p.cross(*v).z >= -1e-3)
        );
        assert_eq!(b, cold_disk(4000, 9));
    }
}
