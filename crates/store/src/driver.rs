//! One driver per run: [`Blackboard::lock_driver`](crate::Blackboard::lock_driver) hands out a
//! [`DriverLease`], and no second lease on the same run is granted while it is held.
//!
//! The lease is something the operating system or the database server lets go of when the holder dies — a
//! file lock for SQLite, a session's advisory lock for PostgreSQL — never a row that a runner killed with
//! SIGKILL would leave behind. So `agency run --resume` after a crash is never refused, and a second
//! `--resume` beside a live runner always is (it would take that runner's claims and spawn its briefs again).

use std::any::Any;
use std::fmt;

/// Proof that this process drives a run, held for as long as it does. Dropping it lets another driver in.
#[must_use = "the run is locked only while its lease is held"]
pub struct DriverLease {
    _held: Box<dyn Any + Send + Sync>,
}

impl DriverLease {
    /// A lease kept by holding `held` (a locked file, a connection holding an advisory lock).
    pub(crate) fn new(held: impl Any + Send + Sync) -> Self {
        DriverLease {
            _held: Box::new(held),
        }
    }
}

impl fmt::Debug for DriverLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverLease").finish_non_exhaustive()
    }
}

/// How a driver describes itself to the one it keeps out: its name, process and start.
pub(crate) fn describe_holder(holder: &str) -> String {
    format!(
        "{holder} (pid {}, since {})",
        std::process::id(),
        chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC")
    )
}
