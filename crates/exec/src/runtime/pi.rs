//! The pi runtime: the pi coding agent (`pi --mode rpc`, JSON lines over stdio) in the brief's worktree.
//!
//! In a run pi is gated like Claude Code ([`PiGate`]): it loads agency's pi extension (compiled into agency,
//! [`EXTENSION`], written into the agent's private directory), whose `tool_call` handler sends every tool
//! call to `agency hook` and blocks it on a deny, or when agency cannot answer (fail-closed). The agent
//! teaches back with `agency teachback submit` through its `bash` tool, as its prompt says, and the runner
//! reviews it from the blackboard; every call in pi's event stream must have a decision the hook recorded
//! ([`super::coverage`]). Without a [`PiGate`] (a runtime built by hand) the teachback is done first in a
//! read-only step by the built-in agent ([`BuiltinRuntime::teachback_step`]) and pi is started only once it
//! is approved.
//!
//! pi gets a private agent directory (`PI_CODING_AGENT_DIR`, also its HOME) per brief attempt, holding the
//! optional `models.json` (custom providers, such as a local server), its sessions and the extension; no
//! other extension, skill or prompt template is loaded, and startup network calls are off. The prompt is
//! sent as one `prompt` command; when pi answers `agent_end` its stdin is closed and it exits. Its events
//! (`tool_execution_end`, assistant `message_end` with usage and cost) become [`AgentEvent`]s.
//!
//! pi runs on its tier's model from team.yaml ([`PiRuntime::use_tier_model`]): a provider with its own
//! `base_url` (a local OpenAI-compatible server, a proxy) becomes a custom provider in the agent's
//! `models.json`. pi refusing the prompt (`"No API key found…"`) or a model call ending in an error ends the
//! agent at once with pi's reason, instead of waiting for the agent's time limit.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agency_llm::{BoxFuture, CallMeta, CancelToken, PriceTable, StopReason, Usage, UsageRecord, cost};
use agency_relay::{KeyRelay, PLACEHOLDER_KEY, Route, Ticket, UpstreamAuth};
use serde_json::{Value, json};

use agency_core::config::{ProviderKind, RolloutMode};

use super::builtin::BuiltinRuntime;
use super::coverage::{self, CallTarget, StreamCall};
use super::external::{
    Flow, drive, ending_for, hook_env, issue_gate, parse_report, sandboxed, teachback_for,
};
use super::redact::{Recorder, redactor_for, truncate};
use super::tier_model::TierModel;
use super::{Access, AgentEvent, AgentOutcome, AgentStop, AgentTask, RunnerLink, Runtime, RuntimeError};
use crate::gate::{GateCapability, GateIssuer};
use crate::process::CommandSpec;

/// agency's pi extension (`integrations/pi/extensions/agency.ts`), compiled in so that a run needs no
/// checkout of agency's sources: a gated agent loads it from its private directory.
pub const EXTENSION: &str = include_str!("../../../../integrations/pi/extensions/agency.ts");
/// The extension's pure helpers, which it imports from `../lib/agency.mjs`.
pub const EXTENSION_LIB: &str = include_str!("../../../../integrations/pi/lib/agency.mjs");
/// Where the extension goes in the agent's private directory.
const EXTENSION_DIR: &str = "agency-extension";
/// Set in a gated agent's environment: the extension keeps only its teachback gate (no goal hooks, no
/// commands), since a run's agent has no plan.md goals and the runner decides when it is finished.
pub const GATE_ONLY_ENV: &str = "AGENCY_PI_GATE_ONLY";

/// How a run's pi agents are gated: the agency extension asks `agency hook` about every tool call.
#[derive(Debug, Clone)]
pub struct PiGate {
    /// The `agency` binary whose `hook` subcommand decides (`AGENCY_BIN` for the extension).
    pub agency: PathBuf,
    /// The blackboard the hook reads (`AGENCY_DB`) when no gate service answers it.
    pub db: PathBuf,
    /// The team configuration the hook reads (`AGENCY_CONFIG`), when not the default location.
    pub config: Option<PathBuf>,
    /// The teachback gate's rollout mode, passed to the hook in the agent's environment.
    pub rollout: RolloutMode,
    /// The runner's gate service: each agent gets a capability for its own brief. `None`: the hook is given
    /// the blackboard's path instead, which it can open only where the agent runs unsandboxed.
    pub service: Option<Arc<dyn GateIssuer>>,
}

/// pi's tools that only read, all a read-only agent is given.
pub const READ_ONLY_TOOLS: &str = "read,grep,find,ls";

/// Runs agents with the pi coding agent.
#[derive(Debug, Clone)]
pub struct PiRuntime {
    /// The `pi` program: a name looked up on PATH, or a path.
    pub program: PathBuf,
    /// The built-in agent that does the read-only teachback step first, when pi is not gated.
    pub teachback: BuiltinRuntime,
    /// The teachback gate through agency's extension; `None`: the teachback step above instead.
    pub gate: Option<PiGate>,
    /// Where each agent's private pi directory is made (`<state_dir>/<brief id>-<attempt>`).
    pub state_dir: PathBuf,
    /// `--provider`, when set.
    pub provider: Option<String>,
    /// `--model`, when set.
    pub model: Option<String>,
    /// Written as the agent's `models.json` (pi's custom providers), when set.
    pub models_json: Option<Value>,
    /// Host environment variables passed through (the task's own `env` is always passed).
    pub inherit_env: Vec<String>,
    /// Strings redacted from every recorded event.
    pub secrets: Vec<String>,
    /// team.yaml's `models.prices`: a message pi reports no cost for is costed at its model's price.
    pub prices: PriceTable,
    /// The runner's model-key relay: when set, pi's provider points at it with a placeholder key, and the
    /// key itself is never in pi's environment ([`agency_relay`] says why). `None`: pi reads the key.
    pub relay: Option<Arc<KeyRelay>>,
}

impl PiRuntime {
    /// `pi` from PATH after a teachback step by `teachback`; agents' directories under `state_dir`.
    pub fn new(teachback: BuiltinRuntime, state_dir: impl Into<PathBuf>) -> Self {
        Self {
            program: PathBuf::from("pi"),
            teachback,
            gate: None,
            state_dir: state_dir.into(),
            provider: None,
            model: None,
            models_json: None,
            inherit_env: ["PATH", "LANG", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"]
                .map(str::to_owned)
                .to_vec(),
            secrets: Vec::new(),
            prices: PriceTable::default(),
            relay: None,
        }
    }

    /// The provider pi is started on (its name in `models.json`) and where its calls go with which key:
    /// team.yaml's endpoint as [`PiRuntime::use_tier_model`] wrote it, or pi's built-in `anthropic` or
    /// `openai` provider with the runner's key when pi would inherit it. `None` when no key is set (a
    /// local server called without one): there is nothing to keep from the agent.
    pub fn model_route(&self, env: &dyn Fn(&str) -> Option<String>) -> Option<(String, Route)> {
        let name = self.provider.clone()?;
        let set = |var: &str| env(var).filter(|v| !v.is_empty());
        let (upstream, key, anthropic) = match &self.models_json {
            Some(models) => {
                let entry = &models["providers"][&name];
                // A value naming no set variable is a literal (`agency-no-key`): no key to keep.
                let key = set(entry["apiKey"].as_str()?)?;
                let upstream = entry["baseUrl"].as_str()?.to_owned();
                (upstream, key, entry["api"] == "anthropic-messages")
            }
            None => {
                let kind = match name.as_str() {
                    "anthropic" => ProviderKind::Anthropic,
                    "openai" => ProviderKind::Openai,
                    _ => return None,
                };
                let var = kind.default_api_key_env();
                let key = self
                    .inherit_env
                    .iter()
                    .any(|n| n == var)
                    .then(|| set(var))
                    .flatten()?;
                (
                    kind.default_base_url().to_owned(),
                    key,
                    kind == ProviderKind::Anthropic,
                )
            }
        };
        let auth = if anthropic {
            UpstreamAuth::ApiKey(key)
        } else {
            UpstreamAuth::Bearer(key)
        };
        Some((name, Route { upstream, auth }))
    }

    /// The agent's `models.json` with provider `name` pointed at the relay (`ticket`) and a placeholder key
    /// (a literal: no variable has its name). A built-in provider keeps its models (pi overlays an entry of
    /// its name on them).
    fn models_through(&self, name: &str, ticket: &Ticket) -> Value {
        let mut models = self
            .models_json
            .clone()
            .unwrap_or_else(|| json!({"providers": {}}));
        let entry = &mut models["providers"][name];
        entry["baseUrl"] = json!(ticket.base_url());
        entry["apiKey"] = json!(PLACEHOLDER_KEY);
        models
    }

    /// Starts pi on `model` (the tier's model from team.yaml, its name already checked): on its provider's
    /// own endpoint through a custom provider in `models.json` when team.yaml gives one a `base_url`, else on
    /// pi's built-in `anthropic` or `openai` provider. The key is read from the provider's `api_key_env`
    /// (passed through to pi); an OpenAI-compatible server with its own `base_url` and no `api_key_env` is
    /// called without a real key, as the built-in agent calls it, so a user's OpenAI key never goes there.
    pub fn use_tier_model(&mut self, model: &TierModel) {
        self.model = Some(model.model.clone());
        let Some(endpoint) = &model.endpoint else {
            self.provider = Some(
                match model.kind {
                    ProviderKind::Anthropic => "anthropic",
                    ProviderKind::Openai => "openai",
                }
                .to_owned(),
            );
            return;
        };
        let public = endpoint.base_url.trim_end_matches('/') == model.kind.default_base_url();
        let key_env = endpoint
            .api_key_env
            .clone()
            .or_else(|| public.then(|| model.kind.default_api_key_env().to_owned()));
        if let Some(name) = &key_env
            && !self.inherit_env.contains(name)
        {
            self.inherit_env.push(name.clone());
        }
        let mut provider = json!({
            "baseUrl": endpoint.base_url,
            // pi reads a value naming a set variable as that variable; a literal otherwise.
            "apiKey": key_env.unwrap_or_else(|| "agency-no-key".to_owned()),
            "models": [{"id": model.model}],
        });
        match model.kind {
            ProviderKind::Anthropic => provider["api"] = json!("anthropic-messages"),
            ProviderKind::Openai => {
                provider["api"] = json!("openai-completions");
                // What the built-in agent sends too: a `system` message, no `reasoning_effort`, which local
                // servers (Ollama, vLLM) understand.
                provider["compat"] =
                    json!({"supportsDeveloperRole": false, "supportsReasoningEffort": false});
            }
        }
        if let Some(max_tokens) = model.max_tokens {
            provider["models"][0]["maxTokens"] = json!(max_tokens);
        }
        self.provider = Some(endpoint.provider.clone());
        self.models_json = Some(json!({"providers": {endpoint.provider.clone(): provider}}));
    }

    /// The agent's private pi directory for this brief attempt.
    pub fn home(&self, task: &AgentTask) -> PathBuf {
        self.state_dir
            .join(format!("{}-{}", task.brief.id, task.brief.attempt))
    }

    /// The extension's entry file in the agent's private directory (written by [`Runtime::run`]).
    pub fn extension_path(&self, task: &AgentTask) -> PathBuf {
        self.home(task)
            .join(EXTENSION_DIR)
            .join("extensions")
            .join("agency.ts")
    }

    /// Writes the extension (and its helpers) into the agent's private directory.
    fn install_extension(&self, task: &AgentTask) -> Result<(), RuntimeError> {
        let root = self.home(task).join(EXTENSION_DIR);
        for (relative, text) in [
            ("extensions/agency.ts", EXTENSION),
            ("lib/agency.mjs", EXTENSION_LIB),
        ] {
            let path = root.join(relative);
            let written = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, text));
            written.map_err(|e| {
                RuntimeError::Other(format!(
                    "cannot write pi's agency extension {}: {e}",
                    path.display()
                ))
            })?;
        }
        Ok(())
    }

    /// The prompt sent to pi: the task, how to teach back when gated, and how to end.
    pub fn prompt(&self, task: &AgentTask) -> String {
        let teachback = self
            .gate
            .as_ref()
            .map(|gate| teachback_for(task, &gate.agency))
            .unwrap_or_default();
        format!("{}{teachback}{}", task.prompt, ending_for(task))
    }

    /// The command that runs the agent (the prompt goes in over stdin).
    pub fn command(&self, task: &AgentTask) -> CommandSpec {
        let home = self.home(task);
        let mut spec = CommandSpec::new(&self.program)
            .args([
                "--mode",
                "rpc",
                "--no-extensions",
                "--no-skills",
                "--no-prompt-templates",
            ])
            .arg("--session-dir")
            .arg(home.join("sessions"));
        if self.gate.is_some() {
            // `--no-extensions` turns discovery off; an extension named with `-e` is still loaded.
            spec = spec.arg("-e").arg(self.extension_path(task));
        }
        if let Some(provider) = &self.provider {
            spec = spec.arg("--provider").arg(provider);
        }
        if let Some(model) = &self.model {
            spec = spec.arg("--model").arg(model);
        }
        if !task.system.is_empty() {
            spec = spec.arg("--append-system-prompt").arg(task.system.join("\n\n"));
        }
        if task.access == Access::ReadOnly {
            spec = spec.arg("--tools").arg(READ_ONLY_TOOLS);
        }
        spec = spec
            .cwd(&task.worktree)
            .timeout(task.limits.timeout + Duration::from_secs(30));
        for name in &self.inherit_env {
            spec = spec.inherit_env(name);
        }
        // The task's variables first, so that none of them (the runner passes its HOME) can replace the
        // private agent directory set after them.
        for (name, value) in &task.env {
            spec = spec.env(name, value);
        }
        spec = spec
            .env("HOME", &home)
            .env("PI_CODING_AGENT_DIR", &home)
            .env("PI_OFFLINE", "1")
            .env("PI_TELEMETRY", "0");
        let Some(gate) = &self.gate else {
            return spec;
        };
        spec = spec
            .env("AGENCY_BIN", &gate.agency)
            .env("AGENCY_BRIEF", task.brief.id.to_string())
            .env(GATE_ONLY_ENV, "1");
        hook_env(
            spec,
            &home,
            gate.rollout,
            gate.service.is_some(),
            &gate.db,
            gate.config.as_deref(),
        )
    }

    /// What its sandbox must let it write besides the worktree: its directory, and the gate service's
    /// socket when it has one. Never the blackboard: its hook reaches the gate through the service.
    fn writable(&self, task: &AgentTask, gate: Option<&GateCapability>) -> Vec<PathBuf> {
        let mut writable = vec![self.home(task)];
        writable.extend(gate.map(|g| g.socket().to_path_buf()));
        writable
    }
}

/// `spec` without the variables a relayed pi would have read its key from: the kinds' default ones and
/// any a provider of `models` names.
fn without_keys(mut spec: CommandSpec, models: Option<&Value>) -> CommandSpec {
    for kind in [ProviderKind::Anthropic, ProviderKind::Openai] {
        spec = spec.forget_env(kind.default_api_key_env());
    }
    let named = models
        .and_then(|m| m["providers"].as_object())
        .into_iter()
        .flatten()
        .filter_map(|(_, entry)| entry["apiKey"].as_str());
    for var in named {
        spec = spec.forget_env(var);
    }
    spec
}

impl Runtime for PiRuntime {
    fn name(&self) -> &'static str {
        "pi"
    }

    fn teachback_on_blackboard(&self) -> bool {
        self.gate.is_some()
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async move {
            let home = self.home(task);
            std::fs::create_dir_all(&home)
                .map_err(|e| RuntimeError::Other(format!("cannot create {}: {e}", home.display())))?;
            let ticket = super::external::issue_relay(self.relay.as_deref(), || {
                self.model_route(&|name| std::env::var(name).ok())
            })?;
            let models_json = match &ticket {
                Some((name, ticket)) => Some(self.models_through(name, ticket)),
                None => self.models_json.clone(),
            };
            if let Some(models) = &models_json {
                std::fs::write(home.join("models.json"), models.to_string())
                    .map_err(|e| RuntimeError::Other(format!("cannot write models.json: {e}")))?;
            }
            let gate_log = coverage::fresh_log(&home)?;
            let capability = match &self.gate {
                Some(gate) => {
                    self.install_extension(task)?;
                    issue_gate(gate.service.as_deref(), task)?
                }
                None => None,
            };
            let mut secrets = self.secrets.clone();
            secrets.extend(capability.as_ref().map(|g| g.token().to_owned()));
            secrets.extend(ticket.as_ref().map(|(_, t)| t.token().to_owned()));
            let redactor = redactor_for(&task.env, &secrets);
            let recorder = Recorder::new(link, &redactor);
            if self.gate.is_none() && task.access == Access::ReadWrite {
                recorder.note("teachback step (read-only, built-in agent) before pi starts");
                if let Some(outcome) = self.teachback.teachback_step(task, link, cancel).await? {
                    recorder.note("the teachback was not approved; pi was not started");
                    return Ok(outcome);
                }
            }
            let prompt = json!({"type": "prompt", "message": self.prompt(task)});
            let mut state = StreamState {
                prices: self.prices.clone(),
                ..StreamState::default()
            };
            let mut spec = self.command(task);
            if let Some(capability) = &capability {
                spec = capability.apply(spec);
            }
            if ticket.is_some() {
                spec = without_keys(spec, self.models_json.as_ref());
            }
            let readable = self
                .gate
                .as_ref()
                .map(|gate| super::external::hook_readable(&gate.agency))
                .unwrap_or_default();
            let spec = sandboxed(
                "pi",
                task,
                spec,
                &self.writable(task, capability.as_ref()),
                &readable,
            )?;
            let input = format!("{prompt}\n").into_bytes();
            let driven = drive(
                "pi",
                spec,
                Some(input),
                task.limits.timeout,
                cancel,
                link,
                |line| {
                    for event in map_line(line, &mut state, &task.meta) {
                        recorder.record(event);
                    }
                    if state.ended || state.failure.is_some() {
                        Flow::CloseInput
                    } else {
                        Flow::Continue
                    }
                },
            )
            .await?;
            if self.gate.is_some()
                && driven.stop != Some(AgentStop::Cancelled)
                && let Some(alert) = coverage::check(
                    &coverage::Decisions::of(capability.as_ref(), &gate_log),
                    &state.calls,
                    |line| recorder.note(line),
                )
            {
                return Ok(AgentOutcome {
                    report: None,
                    stop: alert,
                    session_id: None,
                    final_text: state.last_text.as_deref().map(super::final_text),
                });
            }
            if let Some(failure) = &state.failure {
                return Err(RuntimeError::Process(truncate(failure, 2_000)));
            }
            if let Some(stop) = driven.stop {
                return Ok(AgentOutcome {
                    report: None,
                    stop,
                    session_id: None,
                    final_text: state.last_text.as_deref().map(super::final_text),
                });
            }
            if !state.ended {
                return Err(RuntimeError::Process(format!(
                    "pi ended ({}) before the agent finished: {}",
                    driven.output.describe(),
                    truncate(driven.output.stderr.text().trim(), 2_000)
                )));
            }
            Ok(AgentOutcome {
                report: state.last_text.as_deref().and_then(parse_report),
                stop: AgentStop::Finished,
                session_id: None,
                final_text: state.last_text.as_deref().map(super::final_text),
            })
        })
    }
}

/// What the mapper keeps between pi events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamState {
    /// The last assistant text, where the report is.
    pub last_text: Option<String>,
    /// `agent_end` arrived.
    pub ended: bool,
    /// Why pi cannot go on: it refused the prompt, or a model call ended in an error. The agent is ended at
    /// once with this reason.
    pub failure: Option<String>,
    /// team.yaml's `models.prices`, which cost a message pi reports no cost for, by the model that answered.
    pub prices: PriceTable,
    /// Every tool call pi ran or refused, for the gate-coverage audit.
    pub calls: Vec<StreamCall>,
}

/// Maps one `pi --mode rpc` line to events.
pub fn map_line(line: &str, state: &mut StreamState, meta: &CallMeta) -> Vec<AgentEvent> {
    let line = line.trim_end_matches('\r');
    if line.trim().is_empty() {
        return Vec::new();
    }
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        return vec![AgentEvent::Note(format!("pi: {}", truncate(line, 300)))];
    };
    let str_at = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    match str_at(&event, "type").as_str() {
        "response" if event.get("success") == Some(&Value::Bool(false)) => {
            let refusal = format!(
                "pi refused {}: {}",
                str_at(&event, "command"),
                str_at(&event, "error").trim()
            );
            if str_at(&event, "command") == "prompt" {
                state.failure = Some(refusal.clone());
            }
            vec![AgentEvent::Note(refusal)]
        }
        "tool_execution_end" => {
            let args = event.get("args").unwrap_or(&Value::Null);
            let summary = ["path", "command", "pattern"]
                .iter()
                .find_map(|k| args.get(*k).and_then(Value::as_str))
                .map_or_else(|| args.to_string(), str::to_owned);
            state.calls.push(StreamCall {
                // Audited against what the gate was asked, which the extension names as Claude Code would.
                tool: gate_tool_name(&str_at(&event, "toolName")).to_owned(),
                summary: truncate(&summary, 200),
                target: CallTarget::Id(str_at(&event, "toolCallId")),
            });
            vec![AgentEvent::ToolCall {
                name: str_at(&event, "toolName"),
                summary: truncate(&summary, 200),
                allowed: true,
            }]
        }
        "message_end" => {
            let message = event.get("message").unwrap_or(&Value::Null);
            if str_at(message, "role") != "assistant" {
                return Vec::new();
            }
            assistant_message(message, state, meta)
        }
        "agent_end" => {
            state.ended = true;
            vec![AgentEvent::Note("pi finished".to_owned())]
        }
        _ => Vec::new(),
    }
}

fn assistant_message(message: &Value, state: &mut StreamState, meta: &CallMeta) -> Vec<AgentEvent> {
    let text: String = message
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let mut out = Vec::new();
    if !text.trim().is_empty() {
        out.push(AgentEvent::Said(truncate(&text, 2_000)));
        state.last_text = Some(text);
    }
    if message.get("stopReason").and_then(Value::as_str) == Some("error") {
        let reason = message
            .get("errorMessage")
            .and_then(Value::as_str)
            .unwrap_or("no reason given");
        let failure = format!("pi's model call failed: {}", reason.trim());
        out.push(AgentEvent::Note(truncate(&failure, 500)));
        state.failure = Some(failure);
    }
    let count = |key: &str| {
        message
            .pointer(&format!("/usage/{key}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let stop = message
        .get("stopReason")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let usage = Usage {
        input: count("input"),
        output: count("output"),
        cache_read: count("cacheRead"),
        cache_write: count("cacheWrite"),
    };
    out.push(AgentEvent::Usage(UsageRecord {
        meta: meta.clone(),
        provider: format!(
            "pi/{}",
            message
                .get("provider")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        model: message
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        usage,
        cost_usd: message_cost(message, &usage, &state.prices),
        latency: Duration::ZERO,
        stop_reason: match stop {
            "stop" => StopReason::EndTurn,
            "toolUse" => StopReason::ToolUse,
            "length" => StopReason::MaxTokens,
            other => StopReason::Other(other.to_owned()),
        },
    }));
    out
}

/// What one message cost: pi's own figure, unless it has none (or says 0 for tokens it spent, as it does for
/// a model it has no price for) and team.yaml prices the model that answered.
fn message_cost(message: &Value, usage: &Usage, prices: &PriceTable) -> Option<f64> {
    let reported = message.pointer("/usage/cost/total").and_then(Value::as_f64);
    let unpriced = reported.is_none_or(|usd| usd == 0.0 && usage.total() > 0);
    let model = message.get("model").and_then(Value::as_str).unwrap_or_default();
    match prices.get(model) {
        Some(price) if unpriced => Some(cost(usage, price)),
        _ => reported,
    }
}

/// pi's built-in tools under the names agency's extension gives them when it asks the gate
/// (`CLAUDE_TOOL_NAMES` in `integrations/pi/lib/agency.mjs`, checked by a test), so the coverage audit
/// matches a call with its decision.
const GATE_TOOL_NAMES: [(&str, &str); 7] = [
    ("read", "Read"),
    ("write", "Write"),
    ("edit", "Edit"),
    ("bash", "Bash"),
    ("grep", "Grep"),
    ("find", "Glob"),
    ("ls", "LS"),
];

/// The gate's name for a pi tool: Claude Code's for the built-in ones, its own for the rest.
fn gate_tool_name(pi_name: &str) -> &str {
    GATE_TOOL_NAMES
        .iter()
        .find(|(pi, _)| *pi == pi_name)
        .map_or(pi_name, |(_, gate)| gate)
}

#[cfg(test)]
mod tests {
    use super::super::host_env as host;
    use super::*;

    #[test]
    fn a_relayed_pi_calls_its_endpoint_through_the_relay_with_a_placeholder_key() {
        let mut pi = PiRuntime::new(
            BuiltinRuntime::new(Arc::new(agency_llm::ScriptedProvider::new(
                agency_llm::Script::from_yaml("replies: []").unwrap(),
            ))),
            "/x",
        );
        // pi's built-in provider, keyed by the runner's variable.
        pi.provider = Some("anthropic".into());
        let env = host(&[("ANTHROPIC_API_KEY", "sk-host")]);
        let (name, route) = pi.model_route(&env).unwrap();
        assert_eq!(
            (name.as_str(), route.upstream.as_str()),
            ("anthropic", "https://api.anthropic.com")
        );
        assert_eq!(route.auth, UpstreamAuth::ApiKey("sk-host".into()));
        let relay = KeyRelay::start().unwrap();
        let ticket = relay.issue(route).unwrap();
        let models = pi.models_through(&name, &ticket);
        assert_eq!(models["providers"]["anthropic"]["baseUrl"], ticket.base_url());
        assert_eq!(models["providers"]["anthropic"]["apiKey"], PLACEHOLDER_KEY);
        // A custom endpoint keyed by a variable of its own: bearer for an OpenAI-compatible server.
        pi.provider = Some("local".into());
        pi.models_json = Some(json!({"providers": {"local": {
            "baseUrl": "http://gpu:8000/v1", "apiKey": "LOCAL_KEY", "api": "openai-completions",
            "models": [{"id": "m"}]
        }}}));
        let (_, route) = pi.model_route(&host(&[("LOCAL_KEY", "sk-local")])).unwrap();
        assert_eq!(route.upstream, "http://gpu:8000/v1");
        assert_eq!(route.auth, UpstreamAuth::Bearer("sk-local".into()));
        let models = pi.models_through("local", &ticket);
        assert_eq!(models["providers"]["local"]["models"][0]["id"], "m");
        // No key to keep (a local server called without one): no relay.
        pi.models_json.as_mut().unwrap()["providers"]["local"]["apiKey"] = json!("agency-no-key");
        assert_eq!(pi.model_route(&host(&[])), None);
        let spec = without_keys(
            CommandSpec::new("pi")
                .inherit_env("ANTHROPIC_API_KEY")
                .inherit_env("LOCAL_KEY")
                .inherit_env("PATH"),
            Some(&json!({"providers": {"local": {"apiKey": "LOCAL_KEY"}}})),
        );
        let passed: Vec<&str> = spec.env.inherit.iter().map(String::as_str).collect();
        assert_eq!(passed, ["PATH"]);
    }

    #[test]
    fn a_message_pi_does_not_price_is_costed_at_team_yaml_s_price_for_its_model() {
        let message = |cost: &str| {
            serde_json::from_str::<Value>(&format!(
                r#"{{"role":"assistant","content":[],"provider":"local","model":"qwen","usage":{{"input":1000,"output":100,"cacheRead":0,"cacheWrite":0{cost}}}}}"#
            ))
            .unwrap()
        };
        let prices = PriceTable(
            [(
                "qwen".to_owned(),
                agency_llm::Price {
                    input: 1.0,
                    output: 2.0,
                    cache_read: 0.1,
                    cache_write: 1.0,
                },
            )]
            .into(),
        );
        let cost_of = |cost: &str, prices: &PriceTable| {
            let mut state = StreamState {
                prices: prices.clone(),
                ..StreamState::default()
            };
            let line = json!({"type": "message_end", "message": message(cost)}).to_string();
            map_line(&line, &mut state, &CallMeta::default())
                .into_iter()
                .find_map(|e| match e {
                    AgentEvent::Usage(u) => Some(u.cost_usd),
                    _ => None,
                })
                .unwrap()
        };
        let priced = 1000.0 * 1.0 / 1e6 + 100.0 * 2.0 / 1e6;
        assert_eq!(cost_of("", &prices), Some(priced));
        assert_eq!(cost_of(r#","cost":{"total":0}"#, &prices), Some(priced));
        // pi's own figure stands when it has one, and when team.yaml has none.
        assert_eq!(cost_of(r#","cost":{"total":0.5}"#, &prices), Some(0.5));
        assert_eq!(cost_of("", &PriceTable::default()), None);
        assert_eq!(
            cost_of(r#","cost":{"total":0}"#, &PriceTable::default()),
            Some(0.0)
        );
    }

    #[test]
    fn a_refused_prompt_or_a_failed_model_call_is_a_failure() {
        let mut state = StreamState::default();
        map_line(
            r#"{"type":"response","command":"get_state","success":false,"error":"busy"}"#,
            &mut state,
            &CallMeta::default(),
        );
        assert_eq!(state.failure, None, "only the prompt's refusal ends the agent");
        map_line(
            r#"{"type":"response","command":"prompt","success":false,"error":"No API key found for the selected model.\n"}"#,
            &mut state,
            &CallMeta::default(),
        );
        assert_eq!(
            state.failure.as_deref(),
            Some("pi refused prompt: No API key found for the selected model.")
        );
        let mut state = StreamState::default();
        map_line(
            r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"401 invalid key","usage":{"input":0,"output":0}}}"#,
            &mut state,
            &CallMeta::default(),
        );
        assert_eq!(
            state.failure.as_deref(),
            Some("pi's model call failed: 401 invalid key")
        );
    }

    #[test]
    fn the_tier_model_becomes_pi_s_provider_and_model() {
        use super::super::tier_model::Endpoint;
        let mut local = TierModel {
            model: "qwen2.5-coder".into(),
            price: None,
            kind: ProviderKind::Openai,
            field: "models.fast-cheap.model".into(),
            endpoint: Some(Endpoint {
                provider: "ollama".into(),
                base_url: "http://localhost:11434/v1".into(),
                api_key_env: None,
            }),
            max_tokens: Some(4096),
        };
        let runtime = |model: &TierModel| {
            let mut runtime = PiRuntime::new(
                BuiltinRuntime::new(std::sync::Arc::new(agency_llm::ScriptedProvider::new(
                    agency_llm::Script::from_yaml("replies: []\n").unwrap(),
                ))),
                "/tmp/pi",
            );
            runtime.use_tier_model(model);
            runtime
        };
        let pi = runtime(&local);
        assert_eq!(
            (pi.provider.as_deref(), pi.model.as_deref()),
            (Some("ollama"), Some("qwen2.5-coder"))
        );
        let provider = &pi.models_json.as_ref().unwrap()["providers"]["ollama"];
        assert_eq!(provider["baseUrl"], "http://localhost:11434/v1");
        assert_eq!(provider["api"], "openai-completions");
        // No key of the user's goes to a server of its own.
        assert_eq!(provider["apiKey"], "agency-no-key");
        assert_eq!(
            provider["models"][0],
            json!({"id": "qwen2.5-coder", "maxTokens": 4096})
        );

        if let Some(endpoint) = &mut local.endpoint {
            endpoint.api_key_env = Some("VLLM_KEY".into());
        }
        let pi = runtime(&local);
        assert_eq!(
            pi.models_json.as_ref().unwrap()["providers"]["ollama"]["apiKey"],
            "VLLM_KEY"
        );
        assert!(pi.inherit_env.contains(&"VLLM_KEY".to_owned()));

        local.endpoint = None;
        local.kind = ProviderKind::Anthropic;
        let pi = runtime(&local);
        assert_eq!(pi.provider.as_deref(), Some("anthropic"));
        assert_eq!(pi.models_json, None);
    }

    #[test]
    fn rpc_events_map_to_agent_events() {
        let lines = [
            r#"{"type":"response","command":"prompt","success":true}"#,
            r#"{"type":"tool_execution_end","toolCallId":"t1","toolName":"write","args":{"path":"hello.txt","content":"hi"},"result":{},"isError":false}"#,
            r#"{"type":"message_end","message":{"role":"toolResult","content":[]}}"#,
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"fake","model":"m","usage":{"input":10,"output":5,"cacheRead":2,"cacheWrite":0,"cost":{"total":0.5}},"stopReason":"stop"}}"#,
            r#"{"type":"agent_end","messages":[]}"#,
        ];
        let mut state = StreamState::default();
        let events: Vec<AgentEvent> = lines
            .iter()
            .flat_map(|l| map_line(l, &mut state, &CallMeta::default()))
            .collect();
        assert!(state.ended);
        assert_eq!(state.last_text.as_deref(), Some("done"));
        // Each tool execution is kept for the gate-coverage audit, by pi's call id.
        assert_eq!(
            state.calls,
            [StreamCall {
                tool: "Write".into(),
                summary: "hello.txt".into(),
                target: CallTarget::Id("t1".into()),
            }]
        );
        assert_eq!(
            events[0],
            AgentEvent::ToolCall {
                name: "write".into(),
                summary: "hello.txt".into(),
                allowed: true
            }
        );
        assert_eq!(events[1], AgentEvent::Said("done".into()));
        let AgentEvent::Usage(usage) = &events[2] else {
            panic!("{events:?}")
        };
        assert_eq!(
            (usage.usage.input, usage.usage.cache_read, usage.cost_usd),
            (10, 2, Some(0.5))
        );
    }

    #[test]
    fn the_gate_tool_names_are_the_extensions() {
        let table = EXTENSION_LIB
            .split_once("CLAUDE_TOOL_NAMES = Object.freeze({")
            .and_then(|(_, rest)| rest.split_once("});"))
            .map(|(table, _)| table)
            .expect("agency.mjs has its CLAUDE_TOOL_NAMES table");
        let pairs: Vec<(String, String)> = table
            .lines()
            .filter_map(|line| line.trim().trim_end_matches(',').split_once(": "))
            .map(|(pi, gate)| (pi.to_owned(), gate.trim_matches('"').to_owned()))
            .collect();
        let ours: Vec<(String, String)> = GATE_TOOL_NAMES
            .iter()
            .map(|(p, g)| ((*p).to_owned(), (*g).to_owned()))
            .collect();
        assert_eq!(pairs, ours);
        assert_eq!(gate_tool_name("write"), "Write");
        assert_eq!(gate_tool_name("DraftGoal"), "DraftGoal");
    }
}
