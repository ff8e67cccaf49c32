//! Two agents on two briefs of one run edit the same file in their own worktrees without seeing each
//! other's changes; merging their branches reports the conflict instead of resolving it.

use agency_core::variety::TeachbackMode;
use agency_exec::MergeOutcome;
use agency_exec::runtime::{Access, AgentStop, BuiltinRuntime, Runtime};
use agency_llm::CancelToken;

use crate::support::{Recording, Sandbox, TestLink, task};

const SCRIPT: &str = r#"
replies:
  - brief: a
    replies:
      - tool_calls: [{name: edit_file, input: {path: shared.txt, old_string: two, new_string: two-a}}]
      - tool_calls: [{name: read_file, input: {path: shared.txt}}]
      - tool_calls: [{name: report_result, input: {status: done, summary: a}}]
  - brief: b
    replies:
      - tool_calls: [{name: edit_file, input: {path: shared.txt, old_string: two, new_string: two-b}}]
      - tool_calls: [{name: read_file, input: {path: shared.txt}}]
      - tool_calls: [{name: report_result, input: {status: done, summary: b}}]
"#;

#[tokio::test]
async fn parallel_agents_are_isolated_and_their_conflict_is_reported() {
    let sandbox = Sandbox::new(&[("shared.txt", "one\ntwo\nthree\n")]);
    let (a, b) = (sandbox.worktree("a"), sandbox.worktree("b"));
    let provider = Recording::new(SCRIPT);
    let runtime = BuiltinRuntime::new(provider.clone());
    let link = TestLink::new(TeachbackMode::Advisory, vec![]);
    let mut task_a = task(a.root(), false, Access::ReadWrite);
    task_a.meta.brief = Some("a".into());
    let mut task_b = task(b.root(), false, Access::ReadWrite);
    task_b.meta.brief = Some("b".into());
    let cancel = CancelToken::new();
    let (ran_a, ran_b) = tokio::join!(
        runtime.run(&task_a, &link, &cancel),
        runtime.run(&task_b, &link, &cancel)
    );
    assert_eq!(ran_a.unwrap().stop, AgentStop::Finished);
    assert_eq!(ran_b.unwrap().stop, AgentStop::Finished);

    // Each agent read back only its own edit.
    let reads: Vec<String> = provider
        .requests()
        .iter()
        .filter(|r| r.turn() == 3)
        .map(|r| format!("{:?}", r.messages.last()))
        .collect();
    assert_eq!(reads.len(), 2);
    for read in &reads {
        assert!(read.contains("two-a") != read.contains("two-b"), "{read}");
    }
    assert_eq!(
        std::fs::read_to_string(a.root().join("shared.txt")).unwrap(),
        "one\ntwo-a\nthree\n"
    );
    assert_eq!(
        std::fs::read_to_string(b.root().join("shared.txt")).unwrap(),
        "one\ntwo-b\nthree\n"
    );

    a.commit_all("brief a").unwrap();
    b.commit_all("brief b").unwrap();
    assert!(matches!(
        sandbox.repo.merge("agency/a", "merge a").unwrap(),
        MergeOutcome::Merged { .. }
    ));
    assert_eq!(
        sandbox.repo.merge("agency/b", "merge b").unwrap(),
        MergeOutcome::Conflict {
            files: vec!["shared.txt".into()]
        }
    );
    // The conflict was not resolved: main keeps a's version.
    assert_eq!(
        std::fs::read_to_string(sandbox.repo.root().join("shared.txt")).unwrap(),
        "one\ntwo-a\nthree\n"
    );
}
