//! Agreement verification at the handoffs (seed 003; docs/protocols.md, "Agreement at each handoff"): an
//! L1 mismatch at T4→T5 and an L2 mismatch at T5→T1, each corrected by the tier that handed the work over,
//! are anomalies on the T5 verdict gate; an L0 mismatch T1 confirms reaches no gate, and one T1 cannot be
//! asked about stands with the seed's fallback record, as does one whose answer is no answer; at width,
//! each stray is asked about once. What each check finds and whether it is significant is decided in
//! `agency_flow::agreement` and tested there (crates/flow/tests/agreement.rs), with the fallback of a
//! handoff that declares nothing.

use agency_core::event::payload::{AGREEMENT_ASSUMED, AgreementChecked};
use agency_core::event::{EventKind, EventPayload};
use agency_core::gate::GateKind;
use agency_store::{Blackboard, RunStatus};
use serde_json::json;

use crate::support::{Project, approve, config, pending, wait_for, wide_plan};

fn agreements(project: &Project, run: agency_core::RunId) -> Vec<AgreementChecked> {
    project
        .events_of(run, EventKind::Agreement)
        .iter()
        .map(|e| match e.typed() {
            Ok(EventPayload::Agreement(a)) => a,
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_slice_leaving_its_squads_design_is_an_l1_and_l2_mismatch_on_the_verdict_gate() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t5_verdict = true;
    let (run, driving) = project.start_in_background(include_str!("../scripts/agreement.yaml"), team, false);
    let store = project.store.clone();
    let plan_gate = wait_for("the t1_plan gate", pending(&store, run.id, GateKind::T1Plan));
    approve(store.as_ref(), plan_gate.id);
    let verdict = wait_for(
        "the t5_verdict gate",
        pending(&store, run.id, GateKind::T5Verdict),
    );
    let anomalies: Vec<&str> = verdict.summary["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(
        anomalies,
        [
            "ws-arith: L1 mismatch at t4→t5 (fix-add): mul.sh is outside what was handed over — t3 arithmetic \
             says: only add.sh was handed over; mul.sh is another workstream's (agreement)",
            "ws-arith: L2 mismatch at t5→t1 (fix-add): mul.sh is outside what was handed over — t1 plan says: \
             ws-arith was to fix add.sh; mul.sh is not its purpose (agreement)"
        ],
        "{}",
        verdict.summary
    );

    let checked = agreements(&project, run.id);
    // The squad lead's restatement, held against the files the plan declared for ws-arith: agreed.
    let squad = checked
        .iter()
        .find(|a| a.handoff == "t1→t3")
        .expect("the t1→t3 check");
    assert_eq!((squad.level.as_str(), squad.outcome.as_str()), ("L1", "agreed"));
    assert!(
        squad.restated.contains("add.sh adds its two arguments"),
        "{squad:?}"
    );
    let slice = checked
        .iter()
        .find(|a| a.handoff == "t4→t5")
        .expect("the t4→t5 check");
    assert_eq!(
        (slice.level.as_str(), slice.outcome.as_str(), slice.significant),
        ("L1", "mismatch", true)
    );
    assert_eq!(slice.differences, ["mul.sh is outside what was handed over"]);
    assert!(
        slice.restated.contains("add.sh") && slice.restated.contains("mul.sh"),
        "{slice:?}"
    );
    // Asked first, then answered: the squad lead that handed the design over corrects it.
    let answers: Vec<(&str, bool)> = checked
        .iter()
        .filter(|a| a.handoff == "t4→t5")
        .map(|a| (a.confirmation.as_deref().unwrap_or(""), a.significant))
        .collect();
    assert_eq!(answers, [("asking", true), ("corrected", true)]);
    // L2: the verdict's restatement of what was achieved, against what T1 declared for the workstream.
    let purpose: Vec<&AgreementChecked> = checked.iter().filter(|a| a.handoff == "t5→t1").collect();
    assert_eq!(purpose.len(), 2, "{purpose:?}");
    assert_eq!(
        (
            purpose[0].level.as_str(),
            purpose[0].outcome.as_str(),
            purpose[0].significant
        ),
        ("L2", "mismatch", true)
    );
    assert!(
        purpose[0]
            .restated
            .starts_with("the slices change add.sh, mul.sh [fix-add: Looks right.]"),
        "{:?}",
        purpose[0]
    );
    assert_eq!(purpose[1].confirmation.as_deref(), Some("corrected"));

    // Non-blocking: a human who reads the anomaly and approves lets the run go on.
    approve(store.as_ref(), verdict.id);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
}

/// The T2 gates opened, in order, approved as they come; returns each gate's anomalies by kind.
fn approve_through_t2(project: &Project, run: agency_core::RunId) -> Vec<(GateKind, Vec<String>)> {
    let store = project.store.clone();
    let mut seen = Vec::new();
    for kind in [GateKind::T1Plan, GateKind::T2Lead, GateKind::T2Synthesis] {
        let gate = wait_for("the next T1/T2 gate", || {
            store
                .pending_gates(Some(run))
                .unwrap()
                .into_iter()
                .find(|g| g.kind == kind)
        });
        let anomalies = gate.summary["anomalies"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect();
        seen.push((kind, anomalies));
        approve(store.as_ref(), gate.id);
    }
    seen
}

#[test]
fn a_lead_restating_a_wider_topic_is_put_to_t1_which_confirms_it_is_fine() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t2_lead = true;
    let (run, driving) =
        project.start_in_background(include_str!("../scripts/agreement-t2.yaml"), team, false);
    let gates = approve_through_t2(&project, run.id);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    // Confirmed: the mismatch never reaches a human.
    for (kind, anomalies) in &gates {
        assert!(anomalies.is_empty(), "{kind:?}: {anomalies:?}");
    }
    // The only anomaly is the run's acceptance (L2): the plan declared add.sh and mul.sh, and the run
    // achieved add.sh only — half of its declared scope not done.
    let messages: Vec<String> = project
        .events_of(run.id, EventKind::Anomaly)
        .iter()
        .filter_map(|e| match e.typed() {
            Ok(EventPayload::Anomaly(a)) => Some(a.message),
            _ => None,
        })
        .collect();
    assert_eq!(
        messages,
        [
            "L2 mismatch at the run's acceptance: mul.sh was declared and not achieved — what the plan declared \
          over its workstreams"
        ]
    );

    let checked = agreements(&project, run.id);
    let lead: Vec<&AgreementChecked> = checked.iter().filter(|a| a.handoff == "t1→t2").collect();
    assert_eq!(lead.len(), 2, "{lead:?}");
    assert_eq!(
        (
            lead[0].level.as_str(),
            lead[0].outcome.as_str(),
            lead[0].significant
        ),
        ("L0", "mismatch", true)
    );
    assert_eq!(
        lead[0].differences,
        [
            "NOTES.md is outside what was handed over",
            "neg.sh is outside what was handed over"
        ]
    );
    assert_eq!(lead[0].confirmation.as_deref(), Some("asking"));
    assert_eq!(
        (
            lead[1].confirmation.as_deref(),
            lead[1].significant,
            lead[1].reason.as_deref()
        ),
        (
            Some("confirmed"),
            false,
            Some("neg.sh and NOTES.md are read, not changed")
        )
    );
    // T1's one call is metered like every other: its usage is on the blackboard.
    let usage_of_t1 = project
        .events_of(run.id, EventKind::Usage)
        .iter()
        .filter(|e| e.tier == Some(agency_core::Tier::T1))
        .count();
    assert!(usage_of_t1 >= 1);
    // The specialist declared what it hands its squad: the squad lead's restatement is within it.
    let squad = checked
        .iter()
        .find(|a| a.handoff == "t2→t3")
        .expect("the t2→t3 check");
    assert_eq!(
        (squad.level.as_str(), squad.outcome.as_str()),
        ("L1", "agreed"),
        "{squad:?}"
    );
    assert!(squad.restated.contains("[interfaces: sum]"), "{squad:?}");
    // What the slice achieved (add.sh) is within what T1 declared: L2 agreed.
    let purpose = checked
        .iter()
        .find(|a| a.handoff == "t5→t1")
        .expect("the t5→t1 check");
    assert_eq!(
        (purpose.level.as_str(), purpose.outcome.as_str()),
        ("L2", "agreed"),
        "{purpose:?}"
    );
}

#[test]
fn a_mismatch_nobody_can_confirm_is_recorded_with_the_fallback_and_stands_on_the_lead_gate() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t2_lead = true;
    // T1 has no answer to give (the script's reply for it is cut off): it cannot be asked.
    let script = include_str!("../scripts/agreement-t2.yaml");
    let script = &script[..script.find("  # -- T1's answer").expect("the marker")];
    let (run, driving) = project.start_in_background(script, team, false);
    let gates = approve_through_t2(&project, run.id);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    // T1 is asked before the lead's gate opens: the mismatch that stands is on that gate, and only there.
    assert_eq!(gates[1].0, GateKind::T2Lead);
    assert_eq!(gates[1].1.len(), 1, "{gates:?}");
    assert_eq!(gates[2], (GateKind::T2Synthesis, Vec::new()));
    let line = &gates[1].1[0];
    assert!(
        line.starts_with(
            "ws-calc: L0 mismatch at t1→t2 (lead): NOTES.md is outside what was handed over; neg.sh is outside \
             what was handed over — Agreement: [assumed — specialist unavailable for verification] (t1's model \
             could not be asked"
        ) && line.ends_with("(agreement)"),
        "{line}"
    );
    let checked = agreements(&project, run.id);
    let answer = checked
        .iter()
        .find(|a| a.handoff == "t1→t2" && a.confirmation.as_deref() == Some("unavailable"))
        .expect("the fallback record");
    assert!(answer.significant);
    assert!(
        answer
            .reason
            .as_deref()
            .unwrap_or("")
            .starts_with(AGREEMENT_ASSUMED),
        "{answer:?}"
    );
}

/// A plan of `width` parallel workstreams on `[t4, t5]`, each declaring `ws-K/`. Workstream K's
/// implementer writes `ws-K/done.txt` (within its purpose) when K is even, `keep-K.txt` when K % 4 == 1 (T1,
/// asked, says that is fine) and `stray-K.txt` when K % 4 == 3 (T1 says it is not).
fn wide_script(width: usize) -> String {
    let confirm = |fine: bool, reason: &str| json!({ "tool_calls": [{ "name": "confirm_agreement", "input": { "fine": fine, "reason": reason } }] });
    let mut rules = vec![
        json!({ "role": "judge", "brief": "run/t1/accept",
                "reply": { "text": "every check passes\nVERDICT: accept\nmissing: none\n" } }),
        json!({ "role": "agreement", "contains": "the slices change keep-",
                "reply": confirm(true, "a note beside the workstream is fine") }),
        json!({ "role": "agreement", "reply": confirm(false, "that file is not this workstream's purpose") }),
        wide_plan(width, &["t4", "t5"], "low", |k| Some(vec![format!("ws-{k}/")])),
    ];
    for k in 0..width {
        let path = match k % 4 {
            1 => format!("keep-{k}.txt"),
            3 => format!("stray-{k}.txt"),
            _ => format!("ws-{k}/done.txt"),
        };
        rules.push(
            json!({ "role": "implementer", "brief": format!("ws-{k}/t4/ws-{k}"),
            "reply": { "tool_calls": [
                { "name": "write_file", "input": { "path": path, "content": "done\n" } },
                { "name": "report_result", "input": {
                    "status": "done", "summary": "written", "evidence": [{ "path": path }] } }
            ]}}),
        );
    }
    rules.push(
        json!({ "role": "judge", "reply": { "text": "Looks right.\nVERDICT: accept\nmissing: none\n" } }),
    );
    rules.push(json!({ "role": "auditor", "reply": { "text": "Fine.\nVERDICT: accept\nmissing: none\n" } }));
    json!({ "model": "scripted-agreement-wide", "replies": rules }).to_string()
}

/// At width: two dozen workstreams finishing together, a third of them straying from T1's purpose. Each
/// stray is asked about exactly once (no question twice, none lost), T1's answers are kept apart, and only
/// the corrected ones reach the human.
#[test]
fn two_dozen_workstreams_ask_t1_once_per_stray_and_only_corrections_stand() {
    const WIDTH: usize = 24;
    let project = Project::new();
    let (run, driving) = project.start_in_background(&wide_script(WIDTH), config(), true);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let purpose: Vec<AgreementChecked> = agreements(&project, run.id)
        .into_iter()
        .filter(|a| a.handoff == "t5→t1")
        .collect();
    let count = |confirmation: Option<&str>| {
        purpose
            .iter()
            .filter(|a| a.confirmation.as_deref() == confirmation)
            .count()
    };
    assert_eq!(
        (
            count(None),
            count(Some("asking")),
            count(Some("confirmed")),
            count(Some("corrected"))
        ),
        (WIDTH / 2, WIDTH / 2, WIDTH / 4, WIDTH / 4),
        "{purpose:#?}"
    );
    let mut stood: Vec<String> = project
        .events_of(run.id, EventKind::Anomaly)
        .iter()
        .filter_map(|e| match e.typed() {
            Ok(EventPayload::Anomaly(a)) if a.source == "agreement" => a.workstream,
            _ => None,
        })
        .filter(|ws| ws != "run")
        .collect();
    stood.sort();
    let mut expected: Vec<String> = (0..WIDTH)
        .filter(|k| k % 4 == 3)
        .map(|k| format!("ws-{k}"))
        .collect();
    expected.sort();
    assert_eq!(stood, expected);
    // At the run's acceptance, the half of the workstreams that wrote outside their declared directory
    // left that directory unachieved: one L2 record for the run, significant (12 of 24 declared entries).
    let accept: Vec<AgreementChecked> = agreements(&project, run.id)
        .into_iter()
        .filter(|a| a.handoff == "accept")
        .collect();
    assert_eq!(accept.len(), 1, "{accept:?}");
    assert!(accept[0].significant);
    assert_eq!(accept[0].differences.len(), WIDTH / 2);
}

/// A handing-over tier whose answer is no answer (text instead of the tool) cannot confirm: the fallback
/// is recorded and the mismatch stands.
#[test]
fn an_answer_without_the_tool_is_no_confirmation() {
    let project = Project::new();
    let script = include_str!("../scripts/agreement-t2.yaml");
    let cut = script.find("  # -- T1's answer").expect("the marker");
    let script = format!(
        "{}  - role: agreement\n    reply: {{ text: \"Sure, looks fine to me.\" }}\n",
        &script[..cut]
    );
    let (run, driving) = project.start_in_background(&script, config(), true);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let answer = agreements(&project, run.id)
        .into_iter()
        .find(|a| {
            a.handoff == "t1→t2" && a.confirmation.is_some() && a.confirmation.as_deref() != Some("asking")
        })
        .expect("an answer's record");
    assert_eq!(answer.confirmation.as_deref(), Some("unavailable"));
    assert_eq!(
        answer.reason.as_deref(),
        Some("Agreement: [assumed — specialist unavailable for verification] (t1's model gave no answer)")
    );
    assert!(answer.significant);
}
