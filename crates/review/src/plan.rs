//! T1's plan as a human reads it before approving it: the order the parallel groups run in, then each
//! workstream with its tier path, variety and route, and its contract — what done means, the verify
//! command stage 1 runs, the failure modes the judge checks, the protected paths it may edit.
//!
//! ```text
//! Plan of run 1a2b3c4d — complexity medium, retry budget ×1
//! Sequence: A
//!   A  ws-arith
//!
//! ws-arith — arithmetic  [backend, group A]
//!   tier path      t3 → t4 → t5
//!   variety        8 (novelty 2, scope 2, uncertainty 2, risk 2) → orchestrate
//!   done when      sh test_add.sh and sh test_mul.sh pass
//!   verify         sh test_arith.sh
//!   failure modes  none named
//!   may edit       nothing protected
//! ```

use std::fmt::Write as _;

use agency_core::Tier;
use agency_core::plan::{Plan, Workstream};

fn path_text(path: &[Tier]) -> String {
    path.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(" → ")
}

/// Indents every line after the first of `text` by `indent` spaces, so a multi-line value stays in its column.
fn hanging(text: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    text.trim_end()
        .lines()
        .enumerate()
        .map(|(i, line)| {
            if i == 0 {
                line.to_string()
            } else {
                format!("{pad}{line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The column values start in, after two spaces and the label.
const VALUE_COLUMN: usize = 17;

fn field(out: &mut String, label: &str, value: &str) {
    let _ = writeln!(out, "  {label:<14} {}", hanging(value, VALUE_COLUMN));
}

fn list(out: &mut String, label: &str, items: &[String], none: &str) {
    if items.is_empty() {
        field(out, label, none);
        return;
    }
    let _ = writeln!(out, "  {label}");
    for item in items {
        let _ = writeln!(out, "    - {}", hanging(item, 6));
    }
}

fn workstream(out: &mut String, ws: &Workstream) {
    let _ = writeln!(
        out,
        "{} — {}  [{}, group {}]",
        ws.id, ws.name, ws.domain, ws.parallel_group
    );
    field(out, "tier path", &path_text(&ws.tier_path));
    if let Some(reason) = &ws.shallower_path_reason {
        field(out, "shallower", reason);
    }
    let v = &ws.variety;
    field(
        out,
        "variety",
        &format!(
            "{} (novelty {}, scope {}, uncertainty {}, risk {}) → {}",
            v.score(),
            v.novelty,
            v.scope,
            v.uncertainty,
            v.risk,
            ws.route().as_str()
        ),
    );
    if let Some(specialist) = &ws.specialist {
        field(out, "specialist", specialist);
    }
    let contract = &ws.contract;
    field(out, "done when", &contract.done_when);
    field(
        out,
        "verify",
        contract
            .verify
            .as_deref()
            .unwrap_or("none — stage 1 has no command; only the judge signs off"),
    );
    list(out, "failure modes", &contract.failure_modes, "none named");
    list(out, "may edit", &contract.may_edit, "nothing protected");
    if !ws.notes.trim().is_empty() {
        field(out, "notes", &ws.notes);
    }
}

/// Renders `plan` of run `run8` (its short id).
pub fn render_plan(run8: &str, plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Plan of run {run8} — complexity {}, retry budget ×{}",
        plan.complexity.as_str(),
        plan.retry_budget_multiplier
    );
    let _ = writeln!(out, "Goal: {}", hanging(&plan.goal_anchor, 6));
    let stages = plan.stages();
    let sequence: Vec<&str> = stages.iter().map(|s| s.group).collect();
    let _ = writeln!(
        out,
        "Sequence: {}  (each group starts when the one before it is done; a group's workstreams run in parallel)",
        sequence.join(" → ")
    );
    for stage in &stages {
        let _ = writeln!(out, "  {}  {}", stage.group, stage.workstreams.join(", "));
    }
    for ws in &plan.workstreams {
        out.push('\n');
        workstream(&mut out, ws);
    }
    if !plan.self_critique_summary.trim().is_empty() {
        out.push('\n');
        let _ = writeln!(out, "Self-critique: {}", hanging(&plan.self_critique_summary, 15));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_workstream_shows_its_verify_command_and_failure_modes() {
        let plan = agency_core::validate_plan(&json!({
            "run_id": "0193a1b2-0000-7000-8000-0000abc12345",
            "goal_anchor": "Fix the calculator",
            "complexity": "medium",
            "retry_budget_multiplier": 1,
            "workstreams": [{
                "id": "ws-arith", "name": "arithmetic", "domain": "backend",
                "tier_path": ["t3", "t4", "t5"], "parallel_group": "A",
                "notes": "add.sh and mul.sh\nhave the wrong operators.",
                "variety": { "novelty": 2, "scope": 2, "uncertainty": 2, "risk": 2 },
                "contract": {
                    "done_when": "the checks pass", "verify": "sh test_arith.sh",
                    "failure_modes": ["a debug marker left in mul.sh"], "may_edit": ["test_arith.sh"]
                }
            }],
            "parallelism": { "groups": { "A": ["ws-arith"] }, "sequence": ["A"] },
            "self_critique_summary": "Two files, one domain."
        }))
        .unwrap();
        insta::assert_snapshot!(render_plan("abc12345", &plan), @r"
        Plan of run abc12345 — complexity medium, retry budget ×1
        Goal: Fix the calculator
        Sequence: A  (each group starts when the one before it is done; a group's workstreams run in parallel)
          A  ws-arith

        ws-arith — arithmetic  [backend, group A]
          tier path      t3 → t4 → t5
          variety        8 (novelty 2, scope 2, uncertainty 2, risk 2) → orchestrate
          done when      the checks pass
          verify         sh test_arith.sh
          failure modes
            - a debug marker left in mul.sh
          may edit
            - test_arith.sh
          notes          add.sh and mul.sh
                         have the wrong operators.

        Self-critique: Two files, one domain.
        ");
    }
}
