//! The CPU emulator of the CUDA execution model (placeholder until built).

use glam::Vec3;

use crate::backend::{Divergence, Engine, EngineOptions};
use crate::config::{BackendKind, Params};
use crate::error::{Error, Result};
use crate::state::{Bodies, Energy};

/// Runs the kernel bodies on CPU threads.
pub enum EmulatorEngine {}

impl EmulatorEngine {
    /// Not built yet.
    pub fn new(
        _bodies: &Bodies,
        _params: &Params,
        _options: &EngineOptions,
    ) -> Result<EmulatorEngine> {
        Err(Error::Unsupported("the emulator is not built yet".into()))
    }
}

impl Engine for EmulatorEngine {
    fn kind(&self) -> BackendKind {
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
