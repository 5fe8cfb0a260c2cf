//! [`Library`]: the state behind the GRAPE-6 calls, as safe Rust. The C and
//! Fortran entry points (`ffi.rs`) hold one behind a mutex.
//!
//! A calculation is GRAPE-6's two halves: [`Library::firsthalf`] checks the
//! i-particles and predicts the j-particles to `ti` (a snapshot: j-particles
//! set afterwards count from the next calculation); [`Library::lasthalf`]
//! evaluates force, jerk and potential (once; repeated calls return the same),
//! the nearest neighbours when asked, and the neighbour lists are found on the
//! first request for them. A `firsthalf` that is never finished costs only
//! its checks and the prediction (ph4's `sync_gpu` issues such calls).

use nbody_host::hermite::{Field, HermiteForces, Sink};
use rayon::prelude::*;

use crate::config::Config;
use crate::error::{
    G6_ERR_ARGUMENT, G6_ERR_CONFIG, G6_ERR_DEVICE, G6_ERR_NOT_FINITE, G6_ERR_PIPES,
    G6_ERR_SEQUENCE, G6_OVERFLOW, G6Error, Result,
};
use crate::jmem::{JMemory, JParticle, Predicted};

/// The i-particles of one calculation, as `g6calc_firsthalf` passes them.
#[derive(Clone, Copy, Debug)]
pub struct IBlock<'a> {
    /// Each i-particle's index: j-particles with the same index are skipped.
    pub index: &'a [i32],
    /// Positions (predicted to `ti` by the caller).
    pub x: &'a [[f64; 3]],
    /// Velocities (predicted to `ti` by the caller).
    pub v: &'a [[f64; 3]],
    /// Softening squared, for every pair.
    pub eps2: f64,
    /// Each i-particle's neighbour radius squared (`None`: no neighbour lists).
    pub h2: Option<&'a [f64]>,
}

/// Force, jerk and potential (GRAPE-6 units: no `G`) of one i-particle.
pub type Results = Field;

/// The neighbours of each i-particle of a calculation.
#[derive(Debug)]
struct Neighbours {
    /// The index of the nearest j-particle (unsoftened distance; -1 if none).
    nearest: Vec<i32>,
    /// How many j-particles are within `h2` (the full count).
    count: Vec<usize>,
    /// Their indices (at most `nb_max`, the first by address), sorted.
    list: Vec<Vec<i32>>,
}

/// A calculation begun by [`Library::firsthalf`].
#[derive(Debug)]
struct Block {
    nj: usize,
    index: Vec<i32>,
    sinks: Vec<Sink>,
    eps2: f64,
    h2: Option<Vec<f64>>,
    fields: Option<Vec<Field>>,
    neighbours: Option<Neighbours>,
}

/// Where the last calculation stands.
#[derive(Debug)]
enum Calc {
    None,
    Failed(G6Error),
    Begun(Box<Block>),
}

/// What [`Library::neighbour_list`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListInfo {
    /// The number of neighbours (may exceed what was written).
    pub count: usize,
    /// Entries written.
    pub written: usize,
}

/// The GRAPE-6 state: j-memory, the time `ti`, the last calculation, and
/// where the forces run.
pub struct Library {
    config: Config,
    forces: Box<dyn HermiteForces>,
    j: JMemory,
    ti: f64,
    predicted: Predicted,
    calc: Calc,
}

/// Pairs below which the neighbour search runs on the calling thread.
const PARALLEL_PAIRS: usize = 1 << 15;

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("config", &self.config)
            .field("forces", &self.forces.kind())
            .field("filled", &self.j.filled())
            .field("ti", &self.ti)
            .finish()
    }
}

impl Library {
    /// A library with `config`'s pipes, memory, precision and backend (on
    /// the CPU, the force loops of the best instruction set it has; on a
    /// GPU, nbody-host's Hermite kernels with `config.block` threads per
    /// block). No device, or a build without the `cuda` feature, is
    /// [`G6_ERR_DEVICE`]; a backend the library does not know,
    /// [`G6_ERR_CONFIG`].
    pub fn open(config: Config) -> Result<Library> {
        let forces = config
            .backend
            .hermite_forces(config.precision, config.block)
            .map_err(|e| {
                let code = match e {
                    nbody_host::Error::InvalidBlockSize { .. } => G6_ERR_CONFIG,
                    _ => G6_ERR_DEVICE,
                };
                G6Error::new(
                    code,
                    format!("the force loops on {:?}: {e}", config.backend),
                )
            })?;
        Ok(Library {
            j: JMemory::new(config.jmem),
            config,
            forces,
            ti: 0.0,
            predicted: Predicted::default(),
            calc: Calc::None,
        })
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The force loops in use (where they run, precision).
    pub fn forces(&self) -> &dyn HermiteForces {
        &*self.forces
    }

    /// i-particles per calculation.
    pub fn npipes(&self) -> usize {
        self.config.npipes
    }

    /// The time the j-particles are predicted to.
    pub fn ti(&self) -> f64 {
        self.ti
    }

    /// Addresses `0..filled()` have all been set.
    pub fn filled(&self) -> usize {
        self.j.filled()
    }

    /// The j-particle stored at `address`, if one was.
    pub fn j_particle(&self, address: usize) -> Option<&JParticle> {
        self.j.get(address)
    }

    /// Sets the time the next calculation predicts the j-particles to.
    pub fn set_ti(&mut self, ti: f64) -> Result<()> {
        if !ti.is_finite() {
            return Err(G6Error::new(
                G6_ERR_NOT_FINITE,
                format!("ti = {ti} is not finite"),
            ));
        }
        self.ti = ti;
        Ok(())
    }

    /// Stores a j-particle at `address`.
    pub fn set_j_particle(&mut self, address: i32, p: JParticle) -> Result<()> {
        self.j.store(address, p)
    }

    /// `ni` checked against the pipes (`1..=npipes`), before any array of
    /// that length is read.
    pub fn check_ni(&self, ni: i32) -> Result<usize> {
        if ni < 1 || ni as usize > self.config.npipes {
            return Err(G6Error::new(
                G6_ERR_PIPES,
                format!(
                    "ni = {ni}: an active block must have 1 to g6_npipes() = {} i-particles \
                     (send larger blocks in chunks of g6_npipes())",
                    self.config.npipes
                ),
            ));
        }
        Ok(ni as usize)
    }

    /// Records a failed `firsthalf` whose arguments could not even be read:
    /// the next `lasthalf` reports it.
    pub fn fail_calculation(&mut self, e: &G6Error) {
        self.calc = Calc::Failed(e.clone());
    }

    /// Begins a calculation of `i`'s field from j-addresses `0..nj` predicted
    /// to `ti` (GRAPE-6's `g6calc_firsthalf`). On error, the next
    /// [`lasthalf`](Self::lasthalf) returns the same error.
    pub fn firsthalf(&mut self, nj: i32, i: IBlock<'_>) -> Result<()> {
        match self.begin(nj, i) {
            Ok(b) => {
                self.calc = Calc::Begun(Box::new(b));
                Ok(())
            }
            Err(e) => {
                self.calc = Calc::Failed(e.clone());
                Err(e)
            }
        }
    }

    fn begin(&mut self, nj: i32, i: IBlock<'_>) -> Result<Block> {
        let ni = i.index.len();
        self.check_ni(ni as i32)?;
        let nj = self.j.check_nj(nj)?;
        if i.x.len() != ni || i.v.len() != ni || i.h2.is_some_and(|h| h.len() != ni) {
            return Err(G6Error::new(
                G6_ERR_ARGUMENT,
                "the i-particle arrays have different lengths",
            ));
        }
        if !(i.eps2.is_finite() && i.eps2 >= 0.0) {
            return Err(G6Error::new(
                if i.eps2.is_finite() {
                    G6_ERR_ARGUMENT
                } else {
                    G6_ERR_NOT_FINITE
                },
                format!(
                    "eps2 = {}: the softening squared must be finite and >= 0",
                    i.eps2
                ),
            ));
        }
        let finite3 = |v: &[f64; 3]| v.iter().all(|c| c.is_finite());
        for k in 0..ni {
            for (what, ok, value) in [
                ("position xi", finite3(&i.x[k]), i.x[k]),
                ("velocity vi", finite3(&i.v[k]), i.v[k]),
            ] {
                if !ok {
                    return Err(G6Error::new(
                        G6_ERR_NOT_FINITE,
                        format!(
                            "i-particle {k} (index {}): its {what} is not finite: {value:?}",
                            i.index[k]
                        ),
                    ));
                }
            }
            if let Some(h2) = i.h2
                && h2[k].is_nan()
            {
                return Err(G6Error::new(
                    G6_ERR_NOT_FINITE,
                    format!(
                        "i-particle {k} (index {}): its neighbour radius squared h2 is NaN",
                        i.index[k]
                    ),
                ));
            }
        }
        let mut sinks = Vec::with_capacity(ni);
        for k in 0..ni {
            sinks.push(Sink {
                pos: i.x[k],
                vel: i.v[k],
                slot: self.j.slot_of(i.index[k], nj)?,
            });
        }
        self.j.predict(self.ti, nj, &mut self.predicted)?;
        Ok(Block {
            nj,
            index: i.index.to_vec(),
            sinks,
            eps2: i.eps2,
            h2: i.h2.map(|h| h.to_vec()),
            fields: None,
            neighbours: None,
        })
    }

    /// The i-particles of the begun calculation (`ni`).
    pub fn ni(&self) -> Option<usize> {
        match &self.calc {
            Calc::Begun(b) => Some(b.index.len()),
            _ => None,
        }
    }

    /// Finishes the calculation begun with `nj` and `ni` i-particles (GRAPE-6's
    /// `g6calc_lasthalf`, or `lasthalf2` with `nearest`): force, jerk and
    /// potential into `out` (length `ni`), the nearest neighbours' indices
    /// into `nearest`.
    pub fn lasthalf(
        &mut self,
        nj: i32,
        ni: i32,
        out: &mut [Results],
        nearest: Option<&mut [i32]>,
    ) -> Result<()> {
        let forces = &mut self.forces;
        let nb_max = self.config.nb_max;
        let b = begun(&mut self.calc, Some((nj, ni)))?;
        let predicted = &self.predicted;
        if out.len() != b.index.len() || nearest.as_ref().is_some_and(|n| n.len() != out.len()) {
            return Err(G6Error::new(
                G6_ERR_ARGUMENT,
                "the output arrays' lengths differ from ni",
            ));
        }
        if b.fields.is_none() {
            let mut fields = vec![Field::default(); b.index.len()];
            forces
                .evaluate(&predicted.sources, &b.sinks, b.eps2, &mut fields)
                .map_err(|e| {
                    G6Error::new(
                        G6_ERR_DEVICE,
                        format!("the force calculation on {}: {e}", forces.kind()),
                    )
                })?;
            check_finite(b, predicted, &fields)?;
            b.fields = Some(fields);
        }
        out.copy_from_slice(b.fields.as_ref().expect("just evaluated"));
        if let Some(nearest) = nearest {
            let nb = neighbours(b, predicted, nb_max);
            nearest.copy_from_slice(&nb.nearest);
        }
        Ok(())
    }

    /// GRAPE-6's `g6_read_neighbour_list`: finds the neighbour lists of the
    /// last calculation; an error with [`G6_OVERFLOW`] if a list holds more
    /// than `nb_max`.
    pub fn read_neighbour_lists(&mut self) -> Result<()> {
        let nb_max = self.config.nb_max;
        let b = lists_block(&mut self.calc)?;
        let nb = neighbours(b, &self.predicted, nb_max);
        if let Some((k, &count)) = nb.count.iter().enumerate().find(|(_, c)| **c > nb_max) {
            return Err(G6Error::new(
                G6_OVERFLOW,
                format!(
                    "i-particle {k} (index {}) has {count} neighbours, more than the {nb_max} a \
                     list holds (GRAPE6_NB_MAX): its list is truncated; shrink h2 or raise \
                     GRAPE6_NB_MAX",
                    b.index[k]
                ),
            ));
        }
        Ok(())
    }

    /// GRAPE-6's `g6_get_neighbour_list`: the sorted indices of i-particle
    /// `ipipe`'s neighbours into `out` (at most its length), with the
    /// overflow error (code [`G6_OVERFLOW`]) when they did not all fit.
    pub fn neighbour_list(
        &mut self,
        ipipe: i32,
        out: &mut [i32],
    ) -> Result<(ListInfo, Option<G6Error>)> {
        let nb_max = self.config.nb_max;
        let b = lists_block(&mut self.calc)?;
        let ni = b.index.len();
        if ipipe < 0 || ipipe as usize >= ni {
            return Err(G6Error::new(
                G6_ERR_ARGUMENT,
                format!(
                    "ipipe = {ipipe}: the last calculation had i-particles 0 to {}",
                    ni - 1
                ),
            ));
        }
        let k = ipipe as usize;
        let nb = neighbours(b, &self.predicted, nb_max);
        let list = &nb.list[k];
        let written = list.len().min(out.len());
        out[..written].copy_from_slice(&list[..written]);
        let info = ListInfo {
            count: nb.count[k],
            written,
        };
        let overflow = (info.count > written).then(|| {
            G6Error::new(
                G6_OVERFLOW,
                format!(
                    "i-particle {k} (index {}) has {} neighbours; {written} written (maxlength {}, \
                     at most {nb_max} kept: GRAPE6_NB_MAX)",
                    b.index[k],
                    info.count,
                    out.len()
                ),
            )
        });
        Ok((info, overflow))
    }

    /// Checks that a calculation was begun with `nj` and `ni` (and did not
    /// fail) before its results are asked for; its `ni`.
    pub fn check_begun(&mut self, nj: i32, ni: i32) -> Result<usize> {
        begun(&mut self.calc, Some((nj, ni))).map(|b| b.index.len())
    }

    /// Back to a consistent state after a panic inside a call: the last
    /// calculation and the prediction are dropped.
    pub fn recover(&mut self) {
        self.calc = Calc::None;
        self.predicted = Predicted::default();
    }
}

/// The begun calculation, checked against the `nj` and `ni` the caller
/// finishes it with.
fn begun(calc: &mut Calc, call: Option<(i32, i32)>) -> Result<&mut Block> {
    match calc {
        Calc::None => Err(G6Error::new(
            G6_ERR_SEQUENCE,
            "no calculation to finish: call g6calc_firsthalf first",
        )),
        Calc::Failed(e) => Err(G6Error::new(
            e.code,
            format!(
                "the g6calc_firsthalf of this calculation failed: {}",
                e.message
            ),
        )),
        Calc::Begun(b) => {
            if let Some((nj, ni)) = call
                && (nj as i64 != b.nj as i64 || ni as i64 != b.index.len() as i64)
            {
                return Err(G6Error::new(
                    G6_ERR_SEQUENCE,
                    format!(
                        "nj = {nj}, ni = {ni}, but the g6calc_firsthalf began nj = {}, ni = {}",
                        b.nj,
                        b.index.len()
                    ),
                ));
            }
            Ok(b)
        }
    }
}

/// The begun calculation, which must have neighbour radii.
fn lists_block(calc: &mut Calc) -> Result<&mut Block> {
    let b = begun(calc, None)?;
    if b.h2.is_none() {
        return Err(G6Error::new(
            G6_ERR_SEQUENCE,
            "the last g6calc_firsthalf had no h2 (NULL): no neighbour lists",
        ));
    }
    Ok(b)
}

/// An error naming the first i-particle whose field is not finite (and, at
/// `eps2 = 0`, the j-particle it coincides with).
fn check_finite(b: &Block, p: &Predicted, fields: &[Field]) -> Result<()> {
    let bad = fields
        .iter()
        .position(|f| !(f.acc.iter().chain(&f.jerk).all(|c| c.is_finite()) && f.pot.is_finite()));
    let Some(k) = bad else { return Ok(()) };
    let s = &b.sinks[k];
    let same = (0..b.nj).find(|&a| Some(a) != s.slot && p.xp[a] == s.pos);
    let detail = match same {
        Some(a) => format!(
            "it is at the same position {:?} as the j-particle at address {a} (index {}) and \
             eps2 = {}: their force is infinite",
            s.pos, p.index[a], b.eps2
        ),
        None => format!(
            "acceleration {:?}, jerk {:?}",
            fields[k].acc, fields[k].jerk
        ),
    };
    Err(G6Error::new(
        G6_ERR_NOT_FINITE,
        format!(
            "the force on i-particle {k} (index {}) is not finite: {detail}",
            b.index[k]
        ),
    ))
}

/// The block's neighbours (found once): for each i-particle, every
/// j-particle with another index, unsoftened `r^2 < h2`, and the nearest.
fn neighbours<'b>(b: &'b mut Block, p: &Predicted, nb_max: usize) -> &'b Neighbours {
    if b.neighbours.is_none() {
        let nj = b.nj;
        let one = |k: usize| -> (i32, usize, Vec<i32>) {
            let xi = b.sinks[k].pos;
            let own = b.index[k];
            let h2 = b.h2.as_ref().map_or(f64::NEG_INFINITY, |h| h[k]);
            let (mut best, mut nearest) = (f64::INFINITY, -1);
            let (mut count, mut list) = (0usize, Vec::new());
            for a in 0..nj {
                if p.index[a] == own {
                    continue;
                }
                let x = p.xp[a];
                let (dx, dy, dz) = (x[0] - xi[0], x[1] - xi[1], x[2] - xi[2]);
                let r2 = dx * dx + dy * dy + dz * dz;
                if r2 < best {
                    best = r2;
                    nearest = p.index[a];
                }
                if r2 < h2 {
                    count += 1;
                    if list.len() < nb_max {
                        list.push(p.index[a]);
                    }
                }
            }
            list.sort_unstable();
            (nearest, count, list)
        };
        let ni = b.index.len();
        let all: Vec<(i32, usize, Vec<i32>)> = if ni * nj < PARALLEL_PAIRS {
            (0..ni).map(one).collect()
        } else {
            (0..ni).into_par_iter().map(one).collect()
        };
        let mut nb = Neighbours {
            nearest: Vec::with_capacity(ni),
            count: Vec::with_capacity(ni),
            list: Vec::with_capacity(ni),
        };
        for (n, c, l) in all {
            nb.nearest.push(n);
            nb.count.push(c);
            nb.list.push(l);
        }
        b.neighbours = Some(nb);
    }
    b.neighbours.as_ref().expect("just found")
}
