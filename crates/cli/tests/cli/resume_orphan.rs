//! A runner killed with SIGKILL cannot stop its agents: a command agent (its own process group) goes on
//! running. `agency run --resume` stops what is left of it — its whole group — before it starts the brief
//! again, says so in the log, and the run completes with the agent started once more.

use std::time::{Duration, Instant};

use agency_core::event::EventKind;
use agency_core::{Brief, BriefStatus, RunId, Tier};
use agency_engine::leftovers::artifact_name;
use agency_exec::process::{ProcessIdentity, stop_leftover};
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};

use crate::support::{CALCULATOR_GOAL, Repo, events, runtime_of, wait_for};

/// The simple profile (T1 → T4 → T5 → accept), its implementer only teaching back: the work is the
/// command's.
fn script() -> String {
    let simple = include_str!("../../../engine/tests/scripts/simple.yaml");
    let (head, _) = simple
        .split_once("  - role: implementer")
        .expect("the simple script has an implementer");
    let (_, judge) = simple
        .split_once("  - role: judge\n    reply:\n      text: |\n        Looks right.")
        .expect("the simple script has a judge");
    format!(
        "{head}  - role: implementer\n    reply:\n      tool_calls:\n        - name: submit_teachback\n          \
         input:\n            building: \"a fix for add.sh\"\n            key_constraints: [\"only add.sh\"]\n            \
         approach: \"make it add\"\n            most_likely_wrong: \"nothing\"\n            least_confident: \
         \"negative numbers\"\n\n  - role: judge\n    reply:\n      text: |\n        Looks right.{judge}"
    )
}

/// The command agent: started the first time, it starts a helper in its group, writes both pids to
/// `STATE/pids` and hangs (an agent the runner's death left mid-work); started again, it fixes add.sh and
/// reports.
const AGENT: &str = r#"state="$1"
if mkdir "$state/first" 2>/dev/null; then
  sleep 300 &
  echo "$$ $!" > "$state/pids.tmp" && mv "$state/pids.tmp" "$state/pids"
  wait
  exit 1
fi
printf '# add A B: prints A + B\necho $(($1 + $2))\n' > add.sh
echo '```json'
echo '{"status": "done", "summary": "add.sh adds.", "evidence": [{"path": "add.sh"}]}'
echo '```'
"#;

/// Whether `pid` is a live process (not gone, not a zombie nobody reaped).
fn live(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.rsplit_once(')')?;
            rest.split_whitespace()
                .next()
                .map(|state| state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

/// Stops the agent's group if the test fails before agency did (by identity, so only what it started).
struct Cleanup(Option<ProcessIdentity>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(identity) = &self.0 {
            let _ = stop_leftover(identity, Duration::from_millis(200));
        }
    }
}

/// A run whose runner was killed with SIGKILL while its command agent worked, the agent still running.
struct Orphaned {
    repo: Repo,
    /// The agent's state directory (its pids, whether it started before).
    state: tempfile::TempDir,
    script: String,
    store: SqliteBlackboard,
    run: RunId,
    /// The implementer's brief, in flight at the kill.
    brief: Brief,
    /// The agent (its group's leader) and the helper it started in its group.
    leader: u32,
    helper: u32,
    /// How many events the run had just after the kill.
    before: usize,
    cleanup: Cleanup,
}

/// Starts `agency run` on the calculator with T4 on the command agent, team.yaml edited by `edits` too, and
/// kills it with SIGKILL once the agent is at work and recorded.
fn orphaned_agent(edits: &[(&str, &str)]) -> Orphaned {
    let (repo, script_path) = Repo::calculator(&script());
    let state = tempfile::tempdir().unwrap();
    let agent = state.path().join("agent.sh");
    std::fs::write(&agent, AGENT).unwrap();
    let (line, on) = runtime_of("t4", "command");
    let command = format!(
        "    command: [sh, {:?}, {:?}]",
        agent.display().to_string(),
        state.path().display().to_string()
    );
    let mut all = vec![
        (line, on.as_str()),
        ("    # command: [aider, --yes-always]", &command),
        // Unsandboxed: the agent reports its host process ids and writes them outside its worktree, and a
        // sandboxed one can do neither (its ids are its PID namespace's; /tmp is its own).
        (
            "  mode: on                        # off:",
            "  mode: off                       # off:",
        ),
    ];
    all.extend_from_slice(edits);
    repo.edit_team(&all);
    repo.agency(&["config", "check"]).success();
    let script = script_path.to_str().unwrap().to_owned();

    let mut runner = repo.spawn(
        &["run", CALCULATOR_GOAL, "--auto-approve", "--script", &script],
        &[],
    );
    let pids_file = state.path().join("pids");
    let deadline = Instant::now() + Duration::from_secs(60);
    let (leader, helper) = loop {
        if let Some(pids) = std::fs::read_to_string(&pids_file).ok().and_then(|text| {
            let (a, b) = text.trim().split_once(' ')?;
            Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?))
        }) {
            break pids;
        }
        if let Some(status) = runner.try_wait().unwrap() {
            let (_, output) = crate::support::finish(runner, Duration::from_secs(1));
            panic!("the runner ended ({status}) before its agent started:\n{output}");
        }
        assert!(
            Instant::now() < deadline,
            "the command agent did not start within 60s"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let cleanup = Cleanup(ProcessIdentity::of(leader).ok());

    // The runner recorded who its agent is.
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store.list_runs().unwrap()[0].id;
    let brief = wait_for(
        || {
            store
                .list_briefs(run)
                .unwrap()
                .into_iter()
                .find(|b| b.tier == Tier::T4 && b.status == BriefStatus::Running)
        },
        "the implementer's brief",
    );
    let recorded = wait_for(
        || store.latest_artifact(run, &artifact_name(brief.id)).unwrap(),
        "the agent's process record",
    );
    let identity: ProcessIdentity = serde_json::from_slice(&recorded.bytes).unwrap();
    assert_eq!((identity.pid, identity.pgid), (leader, leader));
    assert_eq!(Some(&identity), cleanup.0.as_ref());

    // SIGKILL: the runner cannot stop its agent, which goes on.
    runner.kill().unwrap();
    runner.wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(live(leader) && live(helper), "the agent outlives a killed runner");
    let before = events(&store, run).len();
    Orphaned {
        repo,
        state,
        script,
        store,
        run,
        brief,
        leader,
        helper,
        before,
        cleanup,
    }
}

impl Orphaned {
    /// Checks that the agent's whole group is gone, stopped by one `ORPHAN` record (SIGTERM sufficed)
    /// before the brief was spawned again, and that the restarted brief was done by the agent's second
    /// life without a failure or a retry.
    fn assert_stopped_then_restarted(&mut self, left_by: Option<&str>) {
        let (store, run, brief) = (&self.store, self.run, &self.brief);
        assert!(
            !live(self.leader) && !live(self.helper),
            "the killed runner's agent is gone"
        );
        let after = events(store, run);
        let after = &after[self.before..];
        let orphan: Vec<_> = after
            .iter()
            .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == "ORPHAN")
            .collect();
        assert_eq!(orphan.len(), 1, "{orphan:?}");
        let mut both = [self.leader, self.helper];
        both.sort_unstable();
        assert_eq!(orphan[0].brief, Some(brief.id));
        assert_eq!(orphan[0].payload["found"], "stopped");
        assert_eq!(orphan[0].payload["pid"], self.leader);
        assert_eq!(orphan[0].payload["members"], serde_json::json!(both));
        assert_eq!(orphan[0].payload["killed"], false, "SIGTERM was enough");
        let message = orphan[0].payload["message"].as_str().unwrap();
        assert!(message.contains("stopped 2 processes"), "{message}");
        if let Some(holder) = left_by {
            assert!(message.contains(&format!("left by {holder}")), "{message}");
        }
        let restarted = after
            .iter()
            .position(|e| e.kind == EventKind::Spawned && e.brief == Some(brief.id))
            .unwrap();
        let stopped_at = after.iter().position(|e| e.payload["tag"] == "ORPHAN").unwrap();
        assert!(stopped_at < restarted, "stopped before the brief started again");
        // Started again, the same brief went on (its teachback was accepted before) and its agent did the
        // work: no failure, no retry.
        assert!(
            !after
                .iter()
                .any(|e| matches!(e.kind, EventKind::Failed | EventKind::Retried)),
            "the restarted brief failed"
        );
        assert_eq!(store.get_brief(brief.id).unwrap().status, BriefStatus::Done);
        assert!(self.state.path().join("first").is_dir());
        self.cleanup.0 = None;
    }

    fn resume(&self) -> crate::support::Run {
        self.repo
            .agency(&[
                "run",
                "--resume",
                &self.run.short(),
                "--auto-approve",
                "--script",
                &self.script,
            ])
            .success()
    }
}

#[test]
fn resume_stops_the_agent_a_killed_runner_left_running_before_starting_it_again() {
    let mut orphaned = orphaned_agent(&[]);
    let killed = orphaned.brief.claimed_by.clone().unwrap();
    let resumed = orphaned.resume();
    assert!(resumed.stdout().contains("succeeded"), "{}", resumed.stdout());
    let (store, run) = (&orphaned.store, orphaned.run);
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);
    orphaned.assert_stopped_then_restarted(Some(&killed));
    // The agent's second life did the work.
    assert_eq!(
        orphaned
            .repo
            .git_output(&["show", &format!("agency/{}/integration:add.sh", run.short())]),
        "# add A B: prints A + B\necho $(($1 + $2))\n"
    );
}

/// The same when the runner taking over is a worker whose lease check finds the dead driver's claim: it
/// stops the agent before it starts the brief again itself (the driver, resumed, then ends the run).
#[test]
fn a_worker_taking_back_a_dead_runners_claim_stops_its_agent_first() {
    let mut orphaned = orphaned_agent(&[("  claim_lease_seconds: 600 ", "  claim_lease_seconds: 1 ")]);
    let (run, brief) = (orphaned.run, orphaned.brief.id);
    let worker = orphaned
        .repo
        .spawn(&["worker", &run.short(), "--script", &orphaned.script], &[]);
    let store = &orphaned.store;
    let completed = || {
        events(store, run)[orphaned.before..]
            .iter()
            .any(|e| e.kind == EventKind::Completed && e.brief == Some(brief))
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !completed() {
        if Instant::now() > deadline {
            let (_, output) = crate::support::finish(worker, Duration::ZERO);
            let log = orphaned.repo.agency(&["watch", &run.short(), "--verbose"]);
            panic!(
                "the worker did not complete the brief within 60s: {output}\nlog:\n{}",
                log.stdout()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let reclaimed = events(store, run)[orphaned.before..]
        .iter()
        .any(|e| e.kind == EventKind::Log && e.payload["tag"] == "RECLAIMED");
    assert!(reclaimed, "taken back because its lease ran out");

    // The driver resumed, the run ends, and so does the worker.
    orphaned.resume();
    let (code, output) = crate::support::finish(worker, Duration::from_secs(30));
    assert_eq!(code, Some(0), "{output}");
    assert_eq!(orphaned.store.get_run(run).unwrap().status, RunStatus::Succeeded);
    orphaned.assert_stopped_then_restarted(None);
}
