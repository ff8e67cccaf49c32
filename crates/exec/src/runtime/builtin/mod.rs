//! The built-in agent: agency's own loop over a [`Provider`], with tools confined to the brief's worktree.
//!
//! Each turn sends the same system blocks and tool list (byte-identical, so the provider's prompt cache
//! hits) and the conversation so far; the model's tool calls are each checked with
//! [`RunnerLink::check_tool`] before they run (a denial goes back as an error result and the call is not
//! executed), and their results go back in the next turn. The model's mistakes are answered in the same
//! conversation ([`repair`]): a report whose output does not match its tier's schema, a turn ended without
//! reporting, malformed arguments, an unknown tool, a reply cut off at the token limit, the same call over
//! and over. The loop ends when the agent calls `report_result` (with an output the runner's check accepts)
//! or `raise_signal`, makes a mistake past its allowance, uses all its turns, runs out of time, or is
//! cancelled. Everything it records passes through secret redaction.

mod command;
mod confine;
mod edit;
mod files;
mod repair;
mod tools;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use agency_core::teachback::{ReviewVerdict, Teachback, TeachbackReview};
use agency_llm::{Block, CancelToken, LlmError, Message, Provider, Request, StopReason, UsageRecord, cost};
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use confine::{Confinement, Refused};
pub use edit::{Replaced, replace};
pub use tools::{Tool, Toolset};

use super::redact::{Recorder, redactor_for, truncate};
use super::{
    AgentEvent, AgentOutcome, AgentReport, AgentStop, AgentTask, AlgedonicSignal, Ending, RunnerLink,
    Runtime, RuntimeError, ToolCallView, ToolDecision, final_text,
};
use repair::{Repairs, Repeat};

/// How the built-in agent works its tools; appended to the task's system blocks, the same bytes every turn.
pub const TOOL_GUIDE: &str = "\
You work inside one git worktree; every path is relative to it and nothing outside it can be read or \
changed. Use read_file, list_files and grep to understand the code before changing it. If your brief needs a \
teachback, call submit_teachback first and wait for its answer: until it is approved you may only read. Change \
files with edit_file (exact, unique text) or write_file, and run the project's tests with run_command (an argv \
list, no shell). When you are finished call report_result with an honest status, a short summary and the files \
that show your work; it ends your session once its output is accepted (if it answers with problems, fix \
them and call it again). If you find a security, data or ethics problem, or cannot go on \
for a reason outside your brief, call raise_signal instead.";

/// Added to the prompt of a teachback-only step.
pub const TEACHBACK_STEP: &str = "\n\nThis is only the first step: read what you need, then restate the task \
with submit_teachback and address any corrections until it is approved. Do not try to do the task itself: \
another agent will, once your teachback is approved. If the task cannot be done, call report_result with \
status blocked.";

/// Longest assistant text kept in a `Said` event (the outcome keeps the last one whole, see
/// [`AgentOutcome::final_text`]).
const SAID_MAX: usize = 2_000;
/// Longest tool-input summary kept in a `ToolCall` event.
const SUMMARY_MAX: usize = 200;

/// agency's own agent loop on a model API.
#[derive(Debug, Clone)]
pub struct BuiltinRuntime {
    /// The model the agent thinks with.
    pub provider: Arc<dyn Provider>,
    /// Strings redacted from every recorded event, besides the values of secret-looking env variables.
    pub secrets: Vec<String>,
    /// The most output tokens the model allows in one reply (its team.yaml `max_tokens`), when more than
    /// the task's limit: a reply cut off at the limit is asked again with a cap doubled up to this.
    pub max_tokens_ceiling: Option<u32>,
}

impl BuiltinRuntime {
    /// An agent thinking with `provider`.
    pub fn new(provider: Arc<dyn Provider>) -> Self {
        Self {
            provider,
            secrets: Vec::new(),
            max_tokens_ceiling: None,
        }
    }

    /// Also redacts these strings from what is recorded.
    pub fn with_secrets(mut self, secrets: Vec<String>) -> Self {
        self.secrets = secrets;
        self
    }

    /// Lets a reply cut off at the token limit be asked again with a larger cap, up to `ceiling`.
    pub fn with_max_tokens_ceiling(mut self, ceiling: Option<u32>) -> Self {
        self.max_tokens_ceiling = ceiling;
        self
    }
}

impl Runtime for BuiltinRuntime {
    fn name(&self) -> &'static str {
        "builtin"
    }

    fn usage_unmetered(&self) -> bool {
        false
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> agency_llm::BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async move {
            match self.drive(task, task.access.into(), link, cancel).await? {
                Ended::Stopped(outcome) => Ok(*outcome),
                // Only the teachback toolset ends on approval.
                Ended::Approved => Ok(stopped(AgentStop::Finished)),
            }
        })
    }
}

impl BuiltinRuntime {
    /// Runs only the teachback step, read-only: the agent reads, submits its teachback and resubmits until
    /// it is approved. `Ok(None)` once approved; `Ok(Some(outcome))` when it stopped otherwise (reported
    /// itself blocked, raised a signal, ran out of turns or time, was cancelled). For runtimes that cannot
    /// gate an agent's tool calls themselves: they start their agent only after this.
    pub async fn teachback_step(
        &self,
        task: &AgentTask,
        link: &dyn RunnerLink,
        cancel: &CancelToken,
    ) -> Result<Option<AgentOutcome>, RuntimeError> {
        let mut step = task.clone();
        step.prompt.push_str(TEACHBACK_STEP);
        match self.drive(&step, Toolset::Teachback, link, cancel).await? {
            Ended::Approved => Ok(None),
            Ended::Stopped(outcome) => Ok(Some(*outcome)),
        }
    }

    async fn drive(
        &self,
        task: &AgentTask,
        toolset: Toolset,
        link: &dyn RunnerLink,
        cancel: &CancelToken,
    ) -> Result<Ended, RuntimeError> {
        let confinement = Confinement::new(&task.worktree)
            .map_err(|e| RuntimeError::Other(format!("worktree {}: {e}", task.worktree.display())))?;
        let redactor = redactor_for(&task.env, &self.secrets);
        let agent = Agent {
            provider: self.provider.as_ref(),
            task,
            toolset,
            link,
            recorder: Recorder::new(link, &redactor),
            confinement,
            cancel,
            max_tokens_ceiling: self.max_tokens_ceiling,
        };
        match tokio::time::timeout(task.limits.timeout, agent.run()).await {
            Ok(result) => result,
            Err(_) => {
                agent.recorder.note(format!(
                    "the agent ran past its {}s time limit",
                    task.limits.timeout.as_secs()
                ));
                Ok(ended(AgentStop::Timeout))
            }
        }
    }
}

/// The system blocks the model gets: the task's, with [`TOOL_GUIDE`] right after the blocks every agent of
/// the tier shares (at the end when that is unknown), and how many blocks are shared now.
fn with_tool_guide(system: &[Cow<'static, str>], shared: usize) -> (Vec<String>, usize) {
    let shared = shared.min(system.len());
    let at = if shared == 0 { system.len() } else { shared };
    let mut out: Vec<String> = system.iter().map(|block| block.to_string()).collect();
    out.insert(at, TOOL_GUIDE.to_owned());
    (out, if shared == 0 { 0 } else { shared + 1 })
}

/// How the loop ended.
enum Ended {
    /// The agent stopped, with this outcome.
    Stopped(Box<AgentOutcome>),
    /// Its teachback was approved (teachback step only).
    Approved,
}

fn ended(stop: AgentStop) -> Ended {
    Ended::Stopped(Box::new(stopped(stop)))
}

fn stopped(stop: AgentStop) -> AgentOutcome {
    AgentOutcome {
        report: None,
        stop,
        session_id: None,
        final_text: None,
    }
}

/// One agent run's state.
struct Agent<'a> {
    provider: &'a dyn Provider,
    task: &'a AgentTask,
    toolset: Toolset,
    link: &'a dyn RunnerLink,
    recorder: Recorder<'a>,
    confinement: Confinement,
    cancel: &'a CancelToken,
    max_tokens_ceiling: Option<u32>,
}

/// What one tool call led to.
enum Handled {
    /// A result for the model.
    Result { content: String, is_error: bool },
    /// The agent reported; the loop ends.
    Report(AgentReport),
    /// The agent raised a signal; the loop ends.
    Signal(AlgedonicSignal),
    /// The teachback was approved and the toolset is [`Toolset::Teachback`]; the step ends.
    Approved,
    /// A mistake past its allowance; the loop ends with this reason.
    Mistake(String),
}

impl Agent<'_> {
    async fn run(&self) -> Result<Ended, RuntimeError> {
        let offered = Tool::offered_for(self.toolset);
        // Built once: the cached prefix (system + tools) must not change between turns. The tool guide is the
        // same for every agent: it joins the blocks the tier shares, before the agent's own.
        let (system, shared_system_blocks) =
            with_tool_guide(&self.task.system, self.task.shared_system_blocks);
        let tools: Vec<_> = offered.iter().map(|t| t.spec()).collect();
        let mut messages = vec![Message::user(self.task.prompt.clone())];
        // The last thing the model said, whole: it is the answer when the agent ends without reporting.
        let mut last_said: Option<String> = None;
        let mut repairs = Repairs::new(self.task.limits.repair_attempts);
        let mut max_tokens = self.task.limits.max_tokens;
        for _ in 0..self.task.limits.max_turns {
            let request = Request {
                system: system.clone(),
                shared_system_blocks,
                messages: messages.clone(),
                tools: tools.clone(),
                max_tokens,
                meta: self.task.meta.clone(),
                ..Request::default()
            };
            let started = Instant::now();
            let response = match self.provider.complete(&request, &mut |_| {}, self.cancel).await {
                Ok(response) => response,
                Err(LlmError::Cancelled) => return Ok(ended(AgentStop::Cancelled)),
                Err(e) => return Err(RuntimeError::Model(e)),
            };
            self.recorder.record(AgentEvent::Usage(UsageRecord {
                meta: self.task.meta.clone(),
                provider: self.provider.kind().to_owned(),
                model: response.model.clone(),
                usage: response.usage,
                // At the price its metered provider charged the budget, so the record and the ledger agree.
                cost_usd: self.provider.price().map(|price| cost(&response.usage, &price)),
                latency: started.elapsed(),
                stop_reason: response.stop_reason.clone(),
            }));
            let said = response.text();
            if !said.trim().is_empty() {
                self.recorder.record(AgentEvent::Said(truncate(&said, SAID_MAX)));
                last_said = Some(said);
            }
            let calls: Vec<(String, String, Value)> = response
                .tool_calls()
                .map(|(id, name, input)| (id.to_owned(), name.to_owned(), input.clone()))
                .collect();
            messages.push(Message::assistant(response.content));
            // A reply cut off at the token limit lost whatever tool call it was writing (the provider
            // drops a call whose arguments are incomplete): the model is asked to send it again.
            let cut_off = if response.stop_reason == StopReason::MaxTokens {
                let raised = self.raised_cap(max_tokens);
                match repairs.cut_off(max_tokens, raised) {
                    Ok(told) => {
                        self.recorder.note(format!(
                            "the reply was cut off at {max_tokens} output tokens; asked to resend"
                        ));
                        max_tokens = raised.unwrap_or(max_tokens);
                        Some(told)
                    }
                    Err(why) => return Ok(self.mistake(why)),
                }
            } else {
                repairs.not_cut_off();
                None
            };
            if calls.is_empty() {
                if let Some(told) = cut_off {
                    messages.push(Message::user(told));
                    continue;
                }
                if self.task.ending == Ending::Report {
                    match repairs.ended_without(self.closing_tool(), self.task.check_output.is_some()) {
                        Ok(reminder) => {
                            self.recorder
                                .note("the turn ended without a report; reminded to report");
                            messages.push(Message::user(reminder));
                            continue;
                        }
                        Err(why) => return Ok(self.mistake(why)),
                    }
                }
                let mut outcome = stopped(AgentStop::Finished);
                outcome.final_text = last_said.map(|text| self.recorder.redacted(&final_text(&text)));
                return Ok(Ended::Stopped(Box::new(outcome)));
            }
            let mut results = Vec::with_capacity(calls.len() + 1);
            for (id, name, input) in calls {
                if self.cancel.is_cancelled() {
                    return Ok(ended(AgentStop::Cancelled));
                }
                match self.call(&name, &input, &offered, &mut repairs).await {
                    Handled::Result { content, is_error } => {
                        results.push(Block::tool_result(id, content, is_error));
                    }
                    Handled::Report(report) => {
                        return Ok(Ended::Stopped(Box::new(AgentOutcome {
                            report: Some(report),
                            stop: AgentStop::Finished,
                            session_id: None,
                            final_text: last_said
                                .take()
                                .map(|text| self.recorder.redacted(&final_text(&text))),
                        })));
                    }
                    Handled::Approved => return Ok(Ended::Approved),
                    Handled::Signal(signal) => {
                        self.recorder.note(format!(
                            "{:?} signal: {}: {}",
                            signal.level, signal.category, signal.issue
                        ));
                        return Ok(ended(AgentStop::Signal(signal)));
                    }
                    Handled::Mistake(why) => return Ok(self.mistake(why)),
                }
            }
            if let Some(told) = cut_off {
                results.push(Block::text(told));
            }
            messages.push(Message::tool_results(results));
        }
        self.recorder.note(format!(
            "the agent used all {} of its turns",
            self.task.limits.max_turns
        ));
        Ok(ended(AgentStop::TurnLimit))
    }

    /// The tool that ends this agent's work: submit_teachback in a teachback step, else report_result.
    fn closing_tool(&self) -> Tool {
        if self.toolset == Toolset::Teachback {
            Tool::SubmitTeachback
        } else {
            Tool::ReportResult
        }
    }

    /// The output cap after a reply cut off at `current`: doubled, up to what the model allows, when that
    /// is more.
    fn raised_cap(&self, current: u32) -> Option<u32> {
        let ceiling = self.max_tokens_ceiling?;
        let raised = current.saturating_mul(2).min(ceiling);
        (raised > current).then_some(raised)
    }

    /// Ends the agent over a mistake it did not correct, saying so in the record.
    fn mistake(&self, why: String) -> Ended {
        self.recorder.note(format!("stopped: the agent {why}"));
        ended(AgentStop::Mistake(why))
    }

    /// Gates and runs one tool call.
    async fn call(&self, name: &str, input: &Value, offered: &[Tool], repairs: &mut Repairs) -> Handled {
        let summary = truncate(&summarize(input), SUMMARY_MAX);
        let Some(tool) = Tool::from_name(name).filter(|t| offered.contains(t)) else {
            self.recorder.record(AgentEvent::ToolCall {
                name: name.to_owned(),
                summary,
                allowed: false,
            });
            let names: Vec<&str> = offered.iter().map(|t| t.name()).collect();
            return error(format!(
                "there is no tool `{name}` here; the tools are: {}",
                names.join(", ")
            ));
        };
        let note = match repairs.repeated(name, input, &summary) {
            Repeat::Fresh => None,
            Repeat::Noted(note) => Some(note),
            Repeat::Looping(why) => return Handled::Mistake(why),
        };
        let view = ToolCallView {
            name,
            input,
            read_only: tool.read_only(),
        };
        let decision = self.link.check_tool(&view);
        self.recorder.record(AgentEvent::ToolCall {
            name: name.to_owned(),
            summary,
            allowed: decision == ToolDecision::Allow,
        });
        if let ToolDecision::Deny(reason) = decision {
            return error(reason);
        }
        if let Err(malformed) = tool.check_arguments(input) {
            return error(malformed);
        }
        match (self.execute(tool, input, repairs).await, note) {
            (Handled::Result { content, is_error }, Some(note)) => Handled::Result {
                content: content + &note,
                is_error,
            },
            (handled, _) => handled,
        }
    }

    async fn execute(&self, tool: Tool, input: &Value, repairs: &mut Repairs) -> Handled {
        let c = &self.confinement;
        let outcome = match tool {
            Tool::ReadFile => args(input).and_then(|a| files::read_file(c, a)),
            Tool::ListFiles => args(input).and_then(|a| files::list_files(c, a)),
            Tool::Grep => args(input).and_then(|a| files::grep(c, a)),
            Tool::WriteFile => args(input).and_then(|a| files::write_file(c, a)),
            Tool::EditFile => args(input).and_then(|a| edit::edit_file(c, a)),
            Tool::RunCommand => match args(input) {
                Ok(a) => {
                    let limit = self.task.limits.command_timeout;
                    let (env, sandbox) = (&self.task.env, &self.task.sandbox);
                    command::run_command(c, a, env, sandbox, limit, self.cancel).await
                }
                Err(e) => Err(e),
            },
            Tool::SubmitTeachback => match args::<Teachback>(input) {
                Ok(teachback) => match self.submit_teachback(&teachback).await {
                    Ok(review)
                        if self.toolset == Toolset::Teachback
                            && review.verdict == ReviewVerdict::Approved =>
                    {
                        return Handled::Approved;
                    }
                    Ok(review) => Ok(review_text(&review)),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            },
            Tool::ReportResult => {
                return match args::<AgentReport>(input) {
                    Ok(report) => self.checked(report, repairs),
                    Err(e) => error(e),
                };
            }
            Tool::ProposePathAmendment => args::<ProposedAmendment>(input)
                .and_then(|a| self.link.propose_path_amendment(&a.reason, a.change)),
            Tool::RaiseSignal => {
                // A signal whose category is another level's, or with a field left empty, goes back to the
                // agent to fix: it stops work only when it says what a human needs to act on it.
                return match args::<AlgedonicSignal>(input).and_then(|signal| signal.check().map(|()| signal))
                {
                    Ok(signal) => Handled::Signal(signal),
                    Err(e) => error(e),
                };
            }
        };
        match outcome {
            Ok(content) => Handled::Result {
                content,
                is_error: false,
            },
            Err(content) => error(content),
        }
    }

    /// A report, once the runner's check of its output accepts it; else the problems go back to the model
    /// to fix while it has repairs left.
    fn checked(&self, report: AgentReport, repairs: &mut Repairs) -> Handled {
        let Some(check) = &self.task.check_output else {
            return Handled::Report(report);
        };
        let Err(problems) = check.check(&report.output) else {
            return Handled::Report(report);
        };
        let role = self.task.meta.role.as_deref().unwrap_or("tier's");
        match repairs.rejected_report(role, &problems) {
            Ok(told) => {
                let count = problems.lines().count();
                self.recorder.note(format!(
                    "report_result rejected: its output does not match the {role} schema ({count} problem{}); \
                     sent back to fix",
                    if count == 1 { "" } else { "s" }
                ));
                error(told)
            }
            Err(why) => Handled::Mistake(why),
        }
    }

    async fn submit_teachback(&self, teachback: &Teachback) -> Result<TeachbackReview, String> {
        if let Err(incomplete) = teachback.validate() {
            return Err(format!(
                "{incomplete}; fill it in and call submit_teachback again"
            ));
        }
        let review = self.link.teachback(teachback).await?;
        self.recorder
            .note(format!("teachback reviewed by {}", review.reviewer));
        Ok(review)
    }
}

/// The review as the agent reads it.
pub fn review_text(review: &TeachbackReview) -> String {
    review.message("call submit_teachback again")
}

fn error(content: impl Into<String>) -> Handled {
    Handled::Result {
        content: content.into(),
        is_error: true,
    }
}

/// `propose_path_amendment`'s arguments: the reason and the seed's change (its workstream empty for the
/// agent's own).
#[derive(Debug, serde::Deserialize)]
struct ProposedAmendment {
    reason: String,
    #[serde(flatten)]
    change: agency_core::event::payload::PathChange,
}

fn args<T: DeserializeOwned>(input: &Value) -> Result<T, String> {
    serde_json::from_value(input.clone()).map_err(|e| format!("invalid arguments: {e}"))
}

/// A one-line account of a tool call's input for the record: the path or argv first, when there is one.
fn summarize(input: &Value) -> String {
    if let Some(argv) = input.get("argv").and_then(Value::as_array) {
        return argv
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" ");
    }
    match (
        input.get("path").and_then(Value::as_str),
        input.get("pattern").and_then(Value::as_str),
    ) {
        (Some(path), Some(pattern)) => format!("{pattern} in {path}"),
        (Some(path), None) => path.to_owned(),
        (None, Some(pattern)) => pattern.to_owned(),
        (None, None) => input.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_guide_joins_the_shared_blocks_before_the_agents_own() {
        let system = [
            Cow::Borrowed("rules"),
            Cow::Borrowed("tier"),
            Cow::Borrowed("voice"),
        ];
        let (blocks, shared) = with_tool_guide(&system, 2);
        assert_eq!(blocks, ["rules", "tier", TOOL_GUIDE, "voice"]);
        assert_eq!(shared, 3);
        let (blocks, shared) = with_tool_guide(&system, 0);
        assert_eq!(blocks, ["rules", "tier", "voice", TOOL_GUIDE]);
        assert_eq!(shared, 0);
        let (blocks, shared) = with_tool_guide(&system, 7);
        assert_eq!(blocks, ["rules", "tier", "voice", TOOL_GUIDE]);
        assert_eq!(shared, 4);
    }
}
