//! Notifiers and the forge, end to end: a real run on the scripted model announces its gate and its end
//! through a command and a webhook, a failing notifier only leaves a log line, and at accept the integration
//! branch is pushed and a pull request opened against a fake GitHub API on 127.0.0.1 (no network).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::field_reassign_with_default)]

#[path = "engine/support.rs"]
#[allow(dead_code)]
mod support;

use std::path::Path;

use agency_core::config::{NotifierConfig, TeamConfig};
use agency_core::event::EventKind;
use agency_core::gate::{GateDecision, GateKind};
use agency_engine::notify::{Notification, NotificationKind};
use agency_store::{Blackboard, RunStatus};
use agency_testkit::http::Response;
use agency_testkit::{FakeHttp, RecordedRequest};
use serde_json::json;

use support::{Background, GOAL, Project, events, wait_for};

/// A fake GitHub API and webhook receiver: `/repos/…/pulls` answers like GitHub creating a pull request,
/// anything else 200 with `{}`.
fn fake_github() -> FakeHttp {
    FakeHttp::start(|request| {
        if request.path.ends_with("/pulls") {
            Response::json(
                201,
                &json!({ "number": 7, "html_url": "https://github.com/acme/widget/pull/7" }),
            )
        } else {
            Response::json(200, &json!({}))
        }
    })
    .unwrap()
}

/// Every notification the `tee` command notifier appended to `path`.
fn notifications(path: &Path) -> Vec<Notification> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    serde_json::Deserializer::from_str(&text)
        .into_iter::<Notification>()
        .map(Result::unwrap)
        .collect()
}

/// Drives the simple profile through its t1_plan gate, approved by a "human" — once the gate was announced
/// to `inbox`, when given.
fn run_through_the_plan_gate(
    project: &Project,
    config: TeamConfig,
    inbox: Option<&Path>,
) -> agency_core::RunId {
    let engine = project.engine(include_str!("scripts/simple.yaml"), config, false);
    let run = engine.start(GOAL).unwrap();
    let store = project.store.clone();
    let driving = Background::drive(engine, run.id);
    let gate = wait_for("the t1_plan gate", || {
        store.pending_gates(Some(run.id)).unwrap().pop()
    });
    assert_eq!(gate.kind, GateKind::T1Plan);
    if let Some(inbox) = inbox {
        wait_for("the gate's notification", || {
            (!notifications(inbox).is_empty()).then_some(())
        });
    }
    store
        .decide_gate(
            gate.id,
            GateDecision::Approve {
                by: "tester".into(),
                note: None,
            },
        )
        .unwrap();
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    run.id
}

fn log_messages(project: &Project, run: agency_core::RunId, tag: &str) -> Vec<String> {
    events(project.store.as_ref(), run)
        .into_iter()
        .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == tag)
        .map(|e| e.payload["message"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn gates_and_the_end_are_announced_and_the_branch_becomes_a_pull_request() {
    let project = Project::new();
    let server = fake_github();
    let bare = agency_testkit::git::bare_remote(project.dir.path().join("github.git")).unwrap();
    let remote = "https://github.com/acme/widget.git";
    project
        .repo
        .run_git(&["remote", "add", "origin", remote])
        .unwrap();
    // Pushes to the GitHub URL land in the local bare repository instead: no network.
    let rewrite = format!("url.{}.pushInsteadOf", bare.display());
    project.repo.run_git(&["config", &rewrite, remote]).unwrap();

    let inbox = project.dir.path().join("inbox.jsonl");
    let mut config = TeamConfig::default();
    config.notifiers = vec![
        NotifierConfig::Command {
            argv: vec!["tee".into(), "-a".into(), inbox.display().to_string()],
        },
        NotifierConfig::Webhook {
            url: format!("{}/hook/SECRET-PATH", server.base_url()),
        },
        NotifierConfig::Command {
            argv: vec!["false".into()],
        },
    ];
    // Cargo sets this variable for every test process: a token that is always there, without touching the
    // environment.
    config.forge.token_env = "CARGO_PKG_NAME".into();
    config.forge.api_url = server.base_url();

    let run = run_through_the_plan_gate(&project, config.clone(), Some(&inbox));
    let integration = format!("agency/{}/integration", run.short());

    let got = notifications(&inbox);
    let kinds: Vec<NotificationKind> = got.iter().map(|n| n.kind).collect();
    assert_eq!(
        kinds,
        [NotificationKind::GatePending, NotificationKind::RunSucceeded]
    );
    let gate = &got[0];
    assert_eq!(gate.run, run.to_string());
    assert_eq!(gate.gate.as_deref(), Some("t1_plan"));
    assert!(gate.title.contains("Waiting on approval"), "{}", gate.title);
    assert!(gate.summary.get("produced").is_some(), "{}", gate.summary);
    assert!(
        gate.what_happens_next
            .iter()
            .any(|s| s.contains(&format!("agency approve {}", run.short()))),
        "{:?}",
        gate.what_happens_next
    );
    let done = &got[1];
    assert_eq!(done.branch.as_deref(), Some(integration.as_str()));
    assert_eq!(done.url.as_deref(), Some("https://github.com/acme/widget/pull/7"));

    // The webhook got the same two notifications; GitHub got one pull request for the pushed branch.
    let received = server.requests();
    let hooks: Vec<&RecordedRequest> = received.iter().filter(|r| r.path.starts_with("/hook/")).collect();
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[0].body["kind"], "gate_pending");
    assert_eq!(hooks[1].body["kind"], "run_succeeded");
    let pulls: Vec<&RecordedRequest> = received.iter().filter(|r| r.path.ends_with("/pulls")).collect();
    assert_eq!(pulls.len(), 1);
    let pr = pulls[0];
    assert_eq!(pr.path, "/repos/acme/widget/pulls");
    assert_eq!(pr.header("authorization"), Some("Bearer agency-engine"));
    assert_eq!(pr.body["head"], integration.as_str());
    assert_eq!(pr.body["base"], "main");
    assert_eq!(pr.body["title"], GOAL);
    let body = pr.body["body"].as_str().unwrap();
    assert!(body.contains(&run.to_string()), "{body}");
    assert!(body.contains("`ws-add`: `sh test_add.sh` passed"), "{body}");
    let pushed = std::process::Command::new("git")
        .args(["--git-dir"])
        .arg(&bare)
        .args(["rev-parse", "--verify", "--quiet", &integration])
        .output()
        .unwrap();
    assert!(pushed.status.success(), "the integration branch was not pushed");

    // The failing notifier failed twice, said so, and named itself; the webhook's secret path never shows.
    let failures = log_messages(&project, run, "NOTIFY_FAILED");
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(
        failures[0].starts_with("notifier command false failed to send gate_pending: "),
        "{failures:?}"
    );
    let all_events = serde_json::to_string(&events(project.store.as_ref(), run)).unwrap();
    assert!(!all_events.contains("SECRET-PATH"));
    assert_eq!(
        log_messages(&project, run, "PR"),
        ["pull request opened: https://github.com/acme/widget/pull/7"]
    );

    // A runner that drives the succeeded run again (without notifiers it publishes on every look at a
    // succeeded run) finds the pull request on record, after T1's acceptance, and opens none.
    config.notifiers.clear();
    let engine = project.engine(include_str!("scripts/simple.yaml"), config, false);
    let outcome = Background::drive(engine, run).join();
    assert_eq!(outcome.status, RunStatus::Succeeded);
    let pulls = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/pulls"))
        .count();
    assert_eq!(pulls, 1);
    assert_eq!(log_messages(&project, run, "PR").len(), 1);
}

#[test]
fn without_a_token_the_run_ends_with_the_branch_and_says_why() {
    let project = Project::new();
    project
        .repo
        .run_git(&["remote", "add", "origin", "https://github.com/acme/widget.git"])
        .unwrap();
    let mut config = TeamConfig::default();
    config.forge.token_env = "AGENCY_TEST_TOKEN_THAT_IS_NEVER_SET".into();
    let run = run_through_the_plan_gate(&project, config, None);
    let messages = log_messages(&project, run, "PR");
    assert_eq!(
        messages,
        [format!(
            "no pull request: $AGENCY_TEST_TOKEN_THAT_IS_NEVER_SET is not set; review branch agency/{}/integration",
            run.short()
        )]
    );
}
