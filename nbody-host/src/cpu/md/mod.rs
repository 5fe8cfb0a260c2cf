//! The CPU backend for short-range forces (Lennard-Jones): [`MdEngine`].
//!
//! | file | what |
//! | --- | --- |
//! | `mod.rs` | `MdEngine`: state in cell order, integrator stages, rebuild policy, wrapping, thermo sums |
//! | `build.rs` | counting sort into cells, half Verlet lists per z-layer |
//! | `loops.rs` | the SIMD force and energy loops, per instruction set |
//!
//! # Determinism with half lists (Newton's third law)
//! With half lists, the reaction on `j` is written by whichever task owns
//! the pair, so if tasks shared force arrays the sums would depend on the
//! thread count. Here each task (a z-layer of cells, a decomposition fixed
//! by the box and the cutoff, never by the threads) adds into a buffer of
//! its own window (its bodies, then the next layer's), and a second pass
//! forms each body's force as its own layer's buffer plus the previous
//! layer's, in that order: every sum has a fixed order, so the bits are
//! the same on any number of threads. Tasks run all at once (no colouring
//! rounds); the price is one `O(N)` pass and `2N` extra floats per axis.
//!
//! # State
//! Bodies live in cell order (reordered at every list build, for locality);
//! `user[slot]` maps back to the order the user gave, in which every read
//! reports. In a periodic box positions are wrapped into `[0, L)` after each
//! drift, with integer image counters.

mod build;
mod loops;

use std::time::Instant;

use glam::Vec3;
use rayon::prelude::*;

use self::build::Lists;
use self::loops::{Forces, List, MdLoops, PairConsts, Pos};
use super::CpuTuning;
use super::isa::Isa;
use crate::config::Params;
use crate::engine::{BackendKind, Divergence, Engine};
use crate::error::{Error, Result};
use crate::force::ForceLaw;
use crate::integrator::Stage;
use crate::md::cells::Grid;
use crate::md::{
    Enumeration, Lists as ListKind, MdState, MdStats, NeighbourOrigin, Rebuild, ThermoSums,
};
use crate::state::{Bodies, Energy};

/// Bodies per parallel task of the per-body passes and the all-pairs loop
/// (a fixed cut: the all-pairs energy sums chunk by chunk in this order).
const CHUNK: usize = 1024;

/// The neighbour-list state of [`Enumeration::Cells`], made by each build.
#[derive(Clone, Debug)]
struct Neighbours {
    lists: Lists,
    /// `prev[l]`: the layer whose window ends with layer `l`'s bodies.
    prev: Vec<Option<usize>>,
    /// Positions at the last build (slot order).
    reference: [Vec<f32>; 3],
    since_build: u64,
    /// Reaction buffers, one window per layer.
    bufs: Vec<[Vec<f32>; 3]>,
}

/// The short-range CPU engine.
pub(crate) struct MdEngine {
    loops: MdLoops,
    params: Params,
    consts: PairConsts,
    lengths: Option<[f32; 3]>,
    r_list: f32,
    /// The skin and the rebuild policy, with cell lists.
    cells: Option<(f32, Rebuild)>,
    /// Half lists with Newton's third law, or full lists.
    newton: bool,
    /// The least cell side ([`CellList::bin_size`](crate::md::CellList::bin_size)).
    bin_size: f32,
    n: usize,
    /// Positions (slot order): `n` bodies, then the ghosts of the lists, or
    /// zero padding to whole vectors for all pairs.
    pos: [Vec<f32>; 3],
    vel: [Vec<f32>; 3],
    acc: [Vec<f32>; 3],
    mass: Vec<f32>,
    inv_mass: Vec<f32>,
    images: Vec<[i32; 3]>,
    /// `user[slot]`: the index the user knows the body by.
    user: Vec<u32>,
    /// `slot[user]`.
    slot: Vec<u32>,
    nbr: Option<Neighbours>,
    /// Whether a body has moved more than half the skin since the last
    /// build (found by the drifts' passes, with automatic rebuilds).
    moved_far: bool,
    stats: MdStats,
}

/// The three acceleration columns cut into the tasks' ranges (which tile
/// `0..n` in order).
fn task_parts<'a>(acc: &'a mut [Vec<f32>; 3], lists: &Lists) -> Vec<[&'a mut [f32]; 3]> {
    let [ax, ay, az] = acc;
    let mut rest = [&mut ax[..], &mut ay[..], &mut az[..]];
    let mut parts = Vec::with_capacity(lists.tasks.len());
    for task in &lists.tasks {
        let [x, y, z] = rest;
        let (x0, x1) = x.split_at_mut(task.len);
        let (y0, y1) = y.split_at_mut(task.len);
        let (z0, z1) = z.split_at_mut(task.len);
        parts.push([x0, y0, z0]);
        rest = [x1, y1, z1];
    }
    parts
}

/// `order[new] = old` applied to `v`.
fn permute<T: Copy + Send + Sync>(v: &[T], order: &[u32]) -> Vec<T> {
    order.par_iter().map(|&o| v[o as usize]).collect()
}

/// `x` wrapped into `[0, l)`, and the box lengths it moved by (`x = w + k l`).
fn wrap(x: f32, l: f32) -> (f32, i32) {
    if (0.0..l).contains(&x) || !x.is_finite() {
        return (x, 0);
    }
    let (x64, l64) = (x as f64, l as f64);
    let mut k = (x64 / l64).floor();
    let mut w = (x64 - k * l64) as f32;
    // Rounding can leave w one ulp outside [0, l).
    if w < 0.0 {
        w += l;
        k -= 1.0;
    }
    if w >= l {
        w = 0.0;
        k += 1.0;
    }
    (w, k as i32)
}

impl MdEngine {
    /// Copies the bodies in (wrapping them into a periodic box), builds the
    /// lists and computes the first forces; an overlapping pair is an
    /// [`Error::Overlapping`] naming it.
    pub(crate) fn new(
        bodies: &Bodies,
        params: &Params,
        tuning: CpuTuning,
        start: Option<&MdState>,
    ) -> Result<MdEngine> {
        let ForceLaw::LennardJones(lj) = params.force() else {
            return Err(Error::Unsupported(
                "the short-range engine runs short-range force laws only".into(),
            ));
        };
        bodies.validate()?;
        let n = bodies.len();
        if let Some(i) = bodies.masses.iter().position(|&m| m <= 0.0) {
            return Err(Error::InvalidCombination(format!(
                "body {i}: mass {} under Lennard-Jones, whose accelerations F / m need masses > 0",
                bodies.masses[i]
            )));
        }
        let isa = tuning.isa.unwrap_or_else(Isa::detect);
        let support = isa.supported().ok_or_else(|| {
            Error::Unsupported(format!(
                "CPU instruction set {isa} is not available on this CPU"
            ))
        })?;
        let lengths = params.boundary().lengths_f32();
        let loops = MdLoops::new(support, lengths.is_some());
        let c = lj.coefficients();
        let l = lengths.unwrap_or([1.0; 3]);
        let consts = PairConsts {
            lj1: c.lj1,
            lj2: c.lj2,
            lj3: c.lj3,
            lj4: c.lj4,
            offset: c.offset,
            cutoff2: c.cutoff2,
            lengths: l,
            inv_lengths: l.map(|x| 1.0 / x),
        };
        let images = match start {
            Some(s) if !s.images.is_empty() => {
                if s.images.len() != n {
                    return Err(Error::InvalidCombination(format!(
                        "{} image counters for {n} bodies",
                        s.images.len()
                    )));
                }
                s.images.clone()
            }
            _ => vec![[0; 3]; n],
        };
        let columns = |v: &[Vec3]| [0, 1, 2].map(|a| v.iter().map(|p| p[a]).collect::<Vec<f32>>());
        let mut engine = MdEngine {
            loops,
            params: *params,
            consts,
            lengths,
            r_list: lj.cutoff(),
            cells: None,
            newton: false,
            bin_size: 0.0,
            n,
            pos: columns(&bodies.positions),
            vel: columns(&bodies.velocities),
            acc: [vec![0.0; n], vec![0.0; n], vec![0.0; n]],
            mass: bodies.masses.clone(),
            inv_mass: bodies.masses.iter().map(|&m| 1.0 / m).collect(),
            images,
            user: (0..n as u32).collect(),
            slot: (0..n as u32).collect(),
            nbr: None,
            moved_far: false,
            stats: MdStats::default(),
        };
        engine.wrap_all(0..n);
        match params.enumeration() {
            Enumeration::AllPairs => {
                let padded = n.div_ceil(engine.loops.lanes) * engine.loops.lanes;
                for p in &mut engine.pos {
                    p.resize(padded, 0.0);
                }
            }
            Enumeration::Cells {
                skin,
                rebuild,
                lists,
                bin_size,
            } => {
                engine.r_list = lj.cutoff() + skin;
                engine.cells = Some((skin, rebuild));
                // Full lists are the faster on the CPU (docs/md.md).
                engine.newton = lists == ListKind::Half;
                engine.bin_size = bin_size;
                let origin = start.and_then(|s| s.neighbours.as_ref());
                engine.start_lists(origin)?;
            }
        }
        rayon::scope(|_| engine.forces());
        engine.check_initial_forces()?;
        Ok(engine)
    }

    /// Wraps bodies `range` (slots) into the box, counting images.
    fn wrap_all(&mut self, range: std::ops::Range<usize>) {
        let Some(l) = self.lengths else { return };
        for s in range {
            for (a, (pos, l)) in self.pos.iter_mut().zip(l).enumerate() {
                let (w, k) = wrap(pos[s], l);
                pos[s] = w;
                self.images[s][a] = self.images[s][a].wrapping_add(k);
            }
        }
    }

    /// The first build; from `origin`'s positions (a continuation), then
    /// the current positions put back.
    fn start_lists(&mut self, origin: Option<&NeighbourOrigin>) -> Result<()> {
        let n = self.n;
        let current = match origin {
            Some(o) if o.reference.len() == n => {
                let now = self.pos.clone();
                for (a, pos) in self.pos.iter_mut().enumerate() {
                    for (u, r) in o.reference.iter().enumerate() {
                        pos[u] = r[a];
                    }
                }
                Some((now, o.since_build))
            }
            Some(o) => {
                return Err(Error::InvalidCombination(format!(
                    "a neighbour origin of {} positions for {n} bodies",
                    o.reference.len()
                )));
            }
            None => None,
        };
        rayon::scope(|_| self.rebuild());
        if let Some((now, since)) = current {
            // The build moved the slots: put the current positions where
            // their bodies now are.
            for (pos, now) in self.pos.iter_mut().zip(&now) {
                for (p, &u) in pos.iter_mut().zip(&self.user) {
                    *p = now[u as usize];
                }
            }
            self.nbr.as_mut().expect("just built").since_build = since;
            // As the drifts' passes would have found it.
            self.moved_far = self.moved_half_skin();
        }
        Ok(())
    }

    /// The grid for the current positions.
    fn grid(&self) -> Grid {
        let n = self.n;
        let max_cells = n.max(8);
        let side = self.r_list.max(self.bin_size);
        match self.lengths {
            Some(l) => Grid::periodic(l, side, max_cells),
            None => {
                let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
                for a in 0..3 {
                    for &x in &self.pos[a][..n] {
                        lo[a] = lo[a].min(x);
                        hi[a] = hi[a].max(x);
                    }
                }
                Grid::open(lo, hi, side, max_cells)
            }
        }
    }

    /// Sorts the bodies into cells, reorders every per-body array and
    /// builds the lists from the current positions.
    fn rebuild(&mut self) {
        let n = self.n;
        let grid = self.grid();
        let order = build::sort(
            &grid,
            &self.pos[0][..n],
            &self.pos[1][..n],
            &self.pos[2][..n],
            &self.slot,
        );
        let o = &order.order;
        let lanes = self.loops.lanes;
        for a in 0..3 {
            self.pos[a] = permute(&self.pos[a][..n], o);
            // Room for the build's last vector loads.
            self.pos[a].resize(n + lanes, 0.0);
            self.vel[a] = permute(&self.vel[a], o);
            self.acc[a] = permute(&self.acc[a], o);
        }
        self.mass = permute(&self.mass, o);
        self.inv_mass = permute(&self.inv_mass, o);
        self.images = permute(&self.images, o);
        self.user = permute(&self.user, o);
        for (s, &u) in self.user.iter().enumerate() {
            self.slot[u as usize] = s as u32;
        }
        let lists = build::lists(
            grid,
            &order.cell_start,
            Pos {
                x: &self.pos[0],
                y: &self.pos[1],
                z: &self.pos[2],
            },
            n,
            self.r_list,
            self.newton,
            &self.loops,
            &self.consts,
        );
        let reference = [0, 1, 2].map(|a| self.pos[a][..n].to_vec());
        for p in &mut self.pos {
            p.truncate(n);
            p.resize(n + lists.ghosts + lanes, 0.0);
        }
        let mut prev = vec![None; lists.tasks.len()];
        for (p, layer) in lists.tasks.iter().enumerate() {
            if let Some(m) = layer.next {
                prev[m] = Some(p);
            }
        }
        let bufs = if lists.half {
            lists
                .tasks
                .iter()
                .map(|l| {
                    [
                        vec![0.0; l.window],
                        vec![0.0; l.window],
                        vec![0.0; l.window],
                    ]
                })
                .collect()
        } else {
            Vec::new()
        };
        self.stats.builds += 1;
        self.moved_far = false;
        self.stats.neighbours_per_atom = lists.pairs as f64 / n as f64;
        self.stats.cells = lists.grid.dims;
        self.stats.lanes_per_atom =
            lists.tasks.iter().map(|t| t.j.len()).sum::<usize>() as f64 / n as f64;
        self.nbr = Some(Neighbours {
            lists,
            prev,
            reference,
            since_build: 0,
            bufs,
        });
    }

    /// Copies layer 0's positions to the ghosts after the last body.
    fn refresh_ghosts(&mut self) {
        if let Some(nbr) = &self.nbr {
            for p in &mut self.pos {
                p.copy_within(0..nbr.lists.ghosts, self.n);
            }
        }
    }

    /// Whether some body moved more than half the skin since the last build.
    fn moved_half_skin(&self) -> bool {
        let (Some(nbr), Some((skin, _))) = (&self.nbr, self.cells) else {
            return false;
        };
        let limit = 0.25 * skin * skin;
        let (pos, reference, lengths) = (&self.pos, &nbr.reference, self.lengths);
        (0..self.n).into_par_iter().with_min_len(CHUNK).any(|s| {
            let mut r2 = 0.0f32;
            for a in 0..3 {
                let mut d = pos[a][s] - reference[a][s];
                if let Some(l) = lengths {
                    if d > 0.5 * l[a] {
                        d -= l[a];
                    } else if d < -0.5 * l[a] {
                        d += l[a];
                    }
                }
                r2 += d * d;
            }
            // NaN compares false: a non-finite body is the divergence check's.
            r2 > limit
        })
    }

    /// Rebuilds the lists if the policy says so (before a force evaluation).
    fn maybe_rebuild(&mut self) {
        let (Some(nbr), Some((_, policy))) = (&self.nbr, self.cells) else {
            return;
        };
        let t = Instant::now();
        let due = match policy {
            // The last drift's pass found it (`integrate`).
            Rebuild::Auto => self.moved_far,
            Rebuild::Every(k) => {
                let due = nbr.since_build >= k as u64;
                if due && self.moved_half_skin() {
                    self.stats.dangerous_builds += 1;
                }
                due
            }
        };
        if due {
            self.rebuild();
        }
        self.stats.neighbour_seconds += t.elapsed().as_secs_f64();
    }

    /// `acc = F / m` at the current positions, with the current lists.
    fn forces(&mut self) {
        let t = Instant::now();
        self.refresh_ghosts();
        let n = self.n;
        let (loops, c) = (&self.loops, &self.consts);
        match &mut self.nbr {
            None => {
                let pos = Pos {
                    x: &self.pos[0],
                    y: &self.pos[1],
                    z: &self.pos[2],
                };
                let [ax, ay, az] = &mut self.acc;
                let inv_mass = &self.inv_mass;
                ax.par_chunks_mut(CHUNK)
                    .zip(ay.par_chunks_mut(CHUNK))
                    .zip(az.par_chunks_mut(CHUNK))
                    .enumerate()
                    .for_each(|(k, ((x, y), z))| {
                        let mut out = Forces { x, y, z };
                        loops.full_forces(pos, n, k * CHUNK, &mut out, c);
                        let m = &inv_mass[k * CHUNK..];
                        for (i, w) in m.iter().take(out.x.len()).enumerate() {
                            out.x[i] *= w;
                            out.y[i] *= w;
                            out.z[i] *= w;
                        }
                    });
            }
            Some(nbr) if !nbr.lists.half => {
                let pos = Pos {
                    x: &self.pos[0],
                    y: &self.pos[1],
                    z: &self.pos[2],
                };
                let inv_mass = &self.inv_mass;
                task_parts(&mut self.acc, &nbr.lists)
                    .into_par_iter()
                    .zip(&nbr.lists.tasks)
                    .for_each(|([x, y, z], layer)| {
                        for a in [&mut *x, &mut *y, &mut *z] {
                            a.fill(0.0);
                        }
                        let mut out = Forces { x, y, z };
                        loops.list_forces(pos, &mut out, layer.list(), false, c);
                        let m = &inv_mass[layer.first..layer.first + layer.len];
                        for (i, w) in m.iter().enumerate() {
                            out.x[i] *= w;
                            out.y[i] *= w;
                            out.z[i] *= w;
                        }
                    });
            }
            Some(nbr) => {
                let lists = &nbr.lists;
                let pos = &self.pos;
                nbr.bufs
                    .par_iter_mut()
                    .zip(&lists.tasks)
                    .for_each(|(buf, layer)| {
                        let w = layer.first..layer.first + layer.window;
                        let [bx, by, bz] = buf;
                        for b in [&mut *bx, &mut *by, &mut *bz] {
                            b.fill(0.0);
                        }
                        loops.list_forces(
                            Pos {
                                x: &pos[0][w.clone()],
                                y: &pos[1][w.clone()],
                                z: &pos[2][w],
                            },
                            &mut Forces {
                                x: bx,
                                y: by,
                                z: bz,
                            },
                            List {
                                first: 0,
                                ..layer.list()
                            },
                            true,
                            c,
                        );
                    });
                // Each body: its own layer's buffer, then the previous layer's.
                let (bufs, prev, inv_mass) = (&nbr.bufs, &nbr.prev, &self.inv_mass);
                task_parts(&mut self.acc, lists)
                    .into_par_iter()
                    .enumerate()
                    .for_each(|(l, acc)| {
                        let layer = &lists.tasks[l];
                        let own = &bufs[l];
                        let before = prev[l].map(|p| (&bufs[p], lists.tasks[p].len));
                        for (a, out) in acc.into_iter().enumerate() {
                            for k in 0..layer.len {
                                let mut f = own[a][k];
                                if let Some((b, at)) = before {
                                    f += b[a][at + k];
                                }
                                out[k] = f * inv_mass[layer.first + k];
                            }
                        }
                    });
            }
        }
        self.stats.pair_seconds += t.elapsed().as_secs_f64();
    }

    /// At the start: every force finite, or the overlapping pair named.
    fn check_initial_forces(&self) -> Result<()> {
        let bad = (0..self.n).find(|&s| !(0..3).all(|a| self.acc[a][s].is_finite()));
        let Some(s) = bad else { return Ok(()) };
        let xi = [self.pos[0][s], self.pos[1][s], self.pos[2][s]];
        let (mut best, mut at) = (f64::INFINITY, s);
        for t in (0..self.n).filter(|&t| t != s) {
            let r2: f64 = (0..3)
                .map(|a| {
                    let mut d = self.pos[a][t] as f64 - xi[a] as f64;
                    if let Some(l) = self.lengths {
                        let l = l[a] as f64;
                        d -= l * (d / l).round();
                    }
                    d * d
                })
                .sum();
            if r2 < best {
                (best, at) = (r2, t);
            }
        }
        let (a, b) = (self.user[s] as usize, self.user[at] as usize);
        Err(Error::Overlapping {
            a: a.min(b),
            b: a.max(b),
            distance: best.sqrt(),
        })
    }

    /// `v += a kick` (if any), then `x += v drift` and the wrap into the
    /// box (if any): one parallel pass over fixed chunks of bodies (one
    /// fork-join per integrator stage or fused pair of stages, not one per
    /// axis and check), which also reports whether every body is finite
    /// and, after a drift with automatic rebuilds, whether one has moved
    /// more than half the skin since the last build.
    fn integrate(&mut self, kick: Option<f32>, drift: Option<f32>) -> (bool, bool) {
        let n = self.n;
        let (loops, lengths, acc) = (&self.loops, self.lengths, &self.acc);
        let watch = match (&self.nbr, self.cells, drift) {
            (Some(nbr), Some((skin, Rebuild::Auto)), Some(_)) => {
                Some((&nbr.reference, 0.25 * skin * skin))
            }
            _ => None,
        };
        let [px, py, pz] = &mut self.pos;
        let [vx, vy, vz] = &mut self.vel;
        let (finite, moved) = px[..n]
            .par_chunks_mut(CHUNK)
            .zip(py[..n].par_chunks_mut(CHUNK))
            .zip(pz[..n].par_chunks_mut(CHUNK))
            .zip(vx.par_chunks_mut(CHUNK))
            .zip(vy.par_chunks_mut(CHUNK))
            .zip(vz.par_chunks_mut(CHUNK))
            .zip(self.images.par_chunks_mut(CHUNK))
            .enumerate()
            .map(|(k, ((((((x, y), z), u), v), w), images))| {
                let at = k * CHUNK..k * CHUNK + x.len();
                let (mut pos, mut vel) = ([x, y, z], [u, v, w]);
                for (a, (p, v)) in pos.iter_mut().zip(vel.iter_mut()).enumerate() {
                    if let Some(h) = kick {
                        loops.axpy(v, &acc[a][at.clone()], h);
                    }
                    if let Some(h) = drift {
                        loops.axpy(p, v, h);
                        if let Some(l) = lengths {
                            for (x, image) in p.iter_mut().zip(images.iter_mut()) {
                                let (wrapped, moved) = wrap(*x, l[a]);
                                *x = wrapped;
                                image[a] = image[a].wrapping_add(moved);
                            }
                        }
                    }
                }
                let finite = pos
                    .iter()
                    .chain(&vel)
                    .all(|c| c.iter().all(|x| x.is_finite()));
                let moved = watch.is_some_and(|(reference, limit)| {
                    (0..at.len()).any(|k| {
                        let mut r2 = 0.0f32;
                        for a in 0..3 {
                            let mut d = pos[a][k] - reference[a][at.start + k];
                            if let Some(l) = lengths {
                                if d > 0.5 * l[a] {
                                    d -= l[a];
                                } else if d < -0.5 * l[a] {
                                    d += l[a];
                                }
                            }
                            r2 += d * d;
                        }
                        r2 > limit
                    })
                });
                (finite, moved)
            })
            .reduce(|| (true, false), |a, b| (a.0 && b.0, a.1 || b.1));
        (finite, moved)
    }

    /// The lowest user index of a body whose position or velocity is not finite.
    fn first_non_finite(&self) -> Option<usize> {
        (0..self.n)
            .filter(|&s| !(0..3).all(|a| self.pos[a][s].is_finite() && self.vel[a][s].is_finite()))
            .map(|s| self.user[s] as usize)
            .min()
    }

    /// [`Engine::step`], on a rayon worker thread. A step stops at the first
    /// drift that leaves a body non-finite.
    fn step_on_pool(&mut self, steps: u64) -> Result<Option<Divergence>> {
        let stages = self.params.integrator().step();
        let dt = self.params.dt();
        for s in 1..=steps {
            if let Some(nbr) = &mut self.nbr {
                nbr.since_build += 1;
            }
            let mut at = 0;
            while at < stages.len() {
                // A kick followed by a drift is one pass over the bodies.
                let (kick, drift, taken) = match (stages[at], stages.get(at + 1)) {
                    (Stage::Accelerations, _) => {
                        self.maybe_rebuild();
                        self.forces();
                        at += 1;
                        continue;
                    }
                    (Stage::Kick(a), Some(&Stage::Drift(b))) => (Some(a * dt), Some(b * dt), 2),
                    (Stage::Kick(a), _) => (Some(a * dt), None, 1),
                    (Stage::Drift(b), _) => (None, Some(b * dt), 1),
                };
                at += taken;
                let t = Instant::now();
                let (finite, moved) = self.integrate(kick, drift);
                self.moved_far |= moved;
                self.stats.integrate_seconds += t.elapsed().as_secs_f64();
                if !finite {
                    let body = self
                        .first_non_finite()
                        .expect("a pass saw a non-finite body");
                    return Ok(Some(Divergence {
                        after_step: s,
                        body,
                        steps_run: s,
                    }));
                }
            }
        }
        Ok(None)
    }

    /// Kinetic energy (in slot order), potential energy and virial.
    fn sums(&mut self) -> ThermoSums {
        let t = Instant::now();
        self.refresh_ghosts();
        let n = self.n;
        let kinetic = (0..n)
            .map(|s| {
                let v2: f64 = (0..3).map(|a| (self.vel[a][s] as f64).powi(2)).sum();
                0.5 * self.mass[s] as f64 * v2
            })
            .sum::<f64>();
        let (loops, c) = (&self.loops, &self.consts);
        let parts: Vec<(f64, f64)> = match &self.nbr {
            None => {
                let pos = Pos {
                    x: &self.pos[0],
                    y: &self.pos[1],
                    z: &self.pos[2],
                };
                (0..n.div_ceil(CHUNK))
                    .into_par_iter()
                    .map(|k| {
                        let first = k * CHUNK;
                        let (u, w) = loops.full_energy(pos, n, first, CHUNK.min(n - first), c);
                        (0.5 * u, 0.5 * w)
                    })
                    .collect()
            }
            Some(nbr) => {
                let pos = &self.pos;
                let half = nbr.lists.half;
                nbr.lists
                    .tasks
                    .par_iter()
                    .map(|layer| {
                        let (u, w) = if half {
                            let w = layer.first..layer.first + layer.window;
                            let window = Pos {
                                x: &pos[0][w.clone()],
                                y: &pos[1][w.clone()],
                                z: &pos[2][w],
                            };
                            loops.list_energy(
                                window,
                                List {
                                    first: 0,
                                    ..layer.list()
                                },
                                c,
                            )
                        } else {
                            let all = Pos {
                                x: &pos[0],
                                y: &pos[1],
                                z: &pos[2],
                            };
                            let (u, w) = loops.list_energy(all, layer.list(), c);
                            (0.5 * u, 0.5 * w)
                        };
                        (u, w)
                    })
                    .collect()
            }
        };
        let (potential, virial) = parts
            .iter()
            .fold((0.0, 0.0), |(u, w), p| (u + p.0, w + p.1));
        self.stats.thermo_seconds += t.elapsed().as_secs_f64();
        ThermoSums {
            kinetic,
            potential,
            virial,
        }
    }

    /// A copy whose lists are valid for the current positions: `self` when
    /// they are (or the policy is a fixed interval, as in LAMMPS), else a
    /// clone rebuilt now, so that a read never changes the run.
    fn valid_view(&self) -> Option<MdEngine> {
        let stale = matches!(self.cells, Some((_, Rebuild::Auto))) && self.moved_half_skin();
        stale.then(|| {
            let mut copy = self.clone_state();
            copy.rebuild();
            copy
        })
    }

    fn clone_state(&self) -> MdEngine {
        MdEngine {
            loops: self.loops,
            params: self.params,
            consts: self.consts,
            lengths: self.lengths,
            r_list: self.r_list,
            cells: self.cells,
            newton: self.newton,
            bin_size: self.bin_size,
            n: self.n,
            pos: self.pos.clone(),
            vel: self.vel.clone(),
            acc: self.acc.clone(),
            mass: self.mass.clone(),
            inv_mass: self.inv_mass.clone(),
            images: self.images.clone(),
            user: self.user.clone(),
            slot: self.slot.clone(),
            nbr: self.nbr.clone(),
            moved_far: self.moved_far,
            stats: self.stats,
        }
    }

    /// A per-slot column back in user order.
    fn by_user<T: Copy>(&self, v: &[T]) -> Vec<T> {
        self.slot.iter().map(|&s| v[s as usize]).collect()
    }
}

impl Engine for MdEngine {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu {
            isa: self.loops.isa(),
            threads: rayon::current_num_threads(),
        }
    }

    fn method(&self) -> &'static str {
        match self.nbr {
            None => "lj-all-pairs",
            Some(_) => "lj-cells",
        }
    }

    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        rayon::scope(|_| self.step_on_pool(steps))
    }

    fn read_state(&mut self) -> Result<Bodies> {
        let col = |a: usize| self.by_user(&self.pos[a][..self.n]);
        let (x, y, z) = (col(0), col(1), col(2));
        let vel = |a: usize| self.by_user(&self.vel[a]);
        let (vx, vy, vz) = (vel(0), vel(1), vel(2));
        Ok(Bodies {
            positions: (0..self.n).map(|u| Vec3::new(x[u], y[u], z[u])).collect(),
            velocities: (0..self.n)
                .map(|u| Vec3::new(vx[u], vy[u], vz[u]))
                .collect(),
            masses: self.by_user(&self.mass),
        })
    }

    fn energy(&mut self) -> Result<Energy> {
        let s = self.thermo_sums()?;
        Ok(Energy {
            kinetic: s.kinetic,
            potential: s.potential,
        })
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        let mut view = self.valid_view().unwrap_or_else(|| self.clone_state());
        rayon::scope(|_| view.forces());
        let acc = |a: usize| view.by_user(&view.acc[a]);
        let (x, y, z) = (acc(0), acc(1), acc(2));
        Ok((0..self.n).map(|u| Vec3::new(x[u], y[u], z[u])).collect())
    }

    fn thermo_sums(&mut self) -> Result<ThermoSums> {
        let sums = match self.valid_view() {
            Some(mut view) => rayon::scope(|_| view.sums()),
            None => rayon::scope(|_| self.sums()),
        };
        Ok(sums)
    }

    fn images(&mut self) -> Result<Option<Vec<[i32; 3]>>> {
        Ok(self.lengths.map(|_| self.by_user(&self.images)))
    }

    fn md_stats(&self) -> Option<MdStats> {
        Some(self.stats)
    }

    fn md_state(&mut self) -> Result<Option<MdState>> {
        let neighbours = self.nbr.as_ref().map(|nbr| {
            let r = |a: usize| self.by_user(&nbr.reference[a]);
            let (x, y, z) = (r(0), r(1), r(2));
            NeighbourOrigin {
                reference: (0..self.n).map(|u| [x[u], y[u], z[u]]).collect(),
                since_build: nbr.since_build,
            }
        });
        Ok(Some(MdState {
            images: self.by_user(&self.images),
            neighbours,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrapping_keeps_the_unwrapped_position() {
        let l = 10.0f32;
        for x in [
            0.0f32, 9.999999, 10.0, -1e-9, -10.0, 25.5, -0.5, 1e6, -1e6, 3.0,
        ] {
            let (w, k) = wrap(x, l);
            assert!((0.0..l).contains(&w), "{x} -> {w}");
            let back = w as f64 + k as f64 * l as f64;
            assert!(
                (back - x as f64).abs() <= 1e-6 * x.abs().max(l) as f64,
                "{x} -> {w} + {k} L"
            );
        }
        assert_eq!(wrap(3.0, l), (3.0, 0));
        assert_eq!(wrap(-1e-9, l), (0.0, 0));
    }
}
