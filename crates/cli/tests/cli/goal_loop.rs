//! `agency goal loop` and `agency goal judge`, the controls pi's `/goal` and `/judge model` call: a paused or
//! cleared loop lets the Stop hook stay silent, resume and start bring it back (start with its count
//! reset), the loop judge's verdict pauses it only on a clear `done`, and a session's sign-off judge must be
//! a provider of team.yaml. And what pi's `/subgoal` and `/plan` call: `agency goal subgoal` and `agency
//! goal list --json`; and `agency goal agree`, the agreement point of plan mode.

use serde_json::{Value, json};

use crate::hook_support::hook;
use crate::support::Repo;

const PLAN: &str = "# Plan: value\n\n## Goal: Fix the value\n<!-- id: fix-1 -->\nstatus: active\ndone_when: value.txt says fixed\n- [ ] fix it\n\n## Log\n- 2026-11-22 03:00  fix-1 added\n";

fn with_plan() -> Repo {
    let repo = Repo::initialised();
    std::fs::write(repo.path().join("plan.md"), PLAN).unwrap();
    repo
}

/// The Stop hook's answer for session `s-1` (`active`: the stop follows a continuation).
fn stop(repo: &Repo, active: bool, extra: Value) -> Value {
    let mut event = json!({"hook_event_name": "Stop", "session_id": "s-1", "cwd": repo.path(),
        "stop_hook_active": active});
    if let (Some(event), Some(extra)) = (event.as_object_mut(), extra.as_object()) {
        event.extend(extra.clone());
    }
    let answer = hook(repo, &[], &event.to_string());
    assert_eq!(answer.code, Some(0));
    answer.json
}

fn control(repo: &Repo, action: &str) -> Value {
    let out = repo
        .agency(&["goal", "loop", action, "--session", "s-1", "--json"])
        .success();
    serde_json::from_str(&out.stdout()).unwrap()
}

#[test]
fn pause_resume_clear_and_start_control_the_stop_hook() {
    let repo = with_plan();
    let status = control(&repo, "status");
    assert_eq!(
        (status["loop"].as_str(), status["open_goals"].clone()),
        (Some("on"), json!(["fix-1"]))
    );
    assert_eq!(stop(&repo, false, json!({}))["decision"], "block");

    let paused = control(&repo, "pause");
    assert_eq!(paused["loop"], "paused");
    assert_eq!(paused["continuation"], Value::Null);
    assert_eq!(
        stop(&repo, true, json!({})),
        Value::Null,
        "a paused loop lets the session stop"
    );
    assert_eq!(stop(&repo, false, json!({})), Value::Null);

    // Resumed: on again with the count kept, and the continuation to send.
    let resumed = control(&repo, "resume");
    assert_eq!(resumed["loop"], "on");
    assert_eq!(resumed["continuations_used"], 1);
    assert!(
        resumed["continuation"]
            .as_str()
            .unwrap()
            .contains("Keep working toward the open goals in plan.md (fix-1)"),
        "{resumed}"
    );
    assert_eq!(stop(&repo, true, json!({}))["decision"], "block");

    let cleared = control(&repo, "clear");
    assert_eq!(
        (cleared["loop"].as_str(), cleared["continuations_used"].as_u64()),
        (Some("off"), Some(0))
    );
    assert_eq!(
        stop(&repo, false, json!({})),
        Value::Null,
        "a cleared loop is off"
    );

    let started = control(&repo, "start");
    assert_eq!(started["loop"], "on");
    assert_eq!(stop(&repo, false, json!({}))["decision"], "block");

    // The text form says the same.
    let text = repo
        .agency(&["goal", "loop", "status", "--session", "s-1"])
        .success()
        .stdout();
    assert!(
        text.contains("loop       on (1 of 8 continuations used this turn)"),
        "{text}"
    );
    assert!(text.contains("open       fix-1"), "{text}");
}

#[test]
fn the_loop_needs_a_session() {
    let repo = with_plan();
    let out = repo.agency(&["goal", "loop", "pause"]).fails_with(3);
    assert!(out.stderr().contains("no session given"), "{}", out.stderr());
}

#[test]
fn a_client_that_asks_gets_the_loop_judge_s_prompt_and_its_verdict_pauses_only_on_done() {
    let repo = with_plan();
    // Claude Code does not ask: its answer is unchanged.
    let plain = stop(&repo, false, json!({}));
    assert_eq!(plain["loopJudge"], Value::Null);
    let asked = stop(
        &repo,
        false,
        json!({"loop_judge": true, "last_assistant_message": "Should value.txt say FIXED or fixed?"}),
    );
    assert_eq!(asked["decision"], "block");
    let prompt = asked["loopJudge"]["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("Should value.txt say FIXED or fixed?"),
        "{prompt}"
    );
    assert!(prompt.contains("{\"done\": true or false"), "{prompt}");

    let verdict = |answer: &str| -> Value {
        use std::io::Write;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agency"))
            .args(["goal", "loop", "verdict", "--session", "s-1", "--json"])
            .current_dir(repo.path())
            .env_remove("AGENCY_DB")
            .env_remove("AGENCY_CONFIG")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(answer.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // Unreadable: the judge fails open.
    let open = verdict("I would stop here.");
    assert_eq!(open["verdict"]["action"], "continue");
    assert_eq!(open["loop"], "on");
    let keep = verdict(r#"{"done": false, "reason": "claims done, no sign-off"}"#);
    assert_eq!(keep["verdict"]["action"], "continue");
    let pause = verdict(r#"{"done": true, "reason": "asks which spelling"}"#);
    assert_eq!(
        (pause["verdict"]["action"].as_str(), pause["loop"].as_str()),
        (Some("pause"), Some("paused"))
    );
    assert_eq!(pause["paused_because"], "loop judge: asks which spelling");
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(
        plan.contains("session s-1: loop paused by the loop judge: asks which spelling"),
        "{plan}"
    );
    assert_eq!(stop(&repo, true, json!({})), Value::Null);
}

#[test]
fn a_session_s_judge_must_be_a_provider_of_team_yaml() {
    let repo = with_plan();
    let out = repo
        .agency(&["goal", "judge", "nowhere/gpt-5", "--session", "s-1"])
        .fails_with(3);
    assert!(
        out.stderr()
            .contains("team.yaml has no provider `nowhere` (it has: anthropic"),
        "{}",
        out.stderr()
    );
    let out = repo
        .agency(&["goal", "judge", "gpt-5", "--session", "s-1"])
        .fails_with(3);
    assert!(
        out.stderr().contains("expected PROVIDER/MODEL"),
        "{}",
        out.stderr()
    );

    let set = repo
        .agency(&["goal", "judge", "anthropic/claude-opus-4-1", "--session", "s-1"])
        .success();
    assert!(
        set.stdout()
            .contains("sign-off judge for session s-1: anthropic/claude-opus-4-1"),
        "{}",
        set.stdout()
    );
    assert_eq!(
        control(&repo, "status")["judge_model"],
        "anthropic/claude-opus-4-1"
    );
    let reset = repo
        .agency(&["goal", "judge", "model-ignored", "--reset", "--session", "s-1"])
        .fails_with(2);
    assert!(
        reset.stderr().contains("cannot be used with"),
        "{}",
        reset.stderr()
    );
    repo.agency(&["goal", "judge", "--reset", "--session", "s-1"])
        .success();
    assert_eq!(control(&repo, "status")["judge_model"], Value::Null);
}

#[test]
fn subgoal_adds_a_subtask_to_the_only_active_goal_or_the_one_named() {
    let repo = with_plan();
    repo.agency(&["goal", "subgoal", "add a regression test"])
        .success();
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(
        plan.contains("- [ ] fix it\n- [ ] add a regression test\n\n## Log"),
        "{plan}"
    );
    assert!(
        plan.contains("fix-1: subtask added: add a regression test"),
        "{plan}"
    );
    repo.agency(&[
        "goal",
        "add",
        "Second",
        "--done-when",
        "it works",
        "--failure-mode",
        "the test is gamed",
    ])
    .success();
    let out = repo.agency(&["goal", "subgoal", "which one?"]).fails_with(3);
    assert!(
        out.stderr().contains("2 active goals (fix-1, second-1)"),
        "{}",
        out.stderr()
    );
    // After the failure modes, unindented: a subtask, not a failure mode.
    repo.agency(&["goal", "subgoal", "write it", "--goal", "second-1"])
        .success();
    let listed: Value =
        serde_json::from_str(&repo.agency(&["goal", "list", "--json"]).success().stdout()).unwrap();
    assert_eq!(
        listed["goals"][1]["subtasks"],
        json!([{"text": "write it", "checked": false}])
    );
    assert_eq!(listed["goals"][0]["subtasks"][1]["text"], "add a regression test");
    assert_eq!(
        (
            listed["goals"][0]["status"].as_str(),
            listed["goals"][0]["signed"].as_bool()
        ),
        (Some("active"), Some(false))
    );
    let out = repo.agency(&["goal", "subgoal", "  "]).fails_with(3);
    assert!(out.stderr().contains("one non-empty line"), "{}", out.stderr());
}

#[test]
fn agree_sets_drafted_goals_active_and_refuses_any_other() {
    let repo = with_plan();
    repo.agency(&[
        "goal",
        "add",
        "Draft",
        "--done-when",
        "it works",
        "--status",
        "open",
    ])
    .success();
    let out = repo.agency(&["goal", "agree", "fix-1"]).fails_with(3);
    assert!(
        out.stderr()
            .contains("fix-1 is active, not open: only a drafted goal is agreed"),
        "{}",
        out.stderr()
    );
    repo.agency(&["goal", "agree", "draft-1"]).success();
    let listed: Value =
        serde_json::from_str(&repo.agency(&["goal", "list", "--json"]).success().stdout()).unwrap();
    assert_eq!(listed["goals"][1]["status"], "active");
    let plan = std::fs::read_to_string(repo.path().join("plan.md")).unwrap();
    assert!(plan.contains("draft-1 agreed"), "{plan}");
}
