//! `agency hook`: the teachback gate as a Claude Code / Codex command hook. It reads one hook event on
//! stdin and answers on stdout and the exit code as the client expects (docs/hooks.md).
//!
//! This is the fast path: it runs before clap, starts no async runtime, sets up no logging, opens the
//! blackboard read-only unless it has something to record, and loads nothing it does not need.
//!
//! Inside a run ([`ENV_GATE_SOCKET`] and [`ENV_GATE_CAPABILITY`] set) it opens no blackboard at all: it forwards
//! the event to the runner's gate service ([`crate::gate_service`]) and writes its answer, denying the call
//! when the service cannot be reached.

pub mod answer;
mod decisions;
pub mod event;
pub(crate) mod gate;
mod history;
pub mod locate;
mod sessions;
mod tasks;

use std::io::{Read, Write};
use std::process::ExitCode;

pub use history::{ORCHESTRATOR_UNREACHABLE, latest_corrections, raise_due};
pub use locate::{ENV_BRIEF, ENV_CONFIG, ENV_DB, ENV_GATE_CAPABILITY, ENV_GATE_SOCKET, GateEnv, HookEnv};

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
    if let (Some(gate), Ok(_)) = (&env.gate, &read)
        && input.len() <= event::MAX_INPUT_BYTES
    {
        return ask_the_service(gate, env, &input);
    }
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

/// How long the hook waits for the gate service: under the 30 s the runtimes give the hook.
const SERVICE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(25);

/// Forwards the event to the runner's gate service and writes its answer. Fails closed: when the service
/// cannot be reached or answers nonsense, the call is denied with a reason that says so.
fn ask_the_service(gate: &GateEnv, env: &HookEnv, input: &[u8]) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    let event: serde_json::Value = match serde_json::from_slice(input) {
        Ok(event) => event,
        Err(e) => {
            let answer = unreadable(env, &format!("hook input is not JSON ({e})"));
            return ExitCode::from(answer::write(&answer, &mut out, &mut err));
        }
    };
    let request = crate::gate_service::Request::Hook {
        brief: env.brief.clone().unwrap_or_default(),
        token: gate.token.clone(),
        event: event.clone(),
    };
    let answered = crate::gate_service::request(&gate.socket, &request, SERVICE_TIMEOUT).and_then(|a| {
        let code = a["code"].as_u64().and_then(|c| u8::try_from(c).ok());
        match (code, a["stdout"].as_str(), a["stderr"].as_str()) {
            (Some(code), Some(stdout), Some(stderr)) => Ok((code, stdout.to_owned(), stderr.to_owned())),
            _ => Err(format!("the gate service's answer is not a hook answer: {a}")),
        }
    });
    // The service keeps its answer as the record the runner audits the agent's calls against; nothing is
    // written here, inside the agent's sandbox.
    let code = match answered {
        Ok((code, stdout, stderr)) => {
            let _ = out.write_all(stdout.as_bytes());
            let _ = err.write_all(stderr.as_bytes());
            code
        }
        Err(problem) => answer::write(
            &Answer::Deny(format!(
                "agency hook: the runner's gate service ({}) did not answer: {problem}. This call is denied: in \
                 a run the gate fails closed when its service is down. Tell your lead.",
                gate.socket.display()
            )),
            &mut out,
            &mut err,
        ),
    };
    let _ = out.flush();
    ExitCode::from(code)
}

/// What `agency hook` answers to `input` with `env`, as (exit code, stdout, stderr): the gate service
/// answers its agents' hooks with this, the same decision code a plain session's hook runs. The goal
/// hooks are not served (no runner registers them for its agents).
pub fn answer_bytes(input: &[u8], env: &HookEnv) -> (u8, String, String) {
    let answer = match event::parse(input) {
        Ok(event) if tasks::is_task_created(&event) => tasks::created(&event, env),
        Ok(event) => gate::answer(&event, env),
        Err(err) => unreadable(env, &err.to_string()),
    };
    written(&answer)
}

/// `answer` as the hook writes it: its exit code, stdout and stderr.
pub fn written(answer: &answer::Answer) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = answer::write(answer, &mut out, &mut err);
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
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
