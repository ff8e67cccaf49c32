//! The Codex runtime with the real `codex` binary against the fake OpenAI Responses server from
//! `agency-testkit`, gated by a stand-in for `agency hook`.

use std::path::Path;

use agency_core::variety::TeachbackMode;
use agency_exec::runtime::{Access, AgentStop, CodexProvider, CodexRuntime, ReportStatus, Runtime};
use agency_llm::CancelToken;
use agency_testkit::{FakeOpenAi, Reply};

use crate::support::{Sandbox, TestLink, e2e_client, record_decision, task};

const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n";

/// A stand-in for `agency hook` answering `decision`, recording it as the real hook does, and logging the
/// brief it was called for.
fn fake_agency(dir: &Path, decision: &str) -> std::path::PathBuf {
    fake_agency_recording(dir, decision, &record_decision(decision))
}

/// A stand-in for `agency hook` answering `decision` after running `record` (shell lines that must read
/// the event on stdin).
fn fake_agency_recording(dir: &Path, decision: &str, record: &str) -> std::path::PathBuf {
    let log = dir.join("hook.log");
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = hook ] || exit 3\n{record}echo \"$AGENCY_BRIEF\" >> '{}'\n\
         echo '{{\"hookSpecificOutput\":{{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"{decision}\",\
         \"permissionDecisionReason\":\"teachback gate: test\"}}}}'\n",
        log.display()
    );
    crate::support::write(dir, "bin/agency", &script);
    let path = dir.join("bin/agency");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

fn runtime(sandbox: &Sandbox, server: &FakeOpenAi, decision: &str) -> CodexRuntime {
    let dir = sandbox.dir.path();
    let mut runtime = CodexRuntime::new(
        fake_agency(dir, decision),
        dir.join("agency.db"),
        dir.join("homes"),
    );
    // A known model name: Codex offers apply_patch only to models it knows.
    runtime.model = Some("gpt-5.5".into());
    runtime.provider = Some(CodexProvider {
        name: "fake".into(),
        base_url: server.base_url(),
        wire_api: "responses".into(),
        env_key: Some("FAKE_OPENAI_KEY".into()),
    });
    runtime
}

#[tokio::test]
async fn codex_edits_its_worktree_and_its_events_are_recorded() {
    if !e2e_client("codex") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("codex");
    let server = FakeOpenAi::start(vec![
        Reply::custom("apply_patch", PATCH),
        Reply::text("done\n```json\n{\"status\": \"done\", \"summary\": \"added hello\"}\n```"),
    ])
    .unwrap();
    let mut task = task(worktree.root(), true, Access::ReadWrite);
    task.env.push(("FAKE_OPENAI_KEY".into(), "dummy".into()));
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let outcome = runtime(&sandbox, &server, "allow")
        .run(&task, &link, &CancelToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.stop, AgentStop::Finished, "{:#?}", link.events());
    assert_eq!(outcome.report.unwrap().status, ReportStatus::Done);
    assert!(outcome.session_id.is_some());
    assert_eq!(
        std::fs::read_to_string(worktree.root().join("hello.txt")).unwrap(),
        "hi\n"
    );
    assert!(!sandbox.repo.root().join("hello.txt").exists());
    let calls = link.tool_calls();
    assert!(calls.contains(&("apply_patch".to_owned(), true)), "{calls:?}");
    let log = std::fs::read_to_string(sandbox.dir.path().join("hook.log")).unwrap();
    assert_eq!(log.lines().next().unwrap(), task.brief.id.to_string());
}

#[tokio::test]
async fn codex_edits_denied_by_the_gate_do_not_happen() {
    if !e2e_client("codex") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("codex-denied");
    let server =
        FakeOpenAi::start(vec![Reply::custom("apply_patch", PATCH), Reply::text("blocked")]).unwrap();
    let mut task = task(worktree.root(), true, Access::ReadWrite);
    task.env.push(("FAKE_OPENAI_KEY".into(), "dummy".into()));
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let outcome = runtime(&sandbox, &server, "deny")
        .run(&task, &link, &CancelToken::new())
        .await
        .unwrap();
    assert_eq!((outcome.stop, outcome.report), (AgentStop::Finished, None));
    assert!(!worktree.root().join("hello.txt").exists());
    let outputs = server.tool_outputs();
    assert!(
        outputs
            .iter()
            .any(|o| o.to_string().contains("teachback gate: test")),
        "{outputs:#?}"
    );
}

/// A read-only agent (the sign-off judge) is confined by Codex's `read-only` sandbox alone: with a gate that
/// allows everything, neither a patch nor a writing command changes anything, in its worktree or outside.
#[tokio::test]
async fn a_read_only_codex_agent_cannot_write_even_when_the_gate_allows() {
    if !e2e_client("codex") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("codex-judge");
    let outside = sandbox.dir.path().join("outside.txt");
    let server = FakeOpenAi::start(vec![
        Reply::custom("apply_patch", PATCH),
        Reply::tool_use(
            "exec_command",
            serde_json::json!({"cmd": format!("echo x > bash.txt; echo y > {}", outside.display())}),
        ),
        Reply::tool_use("exec_command", serde_json::json!({"cmd": "cat README.md"})),
        Reply::text("It reads fine.\nVERDICT: accept\nmissing: none"),
    ])
    .unwrap();
    let mut task = task(worktree.root(), false, Access::ReadOnly);
    task.ending = agency_exec::runtime::Ending::AsInstructed;
    task.env.push(("FAKE_OPENAI_KEY".into(), "dummy".into()));
    let link = TestLink::new(TeachbackMode::Advisory, vec![]);
    let mut runtime = runtime(&sandbox, &server, "allow");
    // Even a runtime whose workspace-write sandbox is off runs a read-only agent in the read-only one.
    runtime.sandbox = false;
    let outcome = runtime.run(&task, &link, &CancelToken::new()).await.unwrap();
    assert_eq!(outcome.stop, AgentStop::Finished, "{:#?}", link.events());
    assert!(
        outcome
            .final_text
            .as_deref()
            .is_some_and(|t| t.ends_with("missing: none")),
        "{outcome:?}"
    );
    for written in [
        worktree.root().join("hello.txt"),
        worktree.root().join("bash.txt"),
        outside.clone(),
    ] {
        assert!(!written.exists(), "{} was written", written.display());
    }
    let outputs: Vec<String> = server.tool_outputs().iter().map(|o| o.to_string()).collect();
    assert!(
        outputs.iter().any(|o| o.contains("read-only sandbox")),
        "{outputs:#?}"
    );
    assert!(
        outputs.iter().any(|o| o.contains("Read-only file system")),
        "{outputs:#?}"
    );
    assert!(outputs.iter().any(|o| o.contains("# demo")), "{outputs:#?}");
    // The model it was given, and a prompt that asks for no report after the verdict.
    let requests = server.response_requests();
    assert!(requests.iter().all(|r| r["model"] == "gpt-5.5"), "{requests:#?}");
    assert!(
        !requests[0]
            .to_string()
            .contains("end your final message with your report")
    );
}

#[test]
fn the_hook_gets_the_runs_rollout_mode_in_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let mut runtime = CodexRuntime::new("/usr/bin/agency", "/repo/.agency/agency.db", dir.path());
    let mode_of = |runtime: &CodexRuntime| {
        let mut task = task(dir.path(), true, Access::ReadWrite);
        task.env.push(("AGENCY_ROLLOUT_MODE".into(), "shadow".into()));
        let spec = runtime.command(&task);
        let set = spec.env.set.iter().rev();
        set.filter(|(name, _)| name == "AGENCY_ROLLOUT_MODE")
            .map(|(_, value)| value.to_string_lossy().into_owned())
            .next()
    };
    assert_eq!(mode_of(&runtime).as_deref(), Some("enforce"));
    runtime.rollout = agency_core::config::RolloutMode::Warn;
    assert_eq!(mode_of(&runtime).as_deref(), Some("warn"));
}

#[test]
fn read_only_agents_get_the_read_only_sandbox_whatever_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let mut runtime = CodexRuntime::new("/usr/bin/agency", "/repo/.agency/agency.db", dir.path());
    let sandbox_of = |runtime: &CodexRuntime, access| {
        let spec = runtime.command(&task(dir.path(), true, access));
        let args: Vec<String> = spec
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        match args.iter().position(|a| a == "--sandbox") {
            Some(at) => args[at + 1].clone(),
            None if args
                .iter()
                .any(|a| a == "--dangerously-bypass-approvals-and-sandbox") =>
            {
                "none".into()
            }
            None => panic!("no sandbox setting in {args:?}"),
        }
    };
    assert_eq!(sandbox_of(&runtime, Access::ReadOnly), "read-only");
    assert_eq!(sandbox_of(&runtime, Access::ReadWrite), "workspace-write");
    runtime.sandbox = false;
    assert_eq!(sandbox_of(&runtime, Access::ReadOnly), "read-only");
    assert_eq!(sandbox_of(&runtime, Access::ReadWrite), "none");
}

#[test]
fn the_sandbox_lets_the_teachback_command_write_the_blackboard_and_nothing_else_outside() {
    let mut runtime = CodexRuntime::new(
        "/usr/bin/agency",
        "/repo/.agency/agency.db",
        "/repo/.agency/agents",
    );
    let config = runtime.config_toml();
    assert!(
        config.ends_with("[sandbox_workspace_write]\nwritable_roots = [\"/repo/.agency\"]\n"),
        "{config}"
    );
    runtime.sandbox = false;
    assert!(!runtime.config_toml().contains("writable_roots"));
}

fn failing_hook_runtime(sandbox: &Sandbox, server: &FakeOpenAi, agency: std::path::PathBuf) -> CodexRuntime {
    let mut runtime = runtime(sandbox, server, "allow");
    runtime.agency = agency;
    runtime
}

/// Codex runs a tool whose hook fails (exit 1, a crash, a missing program, garbage on stdout): the wrapped
/// hook command turns each failure into a block, the file is not written, and the block is recorded.
#[tokio::test]
async fn a_hook_that_fails_in_any_way_blocks_the_write() {
    if !e2e_client("codex") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let dir = sandbox.dir.path();
    let script = |name: &str, body: &str| {
        crate::support::write(
            dir,
            &format!("bin/{name}"),
            &format!("#!/bin/sh\ncat >/dev/null\n{body}\n"),
        );
        let path = dir.join("bin").join(name);
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        path
    };
    let cases = [
        ("missing", dir.join("bin/not-there"), "not found (exit 127)"),
        ("exit-1", script("exit-1", "exit 1"), "failed (exit 1)"),
        (
            "segfault",
            script("segfault", "kill -SEGV $$"),
            "killed by signal 11",
        ),
        (
            "garbage",
            script("garbage", "echo 'this is {garbage'"),
            "not one agency writes",
        ),
    ];
    for (name, agency, why) in cases {
        let worktree = sandbox.worktree(&format!("codex-{name}"));
        let server =
            FakeOpenAi::start(vec![Reply::custom("apply_patch", PATCH), Reply::text("blocked")]).unwrap();
        let mut task = task(worktree.root(), true, Access::ReadWrite);
        task.env.push(("FAKE_OPENAI_KEY".into(), "dummy".into()));
        let link = TestLink::new(TeachbackMode::Blocking, vec![]);
        let outcome = failing_hook_runtime(&sandbox, &server, agency)
            .run(&task, &link, &CancelToken::new())
            .await
            .unwrap();
        assert!(
            !worktree.root().join("hello.txt").exists(),
            "{name}: the patch ran"
        );
        assert_eq!(outcome.stop, AgentStop::Finished, "{name}: {:#?}", link.events());
        let outputs = server.tool_outputs();
        assert!(
            outputs.iter().any(|o| o.to_string().contains(why)),
            "{name}: the model was not told why: {outputs:#?}"
        );
        let notes = link.notes();
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("codex: blocked by the gate:") && n.contains(why)),
            "{name}: the block was not recorded: {notes:#?}"
        );
    }
}

/// A hook that answers without the gate deciding (nothing recorded): Codex runs the patch, and the
/// gate-coverage audit fails the brief with an ALERT naming the call.
#[tokio::test]
async fn a_call_the_gate_never_decided_fails_the_brief_with_an_alert() {
    if !e2e_client("codex") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("codex-skipped");
    let server = FakeOpenAi::start(vec![
        Reply::custom("apply_patch", PATCH),
        Reply::text("done\n```json\n{\"status\": \"done\", \"summary\": \"added hello\"}\n```"),
    ])
    .unwrap();
    let mut task = task(worktree.root(), true, Access::ReadWrite);
    task.env.push(("FAKE_OPENAI_KEY".into(), "dummy".into()));
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let mut runtime = runtime(&sandbox, &server, "allow");
    runtime.agency = fake_agency_recording(sandbox.dir.path(), "allow", "cat >/dev/null\n");
    let outcome = runtime.run(&task, &link, &CancelToken::new()).await.unwrap();
    assert_alert_for_the_patch(&outcome.stop, &link);
}

/// A hook that hangs past Codex's timeout: Codex kills it and runs the patch anyway (its fail-open), and
/// the audit fails the brief.
#[tokio::test]
async fn a_hook_that_hangs_past_the_timeout_fails_the_brief_with_an_alert() {
    if !e2e_client("codex") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("codex-hung");
    let server = FakeOpenAi::start(vec![
        Reply::custom("apply_patch", PATCH),
        Reply::text("done\n```json\n{\"status\": \"done\", \"summary\": \"added hello\"}\n```"),
    ])
    .unwrap();
    let mut task = task(worktree.root(), true, Access::ReadWrite);
    task.env.push(("FAKE_OPENAI_KEY".into(), "dummy".into()));
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let mut runtime = runtime(&sandbox, &server, "allow");
    runtime.hook_timeout = std::time::Duration::from_secs(1);
    runtime.agency = fake_agency_recording(sandbox.dir.path(), "allow", "sleep 5\n");
    let outcome = runtime.run(&task, &link, &CancelToken::new()).await.unwrap();
    assert_alert_for_the_patch(&outcome.stop, &link);
}

fn assert_alert_for_the_patch(stop: &AgentStop, link: &TestLink) {
    let AgentStop::Signal(signal) = stop else {
        panic!("no ALERT: {stop:?}\n{:#?}", link.events())
    };
    assert_eq!(signal.level, agency_exec::runtime::SignalLevel::Alert);
    assert!(
        signal.issue.contains("never decided") && signal.issue.contains("apply_patch (add "),
        "{}",
        signal.issue
    );
    let notes = link.notes();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("ALERT gate coverage: apply_patch (add ")
                && n.ends_with("hello.txt) had no decision of the teachback gate")),
        "{notes:#?}"
    );
}

/// A gate service that admits nobody: only its presence matters here.
#[derive(Debug)]
struct NoGate;

impl agency_exec::gate::GateIssuer for NoGate {
    fn issue(&self, _: agency_core::BriefId) -> Result<agency_exec::gate::GateCapability, String> {
        Err("no service in this test".into())
    }
}

#[test]
fn with_a_gate_service_the_blackboard_is_neither_writable_nor_named_and_the_socket_is_reachable() {
    let mut runtime = CodexRuntime::new(
        "/usr/bin/agency",
        "/repo/.agency/agency.db",
        "/repo/.agency/agents",
    );
    runtime.gate = Some(std::sync::Arc::new(NoGate));
    let config = runtime.config_toml();
    // `agency teachback submit` connects to the service's socket, which Codex's sandbox allows only
    // with its network on.
    assert!(
        config.ends_with("[sandbox_workspace_write]\nnetwork_access = true\n"),
        "{config}"
    );
    assert!(!config.contains("writable_roots"), "{config}");
}
