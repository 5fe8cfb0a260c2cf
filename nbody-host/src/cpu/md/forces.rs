//! The force evaluation (through the lists or all pairs, the half lists'
//! reaction buffers summed in a fixed order) and the thermo sums.

use std::time::Instant;

use rayon::prelude::*;

use super::build::Lists;
use super::loops::{Forces, List, Pos};
use super::{CHUNK, MdEngine};
use crate::error::{Error, Result};
use crate::md::ThermoSums;

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

impl MdEngine {
    /// `acc = F / m` at the current positions, with the current lists;
    /// `self.virial` their virial `W = sum_{i<j} r_ij . F_ij` (the parts'
    /// sums added in a fixed order).
    pub(super) fn forces(&mut self) {
        let t = Instant::now();
        self.refresh_ghosts();
        let n = self.n;
        let (loops, c) = (&self.loops, &self.setup);
        let parts: Vec<f64> = match &mut self.nbr {
            None => {
                let pos = Pos {
                    x: &self.pos[0],
                    y: &self.pos[1],
                    z: &self.pos[2],
                    t: &self.types,
                };
                let [ax, ay, az] = &mut self.acc;
                let inv_mass = &self.inv_mass;
                ax.par_chunks_mut(CHUNK)
                    .zip(ay.par_chunks_mut(CHUNK))
                    .zip(az.par_chunks_mut(CHUNK))
                    .enumerate()
                    .map(|(k, ((x, y), z))| {
                        let mut out = Forces { x, y, z };
                        let w = loops.full_forces(pos, n, k * CHUNK, &mut out, c);
                        let m = &inv_mass[k * CHUNK..];
                        for (i, w) in m.iter().take(out.x.len()).enumerate() {
                            out.x[i] *= w;
                            out.y[i] *= w;
                            out.z[i] *= w;
                        }
                        // Each pair from both ends.
                        0.5 * w
                    })
                    .collect()
            }
            Some(nbr) if !nbr.lists.half => {
                let pos = Pos {
                    x: &self.pos[0],
                    y: &self.pos[1],
                    z: &self.pos[2],
                    t: &self.types,
                };
                let inv_mass = &self.inv_mass;
                task_parts(&mut self.acc, &nbr.lists)
                    .into_par_iter()
                    .zip(&nbr.lists.tasks)
                    .map(|([x, y, z], layer)| {
                        for a in [&mut *x, &mut *y, &mut *z] {
                            a.fill(0.0);
                        }
                        let mut out = Forces { x, y, z };
                        let w = loops.list_forces(pos, &mut out, layer.list(), false, c);
                        let m = &inv_mass[layer.first..layer.first + layer.len];
                        for (i, w) in m.iter().enumerate() {
                            out.x[i] *= w;
                            out.y[i] *= w;
                            out.z[i] *= w;
                        }
                        // Full lists: each pair from both ends.
                        0.5 * w
                    })
                    .collect()
            }
            Some(nbr) => {
                let lists = &nbr.lists;
                let (pos, types) = (&self.pos, &self.types);
                let parts = nbr
                    .bufs
                    .par_iter_mut()
                    .zip(&lists.tasks)
                    .map(|(buf, layer)| {
                        let w = layer.first..layer.first + layer.window;
                        let [bx, by, bz] = buf;
                        for b in [&mut *bx, &mut *by, &mut *bz] {
                            b.fill(0.0);
                        }
                        loops.list_forces(
                            Pos {
                                x: &pos[0][w.clone()],
                                y: &pos[1][w.clone()],
                                z: &pos[2][w.clone()],
                                t: &types[w],
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
                        )
                    })
                    .collect();
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
                parts
            }
        };
        self.virial = parts.iter().sum();
        self.stats.pair_seconds += t.elapsed().as_secs_f64();
    }

    /// At the start: every force finite, or the overlapping pair named.
    pub(super) fn check_initial_forces(&self) -> Result<()> {
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

    /// Kinetic energy (in slot order), potential energy and virial.
    pub(super) fn sums(&mut self) -> ThermoSums {
        let t = Instant::now();
        self.refresh_ghosts();
        let n = self.n;
        let kinetic = (0..n)
            .map(|s| {
                let v2: f64 = (0..3).map(|a| (self.vel[a][s] as f64).powi(2)).sum();
                0.5 * self.mass[s] as f64 * v2
            })
            .sum::<f64>();
        let (loops, c) = (&self.loops, &self.setup);
        let parts: Vec<(f64, f64)> = match &self.nbr {
            None => {
                let pos = Pos {
                    x: &self.pos[0],
                    y: &self.pos[1],
                    z: &self.pos[2],
                    t: &self.types,
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
                let (pos, types) = (&self.pos, &self.types);
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
                                z: &pos[2][w.clone()],
                                t: &types[w],
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
                                t: types,
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
            coupling: self.coupling_energy(),
        }
    }
}
