//! The Codex runtime with the real `codex` binary against the fake OpenAI Responses server from
//! `agency-testkit`, gated by a stand-in for `agency hook`.

use std::path::Path;

use agency_core::variety::TeachbackMode;
use agency_exec::runtime::{Access, AgentStop, CodexProvider, CodexRuntime, ReportStatus, Runtime};
use agency_llm::CancelToken;
use agency_testkit::{FakeOpenAi, Reply};

use crate::support::{Sandbox, TestHooks, e2e_client, task};

const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n";

/// A stand-in for `agency hook` answering `decision` and logging the brief it was called for.
fn fake_agency(dir: &Path, decision: &str) -> std::path::PathBuf {
    let log = dir.join("hook.log");
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = hook ] || exit 3\ncat > /dev/null\necho \"$AGENCY_BRIEF\" >> '{}'\n\
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
        env_key: "FAKE_OPENAI_KEY".into(),
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
    let hooks = TestHooks::new(TeachbackMode::Blocking, vec![]);
    let outcome = runtime(&sandbox, &server, "allow")
        .run(&task, &hooks, &CancelToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.stop, AgentStop::Finished, "{:#?}", hooks.events());
    assert_eq!(outcome.report.unwrap().status, ReportStatus::Done);
    assert!(outcome.session_id.is_some());
    assert_eq!(
        std::fs::read_to_string(worktree.root().join("hello.txt")).unwrap(),
        "hi\n"
    );
    assert!(!sandbox.repo.root().join("hello.txt").exists());
    let calls = hooks.tool_calls();
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
    let hooks = TestHooks::new(TeachbackMode::Blocking, vec![]);
    let outcome = runtime(&sandbox, &server, "deny")
        .run(&task, &hooks, &CancelToken::new())
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
