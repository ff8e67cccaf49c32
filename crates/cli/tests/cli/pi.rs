//! End to end with the real pi coding agent (`pi -p`) and agency's pi extension (`integrations/pi`) against
//! the fake Anthropic server: the teachback gate on pi's `tool_call` (a Write denied while the teachback is
//! pending, allowed once it is approved, blocked when agency cannot answer), a plan.md goal signed off
//! through the extension's `CompleteGoal` tool by the judge `/judge model` chose (rejected by verify first,
//! then accepted), and the goal loop: kept working under the stop budget, paused by the loop judge, failing
//! open when the judge cannot answer, `/goal pause` and `/goal resume`. And pi as the T4 runtime of `agency
//! run`, on its tier's model at a local OpenAI-compatible server (the fake's chat completions), gated by
//! the extension it loads. A pi that refuses the prompt is tested with the runtime alone (agency-exec's
//! tests).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
use agency_testkit::{FakeAnthropic, FakeOpenAi, Reply};
use serde_json::{Value, json};

use crate::hook_claude::run_with_deadline;
use crate::hook_support::{activate, e2e_client, start_brief};
use crate::run_external::{REPORT, agency_run, branch_of};
use crate::support::{Repo, demo_dir, events, runtime_of};

/// The extension as a pi user installs it.
fn extension_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../integrations/pi")
}

/// Runs `pi -p PROMPT` in the repository with the agency extension, a private pi directory whose
/// models.json points at `server`, and `env`.
fn pi(repo: &Repo, server: &FakeAnthropic, prompt: &str, env: &[(&str, &str)]) -> Output {
    let home = repo.path().join(".agency/pi-home");
    std::fs::create_dir_all(&home).unwrap();
    let models = json!({"providers": {"fake": {
        "baseUrl": server.base_url(), "api": "anthropic-messages", "apiKey": "dummy",
        "models": [{"id": "fake-model"}]
    }}});
    std::fs::write(home.join("models.json"), models.to_string()).unwrap();
    let mut command = Command::new("pi");
    command
        .args(["-p", "--provider", "fake", "--model", "fake-model", "--no-skills"])
        .args([
            "--no-prompt-templates",
            "--no-context-files",
            "--no-session",
            "-e",
        ])
        .arg(extension_dir())
        .arg(prompt)
        .current_dir(repo.path())
        .env("HOME", &home)
        .env("PI_CODING_AGENT_DIR", &home)
        .env("PI_OFFLINE", "1")
        .env("PI_TELEMETRY", "0")
        .env("AGENCY_BIN", env!("CARGO_BIN_EXE_agency"))
        .env_remove("AGENCY_DB")
        .env_remove("AGENCY_BRIEF")
        .env_remove("AGENCY_CONFIG")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = run_with_deadline(command, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "pi failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The text of every tool result pi sent back, in order.
fn tool_results(server: &FakeAnthropic) -> Vec<String> {
    server
        .tool_results()
        .iter()
        .map(|r| match &r["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn write_hello() -> Vec<Reply> {
    vec![
        Reply::tool_use("write", json!({"path": "hello.txt", "content": "hi"})),
        Reply::text("done"),
    ]
}

#[test]
fn pi_write_is_denied_until_the_teachback_is_approved() {
    if !e2e_client("pi") {
        return;
    }
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let db = repo.db();
    let env = [
        ("AGENCY_BRIEF", brief.as_str()),
        ("AGENCY_DB", db.to_str().unwrap()),
    ];

    let server = FakeAnthropic::start(write_hello()).expect("fake server");
    pi(&repo, &server, "write hello", &env);
    assert!(
        !repo.path().join("hello.txt").exists(),
        "the write ran while the teachback was pending"
    );
    let results = tool_results(&server);
    assert!(
        results
            .iter()
            .any(|r| r.contains("while the teachback is pending")),
        "the gate's reason never reached the model: {results:#?}"
    );

    activate(&repo, &brief);
    let server = FakeAnthropic::start(write_hello()).expect("fake server");
    pi(&repo, &server, "write hello", &env);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("hello.txt")).unwrap(),
        "hi"
    );
}

#[test]
fn pi_write_is_blocked_when_agency_cannot_answer() {
    if !e2e_client("pi") {
        return;
    }
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    // Even an approved brief: without an answer from agency, nothing may be written.
    activate(&repo, &brief);
    let db = repo.db();
    let server = FakeAnthropic::start(write_hello()).expect("fake server");
    pi(
        &repo,
        &server,
        "write hello",
        &[
            ("AGENCY_BRIEF", brief.as_str()),
            ("AGENCY_DB", db.to_str().unwrap()),
            ("AGENCY_BIN", "/nonexistent/agency"),
        ],
    );
    assert!(!repo.path().join("hello.txt").exists());
    let results = tool_results(&server);
    assert!(
        results
            .iter()
            .any(|r| r.contains("could not decide") && r.contains("fails closed")),
        "{results:#?}"
    );
}

#[test]
fn pi_signs_a_goal_off_with_complete_goal_rejected_then_accepted() {
    if !e2e_client("pi") {
        return;
    }
    let repo = Repo::initialised();
    let server = FakeAnthropic::start(Vec::new()).expect("fake server");
    // The judge: a model of its own on the fake server, answering the sign-off prompt with a verdict.
    let team = repo.path().join(".agency/team.yaml");
    let config = std::fs::read_to_string(&team).unwrap();
    // The judge's provider is in team.yaml; the session picks its model with `/judge model`.
    let config = config.replacen(
        "providers:\n",
        &format!(
            "providers:\n  fake: {{kind: anthropic, base_url: '{}', api_key_env: FAKE_JUDGE_KEY}}\n",
            server.base_url()
        ),
        1,
    );
    assert!(config.contains("  fake: {kind: anthropic"), "{config}");
    std::fs::write(&team, config).unwrap();
    server.set_rule(
        "run by agency in a clean checkout",
        vec![Reply::text(
            "value.txt says fixed.\nVERDICT: accept\nmissing: none",
        )],
    );

    std::fs::write(repo.path().join("value.txt"), "broken\n").unwrap();
    std::fs::create_dir_all(repo.path().join("tests")).unwrap();
    std::fs::write(repo.path().join("tests/check.sh"), "grep -qx fixed value.txt\n").unwrap();
    repo.git(&["add", "value.txt", "tests"]);
    repo.git(&["commit", "-q", "-m", "a failing check"]);
    repo.agency(&[
        "goal",
        "add",
        "Fix the value",
        "--done-when",
        "value.txt says fixed",
        "--verify",
        "sh tests/check.sh",
    ])
    .success();
    repo.git(&["add", "plan.md"]);
    repo.git(&["commit", "-q", "-m", "plan: fix the value"]);

    let complete = || {
        Reply::tool_use(
            "CompleteGoal",
            json!({"id": "fix-the-value-1", "evidence": "value.txt says fixed", "paths": ["value.txt"]}),
        )
    };
    server.set_script(vec![
        // Claimed before the work: verify rejects it, no judge is asked.
        complete(),
        Reply::tool_use(
            "bash",
            json!({"command": "echo fixed > value.txt && git add value.txt && git commit -q -m 'fix the value'"}),
        ),
        complete(),
        Reply::text("Signed off."),
    ]);
    pi_rpc_until_idle(
        &repo,
        &server,
        &[
            "/judge model fake/fake-judge",
            "fix the value and sign the goal off",
        ],
        &[("FAKE_JUDGE_KEY", "dummy")],
    );

    let results = tool_results(&server);
    let position = |needle: &str| {
        results
            .iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("`{needle}` never reached pi's model: {results:#?}"))
    };
    let rejected = position("rejected   fix-the-value-1 (by verify)");
    let accepted = position("accepted   fix-the-value-1");
    assert!(rejected < accepted, "{results:#?}");
    assert!(results[accepted].contains("judge      accept"), "{results:#?}");
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(plan.contains("status: done"), "{plan}");
    assert!(plan.contains("fix-the-value-1 signed off at "), "{plan}");
    // The judge was the model `/judge model` chose for the session.
    let judged: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("run by agency in a clean checkout"))
        .map(|r| r.body["model"].clone())
        .collect();
    assert!(
        !judged.is_empty() && judged.iter().all(|m| m == "fake-judge"),
        "{judged:?}"
    );
    // The goal summary went in with the first request.
    let first = server.message_requests()[0].to_string();
    assert!(first.contains("[fix-the-value-1] Fix the value"), "{first}");
}

#[test]
fn complete_goal_is_judged_by_the_session_s_own_model_by_default() {
    if !e2e_client("pi") {
        return;
    }
    // team.yaml names no provider the fake server answers for: a judge from there could not be reached.
    let repo = Repo::initialised();
    let server = FakeAnthropic::start(Vec::new()).expect("fake server");
    server.set_rule(
        "Commit under review:",
        vec![Reply::text(
            "value.txt says fixed.\nVERDICT: accept\nmissing: none",
        )],
    );
    std::fs::write(repo.path().join("value.txt"), "broken\n").unwrap();
    repo.git(&["add", "value.txt"]);
    repo.git(&["commit", "-q", "-m", "broken value"]);
    repo.agency(&[
        "goal",
        "add",
        "Fix the value",
        "--done-when",
        "value.txt says fixed",
    ])
    .success();
    repo.git(&["add", "plan.md"]);
    repo.git(&["commit", "-q", "-m", "plan: fix the value"]);
    server.set_script(vec![
        Reply::tool_use(
            "bash",
            json!({"command": "echo fixed > value.txt && git add value.txt && git commit -q -m 'fix the value'"}),
        ),
        Reply::tool_use(
            "CompleteGoal",
            json!({"id": "fix-the-value-1", "evidence": "value.txt says fixed", "paths": ["value.txt"]}),
        ),
        Reply::text("Signed off."),
    ]);
    pi(&repo, &server, "fix the value and sign the goal off", &[]);

    let results = tool_results(&server);
    let signed = results
        .iter()
        .find(|r| r.contains("accepted   fix-the-value-1"))
        .unwrap_or_else(|| panic!("no accepted sign-off reached pi's model: {results:#?}"));
    assert!(
        signed.contains("(judge fake-model, the session's model)"),
        "{signed}"
    );
    // The judge's request went to pi's endpoint, named pi's model and carried pi's key for it.
    let judged: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.body.to_string().contains("Commit under review:"))
        .collect();
    assert!(!judged.is_empty(), "the judge was never asked");
    for request in &judged {
        assert_eq!(request.body["model"], "fake-model");
        assert_eq!(
            request.headers.get("x-api-key").map(String::as_str),
            Some("dummy")
        );
    }
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(plan.contains("fix-the-value-1 signed off at "), "{plan}");
}

pub(crate) const FIXED: &str = "\"\"\"Split a list into pages for display.\"\"\"\n\n\ndef page(items, number, size):\n    \
\"\"\"Return page `number` (counted from 1) of `items`, `size` items per page.\"\"\"\n    \
start = (number - 1) * size\n    return items[start:start + size]\n\n\ndef page_count(items, size):\n    \
\"\"\"How many pages `items` fill at `size` items per page.\"\"\"\n    return (len(items) + size - 1) // size\n";

/// The demo repository with T4 on pi and its model (`fast-cheap`) bound to `provider` / `model`, the
/// provider's line given whole.
pub(crate) fn repo_with_pi_implementers(provider_line: &str, provider: &str, model: &str) -> Repo {
    let (line, on) = runtime_of("t4", "pi");
    Repo::demo(&[
        (line, &on),
        ("providers:\n", &format!("providers:\n{provider_line}")),
        (
            "fast-cheap:\n    provider: anthropic           # a key of providers\n    model: claude-haiku-4-5 ",
            &format!("fast-cheap:\n    provider: {provider}\n    model: {model} "),
        ),
    ])
}

/// The tool results pi sent back in chat completions requests (`role: tool` messages), deduplicated.
pub(crate) fn chat_tool_results(server: &FakeOpenAi) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for body in server.chat_requests() {
        for message in body["messages"].as_array().into_iter().flatten() {
            if message["role"] == "tool" {
                let text = match &message["content"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                if !out.contains(&text) {
                    out.push(text);
                }
            }
        }
    }
    out
}

#[test]
fn a_run_with_pi_as_t4_on_a_local_openai_compatible_server_succeeds() {
    if !e2e_client("pi") {
        return;
    }
    let write = || Reply::tool_use("write", json!({"path": "pagination.py", "content": FIXED}));
    let submit = format!(
        "{} teachback submit --building 'a fix for page() so that pages count from 1' \
         --constraint 'do not edit test_pagination.py' --approach 'start at (number - 1) * size' \
         --most-likely-wrong 'whether page 0 must keep working' --least-confident 'the last page'",
        env!("CARGO_BIN_EXE_agency")
    );
    let server = FakeOpenAi::start(vec![
        // Denied by agency's extension: the teachback is blocking and has not been sent.
        write(),
        Reply::tool_use("bash", json!({"command": submit})),
        write(),
        Reply::text(REPORT),
    ])
    .expect("fake server");
    let repo = repo_with_pi_implementers(
        &format!("  local: {{kind: openai, base_url: '{}'}}\n", server.base_url()),
        "local",
        "qwen-local-7b",
    );
    let out = agency_run(&repo, &demo_dir().join("script.yaml"), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "agency run failed:\nstdout:\n{stdout}\nstderr:\n{stderr}\nrequests:\n{:#?}",
        server.chat_requests()
    );
    assert!(stdout.contains("t4: pi (configured)"), "{stdout}");
    // pi thought with T4's model from team.yaml, on the local server.
    let models: Vec<Value> = server
        .chat_requests()
        .iter()
        .map(|r| r["model"].clone())
        .collect();
    assert!(
        !models.is_empty() && models.iter().all(|m| m == "qwen-local-7b"),
        "{models:?}"
    );
    // pi loaded agency's extension: its first write was denied by the teachback gate, the teachback went
    // through `agency teachback submit` to the runner's reviewer, and the write after approval ran.
    let results = chat_tool_results(&server);
    let first = |needle: &str| {
        results
            .iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("`{needle}` never reached pi's model: {results:#?}"))
    };
    let pending = first("while the teachback is pending");
    let approved = first("Teachback approved by");
    assert!(pending < approved, "{results:#?}");
    assert!(
        server.chat_requests()[0]
            .to_string()
            .contains("teachback submit --building"),
        "the prompt does not say how to teach back"
    );
    let branch = branch_of(&stdout);
    assert!(
        repo.git_output(&["show", &format!("{branch}:pagination.py")])
            .contains("start = (number - 1) * size")
    );
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store.list_runs().unwrap()[0].clone();
    assert_eq!(run.status, RunStatus::Succeeded);
    // pi's usage is on the blackboard, against the run's budget.
    let usage = events(&store, run.id)
        .into_iter()
        .find(|e| e.kind == agency_core::EventKind::Usage && e.payload["provider"] == "pi/local")
        .expect("pi's usage");
    assert_eq!(usage.payload["model"], "qwen-local-7b");
    assert!(usage.payload["input_tokens"].as_u64().unwrap() > 0, "{usage:?}");
}

/// Runs pi in RPC mode (print mode exits after one agent run, so it cannot show the loop) and sends it
/// `messages` one by one (a prompt, or a command such as `/goal pause`), each once pi is quiet after the
/// last; returns the agent event types pi sent (`agent_start`, `agent_end`).
fn pi_rpc_until_idle(
    repo: &Repo,
    server: &FakeAnthropic,
    messages: &[&str],
    env: &[(&str, &str)],
) -> Vec<String> {
    pi_rpc_events(repo, server, messages, &[], env)
        .iter()
        .filter_map(|event| event["type"].as_str())
        .filter(|kind| matches!(*kind, "agent_start" | "agent_end"))
        .map(str::to_owned)
        .collect()
}

/// [`pi_rpc_until_idle`], returning every event pi sent; its dialogs (`select`, `confirm`, `input`) are
/// answered with `answers` in order (each merged into the `extension_ui_response`).
fn pi_rpc_events(
    repo: &Repo,
    server: &FakeAnthropic,
    messages: &[&str],
    answers: &[Value],
    env: &[(&str, &str)],
) -> Vec<Value> {
    use std::io::{BufRead, BufReader, Write};
    let home = repo.path().join(".agency/pi-home");
    std::fs::create_dir_all(&home).unwrap();
    // A second model for the plan phase (`/plan-model`).
    let models = json!({"providers": {"fake": {
        "baseUrl": server.base_url(), "api": "anthropic-messages", "apiKey": "dummy",
        "models": [{"id": "fake-model"}, {"id": "fake-planner"}]
    }}});
    std::fs::write(home.join("models.json"), models.to_string()).unwrap();
    let mut child = Command::new("pi")
        .args([
            "--mode",
            "rpc",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-skills",
        ])
        .args([
            "--no-prompt-templates",
            "--no-context-files",
            "--no-session",
            "-e",
        ])
        .arg(extension_dir())
        .current_dir(repo.path())
        .env("HOME", &home)
        .env("PI_CODING_AGENT_DIR", &home)
        .env("PI_OFFLINE", "1")
        .env("AGENCY_BIN", env!("CARGO_BIN_EXE_agency"))
        .env_remove("AGENCY_DB")
        .env_remove("AGENCY_BRIEF")
        .env_remove("AGENCY_CONFIG")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start pi");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut types: Vec<String> = Vec::new();
    let mut events: Vec<Value> = Vec::new();
    let mut answers = answers.iter();
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    for message in messages {
        writeln!(stdin, "{}", json!({"type": "prompt", "message": message})).unwrap();
        let ends = |types: &[String]| types.iter().filter(|t| *t == "agent_end").count();
        let ends_before = ends(&types);
        // A prompt is answered by a run, a command by pi's response to it.
        let mut answered = false;
        // Then quiet: no line for a while, and no agent run under way.
        loop {
            let running = !answered || types.iter().filter(|t| *t == "agent_start").count() > ends(&types);
            let wait = if running {
                Duration::from_secs(60)
            } else {
                Duration::from_secs(6)
            };
            match received.recv_timeout(wait) {
                Ok(line) => {
                    let event: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                    if let Some(kind) = event["type"].as_str()
                        && matches!(kind, "agent_start" | "agent_end")
                    {
                        types.push(kind.to_owned());
                    }
                    answered |= if message.starts_with('/') {
                        event["type"] == "response"
                    } else {
                        ends(&types) > ends_before
                    };
                    if event["type"] == "extension_ui_request"
                        && matches!(
                            event["method"].as_str(),
                            Some("select" | "confirm" | "input" | "editor")
                        )
                    {
                        let mut answer = answers
                            .next()
                            .unwrap_or_else(|| panic!("an unexpected dialog: {event}"))
                            .clone();
                        answer["type"] = json!("extension_ui_response");
                        answer["id"] = event["id"].clone();
                        writeln!(stdin, "{answer}").unwrap();
                    }
                    events.push(event);
                }
                Err(_) => break,
            }
            assert!(
                std::time::Instant::now() < deadline,
                "pi ran past three minutes: {types:?}"
            );
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    events
}

/// Answers every loop-judge call on `server` with `verdict`.
fn loop_judge_answers(server: &FakeAnthropic, verdict: &str) {
    server.set_rule("agency's loop judge", vec![Reply::text(verdict); 8]);
}

/// The loop judge's calls that reached `server`.
fn loop_judge_calls(server: &FakeAnthropic) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("agency's loop judge"))
        .count()
}

#[test]
fn pi_is_kept_working_on_an_active_goal_until_the_stop_budget_is_spent() {
    if !e2e_client("pi") {
        return;
    }
    let repo = Repo::initialised();
    repo.agency(&[
        "goal",
        "add",
        "Fix the value",
        "--done-when",
        "value.txt says fixed",
    ])
    .success();
    repo.git(&["add", "plan.md"]);
    repo.git(&["commit", "-q", "-m", "plan: fix the value"]);
    // The model claims it is done at every turn, and never signs off; the loop judge is not fooled.
    let server = FakeAnthropic::start(vec![Reply::text("All done."); 6]).expect("fake server");
    loop_judge_answers(
        &server,
        r#"{"done": false, "reason": "claims done without a sign-off"}"#,
    );
    let runs = pi_rpc_until_idle(
        &repo,
        &server,
        &["fix the value"],
        &[("AGENCY_GOAL_STOP_BUDGET", "2")],
    );
    // The loop judge was asked before each forced continuation.
    assert_eq!(loop_judge_calls(&server), 2);
    // The first run, then two the Stop hook forced, then the spent budget let pi stop.
    assert_eq!(runs.iter().filter(|t| *t == "agent_end").count(), 3, "{runs:?}");
    let bodies: Vec<String> = server.message_requests().iter().map(|r| r.to_string()).collect();
    assert_eq!(bodies.len(), 3, "{bodies:#?}");
    assert!(
        bodies[1].contains("not signed off yet") || bodies[1].contains("have no sign-off yet"),
        "the stop hook's reason never reached the model: {}",
        bodies[1]
    );
    // The summary went in once: unchanged, it is not repeated.
    assert_eq!(
        bodies[2].matches("Active goals in plan.md").count(),
        1,
        "{}",
        bodies[2]
    );
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(plan.contains("status: active"), "{plan}");
}

/// A repository with one active goal, committed.
fn repo_with_an_active_goal() -> Repo {
    let repo = Repo::initialised();
    repo.agency(&[
        "goal",
        "add",
        "Fix the value",
        "--done-when",
        "value.txt says fixed",
    ])
    .success();
    repo.git(&["add", "plan.md"]);
    repo.git(&["commit", "-q", "-m", "plan: fix the value"]);
    repo
}

#[test]
fn the_loop_judge_pauses_a_pi_session_that_needs_its_user() {
    if !e2e_client("pi") {
        return;
    }
    let repo = repo_with_an_active_goal();
    let server = FakeAnthropic::start(vec![
        Reply::text("Which file holds the value: value.txt or VALUE?");
        4
    ])
    .expect("fake server");
    loop_judge_answers(
        &server,
        r#"{"done": true, "reason": "asks the user which file holds the value"}"#,
    );
    let runs = pi_rpc_until_idle(&repo, &server, &["fix the value"], &[]);
    // One run: the judge paused the loop, so the Stop hook's continuation was not sent.
    assert_eq!(runs.iter().filter(|t| *t == "agent_end").count(), 1, "{runs:?}");
    assert_eq!(loop_judge_calls(&server), 1);
    assert_eq!(server.message_requests().len(), 1);
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(
        plan.contains("loop paused by the loop judge: asks the user which file holds the value"),
        "{plan}"
    );
}

#[test]
fn a_loop_judge_that_cannot_answer_fails_open_and_the_budget_stops_the_loop() {
    if !e2e_client("pi") {
        return;
    }
    let repo = repo_with_an_active_goal();
    let server = FakeAnthropic::start(vec![Reply::text("All done."); 4]).expect("fake server");
    // Prose, not the JSON verdict: agency cannot read it, so the loop goes on.
    loop_judge_answers(&server, "I think the agent should probably stop now.");
    let runs = pi_rpc_until_idle(
        &repo,
        &server,
        &["fix the value"],
        &[("AGENCY_GOAL_STOP_BUDGET", "1")],
    );
    assert_eq!(runs.iter().filter(|t| *t == "agent_end").count(), 2, "{runs:?}");
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(!plan.contains("loop paused"), "{plan}");
    assert!(plan.contains("stop budget of 1 continuations is spent"), "{plan}");
}

#[test]
fn goal_pause_lets_pi_stop_and_goal_resume_sends_it_back_to_work() {
    if !e2e_client("pi") {
        return;
    }
    let repo = repo_with_an_active_goal();
    let server = FakeAnthropic::start(vec![Reply::text("All done."); 6]).expect("fake server");
    loop_judge_answers(
        &server,
        r#"{"done": false, "reason": "claims done without a sign-off"}"#,
    );
    let runs = pi_rpc_until_idle(
        &repo,
        &server,
        &["/goal pause", "fix the value", "/goal resume"],
        &[("AGENCY_GOAL_STOP_BUDGET", "1")],
    );
    // Paused: the first run ends with nothing forced. Resumed: the continuation starts a run, the Stop hook
    // forces one more (a budget of 1), then the spent budget lets pi stop.
    assert_eq!(runs.iter().filter(|t| *t == "agent_end").count(), 3, "{runs:?}");
    let bodies: Vec<String> = server.message_requests().iter().map(|r| r.to_string()).collect();
    assert_eq!(bodies.len(), 3, "{bodies:#?}");
    assert!(bodies[1].contains("the goal loop is on"), "{}", bodies[1]);
    assert!(bodies[2].contains("have no sign-off yet"), "{}", bodies[2]);
}

#[test]
fn the_extension_s_own_unit_tests_pass() {
    if !e2e_client("node") {
        return;
    }
    let out = Command::new("node")
        .arg("--test")
        .arg(extension_dir().join("test"))
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node --test integrations/pi/test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Not an empty directory that passes by running nothing.
    assert!(
        stdout.contains("# fail 0") && !stdout.contains("# pass 0"),
        "{stdout}"
    );
}

#[test]
fn subgoal_adds_a_subtask_and_plan_shows_the_task_list_widget() {
    if !e2e_client("pi") {
        return;
    }
    let repo = repo_with_an_active_goal();
    let server = FakeAnthropic::start(Vec::new()).expect("fake server");
    let events = pi_rpc_events(
        &repo,
        &server,
        &["/subgoal add a regression test", "/plan"],
        &[json!({"value": "Close"})],
        &[],
    );
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(plan.contains("- [ ] add a regression test"), "{plan}");
    let widget = events
        .iter()
        .find(|e| e["type"] == "extension_ui_request" && e["method"] == "setWidget")
        .unwrap_or_else(|| panic!("no widget: {events:#?}"));
    assert_eq!(
        widget["widgetLines"],
        json!([
            "plan.md: 1 active",
            "● [fix-the-value-1] Fix the value (active)",
            "    ☐ add a regression test"
        ]),
        "{widget}"
    );
    // No model call: both are commands.
    assert!(server.message_requests().is_empty());
}

#[test]
fn the_plan_widget_archives_finished_goals_and_cancels_one() {
    if !e2e_client("pi") {
        return;
    }
    let repo = repo_with_an_active_goal();
    repo.agency(&["goal", "add", "Old idea", "--done-when", "never"])
        .success();
    repo.agency(&["goal", "cancel", "old-idea-1", "--reason", "superseded"])
        .success();
    let server = FakeAnthropic::start(Vec::new()).expect("fake server");
    let events = pi_rpc_events(
        &repo,
        &server,
        &["/plan", "/plan"],
        &[
            json!({"value": "Archive completed (1)"}),
            json!({"value": "Cancel a goal"}),
            json!({"value": "[fix-the-value-1] Fix the value"}),
            json!({"value": "not needed after all"}),
        ],
        &[],
    );
    let selects: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "extension_ui_request" && e["method"] == "select")
        .collect();
    assert_eq!(
        selects[0]["options"],
        json!(["Close", "Archive completed (1)", "Cancel a goal"]),
        "{selects:#?}"
    );
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    // The cancelled goal moved, whole, under ## Archive at the end; the log says so.
    let (live, archived) = plan
        .split_once("## Archive\n")
        .unwrap_or_else(|| panic!("{plan}"));
    assert!(
        archived.contains("## Goal: Old idea\n<!-- id: old-idea-1 -->\nstatus: cancelled"),
        "{plan}"
    );
    assert!(!live.contains("old-idea-1 -->"), "{plan}");
    assert!(live.contains("archived old-idea-1"), "{plan}");
    // Then the widget's cancel: the active goal is cancelled with the reason given.
    assert!(
        live.contains("fix-the-value-1 cancelled: not needed after all"),
        "{plan}"
    );
    let widgets: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "extension_ui_request" && e["method"] == "setWidget")
        .collect();
    assert_eq!(
        widgets.last().unwrap()["widgetLines"][0],
        "plan.md: 1 cancelled · 1 cancelled hidden, 1 archived",
        "{widgets:#?}"
    );
    assert!(server.message_requests().is_empty());
}

#[test]
fn plan_mode_drafts_goals_read_only_and_ready_agrees_them_and_starts_the_loop() {
    if !e2e_client("pi") {
        return;
    }
    let repo = Repo::initialised();
    std::fs::write(repo.path().join("value.txt"), "broken\n").unwrap();
    let server = FakeAnthropic::start(vec![
        Reply::tool_use("read", json!({"path": "value.txt"})),
        Reply::tool_use(
            "DraftGoal",
            json!({"title": "Fix the value", "done_when": "value.txt says fixed",
                   "verify": "grep -qx fixed value.txt",
                   "failure_modes": ["value.txt is fixed in a copy only"],
                   "subtasks": ["write fixed to value.txt"]}),
        ),
        Reply::text("Drafted one goal."),
        Reply::text("Which spelling do you want?"),
    ])
    .expect("fake server");
    loop_judge_answers(&server, r#"{"done": true, "reason": "asks the user"}"#);
    let events = pi_rpc_events(
        &repo,
        &server,
        &["/plan make value.txt say fixed"],
        &[json!({"value": "Ready"}), json!({"confirmed": false})],
        &[],
    );
    let dialogs: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "extension_ui_request")
        .filter_map(|e| e["method"].as_str())
        .filter(|m| matches!(*m, "select" | "confirm"))
        .collect();
    assert_eq!(dialogs, ["select", "confirm"], "{events:#?}");
    let requests = server.message_requests();
    // Plan mode: only the reading tools and DraftGoal were offered.
    let tools = |request: &Value| -> Vec<String> {
        let mut names: Vec<String> = request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        names.sort();
        names
    };
    assert_eq!(tools(&requests[0]), ["DraftGoal", "find", "grep", "ls", "read"]);
    assert!(
        requests[0]
            .to_string()
            .contains("Objective: make value.txt say fixed")
    );
    // Ready: the drafted goal is agreed (active), and the loop's continuation starts the work with the
    // session's tools back, DraftGoal not among them.
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(plan.contains("status: active"), "{plan}");
    assert!(plan.contains("fix-the-value-1 agreed"), "{plan}");
    assert!(
        plan.contains("  - value.txt is fixed in a copy only\n- [ ] write fixed to value.txt"),
        "{plan}"
    );
    let work = requests.last().unwrap();
    assert!(work.to_string().contains("the goal loop is on"), "{work}");
    let work_tools = tools(work);
    assert!(
        work_tools.contains(&"write".to_owned()) && !work_tools.contains(&"DraftGoal".to_owned()),
        "{work_tools:?}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("value.txt")).unwrap(),
        "broken\n"
    );
}

#[test]
fn plan_mode_runs_on_the_sticky_plan_phase_model_and_the_work_on_the_session_s() {
    if !e2e_client("pi") {
        return;
    }
    let repo = Repo::initialised();
    let server = FakeAnthropic::start(vec![
        Reply::tool_use(
            "DraftGoal",
            json!({"title": "Fix the value", "done_when": "value.txt says fixed",
                   "failure_modes": ["fixed in a copy only"], "subtasks": []}),
        ),
        Reply::text("Drafted."),
        Reply::text("Which spelling?"),
    ])
    .expect("fake server");
    loop_judge_answers(&server, r#"{"done": true, "reason": "asks the user"}"#);
    pi_rpc_events(
        &repo,
        &server,
        &["/plan-model fake/fake-planner", "/plan fix the value"],
        &[json!({"value": "Ready"}), json!({"confirmed": false})],
        &[],
    );
    let models: Vec<Value> = server
        .message_requests()
        .iter()
        .filter(|r| !r.to_string().contains("agency's loop judge"))
        .map(|r| r["model"].clone())
        .collect();
    // Drafting (two requests) on the plan-phase model; after Ready, the work on the session's.
    assert_eq!(
        models,
        [json!("fake-planner"), json!("fake-planner"), json!("fake-model")],
        "{models:?}"
    );
    // Sticky: kept in pi's agent directory for the next session.
    let kept = std::fs::read_to_string(repo.path().join(".agency/pi-home/agency.json")).unwrap();
    assert!(kept.contains("\"planModel\": \"fake/fake-planner\""), "{kept}");
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(plan.contains("fix-the-value-1 agreed"), "{plan}");
}

#[test]
fn plan_mode_edit_by_hand_without_an_editor_edits_plan_md_inline_and_says_so() {
    if !e2e_client("pi") {
        return;
    }
    let repo = Repo::initialised();
    let server = FakeAnthropic::start(vec![
        Reply::tool_use(
            "DraftGoal",
            json!({"title": "Fix the value", "done_when": "value.txt says fixed",
                   "failure_modes": ["fixed in a copy only"], "subtasks": []}),
        ),
        Reply::text("Drafted."),
        Reply::text("Which spelling?"),
    ])
    .expect("fake server");
    loop_judge_answers(&server, r#"{"done": true, "reason": "asks the user"}"#);
    // The user tightens done_when by hand.
    let edited = "# Plan\n\n## Goal: Fix the value\n<!-- id: fix-the-value-1 -->\nstatus: open\n\
                  done_when: value.txt says exactly fixed, one line\nfailure_modes:\n  - fixed in a copy only\n\n\
                  ## Log\n- 2026-11-27 06:00  fix-the-value-1 added\n";
    let events = pi_rpc_events(
        &repo,
        &server,
        &["/plan fix the value"],
        &[
            json!({"value": "Edit by hand"}),
            json!({"value": edited}),
            json!({"value": "Ready"}),
            json!({"confirmed": false}),
        ],
        &[("EDITOR", ""), ("VISUAL", "")],
    );
    let notices: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "extension_ui_request" && e["method"] == "notify")
        .filter_map(|e| e["message"].as_str().map(str::to_owned))
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("neither $VISUAL nor $EDITOR is set, so plan.md is edited here")),
        "{notices:#?}"
    );
    let editor = events
        .iter()
        .find(|e| e["type"] == "extension_ui_request" && e["method"] == "editor")
        .unwrap_or_else(|| panic!("no editor dialog: {events:#?}"));
    assert!(
        editor["prefill"]
            .as_str()
            .unwrap_or_default()
            .contains("<!-- id: fix-the-value-1 -->"),
        "{editor}"
    );
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(
        plan.contains("done_when: value.txt says exactly fixed, one line"),
        "{plan}"
    );
    assert!(plan.contains("fix-the-value-1 agreed"), "{plan}");
    assert!(plan.contains("status: active"), "{plan}");
}

#[test]
fn plan_mode_cancel_withdraws_the_drafts() {
    if !e2e_client("pi") {
        return;
    }
    let repo = Repo::initialised();
    let server = FakeAnthropic::start(vec![
        Reply::tool_use(
            "DraftGoal",
            json!({"title": "Fix the value", "done_when": "value.txt says fixed",
                   "failure_modes": [], "subtasks": []}),
        ),
        Reply::text("Drafted."),
    ])
    .expect("fake server");
    pi_rpc_events(
        &repo,
        &server,
        &["/plan fix the value"],
        &[json!({"value": "Cancel"})],
        &[],
    );
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(plan.contains("status: cancelled"), "{plan}");
    assert!(
        plan.contains("fix-the-value-1 cancelled: plan not agreed"),
        "{plan}"
    );
    assert_eq!(server.message_requests().len(), 2);
}

#[test]
fn plan_mode_edit_withdraws_the_drafts_and_the_redraft_is_agreed() {
    if !e2e_client("pi") {
        return;
    }
    let repo = Repo::initialised();
    let draft = |verify: Option<&str>| {
        let mut input = json!({"title": "Fix the value", "done_when": "value.txt says fixed",
                               "failure_modes": ["fixed in a copy only"], "subtasks": []});
        if let Some(verify) = verify {
            input["verify"] = json!(verify);
        }
        Reply::tool_use("DraftGoal", input)
    };
    let server = FakeAnthropic::start(vec![
        draft(None),
        Reply::text("Drafted."),
        draft(Some("grep -qx fixed value.txt")),
        Reply::text("Redrafted with a verify command."),
        Reply::text("Which spelling?"),
    ])
    .expect("fake server");
    loop_judge_answers(&server, r#"{"done": true, "reason": "asks the user"}"#);
    pi_rpc_events(
        &repo,
        &server,
        &["/plan fix the value"],
        &[
            json!({"value": "Edit"}),
            json!({"value": "add a verify command"}),
            json!({"value": "Ready"}),
            json!({"confirmed": false}),
        ],
        &[],
    );
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(
        plan.contains("fix-the-value-1 cancelled: redrafted in plan mode"),
        "{plan}"
    );
    assert!(plan.contains("fix-the-value-2 agreed"), "{plan}");
    assert!(plan.contains("verify: grep -qx fixed value.txt"), "{plan}");
    let requests = server.message_requests();
    assert!(
        requests[2]
            .to_string()
            .contains("changed as your user asks: add a verify command"),
        "{}",
        requests[2]
    );
}
