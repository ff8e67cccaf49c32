//! A squad's joint verdict with plain values: which slices a partial verdict retries and what each is told,
//! across squad widths and gate states.
//!
//! No test of `crates/engine/tests/engine/verdicts.rs` moved here: each of them drives git (a retried
//! slice's worktree, a pipeline's base, a merge conflict, a merge commit of many parents) and stays. These
//! are the decision's cases beside the kept
//! `a_partial_verdict_retries_only_the_failed_slice_with_the_issues`, which drives one of them end to end
//! (and, since it is the same run, also carries the judge's reject that signoff.rs used to make).

use agency_core::gate::GateStatus;
use agency_core::verdict::{JointOutcome, SliceVerdict, T5Result};
use agency_flow::SquadVerdict;
use agency_flow::verdicts::{SliceRetry, squad_verdict};
use proptest::prelude::*;

fn result(scope: &str, verdict: SliceVerdict, issues: &[&str]) -> T5Result {
    T5Result {
        verifier_id: format!("v-{scope}"),
        scope: scope.into(),
        verdict,
        issues: issues.iter().map(|i| i.to_string()).collect(),
        notes: String::new(),
    }
}

const MARKER: &str = "mul.sh still carries the LEFTOVER-DEBUG marker; remove it";

#[test]
fn the_partial_scripts_verdict_retries_only_fix_mul_with_what_its_judge_found_missing() {
    let verdict = squad_verdict(
        "ws-arith",
        false,
        None,
        vec![
            result("fix-add", SliceVerdict::Pass, &[]),
            result("fix-mul", SliceVerdict::Fail, &[MARKER]),
        ],
    )
    .unwrap();
    let SquadVerdict::Partial { joint, line, retries } = verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(joint.joint_verdict, JointOutcome::Partial);
    assert_eq!(joint.failed_scopes, ["fix-mul"]);
    assert_eq!(line, "partial — fix-mul needs rework");
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].scope, "fix-mul");
    assert!(
        retries[0].why.contains(&format!("- {MARKER}")),
        "{}",
        retries[0].why
    );
}

#[test]
fn two_failed_slices_of_three_need_rework_each_told_its_own_issues() {
    let verdict = squad_verdict(
        "ws",
        false,
        None,
        vec![
            result("a", SliceVerdict::Fail, &["a1", "a2"]),
            result("b", SliceVerdict::Pass, &[]),
            result("c", SliceVerdict::Fail, &["c1"]),
        ],
    )
    .unwrap();
    let SquadVerdict::Partial { line, retries, .. } = verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(line, "partial — a, c need rework");
    assert_eq!(
        retries,
        [
            SliceRetry {
                scope: "a".into(),
                why: "The sign-off rejected this slice. Missing:\n- a1\n- a2\n".into()
            },
            SliceRetry {
                scope: "c".into(),
                why: "The sign-off rejected this slice. Missing:\n- c1\n".into()
            }
        ]
    );
}

#[test]
fn a_slice_verified_twice_fails_if_either_verifier_failed_it() {
    let verdict = squad_verdict(
        "ws",
        false,
        None,
        vec![
            result("a", SliceVerdict::Pass, &[]),
            result("a", SliceVerdict::Fail, &["missed"]),
            result("b", SliceVerdict::Pass, &[]),
        ],
    )
    .unwrap();
    assert!(
        matches!(&verdict, SquadVerdict::Partial { joint, .. } if joint.failed_scopes == ["a"]),
        "{verdict:?}"
    );
}

#[test]
fn an_approved_verdict_gate_lets_the_partial_verdict_stand() {
    let results = || {
        vec![
            result("fix-add", SliceVerdict::Pass, &[]),
            result("fix-mul", SliceVerdict::Fail, &[MARKER]),
        ]
    };
    assert!(matches!(
        squad_verdict("ws", true, Some(GateStatus::Approved), results()).unwrap(),
        SquadVerdict::Partial { .. }
    ));
    assert!(matches!(
        squad_verdict("ws", true, Some(GateStatus::Rejected), results()).unwrap(),
        SquadVerdict::Overruled { .. }
    ));
}

proptest! {
    /// At any width, a joint verdict retries exactly the slices some verifier failed, once each, and
    /// merges only when none failed; every slice failed escalates instead.
    #[test]
    fn exactly_the_failed_slices_are_retried(verdicts in prop::collection::vec(any::<bool>(), 1..30)) {
        let results: Vec<T5Result> = verdicts
            .iter()
            .enumerate()
            .map(|(i, pass)| {
                let verdict = if *pass { SliceVerdict::Pass } else { SliceVerdict::Fail };
                result(&format!("slice-{i}"), verdict, &["an issue"])
            })
            .collect();
        let failed: Vec<String> = verdicts
            .iter()
            .enumerate()
            .filter(|(_, pass)| !**pass)
            .map(|(i, _)| format!("slice-{i}"))
            .collect();
        match squad_verdict("ws", false, None, results).unwrap() {
            SquadVerdict::Pass { .. } => prop_assert!(failed.is_empty()),
            SquadVerdict::Fail { .. } => prop_assert_eq!(failed.len(), verdicts.len()),
            SquadVerdict::Partial { retries, .. } => {
                let retried: Vec<String> = retries.into_iter().map(|r| r.scope).collect();
                prop_assert_eq!(retried, failed);
            }
            other => prop_assert!(false, "no gate is on: {:?}", other),
        }
    }
}
