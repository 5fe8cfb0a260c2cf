//! The pool of OS threads that run a launch's emulated threads: a block
//! needs all its threads running at once (they meet at barriers), up to
//! 1024 of them, and starting that many threads per launch would cost more
//! than most launches.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock};

use super::lock;

/// A job for a pool thread, its borrows erased (see [`run_on_pool`]).
type Job = Box<dyn FnOnce() + Send + 'static>;

/// A parked OS thread that runs the emulated threads of launches, one at a time.
struct Worker {
    job: Mutex<Option<Job>>,
    thread: std::thread::Thread,
}

/// Counts the jobs of one launch still running.
struct Latch {
    left: Mutex<usize>,
    done: std::sync::Condvar,
}

/// Idle workers. Starting an OS thread costs tens of microseconds and a
/// launch needs up to 1024 of them, so they are started once and reused.
fn idle_workers() -> &'static Mutex<Vec<Arc<Worker>>> {
    static IDLE: OnceLock<Mutex<Vec<Arc<Worker>>>> = OnceLock::new();
    IDLE.get_or_init(Mutex::default)
}

fn spawn_worker() -> std::io::Result<Arc<Worker>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("emulated-thread".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let worker = Arc::new(Worker {
                job: Mutex::new(None),
                thread: std::thread::current(),
            });
            if tx.send(Arc::clone(&worker)).is_err() {
                return;
            }
            loop {
                let job = lock(&worker.job).take();
                match job {
                    Some(job) => {
                        // Jobs catch their own panics; this only keeps the
                        // worker alive whatever happens.
                        let _ = catch_unwind(AssertUnwindSafe(job));
                    }
                    None => std::thread::park(),
                }
            }
        })?;
    rx.recv()
        .map_err(|_| std::io::Error::other("an emulator thread died at start"))
}

/// Runs `job(t)` for `t` in `0..count`, each on its own OS thread, all at
/// once, and returns when all have returned.
pub(super) fn run_on_pool<F>(count: u32, job: F) -> std::io::Result<()>
where
    F: Fn(u32) + Sync,
{
    let mut workers = {
        let mut idle = lock(idle_workers());
        let keep = idle.len().saturating_sub(count as usize);
        idle.split_off(keep)
    };
    while workers.len() < count as usize {
        match spawn_worker() {
            Ok(w) => workers.push(w),
            Err(e) => {
                lock(idle_workers()).extend(workers);
                return Err(e);
            }
        }
    }
    let latch = Arc::new(Latch {
        left: Mutex::new(count as usize),
        done: std::sync::Condvar::new(),
    });
    let job = &job;
    for (t, worker) in workers.iter().enumerate() {
        let latch = Arc::clone(&latch);
        let task: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
            struct CountDown(Arc<Latch>);
            impl Drop for CountDown {
                fn drop(&mut self) {
                    let mut left = lock(&self.0.left);
                    *left -= 1;
                    if *left == 0 {
                        self.0.done.notify_all();
                    }
                }
            }
            let _count_down = CountDown(latch);
            job(t as u32);
        });
        // SAFETY: the task borrows `job` (and through it the launch) only
        // until it returns, and this function does not return before every
        // task has counted the latch down (the count-down runs even if the
        // task unwinds), so no borrow outlives what it borrows.
        let task: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(task) };
        *lock(&worker.job) = Some(task);
        worker.thread.unpark();
    }
    let mut left = lock(&latch.left);
    while *left > 0 {
        left = latch.done.wait(left).unwrap_or_else(|e| e.into_inner());
    }
    drop(left);
    lock(idle_workers()).extend(workers);
    Ok(())
}
