//! `agency-hook`: the tool gate as a Claude Code / Codex command hook, in a binary of its own. It answers
//! exactly as `agency hook` does, but links only the tool gate (`agency-toolgate`: core and store), not the
//! whole `agency` (runner, runtimes, model clients, dashboard): the hook starts once per tool call, and a
//! smaller binary starts faster (docs/performance.md, *The teachback hook*).
//!
//! It answers PreToolUse, and the PostToolUse of TaskCreate, itself. Any other event belongs to the goal
//! hooks, which live in `agency`: those are handed to the `agency` next to this binary (`agency hook`, the
//! same input on stdin), and when that cannot be run the event is blocked (exit 2), never let through.

use std::io::Write;
use std::process::{Command, ExitCode, Stdio};

use agency_toolgate::{HookEnv, MAX_INPUT_BYTES, event, is_task_created, unreadable, write_answer};

fn main() -> ExitCode {
    let env = HookEnv::from_process();
    let input = match agency_toolgate::read_input() {
        Ok(input) if input.len() > MAX_INPUT_BYTES => {
            return ExitCode::from(write_answer(&unreadable(
                &env,
                "hook input is larger than 16 MiB",
            )));
        }
        Ok(input) => input,
        Err(err) => {
            return ExitCode::from(write_answer(&unreadable(
                &env,
                &format!("cannot read stdin: {err}"),
            )));
        }
    };
    if let Some(gate) = &env.gate {
        return ExitCode::from(agency_toolgate::wire::ask_the_service(gate, &env, &input));
    }
    let answer = match event::parse(&input) {
        Ok(event) if event.event_name == "PreToolUse" || is_task_created(&event) => {
            agency_toolgate::decide(&event, &env)
        }
        Ok(_) => return hand_to_agency(&input),
        Err(err) => unreadable(&env, &err.to_string()),
    };
    ExitCode::from(write_answer(&answer))
}

/// Runs `agency hook` (the `agency` in this binary's directory) on `input` and passes its answer through.
/// Fails closed: when it cannot be run, the event is blocked with a message that says why.
fn hand_to_agency(input: &[u8]) -> ExitCode {
    let agency = std::env::current_exe().map(|exe| exe.with_file_name("agency"));
    let ran = agency.as_ref().map_err(|e| e.to_string()).and_then(|agency| {
        let mut child = Command::new(agency)
            .arg("hook")
            .stdin(Stdio::piped())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", agency.display()))?;
        if let Some(mut stdin) = child.stdin.take() {
            // A hook that stops reading early is its own business: its answer still counts.
            let _ = stdin.write_all(input);
        }
        child.wait().map_err(|e| e.to_string())
    });
    match ran {
        Ok(status) => match status.code() {
            Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(2)),
            None => blocked(&format!("agency hook was killed ({status})")),
        },
        Err(problem) => blocked(&problem),
    }
}

fn blocked(problem: &str) -> ExitCode {
    eprintln!(
        "agency-hook: this event belongs to `agency hook` (the goal hooks), which could not answer it: {problem}; \
         blocked (fail closed). Install agency-hook next to agency."
    );
    ExitCode::from(2)
}
