//! The one step loop of the plan-executing engines (CUDA and the emulator):
//! batches of steps, each followed by the divergence check, the flag read
//! once per batch.

use gpu_kernels::integrate::ALL_FINITE;

use super::{Op, Plan};
use crate::engine::Divergence;
use crate::error::Result;

/// A device that executes plan operations: what the step loop needs from
/// the CUDA engine and the emulator.
pub(crate) trait PlanDevice {
    /// Executes (or enqueues, in order with everything before it) one op.
    fn execute(&mut self, op: &Op) -> Result<()>;

    /// Sets the divergence flag to `[ALL_FINITE, 0]`, ordered before the
    /// launches that follow.
    fn reset_flag(&mut self) -> Result<()>;

    /// Waits for everything queued and reads the divergence flag.
    fn read_flag(&mut self) -> Result<[u32; 2]>;

    /// Steps between flag reads: 1 where a read is free (the emulator stops
    /// at once), as many as possible on a GPU (one read per call).
    fn steps_per_flag_read(&self) -> u64;

    /// Called before a batch's first op is queued (the CUDA engine records
    /// its start event).
    fn batch_started(&mut self) -> Result<()> {
        Ok(())
    }

    /// Called after a batch's last op is queued, before its flag is read.
    fn batch_queued(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Executes every op of `ops` in order.
pub(crate) fn execute_all<D: PlanDevice>(device: &mut D, ops: &[Op]) -> Result<()> {
    ops.iter().try_for_each(|op| device.execute(op))
}

/// Runs `steps` steps of `plan` on `device`, checking every step for
/// non-finite bodies; stops after the first batch that diverged.
pub(crate) fn run_steps<D: PlanDevice>(
    device: &mut D,
    plan: &Plan,
    steps: u64,
) -> Result<Option<Divergence>> {
    // The check kernel numbers the steps of a batch with a u32.
    let most = device.steps_per_flag_read().clamp(1, u32::MAX as u64 - 1);
    let mut done = 0u64;
    while done < steps {
        let batch = (steps - done).min(most);
        device.reset_flag()?;
        device.batch_started()?;
        for s in 1..=batch as u32 {
            execute_all(device, plan.step())?;
            device.execute(&plan.check(s))?;
        }
        device.batch_queued()?;
        let [first_bad_step, body] = device.read_flag()?;
        if first_bad_step != ALL_FINITE {
            return Ok(Some(Divergence {
                after_step: done + first_bad_step as u64,
                body: body as usize,
                steps_run: done + batch,
            }));
        }
        done += batch;
    }
    Ok(None)
}
