//! The seed's three depth profiles, end to end: full (T2 → T3 mesh → T4 swarm and pipeline → T5), medium
//! (T3 → T4 → T5) and simple (T4 → T5). Each ends with the fixes on the integration branch, a succeeded run,
//! the expected briefs tree and the tier lines of the live log. The medium run also carries the sign-off
//! checks of a clean run (one diff per slice, T1's acceptance), so that run is made once.

use agency_core::Tier;
use agency_core::event::EventKind;
use agency_core::gate::GateKind;
use agency_store::{Blackboard, RunStatus};

use agency_engine::engine::diff_name;

use crate::signoff::outcomes;
use crate::support::{GOAL, Project, config};

#[tokio::test]
async fn simple_profile_runs_t4_then_t5_then_accept() {
    let project = Project::new();
    let (run, outcome) = project
        .succeed(include_str!("../scripts/simple.yaml"), config())
        .await;
    let branch = outcome.branch.unwrap();
    assert_eq!(branch, format!("agency/{}/integration", run.id.short()));
    project.assert_fixed(&branch, &["add.sh"]);
    assert_eq!(
        project.tree(run.id),
        "\
t1 plan (planner) #0 done
  t1 accept (acceptor) #0 done
  t4 fix-add (implementer) #0 done
    t5 fix-add (verifier) #0 done
"
    );
    assert_eq!(
        project.log_tags(run.id),
        [
            "T1 PLAN_START",
            "T1 PLAN_DONE",
            "T4 START",
            "T5 VERIFY_START",
            "T5 VERDICT",
            "T1 ACCEPT_START",
            "T1 ACCEPTED"
        ]
    );
    assert_eq!(
        project.store.get_run(run.id).unwrap().status,
        RunStatus::Succeeded
    );
}

/// The medium run is also the one the sign-off checks ride on (signoff.rs's two medium-run tests folded in
/// here, one run instead of three): each slice diffed once and judged on that diff, git asked no more than
/// needed, and T1 accepting by signing off the integration branch against every contract.
#[tokio::test]
async fn medium_profile_runs_t3_then_a_t4_swarm_then_t5_per_slice() {
    let mut project = Project::new();
    let log = project.log_git_calls();
    let (run, outcome) = project
        .succeed(include_str!("../scripts/medium.yaml"), config())
        .await;
    let branch = outcome.branch.unwrap();
    project.assert_fixed(&branch, &["add.sh", "mul.sh"]);
    assert_eq!(
        project.tree(run.id),
        "\
t1 plan (planner) #0 done
  t1 accept (acceptor) #0 done
  t3 arithmetic (squad-lead) #0 done
    t4 fix-add (implementer) #0 done
      t5 fix-add (verifier) #0 done
    t4 fix-mul (implementer) #0 done
      t5 fix-mul (verifier) #0 done
"
    );
    // fix-add carries its own variety (8, fix-mul 4): its teachback was blocking and reviewed by T3.
    let events = project.events(run.id);
    assert!(
        events
            .iter()
            .any(|e| e.kind == EventKind::TeachbackApproved && e.tier == Some(Tier::T4))
    );
    assert_eq!(
        project.log_tags(run.id),
        [
            "T1 PLAN_START",
            "T1 PLAN_DONE",
            "T3 START",
            "T3 TASKS",
            "T4 SWARM_START",
            "T5 VERIFY_START",
            "T5 VERDICT",
            "T1 ACCEPT_START",
            "T1 ACCEPTED"
        ]
    );
    // One joint verdict for the squad, all pass.
    let verdicts: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == EventKind::Verdict)
        .map(|e| e.payload["joint"]["joint_verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["pass"]);

    // Each slice is diffed once and its sign-off judges the diff its verifier was handed.
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

    // T1 accepts by signing off the integration branch against every contract.
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

#[tokio::test]
async fn full_profile_runs_every_tier_with_a_squad_per_specialist_a_swarm_and_a_pipeline() {
    let project = Project::new();
    let (run, outcome) = project
        .succeed(include_str!("../scripts/full.yaml"), config())
        .await;
    let branch = outcome.branch.unwrap();
    project.assert_fixed(&branch, &["add.sh", "mul.sh", "neg.sh"]);
    assert_eq!(
        project.file_on(&branch, "NOTES.md").unwrap(),
        "neg.sh prints 0 - A.\n"
    );
    assert_eq!(
        project.tree(run.id),
        "\
t1 plan (planner) #0 done
  t1 accept (acceptor) #0 done
  t2 lead (lead-architect) #0 done
    t2 arithmetic (architect) #0 done
      t3 squad-arith (squad-lead) #0 done
        t4 fix-add (implementer) #0 done
          t5 fix-add (verifier) #0 done
        t4 fix-mul (implementer) #0 done
          t5 fix-mul (verifier) #0 done
    t2 sign (architect) #0 done
      t3 squad-sign (squad-lead) #0 done
        t4 fix-neg (implementer) #0 done
          t5 fix-neg (verifier) #0 done
        t4 note-neg (implementer) #0 done
          t5 note-neg (verifier) #0 done
    t2 synthesis (synthesis) #0 done
      t1 validate (validator) #0 done
"
    );
    let briefs = project.briefs(run.id);
    let by_title = |t: &str, tier: Tier| briefs.iter().find(|b| b.title == t && b.tier == tier).unwrap();
    // The pipeline: note-neg waits for fix-neg; the swarm has no dependencies.
    assert_eq!(
        by_title("note-neg", Tier::T4).depends_on,
        [by_title("fix-neg", Tier::T4).id]
    );
    assert!(by_title("fix-add", Tier::T4).depends_on.is_empty());
    // Specialists read the lead's boundaries; each squad hangs under its own specialist and reads the
    // canonical architecture, its specialist's slice and the boundaries (the interface contracts).
    assert_eq!(by_title("sign", Tier::T2).inputs, ["boundaries/ws-calc"]);
    assert_eq!(
        by_title("squad-sign", Tier::T3).parent,
        Some(by_title("sign", Tier::T2).id)
    );
    assert_eq!(
        by_title("squad-sign", Tier::T3).inputs,
        [
            "architecture/ws-calc",
            "architecture/ws-calc/sign",
            "boundaries/ws-calc"
        ]
    );
    assert_eq!(
        project.log_tags(run.id),
        [
            "T1 PLAN_START",
            "T1 PLAN_DONE",
            "T2 LEAD_START",
            "T2 BOUNDS_READY",
            "T2 SPEC_START",
            "T2 SPEC_DONE",
            "T2 SPEC_DONE",
            "T2 SYNTH_DONE",
            "T1 ARCH_VALID",
            "T3 START",
            "T3 START",
            "T3 TASKS",
            "T4 SWARM_START",
            "T3 TASKS",
            "T4 SWARM_START",
            "T5 VERIFY_START",
            "T5 VERIFY_START",
            "T5 VERDICT",
            "T1 ACCEPT_START",
            "T1 ACCEPTED"
        ]
    );
    // Gates: the plan (always) and the synthesis (on by default), both auto-approved.
    let gates: Vec<GateKind> = project
        .store
        .list_gates(run.id)
        .unwrap()
        .iter()
        .map(|g| g.kind)
        .collect();
    assert_eq!(gates, [GateKind::T1Plan, GateKind::T2Synthesis]);
}
