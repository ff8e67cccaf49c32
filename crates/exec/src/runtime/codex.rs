//! The Codex runtime: `codex exec --json` in the brief's worktree, with a private CODEX_HOME holding the
//! agent's `config.toml` (model and provider) and `hooks.json` (`agency hook` as the PreToolUse gate).
//! Codex ignores hooks it has not been told to trust, silently, so it runs with
//! `--dangerously-bypass-hook-trust`; and it reads stdin unless it is at end of file, so stdin is closed
//! (harness/PROTOCOLS.md §7). Writes are confined to the worktree by Codex's own `workspace-write` sandbox
//! unless [`CodexRuntime::sandbox`] is off (for machines where it cannot run); a read-only agent (the
//! sign-off judge) always runs in its `read-only` sandbox, where patches and writing commands are refused.
//!
//! Codex lets a tool call through when its hook fails (exit 1, crash, missing program, output that is not a
//! decision), so the hook command in `hooks.json` is `agency hook` wrapped to turn every such failure into a
//! block ([`super::hook_command`]). A hook that hangs past Codex's timeout still lets the call run: the
//! gate-coverage audit ([`super::coverage`]) matches every call of the stream against the decisions the
//! hook recorded, and fails the brief with an ALERT for one it never decided.
//!
//! The `--json` events (`thread.started`, `item.completed` with `agent_message`, `file_change`,
//! `command_execution` or `error` items, `turn.completed` with usage) become [`AgentEvent`]s. A call the
//! hook blocked is not in that stream; Codex logs it on stderr (`Command blocked by PreToolUse hook: …`),
//! and each such line in the stderr tail agency keeps
//! is recorded as a note.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agency_core::config::RolloutMode;
use agency_llm::{BoxFuture, CallMeta, CancelToken, Price, StopReason, Usage, UsageRecord, cost};
use serde_json::{Value, json};

use super::coverage::{self, CallTarget, Decisions, StreamCall};
use super::external::{
    Flow, drive, ending_for, issue_gate, parse_report, sandboxed, shell_word, teachback_for,
};
use super::hook_command::{Expect, fail_closed};
use super::redact::{Recorder, redactor_for, truncate};
use super::{Access, AgentEvent, AgentOutcome, AgentStop, AgentTask, RunnerLink, Runtime, RuntimeError};
use crate::process::CommandSpec;

/// Host variables passed to Codex by default: its search path and its OpenAI key. (Codex does not read
/// `OPENAI_BASE_URL`; a custom endpoint is a [`CodexProvider`] in its `config.toml`.)
pub const DEFAULT_INHERIT: [&str; 3] = ["PATH", "LANG", "OPENAI_API_KEY"];

/// A model provider entry for the agent's `config.toml` (`[model_providers.<name>]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexProvider {
    /// Its name, also `model_provider`.
    pub name: String,
    /// The API base URL (`http://127.0.0.1:8080/v1`).
    pub base_url: String,
    /// `responses` or `chat`.
    pub wire_api: String,
    /// The environment variable holding its key (inherited by the agent); `None`: a server called without
    /// a key (Ollama, a local vLLM), as the built-in agent calls it.
    pub env_key: Option<String>,
}

/// The agent's temporary directory, inside its CODEX_HOME (see [`CodexRuntime::command`]).
const TMP_DIR: &str = "tmp";

/// Runs agents with the Codex CLI.
#[derive(Debug, Clone)]
pub struct CodexRuntime {
    /// The `codex` program: a name looked up on PATH, or a path.
    pub program: PathBuf,
    /// The `agency` binary whose `hook` subcommand is the gate.
    pub agency: PathBuf,
    /// The blackboard the hook reads (`AGENCY_DB`).
    pub db: PathBuf,
    /// The team configuration the hook reads (`AGENCY_CONFIG`), when not the default location.
    pub config: Option<PathBuf>,
    /// The teachback gate's rollout mode, passed to the hook as [`ROLLOUT_ENV_VAR`] (default enforce).
    pub rollout: RolloutMode,
    /// Where each agent's CODEX_HOME is made (`<state_dir>/<brief id>-<attempt>`).
    pub state_dir: PathBuf,
    /// The model (`model` in its `config.toml`); Codex's default when unset. In a run: the tier's model from
    /// team.yaml, when it is an OpenAI model, checked by [`super::choice::check_model_name`]. Codex offers
    /// `apply_patch` only for model names it knows.
    pub model: Option<String>,
    /// A custom provider; OpenAI when unset.
    pub provider: Option<CodexProvider>,
    /// The model's price, which Codex does not report: its usage records are costed with it. Unset: they
    /// count tokens only.
    pub price: Option<Price>,
    /// Confine Codex's writes to the worktree with its `workspace-write` sandbox (default), or run it
    /// without one.
    pub sandbox: bool,
    /// Host environment variables passed through (the task's own `env` is always passed).
    pub inherit_env: Vec<String>,
    /// Strings redacted from every recorded event.
    pub secrets: Vec<String>,
    /// How long Codex waits for one `agency hook` answer before it kills the hook and runs the tool
    /// anyway (the gate-coverage audit then fails the brief).
    pub hook_timeout: Duration,
    /// The runner's gate service: each agent gets a capability for its own brief. `None`: the hook is given
    /// the blackboard's path instead, which it can open only where the agent runs unsandboxed.
    pub gate: Option<std::sync::Arc<dyn crate::gate::GateIssuer>>,
}

/// How long Codex waits for `agency hook` by default.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(30);

impl CodexRuntime {
    /// `codex` from PATH, gated by `agency hook` of the binary at `agency` on the blackboard `db`; agents'
    /// homes under `state_dir`.
    pub fn new(agency: impl Into<PathBuf>, db: impl Into<PathBuf>, state_dir: impl Into<PathBuf>) -> Self {
        Self {
            program: PathBuf::from("codex"),
            agency: agency.into(),
            db: db.into(),
            config: None,
            rollout: RolloutMode::Enforce,
            state_dir: state_dir.into(),
            model: None,
            provider: None,
            price: None,
            sandbox: true,
            inherit_env: DEFAULT_INHERIT.iter().map(|s| (*s).to_owned()).collect(),
            secrets: Vec::new(),
            hook_timeout: HOOK_TIMEOUT,
            gate: None,
        }
    }

    /// The agent's CODEX_HOME (and HOME) for this brief attempt.
    pub fn home(&self, task: &AgentTask) -> PathBuf {
        self.state_dir
            .join(format!("{}-{}", task.brief.id, task.brief.attempt))
    }

    /// The agent's `config.toml`.
    pub fn config_toml(&self) -> String {
        // JSON strings are valid TOML basic strings, so values are quoted with serde_json.
        let quote = |s: &str| Value::String(s.to_owned()).to_string();
        let mut out = String::new();
        if let Some(model) = &self.model {
            out.push_str(&format!("model = {}\n", quote(model)));
        }
        if let Some(p) = &self.provider {
            out.push_str(&format!(
                "model_provider = {name}\n\n[model_providers.{name}]\nname = {name}\nbase_url = {}\n\
                 wire_api = {}\n",
                quote(&p.base_url),
                quote(&p.wire_api),
                name = quote(&p.name),
            ));
            if let Some(var) = &p.env_key {
                out.push_str(&format!("env_key = {}\n", quote(var)));
            }
        }
        // The commands Codex runs do not inherit a variable whose name holds KEY, SECRET or TOKEN (its
        // model key included), whatever Codex's default.
        out.push_str("\n[shell_environment_policy]\nignore_default_excludes = false\n");
        // The sandbox keeps writes in the worktree. `agency teachback submit`, which the agent runs to teach
        // back, must reach the gate: in a run through the runner's gate service, a unix socket, which Codex's
        // sandbox lets a command connect to only with its network on (its seccomp filter refuses `connect`
        // otherwise; agency's own sandbox decides the network: docs/security.md); without a service it
        // writes the blackboard, whose directory is then made writable (docs/runtimes.md says what that
        // allows).
        if self.sandbox && self.gate.is_some() {
            out.push_str("\n[sandbox_workspace_write]\nnetwork_access = true\n");
        } else if self.sandbox
            && let Some(dir) = std::path::absolute(&self.db)
                .ok()
                .and_then(|db| db.parent().map(Path::to_path_buf))
        {
            out.push_str(&format!(
                "\n[sandbox_workspace_write]\nwritable_roots = [{}]\n",
                quote(&dir.to_string_lossy())
            ));
        }
        out
    }

    /// The agent's `hooks.json`: every tool call goes to `agency hook`, wrapped so that a hook that fails
    /// in any way blocks the call rather than letting Codex run it.
    pub fn hooks_json(&self) -> Value {
        let hook = format!("{} hook", shell_word(&self.agency.to_string_lossy()));
        let command = fail_closed(&hook, Expect::Decision);
        let timeout = self.hook_timeout.as_secs().max(1);
        json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": command, "timeout": timeout}]}]}})
    }

    /// The command that runs the agent.
    pub fn command(&self, task: &AgentTask) -> CommandSpec {
        let home = self.home(task);
        let mut spec = CommandSpec::new(&self.program).args([
            "exec",
            "--skip-git-repo-check",
            "--json",
            "--dangerously-bypass-hook-trust",
        ]);
        spec = match (task.access, self.sandbox) {
            // Read-only is enforced by the sandbox alone (the gate allows what the brief's teachback state
            // allows, and a judge never teaches back), so a read-only agent gets it even where `sandbox` is
            // off: on a machine where it cannot run, the agent's commands fail rather than write.
            (Access::ReadOnly, _) => spec.args(["--sandbox", "read-only"]),
            (Access::ReadWrite, true) => spec.args(["--sandbox", "workspace-write"]),
            (Access::ReadWrite, false) => spec.arg("--dangerously-bypass-approvals-and-sandbox"),
        };
        // Codex has no flag for extra system text, so the personality leads the prompt.
        let mut prompt = task.system.join("\n\n");
        if !prompt.is_empty() {
            prompt.push_str("\n\n");
        }
        prompt.push_str(&task.prompt);
        prompt.push_str(&teachback_for(task, &self.agency));
        prompt.push_str(ending_for(task));
        spec = spec
            // `--` so a prompt that starts with `-` is not read as a flag.
            .arg("--")
            .arg(prompt)
            .cwd(&task.worktree)
            .timeout(task.limits.timeout + Duration::from_secs(30));
        for name in &self.inherit_env {
            spec = spec.inherit_env(name);
        }
        // The custom provider's key, wherever team.yaml keeps it.
        if let Some(var) = self.provider.as_ref().and_then(|p| p.env_key.as_deref()) {
            spec = spec.inherit_env(var);
        }
        // The task's variables first, so that none of them (the runner passes its HOME) can replace the
        // private CODEX_HOME or the gate's variables set after them.
        for (name, value) in &task.env {
            spec = spec.env(name, value);
        }
        spec = spec
            .env("HOME", &home)
            .env("CODEX_HOME", &home)
            // Codex refuses to put the helper its own sandbox runs (`codex-linux-sandbox`) in a CODEX_HOME
            // under the temporary directory, and its sandbox then fails wherever bubblewrap is installed:
            // its temporary directory is its own, inside CODEX_HOME.
            .env("TMPDIR", home.join(TMP_DIR))
            .env("AGENCY_BRIEF", task.brief.id.to_string());
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

impl Runtime for CodexRuntime {
    fn name(&self) -> &'static str {
        "codex"
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
            let write = |name: &str, text: String| {
                std::fs::create_dir_all(&home)
                    .and_then(|()| std::fs::write(home.join(name), text))
                    .map_err(|e| {
                        RuntimeError::Other(format!("cannot write {}: {e}", home.join(name).display()))
                    })
            };
            write("config.toml", self.config_toml())?;
            write("hooks.json", self.hooks_json().to_string())?;
            let gate_log = coverage::fresh_log(&home)?;
            std::fs::create_dir_all(home.join(TMP_DIR)).map_err(|e| {
                RuntimeError::Other(format!("cannot create {}: {e}", home.join(TMP_DIR).display()))
            })?;
            let gate = issue_gate(self.gate.as_deref(), task)?;
            let mut secrets = self.secrets.clone();
            secrets.extend(gate.as_ref().map(|g| g.token().to_owned()));
            let redactor = redactor_for(&task.env, &secrets);
            let recorder = Recorder::new(link, &redactor);
            recorder.note(match &self.model {
                Some(model) => format!("codex model {model}"),
                None => "codex model: its default".to_owned(),
            });
            let mut state = StreamState {
                model: self.model.clone(),
                price: self.price,
                ..StreamState::default()
            };
            // Never the blackboard: the hook reaches the gate through the service's socket.
            let mut writable = vec![home.clone()];
            let mut spec = self.command(task);
            if let Some(gate) = &gate {
                writable.push(gate.socket().to_path_buf());
                spec = gate.apply(spec);
            }
            let readable = super::external::hook_readable(&self.agency);
            let spec = sandboxed("codex", task, spec, &writable, &readable)?;
            let driven = drive("codex", spec, None, task.limits.timeout, cancel, link, |line| {
                for event in map_line(line, &mut state, &task.meta) {
                    recorder.record(event);
                }
                Flow::Continue
            })
            .await?;
            for blocked in blocked_calls(&driven.output.stderr.text()) {
                recorder.note(format!("codex: blocked by the gate: {}", truncate(&blocked, 500)));
            }
            if driven.stop != Some(AgentStop::Cancelled)
                && let Some(alert) =
                    coverage::check(&Decisions::of(gate.as_ref(), &gate_log), &state.calls, |line| {
                        recorder.note(line)
                    })
            {
                return Ok(AgentOutcome {
                    report: None,
                    stop: alert,
                    session_id: state.session_id,
                    final_text: state.last_message.as_deref().map(super::final_text),
                });
            }
            if let Some(stop) = driven.stop {
                return Ok(AgentOutcome {
                    report: None,
                    stop,
                    session_id: state.session_id,
                    final_text: state.last_message.as_deref().map(super::final_text),
                });
            }
            if !driven.output.success() && state.last_message.is_none() {
                return Err(RuntimeError::Process(format!(
                    "codex ended ({}): {}",
                    driven.output.describe(),
                    truncate(driven.output.stderr.text().trim(), 2_000)
                )));
            }
            Ok(AgentOutcome {
                report: state.last_message.as_deref().and_then(parse_report),
                stop: AgentStop::Finished,
                session_id: state.session_id,
                final_text: state.last_message.as_deref().map(super::final_text),
            })
        })
    }
}

/// The calls Codex's log on stderr says a hook blocked: each message, from its reason to the command, on
/// one line. Codex writes `… ERROR codex_core::tools::router: error=Command blocked by PreToolUse hook:
/// <reason>. Command: <command>`, the reason and command spanning lines, and a blank line after.
pub fn blocked_calls(stderr: &str) -> Vec<String> {
    const MARKER: &str = "Command blocked by PreToolUse hook: ";
    stderr
        .split(MARKER)
        .skip(1)
        .map(|rest| {
            let message = rest.split("\n\n").next().unwrap_or_default();
            message.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .collect()
}

/// What the mapper keeps between Codex events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamState {
    /// The thread id, from `thread.started`.
    pub session_id: Option<String>,
    /// The agent's last message, where its report is.
    pub last_message: Option<String>,
    /// The model it was started on, for its usage records (Codex's stream does not name it); unset: its
    /// default, recorded as an empty name.
    pub model: Option<String>,
    /// Its price, which costs each usage record (Codex reports tokens only).
    pub price: Option<Price>,
    /// The tool calls that ran, for the gate-coverage audit.
    pub calls: Vec<StreamCall>,
}

/// Maps one `codex exec --json` line to events.
pub fn map_line(line: &str, state: &mut StreamState, meta: &CallMeta) -> Vec<AgentEvent> {
    let line = line.trim();
    if line.is_empty() {
        return Vec::new();
    }
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        return vec![AgentEvent::Note(format!("codex: {}", truncate(line, 300)))];
    };
    let str_at = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    match event.get("type").and_then(Value::as_str).unwrap_or_default() {
        "thread.started" => {
            let id = str_at(&event, "thread_id");
            state.session_id = Some(id.clone());
            vec![AgentEvent::Note(format!("codex thread {id} started"))]
        }
        "item.completed" => {
            let item = event.get("item").unwrap_or(&Value::Null);
            match item.get("type").and_then(Value::as_str).unwrap_or_default() {
                "agent_message" => {
                    let text = str_at(item, "text");
                    state.last_message = Some(text.clone());
                    vec![AgentEvent::Said(truncate(&text, 2_000))]
                }
                "file_change" => {
                    let changes = || {
                        item.get("changes")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                    };
                    let paths: Vec<String> = changes()
                        .map(|c| format!("{} {}", str_at(c, "kind"), str_at(c, "path")))
                        .collect();
                    let summary = truncate(&paths.join(", "), 200);
                    state.calls.push(StreamCall {
                        tool: "apply_patch".to_owned(),
                        summary: summary.clone(),
                        target: CallTarget::Paths(changes().map(|c| str_at(c, "path")).collect()),
                    });
                    vec![AgentEvent::ToolCall {
                        name: "apply_patch".to_owned(),
                        summary,
                        allowed: str_at(item, "status") == "completed",
                    }]
                }
                "command_execution" => {
                    let command = str_at(item, "command");
                    let summary = truncate(&command, 200);
                    state.calls.push(StreamCall {
                        tool: "exec_command".to_owned(),
                        summary: summary.clone(),
                        target: CallTarget::Command(command),
                    });
                    vec![AgentEvent::ToolCall {
                        name: "exec_command".to_owned(),
                        summary,
                        allowed: true,
                    }]
                }
                "error" => vec![AgentEvent::Note(format!("codex: {}", str_at(item, "message")))],
                other => vec![AgentEvent::Note(format!("codex {other} item"))],
            }
        }
        "turn.completed" => {
            let count = |key: &str| {
                event
                    .pointer(&format!("/usage/{key}"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            let cached = count("cached_input_tokens");
            let usage = Usage {
                input: count("input_tokens").saturating_sub(cached),
                output: count("output_tokens"),
                cache_read: cached,
                cache_write: count("cache_write_input_tokens"),
            };
            vec![AgentEvent::Usage(UsageRecord {
                meta: meta.clone(),
                provider: "codex".to_owned(),
                model: state.model.clone().unwrap_or_default(),
                usage,
                cost_usd: state.price.map(|price| cost(&usage, &price)),
                latency: Duration::ZERO,
                stop_reason: StopReason::EndTurn,
            })]
        }
        "turn.failed" | "error" => {
            let message = event
                .pointer("/error/message")
                .or_else(|| event.get("message"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            vec![AgentEvent::Note(format!("codex failed: {message}"))]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_run_maps_to_events() {
        let mut state = StreamState {
            model: Some("gpt-5.5".into()),
            ..StreamState::default()
        };
        let events: Vec<AgentEvent> = include_str!("../../tests/fixtures/codex/write.jsonl")
            .lines()
            .flat_map(|l| map_line(l, &mut state, &CallMeta::default()))
            .collect();
        assert_eq!(
            state.session_id.as_deref(),
            Some("01a20172-946a-7342-b34c-d27523728600")
        );
        let calls: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolCall {
                    name,
                    summary,
                    allowed,
                } => Some((name.as_str(), summary.as_str(), *allowed)),
                _ => None,
            })
            .collect();
        assert_eq!(
            calls,
            [
                ("apply_patch", "add /tmp/cx/work/hello.txt", true),
                ("exec_command", "/bin/bash -lc 'cat hello.txt'", true)
            ]
        );
        assert!(parse_report(state.last_message.as_deref().unwrap_or_default()).is_some());
        assert!(
            events
                .iter()
                .any(|e| matches!(e, AgentEvent::Usage(u) if u.usage.input == 30 && u.model == "gpt-5.5"))
        );
    }

    #[test]
    fn blocked_calls_are_read_from_codexs_log() {
        let stderr = "Reading additional input from stdin...\n\
            2026-11-26T23:19:09.279119Z ERROR codex_core::tools::router: error=Command blocked by PreToolUse hook: \
            /bin/bash: line 1: /x/agency: No such file or directory\nagency hook: the gate was not found (exit 127), \
            so the call is blocked (fail closed). Command: *** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n\n\
            2026-11-26T23:19:09.359401Z ERROR codex_core::tools::router: error=Command blocked by PreToolUse hook: \
            denied. Command: echo hi > b.txt\n";
        assert_eq!(
            blocked_calls(stderr),
            [
                "/bin/bash: line 1: /x/agency: No such file or directory agency hook: the gate was not found (exit \
                 127), so the call is blocked (fail closed). Command: *** Begin Patch *** Add File: hello.txt +hi \
                 *** End Patch",
                "denied. Command: echo hi > b.txt",
            ]
        );
        assert!(blocked_calls("nothing blocked\n").is_empty());
    }

    #[test]
    fn usage_is_costed_at_the_configured_price_and_only_then() {
        let turn = r#"{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":400,"output_tokens":200}}"#;
        let cost_of = |price: Option<Price>| {
            let mut state = StreamState {
                price,
                ..StreamState::default()
            };
            match map_line(turn, &mut state, &CallMeta::default()).as_slice() {
                [AgentEvent::Usage(record)] => record.cost_usd,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(cost_of(None), None);
        // 600 uncached in at $2/M, 400 cached at $0.5/M, 200 out at $10/M.
        let price = Price {
            input: 2.0,
            output: 10.0,
            cache_read: 0.5,
            cache_write: 0.0,
        };
        let usd = cost_of(Some(price)).unwrap();
        assert!((usd - (0.0012 + 0.0002 + 0.002)).abs() < 1e-12, "{usd}");
    }

    #[test]
    fn config_toml_quotes_values() {
        let mut runtime = CodexRuntime::new("/bin/agency", "db", "/state");
        // Without the sandbox's writable root (tested with the runtime): the model, the provider and the
        // environment policy.
        runtime.sandbox = false;
        runtime.model = Some("gpt-5.5".into());
        runtime.provider = Some(CodexProvider {
            name: "fake".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            wire_api: "responses".into(),
            env_key: Some("FAKE_KEY".into()),
        });
        assert_eq!(
            runtime.config_toml(),
            "model = \"gpt-5.5\"\nmodel_provider = \"fake\"\n\n[model_providers.\"fake\"]\nname = \"fake\"\n\
             base_url = \"http://127.0.0.1:1/v1\"\nwire_api = \"responses\"\nenv_key = \"FAKE_KEY\"\n\n[shell_environment_policy]\n\
             ignore_default_excludes = false\n"
        );
    }
}
