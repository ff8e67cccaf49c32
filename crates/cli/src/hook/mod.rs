//! `agency hook`: the teachback gate as a Claude Code / Codex command hook. It reads one hook event on
//! stdin and answers on stdout and the exit code as the client expects (docs/hooks.md).
//!
//! This is the fast path: it runs before clap, starts no async runtime, sets up no logging, opens the
//! blackboard read-only unless it has something to record, and loads nothing it does not need.

pub mod answer;
mod decisions;
pub mod event;
mod gate;
mod history;
pub mod locate;
mod sessions;
mod tasks;

use std::io::{Read, Write};
use std::process::ExitCode;

pub use history::{ORCHESTRATOR_UNREACHABLE, latest_corrections, raise_due};
pub use locate::{ENV_BRIEF, ENV_CONFIG, ENV_DB, HookEnv};

use answer::Answer;

/// Whether this command line is the hook itself (`agency hook`, nothing more), so `main` can skip clap.
pub fn is_hook_invocation(args: &[std::ffi::OsString]) -> bool {
    args.len() == 2 && args[1] == "hook"
}

/// Reads the event from stdin, answers it, and returns the exit code.
pub fn run() -> ExitCode {
    run_with(&HookEnv::from_process())
}

/// [`run`] with an environment read by the caller.
pub fn run_with(env: &HookEnv) -> ExitCode {
    let mut input = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(event::MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut input);
    let answer = match read {
        Err(err) => unreadable(env, &format!("cannot read stdin: {err}")),
        Ok(_) if input.len() > event::MAX_INPUT_BYTES => unreadable(env, "hook input is larger than 16 MiB"),
        Ok(_) => match event::parse(&input) {
            // A created task becomes a brief; other PostToolUse events, SessionStart, PostCompact and Stop
            // belong to the goal hooks.
            Ok(event) if tasks::is_task_created(&event) => tasks::created(&event, env),
            Ok(event) if crate::commands::goal::hooks::handles(&event.event_name) => {
                return crate::commands::goal::hooks::run(&event, &input, env);
            }
            Ok(event) => decisions::record(&event, gate::answer(&event, env)),
            Err(err) => unreadable(env, &err.to_string()),
        },
    };
    let code = answer::write(
        &answer,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    let _ = std::io::stdout().flush();
    ExitCode::from(code)
}

/// Input that is not an event. A runner-spawned agent is blocked (exit 2 blocks a pending tool call in both
/// clients); in a plain session the hook stays out of the way but says why on stderr.
fn unreadable(env: &HookEnv, problem: &str) -> Answer {
    if env.brief.is_some() {
        Answer::Block(format!(
            "agency hook: {problem}; the call is blocked because this agent was started by a runner ({ENV_BRIEF} is set)"
        ))
    } else {
        Answer::OpenWithWarning(format!("agency hook: {problem}; the teachback gate did not run"))
    }
}
