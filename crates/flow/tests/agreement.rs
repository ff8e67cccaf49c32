//! The agreement checks' decisions in the cases the engine's agreement tests drive, checked with plain
//! values. Took over from `crates/engine/tests/engine/agreement.rs`:
//!
//! - `a_slice_without_a_declared_design_is_recorded_with_the_fallback` (a handoff whose handing-over side
//!   declared nothing is the fallback, never asked about, never an anomaly; its record is written by the
//!   same code as the kept `a_slice_leaving_its_squads_design_is_an_l1_and_l2_mismatch_on_the_verdict_gate`).
//!
//! And the decisions behind the kept engine tests, each case as the run meets it: the slice that leaves
//! its design (L1 at T4→T5, L2 at T5→T1), the lead restating a wider topic (L0 at T1→T2), the acceptance
//! missing half of what the plan declared, and the wide run's strays.

use agency_core::event::payload::AGREEMENT_ASSUMED;
use agency_flow::agreement::{
    ASSUMED, Confirmation, Level, Outcome, Scope, anomaly_after, check, check_acceptance, check_scope,
    read_answer, worth_asking,
};

fn paths(list: &[&str]) -> Vec<String> {
    list.iter().map(|p| p.to_string()).collect()
}

fn files(list: &[String]) -> Scope<'_> {
    Scope {
        files: list,
        interfaces: &[],
    }
}

#[test]
fn a_handoff_that_declared_nothing_is_the_fallback_and_never_asked_about() {
    let changed = paths(&["add.sh"]);
    for level in [Level::L0, Level::L1, Level::L2] {
        // The squad lead declared no design, the plan no files for the workstream.
        let outcome = check(level, &[], Some(&changed));
        assert_eq!(outcome, Outcome::Assumed, "{level:?}");
        assert_eq!(outcome.as_str(), "assumed");
        assert!(
            !worth_asking(&outcome),
            "{level:?}: no model call for the fallback"
        );
        // Nothing restated is the fallback too.
        assert_eq!(check(level, &changed, None), Outcome::Assumed, "{level:?}");
        assert_eq!(check(level, &changed, Some(&[])), Outcome::Assumed, "{level:?}");
    }
    assert_eq!(check_acceptance(&[], Some(&changed)), Outcome::Assumed);
    assert_eq!(check_acceptance(&changed, None), Outcome::Assumed);
    // The record says so in the seed's words.
    assert_eq!(ASSUMED, AGREEMENT_ASSUMED);
    assert!(ASSUMED.contains("specialist unavailable for verification"));
}

#[test]
fn a_slice_changing_a_file_outside_its_design_is_a_significant_l1_and_l2_mismatch() {
    let design = paths(&["add.sh"]);
    let changed = paths(&["add.sh", "mul.sh"]);
    let slice = check(Level::L1, &design, Some(&changed));
    assert_eq!(
        slice,
        Outcome::Mismatch {
            significant: true,
            differences: paths(&["mul.sh is outside what was handed over"]),
        }
    );
    assert!(worth_asking(&slice));
    // At T5→T1 what was achieved (two files) against what T1 declared (one): half went elsewhere.
    let purpose = check_scope(Level::L2, files(&design), Some(files(&changed)));
    assert!(
        matches!(
            purpose,
            Outcome::Mismatch {
                significant: true,
                ..
            }
        ),
        "{purpose:?}"
    );
    // Corrected by the tier that handed it over: it stands as an anomaly.
    let corrected = read_answer(Some(false), Some("mul.sh is another workstream's"));
    assert_eq!(corrected.as_str(), "corrected");
    assert!(anomaly_after(&corrected));
}

#[test]
fn a_slice_within_its_design_agrees_and_nobody_is_asked() {
    let design = paths(&["src/"]);
    let outcome = check(Level::L1, &design, Some(&paths(&["./src/a.rs", "src/b/c.rs"])));
    assert_eq!(outcome, Outcome::Agreed);
    assert!(!worth_asking(&outcome));
}

#[test]
fn a_lead_naming_two_files_outside_its_topic_is_asked_and_a_confirmation_clears_it() {
    let topic = paths(&["add.sh", "mul.sh"]);
    let one_stray = check(Level::L0, &topic, Some(&paths(&["add.sh", "neg.sh"])));
    assert!(
        matches!(
            one_stray,
            Outcome::Mismatch {
                significant: false,
                ..
            }
        ),
        "one stray file at L0 is noise: {one_stray:?}"
    );
    assert!(!worth_asking(&one_stray));
    let two_strays = check(Level::L0, &topic, Some(&paths(&["add.sh", "neg.sh", "NOTES.md"])));
    assert_eq!(
        two_strays,
        Outcome::Mismatch {
            significant: true,
            differences: paths(&[
                "NOTES.md is outside what was handed over",
                "neg.sh is outside what was handed over"
            ]),
        }
    );
    assert!(worth_asking(&two_strays));
    let confirmed = read_answer(
        Some(true),
        Some("neg.sh and NOTES.md are read, not changed\nmore"),
    );
    assert_eq!(
        confirmed,
        Confirmation::Confirmed {
            reason: "neg.sh and NOTES.md are read, not changed".into()
        }
    );
    assert!(!anomaly_after(&confirmed));
}

#[test]
fn an_answer_that_says_neither_is_the_fallback_and_the_mismatch_stands() {
    let answer = read_answer(None, Some("Sure, looks fine to me."));
    assert_eq!(answer.as_str(), "unavailable");
    assert!(anomaly_after(&answer));
    let nobody = Confirmation::Unavailable {
        why: "t1's model could not be asked (no reply scripted)".into(),
    };
    assert!(anomaly_after(&nobody));
    assert_eq!(read_answer(Some(false), None).reason(), "(no reason given)");
}

#[test]
fn an_acceptance_missing_half_of_the_declared_scope_is_significant_less_is_not() {
    let declared = paths(&["add.sh", "mul.sh"]);
    let outcome = check_acceptance(&declared, Some(&paths(&["add.sh"])));
    assert_eq!(
        outcome,
        Outcome::Mismatch {
            significant: true,
            differences: paths(&["mul.sh was declared and not achieved"]),
        }
    );
    let three = paths(&["a.sh", "b.sh", "c.sh"]);
    assert!(matches!(
        check_acceptance(&three, Some(&paths(&["a.sh", "b.sh"]))),
        Outcome::Mismatch {
            significant: false,
            ..
        }
    ));
    assert_eq!(
        check_acceptance(&declared, Some(&paths(&["add.sh", "mul.sh", "other.sh"]))),
        Outcome::Agreed,
        "an achieved path outside the plan is the squads' L2, not raised twice"
    );
}

/// The wide run: 24 workstreams each declaring `ws-K/`; the even ones write inside it, the odd ones a file
/// beside it. Every odd one is a significant L2 mismatch (its one achieved file missed its purpose) and
/// the acceptance finds half the declared directories not achieved.
#[test]
fn at_width_every_stray_workstream_is_significant_and_the_acceptance_misses_half() {
    const WIDTH: usize = 24;
    let declared: Vec<String> = (0..WIDTH).map(|k| format!("ws-{k}/")).collect();
    let mut achieved = Vec::new();
    let mut asked = 0;
    for (k, scope) in declared.iter().enumerate() {
        let wrote = if k % 2 == 0 {
            format!("ws-{k}/done.txt")
        } else {
            format!("other-{k}.txt")
        };
        let outcome = check(
            Level::L2,
            std::slice::from_ref(scope),
            Some(std::slice::from_ref(&wrote)),
        );
        assert_eq!(worth_asking(&outcome), k % 2 == 1, "ws-{k}: {outcome:?}");
        asked += usize::from(worth_asking(&outcome));
        achieved.push(wrote);
    }
    assert_eq!(asked, WIDTH / 2);
    let Outcome::Mismatch {
        significant,
        differences,
    } = check_acceptance(&declared, Some(&achieved))
    else {
        panic!("the acceptance found no mismatch");
    };
    assert!(significant);
    assert_eq!(differences.len(), WIDTH / 2);
}
