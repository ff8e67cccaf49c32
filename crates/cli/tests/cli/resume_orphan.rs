//! A runner killed with SIGKILL cannot stop its agents: a command agent (its own process group) goes on
//! running. `agency run --resume` stops what is left of it — its whole group — before it starts the brief
//! again, says so in the log, and the run completes with the agent started once more.

use std::path::Path;
use std::time::{Duration, Instant};

use agency_core::event::EventKind;
use agency_core::{BriefStatus, Tier};
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

#[test]
fn resume_stops_the_agent_a_killed_runner_left_running_before_starting_it_again() {
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
    repo.edit_team(&[(line, &on), ("    # command: [aider, --yes-always]", &command)]);
    repo.agency(&["config", "check"]).success();
    let script = script_path.to_str().unwrap();

    let mut runner = repo.spawn(
        &["run", CALCULATOR_GOAL, "--auto-approve", "--script", script],
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
    let mut cleanup = Cleanup(ProcessIdentity::of(leader).ok());

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

    let resumed = repo
        .agency(&[
            "run",
            "--resume",
            &run.short(),
            "--auto-approve",
            "--script",
            script,
        ])
        .success();
    assert!(resumed.stdout().contains("succeeded"), "{}", resumed.stdout());
    assert_eq!(store.get_run(run).unwrap().status, RunStatus::Succeeded);

    // The leftover group was stopped before the brief started again, and the log says so.
    assert!(
        !live(leader) && !live(helper),
        "the killed runner's agent is gone"
    );
    let after = events(&store, run);
    let orphan: Vec<_> = after[before..]
        .iter()
        .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == "ORPHAN")
        .collect();
    assert_eq!(orphan.len(), 1, "{orphan:?}");
    let mut both = [leader, helper];
    both.sort_unstable();
    assert_eq!(orphan[0].brief, Some(brief.id));
    assert_eq!(orphan[0].payload["found"], "stopped");
    assert_eq!(orphan[0].payload["pid"], leader);
    assert_eq!(orphan[0].payload["members"], serde_json::json!(both));
    assert_eq!(orphan[0].payload["killed"], false, "SIGTERM was enough");
    let message = orphan[0].payload["message"].as_str().unwrap();
    assert!(message.contains("stopped 2 processes"), "{message}");
    let restarted = after[before..]
        .iter()
        .position(|e| e.kind == EventKind::Spawned && e.brief == Some(brief.id))
        .unwrap();
    let stopped_at = after[before..]
        .iter()
        .position(|e| e.payload["tag"] == "ORPHAN")
        .unwrap();
    assert!(stopped_at < restarted, "stopped before the brief started again");
    // Started again, the same brief went on (its teachback was accepted before) and its agent did the work:
    // no failure, no retry.
    assert!(
        !after[before..]
            .iter()
            .any(|e| matches!(e.kind, EventKind::Failed | EventKind::Retried)),
        "the restarted brief failed"
    );
    assert_eq!(store.get_brief(brief.id).unwrap().status, BriefStatus::Done);
    // The agent's second life did the work.
    assert_eq!(
        repo.git_output(&["show", &format!("agency/{}/integration:add.sh", run.short())]),
        "# add A B: prints A + B\necho $(($1 + $2))\n"
    );
    assert!(Path::new(&state.path().join("first")).is_dir());
    cleanup.0 = None;
}
