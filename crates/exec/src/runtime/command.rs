//! The command runtime: any other coding agent (aider and the like), started from a configured argv in the
//! brief's worktree with the brief on stdin. Such agents have no runner link, so nothing can gate their tool
//! calls; instead the teachback is done first, in a read-only step run by the built-in agent
//! ([`BuiltinRuntime::teachback_step`]), and the command is started on the worktree only once the
//! teachback is approved. Its report is read from its output ([`parse_report`]).
//!
//! What it can still enforce: the worktree (its working directory; git isolates its branch), the
//! allow-listed environment, the time limit and cancellation (the whole process group is killed).

use std::time::Duration;

use agency_llm::{BoxFuture, CancelToken};

use super::builtin::BuiltinRuntime;
use super::external::{Flow, drive, ending_for, parse_report, sandboxed};
use super::redact::{Recorder, redactor_for, truncate};
use super::{Access, AgentOutcome, AgentStop, AgentTask, RunnerLink, Runtime, RuntimeError};
use crate::process::CommandSpec;

/// Bytes of the command's output kept to find its report in.
const OUTPUT_TAIL: usize = 64 * 1024;

/// Runs a configured program as the agent.
#[derive(Debug, Clone)]
pub struct CommandRuntime {
    /// The program and its arguments (no shell).
    pub argv: Vec<String>,
    /// The built-in agent that does the read-only teachback step first.
    pub teachback: BuiltinRuntime,
    /// Host environment variables passed through (the task's own `env` is always passed).
    pub inherit_env: Vec<String>,
    /// Strings redacted from every recorded event.
    pub secrets: Vec<String>,
}

impl CommandRuntime {
    /// Runs `argv`, after a teachback step by `teachback`; passes only PATH and LANG from the host.
    pub fn new(argv: Vec<String>, teachback: BuiltinRuntime) -> Self {
        Self {
            argv,
            teachback,
            inherit_env: vec!["PATH".to_owned(), "LANG".to_owned()],
            secrets: Vec::new(),
        }
    }

    /// The command that runs the agent, the brief on its stdin.
    pub fn command(&self, task: &AgentTask) -> Result<CommandSpec, RuntimeError> {
        let spec = CommandSpec::from_argv(&self.argv).ok_or_else(|| {
            RuntimeError::Other("command runtime: the configured command is empty".to_owned())
        })?;
        let mut stdin = task.system.join("\n\n");
        if !stdin.is_empty() {
            stdin.push_str("\n\n");
        }
        stdin.push_str(&task.prompt);
        stdin.push_str(ending_for(task));
        stdin.push('\n');
        let mut spec = spec
            .cwd(&task.worktree)
            .stdin(stdin)
            .timeout(task.limits.timeout + Duration::from_secs(30));
        for name in &self.inherit_env {
            spec = spec.inherit_env(name);
        }
        for (name, value) in &task.env {
            spec = spec.env(name, value);
        }
        Ok(spec)
    }
}

impl Runtime for CommandRuntime {
    fn name(&self) -> &'static str {
        "command"
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async move {
            let spec = self.command(task)?;
            let redactor = redactor_for(&task.env, &self.secrets);
            let recorder = Recorder::new(link, &redactor);
            // A read-only agent cannot change anything, so only writers need the teachback first.
            if task.access == Access::ReadWrite {
                recorder.note("teachback step (read-only, built-in agent) before the command starts");
                if let Some(outcome) = self.teachback.teachback_step(task, link, cancel).await? {
                    recorder.note("the teachback was not approved; the command was not started");
                    return Ok(outcome);
                }
            }
            let spec = sandboxed("command", task, spec, &[], &[])?;
            recorder.note(format!("starting {}", self.argv.join(" ")));
            let mut tail = String::new();
            let driven = drive("command", spec, None, task.limits.timeout, cancel, link, |line| {
                tail.push_str(line);
                tail.push('\n');
                if tail.len() > OUTPUT_TAIL {
                    let mut cut = tail.len() - OUTPUT_TAIL;
                    while !tail.is_char_boundary(cut) {
                        cut += 1;
                    }
                    tail.drain(..cut);
                }
                Flow::Continue
            })
            .await?;
            recorder.note(format!(
                "{} ended: {}; output tail: {}",
                self.argv.first().map_or("command", String::as_str),
                driven.output.describe(),
                truncate(tail.trim(), 1_000)
            ));
            Ok(AgentOutcome {
                report: parse_report(&tail),
                stop: driven.stop.unwrap_or(AgentStop::Finished),
                session_id: None,
                final_text: Some(super::final_text(&tail)),
            })
        })
    }
}
