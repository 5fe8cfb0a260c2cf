//! Why a run stopped, and what cannot run at all: the explanation of an
//! engine's divergence report (a body beyond the range of `f32` squared
//! distances, one that jumped half the box) as [`Error::Diverged`] or
//! [`Error::Exploded`], kept for every later step ([`Stopped`]), and the
//! refusal of positions too far outside a periodic box.

use crate::error::{Error, Result};
use crate::state::Bodies;

use super::Simulation;

impl Simulation {
    /// Why the run stopped at `step`, where the engine saw `body` go bad.
    /// The state (and `before`, the state at the start of the batch, where
    /// it was read) says whether another body lies beyond the range of
    /// `f32` squared distances (gravity: every force turns NaN, so the
    /// engine's first non-finite body is body 0 whoever caused it), or, with every
    /// value finite in a periodic box, that the engine stopped a body that
    /// moved more than half the box in one step.
    pub(super) fn explain(&self, step: u64, body: usize, before: Option<&Bodies>) -> Stopped {
        let plain = Stopped {
            step,
            body,
            reason: None,
            box_too_small: None,
        };
        let Ok(bodies) = self.bodies() else {
            return plain;
        };
        let farthest = |b: &Bodies| {
            b.positions
                .iter()
                .enumerate()
                .filter(|(_, p)| p.is_finite())
                .map(|(i, p)| (i, *p, p.abs().max_element()))
                .max_by(|a, b| a.2.total_cmp(&b.2))
        };
        let far = [Some(bodies), before]
            .into_iter()
            .flatten()
            .filter_map(farthest)
            .find(|&(_, _, x)| x > FAR_FOR_F32);
        // Where the engine named that very body, its report stands.
        if let Some((i, p, x)) = far
            && i != body
        {
            return Stopped {
                step,
                body: i,
                reason: Some(format!(
                    "is at {:?}, |x| = {x:e}: beyond about {FAR_FOR_F32:.1e} the squares of \
                     distances overflow f32 and every force turns non-finite; rescale the units \
                     or remove the body",
                    p.to_array()
                )),
                box_too_small: None,
            };
        }
        if let (Some(lengths), None) = (
            self.params.boundary().lengths_f32(),
            bodies.first_non_finite(),
        ) && let Some(v) = bodies.velocities.get(body)
        {
            let dt = self.params.dt_f64();
            return Stopped {
                step,
                body,
                reason: Some(format!(
                    "moved more than half the box ({:.4} wide) in one step: speed {:.3e}, dt {dt}; \
                     atoms that overlap (or nearly) in the initial state, or too large a time step",
                    lengths.iter().copied().fold(f32::INFINITY, f32::min),
                    v.length()
                )),
                box_too_small: None,
            };
        }
        plain
    }
}

/// How many box lengths outside a periodic box a position may lie: out to
/// there `f32` spaces its numbers at most `2^-13` box lengths apart, and
/// the wrap into the box (exact, with image counters) keeps the position
/// to that. A state from a file, say, with positions of 1e7 in a box of 7
/// (spaced 1 apart there) would be placed in the box to within a seventh
/// of it: refused instead of wrapped.
const REACH_OF_BOX: f32 = 1024.0;

/// Refuses a position more than [`REACH_OF_BOX`] box lengths outside the
/// box, naming its body ([`Error::InvalidCombination`]).
pub(super) fn within_reach_of_box(bodies: &Bodies, lengths: [f32; 3]) -> Result<()> {
    for (i, p) in bodies.positions.iter().enumerate() {
        for (a, l) in lengths.iter().enumerate() {
            let x = p[a];
            let out = if x < 0.0 { -x } else { x - l } / l;
            if out > REACH_OF_BOX {
                let spacing = f32::from_bits(x.abs().to_bits() + 1) - x.abs();
                return Err(Error::InvalidCombination(format!(
                    "body {i}: position {:?} lies {out:.1e} box lengths outside the periodic box \
                     [0, {l}) along axis {a}: f32 spaces numbers {spacing:e} apart there, too \
                     coarse to place the body in the box; wrap the positions into the box first",
                    p.to_array()
                )));
            }
        }
    }
    Ok(())
}

/// How far out (any coordinate) a body can lie before the kernels' squared
/// distances to a body on the other side overflow `f32`: half the square
/// root of `f32::MAX`.
const FAR_FOR_F32: f32 = 9.2e18;

/// Where and why a run stopped (what every later step reports again).
#[derive(Clone, Debug)]
pub(crate) struct Stopped {
    step: u64,
    body: usize,
    /// Found by the physics ([`Error::Exploded`]); `None`: a non-finite
    /// value ([`Error::Diverged`]).
    reason: Option<String>,
    /// A barostat's box too small for the cutoff: `(length, needed)`
    /// ([`Error::BoxTooSmall`]), which outranks the other two.
    box_too_small: Option<(f64, f64)>,
}

impl Stopped {
    /// A run whose barostat shrank the box to a shortest `length`, under
    /// the `needed` one, at `step`.
    pub(crate) fn box_too_small(step: u64, body: usize, length: f64, needed: f64) -> Stopped {
        Stopped {
            step,
            body,
            reason: None,
            box_too_small: Some((length, needed)),
        }
    }

    /// The error to report.
    pub(crate) fn error(&self) -> Error {
        if let Some((length, needed)) = self.box_too_small {
            return Error::BoxTooSmall {
                step: self.step,
                length,
                needed,
            };
        }
        match &self.reason {
            Some(reason) => Error::Exploded {
                step: self.step,
                body: self.body,
                reason: reason.clone(),
            },
            None => Error::Diverged {
                step: self.step,
                body: self.body,
            },
        }
    }

    /// The body to blame.
    pub(crate) fn body(&self) -> usize {
        self.body
    }
}
