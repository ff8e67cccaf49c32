//! The T3 mesh: squad leads of one domain publish drafts, overlaps (two squads claiming one file or
//! providing one interface) send them back to reconcile with each other's drafts, and no T4 work goes out
//! until every draft is committed. A mesh that cannot agree goes to its domain's T2 owner with the overlaps
//! left, never force-committed, once its configured rounds are spent (one whose time runs out: escalation.rs).
//! A wide mesh still ends. What a closed round leads to, for any round bound, is `crates/flow/tests/mesh.rs`.

use agency_core::event::EventKind;
use agency_core::{BriefStatus, Tier};
use agency_engine::engine::feedback_name;
use agency_store::Blackboard;

use crate::support::{Project, config, events, wait_for};

const MESH: &str = include_str!("../scripts/mesh.yaml");

/// The normal-level log lines tagged `tag`, as their messages.
fn lines(project: &Project, run: agency_core::RunId, tag: &str) -> Vec<String> {
    project
        .events_of(run, EventKind::Log)
        .iter()
        .filter(|e| e.payload["tag"] == tag)
        .map(|e| e.payload["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn two_squads_claiming_one_file_reconcile_in_round_two_and_commit() {
    let project = Project::new();
    let (run, outcome) = project.succeed(MESH, config()).await;
    let branch = outcome.branch.unwrap();
    project.assert_fixed(&branch, &["add.sh", "mul.sh", "neg.sh"]);
    let rounds = lines(&project, run.id, "MESH_ROUND");
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    assert!(
        rounds[0].ends_with("round 1 — 1 overlap left (file NOTES.md: squad-arith, squad-sign)"),
        "{rounds:?}"
    );
    assert!(rounds[1].ends_with("round 2 — no overlaps left"), "{rounds:?}");
    let done = lines(&project, run.id, "MESH_DONE");
    assert_eq!(done.len(), 1, "{done:?}");
    assert!(
        done[0].contains("committed by 2 squad leads in round 2"),
        "{done:?}"
    );
    let briefs = project.briefs(run.id);
    // Both squad leads drafted twice; the first drafts were superseded, never dispatched.
    for title in ["squad-arith", "squad-sign"] {
        let attempts: Vec<_> = briefs
            .iter()
            .filter(|b| b.tier == Tier::T3 && b.title == title)
            .collect();
        assert_eq!(attempts.len(), 2, "{}", project.tree(run.id));
        assert_eq!(attempts[0].status, BriefStatus::Cancelled);
        assert_eq!(attempts[1].status, BriefStatus::Done);
        assert_eq!(attempts[1].attempt, 1);
        // A mesh round is not charged to the squad lead's retry budget.
        assert_eq!(attempts[1].retry_budget, attempts[0].retry_budget + 1);
        // Round 2 read the peer's draft and was told the overlap.
        let peer = if title == "squad-arith" {
            "squad-sign"
        } else {
            "squad-arith"
        };
        assert!(
            attempts[1]
                .inputs
                .iter()
                .any(|i| i.starts_with("draft/ws-calc/") && i.ends_with(&format!("/{peer}"))),
            "{:?}",
            attempts[1].inputs
        );
        let feedback = project.artifact(run.id, &feedback_name(attempts[1].id)).unwrap();
        assert!(feedback.contains("Mesh round 2 of at most 3"), "{feedback}");
        assert!(
            feedback.contains("file NOTES.md claimed by squad-arith, squad-sign"),
            "{feedback}"
        );
        // No task hangs under a first draft.
        assert!(
            briefs.iter().all(|b| b.parent != Some(attempts[0].id)),
            "{}",
            project.tree(run.id)
        );
    }
    // The committed drafts are on the blackboard for anyone to read.
    let drafts: Vec<_> = project
        .store
        .list_artifacts(run.id, None)
        .unwrap()
        .into_iter()
        .filter(|a| a.name.starts_with("draft/ws-calc/") && a.name.ends_with("/squad-arith"))
        .collect();
    assert_eq!(drafts.len(), 2, "one per round");
    let last = project.artifact(run.id, &drafts[1].name).unwrap();
    assert!(!last.contains("NOTES.md\""), "{last}");
    assert_eq!(
        project.events_of(run.id, EventKind::Escalated).len(),
        0,
        "a mesh that agrees escalates nothing"
    );
}

#[test]
fn a_mesh_that_cannot_agree_goes_to_its_domain_owner_with_the_overlaps_and_never_commits() {
    let project = Project::new();
    // Without its round-2 reply squad-arith claims NOTES.md every round.
    let stubborn = MESH.replace(
        "    contains: \"Mesh round 2\"\n",
        "    contains: \"never asked\"\n",
    );
    // Two rounds, not the default three: the bound is the configured `retry.t3_mesh_rounds`.
    let mut team = config();
    team.retry.t3_mesh_rounds = 2;
    let (run, driving) = project.start_in_background(&stubborn, team, true);
    let store = project.store.clone();
    let escalated = wait_for("the mesh escalated", || {
        events(store.as_ref(), run.id)
            .into_iter()
            .find(|e| e.kind == EventKind::Escalated)
    });
    driving.stop();
    assert_eq!(escalated.tier, Some(Tier::T3));
    assert_eq!(escalated.payload["failure"], "t3_stuck");
    assert_eq!(escalated.payload["to"], "t2");
    let rounds = lines(&project, run.id, "MESH_ROUND");
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    assert!(rounds[1].contains("round 2 — 1 overlap left"), "{rounds:?}");
    let tags = lines(&project, run.id, "MESH_ESCALATED");
    assert!(tags[0].contains("did not reconcile in 2 rounds"), "{tags:?}");
    let briefs = project.briefs(run.id);
    assert!(
        briefs.iter().all(|b| b.tier != Tier::T4),
        "an unreconciled mesh must not dispatch T4 work:\n{}",
        project.tree(run.id)
    );
    // The owner re-invoked is the T2 brief the squads hang under, told the overlaps left.
    let squad = briefs.iter().find(|b| b.id == escalated.brief.unwrap()).unwrap();
    let owner = briefs.iter().find(|b| Some(b.id) == squad.parent).unwrap();
    let again = briefs
        .iter()
        .find(|b| b.tier == Tier::T2 && b.title == owner.title && b.attempt == owner.attempt + 1)
        .unwrap_or_else(|| panic!("{} re-invoked:\n{}", owner.title, project.tree(run.id)));
    let context = project.artifact(run.id, &feedback_name(again.id)).unwrap();
    assert!(context.contains("unreconciled overlaps"), "{context}");
    assert!(
        context.contains("file NOTES.md claimed by squad-arith, squad-sign"),
        "{context}"
    );
}

/// `MESH` with its one specialist owning `squads` squad leads that all claim `shared.sh` in their first
/// drafts; in round 2 every one but the first releases it. No squad has tasks: the test is the mesh.
fn wide_script(squads: usize) -> String {
    let start = MESH.find("  - role: architect").unwrap();
    let end = MESH.find("  - role: synthesis").unwrap();
    let titles: Vec<String> = (0..squads).map(|i| format!("squad-{i:02}")).collect();
    let mut script = MESH[..start].to_string();
    script.push_str(
        "  - role: architect\n    reply:\n      tool_calls:\n        - name: report_result\n          input:\n            status: done\n            summary: \"Many squads.\"\n            output:\n              architecture: \"one file per squad\"\n              squads:\n",
    );
    for title in &titles {
        script.push_str(&format!(
            "                - {{ title: {title}, instructions: \"Own {title}.sh.\", variety: {{ novelty: 1, scope: 1, uncertainty: 1, risk: 1 }} }}\n"
        ));
    }
    let synthesis_end = MESH[end..].find("  - role: squad-lead").unwrap() + end;
    script.push_str(&MESH[end..synthesis_end]);
    for (i, title) in titles.iter().enumerate() {
        let released = if i == 0 { "shared.sh, " } else { "" };
        for (contains, files) in [
            ("Mesh round 2", format!("[{released}{title}.sh]")),
            ("", format!("[shared.sh, {title}.sh]")),
        ] {
            let matcher = if contains.is_empty() {
                String::new()
            } else {
                format!("    contains: \"{contains}\"\n")
            };
            script.push_str(&format!(
                "  - role: squad-lead\n    brief: ws-calc/t3/{title}\n{matcher}    reply:\n      tool_calls:\n        - name: report_result\n          input:\n            status: done\n            summary: \"draft\"\n            output: {{ tasks: [], files: {files}, provides: [\"{title}-api\"] }}\n"
            ));
        }
    }
    script
}

#[test]
fn a_wide_mesh_of_a_dozen_squads_still_ends() {
    let project = Project::new();
    let (run, driving) = project.start_in_background(&wide_script(12), config(), true);
    let store = project.store.clone();
    let done = wait_for("the wide mesh committed", || {
        events(store.as_ref(), run.id)
            .into_iter()
            .find(|e| e.kind == EventKind::Log && e.payload["tag"] == "MESH_DONE")
    });
    driving.stop();
    let message = done.payload["message"].as_str().unwrap();
    assert!(
        message.contains("committed by 12 squad leads in round 2"),
        "{message}"
    );
    let rounds = lines(&project, run.id, "MESH_ROUND");
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    assert!(
        rounds[0].contains("round 1 — 1 overlap left (file shared.sh: squad-00, squad-01,"),
        "{rounds:?}"
    );
    // Every squad lead re-drafted exactly once.
    let briefs = project.briefs(run.id);
    for i in 0..12 {
        let title = format!("squad-{i:02}");
        let attempts = briefs
            .iter()
            .filter(|b| b.tier == Tier::T3 && b.title == title)
            .count();
        assert_eq!(attempts, 2, "{title}:\n{}", project.tree(run.id));
    }
}

/// A squad lead re-invoked after its mesh committed (here: its `t3_plan` gate rejected) re-plans in a mesh
/// round of its own: its new draft claims NOTES.md, which its peer's committed draft holds, so it is sent
/// back (round 2, the peer's draft among its inputs), releases it, and only then do its tasks go out.
#[test]
fn a_re_invoked_squad_lead_re_plans_with_a_mesh_round() {
    use agency_core::gate::{GateDecision, GateKind};
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t3_plan = true;
    let (run, driving) = project.start_in_background(MESH, team, false);
    let store = project.store.clone();
    let mut rejected = false;
    // Every gate approved as it opens, but squad-arith's first task list, which a human sends back.
    wait_for("the re-planned squad's tasks", || {
        for gate in store.pending_gates(Some(run.id)).unwrap() {
            let brief = gate.brief.map(|b| store.get_brief(b).unwrap());
            let first_arith = gate.kind == GateKind::T3Plan
                && brief
                    .as_ref()
                    .is_some_and(|b| b.title == "squad-arith" && !rejected);
            let decision = if first_arith {
                rejected = true;
                GateDecision::Reject {
                    by: "tester".into(),
                    reason: "plan the note as well".into(),
                }
            } else {
                GateDecision::Approve {
                    by: "tester".into(),
                    note: None,
                }
            };
            store.decide_gate(gate.id, decision).unwrap();
        }
        let briefs = store.list_briefs(run.id).unwrap();
        let arith: Vec<_> = briefs.iter().filter(|b| b.title == "squad-arith").collect();
        (arith.len() >= 3
            && briefs
                .iter()
                .any(|b| b.tier == Tier::T4 && b.parent == arith.last().map(|a| a.id)))
        .then_some(())
    });
    driving.stop();
    let rounds = lines(&project, run.id, "MESH_ROUND");
    assert!(
        rounds.iter().any(|r| r.ends_with(
            "squad-arith re-plans, round 1 — 1 overlap left (file NOTES.md: squad-sign, squad-arith)"
        )),
        "{rounds:?}"
    );
    assert!(
        rounds
            .iter()
            .any(|r| r.ends_with("squad-arith re-plans, round 2 — no overlaps left")),
        "{rounds:?}"
    );
    let briefs = project.briefs(run.id);
    let mut arith: Vec<_> = briefs.iter().filter(|b| b.title == "squad-arith").collect();
    arith.sort_by_key(|b| b.attempt);
    // Attempts 0 and 1 were the first mesh (round 2 committed, then rejected at the gate); attempt 2, the
    // re-plan, claimed NOTES.md and got no tasks; attempt 3, sent back in round 2, released it.
    assert_eq!(arith.len(), 4, "{}", project.tree(run.id));
    assert!(
        briefs.iter().all(|b| b.parent != Some(arith[2].id)),
        "{}",
        project.tree(run.id)
    );
    let feedback = project.artifact(run.id, &feedback_name(arith[3].id)).unwrap();
    assert!(feedback.contains("Mesh round 2 of at most 3"), "{feedback}");
}
