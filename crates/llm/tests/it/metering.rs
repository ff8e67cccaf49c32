//! Budgets and usage records around the scripted provider: a run whose budget is smaller than its work
//! stops at the budget, fails closed, and spends nothing beyond it.

use std::sync::{Arc, Mutex};

use agency_llm::{
    BudgetExceeded, BudgetLedger, BudgetLimits, CallMeta, Limit, LlmError, Message, Metered, Price, Request,
    Scope, Script, ScriptedProvider, UsageRecord, UsageSink,
};

use crate::support::call;

#[derive(Default)]
struct Recorder {
    usage: Mutex<Vec<UsageRecord>>,
    exhausted: Mutex<Vec<BudgetExceeded>>,
}

impl UsageSink for Recorder {
    fn record_usage(&self, record: &UsageRecord) {
        self.usage.lock().unwrap().push(record.clone());
    }

    fn budget_exhausted(&self, _meta: &CallMeta, exceeded: &BudgetExceeded) {
        self.exhausted.lock().unwrap().push(exceeded.clone());
    }
}

const SCRIPT: &str = r#"
replies:
  - role: implementer
    reply:
      text: working
      usage: {input: 200, output: 50, cache_read: 1000}
"#;

#[tokio::test]
async fn a_run_stops_at_its_budget_and_spends_nothing_beyond_it() {
    let limits = BudgetLimits {
        run: Limit {
            tokens: None,
            usd: Some(0.01),
        },
        ..BudgetLimits::default()
    };
    let ledger = Arc::new(Mutex::new(BudgetLedger::new(limits)));
    let recorder = Arc::new(Recorder::default());
    let price = Price {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
    };
    let provider = Metered::new(
        ScriptedProvider::new(Script::from_yaml(SCRIPT).unwrap()),
        recorder.clone(),
    )
    .with_price(price)
    .with_ledger(ledger.clone());

    let mut request = Request {
        system: vec!["persona".into()],
        messages: vec![Message::user("implement it")],
        max_tokens: 100,
        meta: CallMeta {
            role: Some("implementer".into()),
            brief: Some("ws1/impl".into()),
            workstream: Some("ws1".into()),
            ..CallMeta::default()
        },
        ..Request::default()
    };
    let mut completed = 0;
    let refusal = loop {
        match call(&provider, &request).await.0 {
            Ok(response) => {
                completed += 1;
                request.messages.push(Message::assistant(response.content));
                request.messages.push(Message::user("continue"));
            }
            Err(error) => break error,
        }
        assert!(completed < 100, "the budget never stopped the run");
    };
    let LlmError::Budget(exceeded) = refusal else {
        panic!("expected a budget refusal, got {refusal:?}")
    };
    assert_eq!(exceeded.scope, Scope::Run);
    // Each call costs 200·3 + 50·15 + 1000·0.3 = 1650 µ$; the worst-case check stops before the limit.
    assert_eq!(completed, 6);
    let spent = ledger.lock().unwrap().spent(&Scope::Run);
    assert!(spent.usd <= 0.01, "spent {} beyond the limit", spent.usd);
    assert_eq!(spent.tokens, 6 * 1250);
    assert_eq!(recorder.exhausted.lock().unwrap().as_slice(), [exceeded]);
    let usage = recorder.usage.lock().unwrap();
    assert_eq!(usage.len(), 6);
    assert_eq!(usage[0].provider, "scripted");
    assert_eq!(usage[0].meta.brief.as_deref(), Some("ws1/impl"));
    assert!((usage[0].cost_usd.unwrap() - 0.00165).abs() < 1e-12);
    let ws = ledger.lock().unwrap().spent(&Scope::Workstream("ws1".into()));
    assert_eq!(ws.tokens, 6 * 1250);
}
