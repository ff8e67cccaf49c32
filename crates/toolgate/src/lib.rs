//! The tool gate (docs/glossary.md): the teachback gate's decision on one Claude Code / Codex tool call,
//! as a library that every front end calls — `agency hook` in a plain session, the runner's gate service
//! in a run (`agency_cli::gate_service`), and the hook's fast path.
//!
//! In: one hook event ([`event`]) and where to find the brief, blackboard and configuration ([`locate`]).
//! Out: an [`Answer`], written for the client as exit code, stdout and stderr ([`answer::write`]). The
//! decision itself is `agency_core::intercept`'s interception matrix; this crate finds its inputs on the
//! blackboard ([`gate`]), records denials and submissions, opens a TaskCreate's brief ([`tasks`]) and keeps
//! the audit's decision log ([`decisions`]). [`wire`] is the gate service's protocol, so a hook in a run can
//! ask the service without linking the runner.
//!
//! The goal hooks (SessionStart, Stop, ...) are not here: they belong to `agency goal` in the CLI.

pub mod answer;
mod decisions;
pub mod event;
mod gate;
pub mod history;
pub mod locate;
mod sessions;
mod tasks;
pub mod wire;

use std::io::{Read, Write};

pub use answer::Answer;
pub use decisions::GATE_LOG_ENV;
pub use event::{HookEvent, MAX_INPUT_BYTES, MalformedEvent};
pub use gate::open_gate_allows;
pub use history::{ORCHESTRATOR_UNREACHABLE, latest_corrections, raise_due};
pub use locate::{
    AGENCY_DIR, CONFIG_FILE, DB_FILE, ENV_BRIEF, ENV_CONFIG, ENV_DB, ENV_GATE_CAPABILITY, ENV_GATE_SOCKET,
    GateEnv, HookEnv,
};
pub use tasks::is_task_created;

/// Reads the hook's input from stdin: at most [`MAX_INPUT_BYTES`] (one byte more is read, so that a larger
/// input is seen as too large rather than cut short).
pub fn read_input() -> std::io::Result<Vec<u8>> {
    let mut input = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut input)?;
    Ok(input)
}

/// The answer to a parsed event that is not a goal hook's: a created task becomes a brief (PostToolUse of
/// TaskCreate); a PreToolUse is decided by the teachback gate and, when the runtime asks for it, logged for
/// the audit ([`GATE_LOG_ENV`]); anything else gets no opinion.
pub fn decide(event: &HookEvent, env: &HookEnv) -> Answer {
    if tasks::is_task_created(event) {
        return tasks::created(event, env);
    }
    decisions::record(event, gate::answer(event, env))
}

/// What the hook answers to `event` with `env`, without the audit's decision log: the gate service answers
/// its agents' hooks with this, the same decision code a plain session's hook runs, and keeps its own
/// record. The goal hooks are not served (no runner registers them for its agents).
pub fn answer_for(event: &HookEvent, env: &HookEnv) -> Answer {
    if tasks::is_task_created(event) {
        tasks::created(event, env)
    } else {
        gate::answer(event, env)
    }
}

/// [`answer_for`] as the hook writes it: (exit code, stdout, stderr).
pub fn answer_event(event: &HookEvent, env: &HookEnv) -> (u8, String, String) {
    written(&answer_for(event, env))
}

/// [`answer_event`] for the event's bytes, as the client sent them.
pub fn answer_bytes(input: &[u8], env: &HookEnv) -> (u8, String, String) {
    match event::parse(input) {
        Ok(event) => answer_event(&event, env),
        Err(err) => written(&unreadable(env, &err.to_string())),
    }
}

/// `answer` as the hook writes it: its exit code, stdout and stderr.
pub fn written(answer: &Answer) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = answer::write(answer, &mut out, &mut err);
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// Writes `answer` on this process's stdout and stderr and returns the exit code.
pub fn write_answer(answer: &Answer) -> u8 {
    let code = answer::write(
        answer,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    let _ = std::io::stdout().flush();
    code
}

/// Input that is not an event. A runner-spawned agent is blocked (exit 2 blocks a pending tool call in both
/// clients); in a plain session the hook stays out of the way but says why on stderr.
pub fn unreadable(env: &HookEnv, problem: &str) -> Answer {
    if env.brief.is_some() {
        Answer::Block(format!(
            "agency hook: {problem}; the call is blocked because this agent was started by a runner ({ENV_BRIEF} is set)"
        ))
    } else {
        Answer::OpenWithWarning(format!("agency hook: {problem}; the teachback gate did not run"))
    }
}
