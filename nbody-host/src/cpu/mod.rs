//! The CPU backend: multithreaded (rayon), same physics as the kernels.
//!
//! This is the straightforward version: scalar `f32` through the shared
//! [`interaction`](gpu_kernels::interaction::interaction), one rayon task per
//! chunk of bodies. Deterministic: the same input gives bit-identical output.

use glam::Vec3;
use gpu_kernels::Vec4;
use gpu_kernels::interaction::{PointMass, Vec3 as Acc, interaction, potential};
use rayon::prelude::*;

use crate::backend::{Divergence, Engine, EngineOptions};
use crate::config::{BackendKind, Integrator, Params};
use crate::error::Result;
use crate::state::{Bodies, Energy};

/// Blocking parameters of the CPU backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTuning {
    /// Bodies per rayon task.
    pub chunk: usize,
}

impl Default for CpuTuning {
    fn default() -> Self {
        CpuTuning { chunk: 64 }
    }
}

/// The CPU engine.
pub struct CpuEngine {
    pos: Vec<Vec4>,
    vel: Vec<Vec4>,
    acc: Vec<Vec4>,
    params: Params,
    tuning: CpuTuning,
}

impl CpuEngine {
    /// Copies the bodies in; for leapfrog, computes the initial accelerations.
    pub fn new(bodies: &Bodies, params: &Params, options: &EngineOptions) -> Result<CpuEngine> {
        let (pos, vel) = bodies.to_device_layout();
        let n = pos.len();
        let mut engine = CpuEngine {
            pos,
            vel,
            acc: vec![Vec4::ZERO; n],
            params: *params,
            tuning: options.cpu_tuning,
        };
        if params.integrator == Integrator::Leapfrog {
            engine.compute_accelerations();
        }
        Ok(engine)
    }

    fn compute_accelerations(&mut self) {
        let (g, eps2) = (self.params.g, self.params.eps2());
        let pos = &self.pos;
        self.acc
            .par_chunks_mut(self.tuning.chunk.max(1))
            .enumerate()
            .for_each(|(c, out)| {
                let start = c * self.tuning.chunk.max(1);
                for (k, a) in out.iter_mut().enumerate() {
                    let pi = PointMass::from(pos[start + k]);
                    let mut sum = Acc::zero();
                    for &pj in pos {
                        sum = interaction(sum, &pi, &PointMass::from(pj), eps2);
                    }
                    *a = sum.scale(g).to_vec4();
                }
            });
    }

    /// `v += a dt` for every body.
    fn kick(&mut self, dt: f32) {
        self.vel.par_iter_mut().zip(&self.acc).for_each(|(v, a)| {
            v.x = a.x.mul_add(dt, v.x);
            v.y = a.y.mul_add(dt, v.y);
            v.z = a.z.mul_add(dt, v.z);
        });
    }

    /// `x += v dt`; returns the first body that is not finite afterwards.
    fn drift(&mut self, dt: f32) -> Option<usize> {
        self.pos.par_iter_mut().zip(&self.vel).for_each(|(p, v)| {
            p.x = v.x.mul_add(dt, p.x);
            p.y = v.y.mul_add(dt, p.y);
            p.z = v.z.mul_add(dt, p.z);
        });
        self.pos.iter().zip(&self.vel).position(|(p, v)| {
            !(p.x.is_finite()
                && p.y.is_finite()
                && p.z.is_finite()
                && v.x.is_finite()
                && v.y.is_finite()
                && v.z.is_finite())
        })
    }
}

impl Engine for CpuEngine {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu {
            isa: "scalar",
            threads: rayon::current_num_threads(),
        }
    }

    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        let dt = self.params.dt;
        for s in 1..=steps {
            let bad = match self.params.integrator {
                Integrator::SemiImplicitEuler => {
                    self.compute_accelerations();
                    self.kick(dt);
                    self.drift(dt)
                }
                Integrator::Leapfrog => {
                    self.kick(0.5 * dt);
                    let bad = self.drift(dt);
                    self.compute_accelerations();
                    self.kick(0.5 * dt);
                    bad
                }
            };
            if let Some(body) = bad {
                return Ok(Some(Divergence {
                    after_step: s,
                    body,
                    steps_run: s,
                }));
            }
        }
        Ok(None)
    }

    fn read_state(&mut self) -> Result<Bodies> {
        Ok(Bodies::from_device_layout(&self.pos, &self.vel))
    }

    fn energy(&mut self) -> Result<Energy> {
        let eps2 = self.params.eps2();
        let pos = &self.pos;
        let (kinetic, pair_sum) = pos
            .par_iter()
            .zip(&self.vel)
            .enumerate()
            .map(|(i, (p, v))| {
                let kinetic = 0.5
                    * p.w as f64
                    * ((v.x as f64).powi(2) + (v.y as f64).powi(2) + (v.z as f64).powi(2));
                let pi = PointMass::from(*p);
                let phi: f64 = pos
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, &pj)| potential(&pi, &PointMass::from(pj), eps2) as f64)
                    .sum();
                (kinetic, p.w as f64 * phi)
            })
            .reduce(|| (0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
        Ok(Energy {
            kinetic,
            potential: -0.5 * self.params.g as f64 * pair_sum,
        })
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        self.compute_accelerations();
        Ok(self.acc.iter().map(|a| Vec3::new(a.x, a.y, a.z)).collect())
    }
}
