//! The one step loop of the gravity plan, over any [`Device`]: batches of
//! steps, each followed by the divergence check, the flag read once per
//! batch.

use gpu_kernels::integrate::ALL_FINITE;

use super::device::Device;
use super::{Buf, Op, Plan};
use crate::engine::Divergence;
use crate::error::Result;

/// Executes (queues, in order with everything before it) one op.
pub(crate) fn execute<D: Device<Buf>>(device: &mut D, op: &Op) -> Result<()> {
    match *op {
        Op::Launch(launch, shape) => device.launch(launch, shape),
        Op::ZeroAcc => device.fill(Buf::Acc, 0),
        Op::SwapPositions => {
            device.swap(Buf::PosIn, Buf::PosOut);
            Ok(())
        }
    }
}

/// Executes every op of `ops` in order.
pub(crate) fn execute_all<D: Device<Buf>>(device: &mut D, ops: &[Op]) -> Result<()> {
    ops.iter().try_for_each(|op| execute(device, op))
}

/// Sets the divergence flag to `[ALL_FINITE, 0]`, ordered before the
/// launches that follow.
pub(crate) fn reset_flag<D: Device<Buf>>(device: &mut D) -> Result<()> {
    device.write(Buf::Flag, 0, &[ALL_FINITE, 0])
}

/// Runs `steps` steps of `plan` on `device`, checking every step for
/// non-finite bodies; stops after the first batch that diverged.
pub(crate) fn run_steps<D: Device<Buf>>(
    device: &mut D,
    plan: &Plan,
    steps: u64,
) -> Result<Option<Divergence>> {
    // The check kernel numbers the steps of a batch with a u32.
    let most = device.steps_per_flag_read().clamp(1, u32::MAX as u64 - 1);
    let mut done = 0u64;
    while done < steps {
        let batch = (steps - done).min(most);
        reset_flag(device)?;
        device.timer_start()?;
        for s in 1..=batch as u32 {
            execute_all(device, plan.step())?;
            execute(device, &plan.check(s))?;
        }
        device.timer_stop()?;
        let flag = device.read(Buf::Flag, 0, 2)?;
        let (first_bad_step, body) = (flag[0], flag[1]);
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
