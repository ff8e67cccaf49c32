//! `agency watch` and `agency inspect` over a blackboard written the way a run writes it.

use std::str::FromStr;
use std::sync::Arc;

use agency_core::brief::{Brief, BriefStatus};
use agency_core::event::{EventKind, NewEvent};
use agency_core::gate::{GateDecision, GateKind};
use agency_core::teachback::TeachbackState;
use agency_core::tier::Tier;
use agency_core::variety::Variety;
use agency_core::{BriefId, RunId};
use agency_store::{Blackboard, NewGate, NewRun, SqliteBlackboard, SteppingClock};
use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::support::Repo;

const RUN_ID: &str = "0193a1b2-0000-7000-8000-0000abc12345";

fn at(time: &str) -> DateTime<Utc> {
    DateTime::from_str(&format!("2026-03-30T{time}Z")).unwrap()
}

/// A handle whose own records are stamped at `time`.
fn store_at(repo: &Repo, time: &str) -> SqliteBlackboard {
    SqliteBlackboard::open(repo.db())
        .unwrap()
        .with_clock(Arc::new(SteppingClock::new(at(time), Duration::zero())))
}

fn log(run: RunId, time: &str, tier: Tier, tag: &str, message: &str) -> NewEvent {
    NewEvent::new(
        run,
        EventKind::Log,
        json!({ "level": "normal", "tag": tag, "message": message }),
    )
    .tier(tier)
    .at(at(time))
}

fn brief(run: RunId, tier: Tier, workstream: &str, title: &str, status: BriefStatus) -> Brief {
    Brief {
        id: BriefId::new(),
        run,
        parent: None,
        tier,
        workstream: workstream.into(),
        title: title.into(),
        personality: None,
        goal_anchor: "Build webhook ingestion system".into(),
        instructions: "do it".into(),
        inputs: vec![],
        variety: Some(Variety::new(2, 2, 1, 2).unwrap()),
        contract: None,
        retry_budget: 3,
        attempt: 0,
        depends_on: vec![],
        branch: None,
        worktree: None,
        status,
        teachback: TeachbackState::Active,
        claimed_by: None,
        created_at: at("12:30:20"),
    }
}

/// Writes the seed's example run (design doc, "Human-Readable Live Log") onto the blackboard.
fn seed_example(repo: &Repo) -> RunId {
    let store = store_at(repo, "12:30:00");
    let mut new = NewRun::new(
        "Build webhook ingestion system",
        repo.path().display().to_string(),
    );
    new.id = RunId::from_str(RUN_ID).unwrap();
    let run = store.create_run(new).unwrap().id;
    let append = |e: NewEvent| {
        store.append_event(e).unwrap();
    };
    append(
        NewEvent::new(
            run,
            EventKind::PlanStart,
            json!({ "goal": "Build webhook ingestion system" }),
        )
        .tier(Tier::T1)
        .at(at("12:30:01")),
    );
    append(
        NewEvent::new(
            run,
            EventKind::PlanDone,
            json!({ "summary": "3 workstreams — backend-api, infra, docs (2 parallel)" }),
        )
        .tier(Tier::T1)
        .at(at("12:30:14")),
    );
    let gate = store_at(repo, "12:30:14")
        .open_gate(NewGate::new(
            run,
            GateKind::T1Plan,
            json!({ "message": "Waiting on approval before T2 spawns" }),
        ))
        .unwrap();
    store_at(repo, "12:31:02")
        .decide_gate(
            gate.id,
            GateDecision::Approve {
                by: "cli:andrew".into(),
                note: None,
            },
        )
        .unwrap();
    append(log(
        run,
        "12:31:03",
        Tier::T2,
        "LEAD_START",
        "Lead Architect spawned",
    ));
    append(log(
        run,
        "12:31:41",
        Tier::T2,
        "BOUNDS_READY",
        "Domain boundaries + shared assumptions published",
    ));
    append(log(
        run,
        "12:31:42",
        Tier::T2,
        "SPEC_START",
        "3 specialists spawned (parallel): backend, infra, docs",
    ));
    append(log(
        run,
        "12:32:15",
        Tier::T2,
        "SPEC_DONE",
        "backend-api architecture draft ready",
    ));
    append(log(
        run,
        "12:32:58",
        Tier::T2,
        "SYNTH_DONE",
        "Canonical architecture written to blackboard",
    ));
    let synthesis = store_at(repo, "12:32:58")
        .open_gate(NewGate::new(
            run,
            GateKind::T2Synthesis,
            json!({ "message": "T2 synthesis ready for review" }),
        ))
        .unwrap();
    append(log(
        run,
        "12:33:44",
        Tier::T3,
        "MESH_START",
        "backend-api: 2 squad leads negotiating task boundaries",
    ));
    append(log(
        run,
        "12:34:01",
        Tier::T3,
        "MESH_DONE",
        "Task split committed — 7 T4 tasks (5 swarm, 2 pipeline)",
    ));
    append(log(
        run,
        "12:34:02",
        Tier::T4,
        "SWARM_START",
        "5 workers spawned in parallel",
    ));

    let auth = brief(
        run,
        Tier::T4,
        "ws-backend-api",
        "auth-middleware",
        BriefStatus::Done,
    );
    let queue = brief(
        run,
        Tier::T4,
        "ws-backend-api",
        "queue-client",
        BriefStatus::Running,
    );
    let pending = brief(
        run,
        Tier::T4,
        "ws-backend-api",
        "retry-queue",
        BriefStatus::Pending,
    );
    let lead = brief(run, Tier::T3, "ws-backend-api", "api-squad", BriefStatus::Running);
    for b in [&lead, &auth, &queue, &pending] {
        store.insert_brief(b).unwrap();
    }
    append(
        NewEvent::new(
            run,
            EventKind::Spawned,
            json!({ "title": "auth-middleware", "runtime": "builtin" }),
        )
        .tier(Tier::T4)
        .brief(auth.id)
        .at(at("12:34:03")),
    );
    append(
        NewEvent::new(run, EventKind::Completed, json!({ "title": "auth-middleware" }))
            .tier(Tier::T4)
            .brief(auth.id)
            .at(at("12:35:10")),
    );
    append(
        NewEvent::new(
            run,
            EventKind::Failed,
            json!({ "title": "queue-client", "attempt": 0, "retry_budget": 3 }),
        )
        .tier(Tier::T4)
        .brief(queue.id)
        .at(at("12:35:22")),
    );
    append(
        NewEvent::new(
            run,
            EventKind::Completed,
            json!({ "title": "queue-client", "note": "retry resolved" }),
        )
        .tier(Tier::T4)
        .brief(queue.id)
        .at(at("12:36:04")),
    );
    append(log(
        run,
        "12:36:05",
        Tier::T5,
        "VERIFY_START",
        "4 verifiers spawned",
    ));
    append(
        NewEvent::new(
            run,
            EventKind::Verdict,
            json!({ "summary": "partial — queue-client needs rework" }),
        )
        .tier(Tier::T5)
        .at(at("12:36:45")),
    );
    append(
        NewEvent::new(
            run,
            EventKind::Verdict,
            json!({ "summary": "✓  all pass — workstream backend-api done" }),
        )
        .tier(Tier::T5)
        .at(at("12:37:12")),
    );
    let _ = synthesis;
    run
}

#[test]
fn watch_renders_the_seed_live_log() {
    let repo = Repo::initialised();
    seed_example(&repo);
    let out = repo.agency(&["watch", "abc12345"]).success();
    insta::assert_snapshot!(out.stdout(), @r#"
        [abc12345] 12:30:01  T1   PLAN_START    Assessing scope: "Build webhook ingestion system"
        [abc12345] 12:30:14  T1   PLAN_DONE     3 workstreams — backend-api, infra, docs (2 parallel)
        [abc12345] 12:30:14  GATE APPROVAL      ⏸  Waiting on approval before T2 spawns
        [abc12345] 12:31:02  GATE APPROVED      ✓  Approved — continuing
        [abc12345] 12:31:03  T2   LEAD_START    Lead Architect spawned
        [abc12345] 12:31:41  T2   BOUNDS_READY  Domain boundaries + shared assumptions published
        [abc12345] 12:31:42  T2   SPEC_START    3 specialists spawned (parallel): backend, infra, docs
        [abc12345] 12:32:15  T2   SPEC_DONE     backend-api architecture draft ready
        [abc12345] 12:32:58  T2   SYNTH_DONE    Canonical architecture written to blackboard
        [abc12345] 12:32:58  GATE INSPECTION    ⏸  T2 synthesis ready for review
        [abc12345] 12:33:44  T3   MESH_START    backend-api: 2 squad leads negotiating task boundaries
        [abc12345] 12:34:01  T3   MESH_DONE     Task split committed — 7 T4 tasks (5 swarm, 2 pipeline)
        [abc12345] 12:34:02  T4   SWARM_START   5 workers spawned in parallel
        [abc12345] 12:35:10  T4   DONE          auth-middleware ✓
        [abc12345] 12:35:22  T4   FAIL          queue-client ✗  (retry 1/3)
        [abc12345] 12:36:04  T4   DONE          queue-client ✓  (retry resolved)
        [abc12345] 12:36:05  T5   VERIFY_START  4 verifiers spawned
        [abc12345] 12:36:45  T5   VERDICT       partial — queue-client needs rework
        [abc12345] 12:37:12  T5   VERDICT       ✓  all pass — workstream backend-api done
        "#);
}

#[test]
fn verbose_adds_per_agent_lines() {
    let repo = Repo::initialised();
    seed_example(&repo);
    let normal = repo.agency(&["watch", "2345"]).success().stdout();
    let verbose = repo.agency(&["watch", "2345", "--verbose"]).success().stdout();
    assert!(!normal.contains("spawned [builtin]"));
    assert!(
        verbose.contains("T4   START         auth-middleware spawned [builtin]"),
        "{verbose}"
    );
    assert!(verbose.contains("RUN  START"), "{verbose}");
}

/// team.yaml's `visibility.log_level: verbose` is the live log's default level: no flag needed.
#[test]
fn configured_verbose_log_level_adds_per_agent_lines() {
    let repo = Repo::initialised();
    seed_example(&repo);
    repo.edit_team(&[("log_level: normal", "log_level: verbose")]);
    let watched = repo.agency(&["watch", "2345"]).success().stdout();
    assert!(
        watched.contains("T4   START         auth-middleware spawned [builtin]"),
        "{watched}"
    );
}

#[test]
fn inspect_shows_the_tree() {
    let repo = Repo::initialised();
    seed_example(&repo);
    let out = repo.agency(&["inspect", "abc12345"]).success().stdout();
    // Brief ids are random; the shape is what this pins.
    let shape: String = out
        .lines()
        .map(|l| match l.find("  [") {
            Some(i) if l.ends_with(']') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!(shape, @r#"
        Run abc12345 — "Build webhook ingestion system"  (planning)
        ├── ws-backend-api
        │   ├── T3 api-squad (active)
        │   └── T4 workers: 1/3 done, 1 active, 1 pending
        └── GATE t2_synthesis: pending review
        "#);
}

#[test]
fn inspect_one_brief_and_one_tier() {
    let repo = Repo::initialised();
    seed_example(&repo);
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = RunId::from_str(RUN_ID).unwrap();
    let briefs = store.list_briefs(run).unwrap();
    let queue = briefs.iter().find(|b| b.title == "queue-client").unwrap();
    let out = repo
        .agency(&["inspect", "abc12345", "--brief", &queue.id.short()])
        .success()
        .stdout();
    assert!(out.contains("\"title\": \"queue-client\""), "{out}");
    assert!(
        out.contains(
            "derived gates: teachback blocking, auditor required (audited at sign-off), route orchestrate"
        ),
        "{out}"
    );
    assert!(out.contains("FAIL          queue-client ✗  (retry 1/3)"), "{out}");

    let out = repo
        .agency(&["inspect", "abc12345", "--tier", "t4"])
        .success()
        .stdout();
    let dir = repo.path().to_str().unwrap();
    insta::assert_snapshot!("inspect_one_tier", crate::demo::normalise_run(&out, dir));

    let json = repo.agency(&["inspect", "abc12345", "--json"]).success().stdout();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["briefs"].as_array().unwrap().len(), 4);

    repo.agency(&["inspect", "abc12345", "--tier", "t9"])
        .fails_with(3);
    repo.agency(&["inspect", "abc12345", "--brief", "ffffffff"])
        .fails_with(4);
}

/// A failed implementer's worktree kept by `runner.keep_worktrees_on_failure` is named by `inspect
/// --brief`; one that is gone (swept, or `agency gc`) is not.
#[test]
fn inspect_names_a_failed_briefs_kept_worktree() {
    let repo = Repo::initialised();
    seed_example(&repo);
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = RunId::from_str(RUN_ID).unwrap();
    let kept = repo.path().join(".agency/worktrees/kept-one");
    std::fs::create_dir_all(&kept).unwrap();
    let mut failed = brief(run, Tier::T4, "backend-api", "fix-failed", BriefStatus::Failed);
    failed.worktree = Some(kept.display().to_string());
    store.insert_brief(&failed).unwrap();
    let mut swept = brief(run, Tier::T4, "backend-api", "fix-swept", BriefStatus::Failed);
    swept.worktree = Some(repo.path().join(".agency/worktrees/gone").display().to_string());
    store.insert_brief(&swept).unwrap();
    let out = repo
        .agency(&["inspect", "abc12345", "--brief", &failed.id.short()])
        .success()
        .stdout();
    assert!(
        out.contains(&format!("worktree kept: {}", kept.display())),
        "{out}"
    );
    let out = repo
        .agency(&["inspect", "abc12345", "--brief", &swept.id.short()])
        .success()
        .stdout();
    assert!(!out.contains("worktree kept:"), "{out}");
}
