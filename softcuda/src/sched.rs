//! The adversarial schedule across blocks and launches.
//!
//! A few modelled SMs ([`SMS`]) each hold as many resident blocks as their
//! threads and shared memory allow (at most [`BLOCKS_PER_SM`]); blocks of
//! every launch of the group (launches on streams CUDA does not order run
//! together) take free places in a seeded random order. Each time slice
//! picks a random resident block and runs one of its ready threads for a
//! random number of instructions, so blocks and launches interleave at any
//! instruction, and a block leaves its SM only when it completes: a block
//! that waits for one that is not resident waits forever (the launch times
//! out), as on hardware without a cooperative launch. Everything is
//! reproducible from the seed.

use crate::account::Stats;
use crate::arch::Arch;
use crate::block::{self, Lanes, Rng};
use crate::decode::Kernel;
use crate::exec::{Check, Consts, Env, Fault, Warp};
use crate::memory::{self, GlobalMemory};
use crate::race::{Cell, Layout};
use crate::sync::BlockSync;
use crate::visibility::{L1, MemModel};
use crate::{LaunchConfig, block_order, ctaid_of};

/// SMs modelled by the adversarial schedule.
pub const SMS: usize = 4;
/// Resident blocks per modelled SM, at most.
pub const BLOCKS_PER_SM: u32 = 4;

/// One launch of a group.
pub(crate) struct LaunchRun<'a> {
    pub kernel: &'a Kernel,
    pub cfg: LaunchConfig,
    pub params: &'a [u8],
    /// Operation id and the operations it runs concurrently with.
    pub op: u32,
    pub concurrent: Vec<(u32, u32)>,
    pub grid_id: u64,
    pub shared_total: usize,
    pub stats: Stats,
    pub budget: u64,
    started: u64,
    order: (u64, u64),
    pool: Vec<Vec<Warp>>,
}

impl<'a> LaunchRun<'a> {
    #[allow(clippy::too_many_arguments, reason = "one launch's description")]
    pub fn new(
        kernel: &'a Kernel,
        cfg: LaunchConfig,
        params: &'a [u8],
        op: u32,
        concurrent: Vec<(u32, u32)>,
        grid_id: u64,
        shared_total: usize,
        budget: u64,
        rng: &mut Rng,
    ) -> LaunchRun<'a> {
        LaunchRun {
            kernel,
            cfg,
            params,
            op,
            concurrent,
            grid_id,
            shared_total,
            stats: Stats::default(),
            budget,
            started: 0,
            order: block_order(cfg.blocks(), Some(rng)),
            pool: Vec::new(),
        }
    }

    fn threads(&self) -> u32 {
        self.cfg.block_threads() as u32
    }
}

struct Resident {
    launch: usize,
    b: u64,
    ctaid: [u32; 3],
    sm: usize,
    warps: Vec<Warp>,
    lanes: Lanes,
    shared: Vec<u8>,
    shadow: Vec<Cell>,
    shared_tag: u32,
    bepoch: u32,
    sync: BlockSync,
}

/// A fault: the launch, the block and what happened.
pub(crate) type GroupFault = (usize, [u32; 3], Fault);

/// Runs every block of `launches` to completion (or the first fault).
#[allow(
    clippy::too_many_arguments,
    reason = "the device's parts, borrowed separately"
)]
pub(crate) fn run_group(
    arch: &Arch,
    global: &mut GlobalMemory,
    mm: &mut MemModel,
    blocks_run: &mut u32,
    launches: &mut [LaunchRun],
    check: Check,
    rng: &mut Rng,
) -> Result<(), GroupFault> {
    if mm.l1.len() != SMS {
        mm.l1 = vec![L1::default(); SMS];
    }
    let per_sm = BLOCKS_PER_SM.min(arch.blocks_per_sm.max(1));
    let mut sm_blocks = [0u32; SMS];
    let mut sm_threads = [0u32; SMS];
    let mut sm_shared = [0u64; SMS];
    let mut resident: Vec<Resident> = Vec::new();
    loop {
        // Fill free places with the next blocks of random launches.
        loop {
            let waiting: Vec<usize> = (0..launches.len())
                .filter(|&i| launches[i].started < launches[i].cfg.blocks())
                .collect();
            if waiting.is_empty() {
                break;
            }
            let li = waiting[rng.below(waiting.len() as u64) as usize];
            let l = &mut launches[li];
            let threads = l.threads();
            let first = rng.below(SMS as u64) as usize;
            let Some(sm) = (0..SMS).map(|k| (first + k) % SMS).find(|&s| {
                sm_blocks[s] == 0
                    || (sm_blocks[s] < per_sm
                        && sm_threads[s] + threads <= arch.threads_per_sm
                        && sm_shared[s] + l.shared_total as u64 <= arch.shared_per_sm as u64)
            }) else {
                break;
            };
            let k = l.started;
            l.started += 1;
            let blocks = l.cfg.blocks();
            let b = ((k as u128 * l.order.0 as u128 + l.order.1 as u128) % blocks as u128) as u64;
            let ctaid = ctaid_of(&l.cfg, b);
            let nwarps = threads.div_ceil(32);
            let mut warps = l.pool.pop().unwrap_or_else(|| {
                (0..nwarps)
                    .map(|w| Warp::new(l.kernel, w, l.cfg.block))
                    .collect()
            });
            for (i, w) in warps.iter_mut().enumerate() {
                w.reset(i as u32, l.cfg.block, threads);
            }
            let shared = (0..l.shared_total).map(|i| memory::POISON[i % 4]).collect();
            let shadow = if check.shared {
                vec![Cell::default(); l.shared_total.div_ceil(4)]
            } else {
                Vec::new()
            };
            *blocks_run = blocks_run.wrapping_add(1).max(1);
            sm_blocks[sm] += 1;
            sm_threads[sm] += threads;
            sm_shared[sm] += l.shared_total as u64;
            resident.push(Resident {
                launch: li,
                b,
                ctaid,
                sm,
                lanes: Lanes::start(&warps),
                warps,
                shared,
                shadow,
                shared_tag: *blocks_run,
                bepoch: 0,
                sync: BlockSync::default(),
            });
        }
        if resident.is_empty() {
            return Ok(());
        }
        // One time slice of one thread of a random resident block.
        let ri = rng.below(resident.len() as u64) as usize;
        let r = &mut resident[ri];
        let l = &mut launches[r.launch];
        let threads = l.threads();
        let done = {
            let mut env = Env {
                kernel: l.kernel,
                params: l.params,
                consts: Consts {
                    ntid: l.cfg.block,
                    nctaid: l.cfg.grid,
                    ctaid: r.ctaid,
                    nwarps: threads.div_ceil(32),
                    nsm: arch.sms,
                    smid: r.sm as u32,
                    dyn_smem: l.cfg.dynamic_shared,
                    total_smem: l.shared_total as u32,
                    grid_id: l.grid_id,
                },
                shared: &mut r.shared,
                shared_shadow: &mut r.shadow,
                shared_tag: r.shared_tag,
                bepoch: r.bepoch,
                global,
                check,
                layout: Layout {
                    block_threads: threads,
                    block: r.b as u32,
                    op: l.op,
                },
                concurrent: &l.concurrent,
                thread_base: (r.b as u32).wrapping_mul(threads),
                stats: &mut l.stats,
                sync: &mut r.sync,
                mm,
                sm: r.sm,
            };
            let res = block::lanes_step(
                &mut env,
                &mut r.warps,
                &mut r.lanes,
                Some(rng),
                &mut l.budget,
            );
            r.bepoch = env.bepoch;
            res.map_err(|f| (r.launch, r.ctaid, f))?
        };
        if done {
            let r = resident.swap_remove(ri);
            let l = &mut launches[r.launch];
            l.stats.blocks += 1;
            l.pool.push(r.warps);
            sm_blocks[r.sm] -= 1;
            sm_threads[r.sm] -= l.threads();
            sm_shared[r.sm] -= l.shared_total as u64;
        }
        // Lines do not stay in an L1 forever.
        if rng.below(16) == 0 {
            let sm = rng.below(SMS as u64) as usize;
            mm.l1[sm].evict_random(global, rng);
        }
    }
}
