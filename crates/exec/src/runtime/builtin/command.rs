//! `run_command`: a program run for the agent without a shell, in the worktree (or a directory inside it),
//! with only the task's allow-listed environment, a timeout no longer than the task's command limit and a
//! capped output tail. It runs on a blocking thread through [`crate::process`], so the whole process group
//! is killed at the timeout, on cancel, or when the agent itself is stopped. In a run it starts inside the
//! task's OS sandbox ([`crate::sandbox`]), with only the worktree writable; a sandbox that cannot be set up
//! refuses the command instead of running it bare.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Deserialize;

use super::confine::Confinement;
use super::files::ToolResult;
use crate::process::{self, CommandSpec};
use crate::sandbox::Sandboxing;

/// Bytes kept of each of stdout and stderr.
pub const OUTPUT_CAP: usize = 16 * 1024;

/// `run_command` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandArgs {
    argv: Vec<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

/// Runs the command and describes how it ended.
pub async fn run_command(
    confinement: &Confinement,
    args: CommandArgs,
    env: &[(String, String)],
    sandbox: &Sandboxing,
    max_timeout: Duration,
    cancel: &agency_llm::CancelToken,
) -> ToolResult {
    let Some(program) = args.argv.first() else {
        return Err(
            "argv is empty; give the program and its arguments, e.g. [\"cargo\", \"test\"]".to_owned(),
        );
    };
    let cwd = confinement
        .existing(args.cwd.as_deref().unwrap_or("."))
        .map_err(|e| e.0)?;
    if !cwd.is_dir() {
        return Err(format!(
            "cwd `{}` is not a directory",
            args.cwd.unwrap_or_default()
        ));
    }
    let timeout = args
        .timeout_secs
        .map(Duration::from_secs)
        .map_or(max_timeout, |t| t.min(max_timeout));
    let mut spec = CommandSpec::new(program)
        .args(&args.argv[1..])
        .cwd(cwd)
        .timeout(timeout)
        .output_cap(OUTPUT_CAP);
    for (name, value) in env {
        spec = spec.env(name, value);
    }
    let spec = sandbox
        .confine(spec, confinement.root())
        .map_err(|e| format!("the command was not run: {e}"))?;
    // The command's own token: a cancelled run reaches it, and dropping this future (an agent stopped at its
    // time limit) cancels it, so the command outlives neither.
    let guard = cancel.child().cancel_on_drop();
    let token = guard.token().clone();
    let joined = tokio::task::spawn_blocking(move || process::run_cancellable(&spec, &token)).await;
    drop(guard);
    let output = joined
        .map_err(|e| format!("the command's supervisor failed: {e}"))?
        .map_err(|e| e.to_string())?;
    let mut text = format!("{}\n", output.describe());
    for (name, captured) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        if captured.total_bytes() == 0 {
            continue;
        }
        let _ = write!(text, "--- {name}");
        if captured.truncated_bytes > 0 {
            let _ = write!(
                text,
                " (last {} bytes of {})",
                captured.tail.len(),
                captured.total_bytes()
            );
        }
        let _ = writeln!(text, " ---\n{}", captured.text().trim_end());
    }
    if output.success() { Ok(text) } else { Err(text) }
}
