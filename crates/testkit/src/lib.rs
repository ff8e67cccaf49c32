//! `agency-testkit`: fake HTTP servers for offline tests. [`FakeAnthropic`] speaks the Anthropic Messages
//! API as Claude Code needs it (SSE with `event:` lines, or plain JSON when a request does not stream);
//! [`FakeOpenAi`] speaks the OpenAI Responses API as Codex needs it. [`FakeHttp`], the server under both,
//! serves a test's own answers: per request through a closure (a webhook receiver, a fake GitHub API),
//! or per connection from a list of raw replies ([`Canned`]: chunked, cut short or stalled streams for
//! the HTTP clients' tests). All are plain threads on 127.0.0.1 with no async runtime, record every
//! request for assertions, and stop when dropped. [`git`] makes the bare remotes tests push to.
//!
//! Replies are scripted by conversation position, not request order (harness/PROTOCOLS.md §3): reply *i*
//! answers a tool-bearing request whose history holds *i* assistant turns, so retries, fallbacks and side
//! requests (title generation) never shift the script.
//!
//! ```no_run
//! use agency_testkit::{FakeAnthropic, Reply};
//! let server = FakeAnthropic::start(vec![
//!     Reply::tool_use("Write", serde_json::json!({"file_path": "/tmp/x", "content": "hi"})),
//!     Reply::text("done"),
//! ]).unwrap();
//! // ANTHROPIC_BASE_URL=server.base_url() ...
//! let bodies = server.message_requests();
//! ```

mod anthropic;
pub mod git;
pub mod http;
mod openai;
pub mod prompt_cache;

pub use anthropic::{FakeAnthropic, Fault, ModelOutage};
pub use http::{Canned, FakeHttp, RecordedRequest};
pub use openai::FakeOpenAi;

use serde_json::Value;

/// One scripted model turn: text, tool calls, or several blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// An assistant text block (ends the turn).
    Text(String),
    /// A tool call (Anthropic `tool_use`, OpenAI `function_call`).
    ToolUse {
        /// The tool's name.
        name: String,
        /// Its input (for OpenAI, sent as the JSON text of `arguments`).
        input: Value,
    },
    /// A freeform tool call (OpenAI `custom_tool_call`, e.g. Codex's `apply_patch`).
    Custom {
        /// The tool's name.
        name: String,
        /// Its raw input text.
        input: String,
    },
    /// Several blocks in one turn (Anthropic only; OpenAI uses the first).
    Blocks(Vec<Reply>),
}

impl Reply {
    /// A text reply.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Text(text.into())
    }

    /// A tool call.
    pub fn tool_use(name: impl Into<String>, input: Value) -> Reply {
        Reply::ToolUse {
            name: name.into(),
            input,
        }
    }

    /// A freeform (custom) tool call.
    pub fn custom(name: impl Into<String>, input: impl Into<String>) -> Reply {
        Reply::Custom {
            name: name.into(),
            input: input.into(),
        }
    }

    fn blocks(&self) -> Vec<&Reply> {
        match self {
            Reply::Blocks(blocks) => blocks.iter().collect(),
            one => vec![one],
        }
    }
}

/// The reply for position `turns` of a script; past its end, "done".
fn scripted(script: &[Reply], turns: usize) -> Reply {
    script.get(turns).cloned().unwrap_or_else(|| Reply::text("done"))
}
