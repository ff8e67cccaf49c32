//! Budgets on the blackboard. Every model call of a run is checked against the run's ledger *before* it is
//! made ([`agency_llm::Metered`]); a call that would pass a limit is not made, a `budget_exhausted` event is
//! written, and a `budget` gate opens. Approving the gate doubles the exhausted limit (`--note` can name
//! the new limit: "tokens=500000" or "usd=12.5"); rejecting it stops the run. Usage events themselves come
//! from the agents' links, one per model call. External runtimes (Claude Code, Codex, pi) make their calls
//! themselves: the links charge what they report to the same ledger and, past a limit, report it here
//! ([`crate::brief_link::BriefLink::charging`]).

use std::sync::{Arc, Mutex};

use agency_core::event::payload::{self, BudgetAmount, BudgetScope};
use agency_core::event::{EventKind, EventPayload, NewEvent};
use agency_core::gate::{GateKind, GateStatus};
use agency_core::{GateId, RunId};
use agency_flow::budgets::{self, BudgetGateStep};
use agency_llm::{
    Amount, BudgetExceeded, BudgetLedger, CallMeta, Limit, ProviderTrouble, Scope, UsageRecord, UsageSink,
};
use agency_store::{Blackboard, NewGate, RunStatus};
use serde_json::json;

use crate::error::Result;

/// The run's ledger, shared by every metered provider and the engine (which raises limits).
pub type SharedLedger = Arc<Mutex<BudgetLedger>>;

/// Writes budget refusals to the blackboard and opens the `budget` gate.
#[derive(Debug)]
pub struct BlackboardSink {
    store: Arc<dyn Blackboard>,
}

impl BlackboardSink {
    /// A sink writing to `store`.
    pub fn new(store: Arc<dyn Blackboard>) -> Self {
        BlackboardSink { store }
    }
}

fn amount(a: &Amount) -> BudgetAmount {
    match a {
        Amount::Tokens(n) => BudgetAmount {
            tokens: Some(*n),
            usd: None,
        },
        Amount::Usd(usd) => BudgetAmount {
            tokens: None,
            usd: Some(*usd),
        },
    }
}

fn scope_detail(scope: &Scope) -> BudgetScope {
    let (kind, id) = match scope {
        Scope::Run => ("run", None),
        Scope::Workstream(ws) => ("workstream", Some(ws.clone())),
        Scope::Brief(b) => ("brief", Some(b.clone())),
    };
    BudgetScope {
        kind: kind.to_string(),
        id,
    }
}

impl UsageSink for BlackboardSink {
    fn record_usage(&self, _record: &UsageRecord) {
        // Usage events are written by the agents' links for every runtime alike (external agents report their
        // own usage, and the links charge it to the ledger); recording here too would count built-in calls
        // twice.
    }

    fn budget_exhausted(&self, meta: &CallMeta, exceeded: &BudgetExceeded) {
        let Some(run) = meta.run else { return };
        let payload = EventPayload::BudgetExhausted(payload::BudgetExhausted {
            scope: exceeded.scope.to_string(),
            scope_detail: scope_detail(&exceeded.scope),
            limit: amount(&exceeded.limit),
            spent: amount(&exceeded.spent),
            needed: amount(&exceeded.needed),
            brief: meta.brief.clone(),
        });
        let mut event = NewEvent::typed(run, payload);
        let event_payload = event.payload.clone();
        event.brief = meta.brief_id;
        event.tier = meta.tier;
        // A sink cannot fail the call (it is already refused); a store error here only loses the record.
        let _ = self.store.append_event(event);
        let pending = self
            .store
            .pending_gates(Some(run))
            .map(|gates| gates.iter().any(|g| g.kind == GateKind::Budget))
            .ok();
        if budgets::refusal_opens_gate(pending) {
            let summary = json!({
                "message": format!("Budget reached ({}: {} of {}) — approve to raise it, reject to stop", exceeded.scope, exceeded.spent, exceeded.limit),
                "produced": event_payload,
                "next": ["approve: the limit doubles (or --note tokens=N / usd=X sets it)", "reject: the run stops"],
            });
            let _ = self.store.open_gate(NewGate::new(run, GateKind::Budget, summary));
        }
    }

    fn provider_trouble(&self, meta: &CallMeta, trouble: &ProviderTrouble) {
        let Some(run) = meta.run else { return };
        let mut event = NewEvent::typed(run, EventPayload::Log(crate::outage::trouble_line(meta, trouble)));
        event.brief = meta.brief_id;
        event.tier = meta.tier;
        // Only a log line: the call goes on (or fails on its own), whatever the store says.
        let _ = self.store.append_event(event);
    }
}

/// The scopes an agent of `brief` spends against: the brief, its workstream and the run (as
/// [`agency_llm::CallScope::from_meta`] names them for the built-in agent's calls, and as
/// [`ledger_from_events`] replays them).
pub(crate) fn brief_scope(brief: &agency_core::Brief) -> agency_llm::CallScope {
    agency_llm::CallScope {
        workstream: Some(brief.workstream.clone()),
        brief: Some(brief.id.to_string()),
    }
}

/// Whether `ledger` has already spent past a limit of one of `brief`'s scopes (what a refused call would
/// have been refused for, with nothing more asked): reported to the blackboard as a refusal is, which
/// opens the `budget` gate unless one is open.
pub(crate) fn passed_limit(
    store: &Arc<dyn Blackboard>,
    ledger: &SharedLedger,
    brief: &agency_core::Brief,
) -> bool {
    let passed = ledger
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .check_before_call(&brief_scope(brief), agency_llm::Spend::default())
        .err();
    let Some(exceeded) = passed else {
        return false;
    };
    BlackboardSink::new(store.clone()).budget_exhausted(&crate::task::call_meta(brief), &exceeded);
    true
}

/// The ledger's scope of the decision core's.
fn ledger_scope(scope: budgets::Scope) -> Scope {
    match scope {
        budgets::Scope::Run => Scope::Run,
        budgets::Scope::Workstream(id) => Scope::Workstream(id),
        budgets::Scope::Brief(id) => Scope::Brief(id),
    }
}

/// Acts on decided budget gates once each: approve raises the limit, reject stops the run.
pub fn handle_budget_gates(
    store: &dyn Blackboard,
    ledger: Option<&SharedLedger>,
    run: RunId,
) -> Result<bool> {
    let Some(ledger) = ledger else {
        return Ok(false);
    };
    // Asked on every pass: the run's budget gates alone (nearly always none), not every gate of the run,
    // whose plan gate carries the whole plan.
    let decided: Vec<_> = store
        .list_gates_of_kind(run, GateKind::Budget)?
        .into_iter()
        .filter(|g| g.status != GateStatus::Pending)
        .collect();
    // This runs on every pass of the runner: the run's events (ten or more per brief) are read only when
    // there is a decided budget gate that may still need acting on, not on every pass.
    if decided.is_empty() {
        return Ok(false);
    }
    let handled = raised_gates(store, run)?;
    let mut progressed = false;
    for gate in decided {
        match budgets::after_budget_gate(gate.status, handled.contains(&gate.id)) {
            BudgetGateStep::Nothing => continue,
            BudgetGateStep::StopRun => {
                if store.get_run(run)?.status != RunStatus::Cancelled {
                    store.append_event(NewEvent::typed(
                        run,
                        EventPayload::Log(payload::LogLine::new(
                            "normal",
                            Some("BUDGET"),
                            "budget gate rejected — stopping the run",
                        )),
                    ))?;
                    store.set_run_status(run, None, RunStatus::Cancelled)?;
                }
                return Ok(true);
            }
            BudgetGateStep::Raise => {}
        }
        let detail = &gate.summary["produced"]["scope_detail"];
        let scope = ledger_scope(budgets::scope_of(detail["kind"].as_str(), detail["id"].as_str()));
        let mut ledger = ledger.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let current = ledger.limit(&scope);
        let raised = budgets::raised(
            gate.note.as_deref(),
            budgets::Limit {
                tokens: current.tokens,
                usd: current.usd,
            },
        );
        let raised = Limit {
            tokens: raised.tokens,
            usd: raised.usd,
        };
        ledger.raise(scope.clone(), raised);
        drop(ledger);
        store.append_event(NewEvent::typed(
            run,
            EventPayload::BudgetRaised(payload::BudgetRaised {
                gate: Some(gate.id),
                scope: scope.to_string(),
                tokens: raised.tokens,
                usd: raised.usd,
            }),
        ))?;
        progressed = true;
    }
    Ok(progressed)
}

/// The ids of the budget gates a `budget_raised` event already acted on, reading the run's events a page
/// at a time so they are never all held at once.
fn raised_gates(store: &dyn Blackboard, run: RunId) -> Result<Vec<GateId>> {
    let mut handled = Vec::new();
    let mut after = 0;
    loop {
        let page = store.events_after(Some(run), after, EVENT_PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for event in page.iter().filter(|e| e.kind == EventKind::BudgetRaised) {
            if let EventPayload::BudgetRaised(raised) = typed(event)? {
                handled.extend(raised.gate);
            }
        }
    }
    Ok(handled)
}

/// How many events are read at once when a run's whole history is replayed.
const EVENT_PAGE: usize = 1_000;

/// The ledger of a run as its `usage` events left it, for a runner resuming it: the limits from
/// team.yaml, the spending replayed, and every raise a human approved.
pub fn ledger_from_events(
    store: &dyn Blackboard,
    run: RunId,
    limits: agency_llm::BudgetLimits,
) -> Result<BudgetLedger> {
    let mut ledger = BudgetLedger::new(limits);
    // Usage events are looked up by brief: a map, not a scan of the briefs per event.
    let briefs: std::collections::HashMap<agency_core::BriefId, String> = store
        .list_briefs(run)?
        .into_iter()
        .map(|b| (b.id, b.workstream))
        .collect();
    let mut after = 0;
    loop {
        let page = store.events_after(Some(run), after, EVENT_PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for event in page {
            if !matches!(event.kind, EventKind::Usage | EventKind::BudgetRaised) {
                continue;
            }
            match typed(&event)? {
                EventPayload::Usage(usage) => {
                    let tokens = usage.input_tokens
                        + usage.output_tokens
                        + usage.cache_read_tokens
                        + usage.cache_write_tokens;
                    let usd = usage.cost_usd.unwrap_or(0.0);
                    let workstream = event.brief.and_then(|id| briefs.get(&id)).cloned();
                    let scope = agency_llm::CallScope {
                        workstream,
                        brief: event.brief.map(|b| b.to_string()),
                    };
                    ledger.record(&scope, agency_llm::Spend { tokens, usd });
                }
                EventPayload::BudgetRaised(raised) => {
                    let scope = ledger_scope(budgets::scope_named(&raised.scope));
                    let limit = Limit {
                        tokens: raised.tokens,
                        usd: raised.usd,
                    };
                    ledger.raise(scope, limit);
                }
                _ => {}
            }
        }
    }
    Ok(ledger)
}

/// The typed payload of `event`. A spending or raise record that does not read stops the rebuild of the
/// budget: reading it as nothing would let a resumed run spend past its limit.
fn typed(event: &agency_core::Event) -> Result<EventPayload> {
    event.typed().map_err(|e| {
        crate::error::EngineError::State(format!("event {} of run {}: {e}", event.seq, event.run.short()))
    })
}
