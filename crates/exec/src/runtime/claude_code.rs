//! The Claude Code runtime: `claude -p` with stream-json input and output, in the brief's worktree.
//!
//! The teachback gate is `agency hook`, registered as a PreToolUse command hook through `--settings` (inline
//! JSON, nothing written into the repository), and Claude Code runs in its **default** permission mode: a
//! hook that crashes, hangs or is missing leaves the call needing a permission nobody can grant in `-p`,
//! so it is denied (fail-closed, harness/PROTOCOLS.md §6). In a run the hook asks the runner's gate service
//! ([`crate::gate`]: `AGENCY_BRIEF`, `AGENCY_GATE_SOCKET`, `AGENCY_GATE_CAPABILITY`), the blackboard being in no
//! agent's sandbox; without a service (tests, a runtime built by hand) it gets `AGENCY_DB` / `AGENCY_CONFIG`,
//! which it can open only where the agent runs unsandboxed. Either way it answers an explicit allow only
//! when the gate is open.
//! Read-only tools are pre-allowed with `--allowedTools`; a read-only agent (the sign-off judge) is offered
//! only [`READ_ONLY_TOOL_SET`] (`--tools`), with the editing tools disallowed as well.
//!
//! Each agent gets its own HOME (under [`ClaudeCodeRuntime::state_dir`], one per brief and attempt, and one
//! more for a conversation in another role on that brief: [`ClaudeCodeRuntime::home`]), so no
//! user settings, credentials or hooks leak in, and the transcript stays there. The session id is kept in
//! that HOME, so running the same brief attempt again (after a crash or an interrupted run) resumes the
//! conversation with `--resume`. Every stream event is mapped to an [`AgentEvent`] ([`stream`]), and every
//! tool call in it, a sub-agent's too, must have a decision the hook recorded ([`super::coverage`]): a hook
//! that hung past its timeout, or was skipped, fails the brief with an ALERT.

pub mod stream;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agency_core::config::{ProviderKind, RolloutMode};
use agency_llm::{BoxFuture, CancelToken, Price};
use agency_relay::{KeyRelay, PLACEHOLDER_KEY, Route, Ticket, UpstreamAuth};
use serde_json::json;

use super::coverage::{self, Decisions};
use super::external::{
    Flow, drive, ending_for, issue_gate, parse_report, sandboxed, shell_word, teachback_for,
};
use super::redact::{Recorder, redactor_for, truncate};
use super::{Access, AgentOutcome, AgentStop, AgentTask, Endpoint, RunnerLink, Runtime, RuntimeError};
use crate::gate::{GateCapability, GateIssuer};
use crate::process::CommandSpec;

/// Claude Code tools that only read; let through without asking the gate.
pub const READ_ONLY_TOOLS: [&str; 6] = ["Read", "Glob", "Grep", "LS", "TaskGet", "TaskList"];
/// The only tools a read-only agent (a judge) is offered (`--tools`): reading and searching files. Without
/// Bash, Claude Code offers its own Glob and Grep.
pub const READ_ONLY_TOOL_SET: [&str; 3] = ["Read", "Glob", "Grep"];
/// Tools a read-only agent may not call at all (a backstop to [`READ_ONLY_TOOL_SET`]).
pub const EDITING_TOOLS: [&str; 7] = [
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "Bash",
    "Agent",
    "Task",
];
/// Host variables passed to Claude Code by default: its search path and how it reaches the model.
pub const DEFAULT_INHERIT: [&str; 6] = [
    "PATH",
    "LANG",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
];
/// Where Claude Code calls Anthropic when nothing says otherwise.
const ANTHROPIC_API: &str = "https://api.anthropic.com";
/// The file in the agent's HOME that keeps its session id for `--resume`.
const SESSION_FILE: &str = "agency-session-id";
/// Seconds Claude Code waits for one `agency hook` answer.
const HOOK_TIMEOUT_SECS: u64 = 30;

/// Runs agents with the Claude Code CLI.
#[derive(Debug, Clone)]
pub struct ClaudeCodeRuntime {
    /// The `claude` program: a name looked up on PATH, or a path.
    pub program: PathBuf,
    /// The `agency` binary whose `hook` subcommand is the gate.
    pub agency: PathBuf,
    /// The blackboard the hook reads (`AGENCY_DB`).
    pub db: PathBuf,
    /// The team configuration the hook reads (`AGENCY_CONFIG`), when not the default location.
    pub config: Option<PathBuf>,
    /// The teachback gate's rollout mode, passed to the hook as [`ROLLOUT_ENV_VAR`] (default enforce).
    pub rollout: RolloutMode,
    /// Where each agent's private HOME is made (`<state_dir>/<brief id>-<attempt>`).
    pub state_dir: PathBuf,
    /// `--model`, when set (in a run: the tier's model from team.yaml, when it is an Anthropic model; checked
    /// by [`super::choice::check_model_name`]); Claude Code's default (or `ANTHROPIC_MODEL`) otherwise.
    pub model: Option<String>,
    /// The endpoint of that model's provider, when team.yaml gives it a `base_url`: Claude Code calls it
    /// (`ANTHROPIC_BASE_URL`, over the host's), with the key from the provider's `api_key_env`.
    pub endpoint: Option<Endpoint>,
    /// The model's price from team.yaml: Claude Code costs its session only when it ends, so each model
    /// call's usage is costed with it as it answers. Unset: calls count tokens until the session's cost.
    pub price: Option<Price>,
    /// Host environment variables passed through (the task's own `env` is always passed).
    pub inherit_env: Vec<String>,
    /// Strings redacted from every recorded event.
    pub secrets: Vec<String>,
    /// The runner's gate service: each agent gets a capability for its own brief. `None`: the hook is given
    /// the blackboard's path instead (see the module docs).
    pub gate: Option<Arc<dyn GateIssuer>>,
    /// The runner's model-key relay: when set, the agent is given a base URL on it and a placeholder key,
    /// never the key itself ([`agency_relay`] says why). `None`: the key is passed in its environment.
    pub relay: Option<Arc<KeyRelay>>,
}

impl ClaudeCodeRuntime {
    /// `claude` from PATH, gated by `agency hook` of the binary at `agency` on the blackboard `db`;
    /// agents' homes under `state_dir`.
    pub fn new(agency: impl Into<PathBuf>, db: impl Into<PathBuf>, state_dir: impl Into<PathBuf>) -> Self {
        Self {
            program: PathBuf::from("claude"),
            agency: agency.into(),
            db: db.into(),
            config: None,
            rollout: RolloutMode::Enforce,
            state_dir: state_dir.into(),
            model: None,
            endpoint: None,
            price: None,
            inherit_env: DEFAULT_INHERIT.iter().map(|s| (*s).to_owned()).collect(),
            secrets: Vec::new(),
            gate: None,
            relay: None,
        }
    }

    /// Where this agent's model calls go and with which key, read from team.yaml's endpoint or the
    /// runner's own Anthropic variables as Claude Code would have read them. `None` when no key is set:
    /// there is nothing to keep from the agent, and Claude Code is started as it would be without a relay.
    pub fn model_route(&self, env: &dyn Fn(&str) -> Option<String>) -> Option<Route> {
        let claude_key = ProviderKind::Anthropic.default_api_key_env();
        let inherited = |name: &str| {
            self.inherit_env
                .iter()
                .any(|n| n == name)
                .then(|| env(name))
                .flatten()
                .filter(|v| !v.is_empty())
        };
        if let Some(endpoint) = &self.endpoint {
            let var = endpoint.api_key_env.as_deref().unwrap_or(claude_key);
            let key = if var == claude_key {
                inherited(var)
            } else {
                env(var)
            };
            return key.filter(|k| !k.is_empty()).map(|key| Route {
                upstream: endpoint.base_url.clone(),
                auth: UpstreamAuth::ApiKey(key),
            });
        }
        let auth = match (inherited(claude_key), inherited("ANTHROPIC_AUTH_TOKEN")) {
            (Some(key), _) => UpstreamAuth::ApiKey(key),
            (None, Some(token)) => UpstreamAuth::Bearer(token),
            (None, None) => return None,
        };
        Some(Route {
            upstream: inherited("ANTHROPIC_BASE_URL").unwrap_or_else(|| ANTHROPIC_API.to_owned()),
            auth,
        })
    }

    /// The PreToolUse registration passed with `--settings`: every tool call goes to `agency hook`.
    pub fn settings(&self) -> serde_json::Value {
        let command = format!("{} hook", shell_word(&self.agency.to_string_lossy()));
        json!({"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECS}
        ]}]}})
    }

    /// The agent's private HOME for this brief attempt. A conversation held on a brief in a role other than
    /// its own (the agreement question put to a squad lead that has already reported) gets a HOME of its own:
    /// sharing the brief's would find that agent's session id there and `--resume` it, so the question
    /// would never be asked.
    pub fn home(&self, task: &AgentTask) -> PathBuf {
        let own = agency_core::tiers::BriefRole::of(&task.brief).as_str();
        let name = match task.meta.role.as_deref() {
            Some(role) if role != own => {
                let role: String = role
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                format!("{}-{}-{role}", task.brief.id, task.brief.attempt)
            }
            _ => format!("{}-{}", task.brief.id, task.brief.attempt),
        };
        self.state_dir.join(name)
    }

    /// What its sandbox must let it write besides the worktree: its HOME, and the gate service's socket when
    /// it has one. Never the blackboard: its hook reaches the gate through the service.
    fn writable(&self, task: &AgentTask, gate: Option<&GateCapability>) -> Vec<PathBuf> {
        let mut writable = vec![self.home(task)];
        writable.extend(gate.map(|g| g.socket().to_path_buf()));
        writable
    }

    /// The command that runs the agent; `resume` continues an earlier session.
    pub fn command(&self, task: &AgentTask, resume: Option<&str>) -> CommandSpec {
        let home = self.home(task);
        let mut spec = CommandSpec::new(&self.program)
            .args([
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
            ])
            .arg("--settings")
            .arg(self.settings().to_string())
            .arg("--allowedTools")
            .arg(READ_ONLY_TOOLS.join(","));
        spec = spec.arg("--max-turns").arg(task.limits.max_turns.to_string());
        if task.access == Access::ReadOnly {
            // Not offered at all, so no answer of the gate can let a write through: the gate allows what
            // the brief's teachback state allows, and a judge's brief never teaches back.
            spec = spec
                .arg("--tools")
                .arg(READ_ONLY_TOOL_SET.join(","))
                .arg("--disallowedTools")
                .arg(EDITING_TOOLS.join(","));
        }
        if let Some(model) = &self.model {
            spec = spec.arg("--model").arg(model);
        }
        if !task.system.is_empty() {
            spec = spec.arg("--append-system-prompt").arg(task.system.join("\n\n"));
        }
        if let Some(session) = resume {
            spec = spec.arg("--resume").arg(session);
        }
        let prompt = match resume {
            Some(_) => "You were interrupted. Continue the task where you stopped.".to_owned(),
            None => format!("{}{}", task.prompt, teachback_for(task, &self.agency)),
        };
        let message = json!({
            "type": "user",
            "message": {"role": "user", "content": format!("{prompt}{}", ending_for(task))}
        });
        spec = spec
            .cwd(&task.worktree)
            .stdin(format!("{message}\n"))
            // A backstop only: `drive` stops the agent at its limit first.
            .timeout(task.limits.timeout + Duration::from_secs(30));
        for name in &self.inherit_env {
            spec = spec.inherit_env(name);
        }
        if let Some(endpoint) = &self.endpoint {
            spec = spec.env("ANTHROPIC_BASE_URL", &endpoint.base_url);
            // Claude Code reads its key from the Anthropic kind's default variable only.
            let claude_key = ProviderKind::Anthropic.default_api_key_env();
            if let Some(var) = endpoint.api_key_env.as_deref().filter(|v| *v != claude_key)
                && let Some(key) = std::env::var_os(var)
            {
                spec = spec.env(claude_key, key);
            }
        }
        // The task's variables first, so that none of them (the runner passes its HOME) can replace the
        // private HOME or the gate's variables set after them.
        for (name, value) in &task.env {
            spec = spec.env(name, value);
        }
        let fixed: [(&str, String); 6] = [
            ("HOME", home.display().to_string()),
            ("TERM", "dumb".to_owned()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
            // Claude Code keeps its key; the commands, hooks and servers it starts get an environment
            // without it (and without the other credentials it knows of). Claude Code does that in a
            // bubblewrap sandbox of its own, which cannot be set up inside agency's (it must create mount
            // points in the read-only git directory); in agency's sandbox the scrub is off. The key is kept
            // from the agent's commands there by not giving it to Claude Code at all: in a run it calls its
            // model through the runner's relay (`relayed`, docs/security.md).
            (
                "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB",
                if task.sandbox.is_on() { "0" } else { "1" }.to_owned(),
            ),
            ("DISABLE_TELEMETRY", "1".to_owned()),
            ("AGENCY_BRIEF", task.brief.id.to_string()),
        ];
        for (name, value) in fixed {
            spec = spec.env(name, value);
        }
        super::external::hook_env(
            spec,
            &home,
            self.rollout,
            self.gate.is_some(),
            &self.db,
            self.config.as_deref(),
        )
    }
}

/// `spec` calling its model through `ticket`: the relay's base URL and a placeholder key, and none of the
/// runner's Anthropic credentials (an `ANTHROPIC_AUTH_TOKEN` would be sent alongside and is dropped).
fn relayed(spec: CommandSpec, ticket: &Ticket) -> CommandSpec {
    spec.forget_env("ANTHROPIC_AUTH_TOKEN")
        .env("ANTHROPIC_BASE_URL", ticket.base_url())
        .env(ProviderKind::Anthropic.default_api_key_env(), PLACEHOLDER_KEY)
}

impl Runtime for ClaudeCodeRuntime {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn teachback_on_blackboard(&self) -> bool {
        true
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
            let gate_log = coverage::fresh_log(&home)?;
            let session_file = home.join(SESSION_FILE);
            let resume = std::fs::read_to_string(&session_file)
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty());
            let gate = issue_gate(self.gate.as_deref(), task)?;
            let ticket = super::external::issue_relay(self.relay.as_deref(), || {
                self.model_route(&|name| std::env::var(name).ok())
                    .map(|route| ((), route))
            })?
            .map(|((), ticket)| ticket);
            let mut secrets = self.secrets.clone();
            secrets.extend(gate.as_ref().map(|g| g.token().to_owned()));
            secrets.extend(ticket.as_ref().map(|t| t.token().to_owned()));
            let redactor = redactor_for(&task.env, &secrets);
            let recorder = Recorder::new(link, &redactor);
            if let Some(session) = &resume {
                recorder.note(format!("resuming claude-code session {session}"));
            }
            let mut state = stream::StreamState::priced(self.price);
            let mut saved = false;
            let mut spec = self.command(task, resume.as_deref());
            if let Some(gate) = &gate {
                spec = gate.apply(spec);
            }
            if let Some(ticket) = &ticket {
                spec = relayed(spec, ticket);
            }
            let spec = sandboxed(
                "claude-code",
                task,
                spec,
                &self.writable(task, gate.as_ref()),
                &super::external::hook_readable(&self.agency),
            )?;
            let driven = drive(
                "claude-code",
                spec,
                None,
                task.limits.timeout,
                cancel,
                link,
                |line| {
                    for event in stream::map_line(line, &mut state, &task.meta) {
                        recorder.record(event);
                    }
                    // Kept as soon as it is known, so even a run killed mid-way can be resumed.
                    if !saved && let Some(id) = &state.session_id {
                        saved = std::fs::write(&session_file, id).is_ok();
                    }
                    Flow::Continue
                },
            )
            .await?;
            if driven.stop != Some(AgentStop::Cancelled)
                && let Some(alert) = coverage::check(
                    &Decisions::of(gate.as_ref(), &gate_log),
                    &state.tool_calls,
                    |line| recorder.note(line),
                )
            {
                return Ok(AgentOutcome {
                    report: None,
                    stop: alert,
                    session_id: state.session_id,
                    final_text: state.result.as_deref().map(super::final_text),
                });
            }
            if let Some(stop) = driven.stop {
                return Ok(AgentOutcome {
                    report: None,
                    stop,
                    session_id: state.session_id,
                    final_text: state.result.as_deref().map(super::final_text),
                });
            }
            let Some(result) = state.result.clone() else {
                return Err(RuntimeError::Process(format!(
                    "claude-code ended ({}) without a result: {}",
                    driven.output.describe(),
                    truncate(driven.output.stderr.text().trim(), 2_000)
                )));
            };
            let stop = match state.subtype.as_deref() {
                Some("error_max_turns") => AgentStop::TurnLimit,
                _ => AgentStop::Finished,
            };
            Ok(AgentOutcome {
                report: parse_report(&result),
                stop,
                session_id: state.session_id,
                final_text: Some(super::final_text(&result)),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::host_env as host;
    use super::*;

    fn runtime(inherit: &[&str]) -> ClaudeCodeRuntime {
        let mut runtime = ClaudeCodeRuntime::new("/bin/agency", "/x/agency.db", "/x/agents");
        runtime.inherit_env = inherit.iter().map(|s| (*s).to_owned()).collect();
        runtime
    }

    #[test]
    fn the_relay_calls_the_hosts_anthropic_endpoint_with_the_hosts_key() {
        let env = host(&[
            ("ANTHROPIC_API_KEY", "sk-host"),
            ("ANTHROPIC_BASE_URL", "http://gw:8080"),
        ]);
        let route = runtime(&DEFAULT_INHERIT).model_route(&env).unwrap();
        assert_eq!(route.upstream, "http://gw:8080");
        assert_eq!(route.auth, UpstreamAuth::ApiKey("sk-host".into()));
        // Without a base URL: Anthropic's API. With only an auth token: a bearer credential.
        let env = host(&[("ANTHROPIC_AUTH_TOKEN", "tok")]);
        let route = runtime(&DEFAULT_INHERIT).model_route(&env).unwrap();
        assert_eq!(route.upstream, ANTHROPIC_API);
        assert_eq!(route.auth, UpstreamAuth::Bearer("tok".into()));
    }

    #[test]
    fn variables_claude_code_would_not_inherit_are_not_used_and_no_key_means_no_relay() {
        let env = host(&[("ANTHROPIC_API_KEY", "sk-host")]);
        assert_eq!(runtime(&["PATH"]).model_route(&env), None);
        assert_eq!(
            runtime(&DEFAULT_INHERIT).model_route(&host(&[("ANTHROPIC_API_KEY", "")])),
            None
        );
    }

    #[test]
    fn team_yaml_s_endpoint_and_key_variable_win_over_the_hosts() {
        let env = host(&[("ANTHROPIC_API_KEY", "sk-host"), ("CORP_KEY", "sk-corp")]);
        let mut claude = runtime(&DEFAULT_INHERIT);
        claude.endpoint = Some(Endpoint {
            provider: "corp".into(),
            base_url: "https://llm.corp.example".into(),
            api_key_env: Some("CORP_KEY".into()),
        });
        let route = claude.model_route(&env).unwrap();
        assert_eq!(route.upstream, "https://llm.corp.example");
        assert_eq!(route.auth, UpstreamAuth::ApiKey("sk-corp".into()));
        claude.endpoint = Some(Endpoint {
            provider: "corp".into(),
            base_url: "https://llm.corp.example".into(),
            api_key_env: None,
        });
        assert_eq!(
            claude.model_route(&env).unwrap().auth,
            UpstreamAuth::ApiKey("sk-host".into())
        );
    }

    #[test]
    fn a_relayed_agent_gets_the_relay_and_a_placeholder_never_the_hosts_credentials() {
        let relay = KeyRelay::start().unwrap();
        let ticket = relay
            .issue(Route {
                upstream: ANTHROPIC_API.into(),
                auth: UpstreamAuth::ApiKey("sk-host".into()),
            })
            .unwrap();
        let spec = relayed(
            CommandSpec::new("claude")
                .inherit_env("ANTHROPIC_API_KEY")
                .inherit_env("ANTHROPIC_AUTH_TOKEN")
                .inherit_env("ANTHROPIC_BASE_URL"),
            &ticket,
        );
        let env = host(&[
            ("ANTHROPIC_API_KEY", "sk-host"),
            ("ANTHROPIC_AUTH_TOKEN", "tok-host"),
            ("ANTHROPIC_BASE_URL", "http://gw"),
        ]);
        let resolved = spec.env.resolve(&|name| env(name).map(Into::into));
        let vars: Vec<(String, String)> = resolved
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.to_string_lossy().into_owned()))
            .collect();
        assert!(
            vars.contains(&("ANTHROPIC_BASE_URL".into(), ticket.base_url().into())),
            "{vars:?}"
        );
        assert!(
            vars.contains(&("ANTHROPIC_API_KEY".into(), PLACEHOLDER_KEY.into())),
            "{vars:?}"
        );
        assert!(!vars.iter().any(|(_, v)| v.contains("host")), "{vars:?}");
    }
}
