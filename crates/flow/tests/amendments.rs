//! The path-amendment decisions the engine's amendments tests used to drive through whole runs, checked
//! here with plain values. Took over from `crates/engine/tests/engine/amendments.rs`:
//!
//! - `a_t4s_extra_implementer_pass_is_approved_and_runs_before_the_merge` (the path and the extra pass's
//!   entry; its run is folded into `a_dozen_workstreams_with_two_amended_all_merge`, whose ws-8 takes the
//!   same pass);
//! - `two_approved_extra_passes_run_in_turn_each_with_its_own_reason` (two approvals applied in turn, each
//!   pass's entry told its own reason, the second started only after the first);
//! - `a_planned_path_without_a_squad_lead_dispatches_the_specialists_squads_to_implementers` (what follows a
//!   T2 pass on a planned `t2→t4→t5`; the wiring is driven by `a_specialists_shallower_path_skips_the_squad_
//!   lead_once_approved`);
//! - `a_shallower_path_for_a_workstream_not_started_starts_it_with_its_implementer` (a shallower path for a
//!   workstream not started, and one without its reason refused; the wiring of an amended entry is driven by
//!   `a_t2_pass_added_before_a_squad_lead_not_started_starts_the_workstream_with_a_lead`).

use agency_core::Tier::{self, T2, T3, T4, T5};
use agency_core::event::payload::PathChange;
use agency_flow::amendments::{
    AfterPass, AmendmentError, Approval, PassReason, Progress, after_architecture, after_pass, amended_path,
    current_path, pass_entry, position,
};

fn add(workstream: &str, tiers: &[Tier], before: Tier) -> PathChange {
    PathChange {
        workstream: workstream.into(),
        add_tiers: tiers.to_vec(),
        insert_before: Some(before),
        ..Default::default()
    }
}

fn shallower(workstream: &str, path: &[Tier], reason: Option<&str>) -> PathChange {
    PathChange {
        workstream: workstream.into(),
        shallower_path: Some(path.to_vec()),
        shallower_path_reason: reason.map(str::to_owned),
        ..Default::default()
    }
}

fn why<'a>(seq: i64, reason: &'a str) -> PassReason<'a> {
    PassReason {
        seq,
        by: "tester",
        reason,
    }
}

#[test]
fn an_extra_implementer_pass_goes_before_t5_and_is_written_as_a_t4_entry_after_the_first_pass() {
    let planned = [T3, T4, T5];
    // Proposed by the implementer at work: the first pass has started down to t4.
    let started = position(
        &planned,
        Progress {
            passes_started: 1,
            deepest: Some(T4),
        },
    );
    assert_eq!(started, 2);
    let path = amended_path(&planned, started, &add("ws-arith", &[T4], T5)).unwrap();
    assert_eq!(path, [T3, T4, T4, T5]);
    assert_eq!(after_pass(&path, 1), AfterPass::Start { index: 1, tier: T4 });
    assert_eq!(
        after_pass(&path, 2),
        AfterPass::Merge,
        "then the workstream merges"
    );
    let entry = pass_entry(&path, 1, "ws-arith", why(7, "mul.sh needs fixing too"), "", &[]).unwrap();
    assert_eq!((entry.tier, entry.title.as_str()), (T4, "amended-pass-1"));
    assert!(
        entry
            .instructions
            .starts_with("An extra implementer pass (pass 2 of the path t3→t4→t4→t5), approved by tester as path amendment #7: mul.sh needs fixing too"),
        "{}",
        entry.instructions
    );
    assert_eq!(entry.inputs, ["passes/ws-arith/before-1"]);
}

#[test]
fn two_extra_passes_approved_in_turn_run_in_turn_each_told_its_own_reason() {
    let planned = [T3, T4, T5];
    let first = amended_path(&planned, 2, &add("ws-arith", &[T3], T5)).unwrap();
    assert_eq!(
        first,
        [T3, T4, T3, T4, T5],
        "an added squad-lead pass brings its implementers"
    );
    let second = amended_path(&first, 2, &add("ws-arith", &[T4], T5)).unwrap();
    assert_eq!(second, [T3, T4, T3, T4, T4, T5]);
    // Both approvals, in the order made, give the path the runner walks.
    let (path, skipped) = current_path(
        &planned,
        [
            Approval {
                seq: 4,
                before: &planned,
                after: &first,
            },
            Approval {
                seq: 9,
                before: &first,
                after: &second,
            },
        ],
    );
    assert_eq!((path.as_slice(), skipped.as_slice()), (&second[..], &[][..]));
    // One pass at a time: the second starts only once the first (its squad lead and its task) is verified.
    assert_eq!(after_pass(&path, 1), AfterPass::Start { index: 1, tier: T3 });
    assert_eq!(after_pass(&path, 2), AfterPass::Start { index: 2, tier: T4 });
    assert_eq!(after_pass(&path, 3), AfterPass::Merge);
    let one = pass_entry(&path, 1, "ws-arith", why(4, "mul.sh is broken too"), "", &[]).unwrap();
    let two = pass_entry(
        &path,
        2,
        "ws-arith",
        why(9, "the change wants a note beside it"),
        "",
        &["diff/ws-arith/fix-mul".to_string()],
    )
    .unwrap();
    assert_eq!((one.tier, one.title.as_str()), (T3, "amended-pass-1"));
    assert_eq!((two.tier, two.title.as_str()), (T4, "amended-pass-2"));
    assert!(
        one.instructions.contains("#4: mul.sh is broken too"),
        "{}",
        one.instructions
    );
    assert!(
        !one.instructions.contains("note beside it"),
        "{}",
        one.instructions
    );
    assert!(
        two.instructions.contains("#9: the change wants a note beside it"),
        "{}",
        two.instructions
    );
    assert_eq!(two.inputs, ["passes/ws-arith/before-2", "diff/ws-arith/fix-mul"]);
}

#[test]
fn a_path_from_t2_straight_to_t4_sends_the_specialists_squads_to_implementers() {
    assert_eq!(after_architecture(&[T2, T4, T5], 0), Some(T4));
    assert_eq!(after_architecture(&[T2, T3, T4, T5], 0), Some(T3));
    // A second architecture pass reads its own pass, not the first.
    assert_eq!(after_architecture(&[T2, T3, T4, T2, T4, T5], 1), Some(T4));
    assert_eq!(after_architecture(&[T2, T3, T4, T2, T4, T5], 0), Some(T3));
    // A pass without a T2, or past the path's passes, has no architecture to follow.
    assert_eq!(after_architecture(&[T3, T4, T5], 0), None);
    assert_eq!(after_architecture(&[T2, T4, T5], 1), None);
}

#[test]
fn a_shallower_path_for_a_workstream_not_started_replaces_its_whole_path() {
    let planned = [T3, T4, T5];
    let not_started = position(&planned, Progress::default());
    assert_eq!(not_started, 0);
    let path = amended_path(
        &planned,
        not_started,
        &shallower("ws-mul", &[T4, T5], Some("the operator is the whole fix")),
    )
    .unwrap();
    assert_eq!(path, [T4, T5]);
    // Its first pass starts with the implementer: the entry brief is the path's first tier.
    assert_eq!(
        amendment_entry(&path),
        T4,
        "the workstream starts with its implementer"
    );
}

/// The tier a workstream's first pass starts at.
fn amendment_entry(path: &[Tier]) -> Tier {
    agency_flow::amendments::passes(path)[0][0]
}

#[test]
fn a_shallower_path_without_its_reason_is_refused_with_what_is_missing() {
    for reason in [None, Some(""), Some("   ")] {
        let refused = amended_path(&[T3, T4, T5], 0, &shallower("ws-mul", &[T4, T5], reason)).unwrap_err();
        assert_eq!(refused, AmendmentError::NoReason, "{reason:?}");
        assert_eq!(
            refused.to_string(),
            "shallower_path needs shallower_path_reason: why fewer tiers are enough"
        );
    }
}

#[test]
fn a_shallower_path_must_be_shallower_and_keep_what_started() {
    let not_shallower =
        amended_path(&[T3, T4, T5], 0, &shallower("w", &[T2, T4, T5], Some("why"))).unwrap_err();
    assert!(
        not_shallower
            .to_string()
            .contains("t2→t4→t5 is not shallower than the current path t3→t4→t5"),
        "{not_shallower}"
    );
    let moved_past =
        amended_path(&[T2, T3, T4, T5], 2, &shallower("w", &[T2, T4, T5], Some("why"))).unwrap_err();
    assert_eq!(
        moved_past.to_string(),
        "shallower_path t2→t4→t5 does not keep the tiers already started (t2→t3)"
    );
    // Before the squad lead started, the same change applies.
    assert_eq!(
        amended_path(&[T2, T3, T4, T5], 1, &shallower("w", &[T2, T4, T5], Some("why"))).unwrap(),
        [T2, T4, T5]
    );
}
