//! The agreement decisions of `crates/engine/tests/engine/restate.rs` with plain values: an implementer's
//! restatement at T3→T4 held against its squad's committed draft (L1), whether a mismatch is put to the
//! squad lead, what its answer does, and L2 at the run's acceptance.
//!
//! Took over from `restate.rs`: `an_implementer_within_its_draft_agrees_and_nobody_is_asked` (its decision:
//! `check_task` agrees on a path spelled `./add.sh`, and `worth_asking` asks nobody). The engine path of a
//! restatement that agrees is kept in `two_dozen_implementers_are_each_checked_exactly_once` (eighteen
//! advisory teachbacks that agree, checked once each and never asked; an asked one would add a `corrected`
//! record past its count), the asking path in
//! `an_implementer_restating_a_file_its_squad_never_declared_is_corrected_and_on_the_verdict_gate`.

use agency_flow::agreement::{
    Confirmation, Outcome, Scope, anomaly_after, check_acceptance, check_task, read_answer, task_significant,
    worth_asking,
};
use proptest::prelude::*;

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The restate script's squad draft: add.sh only.
fn draft_files() -> Vec<String> {
    strings(&["add.sh"])
}

fn task(draft: &[String], restated: &[String]) -> Outcome {
    check_task(
        Scope {
            files: draft,
            interfaces: &[],
        },
        Some(Scope {
            files: restated,
            interfaces: &[],
        }),
    )
}

#[test]
fn an_implementer_naming_its_drafts_file_in_another_spelling_agrees_and_nobody_is_asked() {
    let outcome = task(&draft_files(), &strings(&["./add.sh"]));
    assert_eq!(outcome, Outcome::Agreed);
    assert!(!worth_asking(&outcome));
}

#[test]
fn an_implementer_naming_a_file_outside_its_draft_is_a_significant_l1_mismatch_put_to_its_squad_lead() {
    let outcome = task(&draft_files(), &strings(&["add.sh", "mul.sh"]));
    assert_eq!(
        outcome,
        Outcome::Mismatch {
            significant: true,
            differences: strings(&["mul.sh is outside what was handed over"])
        }
    );
    assert!(worth_asking(&outcome));
}

#[test]
fn a_file_under_a_drafted_directory_is_within_the_draft() {
    let draft = strings(&["ws-3/"]);
    assert_eq!(task(&draft, &strings(&["ws-3/done.txt"])), Outcome::Agreed);
    assert!(matches!(
        task(&draft, &strings(&["ws-3/done.txt", "other-3.txt"])),
        Outcome::Mismatch {
            significant: true,
            ..
        }
    ));
}

#[test]
fn a_restatement_of_nothing_or_a_draft_of_nothing_is_assumed_and_nobody_is_asked() {
    let none = check_task(
        Scope {
            files: &draft_files(),
            interfaces: &[],
        },
        None,
    );
    assert_eq!(none, Outcome::Assumed);
    assert!(!worth_asking(&none));
    let empty = task(&[], &strings(&["add.sh"]));
    assert_eq!(empty, Outcome::Assumed);
    assert!(!worth_asking(&empty));
}

#[test]
fn one_interface_outside_the_draft_is_a_paraphrase_two_are_significant() {
    assert!(task_significant(1, 0));
    assert!(!task_significant(0, 1));
    assert!(task_significant(0, 2));
}

#[test]
fn the_squad_leads_answer_decides_whether_the_mismatch_stands_as_an_anomaly() {
    let confirmed = read_answer(Some(true), Some("mul.sh is read for its operator, not changed"));
    assert_eq!(
        confirmed,
        Confirmation::Confirmed {
            reason: "mul.sh is read for its operator, not changed".into()
        }
    );
    assert!(!anomaly_after(&confirmed));
    let corrected = read_answer(Some(false), Some("mul.sh is another squad's\nmore prose"));
    assert_eq!(corrected.reason(), "mul.sh is another squad's", "its first line");
    assert!(anomaly_after(&corrected));
    // An answer that says neither is no answer: the fallback, and the mismatch stands.
    let neither = read_answer(None, Some("Sure, that looks fine to me."));
    assert_eq!(neither.as_str(), "unavailable");
    assert!(anomaly_after(&neither));
    assert_eq!(read_answer(Some(true), None).reason(), "(no reason given)");
}

#[test]
fn an_acceptance_that_achieved_half_the_declared_scope_is_a_significant_l2_mismatch() {
    let declared = strings(&["add.sh", "mul.sh"]);
    assert_eq!(
        check_acceptance(&declared, Some(&strings(&["add.sh"]))),
        Outcome::Mismatch {
            significant: true,
            differences: strings(&["mul.sh was declared and not achieved"])
        }
    );
    assert_eq!(
        check_acceptance(&declared, Some(&strings(&["./add.sh", "mul.sh", "extra.sh"]))),
        Outcome::Agreed,
        "an achieved path outside the scope is the joint verdict's L2, not raised twice"
    );
    let three = strings(&["a.sh", "b.sh", "c.sh"]);
    assert!(matches!(
        check_acceptance(&three, Some(&strings(&["a.sh", "b.sh"]))),
        Outcome::Mismatch {
            significant: false,
            ..
        }
    ));
    assert_eq!(check_acceptance(&declared, None), Outcome::Assumed);
    assert_eq!(check_acceptance(&declared, Some(&[])), Outcome::Assumed);
    assert_eq!(
        check_acceptance(&strings(&["src/"]), Some(&strings(&["src/lib.rs"]))),
        Outcome::Agreed,
        "a declared directory is covered by a path under it"
    );
}

proptest! {
    /// At T3→T4 only a significant mismatch is ever put to the squad lead, and a restatement within its
    /// draft (any subset, in any spelling) is never one.
    #[test]
    fn only_a_path_outside_the_draft_is_asked_about(
        draft in prop::collection::btree_set(0usize..6, 1..4),
        restated in prop::collection::btree_set(0usize..6, 1..4),
        dotted in any::<bool>(),
    ) {
        let draft_files: Vec<String> = draft.iter().map(|f| format!("f{f}.sh")).collect();
        let restated_files: Vec<String> = restated
            .iter()
            .map(|f| if dotted { format!("./f{f}.sh") } else { format!("f{f}.sh") })
            .collect();
        let outcome = task(&draft_files, &restated_files);
        let outside = restated.difference(&draft).count();
        prop_assert_eq!(worth_asking(&outcome), outside > 0);
        match outcome {
            Outcome::Agreed => prop_assert_eq!(outside, 0),
            Outcome::Mismatch { differences, .. } => prop_assert_eq!(differences.len(), outside),
            Outcome::Assumed => prop_assert!(false, "both sides declared something"),
        }
    }
}
