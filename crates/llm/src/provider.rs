//! The provider trait every caller uses. It is object-safe (`Arc<dyn Provider>`), so the runner picks a
//! provider per capability level at run time, and wrappers ([`Retrying`], [`Metered`]) stack around any of
//! them.
//!
//! [`Retrying`]: crate::Retrying
//! [`Metered`]: crate::Metered

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::cancel::CancelToken;
use crate::error::LlmError;
use crate::message::{Request, Response, StreamEvent};
use crate::price::Price;

/// A boxed, sendable future; what object-safe async methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where streamed events go while the model answers. A closure: `&mut |event| ...`.
pub type EventSink<'a> = &'a mut (dyn FnMut(StreamEvent) + Send);

/// A model behind some API.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// The provider family: `anthropic`, `openai`, `scripted`.
    fn kind(&self) -> &'static str;

    /// The model this provider asks for.
    fn model(&self) -> &str;

    /// What its calls cost, when they are priced: a [`Metered`](crate::Metered) provider's price from
    /// `models.prices`, which it charges the budget at. An agent recording a call's usage costs it at this
    /// price, so the record says what the ledger was charged. `None` for an unpriced or unmetered provider.
    fn price(&self) -> Option<Price> {
        None
    }

    /// Sends `request`, streams events to `sink` as they arrive and returns the assembled answer. Returns
    /// [`LlmError::Cancelled`] promptly once `cancel` fires.
    fn complete<'a>(
        &'a self,
        request: &'a Request,
        sink: EventSink<'a>,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<Response, LlmError>>;
}

macro_rules! forward_provider {
    ($wrapper:ident) => {
        /// A shared or boxed provider is a provider, so wrappers and the runner can hold `dyn Provider`.
        impl<P: Provider + ?Sized> Provider for $wrapper<P> {
            fn kind(&self) -> &'static str {
                (**self).kind()
            }

            fn model(&self) -> &str {
                (**self).model()
            }

            fn price(&self) -> Option<Price> {
                (**self).price()
            }

            fn complete<'a>(
                &'a self,
                request: &'a Request,
                sink: EventSink<'a>,
                cancel: &'a CancelToken,
            ) -> BoxFuture<'a, Result<Response, LlmError>> {
                (**self).complete(request, sink, cancel)
            }
        }
    };
}

forward_provider!(Box);
forward_provider!(Arc);

/// Calls `provider` without watching the stream and without a way to cancel; for one-shot calls such as
/// `agency models check`.
pub async fn complete(provider: &dyn Provider, request: &Request) -> Result<Response, LlmError> {
    let cancel = CancelToken::new();
    provider.complete(request, &mut |_| {}, &cancel).await
}
