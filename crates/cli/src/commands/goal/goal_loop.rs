//! `agency goal loop start | pause | resume | clear | status | verdict --session ID` and `agency goal judge
//! [PROVIDER/MODEL] --session ID`: the controls of one session's goal loop (seed pi-goals §3b, §7), which
//! pi's `/goal` and `/judge model` commands call. The loop itself is the Stop hook ([`super::hooks`]): while
//! it is on, goals are open and the stop budget remains, the session is kept working.
//!
//! - `start` turns the loop on and starts its count again; `resume` turns it on keeping the count; both
//!   print the continuation to send when goals are open;
//! - `pause` lets the session stop until `resume`; `clear` turns the loop off and forgets its count until
//!   `start`;
//! - `verdict` reads the cheap loop judge's answer (D5/D10) on stdin: `{"done": true, …}` pauses the loop
//!   with the judge's reason (logged in plan.md); anything else, an unreadable answer included, continues.
//!   The judge fails open, and the stop budget is the backstop.

use std::io::Read;

use agency_core::goals::{PlanDoc, log_entry};
use chrono::Utc;
use serde_json::{Value, json};

use super::plan_file::PlanFile;
use super::records::Records;
use super::records::open_goals;
use super::session::stop_budget;
use super::session::{LoopState, Session};
use crate::commands::Context;
use crate::error::{CommandError, CommandResult};

/// Arguments of `agency goal loop`.
#[derive(Debug, clap::Args)]
pub struct LoopArgs {
    /// What to do with the loop.
    #[command(subcommand)]
    pub action: LoopAction,
    /// The client session whose loop this is (pi's extension passes its session id).
    #[arg(long, global = true, env = "AGENCY_GOAL_SESSION", value_name = "ID")]
    pub session: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// The loop controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Subcommand)]
pub enum LoopAction {
    /// Turn the loop on and start its count of continuations again.
    Start,
    /// Let the session stop; `resume` continues with the count kept.
    Pause,
    /// Turn a paused loop on again, keeping its count.
    Resume,
    /// Turn the loop off and forget its count, until `start`.
    Clear,
    /// Show the loop: on, paused or off, continuations used, open goals, the sign-off judge.
    Status,
    /// Read the loop judge's answer on stdin (`{"done": …, "reason": …}`); done pauses the loop.
    Verdict,
}

/// Arguments of `agency goal judge`.
#[derive(Debug, clap::Args)]
pub struct JudgeArgs {
    /// The sign-off judge for this session, as PROVIDER/MODEL (a provider of team.yaml); omitted: show it.
    pub model: Option<String>,
    /// Forget the session's judge: team.yaml's `signoff` judge again.
    #[arg(long, conflicts_with = "model")]
    pub reset: bool,
    /// The client session (pi's extension passes its session id).
    #[arg(long, env = "AGENCY_GOAL_SESSION", value_name = "ID")]
    pub session: Option<String>,
}

/// The sign-off judge when the session chose none (seed 002, D11).
const DEFAULT_JUDGE: &str =
    "the session's model when the client passes it (pi does), else team.yaml's signoff judge";

/// Runs `agency goal loop`.
pub fn run(ctx: &Context, plan: &PlanFile, args: LoopArgs) -> CommandResult {
    let session_id = args
        .session
        .clone()
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| {
            CommandError::input("agency goal loop: no session given".to_string())
                .hint("pass --session ID (pi's extension passes its session id)")
        })?;
    let mut session = Session::load(&plan.root, Some(&session_id));
    let doc = plan.read_or_empty()?.unwrap_or_else(|| PlanDoc::parse(""));
    let mut said = None;
    match args.action {
        LoopAction::Start => {
            session.loop_state = LoopState::On;
            session.stop_blocks = 0;
            session.paused_because = None;
        }
        LoopAction::Resume => {
            session.loop_state = LoopState::On;
            session.paused_because = None;
        }
        LoopAction::Pause => {
            session.loop_state = LoopState::Paused;
            session.paused_because = Some("paused by the user".to_string());
        }
        LoopAction::Clear => {
            session.loop_state = LoopState::Off;
            session.stop_blocks = 0;
            session.paused_because = None;
        }
        LoopAction::Status => {}
        LoopAction::Verdict => {
            let mut answer = String::new();
            std::io::stdin().read_to_string(&mut answer).map_err(|e| {
                CommandError::input(format!("cannot read the loop judge's answer on stdin: {e}"))
            })?;
            let verdict = read_verdict(&answer);
            if let Some(text) = apply_verdict(&mut session, &session_id, &verdict, &doc) {
                plan.write(&text)?;
            }
            said = Some(verdict);
        }
    }
    if args.action != LoopAction::Status {
        session.try_save()?;
    }
    let records = match ctx.workspace() {
        Ok(ws) => Records::at(&ws.db, plan).unwrap_or_default(),
        Err(_) => Records::default(),
    };
    let open: Vec<String> = open_goals(&doc, &records)
        .iter()
        .map(|g| g.id.clone().unwrap_or_else(|| "(no id)".to_string()))
        .collect();
    let budget = stop_budget();
    let continuation = (matches!(args.action, LoopAction::Start | LoopAction::Resume)
        && session.loop_state == LoopState::On
        && !open.is_empty())
    .then(|| continuation(&open, plan));
    let mut out = json!({
        "session": session_id,
        "loop": session.loop_state.as_str(),
        "continuations_used": session.stop_blocks,
        "budget": budget,
        "open_goals": open,
        "paused_because": session.paused_because,
        "judge_model": session.judge_model,
        "continuation": continuation,
    });
    if let Some(verdict) = &said {
        let (action, reason) = match verdict {
            LoopVerdict::Pause(reason) => ("pause", reason.clone()),
            LoopVerdict::Continue(reason) => ("continue", reason.clone()),
        };
        out["verdict"] = json!({"action": action, "reason": reason});
    }
    if args.json {
        println!("{out}");
        return Ok(());
    }
    if let Some(verdict) = &said {
        match verdict {
            LoopVerdict::Pause(reason) => println!("loop judge: pause ({reason})"),
            LoopVerdict::Continue(reason) => println!("loop judge: continue ({reason})"),
        }
    }
    println!(
        "loop       {} ({} of {budget} continuations used this turn)",
        session.loop_state.as_str(),
        session.stop_blocks
    );
    if let Some(why) = &session.paused_because {
        println!("paused     {why}");
    }
    if open.is_empty() {
        println!("open       none");
    } else {
        println!("open       {}", open.join(", "));
    }
    println!(
        "judge      {}",
        session.judge_model.as_deref().unwrap_or(DEFAULT_JUDGE)
    );
    if let Some(text) = continuation {
        println!("\n{text}");
    }
    Ok(())
}

/// What to tell the session when the loop is (re)started on open goals.
fn continuation(open: &[String], plan: &PlanFile) -> String {
    format!(
        "agency goals: the goal loop is on. Keep working toward the open goals in {} ({}). When a goal's \
         done_when holds and the work is committed, sign it off with CompleteGoal (`agency goal complete <id> \
         --path <evidence file>`); do not set status: done by hand. Stop only when they are signed off or you \
         are blocked on something only the user can provide, and then say what.",
        plan.relative(),
        open.join(", ")
    )
}

/// What [`Session::paused_because`] starts with when the loop judge paused the loop.
pub const PAUSED_BY_JUDGE: &str = "loop judge: ";

/// Applies the loop judge's verdict to the session (saved by the caller): a pause while the loop is on
/// pauses it with the judge's reason. Returns the plan's new text with the log line that says so.
pub fn apply_verdict(
    session: &mut Session,
    session_id: &str,
    verdict: &LoopVerdict,
    doc: &PlanDoc,
) -> Option<String> {
    let LoopVerdict::Pause(reason) = verdict else {
        return None;
    };
    if session.loop_state != LoopState::On {
        return None;
    }
    session.loop_state = LoopState::Paused;
    session.paused_because = Some(format!("{PAUSED_BY_JUDGE}{reason}"));
    let line = format!("session {session_id}: loop paused by the loop judge: {reason}");
    doc.append_log(&log_entry(Utc::now(), &line)).ok()
}

/// The loop judge's answer, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoopVerdict {
    /// Pause the loop, for this reason.
    Pause(String),
    /// Keep the loop going (the reason, or why the answer could not be read: the judge fails open).
    Continue(String),
}

/// Reads the loop judge's answer: the first JSON object in it with a boolean `done`. Fails open: anything
/// else continues.
pub fn read_verdict(answer: &str) -> LoopVerdict {
    let found = answer.match_indices('{').find_map(|(start, _)| {
        let mut stream = serde_json::Deserializer::from_str(&answer[start..]).into_iter::<Value>();
        let value = stream.next()?.ok()?;
        value.get("done")?.as_bool().map(|done| (done, value))
    });
    let Some((done, value)) = found else {
        let shown: String = answer.trim().chars().take(200).collect();
        return LoopVerdict::Continue(format!(
            "no {{\"done\": true|false}} in the loop judge's answer ({}); the loop judge fails open",
            if shown.is_empty() { "empty" } else { &shown }
        ));
    };
    let reason = value
        .get("reason")
        .and_then(Value::as_str)
        .map(|r| r.trim().chars().take(300).collect::<String>())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "no reason given".to_string());
    if done {
        LoopVerdict::Pause(reason)
    } else {
        LoopVerdict::Continue(reason)
    }
}

/// Runs `agency goal judge`.
pub fn judge(ctx: &Context, plan: &PlanFile, args: JudgeArgs) -> CommandResult {
    let session_id = args
        .session
        .clone()
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| {
            CommandError::input("agency goal judge: no session given".to_string())
                .hint("pass --session ID (pi's extension passes its session id)")
        })?;
    let mut session = Session::load(&plan.root, Some(&session_id));
    if args.reset {
        session.judge_model = None;
        session.try_save()?;
    } else if let Some(reference) = &args.model {
        let binding = super::complete::judge_binding(ctx, reference)?;
        session.judge_model = Some(format!("{}/{}", binding.provider, binding.model));
        session.try_save()?;
    }
    match &session.judge_model {
        Some(model) => println!("sign-off judge for session {session_id}: {model}"),
        None => println!("sign-off judge for session {session_id}: {DEFAULT_JUDGE}"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_judge_pauses_only_on_a_clear_done_and_fails_open() {
        assert_eq!(
            read_verdict(r#"{"done": true, "reason": "asks which database to use"}"#),
            LoopVerdict::Pause("asks which database to use".into())
        );
        assert_eq!(
            read_verdict("Sure.\n```json\n{\"done\": false, \"reason\": \"claims done, no sign-off\"}\n```"),
            LoopVerdict::Continue("claims done, no sign-off".into())
        );
        for unreadable in [
            "",
            "done",
            r#"{"done": "yes"}"#,
            "{not json",
            r#"{"pause": true}"#,
        ] {
            assert!(
                matches!(read_verdict(unreadable), LoopVerdict::Continue(why) if why.contains("fails open")),
                "{unreadable}"
            );
        }
        assert_eq!(
            read_verdict(r#"{"done": true}"#),
            LoopVerdict::Pause("no reason given".into())
        );
    }
}
