//! The integrator's passes over the bodies (kick, drift, wrap into the
//! box, the finiteness and half-skin checks) and the step loop.

use std::time::Instant;

use rayon::prelude::*;

use super::{CHUNK, MdEngine};
use crate::engine::Divergence;
use crate::error::Result;
use crate::integrator::Stage;
use crate::md::Rebuild;

/// `x` wrapped into `[0, l)`, and the box lengths it moved by (`x = w + k l`).
pub(super) fn wrap(x: f32, l: f32) -> (f32, i32) {
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

/// Axis `a` of a chunk's coordinates `x` wrapped into `[0, l)`, the box
/// lengths moved counted in `images`. Most chunks have no body to wrap: the
/// test folds without short cuts, so that it vectorises (false for NaN too).
pub(super) fn wrap_chunk(x: &mut [f32], images: &mut [[i32; 3]], a: usize, l: f32) {
    let inside = x.iter().fold(true, |ok, &x| ok & (x >= 0.0) & (x < l));
    if !inside {
        for (x, image) in x.iter_mut().zip(images.iter_mut()) {
            let (wrapped, moved) = wrap(*x, l);
            *x = wrapped;
            image[a] = image[a].wrapping_add(moved);
        }
    }
}

/// Whether every value of `c` is finite (a fold without short cuts, so
/// that it vectorises).
pub(super) fn all_finite(c: &[f32]) -> bool {
    c.iter().fold(true, |ok, x| ok & x.is_finite())
}

/// What a pass of [`MdEngine::integrate`] found.
pub(super) struct Pass {
    /// Every position and velocity is finite.
    finite: bool,
    /// With automatic rebuilds: a body moved more than half the skin since
    /// the last build.
    moved: bool,
    /// In a box: the drift moved a body more than half the box along an
    /// axis.
    too_far: bool,
}

impl MdEngine {
    /// Wraps bodies `range` (slots) into the box, counting images.
    pub(super) fn wrap_all(&mut self, range: std::ops::Range<usize>) {
        let Some(l) = self.lengths else { return };
        for s in range {
            for (a, (pos, l)) in self.pos.iter_mut().zip(l).enumerate() {
                let (w, k) = wrap(pos[s], l);
                pos[s] = w;
                self.images[s][a] = self.images[s][a].wrapping_add(k);
            }
        }
    }

    /// `v += a kick` (if any), then `x += v drift` and the wrap into the
    /// box (if any): one parallel pass over fixed chunks of bodies (one
    /// fork-join per integrator stage or fused pair of stages, not one per
    /// axis and check), which also reports whether every body is finite,
    /// after a drift with automatic rebuilds whether one has moved more
    /// than half the skin since the last build, and in a box whether the
    /// drift moved one more than half the box (an explosion: no integrator
    /// follows that, and the minimum image loses track of its pairs).
    pub(super) fn integrate(&mut self, kick: Option<f32>, drift: Option<f32>) -> Pass {
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
        let (finite, moved, too_far) = px[..n]
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
                let (mut too_far, mut finite) = (false, true);
                for (a, (p, v)) in pos.iter_mut().zip(vel.iter_mut()).enumerate() {
                    // The kick, the drift and the checks in one loop of
                    // the instruction set (they fold without short cuts,
                    // so that they vectorise: they are most of this pass's
                    // time otherwise).
                    let l = lengths.map(|l| l[a]);
                    let found = loops.axis_pass(p, v, &acc[a][at.clone()], kick, drift, l);
                    too_far |= found.too_far;
                    // (Wrapping keeps a value finite or not.)
                    finite &= found.finite;
                    if let (Some(l), false) = (l, found.inside) {
                        wrap_chunk(p, images, a, l);
                    }
                }
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
                (finite, moved, too_far)
            })
            .reduce(
                || (true, false, false),
                |a, b| (a.0 && b.0, a.1 || b.1, a.2 || b.2),
            );
        Pass {
            finite,
            moved,
            too_far,
        }
    }

    /// The lowest user index of a body whose drift of `h` moves it more
    /// than half the box along an axis (see [`Pass::too_far`]).
    fn first_too_far(&self, h: f32) -> Option<usize> {
        let l = self.lengths?;
        (0..self.n)
            .filter(|&s| (0..3).any(|a| (self.vel[a][s] * h).abs() > 0.5 * l[a]))
            .map(|s| self.user[s] as usize)
            .min()
    }

    /// The lowest user index of a body whose position or velocity is not finite.
    pub(super) fn first_non_finite(&self) -> Option<usize> {
        (0..self.n)
            .filter(|&s| !(0..3).all(|a| self.pos[a][s].is_finite() && self.vel[a][s].is_finite()))
            .map(|s| self.user[s] as usize)
            .min()
    }

    /// [`Engine::step`], on a rayon worker thread. A step stops at the first
    /// drift that leaves a body non-finite.
    pub(super) fn step_on_pool(&mut self, steps: u64) -> Result<Option<Divergence>> {
        if self.ens.is_some() {
            return self.step_ensemble(steps);
        }
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
                        self.maybe_rebuild()?;
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
                let pass = self.integrate(kick, drift);
                self.moved_far |= pass.moved;
                self.stats.integrate_seconds += t.elapsed().as_secs_f64();
                // A body that jumped half the box is reported with every
                // value finite: `Simulation` tells the two apart by that.
                let bad = if !pass.finite {
                    self.first_non_finite()
                } else if pass.too_far {
                    drift.and_then(|h| self.first_too_far(h))
                } else {
                    None
                };
                if !pass.finite || pass.too_far {
                    let body = bad.expect("a pass saw a bad body");
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
