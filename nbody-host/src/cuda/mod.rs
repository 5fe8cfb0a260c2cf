//! The CUDA backend (feature `cuda`), or a stand-in whose constructor returns
//! [`Error::CudaNotCompiled`](crate::Error::CudaNotCompiled), so the public
//! API is the same with and without the feature.

// The pure launch-budget logic is compiled and unit-tested in every build; the
// engine that uses it only with the `cuda` feature.
#[cfg(feature = "cuda")]
mod block_pair;
#[cfg_attr(
    not(feature = "cuda"),
    allow(
        dead_code,
        reason = "only the CUDA engine uses it; unit-tested in every build"
    )
)]
mod budget;
#[cfg(feature = "cuda")]
mod engine;
#[cfg(feature = "cuda")]
mod launch;
#[cfg(feature = "cuda")]
mod limits;
#[cfg(feature = "cuda")]
mod md;
#[cfg(feature = "cuda")]
mod status;
#[cfg(feature = "cuda")]
pub(crate) use block_pair::CudaBlockForces;
#[cfg(feature = "cuda")]
pub(crate) use engine::CudaEngine;

#[cfg(not(feature = "cuda"))]
mod stand_in {
    use glam::Vec3;
    use gpu_kernels::Vec4;

    use crate::config::Params;
    use crate::engine::{BackendKind, Divergence, Engine};
    use crate::error::{Error, Result};
    use crate::state::{Bodies, Energy};

    /// Stand-in for the CUDA engine in builds without the `cuda` feature:
    /// uninhabited, so every method below is unreachable.
    pub(crate) enum CudaEngine {}

    impl CudaEngine {
        /// Always [`Error::CudaNotCompiled`].
        pub(crate) fn new(_device: u32, _bodies: &Bodies, _params: &Params) -> Result<CudaEngine> {
            Err(Error::CudaNotCompiled)
        }

        /// Always [`Error::CudaNotCompiled`].
        pub(crate) fn md(
            _device: u32,
            _bodies: &Bodies,
            _params: &Params,
            _start: Option<&crate::md::MdState>,
        ) -> Result<Box<dyn Engine>> {
            Err(Error::CudaNotCompiled)
        }
    }

    impl Engine for CudaEngine {
        fn kind(&self) -> BackendKind {
            match *self {}
        }
        fn method(&self) -> &'static str {
            match *self {}
        }
        fn step(&mut self, _steps: u64) -> Result<Option<Divergence>> {
            match *self {}
        }
        fn read_state(&mut self) -> Result<Bodies> {
            match *self {}
        }
        fn energy(&mut self) -> Result<Energy> {
            match *self {}
        }
        fn accelerations(&mut self) -> Result<Vec<Vec3>> {
            match *self {}
        }
    }

    /// Stand-in for the CUDA block-pair primitive: uninhabited.
    pub(crate) enum CudaBlockForces {}

    impl CudaBlockForces {
        /// Always [`Error::CudaNotCompiled`].
        pub(crate) fn new(_device: u32, _params: &Params, _max: f32) -> Result<CudaBlockForces> {
            Err(Error::CudaNotCompiled)
        }
    }

    impl crate::block_pair::BlockForces for CudaBlockForces {
        fn kind(&self) -> BackendKind {
            match *self {}
        }
        fn pull(&mut self, _: &[Vec4], _: &[Vec4], _: &mut [Vec4]) -> Result<()> {
            match *self {}
        }
        fn pull_pair(
            &mut self,
            _: &[Vec4],
            _: &[Vec4],
            _: &mut [Vec4],
            _: &mut [Vec4],
        ) -> Result<()> {
            match *self {}
        }
        fn pull_within(&mut self, _: &[Vec4], _: &mut [Vec4]) -> Result<()> {
            match *self {}
        }
        fn potential_within(&mut self, _: &[Vec4]) -> Result<f64> {
            match *self {}
        }
        fn potential_between(&mut self, _: &[Vec4], _: &[Vec4]) -> Result<f64> {
            match *self {}
        }
    }
}

#[cfg(not(feature = "cuda"))]
pub(crate) use stand_in::{CudaBlockForces, CudaEngine};
