//! Path amendments end to end, one test per path through the runner: a tier proposes with its tool (or a
//! human with the CLI's call), the proposal is listed on the next gate, a human approves it there, and the
//! workstream's remaining path changes — an extra squad-lead pass, a T2 pass before a squad lead that has
//! not started, a shallower path that skips the squad lead — and the run succeeds. A rejected one changes
//! nothing; one the workstream moved past is refused with the reason; an approval made under a replaced
//! plan counts for nothing; a dozen workstreams run with two of them amended (one an extra squad-lead pass,
//! one an extra implementer pass). What each kind of change makes of a path, and what the next pass is
//! told, is decided in `agency_flow::amendments` and tested there (crates/flow/tests/amendments.rs).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use agency_core::event::payload::PathChange;
use agency_core::event::{EventKind, EventPayload};
use agency_core::gate::{GateKind, GateStatus};
use agency_core::{BriefStatus, RunId, Tier};
use agency_engine::DriveOutcome;
use agency_engine::amendments;
use agency_store::{Blackboard, RunStatus};
use serde_json::json;

use crate::support::{Background, Project, approve, config, pending, wait_for, wide_plan};

#[test]
fn a_t4s_extra_squad_pass_is_approved_at_the_next_gate_and_changes_the_path() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t5_verdict = true;
    let (run, driving) = project.start_in_background(include_str!("../scripts/amendment.yaml"), team, false);
    let store = project.store.clone();
    let plan_gate = wait_for("the t1_plan gate", pending(&store, run.id, GateKind::T1Plan));
    approve(store.as_ref(), plan_gate.id);

    // The first pass's verdict gate lists the T4's proposal.
    let verdict = wait_for(
        "the first t5_verdict gate",
        pending(&store, run.id, GateKind::T5Verdict),
    );
    let listed = verdict.summary["amendments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(listed.len(), 1, "{}", verdict.summary);
    let seq = listed[0]["seq"].as_i64().unwrap();
    let line = listed[0]["line"].as_str().unwrap();
    assert!(line.contains("ws-arith: add t3 before t5"), "{line}");
    assert!(line.contains("by t4/fix-add"), "{line}");
    let proposed = project.events_of(run.id, EventKind::PathAmendment);
    assert_eq!(proposed.len(), 1);
    assert_eq!(proposed[0].tier, Some(Tier::T4));
    // The tier above is told; nothing waited for it.
    assert!(
        project.log_tags(run.id).iter().any(|t| t == "T3 AMENDMENT"),
        "{:?}",
        project.log_tags(run.id)
    );
    assert_eq!(
        amendments::current_path(store.as_ref(), run.id, "ws-arith").unwrap(),
        Some(vec![Tier::T3, Tier::T4, Tier::T5]),
        "undecided, the path is the plan's"
    );

    amendments::decide(store.as_ref(), run.id, seq, true, "tester", None).unwrap();
    let again = amendments::decide(store.as_ref(), run.id, seq, false, "tester", None).unwrap_err();
    assert!(again.contains("approved by tester already"), "{again}");
    assert_eq!(
        amendments::current_path(store.as_ref(), run.id, "ws-arith").unwrap(),
        Some(vec![Tier::T3, Tier::T4, Tier::T3, Tier::T4, Tier::T5]),
        "an added squad-lead pass brings its implementers"
    );
    approve(store.as_ref(), verdict.id);

    // The extra pass runs, and its own verdict gate comes.
    let second = wait_for("the extra pass's t5_verdict gate", || {
        pending(&store, run.id, GateKind::T5Verdict)().filter(|g| g.id != verdict.id)
    });
    assert!(second.summary.get("amendments").is_none(), "{}", second.summary);
    approve(store.as_ref(), second.id);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));

    let briefs = project.briefs(run.id);
    let extra = briefs
        .iter()
        .find(|b| b.tier == Tier::T3 && b.title == "amended-pass-1")
        .expect("the extra squad-lead pass");
    assert_eq!(extra.status, BriefStatus::Done);
    let fix_mul = briefs.iter().find(|b| b.title == "fix-mul").expect("its task");
    assert_eq!(
        (fix_mul.parent, fix_mul.status),
        (Some(extra.id), BriefStatus::Done)
    );
    assert!(project.log_tags(run.id).iter().any(|t| t == "T3 AMENDED_PASS"));
    let decided = project.events_of(run.id, EventKind::PathAmendmentDecided);
    let Ok(EventPayload::PathAmendmentDecided(decision)) = decided[0].typed() else {
        panic!("{decided:?}");
    };
    assert_eq!(
        decision.path_after,
        vec![Tier::T3, Tier::T4, Tier::T3, Tier::T4, Tier::T5]
    );
    assert!(
        store
            .list_gates(run.id)
            .unwrap()
            .iter()
            .all(|g| g.status == GateStatus::Approved)
    );
}

#[test]
fn a_specialists_shallower_path_skips_the_squad_lead_once_approved() {
    let project = Project::new();
    let (run, driving) = project.start_in_background(
        include_str!("../scripts/amendment-shallower.yaml"),
        config(),
        false,
    );
    let store = project.store.clone();
    let plan_gate = wait_for("the t1_plan gate", pending(&store, run.id, GateKind::T1Plan));
    approve(store.as_ref(), plan_gate.id);
    // The synthesis gate (on by default) is the next one: it lists the specialist's proposal.
    let synthesis = wait_for(
        "the t2_synthesis gate",
        pending(&store, run.id, GateKind::T2Synthesis),
    );
    let seq = listed(&synthesis.summary, "ws-calc: shallower path t2→t4→t5");
    amendments::decide(
        store.as_ref(),
        run.id,
        seq,
        true,
        "tester",
        Some("two one-liners".into()),
    )
    .unwrap();
    assert_eq!(
        amendments::current_path(store.as_ref(), run.id, "ws-calc").unwrap(),
        Some(vec![Tier::T2, Tier::T4, Tier::T5])
    );
    approve(store.as_ref(), synthesis.id);
    let outcome = approve_every_gate(&project, run.id, driving);
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let briefs = project.briefs(run.id);
    assert!(
        briefs.iter().all(|b| b.tier != Tier::T3),
        "no squad lead ran: {}",
        project.tree(run.id)
    );
    let specialist = briefs
        .iter()
        .find(|b| b.tier == Tier::T2 && b.title == "arithmetic")
        .unwrap();
    for title in ["fix-add", "fix-mul"] {
        let task = briefs
            .iter()
            .find(|b| b.title == title && b.tier == Tier::T4)
            .unwrap();
        assert_eq!(
            (task.parent, task.status),
            (Some(specialist.id), BriefStatus::Done)
        );
    }
    assert!(project.log_tags(run.id).iter().any(|t| t == "T2 NO_SQUAD_LEAD"));
    project.assert_fixed(
        &format!("agency/{}/integration", run.id.short()),
        &["add.sh", "mul.sh"],
    );
}

/// The specialist's shallower path waits undecided while the synthesis gate is approved: the squads are
/// written as squad leads, so the workstream has started t3 and the approval is refused with that reason;
/// a human rejects it, and the path and run go on as planned.
#[test]
fn an_amendment_the_workstream_moved_past_is_refused_and_a_rejected_one_changes_nothing() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t3_plan = true;
    let (run, driving) =
        project.start_in_background(include_str!("../scripts/amendment-shallower.yaml"), team, false);
    let store = project.store.clone();
    let plan_gate = wait_for("the t1_plan gate", pending(&store, run.id, GateKind::T1Plan));
    approve(store.as_ref(), plan_gate.id);
    let synthesis = wait_for(
        "the t2_synthesis gate",
        pending(&store, run.id, GateKind::T2Synthesis),
    );
    let seq = listed(&synthesis.summary, "shallower path t2→t4→t5");
    approve(store.as_ref(), synthesis.id);
    wait_for(
        "the squad leads' t3_plan gate",
        pending(&store, run.id, GateKind::T3Plan),
    );
    let refused = amendments::decide(store.as_ref(), run.id, seq, true, "tester", None).unwrap_err();
    assert!(
        refused.contains(&format!(
            "amendment #{seq} no longer applies to ws-calc's path t2→t3→t4→t5"
        )),
        "{refused}"
    );
    assert!(
        refused.contains("does not keep the tiers already started (t2→t3)"),
        "{refused}"
    );
    assert!(
        project
            .events_of(run.id, EventKind::PathAmendmentDecided)
            .is_empty()
    );
    amendments::decide(
        store.as_ref(),
        run.id,
        seq,
        false,
        "tester",
        Some("too late".into()),
    )
    .unwrap();
    assert_eq!(
        amendments::current_path(store.as_ref(), run.id, "ws-calc").unwrap(),
        Some(vec![Tier::T2, Tier::T3, Tier::T4, Tier::T5]),
        "a rejected amendment changes nothing"
    );
    let outcome = approve_every_gate(&project, run.id, driving);
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let briefs = project.briefs(run.id);
    assert_eq!(briefs.iter().filter(|b| b.tier == Tier::T3).count(), 2);
    assert!(briefs.iter().all(|b| !b.title.starts_with("amended-pass")));
}

/// The seed's example, "add t2 before t3", for a workstream whose squad lead has not started: a human
/// proposes it while the first stage works; approved at the next gate, the second stage's workstream starts
/// with a T2 lead. A tier put before one the workstream started and an unknown workstream are refused when
/// proposed, with the reason.
#[test]
fn a_t2_pass_added_before_a_squad_lead_not_started_starts_the_workstream_with_a_lead() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t3_plan = true;
    team.visibility.inspection_gates.t5_verdict = true;
    let (run, driving) =
        project.start_in_background(include_str!("../scripts/amendment-t2.yaml"), team, false);
    let store = project.store.clone();
    let plan_gate = wait_for("the t1_plan gate", pending(&store, run.id, GateKind::T1Plan));
    approve(store.as_ref(), plan_gate.id);
    let squad_gate = wait_for("ws-add's t3_plan gate", pending(&store, run.id, GateKind::T3Plan));
    let human = amendments::Proposer {
        name: "cli:tester".into(),
        brief: None,
    };
    let t2_pass = |workstream: &str, add: Vec<Tier>, before: Tier| PathChange {
        workstream: workstream.into(),
        add_tiers: add,
        insert_before: Some(before),
        ..Default::default()
    };
    // An implementer can no longer go before the squad lead at work (a T2 pass asked for there is a
    // second architecture pass after this one: second_pass.rs).
    let too_late = amendments::propose(
        store.as_ref(),
        run.id,
        &human,
        "the task needs doing first",
        t2_pass("ws-add", vec![Tier::T4], Tier::T3),
    )
    .unwrap_err();
    assert!(too_late.contains("has started t3 already"), "{too_late}");
    let unknown = amendments::propose(
        store.as_ref(),
        run.id,
        &human,
        "why",
        t2_pass("ws-nope", vec![Tier::T3], Tier::T5),
    )
    .unwrap_err();
    assert!(
        unknown.contains("no workstream \"ws-nope\" (it has ws-add, ws-mul)"),
        "{unknown}"
    );
    let proposed = amendments::propose(
        store.as_ref(),
        run.id,
        &human,
        "the multiplier needs an architecture pass first",
        t2_pass("ws-mul", vec![Tier::T2], Tier::T3),
    )
    .unwrap();
    approve(store.as_ref(), squad_gate.id);
    let verdict = wait_for(
        "ws-add's t5_verdict gate",
        pending(&store, run.id, GateKind::T5Verdict),
    );
    assert_eq!(listed(&verdict.summary, "ws-mul: add t2 before t3"), proposed.seq);
    amendments::decide(store.as_ref(), run.id, proposed.seq, true, "tester", None).unwrap();
    assert_eq!(
        amendments::current_path(store.as_ref(), run.id, "ws-mul").unwrap(),
        Some(vec![Tier::T2, Tier::T3, Tier::T4, Tier::T5])
    );
    let outcome = approve_every_gate(&project, run.id, driving);
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let briefs = project.briefs(run.id);
    let lead = briefs
        .iter()
        .find(|b| b.workstream == "ws-mul" && b.tier == Tier::T2 && b.title == "lead")
        .expect("ws-mul starts with a T2 lead");
    assert_eq!(lead.status, BriefStatus::Done);
    assert!(
        briefs
            .iter()
            .any(|b| b.workstream == "ws-mul" && b.title == "squad-mul" && b.status == BriefStatus::Done)
    );
    assert!(
        briefs
            .iter()
            .all(|b| !(b.workstream == "ws-add" && b.tier == Tier::T2)),
        "ws-add's path is unchanged"
    );
    assert!(project.log_tags(run.id).iter().any(|t| t == "T2 AMENDED_PATH"));
    project.assert_fixed(
        &format!("agency/{}/integration", run.id.short()),
        &["add.sh", "mul.sh"],
    );
}

/// An approval belongs to the plan it was made under: the extra implementer pass it asked for fails until it
/// escalates to T1, which re-plans the same workstream; under the new plan the old approval counts for
/// nothing — the path is the new plan's and no extra pass is written under it — and the run succeeds.
#[test]
fn an_approval_made_under_a_replaced_plan_counts_for_nothing() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t5_verdict = true;
    let (run, driving) =
        project.start_in_background(include_str!("../scripts/amendment-replan.yaml"), team, false);
    let store = project.store.clone();
    let outcome = approve_every_gate(&project, run.id, driving);
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let all = amendments::recorded(store.as_ref(), run.id).unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(
        all[0]
            .decision
            .as_ref()
            .map(|d| (d.approved, d.path_after.clone())),
        Some((true, vec![Tier::T3, Tier::T4, Tier::T4, Tier::T5]))
    );
    assert_eq!(
        amendments::current_path(store.as_ref(), run.id, "ws-arith").unwrap(),
        Some(vec![Tier::T3, Tier::T4, Tier::T5]),
        "the new plan's path"
    );
    let briefs = project.briefs(run.id);
    let plans: Vec<_> = briefs
        .iter()
        .filter(|b| b.tier == Tier::T1 && b.title == "plan")
        .collect();
    assert_eq!(plans.len(), 2, "{}", project.tree(run.id));
    assert!(
        briefs
            .iter()
            .filter(|b| b.title == "amended-pass-1")
            .all(|b| b.parent == Some(plans[0].id)),
        "no extra pass under the new plan: {}",
        project.tree(run.id)
    );
    project.assert_fixed(
        &format!("agency/{}/integration", run.id.short()),
        &["add.sh", "mul.sh"],
    );
}

/// A dozen workstreams in parallel; the implementers of two propose a change (an extra squad-lead pass, an
/// extra implementer pass), approved at the T5 verdict gates. Those two run their extra pass, the others
/// their plan, and every one merges.
#[test]
fn a_dozen_workstreams_with_two_amended_all_merge() {
    const WIDTH: usize = 12;
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t5_verdict = true;
    let (run, driving) = project.start_in_background(&wide_script(WIDTH), team, false);
    let store = project.store.clone();
    let outcome = approve_every_gate(&project, run.id, driving);
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let briefs = project.briefs(run.id);
    let plan = briefs
        .iter()
        .find(|b| b.tier == Tier::T1)
        .expect("the plan brief");
    for i in 0..WIDTH {
        let id = format!("ws-{i}");
        let path = amendments::current_path(store.as_ref(), run.id, &id)
            .unwrap()
            .unwrap();
        let extra = briefs
            .iter()
            .find(|b| b.workstream == id && b.title == "amended-pass-1");
        match i {
            3 => {
                assert_eq!(path, [Tier::T3, Tier::T4, Tier::T3, Tier::T4, Tier::T5]);
                assert_eq!(
                    extra.map(|b| (b.tier, b.status)),
                    Some((Tier::T3, BriefStatus::Done))
                );
            }
            8 => {
                assert_eq!(path, [Tier::T3, Tier::T4, Tier::T4, Tier::T5]);
                // The extra implementer pass is written under the plan, told what it is, and its slice
                // is verified before the workstream merges.
                let extra = extra.expect("ws-8's extra implementer pass");
                assert_eq!(
                    (extra.tier, extra.status, extra.parent),
                    (Tier::T4, BriefStatus::Done, Some(plan.id)),
                    "{}",
                    project.tree(run.id)
                );
                assert!(
                    extra.instructions.contains("An extra implementer pass"),
                    "{}",
                    extra.instructions
                );
                assert!(
                    briefs.iter().any(|b| b.tier == Tier::T5
                        && b.parent == Some(extra.id)
                        && b.status == BriefStatus::Done),
                    "the extra pass's slice is verified: {}",
                    project.tree(run.id)
                );
            }
            _ => {
                assert_eq!(path, [Tier::T3, Tier::T4, Tier::T5], "{id}");
                assert!(extra.is_none(), "{id}");
            }
        }
        assert!(
            project.artifact(run.id, &format!("merged/{id}")).is_some(),
            "{id} merged"
        );
    }
    assert_eq!(
        project.events_of(run.id, EventKind::PathAmendmentDecided).len(),
        2
    );
}

/// The script of [`a_dozen_workstreams_with_two_amended_all_merge`]: `ws-<i>` writes `out/ws-<i>.txt`
/// through one squad lead and one implementer; ws-3's implementer asks for another squad-lead pass and
/// ws-8's for another implementer pass, each of which writes `out/ws-<i>-more.txt`.
fn wide_script(width: usize) -> String {
    // Small enough that no implementer's teachback blocks its edits (the extra implementer pass has its
    // workstream's variety).
    let variety = json!({ "novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1 });
    let write = |path: String, propose: Option<serde_json::Value>| {
        let mut calls: Vec<serde_json::Value> = propose.into_iter().collect();
        calls.push(json!({ "name": "write_file", "input": { "path": path, "content": "done\n" } }));
        calls.push(json!({ "name": "report_result", "input": {
            "status": "done", "summary": format!("wrote {path}"), "evidence": [{ "path": path }]
        }}));
        json!({ "tool_calls": calls })
    };
    let task = |title: &str| {
        json!({ "title": title, "instructions": "write its file", "variety": variety,
                "contract": { "done_when": "its file exists" } })
    };
    let squad = |id: &str, title: &str, tasks: Vec<serde_json::Value>| {
        json!({ "role": "squad-lead", "brief": format!("{id}/t3/{title}"),
                "reply": { "tool_calls": [{ "name": "report_result", "input": {
                    "status": "done", "summary": "tasks", "output": { "tasks": tasks } }}]}})
    };
    let mut rules = vec![
        json!({
            "role": "judge", "brief": "run/t1/accept",
            "reply": { "text": "all in\nVERDICT: accept\nmissing: none\n" }
        }),
        wide_plan(width, &["t3", "t4", "t5"], "medium", |_| None),
    ];
    let ids: Vec<String> = (0..width).map(|i| format!("ws-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        rules.push(squad(id, id, vec![task(&format!("{id}-task"))]));
        let propose = match i {
            3 => Some(json!({ "name": "propose_path_amendment", "input": {
                "reason": "a second file needs planning", "add_tiers": ["t3"], "insert_before": "t5" } })),
            8 => Some(json!({ "name": "propose_path_amendment", "input": {
                "reason": "a second file needs writing", "add_tiers": ["t4"], "insert_before": "t5" } })),
            _ => None,
        };
        rules.push(
            json!({ "role": "implementer", "brief": format!("{id}/t4/{id}-task"),
                           "reply": write(format!("out/{id}.txt"), propose) }),
        );
    }
    rules.push(squad("ws-3", "amended-pass-1", vec![task("ws-3-more")]));
    rules.push(json!({ "role": "implementer", "brief": "ws-3/t4/ws-3-more",
                       "reply": write("out/ws-3-more.txt".into(), None) }));
    rules.push(json!({ "role": "implementer", "brief": "ws-8/t4/amended-pass-1",
                       "reply": write("out/ws-8-more.txt".into(), None) }));
    rules.push(json!({ "role": "judge", "reply": { "text": "Fine.\nVERDICT: accept\nmissing: none\n" } }));
    json!({ "model": "scripted-amendment-wide", "replies": rules }).to_string()
}

/// The seq of the one amendment a gate's summary lists, checking its line holds `says`.
pub(crate) fn listed(summary: &serde_json::Value, says: &str) -> i64 {
    let listed = summary["amendments"].as_array().cloned().unwrap_or_default();
    assert_eq!(listed.len(), 1, "{summary}");
    let line = listed[0]["line"].as_str().unwrap();
    assert!(line.contains(says), "{line}");
    listed[0]["seq"].as_i64().unwrap()
}

/// As a human at the console until the run ends: every amendment a gate lists is approved, then the gate.
pub(crate) fn approve_every_gate(project: &Project, run: RunId, driving: Background) -> DriveOutcome {
    decide_every_gate(project, run, driving, |_| true)
}

/// As a human at the console until the run ends: every amendment a gate lists is approved when `approve`
/// says so (by its seq) and rejected otherwise, then the gate is approved.
pub(crate) fn decide_every_gate(
    project: &Project,
    run: RunId,
    driving: Background,
    approve_amendment: impl Fn(i64) -> bool,
) -> DriveOutcome {
    let store = &project.store;
    let deadline = Instant::now() + Duration::from_secs(45);
    // A gate's summary is what was undecided when it opened; what the test decided since is skipped.
    let mut decided: HashSet<i64> = amendments::recorded(store.as_ref(), run)
        .unwrap()
        .into_iter()
        .filter(|r| r.decision.is_some())
        .map(|r| r.seq)
        .collect();
    while !store.run_status(run).unwrap().is_terminal() {
        if Instant::now() >= deadline {
            driving.stop();
            panic!(
                "the run did not end within 45s: {}\n{:?}",
                project.tree(run),
                project.log_tags(run)
            );
        }
        for gate in store.pending_gates(Some(run)).unwrap() {
            for listed in gate.summary["amendments"].as_array().into_iter().flatten() {
                let seq = listed["seq"].as_i64().unwrap();
                if decided.insert(seq) {
                    let yes = approve_amendment(seq);
                    let note = (!yes).then(|| "not this time".to_string());
                    amendments::decide(store.as_ref(), run, seq, yes, "tester", note).unwrap();
                }
            }
            approve(store.as_ref(), gate.id);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    driving.join()
}

/// A gate's summary carries what the tiers flagged: the squad lead's notes on its `t3_plan` gate, and an
/// `anomaly` event recorded since the previous gate (here by the test, as any writer may).
#[test]
fn a_gate_lists_squad_notes_and_anomaly_events_since_the_previous_gate() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t3_plan = true;
    let (run, driving) = project.start_in_background(include_str!("../scripts/anomaly.yaml"), team, false);
    let store = project.store.clone();
    let plan_gate = wait_for("the t1_plan gate", || {
        store.pending_gates(Some(run.id)).unwrap().pop()
    });
    store
        .append_event(agency_core::NewEvent::typed(
            run.id,
            EventPayload::Anomaly(agency_core::event::payload::Anomaly {
                source: "mesh".into(),
                workstream: Some("ws-arith".into()),
                brief: None,
                message: "two squads claimed add.sh".into(),
            }),
        ))
        .unwrap();
    approve(store.as_ref(), plan_gate.id);
    let squad_gate = wait_for("the t3_plan gate", || {
        store
            .pending_gates(Some(run.id))
            .unwrap()
            .into_iter()
            .find(|g| g.kind == GateKind::T3Plan)
    });
    driving.stop();
    let anomalies: Vec<&str> = squad_gate.summary["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(
        anomalies,
        [
            "squad note: add.sh and mul.sh share no helper; fix-add touches add.sh only",
            "ws-arith: two squads claimed add.sh (mesh)",
        ],
        "{}",
        squad_gate.summary
    );
    // Shown once: the plan gate, opened before it was recorded, did not list it.
    assert!(plan_gate.summary["anomalies"].as_array().unwrap().is_empty());
}
