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

mod artifacts;
mod batches;
mod briefs;
mod claims;
mod gates;
mod order;
mod placement;
mod runs;
mod sessions;

pub use artifacts::*;
pub use batches::*;
pub use briefs::*;
pub use claims::*;
pub use gates::*;
pub use order::*;
pub use placement::*;
pub use runs::*;
pub use sessions::*;

use crate::{
    Blackboard, Clock, DEFAULT_CLAIM_LEASE, NewArtifact, NewGate, NewRun, Result, RunStatus, SteppingClock,
    StoreError, SystemClock,
};

/// Opens one handle on a fixture's store, stamping with the given clock.
pub type Opener = dyn Fn(Arc<dyn Clock>) -> Result<Box<dyn Blackboard>> + Send + Sync;

/// One fresh store: opens any number of handles on it, and keeps whatever backs it (a temp dir, a
/// scratch schema) alive until dropped.
pub struct Fixture {
    open: Box<Opener>,
    _guard: Box<dyn Any + Send + Sync>,
}

impl Fixture {
    /// A fixture whose handles come from `open` (given the clock the handle stamps with); `guard` is
    /// dropped with the fixture.
    pub fn new(
        open: impl Fn(Arc<dyn Clock>) -> Result<Box<dyn Blackboard>> + Send + Sync + 'static,
        guard: impl Any + Send + Sync,
    ) -> Self {
        Fixture {
            open: Box::new(open),
            _guard: Box::new(guard),
        }
    }

    /// A new handle (its own connection) on the store, on the system clock.
    pub fn handle(&self) -> Box<dyn Blackboard> {
        self.handle_with_clock(Arc::new(SystemClock))
    }

    /// A new handle on the store that stamps its records with `clock`.
    pub fn handle_with_clock(&self, clock: Arc<dyn Clock>) -> Box<dyn Blackboard> {
        (self.open)(clock).expect("opening a handle on the fixture store")
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
/// `$fixture` (a `fn() -> Fixture`). With `skip_when = $skip` (a `fn() -> bool`), each test first asks
/// `$skip` and passes without running when it answers true: for a backend whose server may be absent.
#[macro_export]
macro_rules! conformance_tests {
    ($fixture:path) => {
        $crate::conformance_tests!($fixture, skip_when = $crate::conformance::never_skip);
    };
    ($fixture:path, skip_when = $skip:path) => {
        $crate::conformance_tests!(@each $fixture, $skip;
            runs_round_trip_newest_first,
            run_status_is_compare_and_set_with_event,
            one_driver_lease_per_run,
            id_parts_resolve_unique_ambiguous_unknown_and_invalid,
            events_after_orders_filters_and_pages,
            events_of_kinds_are_filtered_and_paged,
            briefs_in_events_after_name_each_brief_once,
            workstreams_in_events_after_name_each_once,
            events_need_an_existing_run,
            briefs_round_trip_every_field,
            insert_brief_checks_references,
            insert_briefs_is_all_or_nothing,
            brief_status_cas_writes_event_or_nothing,
            teachback_cas_writes_event_or_nothing,
            brief_workspace_is_recorded,
            briefs_by_status_by_parent_and_counted_by_workstream,
            claiming_respects_dependencies_and_runs,
            concurrent_claims_across_handles_are_exclusive,
            concurrent_claims_on_one_shared_handle_are_exclusive,
            expired_claims_are_reclaimed_with_an_event,
            concurrent_reclaims_take_each_expired_claim_once,
            claiming_several_briefs_at_once,
            concurrent_batch_claims_are_exclusive,
            claim_holders_writes_are_fenced_by_the_claims_generation,
            a_holders_gate_is_fenced_and_so_are_its_writes_after_giving_its_brief_up,
            write_batches_apply_every_change_in_order,
            a_failing_write_batch_writes_nothing,
            gates_open_decide_and_refuse_a_second_decision,
            gates_are_listed_by_kind,
            pause_gates_pause_and_resume,
            decide_pending_gate_takes_the_oldest,
            a_gate_decided_through_one_handle_is_seen_by_another,
            concurrent_gate_decisions_have_one_winner,
            artifacts_round_trip,
            data_persists_across_handles,
            reopening_is_idempotent,
            briefs_stamped_in_one_instant_keep_insertion_order,
            records_stamped_in_one_instant_keep_insertion_order,
            log_lines_appended_soon_keep_their_place,
            sessions_bind_to_briefs_with_agents_falling_back,
            session_tasks_record_their_briefs,
            claims_take_only_briefs_their_offer_may_take,
            placement_labels_are_checked,
            runner_offers_are_recorded_and_forgotten,
        );
    };
    (@each $fixture:path, $skip:path; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                if $skip() {
                    return;
                }
                $crate::conformance::$name(&$fixture);
            }
        )*
    };
}

/// The default for `skip_when`: never skip.
pub fn never_skip() -> bool {
    false
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

/// An event's payload, typed by its kind: a payload that does not read fails the property, naming the event.
pub(crate) fn typed(event: &agency_core::Event) -> agency_core::event::EventPayload {
    event
        .typed()
        .unwrap_or_else(|e| panic!("event {} ({}) does not read: {e}", event.seq, event.kind))
}

/// A `log` event's line.
pub(crate) fn log_line(event: &agency_core::Event) -> agency_core::event::payload::LogLine {
    match typed(event) {
        agency_core::event::EventPayload::Log(line) => line,
        other => panic!("event {} is not a log line: {other:?}", event.seq),
    }
}

/// A `brief_status` event's change.
pub(crate) fn brief_move(event: &agency_core::Event) -> agency_core::event::payload::BriefStatusChange {
    match typed(event) {
        agency_core::event::EventPayload::BriefStatus(moved) => moved,
        other => panic!("event {} is not a brief's move: {other:?}", event.seq),
    }
}
