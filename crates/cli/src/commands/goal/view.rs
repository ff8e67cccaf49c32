//! `agency goal list | show | log`: reading the plan, with each done goal's sign-off state from the
//! blackboard (*unsigned* when ticked by hand, *inconclusive* when the judge gave no verdict).

use agency_core::goals::{Goal, GoalStatus};

use super::plan_file::PlanFile;
use super::records::{Records, signoff_label};
use crate::commands::Context;
use crate::error::CommandResult;

pub(super) fn records(ctx: &Context, plan: &PlanFile) -> CommandResult<Records> {
    match ctx.workspace() {
        Ok(ws) => Records::at(&ws.db, plan),
        // No blackboard: nothing was ever signed off here.
        Err(_) => Ok(Records::default()),
    }
}

fn status_word(goal: &Goal) -> &'static str {
    goal.status.map_or("?", GoalStatus::as_str)
}

fn label(goal: &Goal, records: &Records) -> String {
    let id = goal.id.as_deref().unwrap_or_default();
    signoff_label(
        goal.status == Some(GoalStatus::Done),
        records.last.get(id),
        records.signed.contains(id),
    )
}

/// The goals as one JSON object (pi's task-list widget): each with its id, title, status, subtasks, and
/// sign-off state (`signed`: a `signoff_accepted` record exists; `label` as `list` shows it).
pub fn list_json(ctx: &Context, plan: &PlanFile) -> CommandResult {
    let doc = plan
        .read_or_empty()?
        .unwrap_or_else(|| agency_core::goals::PlanDoc::parse(""));
    let records = records(ctx, plan)?;
    let archive = doc.archive_heading();
    let goals: Vec<serde_json::Value> = doc
        .goals()
        .iter()
        .map(|goal| {
            let id = goal.id.as_deref().unwrap_or_default();
            serde_json::json!({
                "id": goal.id,
                "title": goal.title,
                "status": goal.status.map(GoalStatus::as_str),
                "subtasks": goal.subtasks.iter().map(|s| serde_json::json!({"text": s.text, "checked": s.checked})).collect::<Vec<_>>(),
                "signed": records.signed.contains(id),
                "label": label(goal, &records),
                "archived": archive.is_some_and(|at| goal.lines.heading > at),
            })
        })
        .collect();
    println!(
        "{}",
        serde_json::json!({"plan": plan.relative(), "path": plan.path, "goals": goals})
    );
    Ok(())
}

/// One line per goal: id, status, subtasks, sign-off state, title; then plan problems.
pub fn list(ctx: &Context, plan: &PlanFile) -> CommandResult {
    let doc = plan.read()?;
    let records = records(ctx, plan)?;
    if doc.goals().is_empty() {
        println!("no goals in {}", plan.relative());
    }
    for goal in doc.goals() {
        let subtasks = if goal.subtasks.is_empty() {
            "-".to_string()
        } else {
            format!("{}/{}", goal.subtasks_done(), goal.subtasks.len())
        };
        let label = label(goal, &records);
        let mut line = format!(
            "{:<24} {:<9} {:>5}  {}",
            goal.id.as_deref().unwrap_or("(no id)"),
            status_word(goal),
            subtasks,
            goal.title
        );
        if !label.is_empty() {
            line.push_str(&format!("  [{label}]"));
        }
        if let Some(id) = goal.id.as_deref() {
            let sharing = doc.goals_with_id(id);
            if sharing.len() > 1 {
                let lines: Vec<String> = sharing.iter().map(|g| g.lines.heading.to_string()).collect();
                line.push_str(&format!("  [ambiguous id: goals at lines {}]", lines.join(", ")));
            }
        }
        println!("{line}");
    }
    for problem in doc.diagnostics() {
        eprintln!("warning: {}:{problem}", plan.relative());
    }
    Ok(())
}

/// The goal's contract, subtasks and last sign-off.
pub fn show(ctx: &Context, plan: &PlanFile, id: &str) -> CommandResult {
    let doc = plan.read()?;
    let goal = plan.goal(&doc, id)?;
    let records = records(ctx, plan)?;
    let label = label(goal, &records);
    println!("goal       {id}: {}", goal.title);
    if label.is_empty() {
        println!("status     {}", status_word(goal));
    } else {
        println!("status     {} ({label})", status_word(goal));
    }
    println!("done_when  {}", goal.done_when.as_deref().unwrap_or("(missing)"));
    println!("verify     {}", goal.verify.as_deref().unwrap_or("(none)"));
    print_list("failure_modes", &goal.failure_modes);
    print_list("may_edit", &goal.may_edit);
    println!("subtasks   {}/{}", goal.subtasks_done(), goal.subtasks.len());
    for subtask in &goal.subtasks {
        println!(
            "  - [{}] {}",
            if subtask.checked { 'x' } else { ' ' },
            subtask.text
        );
    }
    if let Some(last) = records.last.get(id) {
        let commit = last.commit.get(..8).unwrap_or(&last.commit);
        println!("sign-off   {} at {commit}", last.outcome);
        for detail in &last.details {
            let mut lines = detail.lines();
            println!("  - {}", lines.next().unwrap_or_default());
            for more in lines {
                println!("    {more}");
            }
        }
    }
    Ok(())
}

fn print_list(name: &str, items: &[String]) {
    if items.is_empty() {
        println!("{name:<10} (none)");
        return;
    }
    println!("{name}");
    for item in items {
        println!("  - {item}");
    }
}

/// The log entries, oldest first.
pub fn log(plan: &PlanFile) -> CommandResult {
    let doc = plan.read()?;
    match doc.log() {
        Some(log) => {
            for entry in &log.entries {
                println!("{}", entry.text);
            }
        }
        None => println!("{} has no ## Log section", plan.relative()),
    }
    Ok(())
}
