//! The CUDA backend (feature `cuda`): [`CudaDevice`], one CUDA device as the
//! `Device` (`plan/device.rs`) that the gravity plan, the MD plan and the
//! block-pair primitive drive. Without the feature, a stand-in whose
//! constructor returns [`Error::CudaNotCompiled`](crate::Error::CudaNotCompiled),
//! so the rest of the crate is the same with and without it.
//!
//! | file | what |
//! | --- | --- |
//! | `device.rs` | `CudaDevice`: the context holder, buffers by role, the stream, the orderings |
//! | `launch.rs` | opening a device, loading the PTX, enqueueing a kernel-table launch, the `Drop` context guard |
//! | `limits.rs` | the kernels' limits after the JIT, the shared-memory opt-in |
//! | `status.rs` | driver failures as `Error::Cuda` (imported by the others, importing none) |
//! | `stream.rs` | the device's stream (really `NON_BLOCKING`: cust 0.3.2 drops the flag) and events |

#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
mod launch;
#[cfg(feature = "cuda")]
mod limits;
#[cfg(feature = "cuda")]
mod status;
#[cfg(feature = "cuda")]
mod stream;
#[cfg(feature = "cuda")]
pub(crate) use device::CudaDevice;

#[cfg(not(feature = "cuda"))]
mod stand_in {
    use std::convert::Infallible;
    use std::marker::PhantomData;

    use gpu_kernels::entry::Launch;
    use gpu_kernels::shape::LaunchShape;

    use crate::engine::BackendKind;
    use crate::error::{Error, Result};
    use crate::plan::device::{Device, Role};

    /// Stand-in for the CUDA device in builds without the `cuda` feature:
    /// uninhabited, so every method below is unreachable.
    pub(crate) struct CudaDevice<K>(Infallible, PhantomData<K>);

    impl<K> CudaDevice<K> {
        /// Always [`Error::CudaNotCompiled`].
        pub(crate) fn open(_ordinal: u32) -> Result<CudaDevice<K>> {
            Err(Error::CudaNotCompiled)
        }
    }

    impl<K: Role> Device<K> for CudaDevice<K> {
        fn kind(&self) -> BackendKind {
            match self.0 {}
        }
        fn shared_opt_in(&self) -> u32 {
            match self.0 {}
        }
        fn alloc(&mut self, _: K, _: usize, _: bool) -> Result<()> {
            match self.0 {}
        }
        fn write(&mut self, _: K, _: usize, _: &[u32]) -> Result<()> {
            match self.0 {}
        }
        fn fill(&mut self, _: K, _: u32) -> Result<()> {
            match self.0 {}
        }
        fn read(&mut self, _: K, _: usize, _: usize) -> Result<Vec<u32>> {
            match self.0 {}
        }
        fn launch(&mut self, _: Launch<K>, _: LaunchShape) -> Result<()> {
            match self.0 {}
        }
        fn swap(&mut self, _: K, _: K) {
            match self.0 {}
        }
        fn synchronize(&mut self) -> Result<()> {
            match self.0 {}
        }
    }
}

#[cfg(not(feature = "cuda"))]
pub(crate) use stand_in::CudaDevice;
