//! `agency-review`: the artifacts of a run for the human who approves them, shared by `agency show` and the
//! dashboard: the plan with every workstream's contract, diffs with a file summary, verify output tails, the
//! judge's account, teachbacks with their review history, what the run cost, and T2's `[view …]` records of
//! each workstream ([`views`]). The renderers are pure functions over core types and JSON records; [`gather`]
//! reads the records they take from the blackboard.

pub mod architecture;
pub mod brief;
pub mod cost;
pub mod diff;
pub mod gather;
pub mod plan;
pub mod signoff;
pub mod views;

use agency_core::gate::GateKind;

/// The commands that decide a pending gate of `kind` on run `run8` (its short id): how to read what is
/// asked, then how to approve or reject it. A manual pause is released with `agency resume` instead.
pub fn decision_commands(run8: &str, kind: GateKind) -> Vec<String> {
    if kind == GateKind::Pause {
        return vec![format!("agency resume {run8}")];
    }
    if kind == GateKind::Halt {
        return vec![
            format!("agency inspect {run8}"),
            format!("agency ack {run8} --note \"…\" --resume"),
            format!("agency ack {run8} --note \"…\" --cancel"),
        ];
    }
    let review = match kind {
        GateKind::T1Plan => format!("agency show {run8} plan"),
        GateKind::Budget => format!("agency show {run8} cost"),
        _ => format!("agency inspect {run8}"),
    };
    vec![
        review,
        format!("agency approve {run8}"),
        format!("agency reject {run8} --reason \"…\""),
    ]
}

/// The last `lines` lines of `text`, and how many were left out before them.
pub fn tail_lines(text: &str, lines: usize) -> (usize, Vec<&str>) {
    let all: Vec<&str> = text.lines().collect();
    let skip = all.len().saturating_sub(lines);
    (skip, all[skip..].to_vec())
}

/// `text` on one line: its lines joined by spaces, cut to `max` characters with `…` when longer.
pub fn one_line(text: &str, max: usize) -> String {
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if joined.chars().count() > max {
        let cut: String = joined.chars().take(max.saturating_sub(1)).collect();
        return format!("{}…", cut.trim_end());
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_joins_lines_and_cuts_long_text() {
        assert_eq!(one_line("  fine  ", 10), "fine");
        assert_eq!(one_line("first\n\n  second", 20), "first second");
        assert_eq!(one_line("abcdefghij", 5), "abcd…");
    }

    #[test]
    fn a_plan_gate_is_reviewed_with_show_plan_and_a_pause_is_resumed() {
        assert_eq!(
            decision_commands("1a2b3c4d", GateKind::T1Plan),
            [
                "agency show 1a2b3c4d plan",
                "agency approve 1a2b3c4d",
                "agency reject 1a2b3c4d --reason \"…\""
            ]
        );
        assert_eq!(
            decision_commands("1a2b3c4d", GateKind::Pause),
            ["agency resume 1a2b3c4d"]
        );
    }

    #[test]
    fn tail_lines_says_how_many_it_left_out() {
        assert_eq!(tail_lines("a\nb\nc", 2), (1, vec!["b", "c"]));
        assert_eq!(tail_lines("a", 5), (0, vec!["a"]));
    }
}
