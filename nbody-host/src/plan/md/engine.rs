//! [`MdPlanEngine`]: a `Simulation`'s short-range run on the GPU backends,
//! the MD plan driven over any [`Device`] (the emulator's, CUDA's), under
//! NVE, a thermostat (`ensemble.rs`: NVT, Langevin, rescaling) or NPT
//! (`npt.rs`: the barostat's box on the host, the lists kept within a
//! margin scaled with the box). What the
//! plan does not do is an [`Error::Unsupported`] naming it, from
//! [`md_params`], before the device is opened.

use glam::Vec3;

use gpu_kernels::periodic::Grid;

use super::build::Origin;
use super::ensemble::EnsPlan;
use super::{MdBuf, MdParams, MdPlan, words_tag};
use crate::config::Params;
use crate::engine::{BackendKind, Divergence, Engine};
use crate::error::{Error, Result};
use crate::integrator::Integrator;
use crate::md::{
    Boundary, Enumeration, Lists, MdState, MdStats, NeighbourOrigin, Rebuild, ThermoSums,
};
use crate::plan::device::{Device, Section, words_vec4};
use crate::state::{Bodies, Energy};

/// The MD plan's parameters for `params`, its rebuild interval (`None`:
/// automatic) and its cells' least side (`max(r_c + skin, bin size)`); an
/// [`Error::Unsupported`] naming what the GPU MD plan lacks.
pub(crate) fn md_params(params: &Params) -> Result<(MdParams, Option<u32>, f64)> {
    let Some(pair) = params.force().as_pair() else {
        return Err(Error::Unsupported(
            "the GPU MD plan runs short-range force laws (pair potentials) only".into(),
        ));
    };
    let missing = |what: &str, instead: &str| {
        Error::Unsupported(format!(
            "{} on the GPU backends (CUDA, emulator): {what} is not implemented there (the GPU \
             MD plan runs a periodic box with cell-built full Verlet lists and velocity \
             Verlet); {instead}, or use Backend::Cpu",
            pair.style().title()
        ))
    };
    let Boundary::Periodic { .. } = params.boundary() else {
        return Err(missing(
            "open space (Boundary::Open)",
            "use Boundary::Periodic",
        ));
    };
    let lengths = params
        .boundary()
        .lengths_f32()
        .expect("a periodic box has lengths");
    if params.integrator() != Integrator::VELOCITY_VERLET {
        return Err(missing(
            &format!("the integrator {}", params.integrator().name()),
            "use Integrator::VELOCITY_VERLET",
        ));
    }
    let (skin, rebuild, bin_size) = match params.enumeration() {
        Enumeration::AllPairs => {
            return Err(missing(
                "the all-pairs enumeration (Neighbours::AllPairs, or Auto in a box too small \
                 for cells)",
                "use Neighbours::Cells in a box of at least 2 (r_c + skin) per side",
            ));
        }
        Enumeration::Cells {
            lists: Lists::Half, ..
        } => {
            return Err(missing(
                "half Verlet lists (Lists::Half, Newton's third law)",
                "use Lists::Full or Lists::Auto",
            ));
        }
        Enumeration::Cells {
            skin,
            rebuild,
            bin_size,
            ..
        } => (skin, rebuild, bin_size),
    };
    let mut p = MdParams::new(lengths, pair.clone(), skin, params.dt());
    let side = (pair.max_cutoff() as f64 + skin as f64).max(bin_size as f64);
    if bin_size > 0.0 {
        p.cells = Some(lengths.map(|l| ((l as f64 / side) as u32).clamp(1, 1024)));
    }
    let every = match rebuild {
        Rebuild::Auto => None,
        Rebuild::Every(k) => Some(k),
    };
    Ok((p, every, side))
}

/// A continuation from `origin` (the lists' reference positions, masses
/// in `w`, and the steps since their build), with `pos` moved into its
/// frame and `images` taken back by what that moved: only where the origin
/// has the GPU's frame, every frame position wraps to the body's position
/// bit for bit, and the box is the build's (otherwise `None`, a fresh
/// build: a CPU's or an edited state continues to rounding).
fn continuation(
    origin: &NeighbourOrigin,
    pos: &mut [gpu_kernels::Vec4],
    images: &mut Vec<[i32; 3]>,
    lengths: [f32; 3],
) -> Option<(Vec<gpu_kernels::Vec4>, u64)> {
    let frame = origin.frame.as_ref()?;
    let n = pos.len();
    if frame.len() != n || origin.reference.len() != n {
        return None;
    }
    if images.is_empty() {
        images.resize(n, [0; 3]);
    }
    let mut moved = vec![[0i32; 3]; n];
    for (i, f) in frame.iter().enumerate() {
        let p = pos[i].to_array();
        for a in 0..3 {
            let (w, k) = gpu_kernels::periodic::wrap(f[a], lengths[a]);
            if w.to_bits() != p[a].to_bits() {
                return None;
            }
            moved[i][a] = k;
        }
    }
    for ((p, f), (image, k)) in pos.iter_mut().zip(frame).zip(images.iter_mut().zip(&moved)) {
        (p.x, p.y, p.z) = (f[0], f[1], f[2]);
        for a in 0..3 {
            image[a] = image[a].wrapping_sub(k[a]);
        }
    }
    let reference = origin
        .reference
        .iter()
        .zip(pos.iter())
        .map(|(r, p)| gpu_kernels::Vec4::new(r[0], r[1], r[2], p.w))
        .collect();
    Some((reference, origin.since_build))
}

/// The closest body to `i` (minimum image in the box `lengths`) and the
/// distance: who overlaps `i`.
pub(crate) fn nearest(bodies: &Bodies, lengths: [f32; 3], i: usize) -> (usize, f64) {
    let xi = bodies.positions[i];
    let (mut best, mut at) = (f64::INFINITY, i);
    for (t, p) in bodies.positions.iter().enumerate().filter(|&(t, _)| t != i) {
        let r2: f64 = (0..3)
            .map(|a| {
                let l = lengths[a] as f64;
                let mut d = p[a] as f64 - xi[a] as f64;
                d -= l * (d / l).round();
                d * d
            })
            .sum();
        if r2 < best {
            (best, at) = (r2, t);
        }
    }
    (at, best.sqrt())
}

/// A short-range run on the GPU MD plan over the device `D`.
pub(crate) struct MdPlanEngine<D> {
    plan: MdPlan,
    dev: D,
    /// The bodies' atom types, in the caller's order (empty: all 0).
    types: Vec<u32>,
}

impl<D: Device<MdBuf>> MdPlanEngine<D> {
    /// Checks the run, opens the device (`open`, called only once the input
    /// is known good), uploads `bodies` (with `start`'s image counters),
    /// builds the lists and computes the first forces; an overlapping pair
    /// is an [`Error::Overlapping`] naming it, as on the CPU.
    pub(crate) fn new(
        open: impl FnOnce() -> Result<D>,
        bodies: &Bodies,
        params: &Params,
        start: Option<&MdState>,
    ) -> Result<MdPlanEngine<D>> {
        let (md, every, side) = md_params(params)?;
        bodies.validate()?;
        if let Some(i) = bodies.masses.iter().position(|&m| m <= 0.0) {
            return Err(Error::InvalidCombination(format!(
                "body {i}: mass {} under {}, whose accelerations F / m need masses > 0",
                bodies.masses[i],
                params
                    .force()
                    .as_pair()
                    .map_or("a pair potential", |p| p.style().title())
            )));
        }
        let lengths = md.lengths;
        let mut plan = MdPlan::new(bodies.len(), md)?;
        plan.set_rebuild_every(every);
        let mut dev = open()?;
        let (mut pos, vel) = bodies.to_device_layout();
        let mut images = start.map(|s| s.images.clone()).unwrap_or_default();
        let types = start.map(|s| s.types.clone()).unwrap_or_default();
        let reference = start
            .and_then(|s| s.neighbours.as_ref())
            .and_then(|o| continuation(o, &mut pos, &mut images, lengths));
        // A barostat's build box (`npt.rs`), its cells as the run has them.
        let built = start
            .and_then(|s| s.neighbours.as_ref())
            .and_then(|o| o.lengths)
            .map(|l| Grid {
                l,
                n: l.map(|x| ((x as f64 / side) as u32).clamp(1, 1024)),
            });
        let origin = reference.as_ref().map(|(reference, since)| Origin {
            reference,
            since: *since,
            built,
        });
        plan.start_with(&mut dev, &pos, &vel, &images, &types, origin.as_ref())?;
        if let Some(ens) = EnsPlan::new(params.ensemble(), bodies.len(), params.dt()) {
            // The barostat's box in f64, as the CPU engine starts it.
            let lengths = params
                .boundary()
                .lengths()
                .expect("a periodic box has lengths");
            let ensemble = start.and_then(|s| s.ensemble.as_ref());
            plan.start_ensemble(&mut dev, ens, &vel, &bodies.masses, lengths, ensemble, side)?;
        }
        let mut engine = MdPlanEngine { plan, dev, types };
        let acc = engine.read_accelerations()?;
        if let Some(i) = acc.iter().position(|a| !a.is_finite()) {
            let (j, distance) = nearest(bodies, lengths, i);
            return Err(Error::Overlapping {
                a: i.min(j),
                b: i.max(j),
                distance,
            });
        }
        Ok(engine)
    }

    /// The accelerations at the current positions, in the caller's order.
    fn read_accelerations(&mut self) -> Result<Vec<Vec3>> {
        let n = self.plan.n() as usize;
        let acc = words_vec4(&self.dev.read(MdBuf::Acc, 0, 4 * n)?);
        let mut out = vec![Vec3::ZERO; n];
        for (a, id) in acc.iter().zip(self.ids()?) {
            out[id] = Vec3::new(a.x, a.y, a.z);
        }
        Ok(out)
    }

    /// The bodies' original indices, slot by slot.
    fn ids(&mut self) -> Result<Vec<usize>> {
        let n = self.plan.n() as usize;
        let tags = words_tag(&self.dev.read(MdBuf::Tag, 0, 4 * n)?);
        Ok(tags.iter().map(|t| t.id as usize).collect())
    }
}

impl<D: Device<MdBuf>> Engine for MdPlanEngine<D> {
    fn kind(&self) -> BackendKind {
        self.dev.kind()
    }

    fn method(&self) -> &'static str {
        self.plan.style().method(true)
    }

    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        self.plan.step(&mut self.dev, steps)
    }

    fn read_state(&mut self) -> Result<Bodies> {
        let s = self.plan.read_state(&mut self.dev)?;
        Ok(Bodies::from_device_layout(&s.positions, &s.velocities))
    }

    fn energy(&mut self) -> Result<Energy> {
        let s = self.thermo_sums()?;
        Ok(Energy {
            kinetic: s.kinetic,
            potential: s.potential,
        })
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        self.read_accelerations()
    }

    fn thermo_sums(&mut self) -> Result<ThermoSums> {
        let t = self.plan.thermo(&mut self.dev)?;
        Ok(ThermoSums {
            kinetic: t.kinetic,
            potential: t.potential,
            virial: t.virial,
            coupling: self.plan.coupling_energy(&mut self.dev)?,
        })
    }

    fn box_lengths(&self) -> Option<[f64; 3]> {
        self.plan.npt_lengths()
    }

    fn stop_reason(&mut self) -> Option<Error> {
        self.plan.npt_stop()
    }

    fn images(&mut self) -> Result<Option<Vec<[i32; 3]>>> {
        Ok(Some(self.plan.read_state(&mut self.dev)?.images))
    }

    fn md_stats(&self) -> Option<MdStats> {
        let [x, y, z] = self.plan.cells();
        let t = self.dev.section_seconds().unwrap_or_default();
        Some(MdStats {
            builds: self.plan.builds(),
            dangerous_builds: self.plan.dangerous_builds(),
            cells: [x as usize, y as usize, z as usize],
            // Full lists: every pair twice; each thread runs its own list.
            neighbours_per_atom: self.plan.entries_per_body(),
            lanes_per_atom: self.plan.entries_per_body(),
            // Device time per section (CUDA events; on the software device
            // its modelled clock), as of the last read.
            pair_seconds: t[Section::Pair as usize],
            neighbour_seconds: t[Section::Neigh as usize],
            integrate_seconds: t[Section::Modify as usize],
            thermo_seconds: t[Section::Thermo as usize],
        })
    }

    /// The image counters, and where the lists were built with the
    /// positions in that build's frame: a continuation rebuilds the same
    /// lists (a build depends on the reference positions and the ids only,
    /// `gpu_kernels::binning`) and runs on bit for bit.
    fn md_state(&mut self) -> Result<Option<MdState>> {
        let state = self.plan.read_state(&mut self.dev)?;
        Ok(Some(MdState {
            types: self.types.clone(),
            neighbours: Some(self.plan.read_origin(&mut self.dev)?),
            ensemble: self.plan.ensemble_state(&mut self.dev)?,
            ..MdState::with_images(state.images)
        }))
    }
}
