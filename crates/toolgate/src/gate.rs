//! The PreToolUse decision against the blackboard: find the brief, read its teachback state, run the
//! interception matrix ([`agency_core::intercept`]) and turn the verdict into an [`Answer`]. Reads go through
//! a read-only handle; only a submission or a denial to record opens the blackboard for writing.
//!
//! Failures are never panics. For a runner-spawned agent ([`ENV_BRIEF`] set) any failure denies the call;
//! in a plain session `teachback.unbound_session_default` decides, and an open gate says so loudly.
//!
//! The rollout mode (shadow, warn, enforce) can turn a denial into an allow, so it is never read from a file
//! the agent may have written: a runner passes it in [`ROLLOUT_ENV_VAR`], and a plain session takes it from
//! the team.yaml committed at HEAD. It is looked up only when a call would be denied, or a TaskCreate is
//! refused: the allow path pays nothing for it.

use std::path::Path;

use agency_core::config::{ROLLOUT_ENV_VAR, RolloutMode, TeachbackConfig, TeamConfig, UnboundSessionPolicy};
use agency_core::event::{EventPayload, payload};
use agency_core::intercept::{self, GateState, ToolGateDecision, ToolKind, task_create};
use agency_core::teachback::{TeachbackAction, TeachbackState, transition};
use agency_core::variety::TeachbackMode;
use agency_core::{Brief, BriefId, NewEvent, Teachback};
use agency_store::{Blackboard, RedactingBlackboard, SqliteBlackboard};
use chrono::Utc;
use std::sync::Arc;

use crate::answer::Answer;
use crate::event::HookEvent;
use crate::history;
use crate::locate::{ENV_BRIEF, HookEnv};
use crate::sessions;
use crate::tasks;

/// The answer to one well-formed event.
pub fn answer(event: &HookEvent, env: &HookEnv) -> Answer {
    if event.event_name != "PreToolUse" {
        return Answer::Silent;
    }
    let runner = env.brief.is_some();
    match pre_tool_use(event, env) {
        Ok(answer) => answer,
        Err(problem) if runner => Answer::Deny(format!(
            "agency hook: the teachback gate cannot decide ({problem}), so this call is denied: this agent was \
             started by a runner ({ENV_BRIEF} is set) and the gate fails closed. Tell your lead."
        )),
        Err(problem) => plain_session_failure(event, env, &problem),
    }
}

/// A plain session whose gate cannot decide: closed or open as configured, and loud either way.
fn plain_session_failure(event: &HookEvent, env: &HookEnv, problem: &str) -> Answer {
    let policy = env
        .team_config(event.cwd.as_deref())
        .map(|c| c.teachback.unbound_session_default)
        .unwrap_or(UnboundSessionPolicy::Allow);
    match policy {
        UnboundSessionPolicy::Deny => Answer::Deny(format!(
            "agency hook: the teachback gate cannot decide ({problem}); teachback.unbound_session_default is \
             deny, so the call is denied"
        )),
        UnboundSessionPolicy::Allow => Answer::OpenWithWarning(format!(
            "agency hook: the teachback gate cannot decide ({problem}); the gate is OPEN for this call because \
             teachback.unbound_session_default is allow"
        )),
    }
}

/// The common case answered from a blackboard already open (the gate service's): a PreToolUse the brief's
/// teachback state allows whatever the configuration says (an open gate, or a call that only reads).
/// `None` for anything else, which takes the whole decision ([`answer`]): nothing is ever denied here, and
/// an error reading the brief also falls through, to be reported there.
pub fn open_gate_allows(store: &dyn Blackboard, id: BriefId, event: &HookEvent) -> Option<Answer> {
    if event.event_name != "PreToolUse" {
        return None;
    }
    let kind = intercept::classify(event.tool_name.as_deref()?, &event.tool_input);
    let brief = store.get_brief(id).ok()?;
    intercept::allowed_regardless(&kind, brief.teachback, brief.teachback_mode()).then_some(Answer::Allow)
}

fn pre_tool_use(event: &HookEvent, env: &HookEnv) -> Result<Answer, String> {
    let cwd = event.cwd.as_deref();
    let tool = event
        .tool_name
        .as_deref()
        .ok_or("the PreToolUse event has no tool_name")?;
    let kind = intercept::classify(tool, &event.tool_input);
    let db = env.db_path(cwd);
    let bound = match (&env.brief, &db) {
        (Some(_), None) => {
            return Err("no blackboard: set AGENCY_DB to the run's database".into());
        }
        (Some(prefix), Some(db)) => {
            let store = SqliteBlackboard::open_read_only(db).map_err(|e| e.to_string())?;
            // A full id is looked up directly; only a prefix needs resolving (which scans the id index).
            let id = match prefix.parse::<BriefId>() {
                Ok(id) => id,
                Err(_) => store
                    .resolve_brief(prefix)
                    .map_err(|e| format!("{ENV_BRIEF}={prefix}: {e}"))?,
            };
            Some((store, id))
        }
        (None, Some(db)) if db.is_file() => {
            // Taking a task that TaskCreate opened as a brief binds the taker to it (plain sessions only: a
            // runner's agent has its brief already).
            if let Some(task) = tasks::claimed_task(event)
                && let Some(answer) = tasks::claim(db, event, &task)?
            {
                return Ok(answer);
            }
            let store = SqliteBlackboard::open_read_only(db).map_err(|e| e.to_string())?;
            sessions::bound_brief(&store, event.session_id.as_deref(), event.agent_id.as_deref())
                .map_err(|e| e.to_string())?
                .map(|id| (store, id))
        }
        (None, _) => None,
    };
    let Some((store, id)) = bound else {
        let config = env.team_config(cwd)?;
        return unbound(&kind, event, env, &config);
    };
    let brief = store.get_brief(id).map_err(|e| {
        let e = e.to_string();
        match &env.brief {
            Some(typed) => format!("{ENV_BRIEF}={typed}: {e}"),
            None => e,
        }
    })?;
    let mode = brief.teachback_mode();
    // The common case, an open gate or a read, needs nothing more: no team.yaml, no writes.
    if intercept::allowed_regardless(&kind, brief.teachback, mode) {
        return Ok(Answer::Allow);
    }
    let config = env.team_config(cwd)?;
    let corrections = if brief.teachback == TeachbackState::Correcting {
        history::latest_corrections(&store, &brief).map_err(|e| e.to_string())?
    } else {
        Vec::new()
    };
    // Decided as under enforce; only a denial needs the real rollout mode, which may soften it.
    let gate = GateState {
        state: brief.teachback,
        mode,
        rollout: RolloutMode::Enforce,
    };
    let db = db.unwrap_or_default();
    // Only a submission or a denial writes; it opens its handle while this one still holds the WAL index.
    let writer = || appender(&db, store);
    let verdict = match intercept::decide(&kind, gate, &config.teachback, &corrections) {
        ToolGateDecision::Deny { reason } => ToolGateDecision::Deny { reason }.under(rollout(env, cwd)?),
        verdict => verdict,
    };
    Ok(match verdict {
        ToolGateDecision::Allow if kind == ToolKind::TaskCreate => task_create_answer(event, env)?,
        ToolGateDecision::Allow => Answer::Allow,
        ToolGateDecision::Submit(teachback) => match submit(writer(), &brief, mode, &teachback, event) {
            Ok(()) => Answer::Allow,
            Err(problem) => Answer::Deny(format!(
                "agency hook: your teachback could not be recorded ({problem}); send it again"
            )),
        },
        ToolGateDecision::Deny { reason } => {
            record(
                writer(),
                &brief,
                tool,
                &reason,
                RolloutMode::Enforce,
                &config.teachback,
            );
            Answer::Deny(format!(
                "{reason} (brief {} \"{}\")",
                brief.id.short(),
                brief.title
            ))
        }
        ToolGateDecision::WouldDeny { rollout, reason } => {
            record(writer(), &brief, tool, &reason, rollout, &config.teachback);
            match rollout {
                RolloutMode::Warn => Answer::Warn(reason),
                _ => Answer::Allow,
            }
        }
    })
}

/// The rollout mode in force. A runner-spawned agent's is the one its runner resolved and passed in
/// [`ROLLOUT_ENV_VAR`] (enforce when it passed none); a plain session's is the committed team.yaml's,
/// overridden by the variable it names (`AGENCY_TEACHBACK_MODE`) in the hook's environment.
fn rollout(env: &HookEnv, cwd: Option<&Path>) -> Result<RolloutMode, String> {
    if env.brief.is_some() {
        let Some(value) = env.rollout.as_deref() else {
            return Ok(RolloutMode::Enforce);
        };
        return RolloutMode::ALL
            .into_iter()
            .find(|mode| mode.as_str().eq_ignore_ascii_case(value.trim()))
            .ok_or_else(|| {
                format!("{ROLLOUT_ENV_VAR}: expected one of shadow, warn, enforce, found {value:?}")
            });
    }
    let config = env.committed_team_config(cwd)?;
    let value = std::env::var(&config.teachback.mode_env_var).ok();
    config
        .effective_teachback_mode(value.as_deref())
        .map_err(|e| e.to_string())
}

/// A session bound to no brief: TaskCreate is still validated; everything else follows the policy.
fn unbound(kind: &ToolKind, event: &HookEvent, env: &HookEnv, config: &TeamConfig) -> Result<Answer, String> {
    if *kind == ToolKind::TaskCreate {
        return task_create_answer(event, env);
    }
    Ok(match (config.teachback.unbound_session_default, kind) {
        (UnboundSessionPolicy::Deny, k) if *k != ToolKind::ReadOnly => Answer::Deny(
            "agency hook: this session is bound to no brief and teachback.unbound_session_default is deny; \
             bind it with `agency teachback start --session <session_id> --brief <brief>`"
                .into(),
        ),
        _ => Answer::Silent,
    })
}

/// TaskCreate must carry variety dimensions; a valid one runs with the derived score and gates added.
fn task_create_answer(event: &HookEvent, env: &HookEnv) -> Result<Answer, String> {
    let reason = match task_create::validate(&event.tool_input) {
        Ok(updated) => return Ok(Answer::AllowUpdated(updated)),
        Err(reason) => reason,
    };
    Ok(match rollout(env, event.cwd.as_deref())? {
        RolloutMode::Enforce => Answer::Deny(reason),
        RolloutMode::Warn => Answer::Warn(reason),
        RolloutMode::Shadow => Answer::Silent,
    })
}

/// A handle to record with, opened while `reader` is still open: a process that opens a WAL database
/// nobody else holds must first re-read the whole WAL, and the reader already did. The reader is closed
/// before the writer, so the writer's close is the last one and may checkpoint (see
/// [`SqliteBlackboard::open_for_append`]).
///
/// What it writes (a teachback's text, a denied command line) is redacted like everything else recorded
/// (see [`agency_store::RedactingBlackboard`]): secrets in this process's environment and known token
/// shapes.
fn appender(db: &Path, reader: SqliteBlackboard) -> agency_store::Result<Arc<dyn Blackboard>> {
    let writer = SqliteBlackboard::open_for_append(db);
    drop(reader);
    let names = agency_core::config::TeamConfig::default().secret_env_names();
    let redactor = agency_core::redact::Redactor::from_process_env(&names);
    Ok(RedactingBlackboard::wrap(Arc::new(writer?), redactor))
}

/// Records the teachback a tool call carried and moves the brief on.
fn submit(
    store: agency_store::Result<Arc<dyn Blackboard>>,
    brief: &Brief,
    mode: TeachbackMode,
    teachback: &Teachback,
    event: &HookEvent,
) -> Result<(), String> {
    let next = transition(brief.teachback, mode, &TeachbackAction::Submit).map_err(|e| e.to_string())?;
    let store = store.map_err(|e| e.to_string())?;
    let payload = EventPayload::TeachbackSubmitted(payload::TeachbackSubmitted {
        // A plain struct of strings and lists: serialising it cannot fail.
        teachback: serde_json::to_value(teachback).unwrap_or_default(),
        text: Some(teachback.to_string()),
        from: Some(brief.teachback),
        to: Some(next),
        via: event.tool_name.clone(),
        session_id: event.session_id.clone(),
        agent_id: event.agent_id.clone(),
        ..payload::TeachbackSubmitted::default()
    });
    let new_event = NewEvent::typed(brief.run, payload).brief(brief.id);
    store
        .set_teachback_state(brief.id, brief.teachback, next, new_event)
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Records a denial (or a would-have-been denial), and raises a stall alert if one is due. Best effort:
/// the call is answered the same whether or not the record could be written.
fn record(
    store: agency_store::Result<Arc<dyn Blackboard>>,
    brief: &Brief,
    tool: &str,
    reason: &str,
    rollout: RolloutMode,
    config: &TeachbackConfig,
) {
    let result = store.and_then(|store| {
        let payload = EventPayload::TeachbackDenied(payload::TeachbackDenied {
            tool: tool.to_string(),
            rollout: Some(rollout.as_str().to_string()),
            blocked: Some(rollout == RolloutMode::Enforce),
            teachback_state: Some(brief.teachback),
            reason: Some(reason.to_string()),
            ..payload::TeachbackDenied::default()
        });
        store.append_event(NewEvent::typed(brief.run, payload).brief(brief.id))?;
        history::raise_due(store.as_ref(), brief, config, Utc::now())?;
        Ok(())
    });
    if let Err(err) = result {
        eprintln!("agency hook: could not record the gate's decision: {err}");
    }
}
