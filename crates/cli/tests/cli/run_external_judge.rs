//! `agency run` with the real Claude Code, then the real Codex, as the read-only judge of each slice's
//! sign-off (`tiers.t5.runtime`) against the fake model servers, the rest of the run scripted with the
//! engine's partial-verdict script (a squad of two slices, `fix-add` and `fix-mul`, whose first `fix-mul`
//! leaves a debug marker). One run per CLI covers both verdicts: `fix-add`'s judge accepts; the first
//! `fix-mul` judge tries to write (Claude Code does not even offer it the tools; Codex's read-only sandbox
//! refuses), then rejects with a `missing:` item; only that slice is retried, and its second judge accepts.
//! Every judge thinks with T5's model from team.yaml.

use agency_core::Tier;
use agency_core::event::EventKind;
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
use agency_testkit::{FakeAnthropic, FakeOpenAi, Reply};
use serde_json::json;

use crate::hook_support::e2e_client;
use crate::run_external::{agency_run, assert_offered_read_only, branch_of, tries_to_write_then_answers};
use crate::support::{Repo, arithmetic_repo, events, runtime_of};

/// What the first `fix-mul` judge names as missing.
const MISSING: &str = "mul.sh still carries the LEFTOVER-DEBUG marker; remove it";

/// The engine's partial-verdict script: its judge replies answer only T1's acceptance here.
fn partial_script() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/scripts/partial.yaml")
}

/// The judge's verdicts: the one whose diff shows the marker rejects, every other one accepts.
const ACCEPT: &str = "The operator is right and the test exercises it.\nVERDICT: accept\nmissing: none";
fn reject() -> String {
    format!("A debug marker is left in mul.sh.\nVERDICT: reject\nmissing:\n- {MISSING}")
}

/// Runs the partial-verdict script with the judge's CLI reaching its fake through `env`, and checks what
/// the blackboard and the branch say: three judges on `runtime`, the marked slice rejected with the missing
/// item and retried alone, the run succeeded with the marker gone and nothing any judge tried to write.
fn judged_run(repo: &Repo, runtime: &str, env: &[(&str, String)], written: &std::path::Path) {
    let out = agency_run(repo, &partial_script(), env);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "agency run failed:\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("t5: {runtime} (configured)")),
        "{stdout}"
    );
    assert!(!written.exists(), "a judge wrote {}", written.display());
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store.list_runs().unwrap()[0].clone();
    assert_eq!(run.status, RunStatus::Succeeded);
    let events = events(&store, run.id);
    let of_t5 = |kind: EventKind| -> Vec<&agency_core::Event> {
        events
            .iter()
            .filter(|e| e.kind == kind && e.tier == Some(Tier::T5))
            .collect()
    };
    let rejected = of_t5(EventKind::SignoffRejected);
    let accepted = of_t5(EventKind::SignoffAccepted);
    assert_eq!((rejected.len(), accepted.len()), (1, 2), "{events:#?}");
    assert!(
        rejected[0].payload.to_string().contains(MISSING),
        "{}",
        rejected[0].payload
    );
    let judges = of_t5(EventKind::Spawned);
    assert_eq!(judges.len(), 3);
    assert!(judges.iter().all(|e| e.payload["runtime"] == runtime));
    // Only the rejected slice ran again (the script's retry, which removes the marker, answers a brief that
    // says its previous attempt was not accepted).
    let briefs = store.list_briefs(run.id).unwrap();
    let retried: Vec<_> = briefs
        .iter()
        .filter(|b| b.tier == Tier::T4 && b.attempt == 1)
        .collect();
    assert_eq!(retried.len(), 1);
    assert_eq!(retried[0].title, "fix-mul");
    let retry = events
        .iter()
        .find(|e| e.kind == EventKind::Retried && e.brief == Some(retried[0].id))
        .expect("the retry was recorded");
    assert!(rejected[0].seq < retry.seq);
    let branch = branch_of(&stdout);
    let files = repo.git_output(&["ls-tree", "-r", "--name-only", &branch]);
    assert!(!files.contains("judge-was-here"), "{files}");
    let mul = repo.git_output(&["show", &format!("{branch}:mul.sh")]);
    assert!(
        mul.contains("echo $(($1 * $2))") && !mul.contains("LEFTOVER"),
        "{mul}"
    );
}

#[test]
fn claude_code_judges_slices_read_only_and_its_reject_retries_only_that_slice() {
    if !e2e_client("claude") {
        return;
    }
    let (t5, on_claude) = runtime_of("t5", "claude-code");
    let repo = arithmetic_repo(&[
        (t5, &on_claude),
        ("model: claude-sonnet-4-5 ", "model: claude-judge-9 "),
    ]);
    let written = repo.path().join("judge-was-here.txt");
    let server = FakeAnthropic::start(vec![Reply::text(ACCEPT)]).expect("fake server");
    server.set_rule(
        "LEFTOVER-DEBUG",
        tries_to_write_then_answers(&written, "LEFTOVER", reject()),
    );
    let env = [
        ("ANTHROPIC_BASE_URL", server.base_url()),
        ("ANTHROPIC_API_KEY", "dummy-key-for-the-fake".to_string()),
    ];
    judged_run(&repo, "claude-code", &env, &written);

    // Three judges (fix-add, fix-mul twice), each on T5's model, offered only the read-only tools and asked
    // for no report after their verdict.
    let requests = server.message_requests();
    let commits: std::collections::BTreeSet<String> = requests
        .iter()
        .filter_map(|r| {
            let prompt = r["messages"][0].to_string();
            let at = prompt.find("Commit under review: ")?;
            Some(prompt[at..].chars().take(61).collect())
        })
        .collect();
    assert_eq!(commits.len(), 3, "{commits:#?}");
    // The first fix-mul judge was told it has no Write and no Bash.
    assert_offered_read_only(&server, &requests);
    for request in &requests {
        assert_eq!(request["model"], "claude-judge-9");
        let prompt = request["messages"][0].to_string();
        assert!(prompt.contains("Goal under sign-off"), "{prompt}");
        assert!(
            !prompt.contains("end your final message with your report"),
            "{prompt}"
        );
    }
}

#[test]
fn codex_judges_slices_in_its_read_only_sandbox_and_its_reject_retries_only_that_slice() {
    if !e2e_client("codex") {
        return;
    }
    let (t5, on_codex) = runtime_of("t5", "codex");
    let repo = arithmetic_repo(&[
        (t5, &on_codex),
        ("providers:\n", "providers:\n  openai: {kind: openai}\n"),
        (
            "capable:\n    provider: anthropic           # a key of providers\n    model: claude-sonnet-4-5 ",
            "capable:\n    provider: openai\n    model: gpt-judge-test ",
        ),
    ]);
    let written = repo.path().join("judge-was-here.txt");
    let server = FakeOpenAi::start(vec![Reply::text(ACCEPT)]).expect("fake server");
    server.set_rule(
        "LEFTOVER-DEBUG",
        vec![
            Reply::tool_use(
                "exec_command",
                json!({"cmd": format!("echo x > judged.txt; echo x > {}", written.display())}),
            ),
            Reply::text(reject()),
        ],
    );
    let env = [
        ("OPENAI_BASE_URL", server.base_url()),
        ("OPENAI_API_KEY", "dummy-key-for-the-fake".to_string()),
    ];
    judged_run(&repo, "codex", &env, &written);

    // Three judges, each on T5's model (Codex's own default is another), asked for no report after their
    // verdict; the gate let the first fix-mul judge's command run, and Codex's read-only sandbox refused it.
    let requests = server.response_requests();
    assert!(!requests.is_empty());
    for request in &requests {
        assert_eq!(request["model"], "gpt-judge-test");
        let input = request["input"].to_string();
        assert!(input.contains("Goal under sign-off"), "{input}");
        assert!(
            !input.contains("end your final message with your report"),
            "{input}"
        );
    }
    let outputs: Vec<String> = server.tool_outputs().iter().map(|o| o.to_string()).collect();
    assert!(
        outputs
            .iter()
            .any(|o| o.contains("judged.txt: Read-only file system")
                && o.contains("judge-was-here.txt: Read-only file system")),
        "{outputs:#?}"
    );
}
