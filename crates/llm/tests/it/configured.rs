//! team.yaml to wire: providers built from config reach the server with the key from the environment, and a
//! budget refusal means the server never sees the call.

use std::sync::{Arc, Mutex};

use agency_core::config::{CapabilityLevel, parse_team_config};
use agency_llm::{
    BudgetExceeded, BudgetLedger, BudgetLimits, CallMeta, Limit, LlmError, Message, Metered, ModelSet,
    Request, RetryPolicy, UsageRecord, UsageSink,
};
use serde_json::json;

use crate::support::{FakeServer, Reply, call, data, named, sse};

fn anthropic_text(text: &str) -> Vec<String> {
    vec![
        named(
            "message_start",
            json!({"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ),
        named(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": text}}),
        ),
        named(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        named(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        ),
        named("message_stop", json!({"type": "message_stop"})),
    ]
}

fn openai_text(text: &str) -> Vec<String> {
    vec![
        data(json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]})),
        "data: [DONE]\n\n".to_owned(),
    ]
}

fn request() -> Request {
    Request {
        messages: vec![Message::user("hello")],
        max_tokens: 64,
        ..Request::default()
    }
}

#[tokio::test]
async fn levels_from_team_yaml_reach_their_servers_with_keys_from_the_environment() {
    let anthropic = FakeServer::canned(vec![Reply::Bytes(sse(&anthropic_text("from anthropic")))]).unwrap();
    let local = FakeServer::canned(vec![Reply::Bytes(sse(&openai_text("from local")))]).unwrap();
    let yaml = format!(
        "providers:\n  claude: {{kind: anthropic, base_url: '{}', api_key_env: TEAM_CLAUDE_KEY}}\n  local: {{kind: openai, base_url: '{}/v1'}}\nmodels:\n  reasoning-heavy: {{provider: claude, model: claude-x}}\n  capable: {{provider: claude, model: claude-y}}\n  fast-cheap: {{provider: local, model: tiny}}\n",
        anthropic.base_url(),
        local.base_url()
    );
    let config = parse_team_config(&yaml, "team.yaml").unwrap();
    let env = |var: &str| (var == "TEAM_CLAUDE_KEY").then(|| "sk-from-env".to_owned());
    let models = ModelSet::from_config(&config, &env, RetryPolicy::default()).unwrap();

    let capable = models.level(CapabilityLevel::Capable).unwrap();
    let (result, _) = call(capable.provider.as_ref(), &request()).await;
    assert_eq!(result.unwrap().text(), "from anthropic");
    let seen = anthropic.requests();
    assert_eq!(seen[0].header("x-api-key"), Some("sk-from-env"));
    assert_eq!(seen[0].body["model"], "claude-y");

    let fast = models.level(CapabilityLevel::FastCheap).unwrap();
    let (result, _) = call(fast.provider.as_ref(), &request()).await;
    assert_eq!(result.unwrap().text(), "from local");
    assert_eq!(local.requests()[0].header("authorization"), None);
    assert_eq!(local.requests()[0].body["max_tokens"], 64);

    let missing = ModelSet::from_config(&config, &|_| None, RetryPolicy::default()).unwrap_err();
    assert_eq!(
        missing,
        LlmError::MissingKey {
            var: "TEAM_CLAUDE_KEY".into()
        }
    );
}

#[derive(Default)]
struct Exhausted(Mutex<Vec<BudgetExceeded>>);

impl UsageSink for Exhausted {
    fn record_usage(&self, _record: &UsageRecord) {}

    fn budget_exhausted(&self, _meta: &CallMeta, exceeded: &BudgetExceeded) {
        self.0.lock().unwrap().push(exceeded.clone());
    }
}

#[tokio::test]
async fn a_call_over_budget_never_reaches_the_server() {
    let server = FakeServer::canned(vec![Reply::Bytes(sse(&anthropic_text("unreachable")))]).unwrap();
    let yaml = format!(
        "providers:\n  anthropic: {{kind: anthropic, base_url: '{}'}}\nbudgets:\n  brief: {{tokens: 50}}\n",
        server.base_url()
    );
    let config = parse_team_config(&yaml, "team.yaml").unwrap();
    let env = |_: &str| Some("k".to_owned());
    let models = ModelSet::from_config(&config, &env, RetryPolicy::default()).unwrap();
    let limits: BudgetLimits = agency_llm::budget_limits(&config.budgets);
    assert_eq!(
        limits.brief,
        Limit {
            tokens: Some(50),
            usd: None
        }
    );
    let sink = Arc::new(Exhausted::default());
    let provider = Metered::new(
        models.level(CapabilityLevel::Capable).unwrap().provider.clone(),
        sink.clone(),
    )
    .with_ledger(Arc::new(Mutex::new(BudgetLedger::new(limits))));
    let mut request = request();
    request.meta.brief = Some("ws1/impl".into());
    let (result, _) = call(&provider, &request).await;
    assert!(matches!(result.unwrap_err(), LlmError::Budget(_)));
    assert!(server.requests().is_empty(), "the refused call was made");
    assert_eq!(sink.0.lock().unwrap().len(), 1);
}
