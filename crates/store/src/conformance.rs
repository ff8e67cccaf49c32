//! The conformance suite: the behaviour every [`Blackboard`] backend must show, written once against the
//! trait. Each property is a plain function taking a factory of [`Fixture`]s (one fresh, empty store per
//! call, from which the property may open several handles, as several processes would). A backend's test
//! file runs them all with one line, [`conformance_tests!`](crate::conformance_tests):
//!
//! ```ignore
//! fn fixture() -> agency_store::conformance::Fixture { /* a fresh store */ }
//! agency_store::conformance_tests!(fixture);
//! ```
//!
//! Compiled only with the `conformance` feature. Assertions panic, as in any test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use agency_core::contract::GoalContract;
use agency_core::teachback::TeachbackState;
use agency_core::variety::Variety;
use agency_core::{
    Brief, BriefId, BriefStatus, EventKind, GateDecision, GateId, GateKind, GateStatus, NewEvent, RunId, Tier,
};
use chrono::Utc;
use serde_json::json;
use uuid::Uuid;

use crate::{Blackboard, NewArtifact, NewGate, NewRun, Result, RunStatus, StoreError};

/// One fresh store: opens any number of handles on it, and keeps whatever backs it (a temp dir, a
/// scratch schema) alive until dropped.
pub struct Fixture {
    open: Box<dyn Fn() -> Result<Box<dyn Blackboard>> + Send + Sync>,
    _guard: Box<dyn Any + Send + Sync>,
}

impl Fixture {
    /// A fixture whose handles come from `open`; `guard` is dropped with the fixture.
    pub fn new(
        open: impl Fn() -> Result<Box<dyn Blackboard>> + Send + Sync + 'static,
        guard: impl Any + Send + Sync,
    ) -> Self {
        Fixture {
            open: Box::new(open),
            _guard: Box::new(guard),
        }
    }

    /// A new handle (its own connection) on the store.
    pub fn handle(&self) -> Box<dyn Blackboard> {
        (self.open)().expect("opening a handle on the fixture store")
    }
}

impl fmt::Debug for Fixture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fixture").finish_non_exhaustive()
    }
}

/// What every property takes: a factory of fresh stores.
pub type Factory<'a> = &'a dyn Fn() -> Fixture;

/// Runs every property against a backend: expands to one `#[test]` per property, each calling it with
/// `$fixture` (a `fn() -> Fixture`).
#[macro_export]
macro_rules! conformance_tests {
    ($fixture:path) => {
        $crate::conformance_tests!(@each $fixture;
            runs_round_trip_newest_first,
            run_status_is_compare_and_set_with_event,
            prefixes_resolve_unique_ambiguous_unknown_and_invalid,
            events_after_orders_filters_and_pages,
            events_need_an_existing_run,
            briefs_round_trip_every_field,
            insert_brief_checks_references,
            insert_briefs_is_all_or_nothing,
            brief_status_cas_writes_event_or_nothing,
            teachback_cas_writes_event_or_nothing,
            brief_workspace_is_recorded,
            claiming_respects_dependencies_and_runs,
            concurrent_claims_across_handles_are_exclusive,
            concurrent_claims_on_one_shared_handle_are_exclusive,
            gates_open_decide_and_refuse_a_second_decision,
            pause_gates_pause_and_resume,
            decide_pending_gate_takes_the_oldest,
            a_gate_decided_through_one_handle_is_seen_by_another,
            concurrent_gate_decisions_have_one_winner,
            artifacts_round_trip,
            data_persists_across_handles,
            reopening_is_idempotent,
        );
    };
    (@each $fixture:path; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $crate::conformance::$name(&$fixture);
            }
        )*
    };
}

// --- helpers ----------------------------------------------------------------------------------------------

/// A run with a fresh id.
pub fn new_run(bb: &dyn Blackboard) -> RunId {
    bb.create_run(NewRun::new("make the tests pass", "/tmp/repo"))
        .unwrap()
        .id
}

/// A minimal pending T4 brief of `run`.
pub fn sample_brief(run: RunId, title: &str) -> Brief {
    Brief {
        id: BriefId::new(),
        run,
        parent: None,
        tier: Tier::T4,
        workstream: "ws-core".into(),
        title: title.into(),
        personality: None,
        goal_anchor: "make the tests pass".into(),
        instructions: format!("do {title}"),
        inputs: Vec::new(),
        variety: None,
        contract: None,
        retry_budget: 2,
        attempt: 0,
        depends_on: Vec::new(),
        branch: None,
        worktree: None,
        status: BriefStatus::Pending,
        teachback: TeachbackState::Pending,
        claimed_by: None,
        created_at: Utc::now(),
    }
}

fn kinds(bb: &dyn Blackboard, run: RunId) -> Vec<EventKind> {
    bb.events_after(Some(run), 0, 10_000)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect()
}

fn approve(by: &str) -> GateDecision {
    GateDecision::Approve {
        by: by.into(),
        note: Some("looks right".into()),
    }
}

fn reject(by: &str) -> GateDecision {
    GateDecision::Reject {
        by: by.into(),
        reason: "split the API work".into(),
    }
}

// --- runs -------------------------------------------------------------------------------------------------

/// A created run reads back equal, starts `planning`, writes `run_created`; `list_runs` is newest first;
/// a duplicate id is refused.
pub fn runs_round_trip_newest_first(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let mut new = NewRun::new("ship the queue", "/src/app");
    new.base_rev = Some("abc123".into());
    new.config = json!({ "strict_mode": true });
    new.budgets = json!({ "usd": 5.0 });
    let first = bb.create_run(new.clone()).unwrap();
    assert_eq!(first.status, RunStatus::Planning);
    assert_eq!(first.goal, "ship the queue");
    assert_eq!(bb.get_run(first.id).unwrap(), first);
    let second = new_run(bb.as_ref());

    let listed: Vec<RunId> = bb.list_runs().unwrap().iter().map(|r| r.id).collect();
    assert_eq!(listed, vec![second, first.id]);

    let events = bb.events_after(Some(first.id), 0, 10).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::RunCreated);
    assert_eq!(events[0].payload["goal"], "ship the queue");

    assert!(matches!(
        bb.create_run(new),
        Err(StoreError::AlreadyExists { what: "run", .. })
    ));
    assert!(matches!(
        bb.get_run(RunId::new()),
        Err(StoreError::NotFound { what: "run", .. })
    ));
}

/// `set_run_status` writes `run_status` with `from`/`to`; with a stale `expected` it fails with `Conflict`
/// and writes nothing.
pub fn run_status_is_compare_and_set_with_event(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let updated = bb
        .set_run_status(run, Some(RunStatus::Planning), RunStatus::AwaitingGate)
        .unwrap();
    assert_eq!(updated.status, RunStatus::AwaitingGate);
    assert_eq!(bb.get_run(run).unwrap().status, RunStatus::AwaitingGate);
    let last = bb.events_after(Some(run), 0, 10).unwrap().pop().unwrap();
    assert_eq!(last.kind, EventKind::RunStatus);
    assert_eq!(last.payload, json!({ "from": "planning", "to": "awaiting_gate" }));

    let seq = bb.last_seq(Some(run)).unwrap();
    let err = bb
        .set_run_status(run, Some(RunStatus::Planning), RunStatus::Running)
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    assert_eq!(
        bb.last_seq(Some(run)).unwrap(),
        seq,
        "a failed compare-and-set writes no event"
    );
    assert_eq!(bb.get_run(run).unwrap().status, RunStatus::AwaitingGate);

    bb.set_run_status(run, None, RunStatus::Cancelled).unwrap();
    assert_eq!(bb.get_run(run).unwrap().status, RunStatus::Cancelled);
    assert!(matches!(
        bb.set_run_status(RunId::new(), None, RunStatus::Running),
        Err(StoreError::NotFound { .. })
    ));
}

/// Ids resolve from their full form (with or without dashes, any case) or any unique prefix; an ambiguous
/// prefix names its candidates; unknown and non-hex input are their own errors. Briefs and gates alike.
pub fn prefixes_resolve_unique_ambiguous_unknown_and_invalid(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let ids = [
        Uuid::from_u128(0xaaaa_1111_0000_7000_8000_0000_0000_0001),
        Uuid::from_u128(0xaaaa_2222_0000_7000_8000_0000_0000_0002),
        Uuid::from_u128(0xbbbb_3333_0000_7000_8000_0000_0000_0003),
    ];
    for id in ids {
        let mut new = NewRun::new("goal", "/repo");
        new.id = RunId(id);
        bb.create_run(new).unwrap();
    }
    let a1 = RunId(ids[0]);
    assert_eq!(bb.resolve_run(&a1.to_string()).unwrap(), a1);
    assert_eq!(bb.resolve_run(&a1.0.simple().to_string()).unwrap(), a1);
    assert_eq!(bb.resolve_run(&a1.to_string().to_uppercase()).unwrap(), a1);
    assert_eq!(bb.resolve_run("aaaa1").unwrap(), a1);
    assert_eq!(bb.resolve_run("aaaa-1").unwrap(), a1);
    assert_eq!(bb.resolve_run("b").unwrap(), RunId(ids[2]));

    match bb.resolve_run("aaaa") {
        Err(StoreError::AmbiguousPrefix {
            what,
            prefix,
            candidates,
            total,
        }) => {
            assert_eq!(what, "run");
            assert_eq!(prefix, "aaaa");
            assert_eq!(total, 2);
            assert_eq!(candidates, vec![ids[0].to_string(), ids[1].to_string()]);
        }
        other => panic!("expected AmbiguousPrefix, got {other:?}"),
    }
    assert!(matches!(
        bb.resolve_run("c"),
        Err(StoreError::NotFound { what: "run", .. })
    ));
    assert!(matches!(
        bb.resolve_run(&format!("{}0", ids[0].simple())),
        Err(StoreError::NotFound { .. })
    ));
    for bad in ["xyz", "", "-", "aa%", "a*", "a_b"] {
        assert!(
            matches!(
                bb.resolve_run(bad),
                Err(StoreError::InvalidId { what: "run", .. })
            ),
            "{bad:?}"
        );
    }

    let mut brief = sample_brief(a1, "one");
    brief.id = BriefId(Uuid::from_u128(0xcccc_0000_0000_7000_8000_0000_0000_0001));
    bb.insert_brief(&brief).unwrap();
    assert_eq!(bb.resolve_brief("cccc").unwrap(), brief.id);
    assert!(matches!(
        bb.resolve_brief("aaaa"),
        Err(StoreError::NotFound { what: "brief", .. })
    ));
    let gate = bb
        .open_gate(NewGate::new(a1, GateKind::T1Plan, json!({})))
        .unwrap();
    assert_eq!(bb.resolve_gate(&gate.id.short()).unwrap(), gate.id);
    assert!(matches!(
        bb.resolve_gate("zz"),
        Err(StoreError::InvalidId { what: "gate", .. })
    ));
}

// --- events -----------------------------------------------------------------------------------------------

/// `events_after` returns events in `seq` order, filtered by run, in pages; `last_seq` matches.
pub fn events_after_orders_filters_and_pages(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    assert_eq!(bb.last_seq(None).unwrap(), 0);
    let a = new_run(bb.as_ref());
    let b = new_run(bb.as_ref());
    for i in 0..25 {
        let run = if i % 2 == 0 { a } else { b };
        let event = NewEvent::log(run, "info", format!("line {i}")).tier(Tier::T3);
        let stored = bb.append_event(event.clone()).unwrap();
        assert_eq!(stored.kind, EventKind::Log);
        assert_eq!(stored.ts, event.ts);
        assert_eq!(stored.tier, Some(Tier::T3));
    }
    let all = bb.events_after(None, 0, 1000).unwrap();
    assert_eq!(all.len(), 27, "two run_created and 25 log lines");
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(bb.last_seq(None).unwrap(), all.last().unwrap().seq);

    let mut paged = Vec::new();
    let mut after = 0;
    loop {
        let page = bb.events_after(Some(a), after, 5).unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 5);
        after = page.last().unwrap().seq;
        paged.extend(page);
    }
    let expected: Vec<_> = all.iter().filter(|e| e.run == a).cloned().collect();
    assert_eq!(paged, expected);
    assert_eq!(paged.len(), 14);
    assert_eq!(paged[1].payload, json!({ "level": "info", "message": "line 0" }));
    assert_eq!(bb.last_seq(Some(a)).unwrap(), expected.last().unwrap().seq);
    assert!(
        bb.events_after(None, bb.last_seq(None).unwrap(), 10)
            .unwrap()
            .is_empty()
    );
}

/// Appending an event for an unknown run is refused.
pub fn events_need_an_existing_run(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let err = bb
        .append_event(NewEvent::log(RunId::new(), "info", "orphan"))
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { what: "run", .. }), "{err}");
    assert_eq!(bb.last_seq(None).unwrap(), 0);
}

// --- briefs -----------------------------------------------------------------------------------------------

/// A brief with every field set reads back equal; `list_briefs` is oldest first; `brief_created` written.
pub fn briefs_round_trip_every_field(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let parent = sample_brief(run, "lead");
    bb.insert_brief(&parent).unwrap();
    let mut brief = sample_brief(run, "queue-client");
    brief.parent = Some(parent.id);
    brief.personality = Some("backend-engineer".into());
    brief.inputs = vec!["architecture".into(), "boundaries".into()];
    brief.variety = Some(Variety::new(2, 3, 2, 4).unwrap());
    brief.contract = Some(GoalContract {
        done_when: "cargo test passes".into(),
        verify: Some("cargo test".into()),
        failure_modes: vec!["tests deleted".into()],
        may_edit: vec!["tests/queue.rs".into()],
    });
    brief.retry_budget = 3;
    brief.attempt = 1;
    brief.depends_on = vec![parent.id];
    brief.branch = Some("agency/queue-client".into());
    brief.worktree = Some("/tmp/wt/queue-client".into());
    brief.teachback = TeachbackState::UnderReview;
    brief.claimed_by = Some("runner-1".into());
    brief.status = BriefStatus::Verifying;
    bb.insert_brief(&brief).unwrap();

    assert_eq!(bb.get_brief(brief.id).unwrap(), brief);
    assert_eq!(bb.list_briefs(run).unwrap(), vec![parent.clone(), brief.clone()]);
    assert!(bb.list_briefs(new_run(bb.as_ref())).unwrap().is_empty());
    let created: Vec<_> = bb
        .events_after(Some(run), 0, 100)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EventKind::BriefCreated)
        .collect();
    assert_eq!(created.len(), 2);
    assert_eq!(created[1].brief, Some(brief.id));
    assert_eq!(created[1].tier, Some(Tier::T4));
    assert_eq!(created[1].payload["title"], "queue-client");
    assert!(matches!(
        bb.get_brief(BriefId::new()),
        Err(StoreError::NotFound { what: "brief", .. })
    ));
}

/// A brief's run, parent and dependencies must exist (in its run); a duplicate id is refused; a refused
/// brief writes no event.
pub fn insert_brief_checks_references(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let other_run = new_run(bb.as_ref());
    let seq = bb.last_seq(None).unwrap();

    let orphan = sample_brief(RunId::new(), "orphan");
    assert!(matches!(
        bb.insert_brief(&orphan),
        Err(StoreError::NotFound { what: "run", .. })
    ));
    let mut dangling = sample_brief(run, "dangling");
    dangling.depends_on = vec![BriefId::new()];
    assert!(matches!(
        bb.insert_brief(&dangling),
        Err(StoreError::NotFound { .. })
    ));
    let mut no_parent = sample_brief(run, "no-parent");
    no_parent.parent = Some(BriefId::new());
    assert!(matches!(
        bb.insert_brief(&no_parent),
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(bb.last_seq(None).unwrap(), seq);

    let foreign = sample_brief(other_run, "foreign");
    bb.insert_brief(&foreign).unwrap();
    let mut cross = sample_brief(run, "cross");
    cross.depends_on = vec![foreign.id];
    assert!(matches!(bb.insert_brief(&cross), Err(StoreError::Invalid(_))));
    assert!(matches!(
        bb.insert_brief(&foreign),
        Err(StoreError::AlreadyExists { what: "brief", .. })
    ));
}

/// A batch of briefs is written whole (later ones may depend on earlier ones), or not at all.
pub fn insert_briefs_is_all_or_nothing(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let first = sample_brief(run, "first");
    let mut second = sample_brief(run, "second");
    second.depends_on = vec![first.id];
    bb.insert_briefs(&[first.clone(), second.clone()]).unwrap();
    assert_eq!(bb.list_briefs(run).unwrap(), vec![first.clone(), second]);

    let seq = bb.last_seq(None).unwrap();
    let third = sample_brief(run, "third");
    let mut broken = sample_brief(run, "broken");
    broken.depends_on = vec![BriefId::new()];
    assert!(matches!(
        bb.insert_briefs(&[third.clone(), broken]),
        Err(StoreError::NotFound { .. })
    ));
    assert!(
        matches!(bb.get_brief(third.id), Err(StoreError::NotFound { .. })),
        "nothing of the batch"
    );
    assert_eq!(bb.last_seq(None).unwrap(), seq, "and no event");
    bb.insert_briefs(&[]).unwrap();
}

/// `update_brief_status` is compare-and-set: it writes the new status and the caller's event together, or
/// on a stale `from` (or an event for another run) fails and writes neither.
pub fn brief_status_cas_writes_event_or_nothing(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "task");
    bb.insert_brief(&brief).unwrap();

    let spawned = NewEvent::new(run, EventKind::Spawned, json!({ "runtime": "builtin" }));
    let updated = bb
        .update_brief_status(brief.id, BriefStatus::Pending, BriefStatus::Running, spawned)
        .unwrap();
    assert_eq!(updated.status, BriefStatus::Running);
    let last = bb.events_after(Some(run), 0, 100).unwrap().pop().unwrap();
    assert_eq!(last.kind, EventKind::Spawned);
    assert_eq!(last.brief, Some(brief.id), "the brief is filled in");

    let seq = bb.last_seq(None).unwrap();
    let stale = NewEvent::new(run, EventKind::Completed, json!({}));
    match bb.update_brief_status(brief.id, BriefStatus::Pending, BriefStatus::Done, stale) {
        Err(StoreError::Conflict { expected, found, .. }) => {
            assert_eq!(expected, "pending");
            assert_eq!(found, "running");
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert_eq!(
        bb.last_seq(None).unwrap(),
        seq,
        "a failed compare-and-set writes no event"
    );
    assert_eq!(bb.get_brief(brief.id).unwrap().status, BriefStatus::Running);

    let elsewhere = NewEvent::new(new_run(bb.as_ref()), EventKind::Completed, json!({}));
    let seq = bb.last_seq(None).unwrap();
    assert!(matches!(
        bb.update_brief_status(brief.id, BriefStatus::Running, BriefStatus::Done, elsewhere),
        Err(StoreError::Invalid(_))
    ));
    assert_eq!(bb.last_seq(None).unwrap(), seq);
    assert_eq!(bb.get_brief(brief.id).unwrap().status, BriefStatus::Running);

    let missing = NewEvent::new(run, EventKind::Failed, json!({}));
    assert!(matches!(
        bb.update_brief_status(BriefId::new(), BriefStatus::Running, BriefStatus::Failed, missing),
        Err(StoreError::NotFound { .. })
    ));
}

/// `set_teachback_state` is compare-and-set with its event, like the status.
pub fn teachback_cas_writes_event_or_nothing(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "task");
    bb.insert_brief(&brief).unwrap();
    let submitted = NewEvent::new(run, EventKind::TeachbackSubmitted, json!({ "building": "x" }));
    let updated = bb
        .set_teachback_state(
            brief.id,
            TeachbackState::Pending,
            TeachbackState::UnderReview,
            submitted,
        )
        .unwrap();
    assert_eq!(updated.teachback, TeachbackState::UnderReview);
    assert_eq!(
        kinds(bb.as_ref(), run).last(),
        Some(&EventKind::TeachbackSubmitted)
    );

    let seq = bb.last_seq(None).unwrap();
    let approved = NewEvent::new(run, EventKind::TeachbackApproved, json!({}));
    let err = bb
        .set_teachback_state(
            brief.id,
            TeachbackState::Correcting,
            TeachbackState::Active,
            approved,
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    assert_eq!(bb.last_seq(None).unwrap(), seq);
    assert_eq!(
        bb.get_brief(brief.id).unwrap().teachback,
        TeachbackState::UnderReview
    );
}

/// Branch and worktree are recorded and cleared, without an event.
pub fn brief_workspace_is_recorded(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "task");
    bb.insert_brief(&brief).unwrap();
    let seq = bb.last_seq(None).unwrap();
    let updated = bb
        .set_brief_workspace(brief.id, Some("agency/task"), Some("/wt/task"))
        .unwrap();
    assert_eq!(updated.branch.as_deref(), Some("agency/task"));
    assert_eq!(
        bb.get_brief(brief.id).unwrap().worktree.as_deref(),
        Some("/wt/task")
    );
    assert_eq!(bb.set_brief_workspace(brief.id, None, None).unwrap().branch, None);
    assert_eq!(bb.last_seq(None).unwrap(), seq);
    assert!(matches!(
        bb.set_brief_workspace(BriefId::new(), None, None),
        Err(StoreError::NotFound { .. })
    ));
}

/// A claim takes the oldest pending brief whose dependencies are all done, of the given run; it sets
/// `running` and `claimed_by` and writes `brief_status`. Going back to pending clears the claim.
pub fn claiming_respects_dependencies_and_runs(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let other = new_run(bb.as_ref());
    assert_eq!(bb.claim_next_brief(Some(run), "w").unwrap(), None);

    let first = sample_brief(run, "first");
    bb.insert_brief(&first).unwrap();
    let mut second = sample_brief(run, "second");
    second.depends_on = vec![first.id];
    bb.insert_brief(&second).unwrap();
    let elsewhere = sample_brief(other, "elsewhere");
    bb.insert_brief(&elsewhere).unwrap();

    let claimed = bb.claim_next_brief(Some(run), "worker-1").unwrap().unwrap();
    assert_eq!(claimed.id, first.id);
    assert_eq!(claimed.status, BriefStatus::Running);
    assert_eq!(claimed.claimed_by.as_deref(), Some("worker-1"));
    assert_eq!(bb.get_brief(first.id).unwrap(), claimed);
    let event = bb.events_after(Some(run), 0, 100).unwrap().pop().unwrap();
    assert_eq!(event.kind, EventKind::BriefStatus);
    assert_eq!(event.brief, Some(first.id));
    assert_eq!(event.payload["claimed_by"], "worker-1");

    assert_eq!(
        bb.claim_next_brief(Some(run), "worker-2").unwrap(),
        None,
        "second waits for first"
    );
    let done = NewEvent::new(run, EventKind::Completed, json!({}));
    bb.update_brief_status(first.id, BriefStatus::Running, BriefStatus::Done, done)
        .unwrap();
    assert_eq!(
        bb.claim_next_brief(Some(run), "worker-2").unwrap().unwrap().id,
        second.id
    );
    assert_eq!(bb.claim_next_brief(Some(run), "worker-2").unwrap(), None);

    let requeue = NewEvent::new(other, EventKind::Retried, json!({}));
    assert_eq!(
        bb.claim_next_brief(None, "worker-3").unwrap().unwrap().id,
        elsewhere.id
    );
    let requeued = bb
        .update_brief_status(elsewhere.id, BriefStatus::Running, BriefStatus::Pending, requeue)
        .unwrap();
    assert_eq!(requeued.claimed_by, None);
    assert_eq!(
        bb.claim_next_brief(None, "worker-4")
            .unwrap()
            .unwrap()
            .claimed_by
            .as_deref(),
        Some("worker-4")
    );
    assert_eq!(bb.claim_next_brief(None, "worker-4").unwrap(), None);
}

fn claim_all_in_threads(bbs: Vec<Arc<dyn Blackboard>>, run: RunId) -> HashMap<BriefId, Vec<String>> {
    let claims = std::thread::scope(|scope| {
        let workers: Vec<_> = bbs
            .into_iter()
            .enumerate()
            .map(|(n, bb)| {
                scope.spawn(move || {
                    let name = format!("worker-{n}");
                    let mut mine = Vec::new();
                    while let Some(brief) = bb.claim_next_brief(Some(run), &name).unwrap() {
                        assert_eq!(brief.claimed_by.as_deref(), Some(name.as_str()));
                        mine.push((brief.id, name.clone()));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect::<Vec<_>>()
    });
    let mut by_brief: HashMap<BriefId, Vec<String>> = HashMap::new();
    for (id, who) in claims {
        by_brief.entry(id).or_default().push(who);
    }
    by_brief
}

fn insert_many(bb: &dyn Blackboard, run: RunId, count: usize) -> Vec<BriefId> {
    (0..count)
        .map(|i| {
            let brief = sample_brief(run, &format!("task-{i}"));
            bb.insert_brief(&brief).unwrap();
            brief.id
        })
        .collect()
}

fn assert_each_claimed_once(bb: &dyn Blackboard, ids: &[BriefId], claims: &HashMap<BriefId, Vec<String>>) {
    assert_eq!(claims.len(), ids.len(), "every brief is claimed");
    for id in ids {
        let who = &claims[id];
        assert_eq!(who.len(), 1, "brief {id} claimed by {who:?}");
        assert_eq!(bb.get_brief(*id).unwrap().claimed_by.as_ref(), Some(&who[0]));
    }
}

/// 200 briefs, 4 threads each with its own handle (as separate processes would): each brief is claimed
/// exactly once, by the claimer the row names.
pub fn concurrent_claims_across_handles_are_exclusive(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let ids = insert_many(bb.as_ref(), run, 200);
    let handles: Vec<Arc<dyn Blackboard>> = (0..4).map(|_| Arc::from(fx.handle())).collect();
    let claims = claim_all_in_threads(handles, run);
    assert_each_claimed_once(bb.as_ref(), &ids, &claims);
}

/// The same with 4 threads sharing one handle.
pub fn concurrent_claims_on_one_shared_handle_are_exclusive(factory: Factory<'_>) {
    let fx = factory();
    let bb: Arc<dyn Blackboard> = Arc::from(fx.handle());
    let run = new_run(bb.as_ref());
    let ids = insert_many(bb.as_ref(), run, 100);
    let claims = claim_all_in_threads(vec![bb.clone(), bb.clone(), bb.clone(), bb.clone()], run);
    assert_each_claimed_once(bb.as_ref(), &ids, &claims);
}

// --- gates ------------------------------------------------------------------------------------------------

/// A gate opens pending with `gate_pending`, is listed, is approved with `gate_approved`, and a second
/// decision is refused with `GateAlreadyDecided` (naming who decided) and writes nothing. Rejection too.
pub fn gates_open_decide_and_refuse_a_second_decision(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "task");
    bb.insert_brief(&brief).unwrap();
    let summary = json!({ "produced": "plan", "next": "spawn T2" });
    let gate = bb
        .open_gate(
            NewGate::new(run, GateKind::T1Plan, summary.clone())
                .tier(Tier::T1)
                .brief(brief.id),
        )
        .unwrap();
    assert_eq!(gate.status, GateStatus::Pending);
    assert_eq!(bb.get_gate(gate.id).unwrap(), gate);
    assert_eq!(bb.pending_gates(Some(run)).unwrap(), vec![gate.clone()]);
    assert_eq!(bb.pending_gates(None).unwrap(), vec![gate.clone()]);
    let opened = bb.events_after(Some(run), 0, 100).unwrap().pop().unwrap();
    assert_eq!(opened.kind, EventKind::GatePending);
    assert_eq!(opened.tier, Some(Tier::T1));
    assert_eq!(opened.brief, Some(brief.id));
    assert_eq!(opened.payload["kind"], "t1_plan");

    let decided = bb.decide_gate(gate.id, approve("cli:ana")).unwrap();
    assert_eq!(decided.status, GateStatus::Approved);
    assert_eq!(decided.decided_by.as_deref(), Some("cli:ana"));
    assert_eq!(decided.note.as_deref(), Some("looks right"));
    assert!(decided.decided_at.is_some());
    assert_eq!(bb.get_gate(gate.id).unwrap(), decided);
    assert!(bb.pending_gates(Some(run)).unwrap().is_empty());
    assert_eq!(kinds(bb.as_ref(), run).last(), Some(&EventKind::GateApproved));

    let seq = bb.last_seq(None).unwrap();
    match bb.decide_gate(gate.id, reject("dashboard")) {
        Err(StoreError::GateAlreadyDecided {
            status, decided_by, ..
        }) => {
            assert_eq!(status, GateStatus::Approved);
            assert_eq!(decided_by.as_deref(), Some("cli:ana"));
        }
        other => panic!("expected GateAlreadyDecided, got {other:?}"),
    }
    assert_eq!(bb.last_seq(None).unwrap(), seq);

    let second = bb
        .open_gate(NewGate::new(run, GateKind::T3Plan, json!({})))
        .unwrap();
    let rejected = bb.decide_gate(second.id, reject("cli:bo")).unwrap();
    assert_eq!(rejected.status, GateStatus::Rejected);
    assert_eq!(rejected.note.as_deref(), Some("split the API work"));
    let event = bb.events_after(Some(run), 0, 100).unwrap().pop().unwrap();
    assert_eq!(event.kind, EventKind::GateRejected);
    assert_eq!(event.payload["reason"], "split the API work");
    assert_eq!(bb.list_gates(run).unwrap().len(), 2);
    assert!(matches!(
        bb.decide_gate(GateId::new(), approve("x")),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        bb.open_gate(NewGate::new(RunId::new(), GateKind::Budget, json!({}))),
        Err(StoreError::NotFound { what: "run", .. })
    ));
}

/// A pause gate opens with `gate_paused` and approving it writes `gate_resumed`.
pub fn pause_gates_pause_and_resume(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let pause = bb
        .open_gate(NewGate::new(run, GateKind::Pause, json!({ "by": "cli" })))
        .unwrap();
    assert_eq!(kinds(bb.as_ref(), run).last(), Some(&EventKind::GatePaused));
    bb.decide_gate(pause.id, approve("cli:ana")).unwrap();
    assert_eq!(kinds(bb.as_ref(), run).last(), Some(&EventKind::GateResumed));
}

/// `decide_pending_gate` decides the oldest pending gate of the run; with none it fails `NoPendingGate`.
pub fn decide_pending_gate_takes_the_oldest(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let other = new_run(bb.as_ref());
    assert!(matches!(
        bb.decide_pending_gate(run, approve("cli")),
        Err(StoreError::NoPendingGate { run: r }) if r == run
    ));
    bb.open_gate(NewGate::new(other, GateKind::T1Plan, json!({})))
        .unwrap();
    let first = bb
        .open_gate(NewGate::new(run, GateKind::T1Plan, json!({})))
        .unwrap();
    let second = bb
        .open_gate(NewGate::new(run, GateKind::T2Lead, json!({})))
        .unwrap();
    assert_eq!(bb.decide_pending_gate(run, approve("cli")).unwrap().id, first.id);
    assert_eq!(bb.decide_pending_gate(run, reject("cli")).unwrap().id, second.id);
    assert!(matches!(
        bb.decide_pending_gate(run, approve("cli")),
        Err(StoreError::NoPendingGate { .. })
    ));
    assert_eq!(
        bb.pending_gates(None).unwrap().len(),
        1,
        "the other run's gate is untouched"
    );
}

/// A gate opened through one handle is seen pending through another, approved there, and the first handle
/// sees the approval (and is refused a second decision).
pub fn a_gate_decided_through_one_handle_is_seen_by_another(factory: Factory<'_>) {
    let fx = factory();
    let runner = fx.handle();
    let cli = fx.handle();
    let run = new_run(runner.as_ref());
    let gate = runner
        .open_gate(NewGate::new(run, GateKind::T1Plan, json!({})))
        .unwrap();
    let resolved = cli.resolve_gate(&gate.id.short()).unwrap();
    assert_eq!(cli.pending_gates(Some(run)).unwrap().len(), 1);
    cli.decide_gate(resolved, approve("cli:ana")).unwrap();
    assert_eq!(runner.get_gate(gate.id).unwrap().status, GateStatus::Approved);
    assert!(runner.pending_gates(Some(run)).unwrap().is_empty());
    assert_eq!(kinds(runner.as_ref(), run).last(), Some(&EventKind::GateApproved));
    assert!(matches!(
        runner.decide_gate(gate.id, reject("timeout")),
        Err(StoreError::GateAlreadyDecided { .. })
    ));
}

/// Two handles deciding the same gate at once: exactly one succeeds, one decision event is written.
pub fn concurrent_gate_decisions_have_one_winner(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    for _ in 0..10 {
        let gate = bb
            .open_gate(NewGate::new(run, GateKind::T5Verdict, json!({})))
            .unwrap();
        let results: Vec<_> = std::thread::scope(|scope| {
            let deciders: Vec<_> = (0..3)
                .map(|n| {
                    let handle = fx.handle();
                    scope.spawn(move || handle.decide_gate(gate.id, approve(&format!("human-{n}"))))
                })
                .collect();
            deciders.into_iter().map(|d| d.join().unwrap()).collect()
        });
        let wins = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(wins, 1, "{results:?}");
        assert!(
            results
                .iter()
                .all(|r| r.is_ok() || matches!(r, Err(StoreError::GateAlreadyDecided { .. })))
        );
    }
    let approvals = kinds(bb.as_ref(), run)
        .into_iter()
        .filter(|k| *k == EventKind::GateApproved)
        .count();
    assert_eq!(approvals, 10);
}

// --- artifacts --------------------------------------------------------------------------------------------

/// Artifacts (binary content included) read back equal, list by run and brief, and the newest of a name
/// wins; each writes an `artifact` event.
pub fn artifacts_round_trip(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "task");
    bb.insert_brief(&brief).unwrap();

    let plan = bb
        .put_artifact(NewArtifact::new(
            run,
            "plan",
            "application/json",
            b"{\"a\":1}".to_vec(),
        ))
        .unwrap();
    let binary: Vec<u8> = (0..=255).collect();
    let blob = bb
        .put_artifact(
            NewArtifact::new(run, "transcript", "application/octet-stream", binary.clone()).brief(brief.id),
        )
        .unwrap();
    assert_eq!(blob.size, 256);
    let newer_plan = bb
        .put_artifact(NewArtifact::new(
            run,
            "plan",
            "application/json",
            b"{\"a\":2}".to_vec(),
        ))
        .unwrap();

    let got = bb.get_artifact(blob.id).unwrap();
    assert_eq!(got.meta, blob);
    assert_eq!(got.bytes, binary);
    assert_eq!(bb.get_artifact(plan.id).unwrap().bytes, b"{\"a\":1}");
    assert_eq!(bb.latest_artifact(run, "plan").unwrap().unwrap().meta, newer_plan);
    assert_eq!(bb.latest_artifact(run, "nope").unwrap(), None);
    assert_eq!(
        bb.list_artifacts(run, None).unwrap(),
        vec![plan.clone(), blob.clone(), newer_plan]
    );
    assert_eq!(
        bb.list_artifacts(run, Some(brief.id)).unwrap(),
        vec![blob.clone()]
    );

    let events: Vec<_> = bb
        .events_after(Some(run), 0, 100)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EventKind::Artifact)
        .collect();
    assert_eq!(events.len(), 3);
    assert_eq!(events[1].brief, Some(brief.id));
    assert_eq!(events[1].payload["name"], "transcript");
    assert_eq!(events[1].payload["size"], 256);
    assert!(matches!(
        bb.get_artifact(crate::ArtifactId::new()),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        bb.put_artifact(NewArtifact::new(RunId::new(), "x", "text/plain", Vec::new())),
        Err(StoreError::NotFound { what: "run", .. })
    ));
}

// --- durability -------------------------------------------------------------------------------------------

/// What one handle wrote is all there through a handle opened after it was dropped.
pub fn data_persists_across_handles(factory: Factory<'_>) {
    let fx = factory();
    let (run, brief, gate, artifact, seq) = {
        let bb = fx.handle();
        let run = new_run(bb.as_ref());
        let brief = sample_brief(run, "task");
        bb.insert_brief(&brief).unwrap();
        let gate = bb
            .open_gate(NewGate::new(run, GateKind::T1Plan, json!({ "n": 1 })))
            .unwrap();
        let artifact = bb
            .put_artifact(NewArtifact::new(run, "plan", "text/plain", b"plan".to_vec()))
            .unwrap();
        (run, brief, gate, artifact, bb.last_seq(None).unwrap())
    };
    let bb = fx.handle();
    assert_eq!(bb.get_run(run).unwrap().id, run);
    assert_eq!(bb.get_brief(brief.id).unwrap(), brief);
    assert_eq!(bb.get_gate(gate.id).unwrap(), gate);
    assert_eq!(bb.get_artifact(artifact.id).unwrap().bytes, b"plan");
    assert_eq!(bb.last_seq(None).unwrap(), seq);
}

/// Opening the same store again and again (each open migrates) changes nothing and keeps it usable.
pub fn reopening_is_idempotent(factory: Factory<'_>) {
    let fx = factory();
    let run = new_run(fx.handle().as_ref());
    for _ in 0..3 {
        let bb = fx.handle();
        assert_eq!(bb.list_runs().unwrap().len(), 1);
        assert_eq!(bb.get_run(run).unwrap().status, RunStatus::Planning);
    }
    let bb = fx.handle();
    bb.insert_brief(&sample_brief(run, "after-reopen")).unwrap();
    assert_eq!(bb.list_briefs(run).unwrap().len(), 1);
}
