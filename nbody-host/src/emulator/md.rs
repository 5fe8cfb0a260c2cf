//! The MD plan's device on the emulator: one [`DeviceMemory`] per buffer
//! role, launches run by [`launch`] with the race detector as configured.

use std::collections::BTreeMap;

use gpu_kernels::entry::{Arg, Launch};
use gpu_kernels::shape::LaunchShape;

use super::device_memory::DeviceMemory;
use super::launch::{LaunchOptions, launch};
use crate::error::{Error, Result};
use crate::plan::md::{MdBuf, MdDevice};

/// The emulated device of the MD plan.
pub(crate) struct EmulatedMd {
    buffers: BTreeMap<MdBuf, DeviceMemory>,
    options: LaunchOptions,
}

impl EmulatedMd {
    /// No buffers yet; launches run with `options`.
    pub(crate) fn new(options: LaunchOptions) -> EmulatedMd {
        EmulatedMd {
            buffers: BTreeMap::new(),
            options,
        }
    }

    fn buffer(&self, buf: MdBuf) -> Result<&DeviceMemory> {
        self.buffers
            .get(&buf)
            .ok_or_else(|| Error::Emulator(format!("MD buffer {buf:?} was never allocated")))
    }
}

impl MdDevice for EmulatedMd {
    fn alloc(&mut self, buf: MdBuf, words: usize, keep: bool) -> Result<()> {
        let fresh = DeviceMemory::zeroed(words);
        if keep && let Some(old) = self.buffers.get(&buf) {
            let mut data = old.read::<u32>();
            data.truncate(words);
            fresh.write(&data);
        }
        self.buffers.insert(buf, fresh);
        Ok(())
    }

    fn write(&mut self, buf: MdBuf, offset: usize, data: &[u32]) -> Result<()> {
        let memory = self.buffer(buf)?;
        let mut words = memory.read::<u32>();
        if offset + data.len() > words.len() {
            return Err(Error::Emulator(format!(
                "write of {} words at {offset} past the {} words of {buf:?}",
                data.len(),
                words.len()
            )));
        }
        words[offset..offset + data.len()].copy_from_slice(data);
        memory.write(&words);
        Ok(())
    }

    fn fill(&mut self, buf: MdBuf, value: u32) -> Result<()> {
        let memory = self.buffer(buf)?;
        let words = memory.read::<u32>().len();
        memory.write(&vec![value; words]);
        Ok(())
    }

    fn read(&mut self, buf: MdBuf, offset: usize, len: usize) -> Result<Vec<u32>> {
        let words = self.buffer(buf)?.read::<u32>();
        words
            .get(offset..offset + len)
            .map(<[u32]>::to_vec)
            .ok_or_else(|| {
                Error::Emulator(format!(
                    "read of {len} words at {offset} past the {} words of {buf:?}",
                    words.len()
                ))
            })
    }

    fn launch(&mut self, l: Launch<MdBuf>, shape: LaunchShape) -> Result<()> {
        for arg in l.args().as_slice() {
            if let Arg::Ptr(b) = *arg {
                self.buffer(b)?;
            }
        }
        let l = l.map_buffers(|b| &self.buffers[&b]);
        let memory: Vec<&DeviceMemory> = self.buffers.values().collect();
        // SAFETY: the MD plan sizes every buffer as the entry table's length
        // expressions say and takes the shapes from `gpu_kernels::shape`; the
        // emulator checks every access against those lengths anyway.
        launch(l.entry().name(), shape, self.options, &memory, |t| unsafe {
            l.run(t)
        })
    }

    fn swap(&mut self, a: MdBuf, b: MdBuf) {
        if let (Some(x), Some(y)) = (self.buffers.remove(&a), self.buffers.remove(&b)) {
            self.buffers.insert(a, y);
            self.buffers.insert(b, x);
        }
    }
}
