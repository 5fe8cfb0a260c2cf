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
use crate::plan::device::{Device, HostSections, Role, SECTIONS, Section};

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
    /// Host time per section (launches run when queued).
    sections: HostSections,
}

impl<K: Role> EmulatedDevice<K> {
    /// No buffers yet; launches run with `options`.
    pub(crate) fn new(options: LaunchOptions) -> EmulatedDevice<K> {
        EmulatedDevice {
            buffers: BTreeMap::new(),
            options,
            sections: HostSections::default(),
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

    fn mark(&mut self, section: Option<Section>) -> Result<()> {
        self.sections.mark(section);
        Ok(())
    }

    fn section_seconds(&self) -> Option<[f64; SECTIONS]> {
        Some(self.sections.seconds())
    }
}

#[cfg(test)]
mod tests {
    use gpu_kernels::Vec4;

    use super::*;

    fn device() -> EmulatedDevice<u8> {
        EmulatedDevice::new(LaunchOptions::default())
    }

    #[test]
    fn words_are_kept_swapped_and_bounded() {
        let mut d = device();
        d.alloc(0, 4, false).unwrap();
        d.write(0, 1, &[7, 8]).unwrap();
        assert_eq!(d.read(0, 0, 4).unwrap(), [0, 7, 8, 0]);
        // Growing keeps the old words, zeros after them; shrinking cuts.
        d.alloc(0, 6, true).unwrap();
        assert_eq!(d.read(0, 0, 6).unwrap(), [0, 7, 8, 0, 0, 0]);
        d.alloc(0, 2, true).unwrap();
        assert_eq!(d.read(0, 0, 2).unwrap(), [0, 7]);
        d.alloc(1, 3, false).unwrap();
        d.fill(1, 9).unwrap();
        d.swap(0, 1);
        assert_eq!(d.read(0, 0, 3).unwrap(), [9, 9, 9]);
        assert_eq!(d.read(1, 0, 2).unwrap(), [0, 7]);
        // Swapping with a role never allocated moves the buffer across.
        d.swap(1, 2);
        assert_eq!(d.read(2, 0, 2).unwrap(), [0, 7]);
        let e = d.read(1, 0, 1).unwrap_err().to_string();
        assert!(e.contains("buffer 1 was never allocated"), "{e}");
        let e = d.write(0, 2, &[1, 2]).unwrap_err().to_string();
        assert!(e.contains("2 words at 2 past the 3 words of 0"), "{e}");
        let e = d.read(0, 1, 3).unwrap_err().to_string();
        assert!(e.contains("3 words at 1 past the 3 words of 0"), "{e}");
    }

    #[test]
    fn a_launch_runs_on_the_roles_and_is_held_to_volta() {
        let mut d = device();
        d.alloc(0, 4, false).unwrap();
        d.write(
            0,
            0,
            &Vec4::new(1.0, 2.0, 3.0, 1.0).to_array().map(f32::to_bits),
        )
        .unwrap();
        let kick = Launch::Kick {
            vel: 0u8,
            acc: 0u8,
            n: 1,
            dt: 2.0,
        };
        let shape = LaunchShape {
            grid: 1,
            block: 32,
            shared_bytes: 0,
        };
        d.launch(kick, shape).unwrap();
        // `v += a dt` with velocities and accelerations in one role.
        let v: Vec<f32> = d
            .read(0, 0, 3)
            .unwrap()
            .into_iter()
            .map(f32::from_bits)
            .collect();
        assert_eq!(v, [3.0, 6.0, 9.0]);
        let missing = Launch::Kick {
            vel: 0u8,
            acc: 5u8,
            n: 1,
            dt: 2.0,
        };
        let e = d.launch(missing, shape).unwrap_err().to_string();
        assert!(e.contains("buffer 5 was never allocated"), "{e}");
        let huge = LaunchShape {
            shared_bytes: SM70_SHARED_BYTES_OPT_IN + 4,
            ..shape
        };
        let e = d.launch(kick, huge).unwrap_err();
        assert!(
            matches!(e, Error::SharedMemoryExceeded { needed, .. } if needed == SM70_SHARED_BYTES_OPT_IN + 4),
            "{e}"
        );
    }
}
