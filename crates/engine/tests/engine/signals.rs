//! Algedonic signals inside a run: a HALT stops all work of the run — the raising brief waits on a `halt`
//! gate, other agents are stopped, nothing starts — until a human acknowledges it (approve resumes the
//! run, reject cancels it), even with `--auto-approve`; an ALERT holds the run on an escalation gate. A
//! signal whose category is another level's never reaches the runner: the built-in agent's tool refuses
//! it with the allowed list (agency-exec's `a_signal_with_another_levels_category_goes_back_to_the_agent`,
//! agency-core's `a_halt_over_quality_is_refused_with_the_allowed_list`).

use std::time::Duration;

use agency_core::config::NotifierConfig;
use agency_core::event::EventKind;
use agency_core::gate::{GateDecision, GateKind, GateStatus};
use agency_core::{BriefStatus, Tier};
use agency_engine::engine::feedback_name;
use agency_store::{Blackboard, RunStatus};

use crate::support::{Project, config, wait_for};

const FIX_MUL: &str = "  - role: implementer\n    brief: ws-arith/t4/fix-mul\n";

/// The medium script, with fix-mul raising `signal` on its first attempt and doing its work once a human
/// has acknowledged it (the feedback of its fresh attempt says so).
fn raising(signal: &str) -> String {
    let script = include_str!("../scripts/medium.yaml");
    assert!(script.contains(FIX_MUL));
    let acknowledged = format!("{FIX_MUL}    contains: \"acknowledged it and resumed the run\"\n");
    let raise = format!(
        "{FIX_MUL}    reply:\n      tool_calls:\n        - name: raise_signal\n          input: {signal}\n\n  - role: judge\n    reply:\n      text: |\n        Looks right."
    );
    script.replace(FIX_MUL, &acknowledged).replace(
        "  - role: judge\n    reply:\n      text: |\n        Looks right.",
        &raise,
    )
}

const SECURITY: &str = "{ level: HALT, category: SECURITY, issue: \"mul.sh posts its arguments to a remote host\", evidence: \"mul.sh:2 curl\", impact: \"user input leaves the machine\", recommended_action: \"remove the upload\" }";

/// Waits for the halt gate of `run`, then checks that all work stopped and stays stopped: no brief
/// running, the gate neither auto-approved nor timed out.
fn halted(project: &Project, run: agency_core::RunId) -> agency_core::gate::Gate {
    let store = project.store.clone();
    let gate = wait_for("the halt gate", || {
        store
            .pending_gates(Some(run))
            .unwrap()
            .into_iter()
            .find(|g| g.kind == GateKind::Halt)
    });
    wait_for("every agent stopped", || {
        store
            .list_briefs_by_status(run, BriefStatus::Running)
            .unwrap()
            .is_empty()
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        store
            .list_briefs_by_status(run, BriefStatus::Running)
            .unwrap()
            .is_empty(),
        "an agent started while the HALT was pending:\n{}",
        project.tree(run)
    );
    assert_eq!(store.get_gate(gate.id).unwrap().status, GateStatus::Pending);
    assert!(!store.get_run(run).unwrap().status.is_terminal());
    gate
}

#[test]
fn a_halt_stops_all_work_until_a_human_resumes_the_run() {
    let project = Project::new();
    let inbox = project.dir.path().join("inbox.jsonl");
    let mut config = config();
    config.notifiers = vec![NotifierConfig::Command {
        argv: vec!["tee".into(), "-a".into(), inbox.display().to_string()],
    }];
    // Auto-approve is on: a HALT is still a human's to acknowledge.
    let (run, driving) = project.start_in_background(&raising(SECURITY), config, true);
    let gate = halted(&project, run.id);
    let announced = wait_for("the HALT's notification", || {
        std::fs::read_to_string(&inbox)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find(|n| n["kind"] == "halt")
    });
    assert_eq!(
        announced["title"],
        "HALT SECURITY: mul.sh posts its arguments to a remote host"
    );
    assert!(
        announced["what_happens_next"][0]
            .as_str()
            .unwrap()
            .contains(&format!("agency ack {} --note", run.id.short())),
        "{announced}"
    );
    assert_eq!(gate.tier, Some(Tier::T4));
    let produced = gate.summary["produced"].as_str().unwrap();
    for field in [
        "Issue: mul.sh posts its arguments to a remote host",
        "Evidence: mul.sh:2 curl",
        "Impact: user input leaves the machine",
        "Recommended action: remove the upload",
    ] {
        assert!(produced.contains(field), "{produced}");
    }
    assert_eq!(gate.summary["signal"]["category"], "SECURITY");
    let halt = project.events_of(run.id, EventKind::Halt);
    assert_eq!(halt.len(), 1);
    assert_eq!(halt[0].payload["level"], "HALT");
    assert_eq!(halt[0].payload["recommended_action"], "remove the upload");

    project
        .store
        .decide_gate(
            gate.id,
            GateDecision::Approve {
                by: "cli:tester".into(),
                note: Some("the upload is the test fixture; go on".into()),
            },
        )
        .unwrap();
    let outcome = driving.join_within(Duration::from_secs(60), "the run resumed after the HALT");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let briefs = project.briefs(run.id);
    let again = briefs
        .iter()
        .find(|b| b.tier == Tier::T4 && b.title == "fix-mul" && b.status == BriefStatus::Done)
        .unwrap();
    assert_eq!(again.attempt, 1);
    let feedback = project.artifact(run.id, &feedback_name(again.id)).unwrap();
    assert!(
        feedback.contains("cli:tester") && feedback.contains("the upload is the test fixture"),
        "{feedback}"
    );
    assert!(project.log_tags(run.id).iter().any(|t| t.ends_with("RESUMED")));
}

#[test]
fn a_halt_the_human_cancels_cancels_the_run() {
    let project = Project::new();
    let (run, driving) = project.start_in_background(&raising(SECURITY), config(), true);
    let gate = halted(&project, run.id);
    project
        .store
        .decide_gate(
            gate.id,
            GateDecision::Reject {
                by: "cli:tester".into(),
                reason: "stop: nothing may leave this machine".into(),
            },
        )
        .unwrap();
    let outcome = driving.join_within(Duration::from_secs(30), "the run cancelled after the HALT");
    assert_eq!(outcome.status, RunStatus::Cancelled, "{}", project.tree(run.id));
    assert!(
        project
            .briefs(run.id)
            .iter()
            .all(|b| b.status != BriefStatus::Done || b.title != "fix-mul")
    );
}

#[tokio::test]
async fn a_judge_that_raises_a_halt_holds_the_run_at_a_halt_gate() {
    let script = include_str!("../scripts/medium.yaml").replace(
        "      text: |\n        Looks right.\n        VERDICT: accept\n        missing: none\n",
        "      tool_calls:\n        - name: raise_signal\n          input: { level: HALT, category: SECURITY, issue: \"add.sh posts the arguments to a remote host\", evidence: \"add.sh:2\", impact: \"user input leaves the machine\", recommended_action: \"remove the upload\" }\n",
    );
    let project = Project::new();
    let (run, driving) = project.start_in_background(&script, config(), true);
    let gate = halted(&project, run.id);
    assert_eq!(gate.tier, Some(Tier::T5));
    driving.stop();
    let events = project.events(run.id);
    let halt = events.iter().find(|e| e.kind == EventKind::Halt).unwrap();
    assert_eq!(halt.tier, Some(Tier::T5));
    assert_eq!(
        halt.payload["issue"],
        "add.sh posts the arguments to a remote host"
    );
    // The sign-off itself is recorded as inconclusive, with the signal as its reason.
    let inconclusive = events
        .iter()
        .find(|e| e.kind == EventKind::SignoffInconclusive)
        .unwrap();
    assert!(
        inconclusive.payload["reason"]
            .as_str()
            .unwrap()
            .contains("Halt signal"),
        "{}",
        inconclusive.payload
    );
}

/// An ALERT escalates its brief to a human on an escalation gate, with its category and issue, and
/// nothing starts while the gate is pending (the gate holds the whole run, which includes the brief's
/// subtree); approving it gives the brief a fresh attempt with the human's note.
#[test]
fn an_alert_holds_the_run_on_an_escalation_gate_until_a_human_decides() {
    let project = Project::new();
    let alert = "{ level: ALERT, category: SCOPE, issue: \"mul.sh is also used by div.sh\", evidence: \"div.sh:3\", impact: \"div.sh changes too\", recommended_action: \"widen the brief\" }";
    let (run, driving) = project.start_in_background(&raising(alert), config(), true);
    let store = project.store.clone();
    let gate = wait_for("the ALERT's escalation gate", || {
        store
            .pending_gates(Some(run.id))
            .unwrap()
            .into_iter()
            .find(|g| g.kind == GateKind::Escalation)
    });
    assert!(
        gate.summary["message"]
            .as_str()
            .unwrap()
            .contains("ALERT SCOPE: mul.sh is also used by div.sh"),
        "{}",
        gate.summary
    );
    let raised = project.events_of(run.id, EventKind::Alert);
    assert_eq!(raised[0].payload["recommended_action"], "widen the brief");
    wait_for("every agent done", || {
        store
            .list_briefs_by_status(run.id, BriefStatus::Running)
            .unwrap()
            .is_empty()
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        store
            .list_briefs_by_status(run.id, BriefStatus::Running)
            .unwrap()
            .is_empty(),
        "an agent started while the ALERT's gate was pending:\n{}",
        project.tree(run.id)
    );
    store
        .decide_gate(
            gate.id,
            GateDecision::Approve {
                by: "cli:tester".into(),
                // The script's fix-mul does its work once its feedback says this.
                note: Some("acknowledged it and resumed the run: div.sh is out of scope".into()),
            },
        )
        .unwrap();
    let outcome = driving.join_within(Duration::from_secs(60), "the run after the ALERT was decided");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
}
