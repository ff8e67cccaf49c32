//! A second architecture pass in one workstream, decided with plain values: the path an approved
//! `add_tiers: [t2]` gives, what each pass's T2 hands to (squad leads, or implementers straight away), what
//! follows a verified pass, what a rejected (never approved) proposal leaves, and where a second-pass
//! failure escalates.
//!
//! Took over from `crates/engine/tests/engine/second_pass.rs`:
//! - `a_rejected_t2_pass_changes_nothing` (the engine path a rejected amendment drives is kept in
//!   `amendments.rs::an_amendment_the_workstream_moved_past_is_refused_and_a_rejected_one_changes_nothing`);
//! - `a_t4s_t2_pass_goes_from_its_specialists_straight_to_implementers` (the wiring of a T2 pass whose path
//!   skips the squad lead is kept in `amendments.rs::a_planned_path_without_a_squad_lead_dispatches_the_specialists_squads_to_implementers`
//!   and the second pass itself in `second_pass.rs::a_t3s_t2_pass_approved_at_the_next_gate_runs_a_second_lead_and_both_passes_merge`).
//!
//! The escalation cases add the decision under the kept
//! `a_second_pass_implementer_out_of_retries_escalates_to_its_own_specialist`.

use agency_core::Tier::{self, T1, T2, T3, T4, T5};
use agency_core::escalation::{Decision, EscalationTarget};
use agency_core::event::payload::PathChange;
use agency_core::tiers::BriefRole;
use agency_flow::amendments::{
    AfterPass, Approval, Progress, after_architecture, after_pass, amended_path, check_path, current_path,
    passes, position,
};
use agency_flow::ladder::target_within;
use agency_flow::tiers::on_failure;
use proptest::prelude::*;

/// The plan's path of the seed's workstream.
const PLANNED: [Tier; 3] = [T3, T4, T5];
/// What a T3's approved `add_tiers: [t2]`, `insert_before: t3` makes of it.
const TWO_PASSES: [Tier; 6] = [T3, T4, T2, T3, T4, T5];
/// What a T4's approved `add_tiers: [t2]`, `insert_before: t5` makes of it.
const T4S_PASS: [Tier; 5] = [T3, T4, T2, T4, T5];

fn add_t2_before(before: Tier) -> PathChange {
    PathChange {
        workstream: "ws-arith".into(),
        add_tiers: vec![T2],
        insert_before: Some(before),
        ..PathChange::default()
    }
}

/// How many tiers a workstream whose first pass reached `deepest` has started.
fn started(path: &[Tier], deepest: Tier) -> usize {
    position(
        path,
        Progress {
            passes_started: 1,
            deepest: Some(deepest),
        },
    )
}

#[test]
fn a_squad_leads_t2_pass_before_t3_goes_after_the_pass_at_work_with_its_own_squad_lead() {
    let at_work = started(&PLANNED, T3);
    assert_eq!(at_work, 1);
    let path = amended_path(&PLANNED, at_work, &add_t2_before(T3)).unwrap();
    assert_eq!(path, TWO_PASSES);
    assert!(check_path(&path).is_ok());
    let each: Vec<&[Tier]> = passes(&path);
    assert_eq!(
        each,
        [&[T3, T4][..], &[T2, T3, T4][..]],
        "t5 closes the path, in no pass"
    );
    // The second pass's T2 hands to squad leads.
    assert_eq!(after_architecture(&path, 1), Some(T3));
    assert_eq!(after_architecture(&path, 0), None, "the first pass has no T2");
}

#[test]
fn an_implementers_t2_pass_before_t5_goes_from_its_specialists_straight_to_implementers() {
    let at_work = started(&PLANNED, T4);
    assert_eq!(at_work, 2);
    let path = amended_path(&PLANNED, at_work, &add_t2_before(T5)).unwrap();
    assert_eq!(path, T4S_PASS, "t2 gets its t4, not a squad lead");
    assert!(check_path(&path).is_ok());
    assert_eq!(
        after_architecture(&path, 1),
        Some(T4),
        "no squad lead in the second pass"
    );
}

#[test]
fn a_verified_first_pass_starts_the_second_with_its_t2_lead_and_the_last_pass_merges() {
    assert_eq!(
        after_pass(&TWO_PASSES, 1),
        AfterPass::Start { index: 1, tier: T2 }
    );
    assert_eq!(after_pass(&T4S_PASS, 1), AfterPass::Start { index: 1, tier: T2 });
    assert_eq!(after_pass(&TWO_PASSES, 2), AfterPass::Merge);
    assert_eq!(after_pass(&PLANNED, 1), AfterPass::Merge, "one pass: it merges");
}

#[test]
fn a_rejected_t2_pass_leaves_the_planned_path() {
    // A rejected proposal is never an approval: the path's history holds none.
    let (path, skipped) = current_path(&PLANNED, []);
    assert_eq!((path.as_slice(), skipped.as_slice()), (&PLANNED[..], &[][..]));
    assert_eq!(
        after_pass(&path, 1),
        AfterPass::Merge,
        "no second pass is written"
    );
    assert!(passes(&path).iter().all(|p| !p.contains(&T2)));
}

#[test]
fn an_approved_t2_pass_is_the_path_and_one_made_on_another_path_is_skipped() {
    let approved = Approval {
        seq: 7,
        before: &PLANNED,
        after: &TWO_PASSES,
    };
    assert_eq!(
        current_path(&PLANNED, [approved.clone()]),
        (TWO_PASSES.to_vec(), vec![])
    );
    let stale = Approval {
        seq: 9,
        before: &[T2, T3, T4, T5],
        after: &[T2, T3, T4, T2, T3, T4, T5],
    };
    assert_eq!(
        current_path(&PLANNED, [stale, approved]),
        (TWO_PASSES.to_vec(), vec![9])
    );
}

#[test]
fn a_t2_pass_asked_from_a_later_tier_of_the_pass_is_the_same_second_pass() {
    // The implementer at work asks for t2 before t3, which its pass has started: a new pass after it.
    assert_eq!(
        amended_path(&PLANNED, started(&PLANNED, T4), &add_t2_before(T3)).unwrap(),
        TWO_PASSES
    );
}

#[test]
fn a_pass_that_cannot_be_placed_is_refused() {
    // A tier not above the one it goes before, which the pass has started: nothing to put it before.
    let again = PathChange {
        add_tiers: vec![T3],
        ..add_t2_before(T3)
    };
    assert!(amended_path(&PLANNED, started(&PLANNED, T4), &again).is_err());
    // Nothing added, or a tier that is no pass's.
    let empty = PathChange {
        add_tiers: vec![],
        ..add_t2_before(T3)
    };
    assert!(amended_path(&PLANNED, 1, &empty).is_err());
    let t5 = PathChange {
        add_tiers: vec![T5],
        ..add_t2_before(T5)
    };
    assert!(amended_path(&PLANNED, 1, &t5).is_err());
}

/// Where an implementer's escalation lands once its retries and its squad lead's are spent.
fn implementer_out_of_retries(path: &[Tier]) -> EscalationTarget {
    match on_failure(BriefRole::Implementer, 2, 2).1 {
        Decision::Escalate { to } => target_within(to, path),
        other => panic!("an implementer out of retries escalates: {other:?}"),
    }
}

#[test]
fn a_second_pass_implementer_out_of_retries_escalates_to_the_t2_its_pass_put_on_the_path() {
    assert_eq!(
        implementer_out_of_retries(&TWO_PASSES),
        EscalationTarget::Tier(T2)
    );
    assert_eq!(implementer_out_of_retries(&T4S_PASS), EscalationTarget::Tier(T2));
    // The plan's path alone has no T2: the failure would go to T1.
    assert_eq!(implementer_out_of_retries(&PLANNED), EscalationTarget::Tier(T1));
}

fn tier() -> impl Strategy<Value = Tier> {
    prop::sample::select(vec![T2, T3, T4])
}

proptest! {
    /// Whatever tiers are added before whichever tier still to come, the amended path is one the runner
    /// accepts, keeps the started tiers as its start, and still ends in t5.
    #[test]
    fn an_added_pass_keeps_what_started_and_ends_in_t5(
        add in prop::collection::vec(tier(), 1..3),
        before in prop::sample::select(vec![T3, T4, T5]),
        done in 0usize..3,
    ) {
        let change = PathChange {
            workstream: "ws".into(),
            add_tiers: add,
            insert_before: Some(before),
            ..PathChange::default()
        };
        if let Ok(path) = amended_path(&PLANNED, done, &change) {
            prop_assert!(check_path(&path).is_ok(), "{path:?}");
            prop_assert_eq!(&path[..done], &PLANNED[..done]);
            prop_assert_eq!(path.last(), Some(&T5));
        }
    }
}
