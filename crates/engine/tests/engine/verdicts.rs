//! Retrying slices: a partial T5 verdict (a judge's reject, recorded as the slice's sign-off) re-runs only the
//! failed slice, with its sign-off's missing items in its corrected brief (the slice that passed is neither re-run nor re-verified); a pipeline task whose
//! predecessor failed stage 1 waits for the retry and starts from its work; a slice whose merge conflicts
//! is retried on top of the slices merged before it; slices that do not touch each other's work merge together.

use agency_core::event::EventKind;
use agency_core::{BriefStatus, Tier};
use agency_engine::engine::feedback_name;

use agency_store::Blackboard;

use crate::signoff::outcomes;
use crate::support::{FIX_MUL_RETRIED, Project, config};

#[tokio::test]
async fn a_partial_verdict_retries_only_the_failed_slice_with_the_issues() {
    let project = Project::new();
    let (run, outcome) = project
        .succeed(include_str!("../scripts/partial.yaml"), config())
        .await;
    assert_eq!(project.tree(run.id), FIX_MUL_RETRIED);
    let feedback = project.feedback(run.id, Tier::T4, "fix-mul", 1);
    assert!(
        feedback.contains("mul.sh still carries the LEFTOVER-DEBUG marker; remove it"),
        "{feedback}"
    );
    // fix-add ran once and was verified once; fix-mul ran twice.
    assert_eq!(project.spawns_of(run.id, Tier::T4, "fix-add"), 1);
    assert_eq!(project.spawns_of(run.id, Tier::T5, "fix-add"), 1);
    assert_eq!(project.spawns_of(run.id, Tier::T4, "fix-mul"), 2);
    let briefs = project.briefs(run.id);
    assert!(briefs.iter().all(|b| b.status != BriefStatus::Escalated));
    let verdicts: Vec<(String, Vec<String>)> = project
        .events(run.id)
        .iter()
        .filter(|e| e.kind == EventKind::Verdict)
        .map(|e| {
            let joint = &e.payload["joint"];
            let failed = joint["failed_scopes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            (joint["joint_verdict"].as_str().unwrap().to_string(), failed)
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("partial".to_string(), vec!["fix-mul".to_string()]),
            ("pass".to_string(), vec![])
        ]
    );
    let branch = outcome.branch.unwrap();
    project.assert_fixed(&branch, &["mul.sh", "add.sh"]);

    // The judge's reject is recorded as the slice's sign-off, with its transcript (signoff.rs's test of
    // this same run folded in here).
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
async fn a_pipeline_task_waits_for_its_retried_predecessor_and_starts_from_its_work() {
    let project = Project::new();
    let (run, outcome) = project
        .succeed(include_str!("../scripts/pipeline.yaml"), config())
        .await;
    let briefs = project.briefs(run.id);
    let live = |title: &str| {
        briefs
            .iter()
            .rev()
            .find(|b| b.tier == Tier::T4 && b.title == title && b.status == BriefStatus::Done)
            .unwrap()
    };
    assert_eq!(live("fix-neg").attempt, 1);
    assert_eq!(live("note-neg").depends_on, [live("fix-neg").id]);
    // Stage 1 failed the first attempt with the command's own output.
    let first = briefs
        .iter()
        .find(|b| b.title == "fix-neg" && b.attempt == 0)
        .unwrap();
    assert_eq!(first.status, BriefStatus::Failed);
    let feedback = project
        .artifact(run.id, &feedback_name(live("fix-neg").id))
        .unwrap();
    assert!(feedback.contains("neg 4 gave 0, expected -4"), "{feedback}");
    let branch = outcome.branch.unwrap();
    project.assert_fixed(&branch, &["neg.sh"]);
    assert_eq!(
        project.file_on(&branch, "NOTES.md").unwrap(),
        "neg.sh prints 0 - A.\n"
    );
}

/// Slices merge one after another into their workstream; one that conflicts with a slice merged before it
/// is retried on top of what is merged, and the others are not held back by it.
#[tokio::test]
async fn a_slice_that_conflicts_is_retried_on_top_of_the_slices_merged_before_it() {
    let project = Project::new();
    let (run, outcome) = project
        .succeed(include_str!("../scripts/conflict.yaml"), config())
        .await;
    assert_eq!(project.spawns_of(run.id, Tier::T4, "note-a"), 1);
    assert_eq!(project.spawns_of(run.id, Tier::T4, "fix-add"), 1);
    assert_eq!(project.spawns_of(run.id, Tier::T4, "note-b"), 2);
    let feedback = project.feedback(run.id, Tier::T4, "note-b", 1);
    assert!(feedback.contains("conflicts in NOTES.md"), "{feedback}");
    let logs: Vec<String> = project
        .events_of(run.id, EventKind::Log)
        .iter()
        .filter(|e| matches!(e.payload["tag"].as_str(), Some("MERGED" | "CONFLICT")))
        .map(|e| {
            e.payload["message"]
                .as_str()
                .unwrap()
                .split(' ')
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    // In the squad's order, the conflict not holding back the slice after it, and every slice merged once.
    assert_eq!(
        logs,
        [
            "note-a merged",
            "note-b: merging",
            "fix-add merged",
            "note-b merged"
        ],
        "{}",
        project.tree(run.id)
    );
    let branch = outcome.branch.unwrap();
    assert_eq!(project.file_on(&branch, "NOTES.md").as_deref(), Some("a\nb\n"));
    project.assert_fixed(&branch, &["add.sh"]);
}

/// A squad's slices that pass and do not touch each other's work merge into their workstream together: one
/// merge commit whose parents are the workstream and each slice, and a `MERGED` line per slice.
#[tokio::test]
async fn a_squads_independent_slices_merge_together_in_one_commit() {
    let project = Project::new();
    let (run, outcome) = project
        .succeed(include_str!("../scripts/swarm.yaml"), config())
        .await;
    let branch = outcome.branch.unwrap();
    project.assert_fixed(&branch, &["add.sh", "mul.sh", "neg.sh"]);
    let merged: Vec<String> = project
        .events_of(run.id, EventKind::Log)
        .iter()
        .filter(|e| e.payload["tag"] == "MERGED")
        .map(|e| {
            e.payload["message"]
                .as_str()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(merged, ["fix-add", "fix-mul", "fix-neg"]);
    let history = project
        .repo
        .run_git(&["log", "--format=%P%x09%s", &branch])
        .unwrap()
        .stdout
        .text()
        .into_owned();
    let squad_merges: Vec<usize> = history
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .filter(|(_, subject)| subject.starts_with("merge 3 branches into "))
        .map(|(parents, _)| parents.split(' ').count())
        .collect();
    assert_eq!(squad_merges, [4], "{history}");
    assert!(
        !history.contains("\tmerge fix-"),
        "no merge commit of a slice of its own: {history}"
    );
}
