//! Where a block step's predictor and force evaluation run: the one seam
//! between the block bookkeeping (`block.rs`, on the host in f64, shared by
//! every backend) and the arithmetic ([`BlockFields`]): the CPU's loops
//! ([`CpuFields`]), or a launch device (`plan/hermite.rs`, the emulator and
//! CUDA), which keeps its own copy of the bodies and predicts them there.

use super::HermiteState;
use super::forces::{Field, ForceJerk, Precision, Sink, Sources};
use crate::engine::BackendKind;
use crate::error::{Error, Result};
use crate::isa::Isa;

/// Force, jerk and potential (no `G`) of i-bodies ([`Sink`]s) from j-bodies
/// ([`Sources`]) on one device: the CPU's loops ([`ForceJerk`]) or a launch
/// device (the emulator, a CUDA GPU), from
/// [`Backend::hermite_forces`](crate::Backend::hermite_forces). What
/// libgrape6 computes a `g6calc_firsthalf`/`lasthalf` with.
pub trait HermiteForces: Send {
    /// Where the forces run.
    fn kind(&self) -> BackendKind;

    /// The precision of the sums.
    fn precision(&self) -> Precision;

    /// The field of each sink from every source but its own slot,
    /// softening `eps2`, into `out` (one per sink). An error, before any
    /// work, for `out` of another length, a slot past the sources or an
    /// `eps2` that is not finite and `>= 0`; and a device's failure.
    fn evaluate(
        &mut self,
        sources: &Sources,
        sinks: &[Sink],
        eps2: f64,
        out: &mut [Field],
    ) -> Result<()>;
}

/// The checks of [`HermiteForces::evaluate`], shared by every device.
pub(crate) fn check_call(
    sources: &Sources,
    sinks: &[Sink],
    eps2: f64,
    out: &[Field],
) -> Result<()> {
    if out.len() != sinks.len() {
        return Err(Error::Unsupported(format!(
            "{} sinks but room for {} fields",
            sinks.len(),
            out.len()
        )));
    }
    if !(eps2.is_finite() && eps2 >= 0.0) {
        return Err(Error::InvalidParameter {
            name: "eps2",
            value: eps2,
            requirement: "must be finite and >= 0",
        });
    }
    if let Some((k, s)) = sinks
        .iter()
        .enumerate()
        .find(|(_, s)| s.slot.is_some_and(|j| j >= sources.len()))
    {
        return Err(Error::Unsupported(format!(
            "sink {k} names slot {} of {} sources as its own",
            s.slot.unwrap_or_default(),
            sources.len()
        )));
    }
    if sources.len() > gpu_kernels::shape::MAX_BODIES as usize
        || sinks.len() > gpu_kernels::shape::MAX_BODIES as usize
    {
        return Err(Error::TooManyBodies {
            n: sources.len().max(sinks.len()),
            max: gpu_kernels::shape::MAX_BODIES as usize,
        });
    }
    Ok(())
}

/// The CPU loops, on rayon's pool (the same bits on any thread count).
impl HermiteForces for ForceJerk {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu {
            isa: self.isa(),
            threads: rayon::current_num_threads(),
        }
    }

    fn precision(&self) -> Precision {
        ForceJerk::precision(self)
    }

    fn evaluate(
        &mut self,
        sources: &Sources,
        sinks: &[Sink],
        eps2: f64,
        out: &mut [Field],
    ) -> Result<()> {
        check_call(sources, sinks, eps2, out)?;
        ForceJerk::evaluate(self, sources, sinks, eps2, out);
        Ok(())
    }
}

/// What [`BlockHermite`](super::BlockHermite) needs from where its forces
/// are computed. The bodies' times are integer ticks within the interval
/// being integrated (`block.rs`); the calls come in this order: [`load`]
/// at the start of every interval (all bodies at tick 0), then per block
/// step [`fields`] and [`corrected`].
///
/// [`load`]: BlockFields::load
/// [`fields`]: BlockFields::fields
/// [`corrected`]: BlockFields::corrected
pub(crate) trait BlockFields: Send {
    /// Where the forces run, as the engine reports it.
    fn kind(&self) -> BackendKind;

    /// Every body of `s`, synchronised (tick 0 of an interval).
    fn load(&mut self, s: &HermiteState) -> Result<()>;

    /// Every body predicted from its tick `tick[i]` to tick `next`
    /// ([`predict_all`], `per_tick` time units a tick), then the field
    /// (no `G`) of each of `active` (distinct indices) from the predicted
    /// system, softening `eps2`, its own slot skipped.
    fn fields(
        &mut self,
        s: &HermiteState,
        tick: &[u64],
        next: u64,
        per_tick: f64,
        active: &[usize],
        eps2: f64,
    ) -> Result<Vec<Field>>;

    /// The bodies of the last [`fields`](Self::fields) call were corrected:
    /// their new state is in `s`, their tick in `tick`.
    fn corrected(&mut self, s: &HermiteState, tick: &[u64], active: &[usize]) -> Result<()>;
}

/// Every body of `s` predicted from tick `tick[i]` to `next`: positions and
/// velocities, by the device kernels' own predictor
/// ([`gpu_kernels::hermite::predict`]), so host and device agree bit for bit.
pub(crate) fn predict_all(
    s: &HermiteState,
    tick: &[u64],
    next: u64,
    per_tick: f64,
    xp: &mut Vec<[f64; 3]>,
    vp: &mut Vec<[f64; 3]>,
) {
    xp.clear();
    vp.clear();
    for (i, &t) in tick.iter().enumerate() {
        let h = (next - t) as f64 * per_tick;
        let (x, v) = gpu_kernels::hermite::predict(s.pos[i], s.vel[i], s.acc[i], s.jerk[i], h);
        xp.push(x);
        vp.push(v);
    }
}

/// The CPU's force loops ([`ForceJerk`]: SIMD over j, rayon over i) behind
/// [`BlockFields`], the prediction on the host.
#[derive(Debug)]
pub(crate) struct CpuFields {
    forces: ForceJerk,
    sources: Sources,
    xp: Vec<[f64; 3]>,
    vp: Vec<[f64; 3]>,
    threads: usize,
}

impl CpuFields {
    /// The loops of `isa` (`None`: the best this CPU has) in `precision`.
    pub(crate) fn new(isa: Option<Isa>, precision: Precision) -> Result<CpuFields> {
        Ok(CpuFields {
            forces: ForceJerk::new(isa, precision)?,
            sources: Sources::default(),
            xp: Vec::new(),
            vp: Vec::new(),
            threads: rayon::current_num_threads(),
        })
    }
}

impl BlockFields for CpuFields {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu {
            isa: self.forces.isa(),
            threads: self.threads,
        }
    }

    fn load(&mut self, _: &HermiteState) -> Result<()> {
        Ok(())
    }

    fn fields(
        &mut self,
        s: &HermiteState,
        tick: &[u64],
        next: u64,
        per_tick: f64,
        active: &[usize],
        eps2: f64,
    ) -> Result<Vec<Field>> {
        predict_all(s, tick, next, per_tick, &mut self.xp, &mut self.vp);
        self.sources.set(&self.xp, &self.vp, &s.mass);
        let sinks: Vec<Sink> = active
            .iter()
            .map(|&i| Sink {
                pos: self.xp[i],
                vel: self.vp[i],
                slot: Some(i),
            })
            .collect();
        let mut out = vec![Field::default(); active.len()];
        self.forces.evaluate(&self.sources, &sinks, eps2, &mut out);
        Ok(out)
    }

    fn corrected(&mut self, _: &HermiteState, _: &[u64], _: &[usize]) -> Result<()> {
        Ok(())
    }
}
