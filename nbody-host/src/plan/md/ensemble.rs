//! The thermostats on the GPU MD plan (NVT by a Nosé–Hoover chain,
//! Langevin, velocity rescaling): the CPU engine's step
//! (`cpu/md/ensemble.rs`) as launches of `gpu_kernels::md_ensemble`, the
//! state kept on the device so a batch needs no host round trip.
//!
//! One step: [`MdEnsembleBegin`](gpu_kernels::entry::Entry::MdEnsembleBegin) (the chain's
//! half step, the scaling), a [`MdEnsemblePass`](gpu_kernels::entry::Entry::MdEnsemblePass)
//! (scale, half kick with Langevin's last forces), the drift and the build
//! as under NVE, the forces, a pass (Langevin's new forces, half kick, the
//! sums `m v^2`, `m a_L . v` per block), [`MdEnsembleEnd`](gpu_kernels::entry::Entry::MdEnsembleEnd)
//! (the block sums in order, the thermostat's update) and, for
//! Nosé–Hoover and rescaling, a pass with the end-of-step scaling. The
//! scalar arithmetic is `gpu_kernels::ensemble`'s, as on the CPU, and
//! Langevin draws the CPU's Philox numbers of `(seed, step, atom id)`: a
//! GPU run follows the CPU's to `f32` rounding (the forces' sums differ in
//! order), and gives the same bits on every run.
//!
//! NPT (the barostat changes the box, so the cells and ghosts) starts
//! here (its buffers, its state) and steps in `npt.rs`, its scalar updates
//! on the host.

use gpu_kernels::Vec4;
use gpu_kernels::ensemble::{NhState, NoseHoover};
use gpu_kernels::entry::Launch;
use gpu_kernels::md_ensemble::{
    CFG_AMP, CFG_DOF, CFG_DT, CFG_EVERY, CFG_FRACTION, CFG_GAMMA, CFG_KIND, CFG_NATOMS, CFG_RAMP,
    CFG_SEED, CFG_T_FREQ, CFG_T_START, CFG_T_STOP, CFG_T_TARGET, CFG_TCHAIN, CFG_WINDOW, CFG_WORDS,
    ENS_ENERGY, ENS_NH, ENS_ONESTEP, ENS_STEPS, ENS_WORDS, KIND_LANGEVIN, KIND_NVT, KIND_RESCALE,
    NH_WORDS, PASS_FRESH, PASS_KICK, PASS_LANGEVIN, PASS_SCALE, PASS_SUMS,
};
use gpu_kernels::shape;

use super::{MdBuf, MdPlan};
use crate::error::Result;
use crate::md::Ensemble;
use crate::md::ensemble::{EnsembleState, degrees_of_freedom, nh_from_words, nh_words};
use crate::plan::device::{Device, vec4_words, words_f64, words_vec4};

/// The thermostat of a plan: its ensemble and what the launches need.
#[derive(Clone, Debug)]
pub(crate) struct EnsPlan {
    ensemble: Ensemble,
    /// The Nosé–Hoover constants (NVT).
    nh: Option<NoseHoover>,
    /// The time step (`f64` of the run's `f32`).
    dt: f64,
    /// Elements of [`MdBuf::Lang`]: `n` under Langevin, else 1.
    lang_len: u32,
}

/// `f64` values as device words.
pub(super) fn f64_words(v: &[f64]) -> Vec<u32> {
    v.iter()
        .flat_map(|x| {
            let b = x.to_bits();
            [b as u32, (b >> 32) as u32]
        })
        .collect()
}

impl EnsPlan {
    /// The thermostat of `ensemble` for `n` atoms and step `dt` (`None`
    /// for NVE).
    pub(crate) fn new(ensemble: Ensemble, n: usize, dt: f32) -> Option<EnsPlan> {
        let lang_len = match ensemble {
            Ensemble::Nve => return None,
            Ensemble::Langevin { .. } => n as u32,
            _ => 1,
        };
        Some(EnsPlan {
            ensemble,
            nh: ensemble.nose_hoover(n, dt as f64),
            dt: dt as f64,
            lang_len,
        })
    }

    /// The constants (`md_ensemble::CFG_*`), as the CPU engine derives them.
    fn cfg(&self, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; CFG_WORDS as usize];
        let mut set = |k: u32, x: f64| c[k as usize] = x;
        set(CFG_DOF, degrees_of_freedom(n));
        set(CFG_NATOMS, n as f64);
        set(CFG_DT, self.dt);
        match self.ensemble {
            Ensemble::Nvt { temp, tdamp, chain } => {
                set(CFG_KIND, KIND_NVT as f64);
                set(CFG_T_TARGET, temp);
                set(CFG_T_FREQ, 1.0 / tdamp);
                set(CFG_TCHAIN, chain as f64);
            }
            Ensemble::Langevin { temp, damp, seed } => {
                set(CFG_KIND, KIND_LANGEVIN as f64);
                set(CFG_GAMMA, (1.0 / damp) as f32 as f64);
                let amp = gpu_kernels::ensemble::sqrt(24.0 * temp / (self.dt * damp));
                set(CFG_AMP, amp as f32 as f64);
                set(CFG_SEED, f64::from_bits(seed));
            }
            Ensemble::Rescale {
                every,
                t_start,
                t_stop,
                ramp,
                window,
                fraction,
            } => {
                set(CFG_KIND, KIND_RESCALE as f64);
                set(CFG_EVERY, every as f64);
                set(CFG_T_START, t_start);
                set(CFG_T_STOP, t_stop);
                set(CFG_RAMP, ramp as f64);
                set(CFG_WINDOW, window);
                set(CFG_FRACTION, fraction);
            }
            // NPT's scalar updates run on the host (`npt.rs`): kind NVE here.
            Ensemble::Nve | Ensemble::Npt { .. } => {}
        }
        c
    }

    /// Whether a step ends with a velocity scaling (Nosé–Hoover, rescaling).
    fn scales_at_end(&self) -> bool {
        matches!(
            self.ensemble,
            Ensemble::Nvt { .. } | Ensemble::Rescale { .. }
        )
    }

    fn langevin(&self) -> bool {
        matches!(self.ensemble, Ensemble::Langevin { .. })
    }
}

impl MdPlan {
    /// Starts the thermostat `ens` (after the first forces): from `start`
    /// where it fits (a continuation), else afresh from the velocities
    /// `vel` (LAMMPS's `setup`: the chain's accelerations from the
    /// temperature now; Langevin's forces of step 0). `lengths`: the box
    /// (the parameters' `f64` lengths); `side`: the cells' least side (NPT
    /// recomputes the cells from it every step, `npt.rs`).
    #[allow(
        clippy::too_many_arguments,
        reason = "the state a start needs: bodies, box, cells and a continuation"
    )]
    pub(crate) fn start_ensemble<D: Device<MdBuf>>(
        &mut self,
        dev: &mut D,
        ens: EnsPlan,
        vel: &[Vec4],
        masses: &[f32],
        lengths: [f64; 3],
        start: Option<&EnsembleState>,
        side: f64,
    ) -> Result<()> {
        let n = self.n as usize;
        let blocks = shape::ensemble_pass(self.n, self.params.block).grid as usize;
        for (buf, words) in [
            (MdBuf::Ensemble, 2 * ENS_WORDS as usize),
            (MdBuf::EnsembleCfg, 2 * CFG_WORDS as usize),
            (MdBuf::Lang, 4 * ens.lang_len as usize),
            (MdBuf::EnsemblePartials, 4 * blocks),
            (MdBuf::SavedEnsemble, 2 * ENS_WORDS as usize),
            (MdBuf::SavedLang, 4 * ens.lang_len as usize),
        ] {
            dev.alloc(buf, words, false)?;
        }
        dev.write(MdBuf::EnsembleCfg, 0, &f64_words(&ens.cfg(n)))?;
        let mut state = vec![0.0; ENS_WORDS as usize];
        let fits = start.filter(|s| s.fits(&ens.ensemble, n));
        let fresh_langevin = ens.langevin() && fits.is_none();
        let nh = match fits {
            Some(s) => {
                state[ENS_ENERGY as usize] = s.energy;
                state[ENS_ONESTEP as usize] = s.onestep;
                state[ENS_STEPS as usize] = f64::from_bits(s.steps);
                if ens.langevin() {
                    let words: Vec<Vec4> = s
                        .kicks
                        .iter()
                        .map(|k| Vec4::new(k[0], k[1], k[2], 0.0))
                        .collect();
                    dev.write(MdBuf::Lang, 0, &vec4_words(&words))?;
                }
                NhState { lengths, ..s.nh }
            }
            None => {
                let mut st = NhState::new(lengths);
                // The CPU's sum, `sum m v^2` per atom then over atoms.
                let mv2: f64 = vel
                    .iter()
                    .zip(masses)
                    .map(|(v, &m)| {
                        [v.x, v.y, v.z]
                            .iter()
                            .map(|&c| m as f64 * c as f64 * c as f64)
                            .sum::<f64>()
                    })
                    .sum();
                if let Some(nh) = &ens.nh {
                    nh.setup(&mut st, mv2 / degrees_of_freedom(n));
                }
                st
            }
        };
        state[ENS_NH as usize..(ENS_NH + NH_WORDS) as usize]
            .copy_from_slice(&nh_words(&nh).collect::<Vec<_>>());
        let nh_state = nh;
        dev.write(MdBuf::Ensemble, 0, &f64_words(&state))?;
        if !ens.langevin() {
            dev.fill(MdBuf::Lang, 0)?;
        }
        let barostat = ens.nh.filter(|nh| nh.barostat.is_some());
        self.ens = Some(ens);
        if let Some(nh) = barostat {
            self.start_npt(dev, nh, nh_state, fits, side)?;
        }
        if fresh_langevin {
            self.ensemble_pass(dev, PASS_FRESH, 0.0, 0)?;
        }
        Ok(())
    }

    /// A [`MdEnsemblePass`](gpu_kernels::entry::Entry::MdEnsemblePass) with `flags`, kick `h`,
    /// Langevin's numbers of step `steps + ahead`.
    pub(super) fn ensemble_pass<D: Device<MdBuf>>(
        &self,
        dev: &mut D,
        flags: u32,
        h: f32,
        ahead: u32,
    ) -> Result<()> {
        let ens = self.ens.as_ref().expect("a thermostat");
        dev.launch(
            Launch::MdEnsemblePass {
                pos: MdBuf::Pos,
                vel: MdBuf::Vel,
                acc: MdBuf::Acc,
                tag: MdBuf::Tag,
                lang: MdBuf::Lang,
                state: MdBuf::Ensemble,
                cfg: MdBuf::EnsembleCfg,
                partials: MdBuf::EnsemblePartials,
                n: self.n,
                h,
                flags,
                ahead,
                lang_len: ens.lang_len,
            },
            shape::ensemble_pass(self.n, self.params.block),
        )
    }

    /// The first half of a thermostatted step, what replaces NVE's first
    /// half kick: the chain's half step and the scaled half kick.
    pub(super) fn ensemble_first_half<D: Device<MdBuf>>(&self, dev: &mut D) -> Result<()> {
        let ens = self.ens.as_ref().expect("a thermostat");
        dev.launch(
            Launch::MdEnsembleBegin {
                state: MdBuf::Ensemble,
                cfg: MdBuf::EnsembleCfg,
            },
            shape::single(),
        )?;
        let lang = if ens.langevin() { PASS_LANGEVIN } else { 0 };
        self.ensemble_pass(dev, PASS_SCALE | PASS_KICK | lang, 0.5 * self.params.dt, 1)
    }

    /// The second half, after the forces: Langevin's new forces, the half
    /// kick and the sums, the thermostat's update, the end-of-step scaling.
    pub(super) fn ensemble_second_half<D: Device<MdBuf>>(&self, dev: &mut D) -> Result<()> {
        let ens = self.ens.as_ref().expect("a thermostat");
        let lang = if ens.langevin() {
            PASS_FRESH | PASS_LANGEVIN
        } else {
            0
        };
        self.ensemble_pass(dev, PASS_KICK | PASS_SUMS | lang, 0.5 * self.params.dt, 1)?;
        dev.launch(
            Launch::MdEnsembleEnd {
                state: MdBuf::Ensemble,
                cfg: MdBuf::EnsembleCfg,
                partials: MdBuf::EnsemblePartials,
                blocks: shape::ensemble_pass(self.n, self.params.block).grid,
            },
            shape::ensemble_end(),
        )?;
        if ens.scales_at_end() {
            self.ensemble_pass(dev, PASS_SCALE, 0.0, 0)?;
        }
        Ok(())
    }

    /// The thermostat's buffers a batch saves and restores, with their
    /// saved copies and words (none under NVE).
    pub(super) fn ensemble_saved(&self) -> Vec<(MdBuf, MdBuf, usize)> {
        match &self.ens {
            None => Vec::new(),
            Some(e) => vec![
                (
                    MdBuf::Ensemble,
                    MdBuf::SavedEnsemble,
                    2 * ENS_WORDS as usize,
                ),
                (MdBuf::Lang, MdBuf::SavedLang, 4 * e.lang_len as usize),
            ],
        }
    }

    /// The thermostat's state as the CPU engine carries it (`None` under
    /// NVE): what a checkpoint holds.
    pub(crate) fn ensemble_state<D: Device<MdBuf>>(
        &self,
        dev: &mut D,
    ) -> Result<Option<EnsembleState>> {
        let Some(ens) = &self.ens else {
            return Ok(None);
        };
        let v = words_f64(&dev.read(MdBuf::Ensemble, 0, 2 * ENS_WORDS as usize)?);
        let kicks = if ens.langevin() {
            words_vec4(&dev.read(MdBuf::Lang, 0, 4 * ens.lang_len as usize)?)
                .iter()
                .map(|l| [l.x, l.y, l.z])
                .collect()
        } else {
            Vec::new()
        };
        Ok(Some(EnsembleState {
            ensemble: ens.ensemble,
            nh: nh_from_words(
                &mut v[ENS_NH as usize..(ENS_NH + NH_WORDS) as usize]
                    .iter()
                    .copied(),
            ),
            energy: v[ENS_ENERGY as usize],
            onestep: v[ENS_ONESTEP as usize],
            steps: v[ENS_STEPS as usize].to_bits(),
            kicks,
        }))
    }

    /// The thermostat's coupling energy now (LAMMPS's `ecouple`), as the
    /// CPU engine reports it.
    pub(crate) fn coupling_energy<D: Device<MdBuf>>(&self, dev: &mut D) -> Result<f64> {
        let Some(s) = self.ensemble_state(dev)? else {
            return Ok(0.0);
        };
        let ens = self.ens.as_ref().expect("a thermostat");
        Ok(match (ens.ensemble, &ens.nh) {
            (_, Some(nh)) => nh.energy(&s.nh),
            (Ensemble::Langevin { .. }, _) => -(s.energy - 0.5 * s.onestep * ens.dt),
            _ => s.energy,
        })
    }
}
