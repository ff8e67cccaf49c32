//! End to end with the real Claude Code CLI (harness/PROTOCOLS.md §4): in a plain session (no runner), the
//! main agent creates a task with its variety and hands it to a sub-agent; `agency hook`, registered on
//! PreToolUse and on TaskCreate's PostToolUse, opens the task as a blocking brief, binds the sub-agent that
//! takes it, and denies that sub-agent's Write while the brief's teachback is pending.

use agency_store::{Blackboard, SqliteBlackboard};
use agency_testkit::{FakeAnthropic, Reply};
use serde_json::json;

use crate::hook_claude::{agency_hook, assert_ran, claude_settings, gate_denial};
use crate::hook_support::e2e_client;
use crate::support::Repo;

const SESSION: &str = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6";

#[test]
fn claude_code_task_create_binds_the_sub_agent_that_takes_it() {
    if !e2e_client("claude") {
        return;
    }
    let repo = Repo::initialised();
    let hello = repo.path().join("hello.txt");
    let server = FakeAnthropic::start(vec![
        Reply::tool_use(
            "TaskCreate",
            json!({"subject": "write hello", "description": "write hello.txt containing hi",
                "metadata": {"variety_dimensions": {"novelty": 2, "scope": 2, "uncertainty": 2, "risk": 2}}}),
        ),
        Reply::tool_use(
            "Agent",
            json!({"description": "write hello", "prompt": "SUBTASK: take task 1 and do it",
                "subagent_type": "general-purpose"}),
        ),
        Reply::text("done"),
    ])
    .expect("fake server");
    // The sub-agent's own conversation starts from its prompt.
    server.set_rule(
        "SUBTASK",
        vec![
            Reply::tool_use("TaskUpdate", json!({"taskId": "1", "status": "in_progress"})),
            Reply::tool_use("Write", json!({"file_path": hello, "content": "hi"})),
            Reply::text("sub done"),
        ],
    );
    let hook = json!([{"type": "command", "command": agency_hook(), "timeout": 10}]);
    let settings = json!({"hooks": {
        "PreToolUse": [{"hooks": hook}],
        "PostToolUse": [{"matcher": "TaskCreate", "hooks": hook}],
    }});
    let out = claude_settings(
        &repo,
        &server,
        &settings,
        &[],
        &["--session-id", SESSION, "--permission-mode", "acceptEdits"],
    );
    assert_ran(&out);

    let store = SqliteBlackboard::open_read_only(repo.db()).unwrap();
    let id = store.task_brief(SESSION, "1").unwrap().unwrap_or_else(|| {
        panic!(
            "task 1 was not opened as a brief: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let brief = store.get_brief(id).unwrap();
    assert_eq!(brief.title, "write hello");
    assert_eq!(brief.variety_score(), Some(8));
    assert!(
        !hello.exists(),
        "the sub-agent wrote while its task's teachback was pending"
    );
    let denial = gate_denial(&server).unwrap_or_else(|| {
        panic!(
            "the denial never reached the sub-agent: {:#?}",
            server.tool_results()
        )
    });
    assert!(
        denial["content"].as_str().unwrap().contains(&brief.id.short()),
        "{denial}"
    );
    // The sub-agent, not the session, was bound: the main agent stays unbound.
    assert_eq!(store.session_brief(SESSION, None).unwrap(), None);
}
