//! The pi runtime with the real `pi` binary against the fake Anthropic server from `agency-testkit`: the
//! teachback step runs first (built-in agent, read-only), then pi edits its worktree over RPC.

use agency_core::variety::TeachbackMode;
use agency_exec::runtime::{Access, AgentStop, BuiltinRuntime, PiRuntime, ReportStatus, Runtime};
use agency_llm::CancelToken;
use agency_testkit::{FakeAnthropic, Reply};
use serde_json::json;

use crate::support::{Recording, Sandbox, TestHooks, optional_client, task};

const TEACHBACK: &str = r#"{name: submit_teachback, input: {building: "hello.txt", key_constraints: ["only hello.txt"], approach: "write it", most_likely_wrong: "the content", least_confident: "nothing"}}"#;

#[tokio::test]
async fn pi_starts_after_the_teachback_and_edits_its_worktree() {
    if !optional_client("pi") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("pi");
    let server = FakeAnthropic::start(vec![
        Reply::tool_use("write", json!({"path": "hello.txt", "content": "hi"})),
        Reply::text("done\n```json\n{\"status\": \"done\", \"summary\": \"wrote hello\"}\n```"),
    ])
    .unwrap();
    let script =
        format!("replies:\n  - role: implementer\n    replies:\n      - tool_calls: [{TEACHBACK}]\n");
    let mut runtime = PiRuntime::new(
        BuiltinRuntime::new(Recording::new(&script)),
        sandbox.dir.path().join("homes"),
    );
    runtime.provider = Some("fake".into());
    runtime.model = Some("fake-model".into());
    runtime.models_json = Some(json!({"providers": {"fake": {
        "baseUrl": server.base_url(), "api": "anthropic-messages", "apiKey": "dummy",
        "models": [{"id": "fake-model"}]
    }}}));
    let hooks = TestHooks::new(TeachbackMode::Blocking, vec![]);
    let outcome = runtime
        .run(
            &task(worktree.root(), true, Access::ReadWrite),
            &hooks,
            &CancelToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, AgentStop::Finished, "{:#?}", hooks.events());
    assert_eq!(outcome.report.unwrap().status, ReportStatus::Done);
    assert_eq!(hooks.teachbacks.lock().unwrap().len(), 1);
    assert_eq!(
        std::fs::read_to_string(worktree.root().join("hello.txt")).unwrap(),
        "hi"
    );
    assert!(
        hooks.tool_calls().contains(&("write".to_owned(), true)),
        "{:?}",
        hooks.tool_calls()
    );
}
