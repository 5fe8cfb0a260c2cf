//! The MD plan's parameters and their checks: what [`MdPlan::new`] refuses
//! before anything is allocated, and the constants it derives in `f64`.

use gpu_kernels::periodic::Grid;
use gpu_kernels::shape;

use super::{MdPlan, with_headroom};
use crate::error::{Error, Result};
use crate::pair::PairPotential;

/// The physics and numerics of a run, in the caller's (reduced) units.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MdParams {
    /// Box lengths; the box is `[0, L)` per dimension.
    pub lengths: [f32; 3],
    /// The pair potential (validated when made): its law, coefficient
    /// table and cutoffs.
    pub pair: PairPotential,
    /// Verlet skin: lists hold pairs within `r_c + skin` (`r_c` the
    /// longest cutoff).
    pub skin: f32,
    /// Time step.
    pub dt: f32,
    /// Cells per side; `None`: as many as fit (`floor(L / (r_c + skin))`).
    pub cells: Option<[u32; 3]>,
    /// Block of the scans (a valid block size).
    pub scan_block: u32,
    /// Block of every other kernel (a valid block size).
    pub block: u32,
}

impl MdParams {
    /// The parameters with automatic cells and the default blocks.
    pub(crate) fn new(lengths: [f32; 3], pair: PairPotential, skin: f32, dt: f32) -> MdParams {
        MdParams {
            lengths,
            pair,
            skin,
            dt,
            cells: None,
            scan_block: 256,
            block: 128,
        }
    }

    /// The longest cutoff of the pair potential.
    pub(crate) fn cutoff(&self) -> f32 {
        self.pair.max_cutoff()
    }
}

pub(super) fn invalid(what: &'static str, value: f64, requirement: &'static str) -> Error {
    Error::InvalidMdSetting {
        what,
        value,
        requirement,
    }
}

impl MdPlan {
    /// Checks the parameters for `n` bodies; allocates nothing.
    pub(crate) fn new(n: usize, params: MdParams) -> Result<MdPlan> {
        let p = &params;
        if n == 0 {
            return Err(Error::NoBodies);
        }
        // Ghosts (up to 7 per body) and list indices stay below 2^31.
        let max = (shape::MAX_BODIES / 8) as usize;
        if n > max {
            return Err(Error::TooManyBodies { n, max });
        }
        for (k, &l) in p.lengths.iter().enumerate() {
            if !(l.is_finite() && l > 0.0) {
                return Err(invalid(
                    ["box length x", "box length y", "box length z"][k],
                    l as f64,
                    "must be finite and > 0",
                ));
            }
        }
        if !(p.skin.is_finite() && p.skin >= 0.0) {
            return Err(invalid("skin", p.skin as f64, "must be finite and >= 0"));
        }
        if !(p.dt.is_finite() && p.dt > 0.0) {
            return Err(Error::InvalidTimeStep(p.dt as f64));
        }
        for (what, b) in [("scan block", p.scan_block), ("block", p.block)] {
            if !shape::is_valid_block(b) {
                return Err(invalid(
                    what,
                    b as f64,
                    "must be a power of two in 32..=1024",
                ));
            }
        }
        let rlist = p.cutoff() as f64 + p.skin as f64;
        let shortest = p
            .lengths
            .iter()
            .fold(f64::INFINITY, |m, &l| m.min(l as f64));
        if rlist > 0.5 * shortest {
            return Err(invalid(
                "cutoff + skin",
                rlist,
                "must be at most half the shortest box length (minimum image)",
            ));
        }
        let cells = match p.cells {
            Some(c) => c,
            None => p
                .lengths
                .map(|l| ((l as f64 / rlist) as u32).clamp(1, 1024)),
        };
        for (k, &c) in cells.iter().enumerate() {
            if c == 0 || (p.lengths[k] as f64 / c as f64) < rlist {
                return Err(invalid(
                    "cells per side",
                    c as f64,
                    "must be at least 1 with cells no smaller than cutoff + skin",
                ));
            }
        }
        if cells.iter().map(|&c| c as u64).product::<u64>() >= shape::MAX_BODIES as u64 {
            return Err(invalid("cells", cells[0] as f64, "too many cells"));
        }
        let n = n as u32;
        let volume: f64 = p.lengths.iter().map(|&l| l as f64).product();
        let expected = n as f64 / volume * 4.0 / 3.0 * std::f64::consts::PI * rlist.powi(3);
        let rg = rlist as f32 + p.lengths.iter().fold(0.0f32, |m, &l| m.max(l)) / 262_144.0;
        let ghost_fraction: f64 = p
            .lengths
            .iter()
            .map(|&l| 1.0 + 2.0 * (rg as f64 / l as f64).min(0.5))
            .product::<f64>()
            - 1.0;
        let grid = Grid {
            l: p.lengths,
            n: cells,
        };
        let plan = MdPlan {
            n,
            grid,
            built: grid,
            rlist2: (rlist * rlist) as f32,
            limit2: (0.25 * p.skin as f64 * p.skin as f64) as f32,
            cap: with_headroom((expected.min(n as f64) as u32).max(4)),
            gcap: ((n as f64 * ghost_fraction * 1.25) as u32 + 32).min(7 * n),
            ghosts: 0,
            entries: 0,
            builds: 0,
            every: None,
            since_build: 0,
            dangerous_builds: 0,
            ens: None,
            npt: None,
            params,
        };
        plan.nlist_words()?;
        Ok(plan)
    }
}
