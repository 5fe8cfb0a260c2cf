//! The CUDA execution model as a trait, so kernel bodies are written once.
//!
//! A kernel body is an `unsafe fn body<E: Exec>(e: &E, ...)` run by every
//! thread of a launch. On the GPU `E` is a zero-sized type whose methods are
//! PTX special registers, `bar.sync`, `bar.warp.sync`, `ld/st.shared` and
//! `red.add.f32` (module `nvptx`, compiled for `nvptx64` only), so the
//! generic body monomorphises to the code one would write by hand. On the host
//! `nbody-host`'s emulator implements it with real threads, real barriers and a
//! shared-memory race detector.
//!
//! The fast reciprocal square root belongs to the number type rather than to
//! the execution model ([`Real::rsqrt`](crate::Real::rsqrt)): the host's SIMD
//! backend needs it without any thread model.

use core::marker::PhantomData;

/// Plain data made only of 32-bit words, any bit pattern valid: what kernels
/// may keep in device and shared memory. The emulator moves these word by word
/// through atomics, so a racy kernel is reported, never undefined behaviour.
///
/// # Safety
/// Implementors must have no padding, a size that is a multiple of 4 and an
/// alignment of at least 4, and accept every bit pattern.
pub unsafe trait Word: Copy + Send + Sync + 'static {}

// SAFETY: 4 bytes, 4-aligned, every bit pattern valid.
unsafe impl Word for u32 {}
// SAFETY: 4 bytes, 4-aligned, every bit pattern valid (NaNs included).
unsafe impl Word for f32 {}
// SAFETY: 8 bytes, 8-aligned, padding-free, every bit pattern valid.
unsafe impl Word for f64 {}
// SAFETY: four f32 (`repr(C, align(16))`), 16 bytes, no padding.
unsafe impl Word for crate::Vec4 {}

/// A device buffer as a kernel sees it: a base pointer and a length in elements.
///
/// The GPU implementation ignores the length (the entry points derive it from
/// `n`, and the host checks buffer sizes before launching); the emulator checks
/// every access against it and reports an out-of-bounds access instead of
/// touching memory it does not own.
pub struct Global<T> {
    ptr: *mut T,
    len: u32,
    _t: PhantomData<T>,
}

impl<T> Clone for Global<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Global<T> {}

// SAFETY: a `Global` is an address, like a CUDA device pointer; what may be
// done through it is governed by the `unsafe` methods of `Exec`.
unsafe impl<T> Send for Global<T> {}
// SAFETY: as for `Send`: sharing the address grants nothing by itself.
unsafe impl<T> Sync for Global<T> {}

impl<T> core::fmt::Debug for Global<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Global({:p}, len {})", self.ptr, self.len)
    }
}

impl<T> Global<T> {
    /// A buffer of `len` elements starting at `ptr`.
    #[inline(always)]
    pub const fn new(ptr: *mut T, len: u32) -> Self {
        Global {
            ptr,
            len,
            _t: PhantomData,
        }
    }

    /// The base address.
    #[inline(always)]
    pub const fn as_ptr(self) -> *mut T {
        self.ptr
    }

    /// The number of elements.
    #[inline(always)]
    pub const fn len(self) -> u32 {
        self.len
    }

    /// Whether the buffer has no elements.
    #[inline(always)]
    pub const fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The view of elements `by..` (empty past the end): element `k` of the
    /// result is element `by + k` of `self`. On the GPU the offset is one
    /// address computation, and constant indices into the result become
    /// immediate offsets of the loads.
    #[inline(always)]
    pub const fn offset(self, by: u32) -> Self {
        Global::new(
            self.ptr.wrapping_add(by as usize),
            self.len.saturating_sub(by),
        )
    }
}

/// Four neighbour indices loaded together (`ld.global.v4.u32`): a group of
/// a neighbour list (see [`neighbours`](crate::neighbours)).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quad(pub [u32; 4]);

// SAFETY: four u32 (`repr(C, align(16))`), 16 bytes, no padding.
unsafe impl Word for Quad {}

impl Global<u32> {
    /// The same memory as `len / 4` [`Quad`]s (the base must be 16-byte
    /// aligned on the GPU: a device allocation plus a multiple of 4 words).
    #[inline(always)]
    pub const fn quads(self) -> Global<Quad> {
        Global::new(self.ptr as *mut Quad, self.len / 4)
    }
}

impl Global<crate::Vec4> {
    /// The same memory as `4 * len` single `f32` components, for atomics.
    #[inline(always)]
    pub const fn components(self) -> Global<f32> {
        Global::new(self.ptr as *mut f32, self.len.saturating_mul(4))
    }
}

/// The CUDA execution model, one-dimensional launches.
///
/// All indices are `u32`, as on the GPU; the host limits `n` so that no index
/// computation can overflow (see [`shape::MAX_BODIES`](crate::shape::MAX_BODIES)).
///
/// # Safety of the memory methods
/// The caller (a kernel body) guarantees that indices are in bounds, that a
/// shared-memory index fits the dynamic shared memory the launch requested, and
/// that no two threads access the same location without a barrier between them
/// unless both accesses are atomic. The emulator checks all three at run time.
pub trait Exec {
    /// `threadIdx.x`.
    fn thread_idx(&self) -> u32;
    /// `blockIdx.x`.
    fn block_idx(&self) -> u32;
    /// `blockDim.x`.
    fn block_dim(&self) -> u32;
    /// `gridDim.x`.
    fn grid_dim(&self) -> u32;
    /// `__syncthreads()`: every thread of the block waits here; shared-memory
    /// writes before it are visible to every thread after it. Every thread of
    /// the block must reach it: never branch out early before a barrier.
    fn sync_threads(&self);
    /// `__syncwarp()` with a full mask: the 32 threads of this thread's warp
    /// wait for each other and their shared-memory accesses are ordered.
    fn sync_warp(&self);

    /// Reads element `i` of a device buffer.
    ///
    /// # Safety
    /// See the trait documentation.
    unsafe fn load<T: Word>(&self, buf: Global<T>, i: u32) -> T;
    /// Writes element `i` of a device buffer.
    ///
    /// # Safety
    /// See the trait documentation.
    unsafe fn store<T: Word>(&self, buf: Global<T>, i: u32, value: T);
    /// `atomicAdd` on `f32` element `i` of a device buffer (result unused, `red`).
    ///
    /// # Safety
    /// See the trait documentation.
    unsafe fn atomic_add(&self, buf: Global<f32>, i: u32, value: f32);
    /// `atomicAdd` on `u32` element `i` of a device buffer; returns the old
    /// value (`atom.global.add.u32`: the counting sort's slot within a cell).
    ///
    /// # Safety
    /// See the trait documentation.
    unsafe fn atomic_add_u32(&self, buf: Global<u32>, i: u32, value: u32) -> u32;
    /// `atomicMax` on `u32` element `i` of a device buffer, result unused
    /// (`red.global.max.u32`: flags and counts the host reads).
    ///
    /// # Safety
    /// See the trait documentation.
    unsafe fn atomic_max_u32(&self, buf: Global<u32>, i: u32, value: u32);
    /// `atomicMin` on `u32` element `i` of a device buffer, result unused
    /// (`red.global.min.u32`: the divergence flag's first bad step).
    ///
    /// # Safety
    /// See the trait documentation.
    unsafe fn atomic_min_u32(&self, buf: Global<u32>, i: u32, value: u32);

    /// Reads element `i` of the dynamic shared memory viewed as an array of `T`.
    ///
    /// # Safety
    /// See the trait documentation.
    unsafe fn shared_load<T: Word>(&self, i: u32) -> T;
    /// Writes element `i` of the dynamic shared memory viewed as an array of `T`.
    ///
    /// # Safety
    /// See the trait documentation.
    unsafe fn shared_store<T: Word>(&self, i: u32, value: T);
    /// `atomicAdd` on `f32` element `i` of the dynamic shared memory.
    ///
    /// # Safety
    /// See the trait documentation.
    unsafe fn shared_atomic_add(&self, i: u32, value: f32);
}
