//! The fixed-shape summary of the active goals that the goal hooks inject at session start and after
//! compaction (pi-goals §8, §11). It is a pure function of the parsed plan: same plan, same bytes, whatever
//! the file's line endings, so a provider's prompt cache keeps hitting. No clock, no counters that tick.

use std::fmt::Write as _;

use super::model::{Goal, GoalStatus, PlanDoc};

/// Most diagnostics listed; the rest are counted, so a badly broken plan cannot flood the context.
const MAX_PROBLEMS: usize = 10;

/// Renders the active goals, with every contract field in a fixed order, then the last log entry and any
/// plan problems. Lines end in `\n`.
pub fn render_active_summary(doc: &PlanDoc) -> String {
    let mut out = String::new();
    let count = |status| doc.goals().iter().filter(|g| g.status == Some(status)).count();
    let active: Vec<&Goal> = doc.active_goals().collect();
    // Writing to a String cannot fail; the results are ignored for that reason alone.
    let _ = writeln!(
        out,
        "Active goals in plan.md: {} (open {}, done {}, cancelled {})",
        active.len(),
        count(GoalStatus::Open),
        count(GoalStatus::Done),
        count(GoalStatus::Cancelled),
    );
    for goal in active {
        out.push('\n');
        render_goal(&mut out, goal);
    }
    out.push('\n');
    match doc.log().and_then(|log| log.entries.last()) {
        Some(entry) => {
            let _ = writeln!(out, "Last log entry: {}", entry.text);
        }
        None => out.push_str("Last log entry: (none)\n"),
    }
    let problems = doc.diagnostics();
    if !problems.is_empty() {
        out.push_str("\nplan.md problems:\n");
        for problem in problems.iter().take(MAX_PROBLEMS) {
            let _ = writeln!(out, "  - line {problem}");
        }
        if problems.len() > MAX_PROBLEMS {
            let _ = writeln!(out, "  - and {} more", problems.len() - MAX_PROBLEMS);
        }
    }
    out
}

fn render_goal(out: &mut String, goal: &Goal) {
    let id = goal.id.as_deref().unwrap_or("no id");
    let _ = writeln!(out, "[{id}] {}", goal.title);
    let _ = writeln!(
        out,
        "done_when: {}",
        goal.done_when.as_deref().unwrap_or("(missing)")
    );
    let _ = writeln!(out, "verify: {}", goal.verify.as_deref().unwrap_or("(none)"));
    render_list(out, "failure_modes", &goal.failure_modes);
    render_list(out, "may_edit", &goal.may_edit);
    if goal.subtasks.is_empty() {
        out.push_str("subtasks: (none)\n");
    } else {
        let _ = writeln!(
            out,
            "subtasks ({}/{} done):",
            goal.subtasks_done(),
            goal.subtasks.len()
        );
        for subtask in &goal.subtasks {
            let mark = if subtask.checked { 'x' } else { ' ' };
            let _ = writeln!(out, "  - [{mark}] {}", subtask.text);
        }
    }
}

fn render_list(out: &mut String, name: &str, items: &[String]) {
    if items.is_empty() {
        let _ = writeln!(out, "{name}: (none)");
        return;
    }
    let _ = writeln!(out, "{name}:");
    for item in items {
        let _ = writeln!(out, "  - {item}");
    }
}
