//! The slim `agency-hook` binary answers every tool-gate event exactly as `agency hook` does (it is the
//! same library), hands the goal hooks' events to the `agency` beside it, blocks them when that is
//! missing, and is what `agency hook install` registers when it is installed beside `agency`.

use std::path::Path;

use serde_json::{Value, json};

use crate::hook_support::{HookRun, activate, hook, hook_program, pre_tool_use, start_brief};
use crate::support::Repo;

fn slim(repo: &Repo, env: &[(&str, &str)], stdin: &str) -> HookRun {
    hook_program(
        Path::new(env!("CARGO_BIN_EXE_agency-hook")),
        repo,
        &[],
        env,
        stdin,
    )
}

/// Both binaries on the same input: the same exit code, stdout and stderr.
fn same_answer(repo: &Repo, env: &[(&str, &str)], stdin: &str) -> HookRun {
    let full = hook(repo, env, stdin);
    let slim = slim(repo, env, stdin);
    assert_eq!(
        (&full.code, &full.json, &full.stderr),
        (&slim.code, &slim.json, &slim.stderr),
        "agency hook and agency-hook disagree on {stdin}"
    );
    slim
}

#[test]
fn the_slim_hook_answers_as_agency_hook_does() {
    let repo = Repo::initialised();
    let pending = start_brief(&repo, "2,2,2,2");
    let open = start_brief(&repo, "2,2,2,2");
    activate(&repo, &open);
    let write = pre_tool_use(
        &repo,
        "Write",
        json!({"file_path": repo.path().join("x.txt"), "content": "hi"}),
    );
    let read = pre_tool_use(&repo, "Read", json!({"file_path": "/etc/hosts"}));
    let rm = pre_tool_use(&repo, "Bash", json!({"command": "rm -rf ."}));

    // A runner-spawned agent (AGENCY_BRIEF): denied while pending, allowed once approved.
    assert_eq!(
        same_answer(&repo, &[("AGENCY_BRIEF", &pending)], &write).decision(),
        "deny"
    );
    assert_eq!(
        same_answer(&repo, &[("AGENCY_BRIEF", &pending)], &read).decision(),
        "allow"
    );
    assert_eq!(
        same_answer(&repo, &[("AGENCY_BRIEF", &pending)], &rm).decision(),
        "deny"
    );
    assert_eq!(
        same_answer(&repo, &[("AGENCY_BRIEF", &open)], &write).decision(),
        "allow"
    );
    // A brief that does not exist: fail closed, in both.
    let missing = same_answer(&repo, &[("AGENCY_BRIEF", "nosuchbrief")], &write);
    assert_eq!(missing.decision(), "deny");
    // Input that is no event: blocked for a runner's agent, a loud open gate in a plain session.
    let garbage = same_answer(&repo, &[("AGENCY_BRIEF", &pending)], "not json");
    assert_eq!(garbage.code, Some(2));
    let plain_garbage = same_answer(&repo, &[], "{}");
    assert!(
        plain_garbage.stderr.contains("the teachback gate did not run"),
        "{plain_garbage:?}"
    );

    // A plain session: unbound, no opinion; bound to a pending brief, denied.
    assert_eq!(same_answer(&repo, &[], &write).json, Value::Null);
    repo.agency(&["teachback", "start", "--brief", &pending, "--session", "sess-1"])
        .success();
    assert_eq!(same_answer(&repo, &[], &write).decision(), "deny");
    // TaskCreate without variety dimensions is refused under enforce.
    let task = pre_tool_use(&repo, "TaskCreate", json!({"subject": "s", "description": "d"}));
    assert_eq!(same_answer(&repo, &[], &task).decision(), "deny");
}

#[test]
fn goal_events_go_to_the_agency_beside_it_and_are_blocked_without_it() {
    let repo = Repo::initialised();
    let stop =
        json!({"hook_event_name": "Stop", "session_id": "s", "cwd": repo.path(), "stop_hook_active": false})
            .to_string();
    // Beside the agency it was built with: the goal hooks answer (nothing to say without goals).
    let beside = same_answer(&repo, &[], &stop);
    assert_eq!(beside.code, Some(0), "{beside:?}");

    // Alone in a directory: the event is blocked, and it says why.
    let alone = tempfile::tempdir().unwrap();
    let copy = alone.path().join("agency-hook");
    std::fs::copy(env!("CARGO_BIN_EXE_agency-hook"), &copy).unwrap();
    let blocked = hook_program(&copy, &repo, &[], &[], &stop);
    assert_eq!(blocked.code, Some(2), "{blocked:?}");
    assert!(blocked.stderr.contains("fail closed"), "{}", blocked.stderr);
    // Its own events need no agency.
    let read = pre_tool_use(&repo, "Read", json!({"file_path": "/etc/hosts"}));
    let brief = start_brief(&repo, "2,2,2,2");
    let answered = hook_program(&copy, &repo, &[], &[("AGENCY_BRIEF", &brief)], &read);
    assert_eq!(answered.decision(), "allow", "{answered:?}");
}

#[test]
fn install_registers_the_slim_hook_beside_agency() {
    let repo = Repo::initialised();
    let codex_home = tempfile::tempdir().unwrap();
    let home = codex_home.path().to_str().unwrap();
    repo.agency(&[
        "hook",
        "install",
        "--claude-code",
        "--codex",
        "--codex-home",
        home,
    ])
    .success();
    let slim = env!("CARGO_BIN_EXE_agency-hook");
    let local: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path().join(".claude/settings.local.json")).unwrap(),
    )
    .unwrap();
    for entry in [
        &local["hooks"]["PreToolUse"][0],
        &local["hooks"]["PostToolUse"][0],
    ] {
        let command = entry["hooks"][0]["command"].as_str().unwrap();
        assert!(command.contains(&format!("out=$({slim})")), "{command}");
    }
    let codex: Value =
        serde_json::from_str(&std::fs::read_to_string(codex_home.path().join("hooks.json")).unwrap())
            .unwrap();
    let command = codex["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(command.contains(&format!("out=$({slim})")), "{command}");
}
