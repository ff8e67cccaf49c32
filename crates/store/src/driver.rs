//! One driver per run: [`Blackboard::lock_driver`](crate::Blackboard::lock_driver) hands out a
//! [`DriverLease`], and no second lease on the same run is granted while it is held.
//!
//! The lease is something the operating system or the database server lets go of when the holder dies — a
//! file lock for SQLite, a session's advisory lock for PostgreSQL — never a row that a runner killed with
//! SIGKILL would leave behind. So `agency run --resume` after a crash is never refused, and a second
//! `--resume` beside a live runner always is (it would take that runner's claims and spawn its briefs again).

use std::fmt;

use crate::error::Result;

/// Proof that this process drives a run, held for as long as it does. Dropping it lets another driver in.
#[must_use = "the run is locked only while its lease is held"]
pub struct DriverLease {
    held: Box<dyn Held>,
}

/// What keeps a lease: a locked file, a connection holding an advisory lock.
pub(crate) trait Held: Send + Sync {
    /// Checks the lease is still held, taking it again if the means of holding it was lost (a PostgreSQL
    /// session ended by a server restart); fails when it cannot be, or another driver has it now.
    fn revalidate(&self) -> Result<()> {
        Ok(())
    }
}

/// A locked file holds its lock until it is closed.
impl Held for std::fs::File {}

/// Nothing to hold: a store only this process can open (an in-memory SQLite database).
impl Held for () {}

impl DriverLease {
    /// A lease kept by holding `held`.
    pub(crate) fn new(held: impl Held + 'static) -> Self {
        DriverLease { held: Box::new(held) }
    }

    /// Checks that this process still drives the run. A file lock cannot lapse; a PostgreSQL advisory lock
    /// lapses with its session (a server restart, `pg_terminate_backend`), and is then taken again on a
    /// new connection. Fails with [`StoreError::Driven`](crate::StoreError::Driven) when another driver
    /// took the run meanwhile, or with the connection's error when the server stays unreachable: a driver
    /// that cannot prove it still drives must stop.
    pub fn revalidate(&self) -> Result<()> {
        self.held.revalidate()
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
