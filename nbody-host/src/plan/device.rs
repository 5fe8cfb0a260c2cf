//! [`Device`]: the one model of a device that every launch plan drives. The
//! gravity plan ([`PlanEngine`](super::engine::PlanEngine)), the MD plan
//! ([`MdPlanEngine`](super::md::MdPlanEngine)) and the block-pair primitive
//! ([`PairForces`](super::block_pair::PairForces)) are written once, over
//! this trait; the emulator (`emulator/device.rs`) and CUDA
//! (`cuda/device.rs`) each implement it once, with one type.
//!
//! # Buffers by role, typed per plan
//! A plan names its buffers by role with a key type of its own (gravity's
//! [`Buf`](super::Buf), the MD plan's [`MdBuf`](super::md::MdBuf), the block
//! pairs' [`PairBuf`](super::block_pair::PairBuf)), and the trait is generic
//! over that key: `Device<K>`. One key enum for all three would let a plan
//! name another plan's buffers and make every device match roles it never
//! holds; a generic key keeps each plan's roles its own, costs nothing at
//! run time (a device is made for one plan and holds a map from its keys to
//! buffers), and lets one device type serve every plan.
//!
//! # Words
//! Buffers are sized, written and read in 32-bit words (the kernels' `f32`,
//! `u32` and `i32` are one word, `Vec4` four, `f64` two), so the trait has
//! no element types: [`vec4_words`], [`words_vec4`] and [`words_f64`]
//! convert at the plan's edge.
//!
//! # Order
//! Every method orders itself after the work queued before it (on CUDA: the
//! device's one stream), so a plan is a plain sequence of calls; only
//! [`read`](Device::read) and [`synchronize`](Device::synchronize) wait.

use std::fmt::Debug;

use gpu_kernels::Vec4;
use gpu_kernels::entry::{Entry, Launch};
use gpu_kernels::shape::LaunchShape;

use crate::engine::BackendKind;
use crate::error::Result;

/// A buffer role of a plan: the key a [`Device`] holds its buffers by.
pub(crate) trait Role: Copy + Ord + Debug + Send + 'static {}

impl<K: Copy + Ord + Debug + Send + 'static> Role for K {}

/// What a plan needs from a device (see the module documentation).
pub(crate) trait Device<K: Role>: Send {
    /// The backend this device is, as an engine reports it.
    fn kind(&self) -> BackendKind;

    /// The largest dynamic shared memory a block may use, after opting in.
    /// A driver compares its plan's largest launch with it before
    /// allocating anything (`Error::SharedMemoryExceeded`, naming the plan's
    /// kernel family).
    fn shared_opt_in(&self) -> u32;

    /// The device's multiprocessor count, where it has one (CUDA): what
    /// [`Kernel::Auto`](crate::Kernel::Auto) chooses by; `None` on the
    /// emulator, which then chooses for a nominal GPU.
    fn multiprocessors(&self) -> Option<u32> {
        None
    }

    /// Bytes of device memory free now, where the device has memory of its
    /// own (CUDA); `None` where its buffers are host memory (the emulator),
    /// which `memory.rs` checks.
    fn free_bytes(&mut self) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Checks every entry point of `launches` against what the device can
    /// run it with (on CUDA: its limits after the JIT, raising its dynamic
    /// shared-memory limit where a launch needs more), before anything is
    /// allocated or launched. A launch not checked here is checked before it
    /// is first queued.
    fn check_launches(&mut self, launches: &[(Entry, LaunchShape)]) -> Result<()> {
        let _ = launches;
        Ok(())
    }

    /// (Re)allocates `buf` with `words` words: zeroed, or with `keep` the old
    /// contents (as many words as fit) and zeros after them.
    fn alloc(&mut self, buf: K, words: usize, keep: bool) -> Result<()>;

    /// Uploads `data` to word `offset` of `buf`.
    fn write(&mut self, buf: K, offset: usize, data: &[u32]) -> Result<()>;

    /// Copies the first `words` words of `from` to `to` (device to device,
    /// ordered with the work around it; on CUDA no wait).
    fn copy(&mut self, from: K, to: K, words: usize) -> Result<()> {
        let data = self.read(from, 0, words)?;
        self.write(to, 0, &data)
    }

    /// Sets every word of `buf` to `value`.
    fn fill(&mut self, buf: K, value: u32) -> Result<()>;

    /// Waits for the queued work and downloads `len` words of `buf` from
    /// word `offset` (a flag, a status, results).
    fn read(&mut self, buf: K, offset: usize, len: usize) -> Result<Vec<u32>>;

    /// Queues a launch of the kernel table (skipped when the grid is empty).
    fn launch(&mut self, launch: Launch<K>, shape: LaunchShape) -> Result<()>;

    /// Swaps the memory behind two roles (double buffers).
    fn swap(&mut self, a: K, b: K);

    /// Waits for everything queued; reports a failure of any of it.
    fn synchronize(&mut self) -> Result<()>;

    /// Steps a plan may queue between two reads of its divergence flag: 1
    /// where a read is free and the device can stop at once (the emulator),
    /// as many as possible on a GPU (one read per call).
    fn steps_per_flag_read(&self) -> u64 {
        1
    }

    /// Starts capturing the work queued from now on into a graph instead of
    /// running it (CUDA: stream capture of the device's stream), or returns
    /// `false` where the device has no graphs (the emulator): then the work
    /// runs as queued. Nothing may wait between this and
    /// [`end_capture`](Self::end_capture).
    fn begin_capture(&mut self) -> Result<bool> {
        Ok(false)
    }

    /// Ends the capture that [`begin_capture`](Self::begin_capture)
    /// started (always called once it returned `true`), keeps the graph
    /// under `tag` for the buffers as they were when it began (`None`, after
    /// an error while queueing: discards it), and puts every
    /// [`swap`](Self::swap) made during the capture back: the captured work
    /// has not run. Then [`replay`](Self::replay) runs it.
    fn end_capture(&mut self, tag: Option<u64>) -> Result<()> {
        let _ = tag;
        Ok(())
    }

    /// Queues the graph captured under `tag` from the buffers as they are
    /// now, and swaps the roles as its capture did; `false` (nothing
    /// queued) where there is none.
    fn replay(&mut self, tag: u64) -> Result<bool> {
        let _ = tag;
        Ok(false)
    }

    /// Marks the start of a timed batch (CUDA: records an event).
    fn timer_start(&mut self) -> Result<()> {
        Ok(())
    }

    /// Marks the end of a timed batch, whose device time
    /// [`seconds`](Self::seconds) includes from the next
    /// [`read`](Self::read) or [`synchronize`](Self::synchronize) on (CUDA:
    /// records an event, without waiting for it: no round trip of its own).
    fn timer_stop(&mut self) -> Result<()> {
        Ok(())
    }

    /// Device seconds of the timed batches up to the last read or
    /// synchronisation, where the device can time them (CUDA events);
    /// `None` otherwise.
    fn seconds(&self) -> Option<f64> {
        None
    }

    /// Marks where `section` starts in the queued work (`None`: an untimed
    /// gap, such as the host reading a batch's status): the device time to
    /// the next mark is the section's, added at the next
    /// [`read`](Self::read) or [`synchronize`](Self::synchronize) (CUDA:
    /// an event recorded on the stream, never waited for on its own, so
    /// timing adds no host round trip).
    fn mark(&mut self, section: Option<Section>) -> Result<()> {
        let _ = section;
        Ok(())
    }

    /// Device seconds per [`Section`] (indexed by `Section as usize`) up to
    /// the last read or synchronisation; `None` where nothing is timed.
    fn section_seconds(&self) -> Option<[f64; SECTIONS]> {
        None
    }
}

/// A part of a short-range step, timed by [`Device::mark`]: the rows of
/// LAMMPS's timing table that `MdStats` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Section {
    /// The force kernel.
    Pair = 0,
    /// The device-decided builds (gate, sort, ghosts, lists).
    Neigh = 1,
    /// Kicks, drifts, the ghosts following their bodies, the finiteness
    /// check, a batch's saved start.
    Modify = 2,
    /// Energy and virial sums.
    Thermo = 3,
}

/// Number of [`Section`]s.
pub(crate) const SECTIONS: usize = 4;

/// Section times of a device whose launches run when queued (the
/// emulator): host time from one mark to the next.
#[derive(Debug, Default)]
pub(crate) struct HostSections {
    open: Option<(std::time::Instant, Section)>,
    seconds: [f64; SECTIONS],
}

impl HostSections {
    /// Closes the open section and opens `section`.
    pub(crate) fn mark(&mut self, section: Option<Section>) {
        let now = std::time::Instant::now();
        if let Some((t, s)) = self.open.take() {
            self.seconds[s as usize] += now.duration_since(t).as_secs_f64();
        }
        self.open = section.map(|s| (now, s));
    }

    /// The closed sections' seconds.
    pub(crate) fn seconds(&self) -> [f64; SECTIONS] {
        self.seconds
    }
}

/// Bodies or vectors as words, four per [`Vec4`].
pub(crate) fn vec4_words(v: &[Vec4]) -> Vec<u32> {
    v.iter()
        .flat_map(|p| p.to_array().map(f32::to_bits))
        .collect()
}

/// Words as [`Vec4`]s (a trailing partial vector is dropped).
pub(crate) fn words_vec4(w: &[u32]) -> Vec<Vec4> {
    w.chunks_exact(4)
        .map(|c| {
            Vec4::new(
                f32::from_bits(c[0]),
                f32::from_bits(c[1]),
                f32::from_bits(c[2]),
                f32::from_bits(c[3]),
            )
        })
        .collect()
}

/// Words as `f64`s, two each, in the order they lie in memory.
pub(crate) fn words_f64(w: &[u32]) -> Vec<f64> {
    w.chunks_exact(2)
        .map(|c| {
            let mut bytes = [0u8; 8];
            bytes[..4].copy_from_slice(&c[0].to_ne_bytes());
            bytes[4..].copy_from_slice(&c[1].to_ne_bytes());
            f64::from_ne_bytes(bytes)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_vectors_and_doubles() {
        let v = [Vec4::new(1.0, -2.5, f32::MIN_POSITIVE, 3e38)];
        assert_eq!(words_vec4(&vec4_words(&v)), v);
        // An f64 as a device holds it: its bytes, in two words.
        let x = [1.0f64 / 3.0, -7e300];
        let memory = crate::emulator::DeviceMemory::from_slice(&x);
        assert_eq!(words_f64(&memory.read::<u32>()), x);
    }
}
