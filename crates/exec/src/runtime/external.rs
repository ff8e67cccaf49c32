//! What the external runtimes (Claude Code, Codex, a plain command) share: driving a child that prints
//! JSON lines under the agent's time limit and the run's cancel token, and reading the agent's report out
//! of its final message.
//!
//! External agents have no `report_result` tool, so they are asked ([`REPORT_INSTRUCTIONS`]) to end with
//! the same report as a JSON block, which [`parse_report`] finds; an agent that does not is taken to have
//! simply ended its turn (no report), and the runner's sign-off decides. Nor do they have
//! `submit_teachback`: those gated by `agency hook` are told how to teach back with `agency teachback
//! submit` ([`teachback_instructions`]).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::Duration;

use agency_core::config::{ROLLOUT_ENV_VAR, RolloutMode};
use agency_core::variety::TeachbackMode;
use agency_llm::CancelToken;
use serde_json::Value;

use super::coverage::{GATE_LOG_ENV, GATE_LOG_FILE};
use super::{Access, AgentEvent, AgentReport, AgentStop, AgentTask, Ending, RunnerLink, RuntimeError};
use crate::process::{self, CommandSpec, Output, ProcessError};
use crate::sandbox::SandboxError;

/// Appended to an external agent's prompt so its final message carries a report agency can read.
pub const REPORT_INSTRUCTIONS: &str = "\n\nWhen you are finished, end your final message with your report as a \
JSON object in a ```json block: {\"status\": \"done\" | \"partial\" | \"blocked\", \"summary\": \"what you did \
and what is left\", \"evidence\": [{\"path\": \"file you changed\", \"quote\": \"a line it now contains\"}], \
\"output\": {}}. Report honestly: the work is checked independently afterwards.";

/// What to append to `task`'s prompt so its final message ends the way the caller reads it: the report
/// The environment `agency hook` needs inside a hook-gated agent (Claude Code, Codex), added to `spec`: the
/// rollout mode, and — only when no gate service answers it (the service's variables are added as the
/// agent starts, and the service records its decisions itself) — the blackboard and team.yaml to read,
/// which a sandboxed agent cannot open, and where to record its decisions for the coverage audit (in the
/// agent's `home`).
pub(crate) fn hook_env(
    mut spec: CommandSpec,
    home: &Path,
    rollout: RolloutMode,
    gated_by_service: bool,
    db: &Path,
    config: Option<&Path>,
) -> CommandSpec {
    spec = spec.env(ROLLOUT_ENV_VAR, rollout.as_str());
    if !gated_by_service {
        spec = spec
            .env(GATE_LOG_ENV, home.join(GATE_LOG_FILE))
            .env("AGENCY_DB", db);
        if let Some(config) = config {
            spec = spec.env("AGENCY_CONFIG", config);
        }
    }
    spec
}

/// request, or nothing when the task prescribes its own ending ([`Ending::AsInstructed`]).
pub fn ending_for(task: &AgentTask) -> &'static str {
    match task.ending {
        Ending::Report => REPORT_INSTRUCTIONS,
        Ending::AsInstructed => "",
    }
}

/// How an agent gated by `agency hook` teaches back, appended to its prompt when it may change files: the
/// one-line `agency teachback submit` command (with the fields the built-in agent's `submit_teachback`
/// asks for), that it waits for the review and prints it, and what to do with each answer. Blocking
/// briefs must wait for approval; advisory ones send it and go on.
pub fn teachback_instructions(agency: &Path, mode: TeachbackMode) -> String {
    let program = shell_word(&agency.to_string_lossy());
    let when = match mode {
        TeachbackMode::Blocking => {
            "Before you change any file or run any command other than reading, teach back: restate the task so \
             your lead can check you understood it. Changes are refused until your teachback is approved; \
             reading is allowed meanwhile."
        }
        TeachbackMode::Advisory => {
            "Before you start, teach back: restate the task so your lead can check you understood it. It is \
             recorded and you may go on at once."
        }
    };
    format!(
        "\n\n{when} Send it by running this one command with your shell tool (Bash), all on one line, \
         with none of the characters ; & | > ` or $( in the values:\n\n\
         {program} teachback submit --building \"what you will build\" --constraint \"a key constraint\" \
         [--constraint \"another\" ...] [--interface \"an interface you produce or use\" ...] \
         [--touches \"a file you will touch\" ...] \
         --approach \"how you will do it\" --most-likely-wrong \"the part of your understanding most likely to \
         be wrong\" --least-confident \"what you are least sure of\" [--first-action \"your first step\"]\n\n\
         It waits for the review and prints it. \"Teachback approved\": go on with the work. \"Teachback \
         corrections requested\": address each numbered item and run the command again with your corrected \
         teachback. \"No review yet\": read the code meanwhile and try again later; a denied change also \
         tells you where the review stands."
    )
}

/// [`teachback_instructions`] for `task`'s brief, or nothing for an agent that only reads (it changes
/// nothing, so it has nothing to be gated on).
pub fn teachback_for(task: &AgentTask, agency: &Path) -> String {
    if task.access == Access::ReadOnly {
        return String::new();
    }
    let mode = task.brief.teachback_mode();
    teachback_instructions(agency, mode)
}

/// What the line handler wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// The agent is done: close its stdin (agents that read commands until end of input then exit).
    CloseInput,
}

/// How a driven child ended.
#[derive(Debug)]
pub struct Driven {
    /// Its exit status and stderr tail (stdout went to the line handler).
    pub output: Output,
    /// Set when agency stopped it: at the time limit or on cancel.
    pub stop: Option<AgentStop>,
}

/// `spec` wrapped in the task's OS sandbox ([`crate::sandbox`]): the worktree writable, with `writable` and
/// `readable` the runtime's own needs (its private HOME, the hook's blackboard and configuration). A
/// sandbox that cannot be set up is an error: the agent is not started bare. A program that is not
/// installed is reported as such.
pub fn sandboxed(
    runtime: &str,
    task: &AgentTask,
    spec: CommandSpec,
    writable: &[PathBuf],
    readable: &[PathBuf],
) -> Result<CommandSpec, RuntimeError> {
    task.sandbox
        .confine_with(spec, &task.worktree, writable, readable)
        .map_err(|e| match e {
            SandboxError::Program(ProcessError::ProgramNotFound { program, .. }) => {
                RuntimeError::NotInstalled {
                    runtime: runtime.to_owned(),
                    program,
                }
            }
            other => RuntimeError::Sandbox(other),
        })
}

/// What an agent's sandbox must let it read besides the usual: the `agency` binary its hook runs, when that
/// lives where the sandbox hides (under `/tmp`, which the sandbox replaces with a private one). A path that
/// does not exist is left out: the hook then fails, and fails closed.
pub fn hook_readable(agency: &Path) -> Vec<PathBuf> {
    std::fs::canonicalize(agency).into_iter().collect()
}

/// A capability on the runner's model-key relay for the route `route` gives, when the runtime has a relay
/// and there is a key to keep (`route` gives one); with what the route came with (pi's provider name). An
/// error stops the agent before it starts: it would have had no way to its model without its key.
pub(crate) fn issue_relay<T>(
    relay: Option<&agency_relay::KeyRelay>,
    route: impl FnOnce() -> Option<(T, agency_relay::Route)>,
) -> Result<Option<(T, agency_relay::Ticket)>, RuntimeError> {
    let Some(relay) = relay else {
        return Ok(None);
    };
    let Some((with, route)) = route() else {
        return Ok(None);
    };
    relay
        .issue(route)
        .map(|ticket| Some((with, ticket)))
        .map_err(|e| RuntimeError::Other(format!("cannot issue a capability on the model-key relay: {e}")))
}

/// A capability for `task`'s agent from the runner's gate service, when the runtime has one. An error
/// stops the agent before it starts: its gate could not answer it.
pub fn issue_gate(
    gate: Option<&dyn crate::gate::GateIssuer>,
    task: &AgentTask,
) -> Result<Option<crate::gate::GateCapability>, RuntimeError> {
    gate.map(|g| g.issue(task.brief.id))
        .transpose()
        .map_err(|e| RuntimeError::Other(format!("the gate service cannot admit this agent: {e}")))
}

/// The blackboard files a hook-gated agent's `agency hook` opens (the database, its WAL and shared memory,
/// those that exist): bound writable into its sandbox, since the hook records and reads through them.
pub fn blackboard_files(db: &Path) -> Vec<PathBuf> {
    let mut files = vec![db.to_path_buf()];
    for suffix in ["-wal", "-shm"] {
        let mut name = db.as_os_str().to_os_string();
        name.push(suffix);
        files.push(PathBuf::from(name));
    }
    files.retain(|f| f.is_file());
    files
}

/// Starts `spec`, hands every stdout line to `on_line` until the child closes stdout, and stops the child
/// (its whole process group) at `limit` or when `cancel` fires. `runtime` names the runtime in errors.
/// Who the child is goes to `link` as it starts ([`AgentEvent::Process`]), so that a runner that outlives
/// this one can stop it.
///
/// Stdin: bytes in the spec are fed and the pipe closed at once; `input` instead is written and the pipe
/// kept open until `on_line` answers [`Flow::CloseInput`]; with neither, the child reads end of file.
pub async fn drive(
    runtime: &str,
    spec: CommandSpec,
    input: Option<Vec<u8>>,
    limit: Duration,
    cancel: &CancelToken,
    link: &dyn RunnerLink,
    mut on_line: impl FnMut(&str) -> Flow,
) -> Result<Driven, RuntimeError> {
    // The child's own token: a cancelled run reaches it, and dropping this future (at the agent's time limit,
    // say) cancels it, so a child never outlives the future that drives it.
    let guard = cancel.child().cancel_on_drop();
    let mut child = process::spawn(&spec, guard.token()).map_err(|e| match e {
        ProcessError::ProgramNotFound { program, .. } => RuntimeError::NotInstalled {
            runtime: runtime.to_owned(),
            program,
        },
        other => RuntimeError::Process(format!("{runtime}: {other}")),
    })?;
    link.record(match child.identity() {
        Ok(identity) => AgentEvent::Process(identity.clone()),
        Err(e) => AgentEvent::Note(format!(
            "{runtime}: its process {} could not be identified ({e}): a runner killed now leaves it running",
            child.id()
        )),
    });
    let mut stdin = match (child.stdin.take(), input) {
        (Some(mut pipe), Some(bytes)) => {
            // Written on a blocking thread: a large prompt can fill the pipe before the child reads it.
            let written = tokio::task::spawn_blocking(move || {
                use std::io::Write as _;
                pipe.write_all(&bytes).and_then(|()| pipe.flush()).map(|()| pipe)
            })
            .await;
            match written {
                Ok(Ok(pipe)) => Some(pipe),
                // The child is gone or not reading; what it printed says why.
                _ => None,
            }
        }
        _ => None,
    };
    let stdout = child.stdout.take();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    // A plain thread, never joined: a grandchild that escaped the group could hold the pipe open, and the
    // agent must not wait on it (the channel closing or the deadline ends the loop either way).
    std::thread::Builder::new()
        .name("agency-agent-stdout".into())
        .spawn(move || {
            let Some(stdout) = stdout else { return };
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| RuntimeError::Process(format!("{runtime}: cannot read the agent's output: {e}")))?;
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(deadline);
    let mut stop = None;
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                stop = Some(AgentStop::Cancelled);
                break;
            }
            () = &mut deadline => {
                stop = Some(AgentStop::Timeout);
                break;
            }
            line = rx.recv() => match line {
                Some(line) => {
                    if on_line(&line) == Flow::CloseInput {
                        drop(stdin.take());
                    }
                }
                None => break,
            },
        }
    }
    drop(stdin);
    if stop.is_some() {
        guard.token().cancel();
    }
    let waited = tokio::task::spawn_blocking(move || child.wait()).await;
    drop(guard);
    let output = waited
        .map_err(|e| RuntimeError::Process(format!("{runtime}: supervising the agent failed: {e}")))?
        .map_err(|e| RuntimeError::Process(format!("{runtime}: {e}")))?;
    Ok(Driven { output, stop })
}

/// The agent's report in its final message: the last ```json block, else the last `{...}` object, that
/// reads as an [`AgentReport`].
pub fn parse_report(text: &str) -> Option<AgentReport> {
    let fenced = text
        .rmatch_indices("```json")
        .filter_map(|(start, _)| {
            let body = &text[start + "```json".len()..];
            body.find("```").map(|end| &body[..end])
        })
        .find_map(|block| serde_json::from_str::<AgentReport>(block.trim()).ok());
    fenced.or_else(|| {
        text.rmatch_indices('{').find_map(|(start, _)| {
            let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
            let value = stream.next()?.ok()?;
            serde_json::from_value::<AgentReport>(value).ok()
        })
    })
}

/// `program` quoted for the `sh -c` line a client runs a hook command with, when it needs quoting.
pub fn shell_word(program: &str) -> String {
    let plain = program
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c));
    if plain && !program.is_empty() {
        program.to_owned()
    } else {
        format!("'{}'", program.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ReportStatus;

    #[test]
    fn reports_are_found_in_fenced_blocks_or_bare_objects() {
        let fenced = "Done.\n```json\n{\"status\": \"done\", \"summary\": \"fixed add\", \"evidence\": [{\"path\": \"calc.py\"}]}\n```\n";
        let report = parse_report(fenced).unwrap();
        assert_eq!(
            (report.status, report.summary.as_str()),
            (ReportStatus::Done, "fixed add")
        );
        assert_eq!(report.evidence[0].path, "calc.py");
        let bare = "I stopped. {\"status\": \"blocked\", \"summary\": \"no tests\"} bye";
        assert_eq!(parse_report(bare).unwrap().status, ReportStatus::Blocked);
        assert_eq!(parse_report("no report {not json}"), None);
    }

    #[test]
    fn teachback_instructions_name_every_field_and_the_agency_binary() {
        let text = teachback_instructions(Path::new("/opt/bin/agency"), TeachbackMode::Blocking);
        for flag in [
            "--building",
            "--constraint",
            "--interface",
            "--approach",
            "--most-likely-wrong",
            "--least-confident",
        ] {
            assert!(text.contains(flag), "{flag} missing: {text}");
        }
        assert!(
            text.contains("/opt/bin/agency teachback submit --building"),
            "{text}"
        );
        assert!(text.contains("Changes are refused until"), "{text}");
        let advisory = teachback_instructions(Path::new("/opt/bin/agency"), TeachbackMode::Advisory);
        assert!(advisory.contains("go on at once"), "{advisory}");
    }

    #[test]
    fn hook_programs_are_quoted_only_when_needed() {
        assert_eq!(shell_word("/usr/bin/agency"), "/usr/bin/agency");
        assert_eq!(shell_word("/opt/my tools/agency"), "'/opt/my tools/agency'");
        assert_eq!(shell_word("/a'b"), r"'/a'\''b'");
    }
}
