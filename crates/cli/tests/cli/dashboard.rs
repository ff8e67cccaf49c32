//! `agency dashboard`: the real binary serves this repository's blackboard on loopback; a stranger is
//! refused, the holder of the printed URL's token approves the gate, and another handle sees the decision.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use agency_core::gate::{GateKind, GateStatus};
use agency_store::{Blackboard, NewGate, NewRun, SqliteBlackboard};

use crate::support::Repo;

/// Kills the dashboard when the test ends, however it ends.
pub(crate) struct Serving(pub(crate) Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 exchange; returns the status line and the body.
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    if let Err(e) = stream.read_to_string(&mut response) {
        panic!("{method} {path}: {e}; read so far: {response}");
    }
    let status = response.lines().next().unwrap_or_default().to_string();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

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

    let child = Command::new(env!("CARGO_BIN_EXE_agency"))
        .args(["dashboard", "--listen", "127.0.0.1:0"])
        .current_dir(repo.path())
        .env_remove("AGENCY_DB")
        .env_remove("AGENCY_CONFIG")
        .env_remove("AGENCY_DASHBOARD_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut serving = Serving(child);
    let mut first = String::new();
    BufReader::new(serving.0.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // dashboard: http://127.0.0.1:PORT/#token=HEX
    let url = first
        .trim()
        .strip_prefix("dashboard: http://")
        .unwrap_or_else(|| panic!("{first}"));
    let (addr, token) = url.split_once("/#token=").unwrap();
    assert_eq!(token.len(), 64, "a generated token: {first}");

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
