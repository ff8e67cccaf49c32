//! `agency goal add | cancel | agree | subgoal | archive | log MESSAGE`: the plain plan.md changes, each
//! one line-exact patch plus a log line.

use agency_core::goals::{GoalStatus, NewGoal, PlanDoc, log_entry};
use chrono::Utc;

use super::plan_file::PlanFile;
use crate::error::{CommandError, CommandResult};

/// `agency goal add TITLE --done-when ... [--verify ...] [--failure-mode ...] [--may-edit ...] [--subtask ...]`
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The goal's title.
    pub title: String,
    /// The observable condition that makes it done.
    #[arg(long)]
    pub done_when: String,
    /// The stage-1 command (an argv, run without a shell).
    #[arg(long)]
    pub verify: Option<String>,
    /// A way it could look done while it is not (repeatable).
    #[arg(long = "failure-mode", value_name = "TEXT")]
    pub failure_modes: Vec<String>,
    /// A protected path (test, verify script) the goal may change; a glob (repeatable).
    #[arg(long = "may-edit", value_name = "GLOB")]
    pub may_edit: Vec<String>,
    /// A subtask checkbox (repeatable).
    #[arg(long = "subtask", value_name = "TEXT")]
    pub subtasks: Vec<String>,
    /// The id (default: from the title).
    #[arg(long)]
    pub id: Option<String>,
    /// The initial status.
    #[arg(long, default_value = "active", value_parser = parse_status)]
    pub status: GoalStatus,
}

fn parse_status(s: &str) -> Result<GoalStatus, String> {
    s.parse()
        .map_err(|e: agency_core::goals::UnknownGoalStatus| e.to_string())
}

/// Appends the goal (creating plan.md when there is none) and logs it.
pub fn add(plan: &PlanFile, args: AddArgs) -> CommandResult {
    let doc = plan
        .read_or_empty()?
        .unwrap_or_else(|| PlanDoc::parse("# Plan\n"));
    let id = args.id.unwrap_or_else(|| doc.suggest_goal_id(&args.title));
    let new = NewGoal {
        id: id.clone(),
        title: args.title,
        status: args.status,
        done_when: args.done_when,
        verify: args.verify,
        failure_modes: args.failure_modes,
        may_edit: args.may_edit,
        subtasks: args.subtasks,
    };
    if let Some(verify) = &new.verify {
        agency_exec::split_command_line(verify).map_err(|e| {
            CommandError::input(format!("--verify: {e}"))
                .hint("verify runs without a shell; put a pipeline in a script and verify with the script")
        })?;
    }
    let text = doc.add_goal(&new).map_err(|e| plan.patch_error(e))?;
    let text = PlanDoc::parse(&text)
        .append_log(&log_entry(Utc::now(), &format!("{id} added")))
        .map_err(|e| plan.patch_error(e))?;
    plan.write(&text)?;
    println!("added      {id} to {}", plan.relative());
    println!(
        "note       commit {} now: the commit that adds a goal is where its sign-off counts edits from",
        plan.relative()
    );
    Ok(())
}

/// Sets the goal cancelled and logs the reason.
pub fn cancel(plan: &PlanFile, id: &str, reason: &str) -> CommandResult {
    let doc = plan.read()?;
    let goal = plan.goal(&doc, id)?;
    if goal.status == Some(GoalStatus::Done) {
        return Err(CommandError::input(format!(
            "{id} is done; a finished goal is not cancelled"
        )));
    }
    let text = doc
        .set_status(id, GoalStatus::Cancelled)
        .map_err(|e| plan.patch_error(e))?;
    let text = PlanDoc::parse(&text)
        .append_log(&log_entry(Utc::now(), &format!("{id} cancelled: {reason}")))
        .map_err(|e| plan.patch_error(e))?;
    plan.write(&text)?;
    println!("cancelled  {id}");
    Ok(())
}

/// Appends one line to the log.
pub fn log(plan: &PlanFile, message: &str) -> CommandResult {
    let doc = plan.read()?;
    let text = doc
        .append_log(&log_entry(Utc::now(), message))
        .map_err(|e| plan.patch_error(e))?;
    plan.write(&text)?;
    Ok(())
}

/// Appends the subtask `- [ ] TEXT` to goal `id`, or to the only active goal when no id is given (pi's
/// `/subgoal`), after its last subtask (after the goal's last line when it has none), and logs it.
pub fn subgoal(plan: &PlanFile, id: Option<&str>, text: &str) -> CommandResult {
    let text = text.trim();
    if text.is_empty() || text.contains(['\n', '\r']) {
        return Err(CommandError::input(
            "agency goal subgoal: the subtask must be one non-empty line".to_string(),
        ));
    }
    let doc = plan.read()?;
    let goal = match id {
        Some(id) => plan.goal(&doc, id)?,
        None => {
            let active: Vec<_> = doc.active_goals().collect();
            match active.as_slice() {
                [only] => *only,
                _ => {
                    let ids: Vec<&str> = active
                        .iter()
                        .map(|g| g.id.as_deref().unwrap_or("(no id)"))
                        .collect();
                    return Err(CommandError::input(format!(
                        "{}: {} active goals ({}), so which one the subtask is for is unknown",
                        plan.relative(),
                        active.len(),
                        if ids.is_empty() {
                            "none".to_string()
                        } else {
                            ids.join(", ")
                        }
                    ))
                    .hint("name the goal: agency goal subgoal --goal ID TEXT (in pi: /subgoal @ID TEXT)"));
                }
            }
        }
    };
    let goal_id = goal.id.clone().ok_or_else(|| {
        CommandError::input(format!(
            "{}: the goal at line {} has no <!-- id: … --> marker",
            plan.relative(),
            goal.lines.heading
        ))
    })?;
    let after = goal
        .subtasks
        .last()
        .map_or(goal.lines.end, |subtask| subtask.line);
    // Line-exact: every other byte (line endings included) stays as it was.
    let original = doc.text();
    let mut lines: Vec<String> = original.split_inclusive('\n').map(str::to_owned).collect();
    let at = after.min(lines.len());
    if let Some(previous) = at.checked_sub(1).and_then(|i| lines.get_mut(i))
        && !previous.ends_with('\n')
    {
        previous.push('\n');
    }
    lines.insert(at, format!("- [ ] {text}\n"));
    let patched = PlanDoc::parse(&lines.concat())
        .append_log(&log_entry(
            Utc::now(),
            &format!("{goal_id}: subtask added: {text}"),
        ))
        .map_err(|e| plan.patch_error(e))?;
    plan.write(&patched)?;
    println!("added      subtask to {goal_id}: {text}");
    Ok(())
}

/// Sets each drafted (`open`) goal active, with a log line: the agreement point of pi's plan mode, where the
/// user accepted the drafted contracts. A goal that is not open is refused, naming its status.
pub fn agree(plan: &PlanFile, ids: &[String]) -> CommandResult {
    let mut doc = plan.read()?;
    for id in ids {
        let goal = plan.goal(&doc, id)?;
        if goal.status != Some(GoalStatus::Open) {
            return Err(CommandError::input(format!(
                "{id} is {}, not open: only a drafted goal is agreed",
                goal.status.map_or("without a status", GoalStatus::as_str)
            )));
        }
        let text = doc
            .set_status(id, GoalStatus::Active)
            .map_err(|e| plan.patch_error(e))?;
        let text = PlanDoc::parse(&text)
            .append_log(&log_entry(Utc::now(), &format!("{id} agreed")))
            .map_err(|e| plan.patch_error(e))?;
        plan.write(&text)?;
        doc = PlanDoc::parse(&text);
        println!("agreed     {id}");
    }
    Ok(())
}

/// Moves the finished goals — signed off (a sign-off record, not a hand-set `done`), or cancelled — under
/// `## Archive` at the end of plan.md (seed 002, D8: archived, not deleted), each section byte for byte, and
/// logs it. A goal done without a sign-off stays where it is, flagged. New goals are never added under the
/// archive ([`PlanDoc::add_goal`]).
pub fn archive(ctx: &crate::commands::Context, plan: &PlanFile) -> CommandResult {
    let doc = plan.read()?;
    let records = super::view::records(ctx, plan)?;
    let archive_at = doc.archive_heading();
    let finished: Vec<&agency_core::goals::Goal> = doc
        .goals()
        .iter()
        .filter(|g| archive_at.is_none_or(|at| g.lines.heading < at))
        .filter(|g| match g.status {
            Some(GoalStatus::Cancelled) => true,
            Some(GoalStatus::Done) => g.id.as_deref().is_some_and(|id| records.signed.contains(id)),
            _ => false,
        })
        .collect();
    if finished.is_empty() {
        println!(
            "nothing    no goal in {} is signed off or cancelled outside the archive",
            plan.relative()
        );
        return Ok(());
    }
    let text = doc.text();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut removed = vec![false; lines.len()];
    let mut moved = String::new();
    for goal in &finished {
        let (start, end) = (goal.lines.heading - 1, goal.lines.end - 1);
        let Some(section) = lines.get(start..=end) else {
            return Err(CommandError::internal(format!(
                "{}: goal at line {} ends past the file",
                plan.relative(),
                goal.lines.heading
            )));
        };
        moved.push_str(&section.concat());
        if !moved.ends_with('\n') {
            moved.push('\n');
        }
        moved.push('\n');
        let mut last = end;
        while last + 1 < lines.len() && lines[last + 1].trim().is_empty() {
            last += 1;
        }
        removed[start..=last].iter_mut().for_each(|r| *r = true);
    }
    let mut out: String = lines
        .iter()
        .zip(&removed)
        .filter(|(_, gone)| !**gone)
        .map(|(line, _)| *line)
        .collect();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push('\n');
    }
    if archive_at.is_none() {
        out.push_str("## Archive\n\n");
    }
    out.push_str(moved.trim_end_matches('\n'));
    out.push('\n');
    let ids: Vec<&str> = finished
        .iter()
        .map(|g| g.id.as_deref().unwrap_or("(no id)"))
        .collect();
    let line = format!("archived {}", ids.join(", "));
    let out = PlanDoc::parse(&out)
        .append_log(&log_entry(Utc::now(), &line))
        .map_err(|e| plan.patch_error(e))?;
    plan.write(&out)?;
    println!(
        "archived   {} under ## Archive in {}",
        ids.join(", "),
        plan.relative()
    );
    Ok(())
}
