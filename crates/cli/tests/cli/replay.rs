//! `agency run --record` against the fake Anthropic server, then `agency run --replay` with the server
//! stopped: the replay reaches the same integration tree offline, a secret of the environment is not in the
//! cassette, and a change to what the model is asked stops the replay at the first request that differs.

use std::path::Path;
use std::time::Duration;

use agency_testkit::{FakeAnthropic, Reply};
use serde_json::json;

use crate::support::{Repo, finish, runtime_of};

/// A secret in the runner's environment (its name looks secret) that also reaches the prompts, through
/// the goal.
const SECRET: &str = "tok-5ecret-value-that-must-not-leak";

fn plan() -> serde_json::Value {
    json!({
        "status": "done",
        "summary": "One workstream: fix the off-by-one in page().",
        "output": {
            "run_id": "00000000-0000-4000-8000-000000000000",
            "goal_anchor": "(filled in by agency)",
            "complexity": "low",
            "retry_budget_multiplier": 1,
            "workstreams": [{
                "id": "ws-fix-pagination",
                "name": "fix-page-offset",
                "domain": "backend",
                "tier_path": ["t4", "t5"],
                "parallel_group": "A",
                "notes": "page(items, number, size) counts pages from 1 but computes the start as number * size. Fix the start index in pagination.py; do not touch the tests.",
                "variety": {"novelty": 1, "scope": 2, "uncertainty": 2, "risk": 2},
                "shallower_path_reason": "one expression in one file",
                "contract": {
                    "done_when": "page(items, 1, n) returns the first n items and every test in test_pagination.py passes unchanged",
                    "verify": "python3 -m unittest -q",
                    "failure_modes": ["the test is edited to match the bug instead of fixing the code"]
                }
            }],
            "parallelism": {"groups": {"A": ["ws-fix-pagination"]}, "sequence": ["A"]},
            "self_critique_summary": "The fix is local to page()."
        }
    })
}

fn implementer() -> Vec<Reply> {
    vec![
        Reply::tool_use(
            "submit_teachback",
            json!({
                "building": "a fix for page() so that page numbers count from 1",
                "key_constraints": ["do not edit test_pagination.py"],
                "interfaces": ["page(items, number, size) -> list"],
                "approach": "compute the start as (number - 1) * size, then run the unit tests",
                "most_likely_wrong": "whether page 0 must keep working",
                "least_confident": "the behaviour past the last page",
                "first_action": "read pagination.py"
            }),
        ),
        Reply::tool_use("read_file", json!({"path": "pagination.py"})),
        Reply::tool_use(
            "edit_file",
            json!({
                "path": "pagination.py",
                "old_string": "    start = number * size\n",
                "new_string": "    start = (number - 1) * size\n"
            }),
        ),
        Reply::tool_use(
            "run_command",
            json!({"argv": ["python3", "-m", "unittest", "-q"]}),
        ),
        Reply::tool_use(
            "report_result",
            json!({
                "status": "done",
                "summary": "page() now starts at (number - 1) * size; the tests pass.",
                "evidence": [{"path": "pagination.py", "quote": "    start = (number - 1) * size"}]
            }),
        ),
    ]
}

/// The fake server, answering each conversation by the first words of its first user message.
fn server() -> FakeAnthropic {
    let server = FakeAnthropic::start(vec![Reply::tool_use("report_result", plan())]).expect("fake server");
    server.set_rule(
        "## The agent's teachback",
        vec![Reply::tool_use(
            "review_teachback",
            json!({"approved": true, "note": "Matches the brief."}),
        )],
    );
    server.set_rule(
        "Goal under sign-off:",
        vec![Reply::text(
            "page() counts pages from 1 and the tests pass.\nVERDICT: accept\nmissing: none",
        )],
    );
    server.set_rule("implementer in workstream", implementer());
    server
}

/// The branch a successful run names, and its tree.
fn result_tree(repo: &Repo, output: &str) -> String {
    let branch = output
        .lines()
        .find_map(|l| l.split("review and merge branch ").nth(1))
        .unwrap_or_else(|| panic!("no branch in:\n{output}"))
        .trim()
        .to_string();
    repo.git_output(&["rev-parse", &format!("{branch}^{{tree}}")])
        .trim()
        .to_string()
}

fn cassette_text(dir: &Path) -> String {
    let mut out = String::new();
    for entry in walk(dir) {
        out.push_str(&std::fs::read_to_string(entry).unwrap());
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_recorded_run_replays_offline_to_the_same_tree_and_stops_where_a_request_changed() {
    let server = server();
    let base_url = format!("    base_url: {}", server.base_url());
    let (t4, t4_builtin) = runtime_of("t4", "builtin");
    let (t5, t5_builtin) = runtime_of("t5", "builtin");
    let repo = Repo::demo(&[
        ("    # base_url: https://api.anthropic.com", &base_url),
        (t4, &t4_builtin),
        (t5, &t5_builtin),
    ]);
    let goal = format!("Fix the pagination bug (ticket {SECRET})");
    let env = [
        ("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-the-fake-server"),
        ("MY_SERVICE_TOKEN", SECRET),
    ];
    let recorded = repo.spawn(&["run", &goal, "--auto-approve", "--record"], &env);
    let (code, output) = finish(recorded, Duration::from_secs(120));
    assert_eq!(code, Some(0), "{output}");
    let tree = result_tree(&repo, &output);
    assert!(output.contains("recording its model calls in"), "{output}");

    let cassettes = repo.path().join(".agency").join("cassettes");
    let runs: Vec<_> = std::fs::read_dir(&cassettes).unwrap().collect();
    assert_eq!(runs.len(), 1);
    let cassette = runs.into_iter().next().unwrap().unwrap().path();
    let text = cassette_text(&cassette);
    assert!(!text.contains(SECRET), "the secret is in the cassette");
    assert!(!text.contains("sk-ant-dummy"), "the key is in the cassette");
    assert!(
        text.contains("[redacted:MY_SERVICE_TOKEN]"),
        "the goal never reached a call"
    );
    let files = walk(&cassette);
    for role in ["planner", "implementer", "teachback-reviewer", "judge"] {
        assert!(
            files
                .iter()
                .any(|f| f.to_string_lossy().contains(&format!("-{role}-t0"))),
            "no {role} call in {files:?}"
        );
    }
    let calls = server.message_requests().len();
    assert_eq!(files.len() - 1, calls, "{files:?}");

    // Offline: the server is gone and no key is set.
    drop(server);
    let run = cassette.file_name().unwrap().to_string_lossy().into_owned();
    let replay_env = [("MY_SERVICE_TOKEN", SECRET)];
    let replayed = repo.spawn(&["run", "--replay", &run[..8]], &replay_env);
    let (code, output) = finish(replayed, Duration::from_secs(120));
    assert_eq!(code, Some(0), "{output}");
    assert!(
        output.contains(&format!(
            "replaying run {run} offline: {calls} recorded model calls"
        )),
        "{output}"
    );
    assert_eq!(result_tree(&repo, &output), tree, "{output}");

    // The file the implementer reads changed: its next request differs, and the replay says where.
    let source = repo.path().join("pagination.py");
    let mut changed = std::fs::read_to_string(&source).unwrap();
    changed.push_str("# changed after the recording\n");
    std::fs::write(&source, changed).unwrap();
    repo.commit("a change after the recording");
    let replayed = repo.spawn(&["run", "--replay", &run], &replay_env);
    let (code, output) = finish(replayed, Duration::from_secs(120));
    assert_eq!(code, Some(7), "{output}");
    assert!(
        output.contains("replay diverged at brief ws-fix-pagination/t4/"),
        "{output}"
    );
    assert!(output.contains("attempt 0, role implementer, turn 3"), "{output}");
    assert!(output.contains("- recorded: (no such line)"), "{output}");
    assert!(output.contains("+ now:      "), "{output}");
    assert!(output.contains("# changed after the recording"), "{output}");
}

#[test]
fn a_replay_of_a_missing_cassette_names_what_it_looked_for() {
    let repo = Repo::demo(&[]);
    let out = repo.agency(&["run", "--replay", "abc123"]).fails_with(3);
    assert!(
        out.stderr().contains("no cassette named \"abc123\""),
        "{}",
        out.stderr()
    );
    // A replay is a fresh offline run: no script, no resume, no background runner.
    let out = repo.agency(&["run", "--replay", "abc123", "--script", "s.yaml"]);
    assert_ne!(out.code(), Some(0));
    assert!(out.stderr().contains("cannot be used with"), "{}", out.stderr());
}

/// A recorded run that stops names the command that resumes it with `--record`, so the resumed run keeps
/// recording into the same cassette: in the stop's hint and in `agency runs`.
#[test]
fn a_recorded_runs_resume_hint_keeps_recording() {
    let (repo, script) = Repo::calculator(include_str!("../../../engine/tests/scripts/simple.yaml"));
    let script = script.to_str().unwrap();
    let runner = repo.spawn(
        &[
            "run",
            crate::support::CALCULATOR_GOAL,
            "--script",
            script,
            "--record",
        ],
        &[],
    );
    let store = agency_store::SqliteBlackboard::open(repo.db()).unwrap();
    let run = crate::support::run_at_plan_gate(&store);
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &runner.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let (code, output) = finish(runner, Duration::from_secs(30));
    assert_eq!(code, Some(130), "{output}");
    let resume = format!(
        "agency run --resume {} --script {} --record",
        run.short(),
        std::fs::canonicalize(script).unwrap().display()
    );
    assert!(output.contains(&format!("`{resume}` continues it")), "{output}");
    let listed = repo.agency(&["runs"]).success().stdout();
    assert!(listed.contains(&resume), "{listed}");
}
