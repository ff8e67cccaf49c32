//! The driver's pool of worktrees made ahead while a gate waits, as the engine keeps it: a leaf, so
//! `engine.rs` can hold it while [`crate::spares`] (which makes and hands out the spares) builds on the
//! engine.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A worktree made ahead: where it is and the commit it is detached at.
#[derive(Debug, Clone)]
pub(crate) struct Spare {
    pub(crate) path: PathBuf,
    pub(crate) commit: String,
}

/// The driver's spare worktrees.
#[derive(Debug, Default)]
pub(crate) struct Spares {
    ready: Mutex<Vec<Spare>>,
    /// Set once making one failed and the failure was logged: the next turns try again, quietly.
    pub(crate) failure_logged: AtomicBool,
}

impl Spares {
    pub(crate) fn ready(&self) -> MutexGuard<'_, Vec<Spare>> {
        self.ready.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
