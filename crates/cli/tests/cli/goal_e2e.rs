//! End to end with the real Claude Code CLI against the fake Anthropic server, with the goal hooks
//! registered: the session is kept from stopping while its goal is open (the loop judge, asked with the
//! session's model, not fooled by a claim of being done), does the work, signs it off with `agency goal
//! complete`, and is then let stop; a session that asks its user is let stop by the loop judge.

use std::time::Duration;

use agency_testkit::{FakeAnthropic, Reply};
use serde_json::{Value, json};

use crate::hook_claude::{claude_command, run_with_deadline};
use crate::hook_support::e2e_client;
use crate::support::Repo;

const JUDGE: &str = "replies:\n  - role: judge\n    reply: {text: \"value.txt says fixed.\\nVERDICT: accept\\nmissing: none\"}\n";

#[test]
fn claude_code_is_kept_working_until_its_goal_is_signed_off() {
    if !e2e_client("claude") {
        return;
    }
    let repo = Repo::initialised();
    std::fs::write(repo.path().join("value.txt"), "broken\n").unwrap();
    std::fs::create_dir_all(repo.path().join("tests")).unwrap();
    std::fs::write(repo.path().join("tests/check.sh"), "grep -qx fixed value.txt\n").unwrap();
    std::fs::write(repo.path().join("judge.yaml"), JUDGE).unwrap();
    repo.git(&["add", "value.txt", "tests", "judge.yaml"]);
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

    let agency = env!("CARGO_BIN_EXE_agency");
    let sign_off = format!(
        "echo fixed > value.txt && git add value.txt && git commit -q -m 'fix the value' && {agency} goal complete fix-the-value-1 --path value.txt --script judge.yaml"
    );
    let server = FakeAnthropic::start(vec![
        // Claims done at once: the Stop hook sends it back to work.
        Reply::text("All done."),
        Reply::tool_use(
            "Bash",
            json!({"command": sign_off, "description": "fix, commit and sign off"}),
        ),
        Reply::text("Signed off."),
    ])
    .expect("fake server");
    // The loop judge, asked by the Stop hook with the session's model, is not fooled by "All done.".
    server.set_rule(
        "agency's loop judge",
        vec![Reply::text(r#"{"done": false, "reason": "claims done without a sign-off"}"#); 4],
    );
    let hook = json!([{"hooks": [{"type": "command", "command": format!("{agency} hook"), "timeout": 60}]}]);
    let settings = json!({"hooks": {"SessionStart": hook, "Stop": hook}});
    let home = tempfile::tempdir().unwrap();
    let mut command = claude_command(&repo, &server, "fix the value", &settings, home.path());
    command
        .args(["--allowedTools", "Bash"])
        .env("AGENCY_GOAL_STOP_BUDGET", "4")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid");
    let out = run_with_deadline(command, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "claude failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let judged: Vec<Value> = server
        .requests()
        .into_iter()
        .filter(|r| r.body.to_string().contains("agency's loop judge"))
        .map(|r| r.body)
        .collect();
    let requests: Vec<Value> = server
        .message_requests()
        .into_iter()
        .filter(|r| !r.to_string().contains("agency's loop judge"))
        .collect();
    // Asked once, before the one continuation, with the model the session runs.
    assert_eq!(judged.len(), 1, "{judged:#?}\n{stdout}");
    assert_eq!(judged[0]["model"], requests[0]["model"]);
    assert!(judged[0].to_string().contains("All done."));
    let bodies: Vec<String> = requests.iter().map(|r| r.to_string()).collect();
    // The session start carried the goal summary, and the early "All done." was sent back with the gap.
    assert!(
        bodies[0].contains("[fix-the-value-1] Fix the value"),
        "{}",
        bodies[0]
    );
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("have no sign-off yet") && b.contains("not signed off yet")),
        "the Stop hook's reason never reached the model: {bodies:#?}"
    );
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(plan.contains("status: done"), "{plan}\n{stdout}");
    assert!(plan.contains("fix-the-value-1 signed off at "), "{plan}");
    // Signed off, the session was let stop: no request after the final text.
    assert_eq!(requests.len(), 3, "{bodies:#?}");
}

#[test]
fn the_loop_judge_lets_a_claude_code_session_that_asks_its_user_stop() {
    if !e2e_client("claude") {
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
    let server = FakeAnthropic::start(vec![
        Reply::text("Which file holds the value: value.txt or VALUE?"),
        Reply::text("(a continuation: should not be asked for)"),
    ])
    .expect("fake server");
    server.set_rule(
        "agency's loop judge",
        vec![Reply::text(
            r#"{"done": true, "reason": "asks the user which file holds the value"}"#,
        )],
    );
    let agency = env!("CARGO_BIN_EXE_agency");
    repo.agency(&["goal", "install-hooks", "--command", &format!("{agency} hook")])
        .success();
    let home = tempfile::tempdir().unwrap();
    let command = claude_command(&repo, &server, "fix the value", &json!({}), home.path());
    let out = run_with_deadline(command, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "claude failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let requests: Vec<Value> = server
        .message_requests()
        .into_iter()
        .filter(|r| !r.to_string().contains("agency's loop judge"))
        .collect();
    // One turn: the judge paused the loop, so the Stop hook did not send the session back to work.
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(
        plan.contains("loop paused by the loop judge: asks the user which file holds the value"),
        "{plan}"
    );
}
