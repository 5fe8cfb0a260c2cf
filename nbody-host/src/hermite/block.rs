//! The 4th-order Hermite integrator with block time steps (Makino &
//! Aarseth 1992), in f64, on the CPU force loops.
//!
//! Time advances in *intervals*, at whose ends every body is synchronised
//! (what [`BlockHermite::advance_to`] integrates). Within an interval of
//! length `D` the steps are `D 2^-k` and a body's time is a whole multiple
//! of its step (power-of-two blocks), counted exactly in integer ticks of
//! `D 2^-50`; the last block lands on the interval's end exactly. Each
//! block step:
//!
//! 1. the next block time is the earliest `t_i + dt_i`; the active block is
//!    every body due then;
//! 2. every body is predicted to it (`x + v h + a h^2/2 + j h^3/6`,
//!    `v + a h + j h^2/2`);
//! 3. the active bodies' force and jerk from the predicted system;
//! 4. the corrector in its time-symmetric form (Hut, Makino & McMillan
//!    1995: `v1 = v0 + (a0 + a1) h/2 + (j0 - j1) h^2/12`, then
//!    `x1 = x0 + (v0 + v1) h/2 + (a0 - a1) h^2/12`); snap and crackle from
//!    the two ends' force and jerk; then the new step by Aarseth's criterion
//!    `sqrt(eta (|a||s| + |j|^2) / (|j||c| + |s|^2))`, rounded down to a
//!    power of two that divides the body's time, at most twice the last.
//!
//! A body's first step is `eta_s |a| / |j|` (Aarseth's starting criterion).
//! Steps carry over from one interval to the next (at most doubled, in the
//! new interval's powers of two).
//!
//! Steps 2 and 3 run where the forces run ([`BlockFields`]): the CPU's
//! loops, or a launch device (emulator, CUDA) holding its own copy of the
//! bodies, which the corrected ones are written back to after step 4. The
//! rest, this file, is the same for every backend.

use super::fields::{BlockFields, CpuFields, predict_all};
use super::forces::{Field, ForceJerk};
use super::{HermiteSettings, HermiteStats};
use crate::engine::BackendKind;
use crate::error::{Error, Result};

/// Ticks per interval: the finest step is the interval over `2^LEVELS`.
const LEVELS: u32 = 50;
const TICKS: u64 = 1 << LEVELS;

/// What each body carries from one step to the next, in f64 at its own
/// time (a synchronisation time between intervals): what a checkpoint
/// stores to continue bit for bit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HermiteState {
    /// Positions.
    pub pos: Vec<[f64; 3]>,
    /// Velocities.
    pub vel: Vec<[f64; 3]>,
    /// Masses.
    pub mass: Vec<f64>,
    /// Accelerations (with `G`), from the last force evaluation.
    pub acc: Vec<[f64; 3]>,
    /// Jerks (with `G`), from the last force evaluation.
    pub jerk: Vec<[f64; 3]>,
    /// Snap at the body's time, from the last corrector (0 before its first step).
    pub snap: Vec<[f64; 3]>,
    /// Crackle over the last step (0 before its first step).
    pub crackle: Vec<[f64; 3]>,
    /// The last step taken (0 before the first: then `eta_s` chooses).
    pub last_dt: Vec<f64>,
    /// Block steps, force evaluations so far.
    pub stats: HermiteStats,
}

/// A system stepped by block-time-step Hermite: the state, and where its
/// forces are computed.
pub struct BlockHermite {
    s: HermiteState,
    settings: HermiteSettings,
    g: f64,
    eps: f64,
    eps2: f64,
    fields: Box<dyn BlockFields>,
    /// The CPU loops in use, if that is where the forces run.
    forces: Option<ForceJerk>,
}

impl std::fmt::Debug for BlockHermite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockHermite")
            .field("n", &self.s.pos.len())
            .field("settings", &self.settings)
            .field("fields", &self.fields.kind())
            .finish()
    }
}

/// `|v|`.
fn norm(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

impl BlockHermite {
    /// Starts from positions, velocities and masses at a synchronisation
    /// time: checks them, evaluates every body's force and jerk.
    ///
    /// With softening 0, two bodies at the same position are an
    /// [`Error::CoincidentBodies`] naming them (their force is infinite).
    pub fn new(
        pos: Vec<[f64; 3]>,
        vel: Vec<[f64; 3]>,
        mass: Vec<f64>,
        g: f64,
        eps: f64,
        settings: HermiteSettings,
        forces: ForceJerk,
    ) -> Result<BlockHermite> {
        let cpu = CpuFields::new(Some(forces.isa()), forces.precision())?;
        let mut h = BlockHermite::start(pos, vel, mass, g, eps, settings, || Ok(Box::new(cpu)))?;
        h.forces = Some(forces);
        Ok(h)
    }

    /// [`new`](Self::new) with the forces where `open` puts them, called
    /// once the input is known good.
    pub(crate) fn start(
        pos: Vec<[f64; 3]>,
        vel: Vec<[f64; 3]>,
        mass: Vec<f64>,
        g: f64,
        eps: f64,
        settings: HermiteSettings,
        open: impl FnOnce() -> Result<Box<dyn BlockFields>>,
    ) -> Result<BlockHermite> {
        let n = pos.len();
        let state = HermiteState {
            acc: vec![[0.0; 3]; n],
            jerk: vec![[0.0; 3]; n],
            snap: vec![[0.0; 3]; n],
            crackle: vec![[0.0; 3]; n],
            last_dt: vec![0.0; n],
            pos,
            vel,
            mass,
            stats: HermiteStats::default(),
        };
        let mut h = BlockHermite::resume_with(state, g, eps, settings, open)?;
        let fields = h.synchronised_fields()?;
        for (i, f) in fields.iter().enumerate() {
            h.s.acc[i] = f.acc.map(|a| g * a);
            h.s.jerk[i] = f.jerk.map(|j| g * j);
        }
        Ok(h)
    }

    /// Continues from a saved [`HermiteState`] (no force evaluation).
    pub fn resume(
        state: HermiteState,
        g: f64,
        eps: f64,
        settings: HermiteSettings,
        forces: ForceJerk,
    ) -> Result<BlockHermite> {
        let cpu = CpuFields::new(Some(forces.isa()), forces.precision())?;
        let mut h = BlockHermite::resume_with(state, g, eps, settings, || Ok(Box::new(cpu)))?;
        h.forces = Some(forces);
        Ok(h)
    }

    /// [`resume`](Self::resume) with the forces where `open` puts them,
    /// called once the state is known good.
    pub(crate) fn resume_with(
        state: HermiteState,
        g: f64,
        eps: f64,
        settings: HermiteSettings,
        open: impl FnOnce() -> Result<Box<dyn BlockFields>>,
    ) -> Result<BlockHermite> {
        let n = state.pos.len();
        let lengths = [
            state.vel.len(),
            state.mass.len(),
            state.acc.len(),
            state.jerk.len(),
            state.snap.len(),
            state.crackle.len(),
            state.last_dt.len(),
        ];
        if n == 0 {
            return Err(Error::NoBodies);
        }
        if lengths.iter().any(|&l| l != n) {
            return Err(Error::Unsupported(format!(
                "a Hermite state needs one value per body in every array: {n} positions, \
                 lengths {lengths:?}"
            )));
        }
        if !(g.is_finite() && g > 0.0) {
            return Err(Error::InvalidGravitationalConstant(g));
        }
        if !(eps.is_finite() && eps >= 0.0) {
            return Err(Error::InvalidSoftening(eps));
        }
        let finite3 = |v: &[[f64; 3]]| v.iter().position(|x| !x.iter().all(|c| c.is_finite()));
        for (quantity, bad) in [
            ("position", finite3(&state.pos)),
            ("velocity", finite3(&state.vel)),
            ("acceleration", finite3(&state.acc)),
            ("jerk", finite3(&state.jerk)),
            ("snap", finite3(&state.snap)),
            ("crackle", finite3(&state.crackle)),
            (
                "mass",
                state
                    .mass
                    .iter()
                    .position(|m| !(m.is_finite() && *m >= 0.0)),
            ),
            (
                "last time step",
                state
                    .last_dt
                    .iter()
                    .position(|d| !(d.is_finite() && *d >= 0.0)),
            ),
        ] {
            if let Some(index) = bad {
                return Err(Error::Unsupported(format!(
                    "body {index}: its {quantity} is not finite (or a mass or step is negative)"
                )));
            }
        }
        if eps == 0.0 {
            check_coincident(&state.pos)?;
        }
        let fields = open()?;
        Ok(BlockHermite {
            s: state,
            settings,
            g,
            eps,
            eps2: eps * eps,
            fields,
            forces: None,
        })
    }

    /// The state at the last synchronisation time.
    pub fn state(&self) -> &HermiteState {
        &self.s
    }

    /// The settings.
    pub fn settings(&self) -> HermiteSettings {
        self.settings
    }

    /// `G`.
    pub fn g(&self) -> f64 {
        self.g
    }

    /// The softening length.
    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// Back to a state this integrator had (after a failed step).
    pub(crate) fn restore(&mut self, state: HermiteState) {
        self.s = state;
    }

    /// The CPU force loops in use, where the forces run on the CPU (`None`
    /// on a launch device: [`kind`](Self::kind) says which).
    pub fn forces(&self) -> Option<&ForceJerk> {
        self.forces.as_ref()
    }

    /// Where the forces run.
    pub fn kind(&self) -> BackendKind {
        self.fields.kind()
    }

    /// Kinetic and potential energy of the synchronised state (f64, with `G`).
    pub fn energy(&mut self) -> Result<(f64, f64)> {
        let fields = self.synchronised_fields()?;
        let potential = 0.5
            * self.g
            * fields
                .iter()
                .zip(&self.s.mass)
                .map(|(f, m)| m * f.pot)
                .sum::<f64>();
        let kinetic = self
            .s
            .vel
            .iter()
            .zip(&self.s.mass)
            .map(|(v, m)| 0.5 * m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))
            .sum();
        Ok((kinetic, potential))
    }

    /// Every body's field in the synchronised state (each at tick 0).
    fn synchronised_fields(&mut self) -> Result<Vec<Field>> {
        let n = self.s.pos.len();
        self.fields.load(&self.s)?;
        let all: Vec<usize> = (0..n).collect();
        self.fields(&vec![0; n], 0, 1.0, &all)
    }

    /// The field of the bodies `active` from the system predicted from
    /// `tick` to `next`.
    fn fields(
        &mut self,
        tick: &[u64],
        next: u64,
        per_tick: f64,
        active: &[usize],
    ) -> Result<Vec<Field>> {
        let out = self
            .fields
            .fields(&self.s, tick, next, per_tick, active, self.eps2)?;
        for (k, f) in out.iter().enumerate() {
            let finite = f.acc.iter().chain(&f.jerk).all(|x| x.is_finite()) && f.pot.is_finite();
            if !finite {
                let i = active[k];
                if self.eps2 == 0.0 {
                    let (mut xp, mut vp) = (Vec::new(), Vec::new());
                    predict_all(&self.s, tick, next, per_tick, &mut xp, &mut vp);
                    check_coincident(&xp)?;
                }
                return Err(Error::Unsupported(format!(
                    "the force on body {i} is not finite (the system diverged, or two bodies \
                     came closer than 1e-19 without softening)"
                )));
            }
        }
        Ok(out)
    }

    /// The first step of a body in an interval of length `d`, in ticks.
    fn first_step(&self, i: usize, d: f64) -> Result<u64> {
        let s = &self.s;
        let want = if s.last_dt[i] > 0.0 {
            self.aarseth(i).min(2.0 * s.last_dt[i])
        } else {
            let (a, j) = (norm(s.acc[i]), norm(s.jerk[i]));
            let dt = self.settings.eta_s() * a / j;
            if dt.is_nan() { f64::INFINITY } else { dt }
        };
        quantise(i, want, d, TICKS, 0)
    }

    /// Aarseth's criterion for body `i` from its stored derivatives.
    fn aarseth(&self, i: usize) -> f64 {
        let s = &self.s;
        let (a, j, sn, c) = (
            norm(s.acc[i]),
            norm(s.jerk[i]),
            norm(s.snap[i]),
            norm(s.crackle[i]),
        );
        let dt = (self.settings.eta() * (a * sn + j * j) / (j * c + sn * sn)).sqrt();
        if dt.is_nan() { f64::INFINITY } else { dt }
    }

    /// Integrates to `t_end` from the synchronisation time `t0`: every body
    /// ends there, exactly (`t_end > t0`, both finite).
    pub fn advance_to(&mut self, t0: f64, t_end: f64) -> Result<()> {
        let d = t_end - t0;
        if !(d > 0.0 && d.is_finite()) {
            return Err(Error::InvalidTargetTime {
                target: t_end,
                now: t0,
            });
        }
        let n = self.s.pos.len();
        let mut tick = vec![0u64; n];
        let mut step: Vec<u64> = (0..n)
            .map(|i| self.first_step(i, d))
            .collect::<Result<_>>()?;
        let per_tick = d / TICKS as f64;
        let mut active = Vec::with_capacity(n);
        self.fields.load(&self.s)?;
        loop {
            let next = (0..n).map(|i| tick[i] + step[i]).min().expect("n >= 1");
            if tick.iter().all(|&t| t == TICKS) {
                break;
            }
            active.clear();
            active.extend((0..n).filter(|&i| tick[i] + step[i] == next));
            // Predict everyone to the block time; the active block's fields.
            let fields = self.fields(&tick, next, per_tick, &active)?;
            self.s.stats.block_steps += 1;
            self.s.stats.force_evals += active.len() as u64;
            for (k, &i) in active.iter().enumerate() {
                let h = step[i] as f64 * per_tick;
                self.correct(i, h, &fields[k]);
                tick[i] += step[i];
                if tick[i] < TICKS {
                    let want = self.aarseth(i).min(2.0 * h);
                    step[i] = quantise(i, want, d, 2 * step[i], tick[i])?;
                }
            }
            self.fields.corrected(&self.s, &tick, &active)?;
        }
        Ok(())
    }

    /// The corrector for body `i` over its step `h`, with the field at the
    /// predicted end.
    fn correct(&mut self, i: usize, h: f64, f: &Field) {
        let g = self.g;
        let s = &mut self.s;
        let (a0, j0) = (s.acc[i], s.jerk[i]);
        let a1 = f.acc.map(|a| g * a);
        let j1 = f.jerk.map(|j| g * j);
        let (h2, h3) = (h * h, h * h * h);
        for k in 0..3 {
            let snap0 = (-6.0 * (a0[k] - a1[k]) - h * (4.0 * j0[k] + 2.0 * j1[k])) / h2;
            let crackle = (12.0 * (a0[k] - a1[k]) + 6.0 * h * (j0[k] + j1[k])) / h3;
            // The time-symmetric form (Hut, Makino & McMillan 1995): the
            // velocity first, then the position from both velocities.
            let (x0, v0) = (s.pos[i][k], s.vel[i][k]);
            let v1 = v0 + (a0[k] + a1[k]) * h / 2.0 + (j0[k] - j1[k]) * h2 / 12.0;
            s.pos[i][k] = x0 + (v0 + v1) * h / 2.0 + (a0[k] - a1[k]) * h2 / 12.0;
            s.vel[i][k] = v1;
            s.snap[i][k] = snap0 + crackle * h;
            s.crackle[i][k] = crackle;
        }
        s.acc[i] = a1;
        s.jerk[i] = j1;
        s.last_dt[i] = h;
    }
}

/// The largest power-of-two tick count `<= cap` that divides `tick` and
/// whose length (`d / 2^LEVELS` per tick) is at most `want`; body `i`'s
/// step. An error when even one tick is too long.
fn quantise(i: usize, want: f64, d: f64, cap: u64, tick: u64) -> Result<u64> {
    let mut s = cap.min(TICKS);
    // The largest power of two that divides `tick` (any, for tick 0).
    if tick != 0 {
        s = s.min(1 << tick.trailing_zeros());
    }
    let per_tick = d / TICKS as f64;
    while s > 1 && s as f64 * per_tick > want {
        s >>= 1;
    }
    if s as f64 * per_tick > want {
        return Err(Error::Unsupported(format!(
            "body {i} needs a time step of {want:e}, below the finest block step {per_tick:e} \
             (the interval over 2^{LEVELS}): a close encounter at softening 0, or a diverging system"
        )));
    }
    Ok(s)
}

/// At softening 0, bodies at the same position: an [`Error::CoincidentBodies`]
/// naming the first pair (by sorting the positions, `O(N log N)`).
fn check_coincident(pos: &[[f64; 3]]) -> Result<()> {
    let mut order: Vec<usize> = (0..pos.len()).collect();
    order.sort_by(|a, b| {
        pos[*a]
            .partial_cmp(&pos[*b])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(b))
    });
    for w in order.windows(2) {
        if pos[w[0]] == pos[w[1]] {
            return Err(Error::CoincidentBodies {
                a: w[0].min(w[1]),
                b: w[0].max(w[1]),
                position: pos[w[0]],
            });
        }
    }
    Ok(())
}
