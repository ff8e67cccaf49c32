//! What starting, watching and reaping children costs this process, for benchmarks: `perf` under-samples
//! the kernel's part of it (process creation and the sleeps and wake-ups of waiting), so the runner's CPU
//! clock is read around each child instead. Off unless [`account`] turns it on, and then one
//! `clock_gettime` at each end of a run; off, a relaxed load.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

static ON: AtomicBool = AtomicBool::new(false);
static SPENT_NS: AtomicU64 = AtomicU64::new(0);

/// Starts (or stops) adding up the CPU time this process's threads spend on children ([`spent`]).
pub fn account(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// The CPU time the calling threads spent starting, watching and reaping children while accounting was
/// on: the runner's own cost of its git and verify processes, not the children's.
pub fn spent() -> Duration {
    Duration::from_nanos(SPENT_NS.load(Ordering::Relaxed))
}

/// One child's cost on the current thread, from [`Meter::start`] until it is dropped.
pub(super) struct Meter(Option<Duration>);

impl Meter {
    pub(super) fn start() -> Self {
        Self(ON.load(Ordering::Relaxed).then(thread_cpu))
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        if let Some(start) = self.0 {
            let spent = thread_cpu().saturating_sub(start);
            SPENT_NS.fetch_add(
                u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
        }
    }
}

/// The calling thread's CPU time so far (user and system).
pub fn thread_cpu() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}
