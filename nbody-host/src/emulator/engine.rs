//! `Backend::Emulator`: the launch plans of `plan.rs`, the same ones the
//! CUDA engine runs, executed with the emulator's `Exec` on host buffers.

use glam::Vec3;
use gpu_kernels::Vec4;
use gpu_kernels::entry;
use gpu_kernels::integrate::ALL_FINITE;

use super::launch::{DeviceMemory, EmuThread, LaunchOptions, launch};
use crate::backend::{Divergence, Engine, EngineOptions};
use crate::config::{BackendKind, Params};
use crate::error::{Error, Result};
use crate::plan::{Arg, Buf, Launch, Op, Plan};
use crate::state::{Bodies, Energy};

/// Dynamic shared memory a block may use on sm_70 (Volta) after opting in.
const SM70_SHARED_BYTES_OPT_IN: u32 = 96 * 1024;

/// Runs the kernel bodies on CPU threads, through the same launch plans as
/// the CUDA backend. Slow (every shared-memory access can be recorded): meant
/// for tests and for trying the GPU code without a GPU.
pub struct EmulatorEngine {
    pos: [DeviceMemory; 2],
    current: usize,
    vel: DeviceMemory,
    acc: DeviceMemory,
    partials: DeviceMemory,
    flag: DeviceMemory,
    plan: Plan,
    options: LaunchOptions,
}

impl EmulatorEngine {
    /// Uploads `bodies` and runs the plan's preparation (leapfrog's first
    /// accelerations).
    pub fn new(
        bodies: &Bodies,
        params: &Params,
        options: &EngineOptions,
    ) -> Result<EmulatorEngine> {
        bodies.validate()?;
        let plan = Plan::new(bodies.len(), *params)?;
        // Hold the kernels to the smallest GPU the PTX targets, so a plan
        // that runs here also fits on any supported device.
        let needed = plan.max_shared_bytes();
        if needed > SM70_SHARED_BYTES_OPT_IN {
            return Err(Error::SharedMemoryExceeded {
                block: params.kernel.block(),
                kernel: params.kernel.name(),
                needed,
                available: SM70_SHARED_BYTES_OPT_IN,
            });
        }
        let (pos, vel) = bodies.to_device_layout();
        let n = pos.len();
        let mut engine = EmulatorEngine {
            pos: [DeviceMemory::from_slice(&pos), DeviceMemory::zeroed(4 * n)],
            current: 0,
            vel: DeviceMemory::from_slice(&vel),
            acc: DeviceMemory::zeroed(4 * n),
            partials: DeviceMemory::zeroed(2 * plan.energy_partials_len()),
            flag: DeviceMemory::from_slice(&[ALL_FINITE, 0u32]),
            plan,
            options: LaunchOptions {
                race_detection: options.emulator_race_detection,
                ..LaunchOptions::default()
            },
        };
        let prepare = engine.plan.prepare();
        engine.run(&prepare)?;
        Ok(engine)
    }

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

    fn run(&mut self, ops: &[Op]) -> Result<()> {
        for op in ops {
            match op {
                Op::Launch(l) => self.launch(l)?,
                Op::ZeroAcc => self.acc.clear(),
                Op::SwapPositions => self.current = 1 - self.current,
            }
        }
        Ok(())
    }

    /// Calls the kernel body behind `l.entry` with `l`'s arguments.
    fn launch(&self, l: &Launch) -> Result<()> {
        let bad = || Error::Emulator(format!("kernel {}: arguments {:?}", l.entry.name, l.args));
        let buf = |k: usize| match l.args.get(k) {
            Some(Arg::Buf(b)) => Ok(self.buffer(*b)),
            _ => Err(bad()),
        };
        let int = |k: usize| match l.args.get(k) {
            Some(Arg::U32(v)) => Ok(*v),
            _ => Err(bad()),
        };
        let real = |k: usize| match l.args.get(k) {
            Some(Arg::F32(v)) => Ok(*v),
            _ => Err(bad()),
        };
        let memory = [
            &self.pos[0],
            &self.pos[1],
            &self.vel,
            &self.acc,
            &self.partials,
            &self.flag,
        ];
        let go = |kernel: &(dyn Fn(&EmuThread<'_>) + Sync)| {
            launch(l.entry.name, l.shape, self.options, &memory, kernel)
        };
        let e = l.entry;
        // SAFETY (every arm): the buffers hold `n` bodies (`flag` two words,
        // `partials` `energy_partials_len` f64), the shape comes from
        // `launch.rs`; the emulator checks every access anyway.
        if e == entry::SIMT_ACCEL || e == entry::TILED_ACCEL || e == entry::TRIANGLE_ACCEL {
            let (n, g, eps2) = (int(2)?, real(3)?, real(4)?);
            let (pos, acc) = (buf(0)?.global::<Vec4>(n), buf(1)?.global::<Vec4>(n));
            go(&|t| unsafe {
                if e == entry::SIMT_ACCEL {
                    gpu_kernels::simt::simt_accel(t, pos, acc, n, g, eps2)
                } else if e == entry::TILED_ACCEL {
                    gpu_kernels::tiled::tiled_accel(t, pos, acc, n, g, eps2)
                } else {
                    gpu_kernels::triangle::triangle_accel(t, pos, acc, n, g, eps2)
                }
            })
        } else if e == entry::SIMT_EULER || e == entry::TILED_EULER {
            let (n, dt, g, eps2) = (int(3)?, real(4)?, real(5)?, real(6)?);
            let (pin, pout, vel) = (
                buf(0)?.global::<Vec4>(n),
                buf(1)?.global::<Vec4>(n),
                buf(2)?.global::<Vec4>(n),
            );
            go(&|t| unsafe {
                if e == entry::SIMT_EULER {
                    gpu_kernels::simt::simt_euler(t, pin, pout, vel, n, dt, g, eps2)
                } else {
                    gpu_kernels::tiled::tiled_euler(t, pin, pout, vel, n, dt, g, eps2)
                }
            })
        } else if e == entry::EULER_FROM_ACCEL {
            let (n, dt) = (int(4)?, real(5)?);
            let [pin, pout, vel, acc] = [0, 1, 2, 3].map(|k| buf(k).map(|b| b.global::<Vec4>(n)));
            let (pin, pout, vel, acc) = (pin?, pout?, vel?, acc?);
            go(&|t| unsafe {
                gpu_kernels::integrate::euler_from_accel(t, pin, pout, vel, acc, n, dt)
            })
        } else if e == entry::KICK {
            let (n, dt) = (int(2)?, real(3)?);
            let (vel, acc) = (buf(0)?.global::<Vec4>(n), buf(1)?.global::<Vec4>(n));
            go(&|t| unsafe { gpu_kernels::integrate::kick(t, vel, acc, n, dt) })
        } else if e == entry::DRIFT {
            let (n, dt) = (int(3)?, real(4)?);
            let [pin, pout, vel] = [0, 1, 2].map(|k| buf(k).map(|b| b.global::<Vec4>(n)));
            let (pin, pout, vel) = (pin?, pout?, vel?);
            go(&|t| unsafe { gpu_kernels::integrate::drift(t, pin, pout, vel, n, dt) })
        } else if e == entry::CHECK_FINITE {
            let (n, step) = (int(2)?, int(3)?);
            let (pos, vel) = (buf(0)?.global::<Vec4>(n), buf(1)?.global::<Vec4>(n));
            let flag = buf(4)?.global::<u32>(2);
            go(&|t| unsafe { gpu_kernels::integrate::check_finite(t, pos, vel, n, step, flag) })
        } else if e == entry::ENERGY {
            let (n, eps2) = (int(2)?, real(3)?);
            let (pos, vel) = (buf(0)?.global::<Vec4>(n), buf(1)?.global::<Vec4>(n));
            let len = gpu_kernels::launch::energy_partials(n, l.shape.block);
            let partials = buf(4)?.global::<f64>(len);
            go(
                &|t| unsafe {
                    gpu_kernels::energy::energy_partials(t, pos, vel, n, eps2, partials)
                },
            )
        } else {
            Err(Error::Emulator(format!(
                "no emulated body for kernel {}",
                e.name
            )))
        }
    }
}

impl Engine for EmulatorEngine {
    fn kind(&self) -> BackendKind {
        BackendKind::Emulator
    }

    fn step(&mut self, steps: u64) -> Result<Option<Divergence>> {
        let step_ops = self.plan.step();
        let mut done = 0u64;
        while done < steps {
            let batch = (steps - done).min(u32::MAX as u64 - 1);
            self.flag.write(&[ALL_FINITE, 0u32]);
            for s in 1..=batch as u32 {
                self.run(&step_ops)?;
                let check = self.plan.check(s);
                self.run(&[Op::Launch(check)])?;
                // Unlike a GPU stream, the emulator can stop at once.
                let flag = self.flag.read::<u32>();
                if flag[0] != ALL_FINITE {
                    return Ok(Some(Divergence {
                        after_step: done + flag[0] as u64,
                        body: flag[1] as usize,
                        steps_run: done + s as u64,
                    }));
                }
            }
            done += batch;
        }
        Ok(None)
    }

    fn read_state(&mut self) -> Result<Bodies> {
        let pos = self.pos[self.current].read::<Vec4>();
        let vel = self.vel.read::<Vec4>();
        Ok(Bodies::from_device_layout(&pos, &vel))
    }

    fn energy(&mut self) -> Result<Energy> {
        let launch = self.plan.energy();
        self.run(&[Op::Launch(launch)])?;
        Ok(self.plan.finish_energy(&self.partials.read::<f64>()))
    }

    fn accelerations(&mut self) -> Result<Vec<Vec3>> {
        let ops = self.plan.accelerations();
        self.run(&ops)?;
        Ok(self
            .acc
            .read::<Vec4>()
            .iter()
            .map(|a| Vec3::new(a.x, a.y, a.z))
            .collect())
    }
}
