//! TaskCreate binds work to briefs in a plain session (no runner), seed 000's delegation path.
//!
//! A task handed to an agent must carry its variety dimensions (checked on PreToolUse by
//! [`agency_core::intercept::task_create`]). Once Claude Code has created it, its PostToolUse carries the
//! task's id (`tool_response.task.id`) and the input as run, and [`created`] opens a brief for it on the
//! blackboard: the task's subject as title, its description as instructions, its variety (so score, gates
//! and teachback mode come from the scorer). The brief joins the run of the creating agent's own brief, as
//! its child, or else the run of the session's earlier tasks, or a new run for the session.
//!
//! The agent that takes the task — a `TaskUpdate` to `in_progress`, from a sub-agent (`agent_id`) or from
//! the session itself — is bound to that brief by [`claim`]: from then on its own tool calls pass the gate
//! of that brief's teachback, exactly as after `agency teachback start --session S --agent A`.

use agency_core::brief::{BriefPlacement, NewBrief};
use agency_core::intercept::teachback_text;
use agency_core::teachback::TeachbackState;
use agency_core::variety::{TeachbackMode, Variety};
use agency_core::{Brief, BriefId, Tier};
use agency_store::{Blackboard, NewRun, SqliteBlackboard};
use chrono::Utc;
use serde_json::Value;

use crate::answer::Answer;
use crate::event::HookEvent;
use crate::locate::HookEnv;
use crate::sessions;

/// Whether this event is a TaskCreate that Claude Code has run (PostToolUse).
pub fn is_task_created(event: &HookEvent) -> bool {
    event.event_name == "PostToolUse" && event.tool_name.as_deref() == Some("TaskCreate")
}

/// The task a PreToolUse takes, if it is a `TaskUpdate` moving a task to `in_progress`.
pub fn claimed_task(event: &HookEvent) -> Option<String> {
    if event.tool_name.as_deref() != Some("TaskUpdate") || event.tool_input["status"] != "in_progress" {
        return None;
    }
    task_id(&event.tool_input["taskId"])
}

/// A task id as the client writes it: a string ("1"), or a number from a model that dropped the quotes.
fn task_id(value: &Value) -> Option<String> {
    match value {
        Value::String(id) if !id.trim().is_empty() => Some(id.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Answers a TaskCreate's PostToolUse: opens and records the task's brief. Says nothing when there is
/// nothing to bind (no blackboard here, a task without variety dimensions, no session or task id); tells
/// the creating agent which brief the task became otherwise. Never blocks: the tool has already run.
pub fn created(event: &HookEvent, env: &HookEnv) -> Answer {
    match open_task_brief(event, env) {
        Ok(Some((task, brief))) => Answer::PostToolUseContext(created_text(&task, &brief)),
        Ok(None) => Answer::Silent,
        Err(problem) => {
            eprintln!("agency hook: the task could not be opened as a brief: {problem}");
            Answer::Silent
        }
    }
}

fn open_task_brief(event: &HookEvent, env: &HookEnv) -> Result<Option<(String, Brief)>, String> {
    let Some(session) = event.session_id.as_deref() else {
        return Ok(None);
    };
    let Ok(variety) = Variety::from_json(&event.tool_input["metadata"]["variety_dimensions"]) else {
        // Refused on PreToolUse under enforce; let through under shadow or warn: no variety, no brief.
        return Ok(None);
    };
    let Some(task) = task_id(&event.tool_response["task"]["id"]) else {
        return Err("the TaskCreate result has no task.id".into());
    };
    let Some(db) = env.db_path(event.cwd.as_deref()).filter(|db| db.is_file()) else {
        return Ok(None);
    };
    let store = SqliteBlackboard::open(&db).map_err(|e| e.to_string())?;
    if let Some(id) = store.task_brief(session, &task).map_err(|e| e.to_string())? {
        // Already recorded (the same event delivered twice): nothing new.
        let brief = store.get_brief(id).map_err(|e| e.to_string())?;
        return Ok(Some((task, brief)));
    }
    let placement = placement(&store, event, session)?;
    let text = |key: &str| {
        event.tool_input[key]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let subject = text("subject");
    let request = NewBrief {
        tier: Tier::T4,
        workstream: "session".into(),
        title: if subject.is_empty() {
            format!("task {task}")
        } else {
            subject
        },
        personality: None,
        instructions: text("description"),
        inputs: Vec::new(),
        variety: Some(variety),
        contract: None,
        depends_on: Vec::new(),
    };
    let brief = request.into_brief(placement);
    store.insert_brief(&brief).map_err(|e| e.to_string())?;
    store
        .bind_task(session, &task, brief.id)
        .map_err(|e| e.to_string())?;
    Ok(Some((task, brief)))
}

/// Where a task's brief goes: under the creating agent's own brief when it has one, else beside the
/// session's earlier tasks, else in a new run for the session.
fn placement(store: &SqliteBlackboard, event: &HookEvent, session: &str) -> Result<BriefPlacement, String> {
    let place = |run, parent, goal_anchor| BriefPlacement {
        id: BriefId::new(),
        run,
        parent,
        goal_anchor,
        retry_budget: 0,
        depends_on: Vec::new(),
        created_at: Utc::now(),
    };
    let creator =
        sessions::bound_brief(store, Some(session), event.agent_id.as_deref()).map_err(|e| e.to_string())?;
    if let Some(id) = creator {
        let parent = store.get_brief(id).map_err(|e| e.to_string())?;
        return Ok(place(parent.run, Some(parent.id), parent.goal_anchor));
    }
    let earlier = store.session_tasks(session).map_err(|e| e.to_string())?;
    if let Some((_, id)) = earlier.first() {
        let sibling = store.get_brief(*id).map_err(|e| e.to_string())?;
        return Ok(place(sibling.run, None, sibling.goal_anchor));
    }
    let goal = format!("the tasks of Claude Code session {session}");
    let repo = event
        .cwd
        .as_deref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let run = store
        .create_run(NewRun::new(goal.clone(), repo))
        .map_err(|e| e.to_string())?;
    Ok(place(run.id, None, goal))
}

fn created_text(task: &str, brief: &Brief) -> String {
    let score = brief
        .variety_score()
        .map_or_else(String::new, |s| format!("variety {s}, "));
    let rule = match brief.teachback_mode() {
        TeachbackMode::Blocking => "may not edit until its teachback is approved",
        TeachbackMode::Advisory => "sends a teachback, which is recorded, and may work at once",
    };
    format!(
        "agency: task {task} is brief {} \"{}\" ({score}{} teachback). Whoever takes it (TaskUpdate to \
         in_progress) works under that brief and {rule}.",
        brief.id.short(),
        brief.title,
        brief.teachback_mode().as_str()
    )
}

/// Binds the agent taking `task` (the event's sub-agent, else its session) to the task's brief, and
/// answers the claim: allowed — taking a task changes no file — with what the agent must do next. `None`
/// when the task has no brief (created without variety, or before the hook was installed), or when the
/// agent works under a brief whose gate is still closed: taking another task must not be a way around
/// its own teachback, so the call is then decided as any other (denied, with that brief's reason).
pub fn claim(db: &std::path::Path, event: &HookEvent, task: &str) -> Result<Option<Answer>, String> {
    let Some(session) = event.session_id.as_deref() else {
        return Ok(None);
    };
    let store = SqliteBlackboard::open_for_append(db).map_err(|e| e.to_string())?;
    let Some(id) = store.task_brief(session, task).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let agent = event.agent_id.as_deref();
    let current = store.session_brief(session, agent).map_err(|e| e.to_string())?;
    if let Some(current) = current.filter(|c| *c != id) {
        let current = store.get_brief(current).map_err(|e| e.to_string())?;
        if current.teachback_mode() == TeachbackMode::Blocking && current.teachback != TeachbackState::Active
        {
            return Ok(None);
        }
    }
    if current != Some(id) {
        store
            .bind_session(session, agent, id)
            .map_err(|e| e.to_string())?;
    }
    let brief = store.get_brief(id).map_err(|e| e.to_string())?;
    Ok(Some(Answer::AllowWithContext(claimed_text(task, &brief))))
}

fn claimed_text(task: &str, brief: &Brief) -> String {
    let next = match (brief.teachback_mode(), brief.teachback) {
        (_, TeachbackState::Active) => "Its teachback is approved: go ahead.".to_string(),
        (TeachbackMode::Advisory, _) => format!(
            "Send your teachback (a SendMessage starting with \"Teachback:\"); it is recorded and you may \
             work at once. {}",
            teachback_text::FORMAT_HINT
        ),
        (TeachbackMode::Blocking, TeachbackState::UnderReview) => {
            "Its teachback is under review: wait for the answer before editing.".to_string()
        }
        (TeachbackMode::Blocking, _) => format!(
            "Before editing anything, send your teachback (a SendMessage starting with \"Teachback:\") and \
             wait for its approval; until then only reading is allowed. {}",
            teachback_text::FORMAT_HINT
        ),
    };
    format!(
        "agency: you took task {task}, which is brief {} \"{}\" ({} teachback, {}). {next}",
        brief.id.short(),
        brief.title,
        brief.teachback_mode().as_str(),
        brief.teachback.as_str().replace('_', " ")
    )
}
