//! The gate service (`agency_cli::gate_service`): in a run, agents reach the teachback gate only through
//! it. An agent in its sandbox cannot open the blackboard, yet its `agency hook` gets the gate's answers
//! through the socket bound into the sandbox; a capability is good for its own brief only (another's is
//! refused and the refusal recorded, without the token); a service that is down makes the hook deny; a
//! teachback is submitted through it; and `agency teachback approve` pokes it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use agency_cli::gate_service::{GateService, GateSetup, Request, request};
use agency_core::BriefId;
use agency_core::config::{RolloutMode, SandboxConfig};
use agency_core::event::EventKind;
use agency_core::teachback::TeachbackState;
use agency_exec::gate::{GateCapability, GateIssuer};
use agency_exec::process::CommandSpec;
use agency_exec::sandbox::{self, Sandboxing};
use agency_store::{Blackboard, SqliteBlackboard};
use serde_json::{Value, json};

use crate::hook_support::{TEACHBACK, hook, pre_tool_use, start_brief};
use crate::support::Repo;

/// A repository with one blocking brief, and the gate service a runner on it would start.
struct Served {
    repo: Repo,
    store: Arc<SqliteBlackboard>,
    service: Arc<GateService>,
    brief: String,
}

fn served() -> Served {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let store = Arc::new(SqliteBlackboard::open(repo.db()).unwrap());
    let service = GateService::start(
        &repo.path().join(".agency/gate"),
        GateSetup {
            store: store.clone(),
            db: Some(repo.db()),
            config: None,
            rollout: RolloutMode::Enforce,
        },
    )
    .unwrap();
    Served {
        repo,
        store,
        service,
        brief,
    }
}

impl Served {
    fn capability(&self) -> GateCapability {
        self.service
            .issue(self.brief.parse::<BriefId>().unwrap())
            .unwrap()
    }

    fn events(&self) -> Vec<agency_core::Event> {
        let brief = self.store.get_brief(self.brief.parse().unwrap()).unwrap();
        crate::support::events(self.store.as_ref(), brief.run)
    }
}

fn gate_env<'a>(brief: &'a str, socket: &'a Path, token: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("AGENCY_BRIEF", brief),
        ("AGENCY_GATE_SOCKET", socket.to_str().unwrap()),
        ("AGENCY_GATE_CAPABILITY", token),
        // Not there: the hook must not need it.
        ("AGENCY_DB", "/nonexistent/agency.db"),
    ]
}

#[test]
fn the_hook_is_answered_through_the_service_without_the_blackboard() {
    let served = served();
    let capability = served.capability();
    let env = gate_env(&served.brief, capability.socket(), capability.token());
    let write = pre_tool_use(
        &served.repo,
        "Write",
        json!({"file_path": "x.txt", "content": "hi"}),
    );
    let denied = hook(&served.repo, &env, &write);
    assert_eq!(denied.decision(), "deny", "{denied:?}");
    assert!(denied.reason().contains("teachback"), "{denied:?}");
    let read = pre_tool_use(&served.repo, "Read", json!({"file_path": "x.txt"}));
    assert_eq!(hook(&served.repo, &env, &read).decision(), "allow");
    // The denial is on the blackboard, as the hook records it in a plain session.
    assert!(
        served
            .events()
            .iter()
            .any(|e| e.kind == EventKind::TeachbackDenied)
    );
    // The service kept both answers under this capability: the record the coverage audit reads. Another
    // capability of the same brief has none of them.
    let decided: Vec<(String, String)> = capability
        .decisions()
        .into_iter()
        .map(|d| (d.tool_name, d.gate_decision))
        .collect();
    assert_eq!(
        decided,
        [
            ("Write".to_string(), "deny".to_string()),
            ("Read".to_string(), "allow".to_string())
        ]
    );
    assert_eq!(capability.decisions()[0].tool_use_id.as_deref(), Some("toolu_1"));
    assert!(served.capability().decisions().is_empty());
}

#[test]
fn another_briefs_token_is_refused_recorded_and_never_written_down() {
    let served = served();
    let other = start_brief(&served.repo, "2,2,2,2");
    let theirs = served.service.issue(other.parse::<BriefId>().unwrap()).unwrap();
    let ask = |token: &str| {
        request(
            served.service.socket(),
            &Request::Review {
                brief: served.brief.clone(),
                token: token.to_owned(),
                after: 0,
            },
            Duration::from_secs(5),
        )
    };
    let refused = ask(theirs.token()).unwrap_err();
    assert!(refused.contains("refused"), "{refused}");
    assert!(ask("not-a-token").is_err());
    let alerts: Vec<_> = served
        .events()
        .into_iter()
        .filter(|e| e.kind == EventKind::Alert && e.payload["source"] == "gate")
        .collect();
    assert_eq!(alerts.len(), 2, "{alerts:#?}");
    // The hook through the service is refused too: it denies.
    let env = gate_env(&served.brief, theirs.socket(), theirs.token());
    let write = pre_tool_use(&served.repo, "Read", json!({"file_path": "x.txt"}));
    let answer = hook(&served.repo, &env, &write);
    assert_eq!(answer.decision(), "deny", "{answer:?}");
    assert!(answer.reason().contains("refused"), "{answer:?}");
    // Its own token works, until its agent ends.
    let mine = served.capability();
    assert!(ask(mine.token()).is_ok());
    let token = mine.token().to_owned();
    drop(mine);
    assert!(ask(&token).is_err());
    // No token in any event.
    for event in served.events() {
        let text = event.payload.to_string();
        assert!(!text.contains(theirs.token()) && !text.contains(&token), "{text}");
    }
}

#[test]
fn the_hook_denies_when_the_service_is_down() {
    let served = served();
    let capability = served.capability();
    let socket = capability.socket().to_path_buf();
    let token = capability.token().to_owned();
    drop(capability);
    let Served { repo, service, .. } = served;
    let brief = start_brief(&repo, "1,1,1,1");
    drop(service);
    let env = gate_env(&brief, &socket, &token);
    let read = pre_tool_use(&repo, "Read", json!({"file_path": "x.txt"}));
    let answer = hook(&repo, &env, &read);
    assert_eq!(answer.code, Some(0));
    assert_eq!(answer.decision(), "deny", "{answer:?}");
    assert!(answer.reason().contains("gate service"), "{answer:?}");
    assert!(answer.reason().contains("fails closed"), "{answer:?}");
}

#[test]
fn a_teachback_is_submitted_through_the_service_and_the_approval_pokes_the_runner() {
    let served = served();
    let capability = served.capability();
    let env = gate_env(&served.brief, capability.socket(), capability.token());
    let out = Command::new(env!("CARGO_BIN_EXE_agency"))
        .args(["teachback", "submit", "--wait", "0", TEACHBACK])
        .current_dir(served.repo.path())
        .env_remove("AGENCY_CONFIG")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("now under_review"), "{stdout}");
    let brief = served.store.get_brief(served.brief.parse().unwrap()).unwrap();
    assert_eq!(brief.teachback, TeachbackState::UnderReview);
    let submitted = served
        .events()
        .into_iter()
        .find(|e| e.kind == EventKind::TeachbackSubmitted)
        .unwrap();
    assert_eq!(submitted.payload["via"], "gate");

    // The reviewer, outside: the runner waiting on the service's waker is woken.
    let waker = served.service.waker();
    served
        .repo
        .agency(&["teachback", "approve", &served.brief])
        .success();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(5), waker.notified()).await })
        .expect("the approval did not poke the runner's gate service");
    let review = request(
        capability.socket(),
        &Request::Review {
            brief: served.brief.clone(),
            token: capability.token().to_owned(),
            after: 0,
        },
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(review["waiting"], Value::Bool(false));
    assert!(
        review["message"].as_str().unwrap().contains("approved"),
        "{review}"
    );
}

#[test]
fn a_gate_approved_on_the_dashboard_pokes_the_runner() {
    let served = served();
    let run = served.store.get_brief(served.brief.parse().unwrap()).unwrap().run;
    let gate = served
        .store
        .open_gate(agency_store::NewGate::new(
            run,
            agency_core::gate::GateKind::T1Plan,
            json!({ "message": "Waiting on approval before T2 spawns" }),
        ))
        .unwrap();
    let dashboard = crate::support::Dashboard::serve(&served.repo, &[]);
    let waker = served.service.waker();
    let approve = format!("/api/gates/{}/approve", gate.id.short());
    let (status, body) = crate::support::http(&dashboard.addr, "POST", &approve, Some(&dashboard.token), "");
    assert!(status.contains("200"), "{status} {body}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(5), waker.notified()).await })
        .expect("the dashboard's approval did not poke the runner's gate service");
}

/// The agent's side for real: a process in the sandbox a run gives its agents (the repository's
/// `.agency/` hidden, only the service's socket bound in) cannot see the blackboard, and its `agency
/// hook` is answered anyway.
#[test]
fn an_agent_in_its_sandbox_cannot_open_the_blackboard_but_its_hook_is_answered() {
    let served = served();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let hidden = [served.repo.path().join(".agency")];
    let Sandboxing::On(policy) = sandbox::configured(&SandboxConfig::default(), &hidden, home.as_deref())
    else {
        panic!("the default sandbox is on");
    };
    if let Err(err) = policy.probe() {
        let required = std::env::var("AGENCY_REQUIRE_E2E").is_ok_and(|v| v == "1");
        assert!(!required, "no sandbox here ({err}) and AGENCY_REQUIRE_E2E=1");
        eprintln!("\n*** SKIPPED: the sandbox cannot be set up here: {err} ***\n");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    assert!(
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(work.path())
            .status()
            .unwrap()
            .success()
    );
    let capability = served.capability();
    let db = served.repo.db();
    let event = pre_tool_use(&served.repo, "Read", json!({"file_path": "x.txt"}));
    let script = format!(
        "if [ -e '{db}' ]; then echo DB-VISIBLE; else echo DB-HIDDEN; fi; \
         cat '{db}' >/dev/null 2>&1 && echo DB-READ; \
         printf '%s' '{event}' | '{agency}' hook",
        db = db.display(),
        agency = env!("CARGO_BIN_EXE_agency"),
    );
    let spec = capability.apply(
        CommandSpec::new("sh")
            .arg("-c")
            .arg(script)
            .inherit_env("PATH")
            .env("AGENCY_BRIEF", served.brief.as_str())
            .cwd(work.path())
            .timeout(Duration::from_secs(60)),
    );
    // As the runtimes do: the hook's binary stays readable wherever it lives (a checkout under /tmp too).
    let readable = agency_exec::runtime::external::hook_readable(Path::new(env!("CARGO_BIN_EXE_agency")));
    let spec = Sandboxing::On(policy)
        .confine_with(spec, work.path(), &[capability.socket().to_path_buf()], &readable)
        .unwrap();
    let output = agency_exec::process::run(&spec).unwrap();
    let stdout = output.stdout.text();
    assert!(output.success(), "{stdout}{}", output.stderr.text());
    assert!(stdout.contains("DB-HIDDEN"), "{stdout}");
    assert!(!stdout.contains("DB-READ"), "{stdout}");
    assert!(
        stdout.contains(r#""permissionDecision":"allow""#),
        "the hook was not answered: {stdout}"
    );
}

/// `agency amendment propose` in an agent goes through the service, for the agent's own brief, and the
/// runner's checks answer it: here the brief's run has no approved plan, so there is no path to amend and
/// nothing is recorded. Without a service, the command refuses and records nothing either.
#[test]
fn a_path_amendment_is_proposed_only_through_the_service() {
    let served = served();
    let capability = served.capability();
    let env = gate_env(&served.brief, capability.socket(), capability.token());
    let propose = |env: &[(&str, &str)]| {
        Command::new(env!("CARGO_BIN_EXE_agency"))
            .args([
                "amendment",
                "propose",
                "--reason",
                "mul.sh is broken too",
                "--add-tiers",
                "t3",
                "--insert-before",
                "t5",
            ])
            .current_dir(served.repo.path())
            .env_remove("AGENCY_CONFIG")
            .env_remove("AGENCY_GATE_SOCKET")
            .env_remove("AGENCY_GATE_CAPABILITY")
            .envs(env.iter().copied())
            .output()
            .unwrap()
    };
    let through = propose(&env);
    let stderr = String::from_utf8_lossy(&through.stderr);
    assert!(!through.status.success());
    assert!(
        stderr.contains("the runner refused the path amendment: the run has no approved plan yet"),
        "{stderr}"
    );
    let alone = propose(&[("AGENCY_BRIEF", served.brief.as_str())]);
    let stderr = String::from_utf8_lossy(&alone.stderr);
    assert!(!alone.status.success());
    assert!(stderr.contains("no runner's gate service"), "{stderr}");
    // A token of no brief: refused by the service, and the refusal recorded.
    let refused = request(
        capability.socket(),
        &Request::Amend {
            brief: served.brief.clone(),
            token: "0".repeat(64),
            reason: "why".into(),
            change: Default::default(),
        },
        Duration::from_secs(5),
    )
    .unwrap_err();
    assert!(refused.contains("not valid for brief"), "{refused}");
    let events = served.events();
    assert!(events.iter().all(|e| e.kind != EventKind::PathAmendment));
    assert!(
        events
            .iter()
            .any(|e| e.kind == EventKind::Alert && e.payload["op"] == "amend")
    );
}
