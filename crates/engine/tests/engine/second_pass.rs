//! A second architecture pass in one workstream (issue 28, seed 001's "T3 discovers scope that warrants a
//! T2 pass it didn't get"): a squad lead at work proposes `add_tiers: [t2]`, `insert_before: t3`; a human
//! approves it at the next gate, and once the first pass is verified the runner writes a second T2 lead
//! (`amended-pass-1`), told what the first pass built, whose specialist's squads plan and build the rest;
//! the workstream merges with both passes' work. A runner that stops in the middle of the second pass
//! resumes it without running the first again; a dozen workstreams, three of them given a second pass, all
//! merge; a second-pass implementer out of retries escalates to its own specialist. The path decisions
//! (a rejected proposal, a T4's pass going straight to implementers) are `crates/flow/tests/second_pass.rs`.

use agency_core::event::{EventKind, EventPayload};
use agency_core::gate::GateKind;
use agency_core::tiers::{BriefRole, LEAD_TITLE};
use agency_core::{Brief, BriefStatus, RunId, Tier};
use agency_engine::amendments;
use agency_store::{Blackboard, RunStatus};
use serde_json::json;

use crate::amendments::{approve_every_gate, listed};
use crate::support::{Background, Project, approve, config, pending, wait_for, wide_plan};

const SCRIPT: &str = include_str!("../scripts/second-pass.yaml");

/// The path the seed's amendment gives ws-arith's planned t3→t4→t5 once its squad lead is at work.
const TWO_PASSES: [Tier; 6] = [Tier::T3, Tier::T4, Tier::T2, Tier::T3, Tier::T4, Tier::T5];

fn team() -> agency_core::config::TeamConfig {
    let mut team = config();
    team.visibility.inspection_gates.t3_plan = true;
    team
}

fn find<'a>(briefs: &'a [Brief], project: &Project, run: RunId, what: impl Fn(&Brief) -> bool) -> &'a Brief {
    briefs
        .iter()
        .find(|b| what(b))
        .unwrap_or_else(|| panic!("not found in:\n{}", project.tree(run)))
}

/// Starts the seed's script and takes it to its second pass: the t1_plan gate approved, then at the squad
/// lead's t3_plan gate its proposal (`add t2 before t3`) approved, and the gate approved. Returns the
/// t3_plan gate as it opened.
fn approve_the_t2_pass(
    project: &Project,
    script: &str,
) -> (agency_store::Run, Background, agency_core::gate::Gate) {
    let (run, driving) = project.start_in_background(script, team(), false);
    let store = project.store.clone();
    let plan_gate = wait_for("the t1_plan gate", pending(&store, run.id, GateKind::T1Plan));
    approve(store.as_ref(), plan_gate.id);
    let squad_gate = wait_for("the t3_plan gate", pending(&store, run.id, GateKind::T3Plan));
    let seq = listed(&squad_gate.summary, "ws-arith: add t2 before t3");
    amendments::decide(store.as_ref(), run.id, seq, true, "tester", None).unwrap();
    approve(store.as_ref(), squad_gate.id);
    (run, driving, squad_gate)
}

#[test]
fn a_t3s_t2_pass_approved_at_the_next_gate_runs_a_second_lead_and_both_passes_merge() {
    let project = Project::new();
    // The squad lead's own gate lists its proposal; the human approves it there.
    let (run, driving, squad_gate) = approve_the_t2_pass(&project, SCRIPT);
    assert!(
        squad_gate.summary["amendments"][0]["line"]
            .as_str()
            .unwrap()
            .contains("by t3/arithmetic"),
        "{}",
        squad_gate.summary
    );
    assert_eq!(
        amendments::current_path(project.store.as_ref(), run.id, "ws-arith").unwrap(),
        Some(TWO_PASSES.to_vec()),
        "the T2 pass comes after the pass at work, with its squad lead and implementers"
    );
    let outcome = approve_every_gate(&project, run.id, driving);
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));

    let briefs = project.briefs(run.id);
    let plan = find(&briefs, &project, run.id, |b| BriefRole::of(b) == BriefRole::Plan);
    let second = find(&briefs, &project, run.id, |b| {
        b.tier == Tier::T2 && b.title == "amended-pass-1"
    });
    assert_eq!(BriefRole::of(second), BriefRole::Lead);
    assert_eq!((second.parent, second.status), (Some(plan.id), BriefStatus::Done));
    // Told why and what the first pass built.
    assert!(
        second
            .instructions
            .starts_with("A second architecture pass (pass 2 of the path t3→t4→t2→t3→t4→t5)"),
        "{}",
        second.instructions
    );
    assert!(
        second.instructions.contains("mul.sh shares the operator table"),
        "{}",
        second.instructions
    );
    assert_eq!(second.inputs[0], "passes/ws-arith/before-1");
    let record = project.artifact(run.id, "passes/ws-arith/before-1").unwrap();
    assert!(record.contains("## Pass 1 (t3 arithmetic)"), "{record}");
    assert!(record.contains("- fix-add: Make add.sh add."), "{record}");
    let fix_add = find(&briefs, &project, run.id, |b| b.title == "fix-add");
    assert!(
        second.inputs.contains(&format!("diff/{}", fix_add.id.whole())),
        "{:?}",
        second.inputs
    );
    // The second lead's handoff from T1 was checked like a first lead's (L0).
    let l0: Vec<String> = project
        .events_of(run.id, EventKind::Agreement)
        .iter()
        .filter(|e| e.brief == Some(second.id))
        .filter_map(|e| match e.typed() {
            Ok(EventPayload::Agreement(a)) => Some(format!("{} {}", a.level, a.handoff)),
            _ => None,
        })
        .collect();
    assert_eq!(l0, ["L0 t1→t2"], "{}", project.tree(run.id));
    // Its specialist, synthesis (validated by T1) and squad ran as a first pass's would.
    let spec = find(&briefs, &project, run.id, |b| b.title == "mul-design");
    assert_eq!((spec.parent, spec.status), (Some(second.id), BriefStatus::Done));
    let synthesis = find(&briefs, &project, run.id, |b| {
        BriefRole::of(b) == BriefRole::Synthesis
    });
    assert_eq!(synthesis.parent, Some(second.id));
    assert!(
        briefs
            .iter()
            .any(|b| BriefRole::of(b) == BriefRole::Validator && b.parent == Some(synthesis.id))
    );
    let squad = find(&briefs, &project, run.id, |b| b.title == "squad-mul");
    assert_eq!((squad.tier, squad.parent), (Tier::T3, Some(spec.id)));
    let fix_mul = find(&briefs, &project, run.id, |b| b.title == "fix-mul");
    assert_eq!(
        (fix_mul.parent, fix_mul.status),
        (Some(squad.id), BriefStatus::Done)
    );
    // One lead of each pass, the first pass's work not redone.
    assert!(briefs.iter().all(|b| b.title != LEAD_TITLE));
    assert_eq!(project.spawns_of(run.id, Tier::T3, "arithmetic"), 1);
    assert_eq!(project.spawns_of(run.id, Tier::T4, "fix-add"), 1);
    assert!(
        project.log_tags(run.id).iter().any(|t| t == "T2 AMENDED_PASS"),
        "{:?}",
        project.log_tags(run.id)
    );
    // Both passes merged: the workstream's verify (`sh test_arith.sh`) passed on the integration branch.
    project.assert_fixed(
        &format!("agency/{}/integration", run.id.short()),
        &["add.sh", "mul.sh"],
    );
}

#[test]
fn a_runner_stopped_in_the_second_pass_resumes_it_without_rerunning_the_first() {
    let project = Project::new();
    let (run, driving, _) = approve_the_t2_pass(&project, SCRIPT);
    let store = project.store.clone();
    // The second pass's canonical architecture waits at its gate: the runner stops there.
    let synthesis_gate = wait_for(
        "the second pass's t2_synthesis gate",
        pending(&store, run.id, GateKind::T2Synthesis),
    );
    driving.stop();
    assert!(
        project.briefs(run.id).iter().all(|b| b.title != "squad-mul"),
        "stopped before the second pass's squads: {}",
        project.tree(run.id)
    );
    approve(store.as_ref(), synthesis_gate.id);

    let resumed = Background::drive(project.engine(SCRIPT, team(), false), run.id);
    let outcome = approve_every_gate(&project, run.id, resumed);
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    for (tier, title) in [
        (Tier::T3, "arithmetic"),
        (Tier::T4, "fix-add"),
        (Tier::T2, "amended-pass-1"),
        (Tier::T2, "mul-design"),
        (Tier::T3, "squad-mul"),
        (Tier::T4, "fix-mul"),
    ] {
        assert_eq!(
            project.spawns_of(run.id, tier, title),
            1,
            "{tier} {title}: {}",
            project.tree(run.id)
        );
    }
    let leads = project
        .briefs(run.id)
        .into_iter()
        .filter(|b| BriefRole::of(b) == BriefRole::Lead)
        .count();
    assert_eq!(leads, 1, "{}", project.tree(run.id));
    project.assert_fixed(
        &format!("agency/{}/integration", run.id.short()),
        &["add.sh", "mul.sh"],
    );
}

/// Which of the dozen workstreams' squad leads ask for a second architecture pass.
const SECOND_PASS: [usize; 3] = [2, 5, 9];

#[test]
fn a_dozen_workstreams_three_with_a_second_architecture_pass_all_merge() {
    const WIDTH: usize = 12;
    let project = Project::new();
    let (run, driving) = project.start_in_background(&wide_script(WIDTH), team(), false);
    let outcome = approve_every_gate(&project, run.id, driving);
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let briefs = project.briefs(run.id);
    let integration = format!("agency/{}/integration", run.id.short());
    for i in 0..WIDTH {
        let id = format!("ws-{i}");
        let path = amendments::current_path(project.store.as_ref(), run.id, &id)
            .unwrap()
            .unwrap();
        let leads: Vec<&Brief> = briefs
            .iter()
            .filter(|b| b.workstream == id && BriefRole::of(b) == BriefRole::Lead)
            .collect();
        if SECOND_PASS.contains(&i) {
            assert_eq!(path, TWO_PASSES, "{id}");
            assert_eq!(leads.len(), 1, "{id}: {}", project.tree(run.id));
            assert_eq!(
                (leads[0].title.as_str(), leads[0].status),
                ("amended-pass-1", BriefStatus::Done)
            );
            let squad = find(&briefs, &project, run.id, |b| b.title == format!("{id}-more"));
            let spec = find(&briefs, &project, run.id, |b| b.title == format!("{id}-design"));
            assert_eq!(
                (squad.parent, spec.parent),
                (Some(spec.id), Some(leads[0].id)),
                "{id}'s squad hangs under its own second pass"
            );
            assert_eq!(
                project
                    .file_on(&integration, &format!("out/{id}-more.txt"))
                    .as_deref(),
                Some("done\n"),
                "{id}"
            );
        } else {
            assert_eq!(path, [Tier::T3, Tier::T4, Tier::T5], "{id}");
            assert!(leads.is_empty(), "{id}");
        }
        assert_eq!(
            project.file_on(&integration, &format!("out/{id}.txt")).as_deref(),
            Some("done\n"),
            "{id}"
        );
        assert_eq!(project.spawns_of(run.id, Tier::T3, &id), 1, "{id}");
    }
}

/// The script of [`a_dozen_workstreams_three_with_a_second_architecture_pass_all_merge`]: `ws-<i>` writes
/// `out/ws-<i>.txt` through one squad lead and one implementer; the squad leads of [`SECOND_PASS`] ask for
/// a T2 pass, whose lead draws one specialist `ws-<i>-design`, whose squad `ws-<i>-more` writes
/// `out/ws-<i>-more.txt`.
fn wide_script(width: usize) -> String {
    let variety = json!({ "novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1 });
    let done = |summary: &str, output: serde_json::Value| {
        json!({ "tool_calls": [{ "name": "report_result", "input": {
            "status": "done", "summary": summary, "output": output } }] })
    };
    let child = |title: String| json!({ "title": title, "instructions": "its part", "variety": variety });
    let task = |title: String| {
        json!({ "title": title, "instructions": "write its file", "variety": variety,
                "contract": { "done_when": "its file exists" } })
    };
    let write = |path: String| {
        json!({ "tool_calls": [
            { "name": "write_file", "input": { "path": path, "content": "done\n" } },
            { "name": "report_result", "input": {
                "status": "done", "summary": format!("wrote {path}"), "evidence": [{ "path": path }] } }
        ]})
    };
    let mut rules = vec![json!({
        "role": "judge", "brief": "run/t1/accept",
        "reply": { "text": "all in\nVERDICT: accept\nmissing: none\n" }
    })];
    rules.push(wide_plan(width, &["t3", "t4", "t5"], "medium", |_| None));
    let ids: Vec<String> = (0..width).map(|i| format!("ws-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let mut squad = done("tasks", json!({ "tasks": [task(format!("{id}-task"))] }));
        if SECOND_PASS.contains(&i) {
            let propose = json!({ "name": "propose_path_amendment", "input": {
                "reason": "a second part needs its own design", "add_tiers": ["t2"], "insert_before": "t3" } });
            squad["tool_calls"].as_array_mut().unwrap().insert(0, propose);
            rules.push(
                json!({ "role": "lead-architect", "brief": format!("{id}/t2/amended-pass-1"),
                "reply": done("one domain", json!({
                    "boundaries": [{ "domain": "more", "owns": [format!("out/{id}-more.txt")] }],
                    "shared_assumptions": [], "specialists": [child(format!("{id}-design"))] })) }),
            );
            rules.push(
                json!({ "role": "architect", "brief": format!("{id}/t2/{id}-design"),
                "reply": done("one squad", json!({
                    "architecture": "one more file", "squads": [child(format!("{id}-more"))] })) }),
            );
            rules.push(
                json!({ "role": "squad-lead", "brief": format!("{id}/t3/{id}-more"),
                "reply": done("tasks", json!({ "tasks": [task(format!("{id}-more-task"))] })) }),
            );
            rules.push(
                json!({ "role": "implementer", "brief": format!("{id}/t4/{id}-more-task"),
                "reply": write(format!("out/{id}-more.txt")) }),
            );
        }
        rules.push(json!({ "role": "squad-lead", "brief": format!("{id}/t3/{id}"), "reply": squad }));
        rules.push(
            json!({ "role": "implementer", "brief": format!("{id}/t4/{id}-task"),
                           "reply": write(format!("out/{id}.txt")) }),
        );
    }
    rules.push(json!({ "role": "synthesis", "reply": done("no conflicts", json!({
        "canonical_architecture": "one more file each", "unresolved_conflicts": [] })) }));
    rules.push(
        json!({ "role": "validator", "reply": done("fits", json!({ "valid": true, "problems": [] })) }),
    );
    rules.push(json!({ "role": "judge", "reply": { "text": "Fine.\nVERDICT: accept\nmissing: none\n" } }));
    json!({ "model": "scripted-second-pass-wide", "replies": rules }).to_string()
}

/// An implementer of the second pass whose retries are spent escalates past its squad lead to T2 — its own
/// specialist, which the amendment put on the path — not to T1, as the plan's `t3→t4→t5` alone would say.
#[test]
fn a_second_pass_implementer_out_of_retries_escalates_to_its_own_specialist() {
    let failing = SCRIPT.replace(
        "input: { status: done, summary: \"mul.sh multiplies.\"",
        "input: { status: finished, summary: \"mul.sh multiplies.\"",
    );
    assert_ne!(failing, SCRIPT, "the fix-mul reply was found");
    let project = Project::new();
    let (run, driving, _) = approve_the_t2_pass(&project, &failing);
    let store = project.store.clone();

    // Every tier gate after is approved until fix-mul's retries are spent and it escalates.
    let escalated = wait_for("fix-mul's escalation", || {
        for gate in store.pending_gates(Some(run.id)).unwrap() {
            if gate.kind != GateKind::Escalation {
                approve(store.as_ref(), gate.id);
            }
        }
        let briefs = project.briefs(run.id);
        project
            .events_of(run.id, EventKind::Escalated)
            .into_iter()
            .find(|e| {
                briefs
                    .iter()
                    .any(|b| Some(b.id) == e.brief && b.title == "fix-mul")
            })
    });
    let to = match escalated.typed() {
        Ok(EventPayload::Escalated(failure)) => failure.to,
        other => panic!("not an escalation: {other:?}"),
    };
    assert_eq!(to.as_deref(), Some("t2"), "{}", project.tree(run.id));
    // The specialist that owns the squad is re-invoked with the context.
    wait_for("mul-design's next attempt", || {
        project
            .briefs(run.id)
            .into_iter()
            .find(|b| b.title == "mul-design" && b.attempt == 1)
    });
    driving.stop();
}
