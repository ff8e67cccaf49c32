//! A run with `sandbox.mode: off` says so on every gate: in the run's log under the gate's line, in
//! `agency show`'s plan at its gate (and its `--json`), when `agency approve` decides it, and in the gate's
//! notification (the dashboard: `agency-web`'s `a_run_without_a_sandbox_says_so_for_its_gates`). And a
//! human decision is signed with the OS user, never `$USER`, even one an agent could have set.

use std::process::Command;

use agency_core::config::SANDBOX_OFF_BANNER;
use agency_store::{Blackboard, SqliteBlackboard};

use crate::show::approve_to_the_end;
use crate::support::{CALCULATOR_GOAL, Repo, decider};

#[test]
fn every_gate_of_an_unconfined_run_says_sandbox_off_and_decisions_are_signed_by_the_os_user() {
    let (repo, script) = Repo::calculator(include_str!("../../../engine/tests/scripts/partial.yaml"));
    let notes = repo.path().join("notifications.jsonl");
    repo.edit_team(&[
        ("  concurrency: 4 ", "  concurrency: 1 "),
        ("  mode: on ", "  mode: off "),
        (
            "notifiers: []",
            &format!(
                "notifiers:\n  - kind: command\n    argv: [tee, -a, \"{}\"]\n",
                notes.display()
            ),
        ),
    ]);
    let runner = repo.spawn(
        &["run", CALCULATOR_GOAL, "--script", script.to_str().unwrap()],
        &[],
    );
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = crate::support::run_at_plan_gate(&store);
    let run8 = run.short();

    let plan = repo.agency(&["show", &run8, "plan"]).success().stdout();
    assert!(
        plan.contains("Gate t1_plan: waiting for a decision") && plan.contains(SANDBOX_OFF_BANNER),
        "{plan}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&repo.agency(&["show", &run8, "plan", "--json"]).success().stdout()).unwrap();
    assert_eq!(json["sandbox_off"], true);

    // The plan gate's notification is sent while it waits (a gate decided first is not announced).
    crate::support::wait_for(
        || {
            std::fs::read_to_string(&notes)
                .ok()
                .filter(|n| n.contains("gate_pending"))
        },
        "the plan gate's notification",
    );
    // Approved by "mallory" as far as the environment goes: the record names the OS user.
    let approved = Command::new(env!("CARGO_BIN_EXE_agency"))
        .args(["approve", &run8])
        .current_dir(repo.path())
        .env_remove("AGENCY_DB")
        .env_remove("AGENCY_CONFIG")
        .env("USER", "mallory")
        .env("LOGNAME", "mallory")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&approved.stderr);
    assert!(approved.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("warning: {SANDBOX_OFF_BANNER}")),
        "{stderr}"
    );
    let plan_gate = store
        .list_gates(run)
        .unwrap()
        .into_iter()
        .find(|g| g.kind == agency_core::GateKind::T1Plan)
        .unwrap();
    assert_eq!(plan_gate.decided_by.as_deref(), Some(decider().as_str()));
    assert!(!decider().contains("mallory"));

    let (code, out) = approve_to_the_end(&repo, runner, &store, run);
    assert!(code.is_some(), "{out}");
    // The run's log: the banner under each gate's line.
    let gate_lines = out.lines().filter(|l| l.contains("GATE APPROVAL")).count();
    let banners = out.lines().filter(|l| l.trim() == SANDBOX_OFF_BANNER).count();
    assert!(gate_lines >= 1 && banners >= gate_lines, "{out}");
    // The notifications of the gates that waited.
    let notified = std::fs::read_to_string(&notes).unwrap();
    // One JSON object per notification, one after the other.
    let gate_notes: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&notified)
        .into_iter::<serde_json::Value>()
        .map(Result::unwrap)
        .filter(|n| n["kind"] == "gate_pending")
        .collect();
    assert!(!gate_notes.is_empty(), "{notified}");
    for note in &gate_notes {
        assert!(
            note["title"].as_str().unwrap().starts_with("SANDBOX OFF · ")
                && note["what_happens_next"][0] == SANDBOX_OFF_BANNER,
            "{note}"
        );
    }
}
