//! The budget gate's decisions in the cases `crates/engine/tests/engine/budgets.rs` drives. Both engine
//! tests stay: one drives an external agent's reported spending through the live ledger to the gate and
//! back, the other the claims given back unstarted (the store). Their decisions, as plain values: the gate
//! opens once, an approval without a note doubles the limit (one token to two: still spent), a
//! `tokens=N` note sets it, a rejection stops the run, and a gate is acted on once.

use agency_core::gate::GateStatus;
use agency_flow::budgets::{
    BudgetGateStep, Limit, Scope, after_budget_gate, limit_from_note, raised, refusal_opens_gate, scope_of,
};

fn tokens(n: u64) -> Limit {
    Limit {
        tokens: Some(n),
        usd: None,
    }
}

#[test]
fn an_approval_without_a_note_doubles_the_limit_and_a_note_sets_it() {
    assert_eq!(
        raised(None, tokens(1)),
        tokens(2),
        "one token doubled is still spent"
    );
    assert_eq!(
        raised(Some("looks fine"), tokens(1)),
        tokens(2),
        "a note that names no limit"
    );
    assert_eq!(raised(Some("tokens=100000000"), tokens(2)), tokens(100_000_000));
    assert_eq!(raised(Some(" tokens = 7 "), tokens(2)), tokens(7));
    assert_eq!(raised(None, tokens(u64::MAX)), tokens(u64::MAX), "saturates");
    assert_eq!(
        raised(Some("usd=12.5"), tokens(9)),
        Limit {
            tokens: None,
            usd: Some(12.5)
        }
    );
    assert_eq!(limit_from_note("tokens=lots"), None);
}

#[test]
fn a_refusal_opens_the_gate_only_when_none_waits() {
    assert!(refusal_opens_gate(Some(false)));
    assert!(!refusal_opens_gate(Some(true)), "one gate at a time");
    assert!(
        !refusal_opens_gate(None),
        "a blackboard that cannot say opens none"
    );
}

#[test]
fn a_decided_gate_is_acted_on_once() {
    assert_eq!(
        after_budget_gate(GateStatus::Pending, false),
        BudgetGateStep::Nothing
    );
    assert_eq!(
        after_budget_gate(GateStatus::Approved, false),
        BudgetGateStep::Raise
    );
    assert_eq!(
        after_budget_gate(GateStatus::Rejected, false),
        BudgetGateStep::StopRun
    );
    assert_eq!(
        after_budget_gate(GateStatus::Approved, true),
        BudgetGateStep::Nothing
    );
    assert_eq!(
        after_budget_gate(GateStatus::Rejected, true),
        BudgetGateStep::Nothing
    );
}

#[test]
fn the_exhausted_scope_is_read_from_its_record_and_an_unknown_one_is_the_runs() {
    assert_eq!(scope_of(Some("run"), None), Scope::Run);
    assert_eq!(
        scope_of(Some("workstream"), Some("ws-1")),
        Scope::Workstream("ws-1".into())
    );
    assert_eq!(scope_of(Some("brief"), Some("b-9")), Scope::Brief("b-9".into()));
    assert_eq!(scope_of(Some("galaxy"), Some("x")), Scope::Run);
    assert_eq!(scope_of(None, None), Scope::Run);
}
