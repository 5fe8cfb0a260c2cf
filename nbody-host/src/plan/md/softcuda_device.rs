//! The MD plan's device on the software CUDA device (tests only; also the
//! Hermite plan's, `plan/hermite/tests.rs`, with its own buffer roles): the
//! committed PTX, run by softcuda's interpreter under a chosen schedule with
//! its race detector on shared and global memory, and the accounting of
//! every launch kept per entry point.

use std::collections::BTreeMap;

use gpu_kernels::entry::{Arg, Launch};
use gpu_kernels::shape::LaunchShape;
use softcuda::jit::JitOptions;
use softcuda::{
    Device, LaunchConfig, LaunchOptions, Module, RaceCheck, Schedule, Stats, arch, mufu,
};

use super::MdBuf;
use crate::engine::BackendKind;
use crate::error::{Error, Result};
use crate::plan::device::{Device as PlanDevice, Role};

/// A softcuda device holding a plan's buffers (the MD plan's by default).
pub(crate) struct SoftMd<K = MdBuf> {
    device: Device,
    module: Module,
    buffers: BTreeMap<K, (u64, usize)>,
    options: LaunchOptions,
    /// Accounting summed per entry point name.
    pub stats: BTreeMap<&'static str, Stats>,
}

fn soft(e: impl std::fmt::Display) -> Error {
    Error::Emulator(format!("softcuda: {e}"))
}

impl<K: Role> SoftMd<K> {
    /// A fresh device with the committed PTX loaded, computing
    /// `rcp.approx.ftz` as an H200 does.
    pub(crate) fn new(schedule: Schedule) -> SoftMd<K> {
        SoftMd::with_mufu(schedule, mufu::Model::Sm90)
    }

    /// A fresh device whose approximate instructions follow `mufu`
    /// ([`mufu::Model::CorrectlyRounded`]: what the kernels' Rust source
    /// computes on the host, so the emulator's bits).
    pub(crate) fn with_mufu(schedule: Schedule, mufu: mufu::Model) -> SoftMd<K> {
        let opts = JitOptions {
            device: Some(arch::SM90),
            mufu,
        };
        SoftMd {
            device: Device::new(arch::SM90, 1 << 30),
            module: Module::from_ptx_with(crate::PTX, &opts).expect("the committed PTX loads"),
            buffers: BTreeMap::new(),
            options: LaunchOptions {
                schedule,
                races: RaceCheck::All,
                ..LaunchOptions::default()
            },
            stats: BTreeMap::new(),
        }
    }

    fn buffer(&self, buf: K) -> Result<(u64, usize)> {
        self.buffers
            .get(&buf)
            .copied()
            .ok_or_else(|| soft(format!("buffer {buf:?} was never allocated")))
    }
}

/// The interpreter runs each launch to completion: nothing is ever queued.
impl<K: Role> PlanDevice<K> for SoftMd<K> {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda {
            device: 0,
            name: "softcuda (in process)".into(),
        }
    }

    fn shared_opt_in(&self) -> u32 {
        arch::SM90.shared_optin
    }

    fn synchronize(&mut self) -> Result<()> {
        Ok(())
    }

    fn alloc(&mut self, buf: K, words: usize, keep: bool) -> Result<()> {
        let addr = self
            .device
            .memory
            .alloc(4 * words.max(1) as u64)
            .map_err(|e| soft(format!("{e:?}")))?;
        let mut data = vec![0u8; 4 * words];
        if keep && let Some(&(old, old_words)) = self.buffers.get(&buf) {
            let k = 4 * old_words.min(words);
            self.device
                .memory
                .read(old, &mut data[..k])
                .map_err(|e| soft(format!("{e:?}")))?;
        }
        self.device
            .memory
            .write(addr, &data)
            .map_err(|e| soft(format!("{e:?}")))?;
        if let Some((old, _)) = self.buffers.insert(buf, (addr, words)) {
            self.device
                .memory
                .free(old)
                .map_err(|e| soft(format!("{e:?}")))?;
        }
        Ok(())
    }

    fn write(&mut self, buf: K, offset: usize, data: &[u32]) -> Result<()> {
        let (addr, words) = self.buffer(buf)?;
        assert!(offset + data.len() <= words, "write past {buf:?}");
        let bytes: Vec<u8> = data.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.device
            .memory
            .write(addr + 4 * offset as u64, &bytes)
            .map_err(|e| soft(format!("{e:?}")))
    }

    fn fill(&mut self, buf: K, value: u32) -> Result<()> {
        let (_, words) = self.buffer(buf)?;
        self.write(buf, 0, &vec![value; words])
    }

    fn read(&mut self, buf: K, offset: usize, len: usize) -> Result<Vec<u32>> {
        let (addr, words) = self.buffer(buf)?;
        assert!(offset + len <= words, "read past {buf:?}");
        let mut bytes = vec![0u8; 4 * len];
        self.device
            .memory
            .read(addr + 4 * offset as u64, &mut bytes)
            .map_err(|e| soft(format!("{e:?}")))?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect())
    }

    fn launch(&mut self, l: Launch<K>, shape: LaunchShape) -> Result<()> {
        if shape.grid == 0 {
            return Ok(());
        }
        let name = l.entry().name();
        let mut args = Vec::new();
        for a in l.args().as_slice() {
            args.push(match *a {
                Arg::Ptr(b) => self.buffer(b)?.0.to_le_bytes().to_vec(),
                Arg::U32(v) => v.to_le_bytes().to_vec(),
                Arg::F32(v) => v.to_le_bytes().to_vec(),
                Arg::F64(v) => v.to_le_bytes().to_vec(),
            });
        }
        let kernel = self
            .module
            .kernel(name)
            .ok_or_else(|| soft(format!("no {name} in the PTX")))?;
        let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let params = kernel.pack_params(&refs).map_err(soft)?;
        let stats = self
            .device
            .launch(
                kernel,
                &LaunchConfig::linear(shape.grid, shape.block, shape.shared_bytes),
                &params,
                &self.options,
            )
            .map_err(|e| soft(format!("{name}: {e}")))?;
        self.stats.entry(name).or_default().add(&stats);
        Ok(())
    }

    fn swap(&mut self, a: K, b: K) {
        if let (Some(x), Some(y)) = (self.buffers.remove(&a), self.buffers.remove(&b)) {
            self.buffers.insert(a, y);
            self.buffers.insert(b, x);
        }
    }
}
