//! One cancellation handle for everything agency stops: a run, a brief's agent, a model call, a child
//! process.
//!
//! Two kinds of code wait on it. Async code (a model call, an agent's driver) awaits
//! [`CancelToken::cancelled`]. A process supervisor blocked in `poll` cannot await, so it registers a
//! callback ([`CancelToken::on_cancel`]) that makes one of its file descriptors readable. Before this type
//! there were two tokens, one per kind, and every runtime bridged them by hand; now a child process is given
//! `cancel.child()` and a cancelled run reaches it directly.
//!
//! Cancelling is one-way and reaches every clone and every child made before or after; a child's own
//! cancel does not reach its parent.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::Notify;

/// A cancellation handle. Clones share one state; [`CancelToken::child`] makes a handle that is also
/// cancelled when this one is.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    state: Mutex<State>,
    /// Wakes the async waiters; notified after the flag is set under the lock.
    notify: Notify,
}

/// A callback [`CancelToken::on_cancel`] keeps until its registration is dropped.
type Callback = Box<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct State {
    cancelled: bool,
    next_id: u64,
    callbacks: Vec<(u64, Callback)>,
    /// Children made by [`CancelToken::child`], held weakly: a finished child is pruned, not kept alive.
    children: Vec<Weak<Inner>>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("cancelled", &self.cancelled)
            .field("callbacks", &self.callbacks.len())
            .field("children", &self.children.len())
            .finish()
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A callback that panicked leaves nothing half-written that matters: the flag is set first.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn cancel(&self) {
        let (callbacks, children) = {
            let mut state = self.lock();
            if state.cancelled {
                return;
            }
            state.cancelled = true;
            (
                std::mem::take(&mut state.callbacks),
                std::mem::take(&mut state.children),
            )
        };
        // Outside the lock: a callback or a child may look at this token again.
        for (_, callback) in &callbacks {
            callback();
        }
        self.notify.notify_waiters();
        for child in children.iter().filter_map(Weak::upgrade) {
            child.cancel();
        }
    }
}

impl CancelToken {
    /// A fresh, uncancelled handle.
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle cancelled when either it or `self` is (already cancelled when `self` is).
    pub fn child(&self) -> Self {
        let child = Self::new();
        let mut state = self.inner.lock();
        if state.cancelled {
            child.inner.lock().cancelled = true;
        } else {
            // Pruned when the list would grow: a run-long token makes a child per brief and per command.
            if state.children.len() == state.children.capacity() {
                state.children.retain(|c| c.strong_count() > 0);
            }
            state.children.push(Arc::downgrade(&child.inner));
        }
        child
    }

    /// Cancels this handle, its clones and its children.
    pub fn cancel(&self) {
        self.inner.cancel();
    }

    /// Whether this handle (or an ancestor) was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.lock().cancelled
    }

    /// Resolves once this handle (or an ancestor) is cancelled.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read, so a cancel between the two still wakes this waiter.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }

    /// Runs `work` unless this handle is cancelled first; then `work` is dropped (aborting any I/O it had
    /// started) and the answer is `None`.
    pub async fn until_cancelled<F: Future>(&self, work: F) -> Option<F::Output> {
        if self.is_cancelled() {
            return None;
        }
        tokio::select! {
            biased;
            () = self.cancelled() => None,
            output = work => Some(output),
        }
    }

    /// Calls `callback` once on cancel (at once, on this thread, when already cancelled), unless the
    /// returned registration was dropped first. For code that cannot await: a process supervisor's
    /// callback makes a descriptor it polls readable.
    pub fn on_cancel(&self, callback: impl Fn() + Send + Sync + 'static) -> Registration {
        let mut state = self.inner.lock();
        let id = state.next_id;
        state.next_id += 1;
        if state.cancelled {
            drop(state);
            callback();
        } else {
            state.callbacks.push((id, Box::new(callback)));
        }
        Registration {
            token: Arc::downgrade(&self.inner),
            id,
        }
    }

    /// A guard that cancels this handle when dropped: a process given the token outlives neither the
    /// future that drives it nor a cancelled run.
    pub fn cancel_on_drop(self) -> CancelOnDrop {
        CancelOnDrop(self)
    }
}

/// Keeps a callback of [`CancelToken::on_cancel`]; dropping it removes the callback, so a long-lived token
/// does not accumulate the callbacks of finished waits.
#[derive(Debug)]
#[must_use = "dropping the registration removes the callback at once"]
pub struct Registration {
    token: Weak<Inner>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(inner) = self.token.upgrade() {
            inner.lock().callbacks.retain(|(id, _)| *id != self.id);
        }
    }
}

/// Cancels its token when dropped ([`CancelToken::cancel_on_drop`]).
#[derive(Debug)]
pub struct CancelOnDrop(CancelToken);

impl CancelOnDrop {
    /// The token it cancels.
    pub fn token(&self) -> &CancelToken {
        &self.0
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn counter() -> (Arc<AtomicUsize>, impl Fn() + Send + Sync + 'static) {
        let count = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&count);
        (count, move || {
            seen.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[tokio::test]
    async fn a_child_follows_its_parent_and_not_the_other_way() {
        let parent = CancelToken::new();
        let child = parent.child();
        let grandchild = child.child();
        let waiter = grandchild.clone();
        let handle = tokio::spawn(async move { waiter.cancelled().await });
        tokio::task::yield_now().await;
        assert!(!grandchild.is_cancelled());
        parent.cancel();
        handle.await.unwrap();
        assert!(child.is_cancelled() && grandchild.is_cancelled());

        let parent = CancelToken::new();
        let child = parent.child();
        child.cancel();
        assert!(!parent.is_cancelled());
        assert!(!parent.child().child().is_cancelled());
    }

    #[test]
    fn a_child_of_a_cancelled_token_starts_cancelled() {
        let parent = CancelToken::new();
        parent.cancel();
        assert!(parent.child().is_cancelled());
    }

    #[test]
    fn a_callback_runs_once_on_cancel_and_never_after_its_registration_is_dropped() {
        let token = CancelToken::new();
        let (kept, callback) = counter();
        // A registration does not keep its token alive: once every handle of the child is gone, nothing
        // can reach its callbacks.
        let _kept = token.child().on_cancel(callback);
        let (dropped, callback) = counter();
        drop(token.on_cancel(callback));
        token.cancel();
        assert_eq!(kept.load(Ordering::SeqCst), 0);

        let token = CancelToken::new();
        let child = token.child();
        let (rung, callback) = counter();
        let _registration = child.on_cancel(callback);
        token.cancel();
        token.cancel();
        assert_eq!(rung.load(Ordering::SeqCst), 1);
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_callback_on_a_cancelled_token_runs_at_once() {
        let token = CancelToken::new();
        token.cancel();
        let (rung, callback) = counter();
        let _registration = token.on_cancel(callback);
        assert_eq!(rung.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn finished_children_do_not_accumulate() {
        let token = CancelToken::new();
        for _ in 0..10_000 {
            drop(token.child());
        }
        assert!(token.inner.lock().children.len() <= 64);
        let registrations: Vec<Registration> = (0..100).map(|_| token.on_cancel(|| {})).collect();
        assert_eq!(token.inner.lock().callbacks.len(), 100);
        drop(registrations);
        assert!(token.inner.lock().callbacks.is_empty());
    }

    #[tokio::test]
    async fn until_cancelled_drops_pending_work() {
        let token = CancelToken::new();
        let canceller = token.clone();
        tokio::spawn(async move { canceller.cancel() });
        let answer: Option<()> = token.until_cancelled(std::future::pending()).await;
        assert_eq!(answer, None);
        assert_eq!(CancelToken::new().until_cancelled(async { 7 }).await, Some(7));
    }

    #[test]
    fn a_drop_guard_cancels() {
        let token = CancelToken::new();
        drop(token.child().cancel_on_drop());
        assert!(!token.is_cancelled());
        let guard = token.clone().cancel_on_drop();
        assert!(!guard.token().is_cancelled());
        drop(guard);
        assert!(token.is_cancelled());
    }
}
