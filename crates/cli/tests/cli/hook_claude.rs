//! End to end with the real Claude Code CLI (harness/PROTOCOLS.md §2, §4, §6) against the fake Anthropic
//! server from `agency-testkit`, `agency hook` registered through `--settings`, in the default permission
//! mode: a missing or broken hook answer means "denied", so only the gate's explicit allow lets a Write run.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use agency_testkit::{FakeAnthropic, Reply};
use serde_json::{Value, json};

use crate::hook_support::{activate, e2e_client, start_brief};
use crate::support::Repo;

fn write_hello(repo: &Repo) -> Vec<Reply> {
    vec![
        Reply::tool_use(
            "Write",
            json!({"file_path": repo.path().join("hello.txt"), "content": "hi"}),
        ),
        Reply::text("done"),
    ]
}

/// Runs `claude -p` in the repository with an isolated HOME and the hook command given, as an agent the
/// runner started for `brief`.
fn claude(repo: &Repo, server: &FakeAnthropic, hook_command: &str, brief: &str) -> Output {
    let db = repo.db();
    let db = db.to_str().expect("utf-8 path");
    claude_with(
        repo,
        server,
        hook_command,
        &[("AGENCY_BRIEF", brief), ("AGENCY_DB", db)],
        &[],
    )
}

/// Runs `claude -p` with extra environment variables and arguments.
fn claude_with(
    repo: &Repo,
    server: &FakeAnthropic,
    hook_command: &str,
    env: &[(&str, &str)],
    args: &[&str],
) -> Output {
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": hook_command, "timeout": 10}]}]}});
    claude_settings(repo, server, &settings, env, args)
}

/// Runs `claude -p "write hello"` in the repository with an isolated HOME, these `--settings`, extra
/// environment variables and arguments.
pub fn claude_settings(
    repo: &Repo,
    server: &FakeAnthropic,
    settings: &Value,
    env: &[(&str, &str)],
    args: &[&str],
) -> Output {
    let home = tempfile::tempdir().expect("home");
    let mut command = claude_command(repo, server, "write hello", settings, home.path());
    command.envs(env.iter().copied()).args(args);
    run_with_deadline(command, Duration::from_secs(60))
}

/// `claude -p PROMPT` in the repository, streaming JSON, with these `--settings`, talking to `server` and
/// nothing else, with `home` as its HOME and no other environment but PATH: ready for more arguments and
/// variables, then [`run_with_deadline`].
pub fn claude_command(
    repo: &Repo,
    server: &FakeAnthropic,
    prompt: &str,
    settings: &Value,
    home: &Path,
) -> Command {
    let mut command = Command::new("claude");
    command
        .args([
            "-p",
            prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            "--settings",
        ])
        .arg(settings.to_string())
        .current_dir(repo.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TERM", "dumb")
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "dummy")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// The first tool result Claude Code sent back that is the teachback gate's denial, if any.
pub fn gate_denial(server: &FakeAnthropic) -> Option<Value> {
    server.tool_results().into_iter().find(|r| {
        r["content"]
            .as_str()
            .is_some_and(|c| c.contains("teachback gate:"))
    })
}

/// Waits for the child, killing it past the deadline so a hung client fails the test instead of CI.
pub fn run_with_deadline(mut command: Command, deadline: Duration) -> Output {
    let mut child = command.spawn().expect("spawn client");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "client ran past {deadline:?}:\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn agency_hook() -> String {
    format!("{} hook", env!("CARGO_BIN_EXE_agency"))
}

pub fn assert_ran(out: &Output) {
    assert!(
        out.status.success(),
        "claude failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn hello_exists(repo: &Repo) -> bool {
    Path::new(&repo.path().join("hello.txt")).exists()
}

#[test]
fn claude_code_write_is_denied_until_the_teachback_is_approved() {
    if !e2e_client("claude") {
        return;
    }
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let server = FakeAnthropic::start(write_hello(&repo)).expect("fake server");

    let out = claude(&repo, &server, &agency_hook(), &brief);
    assert_ran(&out);
    assert!(
        !hello_exists(&repo),
        "the Write ran while the teachback was pending"
    );
    let denial = gate_denial(&server).unwrap_or_else(|| {
        panic!(
            "the denial reason never reached the model: {:#?}",
            server.tool_results()
        )
    });
    assert_eq!(denial["is_error"], true);
    assert!(
        denial["content"]
            .as_str()
            .unwrap()
            .contains("while the teachback is pending"),
        "{denial}"
    );

    activate(&repo, &brief);
    let out = claude(&repo, &server, &agency_hook(), &brief);
    assert_ran(&out);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("hello.txt")).unwrap(),
        "hi"
    );
}

#[test]
fn claude_code_write_is_denied_when_the_hook_is_broken() {
    if !e2e_client("claude") {
        return;
    }
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    // Even an approved brief: with no answer from the gate, nothing may be written.
    activate(&repo, &brief);
    let server = FakeAnthropic::start(write_hello(&repo)).expect("fake server");
    let out = claude(&repo, &server, "/nonexistent/agency hook", &brief);
    assert_ran(&out);
    assert!(!hello_exists(&repo), "a broken hook let the Write through");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"permission_denials\":[{\"tool_name\":\"Write\""),
        "{stdout}"
    );
}

#[test]
fn claude_code_plain_session_bound_with_teachback_start() {
    if !e2e_client("claude") {
        return;
    }
    let repo = Repo::initialised();
    let session = "0b7c3f9e-5a1d-4c2e-9f00-3d2a1b4c5e6f";
    repo.agency(&[
        "teachback",
        "start",
        "--title",
        "write hello",
        "--variety",
        "2,2,2,2",
        "--session",
        session,
    ])
    .success();
    let server = FakeAnthropic::start(write_hello(&repo)).expect("fake server");
    // No AGENCY_BRIEF or AGENCY_DB: the hook finds .agency/ from the session's cwd and the brief through
    // the session's binding.
    let out = claude_with(&repo, &server, &agency_hook(), &[], &["--session-id", session]);
    assert_ran(&out);
    assert!(
        !hello_exists(&repo),
        "the Write ran in a bound session whose teachback is pending"
    );
    assert!(gate_denial(&server).is_some(), "{:#?}", server.tool_results());
}
