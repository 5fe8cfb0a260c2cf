//! `Backend::Emulator`: the launch plans of `plan/`, the same ones the CUDA
//! engine runs, executed with the emulator's `Exec` on host buffers.

use glam::Vec3;
use gpu_kernels::Vec4;
use gpu_kernels::entry::Buffer;
use gpu_kernels::exec::{Global, Word};
use gpu_kernels::integrate::ALL_FINITE;

use super::device_memory::DeviceMemory;
use super::launch::{LaunchOptions, launch};
use crate::config::Params;
use crate::engine::{BackendKind, Divergence, Engine};
use crate::error::{Error, Result};
use crate::plan::run::{PlanDevice, execute_all, run_steps};
use crate::plan::{Buf, Op, Plan};
use crate::state::{Bodies, Energy};

/// Dynamic shared memory a block may use on sm_70 (Volta) after opting in.
const SM70_SHARED_BYTES_OPT_IN: u32 = 96 * 1024;

impl Buffer for &DeviceMemory {
    fn global<T: Word>(self, len: u32) -> Global<T> {
        DeviceMemory::global(self, len)
    }
}

/// Runs the kernel bodies on CPU threads, through the same launch plans as
/// the CUDA backend. Slow (every shared-memory access can be recorded): meant
/// for tests and for trying the GPU code without a GPU.
pub(crate) struct EmulatorEngine {
    device: EmulatedDevice,
    plan: Plan,
}

/// The emulated device: its buffers and how launches run.
struct EmulatedDevice {
    pos: [DeviceMemory; 2],
    /// Which of `pos` is [`Buf::PosIn`].
    current: usize,
    vel: DeviceMemory,
    acc: DeviceMemory,
    partials: DeviceMemory,
    flag: DeviceMemory,
    options: LaunchOptions,
}

impl EmulatorEngine {
    /// Uploads `bodies` and runs the plan's preparation (leapfrog's first
    /// accelerations).
    pub(crate) fn new(
        bodies: &Bodies,
        params: &Params,
        race_detection: bool,
    ) -> Result<EmulatorEngine> {
        bodies.validate()?;
        let plan = Plan::for_bodies(bodies, params.clone())?;
        // Hold the kernels to the smallest GPU the PTX targets, so a plan
        // that runs here also fits on any supported device.
        let needed = plan.max_shared_bytes();
        if needed > SM70_SHARED_BYTES_OPT_IN {
            return Err(Error::SharedMemoryExceeded {
                block: params.kernel().block(),
                kernel: params.kernel().name(),
                needed,
                available: SM70_SHARED_BYTES_OPT_IN,
            });
        }
        let (pos, vel) = bodies.to_device_layout();
        let n = pos.len();
        let mut device = EmulatedDevice {
            pos: [DeviceMemory::from_slice(&pos), DeviceMemory::zeroed(4 * n)],
            current: 0,
            vel: DeviceMemory::from_slice(&vel),
            acc: DeviceMemory::zeroed(4 * n),
            partials: DeviceMemory::zeroed(2 * plan.energy_partials_len()),
            flag: DeviceMemory::from_slice(&[ALL_FINITE, 0u32]),
            options: LaunchOptions {
                race_detection,
                ..LaunchOptions::default()
            },
        };
        execute_all(&mut device, plan.prepare())?;
        Ok(EmulatorEngine { device, plan })
    }
}

impl EmulatedDevice {
    fn buffer(&self, buf: Buf) -> &DeviceMemory {
        match buf {
            Buf::PosIn => &self.pos[self.current],
            Buf::PosOut => &self.pos[1 - self.current],
            Buf::Vel => &self.vel,
            Buf::Acc => &self.acc,
            Buf::Partials => &self.partials,
            Buf::Flag => &self.flag,
        }
    }
}

impl PlanDevice for EmulatedDevice {
    fn execute(&mut self, op: &Op) -> Result<()> {
        match *op {
            Op::Launch(l, shape) => {
                let l = l.map_buffers(|b| self.buffer(b));
                let memory = [
                    &self.pos[0],
                    &self.pos[1],
                    &self.vel,
                    &self.acc,
                    &self.partials,
                    &self.flag,
                ];
                // SAFETY: the plan sizes every buffer for `n` bodies (`flag`
                // two words, `partials` `energy_partials_len` f64) as the
                // entry table's lengths say, and takes the shapes from
                // `gpu_kernels::shape`; the emulator checks every access anyway.
                launch(l.entry().name(), shape, self.options, &memory, |t| unsafe {
                    l.run(t)
                })
            }
            Op::ZeroAcc => {
                self.acc.clear();
                Ok(())
            }
            Op::SwapPositions => {
                self.current = 1 - self.current;
                Ok(())
            }
        }
    }

    fn reset_flag(&mut self) -> Result<()> {
        self.flag.write(&[ALL_FINITE, 0u32]);
        Ok(())
    }

    fn read_flag(&mut self) -> Result<[u32; 2]> {
        let flag = self.flag.read::<u32>();
        Ok([flag[0], flag[1]])
    }

    /// Unlike a GPU stream, the emulator can stop at once.
    fn steps_per_flag_read(&self) -> u64 {
        1
    }
}

impl Engine for EmulatorEngine {
    fn kind(&self) -> BackendKind {
        BackendKind::Emulator
    }

    fn method(&self) -> &'static str {
        self.plan.kernel_name()
    }

    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        run_steps(&mut self.device, &self.plan, steps)
    }

    fn read_state(&mut self) -> Result<Bodies> {
        let d = &self.device;
        let pos = d.pos[d.current].read::<Vec4>();
        let vel = d.vel.read::<Vec4>();
        Ok(Bodies::from_device_layout(&pos, &vel))
    }

    fn energy(&mut self) -> Result<Energy> {
        self.device.execute(self.plan.energy())?;
        Ok(self.plan.finish_energy(&self.device.partials.read::<f64>()))
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        execute_all(&mut self.device, self.plan.accelerations())?;
        Ok(self
            .device
            .acc
            .read::<Vec4>()
            .iter()
            .map(|a| Vec3::new(a.x, a.y, a.z))
            .collect())
    }
}
