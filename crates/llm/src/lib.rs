//! `agency-llm` is how every tier talks to a model. One object-safe [`Provider`] trait takes a [`Request`]
//! (system prompt, messages, tools with JSON Schemas, limits), streams [`StreamEvent`]s to a sink while the
//! model answers, and returns a final [`Response`] with content blocks, a stop reason and a [`Usage`] record.
//!
//! Implementations: [`AnthropicClient`] (Messages API, streamed, with prompt caching), [`OpenAiClient`]
//! (OpenAI-compatible chat completions: OpenAI, Ollama, vLLM, LM Studio, llama.cpp, OpenRouter) and
//! [`ScriptedProvider`] (replies from a script file, for offline runs and tests). Wrappers add behaviour around
//! any provider: [`Retrying`] (backoff with jitter, `retry-after`) and [`Metered`] (budget check before the
//! call, cost and latency after it, reported to a [`UsageSink`]) and [`Recorder`] (every call written to a
//! cassette, which a [`Replayer`] answers a later run from, offline).
//!
//! Nothing here writes to the blackboard: the runner implements [`UsageSink`] to turn usage records and
//! budget refusals into events and gates.

pub mod anthropic;
pub mod budget;
pub mod cancel;
pub mod cassette;
pub mod configured;
pub mod error;
mod http;
pub mod message;
pub mod metered;
pub mod openai;
pub mod price;
pub mod provider;
pub mod retry;
pub mod scripted;
mod sse;
pub mod usage;

pub use anthropic::{AnthropicClient, AnthropicConfig};
pub use budget::{Amount, BudgetExceeded, BudgetLedger, BudgetLimits, CallScope, Limit, Scope, Spend};
pub use cancel::CancelToken;
pub use cassette::{Manifest as CassetteManifest, Recorder, Replayer};
pub use configured::{
    ConfiguredModel, ModelSet, budget_limits, check_model, model_for_binding, model_for_level, price_table,
    process_env,
};
pub use error::LlmError;
pub use http::{ApiKey, Timeouts};
pub use message::{
    Block, CallMeta, Message, Request, Response, Role, StopReason, StreamEvent, ToolChoice, ToolSpec, Usage,
};
pub use metered::Metered;
pub use openai::{OpenAiClient, OpenAiConfig};
pub use price::{Price, PriceTable, cost};
pub use provider::{BoxFuture, EventSink, Provider, complete};
pub use retry::{DEFAULT_GIVE_UP_AFTER, RetryPolicy, Retrying, Sleeper};
pub use scripted::{Script, ScriptedProvider};
pub use usage::{ProviderTrouble, UsageRecord, UsageSink};
