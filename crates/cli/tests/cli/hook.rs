//! `agency hook` answering PreToolUse events through the real binary: the gate for a runner-spawned agent
//! (AGENCY_BRIEF), rollout modes and their records, TaskCreate validation, failure behaviour and install.

use agency_exec::runtime::hook_command::{self, Expect};
use serde_json::{Value, json};

use crate::hook_support::{TEACHBACK, hook, pre_tool_use, start_brief};
use crate::support::Repo;

fn write_event(repo: &Repo) -> String {
    pre_tool_use(
        repo,
        "Write",
        json!({"file_path": repo.path().join("x.txt"), "content": "hi"}),
    )
}

#[test]
fn a_pending_blocking_brief_denies_writes_and_allows_reads() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let env = [("AGENCY_BRIEF", brief.as_str())];
    let run = hook(&repo, &env, &write_event(&repo));
    assert_eq!((run.code, run.decision()), (Some(0), "deny"), "{run:?}");
    assert!(
        run.reason().contains("while the teachback is pending"),
        "{}",
        run.reason()
    );
    let read = hook(
        &repo,
        &env,
        &pre_tool_use(&repo, "Read", json!({"file_path": "/etc/hosts"})),
    );
    assert_eq!(read.decision(), "allow");
    let git = hook(
        &repo,
        &env,
        &pre_tool_use(&repo, "Bash", json!({"command": "git status"})),
    );
    assert_eq!(git.decision(), "allow");
    let rm = hook(
        &repo,
        &env,
        &pre_tool_use(&repo, "Bash", json!({"command": "rm -rf ."})),
    );
    assert_eq!(rm.decision(), "deny");
    // Non-tool events get no opinion.
    let stop = json!({"hook_event_name": "Stop", "session_id": "s", "stop_hook_active": false}).to_string();
    let run = hook(&repo, &env, &stop);
    assert_eq!((run.code, run.json.clone()), (Some(0), Value::Null));
}

#[test]
fn a_teachback_message_submits_and_approval_opens_the_gate() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let env = [("AGENCY_BRIEF", brief.as_str())];
    let rote = hook(
        &repo,
        &env,
        &pre_tool_use(
            &repo,
            "SendMessage",
            json!({"to": "lead", "message": "Teachback: got it"}),
        ),
    );
    assert_eq!(rote.decision(), "deny");
    assert!(rote.reason().contains("most_likely_wrong"), "{}", rote.reason());
    let sent = hook(
        &repo,
        &env,
        &pre_tool_use(&repo, "SendMessage", json!({"to": "lead", "message": TEACHBACK})),
    );
    assert_eq!(sent.decision(), "allow", "{sent:?}");
    let show = repo.agency(&["teachback", "show", &brief]).success().stdout();
    assert!(show.contains("state      under_review"), "{show}");
    assert!(show.contains("- Most likely wrong: the path"), "{show}");
    let waiting = hook(&repo, &env, &write_event(&repo));
    assert!(
        waiting.reason().contains("under review: wait"),
        "{}",
        waiting.reason()
    );
    repo.agency(&["teachback", "correct", &brief, "--item", "the file is hello.txt"])
        .success();
    let correcting = hook(&repo, &env, &write_event(&repo));
    assert!(
        correcting.reason().contains("1. the file is hello.txt"),
        "{}",
        correcting.reason()
    );
    assert_eq!(
        hook(
            &repo,
            &env,
            &pre_tool_use(&repo, "SendMessage", json!({"to": "lead", "message": TEACHBACK}))
        )
        .decision(),
        "allow"
    );
    repo.agency(&["teachback", "approve", &brief]).success();
    let open = hook(&repo, &env, &write_event(&repo));
    assert_eq!(open.decision(), "allow");
}

#[test]
fn advisory_briefs_are_allowed_and_their_teachback_recorded() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "1,1,1,1");
    let env = [("AGENCY_BRIEF", brief.as_str())];
    assert_eq!(hook(&repo, &env, &write_event(&repo)).decision(), "allow");
    hook(
        &repo,
        &env,
        &pre_tool_use(&repo, "SendMessage", json!({"to": "lead", "message": TEACHBACK})),
    );
    let show = repo.agency(&["teachback", "show", &brief]).success().stdout();
    assert!(show.contains("state      active"), "{show}");
    assert!(show.contains("mode       advisory (variety 4)"), "{show}");
}

#[test]
fn shadow_and_warn_let_calls_through_and_record_them() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let shadow = hook(
        &repo,
        &[("AGENCY_BRIEF", &brief), ("AGENCY_ROLLOUT_MODE", "shadow")],
        &write_event(&repo),
    );
    assert_eq!(shadow.decision(), "allow");
    assert!(
        shadow.json["systemMessage"].is_null(),
        "shadow is silent: {shadow:?}"
    );
    let warn = hook(
        &repo,
        &[("AGENCY_BRIEF", &brief), ("AGENCY_ROLLOUT_MODE", "warn")],
        &write_event(&repo),
    );
    assert_eq!(warn.decision(), "allow");
    let context = warn.json["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(context.contains("would be denied"), "{warn:?}");
    hook(&repo, &[("AGENCY_BRIEF", &brief)], &write_event(&repo));
    let report = repo.agency(&["teachback", "report"]).success().stdout();
    let short = &brief[brief.len() - 8..];
    assert!(
        report
            .lines()
            .any(|l| l.starts_with(short) && l.contains("Write") && l.ends_with("  2        1")),
        "{report}"
    );
}

#[test]
fn a_runners_agent_takes_the_rollout_from_its_environment_never_from_team_yaml() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    // What an agent would write to switch its gate off: ignored in a run, committed or not.
    std::fs::write(
        repo.path().join(".agency/team.yaml"),
        "teachback:\n  mode: shadow\n",
    )
    .unwrap();
    repo.commit("shadow");
    let with = |extra: &[(&str, &str)]| {
        let mut env = vec![("AGENCY_BRIEF", brief.as_str())];
        env.extend_from_slice(extra);
        hook(&repo, &env, &write_event(&repo))
    };
    // No mode passed by the runner: enforce.
    assert_eq!(with(&[]).decision(), "deny");
    assert_eq!(with(&[("AGENCY_TEACHBACK_MODE", "shadow")]).decision(), "deny");
    let warned = with(&[("AGENCY_ROLLOUT_MODE", "warn")]);
    assert_eq!(warned.decision(), "allow");
    assert!(warned.json["systemMessage"].is_string(), "{warned:?}");
    let bad = with(&[("AGENCY_ROLLOUT_MODE", "off")]);
    assert_eq!(bad.decision(), "deny");
    assert!(
        bad.reason()
            .contains("AGENCY_ROLLOUT_MODE: expected one of shadow, warn, enforce, found \"off\""),
        "{}",
        bad.reason()
    );
}

#[test]
fn a_plain_session_takes_the_rollout_from_the_committed_team_yaml() {
    let repo = Repo::initialised();
    repo.agency(&[
        "teachback",
        "start",
        "--title",
        "session work",
        "--variety",
        "2,2,2,2",
        "--session",
        "sess-1",
    ])
    .success();
    let team = repo.path().join(".agency/team.yaml");
    let decision = |env: &[(&str, &str)]| {
        let run = hook(&repo, env, &write_event(&repo));
        (run.decision().to_string(), run.json["systemMessage"].is_string())
    };
    let denied = ("deny".to_string(), false);
    let warned = ("allow".to_string(), true);
    // Not committed at all: the default, enforce, whatever the working tree says.
    std::fs::write(&team, "teachback:\n  mode: shadow\n").unwrap();
    assert_eq!(decision(&[]), denied);
    // Committed: that mode.
    std::fs::write(&team, "teachback:\n  mode: warn\n").unwrap();
    repo.commit("warn");
    assert_eq!(decision(&[]), warned);
    // An uncommitted edit, as an agent's would be, changes nothing.
    std::fs::write(&team, "teachback:\n  mode: shadow\n").unwrap();
    assert_eq!(decision(&[]), warned);
    // The variable in the hook's own environment still overrides it.
    assert_eq!(decision(&[("AGENCY_TEACHBACK_MODE", "enforce")]), denied);
}

#[test]
fn task_create_needs_variety_dimensions_and_gets_score_and_gates() {
    let repo = Repo::initialised();
    let bare = hook(
        &repo,
        &[],
        &pre_tool_use(&repo, "TaskCreate", json!({"subject": "s", "description": "d"})),
    );
    assert_eq!(bare.decision(), "deny");
    assert!(
        bare.reason().contains(r#""variety_dimensions": {"novelty": 1-4"#),
        "{}",
        bare.reason()
    );
    let dims = json!({"subject": "s", "description": "d",
        "metadata": {"variety_dimensions": {"novelty": 2, "scope": 2, "uncertainty": 1, "risk": 2}}});
    let ok = hook(&repo, &[], &pre_tool_use(&repo, "TaskCreate", dims));
    assert_eq!(ok.decision(), "allow");
    let updated = &ok.json["hookSpecificOutput"]["updatedInput"];
    assert_eq!(updated["metadata"]["variety_score"], 7);
    assert_eq!(updated["metadata"]["gates"]["teachback_mode"], "blocking");
    assert_eq!(updated["subject"], "s");
}

#[test]
fn runner_agents_fail_closed() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    // Malformed stdin: exit 2 blocks the call in both clients.
    for garbage in ["", "not json", "[1]", "{\"hook_event_name\": 7}"] {
        let run = hook(&repo, &[("AGENCY_BRIEF", &brief)], garbage);
        assert_eq!(run.code, Some(2), "{garbage:?}: {run:?}");
        assert!(
            run.stderr
                .contains("blocked because this agent was started by a runner"),
            "{}",
            run.stderr
        );
    }
    // Unknown brief, missing database, broken team.yaml: denied with the cause.
    let unknown = hook(&repo, &[("AGENCY_BRIEF", "ffffffff")], &write_event(&repo));
    assert_eq!(unknown.decision(), "deny");
    assert!(
        unknown.reason().contains("AGENCY_BRIEF=ffffffff"),
        "{}",
        unknown.reason()
    );
    let missing = hook(
        &repo,
        &[("AGENCY_BRIEF", &brief), ("AGENCY_DB", "/nonexistent/agency.db")],
        &write_event(&repo),
    );
    assert_eq!(missing.decision(), "deny");
    assert!(missing.reason().contains("fails closed"), "{}", missing.reason());
    std::fs::write(
        repo.path().join(".agency/team.yaml"),
        "teachback:\n  mode: block\n",
    )
    .unwrap();
    let bad = hook(&repo, &[("AGENCY_BRIEF", &brief)], &write_event(&repo));
    assert_eq!(bad.decision(), "deny");
    assert!(bad.reason().contains("teachback.mode"), "{}", bad.reason());
}

#[test]
fn plain_sessions_are_loud_and_configurable_when_the_gate_cannot_decide() {
    let repo = Repo::initialised();
    // Unbound, default policy: no opinion at all.
    let unbound = hook(&repo, &[], &write_event(&repo));
    assert_eq!((unbound.code, unbound.json.clone()), (Some(0), Value::Null));
    // Malformed input: stays out of the way, says so.
    let garbage = hook(&repo, &[], "{{{");
    assert_eq!(garbage.code, Some(0));
    assert!(
        garbage.stderr.contains("the teachback gate did not run"),
        "{garbage:?}"
    );
    // A broken team.yaml: open, loudly.
    std::fs::write(repo.path().join(".agency/team.yaml"), "teachback: [\n").unwrap();
    let broken = hook(&repo, &[], &write_event(&repo));
    assert_eq!(broken.code, Some(0));
    assert!(
        broken.json["systemMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("OPEN"),
        "{broken:?}"
    );
    // Policy deny: unbound sessions may only read.
    std::fs::write(
        repo.path().join(".agency/team.yaml"),
        "teachback:\n  unbound_session_default: deny\n",
    )
    .unwrap();
    let denied = hook(&repo, &[], &write_event(&repo));
    assert_eq!(denied.decision(), "deny");
    assert!(
        denied.reason().contains("agency teachback start"),
        "{}",
        denied.reason()
    );
    assert_eq!(
        hook(&repo, &[], &pre_tool_use(&repo, "Read", json!({}))).json,
        Value::Null
    );
}

#[test]
fn install_writes_claude_code_settings_and_codex_hooks_once() {
    let repo = Repo::initialised();
    let settings = repo.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    // Another tool's settings, and the goal hooks' PostToolUse entry (no matcher), are kept.
    let goal_entry = json!({"hooks": [{"type": "command", "command": "agency hook", "timeout": 10}]});
    std::fs::write(
        &settings,
        json!({"permissions": {"allow": ["Read"]}, "hooks": {"PostToolUse": [goal_entry.clone()]}})
            .to_string(),
    )
    .unwrap();
    repo.agency(&["hook", "install", "--command", "agency hook"])
        .success();
    repo.agency(&["hook", "install", "--command", "agency hook"])
        .success();
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        written["permissions"]["allow"][0], "Read",
        "other settings are kept"
    );
    // The hook runs wrapped, so that any failure of it blocks the call.
    let wrapped = hook_command::fail_closed("agency hook", Expect::AnyAnswer);
    assert_eq!(
        written["hooks"]["PreToolUse"],
        json!([{"hooks": [{"type": "command", "command": wrapped, "timeout": 10}]}])
    );
    assert_eq!(
        written["hooks"]["PostToolUse"],
        json!([goal_entry, {"matcher": "TaskCreate",
            "hooks": [{"type": "command", "command": wrapped, "timeout": 10}]}]),
        "TaskCreate opens briefs once installed, and installing twice adds nothing"
    );
    let codex_home = repo.path().join("codex-home");
    let home = codex_home.to_str().unwrap();
    repo.agency(&[
        "hook",
        "install",
        "--codex",
        "--codex-home",
        home,
        "--command",
        "agency hook",
    ])
    .success();
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(codex_home.join("hooks.json")).unwrap()).unwrap();
    assert_eq!(hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"], wrapped);
}

#[test]
fn plain_sessions_and_sub_agents_are_bound_with_teachback_start() {
    let repo = Repo::initialised();
    let out = repo
        .agency(&[
            "teachback",
            "start",
            "--title",
            "session work",
            "--variety",
            "2,2,2,2",
            "--session",
            "sess-1",
        ])
        .success()
        .stdout();
    assert!(out.contains("bound      session sess-1"), "{out}");
    let session_brief = out.split_whitespace().nth(1).unwrap().to_string();
    let denied = hook(&repo, &[], &write_event(&repo));
    assert_eq!(denied.decision(), "deny", "{denied:?}");
    assert!(
        denied
            .reason()
            .contains(&format!("(brief {}", &session_brief[session_brief.len() - 8..])),
        "{}",
        denied.reason()
    );

    // A sub-agent bound to its own, advisory brief may write; another sub-agent falls back to the session.
    let sub = start_brief(&repo, "1,1,1,1");
    repo.agency(&[
        "teachback",
        "start",
        "--brief",
        &sub,
        "--session",
        "sess-1",
        "--agent",
        "agent-7",
    ])
    .success();
    let event = |agent: &str| {
        let mut event: Value = serde_json::from_str(&write_event(&repo)).unwrap();
        event["agent_id"] = json!(agent);
        event.to_string()
    };
    assert_eq!(hook(&repo, &[], &event("agent-7")).decision(), "allow");
    assert_eq!(hook(&repo, &[], &event("agent-8")).decision(), "deny");

    // Another session is unbound: no opinion.
    let other = write_event(&repo).replace("sess-1", "sess-2");
    assert_eq!(hook(&repo, &[], &other).json, Value::Null);
}

/// What the hook records (a teachback's text) goes through the same redaction as everything else written
/// to the blackboard: a secret in the hook's environment, and a token shape it never held.
#[test]
fn what_the_hook_records_is_redacted() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let secret = "svc-0f3a9c2e77b14d5e";
    let shaped = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let teachback = TEACHBACK.replace(
        "- Key constraints: one file; no other changes",
        &format!("- Key constraints: use {secret} and {shaped}; no other changes"),
    );
    let env = [("AGENCY_BRIEF", brief.as_str()), ("MY_SERVICE_TOKEN", secret)];
    let sent = hook(
        &repo,
        &env,
        &pre_tool_use(&repo, "SendMessage", json!({"to": "lead", "message": teachback})),
    );
    assert_eq!(sent.decision(), "allow", "{sent:?}");
    let db = std::fs::read(repo.db()).unwrap();
    let mut wal = repo.db().into_os_string();
    wal.push("-wal");
    let wal = std::fs::read(wal).unwrap_or_default();
    for bytes in [&db, &wal] {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains(secret), "the service token was recorded");
        assert!(!text.contains(shaped), "the GitHub token was recorded");
    }
    let show = repo.agency(&["teachback", "show", &brief]).success().stdout();
    assert!(show.contains("[redacted:MY_SERVICE_TOKEN]"), "{show}");
}
