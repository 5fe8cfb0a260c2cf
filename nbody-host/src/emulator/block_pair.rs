//! [`EmulatorBlockForces`]: the block-pair primitive as the launches of
//! `plan/block_pair.rs`, run by the emulator on fresh device buffers per
//! call (the GPU kernel bodies on CPU threads, race detector optional).

use gpu_kernels::Vec4;

use super::device_memory::DeviceMemory;
use super::launch::{LaunchOptions, launch};
use crate::block_pair::{BlockForces, check_block, check_len};
use crate::config::Params;
use crate::engine::BackendKind;
use crate::error::Result;
use crate::plan::block_pair::{PairBuf, PairLaunch, PairPlan};

/// The block-pair primitive on the emulator.
pub(crate) struct EmulatorBlockForces {
    plan: PairPlan,
    options: LaunchOptions,
}

/// The buffers of one call, by role (absent roles are empty).
struct Buffers {
    pos_i: DeviceMemory,
    pos_j: DeviceMemory,
    acc_i: DeviceMemory,
    react_j: DeviceMemory,
    partials: DeviceMemory,
}

impl Buffers {
    fn new(pos_i: &[Vec4], pos_j: &[Vec4], acc_i: &[Vec4], react_j: &[Vec4]) -> Buffers {
        Buffers {
            pos_i: DeviceMemory::from_slice(pos_i),
            pos_j: DeviceMemory::from_slice(pos_j),
            acc_i: DeviceMemory::from_slice(acc_i),
            react_j: DeviceMemory::from_slice(react_j),
            partials: DeviceMemory::zeroed(0),
        }
    }

    fn get(&self, role: PairBuf) -> &DeviceMemory {
        match role {
            PairBuf::PosI => &self.pos_i,
            PairBuf::PosJ => &self.pos_j,
            PairBuf::AccI => &self.acc_i,
            PairBuf::ReactJ => &self.react_j,
            PairBuf::Partials => &self.partials,
        }
    }
}

impl EmulatorBlockForces {
    /// The plan for `params` and the run's heaviest body `max_mass`.
    pub(crate) fn new(
        params: &Params,
        max_mass: f32,
        race_detection: bool,
    ) -> Result<EmulatorBlockForces> {
        Ok(EmulatorBlockForces {
            plan: PairPlan::new(params, max_mass)?,
            options: LaunchOptions {
                race_detection,
                ..LaunchOptions::default()
            },
        })
    }

    /// Runs one launch on `buffers`.
    fn run(&self, (l, shape): PairLaunch, buffers: &Buffers) -> Result<()> {
        let l = l.map_buffers(|b| buffers.get(b));
        let memory = [
            &buffers.pos_i,
            &buffers.pos_j,
            &buffers.acc_i,
            &buffers.react_j,
            &buffers.partials,
        ];
        // SAFETY: every buffer holds the elements the launch's lengths say
        // (`Buffers::new` copies the blocks, `partials` is sized by the plan),
        // and the shapes come from `gpu_kernels::shape` through the plan; the
        // emulator checks every access anyway.
        launch(l.entry().name(), shape, self.options, &memory, |t| unsafe {
            l.run(t)
        })
    }

    /// Runs a potential launch and returns its partial sums.
    fn partial_sums(&self, op: PairLaunch, mut buffers: Buffers, count: usize) -> Result<Vec<f64>> {
        buffers.partials = DeviceMemory::zeroed(2 * count);
        self.run(op, &buffers)?;
        Ok(buffers.partials.read::<f64>())
    }
}

impl BlockForces for EmulatorBlockForces {
    fn kind(&self) -> BackendKind {
        BackendKind::Emulator
    }

    fn pull(&mut self, i: &[Vec4], j: &[Vec4], acc_i: &mut [Vec4]) -> Result<()> {
        check_block("I", i, acc_i)?;
        check_len(j)?;
        if let Some(op) = self.plan.pull(i.len() as u32, j.len() as u32) {
            let buffers = Buffers::new(i, j, acc_i, &[]);
            self.run(op, &buffers)?;
            acc_i.copy_from_slice(&buffers.acc_i.read::<Vec4>());
        }
        Ok(())
    }

    fn pull_pair(
        &mut self,
        i: &[Vec4],
        j: &[Vec4],
        acc_i: &mut [Vec4],
        react_j: &mut [Vec4],
    ) -> Result<()> {
        check_block("I", i, acc_i)?;
        check_block("J", j, react_j)?;
        if let Some(op) = self.plan.pull_pair(i.len() as u32, j.len() as u32)? {
            let buffers = Buffers::new(i, j, acc_i, react_j);
            self.run(op, &buffers)?;
            acc_i.copy_from_slice(&buffers.acc_i.read::<Vec4>());
            react_j.copy_from_slice(&buffers.react_j.read::<Vec4>());
        }
        Ok(())
    }

    fn pull_within(&mut self, i: &[Vec4], acc_i: &mut [Vec4]) -> Result<()> {
        check_block("I", i, acc_i)?;
        if let Some(op) = self.plan.pull_within(i.len() as u32)? {
            let buffers = Buffers::new(i, &[], acc_i, &[]);
            self.run(op, &buffers)?;
            acc_i.copy_from_slice(&buffers.acc_i.read::<Vec4>());
        }
        Ok(())
    }

    fn potential_within(&mut self, i: &[Vec4]) -> Result<f64> {
        check_len(i)?;
        let n = i.len() as u32;
        let Some(op) = self.plan.potential_within(n) else {
            return Ok(0.0);
        };
        let zeros = vec![Vec4::ZERO; i.len()];
        let buffers = Buffers::new(i, &[], &zeros, &[]);
        let partials = self.partial_sums(op, buffers, self.plan.within_partials(n))?;
        Ok(PairPlan::finish_within(&partials))
    }

    fn potential_between(&mut self, i: &[Vec4], j: &[Vec4]) -> Result<f64> {
        check_len(i)?;
        check_len(j)?;
        let (ni, nj) = (i.len() as u32, j.len() as u32);
        let Some(op) = self.plan.potential_between(ni, nj) else {
            return Ok(0.0);
        };
        let buffers = Buffers::new(i, j, &[], &[]);
        let partials = self.partial_sums(op, buffers, self.plan.between_partials(ni))?;
        Ok(partials.iter().sum())
    }
}
