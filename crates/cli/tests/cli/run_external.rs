//! `agency run` with a real external implementer (`tiers.t4.runtime: claude-code`, or `codex`) against the
//! fake model servers, the rest of the run scripted (`--script`). With Claude Code: the implementer is
//! denied a Write while its blocking teachback is pending, teaches back with `agency teachback submit`,
//! which waits for the review the runner makes from the blackboard and prints it — corrections first (the
//! gate quotes them when it denies the next Write), then, resubmitted, approval; the Write then runs in the
//! implementer's own worktree, agency verifies and merges the fix, and the run succeeds. With Codex: the
//! same without the corrections round, its teachback command run inside Codex's sandbox.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use agency_core::event::EventKind;
use agency_core::{Event, Tier};
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
use agency_testkit::{FakeAnthropic, FakeOpenAi, RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::hook_claude::run_with_deadline;
use crate::hook_support::e2e_client;
use crate::support::{Repo, demo_dir, events, runtime_of};

pub const GOAL: &str =
    "Fix the pagination bug: page 1 must start at the first item, and every test must pass.";

const FIXED: &str = "\"\"\"Split a list into pages for display.\"\"\"\n\n\ndef page(items, number, size):\n    \
\"\"\"Return page `number` (counted from 1) of `items`, `size` items per page.\"\"\"\n    \
start = (number - 1) * size\n    return items[start:start + size]\n\n\ndef page_count(items, size):\n    \
\"\"\"How many pages `items` fill at `size` items per page.\"\"\"\n    return (len(items) + size - 1) // size\n";

pub const REPORT: &str = "Fixed.\n```json\n{\"status\": \"done\", \"summary\": \"page() starts at (number - 1) * size\", \
\"evidence\": [{\"path\": \"pagination.py\", \"quote\": \"    start = (number - 1) * size\"}]}\n```";

/// The demo repository with T4 on `runtime` and the fast-cheap model (T4's) named `model` at `provider`.
fn repo_with_implementers_on(runtime: &str, provider: &str, model: &str) -> Repo {
    let (line, on) = runtime_of("t4", runtime);
    Repo::demo(&[
        (line, &on),
        ("providers:\n", "providers:\n  openai: {kind: openai}\n"),
        (
            "fast-cheap:\n    provider: anthropic           # a key of providers\n    model: claude-haiku-4-5 ",
            &format!("fast-cheap:\n    provider: {provider}\n    model: {model} "),
        ),
    ])
}

/// The demo's script with a reviewer that asks for corrections of a first draft (a teachback saying
/// `FIRST-DRAFT`) before it approves.
fn script_with_a_correcting_reviewer(repo: &Repo) -> PathBuf {
    let demo = std::fs::read_to_string(demo_dir().join("script.yaml")).unwrap();
    let correcting = "replies:\n  - role: teachback-reviewer\n    contains: FIRST-DRAFT\n    reply:\n      \
        tool_calls:\n        - name: review_teachback\n          input: {approved: false, corrections: \
        [\"say what happens past the last page\"]}\n";
    assert!(demo.contains("replies:\n"));
    let script = demo.replacen("replies:\n", correcting, 1);
    let path = repo.path().join(".agency/script.yaml");
    std::fs::write(&path, script).unwrap();
    path
}

/// `agency teachback submit` as the implementer runs it, one line, with `least` as its least sure part.
fn submit_command(least: &str) -> String {
    format!(
        "{} teachback submit --building 'a fix for page() so that pages count from 1' \
         --constraint 'do not edit test_pagination.py' --constraint 'page_count() stays as it is' \
         --interface 'page(items, number, size) returns a list' \
         --approach 'start at (number - 1) * size' --most-likely-wrong 'whether page 0 must keep working' \
         --least-confident '{least}'",
        env!("CARGO_BIN_EXE_agency")
    )
}

/// What the fake model has Claude Code do, turn by turn.
fn implementer_script() -> Vec<Reply> {
    let write = || Reply::tool_use("Write", json!({"file_path": "pagination.py", "content": FIXED}));
    let bash =
        |command: String| Reply::tool_use("Bash", json!({"command": command, "description": "Teach back"}));
    vec![
        Reply::tool_use("Read", json!({"file_path": "pagination.py"})),
        // Denied: the teachback is blocking and has not been sent.
        write(),
        bash(submit_command("FIRST-DRAFT pages past the last one")),
        // Denied again: the teachback must be corrected first.
        write(),
        bash(submit_command("an empty list past the last page seems right")),
        write(),
        // What the agent's commands see of the runner's environment, and whether the blackboard is there to
        // open (it is not: the hook reaches the gate through the runner's gate service).
        bash("env; for f in ../../agency.db ../../../.agency/agency.db; do test -e $f && echo BLACKBOARD-VISIBLE; done; echo looked".to_string()),
        Reply::text(REPORT),
    ]
}

/// Runs `agency run` with the script at `script` and `env` (the external agent's model endpoint).
pub fn agency_run(repo: &Repo, script: &Path, env: &[(&str, String)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agency"));
    command
        .args([
            "run",
            GOAL,
            "--script",
            script.to_str().unwrap(),
            "--auto-approve",
        ])
        .current_dir(repo.path())
        .env_remove("AGENCY_DB")
        .env_remove("AGENCY_CONFIG")
        .env_remove("AGENCY_BRIEF")
        .env("NO_COLOR", "1")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    run_with_deadline(command, Duration::from_secs(180))
}

#[test]
fn claude_code_implementer_is_corrected_then_approved_by_the_runner_and_its_fix_merges() {
    if !e2e_client("claude") {
        return;
    }
    let repo = repo_with_implementers_on("claude-code", "anthropic", "claude-implementer-7");
    let server = FakeAnthropic::start(implementer_script()).expect("fake server");

    let script = script_with_a_correcting_reviewer(&repo);
    let env = [
        ("ANTHROPIC_BASE_URL", server.base_url()),
        ("ANTHROPIC_API_KEY", "dummy-key-for-the-fake".to_string()),
        ("GITHUB_TOKEN", "runner-only-secret-4711".to_string()),
    ];
    let out = agency_run(&repo, &script, &env);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "agency run failed:\nstdout:\n{stdout}\nstderr:\n{stderr}\ntool results:\n{:#?}",
        server.tool_results()
    );
    assert!(stdout.contains("t4: claude-code (configured)"), "{stdout}");
    assert!(stdout.contains("t5: builtin (auto in a scripted run"), "{stdout}");
    // Claude Code thought with T4's model from team.yaml, not its own default.
    let models: Vec<Value> = server
        .message_requests()
        .iter()
        .map(|r| r["model"].clone())
        .collect();
    assert!(
        !models.is_empty() && models.iter().all(|m| m == "claude-implementer-7"),
        "{models:?}"
    );

    // What Claude Code was told: the gate's denial, the corrections (printed by the teachback command, then
    // quoted by the gate), and the approval.
    let results: Vec<String> = server
        .tool_results()
        .iter()
        .map(|r| r["content"].to_string())
        .collect();
    let first = |needle: &str| {
        results
            .iter()
            .position(|r| r.contains(needle))
            .unwrap_or_else(|| panic!("`{needle}` never reached the model: {results:#?}"))
    };
    let pending = first("while the teachback is pending");
    let corrections = first(
        "Teachback corrections requested by t3/ws-fix-pagination: 1. say what happens past the last page",
    );
    let quoted = first("The reviewer asked for corrections: 1. say what happens past the last page");
    let approved = first("Teachback approved by t3/ws-fix-pagination");
    assert!(
        pending < corrections && corrections < quoted && quoted < approved,
        "{results:#?}"
    );
    // The agent sees the gate's variables and its private HOME, never the runner's other secrets.
    let env = &results[first("AGENCY_BRIEF=")];
    assert!(!env.contains("runner-only-secret-4711"), "{env}");
    assert!(env.contains(".agency/agents/claude-code/"), "{env}");
    assert!(env.contains("AGENCY_GATE_SOCKET="), "{env}");
    assert!(!env.contains("AGENCY_DB="), "{env}");
    assert!(
        env.contains("looked") && !env.contains("BLACKBOARD-VISIBLE"),
        "{env}"
    );
    assert!(
        server.message_requests()[0]["messages"][0]["content"]
            .to_string()
            .contains("teachback submit --building"),
        "the prompt does not say how to teach back"
    );

    // The fix is on the integration branch; the repository's own checkout is untouched.
    let branch = branch_of(&stdout);
    assert!(
        repo.git_output(&["show", &format!("{branch}:pagination.py")])
            .contains("start = (number - 1) * size")
    );
    assert!(
        std::fs::read_to_string(repo.path().join("pagination.py"))
            .unwrap()
            .contains("start = number * size")
    );

    // Everything is on the blackboard.
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store.list_runs().unwrap()[0].clone();
    assert_eq!(run.status, RunStatus::Succeeded);
    let events = events(&store, run.id);
    let implementer = store
        .list_briefs(run.id)
        .unwrap()
        .into_iter()
        .find(|b| b.tier == Tier::T4)
        .unwrap();
    let of_implementer: Vec<&Event> = events
        .iter()
        .filter(|e| e.brief == Some(implementer.id))
        .collect();
    let spawned = of_implementer
        .iter()
        .find(|e| e.kind == EventKind::Spawned)
        .unwrap();
    assert_eq!(spawned.payload["runtime"], "claude-code");
    let tool_calls: Vec<(String, bool)> = of_implementer
        .iter()
        .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == "TOOL")
        .map(|e| {
            let message = e.payload["message"].as_str().unwrap();
            let tool = message.split_whitespace().nth(1).unwrap_or_default().to_string();
            (tool, e.payload["allowed"].as_bool().unwrap())
        })
        .collect();
    assert_eq!(
        tool_calls,
        [
            ("Read".to_string(), true),
            ("Write".to_string(), false),
            ("Bash".to_string(), true),
            ("Write".to_string(), false),
            ("Bash".to_string(), true),
            ("Write".to_string(), true),
            ("Bash".to_string(), true)
        ],
        "{of_implementer:#?}"
    );
    let denied = of_implementer
        .iter()
        .find(|e| e.kind == EventKind::TeachbackDenied)
        .expect("the hook recorded its denial");
    assert_eq!(denied.payload["tool"], "Write");
    let submitted = of_implementer
        .iter()
        .find(|e| e.kind == EventKind::TeachbackSubmitted)
        .unwrap();
    assert_eq!(
        (
            submitted.payload["via"].as_str(),
            submitted.payload["to"].as_str()
        ),
        // Submitted through the runner's gate service, the agent's only way to the blackboard.
        (Some("gate"), Some("under_review"))
    );
    let corrected = of_implementer
        .iter()
        .find(|e| e.kind == EventKind::TeachbackCorrected)
        .expect("the runner recorded its corrections");
    assert_eq!(
        corrected.payload["verdict"]["corrections"],
        json!(["say what happens past the last page"])
    );
    assert_eq!(corrected.payload["to"], "correcting");
    let review = of_implementer
        .iter()
        .find(|e| e.kind == EventKind::TeachbackApproved)
        .expect("the runner recorded its review");
    assert_eq!(review.payload["reviewer"], "t3/ws-fix-pagination");
    assert_eq!(review.payload["verdict"], "approved");
    assert_eq!(review.payload["to"], "active");
    assert!(
        review.payload["message"]
            .as_str()
            .unwrap()
            .starts_with("Teachback approved by t3/ws-fix-pagination")
    );
    let usage = of_implementer
        .iter()
        .find(|e| e.kind == EventKind::Usage)
        .expect("claude-code's usage");
    assert_eq!(usage.payload["provider"], "claude-code");
    assert!(usage.payload["output_tokens"].as_u64().unwrap() > 0);
    // The API key reached Claude Code (it talked to the fake) but no event.
    assert!(
        !events
            .iter()
            .any(|e| e.payload.to_string().contains("dummy-key-for-the-fake"))
    );
}

/// The run's integration branch, from `agency run`'s last line.
pub fn branch_of(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.split("review and merge branch ").nth(1))
        .unwrap_or_else(|| panic!("no branch in {stdout}"))
        .trim()
        .to_string()
}

/// What a read-only agent on Claude Code does in these tests once its prompt reaches the fake model: tries
/// to write `written` (a `Write`, and a `Bash` touching it, in one turn), searches with `Grep` for
/// `pattern`, then ends with `answer`. [`assert_offered_read_only`] checks what it was told.
pub fn tries_to_write_then_answers(written: &Path, pattern: &str, answer: String) -> Vec<Reply> {
    vec![
        Reply::Blocks(vec![
            Reply::tool_use(
                "Write",
                json!({"file_path": written, "content": "a read-only agent wrote this"}),
            ),
            Reply::tool_use(
                "Bash",
                json!({"command": format!("touch {}", written.display()), "description": "write"}),
            ),
        ]),
        Reply::tool_use("Grep", json!({"pattern": pattern, "path": "."})),
        Reply::text(answer),
    ]
}

/// Asserts that each of `requests` offered the model only Claude Code's read-only tools, and that the
/// agent of [`tries_to_write_then_answers`] was told it has no `Write` and no `Bash`.
pub fn assert_offered_read_only<'a>(server: &FakeAnthropic, requests: impl IntoIterator<Item = &'a Value>) {
    for request in requests {
        let mut tools: Vec<&str> = request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        tools.sort_unstable();
        assert_eq!(tools, ["Glob", "Grep", "Read"]);
    }
    let results: Vec<String> = server
        .tool_results()
        .iter()
        .map(|r| r["content"].to_string())
        .collect();
    for tool in ["Write", "Bash"] {
        assert!(
            results
                .iter()
                .any(|r| r.contains(&format!("No such tool available: {tool}"))),
            "{results:#?}"
        );
    }
}

/// Codex as the implementer, on its tier's model from team.yaml (Codex's own default is another). Codex as
/// the judge: `run_external_judge`.
/// The key Codex's model is called with in `codex_implementer_teaches_back_in_its_sandbox_and_its_fix_merges`.
const CODEX_KEY: &str = "sk-openai-held-by-the-relay-5150";

#[test]
fn codex_implementer_teaches_back_in_its_sandbox_and_its_fix_merges() {
    if !e2e_client("codex") {
        return;
    }
    // A model Codex knows, so that it offers apply_patch.
    let repo = repo_with_implementers_on("codex", "openai", "gpt-5.5");
    let patch = "*** Begin Patch\n*** Update File: pagination.py\n@@\n-    start = number * size\n\
                 +    start = (number - 1) * size\n*** End Patch\n";
    let server = FakeOpenAi::start(vec![
        // Denied: the teachback is blocking and has not been sent.
        Reply::custom("apply_patch", patch),
        Reply::tool_use(
            "exec_command",
            json!({"cmd": submit_command("an empty list past the last page seems right")}),
        ),
        // Codex holds its model key, and its commands must not be able to read it: Codex runs them in its
        // own sandbox, whose `/proc` does not show Codex (with agency's alone they would find it).
        Reply::tool_use(
            "exec_command",
            json!({"cmd": format!(
                "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null | grep -c {CODEX_KEY}; \
                 echo key-exit=$?"
            )}),
        ),
        Reply::custom("apply_patch", patch),
        Reply::text(REPORT),
    ])
    .expect("fake server");
    let env = [
        ("OPENAI_BASE_URL", server.base_url()),
        ("OPENAI_API_KEY", CODEX_KEY.to_string()),
    ];
    let out = agency_run(&repo, &demo_dir().join("script.yaml"), &env);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let outputs = server.tool_outputs();
    assert!(
        out.status.success(),
        "agency run failed:\nstdout:\n{stdout}\nstderr:\n{}\ntool outputs:\n{outputs:#?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("t4: codex (configured)"), "{stdout}");
    let models: Vec<Value> = server
        .response_requests()
        .iter()
        .map(|r| r["model"].clone())
        .collect();
    assert!(
        !models.is_empty() && models.iter().all(|m| m == "gpt-5.5"),
        "{models:?}"
    );
    let outputs: Vec<String> = outputs.iter().map(|o| o.to_string()).collect();
    let first = |needle: &str| {
        outputs
            .iter()
            .position(|o| o.contains(needle))
            .unwrap_or_else(|| panic!("`{needle}` never reached the model: {outputs:#?}"))
    };
    assert!(first("teachback gate:") < first("Teachback approved by t3/ws-fix-pagination"));
    // `grep -c` exits 1 when no environment it could read held the key.
    assert!(outputs[first("key-exit=")].contains("key-exit=1"), "{outputs:#?}");
    let branch = branch_of(&stdout);
    assert!(
        repo.git_output(&["show", &format!("{branch}:pagination.py")])
            .contains("start = (number - 1) * size")
    );
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store.list_runs().unwrap()[0].clone();
    assert_eq!(run.status, RunStatus::Succeeded);
    let events = events(&store, run.id);
    assert!(events.iter().any(|e| e.kind == EventKind::TeachbackDenied));
    assert!(
        events.iter().any(
            |e| e.kind == EventKind::TeachbackApproved && e.payload["reviewer"] == "t3/ws-fix-pagination"
        )
    );
    assert!(events.iter().any(|e| e.kind == EventKind::Usage
        && e.payload["provider"] == "codex"
        && e.payload["model"] == "gpt-5.5"));
}

/// A model id that Claude Code would read as a flag is refused by `agency config check` and stops `agency
/// run` before anything is recorded, naming the team.yaml line and field; no `claude` is needed, since it
/// is never started.
#[test]
fn a_tier_model_that_looks_like_a_flag_is_refused_naming_its_field() {
    let repo = repo_with_implementers_on("claude-code", "anthropic", "claude-haiku-4-5");
    repo.edit_team(&[(
        "model: claude-haiku-4-5 ",
        "model: --dangerously-skip-permissions ",
    )]);
    let refusal = "models.fast-cheap.model: the model id \"--dangerously-skip-permissions\" starts with `-`, \
                   which a command line would read as a flag";
    let check = repo.agency(&["config", "check"]).fails_with(3);
    assert!(check.stderr().contains(refusal), "{}", check.stderr());
    assert!(check.stderr().contains("team.yaml:"), "{}", check.stderr());
    let out = repo
        .agency(&[
            "run",
            GOAL,
            "--script",
            demo_dir().join("script.yaml").to_str().unwrap(),
        ])
        .fails_with(3);
    assert!(out.stderr().contains(refusal), "{}", out.stderr());
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    assert!(store.list_runs().unwrap().is_empty());
}

#[test]
fn claude_code_calls_the_endpoint_team_yaml_gives_its_provider_with_that_providers_key() {
    if !e2e_client("claude") {
        return;
    }
    let server = FakeAnthropic::start(implementer_script()).expect("fake server");
    let (line, on) = runtime_of("t4", "claude-code");
    // A gateway in team.yaml, with its own key variable: what the built-in agent would call.
    let endpoint = format!(
        "    base_url: {}\n    api_key_env: CORP_ANTHROPIC_KEY\n",
        server.base_url()
    );
    let repo = Repo::demo(&[
        (line, &on),
        (
            "    # base_url: https://api.anthropic.com   # unset: the kind's public API\n",
            &endpoint,
        ),
        (
            "fast-cheap:\n    provider: anthropic           # a key of providers\n    model: claude-haiku-4-5 ",
            "fast-cheap:\n    provider: anthropic\n    model: claude-implementer-7 ",
        ),
    ]);
    let script = script_with_a_correcting_reviewer(&repo);
    // The host's own Anthropic settings are overridden by team.yaml's, not used.
    let env = [
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9".to_string()),
        ("ANTHROPIC_API_KEY", "host-key-not-for-the-gateway".to_string()),
        ("CORP_ANTHROPIC_KEY", "corp-key-5150".to_string()),
    ];
    let out = agency_run(&repo, &script, &env);
    assert_succeeded(&out);
    let keys = header_sent(&server.requests(), "/v1/messages", "x-api-key");
    assert!(
        !keys.is_empty() && keys.iter().all(|k| k.as_deref() == Some("corp-key-5150")),
        "{keys:?}"
    );
}

/// Fails the test with the run's output unless `agency run` succeeded.
fn assert_succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "agency run failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `header` of each model request (a path containing `path`) a fake server was sent.
fn header_sent(requests: &[RecordedRequest], path: &str, header: &str) -> Vec<Option<String>> {
    requests
        .iter()
        .filter(|r| r.path.contains(path))
        .map(|r| r.headers.get(header).cloned())
        .collect()
}

#[test]
fn codex_calls_the_endpoint_team_yaml_gives_its_provider_with_that_providers_key() {
    if !e2e_client("codex") {
        return;
    }
    let patch = "*** Begin Patch\n*** Update File: pagination.py\n@@\n-    start = number * size\n\
                 +    start = (number - 1) * size\n*** End Patch\n";
    let server = FakeOpenAi::start(vec![
        Reply::tool_use(
            "exec_command",
            json!({"cmd": submit_command("an empty list past the last page seems right")}),
        ),
        Reply::custom("apply_patch", patch),
        Reply::text(REPORT),
    ])
    .expect("fake server");
    let (line, on) = runtime_of("t4", "codex");
    let provider = format!(
        "providers:\n  gateway: {{kind: openai, base_url: '{}', api_key_env: CORP_OPENAI_KEY}}\n",
        server.base_url()
    );
    let repo = Repo::demo(&[
        (line, &on),
        ("providers:\n", &provider),
        (
            "fast-cheap:\n    provider: anthropic           # a key of providers\n    model: claude-haiku-4-5 ",
            "fast-cheap:\n    provider: gateway\n    model: gpt-5.5 ",
        ),
    ]);
    // No OPENAI_BASE_URL: the endpoint is team.yaml's, and so is the key.
    let env = [("CORP_OPENAI_KEY", "corp-key-8086".to_string())];
    let out = agency_run(&repo, &demo_dir().join("script.yaml"), &env);
    assert_succeeded(&out);
    let keys = header_sent(&server.requests(), "/responses", "authorization");
    assert!(
        !keys.is_empty() && keys.iter().all(|k| k.as_deref() == Some("Bearer corp-key-8086")),
        "{keys:?}"
    );
}
