//! Cancelling runs from another thread.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, PoisonError};

/// Cancels runs from another thread: every run given this token (before or after the call) terminates its
/// process group as on a timeout.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<Mutex<CancelState>>,
}

#[derive(Debug, Default)]
struct CancelState {
    cancelled: bool,
    next_id: u64,
    /// The eventfds of the runs waiting on this token; a cancel rings each.
    waiters: Vec<(u64, Arc<OwnedFd>)>,
}

impl CancelToken {
    /// A token that has not been cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels every run using this token, now and later.
    pub fn cancel(&self) {
        let mut state = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        state.cancelled = true;
        for (_, waiter) in state.waiters.drain(..) {
            ring(&waiter);
        }
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cancelled
    }

    /// Rings `waker` (an eventfd the run polls) on cancel, or at once when already cancelled, until the
    /// registration is dropped.
    pub(super) fn register(&self, waker: Arc<OwnedFd>) -> Registration<'_> {
        let mut state = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let id = state.next_id;
        state.next_id += 1;
        if state.cancelled {
            ring(&waker);
        } else {
            state.waiters.push((id, waker));
        }
        Registration { token: self, id }
    }
}

/// Makes an eventfd readable. It cannot fail short of the counter overflowing, which one ring per run
/// never approaches; a failure would leave the run to its deadline, so there is nothing better to do.
fn ring(waker: &OwnedFd) {
    let _ = rustix::io::write(waker, &1u64.to_ne_bytes());
}

/// Removes a finished run's waiter so a long-lived token does not accumulate dead wakers.
pub(super) struct Registration<'a> {
    token: &'a CancelToken,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut state = self.token.inner.lock().unwrap_or_else(PoisonError::into_inner);
        state.waiters.retain(|(id, _)| *id != self.id);
    }
}
