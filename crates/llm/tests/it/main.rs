//! Provider tests against a fake server on 127.0.0.1 speaking the real wire formats. One test binary;
//! nothing here touches the network.

// Test helpers outside #[test] functions panic on purpose: a broken fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod configured;
mod metering;
mod openai;
mod support;
