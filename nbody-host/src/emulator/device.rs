//! [`EmulatedDevice`]: the emulator as a [`Device`] for every launch plan
//! (gravity, short-range MD, block pairs): one [`DeviceMemory`] per buffer
//! role, each launch run at once by [`launch`] on CPU threads with the race
//! detector as configured. Nothing is queued, so ordering is trivial and a
//! flag read is free (the gravity plan reads it every step and stops at
//! once).

use std::collections::BTreeMap;

use gpu_kernels::entry::{Arg, Buffer, Launch};
use gpu_kernels::exec::{Global, Word};
use gpu_kernels::shape::LaunchShape;

use super::device_memory::DeviceMemory;
use super::launch::{LaunchOptions, launch};
use crate::engine::BackendKind;
use crate::error::{Error, Result};
use crate::plan::device::{Device, Role};

/// Dynamic shared memory a block may use on sm_70 (Volta) after opting in:
/// the emulator holds the kernels to the smallest GPU the PTX targets, so
/// that a plan that runs here also fits on any supported device.
const SM70_SHARED_BYTES_OPT_IN: u32 = 96 * 1024;

impl Buffer for &DeviceMemory {
    fn global<T: Word>(self, len: u32) -> Global<T> {
        DeviceMemory::global(self, len)
    }
}

/// The emulated device of one plan, its buffers keyed by the plan's roles.
pub(crate) struct EmulatedDevice<K> {
    buffers: BTreeMap<K, DeviceMemory>,
    options: LaunchOptions,
}

impl<K: Role> EmulatedDevice<K> {
    /// No buffers yet; launches run with `options`.
    pub(crate) fn new(options: LaunchOptions) -> EmulatedDevice<K> {
        EmulatedDevice {
            buffers: BTreeMap::new(),
            options,
        }
    }

    fn buffer(&self, buf: K) -> Result<&DeviceMemory> {
        self.buffers
            .get(&buf)
            .ok_or_else(|| Error::Emulator(format!("buffer {buf:?} was never allocated")))
    }
}

impl<K: Role> Device<K> for EmulatedDevice<K> {
    fn kind(&self) -> BackendKind {
        BackendKind::Emulator
    }

    fn shared_opt_in(&self) -> u32 {
        SM70_SHARED_BYTES_OPT_IN
    }

    fn alloc(&mut self, buf: K, words: usize, keep: bool) -> Result<()> {
        let fresh = DeviceMemory::zeroed(words);
        if keep && let Some(old) = self.buffers.get(&buf) {
            let kept = old.len_words().min(words);
            let data = old.read_words(0, kept).expect("within the old buffer");
            fresh.write_words(0, &data);
        }
        self.buffers.insert(buf, fresh);
        Ok(())
    }

    fn write(&mut self, buf: K, offset: usize, data: &[u32]) -> Result<()> {
        let memory = self.buffer(buf)?;
        if !memory.write_words(offset, data) {
            return Err(Error::Emulator(format!(
                "write of {} words at {offset} past the {} words of {buf:?}",
                data.len(),
                memory.len_words()
            )));
        }
        Ok(())
    }

    fn fill(&mut self, buf: K, value: u32) -> Result<()> {
        self.buffer(buf)?.fill(value);
        Ok(())
    }

    fn read(&mut self, buf: K, offset: usize, len: usize) -> Result<Vec<u32>> {
        let memory = self.buffer(buf)?;
        memory.read_words(offset, len).ok_or_else(|| {
            Error::Emulator(format!(
                "read of {len} words at {offset} past the {} words of {buf:?}",
                memory.len_words()
            ))
        })
    }

    fn launch(&mut self, l: Launch<K>, shape: LaunchShape) -> Result<()> {
        if shape.grid == 0 {
            return Ok(());
        }
        if shape.shared_bytes > SM70_SHARED_BYTES_OPT_IN {
            return Err(Error::SharedMemoryExceeded {
                block: shape.block,
                kernel: l.entry().name(),
                needed: shape.shared_bytes,
                available: SM70_SHARED_BYTES_OPT_IN,
            });
        }
        for arg in l.args().as_slice() {
            if let Arg::Ptr(b) = *arg {
                self.buffer(b)?;
            }
        }
        let l = l.map_buffers(|b| &self.buffers[&b]);
        let memory: Vec<&DeviceMemory> = self.buffers.values().collect();
        // SAFETY: every plan sizes its buffers as the entry table's length
        // expressions say and takes the shapes from `gpu_kernels::shape`; the
        // emulator checks every access against those lengths anyway.
        launch(l.entry().name(), shape, self.options, &memory, |t| unsafe {
            l.run(t)
        })
    }

    fn swap(&mut self, a: K, b: K) {
        let (x, y) = (self.buffers.remove(&a), self.buffers.remove(&b));
        if let Some(y) = y {
            self.buffers.insert(a, y);
        }
        if let Some(x) = x {
            self.buffers.insert(b, x);
        }
    }

    /// Every launch has run to completion when `launch` returns.
    fn synchronize(&mut self) -> Result<()> {
        Ok(())
    }
}
