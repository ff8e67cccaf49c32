//! TaskCreate in a plain session, through `agency hook` with the event shapes Claude Code 2.1.197 sends
//! (harness/PROTOCOLS.md §4; the PostToolUse `tool_response` of TaskCreate as captured: `{"task": {"id",
//! "subject"}}`): the created task becomes a brief with the variety its metadata carries, and the agent that
//! takes it (TaskUpdate to in_progress) is gated by that brief's teachback.

use agency_core::teachback::TeachbackState;
use agency_core::variety::TeachbackMode;
use agency_core::{Brief, BriefId};
use agency_store::{Blackboard, SqliteBlackboard};
use serde_json::{Value, json};

use crate::hook_support::{TEACHBACK, activate, hook, start_brief};
use crate::support::Repo;

const SESSION: &str = "56fd0a6c-c1f5-4e27-8823-d60852da438f";
const SUB_AGENT: &str = "a1b2883fa2f929636";

/// An event as Claude Code sends it from the repository, in `SESSION`, from `agent` when given.
fn event(repo: &Repo, agent: Option<&str>, fields: Value) -> String {
    let mut event = json!({
        "session_id": SESSION, "transcript_path": "/dev/null", "cwd": repo.path(),
        "permission_mode": "default", "tool_use_id": "toolu_0002",
    });
    if let Some(agent) = agent {
        event["agent_id"] = json!(agent);
        event["agent_type"] = json!("general-purpose");
    }
    for (key, value) in fields.as_object().unwrap() {
        event[key] = value.clone();
    }
    event.to_string()
}

fn task_input(subject: &str, variety: [u8; 4]) -> Value {
    let [novelty, scope, uncertainty, risk] = variety;
    json!({"subject": subject, "description": format!("do {subject}"),
        "metadata": {"variety_dimensions":
            {"novelty": novelty, "scope": scope, "uncertainty": uncertainty, "risk": risk}}})
}

/// Creates a task the way Claude Code does: PreToolUse (validated, input rewritten), the tool runs with the
/// rewritten input, then PostToolUse with the task's id. Returns the PostToolUse answer.
fn create_task(repo: &Repo, agent: Option<&str>, id: &str, input: Value) -> Value {
    let pre = hook(
        repo,
        &[],
        &event(
            repo,
            agent,
            json!({"hook_event_name": "PreToolUse", "tool_name": "TaskCreate", "tool_input": input}),
        ),
    );
    assert_eq!(pre.decision(), "allow", "{pre:?}");
    let ran = pre.json["hookSpecificOutput"]["updatedInput"].clone();
    let subject = ran["subject"].clone();
    let post = hook(
        repo,
        &[],
        &event(
            repo,
            agent,
            json!({"hook_event_name": "PostToolUse", "tool_name": "TaskCreate", "tool_input": ran,
                "tool_response": {"task": {"id": id, "subject": subject}}, "duration_ms": 59}),
        ),
    );
    assert_eq!(post.code, Some(0), "{post:?}");
    post.json
}

fn write(repo: &Repo, agent: Option<&str>) -> String {
    event(
        repo,
        agent,
        json!({"hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"file_path": repo.path().join("hello.txt"), "content": "hi"}}),
    )
}

fn take(repo: &Repo, agent: Option<&str>, task: &str) -> String {
    event(
        repo,
        agent,
        json!({"hook_event_name": "PreToolUse", "tool_name": "TaskUpdate",
            "tool_input": {"taskId": task, "status": "in_progress"}}),
    )
}

fn store(repo: &Repo) -> SqliteBlackboard {
    SqliteBlackboard::open_read_only(repo.db()).unwrap()
}

fn task_brief(repo: &Repo, task: &str) -> Brief {
    let store = store(repo);
    let id = store
        .task_brief(SESSION, task)
        .unwrap()
        .unwrap_or_else(|| panic!("task {task} has no brief"));
    store.get_brief(id).unwrap()
}

#[test]
fn a_created_task_becomes_a_brief_and_gates_the_sub_agent_that_takes_it() {
    let repo = Repo::initialised();
    let told = create_task(&repo, None, "1", task_input("write hello", [2, 2, 2, 2]));
    let brief = task_brief(&repo, "1");
    assert_eq!(brief.title, "write hello");
    assert_eq!(brief.instructions, "do write hello");
    assert_eq!(brief.variety_score(), Some(8));
    let gates = brief.gates().unwrap();
    assert_eq!(gates.teachback_mode, TeachbackMode::Blocking);
    assert_eq!(brief.teachback, TeachbackState::Pending);
    let context = told["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert_eq!(told["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    assert!(
        context.contains(&format!("task 1 is brief {}", brief.id.short())),
        "{context}"
    );
    assert!(context.contains("blocking teachback"), "{context}");
    // Creating a task binds nobody: the session itself is still unbound.
    assert_eq!(store(&repo).session_brief(SESSION, None).unwrap(), None);

    // Before taking the task the sub-agent is unbound (no opinion, the default policy); taking it binds it.
    assert_eq!(hook(&repo, &[], &write(&repo, Some(SUB_AGENT))).json, Value::Null);
    let taken = hook(&repo, &[], &take(&repo, Some(SUB_AGENT), "1"));
    assert_eq!(taken.decision(), "allow", "taking a task changes no file");
    let context = taken.json["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains(&format!("brief {}", brief.id.short())),
        "{context}"
    );
    assert!(context.contains("send your teachback"), "{context}");
    assert_eq!(
        store(&repo).session_brief(SESSION, Some(SUB_AGENT)).unwrap(),
        Some(brief.id)
    );

    // Now the sub-agent's own Write is denied while the task's teachback is pending; the session is not.
    let denied = hook(&repo, &[], &write(&repo, Some(SUB_AGENT)));
    assert_eq!(denied.decision(), "deny", "{denied:?}");
    assert!(
        denied.reason().contains("teachback is pending"),
        "{}",
        denied.reason()
    );
    assert!(denied.reason().contains(&brief.id.short()), "{}", denied.reason());
    assert_eq!(hook(&repo, &[], &write(&repo, None)).json, Value::Null);

    // Its teachback, sent as a message, goes to that brief; once approved, the Write is allowed.
    let sent = hook(
        &repo,
        &[],
        &event(
            &repo,
            Some(SUB_AGENT),
            json!({"hook_event_name": "PreToolUse", "tool_name": "SendMessage",
                "tool_input": {"to": "team-lead", "message": TEACHBACK}}),
        ),
    );
    assert_eq!(sent.decision(), "allow", "{sent:?}");
    assert_eq!(task_brief(&repo, "1").teachback, TeachbackState::UnderReview);
    repo.agency(&["teachback", "approve", &brief.id.to_string()])
        .success();
    assert_eq!(
        hook(&repo, &[], &write(&repo, Some(SUB_AGENT))).decision(),
        "allow"
    );
}

#[test]
fn tasks_of_a_session_share_a_run_and_a_bound_creator_is_their_parent() {
    let repo = Repo::initialised();
    create_task(&repo, None, "1", task_input("first", [1, 1, 1, 1]));
    create_task(&repo, None, "2", task_input("second", [1, 2, 1, 1]));
    let (first, second) = (task_brief(&repo, "1"), task_brief(&repo, "2"));
    assert_eq!(first.run, second.run, "one run for the session's tasks");
    assert_eq!((first.parent, second.parent), (None, None));
    assert_eq!(
        store(&repo).session_tasks(SESSION).unwrap(),
        vec![("1".to_string(), first.id), ("2".to_string(), second.id)]
    );
    // The same PostToolUse delivered again opens nothing new.
    create_task(&repo, None, "2", task_input("second", [1, 2, 1, 1]));
    assert_eq!(task_brief(&repo, "2").id, second.id);
    assert_eq!(store(&repo).list_briefs(first.run).unwrap().len(), 2);

    // A sub-agent bound to its own brief creates a task: the task's brief is that brief's child.
    let own = start_brief(&repo, "1,1,1,1");
    repo.agency(&[
        "teachback",
        "start",
        "--brief",
        &own,
        "--session",
        SESSION,
        "--agent",
        "lead-agent",
    ])
    .success();
    create_task(&repo, Some("lead-agent"), "3", task_input("third", [3, 3, 3, 3]));
    let third = task_brief(&repo, "3");
    let own: BriefId = own.parse().unwrap();
    assert_eq!(third.parent, Some(own));
    assert_eq!(third.run, store(&repo).get_brief(own).unwrap().run);
    assert_eq!(third.variety_score(), Some(12));

    // An advisory task: whoever takes it may write at once.
    let taken = hook(&repo, &[], &take(&repo, Some("worker"), "1"));
    assert_eq!(taken.decision(), "allow");
    assert_eq!(
        hook(&repo, &[], &write(&repo, Some("worker"))).decision(),
        "allow"
    );
}

#[test]
fn tasks_without_a_brief_change_nothing() {
    let repo = Repo::initialised();
    // Let through without dimensions under shadow: no variety, so no brief and nothing to bind.
    let post = hook(
        &repo,
        &[],
        &event(
            &repo,
            None,
            json!({"hook_event_name": "PostToolUse", "tool_name": "TaskCreate",
                "tool_input": {"subject": "loose", "description": "d"},
                "tool_response": {"task": {"id": "1", "subject": "loose"}}}),
        ),
    );
    assert_eq!(post.json, Value::Null);
    assert_eq!(store(&repo).task_brief(SESSION, "1").unwrap(), None);
    // Taking an unknown task is decided like any other call: unbound, no opinion.
    let taken = hook(&repo, &[], &take(&repo, Some(SUB_AGENT), "1"));
    assert_eq!(taken.json, Value::Null);
    assert_eq!(
        store(&repo).session_brief(SESSION, Some(SUB_AGENT)).unwrap(),
        None
    );
    // A TaskUpdate that is not a claim binds nothing either.
    create_task(&repo, None, "2", task_input("real", [2, 2, 2, 2]));
    let done = event(
        &repo,
        Some(SUB_AGENT),
        json!({"hook_event_name": "PreToolUse", "tool_name": "TaskUpdate",
            "tool_input": {"taskId": "2", "status": "completed"}}),
    );
    assert_eq!(hook(&repo, &[], &done).json, Value::Null);
    assert_eq!(
        store(&repo).session_brief(SESSION, Some(SUB_AGENT)).unwrap(),
        None
    );
}

#[test]
fn taking_a_task_is_no_way_around_a_closed_gate() {
    let repo = Repo::initialised();
    create_task(&repo, None, "1", task_input("blocking", [2, 2, 2, 2]));
    create_task(&repo, None, "2", task_input("advisory", [1, 1, 1, 1]));
    let (blocking, advisory) = (task_brief(&repo, "1"), task_brief(&repo, "2"));
    assert_eq!(
        hook(&repo, &[], &take(&repo, Some(SUB_AGENT), "1")).decision(),
        "allow"
    );
    // Bound to a pending blocking brief, the sub-agent may not switch to the advisory task to write.
    let switched = hook(&repo, &[], &take(&repo, Some(SUB_AGENT), "2"));
    assert_eq!(switched.decision(), "deny", "{switched:?}");
    assert!(
        switched.reason().contains(&blocking.id.short()),
        "{}",
        switched.reason()
    );
    let bound = store(&repo).session_brief(SESSION, Some(SUB_AGENT)).unwrap();
    assert_eq!(bound, Some(blocking.id));
    assert_eq!(
        hook(&repo, &[], &write(&repo, Some(SUB_AGENT))).decision(),
        "deny"
    );
    // Once its own teachback is approved it may take the next task.
    activate(&repo, &blocking.id.to_string());
    assert_eq!(
        hook(&repo, &[], &take(&repo, Some(SUB_AGENT), "2")).decision(),
        "allow"
    );
    assert_eq!(
        store(&repo).session_brief(SESSION, Some(SUB_AGENT)).unwrap(),
        Some(advisory.id)
    );
}
