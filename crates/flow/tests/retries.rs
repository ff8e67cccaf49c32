//! What a retry is told, with plain values: the account of the previous attempt (what it reported,
//! changed and was judged on) after why it was not accepted, and what a partial report means.
//!
//! No engine test moved here: `crates/engine/tests/engine/retries.rs`'s tests folded into runs other tests
//! already made (signoff.rs's protected-file run now needs the remembering retry; the salvage and the
//! kept worktree are one test), since each drives git (the diff a retry is told, the salvaged commit, the
//! kept worktree). These pin, from values, the texts those engine scripts match their replies on, so a
//! changed wording fails here first, naming the decision, rather than as a run with no reply.

use agency_flow::previous::{Previous, Reported, changed_in_diff, remembered};
use agency_flow::reports::{AfterAgent, Ending, Status, after_agent, partial_why};

const REJECTED: &str =
    "The sign-off rejected this slice. Missing:\n- test_mul.sh modified since the goal's base\n";
const DIFF: &str = "diff --git a/test_mul.sh b/test_mul.sh\nindex 1..2 100644\n--- a/test_mul.sh\n+++ b/test_mul.sh\n\
                    @@ -1 +1 @@\n-sh mul.sh 2 3 | grep -qx 6\n+exit 0\n";

#[test]
fn the_rejected_slices_retry_is_told_why_then_what_attempt_0_reported_changed_and_was_judged_on() {
    let changed = changed_in_diff(DIFF);
    assert_eq!(changed, ["test_mul.sh"]);
    let told = remembered(
        REJECTED,
        Some(Previous {
            attempt: 0,
            reported: Some(Reported {
                status: "done",
                summary: "test_mul.sh passes.",
                evidence: &["test_mul.sh"],
            }),
            changed: &changed,
            diff: Some(DIFF),
        }),
    );
    // The text signoff.rs's protected-file script matches the retry's reply on.
    let expected = "What attempt 0 reported (done): test_mul.sh passes.\nIts evidence: test_mul.sh\n\n\
Files attempt 0 changed: test_mul.sh\n(Your worktree starts again from the workstream's base: none of those \
changes are in it. Keep what was right, fix what is listed above.)\n\nIts diff:\n```diff\n\
diff --git a/test_mul.sh b/test_mul.sh";
    assert!(told.contains(expected), "{told}");
    assert!(told.starts_with(REJECTED.trim_end()), "why comes first: {told}");
    assert!(told.ends_with("+exit 0\n```"), "{told}");
}

#[test]
fn an_attempt_that_never_reported_is_remembered_by_what_it_changed_only() {
    let changed = vec!["NOTES.md".to_string()];
    let told = remembered(
        "the agent ran past its time limit",
        Some(Previous {
            attempt: 2,
            reported: None,
            changed: &changed,
            diff: None,
        }),
    );
    assert!(!told.contains("reported"), "{told}");
    assert!(told.contains("Files attempt 2 changed: NOTES.md"), "{told}");
    assert!(!told.contains("Its diff"), "{told}");
}

#[test]
fn a_first_attempt_or_an_empty_diff_adds_nothing_to_why() {
    assert_eq!(remembered("why\n\n", None), "why");
    let told = remembered(
        "why",
        Some(Previous {
            attempt: 0,
            reported: None,
            changed: &[],
            diff: Some("  \n"),
        }),
    );
    assert_eq!(told, "why");
}

#[test]
fn a_partial_report_is_salvaged_and_its_retry_told_its_work_is_kept_only_when_it_was() {
    assert_eq!(
        after_agent(Ending::Reported(Status::Partial)),
        AfterAgent::Salvage
    );
    let summary = "found the bug, wrote NOTES.md; the fix remains";
    // The text retries.rs's script matches the retry's reply on.
    assert!(partial_why(summary, true).contains("What it did is kept"));
    assert_eq!(partial_why(summary, false), format!("partial: {summary}"));
}
