//! Cancelling runs from another thread.

use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError};

use super::Wake;

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
    waiters: Vec<(u64, Sender<Wake>)>,
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
            // A run that already finished dropped its receiver; nothing to tell it.
            let _ = waiter.send(Wake::Cancelled);
        }
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cancelled
    }

    pub(super) fn register(&self, waiter: Sender<Wake>) -> Registration<'_> {
        let mut state = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let id = state.next_id;
        state.next_id += 1;
        if state.cancelled {
            let _ = waiter.send(Wake::Cancelled);
        } else {
            state.waiters.push((id, waiter));
        }
        Registration { token: self, id }
    }
}

/// Removes a finished run's waiter so a long-lived token does not accumulate dead senders.
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
