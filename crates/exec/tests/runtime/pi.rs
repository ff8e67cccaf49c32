//! The pi runtime with the real `pi` binary against the fake Anthropic server from `agency-testkit`: the
//! teachback step runs first (built-in agent, read-only), then pi edits its worktree over RPC. A pi that
//! refuses the prompt (no API key) ends the agent at once with pi's reason.

use agency_core::variety::TeachbackMode;
use agency_exec::runtime::{
    Access, AgentStop, BuiltinRuntime, PiRuntime, ReportStatus, Runtime, RuntimeError, TierModel,
};
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

#[tokio::test]
async fn a_pi_that_refuses_the_prompt_ends_the_agent_at_once_with_its_reason() {
    if !optional_client("pi") {
        return;
    }
    let sandbox = Sandbox::new(&[("README.md", "# demo\n")]);
    let worktree = sandbox.worktree("pi");
    let mut runtime = PiRuntime::new(
        BuiltinRuntime::new(Recording::new("replies: []\n")),
        sandbox.dir.path().join("homes"),
    );
    // The tier's model on pi's built-in Anthropic provider, and no key for it in pi's environment.
    runtime.use_tier_model(&TierModel {
        model: "claude-haiku-4-5".into(),
        price: None,
        kind: agency_core::config::ProviderKind::Anthropic,
        field: "models.fast-cheap.model".into(),
        endpoint: None,
        max_tokens: None,
    });
    runtime.inherit_env = vec!["PATH".into()];
    let hooks = TestHooks::new(TeachbackMode::Blocking, vec![]);
    let started = std::time::Instant::now();
    let result = runtime
        .run(
            &task(worktree.root(), true, Access::ReadOnly),
            &hooks,
            &CancelToken::new(),
        )
        .await;
    let elapsed = started.elapsed();
    match result {
        Err(RuntimeError::Process(reason)) => {
            assert!(reason.contains("pi refused prompt: No API key found"), "{reason}");
        }
        other => panic!("expected pi's refusal, got {other:?}"),
    }
    // Not the agent's time limit: pi is ended as soon as it refuses.
    assert!(elapsed < std::time::Duration::from_secs(30), "took {elapsed:?}");
}
