//! The goal hooks through the real `agency hook`: the byte-stable summary at session start and after
//! compaction, the stale-plan reminder, and the Stop hook that keeps a session working while a goal is open,
//! within its budget and honouring `stop_hook_active`.

use serde_json::{Value, json};

use agency_testkit::{FakeAnthropic, Reply};

use crate::hook_support::hook;
use crate::support::Repo;

const PLAN: &str = "# Plan: value\n\n## Goal: Fix the value\n<!-- id: fix-1 -->\nstatus: active\ndone_when: value.txt says fixed\nverify: sh tests/check.sh\n- [ ] fix it\n\n## Log\n- 2026-11-22 03:00  fix-1 added\n";

fn with_plan() -> Repo {
    let repo = Repo::initialised();
    std::fs::write(repo.path().join("plan.md"), PLAN).unwrap();
    repo
}

fn event(repo: &Repo, name: &str, extra: Value) -> String {
    let mut event = json!({"hook_event_name": name, "session_id": "s-1", "cwd": repo.path()});
    if let (Some(event), Some(extra)) = (event.as_object_mut(), extra.as_object()) {
        event.extend(extra.clone());
    }
    event.to_string()
}

#[test]
fn session_start_and_compaction_inject_the_same_summary() {
    let repo = with_plan();
    let start = hook(
        &repo,
        &[],
        &event(&repo, "SessionStart", json!({"source": "startup"})),
    );
    assert_eq!(start.code, Some(0));
    let context = start.json["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(start.json["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(
        context.starts_with("Active goals in plan.md: 1 (open 0, done 0, cancelled 0)\n"),
        "{context}"
    );
    assert!(context.contains("[fix-1] Fix the value\ndone_when: value.txt says fixed\n"));
    let compact = hook(
        &repo,
        &[],
        &event(&repo, "SessionStart", json!({"source": "compact"})),
    );
    assert_eq!(
        compact.json["hookSpecificOutput"]["additionalContext"],
        context.as_str()
    );
    let post = hook(&repo, &[], &event(&repo, "PostCompact", json!({})));
    assert_eq!(
        post.json["hookSpecificOutput"]["additionalContext"],
        context.as_str()
    );
}

#[test]
fn the_reminder_comes_after_n_edits_without_a_plan_update() {
    let repo = with_plan();
    let env = [("AGENCY_GOAL_REMINDER_EVERY", "3")];
    let write = |path: &str| {
        event(
            &repo,
            "PostToolUse",
            json!({"tool_name": "Write", "tool_input": {"file_path": repo.path().join(path), "content": "x"}}),
        )
    };
    assert_eq!(hook(&repo, &env, &write("a.txt")).json, Value::Null);
    assert_eq!(hook(&repo, &env, &write("b.txt")).json, Value::Null);
    // Reads never count.
    let read = event(
        &repo,
        "PostToolUse",
        json!({"tool_name": "Read", "tool_input": {"file_path": "a.txt"}}),
    );
    assert_eq!(hook(&repo, &env, &read).json, Value::Null);
    let third = hook(&repo, &env, &write("c.txt"));
    let reminder = third.json["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        reminder.starts_with("<system-reminder>\nagency goals:"),
        "{reminder}"
    );
    // Updating plan.md resets the count.
    hook(&repo, &env, &write("d.txt"));
    hook(&repo, &env, &write("e.txt"));
    assert_eq!(hook(&repo, &env, &write("plan.md")).json, Value::Null);
    assert_eq!(hook(&repo, &env, &write("f.txt")).json, Value::Null);
}

#[test]
fn stop_is_blocked_while_a_goal_is_open_until_the_budget_is_spent() {
    let repo = with_plan();
    let env = [("AGENCY_GOAL_STOP_BUDGET", "2")];
    let stop = |active: bool| event(&repo, "Stop", json!({"stop_hook_active": active}));
    let first = hook(&repo, &env, &stop(false));
    assert_eq!(first.json["decision"], "block", "{first:?}");
    let reason = first.json["reason"].as_str().unwrap();
    assert!(
        reason.contains("[fix-1] Fix the value") && reason.contains("not signed off yet"),
        "{reason}"
    );
    assert!(reason.contains("continuation 1 of 2"), "{reason}");
    assert_eq!(hook(&repo, &env, &stop(true)).json["decision"], "block");
    // Budget spent: the session may stop, and the plan's log says why.
    assert_eq!(hook(&repo, &env, &stop(true)).json, Value::Null);
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(
        plan.contains("session stopped with goals open (fix-1): its stop budget of 2"),
        "{plan}"
    );
    // A new turn (stop_hook_active false) starts a fresh budget.
    assert_eq!(hook(&repo, &env, &stop(false)).json["decision"], "block");
}

#[test]
fn a_goal_done_by_hand_still_holds_the_session_and_cancelled_goals_do_not() {
    let repo = with_plan();
    let done = PLAN.replace("status: active", "status: done");
    std::fs::write(repo.path().join("plan.md"), &done).unwrap();
    let stop = event(&repo, "Stop", json!({"stop_hook_active": false}));
    let run = hook(&repo, &[], &stop);
    assert!(
        run.json["reason"].as_str().unwrap().contains("unsigned"),
        "{run:?}"
    );
    std::fs::write(
        repo.path().join("plan.md"),
        PLAN.replace("status: active", "status: cancelled"),
    )
    .unwrap();
    assert_eq!(hook(&repo, &[], &stop).json, Value::Null);
}

#[test]
fn install_hooks_registers_the_goal_events() {
    let repo = Repo::initialised();
    repo.agency(&["goal", "install-hooks", "--command", "agency hook"])
        .success();
    let text = std::fs::read_to_string(repo.path().join(".claude/settings.json")).unwrap();
    let settings: Value = serde_json::from_str(&text).unwrap();
    for event in ["SessionStart", "PostCompact", "PostToolUse", "Stop"] {
        assert_eq!(
            settings["hooks"][event][0]["hooks"][0]["command"], "agency hook",
            "{text}"
        );
    }
}

/// `agency goal install-hooks` in `repo` with `PATH` set to `path`; its stdout.
fn install_hooks_with_path(repo: &Repo, path: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agency"))
        .args(["goal", "install-hooks"])
        .current_dir(repo.path())
        .env_remove("AGENCY_DB")
        .env_remove("AGENCY_CONFIG")
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stop_command(settings: &std::path::Path) -> String {
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(settings).unwrap()).unwrap();
    settings["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn install_hooks_writes_bare_agency_to_the_shared_settings_only_when_it_is_on_path() {
    // agency on PATH is this binary: `agency hook` in the committed settings, no path of this machine.
    let repo = Repo::initialised();
    let here = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_agency"), here.path().join("agency")).unwrap();
    let stdout = install_hooks_with_path(&repo, &format!("{}:/usr/bin:/bin", here.path().display()));
    assert!(
        stdout.contains(".claude/settings.json") && stdout.contains("agency is on PATH"),
        "{stdout}"
    );
    assert_eq!(
        stop_command(&repo.path().join(".claude/settings.json")),
        "agency hook"
    );
    assert!(!repo.path().join(".claude/settings.local.json").exists());

    // Not on PATH: this binary's absolute path, in this machine's own settings, and it says so.
    let repo = Repo::initialised();
    let stdout = install_hooks_with_path(&repo, "/usr/bin:/bin");
    assert!(
        stdout.contains(".claude/settings.local.json") && stdout.contains("agency is not on PATH"),
        "{stdout}"
    );
    assert_eq!(
        stop_command(&repo.path().join(".claude/settings.local.json")),
        format!("{} hook", env!("CARGO_BIN_EXE_agency"))
    );
    assert!(!repo.path().join(".claude/settings.json").exists());
}

#[test]
fn without_a_session_id_only_the_first_stop_is_blocked() {
    let repo = with_plan();
    let stop = |active: bool| {
        json!({"hook_event_name": "Stop", "cwd": repo.path(), "stop_hook_active": active}).to_string()
    };
    assert_eq!(hook(&repo, &[], &stop(false)).json["decision"], "block");
    assert_eq!(hook(&repo, &[], &stop(true)).json, Value::Null);
}

/// A Claude Code transcript whose last assistant entry ran `model`.
fn transcript(repo: &Repo, model: &str) -> std::path::PathBuf {
    let path = repo.path().join(".agency/transcript.jsonl");
    let lines = [
        json!({"type": "user", "message": {"role": "user", "content": "fix the value"}}),
        json!({"type": "assistant", "message": {"model": model, "role": "assistant", "content": []}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n")).unwrap();
    path
}

#[test]
fn claude_code_s_stop_asks_the_loop_judge_with_the_session_s_model_and_a_pause_lasts_until_the_user_answers()
{
    let repo = with_plan();
    let server = FakeAnthropic::start(Vec::new()).expect("fake server");
    server.set_rule(
        "agency's loop judge",
        vec![Reply::text(
            r#"{"done": true, "reason": "asks which file holds the value"}"#,
        )],
    );
    let url = server.base_url();
    let env = [
        ("ANTHROPIC_BASE_URL", url.as_str()),
        ("ANTHROPIC_API_KEY", "dummy"),
    ];
    let path = transcript(&repo, "claude-session-model");
    let stop = event(
        &repo,
        "Stop",
        json!({"stop_hook_active": false, "transcript_path": path,
               "last_assistant_message": "Which file holds the value?"}),
    );
    // The judge pauses: the session may stop, and the user is told why.
    let paused = hook(&repo, &env, &stop);
    assert_eq!(paused.json.get("decision"), None, "{paused:?}");
    let message = paused.json["systemMessage"].as_str().unwrap();
    assert!(
        message.contains("paused by the loop judge: asks which file holds the value"),
        "{message}"
    );
    let judged = server.requests();
    assert_eq!(judged.len(), 1);
    assert_eq!(judged[0].body["model"], "claude-session-model");
    assert!(judged[0].body.to_string().contains("Which file holds the value?"));
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(plan.contains("loop paused by the loop judge"), "{plan}");
    // Paused, the next stop asks nobody.
    assert_eq!(hook(&repo, &env, &stop).json, Value::Null);
    assert_eq!(server.requests().len(), 1);
    // The user's next prompt resumes it: the judge (now "keep working") is asked and the stop is blocked.
    hook(
        &repo,
        &env,
        &event(&repo, "UserPromptSubmit", json!({"prompt": "value.txt"})),
    );
    let server = FakeAnthropic::start(Vec::new()).expect("fake server");
    server.set_rule(
        "agency's loop judge",
        vec![Reply::text(r#"{"done": false, "reason": "keeps working"}"#)],
    );
    let url = server.base_url();
    let env = [
        ("ANTHROPIC_BASE_URL", url.as_str()),
        ("ANTHROPIC_API_KEY", "dummy"),
    ];
    let blocked = hook(&repo, &env, &stop);
    assert_eq!(blocked.json["decision"], "block", "{blocked:?}");
    assert_eq!(blocked.json.get("systemMessage"), None, "{blocked:?}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_loop_judge_that_cannot_run_fails_open_and_says_so() {
    let repo = with_plan();
    let path = transcript(&repo, "claude-session-model");
    let stop = event(
        &repo,
        "Stop",
        json!({"stop_hook_active": false, "transcript_path": path, "last_assistant_message": "?"}),
    );
    // No key a hook can use (a subscription login): the loop goes on, and the user is told.
    let run = hook(&repo, &[("ANTHROPIC_API_KEY", "")], &stop);
    assert_eq!(run.json["decision"], "block", "{run:?}");
    let notice = run.json["systemMessage"].as_str().unwrap();
    assert!(
        notice.contains("loop judge could not run") && notice.contains("no ANTHROPIC_API_KEY"),
        "{notice}"
    );
    // A server that answers nonsense: still the block.
    let server = FakeAnthropic::start(vec![Reply::text("I think it should stop.")]).expect("fake server");
    let url = server.base_url();
    let env = [
        ("ANTHROPIC_BASE_URL", url.as_str()),
        ("ANTHROPIC_API_KEY", "dummy"),
    ];
    let run = hook(&repo, &env, &stop);
    assert_eq!(run.json["decision"], "block", "{run:?}");
    assert_eq!(server.requests().len(), 1);
    // Turned off: nobody is asked.
    let off = [("AGENCY_GOAL_LOOP_JUDGE", "off"), env[0], env[1]];
    assert_eq!(hook(&repo, &off, &stop).json["decision"], "block");
    assert_eq!(server.requests().len(), 1);
}
