//! [`CpuEngine`]: the state in host memory, the integrator's stages
//! interpreted directly, the forces from one of the two SIMD loops.

use std::ops::Range;

use glam::Vec3;
use gpu_kernels::Vec4;
use rayon::prelude::*;

use super::CpuTuning;
use super::isa::Isa;
use super::loops::{AccBlock, ForceLoops, Soa};
use super::schedule;
use crate::config::{Kernel, Params};
use crate::engine::{BackendKind, Divergence, Engine};
use crate::error::{Error, Result};
use crate::force::Gravity;
use crate::integrator::Stage;
use crate::state::{Bodies, Energy};

/// Bodies per parallel task of the kick and the drift.
const AXPY_CHUNK: usize = 2048;

/// Vectors of i-bodies per parallel task of the potential energy (a fixed
/// cut, so the sum's order does not depend on the thread count).
const ENERGY_CHUNK_VECTORS: usize = 16;

/// Which loop computes the forces, with its blocking.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ForceMethod {
    /// Every body's pull summed over `j = 0..N` in order, `i_block` bodies
    /// per task, j in cache tiles of `j_tile`.
    AllPairs { i_block: usize, j_tile: usize },
    /// Newton's third law: each pair once, on the round-robin schedule of
    /// the blocks that start at `bounds` (the last entry is the padded length).
    ThirdLaw { bounds: Vec<usize> },
}

/// The CPU engine.
pub(crate) struct CpuEngine {
    pos: Vec<Vec4>,
    vel: Vec<Vec4>,
    acc: Vec<Vec4>,
    params: Params,
    /// The force law's parameters (the engine runs gravity only).
    gravity: Gravity,
    loops: ForceLoops,
    method: ForceMethod,
    soa: Soa,
    ax: Vec<f32>,
    ay: Vec<f32>,
    az: Vec<f32>,
}

pub(super) fn round_up(n: usize, k: usize) -> usize {
    n.div_ceil(k) * k
}

/// The loops of the instruction set `tuning` asks for (or the best one
/// detected), guarded or not; [`Error::Unsupported`] for an instruction set
/// this CPU lacks or a blocking parameter of 0.
pub(super) fn force_loops(tuning: &CpuTuning, guard: bool) -> Result<ForceLoops> {
    if tuning.i_block == 0 || tuning.j_tile == 0 {
        return Err(Error::Unsupported(format!(
            "CPU tuning: i_block = {} and j_tile = {} must both be at least 1",
            tuning.i_block, tuning.j_tile
        )));
    }
    let isa = tuning.isa.unwrap_or_else(Isa::detect);
    let support = isa.supported().ok_or_else(|| {
        Error::Unsupported(format!(
            "CPU instruction set {isa} is not available on this CPU (available: {})",
            Isa::available()
                .iter()
                .map(|i| i.name())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    Ok(ForceLoops::new(support, guard))
}

/// Bodies per task of the all-pairs loop for `n` i-bodies: `i_block`, but at
/// least two tasks per thread however large `i_block`, in whole `group`s.
/// The blocking of i does not change any sum (each runs over j in order).
pub(super) fn all_pairs_task(i_block: usize, n: usize, group: usize) -> usize {
    let threads = rayon::current_num_threads();
    round_up(i_block.min(n.div_ceil(2 * threads)).max(1), group)
}

/// Adds to `acc` (x, y, z; i-bodies `0..` of `soa`, a whole number of
/// all-pairs groups) the pull of the bodies `js` of `soa`: tasks of `task`
/// i-bodies in parallel, j in tiles of `j_tile`.
pub(super) fn all_pairs_parallel(
    loops: &ForceLoops,
    soa: &Soa,
    js: Range<usize>,
    task: usize,
    [ax, ay, az]: [&mut Vec<f32>; 3],
    eps2: f32,
    j_tile: usize,
) {
    ax.par_chunks_mut(task)
        .zip(ay.par_chunks_mut(task))
        .zip(az.par_chunks_mut(task))
        .enumerate()
        .for_each(|(k, ((x, y), z))| {
            let mut acc = AccBlock { x, y, z };
            loops.all_pairs(soa, js.clone(), k * task, &mut acc, eps2, j_tile);
        });
}

/// `sum_{i<j<n} m_i m_j / sqrt(|r_ij|^2 + eps^2)` over the first `n` bodies
/// of `soa` (padded to whole vectors), in `f64`: fixed chunks of
/// i-bodies in parallel, their sums added in order, so the same bits on
/// any thread count.
pub(super) fn pair_potential(loops: &ForceLoops, soa: &Soa, n: usize, eps2: f32) -> f64 {
    let chunk = ENERGY_CHUNK_VECTORS * loops.lanes;
    let parts: Vec<f64> = (0..n.div_ceil(chunk))
        .into_par_iter()
        .map(|c| {
            let i0 = c * chunk;
            let len = chunk.min(round_up(n, loops.lanes) - i0);
            loops.potential(soa, i0, len, n, eps2)
        })
        .collect();
    parts.iter().sum()
}

impl CpuEngine {
    /// Copies the bodies in and picks the instruction set and the loop; for
    /// leapfrog, computes the initial accelerations.
    ///
    /// Fails with [`Error::Unsupported`] if [`CpuTuning::isa`] names an
    /// instruction set this CPU lacks, or a blocking parameter is 0.
    pub(crate) fn new(bodies: &Bodies, params: &Params, tuning: CpuTuning) -> Result<CpuEngine> {
        let (pos, vel) = bodies.to_device_layout();
        let max_mass = pos.iter().fold(0.0f32, |m, p| m.max(p.w));
        let gravity = params.gravity_for("the CPU gravity engine")?;
        let loops = force_loops(&tuning, gravity.needs_guard(max_mass))?;
        let n = pos.len();
        let third_law =
            matches!(params.kernel(), Kernel::Triangle { .. }) || n >= tuning.third_law_min_n;
        let method = if third_law {
            ForceMethod::ThirdLaw {
                bounds: schedule::triangle_blocks(
                    n,
                    tuning.i_block,
                    schedule::MIN_BLOCKS,
                    loops.tri_group,
                ),
            }
        } else {
            ForceMethod::AllPairs {
                i_block: all_pairs_task(tuning.i_block, n, loops.all_pairs_group),
                j_tile: tuning.j_tile,
            }
        };
        let mut engine = CpuEngine {
            pos,
            vel,
            acc: vec![Vec4::ZERO; n],
            params: params.clone(),
            gravity,
            loops,
            method,
            soa: Soa::default(),
            ax: Vec::new(),
            ay: Vec::new(),
            az: Vec::new(),
        };
        rayon::scope(|_| engine.run_stages(params.integrator().prepare()));
        Ok(engine)
    }

    /// The length the structure of arrays is padded to for the loop in use.
    fn padded_len(&self) -> usize {
        match &self.method {
            ForceMethod::AllPairs { .. } => round_up(self.pos.len(), self.loops.all_pairs_group),
            ForceMethod::ThirdLaw { bounds } => *bounds.last().expect("at least one bound"),
        }
    }

    /// Runs an integrator's stages.
    fn run_stages(&mut self, stages: &[Stage]) {
        let dt = self.params.dt();
        for stage in stages {
            match *stage {
                Stage::Accelerations => self.compute_accelerations(),
                Stage::Kick(f) => self.kick(f * dt),
                Stage::Drift(f) => self.drift(f * dt),
            }
        }
    }

    fn compute_accelerations(&mut self) {
        let padded = self.padded_len();
        self.soa.fill(&self.pos, padded);
        for a in [&mut self.ax, &mut self.ay, &mut self.az] {
            a.clear();
            a.resize(padded, 0.0);
        }
        let eps2 = self.gravity.eps2();
        let (soa, loops, n) = (&self.soa, &self.loops, self.pos.len());
        match &self.method {
            ForceMethod::AllPairs { i_block, j_tile } => all_pairs_parallel(
                loops,
                soa,
                0..n,
                *i_block,
                [&mut self.ax, &mut self.ay, &mut self.az],
                eps2,
                *j_tile,
            ),
            ForceMethod::ThirdLaw { bounds } => schedule::third_law(
                loops,
                soa,
                bounds,
                n,
                &mut self.ax,
                &mut self.ay,
                &mut self.az,
                eps2,
            ),
        }
        let g = self.gravity.g();
        for (i, a) in self.acc.iter_mut().enumerate() {
            *a = Vec4::new(self.ax[i] * g, self.ay[i] * g, self.az[i] * g, 0.0);
        }
    }

    /// [`Engine::step`], called on a rayon worker thread.
    ///
    /// Each step is checked after every drift and at its end: the first
    /// check that finds a non-finite body reports it, so a body that runs
    /// away in a drift is named before the forces spread its NaN to others.
    fn step_on_pool(&mut self, steps: u64) -> Result<Option<Divergence>> {
        let stages = self.params.integrator().step();
        for s in 1..=steps {
            let mut bad = None;
            for stage in stages {
                self.run_stages(std::slice::from_ref(stage));
                if matches!(stage, Stage::Drift(_)) && bad.is_none() {
                    bad = self.first_non_finite();
                }
            }
            if let Some(body) = bad.or_else(|| self.first_non_finite()) {
                return Ok(Some(Divergence {
                    after_step: s,
                    body,
                    steps_run: s,
                }));
            }
        }
        Ok(None)
    }

    /// `v += a dt` for every body.
    fn kick(&mut self, dt: f32) {
        let loops = &self.loops;
        self.vel
            .par_chunks_mut(AXPY_CHUNK)
            .zip(self.acc.par_chunks(AXPY_CHUNK))
            .for_each(|(v, a)| loops.axpy(v, a, dt));
    }

    /// `x += v dt` for every body.
    fn drift(&mut self, dt: f32) {
        let loops = &self.loops;
        self.pos
            .par_chunks_mut(AXPY_CHUNK)
            .zip(self.vel.par_chunks(AXPY_CHUNK))
            .for_each(|(p, v)| loops.axpy(p, v, dt));
    }

    /// The first body whose position or velocity is not finite.
    fn first_non_finite(&self) -> Option<usize> {
        crate::state::first_non_finite(&self.pos, &self.vel)
    }
}

impl Engine for CpuEngine {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu {
            isa: self.loops.isa(),
            threads: rayon::current_num_threads(),
        }
    }

    fn method(&self) -> &'static str {
        match self.method {
            ForceMethod::AllPairs { .. } => "all-pairs",
            ForceMethod::ThirdLaw { .. } => "third-law",
        }
    }

    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        // On a pool thread: the rounds' parallel loops then start from a
        // worker instead of being injected from outside (and the caller
        // woken) once per round.
        rayon::scope(|_| self.step_on_pool(steps))
    }

    fn read_state(&mut self) -> Result<Bodies> {
        Ok(Bodies::from_device_layout(&self.pos, &self.vel))
    }

    /// Kinetic energy summed in `f64` in body order; the potential by the
    /// SIMD pair loop, each pair once, in `f64` ([`ForceLoops::potential`]),
    /// over fixed chunks of bodies added in order: the same bits on any
    /// thread count.
    fn energy(&mut self) -> Result<Energy> {
        let kinetic = self
            .pos
            .iter()
            .zip(&self.vel)
            .map(|(p, v)| {
                let (vx, vy, vz) = (v.x as f64, v.y as f64, v.z as f64);
                0.5 * p.w as f64 * (vx * vx + vy * vy + vz * vz)
            })
            .sum::<f64>();
        let padded = self.padded_len();
        self.soa.fill(&self.pos, padded);
        let eps2 = self.gravity.eps2();
        let pair_sum = pair_potential(&self.loops, &self.soa, self.pos.len(), eps2);
        Ok(Energy {
            kinetic,
            potential: -(self.gravity.g() as f64) * pair_sum,
        })
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        rayon::scope(|_| self.compute_accelerations());
        Ok(self.acc.iter().map(|a| Vec3::new(a.x, a.y, a.z)).collect())
    }
}
