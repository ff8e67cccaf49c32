//! Helpers for the gate's tests: open a brief with `agency teachback start`, run `agency hook` with an
//! event on stdin and a chosen environment, and decide whether an end-to-end test of a real client runs.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::{Repo, Run};

/// A complete teachback in the bullet format.
pub const TEACHBACK: &str = "Teachback:\n- Building: hello.txt containing hi\n- Key constraints: one file; no other changes\n\
    - Interfaces: none\n- Approach: one Write call\n- Most likely wrong: the path\n- Least confident: the content";

/// Opens a brief with this variety (`"2,2,2,2"` blocks, `"1,1,1,1"` is advisory) and returns its full id.
pub fn start_brief(repo: &Repo, variety: &str) -> String {
    let out = repo
        .agency(&[
            "teachback",
            "start",
            "--title",
            "write hello",
            "--variety",
            variety,
        ])
        .success()
        .stdout();
    out.split_whitespace()
        .nth(1)
        .expect("brief id in output")
        .to_string()
}

/// Sends [`TEACHBACK`] for `brief` as its agent would (`agency teachback submit`).
pub fn submit_teachback(repo: &Repo, brief: &str) -> Run {
    repo.agency(&["teachback", "submit", "--brief", brief, TEACHBACK])
}

/// Sends the teachback for `brief` and approves it: the brief is active, its agent may work.
pub fn activate(repo: &Repo, brief: &str) {
    submit_teachback(repo, brief).success();
    repo.agency(&["teachback", "approve", brief]).success();
}

/// Asks for two corrections of the teachback under review for `brief` (`agency teachback correct`).
pub fn correct_teachback(repo: &Repo, brief: &str) -> Run {
    repo.agency(&[
        "teachback",
        "correct",
        brief,
        "--item",
        "per message",
        "--item",
        "no new deps",
    ])
}

/// A PreToolUse event as Claude Code sends it, from the repository.
pub fn pre_tool_use(repo: &Repo, tool: &str, input: Value) -> String {
    json!({
        "session_id": "sess-1", "transcript_path": "/dev/null", "cwd": repo.path(),
        "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_1",
    })
    .to_string()
}

/// What `agency hook` answered.
#[derive(Debug)]
pub struct HookRun {
    /// Exit code (`None`: killed, e.g. by a panic abort).
    pub code: Option<i32>,
    /// stdout parsed as JSON (`Null` when empty).
    pub json: Value,
    /// stderr.
    pub stderr: String,
}

impl HookRun {
    /// `allow`, `deny`, or `none` (no decision).
    pub fn decision(&self) -> &str {
        self.json["hookSpecificOutput"]["permissionDecision"]
            .as_str()
            .unwrap_or("none")
    }

    /// The decision's reason.
    pub fn reason(&self) -> &str {
        self.json["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap_or("")
    }
}

/// Runs `agency hook` in the repository with only these AGENCY_* variables set.
pub fn hook(repo: &Repo, env: &[(&str, &str)], stdin: &str) -> HookRun {
    hook_args(repo, &["hook"], env, stdin)
}

/// Runs `agency <args>` as a hook (stdin fed, environment controlled).
pub fn hook_args(repo: &Repo, args: &[&str], env: &[(&str, &str)], stdin: &str) -> HookRun {
    hook_program(Path::new(env!("CARGO_BIN_EXE_agency")), repo, args, env, stdin)
}

/// Runs `program <args>` as a hook (stdin fed, environment controlled): `agency` or the slim `agency-hook`.
pub fn hook_program(
    program: &Path,
    repo: &Repo,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: &str,
) -> HookRun {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in [
        "AGENCY_DB",
        "AGENCY_CONFIG",
        "AGENCY_BRIEF",
        "AGENCY_TEACHBACK_MODE",
        "AGENCY_ROLLOUT_MODE",
        "AGENCY_GATE_LOG",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    let mut child = command.spawn().expect("spawn agency hook");
    let mut pipe = child.stdin.take().expect("stdin");
    // The hook may answer before reading everything; a broken pipe is not a failure.
    let _ = pipe.write_all(stdin.as_bytes());
    drop(pipe);
    let out = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "agency hook panicked: {stderr}");
    HookRun {
        code: out.status.code(),
        json: serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        stderr,
    }
}

/// Whether to run an end-to-end test needing `program`: yes when it is installed; when it is not, the
/// test is skipped loudly, unless AGENCY_REQUIRE_E2E=1 (CI) makes that a failure.
pub fn e2e_client(program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| is_executable(&dir.join(program))));
    if found {
        return true;
    }
    let required = std::env::var("AGENCY_REQUIRE_E2E").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "`{program}` is not installed and AGENCY_REQUIRE_E2E=1: install it (see .ci/run) to run the end-to-end gate tests"
    );
    eprintln!(
        "\n*** SKIPPED: `{program}` is not on PATH, so the end-to-end teachback gate test against the real client \
         did not run. Install it (see .ci/run) or set AGENCY_REQUIRE_E2E=1 to make this a failure. ***\n"
    );
    false
}

fn is_executable(path: &Path) -> bool {
    path.is_file()
}
