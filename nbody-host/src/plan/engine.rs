//! [`PlanEngine`]: a gravity `Simulation` on a launch device, the plan of
//! `plan/mod.rs` driven through the step loop of `run.rs` over any
//! [`Device`] (`Backend::Emulator` and `Backend::Cuda`, the same launches on
//! both).

use glam::Vec3;

use super::device::{Device, vec4_words, words_f64, words_vec4};
use super::run::{execute, execute_all, reset_flag, run_steps};
use super::{Buf, Plan};
use crate::config::Params;
use crate::engine::{BackendKind, Divergence, Engine};
use crate::error::{Error, Result};
use crate::state::{Bodies, Energy};

/// A gravity run on the device `D`.
pub(crate) struct PlanEngine<D> {
    plan: Plan,
    dev: D,
}

impl<D: Device<Buf>> PlanEngine<D> {
    /// Checks `bodies` and makes the plan, then opens the device (`open`,
    /// called only once the input is known good), checks what the plan
    /// needs against it (shared memory, device memory, the kernels' limits)
    /// before allocating anything, uploads the bodies and runs the plan's
    /// preparation (leapfrog's first accelerations).
    pub(crate) fn new(
        bodies: &Bodies,
        params: &Params,
        open: impl FnOnce() -> Result<D>,
    ) -> Result<PlanEngine<D>> {
        bodies.validate()?;
        let plan = Plan::for_bodies(bodies, params.clone())?;
        let mut dev = open()?;

        let needed = plan.max_shared_bytes();
        let available = dev.shared_opt_in();
        if needed > available {
            return Err(Error::SharedMemoryExceeded {
                block: params.kernel().block(),
                kernel: params.kernel().name(),
                needed,
                available,
            });
        }
        if let Some(free) = dev.free_bytes()? {
            let needed = plan.device_bytes();
            if needed > free {
                return Err(Error::DeviceMemoryExceeded {
                    n: bodies.len(),
                    needed,
                    available: free,
                });
            }
        }
        dev.check_launches(&plan.every_launch())?;

        let (pos, vel) = bodies.to_device_layout();
        let words = 4 * pos.len();
        for (buf, words) in [
            (Buf::PosIn, words),
            (Buf::PosOut, words),
            (Buf::Vel, words),
            (Buf::Acc, words),
            (Buf::Partials, 2 * plan.energy_partials_len()),
            (Buf::Flag, 2),
        ] {
            dev.alloc(buf, words, false)?;
        }
        dev.write(Buf::PosIn, 0, &vec4_words(&pos))?;
        dev.write(Buf::Vel, 0, &vec4_words(&vel))?;
        reset_flag(&mut dev)?;
        execute_all(&mut dev, plan.prepare())?;
        dev.synchronize()?;
        Ok(PlanEngine { plan, dev })
    }

    /// The first `4 n` words of `buf` as vectors.
    fn read_vec4(&mut self, buf: Buf) -> Result<Vec<gpu_kernels::Vec4>> {
        let words = 4 * self.plan.n() as usize;
        Ok(words_vec4(&self.dev.read(buf, 0, words)?))
    }
}

impl<D: Device<Buf>> Engine for PlanEngine<D> {
    fn kind(&self) -> BackendKind {
        self.dev.kind()
    }

    fn method(&self) -> &'static str {
        self.plan.kernel_name()
    }

    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        run_steps(&mut self.dev, &self.plan, steps)
    }

    fn read_state(&mut self) -> Result<Bodies> {
        let pos = self.read_vec4(Buf::PosIn)?;
        let vel = self.read_vec4(Buf::Vel)?;
        Ok(Bodies::from_device_layout(&pos, &vel))
    }

    fn energy(&mut self) -> Result<Energy> {
        execute(&mut self.dev, self.plan.energy())?;
        let words = 2 * self.plan.energy_partials_len();
        let partials = words_f64(&self.dev.read(Buf::Partials, 0, words)?);
        Ok(self.plan.finish_energy(&partials))
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        execute_all(&mut self.dev, self.plan.accelerations())?;
        let acc = self.read_vec4(Buf::Acc)?;
        Ok(acc.iter().map(|a| Vec3::new(a.x, a.y, a.z)).collect())
    }

    fn device_seconds(&self) -> Option<f64> {
        self.dev.seconds()
    }
}
