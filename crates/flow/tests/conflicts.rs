//! T2's conflict cycles as plain values. Took over from `crates/engine/tests/engine/conflicts.rs`:
//!
//! - `a_t2_conflict_resolved_in_one_cycle_never_reaches_t1` (a conflict goes back to the specialists in it,
//!   each told the other side's position; resolved within the cycles, the synthesis is canonical and T1 is
//!   never asked). Its wiring — both specialists re-invoked, the next synthesis waiting on both revisions,
//!   the squads under the newest specialist — is driven by the kept
//!   `a_t2_conflict_left_after_the_cycle_limit_goes_to_t1_whose_ruling_the_synthesis_applies`, which runs
//!   that cycle before T1 rules and now checks it.

use agency_core::tiers::{Conflict, Position};
use agency_flow::conflicts::{ConflictStep, brief_for, step};

fn notes_conflict() -> Conflict {
    Conflict {
        about: "who writes NOTES.md".into(),
        positions: vec![
            Position {
                specialist: "arithmetic".into(),
                position: "arithmetic documents every operator in NOTES.md".into(),
            },
            Position {
                specialist: "sign".into(),
                position: "NOTES.md is about neg.sh only".into(),
            },
        ],
    }
}

#[test]
fn a_conflict_resolved_within_the_cycles_never_reaches_t1() {
    let limit = 2;
    assert_eq!(
        step(1, 0, limit, false),
        ConflictStep::BackToSpecialists { cycle: 1 }
    );
    // The revised proposals reconcile: the next synthesis reports none, and is canonical.
    assert_eq!(step(0, 1, limit, false), ConflictStep::Canonical);
    assert_eq!(step(0, 0, limit, false), ConflictStep::Canonical);
}

#[test]
fn each_cycle_up_to_the_limit_goes_back_then_t1_rules_then_a_human() {
    for limit in 0..5 {
        let mut steps = Vec::new();
        for cycles_run in 0..=limit {
            steps.push(step(2, cycles_run, limit, false));
        }
        let back: Vec<ConflictStep> = (1..=limit)
            .map(|cycle| ConflictStep::BackToSpecialists { cycle })
            .chain([ConflictStep::ToT1])
            .collect();
        assert_eq!(steps, back, "limit {limit}");
        assert_eq!(step(1, limit, limit, true), ConflictStep::ToHuman);
        assert_eq!(
            step(0, limit, limit, true),
            ConflictStep::Canonical,
            "the ruling applied"
        );
    }
}

#[test]
fn each_side_is_told_the_others_position_and_the_cycle() {
    let conflicts = [notes_conflict()];
    for (me, other, theirs) in [
        ("arithmetic", "sign", "NOTES.md is about neg.sh only"),
        (
            "sign",
            "arithmetic",
            "arithmetic documents every operator in NOTES.md",
        ),
    ] {
        let told = brief_for(me, &conflicts, 1, 2).expect("a side is told");
        assert!(told.starts_with("Conflict cycle 1 of at most 2"), "{told}");
        assert!(told.contains(&format!("{other}'s position: {theirs}")), "{told}");
        assert!(told.contains("your position"), "{told}");
    }
    assert_eq!(
        brief_for("storage", &conflicts, 1, 2),
        None,
        "a specialist in no conflict is not re-asked"
    );
}
