//! Emulated memory at the word level: [`DeviceMemory`] (global buffers) and
//! the word loads, stores and `f32` atomic adds that global and shared
//! memory both go through. Every word is an `AtomicU32` accessed with
//! relaxed (or, for atomic adds, acquire-release) ordering, so that even a
//! racy kernel is reported by the race detector, never undefined behaviour.

use std::sync::atomic::{AtomicU32, Ordering};

use gpu_kernels::exec::{Global, Word};

/// Device memory of the emulator: 32-bit words, accessed through relaxed
/// atomics so that even a racy kernel is reported, never undefined behaviour.
pub struct DeviceMemory {
    words: Box<[AtomicU32]>,
}

impl DeviceMemory {
    /// `words` zeroed 32-bit words.
    pub fn zeroed(words: usize) -> DeviceMemory {
        DeviceMemory {
            words: (0..words).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// A copy of `data`.
    pub fn from_slice<T: Word>(data: &[T]) -> DeviceMemory {
        let mem = DeviceMemory::zeroed(data.len() * words_of::<T>());
        mem.write(data);
        mem
    }

    /// Overwrites the start of the buffer with `data` (must fit).
    pub fn write<T: Word>(&self, data: &[T]) {
        let w = words_of::<T>();
        assert!(data.len() * w <= self.words.len(), "write past the buffer");
        for (i, v) in data.iter().enumerate() {
            store_words(&self.words[i * w..(i + 1) * w], *v);
        }
    }

    /// The buffer as `T`s.
    pub fn read<T: Word>(&self) -> Vec<T> {
        let w = words_of::<T>();
        self.words
            .chunks_exact(w)
            .map(|c| load_words::<T>(c))
            .collect()
    }

    /// Sets every word to zero.
    pub fn clear(&self) {
        self.fill(0);
    }

    /// Sets every word to `value`.
    pub(super) fn fill(&self, value: u32) {
        self.words
            .iter()
            .for_each(|w| w.store(value, Ordering::Relaxed));
    }

    /// Number of 32-bit words.
    pub(super) fn len_words(&self) -> usize {
        self.words.len()
    }

    /// Words `offset..offset + len`, or `None` past the end.
    pub(super) fn read_words(&self, offset: usize, len: usize) -> Option<Vec<u32>> {
        let end = offset.checked_add(len)?;
        let words = self.words.get(offset..end)?;
        Some(words.iter().map(|w| w.load(Ordering::Relaxed)).collect())
    }

    /// Writes `data` from word `offset`; `false` (nothing written) past the end.
    pub(super) fn write_words(&self, offset: usize, data: &[u32]) -> bool {
        let words = offset
            .checked_add(data.len())
            .and_then(|end| self.words.get(offset..end));
        let Some(words) = words else {
            return false;
        };
        for (w, &v) in words.iter().zip(data) {
            w.store(v, Ordering::Relaxed);
        }
        true
    }

    /// A kernel's view of the buffer as `len` elements of `T`.
    pub fn global<T: Word>(&self, len: u32) -> Global<T> {
        Global::new(self.words.as_ptr() as *mut T, len)
    }

    /// The byte addresses `[start, end)` the buffer occupies.
    pub(super) fn range(&self) -> (usize, usize) {
        let start = self.words.as_ptr() as usize;
        (start, start + 4 * self.words.len())
    }
}

/// 32-bit words in a `T`.
pub(super) fn words_of<T: Word>() -> usize {
    std::mem::size_of::<T>() / 4
}

/// Reads a `T` from `words`, exactly as many as `T` has (panics otherwise).
pub(super) fn load_words<T: Word>(words: &[AtomicU32]) -> T {
    assert_eq!(words.len(), words_of::<T>(), "words of one value");
    let mut value = std::mem::MaybeUninit::<T>::uninit();
    let out = value.as_mut_ptr() as *mut u32;
    for (k, w) in words.iter().enumerate() {
        // SAFETY: `k < words.len() == size_of::<T>() / 4` (asserted; `Word`
        // sizes are multiples of 4), so word `k` lies inside `value`; the
        // write is unaligned, so `T`'s alignment does not matter.
        unsafe { out.add(k).write_unaligned(w.load(Ordering::Relaxed)) };
    }
    // SAFETY: the loop wrote all `size_of::<T>() / 4` words of `value`, and
    // `Word` types have no padding and accept every bit pattern.
    unsafe { value.assume_init() }
}

/// Writes `value` into `words`, exactly as many as `T` has (panics otherwise).
pub(super) fn store_words<T: Word>(words: &[AtomicU32], value: T) {
    assert_eq!(words.len(), words_of::<T>(), "words of one value");
    let src = &value as *const T as *const u32;
    for (k, w) in words.iter().enumerate() {
        // SAFETY: `k < words.len() == size_of::<T>() / 4` (asserted), so word
        // `k` lies inside `value`, which has no padding (`Word`): an
        // initialised `u32`, read unaligned.
        w.store(unsafe { src.add(k).read_unaligned() }, Ordering::Relaxed);
    }
}

/// `*word += value` on the `f32` bit pattern, atomically (a compare-and-swap loop).
pub(super) fn atomic_add_f32(word: &AtomicU32, value: f32) {
    let _ = word.fetch_update(Ordering::AcqRel, Ordering::Acquire, |bits| {
        Some((f32::from_bits(bits) + value).to_bits())
    });
}
