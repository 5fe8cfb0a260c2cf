//! Device memory and the address space.
//!
//! One 64-bit generic address space with tagged ranges, as on the GPU:
//!
//! | range | what |
//! | --- | --- |
//! | `[SHARED_WINDOW, SHARED_WINDOW + 2^32)` | the current block's shared memory (generic view) |
//! | `[LOCAL_WINDOW, LOCAL_WINDOW + 2^32)` | the current thread's local memory (generic view) |
//! | `[GLOBAL_BASE, ...)` | device allocations (generic = global, as on hardware) |
//!
//! `.shared` and `.local` instructions use state-space offsets starting at 0
//! (what `mov %rd, shared_symbol` yields); `cvta.shared` adds the window base
//! and `cvta.to.shared` subtracts it. So a shared offset used as a generic or
//! global address, or a generic one used with `.shared`, falls outside every
//! range and is an illegal address, as it would be on hardware.
//!
//! Allocations never reuse addresses and are separated by unmapped gaps, so
//! an access past the end of a buffer, or to a freed one, is reported rather
//! than landing in a neighbour (stricter than hardware, which maps memory in
//! 2 MiB pages: compute-sanitizer's rule).

use crate::race::Cell;

/// Generic address of shared-memory offset 0.
pub const SHARED_WINDOW: u64 = 0x0000_1000_0000_0000;
/// Generic address of local-memory offset 0.
pub const LOCAL_WINDOW: u64 = 0x0000_2000_0000_0000;
/// First device allocation.
pub const GLOBAL_BASE: u64 = 0x0000_7f00_0000_0000;
/// Unmapped bytes between two allocations.
const GAP: u64 = 64 * 1024;
/// Allocation alignment (cudaMalloc guarantees 256 bytes).
pub const ALLOC_ALIGN: u64 = 256;

/// The byte pattern of fresh allocations: never-written device memory reads
/// as `0x7fbadbad`, a quiet NaN as `f32` and an implausible integer, so a
/// kernel that reads memory nobody initialised produces visible garbage.
pub const POISON: [u8; 4] = 0x7fba_dbadu32.to_le_bytes();

/// One device allocation.
pub struct Allocation {
    /// Its device address.
    pub base: u64,
    /// Its bytes.
    pub data: Vec<u8>,
    /// Race-detector shadow, one cell per 4-byte word (empty until a checked
    /// launch touches the allocation).
    pub(crate) shadow: Vec<Cell>,
    /// The bytes as they were when the running launches started, for
    /// `ld.global.nc` (kept by their first store), and its generation.
    snapshot: Vec<u8>,
    snapshot_of: u32,
}

/// Why a memory operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemError {
    /// The device has no room for the allocation.
    OutOfMemory,
    /// The address range is not inside one live allocation.
    InvalidAddress,
}

/// Device (global) memory: the allocations of one device.
pub struct GlobalMemory {
    allocs: Vec<Allocation>,
    next: u64,
    used: u64,
    capacity: u64,
    last: usize,
}

impl GlobalMemory {
    /// Memory of `capacity` bytes.
    pub fn new(capacity: u64) -> GlobalMemory {
        GlobalMemory {
            allocs: Vec::new(),
            next: GLOBAL_BASE,
            used: 0,
            capacity,
            last: 0,
        }
    }

    /// Total bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes not allocated.
    pub fn free_bytes(&self) -> u64 {
        self.capacity - self.used
    }

    /// Allocates `bytes` (at least 1) filled with [`POISON`].
    pub fn alloc(&mut self, bytes: u64) -> Result<u64, MemError> {
        let rounded = bytes.max(1).div_ceil(ALLOC_ALIGN) * ALLOC_ALIGN;
        if rounded > self.capacity - self.used {
            return Err(MemError::OutOfMemory);
        }
        let base = self.next;
        let len = usize::try_from(bytes.max(1)).map_err(|_| MemError::OutOfMemory)?;
        let mut data = Vec::new();
        data.try_reserve_exact(len)
            .map_err(|_| MemError::OutOfMemory)?;
        data.extend(POISON.iter().cycle().take(len));
        self.allocs.push(Allocation {
            base,
            data,
            shadow: Vec::new(),
            snapshot: Vec::new(),
            snapshot_of: 0,
        });
        self.used += rounded;
        self.next = (base + rounded + GAP).div_ceil(ALLOC_ALIGN) * ALLOC_ALIGN;
        Ok(base)
    }

    /// Frees the allocation starting at `base`.
    pub fn free(&mut self, base: u64) -> Result<(), MemError> {
        let i = self
            .allocs
            .binary_search_by_key(&base, |a| a.base)
            .map_err(|_| MemError::InvalidAddress)?;
        let a = self.allocs.remove(i);
        self.used -= (a.data.len() as u64).div_ceil(ALLOC_ALIGN) * ALLOC_ALIGN;
        self.last = 0;
        Ok(())
    }

    /// Index of the allocation holding `[addr, addr + len)`, if one does.
    #[inline]
    pub(crate) fn locate(&mut self, addr: u64, len: u64) -> Option<usize> {
        let hit = |a: &Allocation| {
            addr >= a.base
                && addr
                    .checked_add(len)
                    .is_some_and(|e| e <= a.base + a.data.len() as u64)
        };
        if let Some(a) = self.allocs.get(self.last)
            && hit(a)
        {
            return Some(self.last);
        }
        let i = match self.allocs.binary_search_by_key(&addr, |a| a.base) {
            Ok(i) => i,
            Err(0) => return None,
            Err(i) => i - 1,
        };
        if hit(&self.allocs[i]) {
            self.last = i;
            Some(i)
        } else {
            None
        }
    }

    pub(crate) fn alloc_mut(&mut self, i: usize) -> &mut Allocation {
        &mut self.allocs[i]
    }

    /// Before the first store of snapshot generation `gen` to allocation
    /// `i`: keeps its bytes for [`GlobalMemory::read_only`].
    #[inline]
    pub(crate) fn keep_snapshot(&mut self, i: usize, generation: u32) {
        let a = &mut self.allocs[i];
        if a.snapshot_of != generation {
            a.snapshot_of = generation;
            a.snapshot.clear();
            a.snapshot.extend_from_slice(&a.data);
        }
    }

    /// `len` bytes at offset `off` of allocation `i` as they were before
    /// the stores of snapshot generation `gen` (the `ld.global.nc` path).
    pub(crate) fn read_only(&self, i: usize, off: usize, len: usize, generation: u32) -> &[u8] {
        let a = &self.allocs[i];
        if generation != 0 && a.snapshot_of == generation {
            &a.snapshot[off..off + len]
        } else {
            &a.data[off..off + len]
        }
    }

    /// Frees every snapshot (the launches that needed them are done).
    pub(crate) fn drop_snapshots(&mut self) {
        for a in &mut self.allocs {
            a.snapshot_of = 0;
            a.snapshot = Vec::new();
        }
    }

    /// The race-detector shadow of allocation `i` from byte `off`,
    /// created if absent.
    pub(crate) fn shadow(&mut self, i: usize) -> &mut [Cell] {
        let a = &mut self.allocs[i];
        if a.shadow.is_empty() {
            a.shadow = vec![Cell::default(); a.data.len().div_ceil(4)];
        }
        &mut a.shadow
    }

    /// The base of allocation `i`.
    pub(crate) fn base_of(&self, i: usize) -> u64 {
        self.allocs[i].base
    }

    /// The bytes `[addr, addr + len)` of one allocation.
    pub fn slice(&mut self, addr: u64, len: u64) -> Result<&mut [u8], MemError> {
        let i = self.locate(addr, len).ok_or(MemError::InvalidAddress)?;
        let a = &mut self.allocs[i];
        let off = (addr - a.base) as usize;
        Ok(&mut a.data[off..off + len as usize])
    }

    /// Copies host bytes to the device.
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> Result<(), MemError> {
        self.slice(addr, bytes.len() as u64)?.copy_from_slice(bytes);
        Ok(())
    }

    /// Copies device bytes to the host.
    pub fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        out.copy_from_slice(self.slice(addr, out.len() as u64)?);
        Ok(())
    }

    /// Fills `count` elements of `pattern` (1, 2 or 4 bytes) from `addr`.
    pub fn fill(&mut self, addr: u64, pattern: &[u8], count: u64) -> Result<(), MemError> {
        let len = count * pattern.len() as u64;
        let s = self.slice(addr, len)?;
        for chunk in s.chunks_exact_mut(pattern.len()) {
            chunk.copy_from_slice(pattern);
        }
        Ok(())
    }

    /// The base and size of the allocation containing `addr`, if any.
    pub fn allocation_of(&mut self, addr: u64) -> Option<(u64, u64)> {
        let i = self.locate(addr, 1)?;
        let a = &self.allocs[i];
        Some((a.base, a.data.len() as u64))
    }

    /// Number of live allocations.
    pub fn allocation_count(&self) -> usize {
        self.allocs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_poisoned_separated_and_bounded() {
        let mut m = GlobalMemory::new(1 << 20);
        let a = m.alloc(10).unwrap();
        let b = m.alloc(100).unwrap();
        assert!(b >= a + 10 + GAP);
        assert_eq!(a % ALLOC_ALIGN, 0);
        let mut out = [0u8; 8];
        m.read(a, &mut out).unwrap();
        assert_eq!(out, [0xad, 0xdb, 0xba, 0x7f, 0xad, 0xdb, 0xba, 0x7f]);
        assert_eq!(m.write(a + 8, &[1, 2, 3]), Err(MemError::InvalidAddress));
        m.write(a + 7, &[1, 2, 3]).unwrap();
        assert_eq!(m.locate(a + 10, 1), None);
        assert_eq!(m.alloc(1 << 20), Err(MemError::OutOfMemory));
        m.free(a).unwrap();
        assert_eq!(m.read(a, &mut out), Err(MemError::InvalidAddress));
        assert_eq!(m.free(a), Err(MemError::InvalidAddress));
        assert_eq!(m.free_bytes(), (1 << 20) - 256);
        m.fill(b, &[1, 0], 50).unwrap();
        assert_eq!(m.slice(b, 4).unwrap(), &[1, 0, 1, 0]);
    }
}
