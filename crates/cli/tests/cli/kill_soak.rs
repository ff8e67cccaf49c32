//! Crash safety, by trial: a scripted run of parallel workstreams whose runner is killed with SIGKILL at a
//! random moment, then resumed (and killed again, and resumed) until it ends. Every trial must end
//! `succeeded` within a bounded number of resumes, with each workstream merged exactly once (one merge
//! commit on the integration branch, one `merged/<ws>` record), the events in order, every workstream's file on the integration branch, and — after `agency gc` — no worktree, no
//! run branch but the integration branch and no driver left behind.
//!
//! `AGENCY_KILL_TRIALS` sets the number of trials (default 12 in the suite; a soak sets more), and
//! `AGENCY_KILL_FIRST` the number of the first (to replay one).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use agency_core::event::EventKind;
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
use serde_json::json;

use crate::support::{CALCULATOR_GOAL, Repo, events, finish};

const WORKSTREAMS: usize = 6;

/// A plan of `WORKSTREAMS` parallel workstreams, each writing its own file.
fn script() -> String {
    let variety = json!({ "novelty": 1, "scope": 1, "uncertainty": 1, "risk": 1 });
    let ids: Vec<String> = (0..WORKSTREAMS).map(|i| format!("ws-{i}")).collect();
    let workstreams: Vec<_> = ids
        .iter()
        .map(|id| {
            json!({
                "id": id, "name": format!("write-{id}"), "domain": "d", "tier_path": ["t4", "t5"],
                "parallel_group": "A", "variety": variety, "contract": { "done_when": "its file exists" }
            })
        })
        .collect();
    let mut rules = vec![
        json!({ "role": "judge", "brief": "run/t1/accept",
                "reply": { "text": "all in\nVERDICT: accept\nmissing: none\n" } }),
        json!({ "role": "planner", "reply": { "tool_calls": [{ "name": "report_result", "input": {
            "status": "done", "summary": "parallel files",
            "output": {
                "run_id": "00000000-0000-4000-8000-000000000000", "goal_anchor": "(filled in)",
                "complexity": "low", "retry_budget_multiplier": 1, "workstreams": workstreams,
                "parallelism": { "groups": { "A": ids }, "sequence": ["A"] },
                "self_critique_summary": "independent"
            }
        }}]}}),
    ];
    for id in &ids {
        let path = format!("out/{id}.txt");
        rules.push(
            json!({ "role": "implementer", "brief": format!("{id}/t4/write-{id}"),
            "reply": { "tool_calls": [
                { "name": "write_file", "input": { "path": path, "content": format!("{id}\n") } },
                { "name": "report_result", "input": { "status": "done", "summary": "written",
                                                      "evidence": [{ "path": path }] } }
            ]}}),
        );
    }
    rules.push(json!({ "role": "judge", "reply": { "text": "Fine.\nVERDICT: accept\nmissing: none\n" } }));
    rules.push(json!({ "role": "auditor", "reply": { "text": "Fine.\nVERDICT: accept\nmissing: none\n" } }));
    json!({ "model": "scripted-kill", "replies": rules }).to_string()
}

/// A small deterministic generator (an LCG), so a failing trial is reproduced by its number.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn trials() -> u64 {
    std::env::var("AGENCY_KILL_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12)
}

#[test]
fn runs_killed_at_random_moments_resume_to_the_same_result() {
    let first: u64 = std::env::var("AGENCY_KILL_FIRST")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    for trial in first..first + trials() {
        one_trial(trial);
    }
}

fn one_trial(trial: u64) {
    let mut dice = Dice(trial + 1);
    let (repo, script) = Repo::calculator(&script());
    let script = script.to_str().unwrap().to_string();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let mut args: Vec<String> = vec![
        "run".into(),
        CALCULATOR_GOAL.into(),
        "--auto-approve".into(),
        "--script".into(),
        script.clone(),
    ];
    let mut kills = 0;
    let mut ended = None;
    for attempt in 0..12 {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut runner = repo.spawn(&argv, &[]);
        // Killed at a random moment in its first 1.5 s, the last attempts left to finish.
        let kill_at = (attempt < 6).then(|| Duration::from_millis(50 + dice.below(1500)));
        let started = Instant::now();
        let mut killed = false;
        while runner.try_wait().unwrap().is_none() {
            if let Some(at) = kill_at
                && started.elapsed() >= at
            {
                runner.kill().unwrap(); // SIGKILL
                let _ = runner.wait();
                killed = true;
                kills += 1;
                break;
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = runner.kill();
                let run = store.list_runs().unwrap().first().map(|r| r.id);
                let state = run.map(|run| {
                    let tree = repo.agency(&["inspect", &run.short(), "--all"]).stdout();
                    let last: Vec<String> = events(&store, run)
                        .iter()
                        .rev()
                        .take(25)
                        .map(|e| format!("{} {} {}", e.seq, e.kind.as_str(), e.payload))
                        .collect();
                    format!("{tree}\nnewest events:\n{}", last.join("\n"))
                });
                panic!(
                    "trial {trial}, attempt {attempt}: a runner hung\n{}",
                    state.unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let (code, output) = finish(runner, Duration::from_secs(5));
        let Some(run) = store.list_runs().unwrap().first().map(|r| r.id) else {
            // Killed before the run was recorded: start again.
            continue;
        };
        if !killed {
            assert_eq!(code, Some(0), "trial {trial}, attempt {attempt}:\n{output}");
        }
        let status = store.get_run(run).unwrap().status;
        if status.is_terminal() {
            ended = Some((run, status));
            break;
        }
        args = vec![
            "run".into(),
            "--resume".into(),
            run.to_string(),
            "--auto-approve".into(),
            "--script".into(),
            script.clone(),
        ];
    }
    let (run, status) =
        ended.unwrap_or_else(|| panic!("trial {trial}: the run did not end after 12 runners"));
    assert_eq!(status, RunStatus::Succeeded, "trial {trial} ({kills} kills)");

    let all = events(&store, run);
    assert!(
        all.windows(2).all(|w| w[0].seq < w[1].seq),
        "trial {trial}: events out of order"
    );
    for event in &all {
        assert_ne!(event.kind, EventKind::Alert, "trial {trial}: {}", event.payload);
    }
    // Merged once: one merge commit of it on the integration branch (a kill between the merge and its log
    // line leaves no line, and the resumed runner finds the merge done), and one `merged/<ws>` record.
    let mut merges: HashMap<String, usize> = HashMap::new();
    let subjects = repo.git_output(&[
        "log",
        "--merges",
        "--format=%s",
        &format!("agency/{}/integration", run.short()),
    ]);
    for subject in subjects.lines() {
        if let Some(rest) = subject.strip_prefix("merge workstream ")
            && let Some((ws, _)) = rest.split_once(' ')
        {
            *merges.entry(ws.to_string()).or_default() += 1;
        }
    }
    let records: Vec<String> = store
        .list_artifacts(run, None)
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .filter(|n| n.starts_with("merged/"))
        .collect();
    for i in 0..WORKSTREAMS {
        let id = format!("ws-{i}");
        assert_eq!(
            merges.get(&id),
            Some(&1),
            "trial {trial} ({kills} kills): {id} merged {merges:?}"
        );
        assert_eq!(
            records.iter().filter(|n| **n == format!("merged/{id}")).count(),
            1,
            "trial {trial}: {records:?}"
        );
        let integration = format!("agency/{}/integration:out/{id}.txt", run.short());
        assert_eq!(
            repo.git_output(&["show", &integration]),
            format!("{id}\n"),
            "trial {trial}"
        );
    }

    repo.agency(&["gc"]).success();
    let worktrees = repo.git_output(&["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees.matches("worktree ").count(),
        1,
        "trial {trial}: {worktrees}"
    );
    let branches = repo.git_output(&["branch", "--list", &format!("agency/{}/*", run.short())]);
    let left: Vec<&str> = branches
        .lines()
        .map(str::trim)
        .filter(|b| !b.ends_with("/integration"))
        .collect();
    assert!(left.is_empty(), "trial {trial}: branches left {left:?}");
    assert!(
        store.lock_driver(run, "the test").is_ok(),
        "trial {trial}: a driver still holds the run"
    );
}
