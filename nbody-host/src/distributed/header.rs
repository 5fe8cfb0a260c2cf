//! What rank 0 tells the other ranks at start-up: the number of bodies, the
//! start (step, time), the parameters and the heaviest mass, as a fixed
//! little-endian record broadcast once.

use crate::config::{Kernel, Params};
use crate::error::{Error, Result};
use crate::force::ForceLaw;
use crate::integrator::Integrator;

/// Bytes of the parameters rank 0 broadcasts: `N`, step, time, `dt` (f64),
/// softening, `G` (f32), kernel code, block, integrator code, largest mass.
pub(super) const HEADER: usize = 8 + 8 + 8 + 8 + 4 + 4 + 1 + 4 + 1 + 4;

/// What rank 0 tells the others at start-up.
pub(super) struct Header {
    pub n: usize,
    pub step: u64,
    pub time: f64,
    pub params: Params,
    pub max_mass: f32,
}

impl Header {
    pub(super) fn encode(&self) -> [u8; HEADER] {
        let p = &self.params;
        // Rank 0 checked the force law (`gravity_of`) before encoding a header.
        let g = p.gravity().unwrap_or_default();
        let mut b = Vec::with_capacity(HEADER);
        b.extend_from_slice(&(self.n as u64).to_le_bytes());
        b.extend_from_slice(&self.step.to_le_bytes());
        b.extend_from_slice(&self.time.to_le_bytes());
        b.extend_from_slice(&p.dt_f64().to_le_bytes());
        b.extend_from_slice(&g.softening().to_le_bytes());
        b.extend_from_slice(&g.g().to_le_bytes());
        b.push(p.kernel().code());
        b.extend_from_slice(&p.kernel().block().to_le_bytes());
        b.push(p.integrator().code());
        b.extend_from_slice(&self.max_mass.to_le_bytes());
        b.try_into().expect("HEADER bytes")
    }

    pub(super) fn decode(b: &[u8; HEADER]) -> Result<Header> {
        let u64_at = |k: usize| u64::from_le_bytes(b[k..k + 8].try_into().expect("8 bytes"));
        let u32_at = |k: usize| u32::from_le_bytes(b[k..k + 4].try_into().expect("4 bytes"));
        let f32_at = |k: usize| f32::from_bits(u32_at(k));
        let bad = |what: &str| Error::Unsupported(format!("rank 0 sent an unknown {what}"));
        let kernel = Kernel::from_code(b[40], u32_at(41)).ok_or_else(|| bad("kernel"))?;
        let integrator = Integrator::from_code(b[45]).ok_or_else(|| bad("integrator"))?;
        // f32 -> f64 -> f32 is exact: the same parameters as rank 0's.
        let force = ForceLaw::gravity(f32_at(36) as f64, f32_at(32) as f64)?;
        Ok(Header {
            n: u64_at(0) as usize,
            step: u64_at(8),
            time: f64::from_bits(u64_at(16)),
            params: Params::new(f64::from_bits(u64_at(24)), force, kernel, integrator)?,
            max_mass: f32_at(46),
        })
    }
}
