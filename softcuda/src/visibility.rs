//! What a load sees: the per-SM L1 caches of the adversarial schedule, the
//! `ld.global.nc` snapshot, and the release records of [`crate::sync`].
//!
//! **Deterministic schedule**: every access goes to device memory at once
//! (sequentially consistent), except `ld.global.nc`.
//!
//! **Adversarial schedule**: each modelled SM has a write-back L1 (256
//! direct-mapped lines of 128 bytes). Weak global accesses, and strong ones
//! at `.cta` scope, go through the L1 of the block's SM: a load may return a
//! line filled long ago (another SM's later stores are not seen), a store
//! stays in the line until it is written back. Strong accesses at `.gpu` and
//! `.sys` scope and atomics act on device memory (after writing back this
//! SM's dirty bytes of the word, and refreshing the line after), so they
//! are coherent. A fence at `.gpu`/`.sys`, a release writes back every
//! dirty line of the SM; a fence, an acquire drops its lines. Random lines
//! are written back and dropped between time slices, and every line at the
//! end of a launch. So a message passed without the producer's fence may
//! arrive before its data, and one read without the consumer's may read
//! stale data, as PTX allows; with both fences it never does.
//!
//! **`ld.global.nc`, `ldu`**: the read-only path serves the memory as it was
//! when the launch started: the first store of the launch to an allocation
//! keeps a copy of the allocation for these loads.

use crate::memory::GlobalMemory;
use crate::rng::Rng;
use crate::sync::SyncMap;

/// Bytes per L1 line.
pub const LINE: u64 = 128;
/// Lines per L1.
const LINES: usize = 256;
const INVALID: u64 = u64::MAX;

#[derive(Clone)]
struct Line {
    base: u64,
    dirty: u128,
    data: [u8; LINE as usize],
}

/// One SM's L1 data cache (write-back, write-allocate, not coherent).
#[derive(Clone)]
pub struct L1 {
    lines: Vec<Line>,
}

impl Default for L1 {
    fn default() -> L1 {
        L1 {
            lines: vec![
                Line {
                    base: INVALID,
                    dirty: 0,
                    data: [0; LINE as usize],
                };
                LINES
            ],
        }
    }
}

fn slot(base: u64) -> usize {
    let l = base / LINE;
    ((l ^ (l >> 8) ^ (l >> 16)) as usize) % LINES
}

/// The range of bit mask covering bytes `[off, off + len)` of a line.
fn mask(off: usize, len: usize) -> u128 {
    let m = if len >= 128 {
        u128::MAX
    } else {
        (1u128 << len) - 1
    };
    m << off
}

fn write_back(mem: &mut GlobalMemory, line: &mut Line, which: u128) {
    let mut d = line.dirty & which;
    line.dirty &= !which;
    while d != 0 {
        let start = d.trailing_zeros() as usize;
        let run = (d >> start).trailing_ones() as usize;
        // The line's allocation is alive for the whole launch.
        if let Ok(s) = mem.slice(line.base + start as u64, run as u64) {
            s.copy_from_slice(&line.data[start..start + run]);
        }
        d &= !mask(start, run);
    }
}

impl L1 {
    /// The line holding `addr`, filled from memory if absent (the line it
    /// replaces is written back first).
    fn line(&mut self, mem: &mut GlobalMemory, addr: u64) -> &mut Line {
        let base = addr & !(LINE - 1);
        let line = &mut self.lines[slot(base)];
        if line.base != base {
            write_back(mem, line, u128::MAX);
            line.base = base;
            line.dirty = 0;
            if let Some((a, size)) = mem.allocation_of(addr) {
                let start = base.max(a);
                let end = (base + LINE).min(a + size);
                let s = mem
                    .slice(start, end - start)
                    .expect("inside the allocation");
                let o = (start - base) as usize;
                line.data[o..o + s.len()].copy_from_slice(s);
            }
        }
        line
    }

    /// Reads `out.len()` bytes at `addr` (inside one line and one
    /// allocation) as this SM sees them.
    pub fn read(&mut self, mem: &mut GlobalMemory, addr: u64, out: &mut [u8]) {
        let line = self.line(mem, addr);
        let o = (addr - line.base) as usize;
        out.copy_from_slice(&line.data[o..o + out.len()]);
    }

    /// Writes `bytes` at `addr` into this SM's line (written back later).
    pub fn write(&mut self, mem: &mut GlobalMemory, addr: u64, bytes: &[u8]) {
        let line = self.line(mem, addr);
        let o = (addr - line.base) as usize;
        line.data[o..o + bytes.len()].copy_from_slice(bytes);
        line.dirty |= mask(o, bytes.len());
    }

    /// Before a coherent access to `[addr, addr + len)`: this SM's dirty
    /// bytes there go to memory.
    pub fn write_back_range(&mut self, mem: &mut GlobalMemory, addr: u64, len: u64) {
        let base = addr & !(LINE - 1);
        let line = &mut self.lines[slot(base)];
        if line.base == base {
            write_back(mem, line, mask((addr - base) as usize, len as usize));
        }
    }

    /// After a coherent access to `[addr, addr + len)`: the line, if
    /// present, holds memory's bytes there.
    pub fn refresh_range(&mut self, mem: &mut GlobalMemory, addr: u64, len: u64) {
        let base = addr & !(LINE - 1);
        let line = &mut self.lines[slot(base)];
        if line.base == base
            && let Ok(s) = mem.slice(addr, len)
        {
            let o = (addr - base) as usize;
            line.data[o..o + len as usize].copy_from_slice(s);
        }
    }

    /// Writes every dirty line back (a release at `.gpu` or `.sys`).
    pub fn flush(&mut self, mem: &mut GlobalMemory) {
        for line in &mut self.lines {
            if line.dirty != 0 {
                write_back(mem, line, u128::MAX);
            }
        }
    }

    /// Writes every dirty line back and drops every line (an acquire).
    pub fn invalidate(&mut self, mem: &mut GlobalMemory) {
        for line in &mut self.lines {
            write_back(mem, line, u128::MAX);
            line.base = INVALID;
        }
    }

    /// Writes back and drops one random line (lines do not stay forever).
    pub fn evict_random(&mut self, mem: &mut GlobalMemory, rng: &mut Rng) {
        let k = rng.below(LINES as u64) as usize;
        let line = &mut self.lines[k];
        write_back(mem, line, u128::MAX);
        line.base = INVALID;
    }
}

/// The memory model's state across the blocks and launches running
/// together.
#[derive(Default)]
pub struct MemModel {
    /// Releases recorded on locations.
    pub sync: SyncMap,
    /// One L1 per modelled SM (adversarial schedule), none otherwise.
    pub l1: Vec<L1>,
    /// The `ld.global.nc` snapshot generation of the running launches
    /// (0: none of them reads through the non-coherent path).
    pub snapshot: u32,
}

impl MemModel {
    /// Every L1 written back and emptied (the end of a launch).
    pub fn drain(&mut self, mem: &mut GlobalMemory) {
        for l in &mut self.l1 {
            l.invalidate(mem);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sms_stores_stay_in_its_l1_until_written_back() {
        let mut mem = GlobalMemory::new(1 << 20);
        let a = mem.alloc(512).unwrap();
        mem.fill(a, &[0], 512).unwrap();
        let (mut sm0, mut sm1) = (L1::default(), L1::default());
        let mut b = [0u8; 4];
        sm1.read(&mut mem, a, &mut b);
        sm0.write(&mut mem, a, &[1, 2, 3, 4]);
        sm0.read(&mut mem, a, &mut b);
        assert_eq!(b, [1, 2, 3, 4], "an SM sees its own stores");
        assert_eq!(mem.slice(a, 4).unwrap(), &[0; 4], "memory does not yet");
        sm0.write_back_range(&mut mem, a + 2, 2);
        assert_eq!(mem.slice(a, 4).unwrap(), &[0, 0, 3, 4]);
        sm0.flush(&mut mem);
        assert_eq!(mem.slice(a, 4).unwrap(), &[1, 2, 3, 4]);
        sm1.read(&mut mem, a, &mut b);
        assert_eq!(b, [0; 4], "another SM's line is stale");
        sm1.refresh_range(&mut mem, a, 4);
        sm1.read(&mut mem, a, &mut b);
        assert_eq!(b, [1, 2, 3, 4]);
        sm1.write(&mut mem, a + 256, &[9]);
        sm1.invalidate(&mut mem);
        assert_eq!(mem.slice(a + 256, 1).unwrap(), &[9]);
    }

    #[test]
    fn lines_at_the_end_of_an_allocation_fill_what_exists() {
        let mut mem = GlobalMemory::new(1 << 20);
        let a = mem.alloc(136).unwrap();
        mem.fill(a, &[7], 136).unwrap();
        let mut l1 = L1::default();
        let mut b = [0u8; 8];
        l1.read(&mut mem, a + 128, &mut b);
        assert_eq!(b, [7; 8]);
        l1.write(&mut mem, a + 132, &[1, 1, 1, 1]);
        l1.flush(&mut mem);
        assert_eq!(mem.slice(a + 128, 8).unwrap(), &[7, 7, 7, 7, 1, 1, 1, 1]);
    }
}
