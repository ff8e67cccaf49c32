//! The built-in agent on a model that makes the mistakes real models make: each correctable one is fixed in
//! the same conversation, and the model calls it costs are pinned; one that persists stops the agent with
//! its reason whole.

use agency_core::variety::TeachbackMode;
use agency_exec::runtime::{Access, AgentStop, AgentTask, BuiltinRuntime, OutputCheck, Runtime};
use agency_llm::{Block, CancelToken, Role};
use serde_json::Value;

use crate::support::{Recording, Sandbox, TestLink, task};

const CALC: &str = "def add(a, b):\n    return a - b\n";

/// A check like the runner's: `output.tasks` must be a non-empty list, and every task needs a `title`.
fn tasks_check() -> OutputCheck {
    OutputCheck::new(|output: &Value| {
        let Some(tasks) = output["tasks"].as_array() else {
            return Err("tasks: expected a list".into());
        };
        let problems: Vec<String> = tasks
            .iter()
            .enumerate()
            .filter(|(_, task)| task["title"].as_str().is_none())
            .map(|(i, _)| format!("tasks[{i}].title: missing"))
            .collect();
        if tasks.is_empty() {
            return Err("tasks: expected at least one".into());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    })
}

/// Runs the built-in agent on `script` in a fresh worktree holding `calc.py`; `adjust` changes the task.
async fn run(
    script: &str,
    adjust: impl FnOnce(&mut AgentTask),
    runtime: impl FnOnce(BuiltinRuntime) -> BuiltinRuntime,
) -> (
    agency_exec::runtime::AgentOutcome,
    std::sync::Arc<Recording>,
    TestLink,
) {
    let sandbox = Sandbox::new(&[("calc.py", CALC)]);
    let worktree = sandbox.worktree("mistakes");
    let provider = Recording::new(script);
    let link = TestLink::new(TeachbackMode::Advisory, vec![]);
    let mut task = task(worktree.root(), false, Access::ReadWrite);
    adjust(&mut task);
    let outcome = runtime(BuiltinRuntime::new(provider.clone()))
        .run(&task, &link, &CancelToken::new())
        .await
        .unwrap();
    (outcome, provider, link)
}

/// The text the agent added to the request of `turn` (from 1), after the tool results: a reminder or a
/// note.
fn told_in_turn(provider: &Recording, turn: usize) -> String {
    let requests = provider.requests();
    let last = requests[turn - 1].messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    last.text()
}

#[tokio::test]
async fn a_report_that_misses_its_schema_is_fixed_in_the_same_conversation_for_one_more_call() {
    let script = r#"
replies:
  - role: implementer
    replies:
      - tool_calls:
          - {name: report_result, input: {status: done, summary: planned, output: {tasks: [{title: a}, {}, {}]}}}
      - tool_calls:
          - {name: report_result, input: {status: done, summary: planned, output: {tasks: [{title: a}, {title: b}, {title: c}]}}}
"#;
    let (outcome, provider, _) = run(script, |t| t.check_output = Some(tasks_check()), |r| r).await;

    assert_eq!(outcome.stop, AgentStop::Finished);
    assert_eq!(outcome.report.unwrap().output["tasks"][2]["title"], "c");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "one extra model call");
    let rejected = provider.results_sent_in_turn(2);
    assert_eq!(
        rejected,
        [(
            "report_result was not accepted: its `output` does not match the implementer schema:\n\
             tasks[1].title: missing\ntasks[2].title: missing\n\
             Fix every problem listed and call report_result again with the whole report (2 more tries \
             after this one)."
                .to_owned(),
            true
        )]
    );
    // The same conversation: the second request extends the first, its cached prefix unchanged.
    assert_eq!(requests[1].system, requests[0].system);
    assert_eq!(requests[1].tools, requests[0].tools);
    assert_eq!(requests[1].messages[0], requests[0].messages[0]);
}

#[tokio::test]
async fn a_report_still_wrong_after_its_repairs_stops_the_agent_with_every_problem() {
    let script = r#"
replies:
  - role: implementer
    reply:
      tool_calls:
        - {name: report_result, input: {status: done, summary: planned, output: {tasks: [{}, {}]}}}
"#;
    let (outcome, provider, _) = run(
        script,
        |t| {
            t.check_output = Some(tasks_check());
            t.limits.repair_attempts = 2;
        },
        |r| r,
    )
    .await;

    assert_eq!(
        outcome.stop,
        AgentStop::Mistake(
            "did not fix its report in 2 repairs in the same conversation; its output still does not match \
             the implementer schema:\ntasks[0].title: missing\ntasks[1].title: missing"
                .into()
        )
    );
    assert_eq!(outcome.report, None);
    assert_eq!(provider.requests().len(), 3, "the first report and two repairs");
}

#[tokio::test]
async fn a_turn_ended_with_prose_gets_one_reminder_to_report() {
    let script = r#"
replies:
  - role: implementer
    replies:
      - text: I think I am done.
      - tool_calls:
          - {name: report_result, input: {status: done, summary: "calc.add reviewed"}}
"#;
    let (outcome, provider, _) = run(script, |_| {}, |r| r).await;
    assert_eq!(outcome.stop, AgentStop::Finished);
    assert_eq!(outcome.report.unwrap().summary, "calc.add reviewed");
    assert_eq!(provider.requests().len(), 2, "one nudge, one extra call");
    let reminder = told_in_turn(&provider, 2);
    assert!(
        reminder.starts_with("You ended your turn without calling report_result.")
            && reminder.contains(r#""status": "done" | "partial" | "blocked", "summary": string"#),
        "{reminder}"
    );

    let hopeless = "replies:\n  - role: implementer\n    reply: {text: I think I am done.}\n";
    let (outcome, provider, _) = run(hopeless, |_| {}, |r| r).await;
    assert_eq!(
        outcome.stop,
        AgentStop::Mistake("ended its turn without calling report_result, again after a reminder".into())
    );
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn malformed_arguments_and_an_unknown_tool_are_answered_with_what_is_expected() {
    let script = r#"
replies:
  - role: implementer
    replies:
      - tool_calls:
          - {name: read_file, input: {file: calc.py}}
          - {name: readFile, input: {path: calc.py}}
          - {name: run_command, input: {argv: "sh check.sh"}}
      - tool_calls:
          - {name: report_result, input: {status: done, summary: read}}
"#;
    let (outcome, provider, _) = run(script, |_| {}, |r| r).await;
    assert_eq!(outcome.stop, AgentStop::Finished);
    assert_eq!(provider.requests().len(), 2);
    let results = provider.results_sent_in_turn(2);
    assert_eq!(
        results[0],
        (
            "invalid arguments for read_file: missing required field `path`; `file` is not one of \
             read_file's fields. Expected arguments: {\"path\": string, \"limit\"?: integer, \"offset\"?: \
             integer}"
                .to_owned(),
            true
        )
    );
    assert_eq!(
        results[1],
        (
            "there is no tool `readFile` here; the tools are: read_file, list_files, grep, edit_file, \
             write_file, run_command, submit_teachback, report_result, raise_signal, propose_path_amendment"
                .to_owned(),
            true
        )
    );
    assert!(
        results[2].1
            && results[2]
                .0
                .starts_with("invalid arguments for run_command: `argv` must be an array of string"),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_reply_cut_off_at_the_token_limit_is_asked_again_with_a_larger_cap() {
    let script = r#"
replies:
  - role: implementer
    replies:
      - text: "Here is the new calc.py:"
        stop_reason: max_tokens
      - tool_calls:
          - {name: read_file, input: {path: calc.py}}
        stop_reason: max_tokens
      - tool_calls:
          - {name: write_file, input: {path: calc.py, content: "def add(a, b):\n    return a + b\n"}}
          - {name: report_result, input: {status: done, summary: fixed}}
"#;
    let (outcome, provider, _) = run(script, |_| {}, |r| r.with_max_tokens_ceiling(Some(3_000))).await;
    assert_eq!(outcome.stop, AgentStop::Finished);
    let requests = provider.requests();
    let caps: Vec<u32> = requests.iter().map(|r| r.max_tokens).collect();
    assert_eq!(
        caps,
        [1_000, 2_000, 3_000],
        "doubled, up to what the model allows"
    );
    let told = told_in_turn(&provider, 2);
    assert!(
        told.starts_with("Your reply was cut off at the output token limit (1000 tokens)")
            && told.ends_with("Your next reply may be up to 2000 tokens."),
        "{told}"
    );
    // A cut reply's complete calls run; the note follows their results in the same message.
    let last = requests[2].messages.last().unwrap();
    assert!(matches!(
        &last.content[0],
        Block::ToolResult { is_error: false, .. }
    ));
    assert!(
        last.text().contains("(2000 tokens)") && last.text().ends_with("up to 3000 tokens."),
        "{}",
        last.text()
    );

    // Without a known ceiling the cap stays; cut off more often in a row than the repairs allow, it stops.
    let always_cut = "replies:\n  - role: implementer\n    reply: {text: 'Here', stop_reason: max_tokens}\n";
    let (outcome, provider, _) = run(always_cut, |t| t.limits.repair_attempts = 1, |r| r).await;
    assert_eq!(
        outcome.stop,
        AgentStop::Mistake("was cut off at the output token limit (1000 tokens) 2 times in a row".into())
    );
    assert!(provider.requests().iter().all(|r| r.max_tokens == 1_000));
}

#[tokio::test]
async fn the_same_call_over_and_over_is_noted_then_ends_as_a_loop() {
    let script = r#"
replies:
  - role: implementer
    reply:
      tool_calls:
        - {name: read_file, input: {path: calc.py}}
"#;
    let (outcome, provider, link) = run(script, |_| {}, |r| r).await;
    assert_eq!(
        outcome.stop,
        AgentStop::Mistake(
            "repeated the same read_file call (calc.py) 4 times in a row, after a note that it was looping"
                .into()
        )
    );
    assert_eq!(provider.requests().len(), 4);
    assert!(!provider.results_sent_in_turn(3)[0].0.contains("Note:"));
    let noted = &provider.results_sent_in_turn(4)[0];
    assert!(
        !noted.1
            && noted
                .0
                .contains("same read_file call, with the same arguments, 3 times in a row"),
        "{noted:?}"
    );
    // The looping call was not run.
    assert_eq!(link.tool_calls().len(), 3);
}
