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

/// The most steps one graph holds: a longer run replays it once per this
/// many steps, each replay followed by a read of the divergence flag (a
/// round trip per 512 steps; a graph's nodes are host memory per step).
pub(crate) const GRAPH_STEPS: u64 = 512;

/// Queues `batch` steps of `plan`, each followed by its divergence check
/// (numbered from 1).
fn queue_batch<D: Device<Buf>>(device: &mut D, plan: &Plan, batch: u64) -> Result<()> {
    for s in 1..=batch as u32 {
        execute_all(device, plan.step())?;
        execute(device, &plan.check(s))?;
    }
    Ok(())
}

/// Queues `batch` steps as the device's graph of `batch` steps, capturing
/// it first if there is none for these buffers; the steps are launched one
/// by one where the device has no graphs. The timer covers the device's
/// work only (started again after a capture, which is host time).
fn queue_graph<D: Device<Buf>>(device: &mut D, plan: &Plan, batch: u64) -> Result<()> {
    device.timer_start()?;
    if device.replay(batch)? {
        return Ok(());
    }
    if !device.begin_capture()? {
        return queue_batch(device, plan, batch);
    }
    let queued = queue_batch(device, plan, batch);
    let ended = device.end_capture(queued.is_ok().then_some(batch));
    queued?;
    ended?;
    device.timer_start()?;
    if device.replay(batch)? {
        Ok(())
    } else {
        Err(crate::error::Error::Cuda {
            during: "replaying a CUDA graph".into(),
            message: format!("the graph of {batch} steps just captured was not kept"),
        })
    }
}

/// Runs `steps` steps of `plan` on `device`, checking every step for
/// non-finite bodies; stops after the first batch that diverged. With
/// graphs ([`Plan::graphs`]) a batch is one graph launch of at most
/// [`GRAPH_STEPS`] steps.
pub(crate) fn run_steps<D: Device<Buf>>(
    device: &mut D,
    plan: &Plan,
    steps: u64,
) -> Result<Option<Divergence>> {
    // The check kernel numbers the steps of a batch with a u32.
    let most = device.steps_per_flag_read().clamp(1, u32::MAX as u64 - 1);
    let most = if plan.graphs() {
        most.min(GRAPH_STEPS)
    } else {
        most
    };
    let mut done = 0u64;
    while done < steps {
        let batch = (steps - done).min(most);
        reset_flag(device)?;
        if plan.graphs() {
            queue_graph(device, plan, batch)?;
        } else {
            device.timer_start()?;
            queue_batch(device, plan, batch)?;
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
