//! The Claude Code runtime with the real `claude` binary against the fake Anthropic server from
//! `agency-testkit`. The gate is a stand-in for `agency hook` (a script answering an explicit allow and
//! logging what it was called with), so these tests need no blackboard; `agency hook` itself is tested
//! end to end in the CLI crate.

use std::path::Path;

use agency_core::variety::TeachbackMode;
use agency_exec::runtime::{Access, AgentEvent, AgentStop, ClaudeCodeRuntime, ReportStatus, Runtime};
use agency_llm::CancelToken;
use agency_testkit::{FakeAnthropic, Reply};
use serde_json::json;

use crate::support::{Sandbox, TestLink, e2e_client, task};

const REPORT: &str = "Done.\n```json\n{\"status\": \"done\", \"summary\": \"wrote hello\", \"evidence\": [{\"path\": \"hello.txt\"}]}\n```";

/// A stand-in for the `agency` binary: `agency hook` logs its environment and allows the call.
fn fake_agency(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("bin/agency");
    let log = dir.join("hook.log");
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = hook ] || exit 3\n{}echo \"$AGENCY_BRIEF $AGENCY_DB\" >> '{}'\n\
         echo '{{\"hookSpecificOutput\":{{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\"}}}}'\n",
        crate::support::record_decision("allow"),
        log.display()
    );
    crate::support::write(dir, "bin/agency", &script);
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

fn tool_calls(link: &TestLink) -> Vec<(String, bool)> {
    link.tool_calls()
}

#[tokio::test]
async fn claude_code_edits_its_worktree_records_events_and_resumes() {
    if !e2e_client("claude") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("hello");
    let target = worktree.root().join("hello.txt");
    let server = FakeAnthropic::start(vec![
        Reply::tool_use("Write", json!({"file_path": target, "content": "hi"})),
        Reply::text(REPORT),
        Reply::text("resumed\n```json\n{\"status\": \"done\", \"summary\": \"resumed\"}\n```"),
    ])
    .unwrap();
    let mut task = task(worktree.root(), true, agency_exec::runtime::Access::ReadWrite);
    task.env.extend([
        ("ANTHROPIC_BASE_URL".to_owned(), server.base_url()),
        ("ANTHROPIC_API_KEY".to_owned(), "dummy-key-1234".to_owned()),
        ("CLAUDE_CODE_MAX_RETRIES".to_owned(), "1".to_owned()),
    ]);
    let db = sandbox.dir.path().join("agency.db");
    let runtime = ClaudeCodeRuntime::new(
        fake_agency(sandbox.dir.path()),
        &db,
        sandbox.dir.path().join("homes"),
    );
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);

    let outcome = runtime.run(&task, &link, &CancelToken::new()).await.unwrap();

    assert_eq!(outcome.stop, AgentStop::Finished, "{:#?}", link.events());
    let report = outcome.report.clone().unwrap();
    assert_eq!(
        (report.status, report.summary.as_str()),
        (ReportStatus::Done, "wrote hello")
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hi");
    assert!(!sandbox.repo.root().join("hello.txt").exists());
    let session = outcome.session_id.clone().unwrap();
    assert_eq!(tool_calls(&link), [("Write".to_owned(), true)]);
    let events = link.events();
    // Spending as each of its two answers came (no cost yet), then the rest of the session's with its cost.
    let usage: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Usage(u) if u.provider == "claude-code" => Some((u.usage, u.cost_usd)),
            _ => None,
        })
        .collect();
    let (calls, rest) = usage.split_at(usage.len() - 1);
    assert!(
        calls.len() >= 2 && calls.iter().all(|(u, cost)| u.input > 0 && cost.is_none()),
        "{usage:?}"
    );
    assert!(rest[0].1.is_some(), "{usage:?}");
    // The fake bills 5 output tokens an answer; the calls had counted 1 each when they started.
    let output: u64 = usage.iter().map(|(u, _)| u.output).sum();
    assert_eq!(output, 5 * calls.len() as u64, "{usage:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Note(n) if n.contains(&session)))
    );
    // The gate ran with the brief and blackboard it was given.
    let log = std::fs::read_to_string(sandbox.dir.path().join("hook.log")).unwrap();
    assert_eq!(
        log.lines().next().unwrap(),
        format!("{} {}", task.brief.id, db.display())
    );
    // The user's prompt carried the brief, and the personality went into the system prompt.
    let first = &server.message_requests()[0];
    assert!(first.to_string().contains("Fix calc.add"), "{first}");
    assert!(
        first["system"]
            .to_string()
            .contains("You are a careful implementer.")
    );

    // Running the same attempt again resumes the session with its history.
    let again = runtime.run(&task, &link, &CancelToken::new()).await.unwrap();
    assert_eq!(again.report.unwrap().summary, "resumed");
    let last = server.message_requests().pop().unwrap();
    assert!(last.to_string().contains("You were interrupted"), "{last}");
    assert!(
        last.to_string().contains("wrote hello"),
        "the resumed request lacks the history: {last}"
    );
}

#[tokio::test]
async fn claude_code_fails_closed_when_the_gate_does_not_answer() {
    if !e2e_client("claude") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("denied");
    let target = worktree.root().join("hello.txt");
    let server = FakeAnthropic::start(vec![
        Reply::tool_use("Write", json!({"file_path": target, "content": "hi"})),
        Reply::text("could not write"),
    ])
    .unwrap();
    let mut task = task(worktree.root(), true, agency_exec::runtime::Access::ReadWrite);
    task.env.extend([
        ("ANTHROPIC_BASE_URL".to_owned(), server.base_url()),
        ("ANTHROPIC_API_KEY".to_owned(), "dummy".to_owned()),
        ("CLAUDE_CODE_MAX_RETRIES".to_owned(), "1".to_owned()),
    ]);
    let runtime = ClaudeCodeRuntime::new(
        "/nonexistent/agency",
        sandbox.dir.path().join("agency.db"),
        sandbox.dir.path().join("homes"),
    );
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let outcome = runtime.run(&task, &link, &CancelToken::new()).await.unwrap();
    assert!(!target.exists(), "a missing gate let the Write through");
    assert_eq!(tool_calls(&link), [("Write".to_owned(), false)]);
    // The gate never decided the call: refused by Claude Code, and an ALERT all the same, since the gate is
    // broken.
    let AgentStop::Signal(signal) = outcome.stop else {
        panic!("no ALERT: {:?}", outcome.stop)
    };
    assert!(
        signal.issue.contains("never decided: Write ("),
        "{}",
        signal.issue
    );
    assert_eq!(outcome.report, None);
}

#[tokio::test]
async fn a_missing_claude_binary_is_reported_as_not_installed() {
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("missing");
    let mut runtime = ClaudeCodeRuntime::new("agency", "db", sandbox.dir.path().join("homes"));
    runtime.program = "/nonexistent/claude".into();
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let task = task(worktree.root(), true, agency_exec::runtime::Access::ReadWrite);
    let err = runtime.run(&task, &link, &CancelToken::new()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "claude-code: `/nonexistent/claude` was not found on PATH"
    );
}

#[test]
fn the_command_runs_in_the_default_permission_mode_with_the_gate_and_a_private_home() {
    let dir = tempfile::tempdir().unwrap();
    let mut runtime = ClaudeCodeRuntime::new("/opt/agency tools/agency", "/runs/agency.db", dir.path());
    runtime.rollout = agency_core::config::RolloutMode::Warn;
    let mut task = task(dir.path(), true, agency_exec::runtime::Access::ReadOnly);
    // The runner passes its own HOME among the task's variables; the agent's private one must win, and so
    // must the run's rollout mode.
    task.env.push(("HOME".into(), "/home/runner".into()));
    task.env.push(("AGENCY_ROLLOUT_MODE".into(), "shadow".into()));
    let spec = runtime.command(&task, None);
    let args: Vec<String> = spec
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // No --permission-mode: the default mode is what makes a broken gate a denial.
    assert!(
        !args
            .iter()
            .any(|a| a.contains("permission-mode") || a.contains("skip-permissions"))
    );
    let after = |flag: &str| args[args.iter().position(|a| a == flag).unwrap() + 1].clone();
    assert_eq!(after("--max-turns"), "12");
    assert_eq!(after("--allowedTools"), "Read,Glob,Grep,LS,TaskGet,TaskList");
    // A read-only agent is offered nothing but reading and searching, whatever the gate answers.
    assert_eq!(after("--tools"), "Read,Glob,Grep");
    assert!(after("--disallowedTools").contains("Write"));
    // No model was given: Claude Code's default (or ANTHROPIC_MODEL) applies.
    assert!(!args.iter().any(|a| a == "--model"));
    let settings: serde_json::Value = serde_json::from_str(&after("--settings")).unwrap();
    assert_eq!(
        settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "'/opt/agency tools/agency' hook"
    );
    let env: std::collections::BTreeMap<String, String> = spec
        .env
        .set
        .iter()
        .map(|(k, v)| (k.clone(), v.to_string_lossy().into_owned()))
        .collect();
    // Later entries win, as when the child's environment is resolved.
    assert_eq!(env["HOME"], runtime.home(&task).display().to_string());
    assert_eq!(env["AGENCY_BRIEF"], task.brief.id.to_string());
    assert_eq!(env["AGENCY_DB"], "/runs/agency.db");
    // The key reaches Claude Code, not the commands and hooks it starts.
    assert_eq!(env["CLAUDE_CODE_SUBPROCESS_ENV_SCRUB"], "1");
    assert_eq!(env["AGENCY_ROLLOUT_MODE"], "warn");
    assert!(
        spec.env
            .inherit
            .iter()
            .all(|name| name == "PATH" || name == "LANG" || name.starts_with("ANTHROPIC_"))
    );
    // A writing agent is offered Claude Code's usual tools, gated by the hook.
    let writer = runtime.command(&crate::support::task(dir.path(), true, Access::ReadWrite), None);
    assert!(
        !writer
            .args
            .iter()
            .any(|a| a == "--tools" || a == "--disallowedTools")
    );
}

#[test]
fn the_tier_model_is_passed_as_one_argument_after_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut runtime = ClaudeCodeRuntime::new("/usr/bin/agency", "/runs/agency.db", dir.path());
    runtime.model = Some("claude-haiku-4-5".into());
    let spec = runtime.command(&task(dir.path(), true, Access::ReadWrite), None);
    let at = spec.args.iter().position(|a| a == "--model").unwrap();
    assert_eq!(spec.args[at + 1], "claude-haiku-4-5");
}

/// A sub-agent's call the gate never decided (here the stand-in hook answers it without recording, as a
/// client that skipped the hook for sub-agents would leave it): the audit fails the brief with an ALERT
/// naming the call, while the parent's own calls, which were decided, pass.
#[tokio::test]
async fn a_sub_agents_call_the_gate_never_decided_fails_the_brief() {
    if !e2e_client("claude") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("subagent");
    let target = worktree.root().join("sub.txt");
    let server = FakeAnthropic::start(vec![
        Reply::tool_use(
            "Agent",
            json!({"description": "d", "prompt": "SUBTASK write", "subagent_type": "general-purpose"}),
        ),
        Reply::text("done\n```json\n{\"status\": \"done\", \"summary\": \"s\"}\n```"),
    ])
    .unwrap();
    server.set_rule(
        "SUBTASK",
        vec![
            Reply::tool_use("Write", json!({"file_path": target, "content": "s"})),
            Reply::text("sub done"),
        ],
    );
    let mut task = task(worktree.root(), true, agency_exec::runtime::Access::ReadWrite);
    task.env.extend([
        ("ANTHROPIC_BASE_URL".to_owned(), server.base_url()),
        ("ANTHROPIC_API_KEY".to_owned(), "dummy".to_owned()),
        ("CLAUDE_CODE_MAX_RETRIES".to_owned(), "1".to_owned()),
    ]);
    // Records a decision only for calls outside a sub-agent (no `agent_id` in the event).
    let script = r#"#!/bin/sh
ev=$(cat)
case $ev in *'"agent_id"'*) ;; *) printf '%s\n' "{\"gate_decision\":\"allow\",${ev#?}" >> "$AGENCY_GATE_LOG";; esac
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'
"#;
    crate::support::write(sandbox.dir.path(), "bin/agency", script);
    let agency = sandbox.dir.path().join("bin/agency");
    std::fs::set_permissions(&agency, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let runtime = ClaudeCodeRuntime::new(
        agency,
        sandbox.dir.path().join("agency.db"),
        sandbox.dir.path().join("homes"),
    );
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let outcome = runtime.run(&task, &link, &CancelToken::new()).await.unwrap();
    let AgentStop::Signal(signal) = outcome.stop else {
        panic!("no ALERT: {:?}\n{:#?}", outcome.stop, link.events())
    };
    assert!(
        signal.issue.contains("1 tool call(s)") && signal.issue.contains("Write ("),
        "{}",
        signal.issue
    );
    assert!(
        link.notes()
            .iter()
            .any(|n| n.starts_with("ALERT gate coverage: Write (") && n.contains("sub.txt")),
        "{:#?}",
        link.notes()
    );
}

/// A gate service that admits nobody: only its presence matters here.
#[derive(Debug)]
struct NoGate;

impl agency_exec::gate::GateIssuer for NoGate {
    fn issue(&self, _: agency_core::BriefId) -> Result<agency_exec::gate::GateCapability, String> {
        Err("the service is gone".into())
    }
}

#[test]
fn with_a_gate_service_the_blackboard_is_not_named_and_an_agent_it_cannot_admit_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut runtime = ClaudeCodeRuntime::new("/usr/bin/agency", "/runs/agency.db", dir.path());
    runtime.config = Some("/runs/team.yaml".into());
    runtime.gate = Some(std::sync::Arc::new(NoGate));
    let task = task(dir.path(), true, agency_exec::runtime::Access::ReadWrite);
    let spec = runtime.command(&task, None);
    let names: Vec<&str> = spec.env.set.iter().map(|(k, _)| k.as_str()).collect();
    assert!(names.contains(&"AGENCY_BRIEF"), "{names:?}");
    assert!(
        !names.contains(&"AGENCY_DB") && !names.contains(&"AGENCY_CONFIG"),
        "{names:?}"
    );
    // Without a capability its gate could not answer: the agent is refused before anything starts.
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let error = rt
        .block_on(runtime.run(&task, &link, &CancelToken::new()))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("gate service") && error.contains("the service is gone"),
        "{error}"
    );
}

/// A gate service stand-in that admits every agent and records nothing: the calls its hook answered
/// were never answered by the service.
#[derive(Debug)]
struct SilentGate(std::path::PathBuf);

impl agency_exec::gate::GateIssuer for SilentGate {
    fn issue(&self, _: agency_core::BriefId) -> Result<agency_exec::gate::GateCapability, String> {
        Ok(agency_exec::gate::GateCapability::new(
            self.0.clone(),
            "capability-of-the-test".into(),
            agency_exec::gate::DecisionRecord::default(),
            || {},
        ))
    }
}

/// With a gate service, the audit reads the service's record, not a file in the agent's home: here the
/// agent's side (its hook, which runs in its sandbox as the agent does) answers every call itself and
/// writes a decision log covering each one exactly, where the audit used to read it. The service decided
/// nothing, so every call is an ALERT and the brief fails.
#[tokio::test]
async fn with_a_gate_service_a_decision_log_forged_in_the_agents_home_is_ignored() {
    if !e2e_client("claude") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("forged");
    let target = worktree.root().join("forged.txt");
    let server = FakeAnthropic::start(vec![
        Reply::tool_use("Write", json!({"file_path": target, "content": "f"})),
        Reply::text(REPORT),
    ])
    .unwrap();
    let mut task = task(worktree.root(), true, Access::ReadWrite);
    task.env.extend([
        ("ANTHROPIC_BASE_URL".to_owned(), server.base_url()),
        ("ANTHROPIC_API_KEY".to_owned(), "dummy".to_owned()),
        ("CLAUDE_CODE_MAX_RETRIES".to_owned(), "1".to_owned()),
    ]);
    let seen = sandbox.dir.path().join("gate-log-var");
    let script = format!(
        r#"#!/bin/sh
ev=$(cat)
echo "log=${{AGENCY_GATE_LOG:-unset}}" >> '{}'
printf '%s\n' "{{\"gate_decision\":\"allow\",${{ev#?}}" >> "$HOME/gate-decisions.jsonl"
echo '{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","permissionDecision":"allow"}}}}'
"#,
        seen.display()
    );
    crate::support::write(sandbox.dir.path(), "bin/agency", &script);
    let agency = sandbox.dir.path().join("bin/agency");
    std::fs::set_permissions(&agency, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut runtime = ClaudeCodeRuntime::new(
        agency,
        sandbox.dir.path().join("agency.db"),
        sandbox.dir.path().join("homes"),
    );
    runtime.gate = Some(std::sync::Arc::new(SilentGate(
        sandbox.dir.path().join("gate.sock"),
    )));
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let outcome = runtime.run(&task, &link, &CancelToken::new()).await.unwrap();
    // The forged log is there and covers the Write by its id; the hook was not even told of a log.
    let forged = std::fs::read_to_string(runtime.home(&task).join("gate-decisions.jsonl")).unwrap();
    assert!(forged.contains("\"tool_name\":\"Write\""), "{forged}");
    assert_eq!(std::fs::read_to_string(&seen).unwrap().trim(), "log=unset");
    assert!(target.exists(), "the stand-in allowed the Write");
    let AgentStop::Signal(signal) = outcome.stop else {
        panic!("no ALERT: {:?}\n{:#?}", outcome.stop, link.events())
    };
    assert!(
        signal.issue.contains("1 tool call(s)") && signal.issue.contains("Write ("),
        "{}",
        signal.issue
    );
    assert!(
        signal.evidence.contains("gate service (0 recorded)"),
        "{}",
        signal.evidence
    );
}
