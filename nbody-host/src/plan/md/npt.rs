//! NPT on the GPU MD plan: Nosé–Hoover chains for the particles and the
//! barostat with the isotropic MTK barostat (LAMMPS's `fix npt ... iso`),
//! the CPU engine's step (`cpu/md/ensemble.rs`) in its order.
//!
//! # How the kernels see the box
//! The barostat changes the box every step. Here the box lives on the
//! host: each step is one batch of one step, its scalar updates run on the
//! host (the CPU engine's calls of `gpu_kernels::ensemble`, the same `f64`
//! arithmetic), and the box reaches the kernels as launch arguments: the
//! grid's lengths and cells (recomputed from the box as the plan's start
//! computes them) for a build, the lengths for the ghosts' update (each
//! ghost's shift `±L` of the build taken as `±L` now). Per step that costs
//! one host round trip (three small reads: the status words, the kinetic
//! sums per block of the ensemble pass, the thermo partials per block of
//! the forces, whose virial the barostat needs).
//!
//! # Builds
//! The lists are kept as on the CPU (`cpu/md/ensemble.rs`
//! `scaled_margin`, here `MdPlan::margin`): with `s` the least of the
//! box's scales since the last build (at most 1), a pair listed at
//! `r_list` then is at least `s r_list` apart now, so every pair within the
//! cutoff (and the ghost it needs: ghosts were placed within `r_list` of a
//! face of the build's box, and scale with it) is listed while each body
//! stays within `(s r_list - r_c) / 2` of its build position scaled by the
//! box's scale per axis. The trigger is an
//! [`MdDrift`](gpu_kernels::entry::Entry::MdDrift) by 0 after the
//! step's dilations, its reference positions scaled by that scale; the
//! device's gate builds when a body is past it (or past every margin, when
//! the box shrank below what the lists allow), and the host learns at the
//! step's read whether it did and keeps that build's grid
//! (`MdPlan::built`), where a replay rebuilds and a checkpoint's
//! continuation rebuilds (`NeighbourOrigin::lengths`). A box shorter than
//! `2 (r_c + skin)` stops the run (below).
//!
//! # One step
//! Host: `nhc_press`, `nhc_temp`, the pressure from the last step's
//! kinetic sum and virial, `omega_dot`, the velocity factor and the two
//! half-step dilations (`remap`), as the CPU. Device: a
//! [`MdEnsemblePass`](gpu_kernels::entry::Entry::MdEnsemblePass) (scale,
//! half kick, dilation), [`MdDrift`](gpu_kernels::entry::Entry::MdDrift),
//! a pass (dilation), the trigger, the ghosts' update, the build the gate
//! decides on in the new box, the forces with their
//! thermo partials, a pass (half kick), a pass (the barostat's velocity
//! factor, the block sums of `m v^2`), `CheckFinite`. Host: the sums in
//! block order (`f64`), the pressure, `omega_dot`, `nhc_temp`,
//! `nhc_press`; device: a pass with the end-of-step scaling. The state is
//! mirrored into `MdBuf::Ensemble` (its `NhState` words in
//! `md::ensemble::state`'s order) where the passes read their factors and
//! checkpoints read the state. A box shorter than `2 (r_c + skin)` stops
//! the run after the step's first pass as on the CPU
//! ([`Error::BoxTooSmall`](crate::Error::BoxTooSmall)).

use gpu_kernels::ensemble::{NhState, NoseHoover};
use gpu_kernels::entry::Launch;
use gpu_kernels::integrate::ALL_FINITE;
use gpu_kernels::md_ensemble::{
    ENS_DILATE, ENS_NH, ENS_SCALE, ENS_STEPS, ENS_WORDS, NH_WORDS, PASS_DILATE, PASS_KICK,
    PASS_SCALE, PASS_SUMS,
};
use gpu_kernels::periodic::{
    STATUS_BUILDS, STATUS_FINITE, STATUS_GHOST_NEED, STATUS_NEIGHBOURS, STATUS_WORDS,
};
use gpu_kernels::shape;

use super::ensemble::f64_words;
use super::{MdBuf, MdPlan, words_tag};
use crate::engine::Divergence;
use crate::error::{Error, Result};
use crate::md::ensemble::{EnsembleState, nh_words};
use crate::plan::device::{Device, Section, words_f64};

/// The barostat's run, carried on the host.
#[derive(Clone, Debug)]
pub(crate) struct NptRun {
    /// The constants (with the barostat).
    nh: NoseHoover,
    /// The chains, the barostat and the box, after the last step.
    st: NhState,
    /// Steps taken under NPT.
    steps: u64,
    /// The virial of the last forces (the next step's first pressure).
    virial: f64,
    /// The cells' least side: `max(r_c + skin, bin size)`.
    side: f64,
    /// Words allocated for `MdBuf::Starts` and `MdBuf::ScanSums`.
    starts_words: usize,
    scan_words: usize,
    /// Why the last step stopped: `(step, shortest length, least allowed)`.
    stop: Option<(u64, f64, f64)>,
}

impl MdPlan {
    /// Starts the barostat's run from `st` (the state a fresh start or a
    /// continuation gave the ensemble), `side` the cells' least side.
    pub(super) fn start_npt<D: Device<MdBuf>>(
        &mut self,
        dev: &mut D,
        nh: NoseHoover,
        st: NhState,
        start: Option<&EnsembleState>,
        side: f64,
    ) -> Result<()> {
        let virial = self.thermo(dev)?.virial;
        let scan = shape::scan(self.n.max(self.cell_count() + 1), self.params.scan_block).grid;
        self.npt = Some(Box::new(NptRun {
            nh,
            st,
            steps: start.map_or(0, |s| s.steps),
            virial,
            side,
            starts_words: self.cell_count() as usize + 1,
            scan_words: scan as usize,
            stop: None,
        }));
        self.write_npt(dev, 1.0, 1.0)
    }

    /// The box now, under NPT.
    pub(crate) fn npt_lengths(&self) -> Option<[f64; 3]> {
        self.npt.as_ref().map(|r| r.st.lengths)
    }

    /// Why the last step stopped (a box too small), taken once.
    pub(crate) fn npt_stop(&mut self) -> Option<Error> {
        let (step, length, needed) = self.npt.as_mut()?.stop.take()?;
        Some(Error::BoxTooSmall {
            step,
            length,
            needed,
        })
    }

    /// Mirrors the host's state into `MdBuf::Ensemble`, with the factors
    /// the next passes apply.
    fn write_npt<D: Device<MdBuf>>(&self, dev: &mut D, scale: f64, dilate: f64) -> Result<()> {
        let run = self.npt.as_ref().expect("an NPT run");
        let mut v = vec![0.0; ENS_WORDS as usize];
        for (w, x) in v[ENS_NH as usize..(ENS_NH + NH_WORDS) as usize]
            .iter_mut()
            .zip(nh_words(&run.st))
        {
            *w = x;
        }
        v[ENS_STEPS as usize] = f64::from_bits(run.steps);
        v[ENS_SCALE as usize] = scale;
        v[ENS_DILATE as usize] = dilate;
        dev.write(MdBuf::Ensemble, 0, &f64_words(&v))
    }

    /// The grid for the box `lengths` (`f32`, as the kernels take them):
    /// the cells as the start computes them, the buffers of the scan grown
    /// where there are more.
    fn npt_grid<D: Device<MdBuf>>(&mut self, dev: &mut D, lengths: [f32; 3]) -> Result<()> {
        let run = self.npt.as_ref().expect("an NPT run");
        let side = run.side;
        self.grid.l = lengths;
        self.grid.n = lengths.map(|l| ((l as f64 / side) as u32).clamp(1, 1024));
        let starts = self.cell_count() as usize + 1;
        let scan = shape::scan(self.n.max(self.cell_count() + 1), self.params.scan_block).grid;
        let run = self.npt.as_mut().expect("an NPT run");
        if starts > run.starts_words {
            dev.alloc(MdBuf::Starts, starts, false)?;
            run.starts_words = starts;
        }
        if scan as usize > run.scan_words {
            dev.alloc(MdBuf::ScanSums, scan as usize, false)?;
            run.scan_words = scan as usize;
        }
        Ok(())
    }

    /// Runs `steps` NPT steps, one status read each (see the module
    /// documentation); a body not finite, or the box too small, stops it.
    pub(super) fn step_npt<D: Device<MdBuf>>(
        &mut self,
        dev: &mut D,
        steps: u64,
    ) -> Result<Option<Divergence>> {
        for s in 1..=steps {
            let (run, grid, since) = (self.npt.clone(), self.grid, self.since_build);
            dev.mark(Some(Section::Modify))?;
            self.clear_batch_words(dev)?;
            self.save(dev)?;
            loop {
                if !self.queue_npt_step(dev, s, since)? {
                    return Ok(Some(Divergence {
                        after_step: s,
                        body: 0,
                        steps_run: s,
                    }));
                }
                dev.mark(None)?;
                let status = dev.read(MdBuf::Status, 0, STATUS_WORDS as usize)?;
                self.check_lost(&status)?;
                if status[STATUS_GHOST_NEED as usize] > self.gcap
                    || status[STATUS_NEIGHBOURS as usize] > 0
                {
                    // Grow, then the step again from its start, box and all.
                    self.grow(dev, &status)?;
                    (self.npt, self.grid) = (run.clone(), grid);
                    dev.mark(Some(Section::Neigh))?;
                    self.restore(dev)?;
                    continue;
                }
                self.finish_npt_step(dev)?;
                if status[STATUS_BUILDS as usize] > 0 {
                    self.built = self.grid;
                }
                self.account(&status, since, 1);
                if status[STATUS_FINITE as usize] != ALL_FINITE {
                    let slot = status[STATUS_FINITE as usize + 1] as usize;
                    let tag = words_tag(&dev.read(MdBuf::Tag, 4 * slot, 4)?)[0];
                    dev.write(MdBuf::Status, STATUS_FINITE as usize, &[ALL_FINITE, 0])?;
                    return Ok(Some(Divergence {
                        after_step: s,
                        body: tag.id as usize,
                        steps_run: s,
                    }));
                }
                break;
            }
        }
        Ok(None)
    }

    /// Queues local step `s` up to its sums; `false` (after the first
    /// pass, as on the CPU) when the box got shorter than `2 r_list`.
    fn queue_npt_step<D: Device<MdBuf>>(
        &mut self,
        dev: &mut D,
        s: u64,
        since: u64,
    ) -> Result<bool> {
        let run = self.npt.as_mut().expect("an NPT run");
        let (nh, st) = (run.nh, &mut run.st);
        // The CPU's pass 1 (LAMMPS's initial_integrate).
        nh.nhc_press(st);
        let mut scale = nh.nhc_temp(st);
        let p = nh.pressure(st, run.virial);
        nh.omega_dot(st, p);
        scale *= nh.v_press_factor(st);
        let dilate = nh.remap(st);
        nh.remap(st);
        let lengths = st.lengths;
        let post = nh.v_press_factor(st);
        let dt = self.params.dt;
        self.write_npt(dev, scale, dilate)?;
        self.ensemble_pass(dev, PASS_SCALE | PASS_KICK | PASS_DILATE, 0.5 * dt, 0)?;
        dev.launch(
            Launch::MdDrift {
                pos: MdBuf::Pos,
                vel: MdBuf::Vel,
                reference: MdBuf::Reference,
                status: MdBuf::Status,
                n: self.n,
                dt,
                // The trigger is tested below, on the dilated positions.
                limit2: f32::INFINITY,
                sx: 1.0,
                sy: 1.0,
                sz: 1.0,
            },
            self.per_body(self.n),
        )?;
        self.ensemble_pass(dev, PASS_DILATE, 0.0, 0)?;
        let shortest = lengths.iter().fold(f64::INFINITY, |m, &l| m.min(l));
        let needed = 2.0 * (self.params.cutoff() + self.params.skin) as f64;
        let l32 = lengths.map(|l| l as f32);
        if shortest < needed {
            self.grid.l = l32;
            self.npt.as_mut().expect("an NPT run").stop = Some((s, shortest, needed));
            return Ok(false);
        }
        self.npt_grid(dev, l32)?;
        // The trigger (a drift by 0): each body against its position at the
        // last build scaled with the box since, within the margin left.
        let (limit2, [sx, sy, sz]) = self.margin();
        dev.launch(
            Launch::MdDrift {
                pos: MdBuf::Pos,
                vel: MdBuf::Vel,
                reference: MdBuf::Reference,
                status: MdBuf::Status,
                n: self.n,
                dt: 0.0,
                limit2,
                sx,
                sy,
                sz,
            },
            self.per_body(self.n),
        )?;
        self.ghost_update(dev)?;
        if let Some(force) = self.gate_of(since, 1) {
            dev.mark(Some(Section::Neigh))?;
            self.queue_build(dev, force)?;
        }
        dev.mark(Some(Section::Pair))?;
        self.forces(dev, true)?;
        dev.mark(Some(Section::Modify))?;
        // The CPU's pass 2 (final_integrate): the kick, the barostat's factor, the sums.
        self.ensemble_pass(dev, PASS_KICK, 0.5 * dt, 0)?;
        self.write_npt(dev, post, 1.0)?;
        self.ensemble_pass(dev, PASS_SCALE | PASS_SUMS, 0.0, 0)?;
        dev.launch(
            Launch::CheckFinite {
                pos: MdBuf::Pos,
                vel: MdBuf::Vel,
                n: self.n,
                step: 1,
                flag: MdBuf::Status,
            },
            self.per_body(self.n),
        )?;
        Ok(true)
    }

    /// The end of a step: the sums in block order, the barostat's and the
    /// chains' second half (the CPU's order), the end-of-step scaling.
    fn finish_npt_step<D: Device<MdBuf>>(&mut self, dev: &mut D) -> Result<()> {
        let blocks = shape::ensemble_pass(self.n, self.params.block).grid as usize;
        let sums = words_f64(&dev.read(MdBuf::EnsemblePartials, 0, 4 * blocks)?);
        let mv2 = sums.iter().step_by(2).fold(0.0f64, |a, &x| a + x);
        let virial = self.read_thermo(dev)?.virial;
        let run = self.npt.as_mut().expect("an NPT run");
        let (nh, st) = (run.nh, &mut run.st);
        run.virial = virial;
        st.t_current = mv2 / nh.dof;
        let p = nh.pressure(st, virial);
        nh.omega_dot(st, p);
        let last = nh.nhc_temp(st);
        nh.nhc_press(st);
        run.steps += 1;
        self.write_npt(dev, last, 1.0)?;
        if last != 1.0 {
            self.ensemble_pass(dev, PASS_SCALE, 0.0, 0)?;
        }
        Ok(())
    }
}
