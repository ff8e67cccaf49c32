//! The built-in agent driven by the scripted provider in a real git worktree.

use std::time::{Duration, Instant};

use agency_core::teachback::ReviewVerdict;
use agency_core::variety::TeachbackMode;
use agency_exec::runtime::{
    Access, AgentEvent, AgentStop, BuiltinRuntime, Ending, FINAL_TEXT_MAX, ReportStatus, Runtime,
    SignalLevel, final_text,
};
use agency_llm::CancelToken;

use crate::support::{Recording, Sandbox, TestLink, task};

const CALC: &str = "def add(a, b):\n    return a - b\n";
const CHECK: &str =
    "grep -q 'return a + b' calc.py || { echo 'add is wrong' >&2; exit 1; }\necho 'all tests pass'\n";

const TEACHBACK: &str = r#"{name: submit_teachback, input: {building: "a fix to calc.add", key_constraints: ["only calc.py changes"], approach: "replace the minus with a plus", most_likely_wrong: "check.sh may test more", least_confident: "whether other callers rely on the bug"}}"#;

fn blocking_script() -> String {
    format!(
        r#"
replies:
  - role: implementer
    replies:
      - tool_calls:
          - {{name: edit_file, input: {{path: calc.py, old_string: "a - b", new_string: "a + b"}}}}
      - tool_calls:
          - {TEACHBACK}
      - tool_calls:
          - {{name: edit_file, input: {{path: calc.py, old_string: "a - b", new_string: "a + b"}}}}
      - tool_calls:
          - {TEACHBACK}
      - tool_calls:
          - {{name: read_file, input: {{path: calc.py}}}}
          - {{name: edit_file, input: {{path: calc.py, old_string: "a - b", new_string: "a + b"}}}}
      - text: "Fixed; running the tests. My key is sk-test-0123456789."
        tool_calls:
          - {{name: run_command, input: {{argv: [sh, check.sh]}}}}
      - tool_calls:
          - name: report_result
            input:
              status: done
              summary: calc.add now adds; check.sh passes
              evidence: [{{path: calc.py, quote: "    return a + b"}}]
              output: {{changed: [calc.py]}}
"#
    )
}

#[tokio::test]
async fn edits_are_denied_until_the_teachback_is_approved_then_the_agent_fixes_tests_and_reports() {
    let sandbox = Sandbox::new(&[("calc.py", CALC), ("check.sh", CHECK)]);
    let worktree = sandbox.worktree("fix-add");
    let provider = Recording::new(&blocking_script());
    let mut task = task(worktree.root(), true, Access::ReadWrite);
    task.env
        .push(("ANTHROPIC_API_KEY".into(), "sk-test-0123456789".into()));
    let link = TestLink::new(
        TeachbackMode::Blocking,
        vec![ReviewVerdict::Corrections(vec![
            "say which test checks add".into(),
        ])],
    );
    let runtime = BuiltinRuntime::new(provider.clone());

    let outcome = runtime.run(&task, &link, &CancelToken::new()).await.unwrap();

    assert_eq!(outcome.stop, AgentStop::Finished);
    let report = outcome.report.unwrap();
    assert_eq!(report.status, ReportStatus::Done);
    assert_eq!(report.evidence[0].path, "calc.py");
    assert_eq!(report.output["changed"][0], "calc.py");
    assert_eq!(
        std::fs::read_to_string(worktree.root().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    // The main checkout never saw the edit; the worktree has it uncommitted.
    assert_eq!(
        std::fs::read_to_string(sandbox.repo.root().join("calc.py")).unwrap(),
        CALC
    );
    assert!(worktree.has_changes().unwrap());

    assert_eq!(
        link.tool_calls(),
        [
            ("edit_file".to_owned(), false),
            ("submit_teachback".to_owned(), true),
            ("edit_file".to_owned(), false),
            ("submit_teachback".to_owned(), true),
            ("read_file".to_owned(), true),
            ("edit_file".to_owned(), true),
            ("run_command".to_owned(), true),
            ("report_result".to_owned(), true),
        ]
    );
    let denied = provider.results_sent_in_turn(2);
    assert!(
        denied[0].1 && denied[0].0.contains("teachback gate"),
        "{denied:?}"
    );
    let corrections = provider.results_sent_in_turn(3);
    assert!(
        corrections[0]
            .0
            .contains("corrections requested by t3/ws-calc: 1. say which test checks add"),
        "{corrections:?}"
    );
    let approved = provider.results_sent_in_turn(5);
    assert!(
        approved[0].0.starts_with("Teachback approved by t3/ws-calc"),
        "{approved:?}"
    );
    let tests = provider.results_sent_in_turn(7);
    assert_eq!(
        tests[0],
        ("exit 0\n--- stdout ---\nall tests pass\n".to_owned(), false)
    );
    assert_eq!(link.teachbacks.lock().unwrap().len(), 2);

    // The prompt prefix is byte-identical on every turn, so the provider's cache hits.
    let requests = provider.requests();
    assert_eq!(requests.len(), 7);
    assert!(
        requests
            .iter()
            .all(|r| r.system == requests[0].system && r.tools == requests[0].tools)
    );
    assert_eq!(requests[0].system[0], "You are a careful implementer.");

    // The key the model repeated is redacted from the record, and usage is recorded per turn.
    let events = link.events();
    let said: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Said(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(
        said,
        ["Fixed; running the tests. My key is [redacted:ANTHROPIC_API_KEY]."]
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::Usage(_)))
            .count(),
        7
    );
}

#[tokio::test]
async fn advisory_briefs_edit_at_once_and_read_only_agents_get_no_editing_tools() {
    let sandbox = Sandbox::new(&[("calc.py", CALC)]);
    let worktree = sandbox.worktree("advisory");
    let script = r#"
replies:
  - role: implementer
    replies:
      - tool_calls:
          - {name: edit_file, input: {path: calc.py, old_string: "a - b", new_string: "a + b"}}
          - {name: edit_file, input: {path: calc.py, old_string: "return", new_string: "return"}}
          - {name: edit_file, input: {path: calc.py, old_string: "a * b", new_string: "x"}}
      - tool_calls: [{name: report_result, input: {status: done, summary: done}}]
"#;
    let provider = Recording::new(script);
    let link = TestLink::new(TeachbackMode::Advisory, vec![]);
    let runtime = BuiltinRuntime::new(provider.clone());
    let outcome = runtime
        .run(
            &task(worktree.root(), false, Access::ReadWrite),
            &link,
            &CancelToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, AgentStop::Finished);
    assert_eq!(outcome.report.unwrap().summary, "done");
    let results = provider.results_sent_in_turn(2);
    assert_eq!(
        results[0],
        ("edited calc.py: 1 replacement (line 2)".to_owned(), false)
    );
    assert!(results[1].1 && results[1].0.contains("the same"), "{results:?}");
    assert!(results[2].1 && results[2].0.contains("not found"), "{results:?}");

    let provider = Recording::new(
        "replies:\n  - role: implementer\n    replies:\n      - tool_calls: [{name: write_file, input: {path: x, content: y}}]\n      - tool_calls: [{name: report_result, input: {status: done, summary: done}}]\n",
    );
    let runtime = BuiltinRuntime::new(provider.clone());
    let link = TestLink::new(TeachbackMode::Advisory, vec![]);
    runtime
        .run(
            &task(worktree.root(), false, Access::ReadOnly),
            &link,
            &CancelToken::new(),
        )
        .await
        .unwrap();
    let requests = provider.requests();
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "list_files",
            "grep",
            "report_result",
            "raise_signal",
            "propose_path_amendment"
        ]
    );
    let refused = provider.results_sent_in_turn(2);
    assert!(
        refused[0].1 && refused[0].0.starts_with("there is no tool `write_file` here"),
        "{refused:?}"
    );
    assert!(!worktree.root().join("x").exists());
}

#[tokio::test]
async fn the_outcome_keeps_the_whole_final_answer_where_a_verdict_sits_at_its_end() {
    let sandbox = Sandbox::new(&[("calc.py", CALC)]);
    let worktree = sandbox.worktree("answer");
    // A judge's long answer: 6,000 bytes of reasoning (and a secret) before the verdict block.
    let reasoning = "The diff changes calc.py only. ".repeat(200);
    let answer = format!("{reasoning}sk-test-0123456789\nVERDICT: accept\nmissing: none");
    let script = format!(
        "replies:\n  - role: implementer\n    reply:\n      text: {}\n",
        serde_json::to_string(&answer).unwrap()
    );
    let provider = Recording::new(&script);
    let link = TestLink::new(TeachbackMode::Advisory, vec![]);
    let mut task = task(worktree.root(), false, Access::ReadOnly);
    // A judge's answer is its last message: no report is asked for.
    task.ending = Ending::AsInstructed;
    task.env
        .push(("JUDGE_API_KEY".into(), "sk-test-0123456789".into()));
    let outcome = BuiltinRuntime::new(provider)
        .run(&task, &link, &CancelToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.stop, AgentStop::Finished);
    let text = outcome.final_text.unwrap();
    assert!(text.ends_with("VERDICT: accept\nmissing: none"), "{text}");
    assert!(text.starts_with("The diff changes calc.py only."));
    assert!(!text.contains("sk-test-0123456789") && text.contains("[redacted:JUDGE_API_KEY]"));
    // What is recorded as the agent's words stays short; the outcome is what a caller parses.
    let said: Vec<String> = link
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Said(text) => Some(text),
            _ => None,
        })
        .collect();
    assert!(
        said[0].len() < 2_100 && !said[0].contains("VERDICT"),
        "{}",
        said[0].len()
    );
}

#[test]
fn a_final_text_over_its_bound_keeps_its_end() {
    let long = format!("{}VERDICT: reject\nmissing:\n- tests", "x".repeat(FINAL_TEXT_MAX));
    let kept = final_text(&long);
    assert!(kept.len() <= FINAL_TEXT_MAX + "…".len());
    assert!(kept.starts_with('…') && kept.ends_with("VERDICT: reject\nmissing:\n- tests"));
    assert_eq!(final_text("short"), "short");
}

#[tokio::test]
async fn a_signal_with_another_levels_category_goes_back_to_the_agent() {
    let sandbox = Sandbox::new(&[("calc.py", CALC)]);
    let worktree = sandbox.worktree("wrong-signal");
    // Turn 2 answers only when the refusal, with the allowed list, reached the model.
    let script = r#"
replies:
  - role: implementer
    turn: 1
    reply:
      tool_calls:
        - name: raise_signal
          input: {level: HALT, category: QUALITY, issue: "tests are thin", evidence: "one test", impact: "bugs pass", recommended_action: "add tests"}
  - role: implementer
    turn: 2
    contains: "a HALT takes SECURITY, DATA, ETHICS"
    reply:
      tool_calls:
        - name: raise_signal
          input: {level: ALERT, category: QUALITY, issue: "tests are thin", evidence: "one test", impact: "bugs pass", recommended_action: "add tests"}
"#;
    let link = TestLink::new(TeachbackMode::Advisory, vec![]);
    let runtime = BuiltinRuntime::new(Recording::new(script));
    let outcome = runtime
        .run(
            &task(worktree.root(), false, Access::ReadWrite),
            &link,
            &CancelToken::new(),
        )
        .await
        .unwrap();
    let AgentStop::Signal(signal) = outcome.stop else {
        panic!("{:?}", outcome.stop)
    };
    assert_eq!(
        (signal.level, signal.category.as_str()),
        (SignalLevel::Alert, "QUALITY")
    );
}

#[tokio::test]
async fn a_signal_ends_the_agent_and_turns_are_bounded() {
    let sandbox = Sandbox::new(&[("calc.py", CALC)]);
    let worktree = sandbox.worktree("signal");
    let script = r#"
replies:
  - role: implementer
    replies:
      - tool_calls:
          - name: raise_signal
            input: {level: HALT, category: SECURITY, issue: "credentials committed in calc.py", evidence: "calc.py:1", impact: "the key leaks with the repository", recommended_action: "rotate the key"}
"#;
    let link = TestLink::new(TeachbackMode::Advisory, vec![]);
    let runtime = BuiltinRuntime::new(Recording::new(script));
    let outcome = runtime
        .run(
            &task(worktree.root(), false, Access::ReadWrite),
            &link,
            &CancelToken::new(),
        )
        .await
        .unwrap();
    let AgentStop::Signal(signal) = outcome.stop else {
        panic!("{:?}", outcome.stop)
    };
    assert_eq!(
        (signal.level, signal.category.as_str()),
        (SignalLevel::Halt, "SECURITY")
    );

    let looping = "replies:\n  - role: implementer\n    reply: {tool_calls: [{name: list_files}]}\n";
    let mut limited = task(worktree.root(), false, Access::ReadWrite);
    limited.limits.max_turns = 3;
    let provider = Recording::new(looping);
    let outcome = BuiltinRuntime::new(provider.clone())
        .run(&limited, &link, &CancelToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.stop, AgentStop::TurnLimit);
    assert_eq!(provider.requests().len(), 3);
}

#[tokio::test]
async fn a_hanging_command_is_killed_with_its_grandchild_at_its_timeout() {
    let sandbox = Sandbox::new(&[("calc.py", CALC)]);
    let worktree = sandbox.worktree("hang");
    let script = r#"
replies:
  - role: implementer
    replies:
      - tool_calls:
          - {name: run_command, input: {argv: [sh, -c, "sleep 60 & echo $! > grandchild.pid; wait"], timeout_secs: 1}}
      - tool_calls: [{name: report_result, input: {status: blocked, summary: gave up}}]
"#;
    let provider = Recording::new(script);
    let link = TestLink::new(TeachbackMode::Advisory, vec![]);
    let started = Instant::now();
    let outcome = BuiltinRuntime::new(provider.clone())
        .run(
            &task(worktree.root(), false, Access::ReadWrite),
            &link,
            &CancelToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, AgentStop::Finished);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let result = &provider.results_sent_in_turn(2)[0];
    assert!(result.1 && result.0.contains("timed out"), "{result:?}");
    let pid: u32 = std::fs::read_to_string(worktree.root().join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        dies_within(pid, Duration::from_secs(5)),
        "grandchild {pid} outlived the timeout"
    );
}

#[tokio::test]
async fn the_agent_stops_at_its_time_limit_and_on_cancel() {
    let sandbox = Sandbox::new(&[("calc.py", CALC)]);
    let worktree = sandbox.worktree("slow");
    let script = r#"
replies:
  - role: implementer
    replies:
      - tool_calls:
          - {name: run_command, input: {argv: [sleep, "30"]}}
      - text: never
"#;
    let link = TestLink::new(TeachbackMode::Advisory, vec![]);
    let mut slow = task(worktree.root(), false, Access::ReadWrite);
    slow.limits.timeout = Duration::from_millis(500);
    let started = Instant::now();
    let outcome = BuiltinRuntime::new(Recording::new(script))
        .run(&slow, &link, &CancelToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.stop, AgentStop::Timeout);
    assert!(started.elapsed() < Duration::from_secs(5));

    let cancel = CancelToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let outcome = BuiltinRuntime::new(Recording::new(script))
        .run(&task(worktree.root(), false, Access::ReadWrite), &link, &cancel)
        .await
        .unwrap();
    assert_eq!(outcome.stop, AgentStop::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

fn dies_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        });
        if !alive {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
