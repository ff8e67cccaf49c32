//! The command runtime: the teachback is done in a read-only built-in step, and the command is started on
//! the worktree only once it is approved.

use agency_core::teachback::ReviewVerdict;
use agency_core::variety::TeachbackMode;
use agency_exec::runtime::{Access, AgentStop, BuiltinRuntime, CommandRuntime, ReportStatus, Runtime};
use agency_llm::CancelToken;

use crate::support::{Recording, Sandbox, TestLink, task};

const TEACHBACK: &str = r#"{name: submit_teachback, input: {building: "a fix to calc.add", key_constraints: ["only calc.py"], approach: "swap the operator", most_likely_wrong: "the test", least_confident: "callers"}}"#;

/// An "agent" that records the first line of its stdin in the worktree and prints a report.
fn agent_argv() -> Vec<String> {
    let script = "read -r first; printf '%s\\n' \"$first\" > agent-saw.txt; \
                  echo '```json'; echo '{\"status\": \"done\", \"summary\": \"ran\"}'; echo '```'";
    vec!["sh".into(), "-c".into(), script.into()]
}

#[tokio::test]
async fn the_command_starts_only_after_the_teachback_is_approved() {
    let sandbox = Sandbox::new(&[("calc.py", "x\n")]);
    let worktree = sandbox.worktree("command");
    let script = format!(
        "replies:\n  - role: implementer\n    replies:\n      - tool_calls: [{TEACHBACK}]\n      - tool_calls: [{TEACHBACK}]\n"
    );
    let provider = Recording::new(&script);
    let runtime = CommandRuntime::new(agent_argv(), BuiltinRuntime::new(provider.clone()));
    let link = TestLink::new(
        TeachbackMode::Blocking,
        vec![ReviewVerdict::Corrections(vec!["name the test".into()])],
    );
    let mut task = task(worktree.root(), true, Access::ReadWrite);
    task.system = vec![];
    let outcome = runtime.run(&task, &link, &CancelToken::new()).await.unwrap();

    assert_eq!(outcome.stop, AgentStop::Finished);
    let report = outcome.report.unwrap();
    assert_eq!(
        (report.status, report.summary.as_str()),
        (ReportStatus::Done, "ran")
    );
    assert_eq!(
        std::fs::read_to_string(worktree.root().join("agent-saw.txt")).unwrap(),
        "Fix calc.add so that check.sh passes.\n"
    );
    // Two teachbacks (one corrected), then the command; the step's agent had only read-only tools.
    assert_eq!(link.teachbacks.lock().unwrap().len(), 2);
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "list_files",
            "grep",
            "submit_teachback",
            "report_result",
            "raise_signal"
        ]
    );
}

#[tokio::test]
async fn a_blocked_teachback_step_never_starts_the_command() {
    let sandbox = Sandbox::new(&[("calc.py", "x\n")]);
    let worktree = sandbox.worktree("command-blocked");
    let script = "replies:\n  - role: implementer\n    replies:\n      - tool_calls: [{name: report_result, input: {status: blocked, summary: no tests exist}}]\n";
    let runtime = CommandRuntime::new(agent_argv(), BuiltinRuntime::new(Recording::new(script)));
    let link = TestLink::new(TeachbackMode::Blocking, vec![]);
    let outcome = runtime
        .run(
            &task(worktree.root(), true, Access::ReadWrite),
            &link,
            &CancelToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.report.unwrap().status, ReportStatus::Blocked);
    assert!(!worktree.root().join("agent-saw.txt").exists());
}
