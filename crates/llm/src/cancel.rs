//! Cancellation: a cheap, cloneable handle the runner holds per run (and per brief, as a child). Cancelling
//! it makes every in-flight call that was given it (or a child of it) return [`LlmError::Cancelled`] at once,
//! dropping its HTTP connection.
//!
//! [`LlmError::Cancelled`]: crate::LlmError::Cancelled

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;

use crate::error::LlmError;

/// A cancellation handle. Clones share one flag; [`CancelToken::child`] makes a handle that is also
/// cancelled when its parent is.
#[derive(Debug, Clone)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    flag: watch::Sender<bool>,
    parent: Option<CancelToken>,
}

impl Default for CancelToken {
    fn default() -> Self {
        Self::new()
    }
}

impl CancelToken {
    /// A fresh, uncancelled handle.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                flag: watch::Sender::new(false),
                parent: None,
            }),
        }
    }

    /// A handle cancelled when either it or `self` is cancelled.
    pub fn child(&self) -> Self {
        Self {
            inner: Arc::new(Inner {
                flag: watch::Sender::new(false),
                parent: Some(self.clone()),
            }),
        }
    }

    /// Cancels this handle, its clones and its children.
    pub fn cancel(&self) {
        self.inner.flag.send_replace(true);
    }

    /// Whether this handle or an ancestor was cancelled.
    pub fn is_cancelled(&self) -> bool {
        *self.inner.flag.borrow() || self.inner.parent.as_ref().is_some_and(CancelToken::is_cancelled)
    }

    /// Resolves once this handle or an ancestor is cancelled.
    pub fn cancelled(&self) -> crate::BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut own = self.inner.flag.subscribe();
            match &self.inner.parent {
                None => {
                    // The sender lives in `self`, so `wait_for` cannot fail while we wait.
                    let _ = own.wait_for(|c| *c).await;
                }
                Some(parent) => {
                    tokio::select! {
                        _ = own.wait_for(|c| *c) => {}
                        () = parent.cancelled() => {}
                    }
                }
            }
        })
    }

    /// Runs `work` unless this handle is cancelled first, in which case `work` is dropped (aborting any
    /// I/O it had started) and the result is [`LlmError::Cancelled`].
    pub async fn run<T>(&self, work: impl Future<Output = Result<T, LlmError>>) -> Result<T, LlmError> {
        if self.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        tokio::select! {
            biased;
            () = self.cancelled() => Err(LlmError::Cancelled),
            result = work => result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn child_follows_parent() {
        let parent = CancelToken::new();
        let child = parent.child();
        assert!(!child.is_cancelled());
        let waiter = child.clone();
        let handle = tokio::spawn(async move { waiter.cancelled().await });
        parent.cancel();
        handle.await.unwrap();
        assert!(child.is_cancelled());
        assert!(!CancelToken::new().is_cancelled());
    }

    #[tokio::test]
    async fn run_aborts_pending_work() {
        let token = CancelToken::new();
        let t2 = token.clone();
        tokio::spawn(async move { t2.cancel() });
        let result: Result<(), LlmError> = token.run(std::future::pending()).await;
        assert_eq!(result, Err(LlmError::Cancelled));
    }
}
