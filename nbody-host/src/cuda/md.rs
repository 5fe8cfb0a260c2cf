//! The MD plan's device on CUDA.

use super::engine::CudaEngine;
use crate::config::Params;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::md::MdState;
use crate::state::Bodies;

impl CudaEngine {
    /// A short-range run on `device`.
    pub(crate) fn md(
        _device: u32,
        _bodies: &Bodies,
        _params: &Params,
        _start: Option<&MdState>,
    ) -> Result<Box<dyn Engine>> {
        Err(Error::Unsupported(
            "Lennard-Jones on CUDA: not wired yet".into(),
        ))
    }
}
