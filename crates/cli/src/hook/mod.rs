//! `agency hook`: the teachback gate as a Claude Code / Codex command hook. It reads one hook event on
//! stdin and answers on stdout and the exit code as the client expects (docs/hooks.md).
//!
//! This is the fast path: it runs before clap, starts no async runtime, sets up no logging, opens the
//! blackboard read-only unless it has something to record, and loads nothing it does not need. The decision
//! is the tool gate's ([`agency_toolgate`]); this module adds the goal hooks, which belong to `agency goal`.
//!
//! Inside a run ([`ENV_GATE_SOCKET`] and [`ENV_GATE_CAPABILITY`] set) it opens no blackboard at all: it forwards
//! the event to the runner's gate service ([`crate::gate_service`]) and writes its answer, denying the call
//! when the service cannot be reached.

use std::process::ExitCode;

pub use agency_toolgate::{
    ENV_BRIEF, ENV_CONFIG, ENV_DB, ENV_GATE_CAPABILITY, ENV_GATE_SOCKET, GateEnv, HookEnv,
    ORCHESTRATOR_UNREACHABLE, answer, event, latest_corrections, raise_due,
};
use agency_toolgate::{MAX_INPUT_BYTES, is_task_created, unreadable, write_answer};

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
    let input = match agency_toolgate::read_input() {
        Ok(input) if input.len() > MAX_INPUT_BYTES => {
            return ExitCode::from(write_answer(&unreadable(env, "hook input is larger than 16 MiB")));
        }
        Ok(input) => input,
        Err(err) => {
            return ExitCode::from(write_answer(&unreadable(
                env,
                &format!("cannot read stdin: {err}"),
            )));
        }
    };
    if let Some(gate) = &env.gate {
        return ExitCode::from(agency_toolgate::wire::ask_the_service(gate, env, &input));
    }
    let answer = match event::parse(&input) {
        // A created task becomes a brief (the tool gate's); other PostToolUse events, SessionStart,
        // PostCompact and Stop belong to the goal hooks.
        Ok(event) if crate::commands::goal::hooks::handles(&event.event_name) && !is_task_created(&event) => {
            return crate::commands::goal::hooks::run(&event, &input, env);
        }
        Ok(event) => agency_toolgate::decide(&event, env),
        Err(err) => unreadable(env, &err.to_string()),
    };
    ExitCode::from(write_answer(&answer))
}

#[cfg(test)]
mod tests {
    /// The tool gate repeats names the runtimes and the workspace define (it links neither); a rename on
    /// one side only would leave the hook reading a variable nobody sets.
    #[test]
    fn the_tool_gate_reads_the_names_the_runtimes_and_workspace_set() {
        assert_eq!(
            agency_toolgate::ENV_GATE_SOCKET,
            agency_exec::gate::ENV_GATE_SOCKET
        );
        assert_eq!(
            agency_toolgate::ENV_GATE_CAPABILITY,
            agency_exec::gate::ENV_GATE_CAPABILITY
        );
        assert_eq!(
            agency_toolgate::GATE_LOG_ENV,
            agency_exec::runtime::coverage::GATE_LOG_ENV
        );
        assert_eq!(agency_toolgate::AGENCY_DIR, crate::workspace::AGENCY_DIR);
        assert_eq!(agency_toolgate::CONFIG_FILE, crate::workspace::CONFIG_FILE);
        assert_eq!(agency_toolgate::DB_FILE, crate::workspace::DB_FILE);
    }
}
