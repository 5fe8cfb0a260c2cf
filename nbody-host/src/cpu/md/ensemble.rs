//! The ensembles on the CPU: a thermostat's (and barostat's) step around
//! the same force evaluation as velocity Verlet's, in LAMMPS's order
//! (`fix_nh.cpp`'s `initial_integrate` and `final_integrate`, `fix
//! langevin`'s `post_force`, `fix temp/rescale`'s `end_of_step`).
//!
//! One step is three passes over the atoms at most, each one parallel pass
//! over fixed chunks (the sums of a chunk in order, the chunks' in order:
//! the same bits on any number of threads):
//!
//! 1. the last step's end-of-step scaling (3., deferred), the thermostat's
//!    (and barostat's) velocity scaling, the half kick,
//!    the barostat's half-step dilation of positions, the drift, the second
//!    dilation, the wrap into the new box;
//! 2. after the forces: Langevin's friction and random force (from the
//!    step's Philox numbers), the second half kick, the barostat's velocity
//!    scaling, and the sums the thermostat needs (`sum m v^2`, and Langevin's
//!    `sum F . v`);
//! 3. the end-of-step thermostat scaling (Nosé–Hoover, rescaling), which
//!    depends on pass 2's kinetic energy. Within a call it is the next
//!    step's first multiply of pass 1 (the same two roundings, one pass
//!    fewer: NVT then makes as many passes per step as NVE); after a call's
//!    last step it is a pass of its own, so that every call ends with the
//!    velocities it reports (a run resumed from a checkpoint then continues
//!    bit-identically).
//!
//! Between them the scalar updates of `gpu_kernels::ensemble`, in `f64`.

use std::time::Instant;

use gpu_kernels::ensemble::{self, NoseHoover, langevin_uniforms};
use rayon::prelude::*;

use super::integrate::{all_finite, wrap_chunk};
use super::{CHUNK, MdEngine};
use crate::engine::Divergence;
use crate::error::Result;
use crate::md::ensemble::{EnsembleState, degrees_of_freedom};
use crate::md::{Ensemble, Rebuild};

/// An ensemble's run on the CPU engine.
#[derive(Clone, Debug)]
pub(super) struct EnsembleRun {
    pub ensemble: Ensemble,
    /// The Nosé–Hoover constants (NVT, NPT).
    pub nh: Option<NoseHoover>,
    /// The carried state (its `kicks` unused here: see `lang`).
    pub state: EnsembleState,
    /// Langevin's last friction and random accelerations, slot order
    /// (empty otherwise); reordered with the bodies.
    pub lang: [Vec<f32>; 3],
    /// The temperature's degrees of freedom.
    pub dof: f64,
    /// Why the last step stopped, if the barostat's box got too small:
    /// its shortest length and the least allowed, after step `.0`.
    pub stop: Option<(u64, f64, f64)>,
}

/// Langevin's friction and noise of one step.
#[derive(Clone, Copy)]
struct Fresh {
    /// `1 / damp`.
    gamma: f32,
    /// `sqrt(24 k T / (dt damp))`: times `1 / sqrt(m)` and a uniform number.
    amp: f32,
    seed: u64,
    step: u64,
}

/// What one pass does to every atom, in this order.
#[derive(Clone, Copy)]
struct Pass {
    /// `v *= pre_scale` first (1: nothing): the last step's end-of-step
    /// scaling, deferred into this pass.
    pre_scale: f32,
    /// `v *= scale` (1: nothing).
    scale: f32,
    /// Langevin: new `a_L = -v / damp + amp / sqrt(m) u` from `v` (stored).
    fresh: Option<Fresh>,
    /// `v += (a [+ a_L]) h`.
    kick: Option<f32>,
    /// Whether the kick adds Langevin's `a_L`.
    langevin: bool,
    /// `v *= post_scale` after the kick (1: nothing).
    post_scale: f32,
    /// `x = ((x dilate) + v h) dilate` and the wrap into the box.
    drift: Option<f32>,
    dilate: f32,
    /// Sum `m v^2` (and with `langevin`, `m a_L . v`) at the end.
    sums: bool,
}

impl Pass {
    fn new() -> Pass {
        Pass {
            pre_scale: 1.0,
            scale: 1.0,
            fresh: None,
            kick: None,
            langevin: false,
            post_scale: 1.0,
            drift: None,
            dilate: 1.0,
            sums: false,
        }
    }
}

/// What a pass found: all finite, a body past the lists' margin, `sum m
/// v^2` and `sum m a_L . v` (`f64`).
#[derive(Clone, Copy)]
struct Found {
    finite: bool,
    moved: bool,
    mv2: f64,
    work: f64,
}

impl MdEngine {
    /// Starts `ensemble` (after the first forces): from `start` where it
    /// fits (a continuation), else afresh from the current velocities
    /// (LAMMPS's `setup`).
    pub(super) fn start_ensemble(&mut self, start: Option<&EnsembleState>) {
        let ensemble = self.params.ensemble();
        if ensemble == Ensemble::Nve {
            return;
        }
        let lengths = self.params.boundary().lengths().unwrap_or([1.0; 3]);
        let dof = degrees_of_freedom(self.n);
        let nh = ensemble.nose_hoover(self.n, self.params.dt() as f64);
        let mut run = EnsembleRun {
            ensemble,
            nh,
            state: EnsembleState::new(ensemble, lengths),
            lang: [Vec::new(), Vec::new(), Vec::new()],
            dof,
            stop: None,
        };
        match start.filter(|s| s.fits(&ensemble, self.n)) {
            Some(s) => {
                run.state = EnsembleState {
                    ensemble,
                    kicks: Vec::new(),
                    ..s.clone()
                };
                run.state.nh.lengths = lengths;
                if let Ensemble::Langevin { .. } = ensemble {
                    // User order to slots.
                    run.lang = [0, 1, 2]
                        .map(|a| self.user.iter().map(|&u| s.kicks[u as usize][a]).collect());
                }
            }
            None => {
                let t = 2.0 * self.kinetic() / dof;
                if let Some(nh) = &run.nh {
                    nh.setup(&mut run.state.nh, t);
                }
                if let Ensemble::Langevin { .. } = ensemble {
                    run.lang = [vec![0.0; self.n], vec![0.0; self.n], vec![0.0; self.n]];
                    self.ens = Some(Box::new(run));
                    // LAMMPS's setup: the forces of v(0), the numbers of step 0.
                    let mut pass = Pass::new();
                    pass.fresh = self.fresh(0);
                    self.pass(pass, None);
                    return;
                }
            }
        }
        self.ens = Some(Box::new(run));
    }

    /// `sum m v^2 / 2`, in slot order (what a fresh thermostat starts from).
    fn kinetic(&self) -> f64 {
        let (m, v) = (&self.mass, &self.vel);
        0.5 * (0..self.n)
            .map(|s| {
                (0..3)
                    .map(|a| m[s] as f64 * v[a][s] as f64 * v[a][s] as f64)
                    .sum::<f64>()
            })
            .sum::<f64>()
    }

    /// Langevin's friction and noise for the numbers of step `step`.
    fn fresh(&self, step: u64) -> Option<Fresh> {
        let Ensemble::Langevin { temp, damp, seed } = self.params.ensemble() else {
            return None;
        };
        let dt = self.params.dt() as f64;
        Some(Fresh {
            gamma: (1.0 / damp) as f32,
            amp: ensemble::sqrt(24.0 * temp / (dt * damp)) as f32,
            seed,
            step,
        })
    }

    /// The ensemble's coupling energy now (LAMMPS's `ecouple`, total).
    pub(super) fn coupling_energy(&self) -> f64 {
        let Some(run) = &self.ens else { return 0.0 };
        let s = &run.state;
        match (run.ensemble, &run.nh) {
            (_, Some(nh)) => nh.energy(&s.nh),
            // LAMMPS's tally: the energy given to the bath, counted from
            // the last full step (half the last step's exchange undone).
            (Ensemble::Langevin { .. }, _) => {
                -(s.energy - 0.5 * s.onestep * self.params.dt() as f64)
            }
            _ => s.energy,
        }
    }

    /// The state a continuation needs (Langevin's accelerations in user order).
    pub(super) fn ensemble_state(&self) -> Option<EnsembleState> {
        let run = self.ens.as_ref()?;
        let mut s = run.state.clone();
        if !run.lang[0].is_empty() {
            let [x, y, z] = [0, 1, 2].map(|a| self.by_user(&run.lang[a]));
            s.kicks = (0..self.n).map(|u| [x[u], y[u], z[u]]).collect();
        }
        Some(s)
    }

    /// One pass over the atoms (see the module documentation); `watch`:
    /// the positions of the last build and the squared distance past
    /// which a body is reported as moved, the box then, for `drift`.
    fn pass(&mut self, p: Pass, watch: Option<(f32, [f32; 3])>) -> Found {
        let n = self.n;
        let lengths = self.lengths;
        let (acc, mass, inv_mass, user) = (&self.acc, &self.mass, &self.inv_mass, &self.user);
        let loops = &self.loops;
        let reference = self.nbr.as_ref().map(|nbr| &nbr.reference);
        let empty: [Vec<f32>; 3] = Default::default();
        let mut lang_own = match &mut self.ens {
            Some(run) if !run.lang[0].is_empty() => std::mem::take(&mut run.lang),
            _ => empty,
        };
        let has_lang = !lang_own[0].is_empty();
        let [lx, ly, lz] = &mut lang_own;
        let [px, py, pz] = &mut self.pos;
        let [vx, vy, vz] = &mut self.vel;
        fn chunks(v: &mut [f32], n: usize) -> Vec<Option<&mut [f32]>> {
            if v.is_empty() {
                (0..n.div_ceil(CHUNK)).map(|_| None).collect()
            } else {
                v[..n].chunks_mut(CHUNK).map(Some).collect()
            }
        }
        let chunks = |v| chunks(v, n);
        let (cx, cy, cz) = (chunks(lx), chunks(ly), chunks(lz));
        let found: Vec<Found> = px[..n]
            .par_chunks_mut(CHUNK)
            .zip(py[..n].par_chunks_mut(CHUNK))
            .zip(pz[..n].par_chunks_mut(CHUNK))
            .zip(vx.par_chunks_mut(CHUNK))
            .zip(vy.par_chunks_mut(CHUNK))
            .zip(vz.par_chunks_mut(CHUNK))
            .zip(self.images.par_chunks_mut(CHUNK))
            .zip(cx.into_par_iter().zip(cy).zip(cz))
            .enumerate()
            .map(
                |(k, (((((((x, y), z), u), v), w), images), ((ax, ay), az)))| {
                    let at = k * CHUNK..k * CHUNK + x.len();
                    let (mut pos, mut vel) = ([x, y, z], [u, v, w]);
                    let mut lang = [ax, ay, az];
                    // Two roundings, as two passes made them.
                    for f in [p.pre_scale, p.scale] {
                        if f != 1.0 {
                            for v in &mut vel {
                                v.iter_mut().for_each(|v| *v *= f);
                            }
                        }
                    }
                    if let (Some(f), true) = (p.fresh, has_lang) {
                        for (i, s) in at.clone().enumerate() {
                            let u = langevin_uniforms(f.seed, f.step, user[s]);
                            let amp = f.amp * inv_mass[s].sqrt();
                            for a in 0..3 {
                                let l = lang[a].as_deref_mut().expect("Langevin's arrays");
                                l[i] = -vel[a][i] * f.gamma + amp * u[a];
                            }
                        }
                    }
                    if let Some(h) = p.kick {
                        for a in 0..3 {
                            match (&lang[a], p.langevin) {
                                (Some(l), true) => {
                                    for ((v, &acc), &l) in
                                        vel[a].iter_mut().zip(&acc[a][at.clone()]).zip(l.iter())
                                    {
                                        *v += (acc + l) * h;
                                    }
                                }
                                _ => loops.axpy(vel[a], &acc[a][at.clone()], h),
                            }
                        }
                    }
                    if p.post_scale != 1.0 {
                        for v in &mut vel {
                            v.iter_mut().for_each(|v| *v *= p.post_scale);
                        }
                    }
                    if let Some(h) = p.drift {
                        for (a, (x, v)) in pos.iter_mut().zip(vel.iter()).enumerate() {
                            if p.dilate != 1.0 {
                                x.iter_mut().for_each(|x| *x *= p.dilate);
                            }
                            loops.axpy(x, v, h);
                            if p.dilate != 1.0 {
                                x.iter_mut().for_each(|x| *x *= p.dilate);
                            }
                            if let Some(l) = lengths {
                                wrap_chunk(x, images, a, l[a]);
                            }
                        }
                    }
                    let finite = pos.iter().chain(&vel).all(|c| all_finite(c));
                    let moved = match (watch, reference, p.drift) {
                        (Some((limit2, scale)), Some(reference), Some(_)) => {
                            (0..at.len()).any(|i| {
                                let mut r2 = 0.0f32;
                                for a in 0..3 {
                                    let mut d = pos[a][i] - reference[a][at.start + i] * scale[a];
                                    if let Some(l) = lengths {
                                        if d > 0.5 * l[a] {
                                            d -= l[a];
                                        } else if d < -0.5 * l[a] {
                                            d += l[a];
                                        }
                                    }
                                    r2 += d * d;
                                }
                                r2 > limit2
                            })
                        }
                        _ => false,
                    };
                    let (mut mv2, mut work) = (0.0f64, 0.0f64);
                    if p.sums {
                        for (a, v) in vel.iter().enumerate() {
                            for (i, &v) in v.iter().enumerate() {
                                let m = mass[at.start + i] as f64;
                                mv2 += m * v as f64 * v as f64;
                                if let (true, Some(l)) = (p.langevin, &lang[a]) {
                                    work += m * l[i] as f64 * v as f64;
                                }
                            }
                        }
                    }
                    Found {
                        finite,
                        moved,
                        mv2,
                        work,
                    }
                },
            )
            .collect();
        if let Some(run) = &mut self.ens
            && has_lang
        {
            run.lang = lang_own;
        }
        found.iter().fold(
            Found {
                finite: true,
                moved: false,
                mv2: 0.0,
                work: 0.0,
            },
            |a, b| Found {
                finite: a.finite && b.finite,
                moved: a.moved || b.moved,
                mv2: a.mv2 + b.mv2,
                work: a.work + b.work,
            },
        )
    }

    /// The lists' margin now: the squared distance a body may move from
    /// its position at the last build, scaled with the box since (see
    /// `moved_half_skin`), and that scale per axis; `None` without
    /// automatic rebuilds.
    pub(super) fn margin(&self) -> Option<(f32, [f32; 3])> {
        let (Some(nbr), Some((skin, Rebuild::Auto))) = (&self.nbr, self.cells) else {
            return None;
        };
        Some(self.scaled_margin(nbr.lengths, skin))
    }

    /// `(limit^2, scale)`: the box grew or shrank by `scale` per axis since
    /// the build at `built`; a pair listed then at `r_list` is now at least
    /// `s r_list` apart (`s` the least scale, at most 1), so every pair
    /// within the cutoff is listed while each body stays within
    /// `(s r_list - r_c) / 2` of its scaled build position (`skin / 2`
    /// when the box has not changed).
    pub(super) fn scaled_margin(&self, built: [f32; 3], skin: f32) -> (f32, [f32; 3]) {
        let now = self.lengths.unwrap_or(built);
        let scale = [0, 1, 2].map(|a| now[a] / built[a]);
        if scale == [1.0; 3] {
            return (0.25 * skin * skin, scale);
        }
        let s = scale.iter().fold(1.0f32, |m, &x| m.min(x));
        let limit = 0.5 * (s * self.r_list - (self.r_list - skin));
        (if limit > 0.0 { limit * limit } else { -1.0 }, scale)
    }

    /// The box lengths as the loops, the wrap and the cells take them.
    pub(super) fn set_box(&mut self, l: [f32; 3]) {
        self.lengths = Some(l);
        self.setup.lengths = l;
        self.setup.inv_lengths = l.map(|x| 1.0 / x);
    }

    /// [`Engine::step`](crate::engine::Engine::step) under an ensemble
    /// other than NVE, on a rayon worker thread.
    pub(super) fn step_ensemble(&mut self, steps: u64) -> Result<Option<Divergence>> {
        let dt = self.params.dt();
        let dt64 = dt as f64;
        // The last step's end-of-step scaling, not yet applied: it is
        // folded into the next step's first pass (one pass fewer per step),
        // and applied by a pass of its own only after a call's last step.
        let mut pending = 1.0f64;
        for s in 1..=steps {
            if let Some(nbr) = &mut self.nbr {
                nbr.since_build += 1;
            }
            let t = Instant::now();
            let run = self.ens.as_mut().expect("an ensemble");
            let step = run.state.steps + 1;
            // Pass 1: LAMMPS's initial_integrate.
            let mut first = Pass::new();
            first.pre_scale = std::mem::replace(&mut pending, 1.0) as f32;
            first.kick = Some(0.5 * dt);
            first.drift = Some(dt);
            first.langevin = !run.lang[0].is_empty();
            let mut scale = 1.0f64;
            if let Some(nh) = &run.nh {
                let st = &mut run.state.nh;
                nh.nhc_press(st);
                scale = nh.nhc_temp(st);
                if nh.barostat.is_some() {
                    let p = nh.pressure(st, self.virial);
                    nh.omega_dot(st, p);
                    scale *= nh.v_press_factor(st);
                    let e = nh.remap(st);
                    nh.remap(st);
                    first.dilate = e as f32;
                }
            }
            first.scale = scale as f32;
            let lengths = run.state.nh.lengths;
            let npt = run.ensemble.changes_box();
            if npt {
                self.set_box(lengths.map(|x| x as f32));
            }
            let watch = self.margin();
            let found = self.pass(first, watch);
            self.moved_far |= found.moved;
            self.stats.integrate_seconds += t.elapsed().as_secs_f64();
            if !found.finite {
                return Ok(Some(self.divergence(s)));
            }
            if npt {
                let shortest = lengths.iter().fold(f64::INFINITY, |m, &l| m.min(l));
                let needed = 2.0 * self.r_list as f64;
                if shortest < needed {
                    self.ens.as_mut().expect("an ensemble").stop = Some((s, shortest, needed));
                    return Ok(Some(Divergence {
                        after_step: s,
                        body: 0,
                        steps_run: s,
                    }));
                }
            }
            self.maybe_rebuild()?;
            self.forces();
            // Pass 2: post_force (Langevin) and final_integrate.
            let t = Instant::now();
            let run = self.ens.as_ref().expect("an ensemble");
            let mut second = Pass::new();
            second.kick = Some(0.5 * dt);
            second.langevin = !run.lang[0].is_empty();
            second.fresh = self.fresh(step);
            second.sums = true;
            if let Some(nh) = &run.nh {
                second.post_scale = nh.v_press_factor(&run.state.nh) as f32;
            }
            let found = self.pass(second, None);
            let (virial, dof) = (self.virial, self.ens.as_ref().expect("an ensemble").dof);
            let run = self.ens.as_mut().expect("an ensemble");
            let t_now = found.mv2 / dof;
            let mut last = 1.0f64;
            match (run.ensemble, &run.nh) {
                (_, Some(nh)) => {
                    let st = &mut run.state.nh;
                    st.t_current = t_now;
                    if nh.barostat.is_some() {
                        let p = nh.pressure(st, virial);
                        nh.omega_dot(st, p);
                    }
                    last = nh.nhc_temp(st);
                    nh.nhc_press(st);
                }
                (Ensemble::Langevin { .. }, _) => {
                    run.state.onestep = found.work;
                    run.state.energy += found.work * dt64;
                }
                (
                    Ensemble::Rescale {
                        every,
                        t_start,
                        t_stop,
                        ramp,
                        window,
                        fraction,
                    },
                    _,
                ) if step.is_multiple_of(every as u64) && t_now > 0.0 => {
                    let delta = if ramp == 0 {
                        1.0
                    } else {
                        (step as f64 / ramp as f64).min(1.0)
                    };
                    let target = t_start + delta * (t_stop - t_start);
                    if (t_now - target).abs() > window {
                        let t_new = t_now - fraction * (t_now - target);
                        last = ensemble::sqrt(t_new / t_now);
                        run.state.energy += (t_now - t_new) * 0.5 * dof;
                    }
                }
                _ => {}
            }
            run.state.steps = step;
            if last != 1.0 {
                if s < steps && found.finite {
                    pending = last;
                } else {
                    // Pass 3: the end-of-step scaling, so that the call
                    // ends with the velocities it reports.
                    let mut third = Pass::new();
                    third.scale = last as f32;
                    self.pass(third, None);
                }
            }
            self.stats.integrate_seconds += t.elapsed().as_secs_f64();
            if !found.finite {
                return Ok(Some(self.divergence(s)));
            }
        }
        Ok(None)
    }

    /// A divergence after step `s` of this call.
    fn divergence(&self, s: u64) -> Divergence {
        let body = self
            .first_non_finite()
            .expect("a pass saw a non-finite body");
        Divergence {
            after_step: s,
            body,
            steps_run: s,
        }
    }
}
