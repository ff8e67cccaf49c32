//! The dashboard over a real SQLite blackboard, served on 127.0.0.1 and spoken to over real HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use agency_core::gate::{GateKind, GateStatus};
use agency_core::{EventKind, GateId, NewEvent, RunId};
use agency_store::{Blackboard, NewGate, NewRun, RunStatus, SqliteBlackboard};
use agency_web::{Dashboard, Token};
use reqwest::StatusCode;
use serde_json::{Value, json};

const TOKEN: &str = "test-token-0123456789abcdef";

struct Served {
    base: String,
    store: Arc<SqliteBlackboard>,
    run: RunId,
    gate: GateId,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// A blackboard with one run waiting at its plan gate, and a dashboard serving it.
async fn serve() -> Served {
    serve_with(|dashboard| dashboard).await
}

/// [`serve`], with the dashboard set up further by `configure`.
async fn serve_with(configure: impl FnOnce(Dashboard) -> Dashboard) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteBlackboard::open(dir.path().join("agency.db")).unwrap());
    let run = store
        .create_run(NewRun::new("Fix the pagination bug", "/repo"))
        .unwrap();
    store
        .append_event(NewEvent::new(
            run.id,
            EventKind::Log,
            json!({ "tag": "PLAN_START", "message": "Assessing scope" }),
        ))
        .unwrap();
    let gate = store
        .open_gate(NewGate::new(
            run.id,
            GateKind::T1Plan,
            json!({ "message": "Waiting on approval before the first tier spawns" }),
        ))
        .unwrap();
    let dashboard = configure(
        Dashboard::new(store.clone(), Token::parse(TOKEN).unwrap()).with_poll(Duration::from_millis(20)),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(dashboard.serve(listener, async {
        let _ = stopped.await;
    }));
    Served {
        base,
        store,
        run: run.id,
        gate: gate.id,
        _dir: dir,
        _stop: stop,
    }
}

impl Served {
    /// `GET path` with the token, as JSON.
    async fn get_json(&self, path: &str) -> Value {
        json_of(
            client()
                .get(format!("{}{path}", self.base))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap(),
        )
        .await
    }
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().unwrap()
}

async fn json_of(response: reqwest::Response) -> Value {
    serde_json::from_str(&response.text().await.unwrap()).unwrap()
}

#[tokio::test]
async fn strangers_can_neither_read_runs_nor_decide_gates() {
    let s = serve().await;
    let http = client();
    let approve = format!("{}/api/gates/{}/approve", s.base, s.gate);
    for response in [
        http.get(format!("{}/api/runs", s.base)).send().await.unwrap(),
        http.post(&approve).send().await.unwrap(),
        http.post(&approve)
            .header("Authorization", "Bearer not-the-token-at-all-000000")
            .send()
            .await
            .unwrap(),
        // The token in the query string (or anywhere but the header) is not accepted.
        http.post(format!("{approve}?token={TOKEN}"))
            .send()
            .await
            .unwrap(),
    ] {
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let body = json_of(response).await;
        assert!(body["error"].as_str().unwrap().contains("token"), "{body}");
    }
    assert_eq!(s.store.get_gate(s.gate).unwrap().status, GateStatus::Pending);
}

#[tokio::test]
async fn the_token_holder_approves_a_gate_once() {
    let s = serve().await;
    let http = client();
    let approve = format!("{}/api/gates/{}/approve", s.base, s.gate.short());
    let response = http
        .post(&approve)
        .bearer_auth(TOKEN)
        .body(r#"{"note": "looks right"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(json_of(response).await["status"], "approved");
    let gate = s.store.get_gate(s.gate).unwrap();
    assert_eq!(gate.status, GateStatus::Approved);
    assert_eq!(gate.decided_by.as_deref(), Some("dashboard"));
    assert_eq!(gate.note.as_deref(), Some("looks right"));
    let again = http.post(&approve).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::CONFLICT);
    assert!(
        json_of(again).await["error"]
            .as_str()
            .unwrap()
            .contains("already approved by dashboard")
    );
}

#[tokio::test]
async fn a_rejection_must_give_its_reason() {
    let s = serve().await;
    let http = client();
    let reject = format!("{}/api/gates/{}/reject", s.base, s.gate);
    for (body, expected) in [
        ("", "the request body: expected JSON like"),
        (r#"{"why": "x"}"#, "unknown field `why`"),
        (r#"{"reason": "   "}"#, "reason: must say why"),
    ] {
        let response = http
            .post(&reject)
            .bearer_auth(TOKEN)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        let error = json_of(response).await;
        assert!(error["error"].as_str().unwrap().contains(expected), "{error}");
    }
    assert_eq!(s.store.get_gate(s.gate).unwrap().status, GateStatus::Pending);
    let response = http
        .post(&reject)
        .bearer_auth(TOKEN)
        .body(r#"{"reason": "split the workstream in two"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let gate = s.store.get_gate(s.gate).unwrap();
    assert_eq!(gate.status, GateStatus::Rejected);
    assert_eq!(gate.note.as_deref(), Some("split the workstream in two"));
}

#[tokio::test]
async fn unknown_and_malformed_ids_are_told_apart() {
    let s = serve().await;
    let http = client();
    let unknown = http
        .post(format!("{}/api/gates/{}/approve", s.base, GateId::new()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let malformed = http
        .get(format!("{}/api/runs/not-hex", s.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    assert!(
        json_of(malformed).await["error"]
            .as_str()
            .unwrap()
            .contains("expected hex digits")
    );
    let nowhere = http.get(format!("{}/nowhere", s.base)).send().await.unwrap();
    assert_eq!(nowhere.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn runs_their_gates_and_their_log_lines_are_listed() {
    let s = serve().await;
    let runs = s.get_json("/api/runs").await;
    assert_eq!(runs[0]["short"], s.run.short());
    assert_eq!(runs[0]["pending_gates"], 1);
    assert_eq!(runs[0]["status"], "planning");
    let detail = s.get_json(&format!("/api/runs/{}", s.run.short())).await;
    assert_eq!(detail["run"]["goal"], "Fix the pagination bug");
    assert_eq!(detail["gates"][0]["kind"], "t1_plan");
    assert_eq!(detail["gates"][0]["status"], "pending");
    let events = s.get_json(&format!("/api/runs/{}/events?after=0", s.run)).await;
    // The lines `agency watch --verbose` prints, after their `[run8] HH:MM:SS  ` prefix.
    let prefix = format!("[{}] ", s.run.short());
    let lines: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["line"].as_str())
        .inspect(|line| assert!(line.starts_with(&prefix), "{line}"))
        .map(|line| &line[prefix.len() + "HH:MM:SS  ".len()..])
        .collect();
    assert_eq!(
        lines,
        [
            "RUN  START         \"Fix the pagination bug\"",
            "RUN  PLAN_START    Assessing scope",
            "GATE APPROVAL      ⏸  Waiting on approval before the first tier spawns"
        ]
    );
}

#[tokio::test]
async fn the_live_log_streams_new_events_and_ends_with_the_run() {
    let s = serve().await;
    let mut response = client()
        .get(format!("{}/api/runs/{}/stream", s.base, s.run))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut seen = String::new();
    // The event written before the client connected comes first.
    while !seen.contains("PLAN_START    Assessing scope") {
        seen.push_str(&String::from_utf8_lossy(
            &response.chunk().await.unwrap().unwrap(),
        ));
    }
    s.store
        .append_event(NewEvent::new(
            s.run,
            EventKind::Log,
            json!({ "tag": "PLAN_DONE", "message": "1 workstream" }),
        ))
        .unwrap();
    while !seen.contains("PLAN_DONE     1 workstream") {
        seen.push_str(&String::from_utf8_lossy(
            &response.chunk().await.unwrap().unwrap(),
        ));
    }
    assert!(seen.contains("event: agency"));
    s.store.set_run_status(s.run, None, RunStatus::Cancelled).unwrap();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), response.chunk())
        .await
        .unwrap()
        .unwrap()
    {
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("event: end"), "{seen}");
}

#[tokio::test]
async fn the_page_is_served_with_a_strict_policy() {
    let s = serve().await;
    let http = client();
    let page = http.get(format!("{}/", s.base)).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(policy.contains("script-src 'self'"), "{policy}");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert_eq!(page.headers()["referrer-policy"], "no-referrer");
    assert!(page.headers().get("access-control-allow-origin").is_none());
    assert!(page.text().await.unwrap().contains("<script src=\"/app.js\""));
    let script = http.get(format!("{}/app.js", s.base)).send().await.unwrap();
    let script = script.text().await.unwrap();
    assert!(script.contains("Authorization"));
    assert!(
        !script.contains("innerHTML"),
        "agents' text must never be parsed as markup"
    );
}

#[tokio::test]
async fn a_team_run_that_no_runner_drives_is_marked_so() {
    let s = serve().await;
    let mut new = NewRun::new("Fix the flaky test", "/repo");
    new.config = json!({ "runner": { "concurrency": 4 } });
    let team = s.store.create_run(new).unwrap();
    let runs = s.get_json("/api/runs").await;
    let row = |id: String| {
        runs.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == json!(id))
            .cloned()
            .unwrap()
    };
    let team_row = row(team.id.to_string());
    assert_eq!(
        (team_row["kind"].clone(), team_row["no_runner"].clone()),
        (json!("team"), json!(true))
    );
    // The session record the other tests use never has a runner, and is not said to miss one.
    let session_row = row(s.run.to_string());
    assert_eq!(
        (session_row["kind"].clone(), session_row["no_runner"].clone()),
        (json!("session"), json!(false))
    );
    // While a runner holds the run, it is attached.
    let _lease = s.store.lock_driver(team.id, "a runner").unwrap();
    let again = s.get_json("/api/runs").await;
    let attached = again
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == json!(team.id.to_string()))
        .unwrap()
        .clone();
    assert_eq!(attached["no_runner"], json!(false));
}

#[tokio::test]
async fn the_review_endpoints_need_the_token_and_say_what_is_missing() {
    let s = serve().await;
    let http = client();
    let review = format!("{}/api/runs/{}/review", s.base, s.run);
    let stranger = http.get(&review).send().await.unwrap();
    assert_eq!(stranger.status(), StatusCode::UNAUTHORIZED);

    let response = http.get(&review).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = json_of(response).await;
    // No plan written yet: none shown, and no problem claimed.
    assert_eq!(body["plan"], Value::Null, "{body}");
    assert_eq!(body["plan_problem"], Value::Null, "{body}");
    assert_eq!(body["cost"]["total"]["spend"]["calls"], 0, "{body}");
    assert_eq!(body["cost"]["total"]["usd"], "$0.0000", "{body}");
    assert_eq!(body["timeline"], json!([]), "{body}");
    assert_eq!(body["outcome"]["branch"], Value::Null, "{body}");

    let diff = http
        .get(format!("{}/api/runs/{}/diff/ws-nope", s.base, s.run))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(diff.status(), StatusCode::NOT_FOUND);
    let body = json_of(diff).await;
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("`ws-nope` is neither `integration` nor a workstream of run"),
        "{body}"
    );

    let brief = http
        .get(format!("{}/api/runs/{}/briefs/0000", s.base, s.run))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert!(brief.status().is_client_error(), "{}", brief.status());
}

/// A run started with `sandbox.mode: off` carries the banner the page shows on each of its gates; a run
/// with the sandbox on carries none.
#[tokio::test]
async fn a_run_without_a_sandbox_says_so_for_its_gates() {
    let s = serve().await;
    let mut new = NewRun::new("Fix it unconfined", "/repo");
    new.config = json!({ "sandbox": { "mode": "off" } });
    let off = s.store.create_run(new).unwrap();
    let detail = |run: RunId| {
        let base = s.base.clone();
        async move {
            json_of(
                client()
                    .get(format!("{base}/api/runs/{run}"))
                    .bearer_auth(TOKEN)
                    .send()
                    .await
                    .unwrap(),
            )
            .await
        }
    };
    let banner = detail(off.id).await["run"]["sandbox_off"].clone();
    assert!(
        banner.as_str().is_some_and(|b| b.starts_with("SANDBOX OFF:")),
        "{banner}"
    );
    assert_eq!(detail(s.run).await["run"]["sandbox_off"], Value::Null);
    // The page puts it on every gate card it draws.
    let script = client()
        .get(format!("{}/app.js", s.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        script.contains("gateCard(gate, review, detail.run.sandbox_off)")
            && script.contains("\"sandbox-off\""),
        "the gate cards do not show the banner"
    );
}

/// T2's `[view …]` records of a workstream come with the run's review as the text `agency show` prints,
/// escapes and markup kept as characters for the page to set as text.
#[tokio::test]
async fn the_review_carries_each_workstreams_design_records_rendered() {
    let s = serve().await;
    let mut brief = agency_store::conformance::sample_brief(s.run, "split the parser");
    brief.workstream = "ws-parse".into();
    s.store.insert_brief(&brief).unwrap();
    s.store
        .put_artifact(agency_store::NewArtifact::new(
            s.run,
            "boundaries/ws-parse",
            "application/json",
            json!({ "boundaries": [{ "domain": "parser", "owns": ["src/parse/"] }],
                    "shared_assumptions": ["<script>alert(1)</script>"] })
            .to_string()
            .into_bytes(),
        ))
        .unwrap();
    s.store
        .put_artifact(agency_store::NewArtifact::new(
            s.run,
            "architecture/ws-parse",
            "text/markdown",
            b"# Parser\nOne pass.\x1b[2J".to_vec(),
        ))
        .unwrap();
    let body = s.get_json(&format!("/api/runs/{}/review", s.run)).await;
    let views = body["views"].as_array().unwrap();
    let labels: Vec<&str> = views.iter().map(|v| v["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "[view domain boundaries]",
            "[view shared assumptions]",
            "[view canonical architecture]"
        ]
    );
    let text = |i: usize| views[i]["text"].as_str().unwrap().to_string();
    assert_eq!(
        text(0),
        agency_review::views::render(
            agency_review::views::View::Boundaries,
            "ws-parse",
            Some(
                &s.store
                    .latest_artifact(s.run, "boundaries/ws-parse")
                    .unwrap()
                    .map(|a| String::from_utf8(a.bytes).unwrap())
                    .unwrap()
            ),
        )
    );
    assert!(text(0).contains("parser\n  owns      src/parse/"), "{}", text(0));
    assert_eq!(
        text(1),
        "Shared assumptions of ws-parse (boundaries/ws-parse)\n\n- <script>alert(1)</script>\n"
    );
    assert!(text(2).ends_with("# Parser\nOne pass.\u{1b}[2J\n"), "{}", text(2));
    // The page sets them as text, never as markup.
    let script = client()
        .get(format!("{}/app.js", s.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        script.contains("element(\"pre\", v.text)") && !script.contains("innerHTML"),
        "the views are not set as text"
    );
}

#[tokio::test]
async fn a_runs_path_amendments_are_listed_with_their_decisions() {
    let s = serve().await;
    let proposed = |reason: &str| {
        NewEvent::new(
            s.run,
            EventKind::PathAmendment,
            json!({ "proposed_by": "t4/fix-add", "workstream": "ws-arith", "reason": reason,
                    "amendment": { "workstream": "ws-arith", "add_tiers": ["t3"], "insert_before": "t5" } }),
        )
    };
    let first = s.store.append_event(proposed("mul.sh is broken too")).unwrap();
    let second = s.store.append_event(proposed("and neg.sh")).unwrap();
    s.store.append_event(proposed("later")).unwrap();
    s.store
        .append_event(NewEvent::new(
            s.run,
            EventKind::PathAmendmentDecided,
            json!({ "amendment": first.seq, "workstream": "ws-arith", "approved": true, "by": "cli:alice",
                    "path_before": ["t3", "t4", "t5"], "path_after": ["t3", "t4", "t3", "t5"] }),
        ))
        .unwrap();
    s.store
        .append_event(NewEvent::new(
            s.run,
            EventKind::PathAmendmentDecided,
            json!({ "amendment": second.seq, "workstream": "ws-arith", "approved": false, "by": "dashboard",
                    "note": "one extra pass is enough" }),
        ))
        .unwrap();
    let detail = s.get_json(&format!("/api/runs/{}", s.run)).await;
    let listed = detail["amendments"].as_array().unwrap();
    assert_eq!(listed.len(), 3, "{detail}");
    assert_eq!(listed[0]["status"], "approved");
    assert_eq!(listed[0]["decided_by"], "cli:alice");
    assert_eq!(listed[0]["path_after"], "t3→t4→t3→t5");
    assert_eq!(listed[0]["change"], "add t3 before t5");
    assert_eq!(listed[0]["proposed_by"], "t4/fix-add");
    assert_eq!(listed[1]["status"], "rejected");
    assert_eq!(listed[1]["note"], "one extra pass is enough");
    assert_eq!(listed[2]["status"], "proposed");
    assert!(listed[2]["decided_by"].is_null());
}

#[tokio::test]
async fn a_decision_pokes_the_runners_waiting_in_the_agency_directory() {
    // A runner's gate service, as `agency run` binds it: a socket in `.agency/gate/`.
    let agency_dir = tempfile::tempdir().unwrap();
    let sockets = agency_dir.path().join(agency_toolgate::wire::SOCKET_DIR);
    std::fs::create_dir(&sockets).unwrap();
    let runner = std::os::unix::net::UnixListener::bind(sockets.join("4242.sock")).unwrap();
    let dir = agency_dir.path().to_path_buf();
    let s = serve_with(move |dashboard| dashboard.with_runners_in(dir)).await;
    let approved = client()
        .post(format!("{}/api/gates/{}/approve", s.base, s.gate.short()))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(approved.status(), StatusCode::OK);
    // The poke was sent before the answer: it is waiting on the runner's socket.
    runner.set_nonblocking(true).unwrap();
    let (stream, _) = runner.accept().expect("the runner was not poked");
    stream.set_nonblocking(false).unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stream), &mut line).unwrap();
    assert_eq!(line, "{\"op\":\"poke\"}\n");
}
