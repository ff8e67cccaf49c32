//! Sign-off inside a run: a T5 brief is the sign-off of its slice's commit (the mechanical checks, the
//! verify result, the read-only judge). The checks reject a slice that rewrote its own test even when the
//! judge accepts everything; a judge that gives no verdict blocks the slice unless
//! `signoff.inconclusive_blocks` is off.

use agency_core::event::EventKind;
use agency_core::{BriefStatus, Event, Tier};
use agency_engine::engine::diff_name;
use agency_store::{Blackboard, RunStatus};

use crate::support::{FIX_MUL_RETRIED, GOAL, Project, config, events, wait_for};

/// The sign-off outcome events of the run, as (kind, subject, payload).
fn outcomes(events: &[Event]) -> Vec<(EventKind, String, serde_json::Value)> {
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

#[tokio::test]
async fn a_slice_that_rewrites_its_test_is_rejected_by_the_checks_even_when_the_judge_accepts() {
    let project = Project::new();
    let (run, outcome) = project
        .succeed(include_str!("../scripts/protected.yaml"), config())
        .await;
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
    // Only fix-mul was redone, told which file it may not touch.
    let feedback = project.feedback(run.id, Tier::T4, "fix-mul", 1);
    assert!(feedback.contains("test_mul.sh modified"), "{feedback}");
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
async fn each_slice_is_diffed_once_and_its_sign_off_judges_the_diff_its_verifier_was_handed() {
    let mut project = Project::new();
    let log = project.log_git_calls();
    let (run, _) = project
        .succeed(include_str!("../scripts/medium.yaml"), config())
        .await;
    let calls = std::fs::read_to_string(&log).unwrap();
    let count = |name: &str| calls.lines().filter(|l| *l == name).count();
    // fix-add and fix-mul: one diff each when the implementer commits, reused by the sign-off; and one
    // for T1's acceptance (its evidence and its judge).
    assert_eq!(count("diff"), 3, "{calls}");
    // A commit is `add` and `commit`; nothing asks the index beforehand.
    assert_eq!((count("add"), count("commit")), (2, 2), "{calls}");
    // Neither a slice's commit nor its sign-off asks git for a branch's commit (read from its ref file), nor
    // a merge into a branch this runner's last merge left: `rev-parse` runs for the run's base, the first
    // merge into the workstream and into the integration branch, the integration branch's re-verify, the
    // acceptance and its sign-off only.
    assert_eq!(count("merge-tree"), 3, "{calls}");
    assert_eq!(count("rev-parse"), 6, "{calls}");
    for slice in project.briefs(run.id).iter().filter(|b| b.tier == Tier::T4) {
        let diff = project.artifact(run.id, &diff_name(slice.id)).unwrap();
        assert!(diff.starts_with("diff --git a/"), "{diff}");
        let judged = project
            .artifact(run.id, &format!("signoff/ws-arith/{}/judge", slice.title))
            .unwrap();
        assert!(
            judged.contains(&format!("```diff\n{}\n```", diff.trim_end())),
            "{}: the judge was shown another patch than {diff}\n{judged}",
            slice.title
        );
    }
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
async fn a_judge_reject_is_recorded_as_the_slice_sign_off_with_its_transcript() {
    let project = Project::new();
    let (run, _) = project
        .succeed(include_str!("../scripts/partial.yaml"), config())
        .await;
    let events = project.events(run.id);
    let rejected: Vec<_> = outcomes(&events)
        .into_iter()
        .filter(|(kind, _, _)| *kind == EventKind::SignoffRejected)
        .collect();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    let (_, subject, payload) = &rejected[0];
    assert_eq!(subject, "ws-arith/fix-mul");
    assert_eq!(payload["by"], "judge");
    assert_eq!(
        payload["missing"],
        serde_json::json!(["mul.sh still carries the LEFTOVER-DEBUG marker; remove it"])
    );
    // Both judges' transcripts are stored, with the prompt each saw and its answer: the first was shown the
    // diff carrying the marker.
    let transcripts: Vec<String> = project
        .store
        .list_artifacts(run.id, None)
        .unwrap()
        .into_iter()
        .filter(|a| a.name == "signoff/ws-arith/fix-mul/judge")
        .map(|a| String::from_utf8(project.store.get_artifact(a.id).unwrap().bytes).unwrap())
        .collect();
    assert_eq!(transcripts.len(), 2);
    assert!(transcripts[0].contains("LEFTOVER-DEBUG"), "{}", transcripts[0]);
    assert!(transcripts[0].contains("VERDICT: reject"), "{}", transcripts[0]);
    assert!(transcripts[1].contains("VERDICT: accept"), "{}", transcripts[1]);
    // Stage 1 ran once per attempt, when the implementer committed; the sign-off reused it.
    let verifies = events
        .iter()
        .filter(|e| e.kind == EventKind::SignoffVerify && e.payload["subject"] == "ws-arith/fix-mul")
        .count();
    assert_eq!(verifies, 2);
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

#[tokio::test]
async fn t1_accepts_by_signing_off_the_integration_branch_against_every_contract() {
    let project = Project::new();
    let (run, _) = project
        .succeed(include_str!("../scripts/medium.yaml"), config())
        .await;
    let events = project.events(run.id);
    let accepted: Vec<_> = outcomes(&events)
        .into_iter()
        .filter(|(_, subject, _)| subject == "accept")
        .collect();
    assert_eq!(accepted.len(), 1, "{accepted:?}");
    let (kind, _, payload) = &accepted[0];
    assert_eq!(*kind, EventKind::SignoffAccepted);
    // The judge's account is the run's summary (the pull request's description starts with it).
    assert_eq!(payload["summary"], "every check passes");
    let t1 = events
        .iter()
        .find(|e| e.kind == EventKind::SignoffAccepted && e.payload["subject"] == "accept")
        .unwrap();
    assert_eq!(t1.tier, Some(Tier::T1));
    // The workstream's verify ran again on the final integration branch, recorded for the acceptance.
    assert!(
        events
            .iter()
            .any(|e| e.kind == EventKind::SignoffVerify && e.payload["subject"] == "accept/ws-arith"),
        "no acceptance verify"
    );
    // The judge was shown the goal anchor and the workstream's contract.
    let transcript = project.artifact(run.id, "signoff/accept/judge").unwrap();
    assert!(transcript.contains(GOAL), "{transcript}");
    assert!(
        transcript.contains("workstream ws-arith: sh test_add.sh and sh test_mul.sh pass"),
        "{transcript}"
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
