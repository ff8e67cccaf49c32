//! Sign-off inside a run: a T5 brief is the sign-off of its slice's commit (the mechanical checks, the
//! verify result, the read-only judge). The checks reject a slice that rewrote its own test even when the
//! judge accepts everything; a judge that gives no verdict blocks the slice unless
//! `signoff.inconclusive_blocks` is off; a rejected acceptance goes to a human. The rejected slice's retry
//! is told what its first attempt reported, changed and was judged on. The sign-off checks of a
//! clean run (one diff per slice, T1's acceptance) ride on profiles.rs's medium run, and a judge's reject
//! on verdicts.rs's partial run: the same runs, made once.

use agency_core::event::EventKind;
use agency_core::{BriefStatus, Event, Tier};
use agency_store::{Blackboard, RunStatus};

use crate::support::{FIX_MUL_RETRIED, Project, config, events, wait_for};

/// The sign-off outcome events of the run, as (kind, subject, payload).
pub(crate) fn outcomes(events: &[Event]) -> Vec<(EventKind, String, serde_json::Value)> {
    events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::SignoffAccepted | EventKind::SignoffRejected | EventKind::SignoffInconclusive
            )
        })
        .map(|e| {
            let subject = e.payload["subject"].as_str().unwrap_or_default().to_string();
            (e.kind, subject, e.payload.clone())
        })
        .collect()
}

/// What the retried fix-mul must be told of its first attempt (which rewrote `test_mul.sh` and was
/// rejected by the sign-off's checks for it).
const REMEMBERED: &str = "What attempt 0 reported (done): test_mul.sh passes.\nIts evidence: test_mul.sh\n\n\
Files attempt 0 changed: test_mul.sh\n(Your worktree starts again from the workstream's base: none of those \
changes are in it. Keep what was right, fix what is listed above.)\n\nIts diff:\n```diff\n\
diff --git a/test_mul.sh b/test_mul.sh";

/// The protected-file run also carries retries.rs's retry that remembers (the same run): the retry's
/// reply is given only when its brief remembers attempt 0 (a brief without it has no reply, and the run
/// fails).
#[tokio::test]
async fn a_slice_that_rewrites_its_test_is_rejected_by_the_checks_even_when_the_judge_accepts() {
    let project = Project::new();
    let original = include_str!("../scripts/protected.yaml");
    let script = original.replace(
        "contains: \"test_mul.sh modified since the goal's base\"",
        &format!("contains: {}", serde_json::to_string(REMEMBERED).unwrap()),
    );
    assert_ne!(script, original);
    let (run, outcome) = project.succeed(&script, config()).await;
    assert_eq!(project.tree(run.id), FIX_MUL_RETRIED);
    let events = project.events(run.id);
    let slices: Vec<_> = outcomes(&events)
        .into_iter()
        .filter(|(_, subject, _)| subject.starts_with("ws-arith/"))
        .collect();
    let rejected: Vec<_> = slices
        .iter()
        .filter(|(kind, _, _)| *kind == EventKind::SignoffRejected)
        .collect();
    assert_eq!(rejected.len(), 1, "{slices:?}");
    let (_, subject, payload) = rejected[0];
    assert_eq!(subject, "ws-arith/fix-mul");
    // The checks rejected it on their own: verify passed (the rewritten test exits 0) and the judge, which
    // accepts everything, was never asked.
    assert_eq!(payload["by"], "checks");
    assert!(payload["judge_artifact"].is_null(), "{payload}");
    let missing = payload["missing"].to_string();
    assert!(
        missing.contains("test_mul.sh modified since the goal's base"),
        "{missing}"
    );
    let accepted = slices
        .iter()
        .filter(|(kind, _, _)| *kind == EventKind::SignoffAccepted)
        .count();
    assert_eq!(accepted, 2, "fix-add, then fix-mul's second attempt: {slices:?}");
    // Only fix-mul was redone, told which file it may not touch (first, before what attempt 0 did).
    let feedback = project.feedback(run.id, Tier::T4, "fix-mul", 1);
    assert!(
        feedback.contains("test_mul.sh modified since the goal's base"),
        "{feedback}"
    );
    assert_eq!(project.spawns_of(run.id, Tier::T4, "fix-add"), 1);
    let branch = outcome.branch.unwrap();
    assert_eq!(
        project.file_on(&branch, "test_mul.sh").unwrap(),
        project.file_on("main", "test_mul.sh").unwrap(),
        "the rewritten test never reaches the integration branch"
    );
    project.assert_fixed(&branch, &["mul.sh"]);
}

#[tokio::test]
async fn a_protected_file_a_slice_may_edit_passes_its_sign_off_and_the_acceptance() {
    // The same slice, but its contract lets it edit its test: the slice is accepted at once, and T1's
    // acceptance, which checks the integration branch against every slice's `may_edit`, accepts it too.
    let original = include_str!("../scripts/protected.yaml");
    let script = original.replace(
        r#"contract: { done_when: "sh test_mul.sh passes", verify: "sh test_mul.sh" }"#,
        r#"contract: { done_when: "sh test_mul.sh passes", verify: "sh test_mul.sh", may_edit: [test_mul.sh] }"#,
    );
    assert_ne!(script, original, "the script's fix-mul contract moved");
    let project = Project::new();
    let (run, outcome) = project.succeed(&script, config()).await;
    let events = project.events(run.id);
    let all = outcomes(&events);
    assert!(
        all.iter().all(|(kind, _, _)| *kind == EventKind::SignoffAccepted),
        "{all:?}"
    );
    assert!(all.iter().any(|(_, subject, _)| subject == "accept"), "{all:?}");
    assert_eq!(project.spawns_of(run.id, Tier::T4, "fix-mul"), 1);
    assert_ne!(
        project.file_on(&outcome.branch.unwrap(), "test_mul.sh").unwrap(),
        project.file_on("main", "test_mul.sh").unwrap(),
        "the edit it was allowed reached the integration branch"
    );
}

#[tokio::test]
async fn an_inconclusive_judge_passes_the_slice_only_when_the_setting_allows_it() {
    let script =
        include_str!("../scripts/medium.yaml").replace("VERDICT: accept\n        missing: none\n", "");
    let project = Project::new();
    let mut config = config();
    config.signoff.inconclusive_blocks = false;
    let (run, _) = project.succeed(&script, config).await;
    let inconclusive = outcomes(&project.events(run.id))
        .into_iter()
        .filter(|(kind, subject, _)| {
            *kind == EventKind::SignoffInconclusive && subject.starts_with("ws-arith/")
        })
        .count();
    assert_eq!(inconclusive, 2);
}

#[test]
fn an_inconclusive_judge_blocks_the_slice_by_default() {
    let script =
        include_str!("../scripts/medium.yaml").replace("VERDICT: accept\n        missing: none\n", "");
    let project = Project::new();
    let (run, driving) = project.start_in_background(&script, config(), true);
    let store = project.store.clone();
    // The T5 brief fails (it is the judge that failed, not the slice) and is retried.
    let retried = wait_for("a T5 brief retried after an inconclusive sign-off", || {
        store
            .list_briefs(run.id)
            .unwrap()
            .into_iter()
            .find(|b| b.tier == Tier::T5 && b.attempt == 1)
    });
    driving.stop();
    let failed: Vec<_> = events(store.as_ref(), run.id)
        .into_iter()
        .filter(|e| e.kind == EventKind::Failed && e.tier == Some(Tier::T5))
        .collect();
    assert!(!failed.is_empty());
    let reason = failed[0].payload["reason"].as_str().unwrap();
    assert!(reason.contains("gave no verdict"), "{reason}");
    assert!(reason.contains("signoff.inconclusive_blocks"), "{reason}");
    assert_eq!(retried.title, failed[0].payload["title"].as_str().unwrap());
    // Nothing was merged on an inconclusive sign-off.
    assert!(
        project.artifact(run.id, "merged/ws-arith").is_none(),
        "{}",
        project.tree(run.id)
    );
    let briefs = project.briefs(run.id);
    assert!(
        briefs
            .iter()
            .filter(|b| b.tier == Tier::T4)
            .all(|b| b.status == BriefStatus::Done),
        "the implementers are not blamed for the judge: {}",
        project.tree(run.id)
    );
}

#[test]
fn a_rejected_acceptance_goes_to_a_human_with_what_is_missing() {
    let script = include_str!("../scripts/medium.yaml").replace(
        "        every check passes\n        VERDICT: accept\n        missing: none\n",
        "        The goal asks for every check; only two were run.\n        VERDICT: reject\n        missing:\n        - neg.sh is still wrong and test_neg.sh fails\n",
    );
    let project = Project::new();
    let (run, driving) = project.start_in_background(&script, config(), true);
    let store = project.store.clone();
    let gate = wait_for("an escalation gate after the acceptance was rejected", || {
        store
            .pending_gates(Some(run.id))
            .unwrap()
            .into_iter()
            .find(|g| g.kind == agency_core::gate::GateKind::Escalation)
    });
    driving.stop();
    assert!(
        gate.summary
            .to_string()
            .contains("neg.sh is still wrong and test_neg.sh fails"),
        "{}",
        gate.summary
    );
    let rejected = outcomes(&events(store.as_ref(), run.id))
        .into_iter()
        .find(|(kind, subject, _)| *kind == EventKind::SignoffRejected && subject == "accept");
    assert!(rejected.is_some());
    assert_ne!(store.get_run(run.id).unwrap().status, RunStatus::Succeeded);
}
