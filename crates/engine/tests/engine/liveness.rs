//! Liveness, by construction: generated plans (1–32 workstreams, parallel groups in sequence, direct and
//! squad tier paths, implementers whose first slice the judge rejects, verify commands, any concurrency,
//! runners stopped at random moments and resumed) must each end `succeeded`, with every workstream merged
//! into the integration branch exactly once, the integration tree equal to what an uninterrupted run makes,
//! and no pass of the runner missing work (no `RESCAN` line, no `STALL` alert).
//!
//! A fixed number of cases runs in the normal suite (`AGENCY_LIVENESS_CASES`, default 6); a soak sets it
//! higher (`AGENCY_LIVENESS_CASES=1000 cargo test -p agency-engine --test engine liveness`). A failing
//! case is shrunk by proptest to the smallest plan that still fails.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use agency_core::config::TeamConfig;
use agency_core::event::EventKind;
use agency_engine::DriveOutcome;
use agency_llm::CancelToken;
use agency_store::RunStatus;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;

use crate::support::{GOAL, Project, config, events};

/// One workstream of a generated plan.
#[derive(Debug, Clone)]
struct Stream {
    /// Through a squad lead (`[t3, t4, t5]`, `tasks` slices) or straight to one implementer (`[t4, t5]`).
    squad: bool,
    tasks: usize,
    /// The judge rejects the first attempt of its first slice (a retry must follow); only with two or more
    /// slices.
    flaky: bool,
    /// The workstream has a verify command (run on the integration branch after its merge).
    verify: bool,
}

/// A generated run.
#[derive(Debug, Clone)]
struct Case {
    /// Workstreams per parallel group, the groups in sequence.
    groups: Vec<Vec<Stream>>,
    concurrency: u32,
    /// Stop the runner this long after it started and resume it with a new one.
    interrupt_ms: Option<u64>,
}

impl Case {
    fn workstreams(&self) -> impl Iterator<Item = (usize, usize, &Stream)> {
        self.groups
            .iter()
            .enumerate()
            .flat_map(|(g, list)| list.iter().enumerate().map(move |(i, s)| (g, i, s)))
    }

    fn total(&self) -> usize {
        self.groups.iter().map(Vec::len).sum()
    }
}

fn ws_id(group: usize, index: usize) -> String {
    format!("ws-{group}-{index}")
}

fn task_title(group: usize, index: usize, task: usize) -> String {
    format!("task-{group}-{index}-{task}")
}

/// The file a slice writes, and what it holds once accepted.
fn slice_file(title: &str) -> (String, String) {
    (format!("out/{title}.txt"), format!("{title} is done\n"))
}

fn stream() -> impl Strategy<Value = Stream> {
    (
        any::<bool>(),
        1usize..=3,
        prop::bool::weighted(0.2),
        any::<bool>(),
    )
        .prop_map(|(squad, tasks, flaky, verify)| {
            let tasks = if squad { tasks } else { 1 };
            Stream {
                squad,
                tasks,
                // A rejected slice beside an accepted one is a partial verdict, retried within its squad;
                // a workstream whose every slice fails escalates to T1 instead (the seed's ladder), which
                // a script that always answers the same way would climb to a human gate.
                flaky: flaky && tasks > 1,
                verify,
            }
        })
}

fn case(max_workstreams: usize) -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(prop::collection::vec(stream(), 1..=max_workstreams), 1..=3),
        1u32..=8,
        prop::option::weighted(0.3, 200u64..3000),
    )
        .prop_map(move |(mut groups, concurrency, interrupt_ms)| {
            // At most `max_workstreams` in all, at least one in each group.
            let mut left = max_workstreams;
            for group in &mut groups {
                group.truncate(left.max(1));
                left = left.saturating_sub(group.len());
            }
            groups.retain(|g| !g.is_empty());
            Case {
                groups,
                concurrency,
                interrupt_ms,
            }
        })
}

/// The script that answers every model call of `case`'s run (JSON, which the YAML reader takes too).
fn script(case: &Case) -> String {
    let variety = json!({ "novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1 });
    let mut rules = vec![json!({
        "role": "judge", "brief": "run/t1/accept",
        "reply": { "text": "all in\nVERDICT: accept\nmissing: none\n" }
    })];
    let mut workstreams = Vec::new();
    let mut groups = serde_json::Map::new();
    let mut sequence = Vec::new();
    for (g, list) in case.groups.iter().enumerate() {
        let ids: Vec<String> = (0..list.len()).map(|i| ws_id(g, i)).collect();
        groups.insert(format!("g{g}"), json!(ids));
        sequence.push(format!("g{g}"));
    }
    for (g, i, stream) in case.workstreams() {
        let mut contract = json!({ "done_when": "its files exist" });
        if stream.verify {
            // Names no file of the slices (a file named in the verify command is its own, which a slice
            // may not change).
            contract["verify"] = json!(format!(
                "sh -c 'test \"$(ls out | grep -c task-{g}-{i}-)\" -eq {}'",
                stream.tasks
            ));
        }
        workstreams.push(json!({
            "id": ws_id(g, i), "name": task_title(g, i, 0), "domain": format!("d{g}"),
            "tier_path": if stream.squad { json!(["t3", "t4", "t5"]) } else { json!(["t4", "t5"]) },
            "parallel_group": format!("g{g}"), "variety": variety, "contract": contract,
        }));
    }
    rules.push(json!({
        "role": "planner",
        "reply": { "tool_calls": [{ "name": "report_result", "input": {
            "status": "done", "summary": "generated",
            "output": {
                "run_id": "00000000-0000-4000-8000-000000000000", "goal_anchor": "(filled in)",
                "complexity": "low", "retry_budget_multiplier": 1, "workstreams": workstreams,
                "parallelism": { "groups": groups, "sequence": sequence },
                "self_critique_summary": "generated"
            }
        }}]}
    }));
    for (g, i, stream) in case.workstreams() {
        let id = ws_id(g, i);
        if stream.squad {
            let tasks: Vec<serde_json::Value> = (0..stream.tasks)
                .map(|t| {
                    json!({
                        "title": task_title(g, i, t), "instructions": "write its file",
                        "variety": variety, "contract": { "done_when": "its file exists" }
                    })
                })
                .collect();
            rules.push(json!({
                "role": "squad-lead", "brief": format!("{id}/t3/{}", task_title(g, i, 0)),
                "reply": { "tool_calls": [{ "name": "report_result", "input": {
                    "status": "done", "summary": "tasks", "output": { "tasks": tasks }
                }}]}
            }));
        }
        for t in 0..stream.tasks {
            let title = task_title(g, i, t);
            let (path, content) = slice_file(&title);
            let brief = format!("{id}/t4/{title}");
            let write = |content: &str| {
                json!({ "tool_calls": [
                    { "name": "write_file", "input": { "path": path, "content": content } },
                    { "name": "report_result", "input": {
                        "status": "done", "summary": format!("wrote {path}"), "evidence": [{ "path": path }]
                    }}
                ]})
            };
            if stream.flaky && t == 0 {
                rules.push(json!({
                    "role": "implementer", "brief": brief,
                    "contains": "Your previous attempt was not accepted", "reply": write(&content)
                }));
                rules.push(json!({
                    "role": "implementer", "brief": brief,
                    "reply": write(&format!("{content}LEFTOVER-DEBUG\n"))
                }));
            } else {
                rules.push(json!({ "role": "implementer", "brief": brief, "reply": write(&content) }));
            }
        }
    }
    rules.push(json!({
        "role": "judge", "contains": "LEFTOVER-DEBUG",
        "reply": { "text": "A marker is left.\nVERDICT: reject\nmissing:\n- remove the LEFTOVER-DEBUG line\n" }
    }));
    rules.push(json!({ "role": "judge", "reply": { "text": "Fine.\nVERDICT: accept\nmissing: none\n" } }));
    json!({ "model": "scripted-liveness", "replies": rules }).to_string()
}

fn team(case: &Case) -> TeamConfig {
    let mut config = config();
    config.runner.concurrency = case.concurrency;
    config
}

/// Runs `case` to its end and checks every invariant; the failure says which.
fn check(case: &Case) -> Result<(), String> {
    let project = Project::new();
    let script = script(case);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let engine = project.engine(&script, team(case), true);
    let run = engine.start(GOAL).map_err(|e| e.to_string())?;
    let mut outcome: Option<DriveOutcome> = None;
    if let Some(ms) = case.interrupt_ms {
        // Stopped at a random moment: its agents are stopped and their briefs given back.
        let cancel = CancelToken::new();
        let stopper = cancel.clone();
        let stopped = runtime.block_on(async {
            let timer = async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                stopper.cancel();
                std::future::pending::<()>().await
            };
            tokio::select! {
                ended = engine.drive(run.id, &cancel) => ended.ok(),
                () = timer => None,
            }
        });
        outcome = stopped;
    }
    drop(engine);
    let outcome = match outcome {
        Some(done) => done,
        None => {
            let engine = project.engine(&script, team(case), true);
            let cancel = CancelToken::new();
            runtime
                .block_on(async {
                    tokio::time::timeout(Duration::from_secs(60), engine.drive(run.id, &cancel)).await
                })
                .map_err(|_| format!("the run did not end within 60 s:\n{}", project.tree(run.id)))?
                .map_err(|e| format!("the drive failed: {e}\n{}", project.tree(run.id)))?
        }
    };
    if outcome.status != RunStatus::Succeeded {
        let reasons: Vec<String> = events(project.store.as_ref(), run.id)
            .iter()
            .filter_map(|e| e.payload.get("reason").map(|r| r.to_string()))
            .collect();
        return Err(format!(
            "the run ended {:?}:\n{}\nreasons:\n{}",
            outcome.status,
            project.tree(run.id),
            reasons.join("\n")
        ));
    }
    let all = events(project.store.as_ref(), run.id);
    let mut merges: HashMap<String, usize> = HashMap::new();
    for event in &all {
        if event.kind == EventKind::Log {
            let tag = event.payload["tag"].as_str().unwrap_or("");
            let message = event.payload["message"].as_str().unwrap_or("");
            if tag == "RESCAN" || tag == "STALL" {
                return Err(format!("{tag}: {message}\n{}", project.tree(run.id)));
            }
            if tag == "VERDICT"
                && let Some(rest) = message.strip_prefix("✓  workstream ")
                && let Some((ws, _)) = rest.split_once(" merged into")
            {
                *merges.entry(ws.to_string()).or_default() += 1;
            }
        }
        if event.kind == EventKind::Alert {
            return Err(format!("an ALERT: {}", event.payload));
        }
    }
    for (g, i, _) in case.workstreams() {
        let id = ws_id(g, i);
        match merges.get(&id) {
            Some(1) => {}
            other => return Err(format!("{id} merged {other:?} times")),
        }
    }
    if merges.len() != case.total() {
        return Err(format!(
            "merged {merges:?}, expected {} workstreams",
            case.total()
        ));
    }
    // Events are numbered in the order they were written, with no gap across the stop.
    if all.windows(2).any(|w| w[0].seq >= w[1].seq) {
        return Err("events out of order".into());
    }
    let branch = outcome.branch.ok_or("no branch")?;
    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    for (g, i, stream) in case.workstreams() {
        for t in 0..stream.tasks {
            let (path, content) = slice_file(&task_title(g, i, t));
            expected.insert(path, content);
        }
    }
    let mut found: BTreeMap<String, String> = BTreeMap::new();
    for path in expected.keys() {
        if let Some(text) = project.file_on(&branch, path) {
            found.insert(path.clone(), text);
        }
    }
    if found != expected {
        return Err(format!(
            "the integration tree differs:\nfound {found:?}\nexpected {expected:?}"
        ));
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("AGENCY_LIVENESS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6)
}

#[test]
fn generated_plans_always_end_with_every_workstream_merged_once() {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        max_shrink_iters: 64,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&case(32), |case| {
            check(&case).map_err(proptest::test_runner::TestCaseError::fail)
        })
        .unwrap();
}

/// The plain wide plans that stalled: 4, 5, 6, 8, 16 and 32 parallel workstreams finishing together, on the
/// default concurrency.
#[test]
fn wide_parallel_plans_succeed() {
    for width in [4, 5, 6, 8, 16, 32] {
        let plain = Stream {
            squad: false,
            tasks: 1,
            flaky: false,
            verify: false,
        };
        let case = Case {
            groups: vec![vec![plain; width]],
            concurrency: 4,
            interrupt_ms: None,
        };
        if let Err(problem) = check(&case) {
            panic!("{width} parallel workstreams: {problem}");
        }
    }
}

/// An agent that records nothing for longer than the idle limit is reported once with an ALERT naming
/// it; the run still goes on when it wakes up.
#[test]
fn a_silent_agent_raises_one_alert_and_the_run_goes_on() {
    use std::sync::Arc;

    use agency_core::Tier;

    let project = Project::new();
    let slow = |tier: Tier,
                builtin: Arc<dyn agency_exec::runtime::Runtime>|
     -> Arc<dyn agency_exec::runtime::Runtime> {
        if tier == Tier::T4 {
            Arc::new(crate::support::Slow {
                inner: builtin,
                delay: Duration::from_millis(1500),
            })
        } else {
            builtin
        }
    };
    let engine = project
        .runner_for(include_str!("../scripts/simple.yaml"))
        .auto_approve(true)
        .runtime(slow)
        .options(|options| options.agent_idle = Some(Duration::from_millis(400)))
        .engine();
    let run = engine.start(GOAL).unwrap();
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(crate::support::drive(&engine, run.id));
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let alerts: Vec<_> = project
        .events_of(run.id, EventKind::Alert)
        .into_iter()
        .filter(|e| e.payload["source"] == "agent_idle")
        .collect();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    crate::support::assert_pact_alert(&alerts[0].payload, "agent_idle");
    let issue = alerts[0].payload["issue"].as_str().unwrap();
    assert!(
        issue.starts_with("t4 fix-add (test-runner) has recorded nothing for"),
        "{issue}"
    );
}

/// A runner killed between writing a run's record and its plan brief left a run with nothing to do; a
/// resumed drive starts it where it stopped instead of waiting for ever.
#[test]
fn a_run_whose_start_was_cut_short_is_started_by_its_resume() {
    let project = Project::new();
    let base = project.repo.head_rev().unwrap();
    let mut new = agency_store::NewRun::new(GOAL, project.repo.root().display().to_string());
    new.base_rev = Some(base);
    let run = agency_store::Blackboard::create_run(project.store.as_ref(), new).unwrap();
    let engine = project.engine(include_str!("../scripts/simple.yaml"), config(), true);
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(crate::support::drive(&engine, run.id));
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
}

/// A run that cannot move (here: its plan brief escalated with no gate to decide it) is reported with one
/// ALERT naming what waits, not silence and not an ALERT every few seconds.
#[test]
fn a_stalled_run_raises_exactly_one_alert_naming_what_waits() {
    use agency_core::BriefStatus;
    use agency_core::event::NewEvent;
    use agency_store::Blackboard;

    let project = Project::new();
    let engine = project.engine(include_str!("../scripts/simple.yaml"), config(), true);
    let run = engine.start(GOAL).unwrap();
    let plan = project.briefs(run.id).pop().unwrap();
    let event = NewEvent::new(
        run.id,
        EventKind::Log,
        json!({ "level": "verbose", "tag": "TEST", "message": "stuck" }),
    );
    project
        .store
        .update_brief_status(plan.id, BriefStatus::Pending, BriefStatus::Escalated, event)
        .unwrap();
    let driving = crate::support::Background::drive(engine, run.id);
    let alert = crate::support::wait_for("the STALL alert", || {
        project
            .events_of(run.id, EventKind::Alert)
            .into_iter()
            .find(|e| e.payload["source"] == "stall")
    });
    crate::support::assert_pact_alert(&alert.payload, "stall");
    // Quiet for well past the grace period again: still one.
    std::thread::sleep(Duration::from_secs(7));
    driving.stop();
    let alerts = project
        .events_of(run.id, EventKind::Alert)
        .into_iter()
        .filter(|e| e.payload["source"] == "stall")
        .count();
    assert_eq!(alerts, 1);
    let issue = alert.payload["issue"].as_str().unwrap();
    assert!(issue.contains("t1 plan (planner) is escalated"), "{issue}");
}

/// A runner killed after T1 accepted but before it marked the run succeeded left a run with nothing to do;
/// its resume finishes it instead of stalling (found by the kill-9 soak in CI).
#[test]
fn a_run_accepted_before_its_runner_stopped_succeeds_on_resume() {
    use agency_store::Blackboard;

    let project = Project::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let script = include_str!("../scripts/simple.yaml");
    let (run, _) = runtime.block_on(project.succeed(script, config()));
    // As if the runner had stopped between the acceptance and the run's status.
    project
        .store
        .set_run_status(run.id, None, RunStatus::Running)
        .unwrap();
    let engine = project.engine(script, config(), true);
    let outcome = runtime.block_on(crate::support::drive(&engine, run.id));
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    assert!(outcome.branch.is_some());
}
