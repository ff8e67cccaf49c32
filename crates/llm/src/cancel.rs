//! Cancellation: the runner holds one [`CancelToken`] per run (and per brief, as a child). Cancelling it
//! makes every in-flight call that was given it (or a child of it) return [`LlmError::Cancelled`] at once,
//! dropping its HTTP connection. The token is agency's one cancellation type ([`agency_cancel`]); child
//! processes are stopped by the same handle.

use std::future::Future;

pub use agency_cancel::CancelToken;

use crate::error::LlmError;

/// Runs `work` unless `cancel` is cancelled first, in which case `work` is dropped (aborting any I/O it
/// had started) and the result is [`LlmError::Cancelled`].
pub(crate) async fn run<T>(
    cancel: &CancelToken,
    work: impl Future<Output = Result<T, LlmError>>,
) -> Result<T, LlmError> {
    cancel
        .until_cancelled(work)
        .await
        .unwrap_or(Err(LlmError::Cancelled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancel_aborts_pending_work_with_the_cancelled_error() {
        let token = CancelToken::new();
        let canceller = token.clone();
        tokio::spawn(async move { canceller.cancel() });
        let result: Result<(), LlmError> = run(&token, std::future::pending()).await;
        assert_eq!(result, Err(LlmError::Cancelled));
    }
}
