//! The goal hooks for one Claude Code / Codex session, answered through `agency hook` (seed pi-goals §8):
//!
//! - **SessionStart** (every source: startup, resume, clear, compact) and **PostCompact** inject the
//!   byte-stable summary of the active goals as `additionalContext`, so the goals survive compaction and a
//!   provider's prompt cache keeps hitting;
//! - **PostToolUse** counts file-changing tool calls (`Write`, `Edit`, `MultiEdit`, `NotebookEdit`,
//!   `apply_patch`) since plan.md was last changed; after [`ENV_REMINDER_EVERY`] of them (default 8) while a
//!   goal is active it injects the fixed reminder once and starts counting again. State is re-sent only when
//!   stale: re-injecting every turn teaches a model to ignore it;
//! - **Stop** keeps the session working (`decision: block`, with each open goal's missing items) while a goal
//!   is active, or done by hand without a sign-off record, and the session's stop budget
//!   ([`ENV_STOP_BUDGET`], default 8 continuations) remains. A stop with `stop_hook_active: false` is a new
//!   turn and resets the count; a spent budget lets the session stop and logs why in plan.md.
//!
//! Per-session state lives in `.agency/goal-sessions/<session>.json` ([`super::session`]); a loop paused or
//! cleared there (`agency goal loop`) lets the session stop. Before a Stop hook's block the cheap loop judge
//! reads the agent's last response ([`loop_judge_prompt`]): a client that asks for it (`"loop_judge":
//! true` with `last_assistant_message`, as pi's extension does) gets the prompt with the block and asks its
//! own model; for Claude Code agency asks the session's model itself ([`super::loop_judge`]), and a pause
//! lets the session stop until the user's next prompt (**UserPromptSubmit**). Everything fails open: a goal hook that cannot read its plan
//! stays silent rather than trapping a session.

use std::io::Write;
use std::path::{Path, PathBuf};

use agency_core::goals::{Goal, GoalStatus, PlanDoc, log_entry, render_active_summary};
use chrono::Utc;
use serde_json::{Value, json};

use super::goal_loop::{LoopVerdict, PAUSED_BY_JUDGE, apply_verdict, read_verdict};
use super::loop_judge;
use super::plan_file::PlanFile;
use super::records::Records;
use super::session::{LoopState, Session};
use agency_toolgate::HookEnv;
use agency_toolgate::HookEvent;

use super::records::open_goals;
pub use super::session::ENV_STOP_BUDGET;
use super::session::{env_number, stop_budget};

/// File-changing tool calls without a plan.md change before the reminder.
pub const ENV_REMINDER_EVERY: &str = "AGENCY_GOAL_REMINDER_EVERY";
/// The plan file, relative to the session's directory (default plan.md at the repository's top level).
pub const ENV_PLAN: &str = "AGENCY_PLAN";

const DEFAULT_REMINDER_EVERY: u32 = 8;

/// The reminder, the same bytes every time (pi-goals §8a).
pub const REMINDER: &str = "<system-reminder>\nagency goals: several files changed since plan.md was last updated.\n\
- task: tick the subtasks you finished in plan.md; add the ones you found.\n\
- log: append one short line to ## Log (append, do not rewrite).\n\
- goal: when a goal's evidence is committed, sign it off with `agency goal complete <id> --path <file>`; do not \
set status: done by hand.\n\
- autonomy: keep working toward the active goals; do not stop to ask unless genuinely blocked.\n</system-reminder>";

const SUMMARY_FOOTER: &str = "\nSign a goal off with `agency goal complete <id> --path <evidence file>` once its \
done_when holds and the work is committed; a goal set done by hand is shown as unsigned.\n";

/// Whether the goal hooks answer this event (the teachback gate answers PreToolUse).
pub fn handles(event_name: &str) -> bool {
    matches!(
        event_name,
        "SessionStart" | "PostCompact" | "PostToolUse" | "Stop" | "UserPromptSubmit"
    )
}

/// A goal hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoalAnswer {
    /// Nothing to say.
    Silent,
    /// Add this text to the model's context (`hookSpecificOutput.additionalContext`).
    Context {
        /// The event answered.
        event: String,
        /// The text.
        text: String,
    },
    /// Do not stop; keep working on this.
    Block {
        /// What to keep working on.
        reason: String,
        /// The loop judge's prompt, when the client asked for one (`"loop_judge": true`, pi's extension):
        /// it asks its main model and hands the answer to `agency goal loop verdict`.
        loop_judge: Option<String>,
        /// A line for the user, not the model (`systemMessage`): why the loop judge could not run.
        notice: Option<String>,
    },
    /// The session may stop; tell the user why (`systemMessage`): the loop judge paused the loop.
    Notice(String),
}

/// Answers one goal event; `raw` is the event as sent (for fields the shared parser does not keep).
pub fn answer(event: &HookEvent, raw: &Value, env: &HookEnv) -> GoalAnswer {
    let Some(cwd) = event.cwd.clone().or_else(|| env.cwd.clone()) else {
        return GoalAnswer::Silent;
    };
    let plan = PlanFile::locate(&cwd, std::env::var_os(ENV_PLAN).map(PathBuf::from).as_deref());
    let Ok(Some(doc)) = plan.read_or_empty() else {
        return GoalAnswer::Silent;
    };
    let session = Session::load(&plan.root, event.session_id.as_deref());
    match event.event_name.as_str() {
        "SessionStart" | "PostCompact" => summary(&event.event_name, &doc),
        "PostToolUse" => post_tool_use(event, &doc, &plan, session),
        "Stop" => {
            let active = raw
                .get("stop_hook_active")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let records = env
                .db_path(Some(&cwd))
                .and_then(|db| Records::read(&db, &plan).ok())
                .unwrap_or_default();
            let judged = raw.get("loop_judge").and_then(Value::as_bool) == Some(true);
            let last = raw
                .get("last_assistant_message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match stop(&doc, &plan, &records, session, active) {
                GoalAnswer::Block { reason, .. } if judged => GoalAnswer::Block {
                    loop_judge: Some(loop_judge_prompt(&reason, last)),
                    reason,
                    notice: None,
                },
                GoalAnswer::Block { reason, .. } if loop_judge::wanted(raw) => {
                    judge_here(event, raw, &plan, reason, last)
                }
                answer => answer,
            }
        }
        "UserPromptSubmit" => {
            resume_after_the_user_answered(session);
            GoalAnswer::Silent
        }
        _ => GoalAnswer::Silent,
    }
}

/// The loop judge run by agency itself (Claude Code, [`loop_judge`]) before the Stop hook's continuation: a
/// pause lets the session stop and says why; anything else, a judge that could not run included, keeps the
/// block (fail-open), with a notice for the user when the judge could not run.
fn judge_here(event: &HookEvent, raw: &Value, plan: &PlanFile, reason: String, last: &str) -> GoalAnswer {
    let prompt = loop_judge_prompt(&reason, last);
    let asked = loop_judge::session_model(raw).and_then(|model| loop_judge::ask(&prompt, &model));
    let (verdict, notice) = match asked {
        Ok(answer) => (read_verdict(&answer), None),
        Err(why) => (
            LoopVerdict::Continue(why.clone()),
            Some(format!(
                "agency: the goal loop judge could not run ({why}); the loop goes on, bounded by its stop budget"
            )),
        ),
    };
    let session_id = event.session_id.as_deref().unwrap_or_default();
    let mut session = Session::load(&plan.root, event.session_id.as_deref());
    let doc = plan.read_or_empty().ok().flatten();
    if let (Some(doc), LoopVerdict::Pause(_)) = (&doc, &verdict)
        && let Some(text) = apply_verdict(&mut session, session_id, &verdict, doc)
    {
        let _ = plan.write(&text);
    }
    session.save();
    match verdict {
        LoopVerdict::Pause(why) if session.loop_state == LoopState::Paused => GoalAnswer::Notice(format!(
            "agency: goal loop paused by the loop judge: {why}. Your next prompt resumes it."
        )),
        _ => GoalAnswer::Block {
            reason,
            loop_judge: None,
            notice,
        },
    }
}

/// A prompt from the user ends a pause the loop judge made (the agent asked; the user answered). A pause
/// by `agency goal loop pause` stays.
fn resume_after_the_user_answered(mut session: Session) {
    let by_judge = session
        .paused_because
        .as_deref()
        .is_some_and(|why| why.starts_with(PAUSED_BY_JUDGE));
    if session.loop_state == LoopState::Paused && by_judge {
        session.loop_state = LoopState::On;
        session.paused_because = None;
        session.save();
    }
}

fn summary(event: &str, doc: &PlanDoc) -> GoalAnswer {
    if doc.active_goals().next().is_none() {
        return GoalAnswer::Silent;
    }
    GoalAnswer::Context {
        event: event.to_string(),
        text: format!("{}{SUMMARY_FOOTER}", render_active_summary(doc)),
    }
}

fn post_tool_use(event: &HookEvent, doc: &PlanDoc, plan: &PlanFile, mut session: Session) -> GoalAnswer {
    let tool = event.tool_name.as_deref().unwrap_or_default();
    if !matches!(
        tool,
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" | "apply_patch"
    ) {
        return GoalAnswer::Silent;
    }
    if touches_plan(&event.tool_input, plan) {
        session.edits_since_plan = 0;
        session.save();
        return GoalAnswer::Silent;
    }
    session.edits_since_plan += 1;
    let every = env_number(ENV_REMINDER_EVERY, DEFAULT_REMINDER_EVERY);
    if session.edits_since_plan < every || doc.active_goals().next().is_none() {
        session.save();
        return GoalAnswer::Silent;
    }
    session.edits_since_plan = 0;
    session.save();
    GoalAnswer::Context {
        event: "PostToolUse".into(),
        text: REMINDER.to_string(),
    }
}

/// Whether a tool call changed the plan file (a `file_path` naming it, or a patch touching it).
fn touches_plan(input: &Value, plan: &PlanFile) -> bool {
    let relative = plan.relative();
    if let Some(path) = input
        .get("file_path")
        .or_else(|| input.get("notebook_path"))
        .and_then(Value::as_str)
    {
        let path = Path::new(path);
        return path == plan.path || path.ends_with(&relative);
    }
    input.get("command").and_then(Value::as_str).is_some_and(|patch| {
        patch
            .lines()
            .any(|l| l.starts_with("*** ") && l.trim_end().ends_with(&relative))
    })
}

fn stop(
    doc: &PlanDoc,
    plan: &PlanFile,
    records: &Records,
    mut session: Session,
    stop_hook_active: bool,
) -> GoalAnswer {
    let open = open_goals(doc, records);
    // No session id, no counter: the only loop guard left is stop_hook_active itself.
    if !session.is_kept() && stop_hook_active {
        return GoalAnswer::Silent;
    }
    // Paused or cleared (`agency goal loop`, or the loop judge): the session may stop.
    if session.loop_state != LoopState::On {
        return GoalAnswer::Silent;
    }
    if !stop_hook_active {
        session.stop_blocks = 0;
    }
    if open.is_empty() {
        session.save();
        return GoalAnswer::Silent;
    }
    let budget = stop_budget();
    let ids: Vec<&str> = open
        .iter()
        .map(|g| g.id.as_deref().unwrap_or("(no id)"))
        .collect();
    if session.stop_blocks >= budget {
        session.stop_blocks = 0;
        session.save();
        let line = format!(
            "session stopped with goals open ({}): its stop budget of {budget} continuations is spent",
            ids.join(", ")
        );
        if let Ok(text) = doc.append_log(&log_entry(Utc::now(), &line)) {
            let _ = plan.write(&text);
        }
        return GoalAnswer::Silent;
    }
    session.stop_blocks += 1;
    let mut reason = format!(
        "agency goals: {} goal(s) in {} have no sign-off yet, so keep working (continuation {} of {budget}).\n",
        open.len(),
        plan.relative(),
        session.stop_blocks
    );
    for goal in &open {
        reason.push_str(&goal_gap(goal, records));
    }
    reason.push_str(
        "When a goal's done_when holds and the work is committed, run `agency goal complete <id> --path <evidence \
         file>`. If a goal cannot be finished, say why with `agency goal cancel <id> --reason \"...\"`.",
    );
    session.save();
    GoalAnswer::Block {
        reason,
        loop_judge: None,
        notice: None,
    }
}

/// The cheap loop judge's prompt (seed pi-goals D5/D10, prompt 5): it reads the agent's last response and
/// answers whether the loop should pause. Conservative: a claim of being done is not a reason to pause, only
/// a need for the user is. It can be fooled; the stop budget is the backstop, and it never signs anything
/// off.
pub fn loop_judge_prompt(reason: &str, last_response: &str) -> String {
    let last: String = last_response
        .chars()
        .rev()
        .take(LOOP_JUDGE_TAIL)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!(
        "You are agency's loop judge. A coding agent stopped while goals are still open, and would be told to \
         keep working:\n\n{reason}\n\nIts last response (the end of it):\n<response>\n{last}\n</response>\n\n\
         Decide whether the loop should pause. Answer done: true ONLY if the response shows the agent cannot go \
         on without its user: it asks the user a question it needs answered, or it is blocked on something only \
         the user can provide (access, a decision, a missing file), and it says what. Claiming the work is done, \
         finished or complete is NOT a reason to pause: goals are finished only by a sign-off, so answer done: \
         false then. When unsure, answer done: false.\n\nReply with one JSON object and nothing else: \
         {{\"done\": true or false, \"reason\": \"one short sentence\"}}"
    )
}

/// How much of the agent's last response the loop judge reads (characters, from the end).
const LOOP_JUDGE_TAIL: usize = 4_000;

/// One open goal and what is known to be missing.
fn goal_gap(goal: &Goal, records: &Records) -> String {
    let id = goal.id.as_deref().unwrap_or("(no id)");
    let mut out = format!(
        "- [{id}] {}: done_when {}\n",
        goal.title,
        goal.done_when.as_deref().unwrap_or("(missing)")
    );
    if goal.status == Some(GoalStatus::Done) {
        out.push_str("  set done by hand with no sign-off record (unsigned)\n");
    }
    match records.last.get(id) {
        Some(last) if last.outcome == "rejected" => {
            out.push_str("  last sign-off rejected; missing:\n");
            for item in &last.details {
                out.push_str(&format!("    - {}\n", item.lines().next().unwrap_or_default()));
            }
        }
        Some(last) if last.outcome == "inconclusive" => {
            out.push_str(&format!(
                "  last sign-off INCONCLUSIVE (not verified): {}\n",
                last.details.first().map(String::as_str).unwrap_or_default()
            ));
        }
        _ => out.push_str("  not signed off yet\n"),
    }
    out
}

/// Answers a goal event read by `agency hook` and writes the answer to stdout.
pub fn run(event: &HookEvent, input: &[u8], env: &HookEnv) -> std::process::ExitCode {
    let raw: Value = serde_json::from_slice(input).unwrap_or_default();
    let answer = answer(event, &raw, env);
    let mut stdout = std::io::stdout().lock();
    let code = write(&answer, &mut stdout);
    let _ = stdout.flush();
    std::process::ExitCode::from(code)
}

/// Writes the answer as Claude Code and Codex read it; returns the exit code (always 0).
pub fn write(answer: &GoalAnswer, out: &mut impl Write) -> u8 {
    let body = match answer {
        GoalAnswer::Silent => return 0,
        GoalAnswer::Context { event, text } => {
            json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
        }
        GoalAnswer::Block {
            reason,
            loop_judge,
            notice,
        } => {
            let mut body = json!({"decision": "block", "reason": reason});
            if let Some(prompt) = loop_judge {
                body["loopJudge"] = json!({"prompt": prompt});
            }
            if let Some(notice) = notice {
                body["systemMessage"] = json!(notice);
            }
            body
        }
        GoalAnswer::Notice(text) => json!({"systemMessage": text}),
    };
    let _ = writeln!(out, "{body}");
    0
}
