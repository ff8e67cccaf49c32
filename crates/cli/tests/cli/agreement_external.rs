//! `agency run` with the real Claude Code as the squad lead (`tiers.t3.runtime: claude-code`) against the
//! fake Anthropic server, the rest of the run scripted with the engine's restate script (docs/protocols.md,
//! "Agreement at each handoff"). Claude Code's squad lead drafts one task on add.sh; the scripted
//! implementer's teachback names add.sh and mul.sh, an L1 mismatch at t3→t4, so the runner asks the
//! squad lead's tier on its own runtime: a second, read-only Claude Code, given the question, which tries
//! to write (Claude Code is not even offered the tools), then corrects the mismatch in its report's
//! `output`. The correction stands as an anomaly, and the question's agent wrote nothing.

use agency_core::Tier;
use agency_core::event::payload::AgreementChecked;
use agency_core::event::{EventKind, EventPayload};
use agency_store::{Blackboard, RunStatus, SqliteBlackboard};
use agency_testkit::{FakeAnthropic, Reply};
use serde_json::json;

use crate::hook_support::e2e_client;
use crate::run_external::{agency_run, assert_offered_read_only, branch_of, tries_to_write_then_answers};
use crate::support::{arithmetic_repo, events};

/// The engine's restate script with the squad lead's draft and its answer to the agreement question cut
/// out: both are Claude Code's here, and a question put to the scripted model instead finds no reply.
fn restate_script() -> String {
    let path =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/scripts/restate.yaml");
    let script = std::fs::read_to_string(path).unwrap();
    let squad = script
        .find("  - role: squad-lead")
        .expect("the squad lead's reply");
    let reviewer = script
        .find("  # fix-add's variety")
        .expect("the reviewer's reply");
    let answer = script.find("  # -- The squad lead's answer").expect("the marker");
    format!("{}{}", &script[..squad], &script[reviewer..answer])
}

/// What the squad lead on Claude Code reports: the restate script's draft, add.sh only.
fn squad_report() -> String {
    let report = json!({
        "status": "done",
        "summary": "One task, on add.sh only.",
        "evidence": [],
        "output": {
            "files": ["add.sh"],
            "understanding": {"building": "add.sh adds its two arguments", "files": ["add.sh"]},
            "tasks": [{
                "title": "fix-add",
                "instructions": "Make add.sh add. Touch add.sh only.",
                "variety": {"novelty": 2, "scope": 2, "uncertainty": 2, "risk": 2},
                "contract": {"done_when": "sh test_add.sh passes", "verify": "sh test_add.sh"}
            }]
        }
    });
    format!("One task.\n```json\n{report}\n```")
}

/// The squad lead's correction, as the question's agent reports it.
const REASON: &str = "only add.sh was handed over; mul.sh is another squad's";

fn agreements(events: &[agency_core::Event], handoff: &str) -> Vec<AgreementChecked> {
    events
        .iter()
        .filter_map(|e| match e.typed() {
            Ok(EventPayload::Agreement(a)) if a.handoff == handoff => Some(a),
            _ => None,
        })
        .collect()
}

#[test]
fn a_squad_lead_on_claude_code_corrects_an_implementers_extra_file_read_only() {
    if !e2e_client("claude") {
        return;
    }
    let repo = arithmetic_repo(&[
        (
            "capable           # squad lead: task split and joint verdicts\n    runtime: builtin ",
            "capable           # squad lead: task split and joint verdicts\n    runtime: claude-code ",
        ),
        ("model: claude-sonnet-4-5 ", "model: claude-squad-7 "),
    ]);
    let script = repo.path().join(".agency/script.yaml");
    std::fs::write(&script, restate_script()).unwrap();

    let written = repo.path().join("agreement-was-here.txt");
    let server = FakeAnthropic::start(vec![Reply::text(squad_report())]).expect("fake server");
    let answer = format!(
        "mul.sh was not in my draft.\n```json\n{}\n```",
        json!({"status": "done", "summary": "a real mismatch", "output": {"fine": false, "reason": REASON}})
    );
    server.set_rule(
        "## The differences",
        tries_to_write_then_answers(&written, "mul.sh", answer),
    );
    let env = [
        ("ANTHROPIC_BASE_URL", server.base_url()),
        ("ANTHROPIC_API_KEY", "dummy-key-for-the-fake".to_string()),
    ];
    let out = agency_run(&repo, &script, &env);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "agency run failed:\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("t3: claude-code (configured)"), "{stdout}");

    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store.list_runs().unwrap()[0].clone();
    assert_eq!(run.status, RunStatus::Succeeded);
    let events = events(&store, run.id);

    // The mismatch, asked, then answered by the squad lead's tier on Claude Code: corrected, and it stands.
    let task = agreements(&events, "t3→t4");
    let answers: Vec<(&str, &str, bool, &str)> = task
        .iter()
        .map(|a| {
            (
                a.outcome.as_str(),
                a.confirmation.as_deref().unwrap_or(""),
                a.significant,
                a.reason.as_deref().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        answers,
        [
            ("mismatch", "asking", true, ""),
            ("mismatch", "corrected", true, REASON)
        ],
        "{task:#?}"
    );
    assert_eq!(task[0].differences, ["mul.sh is outside what was handed over"]);
    let squad = store
        .list_briefs(run.id)
        .unwrap()
        .into_iter()
        .find(|b| b.tier == Tier::T3)
        .unwrap();
    assert_eq!(task[0].handing_over, Some(squad.id));
    let anomalies: Vec<String> = events
        .iter()
        .filter_map(|e| match e.typed() {
            Ok(EventPayload::Anomaly(a)) if a.source == "agreement" => Some(a.message),
            _ => None,
        })
        .collect();
    assert_eq!(
        anomalies,
        [format!(
            "L1 mismatch at t3→t4 (fix-add): mul.sh is outside what was handed over — t3 {} says: {REASON}",
            squad.title
        )]
    );

    // Two Claude Code conversations on T3's model: the squad lead's and the question's, which was offered
    // only the read-only tools and told, when it tried to write, that it has none.
    let requests = server.message_requests();
    let asked = |r: &serde_json::Value| r["messages"][0].to_string().contains("## The differences");
    assert!(requests.iter().any(|r| !asked(r)), "the squad lead never ran");
    assert!(
        requests.iter().any(asked),
        "the question never reached Claude Code"
    );
    for request in &requests {
        assert_eq!(request["model"], "claude-squad-7");
    }
    assert_offered_read_only(&server, requests.iter().filter(|r| asked(r)));
    assert!(
        !written.exists(),
        "the question's agent wrote {}",
        written.display()
    );
    // The blackboard says so too: the squad lead's brief records those calls as not allowed.
    let refused: Vec<(String, bool)> = events
        .iter()
        .filter(|e| e.kind == EventKind::Log && e.payload["tag"] == "TOOL" && e.brief == Some(squad.id))
        .filter_map(|e| {
            let message = e.payload["message"].as_str()?;
            let tool = message.split_whitespace().nth(1)?;
            ["Write", "Bash"]
                .contains(&tool)
                .then(|| (tool.to_string(), e.payload["allowed"].as_bool().unwrap()))
        })
        .collect();
    assert_eq!(
        refused,
        [("Write".to_string(), false), ("Bash".to_string(), false)]
    );
    let branch = branch_of(&stdout);
    let files = repo.git_output(&["ls-tree", "-r", "--name-only", &branch]);
    assert!(!files.contains("agreement-was-here"), "{files}");

    // The squad lead ran once, as its brief; the question is no brief's agent of its own, and its model
    // calls are charged to the squad lead's brief.
    let spawned: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::Spawned && e.brief == Some(squad.id))
        .collect();
    assert_eq!(spawned.len(), 1, "{spawned:#?}");
    assert_eq!(spawned[0].payload["runtime"], "claude-code");
    let usage = events
        .iter()
        .filter(|e| e.kind == EventKind::Usage && e.brief == Some(squad.id))
        .count();
    assert!(usage >= 2, "{usage} usage records on the squad lead's brief");
}
