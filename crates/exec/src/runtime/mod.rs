//! Agent runtimes: how one agent is run for one brief. Every runtime — the built-in agent loop, Claude Code,
//! Codex, pi, a plain command — takes the same [`AgentTask`], reports what happens through [`RunnerLink`],
//! and returns an [`AgentOutcome`]. The runner never needs to know which one ran.
//!
//! The contract every runtime keeps:
//! - the agent works only inside [`AgentTask::worktree`];
//! - before a blocking brief's agent may edit, its teachback goes through [`RunnerLink::teachback`] and the
//!   agent waits for the review (approved, or corrections to resubmit); every tool call is checked with
//!   [`RunnerLink::check_tool`] (the same core state machine the `agency hook` uses). Claude Code and Codex
//!   are gated by `agency hook` instead and send their teachback through the blackboard, where the runner
//!   reviews it ([`Runtime::teachback_on_blackboard`]);
//! - "done" is a *report*, not a status: the runner signs the work off afterwards, out of the agent's reach.
//!
//! The runtimes: [`builtin`] (agency's own loop with confined tools), [`claude_code`] and [`codex`] (the
//! CLIs, gated by `agency hook`), [`pi`] (gated by `agency hook` through agency's pi extension) and
//! [`command`] (an agent without a runner link, started after a read-only teachback step);
//! [`choice`] picks one per tier and says why. The hook Claude Code and Codex run is wrapped to fail closed
//! ([`hook_command`]), pi's extension fails closed itself, and what the hook decided is audited against
//! their event streams ([`coverage`]).
//! Shared pieces: [`external`] (driving an agent process, reading its report), [`redact`] (secrets kept
//! out of every recorded event) and [`personality`] (the talent pool and role registry).

pub mod builtin;
pub mod choice;
pub mod claude_code;
pub mod codex;
pub mod command;
pub mod coverage;
pub mod external;
pub mod hook_command;
pub mod personality;
pub mod pi;
pub mod redact;
pub mod tier_model;

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agency_core::Brief;
use agency_core::teachback::{Teachback, TeachbackReview};
use agency_llm::{BoxFuture, CallMeta, CancelToken, UsageRecord};
use serde::{Deserialize, Serialize};

pub use builtin::BuiltinRuntime;
pub use choice::{
    ModelSource, RuntimeChoice, RuntimeSetup, build, check_model_name, choose, choose_all, choose_for_run,
};
pub use claude_code::ClaudeCodeRuntime;
pub use codex::{CodexProvider, CodexRuntime};
pub use command::CommandRuntime;
pub use pi::PiRuntime;
pub use redact::Redactor;
pub use tier_model::{Endpoint, TierModel};

/// Everything an agent is given.
#[derive(Debug, Clone)]
pub struct AgentTask {
    /// The brief it works on (goal anchor, instructions, variety, contract, ...).
    pub brief: Brief,
    /// The git worktree it works in; nothing outside it may be touched.
    pub worktree: PathBuf,
    /// The stable system prompt blocks: personality, tier prompt. Byte-identical across the agent's turns.
    /// Mostly prompts compiled into the binary, lent rather than copied for each agent.
    pub system: Vec<Cow<'static, str>>,
    /// How many leading [`AgentTask::system`] blocks every agent of the tier gets byte-identical (agency's
    /// rules, the tier prompt), before the agent's own (its personality): the prefix a provider's prompt
    /// cache can share between agents. 0 when unknown.
    pub shared_system_blocks: usize,
    /// The task as the agent first reads it: the brief rendered for this tier.
    pub prompt: String,
    /// Whether the agent may change files and run commands, or only read.
    pub access: Access,
    /// How its final message ends: with agency's JSON report, or as its prompt says (a judge's verdict).
    pub ending: Ending,
    /// Turn, token and time limits.
    pub limits: AgentLimits,
    /// Environment variables passed to commands the agent runs (the rest of the host's are withheld).
    pub env: Vec<(String, String)>,
    /// The OS sandbox around every process the agent starts (an external agent's whole process, the
    /// built-in agent's commands), with [`AgentTask::worktree`] writable in it.
    pub sandbox: crate::sandbox::Sandboxing,
    /// Put on every model request the agent makes (run, brief, stable brief label, role, tier), so that
    /// budgets, usage records and scripted replies know who is calling. The runner fills it in.
    pub meta: CallMeta,
    /// The runner's check of the report's `output` against the tier's schema, when the tier has one: the
    /// built-in agent applies it when `report_result` is called, so the model can fix its output in the
    /// same conversation instead of failing the brief.
    pub check_output: Option<OutputCheck>,
}

/// The runner's validation of a report's structured `output`: `Err` holds every problem, one per line,
/// each naming where in the output it is. Lent to the runtime by the runner, which applies the same check
/// again when the agent has ended (it is the runner's word, not the agent's).
#[derive(Clone)]
pub struct OutputCheck(Arc<CheckFn>);

/// The function inside an [`OutputCheck`].
type CheckFn = dyn Fn(&serde_json::Value) -> Result<(), String> + Send + Sync;

impl OutputCheck {
    /// A check made of `check`.
    pub fn new(check: impl Fn(&serde_json::Value) -> Result<(), String> + Send + Sync + 'static) -> Self {
        OutputCheck(Arc::new(check))
    }

    /// Checks `output`: `Err` lists every problem, one per line.
    pub fn check(&self, output: &serde_json::Value) -> Result<(), String> {
        (self.0)(output)
    }
}

impl std::fmt::Debug for OutputCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputCheck")
    }
}

/// What an agent may do in its worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Read, list and search only (judges, reviewers, planners reading the code).
    ReadOnly,
    /// Also edit files and run commands (implementers), subject to the teachback gate.
    ReadWrite,
}

/// How an agent's final message must end. External runtimes have no `report_result` tool, so they ask for
/// the report in the prompt ([`external::REPORT_INSTRUCTIONS`]); an agent whose prompt already prescribes
/// its last lines (the sign-off judge's `VERDICT:` block, which nothing may follow) must not be asked for
/// anything after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// The structured report ([`AgentReport`]) as a JSON block.
    Report,
    /// What the task's own instructions say; nothing is added.
    AsInstructed,
}

/// Bounds on one agent run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentLimits {
    /// Model turns at most.
    pub max_turns: u32,
    /// Output tokens per model call.
    pub max_tokens: u32,
    /// Wall-clock time for the whole agent.
    pub timeout: Duration,
    /// Time limit for one command the agent runs.
    pub command_timeout: Duration,
    /// How many times the built-in agent is told of a correctable mistake (a report whose output does not
    /// match its schema, a reply cut off at the token limit) and given the chance to fix it in the same
    /// conversation before it is stopped (team.yaml `runner.repair_attempts`).
    pub repair_attempts: u32,
}

impl Default for AgentLimits {
    fn default() -> Self {
        AgentLimits {
            max_turns: 40,
            max_tokens: 8_192,
            timeout: Duration::from_secs(30 * 60),
            command_timeout: Duration::from_secs(10 * 60),
            repair_attempts: 3,
        }
    }
}

/// The agent's structured report of its own work: a claim the runner then checks, never a verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentReport {
    /// What the agent says happened.
    pub status: ReportStatus,
    /// A few sentences for the log and the next tier.
    pub summary: String,
    /// Files and quoted lines it offers as evidence.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// The tier's structured output (a task list, a verdict, ...), validated by the runner against the
    /// tier's schema.
    #[serde(default)]
    pub output: serde_json::Value,
}

/// The agent's own account of how it went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    /// It believes the brief is done.
    Done,
    /// It did part; the summary says what is left.
    Partial,
    /// It cannot proceed (missing information, a broken dependency).
    Blocked,
}

/// One piece of evidence: a file, optionally with a line quoted from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Path relative to the worktree.
    pub path: String,
    /// A line the agent says the file contains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
}

/// How an agent run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOutcome {
    /// Its report, if it made one.
    pub report: Option<AgentReport>,
    /// Why it stopped.
    pub stop: AgentStop,
    /// The runtime's session id, when it has one (Claude Code), so an interrupted agent can be resumed.
    pub session_id: Option<String>,
    /// The agent's last message in full (its end kept when over [`FINAL_TEXT_MAX`] bytes): a judge's verdict
    /// block sits at the end of its answer.
    pub final_text: Option<String>,
}

/// The most bytes of an agent's last message an [`AgentOutcome`] keeps.
pub const FINAL_TEXT_MAX: usize = 64 * 1024;

/// `text` bounded to [`FINAL_TEXT_MAX`] bytes, keeping its end (where a verdict is).
pub fn final_text(text: &str) -> String {
    if text.len() <= FINAL_TEXT_MAX {
        return text.to_owned();
    }
    let mut start = text.len() - FINAL_TEXT_MAX;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

/// Why an agent stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentStop {
    /// It reported (or simply ended its turn).
    Finished,
    /// It used all its turns.
    TurnLimit,
    /// It ran past its time limit.
    Timeout,
    /// The run was cancelled.
    Cancelled,
    /// It raised an algedonic signal.
    Signal(AlgedonicSignal),
    /// The runtime stopped it over a mistake it did not correct when told (a report that still did not
    /// match its schema, a loop, a turn ended again without reporting). The reason, whole, reads after
    /// "the agent": `repeated the same read_file call 4 times in a row`.
    Mistake(String),
}

/// An algedonic signal raised by an agent (core's type: the level, its category and the four fields).
pub use agency_core::algedonic::{AlgedonicSignal, SignalCategory, SignalLevel};

/// A tool call as the gate sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallView<'a> {
    /// The tool's name as the agent called it.
    pub name: &'a str,
    /// Its arguments.
    pub input: &'a serde_json::Value,
    /// Whether the tool only reads.
    pub read_only: bool,
}

/// The gate's answer to a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolDecision {
    /// Go ahead.
    Allow,
    /// Refused; the reason tells the agent what to do next and is returned to it as the tool's result.
    Deny(String),
}

/// Something the runner should record about an agent as it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// A tool was called (name, a short summary of its input, whether it was allowed).
    ToolCall {
        name: String,
        summary: String,
        allowed: bool,
    },
    /// The agent said something (assistant text, truncated for the record).
    Said(String),
    /// One model call's usage.
    Usage(UsageRecord),
    /// A line for the verbose log.
    Note(String),
    /// The agent's process started: who it is, so that a runner taking over after this one died without
    /// stopping it can stop it ([`crate::process::stop_leftover`]) before starting the brief again.
    Process(crate::process::ProcessIdentity),
}

/// The runner's side of an agent run: the teachback review, the tool gate and the event record. Shared by
/// every runtime so that the gate is the same whichever agent runs.
pub trait RunnerLink: Send + Sync {
    /// The agent submitted its teachback: record it, have it reviewed (or accept it at once for an
    /// advisory brief) and return the review the agent must act on. An `Err` is a message for the agent
    /// (an incomplete teachback, for example), which it should fix and resubmit.
    fn teachback<'a>(&'a self, teachback: &'a Teachback) -> BoxFuture<'a, Result<TeachbackReview, String>>;

    /// May this tool call proceed in the brief's current teachback state?
    fn check_tool(&self, call: &ToolCallView<'_>) -> ToolDecision;

    /// Records something the agent did.
    fn record(&self, event: AgentEvent);

    /// The agent proposes a different path for its workstream (seed 001's path amendment): the runner
    /// records it for the next gate and answers with what it recorded, or refuses with a message the agent
    /// can act on. Without a runner behind the link nothing can record it, and the agent is told so.
    fn propose_path_amendment(
        &self,
        _reason: &str,
        _change: agency_core::event::payload::PathChange,
    ) -> Result<String, String> {
        Err("no runner records path amendments for this agent; say it in your report instead".into())
    }
}

/// Why a runtime could not run an agent at all (as opposed to the agent failing at its task).
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The runtime's program is not installed.
    #[error("{runtime}: `{program}` was not found on PATH")]
    NotInstalled { runtime: String, program: String },
    /// The model could not be reached.
    #[error("model call failed: {0}")]
    Model(#[from] agency_llm::LlmError),
    /// Starting or talking to the agent process failed.
    #[error("{0}")]
    Process(String),
    /// The agent's OS sandbox could not be set up, so the agent was not started.
    #[error("{0}")]
    Sandbox(#[from] crate::sandbox::SandboxError),
    /// Anything else, with context.
    #[error("{0}")]
    Other(String),
}

/// One way of running an agent.
pub trait Runtime: Send + Sync + std::fmt::Debug {
    /// Its name in config and logs: `builtin`, `claude-code`, `codex`, `pi`, `command`.
    fn name(&self) -> &'static str;

    /// Whether this runtime's agents send their teachback through the blackboard (`agency hook`, `agency
    /// teachback submit`) rather than through [`RunnerLink::teachback`]; the runner then reviews it from
    /// the blackboard. Only the runtimes gated by `agency hook` do.
    fn teachback_on_blackboard(&self) -> bool {
        false
    }

    /// Whether the usage this runtime's agents report is spending the run's budget ledger has not seen.
    /// Agents that call their models themselves (Claude Code, Codex, pi, a command) only report what they
    /// spent, after the fact, so the runner charges it to the ledger as it arrives. The built-in agent
    /// calls through agency's metered providers, which charge the ledger themselves: its reports are
    /// records only, and charging them too would count them twice. A runtime wrapping another forwards it.
    fn usage_unmetered(&self) -> bool {
        true
    }

    /// Runs one agent for `task` until it reports, stops, times out or `cancel` fires.
    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>>;
}

/// A host environment of `vars` alone, for the runtimes' tests of what they read from the runner's.
#[cfg(test)]
fn host_env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
    }
}
