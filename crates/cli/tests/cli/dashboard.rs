//! `agency dashboard`: the real binary serves this repository's blackboard on loopback; a stranger is
//! refused, the holder of the printed URL's token approves the gate, and another handle sees the decision.

use std::process::Command;

use agency_core::gate::{GateKind, GateStatus};
use agency_store::{Blackboard, NewGate, NewRun, SqliteBlackboard};

use crate::support::{Dashboard, Repo, http};

#[test]
fn the_token_in_the_printed_url_decides_gates_and_nothing_else_does() {
    let repo = Repo::initialised();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store
        .create_run(NewRun::new("Fix pagination", repo.path().display().to_string()))
        .unwrap();
    let summary = serde_json::json!({ "message": "Waiting on approval before the first tier spawns" });
    let gate = store
        .open_gate(NewGate::new(run.id, GateKind::T1Plan, summary))
        .unwrap();

    // dashboard: http://127.0.0.1:PORT/#token=HEX
    let dashboard = Dashboard::serve(&repo, &[]);
    let (addr, token) = (dashboard.addr.as_str(), dashboard.token.as_str());
    assert_eq!(token.len(), 64, "a generated token: {token}");

    let approve = format!("/api/gates/{}/approve", gate.id.short());
    let (status, body) = http(addr, "POST", &approve, None, "");
    assert!(status.contains("401"), "{status} {body}");
    let (status, _) = http(addr, "POST", &approve, Some("guessed-token-guessed-token"), "");
    assert!(status.contains("401"), "{status}");
    assert_eq!(store.get_gate(gate.id).unwrap().status, GateStatus::Pending);

    let (status, body) = http(addr, "GET", "/api/runs", Some(token), "");
    assert!(status.contains("200"), "{status} {body}");
    assert!(body.contains(&run.id.short()), "{body}");
    let (status, body) = http(
        addr,
        "POST",
        &approve,
        Some(token),
        r#"{"note": "from the browser"}"#,
    );
    assert!(status.contains("200"), "{status} {body}");
    let decided = store.get_gate(gate.id).unwrap();
    assert_eq!(decided.status, GateStatus::Approved);
    assert_eq!(decided.decided_by.as_deref(), Some("dashboard"));
    assert_eq!(decided.note.as_deref(), Some("from the browser"));
}

#[test]
fn a_weak_token_from_the_environment_is_refused() {
    let repo = Repo::initialised();
    let out = Command::new(env!("CARGO_BIN_EXE_agency"))
        .args(["dashboard", "--listen", "127.0.0.1:0"])
        .current_dir(repo.path())
        .env_remove("AGENCY_DB")
        .env_remove("AGENCY_CONFIG")
        .env("AGENCY_DASHBOARD_TOKEN", "hunter2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("AGENCY_DASHBOARD_TOKEN: the dashboard token has 7 characters; use at least 24"),
        "{stderr}"
    );
}
