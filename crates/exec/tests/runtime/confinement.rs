//! The built-in agent cannot read, write or edit outside its worktree: not through `../`, not through an
//! absolute path, not through a symlink inside the worktree that points out of it.

use agency_core::variety::TeachbackMode;
use agency_exec::runtime::{Access, AgentStop, BuiltinRuntime, Runtime};
use agency_llm::CancelToken;

use crate::support::{Recording, Sandbox, TestLink, canonical, task};

#[tokio::test]
async fn every_escape_is_refused_for_read_write_and_edit() {
    let sandbox = Sandbox::new(&[("calc.py", "x = 1\n")]);
    let worktree = sandbox.worktree("confined");
    let outside = canonical(sandbox.dir.path()).join("outside.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    std::os::unix::fs::symlink(canonical(sandbox.dir.path()), worktree.root().join("link")).unwrap();

    let relative = "../../outside.txt";
    let absolute = outside.display().to_string();
    let linked = "link/outside.txt";
    let mut calls = Vec::new();
    for path in [relative, absolute.as_str(), linked] {
        calls.push(format!("{{name: read_file, input: {{path: '{path}'}}}}"));
        calls.push(format!(
            "{{name: write_file, input: {{path: '{path}', content: pwned}}}}"
        ));
        calls.push(format!(
            "{{name: edit_file, input: {{path: '{path}', old_string: secret, new_string: pwned}}}}"
        ));
    }
    calls.push("{name: write_file, input: {path: 'link/new.txt', content: pwned}}".to_owned());
    calls.push("{name: grep, input: {pattern: secret, path: '..'}}".to_owned());
    calls.push("{name: run_command, input: {argv: [cat, outside.txt], cwd: '../..'}}".to_owned());
    let script = format!(
        "replies:\n  - role: implementer\n    replies:\n      - tool_calls: [{}]\n      - tool_calls: [{{name: report_result, input: {{status: done, summary: refused}}}}]\n",
        calls.join(", ")
    );
    let provider = Recording::new(&script);
    let link = TestLink::new(TeachbackMode::Advisory, vec![]);
    let outcome = BuiltinRuntime::new(provider.clone())
        .run(
            &task(worktree.root(), false, Access::ReadWrite),
            &link,
            &CancelToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.stop, AgentStop::Finished);

    let results = provider.results_sent_in_turn(2);
    assert_eq!(results.len(), calls.len());
    for ((content, is_error), call) in results.iter().zip(&calls) {
        assert!(*is_error, "{call} was not refused: {content}");
        assert!(content.contains("outside the worktree"), "{call}: {content}");
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret\n");
    assert!(!canonical(sandbox.dir.path()).join("new.txt").exists());
}
