//! Retrying slices: a partial T5 verdict re-runs only the failed slice, with its sign-off's missing items in its
//! corrected brief (the slice that passed is neither re-run nor re-verified); a pipeline task whose
//! predecessor failed stage 1 waits for the retry and starts from its work.

use agency_core::event::EventKind;
use agency_core::{BriefStatus, Tier};
use agency_engine::engine::feedback_name;
use agency_store::RunStatus;

use crate::support::{GOAL, Project, config, drive, spawns_per_brief};

#[tokio::test]
async fn a_partial_verdict_retries_only_the_failed_slice_with_the_issues() {
    let project = Project::new();
    let engine = project.engine(include_str!("../scripts/partial.yaml"), config(), true);
    let run = engine.start(GOAL).unwrap();
    let outcome = drive(&engine, run.id).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    assert_eq!(
        project.tree(run.id),
        "\
t1 plan (planner) #0 done
  t1 accept (acceptor) #0 done
  t3 arithmetic (squad-lead) #0 done
    t4 fix-add (implementer) #0 done
      t5 fix-add (verifier) #0 done
    t4 fix-mul (implementer) #0 failed
      t5 fix-mul (verifier) #0 done
    t4 fix-mul (implementer) #1 done
      t5 fix-mul (verifier) #0 done
"
    );
    let briefs = project.briefs(run.id);
    let retried = briefs
        .iter()
        .find(|b| b.tier == Tier::T4 && b.title == "fix-mul" && b.attempt == 1)
        .unwrap();
    let feedback = project.artifact(run.id, &feedback_name(retried.id)).unwrap();
    assert!(
        feedback.contains("mul.sh still carries the LEFTOVER-DEBUG marker; remove it"),
        "{feedback}"
    );
    // fix-add ran once and was verified once; fix-mul ran twice.
    let spawns = spawns_per_brief(&project.events(run.id));
    let spawned = |tier: Tier, title: &str| -> usize {
        briefs
            .iter()
            .filter(|b| b.tier == tier && b.title == title)
            .map(|b| spawns.get(&b.id).copied().unwrap_or(0))
            .sum()
    };
    assert_eq!(spawned(Tier::T4, "fix-add"), 1);
    assert_eq!(spawned(Tier::T5, "fix-add"), 1);
    assert_eq!(spawned(Tier::T4, "fix-mul"), 2);
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
    assert_eq!(
        project.file_on(&branch, "mul.sh").unwrap(),
        "# mul A B: prints A * B\necho $(($1 * $2))\n"
    );
    assert_eq!(
        project.file_on(&branch, "add.sh").unwrap(),
        "# add A B: prints A + B\necho $(($1 + $2))\n"
    );
}

#[tokio::test]
async fn a_pipeline_task_waits_for_its_retried_predecessor_and_starts_from_its_work() {
    let project = Project::new();
    let engine = project.engine(include_str!("../scripts/pipeline.yaml"), config(), true);
    let run = engine.start(GOAL).unwrap();
    let outcome = drive(&engine, run.id).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
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
    assert_eq!(
        project.file_on(&branch, "neg.sh").unwrap(),
        "# neg A: prints -A\necho $((0 - $1))\n"
    );
    assert_eq!(
        project.file_on(&branch, "NOTES.md").unwrap(),
        "neg.sh prints 0 - A.\n"
    );
}
