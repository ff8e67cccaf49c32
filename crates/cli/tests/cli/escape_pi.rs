//! pi's model key out of its commands' reach: in a run pi calls its model through the runner's model-key
//! relay, so a command pi runs finds no key in any `/proc/*/environ` (pi's own included), and the model
//! server still gets the key, from the relay.

use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
use agency_testkit::{FakeOpenAi, Reply};
use serde_json::json;

use crate::hook_support::e2e_client;
use crate::pi::{FIXED, chat_tool_results, repo_with_pi_implementers};
use crate::run_external::{REPORT, agency_run};
use crate::support::demo_dir;

/// The local server's key, in the runner's environment only.
const LOCAL_KEY: &str = "sk-local-held-by-the-relay-5150";

#[test]
fn pis_commands_cannot_read_its_model_key_and_the_server_still_gets_it() {
    if !e2e_client("pi") {
        return;
    }
    let submit = format!(
        "{} teachback submit --building 'a fix for page() so that pages count from 1' \
         --constraint 'do not edit test_pagination.py' --approach 'start at (number - 1) * size' \
         --most-likely-wrong 'whether page 0 must keep working' --least-confident 'the last page'",
        env!("CARGO_BIN_EXE_agency")
    );
    let read_keys = format!(
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null | grep -c {LOCAL_KEY}; \
         echo key-exit=$?"
    );
    let server = FakeOpenAi::start(vec![
        Reply::tool_use("bash", json!({"command": submit})),
        Reply::tool_use("bash", json!({"command": read_keys})),
        Reply::tool_use("write", json!({"path": "pagination.py", "content": FIXED})),
        Reply::text(REPORT),
    ])
    .expect("fake server");
    let repo = repo_with_pi_implementers(
        &format!(
            "  local: {{kind: openai, base_url: '{}', api_key_env: LOCAL_MODEL_KEY}}\n",
            server.base_url()
        ),
        "local",
        "qwen-local-7b",
    );
    let out = agency_run(
        &repo,
        &demo_dir().join("script.yaml"),
        &[("LOCAL_MODEL_KEY", LOCAL_KEY.to_string())],
    );
    assert!(
        out.status.success(),
        "agency run failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let results = chat_tool_results(&server);
    let keys = results
        .iter()
        .find(|r| r.contains("key-exit="))
        .unwrap_or_else(|| panic!("the key search never reached the model: {results:#?}"));
    // `grep -c` exits 1 when no environment it could read held the key.
    assert!(keys.contains("key-exit=1"), "{keys}");
    let sent: Vec<Option<String>> = server
        .requests()
        .iter()
        .filter(|r| r.path.contains("/chat/completions"))
        .map(|r| r.headers.get("authorization").cloned())
        .collect();
    assert!(
        !sent.is_empty()
            && sent
                .iter()
                .all(|k| k.as_deref() == Some(&format!("Bearer {LOCAL_KEY}")[..])),
        "{sent:?}"
    );
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    assert_eq!(store.list_runs().unwrap()[0].status, RunStatus::Succeeded);
}
