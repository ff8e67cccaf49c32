//! The pi runtime with the real `pi` binary against the fake Anthropic server from `agency-testkit`: the
//! teachback step runs first (built-in agent, read-only) when pi is not gated, then pi edits its worktree
//! over RPC. A pi that refuses the prompt (no API key) ends the agent at once with pi's reason. And the
//! command of a gated pi (agency's extension, gate-only); a gated run end to end is in the cli tests
//! (`pi::a_run_with_pi_as_t4_…`).

use agency_core::variety::TeachbackMode;
use agency_exec::runtime::pi::PiGate;
use agency_exec::runtime::{
    Access, AgentStop, BuiltinRuntime, PiRuntime, ReportStatus, Runtime, RuntimeError, TierModel,
};
use agency_llm::CancelToken;
use agency_testkit::{FakeAnthropic, Reply};
use serde_json::json;

use crate::support::{Recording, Sandbox, TestLink, optional_client, task};

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
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let outcome = runtime
        .run(
            &task(worktree.root(), true, Access::ReadWrite),
            &link,
            &CancelToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, AgentStop::Finished, "{:#?}", link.events());
    assert_eq!(outcome.report.unwrap().status, ReportStatus::Done);
    assert_eq!(link.teachbacks.lock().unwrap().len(), 1);
    assert_eq!(
        std::fs::read_to_string(worktree.root().join("hello.txt")).unwrap(),
        "hi"
    );
    assert!(
        link.tool_calls().contains(&("write".to_owned(), true)),
        "{:?}",
        link.tool_calls()
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
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let started = std::time::Instant::now();
    let result = runtime
        .run(
            &task(worktree.root(), true, Access::ReadOnly),
            &link,
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

#[test]
fn a_gated_pi_loads_agency_s_extension_in_gate_only_mode_and_is_told_how_to_teach_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut runtime = PiRuntime::new(
        BuiltinRuntime::new(Recording::new("replies: []\n")),
        dir.path().join("homes"),
    );
    runtime.gate = Some(PiGate {
        agency: "/opt/agency/bin/agency".into(),
        db: "/runs/agency.db".into(),
        config: None,
        rollout: agency_core::config::RolloutMode::Warn,
        service: None,
    });
    let mut task = task(dir.path(), true, Access::ReadWrite);
    // The runner's own HOME must not replace the agent's private one.
    task.env.push(("HOME".into(), "/home/runner".into()));
    let spec = runtime.command(&task);
    let args: Vec<String> = spec
        .args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let after = |flag: &str| args[args.iter().position(|a| a == flag).unwrap() + 1].clone();
    // Discovery off, agency's extension named: nothing else is loaded.
    assert!(args.contains(&"--no-extensions".to_owned()));
    assert_eq!(after("-e"), runtime.extension_path(&task).display().to_string());
    let env: std::collections::BTreeMap<String, String> = spec
        .env
        .set
        .iter()
        .map(|(k, v)| (k.clone(), v.to_string_lossy().into_owned()))
        .collect();
    assert_eq!(env["AGENCY_BIN"], "/opt/agency/bin/agency");
    assert_eq!(env["AGENCY_BRIEF"], task.brief.id.to_string());
    assert_eq!(env["AGENCY_PI_GATE_ONLY"], "1");
    assert_eq!(env["AGENCY_ROLLOUT_MODE"], "warn");
    // No gate service: the hook is given the blackboard (it can open it only unsandboxed).
    assert_eq!(env["AGENCY_DB"], "/runs/agency.db");
    assert_eq!(env["HOME"], runtime.home(&task).display().to_string());
    assert!(env["AGENCY_GATE_LOG"].ends_with("gate-decisions.jsonl"));
    // The prompt says how to teach back with the same agency binary.
    let prompt = runtime.prompt(&task);
    assert!(
        prompt.contains("/opt/agency/bin/agency teachback submit --building"),
        "{prompt}"
    );
    assert!(runtime.teachback_on_blackboard());
    // The extension compiled in is the one in integrations/pi.
    let source = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../integrations/pi/extensions/agency.ts"),
    )
    .unwrap();
    assert_eq!(agency_exec::runtime::pi::EXTENSION, source);

    // Ungated (a runtime built by hand): no extension, the teachback step instead.
    runtime.gate = None;
    let plain = runtime.command(&task);
    assert!(!plain.args.iter().any(|a| a == "-e"));
    assert!(!runtime.teachback_on_blackboard());
    assert!(!runtime.prompt(&task).contains("teachback submit"));
}
